"""Benchmark: `kafkalog retain` removing 1,021 segments of a 1,500-segment partition into the
quarantine, end to end (the installed command: planning, the lock, the deletes with their
manifest lines, the checkpoints), beside the same run with --no-quarantine in the same process,
and the same at 1/3 and 2/3 of the size (is it linear?); also `kafkalog quarantine restore` of
the quarantine run.

Each figure: wall-clock (noisy: the machine is shared), the command's CPU time (user + system,
from getrusage of the child: independent of the load) and, under `strace -f -c` in a separate
run, its count of fsync + fdatasync calls (the cost that does not show as CPU time).

History of the 1,500-segment case: 84.6 s when the whole manifest was rewritten and fsynced after
every entry; 6.0-6.5 s at load 5 (CPU 1.5 s, 2,049 fsync + 1,021 fdatasync) with one appended
line per entry (3 syncs a file); now one batch per run of deletes (FsOps.delete_segment_files:
a fixed number of syncs). Target: linear, under 5 s on the 2-core reference machine.

    python benchmarks/bench_retain_quarantine.py [--segments 1500] [--expired 1021] [--sizes 3]
                                                 [--no-strace] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

TARGET_S = 5.0
NOW = 1_800_000_000_000
DAY = 86_400_000
SYNCS = ("fsync", "fdatasync")


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
    os.sync()  # retain meets a settled log dir: do not bill the build's write-back to the run


def command(root: Path, extra: tuple[str, ...]) -> list[str]:
    exe = Path(sys.executable).with_name("kafkalog")
    return [
        str(exe) if exe.exists() else "kafkalog",
        "retain",
        "--now",
        str(NOW),
        "--config",
        "cleanup.policy=delete",
        "--config",
        f"retention.ms={7 * DAY}",
        "--config",
        "retention.bytes=-1",
        *extra,
        str(root / "logs"),
    ]


@dataclass
class Figure:
    wall: float
    cpu: float
    syncs: int | None = None


def run(root: Path, extra: tuple[str, ...], cmd: list[str] | None = None) -> Figure:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd or command(root, extra), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Figure(wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def count_syncs(root: Path, extra: tuple[str, ...]) -> int:
    """fsync + fdatasync calls of one run under `strace -f -c` (its own run: strace slows it)."""
    out = root / "strace.txt"
    subprocess.run(
        [
            "strace",
            "-f",
            "-c",
            "-o",
            str(out),
            "-e",
            "trace=" + ",".join(SYNCS),
            *command(root, extra),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    calls = 0
    for line in out.read_text().splitlines():
        f = line.split()
        if f and f[-1] in SYNCS and re.fullmatch(r"\d+", f[3]):
            calls += int(f[3])
    return calls


def measure(
    base: Path, segments: int, expired: int, extra: tuple[str, ...], strace: bool
) -> tuple[Figure, Figure | None]:
    """The run's figure, and with a quarantine that of `kafkalog quarantine restore` of it."""
    root = base / f"{segments}{'-'.join(extra)}"
    build(root, segments, expired)
    fig = run(root, extra)
    assert len(list((root / "logs" / "orders-0").glob("*.log"))) == segments - expired
    restored = None
    if not extra:
        (folder,) = (root / ".kafkalog-quarantine" / "logs").iterdir()
        restored = run(
            root, extra, command(root, extra)[:1] + ["quarantine", "restore", str(folder)]
        )
        assert len(list((root / "logs" / "orders-0").glob("*.log"))) == segments
    if strace:
        again = base / f"{segments}{'-'.join(extra)}-strace"
        build(again, segments, expired)
        fig.syncs = count_syncs(again, extra)
        shutil.rmtree(again)
    shutil.rmtree(root)
    return fig, restored


def show(fig: Figure) -> str:
    syncs = "" if fig.syncs is None else f", {fig.syncs} syncs"
    return f"{fig.wall:5.2f} s wall, {fig.cpu:4.2f} s CPU{syncs}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=1500)
    ap.add_argument("--expired", type=int, default=1021)
    ap.add_argument(
        "--sizes",
        type=int,
        default=3,
        help="also 1/N .. (N-1)/N of the size (linear?); 1: only the full size",
    )
    ap.add_argument("--no-strace", action="store_true", help="do not count syncs under strace")
    ap.add_argument("--dir", default=None, help="where to build (a real disk: the cost is fsyncs)")
    args = ap.parse_args()
    strace = not args.no_strace and shutil.which("strace") is not None
    base = Path(tempfile.mkdtemp(prefix="bench-retain-q-", dir=args.dir))
    try:
        full = None
        for k in range(1, args.sizes + 1):
            segments, expired = args.segments * k // args.sizes, args.expired * k // args.sizes
            ref, _ = measure(base, segments, expired, ("--no-quarantine",), strace)
            q, restored = measure(base, segments, expired, (), strace)
            print(
                f"retain, {expired:5d} of {segments:5d} segments: quarantine {show(q)} | "
                f"--no-quarantine {show(ref)} | quarantine restore {show(restored)} | load {os.getloadavg()[0]:.1f}"
            )
            full = q
        print(
            f"target < {TARGET_S:.0f} s for {args.expired} of {args.segments}: "
            f"{'OK' if full.wall < TARGET_S else 'MISSED'} ({full.wall:.2f} s)"
        )
        return 0 if full.wall < TARGET_S else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
