"""Benchmark: the `kafkalog` data source on local[1] against local[2], 16 partitions.

Reads every record of a 16-partition log dir (one segment each, so 16 Spark tasks) and
aggregates offsets and value lengths. Each master runs in its own process (a JVM holds one
SparkContext); session start and the Python workers' first start are left out of the timing by a
warm-up query. With two free cores the second one should give at least 1.7x.

    python benchmarks/bench_spark_scaling.py [--size 256MiB] [--partitions 16] [--masters local[1],local[2]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_export import build_logdir, parse_size

EXPECTED = 1.7


def one(master: str, log_dir: str, partitions: int, repeat: int) -> dict:
    from pyspark.sql import functions as F

    from kafkalog_cli.spark.session import get_session

    spark = get_session(master, app_name="bench-scaling")
    warm = (
        spark.read.format("kafkalog")
        .option("minPartitions", str(partitions))
        .load(log_dir)
        .filter("offset < 10")
        .count()
    )  # starts the Python workers
    assert warm == 10 * partitions
    times = []
    for _ in range(repeat):  # a new DataFrame each time: Spark reuses a collected one's result
        t = time.perf_counter()
        df = spark.read.format("kafkalog").option("minPartitions", str(partitions)).load(log_dir)
        row = df.agg(
            F.count("*").alias("records"),
            F.sum("offset").alias("offsets"),
            F.sum(F.length("value")).alias("value_bytes"),
        ).collect()[0]
        times.append(time.perf_counter() - t)
    tasks = df.rdd.getNumPartitions()
    spark.stop()
    return {"master": master, "seconds": min(times), "records": row["records"], "tasks": tasks}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="256MiB", help="total bytes of segments (default 256MiB)")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--repeat", type=int, default=2, help="runs per master; the best counts")
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--child", nargs=2, metavar=("MASTER", "LOGDIR"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(one(a.child[0], a.child[1], a.partitions, a.repeat)))
        return 0
    size = parse_size(a.size)
    root = Path(tempfile.mkdtemp(prefix="kafkalog-bench-scaling-", dir=a.tmp))
    try:
        log_dir, records = build_logdir(root, size, a.partitions, size // a.partitions + (1 << 20))
        print(
            f"input: {size / (1 << 20):.0f} MiB, {a.partitions} partitions x 1 segment, {records:,} records; "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
        )
        from kafkalog_cli.spark.arrow import scan_segment
        from kafkalog_cli.spark.engine import run_partitions
        from kafkalog_cli.storage.logdir import segments_of

        refs = segments_of([str(log_dir)])
        pool = {}
        for jobs in (1, 2):  # the same decoding in 1 and 2 plain processes: what this machine gives
            t = time.perf_counter()
            assert sum(run_partitions(scan_segment, refs, jobs=jobs)) == records
            pool[jobs] = time.perf_counter() - t
        print(
            f"baseline, process pool: 1 process {pool[1]:.2f} s, 2 processes {pool[2]:.2f} s "
            f"({pool[1] / pool[2]:.2f}x from a second process on this machine now)"
        )
        results = []
        for master in a.masters.split(","):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    master,
                    str(log_dir),
                    "--partitions",
                    str(a.partitions),
                    "--repeat",
                    str(a.repeat),
                ],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                print(
                    out.stderr.strip().splitlines()[-1]
                    if out.stderr.strip()
                    else f"{master} failed"
                )
                return 1
            r = json.loads(out.stdout.strip().splitlines()[-1])
            assert r["records"] == records, r
            results.append(r)
            print(
                f"{r['master']:<10} {r['tasks']:>3} tasks {r['seconds']:>8.2f} s "
                f"{records / r['seconds']:>12,.0f} records/s"
            )
        if len(results) >= 2:
            speedup = results[0]["seconds"] / results[1]["seconds"]
            verdict = "ok" if speedup >= EXPECTED else f"below the expected {EXPECTED}x"
            print(
                f"speed-up {results[1]['master']} over {results[0]['master']}: {speedup:.2f}x ({verdict})"
            )
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
