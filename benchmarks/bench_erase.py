"""Benchmark: `kafkalog erase` of one key on a partition of --size MiB in --segments segments of
v2 batches (~16 KiB, uncompressed, ~100-byte records over 100,000 keys), the key's records in
one segment, then in every segment; beside, in the same run on the same bytes, `verify-crc` of
the partition (a read of every byte with its CRC) and a copy of the segments erase must rewrite
(read, write, fsync). The issue's bound: erase costs no more than reading the partition once
plus rewriting the segments holding matches, so the ratio printed is

    erase / (verify-crc + copy of the segments with matches)

and, since at this size both commands' start-up (imports: a few tenths of a CPU second, measured
on an empty partition) is most of their cost, also per byte: erase's CPU seconds less its
start-up over a plain read of the partition in this process plus the copy, and its scan alone
(`--dry-run`, start-up aside) over the plain read.

Each figure is the median of --repeat runs, erase and its references taken in turn so that they
meet the same load (the machine is shared: compare ratios within one run, never absolute times
across runs). Every erase runs on a fresh copy of the partition (the copy is not timed).

    PYTHONPATH=src python benchmarks/bench_erase.py [--size MiB] [--segments N] [--repeat N]"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_segment import _record
from measure import kafkalog_command, load, run

from kafkalog_cli.formats.crc import crc32c

ONE, ALL = b"victim-one", b"victim-all"  # in the middle segment only; in every segment
PER_SEGMENT = 3  # records of the key in each segment that holds it


def _batch(offset: int, recs: list[bytes], ts0: int) -> bytes:
    body = b"".join(recs)
    n = len(recs)
    after_crc = struct.pack(
        ">hiqqqhii", 0, n - 1, ts0 + offset, ts0 + offset + n - 1, -1, -1, -1, n
    )
    crc = crc32c(after_crc + body)
    return struct.pack(">qiibI", offset, 49 + len(body), 0, 2, crc) + after_crc + body


def build(root: Path, size: int, segments: int, nkeys: int = 100_000, seed: int = 7) -> int:
    """The log dir: partition bench-0 of `segments` closed segments of size/segments bytes and an
    empty active one, the high watermark at the log end. Returns the record count."""
    import random

    rnd = random.Random(seed)
    part = root / "bench-0"
    part.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nnode.id=1\n")
    values = [
        bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(78)) for _ in range(64)
    ]
    keys = [b"key-%06d" % i for i in range(nkeys)]
    offset, ts0, per = 0, 1_700_000_000_000, size // segments
    for s in range(segments):
        victims = [ALL] + ([ONE] if s == segments // 2 else [])
        base, written, n_batches = offset, 0, per // 16384
        at = {rnd.randrange(max(1, n_batches)) for _ in range(PER_SEGMENT)}
        while len(at) < min(PER_SEGMENT, n_batches):
            at.add(rnd.randrange(n_batches))
        with open(part / f"{base:020d}.log", "wb") as f:
            b = 0
            while written < per:
                recs, blen = [], 0
                while blen < 16384 - 200:
                    r = _record(
                        len(recs), len(recs), keys[rnd.randrange(nkeys)], values[len(recs) & 63]
                    )
                    recs.append(r)
                    blen += len(r)
                if b in at:
                    for v in victims:
                        k = rnd.randrange(len(recs))
                        recs[k] = _record(k, k, v, values[k & 63])
                raw = _batch(offset, recs, ts0)
                f.write(raw)
                written += len(raw)
                offset += len(recs)
                b += 1
        for suffix in (".index", ".timeindex"):
            (part / f"{base:020d}{suffix}").write_bytes(b"")
    for suffix in (".log", ".index", ".timeindex"):
        (part / f"{offset:020d}{suffix}").write_bytes(b"")
    snap = struct.pack(">i", 0)
    (part / f"{offset:020d}.snapshot").write_bytes(struct.pack(">hI", 1, crc32c(snap)) + snap)
    (root / "replication-offset-checkpoint").write_text(f"0\n1\nbench 0 {offset}\n")
    return offset


def copy_segments(src: list[Path], dst: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to read each segment and write it anew with fsync: the rewrite's
    floor."""
    dst.mkdir(parents=True, exist_ok=True)
    t, c = time.perf_counter(), time.process_time()
    for s in src:
        with open(s, "rb") as f, open(dst / s.name, "wb") as g:
            while chunk := f.read(8 << 20):
                g.write(chunk)
            g.flush()
            os.fsync(g.fileno())
    el, cpu = time.perf_counter() - t, time.process_time() - c
    shutil.rmtree(dst)
    return el, cpu


