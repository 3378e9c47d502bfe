"""`kafkalog export`: round trips to Parquet and JSON Lines, the same bytes from both engines."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.spark.helpers import FIXTURES, dump_json, expected_record, millis

BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"
GARBAGE = FIXTURES / "corpus" / "broker" / "recover" / "tail-garbage" / "before"


def run(*args):
    """export's raw view (--include-control): every record of the files, dump-log's; what a
    consumer gets is tests/spark/test_consumer_view.py's."""
    return CliRunner().invoke(
        cli, ["export", *map(str, args), "--include-control"], catch_exceptions=False
    )


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def dump_records(path: Path) -> list[dict]:
    """Every record line of `dump-log --format json` for the .log files of `path`, in file order."""
    out = []
    for seg in sorted(path.rglob("*.log")):
        rc, objs, _ = dump_json(seg, deep=True)
        assert rc == 0
        out.extend(
            dict(expected_record(o), segment=str(seg.resolve()))
            for o in objs
            if o["kind"] == "record"
        )
    return out


@pytest.fixture(scope="module")
def parquet_local(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    r = run(BASIC, out, "--to", "parquet", "--jobs", "2")
    assert r.exit_code == 0, r.output
    assert r.output == f"exported 1227 records from 15 segments to {out}\n"
    return out


def test_parquet_round_trip_holds_what_dump_log_prints(parquet_local):
    import pyarrow.dataset as ds

    table = ds.dataset(parquet_local, format="parquet", partitioning="hive").to_table()
    got = {}
    for row in table.to_pylist():
        tp = (row.pop("topic"), row.pop("partition"))
        assert (row.pop("log_dir"), row.pop("broker_id")) == (
            str(BASIC),
            None,
        )  # no meta.properties
        if row["control"] is not None:
            row["control"] = {k: v for k, v in row["control"].items() if v is not None}
        row["timestamp"] = millis(row["timestamp"])  # a Parquet timestamp (ms, UTC)
        got.setdefault(tp, []).append(row)
    want = {}
    for rec in dump_records(BASIC):
        part = Path(rec["segment"]).parent.name
        topic, _, n = part.rpartition("-")
        want.setdefault((topic, int(n)), []).append(rec)
    assert sorted(got) == sorted(want)
    for tp in want:
        assert sorted(got[tp], key=lambda r: r["offset"]) == want[tp], tp
    assert (
        parquet_local
        / "topic=multi-segment"
        / "partition=0"
        / "part-00013-00000000000000000300.parquet"
    ).is_file()


def test_spark_engine_writes_the_same_bytes(spark, parquet_local, tmp_path):
    r = run(BASIC, tmp_path / "out", "--to", "parquet", "--engine", "spark", "--format", "json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert (summary["engine"], summary["records"], summary["segments"]) == ("spark", 1227, 15)
    assert tree(tmp_path / "out") == tree(parquet_local)


def test_parquet_reads_back_in_spark_as_the_data_source_table(spark, parquet_local):
    back = spark.read.parquet(str(parquet_local)).orderBy("topic", "partition", "segment", "offset")
    src = (
        spark.read.format("kafkalog")
        .option("includeControl", "true")
        .load(str(BASIC))
        .orderBy("topic", "partition", "segment", "offset")
    )
    cols = [c for c in src.columns if c != "partition"]
    assert back.select(*cols).collect() == src.select(*cols).collect()


def test_jsonl_round_trip_and_same_bytes_from_spark(spark, tmp_path):
    local, sparked = tmp_path / "local.jsonl", tmp_path / "spark.jsonl"
    assert run(BASIC, local, "--to", "jsonl", "--payload-encoding", "base64").exit_code == 0
    assert (
        run(
            BASIC,
            sparked,
            "--to",
            "jsonl",
            "--payload-encoding",
            "base64",
            "--engine",
            "spark",
            "--master",
            "local[2]",
        ).exit_code
        == 0
    )
    assert local.read_bytes() == sparked.read_bytes()
    lines = [json.loads(x) for x in local.read_text().splitlines()]
    want = dump_records(BASIC)
    assert len(lines) == len(want) == 1227
    for line, rec in zip(lines, want):
        assert (
            line.pop("topic") + "-" + str(line.pop("partition")) == Path(rec["segment"]).parent.name
        )
        assert (line.pop("log_dir"), line.pop("broker_id")) == (str(BASIC), None)
        for k in ("key", "value"):
            line[k] = None if line[k] is None else base64.b64decode(line[k])
        line["headers"] = [
            {"key": h["key"], "value": None if h["value"] is None else base64.b64decode(h["value"])}
            for h in line["headers"]
        ]
        for k in ("crc", "is_valid", "control"):
            line.setdefault(k, None)
        assert line == rec


def test_payload_can_be_left_out(tmp_path):
    import pyarrow.parquet as pq

    assert (
        run(
            BASIC / "txn-0", tmp_path / "p", "--to", "parquet", "--no-payload", "--no-headers"
        ).exit_code
        == 0
    )
    names = pq.read_table(next((tmp_path / "p").rglob("*.parquet"))).column_names
    assert (
        "key" not in names and "value" not in names and "headers" not in names and "offset" in names
    )


def test_corrupt_segment_is_one_line_and_leaves_no_output(spark, tmp_path):
    for engine in ("local", "spark"):
        r = run(GARBAGE, tmp_path / engine, "--to", "parquet", "--engine", engine)
        assert r.exit_code == 3
        assert r.output.count("\n") == 1 and "Traceback" not in r.output
        assert (
            "00000000000000000725.log: byte 6169: Found record size -254896888 smaller than minimum"
            in r.output
        )
        assert os.listdir(tmp_path) == [] or all(
            not n.startswith(".") and n != engine for n in os.listdir(tmp_path)
        )


def test_existing_output_is_refused_unless_overwrite(tmp_path):
    (tmp_path / "out").mkdir()
    r = run(BASIC / "txn-0", tmp_path / "out", "--to", "parquet")
    assert r.exit_code == 4 and "out: already exists (pass --overwrite to replace it)" in r.output
    r = run(BASIC / "txn-0", tmp_path / "out", "--to", "parquet", "--overwrite")
    assert r.exit_code == 0 and "exported 15 records from 1 segments" in r.output


def test_usage_errors(tmp_path):
    r = run(BASIC, tmp_path / "o", "--to", "parquet", "--master", "local[2]")
    assert r.exit_code == 2 and "--master needs --engine spark" in r.output
    r = run(tmp_path / "nope", tmp_path / "o", "--to", "jsonl")
    assert r.exit_code == 4 and f"{tmp_path / 'nope'}: no such file or directory" in r.output


def test_missing_java_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    r = run(BASIC, tmp_path / "o", "--to", "parquet", "--engine", "spark")
    assert r.exit_code == 4
    assert (
        r.output
        == f"kafkalog: --engine spark needs Java 17 or later: JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java\n"
    )


def test_swapped_arguments_never_touch_the_log_dir(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(BASIC, logdir)
    before = tree(logdir)
    r = run(logdir, logdir, "--to", "parquet", "--overwrite")
    assert r.exit_code == 2 and "OUT overlaps the input" in r.output
    seg = logdir / "txn-0" / "00000000000000000000.log"
    r = run(logdir / "txn-0", seg, "--to", "jsonl", "--overwrite")
    assert r.exit_code == 2 and "OUT overlaps the input" in r.output
    # a Kafka file elsewhere, or a directory that is not an earlier export, is not replaced either
    r = run(
        logdir / "txn-0",
        logdir / "codec-none-0" / "00000000000000000000.log",
        "--to",
        "jsonl",
        "--overwrite",
    )
    assert (
        r.exit_code == 2
        and "--overwrite replaces only a regular file that is not a Kafka file" in r.output
    )
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    r = run(logdir / "txn-0", other, "--to", "parquet", "--overwrite")
    assert (
        r.exit_code == 2
        and "--overwrite replaces only a directory of topic=* directories" in r.output
    )
    assert tree(logdir) == before and (other / "notes.txt").read_text() == "keep me"


def test_jsonl_to_standard_output(tmp_path):
    r = CliRunner().invoke(
        cli,
        [
            "export",
            str(BASIC / "txn-0"),
            "-",
            "--to",
            "jsonl",
            "--payload-encoding",
            "utf8",
            "--include-control",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.stderr
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert len(lines) == 15 and lines[0]["key"] == "t-commit-0" and lines[0]["topic"] == "txn"
    assert r.stderr == "exported 15 records from 1 segments to standard output\n"
    assert os.listdir(tmp_path) == []
    r = run(BASIC / "txn-0", "-", "--to", "parquet")
    assert r.exit_code == 2 and "needs --to jsonl" in r.output


def test_a_batch_whose_crc_fails_is_not_exported(tmp_path):
    part = tmp_path / "codec-none-0"
    shutil.copytree(BASIC / "codec-none-0", part)
    seg = part / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0x01  # inside the last batch's last value
    seg.write_bytes(bytes(data))
    size = int.from_bytes(data[8:12], "big") + 12
    pos = 0
    while pos + size < len(data):
        pos += size
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
    r = run(part, tmp_path / "out.jsonl", "--to", "jsonl")
    assert r.exit_code == 3 and r.output.count("\n") == 1
    assert f"{seg}: byte {pos}: Record is corrupt (stored crc = " in r.output
    assert not (tmp_path / "out.jsonl").exists()


def test_a_batch_whose_crc_fails_is_not_exported_to_parquet_either(tmp_path):
    part = tmp_path / "codec-none-0"
    shutil.copytree(BASIC / "codec-none-0", part)
    seg = part / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0x01
    seg.write_bytes(bytes(data))
    r = run(part, tmp_path / "out", "--to", "parquet")
    assert r.exit_code == 3 and "Record is corrupt (stored crc = " in r.output
    assert not (tmp_path / "out").exists()


def test_parquet_row_groups_are_whole_and_offsets_delta_encoded(tmp_path):
    """A segment of 20,000 records is one row group (not one per Arrow batch of 8192); offsets,
    timestamps and sequences are delta-encoded; payloads carry no min/max statistics."""
    import pyarrow.parquet as pq

    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    d = tmp_path / "logs" / "orders-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(
        b"".join(
            build_v2_batch(
                [
                    SimpleRecord(b"k%d" % (i + j), b"v" * 30, 1_700_000_000_000 + i + j)
                    for j in range(100)
                ],
                i,
            )
            for i in range(0, 20_000, 100)
        )
    )
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["export", str(tmp_path / "logs"), str(out), "--to", "parquet"])
    assert r.exit_code == 0, r.output
    (f,) = out.rglob("*.parquet")
    meta = pq.ParquetFile(f).metadata
    assert meta.num_row_groups == 1 and meta.num_rows == 20_000
    group = meta.row_group(0)
    col = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    for name in ("offset", "timestamp", "sequence"):
        assert "DELTA_BINARY_PACKED" in col[name].encodings, name
    assert (col["offset"].statistics.min, col["offset"].statistics.max) == (0, 19_999)
    assert not col["value"].is_stats_set and not col["key"].is_stats_set
    assert pq.read_table(f).column("offset").to_pylist() == list(range(20_000))
    small = tmp_path / "small"
    r = CliRunner().invoke(
        cli,
        [
            "export",
            str(tmp_path / "logs"),
            str(small),
            "--to",
            "parquet",
            "--row-group-size",
            "3000",
        ],
    )
    (f,) = small.rglob("*.parquet")
    assert [pq.ParquetFile(f).metadata.row_group(i).num_rows for i in range(7)] == [3000] * 6 + [
        2000
    ]


def test_a_row_group_ends_at_its_bytes_too(tmp_path, monkeypatch):
    """Records of 4 KiB: an Arrow batch ends at BYTES_PER_BATCH of payloads and a row group at
    ROW_GROUP_BYTES of Arrow data, whichever batch crosses it (a worker holds one row group in
    memory), every record still exported once."""
    import pyarrow.parquet as pq

    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
    from kafkalog_cli.spark import arrow
    from kafkalog_cli.spark import export as export_module

    monkeypatch.setattr(export_module, "ROW_GROUP_BYTES", 1 << 20)
    monkeypatch.setattr(arrow, "BYTES_PER_BATCH", 256 << 10)
    d = tmp_path / "logs" / "big-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(
        b"".join(
            build_v2_batch(
                [SimpleRecord(None, bytes([i % 251]) * 4096, 1000 + i + j) for j in range(10)], i
            )
            for i in range(0, 2000, 10)
        )
    )
    summary = export_module.export(
        [str(tmp_path / "logs")], tmp_path / "out", export_module.ExportOptions(), jobs=1
    )
    assert summary["records"] == 2000
    (f,) = (tmp_path / "out").rglob("*.parquet")
    meta = pq.ParquetFile(f).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(sizes) == 2000 and 7 <= len(sizes) <= 8 and max(sizes) <= 256 + 70
    assert pq.read_table(f).column("offset").to_pylist() == list(range(2000))
