"""A `_schemas` record the Schema Registry cannot read is skipped, as the registry's reader
skips it (KafkaStoreReaderThread.doWork logs the SerializationException and goes on), with one
warning line naming its segment, offset and why: in dump-log, export, `kafkalog schemas` and
the Spark source; the records its schema wrote stay bytes with the usual reason."""

import json
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import SCHEMAS
from tests.helpers.schemas import edit_schemas_record

# the fixture's `_schemas` record of orders-value version 2 (id 3): the last 4 orders records
ORDERS_V2 = 5
KEY = {"keytype": "SCHEMA", "subject": "orders-value", "version": 2, "magic": 1}


def _value(log_dir, **fields) -> bytes:
    from kafkalog_cli.formats.records import iter_batches

    seg = log_dir / "_schemas-0" / "00000000000000000000.log"
    for b in iter_batches(seg.read_bytes()):
        for r in b.records():
            if r.offset == ORDERS_V2:
                value = {**json.loads(r.value), **fields}
                return json.dumps({k: x for k, x in value.items() if x is not None}).encode()
    raise AssertionError("no orders-value version 2")


# (what the record becomes, the reason the warning gives)
CASES = {
    "value-not-json": (
        lambda d: {"value": b'{"subject": "orders-value", '},
        "its value is not JSON (expecting property name enclosed in double quotes at character 28)",
    ),
    "key-not-utf8": (lambda d: {"key": b"\xff{}"}, "its key is not UTF-8 text (byte 0)"),
    "key-an-array": (lambda d: {"key": b'["SCHEMA"]'}, "its key is JSON, but not an object"),
    "unknown-keytype": (
        lambda d: {"key": json.dumps({**KEY, "keytype": "SCHEMAS"}).encode()},
        'its key\'s keytype "SCHEMAS" is none the registry knows',
    ),
    "magic-2": (
        lambda d: {"key": json.dumps({**KEY, "magic": 2}).encode()},
        "a SCHEMA key of magic 2: the registry reads 0 and 1",
    ),
    "unknown-schema-type": (
        lambda d: {"value": _value(d, schemaType="XML")},
        'schemaType "XML" is none of AVRO, PROTOBUF, JSON',
    ),
    "no-subject": (
        lambda d: {"value": _value(d, subject=None)},
        "a schema value without subject, version and schema",
    ),
    "duplicate-id": (
        lambda d: {"value": _value(d, id=2)},
        "orders-value version 2 has id 2, which names another schema already "
        "(orders-key version 1)",
    ),
}


@pytest.fixture
def skipped(tmp_path, request):
    """A copy of the fixture's log dir whose orders-value version 2 record is damaged; the
    warning line it must give."""
    edit, why = CASES[request.param]
    log_dir = tmp_path / "logdir"
    shutil.copytree(SCHEMAS / "logdir", log_dir)
    edit_schemas_record(log_dir, ORDERS_V2, **edit(log_dir))
    seg = log_dir / "_schemas-0" / "00000000000000000000.log"
    line = (
        f"kafkalog: warning: {seg}: offset {ORDERS_V2}: _schemas-0 record skipped, as the "
        f"Schema Registry skips it: {why}\n"
    )
    return log_dir, line


def _warnings(stderr: str) -> list[str]:
    return [x + "\n" for x in stderr.splitlines() if x.startswith("kafkalog: warning:")]


@pytest.mark.parametrize("skipped", list(CASES), indirect=True)
def test_dump_log_skips_the_record_and_keeps_its_schemas_values_as_bytes(runner, skipped):
    log_dir, line = skipped
    res = runner.invoke(
        cli,
        ["dump-log", str(log_dir), "--topic", "orders", "--format", "json", "--decode-schemas"],
    )
    assert res.exit_code == 1, res.output
    assert _warnings(res.stderr) == [line]
    values = [json.loads(x) for x in res.stdout.splitlines()]
    values = [r for r in values if r["kind"] == "record"]
    gone = {"id": 3, "error": "schema id 3 is not in the registry"}
    assert [r["value_schema"] for r in values[3:6]] == [gone] * 3
    assert all(r["value_schema"]["version"] == 1 for r in values[:3])
    assert (
        f"orders-0/00000000000000000000.log: offset 3: value kept as bytes: {gone['error']}\n"
        in (res.stderr)
    )
    assert "Error" not in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("skipped", ["value-not-json", "duplicate-id"], indirect=True)
def test_schemas_lists_what_the_registry_keeps_and_exits_1(runner, skipped):
    log_dir, line = skipped
    res = runner.invoke(cli, ["schemas", str(log_dir), "--subject", "orders-value"])
    assert res.exit_code == 1, res.output
    assert _warnings(res.stderr) == [line]
    assert [x.split()[:3] for x in res.stdout.splitlines()[1:]] == [["orders-value", "1", "1"]]


@pytest.mark.parametrize("skipped", ["unknown-keytype"], indirect=True)
def test_export_jsonl_warns_and_exits_0(runner, skipped, tmp_path):
    log_dir, line = skipped
    out = tmp_path / "out"
    res = runner.invoke(
        cli,
        [
            "export",
            str(log_dir),
            "--to",
            "jsonl",
            str(out),
            "--decode-schemas",
            "--topic",
            "orders",
        ],
    )
    assert res.exit_code == 0, res.output
    assert _warnings(res.stderr) == [line]


@pytest.mark.parametrize("skipped", ["key-an-array"], indirect=True)
def test_the_spark_source_warns_once(skipped, capsys):
    from kafkalog_cli.spark.datasource import decoding_of

    log_dir, line = skipped
    for _ in range(2):  # a scan planned twice in one worker says it once
        decoding = decoding_of({"path": str(log_dir), "decodeSchemas": "true"})
    assert decoding.registry.version("orders-value", 2) is None
    assert _warnings(capsys.readouterr().err) == [line]
