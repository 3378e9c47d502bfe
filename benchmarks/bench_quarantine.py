"""Benchmark: 1,021 deletes into a quarantine (retain removing 1,021 segments of a 1,500-segment
partition), in this process, two ways side by side:

- batched, as retain does it now (FsOps.delete_segment_files, LocalLog.deleteSegmentFiles):
  every file hard-linked into the quarantine, its directory fsynced once, all entries appended to
  manifest.jsonl in one write + one fdatasync, the files unlinked oldest first, the partition dir
  fsynced once: a fixed number of syncs per batch;
- one FsOps.delete per file (the reference: what retain did before): link, fsync, one appended
  line + fdatasync, unlink, fsync: 3 syncs per file, O(1) per entry but paid 1,021 times.

Each: wall-clock, CPU time (time.process_time: independent of the machine's load) and the count
of fsync + fdatasync calls. `--compare-old` also times the manifest before it was a journal
(the whole manifest.json rewritten and fsynced after each entry: O(n^2), 84.6 s for this case).

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

from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine import QuarantineEntry
from kafkalog_cli.storage.quarantine_writer import Quarantine, QuarantineWriter

TARGET_S = 5.0
SEGMENT_BYTES = 4096


class _RewritingWriter(QuarantineWriter):
    """The old manifest: all entries rewritten atomically after every new one."""

    def _note_all(self, entries: list[QuarantineEntry]) -> None:
        super()._note_all(entries)
        q = self.quarantine
        FsOps(q.folder).write_atomic(
            q.folder / "manifest.json",
            (json.dumps({"entries": [e.to_dict() for e in q.entries]}, indent=2) + "\n").encode(),
        )


class _RewritingFsOps(FsOps):
    """An FsOps whose quarantine is written the old way (_RewritingWriter)."""

    def __init__(self, base_dir: Path, quarantine: Quarantine, **kw):
        super().__init__(base_dir, quarantine, **kw)
        self.keeper = _RewritingWriter(self, quarantine)


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


class _CountingSyncs:
    """Counts os.fsync and os.fdatasync calls while active."""

    def __enter__(self):
        self.calls, self._real = 0, (os.fsync, os.fdatasync)

        def counted(real):
            def call(fd):
                self.calls += 1
                return real(fd)

            return call

        os.fsync, os.fdatasync = (counted(f) for f in self._real)
        return self

    def __exit__(self, *exc):
        os.fsync, os.fdatasync = self._real


def run(
    work: Path, segments: int, deletes: int, fsops_class, batched: bool
) -> tuple[float, float, int]:
    """(wall s, CPU s, syncs) of the deletes."""
    log_dir = work / "logs"
    files = build(log_dir, segments)
    fsops = fsops_class(log_dir, Quarantine(work / "q", "retain"))
    fsops.prepare_quarantine()
    os.sync()  # retain meets a settled log dir: do not bill the build's write-back to the deletes
    with _CountingSyncs() as syncs:
        t0, c0 = time.perf_counter(), time.process_time()
        if batched:
            fsops.delete_segment_files([(f, "bench: retention") for f in files[:deletes]])
        else:
            for f in files[:deletes]:
                fsops.delete(f, "bench: retention")
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
    kept = fsops.quarantine.folder
    assert len(list((kept / "bench-0").iterdir())) == deletes
    return took, cpu, syncs.calls


def show(figures: tuple[float, float, int]) -> str:
    wall, cpu, syncs = figures
    return f"{wall:5.2f} s wall, {cpu:4.2f} s CPU, {syncs} syncs"


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
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--segments", type=int, default=1500)
    ap.add_argument("--deletes", type=int, default=1021)
    ap.add_argument(
        "--compare-old", action="store_true", help="also time the old rewrite-everything manifest"
    )
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-quarantine-", dir=args.dir))
    try:
        print(
            f"one directory fsync on this disk: {fsync_ms(tmp / 'fsync'):.2f} ms; load {os.getloadavg()[0]:.1f}"
        )
        for n in (args.deletes // 2, args.deletes):
            batch = run(tmp / f"batch-{n}", args.segments, n, FsOps, batched=True)
            each = run(tmp / f"each-{n}", args.segments, n, FsOps, batched=False)
            print(
                f"{n:5d} deletes into a quarantine: batched {show(batch)} | one by one {show(each)}"
            )
        took = batch[0]
        print(
            f"target < {TARGET_S:.0f} s for {args.deletes}: {'OK' if took < TARGET_S else 'MISSED'} "
            f"({took:.2f} s); load {os.getloadavg()[0]:.1f}"
        )
        if args.compare_old:
            old = run(tmp / "old", args.segments, args.deletes, _RewritingFsOps, batched=False)
            print(
                f"{args.deletes} deletes, whole manifest rewritten per entry (the old way): {show(old)}"
            )
        return 0 if took < TARGET_S else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
