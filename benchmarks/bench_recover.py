"""kafkalog recover throughput beside raw crc32c over the same bytes, in one run.

Builds a partition (v2, 100-byte records, 100 per batch, no index files, a torn tail) of
--mib MiB (default 1024), recovers it with the installed library (apply included: fsyncs count)
and prints both figures. Target: recover >= 20% of raw crc32c."""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import struct
import tempfile
import time
from pathlib import Path

from crc32c import crc32c

from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops import recover
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine


def build(d: Path, mib: int) -> Path:
    part = d / "bench-0"
    part.mkdir(parents=True)
    (d / "recovery-point-offset-checkpoint").write_text("0\n1\nbench 0 0\n")
    recs = [
        SimpleRecord(
            key=None, value=os.urandom(50).hex().encode(), headers=(), timestamp=1700000000000 + i
        )
        for i in range(100)
    ]
    batch = build_v2_batch(recs, 0)
    n = (mib << 20) // len(batch)
    log = part / "00000000000000000000.log"
    with open(log, "wb") as f:
        buf = bytearray(batch)
        for i in range(n):
            struct.pack_into(">q", buf, 0, i * 100)
            f.write(buf)
        f.write(batch[: len(batch) // 2])  # torn tail
    return log


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kafkalog-bench-", dir=args.dir))
    try:
        log = build(tmp / "logs", args.mib)
        os.sync()  # the broker's files are on disk already: do not bill their write-back to recover
        size = log.stat().st_size
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            t = time.perf_counter()
            crc32c(memoryview(m))
            crc_s = time.perf_counter() - t
        t = time.perf_counter()
        ((ld, parts),) = partition_dirs_for([tmp / "logs"]).items()
        p = recover.plan(ld, parts, recover.RecoverOptions())
        apply(p, FsOps(ld, Quarantine(tmp / "q", "recover")))
        rec_s = time.perf_counter() - t
        gb = size / 1e9
        print(f"bytes: {size}")
        print(f"raw crc32c: {gb / crc_s:8.2f} GB/s ({crc_s * 1000:.0f} ms)")
        print(
            f"recover:    {gb / rec_s:8.2f} GB/s ({rec_s * 1000:.0f} ms), "
            f"{100 * crc_s / rec_s:.0f}% of raw crc32c (target >= 20%)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
