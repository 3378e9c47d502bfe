"""Seeded random damage to a copy of a cleanly shut down log dir: what a crash, a bad disk or an
interrupted tool leaves. Every choice comes from one random.Random, so a seed names a case."""

from __future__ import annotations

import os
import random
import shutil
import struct
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


def _flip_payload(rng: random.Random, f: Path) -> str | None:
    """One byte flipped in the payload of one of `f`'s batches (past the 61-byte v2 header: what
    the CRC covers), or None when it has no batch with a payload."""
    spans = [(pos, size) for pos, size in batch_spans(f) if size > 61]
    if not spans:
        return None
    pos, size = rng.choice(spans)
    at = rng.randrange(pos + 61, pos + size)
    data = bytearray(f.read_bytes())
    old = data[at]
    data[at] ^= rng.randrange(1, 256)
    f.write_bytes(bytes(data))
    return f"byte {at} (payload of the batch at {pos}) {old:#04x} -> {data[at]:#04x}"


def index_less_cut(rng, part):
    """A segment before the active one without its .index, and a payload byte of one of its
    batches flipped: LogLoader.loadSegmentFiles recovers it as it loads it and truncates it there,
    keeping the later segments (a gap), clean shutdown or not."""
    bases = segments(part)[:-1]
    if not bases:
        return None
    base = rng.choice(bases)
    flipped = _flip_payload(rng, seg(part, base, ".log"))
    if flipped is None:
        return None
    seg(part, base, ".index").unlink(missing_ok=True)
    return f"{base:020d}.index removed, .log {flipped}"


def txnindex_below_base(rng, part):
    """An aborted-transaction entry whose lastOffset is below its segment's base offset appended
    to the segment's .txnindex (TransactionIndex.sanityCheck: CorruptIndexException, so the broker
    recovers the segment as it loads it); half the time a payload byte of the segment flipped too."""
    bases = [b for b in segments(part) if b > 0]
    if not bases:
        return None
    base = rng.choice(bases)
    last = rng.randrange(base)
    entry = struct.pack(">hqqqq", 0, rng.randrange(1000, 2000), max(0, last - 3), last, last + 1)
    with open(seg(part, base, ".txnindex"), "ab") as fh:
        fh.write(entry)
    what = f"{base:020d}.txnindex: an entry with lastOffset {last} appended"
    if rng.random() < 0.5:
        flipped = _flip_payload(rng, seg(part, base, ".log"))
        if flipped is not None:
            what += f", .log {flipped}"
    return what


def log_start_beyond_end(rng, part):
    """The log-start-offset-checkpoint entry past the log end offset (segments deleted by hand, a
    log start raised to the end before a crash cut the tail): LogLoader.recoverLog deletes every
    segment and starts the log empty at the log start offset."""
    bases = segments(part)
    if not bases:
        return None
    end = bases[-1]
    try:
        for b in iter_batches(seg(part, bases[-1], ".log").read_bytes()):
            end = b.last_offset + 1
    except KafkalogError:
        pass
    value = end + rng.randrange(1, 100)
    t, p = part.name.rsplit("-", 1)
    set_checkpoint_entries(part.parent / "log-start-offset-checkpoint", {(t, int(p)): value})
    return f"log start offset -> {value} (log end {end})"


DAMAGES = {
    "torn-tail": torn_tail,
    "flip-header": lambda rng, part: flip(rng, part, "header"),
    "flip-payload": lambda rng, part: flip(rng, part, "payload"),
    "garbage": garbage,
    "index": index_damage,
    "preallocated": preallocated,
    "snapshot": snapshot_damage,
    "leftover": leftover,
    "index-less-cut": index_less_cut,
    "txnindex-below-base": txnindex_below_base,
    "log-start-beyond-end": log_start_beyond_end,
}


def damage_partition(rng: random.Random, part: Path, kinds: list[str] | None = None) -> list[str]:
    """One or two damages of `kinds` (every kind by default)."""
    done = []
    pool = sorted(kinds or DAMAGES)
    for kind in rng.sample(pool, min(len(pool), rng.choice([1, 1, 1, 2]))):
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
    set_checkpoint_entries(f, points)


def set_checkpoint_entries(f: Path, points: dict[tuple[str, int], int]) -> None:
    """Set these entries of an offset checkpoint file, keeping the file's order; an entry it
    lacks is added at its end (a missing file is created)."""
    lines = f.read_text().splitlines() if f.exists() else []
    entries = [ln.split() for ln in lines[2:] if ln.strip()]
    seen = set()
    out = []
    for t, p, o in entries:
        seen.add((t, int(p)))
        out.append(f"{t} {p} {points.get((t, int(p)), o)}")
    out += [f"{t} {p} {o}" for (t, p), o in points.items() if (t, p) not in seen]
    f.write_text("\n".join(["0", str(len(out)), *out]) + "\n")


def damage_log_dir(
    rng: random.Random, log_dir: Path, parts: list[Path], kinds: list[str] | None = None
) -> dict:
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
        what = damage_partition(rng, part, kinds)
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
