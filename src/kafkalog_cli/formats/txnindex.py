"""Aborted-transaction index (`.txnindex`): Kafka's TransactionIndex and AbortedTxn.

34-byte entries, big-endian, one per aborted transaction whose ABORT marker is in the segment:

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

The file is not preallocated. Messages are Kafka 3.3.1's, with the path as the caller gives it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from kafkalog_cli.errors import CorruptIndexError

ABORTED_TXN_SIZE = 34
CURRENT_VERSION = 0

# AbortedTxn.version() is `buffer.get(0)`: a signed BYTE, though the field is written as an int16.
_ENTRY = struct.Struct(">bxqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def __str__(self) -> str:  # AbortedTxn.toString, used in Kafka's sanity-check message
        return (
            f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
            f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
            f"lastStableOffset={self.last_stable_offset})"
        )


def aborted_txn_count(length: int) -> int:
    """Whole entries in a file of `length` bytes; a trailing partial entry is never read."""
    return length // ABORTED_TXN_SIZE


def parse_txn_index(
    buf: bytes | bytearray | memoryview, *, path: str | None = None
) -> list[AbortedTxn]:
    """All entries, as TransactionIndex.allAbortedTxns.

    Kafka's iterator reads while `fileSize - position >= 34`, so a trailing partial entry is ignored.
    The version is the FIRST BYTE only (the second byte of the int16 is never looked at) and is signed:
    a version above 0 raises, a "negative" one (first byte >= 0x80) is accepted as Kafka accepts it.
    Kafka throws a plain KafkaException here, not CorruptIndexException, so a broker does not rebuild
    the index on it: the log fails to load.
    """
    return list(_read_entries(buf, path))


def _read_entries(buf: bytes | bytearray | memoryview, path: str | None) -> Iterator[AbortedTxn]:
    """TransactionIndex.iterator: the whole entries in order, each checked for its version as it
    is read."""
    mv = memoryview(buf)
    n = len(mv) // ABORTED_TXN_SIZE
    for i, fields in enumerate(_ENTRY.iter_unpack(mv[: n * ABORTED_TXN_SIZE])):
        if fields[0] > CURRENT_VERSION:
            where = path if path is not None else "<transaction index>"
            raise CorruptIndexError(
                f"Unexpected aborted transaction version {fields[0]} in transaction index {where}, "
                f"current version is {CURRENT_VERSION}",
                path=path,
                position=i * ABORTED_TXN_SIZE,
            )
        yield AbortedTxn(*fields)


def encode_aborted_txn(txn: AbortedTxn) -> bytes:
    """One 34-byte entry. The version goes in the first byte and the second byte is 0, which is
    what Kafka writes (`putShort(0)`) and all Kafka ever reads back."""
    return _ENTRY.pack(
        txn.version, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
    )


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """A whole `.txnindex`. Enforces TransactionIndex.append's rule: lastOffset strictly increases."""
    parts: list[bytes] = []
    last: int | None = None
    for txn in entries:
        if last is not None and last >= txn.last_offset:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset {last} of index"
            )
        last = txn.last_offset
        parts.append(encode_aborted_txn(txn))
    return b"".join(parts)


def sanity_check(
    entries: Sequence[AbortedTxn], base_offset: int, *, path: str | None = None
) -> None:
    """TransactionIndex.sanityCheck over parsed entries: every entry's lastOffset >= the
    segment's base offset (raises CorruptIndexError)."""
    for i, txn in enumerate(entries):
        if txn.last_offset < base_offset:
            raise _below_base(txn, base_offset, i, path)


def load_sanity_check(
    buf: bytes | bytearray | memoryview, base_offset: int, *, path: str | None = None
) -> CorruptIndexError | None:
    """TransactionIndex.sanityCheck as a broker runs it while it loads the log: LogSegment.sanityCheck
    calls it for every segment that has an offset index, recovered or not, clean shutdown or not
    (3.3.1 LogSegment.scala and TransactionIndex.scala; 3.9 LogSegment.java and TransactionIndex.java,
    the same). The entries are read in order, each checked as it is read: a version above 0 raises
    (KafkaException: LogLoader.loadSegmentFiles does not catch it, the log fails to load); an entry
    whose lastOffset is below the segment's base offset is returned as the CorruptIndexException on
    which loadSegmentFiles recovers the segment (recoverSegment). The size is not checked: a
    trailing partial entry is never read."""
    for i, txn in enumerate(_read_entries(buf, path)):
        if txn.last_offset < base_offset:
            return _below_base(txn, base_offset, i, path)
    return None


def _below_base(txn: AbortedTxn, base_offset: int, i: int, path: str | None) -> CorruptIndexError:
    where = path if path is not None else "<transaction index>"
    return CorruptIndexError(
        f"Last offset of aborted transaction {txn} in index {where} is less than start "
        f"offset {base_offset}",
        path=path,
        position=i * ABORTED_TXN_SIZE,
    )
