"""Benchmark: export 1 GiB of segments to Parquet with --engine local and --engine spark, side by side,
and the `kafkalog` data source's count(), beside kafka-python's decode rate over the same records.

The log dir: 16 partitions of v2 batches (~16 KiB, 128 records each: a 10-byte key, an 80-byte
value, one header), each partition cut into 32 MiB segments. Both engines run the same
`kafkalog_cli.spark.export.export` (one task per segment, pyarrow writes the Parquet files), so
the output is the same; the figure is how fast each scheduler gets it done. Spark's session start
is timed apart (a cluster pays it once), and so is the Python workers' first start for count().

Targets: export --engine local >= 2.5x kafka-python's records/s (DefaultRecordBatch, one core,
measured just before; skipped with a note when kafka-python is not installed; "cpu" is the same
per CPU-second of this process and its workers, what one free core gives), and >= 8x per
CPU-second with --jobs 1 (in this process: pyarrow's import and writing included); the data
source's count() >= 2x, and >= 8x per CPU-second of its Python workers; each Python worker's
peak resident set < 300 MiB (`--partitions 1 --segment-size 1GiB`
makes the 1 GiB partition). The load averages are printed beside each figure.

    python benchmarks/bench_export.py [--size 1GiB] [--partitions 16] [--segment-size 32MiB]
                                      [--master local[*]] [--count-master local[2]] [--jobs 0] [--tmp DIR]
                                      [--local-only]

Built under /dev/shm when there is one, so the figure is decoding and writing, not the disk.
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

from kafkalog_cli.formats.records import Header, SimpleRecord, build_v2_batch

sys.path.insert(0, str(Path(__file__).parent))
from measure import KAFKA_PYTHON_MISSING, PeakMemory, kafka_python_decode, load

RECORDS_PER_BATCH = 128
TS0 = 1_700_000_000_000


def parse_size(s: str) -> int:
    s = s.strip().lower().removesuffix("ib").removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "kmg" else s) * mult)


def template_batch() -> bytes:
    recs = [
        SimpleRecord(
            key=b"key-%06d" % i,
            value=(b"v%05d-" % i) * 13 + b"xx",
            timestamp=TS0 + i,
            headers=(Header("h", b"1"),),
        )
        for i in range(RECORDS_PER_BATCH)
    ]
    return bytes(build_v2_batch(recs, 0))


def build_logdir(
    root: Path, size: int, partitions: int, segment_size: int, topic: str = "bench"
) -> tuple[Path, int]:
    """A log dir of `partitions` partitions holding `size` bytes in all; returns (dir, records).
    One real batch is copied with its base offset patched (the CRC does not cover it)."""
    batch = bytearray(template_batch())
    per_partition = size // partitions
    log_dir = root / "logs"
    log_dir.mkdir(parents=True)
    (log_dir / "meta.properties").write_text("version=1\nbroker.id=0\n")
    records = 0
    for p in range(partitions):
        d = log_dir / f"{topic}-{p}"
        d.mkdir()
        offset, written = 0, 0
        while written < per_partition:
            chunk = bytearray()
            base = offset
            while len(chunk) + len(batch) <= segment_size and written + len(chunk) < per_partition:
                struct.pack_into(">q", batch, 0, offset)
                chunk += batch
                offset += RECORDS_PER_BATCH
            (d / f"{base:020d}.log").write_bytes(chunk)
            written += len(chunk)
        records += offset
    return log_dir, records


def run(
    log_dir: Path, out: Path, engine: str, master: str | None, jobs: int, spark=None
) -> tuple[float, dict]:
    from kafkalog_cli.spark.export import ExportOptions, export

    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    summary = export(
        [str(log_dir)],
        out,
        ExportOptions(to="parquet"),
        engine=engine,
        master=master,
        jobs=jobs,
        spark=spark,
    )
    return time.perf_counter() - t, summary


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the local engine's workers are the
    forkserver's: PeakMemory counts them)."""
    import resource

    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def count(spark, log_dir: Path, repeat: int = 2, warm_up: bool = True) -> float:
    """The best time of spark.read.format("kafkalog").load(...).count() (a new DataFrame each time:
    Spark reuses a collected one's result), after a warm-up that starts the Python workers."""
    if warm_up:
        spark.read.format("kafkalog").load(str(log_dir)).filter("offset < 10").count()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        spark.read.format("kafkalog").load(str(log_dir)).count()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1GiB", help="total bytes of segments (default 1GiB)")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--segment-size", default="32MiB")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--count-master", default="local[2]", help="master of the count() figure")
    ap.add_argument("--jobs", type=int, default=0, help="--engine local workers (0: one per core)")
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument(
        "--local-only", action="store_true", help="only the --engine local figure (no Spark)"
    )
    a = ap.parse_args(argv)
    size = parse_size(a.size)
    root = Path(tempfile.mkdtemp(prefix="kafkalog-bench-export-", dir=a.tmp))
    try:
        t = time.perf_counter()
        log_dir, records = build_logdir(root, size, a.partitions, parse_size(a.segment_size))
        logs = sorted(log_dir.rglob("*.log"))
        nbytes = sum(f.stat().st_size for f in logs)
        print(
            f"input: {nbytes / (1 << 20):.0f} MiB, {a.partitions} partitions, {len(logs)} segments, "
            f"{records:,} records (built in {time.perf_counter() - t:.1f} s); {os.cpu_count()} cores"
        )

        def reference() -> tuple[float, float] | None:
            """kafka-python's records/s, wall-clock and per CPU-second, measured now."""
            r = kafka_python_decode(logs, 16 << 20)
            if r is None:
                return None
            print(
                f"kafka-python DefaultRecordBatch: {r[0] / r[1]:,.0f} records/s (one core), "
                f"{r[0] / r[2]:,.0f} per CPU-second, reference   {load()}"
            )
            return r[0] / r[1], r[0] / r[2]

        def vs(rate: float, target: float, cpu: float | None = None) -> str:
            if not kp:
                return ""
            per_cpu = f", cpu {records / cpu / kp[1]:4.2f}x" if cpu else ""
            return f"{rate / kp[0]:5.2f}x kafka-python (target >= {target}x){per_cpu}"

        kp = reference()
        if not kp:
            print(KAFKA_PYTHON_MISSING)

        print(f"{'':<30}{'seconds':>9}{'records/s':>14}{'MiB/s':>9}")
        # per CPU-second: --jobs 1 (this process only: the measure, pyarrow's import and
        # writing included); wall-clock: the process pool
        import resource

        before = resource.getrusage(resource.RUSAGE_SELF)
        one_s, _ = run(log_dir, root / "out-one", "local", None, 1)
        after = resource.getrusage(resource.RUSAGE_SELF)
        one_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        per_cpu = (
            f"cpu {records / one_cpu / kp[1]:4.2f}x kafka-python (target >= 8x), " if kp else ""
        )
        # (this process's peak is the log dir's building: the pool's workers show the peak of one)
        print(
            f"{'export, local --jobs 1':<30}{one_s:>9.2f}{records / one_s:>14,.0f}"
            f"{nbytes / one_s / (1 << 20):>9.1f}   {per_cpu}{one_cpu:.2f} CPU s   {load()}"
        )
        with PeakMemory() as mem:
            cpu = _cpu()
            local_s, local_sum = run(log_dir, root / "out-local", "local", None, a.jobs)
            cpu = _cpu() - cpu + mem.cpu_s
        print(
            f"{'export, local (process pool)':<30}{local_s:>9.2f}{records / local_s:>14,.0f}"
            f"{nbytes / local_s / (1 << 20):>9.1f}   {vs(records / local_s, 2.5, cpu)}   "
            f"worker peak {mem.peak_mib:.0f} MiB   {load()}"
        )
        if a.local_only:
            return 0
        t = time.perf_counter()
        from kafkalog_cli.spark.session import get_session

        spark = get_session(a.master, app_name="bench-export")
        start_s = time.perf_counter() - t
        with PeakMemory() as mem:
            spark_s, spark_sum = run(
                log_dir, root / "out-spark", "spark", a.master, a.jobs, spark=spark
            )
        print(
            f"{'export, spark ' + a.master:<30}{spark_s:>9.2f}{records / spark_s:>14,.0f}"
            f"{nbytes / spark_s / (1 << 20):>9.1f}   (+ {start_s:.1f} s session start)   "
            f"Python worker peak {mem.peak_mib:.0f} MiB, JVM {mem.jvm_mib:.0f} MiB   {load()}"
        )
        assert local_sum["records"] == spark_sum["records"] == records, (local_sum, spark_sum)
        same = all(
            (root / "out-local" / f).read_bytes() == (root / "out-spark" / f).read_bytes()
            for f in local_sum["files"]
        )
        out_mb = sum(f.stat().st_size for f in (root / "out-local").rglob("*.parquet")) / (1 << 20)
        print(
            f"parquet: {out_mb:.0f} MiB in {len(local_sum['files'])} files; identical bytes from both engines: {same}"
        )
        if a.count_master != a.master:
            spark.stop()
            spark = get_session(a.count_master, app_name="bench-count")
        from kafkalog_cli.spark import register

        register(spark)
        kp = reference() if kp else None
        spark.read.format("kafkalog").load(str(log_dir)).filter(
            "offset < 10"
        ).count()  # starts the workers
        with PeakMemory(
            interval=0.05
        ) as mem:  # (their start is timed apart, as a cluster pays it once)
            count_s = count(spark, log_dir, repeat=1, warm_up=False)
        per_cpu = ""
        if kp and mem.cpu_s:
            per_cpu = (
                f"; per CPU-second: Python workers {records / mem.cpu_s / kp[1]:4.2f}x kafka-python "
                f"(target >= 8x, {mem.cpu_s:.2f} CPU s), with the JVM's "
                f"{records / (mem.cpu_s + mem.jvm_cpu_s) / kp[1]:4.2f}x ({mem.jvm_cpu_s:.2f} CPU s)"
            )
        print(
            f"{'count(), spark ' + a.count_master:<30}{count_s:>9.2f}{records / count_s:>14,.0f}"
            f"{nbytes / count_s / (1 << 20):>9.1f}   {vs(records / count_s, 2)}{per_cpu}   "
            f"Python worker peak {mem.peak_mib:.0f} MiB   {load()}"
        )
        spark.stop()
        return 0 if same else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
