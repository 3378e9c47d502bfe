"""`kafkalog schemas` and dump-log --decode-schemas on a log dir made by confluent-kafka's own
serializers and a live Kafka 3.3.1 broker (tests/fixtures/schemas/SOURCES.md), on the corpus'
`_schemas` topics and Connect JSON topic, and on REST-shaped dirs and schema files."""

import json
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.corpus import corpus_dir, needs_corpus
from tests.helpers.paths import SCHEMAS as FIXTURE
from tests.helpers.schemas import (
    assert_decoded_as_given,
    decoded_records,
    edit_schema,
    edit_value,
)

LOGDIR = FIXTURE / "logdir"
INPUTS = json.loads((FIXTURE / "inputs.json").read_text())
SPOOLDIR = ("wild", "mscaldas2012__kafka-connect-spooldir", "kafka-data")
PATIENTS = ("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data")


def test_schemas_lists_subjects_versions_and_ids_as_the_registry_answers(runner):
    res = runner.invoke(cli, ["schemas", str(LOGDIR)])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [
        "SUBJECT                          VERSION  ID  TYPE      REFERENCES",
        ":.staging:orders-value           1        11  AVRO",
        "common.proto                     1        6   PROTOBUF",
        "customers-value                  1        5   AVRO      shop.Address (shop.Address v1)",
        "events-value                     1        8   PROTOBUF  common.proto (common.proto v1), "
        "google/protobuf/timestamp.proto (google/protobuf/timestamp.proto v1)",
        "google/protobuf/timestamp.proto  1        7   PROTOBUF",
        "orders-key                       1        2   AVRO",
        "orders-value                     1        1   AVRO",
        "orders-value                     2        3   AVRO",
        "readings-value                   1        9   JSON",
        "shop.Address                     1        4   AVRO",
    ]


def test_schemas_json_is_the_registry_answer_and_a_hard_delete_is_gone(runner):
    res = runner.invoke(
        cli, ["schemas", str(LOGDIR / "_schemas-0"), "--format", "json", "--deleted"]
    )
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert "legacy-value" not in {x["subject"] for x in lines}  # soft-deleted, then tombstoned
    orders = [x for x in lines if x["subject"] == "orders-value"]
    assert [(x["version"], x["id"], x["deleted"]) for x in orders] == [(1, 1, False), (2, 3, False)]
    assert "schemaType" not in orders[0]  # AVRO, as the registry leaves it out
    events = next(x for x in lines if x["subject"] == "events-value")
    assert events["schemaType"] == "PROTOBUF" and [r["name"] for r in events["references"]] == [
        "common.proto",
        "google/protobuf/timestamp.proto",
    ]


def test_dump_log_decodes_serializer_bytes_to_their_inputs(runner):
    assert_decoded_as_given(decoded_records(runner, LOGDIR), INPUTS)


def test_a_schema_file_bound_to_a_topic_decodes_what_the_registry_lost(runner):
    code, err, topics = decoded_records(
        runner,
        LOGDIR,
        "--topic",
        "legacy",
        "--schema",
        f"legacy={FIXTURE / 'files' / 'legacy.avsc'}",
    )
    assert code == 0, err
    assert topics["legacy"][0]["value"] == {"n": 7}
    assert topics["legacy"][0]["value_schema"] == {
        "id": None,
        "subject": "legacy-value",
        "version": 1,
        "type": "AVRO",
    }


def test_an_incompatible_reader_is_an_error_naming_both_ids(runner):
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(LOGDIR / "orders-0"),
            "--format",
            "json",
            "--schemas",
            str(LOGDIR),
            "--schemas",
            str(FIXTURE / "files" / "rest"),
        ],
    )
    assert res.exit_code == 2
    assert res.stderr.splitlines()[-1].startswith(
        "kafkalog: schema id 1 (orders-value version 1) does not resolve to the reader schema id 99 "
        "(orders-value version 3): "
    )
    # the reader chosen by version reads them all
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(LOGDIR / "orders-0"),
            "--format",
            "json",
            "--schemas",
            str(LOGDIR),
            "--schemas",
            str(FIXTURE / "files" / "rest"),
            "--reader-version",
            "1",
        ],
    )
    assert res.exit_code == 1, res.stderr  # only the garbage record is left as bytes
    values = [json.loads(x)["value"] for x in res.stdout.splitlines() if '"kind": "record"' in x]
    assert [v.get("channel") for v in values[:7]] == [None] * 7 and values[0]["id"] == 1000


