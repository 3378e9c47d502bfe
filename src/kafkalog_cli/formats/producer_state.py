"""Producer state snapshots (`<offset>.snapshot`): ProducerStateManager.readSnapshot / writeSnapshot.

    version int16 (=1) | crc uint32 | entryCount int32 | entries

Each entry is 46 bytes: producerId int64 | epoch int16 | lastSequence int32 | lastOffset int64 |
offsetDelta int32 | timestamp int64 | coordinatorEpoch int32 | currentTxnFirstOffset int64 (-1 none).
The CRC is CRC-32C over bytes [6, EOF). The file name's offset is the producer-state map end offset.

Reading follows Kafka 3.3.1 (the version behind the corpus goldens), whose checks run in this order:
the whole structure is read first (errors: "Snapshot failed schema validation: ..."), then the
version, then the CRC. Bytes after the last entry are not an error, but they are under the CRC.
(Kafka 4.x checks the version first and wraps its message in "Snapshot failed schema validation: ".)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkalog_cli.errors import CorruptSnapshotError
from kafkalog_cli.formats.crc import crc32c

SNAPSHOT_VERSION = 1
ENTRIES_OFFSET = 6  # the CRC covers [6, EOF): the count and the entries
HEADER_SIZE = 10
ENTRY_SIZE = 46

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
# (name in Kafka's schema, offset in the entry, size): which field a truncated entry breaks in
_ENTRY_FIELDS = (
    ("producer_id", 0, 8),
    ("epoch", 8, 2),
    ("last_sequence", 10, 4),
    ("last_offset", 14, 8),
    ("offset_delta", 22, 4),
    ("timestamp", 26, 8),
    ("coordinator_epoch", 34, 4),
    ("current_txn_first_offset", 38, 8),
)
_UNDERFLOW = "java.nio.BufferUnderflowException"


def _int32(x: int) -> int:
    return ((x + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int  # -1: no batch metadata
    offset_delta: int
    timestamp: int  # lastTimestamp
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no ongoing transaction

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka keeps BatchMetadata only when lastOffset >= 0."""
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        """BatchMetadata.firstSeq = DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta):
        sequences wrap from Int.MAX to 0 (Java int arithmetic)."""
        seq, dec = self.last_sequence, self.offset_delta
        if seq < dec:
            return _int32(_int32(0x7FFFFFFF - _int32(dec - seq)) + 1)
        return _int32(seq - dec)

    @property
    def ongoing_txn_first_offset(self) -> int | None:
        return self.current_txn_first_offset if self.current_txn_first_offset >= 0 else None


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
    version: int
    crc: int  # stored CRC (unsigned)
    entries: list[ProducerSnapshotEntry] = field(default_factory=list)


def _schema_error(msg: str, path: str | None, position: int) -> CorruptSnapshotError:
    return CorruptSnapshotError(
        f"Snapshot failed schema validation: {msg}", path=path, position=position
    )


def parse_producer_snapshot(
    buf: bytes | bytearray | memoryview, *, path: str | None = None
) -> ProducerSnapshot:
    """Parse and verify a snapshot; raises CorruptSnapshotError with Kafka's message."""
    mv = memoryview(buf)
    size = len(mv)
    if size < 2:
        raise _schema_error(f"Error reading field 'version': {_UNDERFLOW}", path, 0)
    if size < 6:
        raise _schema_error(f"Error reading field 'crc': {_UNDERFLOW}", path, 2)
    if size < HEADER_SIZE:
        raise _schema_error(f"Error reading field 'producer_entries': {_UNDERFLOW}", path, 6)
    version, crc, count = _HEADER.unpack_from(mv, 0)
    remaining = size - HEADER_SIZE
    if count < 0:
        raise _schema_error(
            f"Error reading field 'producer_entries': Array size {count} cannot be negative",
            path,
            6,
        )
    # ArrayOf.read compares the element COUNT with the remaining BYTES
    if count > remaining:
        raise _schema_error(
            f"Error reading field 'producer_entries': Error reading array of size {count}, "
            f"only {remaining} bytes available",
            path,
            6,
        )
    whole = remaining // ENTRY_SIZE
    if count > whole:
        start = HEADER_SIZE + whole * ENTRY_SIZE
        left = size - start
        name, off = next((n, o) for n, o, s in _ENTRY_FIELDS if left < o + s)
        raise _schema_error(
            f"Error reading field 'producer_entries': Error reading field '{name}': {_UNDERFLOW}",
            path,
            start + off,
        )
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(
            f"Snapshot contained an unknown file version {version}", path=path, position=0
        )
    computed = crc32c(mv[ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}",
            path=path,
            position=2,
        )
    end = HEADER_SIZE + count * ENTRY_SIZE
    entries = [ProducerSnapshotEntry(*f) for f in _ENTRY.iter_unpack(mv[HEADER_SIZE:end])]
    return ProducerSnapshot(version, crc, entries)


def encode_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """A snapshot file, version 1, with its CRC. Entries are written in the order given (Kafka
    writes HashMap order, which is not reproducible in general)."""
    body = [e for e in entries]
    out = bytearray(HEADER_SIZE + ENTRY_SIZE * len(body))
    struct.pack_into(">i", out, 6, len(body))
    pos = HEADER_SIZE
    for e in body:
        _ENTRY.pack_into(
            out,
            pos,
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        pos += ENTRY_SIZE
    struct.pack_into(">hI", out, 0, SNAPSHOT_VERSION, crc32c(memoryview(out)[ENTRIES_OFFSET:]))
    return bytes(out)
