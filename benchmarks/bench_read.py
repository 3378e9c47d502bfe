"""Read-side figures beside references measured in the same run (the machine is shared and noisy:
compare ratios, not absolute times).

Builds v2 segments of 100-byte records (100-byte values, 8-byte keys), 100 records per batch,
256 MiB each by default, and prints:

  raw crc32c   the `crc32c` package over the mmap'd bytes of the whole partition, one call per
               file, one core: the reference for verify-crc and dump-log
  verify-crc   `kafkalog verify-crc <partition>` (installed command, start-up included) and the
               library (`verify_groups`, every core) on the 1 GiB partition; target >= 50% of raw
  dump-log     batch lines of one segment, installed command, output to /dev/null; target >= 8%
  --deep-iteration / --print-data-log, Kafka text and --format json   records/s to /dev/null,
               beside kafka-python's decoder (DefaultRecordBatch over the same bytes, one core)
               run just before each, the median of --repeat pairs, wall-clock and per CPU-second;
               targets >= 3.8x and >= 2.7x kafka-python's rate, wall-clock (the figure is skipped,
               with a note, when kafka-python is not installed)
  verify-crc --deep   records/s over the same segment; target >= 3.8x kafka-python's rate
  peak memory  the largest process's peak resident set (a worker's, or the command's) of each
               command, and of JSON Lines and verify-crc --deep over the 1 GiB partition; target
               < 300 MiB
The byte-rate figures are the best of three runs, with the load averages beside them.

    python benchmarks/bench_read.py [--segment-mib 256] [--segments 4] [--deep-mib 256] [--dir D]
                                    [--skip-deep] [--skip-memory] [--repeat 5]

(With PYTHONPATH set, `python -m kafkalog_cli` runs instead of the installed command.)
"""
from __future__ import annotations

import argparse
import mmap
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

sys.path.insert(0, str(Path(__file__).parent))
from measure import KAFKA_PYTHON_MISSING, best_run, kafkalog_command, versus_kafka_python  # noqa: E402

RECORDS_PER_BATCH = 100
VALUE = bytes(range(100))


def template_batch() -> bytes:
    recs = [SimpleRecord(key=b"key-%04d" % i, value=VALUE, timestamp=1_700_000_000_000 + i)
            for i in range(RECORDS_PER_BATCH)]
    return build_v2_batch(recs, 0)


