"""A segment whose offsets overflow its index, split as the broker splits it (Kafka 3.3.1
LocalLog.splitOverflowedSegment, LogSegment.appendFromFile / appendChunkFromFile).

LogSegment.recover checks every valid batch's last offset against the segment's base
(ensureOffsetInRange: 0 <= last - base <= 2^31 - 1). A batch past that, typically a flipped byte in
a base offset (outside the CRC), throws LogSegmentOffsetOverflowException; LogLoader catches it,
splits the segment into new ones, each starting at the base offset of its first batch, and runs
the recovery again. This module computes that split from the segment's bytes; writing it is the
caller's (through fsops, by Kafka's replace protocol)."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalog_cli.errors import CorruptRecordError, OffsetOverflowError
from kafkalog_cli.formats.indexes import INT32_MAX, IndexBuilder
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage.segment import read_next_offset_position

# appendChunkFromFile reads through a 1 MiB buffer: one append (one possible index entry) per chunk
_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SplitSegment:
    """One segment the split creates: its base offset, the [start, end) bytes of the old .log it
    holds, and the .index / .timeindex the appends leave (trimmed, as onBecomeInactiveSegment)."""

    base_offset: int
    start: int
    end: int
    index: bytes
    time_index: bytes

    @property
    def size(self) -> int:
        return self.end - self.start


def _fits(base: int, offset: int) -> bool:
    """AbstractIndex.canAppendOffset: the offset relative to `base` fits an index entry."""
    return 0 <= offset - base <= INT32_MAX


def split_overflowed_segment(
    buf, old_base: int, index_interval_bytes: int, overflow_at: int
) -> list[SplitSegment]:
    """The new segments, in file order, for a segment whose recovery met the overflowing batch at
    byte `overflow_at`. Raises OffsetOverflowError, naming the byte, where the broker itself cannot
    split (its load fails and the broker does not start): `require(segment.hasOverflow)` failing
    (the segment's last batch fits its index: the damaged batch is not the last one), bytes that
    are not a whole batch (the split's batchesFrom(position).head finds none), a batch size below
    14, a batch that cannot go into a segment of its own base (appendFromFile appends nothing), or a
    new base offset below zero (no file name for it)."""
    size = len(buf)
    if not has_overflow(
        buf, old_base, _recovered_index_entry(buf, old_base, index_interval_bytes, overflow_at)
    ):
        raise OffsetOverflowError(
            "the segment's last batch fits its index, and the broker splits only a segment whose last batch "
            "overflows (IllegalArgumentException: requirement failed: Split operation is only permitted for "
            "segments with overflow); the broker does not start",
            position=overflow_at,
        )
    out: list[SplitSegment] = []
    position = 0
    while position < size:
        first = next(_batches(buf, position), None)
        if first is None:
            raise OffsetOverflowError(
                f"{size - position} bytes after the last complete batch are not a batch: the broker's "
                f"split stops on them (NoSuchElementException in LocalLog.splitOverflowedSegment) and the "
                f"broker does not start",
                position=position,
            )
        base = first.base_offset
        if base < 0:
            raise OffsetOverflowError(
                f"the batch at byte {position} has a negative base offset {base}: the "
                f"broker's split would name a segment with it",
                position=position,
            )
        start = position
        builder = IndexBuilder(base, index_interval_bytes)
        position = _append_from_file(buf, start, base, builder)
        if position == start:
            raise OffsetOverflowError(
                f"the batch at byte {start} (offsets {first.base_offset}..{first.last_offset}) does not fit a "
                f"segment of its own base offset: the broker's split fails (IllegalStateException \"Failed to "
                f'append records") and the broker does not start',
                position=start,
            )
        builder.finish()
        out.append(
            SplitSegment(
                base, start, position, builder.offset_index_bytes(), builder.time_index_bytes()
            )
        )
    return out


def has_overflow(buf, base: int, entry: tuple[int, int] | None) -> bool:
    """LogSegment.hasOverflow: readNextOffset (from the offset index's last entry `entry`) minus
    one does not fit the index. Only the last batch decides."""
    start = read_next_offset_position(buf, base, entry)
    if start is None:
        return False
    nxt = base
    for b in _batches(buf, start):
        nxt = b.last_offset + 1
    return nxt > base and not _fits(base, nxt - 1)


def _recovered_index_entry(buf, base: int, interval: int, stop: int) -> tuple[int, int] | None:
    """The offset index's last entry as LogSegment.recover leaves it when the batch at `stop`
    overflows: it resets the index, then indexes the batches before that one."""
    builder = IndexBuilder(base, interval)
    for b in iter_batches(buf, 0, stop):
        builder.on_batch(b.position, b.size, b.last_offset, b.max_timestamp)
    entries = builder.offset_entries
    return (entries[-1].offset - base, entries[-1].position) if entries else None


def _batches(buf, position: int):
    """FileRecords.batchesFrom: complete batches by their sizes, no CRC check. A size below 14
    is the CorruptRecordException that stops the broker's split, and its start."""
    try:
        yield from iter_batches(buf, position)
    except CorruptRecordError as e:
        raise OffsetOverflowError(
            f"{e.message} (CorruptRecordException): the broker's split stops on it and "
            f"the broker does not start",
            position=e.position,
        ) from None


def _append_from_file(buf, start: int, base: int, builder: IndexBuilder) -> int:
    """LogSegment.appendFromFile from byte `start` of the old .log into a new segment of `base`:
    chunks of the batches that fit it, each one LogSegment.append (at most 1 MiB, but always at
    least one batch); returns where it stopped."""
    position = start
    while True:
        chunk, largest, max_ts, offset_of_max = 0, -1, None, -1
        for b in _batches(buf, position):
            if not _fits(base, b.last_offset) or (chunk and chunk + b.size >= _CHUNK_BYTES):
                break
            if max_ts is None or b.max_timestamp > max_ts:
                max_ts, offset_of_max = b.max_timestamp, b.last_offset
            largest = b.last_offset
            chunk += b.size
        if not chunk:
            return position
        assert max_ts is not None  # set by the chunk's first batch
        # physicalPosition: the new segment's size before this append
        builder.on_append(position - start, chunk, largest, max_ts, offset_of_max)
        position += chunk
