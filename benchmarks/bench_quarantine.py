"""Benchmark: 1,021 deletes into a quarantine (retain removing 1,021 segments of a 1,500-segment
partition), through FsOps.delete as retain does it.

Each delete keeps the file (a hard link into the quarantine), appends one fsynced line to the
quarantine's manifest.jsonl, and unlinks the file: O(1) per entry. Before the manifest became an
append-only journal, every entry rewrote and fsynced the whole manifest.json: O(n) per entry,
O(n^2) per run (84.6 s for this case). `--compare-old` also times that behaviour, emulated by
rewriting a manifest.json of all entries so far after each one.

    python benchmarks/bench_quarantine.py [--segments 1500] [--deletes 1021] [--compare-old] [--dir DIR]

Target: linear in the number of deletes, well under 5 s for 1,021 on the 2-core reference
machine. The log dir is built in DIR (default: the system's temporary directory, a real disk,
since the cost is fsyncs).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.storage.fsops import FsOps, Quarantine, QuarantineEntry

TARGET_S = 5.0
SEGMENT_BYTES = 4096


class _RewritingFsOps(FsOps):
    """The old manifest: all entries rewritten atomically after every new one."""

    def _note(self, entry: QuarantineEntry) -> None:
        super()._note(entry)
        q = self.quarantine
        FsOps(q.folder).write_atomic(q.folder / "manifest.json",
                          (json.dumps({"entries": [e.to_json() for e in q.entries]}, indent=2) + "\n").encode())


def build(log_dir: Path, segments: int) -> list[Path]:
    part = log_dir / "bench-0"
    part.mkdir(parents=True)
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nbench 0 0\n")
    files = []
    for i in range(segments):
        f = part / f"{i * 100:020d}.log"
        f.write_bytes(bytes([i % 251]) * SEGMENT_BYTES)
        files.append(f)
    return files


def run(work: Path, segments: int, deletes: int, fsops_class) -> float:
    log_dir = work / "logs"
    files = build(log_dir, segments)
    fsops = fsops_class(log_dir, Quarantine(work / "q", "retain"))
    fsops.prepare_quarantine()
    os.sync()      # retain meets a settled log dir: do not bill the build's write-back to the deletes
    t0 = time.perf_counter()
    for f in files[:deletes]:
        fsops.delete(f, "bench: retention")
    took = time.perf_counter() - t0
    kept = fsops.quarantine.folder
    assert len(list((kept / "bench-0").iterdir())) == deletes
    return took


def fsync_ms(work: Path, n: int = 100) -> float:
    """What one directory fsync costs on this disk now (a delete makes three: the kept link's
    directory, the manifest line, the log dir's directory)."""
    work.mkdir(parents=True)
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    try:
        t0 = time.perf_counter()
        for i in range(n):
            (work / f"f{i}").write_bytes(b"")
            os.fsync(fd)
        return (time.perf_counter() - t0) / n * 1000
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segments", type=int, default=1500)
    ap.add_argument("--deletes", type=int, default=1021)
    ap.add_argument("--compare-old", action="store_true", help="also time the old rewrite-everything manifest")
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-quarantine-", dir=args.dir))
    try:
        print(f"one directory fsync on this disk: {fsync_ms(tmp / 'fsync'):.2f} ms")
        took = run(tmp / "journal", args.segments, args.deletes, FsOps)
        half = run(tmp / "half", args.segments, args.deletes // 2, FsOps)
        print(f"{args.deletes} deletes into a quarantine (manifest.jsonl): {took:.2f} s "
              f"({took / args.deletes * 1000:.2f} ms each; {args.deletes // 2} took {half:.2f} s); "
              f"target < {TARGET_S:.0f} s: {'OK' if took < TARGET_S else 'MISSED'}")
        if args.compare_old:
            old = run(tmp / "old", args.segments, args.deletes, _RewritingFsOps)
            print(f"{args.deletes} deletes, whole manifest rewritten per entry (the old way): {old:.2f} s")
        return 0 if took < TARGET_S else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
