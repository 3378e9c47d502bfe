"""Damage done to a copy of examples/logdir the way it happens in the field, shared by the tests
of doctor and of the exit codes."""

from __future__ import annotations

from pathlib import Path


def unclean(d: Path, topic: str, recovery_point: int, from_offset: int = 0) -> None:
    """As after a kill -9: no clean-shutdown marker, the partition's recovery point set back, so
    the broker's load (and recover) reads its segments again."""
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    rp = d / "recovery-point-offset-checkpoint"
    rp.write_text(rp.read_text().replace(f"{topic} 0 {recovery_point}", f"{topic} 0 {from_offset}"))


def torn_tail(d: Path) -> Path:
    """A kill -9 mid-append: txn-0's active segment ends 20 bytes into its last batch."""
    unclean(d, "txn", 15)
    log = d / "txn-0" / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()[:-20])
    return d


def base_offset_overflow(d: Path) -> Path:
    """A flipped bit in a base offset (not covered by the CRC) puts a batch of multi-segment's
    segment 300 2^40 past its base: the broker does not start on it."""
    unclean(d, "multi-segment", 600)
    log = d / "multi-segment-0" / "00000000000000000300.log"
    data = bytearray(log.read_bytes())
    data[2] ^= 0xD9
    log.write_bytes(bytes(data))
    return d
