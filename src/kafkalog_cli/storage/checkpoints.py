"""The root and partition checkpoint files, read from disk. Read leniently by
default (a damaged checkpoint means "no entry", as a fresh broker would start from 0), strictly
where the log dir cannot be judged without it. Parsing and writing are formats.checkpoints';
this only adds the leniency and keeps the file's own entry order."""

from __future__ import annotations

from pathlib import Path

from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.formats.checkpoints import (
    EpochEntry,
    encode_leader_epoch_checkpoint,
    encode_offset_checkpoint,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint_entries,
)
from kafkalog_cli.storage.files import read_bytes_if_exists


def _read(path: Path) -> bytes | None:
    """The file's bytes, None when there is none; unreadable is an InputError (exit 4)."""
    return read_bytes_if_exists(path)


def read_offsets_strict(path: Path) -> tuple[dict[tuple[str, int], int], list[tuple[str, int]]]:
    """({(topic, partition): offset}, the file's entry order); a missing file has no entry, a
    damaged one raises CheckpointError (retain and compact cannot judge a log dir without it)."""
    raw = _read(path)
    if raw is None:
        return {}, []
    entries = parse_offset_checkpoint_entries(raw, path=str(path))
    return {(t, p): o for t, p, o in entries}, [(t, p) for t, p, _ in entries]


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    """recovery-point-offset-checkpoint and friends: {(topic, partition): offset}, in file order."""
    try:
        return read_offsets_strict(path)[0]
    except CheckpointError:
        return {}


def encode_offsets(
    offsets: dict[tuple[str, int], int],
    order: list | None = None,
    kind: str = "recovery-point-offset-checkpoint",
) -> bytes:
    """`kind`: the file's name, which decides the broker's entry order."""
    return encode_offset_checkpoint(offsets, order=order, kind=kind)


def read_epochs(path: Path) -> list[tuple[int, int]]:
    raw = _read(path)
    if raw is None:
        return []
    try:
        return [
            (e.epoch, e.start_offset) for e in parse_leader_epoch_checkpoint(raw, path=str(path))
        ]
    except CheckpointError:
        return []


def encode_epochs(epochs: list[tuple[int, int]]) -> bytes:
    return encode_leader_epoch_checkpoint(EpochEntry(e, o) for e, o in epochs)
