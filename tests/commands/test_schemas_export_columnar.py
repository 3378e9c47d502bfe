"""export --to parquet --decode-schemas builds Avro columns column-wise (fastavro without logical
types, the logical types converted by Arrow): the Parquet files must be the bytes the value-by-value
path writes, on the serializer-made fixture and on values at and past the edges of each logical
type (where fastavro fails, rounds or reads otherwise, the record goes value by value)."""

import copy
import datetime
import decimal
import io
import json
from pathlib import Path

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import SCHEMAS as FIXTURE

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
fastavro = pytest.importorskip("fastavro")
schema_arrow = pytest.importorskip("kafkalog_cli.render.schema_arrow")

EDGE = {
    "type": "record",
    "name": "Edge",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
        {
            "name": "dec",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {
            "name": "decf",
            "type": {
                "type": "fixed",
                "name": "DecF",
                "size": 8,
                "logicalType": "decimal",
                "precision": 18,
                "scale": 4,
            },
        },
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {
            "name": "uids",
            "type": {"type": "array", "items": {"type": "string", "logicalType": "uuid"}},
        },
        {
            "name": "by_day",
            "type": {"type": "map", "values": ["null", {"type": "int", "logicalType": "date"}]},
        },
        {
            "name": "inner",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Inner",
                    "fields": [
                        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                        {"name": "fx", "type": {"type": "fixed", "name": "Three", "size": 3}},
                        {
                            "name": "kind",
                            "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]},
                        },
                    ],
                },
            ],
        },
        {"name": "f", "type": "float"},
        {"name": "ok", "type": "boolean"},
        {"name": "raw", "type": "bytes", "default": ""},
    ],
}
# version 1 of the subject: the reader (version 2) resolves its records, value by value
EDGE_V1 = {**EDGE, "fields": EDGE["fields"][:-1]}
U = "0123abcd-4567-89ef-0123-456789abcdef"
EPOCH = datetime.datetime(1970, 1, 1)
LO_US = (datetime.datetime.min - EPOCH) // datetime.timedelta(microseconds=1)
HI_US = (datetime.datetime.max - EPOCH) // datetime.timedelta(microseconds=1)
LO_DAY, HI_DAY = 1 - 719163, datetime.date.max.toordinal() - 719163


