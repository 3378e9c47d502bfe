"""Issue 26, points 12 and 13: `export` and the `kafkalog` data source return what a Kafka consumer
returns. By default (read_uncommitted) no control records and nothing at or above the high
watermark; read_committed also no aborted records and nothing from the last stable offset on;
--include-control is the raw view, whose rows are dump-log --format json --deep-iteration's.
Offset and time ranges; timestamps as Arrow/Parquet timestamp(ms, UTC); Spark's Kafka source's
columns and options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops.consumer_view import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    consumer_view,
    views_for,
)
from kafkalog_cli.storage.remote import segments_of_sources
from tests.helpers.paths import EXAMPLES

TXN = (
    EXAMPLES / "txn-0"
)  # commit 0-4, COMMIT marker 5, abort 6-9, ABORT marker 10, commit 11-13, COMMIT 14


def export(*args) -> tuple[int, list[dict], str]:
    r = CliRunner().invoke(cli, ["export", *map(str, args)])
    rows = [json.loads(x) for x in r.stdout.splitlines()] if "-" in args else []
    return r.exit_code, rows, r.stderr


def offsets(rows) -> list[int]:
    return [r["offset"] for r in rows]


def test_default_export_leaves_out_the_markers_as_a_consumer_does():
    # reproduced first: the COMMIT/ABORT markers (5, 10, 14) were rows
    rc, rows, _ = export(TXN, "-", "--to", "jsonl")
    assert rc == 0
    assert offsets(rows) == [0, 1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13]
    assert not any(r["is_control"] for r in rows)


def test_read_committed_leaves_out_the_aborted_transaction():
    rc, rows, _ = export(TXN, "-", "--to", "jsonl", "--isolation-level", "read_committed")
    assert rc == 0
    assert offsets(rows) == [0, 1, 2, 3, 4, 11, 12, 13]
    assert [r["key"] for r in rows][:2] == ["t-commit-0", "t-commit-1"]


def test_include_control_is_dump_logs_records():
    rc, rows, _ = export(
        TXN, "-", "--to", "jsonl", "--include-control", "--payload-encoding", "hex"
    )
    assert rc == 0
    r = CliRunner().invoke(
        cli,
        ["dump-log", str(TXN), "--format", "json", "--deep-iteration", "--payload-encoding", "hex"],
    )
    dumped = [o for o in map(json.loads, r.stdout.splitlines()) if o["kind"] == "record"]
    assert offsets(rows) == list(range(15))
    for row, rec in zip(rows, dumped):
        assert {k: v for k, v in row.items() if k not in ("segment", "log_dir", "broker_id")} == {
            k: v for k, v in rec.items() if k not in ("kind", "file")
        }
    rc, _, err = export(
        TXN, "-", "--to", "jsonl", "--include-control", "--isolation-level", "read_committed"
    )
    assert rc == 2 and "excludes --isolation-level read_committed" in err


def _partition(tmp_path, hw: int | None, batches: list[bytes], name: str = "t-0") -> Path:
    d = tmp_path / "logs" / name
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    if hw is not None:
        (d.parent / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {hw}\n")
    return d


def _data(base: int, n: int, pid: int = -1, txn: bool = False) -> bytes:
    return build_v2_batch(
        [SimpleRecord(b"k%d" % (base + i), b"v", 1_700_000_000_000 + base + i) for i in range(n)],
        base,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=base if pid >= 0 else -1,
        is_transactional=txn,
    )


def test_nothing_at_or_above_the_high_watermark(tmp_path):
    d = _partition(tmp_path, 7, [_data(0, 5), _data(5, 5)])  # the HW cuts the second batch
    rc, rows, _ = export(d, "-", "--to", "jsonl")
    assert rc == 0 and offsets(rows) == [0, 1, 2, 3, 4, 5, 6]
    rc, rows, _ = export(d, "-", "--to", "jsonl", "--include-control")
    assert offsets(rows) == list(range(10))


def test_read_committed_stops_at_the_open_transaction(tmp_path):
    # an open transaction from offset 3: the LSO; read_uncommitted goes on to the HW
    d = _partition(tmp_path, 8, [_data(0, 3), _data(3, 2, pid=7, txn=True), _data(5, 3)])
    assert offsets(export(d, "-", "--to", "jsonl", "--isolation-level", "read_committed")[1]) == [
        0,
        1,
        2,
    ]
    assert offsets(export(d, "-", "--to", "jsonl")[1]) == list(range(8))
    (view,) = views_for(segments_of_sources([str(d)]), READ_COMMITTED).values()
    assert (view.high_watermark, view.last_stable_offset) == (8, 3)


def test_the_lso_is_the_one_transactions_shows():
    from kafkalog_cli.ops.transactions import partition_transactions, read_partitions

    (part,) = read_partitions(EXAMPLES, [TXN])
    pt = partition_transactions(part, 0, 1 << 62)
    (view,) = views_for(segments_of_sources([str(TXN)]), READ_COMMITTED).values()
    assert (
        (view.last_stable_offset, view.high_watermark)
        == (pt.last_stable_offset, pt.high_watermark)
        == (15, 15)
    )
    assert view.aborted == {1: [(6, 10)]}


def test_without_a_high_watermark_the_log_end_stands_in_with_a_note(tmp_path):
    d = _partition(tmp_path, None, [_data(0, 4)])
    rc, rows, err = export(d, "-", "--to", "jsonl")
    assert offsets(rows) == [0, 1, 2, 3]
    assert (
        "kafkalog: note: 1 partition(s) have no entry in their log dir's replication-offset-checkpoint (t-0)"
        in err
    )


def test_offset_and_time_ranges():
    part = EXAMPLES / "multi-segment-0"
    rc, rows, _ = export(part, "-", "--to", "jsonl", "--from-offset", "298", "--to-offset", "302")
    assert rc == 0 and offsets(rows) == [298, 299, 300, 301, 302]
    first = rows[0]["timestamp"]
    rc, rows, _ = export(
        part, "-", "--to", "jsonl", "--from-time", str(first), "--to-time", str(first)
    )
    assert rows and all(r["timestamp"] == first for r in rows)
    rc, _, err = export(part, "-", "--to", "jsonl", "--from-offset", "5", "--to-offset", "4")
    assert rc == 2 and "nothing can match" in err


def test_parquet_timestamps_are_timestamps_in_ms_utc(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rc, _, _ = export(TXN, tmp_path / "out", "--to", "parquet")
    assert rc == 0
    table = pq.read_table(next((tmp_path / "out").rglob("*.parquet")))
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert table.column("offset").to_pylist() == [0, 1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13]
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    assert ts[0] == 1795247595747


def test_consumer_view_verdicts_on_the_batch_level():
    from kafkalog_cli.formats.records import iter_batches

    data = (
        _data(0, 2)
        + _data(2, 2, pid=3, txn=True)
        + build_v2_batch(
            [SimpleRecord(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", 0)],
            4,
            producer_id=3,
            producer_epoch=0,
            is_transactional=True,
            is_control=True,
        )
        + _data(5, 2)
    )
    batches = list(iter_batches(data, 0, len(data)))
    view = consumer_view(batches, READ_COMMITTED, 6, None)
    assert view.aborted == {3: [(2, 4)]} and view.end == 6
    verdicts = [
        view.verdict(b.base_offset, b.last_offset, b.is_control, b.is_transactional, b.producer_id)
        for b in batches
    ]
    assert verdicts == ["keep", "skip", "skip", "cut"]
    assert consumer_view(batches, READ_UNCOMMITTED, 6, None).verdict(2, 3, False, True, 3) == "keep"


def test_kafka_options_map_onto_kafkalogs():
    from kafkalog_cli.spark.kafka_compat import kafka_options

    k = kafka_options(
        {
            "kafka.bootstrap.servers": "b:9092",
            "subscribe": "txn,orders",
            "startingOffsets": '{"txn": {"0": 3}}',
            "endingOffsets": "latest",
            "kafka.isolation.level": "read_committed",
            "failOnDataLoss": "false",
        }
    )
    assert k.kafka_schema and k.topics == {"txn", "orders"} and k.isolation == "read_committed"
    assert k.starting == {("txn", 0): 3} and k.ending == {}
    assert any("kafka.bootstrap.servers ignored" in w for w in k.warnings)
    assert any("failOnDataLoss ignored" in w for w in k.warnings)
    assert kafka_options({"subscribePattern": "codec-.*"}).keeps("codec-none", 0)
    assert not kafka_options({"subscribePattern": ".*"}).keeps("__consumer_offsets", 0)
    assert kafka_options({"assign": '{"txn": [0]}'}).keeps("txn", 0)
    assert not kafka_options({"assign": '{"txn": [0]}'}).keeps("txn", 1)
    assert not kafka_options({}).kafka_schema
    from kafkalog_cli.errors import InputError

    with pytest.raises(InputError, match="give only one of subscribe"):
        kafka_options({"subscribe": "a", "assign": '{"a": [0]}'})
    with pytest.raises(InputError, match="not allowed for a batch query"):
        kafka_options({"subscribe": "a", "startingOffsets": "latest"})


def test_spark_source_is_a_consumer_and_speaks_kafkas_options(spark):
    path = str(EXAMPLES)

    def read():  # a DataFrameReader keeps its options: a new one each time
        return spark.read.format("kafkalog").option("topic", "txn")

    assert [r.offset for r in read().load(path).orderBy("offset").collect()] == [
        0,
        1,
        2,
        3,
        4,
        6,
        7,
        8,
        9,
        11,
        12,
        13,
    ]
    assert [
        r.offset
        for r in read()
        .option("isolationLevel", "read_committed")
        .load(path)
        .orderBy("offset")
        .collect()
    ] == [0, 1, 2, 3, 4, 11, 12, 13]
    assert read().option("includeControl", "true").load(path).count() == 15
    # a batch job written for format("kafka"), with only the format and the path changed
    df = (
        spark.read.format("kafkalog")
        .option("kafka.bootstrap.servers", "broker:9092")
        .option("subscribe", "txn")
        .option("kafka.isolation.level", "read_committed")
        .option("startingOffsets", '{"txn": {"0": 3}}')
        .option("endingOffsets", '{"txn": {"0": 12}}')
        .load(path)
    )
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    assert dict(df.dtypes)["timestamp"] == "timestamp" and dict(df.dtypes)["timestampType"] == "int"
    rows = df.orderBy("offset").collect()
    assert [(r.offset, r.key, r.timestampType) for r in rows] == [
        (3, b"t-commit-3", 0),
        (4, b"t-commit-4", 0),
        (11, b"t-commit-0", 0),
    ]
    df = (
        spark.read.format("kafkalog")
        .option("subscribe", "codec-none")
        .option("includeHeaders", "true")
        .load(path)
    )
    assert df.columns[-1] == "headers" and df.count() == 60
    n = (
        spark.read.format("kafkalog")
        .load(path)
        .filter("topic = 'codec-none' AND timestamp >= timestamp_millis(1700000000050)")
        .count()
    )
    assert n == 10
