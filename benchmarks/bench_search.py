"""dump-log's search (--key, --key-prefix, --key-regex, --grep) beside the unfiltered JSON fast path
and kafka-python's decoder, on the same segment, in one run.

Builds (benchmarks/gen_segment.py) one segment of ~16 KiB v2 batches of ~100-byte records over
10,000 keys (64 distinct 78-byte values), 64 MiB by default, and prints records/s of CPU time
(user + system of the command and its children: the machine is shared, wall-clock is noisy):

  kafka-python       DefaultRecordBatch over the first 16 MiB, touching key, value, offset and
                     headers (in this process, per CPU second)                       reference
  json fast path     dump-log --format json --print-data-log --jobs 1, unfiltered    reference
  each search        dump-log --format json --print-data-log --jobs 1 <search>, with how many
                     records it finds; target: at least the fast path's rate (a search renders
                     less), far more where the bytes rule batches out
  library            the selection alone (storage.selection.selected_batches), with the search
                     scanner and with every batch through RecordBatch.records() (the path every
                     search took before it): the scanner's own gain

    python benchmarks/bench_search.py [--mib 64] [--dir D]

(With PYTHONPATH set, `python -m kafkalog_cli` runs instead of the installed command.)
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage import selection
from kafkalog_cli.storage.segment import map_file
from kafkalog_cli.storage.selection import Filters, selected_batches

sys.path.insert(0, str(Path(__file__).parent))
from gen_segment import build
from measure import KAFKA_PYTHON_MISSING, kafka_python_rate, kafkalog_command, load

NKEYS = 10_000


def searches(value: bytes) -> list[tuple[str, list[str], Filters]]:
    """(name, options, the same as Filters): rare and common matches, a batch-level rule-out,
    an anchored regex (never rules a batch out), and a search every keyed record passes."""
    piece = value[20:28].decode()
    return [
        ("--key (one key)", ["--key", "key-004242"], Filters(key=b"key-004242")),
        (
            "--key-prefix (1% of keys)",
            ["--key-prefix", "key-0042"],
            Filters(key_prefix=b"key-0042"),
        ),
        (
            "--key-regex",
            ["--key-regex", "key-00[0-4]24[0-9]"],
            Filters(key_regex=re.compile(rb"key-00[0-4]24[0-9]")),
        ),
        (
            "--grep (1/64 of values)",
            ["--grep", piece],
            Filters(value_regex=re.compile(piece.encode())),
        ),
        (
            "--grep (absent)",
            ["--grep", "zzzzzzzzq"],
            Filters(value_regex=re.compile(rb"zzzzzzzzq")),
        ),
        (
            "--grep '^...' (anchored)",
            ["--grep", "^" + piece],
            Filters(value_regex=re.compile(b"^" + piece.encode())),
        ),
        ("--key-prefix key- (all)", ["--key-prefix", "key-"], Filters(key_prefix=b"key-")),
    ]


def cpu_run(argv: list[str], repeat: int = 3) -> float:
    """The least CPU time (user + system, with its children) of `repeat` runs, stdout to /dev/null."""
    best = None
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = cpu if best is None else min(best, cpu)
    return best


def found(argv: list[str]) -> int:
    out = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
    return out.count(b'"kind": "record"')


def library_cpu(seg: Path, f: Filters, general: bool, repeat: int = 3) -> tuple[float, int]:
    """CPU seconds of the selection over the segment (fast scanner, or every batch decoded) and
    the records it found."""
    buf = map_file(seg)
    saved = selection.found_records
    best, n = None, 0
    try:
        if general:
            selection.found_records = lambda b, s: None
        for _ in range(repeat):
            t = time.process_time()
            n = 0
            for _b, recs in selected_batches(
                buf, 0, len(buf), Filters(**{k: v for k, v in vars(f).items()}), True
            ):
                n += sum(1 for r in recs if f.record_matches(r))
            el = time.process_time() - t
            best = el if best is None else min(best, el)
    finally:
        selection.found_records = saved
    return best, n


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mib", type=int, default=64, help="segment size")
    ap.add_argument(
        "--dir", default=None, help="keep the files here (default: a temp dir, removed)"
    )
    a = ap.parse_args()
    root = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="kafkalog-bench-search-"))
    try:
        root.mkdir(parents=True, exist_ok=True)
        seg = root / f"{0:020d}.log"
        if not seg.exists() or seg.stat().st_size < (a.mib << 20):
            build(seg, a.mib << 20, NKEYS)
        buf = map_file(seg)
        nrec = sum(b.records_count for b in iter_batches(buf))
        value = next(iter_batches(buf)).records()[0].value
        print(
            f"segment: {seg.stat().st_size / 2**20:.0f} MiB, {nrec} records over {NKEYS} keys   {load()}"
        )

        # kafka_python_rate times itself by the clock: its records/s of CPU time, as ours are
        wall, cpu = time.perf_counter(), time.process_time()
        kp = kafka_python_rate([seg], 16 << 20)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        kp = kp and kp * wall / cpu
        print(
            f"{'kafka-python DefaultRecordBatch':34s} {kp / 1e3:7.0f}k records/s   reference"
            if kp
            else KAFKA_PYTHON_MISSING
        )
        kafkalog = kafkalog_command()
        base = [
            *kafkalog,
            "dump-log",
            "--files",
            str(seg),
            "--format",
            "json",
            "--print-data-log",
            "--jobs",
            "1",
        ]
        fast = nrec / cpu_run(base)
        vs_kp = f"   {fast / kp:4.1f}x kafka-python" if kp else ""
        print(
            f"{'json fast path (unfiltered)':34s} {fast / 1e3:7.0f}k records/s   reference{vs_kp}"
        )
        for name, opts, f in searches(value):
            rate = nrec / cpu_run([*base, *opts])
            n = found([*base, *opts])
            vs_kp = f"   {rate / kp:5.1f}x kafka-python" if kp else ""
            print(
                f"{'search ' + name:34s} {rate / 1e3:7.0f}k records/s   {rate / fast:5.2f}x the fast path"
                f"{vs_kp}   {n} found"
            )
        print(f"library: the selection alone, CPU s   {load()}")
        for name, _opts, f in searches(value):
            t_fast, n_fast = library_cpu(seg, f, general=False)
            t_gen, n_gen = library_cpu(seg, f, general=True)
            assert n_fast == n_gen, (name, n_fast, n_gen)
            print(
                f"  {name:32s} scanner {t_fast:6.3f} s   records() {t_gen:6.3f} s   {t_gen / t_fast:5.1f}x"
            )
    finally:
        if not a.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
