"""export --to parquet --decode-schemas: typed columns from the serializer-made log dir
(tests/fixtures/schemas), equal to fastavro's decoding of the same bytes and to the
serializers' inputs."""

import datetime
import decimal
import io
import json
import shutil
import uuid
from pathlib import Path

import pytest

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import iter_batches
from tests.helpers.paths import SCHEMAS as FIXTURE
from tests.helpers.schemas import edit_schema, edit_value, make_logdir

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
fastavro = pytest.importorskip("fastavro")

LOGDIR = FIXTURE / "logdir"
INPUTS = json.loads((FIXTURE / "inputs.json").read_text())


def _table(out: Path, topic: str):
    return pq.read_table(next((out / f"topic={topic}").rglob("*.parquet")))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from click.testing import CliRunner

    base = tmp_path_factory.mktemp("export")
    runner = CliRunner()
    typed = runner.invoke(
        cli,
        [
            "export",
            str(LOGDIR),
            "--to",
            "parquet",
            str(base / "typed"),
            "--decode-schemas",
            "--jobs",
            "1",
            "--topic",
            "orders",
            "--topic",
            "customers",
            "--topic",
            "events",
            "--topic",
            "readings",
            "--topic",
            "legacy",
        ],
    )
    plain = runner.invoke(
        cli,
        [
            "export",
            str(LOGDIR),
            "--to",
            "parquet",
            str(base / "plain"),
            "--jobs",
            "1",
            "--topic",
            "orders",
        ],
    )
    assert typed.exit_code == 0 and plain.exit_code == 0, typed.output + plain.output
    return base / "typed", base / "plain"


def test_avro_values_are_typed_columns_equal_to_fastavro_on_the_same_bytes(exported):
    typed, plain = exported
    t = _table(typed, "orders")
    parquet = pq.ParquetFile(
        next((typed / "topic=orders").rglob("*.parquet"))
    ).schema.to_arrow_schema()
    v = parquet.field("value").type
    assert str(v.field("amount").type) == "decimal128(10, 2)"
    assert str(v.field("created").type) == "timestamp[ms, tz=UTC]"
    assert (
        str(v.field("day").type) == "date32[day]"
        and v.field("uid").type.extension_name == "arrow.uuid"
    )
    assert (
        str(v.field("attrs").type).startswith("map<string, int64")
        and str(v.field("tags").type) == "list<element: string>"
    )
    assert str(v.field("shipping").type) == "struct<city: string, weight: double>"
    # the reader is orders-value version 2: fastavro resolves each writer's bytes to it
    schemas = {1: make_logdir().ORDER_V1, 3: make_logdir().ORDER_V2}
    reader = fastavro.parse_schema(schemas[3])
    raw = _table(plain, "orders").column("value").to_pylist()
    rows = t.select(["value", "value_schema_id", "value_bytes", "value_error"]).to_pylist()
    for i, (data, row) in enumerate(zip(raw[:7], rows[:7])):
        # offset 6 carries its schema GUID in a header: its value is the Avro bytes alone
        sid, payload = (3, data) if i == 6 else (int.from_bytes(data[1:5], "big"), data[5:])
        want = fastavro.schemaless_reader(
            io.BytesIO(payload), fastavro.parse_schema(schemas[sid]), reader
        )
        want["attrs"] = list(want["attrs"].items())
        want["uid"] = uuid.UUID(str(want["uid"]))
        assert row["value"] == want and row["value_schema_id"] == sid and row["value_bytes"] is None
    last = rows[7]
    assert last["value"] is None and last["value_bytes"] == raw[7] and last["value_schema_id"] == 3
    assert last["value_error"].startswith("AVRO payload its schema (id 3) does not read")
    assert t.column("key").type == pa.string()
    assert t.column("key").to_pylist()[:6] == [f"order-{i}" for i in range(6)]
    first = rows[0]["value"]
    assert (first["amount"], first["created"], first["day"]) == (
        decimal.Decimal("0.00"),
        datetime.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=datetime.timezone.utc),
        datetime.date(2024, 5, 1),
    )


def test_protobuf_messages_of_one_file_are_a_struct_of_them(exported):
    typed, _ = exported
    values = _table(typed, "events").column("value").to_pylist()
    assert [v["Click"] for v in values[:2]] == [{"page": "/p/0", "x": -1}, {"page": "/p/1", "x": 0}]
    p = values[2]["Purchase"]
    assert values[2]["Click"] is None
    assert (p["total"], p["kind"], p["delta"], p["blob"], p["labels"]) == (
        {"currency": "EUR", "units": 5},
        "ONLINE",
        -5,
        b"\x00\xff",
        [("src", "web")],
    )
    assert p["at"] == datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)


