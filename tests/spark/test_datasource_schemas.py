"""The data source's decoding (decodeSchemas, schemas, schema, readerVersion) on the log dir
confluent-kafka's serializers wrote (tests/fixtures/schemas): rows equal to what the serializers
were given, and to fastavro's decoding of the same bytes."""

from __future__ import annotations

import base64
import io
import json
import re
from datetime import datetime, timezone

import pytest

from tests.helpers.paths import SCHEMAS
from tests.helpers.schemas import ORDERS_V2_DEFAULT

LOG_DIR = str(SCHEMAS / "logdir")
INPUTS = json.loads((SCHEMAS / "inputs.json").read_text())


def _read(spark, topic, source="kafkalog", **options):
    r = spark.read.format(source).option("decodeSchemas", "true").option("topic", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(LOG_DIR)


def _json_form(v):
    """A collected Spark value in the JSON form inputs.json keeps the serializers' inputs in."""
    from decimal import Decimal

    if isinstance(v, dict):
        return {k: _json_form(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_form(x) for x in v]
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, datetime):  # Spark hands TimestampType values as local naive datetimes
        return v.astimezone(timezone.utc).isoformat()
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _rows(df):
    return [r.asDict(recursive=True) for r in df.orderBy("offset").collect()]


def test_avro_values_are_typed_by_the_reader_schema_and_equal_the_inputs(spark):
    df = _read(spark, "orders")
    value = df.schema["value"].dataType
    assert df.schema["key"].dataType.simpleString() == "string"  # orders-key: Avro strings
    assert [(f.name, f.dataType.simpleString()) for f in value.fields] == [
        ("id", "bigint"),
        ("amount", "decimal(10,2)"),
        ("status", "string"),
        ("created", "timestamp"),
        ("day", "date"),
        ("uid", "string"),
        ("tags", "array<string>"),
        ("attrs", "map<string,bigint>"),
        ("note", "string"),
        ("shipping", "struct<city:string,weight:double>"),
        ("channel", "string"),
    ]
    cols = df.columns
    assert cols[cols.index("value") : cols.index("value") + 4] == [
        "value",
        "value_schema_id",
        "value_bytes",
        "value_error",
    ]
    rows = _rows(df)
    want = [{**ORDERS_V2_DEFAULT, **i} for i in INPUTS["orders"][:-1]]
    assert [_json_form(r["value"]) for r in rows[:-1]] == want
    assert [r["key"] for r in rows[:6]] == [f"order-{i}" for i in range(6)]
    assert all(r["value_error"] is None and r["value_bytes"] is None for r in rows[:-1])
    garbage = rows[-1]  # framed with id 3, not Avro: kept whole, with the reason
    assert garbage["value"] is None and garbage["value_schema_id"] == 3
    assert garbage["value_bytes"].startswith(b"\x00\x00\x00\x00\x03")
    assert "its schema (id 3) does not read" in garbage["value_error"]


def test_avro_rows_equal_fastavro_on_the_same_bytes(spark):
    fastavro = pytest.importorskip("fastavro")
    from kafkalog_cli.ops.schema_registry import load_registry

    registry = load_registry([LOG_DIR])
    reader = fastavro.parse_schema(json.loads(registry.latest("orders-value").schema))
    raw = {
        r["offset"]: r["value"]
        for r in _rows(spark.read.format("kafkalog").option("topic", "orders").load(LOG_DIR))
    }
    typed = _rows(_read(spark, "orders"))
    checked = 0
    for r in typed:
        if r["value"] is None:
            continue
        data = raw[r["offset"]]
        payload = data[5:] if data[:1] == b"\x00" else data  # else: the id in a header
        (writer,) = registry.by_id(r["value_schema_id"])
        want = fastavro.schemaless_reader(
            io.BytesIO(payload), fastavro.parse_schema(json.loads(writer.schema)), reader
        )
        got = dict(r["value"])
        got["created"] = got["created"].astimezone(timezone.utc)
        want["uid"] = str(want["uid"])  # Spark has no UUID type: text, as from_avro gives it
        assert got == want, r["offset"]
        checked += 1
    assert checked == len(INPUTS["orders"]) - 1


def test_references_json_schema_and_protobuf_values_equal_the_inputs(spark):
    assert [_json_form(r["value"]) for r in _rows(_read(spark, "customers"))] == INPUTS["customers"]
    assert [_json_form(r["value"]) for r in _rows(_read(spark, "readings"))] == INPUTS["readings"]
    events = _rows(_read(spark, "events"))
    clicks, purchases = INPUTS["events"][:2], INPUTS["events"][2:]
    assert [r["value"]["Purchase"] for r in events[:2]] == [None, None]
    assert [r["value"]["Click"] for r in events[:2]] == [
        {"page": c["page"], "x": c.get("x", 0)} for c in clicks
    ]
    for r, p in zip(events[2:], purchases):
        got = r["value"]["Purchase"]
        assert r["value"]["Click"] is None
        assert got["order_id"] == p["order_id"] and got["kind"] == p["kind"]
        assert got["delta"] == int(p["delta"]) and got["total"]["units"] == int(p["total"]["units"])
        assert got["lines"] == p["lines"] and got["labels"] == p["labels"]
        assert got["blob"] == base64.b64decode(p["blob"])
        assert _json_form(got["at"]).replace("+00:00", "Z") == p["at"]


def test_filters_on_a_decoded_table_are_pushed_down(spark, pushdown):
    pushed = _read(spark, "orders", source=pushdown).filter("offset >= 2 AND offset < 5")
    plan = pushed._jdf.queryExecution().executedPlan().toString()
    (spark_filter,) = [line for line in plan.splitlines() if re.search(r"\*\(\d+\) Filter ", line)]
    assert ">= 2" not in spark_filter and "< 5" not in spark_filter  # the source took them
    assert [(r["offset"], r["value"]["id"]) for r in _rows(pushed)] == [
        (2, 1002),
        (3, 1003),
        (4, 1004),
    ]


def test_reader_version_and_a_bound_schema_file(spark):
    v1 = _read(spark, "orders", readerVersion="1")
    assert "channel" not in v1.schema["value"].dataType.names
    assert [r["value"]["id"] for r in _rows(v1)[:-1]] == [1000 + i for i in range(7)]
    bound = (
        spark.read.format("kafkalog")
        .option("schema", f"legacy={SCHEMAS / 'files' / 'legacy.avsc'}")
        .option("topic", "legacy")
        .load(LOG_DIR)
    )
    assert [r["value"] for r in _rows(bound)] == [{"n": 7}]


def test_spark_kafka_columns_with_decoding(spark):
    df = (
        spark.read.format("kafkalog")
        .option("subscribe", "readings")
        .option("decodeSchemas", "true")
        .load(LOG_DIR)
    )
    assert df.columns == [
        "key",
        "value",
        "value_schema_id",
        "value_bytes",
        "value_error",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    rows = _rows(df)
    assert [_json_form(r["value"]) for r in rows] == INPUTS["readings"]


def test_topics_of_different_types_are_refused_by_name(spark):
    with pytest.raises(Exception) as e:
        _ = _read(spark, "orders,readings").schema
    assert "option decodeSchemas: one DataFrame has one schema" in str(e.value)
    assert "orders: key string, value struct<id:bigint" in str(e.value)
    assert "choose the topics with option topic or subscribe" in str(e.value)


def test_reader_version_alone_is_refused(spark):
    with pytest.raises(Exception) as e:
        _ = spark.read.format("kafkalog").option("readerVersion", "1").load(LOG_DIR).schema
    assert "option readerVersion needs decodeSchemas, schemas or schema" in str(e.value)