def build_segment(path: Path, size: int, base_offset: int) -> int:
    """Copies of one batch with increasing base offsets (the CRC does not cover the base offset,
    so every copy stays valid). Returns the next offset."""
    batch = bytearray(template_batch())
    n = max(1, size // len(batch))
    out = bytearray(len(batch) * n)
    off = base_offset
    blen = len(batch)
    for i in range(n):
        struct.pack_into(">q", batch, 0, off)
        out[i * blen : (i + 1) * blen] = batch
        off += RECORDS_PER_BATCH
    path.write_bytes(out)
    return off


def build_partition(d: Path, segment_bytes: int, segments: int) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    off = 0
    files = []
    for _ in range(segments):
        p = d / f"{off:020d}.log"
        if not p.exists() or p.stat().st_size < segment_bytes - 20000:
            nxt = build_segment(p, segment_bytes, off)
        else:
            nxt = off + (p.stat().st_size // len(template_batch())) * RECORDS_PER_BATCH
        files.append(p)
        off = nxt
    return files


def raw_crc32c(files: list[Path]) -> tuple[float, int]:
    total = 0
    t = time.perf_counter()
    for f in files:
        with open(f, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            crc32c(mm)
            total += len(mm)
            mm.close()
    return time.perf_counter() - t, total


def best(fn, repeat: int = 3):
    return min((fn() for _ in range(repeat)), key=lambda r: r[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segment-mib", type=int, default=256)
    ap.add_argument("--segments", type=int, default=4, help="segments in the verify-crc partition")
    ap.add_argument("--deep-mib", type=int, default=256, help="segment size for the record-level runs")
    ap.add_argument("--dir", default=None, help="keep the files here (default: a temp dir, removed)")
    ap.add_argument("--skip-deep", action="store_true")
    ap.add_argument("--repeat", type=int, default=5, help="pairs of record-level runs (the median counts)")
    ap.add_argument("--skip-memory", action="store_true", help="no runs over the whole partition for memory")
    a = ap.parse_args()

    root = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="kafkalog-bench-"))
    kafkalog = kafkalog_command()
    try:
        part = root / "bench-0"
        t = time.perf_counter()
        files = build_partition(part, a.segment_mib << 20, a.segments)
        total = sum(f.stat().st_size for f in files)
        print(f"built {len(files)} x {a.segment_mib} MiB v2 segments ({total / 2**30:.2f} GiB, "
              f"{RECORDS_PER_BATCH} x 100-byte records per batch) in {time.perf_counter() - t:.1f} s; "
              f"{os.cpu_count()} cores")
        raw_crc32c(files)  # warm the page cache
        t_raw, n = best(lambda: raw_crc32c(files))
        raw = n / t_raw
        print(f"raw crc32c (1 core, mmap)      {raw / 1e9:6.2f} GB/s   {t_raw:.3f} s   reference")

        from kafkalog_cli.ops.verify import verify_groups

        group = [(str(part), [str(f) for f in files])]
        jobs = os.cpu_count() or 1

        def lib():
            t = time.perf_counter()
            r = verify_groups(group, jobs=jobs)
            assert not r[0].problems, r[0].problems[:3]
            return time.perf_counter() - t, r[0].bytes
        t_lib, _ = best(lib)
        print(f"verify_groups (library, {jobs} jobs)  {total / t_lib / 1e9:6.2f} GB/s   {t_lib:.3f} s   "
              f"{100 * (total / t_lib) / raw:5.1f}% of raw (target >= 50%)")
        t_cli, mem, ld = best_run([*kafkalog, "verify-crc", str(part)])
        print(f"kafkalog verify-crc (command)  {total / t_cli / 1e9:6.2f} GB/s   {t_cli:.3f} s   "
              f"{100 * (total / t_cli) / raw:5.1f}% of raw (target >= 50%), start-up included   "
              f"peak {mem:.0f} MiB   {ld}")

        seg = files[0]
        seg_bytes = seg.stat().st_size
        t_dump, mem, ld = best_run([*kafkalog, "dump-log", "--files", str(seg)])
        print(f"kafkalog dump-log (batches)    {seg_bytes / t_dump / 1e9:6.2f} GB/s   {t_dump:.3f} s   "
              f"{100 * (seg_bytes / t_dump) / raw:5.1f}% of raw (target >= 8%), start-up included   "
              f"peak {mem:.0f} MiB   {ld}")
        if a.skip_deep:
            return
        deep_dir = root / "deep-0"
        deep = build_partition(deep_dir, a.deep_mib << 20, 1)[0]
        nrec = (deep.stat().st_size // len(template_batch())) * RECORDS_PER_BATCH
        print(f"record-level runs over {nrec:,} records; each beside a kafka-python run just before it "
              f"(DefaultRecordBatch, one core), medians of {a.repeat}; cpu: records per CPU-second of all "
              f"the command's processes over kafka-python's (what one free core gives)")
        runs = [("dump-log --deep-iteration", ["dump-log", "--files", str(deep), "--deep-iteration"], 3.8),
                ("dump-log --print-data-log", ["dump-log", "--files", str(deep), "--print-data-log"], 2.7),
                ("json --deep-iteration", ["dump-log", "--files", str(deep), "--format", "json",
                                           "--deep-iteration"], 3.8),
                ("json --print-data-log", ["dump-log", "--files", str(deep), "--format", "json",
                                           "--print-data-log"], 2.7),
                ("verify-crc --deep", ["verify-crc", "--deep", str(deep)], 3.8)]
        for name, args, target in runs:
            v = versus_kafka_python([*kafkalog, *args], nrec, [deep], min(deep.stat().st_size, 16 << 20), a.repeat)
            if v is None:
                print(KAFKA_PYTHON_MISSING)
                break
            print(f"kafkalog {name:26s} {nrec / v.seconds / 1e3:6.0f}k records/s   {v.seconds:.2f} s   "
                  f"{v.wall:4.2f}x kafka-python (target >= {target}x), cpu {v.cpu:4.2f}x   peak {v.peak_mib:.0f} MiB   "
                  f"{v.loads}")
        if a.skip_memory:
            return
        for name, args in (("json --print-data-log", ["dump-log", str(part), "--format", "json", "--print-data-log"]),
                           ("verify-crc --deep", ["verify-crc", "--deep", str(part)])):
            el, mem, ld = best_run([*kafkalog, *args], repeat=1)
            print(f"kafkalog {name:26s} over {total / 2**30:.2f} GiB: {el:.1f} s, peak {mem:.0f} MiB "
                  f"(target < 300 MiB)   {ld}")
    finally:
        if not a.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