def _plain(schema):
    if isinstance(schema, list):
        return [_plain(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def _value(i: int, **edge):
    v = {
        "id": i,
        "ts_ms": 1_714_564_800_123 + i,
        "ts_us": -1_000_001 * i,
        "lts_ms": 0,
        "lts_us": 86_400_000_000 * i,
        "day": 19_844 - i,
        "tm": 45_296_789,
        "tu": 1,
        "dec": (-12_345 * i).to_bytes(4, "big", signed=True),
        "decf": (10**17 - i).to_bytes(8, "big", signed=True),
        "uid": U,
        "uids": [U.upper(), U] if i % 2 else [],
        "by_day": {"a": 1, "b": None},
        "inner": None if i % 3 == 0 else {"at": -1, "fx": b"\x00\x01\x02", "kind": "B"},
        "f": 0.1,
        "ok": True,
        "raw": b"\xff",
    }
    v.update(edge)
    return v


# values fastavro reads as the column does, and values where it fails, rounds or reads otherwise
EDGES = [
    {"ts_ms": -(-LO_US // 1000), "ts_us": LO_US, "lts_ms": HI_US // 1000, "lts_us": HI_US},
    {"day": LO_DAY, "tm": 0, "tu": 86_400_000_000 - 1},
    {"day": HI_DAY, "tm": 86_400_000 - 1, "tu": 0},
    {
        "dec": (10**10 - 1).to_bytes(5, "big", signed=True),
        "decf": (-(10**18) + 1).to_bytes(8, "big", signed=True),
    },
    {"ts_ms": -(-LO_US // 1000) - 1},
    {"ts_us": HI_US + 1},
    {"lts_ms": HI_US // 1000 + 1},
    {"day": HI_DAY + 1},
    {"day": LO_DAY - 1},
    {"tm": -1},
    {"tm": 86_400_000},
    {"tu": -1},
    {"uid": "{" + U + "}"},
    {"uid": "urn:uuid:" + U},
    {"uid": U.replace("-", "")},
    {"uid": "not a uuid"},
    {"uids": [U, U[:-1] + "g"]},
    {"inner": {"at": HI_US // 1000 + 1, "fx": b"abc", "kind": "A"}},
    {"by_day": {"x": HI_DAY + 1}},
]


def _payload(schema_id: int, schema, value, tail: bytes = b"") -> bytes:
    bio = io.BytesIO()
    bio.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(bio, fastavro.parse_schema(_plain(copy.deepcopy(schema))), value)
    return bio.getvalue() + tail


def _logdir(
    root: Path, values: list, headers=None, schemas=((1, 8, EDGE_V1), (2, 9, EDGE))
) -> Path:
    """A log dir: `edge-0` with `values` (and their `headers`), the versions of the subject
    edge-value in `_schemas-0` ((version, id, schema[, GUID]) each: the two of Edge)."""
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    (root / "edge-0").mkdir(parents=True)
    (root / "_schemas-0").mkdir()
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=edge\n")
    regs = []
    for version, sid, schema, *guid in schemas:
        key = {"keytype": "SCHEMA", "subject": "edge-value", "version": version, "magic": 1}
        value = {
            "subject": "edge-value",
            "version": version,
            "id": sid,
            "schema": json.dumps(schema),
            **({"guid": guid[0]} if guid else {}),
        }
        regs.append(
            SimpleRecord(
                key=json.dumps(key).encode(), value=json.dumps(value).encode(), timestamp=0
            )
        )
    (root / "_schemas-0" / "00000000000000000000.log").write_bytes(build_v2_batch(regs, 0))
    batch = [
        SimpleRecord(key=b"k", value=v, timestamp=1_700_000_000_000, headers=h)
        for v, h in zip(values, headers or [[]] * len(values))
    ]
    (root / "edge-0" / "00000000000000000000.log").write_bytes(build_v2_batch(batch, 0))
    return root


def _edge_logdir(root: Path) -> Path:
    """Edge values (most of version 2, the reader; some of version 1; a byte too many; one cut
    short; an unknown id; a tombstone; not framed; framed by a header; the edges above)."""
    from kafkalog_cli.formats.records import Header

    values = [_payload(9, EDGE, _value(i)) for i in range(12)]
    values += [_payload(8, EDGE_V1, _value(100 + i)) for i in range(3)]
    values += [_payload(9, EDGE, _value(300), b"\x00"), _payload(9, EDGE, _value(301))[:-3]]
    values += [b"\x00\x00\x00\x00\x63" + values[0][5:], None, b"plain text", values[1]]
    values += [_payload(9, EDGE, _value(200 + i, **e)) for i, e in enumerate(EDGES)]
    # headers: a record's own, and on the copy of record 1 a schema id header that does not read
    # (the header frames the value: its prefix is not read)
    headers = [[Header("traceparent", b"00-1")] if i % 4 == 0 else [] for i in range(len(values))]
    headers[20] = [Header("__value_schema_id", b"\x07"), Header("x", None)]
    return _logdir(root, values, headers)


def _export(log_dir: Path, out: Path, columnar: bool, monkeypatch, *more: str) -> dict[str, bytes]:
    from click.testing import CliRunner

    monkeypatch.setattr(schema_arrow, "COLUMNAR", columnar)
    res = CliRunner().invoke(
        cli,
        [
            "export",
            str(log_dir),
            "--to",
            "parquet",
            str(out),
            "--decode-schemas",
            "--jobs",
            "1",
            *more,
        ],
    )
    assert res.exit_code == 0, res.output
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


def _addressless(t):
    import re

    rows = t.to_pylist()
    for r in rows:
        if r["value_error"] is not None:
            r["value_error"] = re.sub(r" object at 0x[0-9a-f]+", " object", r["value_error"])
    return rows


@pytest.mark.parametrize(
    "rows,columnar_groups",
    [("1", 11 + 4), ("21", 1), ("1048576", 0)],
    ids=["a-record-a-row-group", "mixed-row-groups", "one-row-group"],
)
def test_edge_values_write_the_bytes_of_the_value_by_value_path(
    tmp_path, monkeypatch, rows, columnar_groups
):
    log_dir = _edge_logdir(tmp_path / "logdir")
    more = ("--row-group-size", rows, "--topic", "edge")
    built = []
    columnar_ = schema_arrow._columnar

    def spy(arr, t):
        out = columnar_(arr, t)
        if pa.types.is_struct(t) and t.get_field_index("uids") >= 0:
            built.append(len(out))
        return out

    monkeypatch.setattr(schema_arrow, "_columnar", spy)
    columnar = _export(log_dir, tmp_path / "columnar", True, monkeypatch, *more)
    # the row groups built column-wise, at least in part (a group where a value is past what
    # the columnar path takes is built value by value)
    assert len(built) == columnar_groups
    one_by_one = _export(log_dir, tmp_path / "one-by-one", False, monkeypatch, *more)
    assert list(columnar) == list(one_by_one) and len(columnar) == 1
    name = next(iter(columnar))
    t, want = (pq.read_table(tmp_path / d / name) for d in ("columnar", "one-by-one"))
    # the one difference in bytes: fastavro's EOFError names its BytesIO's address
    assert t.schema == want.schema and _addressless(t) == _addressless(want)
    rows_ = t.select(["value", "value_schema_id", "value_error"]).to_pylist()
    special = [9, 9, 99, None, None, None]
    assert [r["value_schema_id"] for r in rows_] == [9] * 12 + [8] * 3 + special + [9] * len(EDGES)
    assert rows_[0]["value"]["uid"].bytes == bytes.fromhex(U.replace("-", ""))
    assert "bytes after the record" in rows_[15]["value_error"]
    assert rows_[16]["value_error"].startswith("AVRO payload its schema (id 9) does not read")
    assert rows_[17]["value_error"] == "schema id 99 is not in the registry"
    assert rows_[18] == {"value": None, "value_schema_id": None, "value_error": None}
    assert rows_[19]["value"] is None and rows_[19]["value_error"].startswith(
        "not in the schema registry's wire format: magic byte 112"
    )
    assert rows_[20]["value"] is None and rows_[20]["value_error"].startswith(
        "not in the schema registry's wire format"
    )
    edges = rows_[21:]
    assert edges[0]["value"]["ts_us"] == datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    assert edges[EDGES.index({"uid": "{" + U + "}"})]["value"]["uid"] == rows_[0]["value"]["uid"]
    failed = {i for i, r in enumerate(edges) if r["value_error"] is not None}
    # past datetime's, date's and time's ranges fastavro fails; a negative time it reads as a
    # time of day, a UUID in another of uuid.UUID's forms it reads
    assert failed == {4, 5, 6, 7, 8, 10, 15, 16, 17, 18}, [edges[i]["value_error"] for i in failed]


def test_the_fixture_writes_the_bytes_of_the_value_by_value_path(tmp_path, monkeypatch):
    more = ["--topic", "orders", "--topic", "customers", "--topic", "events", "--topic", "readings"]
    columnar = _export(FIXTURE / "logdir", tmp_path / "columnar", True, monkeypatch, *more)
    one_by_one = _export(FIXTURE / "logdir", tmp_path / "one-by-one", False, monkeypatch, *more)
    assert len(columnar) >= 4 and columnar == one_by_one


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "value-by-value"])
def test_a_decimal_past_its_precision_is_kept_as_bytes_with_its_error(
    tmp_path, monkeypatch, columnar
):
    # fastavro rounds 10**10 hundredths to decimal(10, 2)'s 10 digits: 1.000000000E+8, which
    # Arrow's decimal128(10, 2) does not hold; the record keeps its bytes, the others decode
    big = _payload(9, EDGE, _value(1, dec=(10**10).to_bytes(5, "big", signed=True)))
    values = [_payload(9, EDGE, _value(0)), big, _payload(9, EDGE, _value(2))]
    log_dir = _logdir(tmp_path / "logdir", values)
    _export(log_dir, tmp_path / "out", columnar, monkeypatch, "--topic", "edge")
    t = pq.read_table(next((tmp_path / "out").rglob("*.parquet")))
    rows = t.select(["value", "value_schema_id", "value_bytes", "value_error"]).to_pylist()
    assert [r["value_schema_id"] for r in rows] == [9, 9, 9]
    assert rows[1] == {
        "value": None,
        "value_schema_id": 9,
        "value_bytes": big,
        "value_error": "not the column's type (edge-value version 2)",
    }
    assert [r["value"]["id"] for r in (rows[0], rows[2])] == [0, 2]
    assert rows[2]["value"]["dec"] == decimal.Decimal("-246.90")


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "value-by-value"])
def test_a_guid_prefix_does_not_stand_for_the_id_of_its_first_bytes(
    tmp_path, monkeypatch, columnar
):
    # version 1 framed by its GUID (magic 1), whose first 4 bytes are version 2's id (9): the
    # values framed by id 9 (magic 0) are version 2's, read as such
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    v1["fields"].append({"name": "b", "type": "string"})
    v2 = {**v1, "fields": [v1["fields"][0], {"name": "c", "type": "string", "default": "-"}]}
    guid = "00000009-0000-4000-8000-000000000001"
    schemas = ((1, 8, v1, guid), (2, 9, v2))
    by_guid = (
        b"\x01" + bytes.fromhex(guid.replace("-", "")) + _payload(8, v1, {"a": 1, "b": "x"})[5:]
    )
    values = [by_guid, _payload(9, v2, {"a": 2, "c": "y"}), _payload(9, v2, {"a": 3, "c": "z"})]
    log_dir = _logdir(tmp_path / "logdir", values, schemas=schemas)
    _export(log_dir, tmp_path / "out", columnar, monkeypatch, "--topic", "edge")
    t = pq.read_table(next((tmp_path / "out").rglob("*.parquet")))
    assert t.select(["value", "value_schema_id"]).to_pylist() == [
        {"value": {"a": 1, "c": "-"}, "value_schema_id": 8},
        {"value": {"a": 2, "c": "y"}, "value_schema_id": 9},
        {"value": {"a": 3, "c": "z"}, "value_schema_id": 9},
    ]
