"""Where an index is judged: the one home of the rules for `.index` and `.timeindex` files.

Kafka judges an index at three levels, and so does kafkalog; each rule is written once:

1. Entries a reader can rely on (the invariants OffsetIndex.append and TimeIndex.maybeAppend
   enforce by throwing: offsets from the base offset on, offset-index offsets strictly
   increasing, time-index timestamps and offsets not decreasing, positions inside the log):
   formats.indexes.offset_entry_problem / time_entry_problem per entry; here
   `offset_entries_problem`, `time_entries_problem` and `entry_batch_problem` over a whole
   index, for a seek (Segment.position_for_offset / position_for_timestamp), which falls back
   to scanning the .log from byte 0 when they fail.
2. AbstractIndex/OffsetIndex/TimeIndex.sanityCheck (the last entry against the base offset and
   the first timestamp, whole slots): formats.indexes.sanity_check_offset_index /
   sanity_check_time_index, byte-level (dump-log and dump-index --index-sanity-check).
3. The index LogSegment.recover builds (`index_rebuild_reason`): what LogLoader keeps as it is
   only when it matches what recovery would write. Stricter than 1 on purpose: TimeIndex.maybeAppend
   appends only a timestamp greater than the last (an equal one is skipped, not refused), an
   entry's position holds the start of a batch ending at its offset, nothing is indexed past the
   log end, and no zero-filled slot follows the entries. recover rebuilds an index that fails it
   (for the segments it recovers, and with --repair the others), clean-shutdown judges the marker by it.

kafka-dump-log's own checks (DumpLogSegments.dumpIndex / dumpTimeIndex: a mismatch report, not
a judgement of the file) are ops.verify_index's.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.indexes import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    offset_entry_problem,
    parse_offset_index,
    parse_time_index,
    time_entry_problem,
)
from kafkalog_cli.formats.records import LOG_OVERHEAD, RecordBatch, iter_batches
from kafkalog_cli.storage.recovery import BatchValidation, passes

_MAGICS = (0, 1, 2)


# ------------------------------------------------------------------ 1. entries a reader can rely on
def usable_entries(
    read: Callable[[], list], check: Callable[[list], str | None]
) -> tuple[list, str | None]:
    """An index's entries for a seek, and why they cannot be used (None if they can): unreadable,
    or failing `check`. An unusable index only costs the seek its shortcut."""
    try:
        entries = read()
    except Exception as e:  # whatever makes the index unreadable
        return [], f"cannot be read ({getattr(e, 'message', e)})"
    return entries, check(entries)


def offset_entries_problem(entries, base_offset: int, log_size: int) -> str | None:
    """Why the offset index's entries cannot be trusted, or None: offsets must be at least the
    base offset and strictly increase, positions lie inside the log and do not decrease."""
    for i, e in enumerate(entries):
        why = offset_entry_problem(e, base_offset, log_size, entries[i - 1] if i else None)
        if why is not None:
            return f"byte {i * OFFSET_ENTRY_SIZE}: {why}"
    return None


def time_entries_problem(entries, base_offset: int) -> str | None:
    """Why the time index's entries cannot be trusted, or None: offsets from the base offset on,
    timestamps and offsets not decreasing."""
    for i, e in enumerate(entries):
        why = time_entry_problem(e, base_offset, entries[i - 1] if i else None)
        if why is not None:
            return f"byte {i * TIME_ENTRY_SIZE}: {why}"
    return None


def entry_batch_problem(log, position: int, offset: int) -> str | None:
    """Why the batch an index entry points at cannot be where the entry's offset starts, or None:
    a size of at least 14 that fits in the file, a known magic, a valid CRC, and a first offset
    (for legacy entries, the wrapper's offset) not after the entry's offset."""
    n = len(log)
    if position < 0:
        return f"entry (offset {offset}, position {position}) points before the log's first byte"
    if position + 17 > n:
        return f"entry (offset {offset}, position {position}) points past the last batch header"
    size = int.from_bytes(log[position + 8 : position + 12], "big", signed=True)
    magic = log[position + 16]
    if size < 14 or position + LOG_OVERHEAD + size > n or magic not in _MAGICS:
        return (
            f"entry (offset {offset}, position {position}) does not point at the start of a batch "
            f"(size field {size}, magic {magic if magic < 128 else magic - 256})"
        )
    b = RecordBatch(log, position, size + LOG_OVERHEAD, magic)
    if not passes(b, BatchValidation.KNOWN_MAGIC):
        return f"entry (offset {offset}, position {position}) points at a batch whose CRC does not match"
    first = b.base_offset_field if magic >= 2 else b.last_offset
    if first > offset:
        return (
            f"entry (offset {offset}, position {position}) points at a batch starting at offset "
            f"{first}, after the entry's"
        )
    return None


def entry_kafka_never_writes(entries: list, base: int) -> bool:
    """The offset index's last entry is one OffsetIndex.append never writes (a negative position,
    an offset below the base): the index's damage, not a .log cut since."""
    return bool(entries) and never_written_entry(entries[-1], base) is not None


def never_written_entry(entry, base: int) -> IndexDefect | None:
    """The defect of an offset-index entry OffsetIndex.append never writes for a segment at
    `base` (an offset below the base, a negative position), or None: a position past the end of
    a .log cut since is the log's damage, not the index's."""
    why = offset_entry_problem(entry, base, None)
    return None if why is None else IndexDefect(IndexFile.OFFSET_INDEX, why)