def read_once(logs: list[Path]) -> tuple[float, float]:
    """(wall, CPU) seconds to read every segment once, 8 MiB at a time: the scan's floor."""
    t, c = time.perf_counter(), time.process_time()
    for s in logs:
        with open(s, "rb") as f:
            while f.read(8 << 20):
                pass
    return time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=200, help="MiB [default: %(default)s]")
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/kafkalog-bench-erase")
    a = ap.parse_args()
    work = Path(a.workdir)
    src = work / f"source-{a.size}-{a.segments}"
    if not src.exists():
        print(f"building {a.size} MiB in {a.segments} segments in {src} ...", flush=True)
        build(src, a.size << 20, a.segments)
    logs = sorted((src / "bench-0").glob("*.log"))
    size = sum(s.stat().st_size for s in logs)
    mb = size / 1e6
    middle = [s for s in logs if s.stat().st_size][a.segments // 2]
    kl = kafkalog_command()
    run_dir = work / "run"

    def fresh() -> Path:
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.copytree(src, run_dir)
        # on disk before it is timed, as a partition erased was written long before: else the
        # copy's writeback and dirty pages are charged to the command that unlinks or syncs
        os.sync()
        return run_dir

    empty = work / "empty"  # the commands' start-up: the same log dir shape, no segment
    shutil.rmtree(empty, ignore_errors=True)
    (empty / "bench-0").mkdir(parents=True)
    (empty / "meta.properties").write_text("version=1\nnode.id=1\n")
    rows: dict[str, list[tuple[float, float]]] = {}
    loads = []
    for _ in range(a.repeat):
        d = fresh()
        rows.setdefault("plain read (in process)", []).append(read_once(logs))
        rows.setdefault("verify-crc", []).append(run([*kl, "verify-crc", str(d)])[::2])
        rows.setdefault("start-up: verify-crc", []).append(
            run([*kl, "verify-crc", str(empty)])[::2]
        )
        sel = ["--topic", "bench", "--key", ONE.decode(), "--dry-run"]
        rows.setdefault("start-up: erase", []).append(run([*kl, "erase", str(empty), *sel])[::2])
        for key, matched in ((ONE, [middle]), (ALL, [s for s in logs if s.stat().st_size])):
            name = key.decode()
            cp = copy_segments(matched, work / "copy")
            rows.setdefault(f"copy {name}", []).append(cp)
            sel = ["--topic", "bench", "--key", name]
            dry = run([*kl, "erase", str(d), *sel, "--dry-run"])
            rows.setdefault(f"dry-run {name}", []).append(dry[::2])
            el, _, cpu = run([*kl, "erase", str(d), *sel])
            rows.setdefault(f"erase {name}", []).append((el, cpu))
            d = fresh()
        loads.append(load())
    med = {
        k: (statistics.median(x for x, _ in v), statistics.median(c for _, c in v))
        for k, v in rows.items()
    }
    print(
        f"partition: {size} bytes in {a.segments} segments ({mb / a.segments:.0f} MB each), "
        f"key records: {PER_SEGMENT} in 1 segment ({ONE.decode()}), {PER_SEGMENT} in each ({ALL.decode()})"
    )
    print(f"{'':34s} {'wall s':>8s} {'MB/s':>8s} {'CPU s':>8s}")
    for k, (el, cpu) in med.items():
        print(f"{k:34s} {el:8.2f} {mb / el:8.1f} {cpu:8.2f}")
    v, r = med["verify-crc"], med["plain read (in process)"]
    su_e = med["start-up: erase"]
    for key in (ONE, ALL):
        name = key.decode()
        e, cp, dry = med[f"erase {name}"], med[f"copy {name}"], med[f"dry-run {name}"]
        print(
            f"erase {name}: {e[0] / (v[0] + cp[0]):.2f}x (wall) {e[1] / (v[1] + cp[1]):.2f}x (CPU) "
            f"of verify-crc + copy of its segments; start-up aside, CPU: "
            f"{(e[1] - su_e[1]) / (r[1] + cp[1]):.2f}x of a plain read + the copy, "
            f"its scan (dry-run) {(dry[1] - su_e[1]) / r[1]:.2f}x of a plain read"
        )
    print("; ".join(loads))
    shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
