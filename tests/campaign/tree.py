"""A tree's state as the oracle compares it: every name (never following a link), its type,
mode, size, mtime and content hash, and what each symlink points at."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    """One name in a tree: enough to tell any change a command could make."""

    kind: str  # file, dir, link, fifo, socket, other
    mode: int
    size: int
    mtime_ns: int
    digest: str  # sha256 of a regular file, the target of a link, "" otherwise


def _kind(st: os.stat_result) -> str:
    m = st.st_mode
    for test, name in (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "dir"),
        (stat.S_ISLNK, "link"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(m):
            return name
    return "other"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    # O_NONBLOCK: a regular file never blocks; the flag only guards against a race to a FIFO
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def entry(path: Path) -> Entry:
    st = os.lstat(path)
    kind = _kind(st)
    digest = _sha256(path) if kind == "file" else os.readlink(path) if kind == "link" else ""
    size = st.st_size if kind in ("file", "link") else 0
    return Entry(kind, stat.S_IMODE(st.st_mode), size, st.st_mtime_ns, digest)


def snapshot(root: Path, skip: frozenset[str] = frozenset()) -> dict[str, Entry]:
    """Every name under `root` (root itself as "."), by path relative to root; names in `skip`
    (relative paths of subtrees) are left out whole. Names are kept as bytes-safe strings
    (surrogateescape), so non-UTF-8 names compare too."""
    root = Path(root)
    out: dict[str, Entry] = {}
    if not os.path.lexists(root):
        return out
    out["."] = entry(root)
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(dirnames + filenames):
            rel = name if rel_dir == "." else os.path.join(rel_dir, name)
            if rel in skip:
                continue
            out[rel] = entry(Path(dirpath) / name)
        dirnames[:] = [
            d for d in dirnames if (d if rel_dir == "." else os.path.join(rel_dir, d)) not in skip
        ]
    return out


def diff(before: dict[str, Entry], after: dict[str, Entry], limit: int = 4) -> list[str]:
    """What changed, one short phrase per name (at most `limit`, then a count)."""
    out = []
    for rel in sorted(before.keys() | after.keys()):
        a, b = before.get(rel), after.get(rel)
        if a == b:
            continue
        if a is None:
            out.append(f"+{rel}")
        elif b is None:
            out.append(f"-{rel}")
        else:
            fields = [
                f
                for f in ("kind", "mode", "size", "mtime_ns", "digest")
                if getattr(a, f) != getattr(b, f)
            ]
            out.append(f"~{rel}({','.join(fields)})")
    if len(out) > limit:
        out = out[:limit] + [f"... {len(out) - limit} more"]
    return out
