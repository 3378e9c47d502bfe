"""Seeded random damage to a copy of a cleanly shut down log dir: what a crash, a bad disk or an
interrupted tool leaves. Every choice comes from one random.Random, so a seed names a case."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage import names

PREALLOCATED = 10 * 1024 * 1024  # segment.index.bytes: what a running broker maps


def segments(part: Path) -> list[int]:
    return sorted(
        o
        for f in part.iterdir()
        if f.name.endswith(".log") and (o := names.offset_from_name(f.name)) is not None
    )


def seg(part: Path, base: int, suffix: str) -> Path:
    return names.segment_file(part, base, suffix)


def batch_spans(log: Path) -> list[tuple[int, int]]:
    out = []
    try:
        for b in iter_batches(log.read_bytes()):
            out.append((b.position, b.size))
    except KafkalogError:
        pass
    return out


def _pick_segment(rng: random.Random, part: Path, active_bias: float = 0.6) -> int | None:
    bases = segments(part)
    if not bases:
        return None
    return bases[-1] if rng.random() < active_bias else rng.choice(bases)


def torn_tail(rng, part):
    base = _pick_segment(rng, part)
    if base is None:
        return None
    f = seg(part, base, ".log")
    size = f.stat().st_size
    if size == 0:
        return None
    at = rng.randrange(size)
    os.truncate(f, at)
    return f"{f.name} cut from {size} to {at} bytes"


def flip(rng, part, where: str):
    base = _pick_segment(rng, part, 0.4)
    if base is None:
        return None
    f = seg(part, base, ".log")
    spans = batch_spans(f)
    if not spans:
        return None
    pos, size = rng.choice(spans)
    lo, hi = (pos, min(pos + 61, pos + size)) if where == "header" else (pos + 61, pos + size)
    if hi <= lo:
        return None
    at = rng.randrange(lo, hi)
    data = bytearray(f.read_bytes())
    old = data[at]
    data[at] ^= rng.randrange(1, 256)
    f.write_bytes(bytes(data))
    return f"{f.name}: byte {at} ({where} of the batch at {pos}) {old:#04x} -> {data[at]:#04x}"


def garbage(rng, part):
    bases = segments(part)
    if not bases:
        return None
    f = seg(part, bases[-1], ".log")
    n = rng.randrange(1, 300)
    kind = rng.choice(["random", "zeros", "batch-like"])
    if kind == "random":
        extra = bytes(rng.randrange(256) for _ in range(n))
    elif kind == "zeros":
        extra = bytes(n)
    else:  # a plausible header: offset, a size far beyond the file, magic 2
        extra = (
            (rng.randrange(1 << 20)).to_bytes(8, "big")
            + (n + 1000).to_bytes(4, "big")
            + bytes(4)
            + b"\x02"
            + bytes(rng.randrange(256) for _ in range(n))
        )
    with open(f, "ab") as fh:
        fh.write(extra)
    return f"{f.name}: {len(extra)} {kind} bytes appended"


def index_damage(rng, part):
    base = _pick_segment(rng, part, 0.3)
    if base is None:
        return None
    suffix = rng.choice([".index", ".timeindex", ".txnindex"])
    f = seg(part, base, suffix)
    if not f.exists():
        suffix, f = ".index", seg(part, base, ".index")
        if not f.exists():
            return None
    if rng.random() < 0.5:
        f.unlink()
        return f"{f.name} removed"
    f.write_bytes(bytes(f.stat().st_size or rng.choice([8, 12, 40, 120])))
    return f"{f.name} zero-filled ({f.stat().st_size} bytes)"


def preallocated(rng, part):
    """The active segment's indexes as a running broker leaves them: 10 MiB, zeros after the entries."""
    bases = segments(part)
    if not bases:
        return None
    for suffix in (".index", ".timeindex"):
        f = seg(part, bases[-1], suffix)
        if f.exists():
            os.truncate(f, PREALLOCATED - PREALLOCATED % (8 if suffix == ".index" else 12))
    return f"{bases[-1]:020d} indexes preallocated"


def snapshot_damage(rng, part):
    snaps = sorted(part.glob("*.snapshot"))
    if not snaps:
        return None
    f = rng.choice(snaps)
    if rng.random() < 0.5:
        f.unlink()
        return f"{f.name} removed"
    f.write_bytes(bytes(f.stat().st_size))
    return f"{f.name} zero-filled"


def leftover(rng, part):
    base = _pick_segment(rng, part, 0.5)
    if base is None:
        return None
    kind = rng.choice([names.CLEANED_SUFFIX, names.SWAP_SUFFIX, names.DELETED_SUFFIX])
    made = []
    for suffix in (".log", ".index", ".timeindex") if rng.random() < 0.6 else (".log",):
        f = seg(part, base, suffix)
        if f.exists():
            dst = f.with_name(f.name + kind)
            shutil.copyfile(f, dst)
            made.append(dst.name)
    return f"leftover copies {', '.join(made)}" if made else None


DAMAGES = {
    "torn-tail": torn_tail,
    "flip-header": lambda rng, part: flip(rng, part, "header"),
    "flip-payload": lambda rng, part: flip(rng, part, "payload"),
    "garbage": garbage,
    "index": index_damage,
    "preallocated": preallocated,
    "snapshot": snapshot_damage,
    "leftover": leftover,
}


def damage_partition(rng: random.Random, part: Path) -> list[str]:
    done = []
    for kind in rng.sample(sorted(DAMAGES), rng.choice([1, 1, 1, 2])):
        what = DAMAGES[kind](rng, part)
        if what is not None:
            done.append(f"{kind}: {what}")
    return done


def set_recovery_points(log_dir: Path, points: dict[tuple[str, int], int]) -> None:
    """Rewrite recovery-point-offset-checkpoint entries, keeping the file's order."""
    f = log_dir / "recovery-point-offset-checkpoint"
    lines = f.read_text().splitlines() if f.exists() else []
    if len(lines) < 2:  # none yet (a copy of a broker that had not written it)
        return
    out = lines[:2]
    for ln in lines[2:]:
        t, p, o = ln.split()
        out.append(f"{t} {p} {points.get((t, int(p)), o)}")
    f.write_text("\n".join(out) + "\n")


def damage_log_dir(rng: random.Random, log_dir: Path, parts: list[Path]) -> dict:
    """Damage each partition (some stay whole); with or without .kafka_cleanshutdown; without it,
    each damaged partition's recovery point is kept, 0, or a segment base. Returns what was done."""
    clean = rng.random() < 0.3
    marker = log_dir / ".kafka_cleanshutdown"
    if not clean and marker.exists():
        marker.unlink()
    done: dict = {"clean_shutdown": clean, "partitions": {}}
    points = {}
    # the partitions holding data, and two empty ones (an internal topic has 50 empty partitions)
    full = [q for q in parts if any(f.stat().st_size for f in q.glob("*.log"))]
    empty = [q for q in parts if q not in full]
    parts = full + rng.sample(empty, min(2, len(empty)))
    for part in parts:
        if rng.random() < 0.15:
            continue
        what = damage_partition(rng, part)
        if not what:
            continue
        if not clean:
            t, p = part.name.rsplit("-", 1)
            choice = rng.choice(["keep", "zero", "base"])
            if choice == "zero":
                points[(t, int(p))] = 0
            elif choice == "base" and segments(part):
                points[(t, int(p))] = rng.choice(segments(part))
            if (t, int(p)) in points:
                what.append(f"recovery point -> {points[(t, int(p))]}")
        done["partitions"][part.name] = what
    if points:
        set_recovery_points(log_dir, points)
    return done
