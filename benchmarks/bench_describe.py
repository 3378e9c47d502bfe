"""Benchmark: `describe` of a synthetic log dir of 10,000 partitions x 10 segments.

Target (issue 13): under 5 s on the 2-core reference machine. describe reads listings, stats,
index tails, the batches after each segment's last offset-index entry, the root checkpoints
and each partition's latest producer snapshot.

The log dir is bench_retain's (1,000 topics x 10 partitions, two real v2 batches per segment,
real index entries, the active segment's indexes preallocated to 10 MiB, a valid producer
snapshot at the log end offset, root checkpoints). The reference, in the same run: a bare walk of the same
tree, os.scandir of every dir and os.stat of every file (the floor of any tool that looks at
every file), then describe through the library (the rows computed, as JSON objects), then the
installed command printing its table to /dev/null, all with the load beside them.

    python benchmarks/bench_describe.py [--partitions N] [--segments N] [--dir DIR] [--no-cli]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_retain import build  # the same log dir as the retention benchmark
from measure import kafkalog_command, load, run

from kafkalog_cli.formats.producer_state import encode_producer_snapshot
from kafkalog_cli.ops import describe

TARGET_S = 5.0


def build_log_dir(root: Path, partitions: int, segments: int) -> None:
    """bench_retain's log dir, its producer snapshots made valid (empty: no producer), as a
    broker's clean shutdown leaves them; describe reads them."""
    build(root, partitions, segments)
    empty = encode_producer_snapshot([])
    for d in root.iterdir():
        for f in d.glob("*.snapshot") if d.is_dir() else ():
            f.write_bytes(empty)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the forked workers)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn):
    """(wall seconds, CPU seconds of this process and its workers, result): the machine is
    shared, so the CPU seconds are the figure to compare; wall time is what a user waits."""
    w, c = time.perf_counter(), _cpu()
    out = fn()
    return time.perf_counter() - w, _cpu() - c, out


def stat_walk(root: Path) -> int:
    """The floor: every dir scanned, every file stat'ed."""
    n = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    os.stat(e.path)
                    n += 1
    return n


def describe_all(root: Path, jobs: int = 1) -> list[dict]:
    selection = describe.select([root])
    return [d.to_dict() for d in describe.describe(selection, jobs=jobs)]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--segments", type=int, default=10)
    ap.add_argument(
        "--dir",
        type=Path,
        help="the log dir: built there when empty, and kept (a second run "
        "reuses it) [default: a throw-away one in /dev/shm if present]",
    )
    ap.add_argument("--no-cli", action="store_true", help="skip the run of the installed command")
    args = ap.parse_args()
    tmp = None
    if args.dir is None:
        tmp = tempfile.mkdtemp(
            prefix="bench-describe-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
        )
        args.dir = Path(tmp) / "logs"
    root = args.dir
    root.mkdir(parents=True, exist_ok=True)
    if not any(root.iterdir()):
        build_log_dir(root, args.partitions, args.segments)
    try:
        os.sync()
        size = f"{args.partitions} partitions x {args.segments} segments"
        wall, cpu, files = timed(lambda: stat_walk(root))
        print(
            f"reference: scandir + stat of {files} files: {wall:.2f} s wall, {cpu:.2f} s CPU ({load()})"
        )
        wall, cpu, rows = timed(lambda: describe_all(root))
        errors = sum(1 for r in rows if r.get("problems"))
        print(
            f"describe (library, one process): {wall:.2f} s wall, {cpu:.2f} s CPU for {size}, {len(rows)} "
            f"objects, {errors} with problems ({load()}); target < {TARGET_S:.0f} s of CPU (the wall time "
            f"of one idle core): {'OK' if cpu < TARGET_S else 'MISSED'}"
        )
        jobs = os.cpu_count() or 1
        pwall, pcpu, _ = timed(lambda: describe_all(root, jobs))
        print(
            f"describe (library, {jobs} processes, the command's default): {pwall:.2f} s wall, {pcpu:.2f} s CPU "
            f"in all ({load()})"
        )
        ok = cpu < TARGET_S and not errors
        if not args.no_cli:
            el, peak = run(kafkalog_command() + ["describe", str(root)])
            print(
                f"kafkalog describe (command, table to /dev/null): {el:.2f} s, peak {peak:.0f} MiB ({load()})"
            )
        return 0 if ok else 1
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
