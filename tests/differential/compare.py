"""Byte-for-byte comparison of what the broker left with what kafkalog wrote, like with like.

What a broker run does beyond loading, and what is therefore left out or normalised:
- `__cluster_metadata-0`: the running controller appends to it (and raft recovers it on every
  start, clean or not);
- `leader-epoch-checkpoint`: becoming leader assigns (new epoch, log end offset); ours is
  compared once given that entry the same way;
- `replication-offset-checkpoint`: the high watermark the leader advances while it runs;
- `partition.metadata`, `meta.properties`, `.lock`, `quorum-state`, `bootstrap.checkpoint`:
  not written by kafkalog, nor about the log.
Everything else in a partition dir (segments, indexes, snapshots, leftovers) and the
recovery-point, log-start-offset and cleaner-offset checkpoints is compared byte for byte.
"""

from __future__ import annotations

from pathlib import Path

SKIPPED_FILES = {"partition.metadata", "quorum-state", "leader-epoch-checkpoint.tmp"}
ROOT_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
METADATA = "__cluster_metadata-0"
ORDER_ONLY = "same entries in another order: "


def _epochs(raw: bytes) -> list[tuple[int, int]] | None:
    try:
        lines = raw.decode().split("\n")
        n = int(lines[1])
        return [tuple(map(int, ln.split())) for ln in lines[2 : 2 + n]]
    except (UnicodeDecodeError, ValueError, IndexError):
        return None


def epochs_match(broker: bytes, ours: bytes) -> bool:
    """Equal, or equal once ours takes the broker's leader election entry, its last, as
    LeaderEpochFileCache.assign takes it (entries with an epoch or start offset not below the
    new one's removed first, maybeTruncateNonMonotonicEntries)."""
    if broker == ours:
        return True
    b, o = _epochs(broker), _epochs(ours)
    if not b or o is None:
        return False
    epoch, start = b[-1]
    while o and (o[-1][0] >= epoch or o[-1][1] >= start):
        o = o[:-1]
    return o + [b[-1]] == b


def files_of(part: Path) -> dict[str, bytes]:
    return {
        f.name: f.read_bytes()
        for f in sorted(part.iterdir())
        if f.is_file() and f.name not in SKIPPED_FILES
    }


def _describe(name: str, a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"{name}: broker {len(a)} bytes, kafkalog {len(b)} bytes, first difference at byte {at}"


def compare_partition(broker: Path, ours: Path) -> list[str]:
    a, b = files_of(broker), files_of(ours)
    diffs = [f"only the broker has {n}" for n in sorted(set(a) - set(b))]
    diffs += [f"only kafkalog has {n}" for n in sorted(set(b) - set(a))]
    for n in sorted(set(a) & set(b)):
        if n == "leader-epoch-checkpoint":
            if not epochs_match(a[n], b[n]):
                diffs.append(f"{n}: broker {a[n]!r}, kafkalog {b[n]!r}")
        elif a[n] != b[n]:
            diffs.append(_describe(n, a[n], b[n]))
    return diffs


def _without(raw: bytes | None, skip: set[str]) -> bytes | None:
    """A root checkpoint without the lines of the `skip` partitions (count line fixed)."""
    if raw is None or not skip:
        return raw
    lines = raw.decode(errors="replace").split("\n")
    keep = [ln for ln in lines[2:] if ln and "-".join(ln.split()[:2]) not in skip]
    return "\n".join(lines[:1] + [str(len(keep))] + keep + [""]).encode()


def _entries(raw: bytes | None) -> dict[str, str] | None:
    try:
        return {
            "-".join(ln.split()[:2]): ln.split()[2] for ln in raw.decode().split("\n")[2:] if ln
        }
    except (AttributeError, UnicodeDecodeError, IndexError):
        return None


def compare_roots(broker: Path, ours: Path, skip: set[str] = frozenset()) -> list[str]:
    """Differences of the root checkpoints: per partition ("<name>: <file>: ...") where both read,
    else the whole file."""
    diffs = []
    for n in ROOT_CHECKPOINTS:
        fa, fb = broker / n, ours / n
        a = _without(fa.read_bytes() if fa.exists() else None, skip)
        b = _without(fb.read_bytes() if fb.exists() else None, skip)
        if a == b:
            continue
        ea, eb = _entries(a), _entries(b)
        if ea is not None and ea == eb:
            # same entries, another order: the broker writes a new checkpoint in the iteration
            # order of a Scala immutable HashMap of TopicPartition (kafkalog keeps an existing
            # file's order, and has none to keep when the file was empty or missing)
            diffs.append(f"{ORDER_ONLY}{n}")
            continue
        if ea is None or eb is None:
            diffs.append(f"{n}: broker {a!r}, kafkalog {b!r}")
            continue
        for tp in sorted(set(ea) | set(eb)):
            if ea.get(tp) != eb.get(tp):
                diffs.append(f"{tp}: {n}: broker {ea.get(tp)}, kafkalog {eb.get(tp)}")
    return diffs


def compare_log_dirs(
    broker: Path, ours: Path, skip: set[str] = frozenset()
) -> dict[str, list[str]]:
    """Differences per partition dir name, and under "" those of the root checkpoints (their
    lines for the `skip` partitions left out)."""
    out: dict[str, list[str]] = {}
    names = (
        {p.name for d in (broker, ours) for p in d.iterdir() if p.is_dir()} - {METADATA} - set(skip)
    )
    for n in sorted(names):
        pa, pb = broker / n, ours / n
        if not pa.is_dir() or not pb.is_dir():
            out[n] = [f"partition dir only in {'kafkalog' if pb.is_dir() else 'the broker'}'s"]
            continue
        d = compare_partition(pa, pb)
        if d:
            out[n] = d
    roots = compare_roots(broker, ours, skip)
    if roots:
        out[""] = roots
    return out
