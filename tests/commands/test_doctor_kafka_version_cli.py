"""doctor --kafka-version: the start-up rules of that release beyond 3.3.1's (ops/kafka_startup.py,
each rule in config/versions.py with its source). Released 4.x refuses ZooKeeper mode and a
metadata.version below 3.3-IV3; the trunk snapshot broker (4.0.0-SNAPSHOT 1eb76443) still has
ZooKeeper mode and reads metadata.version from 3.0-IV1, so those rules are checked here from
Kafka's released sources only (tests/differential/README.md lists what the snapshot cannot check).
Without --kafka-version doctor is unchanged."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import ExitCode
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.corpus import corpus_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "logdir"
WILD = corpus_path() / "wild"
needs_corpus = pytest.mark.skipif(not WILD.is_dir(), reason="needs the corpus's real 4.x log dirs")


def doctor(*args):
    """(exit code, findings) of doctor --format json; a usage error fails the test (no findings to judge)."""
    r = CliRunner().invoke(cli, ["doctor", *map(str, args), "--format", "json"])
    assert r.exit_code != ExitCode.USAGE, r.stderr
    return r.exit_code, json.loads(r.stdout)["findings"]


def problems(findings, check=None):
    return [f["problem"] for f in findings if check is None or f["check"] == check]


def copy(tmp_path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLE, d)
    (d / ".lock").unlink(missing_ok=True)
    return d


def _feature_level(name: str, level: int) -> bytes:
    # FeatureLevelRecord v0 (api key 12): frame version 1, api key, version, name, featureLevel, no tags
    return (
        bytes([1, 12, 0])
        + bytes([len(name) + 1])
        + name.encode()
        + struct.pack(">h", level)
        + b"\x00"
    )


def bootstrap(d: Path, level: int) -> None:
    (d / "bootstrap.checkpoint").write_bytes(
        build_v2_batch(
            [SimpleRecord(None, _feature_level("metadata.version", level), 1_700_000_000_000)], 0
        )
    )


def server_properties(tmp_path, d, **settings) -> Path:
    p = tmp_path / "server.properties"
    p.write_text("".join(f"{k}={v}\n" for k, v in {"log.dirs": d, **settings}.items()))
    return p


def test_zookeeper_mode_configuration_is_refused_from_4_0(tmp_path):
    d = copy(tmp_path)
    props = server_properties(
        tmp_path, d, **{"zookeeper.connect": "localhost:2181", "broker.id": 1}
    )
    rc, found = doctor(d, "--server-properties", props, "--kafka-version", "4.0")
    assert rc == ExitCode.BROKER_WONT_START
    (f,) = [f for f in found if f["check"] == "server.properties"]
    assert f["severity"] == "error" and "zookeeper.connect, no process.roles" in f["problem"]
    assert (
        'Missing required configuration "process.roles" which has no default value.' in f["broker"]
    )
    for before in ([], ["--kafka-version", "3.9"]):
        _, found = doctor(d, "--server-properties", props, *before)
        assert not [p for p in problems(found) if "process.roles" in p]


def test_zookeeper_era_log_dir_is_refused_from_4_0(tmp_path):
    d = tmp_path / "zk"
    d.mkdir()
    shutil.copytree(EXAMPLE / "codec-none-0", d / "codec-none-0")
    (d / "meta.properties").write_text(
        "version=0\nbroker.id=1\ncluster.id=ytU2o_qzT-eCvGOTk9Y8iw\n"
    )
    rc, found = doctor(d, "--kafka-version", "4.2")
    assert rc == ExitCode.BROKER_WONT_START
    assert [
        p for p in problems(found, "meta.properties") if p.startswith("a ZooKeeper-mode log dir")
    ]
    rc, found = doctor(d, "--kafka-version", "3.9")
    assert rc != ExitCode.BROKER_WONT_START and not [
        p for p in problems(found) if "ZooKeeper-mode" in p
    ]


def test_a_v0_meta_properties_is_read_in_kraft_from_3_7(tmp_path):
    d = copy(tmp_path)
    (d / "meta.properties").write_text(
        "version=0\nbroker.id=1\ncluster.id=ytU2o_qzT-eCvGOTk9Y8iw\n"
    )
    rc, found = doctor(d)  # 3.3.1's KafkaRaftServer: "Expected version 1"
    assert rc == ExitCode.BROKER_WONT_START and [
        p for p in problems(found, "meta.properties") if "needs 1" in p
    ]
    for version in ("3.7", "4.0"):
        rc, found = doctor(d, "--kafka-version", version)
        assert rc in (ExitCode.OK, ExitCode.PROBLEMS), found
        assert not [f for f in found if f["severity"] == "error"]


@pytest.mark.parametrize(
    "level, version, refused",
    [
        (
            4,
            "4.0",
            "No MetadataVersion with feature level 4. Valid feature levels are from 7 to 25.",
        ),
        (
            6,
            "4.2",
            "No MetadataVersion with feature level 6. Valid feature levels are from 7 to 29.",
        ),
        (
            29,
            "4.0",
            "No MetadataVersion with feature level 29. Valid feature levels are from 7 to 25.",
        ),
        (
            26,
            "3.9",
            "No MetadataVersion with feature level 26. Valid feature levels are from 1 to 21.",
        ),
        (4, "3.9", None),
        (7, "4.0", None),
        (27, "4.1", None),
    ],
)
def test_bootstrap_metadata_version_as_that_release_reads_it(tmp_path, level, version, refused):
    d = copy(tmp_path)
    bootstrap(d, level)
    rc, found = doctor(d, "--kafka-version", version)
    mv = [f for f in found if f["check"] == "metadata.version"]
    if refused is None:
        assert mv == []
    else:
        assert rc == ExitCode.BROKER_WONT_START
        assert [f["path"] for f in mv] == [str(d / "bootstrap.checkpoint")] and refused in mv[0][
            "broker"
        ]
    _, found = doctor(d)  # default: 3.3.1's checks, unchanged
    assert not [f for f in found if f["check"] == "metadata.version"]


def test_reserved_directory_id_stops_3_7_and_later(tmp_path):
    d = copy(tmp_path)
    with (d / "meta.properties").open("a") as f:
        f.write("directory.id=AAAAAAAAAAAAAAAAAAAAAQ\n")  # DirectoryId.UNASSIGNED, Uuid(0, 1)
    rc, found = doctor(d, "--kafka-version", "3.7")
    assert rc == ExitCode.BROKER_WONT_START
    assert [f["broker"] for f in found if "reserved" in f["problem"]] == [
        f"RuntimeException: Invalid resrved directory ID AAAAAAAAAAAAAAAAAAAAAQ found in {d} "
        "(MetaPropertiesEnsemble.verify (DirectoryId.reserved, duplicate directory ID) and "
        "MetaPropertiesEnsemble.Copier.generateValidDirectoryId (KIP-858, 3.7)): the broker exits"
    ]
    rc, found = doctor(d, "--kafka-version", "3.6")
    assert not [f for f in found if "reserved" in f["problem"]]


def test_settings_4_0_removed_are_notes(tmp_path):
    d = copy(tmp_path)
    props = server_properties(
        tmp_path,
        d,
        **{"process.roles": "broker,controller", "node.id": 1, "log.message.format.version": "2.8"},
    )
    _, found = doctor(d, "--server-properties", props, "--kafka-version", "4.0")
    notes = [f for f in found if f["check"] == "server.properties"]
    assert [(f["severity"], f["problem"]) for f in notes] == [
        (
            "note",
            "log.message.format.version is set: message formats v0 and v1 are not written any more (KIP-724)",
        )
    ]
    _, found = doctor(d, "--server-properties", props, "--kafka-version", "3.9")
    assert not [f for f in found if f["check"] == "server.properties"]


def test_a_version_kafkalog_does_not_know_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["doctor", str(copy(tmp_path)), "--kafka-version", "4.3"])
    assert (
        r.exit_code == ExitCode.USAGE and "kafkalog knows the rules of Kafka 3.3, 3.4" in r.stderr
    )


@needs_corpus
def test_real_4_0_log_dir_starts_4_0_and_not_3_9():
    d = WILD / "ArthurArutunyan04__Backend_labs" / "kafka-data"  # metadata.version 25 (4.0-IV3)
    _, found = doctor(d, "--kafka-version", "4.0")
    assert not [f for f in found if f["check"] == "metadata.version"]
    rc, found = doctor(d, "--kafka-version", "3.9")
    assert rc == ExitCode.BROKER_WONT_START
    assert sorted(f["path"] for f in found if f["check"] == "metadata.version") == [
        str(d / "__cluster_metadata-0"),
        str(d / "bootstrap.checkpoint"),
    ]
