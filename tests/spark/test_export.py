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
    return CliRunner().invoke(cli, ["export", *map(str, args), "--include-control"], catch_exceptions=False)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def dump_records(path: Path) -> list[dict]:
    """Every record line of `dump-log --format json` for the .log files of `path`, in file order."""
    out = []
    for seg in sorted(path.rglob("*.log")):
        rc, objs, _ = dump_json(seg, deep=True)
        assert rc == 0
        out.extend(dict(expected_record(o), segment=str(seg.resolve())) for o in objs if o["kind"] == "record")
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
        assert (row.pop("log_dir"), row.pop("broker_id")) == (str(BASIC), None)   # no meta.properties
        if row["control"] is not None:
            row["control"] = {k: v for k, v in row["control"].items() if v is not None}
        row["timestamp"] = millis(row["timestamp"])     # a Parquet timestamp (ms, UTC)
        got.setdefault(tp, []).append(row)
    want = {}
    for rec in dump_records(BASIC):
        part = Path(rec["segment"]).parent.name
        topic, _, n = part.rpartition("-")
        want.setdefault((topic, int(n)), []).append(rec)
    assert sorted(got) == sorted(want)
    for tp in want:
        assert sorted(got[tp], key=lambda r: r["offset"]) == want[tp], tp
    assert (parquet_local / "topic=multi-segment" / "partition=0" / "part-00013-00000000000000000300.parquet").is_file()


def test_spark_engine_writes_the_same_bytes(spark, parquet_local, tmp_path):
    r = run(BASIC, tmp_path / "out", "--to", "parquet", "--engine", "spark", "--format", "json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert (summary["engine"], summary["records"], summary["segments"]) == ("spark", 1227, 15)
    assert tree(tmp_path / "out") == tree(parquet_local)


def test_parquet_reads_back_in_spark_as_the_data_source_table(spark, parquet_local):
    back = spark.read.parquet(str(parquet_local)).orderBy("topic", "partition", "segment", "offset")
    src = spark.read.format("kafkalog").option("includeControl", "true").load(str(BASIC)).orderBy("topic", "partition", "segment", "offset")
    cols = [c for c in src.columns if c != "partition"]
    assert back.select(*cols).collect() == src.select(*cols).collect()


def test_jsonl_round_trip_and_same_bytes_from_spark(spark, tmp_path):
    local, sparked = tmp_path / "local.jsonl", tmp_path / "spark.jsonl"
    assert run(BASIC, local, "--to", "jsonl", "--payload-encoding", "base64").exit_code == 0
    assert run(BASIC, sparked, "--to", "jsonl", "--payload-encoding", "base64", "--engine", "spark",
               "--master", "local[2]").exit_code == 0
    assert local.read_bytes() == sparked.read_bytes()
    lines = [json.loads(x) for x in local.read_text().splitlines()]
    want = dump_records(BASIC)
    assert len(lines) == len(want) == 1227
    for line, rec in zip(lines, want):
        assert line.pop("topic") + "-" + str(line.pop("partition")) == Path(rec["segment"]).parent.name
        assert (line.pop("log_dir"), line.pop("broker_id")) == (str(BASIC), None)
        for k in ("key", "value"):
            line[k] = None if line[k] is None else base64.b64decode(line[k])
        line["headers"] = [{"key": h["key"], "value": None if h["value"] is None else base64.b64decode(h["value"])}
                           for h in line["headers"]]
        for k in ("crc", "is_valid", "control"):
            line.setdefault(k, None)
        assert line == rec


def test_payload_can_be_left_out(tmp_path):
    import pyarrow.parquet as pq

    assert run(BASIC / "txn-0", tmp_path / "p", "--to", "parquet", "--no-payload", "--no-headers").exit_code == 0
    names = pq.read_table(next((tmp_path / "p").rglob("*.parquet"))).column_names
    assert "key" not in names and "value" not in names and "headers" not in names and "offset" in names


def test_corrupt_segment_is_one_line_and_leaves_no_output(spark, tmp_path):
    for engine in ("local", "spark"):
        r = run(GARBAGE, tmp_path / engine, "--to", "parquet", "--engine", engine)
        assert r.exit_code == 3
        assert r.output.count("\n") == 1 and "Traceback" not in r.output
        assert "00000000000000000725.log: byte 6169: Found record size -254896888 smaller than minimum" in r.output
        assert os.listdir(tmp_path) == [] or all(not n.startswith(".") and n != engine for n in os.listdir(tmp_path))


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
    assert r.output == f"kafkalog: --engine spark needs Java 17 or later: JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java\n"


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
    r = run(logdir / "txn-0", logdir / "codec-none-0" / "00000000000000000000.log", "--to", "jsonl", "--overwrite")
    assert r.exit_code == 2 and "--overwrite replaces only a regular file that is not a Kafka file" in r.output
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    r = run(logdir / "txn-0", other, "--to", "parquet", "--overwrite")
    assert r.exit_code == 2 and "--overwrite replaces only a directory of topic=* directories" in r.output
    assert tree(logdir) == before and (other / "notes.txt").read_text() == "keep me"


def test_jsonl_to_standard_output(tmp_path):
    r = CliRunner().invoke(cli, ["export", str(BASIC / "txn-0"), "-", "--to", "jsonl",
                                                 "--payload-encoding", "utf8", "--include-control"], catch_exceptions=False)
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
    data[-3] ^= 0x01                      # inside the last batch's last value
    seg.write_bytes(bytes(data))
    size = int.from_bytes(data[8:12], "big") + 12
    pos = 0
    while pos + size < len(data):
        pos += size
        size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
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