ADDRESS_REF = {"name": "shop.Address", "subject": "shop.Address", "version": 1}


@pytest.mark.parametrize(
    "subject,fields,topic,why",
    [
        # fastavro's own error for a named type nothing defines
        (
            "customers-value",
            {"references": [{"name": "c", "subject": "customers-value", "version": 1}]},
            "customers",
            "customers-value version 1: ",
        ),
        # a referenced schema that is not JSON
        (
            "shop.Address",
            {"schema": '{"type": "record", "fields": ['},
            "customers",
            "customers-value version 1: its AVRO schema, or a reference's, does not parse",
        ),
        # a JSON Schema referencing a schema that is not JSON
        ("readings-value", {"references": [ADDRESS_REF]}, "readings", "readings-value"),
    ],
    ids=["avro-self-reference", "avro-reference-not-json", "json-schema-reference-not-avro"],
)
def test_a_schema_that_does_not_parse_keeps_its_records_as_bytes(
    runner, tmp_path, subject, fields, topic, why
):
    """Whatever the library parsing a schema raises, the records it wrote are kept as bytes, each
    named with its offset (exit 1): never an internal error."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(FIXTURE / "logdir", log_dir)
    edit_schema(log_dir, subject, 1, **fields)
    if topic == "readings":  # its reference: a schema that is not a JSON Schema's JSON
        edit_schema(log_dir, "shop.Address", 1, schema="{")
    code, err, topics = decoded_records(runner, log_dir, "--topic", topic)
    assert code == 1, err
    lines = err.splitlines()
    n = len(topics[topic])
    assert n > 0 and len(lines) == n + 1, err
    for r, line in zip(topics[topic], lines):
        assert line.startswith(
            f"kafkalog: {r['file']}: offset {r['offset']}: value kept as bytes: "
        ), line
        assert why in line and "internal error" not in line
        assert isinstance(r["value"], str) and "error" in r["value_schema"]
    assert lines[-1] == f"kafkalog: {n} keys or values were not decoded and are kept as bytes"


@pytest.mark.parametrize(
    "value,why",
    [
        # an id of a Protobuf schema on bytes with no message indexes after it
        (b"\x00\x00\x00\x00\x06\xff\xff\xff", "the message indexes end before their last varint"),
        (b"\x00\x00\x00\x00\x06", "message indexes"),
    ],
    ids=["indexes-unterminated", "indexes-missing"],
)
def test_a_protobuf_id_without_message_indexes_keeps_the_value_as_bytes(
    runner, tmp_path, value, why
):
    """A value whose id names a Protobuf schema but whose bytes hold no message indexes is not
    in the wire format: kept as bytes, named with its offset (exit 1)."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(FIXTURE / "logdir", log_dir)
    edit_value(log_dir, "orders-0", 7, value)
    code, err, topics = decoded_records(runner, log_dir, "--topic", "orders")
    assert code == 1, err
    r = topics["orders"][7]
    assert r["value_schema"]["id"] == 6 and why in r["value_schema"]["error"]
    assert (
        f"kafkalog: {r['file']}: offset 7: value kept as bytes: not in the schema registry's wire "
        f"format: {r['value_schema']['error'].split(': ', 1)[1]}" in err
    )


def test_decoding_is_for_json_only(runner):
    res = runner.invoke(cli, ["dump-log", str(LOGDIR), "--decode-schemas"])
    assert res.exit_code == 2 and "--format json only" in res.stderr


@needs_corpus(*SPOOLDIR)
def test_corpus_schemas_topics_read_without_error(runner):
    for parts in (SPOOLDIR, PATIENTS):
        res = runner.invoke(cli, ["schemas", str(corpus_dir(*parts))])
        assert res.exit_code == 0, res.output
        assert res.stdout == "SUBJECT  VERSION  ID  TYPE  REFERENCES\n"  # NOOP records only
        assert res.stderr.startswith("kafkalog: note: no schema in ")


@needs_corpus(*SPOOLDIR)
def test_the_connect_json_topic_reads_unchanged_with_decoding_on(runner):
    d = corpus_dir(*SPOOLDIR)
    plain = runner.invoke(
        cli, ["dump-log", str(d / "test10-0"), "--format", "json", "--print-data-log"]
    )
    decoded = runner.invoke(
        cli, ["dump-log", str(d / "test10-0"), "--format", "json", "--schemas", str(d)]
    )
    assert plain.exit_code == decoded.exit_code == 0, decoded.stderr
    assert decoded.stdout == plain.stdout and decoded.stderr == ""