def test_json_schema_and_referencing_avro_values_are_structs_of_the_inputs(exported):
    typed, _ = exported
    assert _table(typed, "readings").column("value").to_pylist() == [
        {"sensor": r["sensor"], "celsius": r["celsius"], "ok": r["ok"], "tags": r["tags"]}
        for r in INPUTS["readings"]
    ]
    assert _table(typed, "customers").column("value").to_pylist() == INPUTS["customers"]


def test_a_topic_without_a_schema_keeps_its_bytes_column(exported):
    typed, _ = exported
    t = _table(typed, "legacy")
    assert t.column("value").type == pa.binary() and "value_error" not in t.column_names


def test_a_reader_schema_that_does_not_parse_keeps_every_value_as_bytes(runner, tmp_path):
    """A topic whose reader schema does not parse (here: it references itself, so fastavro
    meets a name nothing defines) gets no type: its value column is null, each value kept whole
    in value_bytes with the reason in value_error; never an internal error."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, log_dir)
    edit_schema(
        log_dir,
        "customers-value",
        1,
        references=[{"name": "c", "subject": "customers-value", "version": 1}],
    )
    out = tmp_path / "out"
    res = runner.invoke(
        cli,
        ["export", str(log_dir), "--to", "parquet", str(out), "--decode-schemas"]
        + ["--jobs", "1", "--topic", "customers"],
    )
    assert res.exit_code == 0, res.output
    t = _table(out, "customers")
    segment = (log_dir / "customers-0" / "00000000000000000000.log").read_bytes()
    raw = [r.value for b in iter_batches(segment) for r in b.records()]
    assert t.column("value").to_pylist() == [None] * len(raw)
    assert t.column("value_bytes").to_pylist() == raw
    assert all(
        e.startswith("customers-value version 1: its AVRO schema, or a reference's, does not parse")
        for e in t.column("value_error").to_pylist()
    )


def test_a_framed_id_past_a_java_int_is_kept_as_bytes(runner, tmp_path):
    """A prefix's id is 4 unsigned bytes (confluent-kafka reads it so); one past 2^31 - 1 is no
    registry's id (Java ints): its value is kept in value_bytes with the id named in
    value_error, value_schema_id null."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, log_dir)
    seg = log_dir / "orders-0" / "00000000000000000000.log"
    (old,) = [r.value for b in iter_batches(seg.read_bytes()) for r in b.records() if r.offset == 1]
    new = b"\x00\xff\xff\xff\xff" + old[5:]
    edit_value(log_dir, "orders-0", 1, new)
    out = tmp_path / "out"
    res = runner.invoke(
        cli,
        ["export", str(log_dir), "--to", "parquet", str(out), "--decode-schemas"]
        + ["--jobs", "1", "--topic", "orders"],
    )
    assert res.exit_code == 0, res.output
    row = _table(out, "orders").to_pylist()[1]
    assert row["offset"] == 1 and row["value"] is None and row["value_bytes"] == new
    assert row["value_schema_id"] is None
    assert row["value_error"] == "schema id 4294967295 is not in the registry"


def _record_of(field_type) -> dict:
    return {"type": "record", "name": "C", "fields": [{"name": "f", "type": field_type}]}


@pytest.mark.parametrize(
    "schema",
    [
        _record_of({"type": "fixed", "name": "F", "size": 2**40}),
        _record_of({"type": "fixed", "name": "F", "size": -3}),
        _record_of({"type": "bytes", "logicalType": "decimal", "precision": 1000, "scale": 2}),
        [],
        {"type": "record", "name": "Nothing", "fields": []},
    ],
    ids=["fixed-2^40", "fixed-negative", "decimal-1000-digits", "union-of-nothing", "empty-record"],
)
def test_a_reader_schema_parquet_cannot_hold_keeps_every_value_as_bytes(runner, tmp_path, schema):
    """A reader schema whose Arrow type Parquet cannot hold (a fixed past Arrow's sizes, a
    decimal past 76 digits, a struct of no fields) is a column of nulls, every value kept in
    value_bytes with the reason: never an internal error, nor a failed write (exit 6)."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, log_dir)
    edit_schema(log_dir, "customers-value", 1, schema=json.dumps(schema), references=[])
    out = tmp_path / "out"
    res = runner.invoke(
        cli,
        ["export", str(log_dir), "--to", "parquet", str(out), "--decode-schemas"]
        + ["--jobs", "1", "--topic", "customers"],
    )
    assert res.exit_code == 0, res.output
    t = _table(out, "customers")
    segment = (log_dir / "customers-0" / "00000000000000000000.log").read_bytes()
    raw = [r.value for b in iter_batches(segment) for r in b.records()]
    assert t.column("value").to_pylist() == [None] * len(raw)
    assert t.column("value_bytes").to_pylist() == raw
    assert all(t.column("value_error").to_pylist())
