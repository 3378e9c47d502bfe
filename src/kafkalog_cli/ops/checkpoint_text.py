"""The text checkpoints recover and roll rewrite (spec §11: CheckpointFile): version 0, a count,
then entries. Reading is lenient (a damaged checkpoint means "no entry", as a fresh broker
would start from 0); writing is exact."""
from __future__ import annotations

from pathlib import Path


def _entries(path: Path, fields: int) -> list[list[str]] | None:
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if not lines or lines == [""]:
        return []
    try:
        if int(lines[0]) != 0:
            return None
        count = int(lines[1])
    except (ValueError, IndexError):
        return None
    out = [ln.split() for ln in lines[2:2 + count]]
    if len(out) != count or any(len(e) != fields for e in out):
        return None
    return out


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    """recovery-point-offset-checkpoint and friends: {(topic, partition): offset}, in file order."""
    return {(t, int(p)): int(o) for t, p, o in (_entries(path, 3) or [])}


def encode_offsets(offsets: dict[tuple[str, int], int], order: list | None = None) -> bytes:
    keys = [k for k in (order or []) if k in offsets] + [k for k in offsets if k not in (order or [])]
    body = "".join(f"{t} {p} {offsets[(t, p)]}\n" for t, p in keys)
    return f"0\n{len(keys)}\n{body}".encode()


def read_epochs(path: Path) -> list[tuple[int, int]]:
    return [(int(e), int(o)) for e, o in (_entries(path, 2) or [])]


def encode_epochs(epochs: list[tuple[int, int]]) -> bytes:
    body = "".join(f"{e} {o}\n" for e, o in epochs)
    return f"0\n{len(epochs)}\n{body}".encode()
