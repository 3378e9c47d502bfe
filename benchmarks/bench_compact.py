"""Benchmark: compact one 256 MiB segment of ~100-byte records over 100,000 keys (the case Kafka
3.3.1's cleaner did in 2.6 s, 99.9 MB/s, on this machine), beside references measured in the same
run on the same bytes: a plain read of the file, and read + CRC-32C of every byte (the least any
checker of the data must do).

    .venv/bin/python benchmarks/bench_compact.py [--size MiB] [--keys N] [--jobs N]

Prints seconds, MB/s and peak RSS (this process and its workers: ru_maxrss)."""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_segment import build_logdir

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.ops import compact
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine

KAFKA_SECONDS = 2.6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=256, help="MiB")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--workdir", default="/tmp/kafkalog-bench-compact")
    a = ap.parse_args()
    work = Path(a.workdir)
    cache = work / f"source-{a.size}-{a.keys}-hw"  # -hw: built with a replication-offset-checkpoint
    if not cache.exists():
        print(f"building a {a.size} MiB segment over {a.keys} keys in {cache} ...", flush=True)
        build_logdir(cache, a.size << 20, a.keys)
    run = work / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(cache, run)
    log = run / "bench-0" / f"{0:020d}.log"
    size = log.stat().st_size

    t = time.perf_counter()
    with open(log, "rb") as f:
        while f.read(8 << 20):
            pass
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    c = 0
    with open(log, "rb") as f:
        while chunk := f.read(8 << 20):
            c = crc32c(chunk, c)
    t_crc = time.perf_counter() - t

    opts = compact.CompactOptions(
        now_ms=1_800_000_000_000,
        force=True,
        jobs=a.jobs,
        resolver=ConfigResolver(
            overrides={
                # stated, so that compact cleans rather than refuses (never a guess)
                "cleanup.policy": "compact",
                "min.compaction.lag.ms": "0",
                "delete.retention.ms": "86400000",
            }
        ),
    )
    t = time.perf_counter()
    cp = compact.plan(run, [run / "bench-0"], opts)
    report = compact.apply(cp, FsOps(run, Quarantine(None, "compact")), opts)
    t_compact = time.perf_counter() - t
    r = report["cleaned"][0]["rounds"][0]
    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss_kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    mb = size / 1e6
    print(
        f"segment: {size} bytes, {r['messages_read']} messages -> {r['messages_written']}, {r['keys']} keys, "
        f"jobs {a.jobs}"
    )
    print(f"{'plain read (reference)':34s} {t_read:7.2f} s {mb / t_read:9.1f} MB/s")
    print(f"{'read + crc32c (reference)':34s} {t_crc:7.2f} s {mb / t_crc:9.1f} MB/s")
    print(f"{'kafkalog compact':34s} {t_compact:7.2f} s {mb / t_compact:9.1f} MB/s")
    print(
        f"{'Kafka 3.3.1 cleaner (its log)':34s} {KAFKA_SECONDS:7.2f} s {mb / KAFKA_SECONDS:9.1f} MB/s"
    )
    print(f"peak RSS: this process {rss_self:.0f} MiB, largest worker {rss_kids:.0f} MiB")
    shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
