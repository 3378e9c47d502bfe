"""Benchmark: `kafkalog retain` removing 1,021 segments of a 1,500-segment partition into the
quarantine, end to end (the installed command: planning, the lock, every delete with its
manifest line, the checkpoints), beside the same run with --no-quarantine in the same process.

Before the manifest became an append-only journal this case took 84.6 s (the whole manifest was
rewritten and fsynced after every entry). Target: linear, under 5 s on the 2-core reference
machine.

    python benchmarks/bench_retain_quarantine.py [--segments 1500] [--expired 1021] [--dir DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

TARGET_S = 5.0
NOW = 1_800_000_000_000
DAY = 86_400_000


def build(root: Path, segments: int, expired: int) -> None:
    d = root / "logs" / "orders-0"
    d.mkdir(parents=True)
    for i in range(segments):
        ts = NOW - (30 if i < expired else 0) * DAY - (segments - i)
        batch = build_v2_batch([SimpleRecord(key=b"k", value=b"v" * 100, timestamp=ts)], i)
        log = d / f"{i:020d}.log"
        log.write_bytes(batch)
        os.utime(log, ns=(ts * 1_000_000, ts * 1_000_000))
    (root / "logs" / "replication-offset-checkpoint").write_text(f"0\n1\norders 0 {segments}\n")
    (root / "logs" / "recovery-point-offset-checkpoint").write_text(f"0\n1\norders 0 {segments}\n")
    os.sync()


def run(root: Path, *extra: str) -> float:
    exe = Path(sys.executable).with_name("kafkalog")
    cmd = [str(exe) if exe.exists() else "kafkalog", "retain", "--now", str(NOW), "--config", "cleanup.policy=delete",
           "--config", f"retention.ms={7 * DAY}", "--config", "retention.bytes=-1", *extra, str(root / "logs")]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=1500)
    ap.add_argument("--expired", type=int, default=1021)
    ap.add_argument("--dir", default=None, help="where to build (a real disk: the cost is fsyncs)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-retain-q-", dir=args.dir))
    try:
        figures = {}
        for name, extra in (("--no-quarantine", ("--no-quarantine",)), ("quarantine", ())):
            root = base / name.strip("-")
            build(root, args.segments, args.expired)
            figures[name] = run(root, *extra)
            left = len(list((root / "logs" / "orders-0").glob("*.log")))
            assert left == args.segments - args.expired, left
        q = figures["quarantine"]
        print(f"retain, {args.expired} of {args.segments} segments: {q:.2f} s into the quarantine, "
              f"{figures['--no-quarantine']:.2f} s with --no-quarantine (same run); "
              f"target < {TARGET_S:.0f} s: {'OK' if q < TARGET_S else 'MISSED'}; load {os.getloadavg()[0]:.1f}")
        return 0 if q < TARGET_S else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
