"""A log dir's files as tests compare them before and after a command: by bytes, by bytes and
mtime, or by content hash; never the .lock, which only says who holds the dir."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def tree(d: Path) -> dict[str, bytes]:
    return {
        str(f.relative_to(d)): f.read_bytes()
        for f in sorted(d.rglob("*"))
        if f.is_file() and f.name != ".lock"
    }


def bytes_and_mtimes(d: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for root, _, files in os.walk(d):
        for n in files:
            f = Path(root) / n
            if n != ".lock":
                out[str(f.relative_to(d))] = (f.read_bytes(), f.stat().st_mtime_ns)
    return out


def hashes(d: Path) -> dict[str, str]:
    """Every file of the topic partitions and the root checkpoints, by content hash."""
    out = {}
    for f in sorted(d.rglob("*")):
        rel = f.relative_to(d)
        if f.is_file() and not rel.parts[0].startswith("__cluster_metadata") and f.name != ".lock":
            out[str(rel)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def partition_hashes(d: Path, files: dict[str, str] | None = None) -> dict[str, str]:
    """Partition files (recover owns the root's) of `files` (by default hashes(d)), without a
    producer snapshot at or below the first segment's base: retain and delete-records keep the one
    at the new log start, as the broker's retention does, and recover deletes it, as the broker's
    next load does (ProducerStateManager.truncateAndReload)."""
    out = {}
    for k, v in (hashes(d) if files is None else files).items():
        if "/" not in k:
            continue
        part, name = k.split("/", 1)
        first = min(int(f.name[:20]) for f in (d / part).glob("*.log"))
        if name.endswith(".snapshot") and int(name[:20]) <= first:
            continue
        out[k] = v
    return out


def checkpoint(log_dir: Path, name: str) -> dict[str, int]:
    """{partition dir name: offset} from a root checkpoint's text."""
    path = log_dir / name
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()[2:]
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines if line.strip())}
