"""Benchmark: plan retention for a synthetic log dir of 10,000 partitions x 10 segments.

Target (issue 4): under 5 s on the 2-core reference machine. Planning reads only directory
listings, file sizes and index tails (the last segment also reads the bytes after its last index
entry), and stops each partition's walk at the first segment that must stay.

The log dir: 1,000 topics x 10 partitions. Each segment holds two real v2 batches (10 records)
with a real offset index entry and time index; the active segment's indexes are preallocated to
10 MiB as a running broker leaves them (sparse files), so their tails are found by bisection.
Retention.ms is 7 days; segment ages vary so that partitions have nothing, some, or (1 in 100)
every segment expired, and one topic in ten also has a retention.bytes.

    python benchmarks/bench_retain.py [--partitions N] [--segments N] [--keep DIR | --tmp DIR]

The log dir is built under /dev/shm when there is one (300,000 small files build in seconds
there; on a disk the build can take a minute), else in the system's temporary directory.
Planning itself reads the same few bytes either way, from the page cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.producer_state import encode_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops import retain
from kafkalog_cli.storage.logdir import partition_dirs_for

DAY = 86_400_000
NOW = 1_800_000_000_000
TARGET_S = 5.0
RECORDS_PER_BATCH = 5
SEGMENT_OFFSETS = 2 * RECORDS_PER_BATCH


def batch_template(ts: int) -> bytes:
    recs = [
        SimpleRecord(key=b"key-%d" % i, value=b"v" * 60, timestamp=ts)
        for i in range(RECORDS_PER_BATCH)
    ]
    return build_v2_batch(recs, 0, partition_leader_epoch=0)


def segment_bytes(base: int, ts: int, cache: dict) -> tuple[bytes, bytes, bytes]:
    """.log, .index, .timeindex of one segment; the v2 CRC does not cover the base offset, so one
    template per timestamp is patched."""
    a, b = cache.get(ts) or cache.setdefault(
        ts, (bytearray(batch_template(ts)), bytearray(batch_template(ts + 1)))
    )
    struct.pack_into(">q", a, 0, base)
    struct.pack_into(">q", b, 0, base + RECORDS_PER_BATCH)
    log = bytes(a) + bytes(b)
    index = struct.pack(">ii", RECORDS_PER_BATCH * 2 - 1, len(a))
    timeindex = struct.pack(">qi", ts + 1, SEGMENT_OFFSETS - 1)
    return log, index, timeindex


def write(path: str, data: bytes, length: int | None = None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if length is not None:
            os.ftruncate(fd, length)  # preallocated: sparse zeros, as Kafka's setLength
    finally:
        os.close(fd)


def age_days(partition: int, segment: int, segments: int) -> float:
    """How old a segment's newest record is: mixes partitions with nothing, some, or all expired."""
    if partition % 100 == 0:
        return 30 + segments - segment  # every segment expired: a roll first
    expired = partition % 4  # 0..3 oldest segments older than 7 days
    return 10 + expired - segment if segment < expired else (segments - segment) * 0.5


def build(root: Path, partitions: int, segments: int) -> None:
    cache: dict = {}
    hw_lines = []
    for p in range(partitions):
        topic, part = f"topic-{p // 10:04d}", p % 10
        d = root / f"{topic}-{part}"
        d.mkdir()
        for s in range(segments):
            base = s * SEGMENT_OFFSETS
            ts = NOW - int(age_days(p, s, segments) * DAY)
            log, index, timeindex = segment_bytes(base, ts, cache)
            prefix = f"{d}/{base:020d}"
            last = s == segments - 1
            write(prefix + ".log", log)
            write(prefix + ".index", index, 10485760 if last else None)
            write(prefix + ".timeindex", timeindex, 10485756 if last else None)
        leo = segments * SEGMENT_OFFSETS
        write(f"{d}/{leo:020d}.snapshot", encode_producer_snapshot([]))
        write(f"{d}/leader-epoch-checkpoint", b"0\n1\n0 0\n")
        hw_lines.append(f"{topic} {part} {leo}\n")
    text = f"0\n{len(hw_lines)}\n" + "".join(hw_lines)
    (root / "replication-offset-checkpoint").write_text(text)
    (root / "recovery-point-offset-checkpoint").write_text(text)
    (root / "log-start-offset-checkpoint").write_text("0\n0\n")
    (root / "meta.properties").write_text("version=1\nnode.id=1\n")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--segments", type=int, default=10)
    ap.add_argument("--keep", type=Path, help="build the log dir here and keep it")
    ap.add_argument(
        "--tmp",
        type=Path,
        default=Path("/dev/shm") if os.path.isdir("/dev/shm") else None,
        help="where to build the throw-away log dir [default: /dev/shm if present]",
    )
    args = ap.parse_args()
    tmp = None
    if args.keep:
        root = args.keep
        root.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="bench-retain-", dir=args.tmp)
        root = Path(tmp) / "logs"
        root.mkdir()
    try:
        t0 = time.perf_counter()
        build(root, args.partitions, args.segments)
        built = time.perf_counter() - t0
        os.sync()  # a cron run meets a settled log dir, not one with 300,000 files being written back
        resolver = ConfigResolver(
            overrides={"retention.ms": str(7 * DAY)},
            topic_overrides={
                f"topic-{t:04d}": {"retention.bytes": str(8 * 1024)}
                for t in range(0, args.partitions // 10, 10)
            },
        )
        t0 = time.perf_counter()
        ((log_dir, parts),) = partition_dirs_for([root]).items()
        plan = retain.plan(log_dir, parts, retain.RetainOptions(now_ms=NOW, resolver=resolver))
        planned = time.perf_counter() - t0
        deleted = sum(s.get("segments_deleted", 0) for s in plan.partitions.values())
        rolled = sum(1 for s in plan.partitions.values() if s.get("rolled"))
        errors = sum(1 for s in plan.partitions.values() if s.get("status") == "error")
        print(
            f"built {args.partitions} partitions x {args.segments} segments in {root} in {built:.1f} s"
        )
        print(
            f"retain plan: {planned:.2f} s for {args.partitions} partitions x {args.segments} segments "
            f"({deleted} segments to delete, {rolled} partitions rolled first, {len(plan.actions)} actions, "
            f"{errors} errors); target < {TARGET_S:.0f} s on 2 cores: {'OK' if planned < TARGET_S else 'MISSED'}"
        )
        return 0 if planned < TARGET_S and not errors else 1
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