def zero_slots(file_length: int, entries: int, entry_size: int) -> int:
    """The slots of an index file after its `entries` entries: the preallocated zeros a broker
    trims when it closes the segment cleanly (AbstractIndex.trimToValidSize)."""
    return file_length // entry_size - entries


# ------------------------------------------------------------------ 3. the index recovery builds
class IndexFile(enum.Enum):
    """Which of a segment's indexes a defect is in."""

    OFFSET_INDEX = ".index"
    TIME_INDEX = ".timeindex"


@dataclass(frozen=True)
class IndexDefect:
    """How a broker-kept index differs from the one LogSegment.recover builds: in which file,
    why (for the user), and whether it is only a missing final time-index entry (an empty time
    index beside batches with timestamps: what the active segment has until it is closed)."""

    file: IndexFile
    why: str
    no_final_time_entry: bool = False


def index_rebuild_reason(
    seg_buf, base: int, index: bytes, timeindex: bytes, next_offset: int
) -> IndexDefect | None:
    """How a broker-kept index is not the one LogSegment.recover builds (zero-filled, truncated,
    pointing nowhere), or None: recover rebuilds it."""
    if len(index) % OFFSET_ENTRY_SIZE:
        return IndexDefect(
            IndexFile.OFFSET_INDEX, f"offset index length {len(index)} is not a multiple of 8"
        )
    if len(timeindex) % TIME_ENTRY_SIZE:
        return IndexDefect(
            IndexFile.TIME_INDEX, f"time index length {len(timeindex)} is not a multiple of 12"
        )
    entries = parse_offset_index(index, base)
    if zero_slots(len(index), len(entries), OFFSET_ENTRY_SIZE):
        return IndexDefect(
            IndexFile.OFFSET_INDEX, "offset index has zero-filled slots after its entries"
        )
    why = _offset_entries_not_built(seg_buf, base, entries, next_offset)
    if why is not None:
        return IndexDefect(IndexFile.OFFSET_INDEX, why)
    why = _time_entries_not_built(seg_buf, base, timeindex, next_offset)
    if why is not None:
        return IndexDefect(IndexFile.TIME_INDEX, why)
    if len(seg_buf) and not len(timeindex):
        # a closed segment always gets a final entry unless no batch has a timestamp
        try:
            for b in iter_batches(seg_buf):
                if b.max_timestamp >= 0:
                    return IndexDefect(
                        IndexFile.TIME_INDEX,
                        "time index is empty but the log has timestamps",
                        no_final_time_entry=True,
                    )
        except KafkalogError as e:
            return IndexDefect(
                IndexFile.TIME_INDEX,
                f"time index is empty and the log does not read to its end ({e.message})",
            )
    return None


def _time_entries_not_built(seg_buf, base: int, timeindex: bytes, next_offset: int) -> str | None:
    """Why time-index entries are not LogSegment.recover's, or None: no zero-filled slot after
    them, each after the one before with a greater timestamp, none at or past the log end."""
    tentries = parse_time_index(timeindex, base)
    if zero_slots(len(timeindex), len(tentries), TIME_ENTRY_SIZE):
        return "time index has zero-filled slots after its entries"
    for i, t in enumerate(tentries):
        prev = tentries[i - 1] if i else None
        # maybeAppend skips an equal timestamp; recovery indexes nothing at or past the log end
        if (
            time_entry_problem(t, base, prev) is not None
            or (prev is not None and t.timestamp == prev.timestamp)
            or t.offset >= max(next_offset, base + 1)
        ):
            return f"time index entry ({t.timestamp}, {t.offset}) is out of order or beyond the log"
    return None


def _offset_entries_not_built(seg_buf, base: int, entries: list, next_offset: int) -> str | None:
    """Why offset-index entries are not LogSegment.recover's, or None: each after the one before
    with a strictly greater position (one entry per batch), a whole batch header at its
    position, that batch ending at the entry's offset (or a cleaner's entry)."""
    last_pos = -1
    for i, e in enumerate(entries):
        if (
            offset_entry_problem(e, base, len(seg_buf), entries[i - 1] if i else None) is not None
            or e.position <= last_pos
            or e.position + 17 > len(seg_buf)
        ):
            return (
                f"offset index entry ({e.offset}, {e.position}) is out of order or beyond the log"
            )
        try:
            b = next(iter_batches(seg_buf, e.position))
        except (StopIteration, KafkalogError):
            return f"offset index entry ({e.offset}, {e.position}) does not point at a batch"
        if b.last_offset != e.offset and not _cleaned_entry(seg_buf, b, e.offset, next_offset):
            return f"offset index entry ({e.offset}, {e.position}) points at a batch ending at {b.last_offset}"
        last_pos = e.position
    return None


def _cleaned_entry(seg_buf, batch, offset: int, next_offset: int) -> bool:
    """An entry the log cleaner writes: it indexes a retained batch under the largest offset of
    the records it read (LogCleaner.cleanInto appends with the source's maxOffset), so the offset
    is past the batch's last one but before the next batch's first: lookups still land right."""
    if offset < batch.last_offset:
        return False
    try:
        nxt = next(iter_batches(seg_buf, batch.position + batch.size), None)
    except KafkalogError:
        return False
    return offset < (
        nxt.base_offset if nxt is not None else max(next_offset, batch.last_offset + 1)
    )
