"""Log dirs on S3-compatible storage (a moto server on 127.0.0.1): listed and read through
pyarrow.fs with ranged reads, row for row what the local files give. Skipped when moto's
server cannot start (moto[server] is in the test extra)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.spark.helpers import BUCKET, KAFKALOG


def _key(seg) -> tuple:
    return (Path(seg.path).parent.parent.name, seg.topic, seg.partition, seg.base_offset, seg.size)


def test_an_archive_on_s3_lists_the_segments_the_local_copy_has(s3):
    from kafkalog_cli.storage.names import PartitionFilter
    from kafkalog_cli.storage.remote import segments_of_sources

    local, uri, _ = s3
    want = [_key(s) for s in segments_of_sources([str(local)])]
    assert [_key(s) for s in segments_of_sources([uri])] == want
    assert len(want) == 6  # multi-segment has two segments, in both brokers
    assert [_key(s) for s in segments_of_sources([uri + "/broker-*/txn-0"])] == [
        k for k in want if k[1] == "txn"
    ]
    only = PartitionFilter(("multi-*",), ())
    assert [_key(s) for s in segments_of_sources([uri], only=only)] == [
        k for k in want if k[1] == "multi-segment"
    ]
    from kafkalog_cli.errors import InputError

    with pytest.raises(InputError) as e:
        segments_of_sources([f"s3a://{BUCKET}/nothing-here"])
    assert str(e.value) == f"s3a://{BUCKET}/nothing-here: no such file or directory"


def _rows(refs, level="record", pushdown=None):
    from kafkalog_cli.spark.arrow import columns, read_segment

    out = []
    for ref in refs:
        for rb in read_segment(ref, columns(level), level=level, pushdown=pushdown):
            out += [
                {k: v for k, v in r.items() if k not in ("segment", "log_dir")}
                for r in rb.to_pylist()
            ]
    return out


@pytest.mark.parametrize("level", ["record", "batch"])
def test_rows_read_in_small_ranges_are_the_local_rows(s3, monkeypatch, level):
    from kafkalog_cli.storage import remote
    from kafkalog_cli.storage.remote import segments_of_sources

    local, uri, _ = s3
    monkeypatch.setattr(remote, "CHUNK", 3000)  # many chunks, and batches bigger than one
    got = _rows(segments_of_sources([uri]), level)
    assert got == _rows(segments_of_sources([str(local)]), level)
    assert {r["broker_id"] for r in got} == {0, 1}


def test_a_pushed_offset_reads_only_from_the_index_entry_on(s3, monkeypatch):
    from kafkalog_cli.spark.arrow import Bounds, Pushdown
    from kafkalog_cli.storage.remote import RemoteSegment, segments_of_sources

    local, uri, _ = s3
    reads = []
    original = RemoteSegment.read_range

    def counting(self, suffix, position, size):
        data = original(self, suffix, position, size)
        reads.append((suffix, position, len(data)))
        return data

    monkeypatch.setattr(RemoteSegment, "read_range", counting)
    refs = segments_of_sources([uri + "/broker-0/multi-segment-0"])
    pushed = Pushdown(offset=Bounds(lo=550))
    got = _rows(refs, pushdown=pushed)
    assert [r["offset"] for r in got] == list(range(550, 600))
    assert got == _rows(
        segments_of_sources([str(local / "broker-0" / "multi-segment-0")]), pushdown=pushed
    )
    log_reads = [(p, n) for s, p, n in reads if s == ".log"]
    last = refs[-1]
    assert min(p for p, n in log_reads if n > 64) > 0  # not from the first byte
    assert sum(n for p, n in log_reads) < last.size  # never the whole file


def test_a_corrupt_batch_on_s3_names_the_uri_and_its_byte(s3, monkeypatch, tmp_path):

    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.storage import remote
    from kafkalog_cli.storage.remote import segments_of_sources

    local, uri, env = s3
    seg = local / "broker-0" / "multi-segment-0" / "00000000000000000300.log"
    data = bytearray(seg.read_bytes())
    at = len(data) // 2
    from kafkalog_cli.formats.records import iter_batches

    at = next(b.position for b in iter_batches(bytes(data)) if b.position >= at)
    data[at + 8 : at + 12] = (3).to_bytes(4, "big")
    key = f"{BUCKET}/broken/b-0/multi-segment-0/00000000000000000300.log"
    s3fs, _ = remote.filesystem(f"s3a://{key}")
    with s3fs.open_output_stream(key) as out:
        out.write(bytes(data))
    monkeypatch.setattr(remote, "CHUNK", 4096)
    with pytest.raises(KafkalogError) as e:
        _rows(segments_of_sources([f"s3a://{BUCKET}/broken"]))
    assert str(e.value) == (
        f"s3a://{key}: byte {at}: Found record size 3 smaller than minimum record overhead (14)"
    )


def test_export_from_s3_on_both_engines_is_the_local_export_by_log_dir(s3, tmp_path):
    import pyarrow.dataset as ds

    local, uri, env = s3
    run_env = {**os.environ, **env}
    outs = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"out-{engine}"
        args = [
            str(KAFKALOG),
            "export",
            uri,
            str(out),
            "--to",
            "parquet",
            "--compression",
            "zstd",
            "--engine",
            engine,
        ] + (["--master", "local[1]"] if engine == "spark" else ["--jobs", "1"])
        p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=run_env)
        assert p.returncode == 0, p.stderr
        outs[engine] = {
            str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()
        }
    assert outs["local"] == outs["spark"]
    names = sorted(outs["local"])
    assert (
        f"topic=multi-segment/partition=0/log_dir=s3a%3A%2F%2F{BUCKET}%2Farchive%2Fbroker-1/"
        "part-00005-00000000000000000300.parquet" in names
    )
    table = ds.dataset(tmp_path / "out-local", partitioning="hive").to_table()
    rows = table.select(["topic", "log_dir", "broker_id", "offset"]).to_pylist()
    multi = [r for r in rows if r["topic"] == "multi-segment"]
    assert len(multi) == 1200 and {r["broker_id"] for r in multi} == {0, 1}
    assert {r["log_dir"] for r in multi} == {f"{uri}/broker-0", f"{uri}/broker-1"}
