"""Damaged copies for `kafkalog repair`'s tests: bit rot of the kinds a disk gives, at a batch."""

from __future__ import annotations

import os
from pathlib import Path

from kafkalog_cli.formats.framing import batch_cuts


def batches(log: Path) -> list[int]:
    """The batch positions of a sound segment."""
    data = log.read_bytes()
    return batch_cuts(data, 0, len(data), 1, 0)


def damage(log: Path, how: str, at: int) -> None:
    """Damage the batch at byte `at`: flip a record byte, flip a size-field bit, flip a base-offset
    bit (no CRC covers it), zero it and the next batch, or write garbage over its header."""
    data = bytearray(log.read_bytes())
    cuts = batches(log) + [len(data)]
    nxt = cuts[min(cuts.index(at) + 2, len(cuts) - 1)]
    if how == "flip":
        data[at + 70] ^= 0x10
    elif how == "size":
        data[at + 9] ^= 0x40
    elif how == "base":
        data[at + 7] ^= 0x04
    elif how == "zero":
        data[at + 5 : nxt - 3] = bytes(nxt - 3 - at - 5)
    elif how == "garbage":
        data[at : at + 40] = bytes(range(7, 47))
    mtime = log.stat().st_mtime_ns
    log.write_bytes(bytes(data))
    os.utime(log, ns=(mtime, mtime))
