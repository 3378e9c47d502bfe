"""Kafka's properties files with Kafka's types: meta.properties as MetaProperties reads it (the
text by Properties.load's rules), a server.properties INT as ConfigDef reads it."""

from __future__ import annotations

import pytest

from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.formats.checkpoints import parse_properties
from kafkalog_cli.formats.meta_properties import MetaProperties, config_int, java_int

CLUSTER = "ytU2o_qzT-eCvGOTk9Y8iw"


def meta(text: str) -> MetaProperties:
    return MetaProperties.parse(parse_properties(text.encode("latin-1")), path="m/meta.properties")


@pytest.mark.parametrize(
    "raw, value",
    [
        ("0", 0),
        ("+7", 7),
        ("-1", -1),
        ("2147483647", 2**31 - 1),
        ("-2147483648", -(2**31)),
        ("007", 7),
        ("2147483648", None),
        ("-2147483649", None),
        ("99999999999999999999", None),
        ("", None),
        (" 1", None),
        ("1 ", None),
        ("1_000", None),
        ("0x10", None),
        ("1.0", None),
        ("+", None),
    ],
)
def test_java_int_is_integer_parse_int(raw, value):
    assert java_int(raw) == value


def test_a_kraft_meta_properties():
    m = meta(
        f"#\nversion=1\ncluster.id={CLUSTER}\nnode.id=3\ndirectory.id=Lf3cfkk5TJWmPeEP8nJEzw\n"
    )
    assert m == MetaProperties(1, CLUSTER, 3, "Lf3cfkk5TJWmPeEP8nJEzw")


def test_a_zookeeper_era_meta_properties():
    assert meta("version=0\nbroker.id=5\n") == MetaProperties(0, None, 5, None)
    assert meta("broker.id=5\n").version == 0  # no version: 0
    assert meta("version=0\n").node_id is None  # broker.id is optional in v0


@pytest.mark.parametrize("value", ["2147483648", "99999999999999999999", "abc", "1 ", ""])
def test_node_id_kafka_refuses_names_the_file_in_kafkas_words(value):
    with pytest.raises(CheckpointError) as e:
        meta(f"version=1\ncluster.id={CLUSTER}\nnode.id={value}\n")
    assert str(e.value) == (
        f"m/meta.properties: Failed to parse node.id property as an int: "
        f'For input string: "{value}"'
    )


def test_properties_load_rules_decide_what_parse_int_sees():
    # a leading blank after `=` goes (Properties.load), a trailing one stays (parseInt refuses it)
    assert meta(f"version=1\ncluster.id={CLUSTER}\nnode.id =  4\n").node_id == 4
    with pytest.raises(CheckpointError):
        meta(f"version=1\ncluster.id={CLUSTER}\nnode.id=4\t\n")
    # escapes are undone before parsing: \u0034 is "4"; a continued line joins
    assert meta(f"version=1\ncluster.id={CLUSTER}\nnode.id=\\u0034\\\n   2\n").node_id == 42
    # a repeated key keeps its last value
    assert meta(f"version=1\ncluster.id={CLUSTER}\nnode.id=2147483648\nnode.id=1\n").node_id == 1


@pytest.mark.parametrize(
    "text, says",
    [
        ("version=1\nnode.id=1\n", "Failed to find required property cluster.id."),
        (f"version=1\ncluster.id={CLUSTER}\n", "Failed to find required property node.id."),
        (
            f"version=2\ncluster.id={CLUSTER}\nnode.id=1\n",
            "Unknown meta.properties version number 2",
        ),
        (
            f"version=one\ncluster.id={CLUSTER}\nnode.id=1\n",
            "Failed to parse version property as an int",
        ),
        (
            f"version=1\ncluster.id={CLUSTER}\nnode.id=1\ndirectory.id=abc\n",
            "Unable to read directory.id as a Uuid",
        ),
        (
            f"version=1\ncluster.id={CLUSTER}\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAAAAAA\n",
            "Unable to read directory.id as a Uuid: Input string with prefix",
        ),
    ],
)
def test_what_the_broker_refuses(text, says):
    with pytest.raises(CheckpointError, match=says.replace(".", r"\.")):
        meta(text)


def test_a_server_properties_int_is_trimmed_and_ranged():
    assert config_int({"node.id": " 7 "}, "node.id") == 7
    assert config_int({}, "node.id") is None
    with pytest.raises(
        CheckpointError,
        match="Invalid value 2147483648 for configuration node.id: Not a number of type INT",
    ) as e:
        config_int({"node.id": "2147483648"}, "node.id", path="server.properties")
    assert e.value.path == "server.properties"


def test_a_refused_value_names_the_file():
    with pytest.raises(CheckpointError) as e:
        meta(f"version=1\ncluster.id={CLUSTER}\nnode.id=99999999999999999999\n")
    assert e.value.path == "m/meta.properties"


def test_node_id_in_reads_only_the_id():
    assert MetaProperties.node_id_in({"node.id": "3"}) == 3  # no cluster.id needed
    assert MetaProperties.node_id_in({"broker.id": "4"}) == 4
    assert MetaProperties.node_id_in({}) is None
    with pytest.raises(CheckpointError, match="Failed to parse node.id property as an int"):
        MetaProperties.node_id_in({"node.id": "99999999999999999999"}, path="m")


def test_directory_id_in_reads_only_the_directory_id():
    assert MetaProperties.directory_id_in({"directory.id": CLUSTER}) == CLUSTER  # any Uuid
    assert MetaProperties.directory_id_in({}) is None
    with pytest.raises(CheckpointError, match="Unable to read directory.id as a Uuid") as e:
        MetaProperties.directory_id_in({"directory.id": "not-a-uuid"}, path="m")
    assert e.value.path == "m"
