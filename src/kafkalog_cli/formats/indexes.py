"""Offset index (`.index`) and time index (`.timeindex`): parse, encode, look up, sanity-check, rebuild.

Formats (big-endian, Kafka's OffsetIndex / TimeIndex):

- `.index`: 8-byte entries `relativeOffset int32 | position int32`; the offset is the lastOffset of a
  batch, the position is where that batch starts in the `.log`.
- `.timeindex`: 12-byte entries `timestamp int64 | relativeOffset int32`; (running max timestamp,
  lastOffset of the batch that holds it).

An existing file has `roundDown(length, entrySize) / entrySize` entries, preallocated zeros included
(AbstractIndex). Readers must therefore stop at the zero padding; see `parse_offset_index`.

Messages of `CorruptIndexError` are Kafka 3.3.1's (the version the corpus goldens come from), with the
path as the caller gives it where Kafka prints the absolute path.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice, takewhile
from operator import itemgetter

from kafkalog_cli.errors import CorruptIndexError, InvalidOffsetError, OffsetOverflowError

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP
INT32_MAX = 0x7FFFFFFF
DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes
DEFAULT_SEGMENT_INDEX_BYTES = 10485760  # segment.index.bytes

_OFFSET_ENTRY = struct.Struct(">ii")  # relativeOffset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relativeOffset
_OFFSET_REL = itemgetter(0)  # the relativeOffset of an unpacked slot
_TIME_REL = itemgetter(1)


@dataclass(frozen=True, slots=True)
class OffsetIndexEntry:
    """Kafka's OffsetPosition: an absolute offset and the byte position of the batch holding it."""

    offset: int
    position: int

    def __iter__(self) -> Iterator[int]:  # so `offset, position = entry` works like Kafka's pair
        yield self.offset
        yield self.position


@dataclass(frozen=True, slots=True)
class TimeIndexEntry:
    """Kafka's TimestampOffset: a timestamp and an absolute offset."""

    timestamp: int
    offset: int

    def __iter__(self) -> Iterator[int]:
        yield self.timestamp
        yield self.offset


def offset_index_entry_count(length: int) -> int:
    """Entries Kafka sees in an existing `.index` of `length` bytes (zero padding included)."""
    return length // OFFSET_ENTRY_SIZE


def time_index_entry_count(length: int) -> int:
    """Entries Kafka sees in an existing `.timeindex` of `length` bytes (zero padding included)."""
    return length // TIME_ENTRY_SIZE


def max_entries(segment_index_bytes: int, entry_size: int) -> int:
    """maxEntries of an index preallocated to `segment.index.bytes` (rounded down to the entry size)."""
    return segment_index_bytes // entry_size


# ---------------------------------------------------------------------------------------------
# Reading


def parse_offset_index(
    buf: bytes | bytearray | memoryview, base_offset: int, *, stop_at_zero: bool = True
) -> list[OffsetIndexEntry]:
    """The entries of a `.index`.

    A trailing partial entry is ignored (Kafka rounds the length down). With `stop_at_zero`, reading
    stops at the first entry i > 0 whose offset equals `base_offset`: that is preallocated zero space.
    This is DumpLogSegments.dumpIndex's rule (3.3.1: `if (entry.offset == index.baseOffset && i > 0)
    return`); a well-formed index can never hold such an entry, since offsets strictly increase.
    With `stop_at_zero=False` every slot is returned, as OffsetIndex.entry(n) would.
    """
    return [
        OffsetIndexEntry(base_offset + rel, pos)
        for rel, pos in _live_slots(buf, _OFFSET_ENTRY, _OFFSET_REL, stop_at_zero)
    ]


def parse_time_index(
    buf: bytes | bytearray | memoryview, base_offset: int, *, stop_at_zero: bool = True
) -> list[TimeIndexEntry]:
    """The entries of a `.timeindex`.

    The stop rule is the same as for the offset index and looks at the *offset* only, not the
    timestamp: DumpLogSegments.dumpTimeIndex (3.3.1) does `if (entry.offset == timeIndex.baseOffset
    && i > 0) return`. A real entry i > 0 cannot have the base offset: entries are only added with a
    strictly greater timestamp, and each new maximum comes with a new batch's lastOffset.
    """
    return [
        TimeIndexEntry(ts, base_offset + rel)
        for ts, rel in _live_slots(buf, _TIME_ENTRY, _TIME_REL, stop_at_zero)
    ]


def _live_slots(
    buf: bytes | bytearray | memoryview,
    entry: struct.Struct,
    relative_offset: itemgetter,
    stop_at_zero: bool,
) -> Iterator[tuple[int, int]]:
    """The whole `entry`-sized slots of an index file, unpacked; with `stop_at_zero`, only those
    before the first slot i > 0 whose `relative_offset` is 0. Iterated in C, not per slot here."""
    mv = memoryview(buf)
    slots = entry.iter_unpack(mv[: len(mv) // entry.size * entry.size])
    if stop_at_zero:  # the first slot, then slots while their relative offset is not 0
        return chain(islice(slots, 1), takewhile(relative_offset, slots))
    return slots


# ---------------------------------------------------------------------------------------------
# Writing


def _relative(offset: int, base_offset: int) -> int:
    rel = offset - base_offset
    if rel < 0 or rel > INT32_MAX:
        # AbstractIndex.relativeOffset: IndexOffsetOverflowException
        raise CorruptIndexError(f"Integer overflow for offset: {offset}")
    return rel


def encode_offset_index(entries: Iterable[OffsetIndexEntry], base_offset: int) -> bytes:
    """Bytes of a trimmed `.index` (exactly `len(entries) * 8`). Offsets must fit the segment."""
    flat: list[int] = []
    for e in entries:
        flat.append(_relative(e.offset, base_offset))
        flat.append(e.position)
    return struct.pack(f">{len(flat)}i", *flat)


def encode_time_index(entries: Iterable[TimeIndexEntry], base_offset: int) -> bytes:
    """Bytes of a trimmed `.timeindex` (exactly `len(entries) * 12`)."""
    flat: list[int] = []
    for e in entries:
        flat.append(e.timestamp)
        flat.append(_relative(e.offset, base_offset))
    return struct.pack(">" + "qi" * (len(flat) // 2), *flat)


def offset_entry_problem(
    entry: OffsetIndexEntry,
    base_offset: int,
    log_size: int | None,
    previous: OffsetIndexEntry | None = None,
) -> str | None:
    """Why an offset-index entry is not one Kafka could have written for a segment at
    `base_offset` with a `log_size`-byte .log (after `previous`, the entry before it), or None.
    OffsetIndex.append writes offsets that strictly increase from the base offset (a relative
    offset in 0..Int.MAX) and positions of batch starts, which increase and lie inside the log.
    With `log_size` None, only what no Kafka ever writes (an offset below the base, a negative
    position) counts: a position past the end of a .log cut since is the log's damage, not the
    index's. The one judge of offset-index entries: no reader uses an entry's position it rejects."""
    if entry.offset < base_offset:
        return f"entry offset {entry.offset} is below the segment's base offset {base_offset}"
    if entry.position < 0:
        return f"entry position {entry.position} is negative"
    if log_size is not None and not entry.position < max(log_size, 1):
        return f"entry position {entry.position} is outside the {log_size}-byte log"
    if previous is not None and (
        entry.offset <= previous.offset or entry.position < previous.position
    ):
        return (
            f"entry (offset {entry.offset}, position {entry.position}) is not after "
            f"(offset {previous.offset}, position {previous.position})"
        )
    return None


def time_entry_problem(
    entry: TimeIndexEntry, base_offset: int, previous: TimeIndexEntry | None = None
) -> str | None:
    """Why a time-index entry is not one Kafka could have written for a segment at `base_offset`
    (after `previous`), or None: TimeIndex.maybeAppend writes timestamps that increase and offsets
    that do not decrease, from the base offset on. The one judge of time-index entries."""
    if entry.offset < base_offset:
        return f"entry offset {entry.offset} is below the segment's base offset {base_offset}"
    if previous is not None and (
        entry.timestamp < previous.timestamp or entry.offset < previous.offset
    ):
        return (
            f"entry (timestamp {entry.timestamp}, offset {entry.offset}) is not after "
            f"(timestamp {previous.timestamp}, offset {previous.offset})"
        )
    return None


def read_start(position: int, log_size: int) -> int:
    """The byte of a `log_size`-byte .log at which a read for an offset-index entry's `position`
    starts, as Kafka takes it: LogSegment.translateOffset reads from max(entry position, 0) (its
    startingFilePosition), and FileRecords.searchForOffsetWithSize finds no batch from a position
    at or past the end. The one place where an entry's position, anything a damaged file holds
    (negative, past the end), becomes a position in the log."""
    return min(max(position, 0), log_size)


# ---------------------------------------------------------------------------------------------
# Lookups (AbstractIndex.largestLowerBoundSlotFor)


def lookup_offset(
    entries: Sequence[OffsetIndexEntry], target_offset: int, base_offset: int
) -> OffsetIndexEntry:
    """OffsetIndex.lookup: the greatest entry with offset <= target, else (baseOffset, 0).

    The `.log` must then be scanned forward from the position to the first batch with
    lastOffset >= target."""
    i = bisect_right(entries, target_offset, key=_offset_key) - 1
    return entries[i] if i >= 0 else OffsetIndexEntry(base_offset, 0)


def lookup_timestamp(
    entries: Sequence[TimeIndexEntry], target_timestamp: int, base_offset: int
) -> TimeIndexEntry:
    """TimeIndex.lookup: the greatest entry with timestamp <= target, else (NO_TIMESTAMP=-1, baseOffset)."""
    i = bisect_right(entries, target_timestamp, key=_timestamp_key) - 1
    return entries[i] if i >= 0 else TimeIndexEntry(NO_TIMESTAMP, base_offset)


def _offset_key(e: OffsetIndexEntry) -> int:
    return e.offset


def _timestamp_key(e: TimeIndexEntry) -> int:
    return e.timestamp


# ---------------------------------------------------------------------------------------------
# Sanity checks (what `kafka-dump-log --index-sanity-check` runs)


def sanity_check_offset_index(
    buf: bytes | bytearray | memoryview, base_offset: int, *, path: str | None = None
) -> None:
    """OffsetIndex.sanityCheck over the raw file, zero padding included (as Kafka sees it).

    The last slot is the last `roundDown(length, 8)` slot, so a preallocated, zero-padded index
    passes (its last offset is the base offset). The broker skips this check at startup."""
    where = path if path is not None else "<index>"
    last = _last_slot(buf, _OFFSET_ENTRY)
    if last is not None:
        (rel, _), at = last
        _require(
            base_offset + rel >= base_offset,
            path,
            at,
            f"Corrupt index found, index file ({where}) has non-zero size but the last offset "
            f"is {base_offset + rel} which is less than the base offset {base_offset}.",
        )
    _require_whole_slots(buf, OFFSET_ENTRY_SIZE, "Index", where, path)


def sanity_check_time_index(
    buf: bytes | bytearray | memoryview, base_offset: int, *, path: str | None = None
) -> None:
    """TimeIndex.sanityCheck over the raw file, zero padding included.

    Unlike the offset index, a preallocated time index FAILS this check: its last slot holds
    timestamp 0, which is less than the first real timestamp (corpus: recover/unclean-kill)."""
    where = path if path is not None else "<time index>"
    last = _last_slot(buf, _TIME_ENTRY)
    if last is not None:
        (last_ts, rel), at = last
        first_ts, _ = _TIME_ENTRY.unpack_from(buf, 0)
        _require(
            last_ts >= first_ts,
            path,
            at,
            f"Corrupt time index found, time index file ({where}) has non-zero size but the "
            f"last timestamp is {last_ts} which is less than the first timestamp {first_ts}",
        )
        _require(
            base_offset + rel >= base_offset,
            path,
            at,
            f"Corrupt time index found, time index file ({where}) has non-zero size but the "
            f"last offset is {base_offset + rel} which is less than the first offset {base_offset}",
        )
    _require_whole_slots(buf, TIME_ENTRY_SIZE, "Time index", where, path)


def _last_slot(
    buf: bytes | bytearray | memoryview, entry: struct.Struct
) -> tuple[tuple[int, int], int] | None:
    """The last whole slot of an index file, unpacked, and its byte position; None if it has none."""
    n = len(buf) // entry.size
    if not n:
        return None
    at = (n - 1) * entry.size
    return entry.unpack_from(buf, at), at


def _require_whole_slots(
    buf: bytes | bytearray | memoryview, entry_size: int, kind: str, where: str, path: str | None
) -> None:
    """The length check that ends both sanity checks: a partial slot at the end is corrupt."""
    length = len(buf)
    _require(
        length % entry_size == 0,
        path,
        length - length % entry_size,
        f"{kind} file {where} is corrupt, found {length} bytes which is neither positive nor "
        f"a multiple of {entry_size}.",
    )


def _require(condition: bool, path: str | None, position: int, message: str) -> None:
    """Kafka's `if (!condition) throw new CorruptIndexException(message)`, for the sanity checks."""
    if not condition:
        raise CorruptIndexError(message, path=path, position=position)


# ---------------------------------------------------------------------------------------------
# Building


class IndexBuilder:
    """Builds a segment's `.index` and `.timeindex` the way the broker does.

    Two modes; use one per builder:

    - `on_batch` per batch in file order: LogSegment.recover, the canonical rebuild. An offset entry
      (batch lastOffset -> batch start) is added when `position - lastIndexEntry > interval`
      (strictly greater, so never at position 0); the time index gets (max timestamp so far, its
      batch's lastOffset) at the same moment, only if that timestamp is greater than its last entry.
    - `on_append` per append call: LogSegment.append. Same rule on bytes since the last entry, one
      entry per call, mapping the call's largest offset to the position of its first byte (which is
      why follower- and cleaner-written indexes point "last offset" at the first batch's start).

    `finish()` adds the time entry that recover / roll / close add (`skipFullCheck`). Per-batch work
    is a few int comparisons and list appends; bytes are packed once at the end.
    """

    __slots__ = (
        "base_offset",
        "index_interval_bytes",
        "max_index_entries",
        "max_time_entries",
        "_offsets",
        "_times",
        "_last_index_entry",
        "bytes_since_last_index_entry",
        "_max_ts",
        "_offset_of_max_ts",
        "_last_time_ts",
        "_last_time_off",
        "_last_offset",
        "_finished",
    )

    def __init__(
        self,
        base_offset: int,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        max_index_entries: int | None = None,
        max_time_entries: int | None = None,
    ):
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        # None = unbounded; Kafka's default is segment.index.bytes // entry size (1310720 / 873813)
        self.max_index_entries = max_index_entries
        self.max_time_entries = max_time_entries
        self._offsets: list[int] = []  # flat: relativeOffset, position, ...
        self._times: list[int] = []  # flat: timestamp, relativeOffset, ...
        self._last_index_entry = 0
        # LogSegment.append's counter. Note: a broker that reopens a segment starts it at 0 again
        # (it is not recomputed on load), so set it if you continue a segment a broker appended to.
        self.bytes_since_last_index_entry = 0
        self._max_ts = NO_TIMESTAMP  # TimestampOffset.Unknown = (-1, -1)
        self._offset_of_max_ts = -1
        self._last_time_ts = NO_TIMESTAMP  # TimeIndex.lastEntry of an empty index = (-1, base)
        self._last_time_off = base_offset
        self._last_offset: int | None = None  # OffsetIndex._lastOffset of a non-empty index
        self._finished = False

    # -- the two per-batch paths ---------------------------------------------------------------

    def on_batch(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        """One batch of LogSegment.recover, at byte `position` (= validBytes) of the `.log`."""
        rel = self._observe(last_offset, position, max_timestamp, last_offset)
        if position - self._last_index_entry > self.index_interval_bytes:
            self._append_entries(last_offset, rel, position)
            self._last_index_entry = position

    def on_append(
        self,
        first_position: int,
        total_bytes: int,
        largest_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
    ) -> None:
        """One LogSegment.append call: `total_bytes` written at `first_position`."""
        if total_bytes <= 0:
            return  # Kafka ignores empty appends entirely
        rel = self._observe(largest_offset, first_position, max_timestamp, offset_of_max_timestamp)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self._append_entries(largest_offset, rel, first_position)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += total_bytes

    def finish(self) -> None:
        """The final `timeIndex.maybeAppend(maxTs, offsetOfMaxTs, skipFullCheck = true)`. Idempotent."""
        if not self._finished:
            self._maybe_append_time(self._max_ts, self._offset_of_max_ts, True)
            self._finished = True

    # -- Kafka's ensureOffsetInRange, OffsetIndex.append, TimeIndex.maybeAppend ------------------

    def _observe(
        self, largest_offset: int, position: int, max_timestamp: int, offset_of_max_timestamp: int
    ) -> int:
        """What every batch or append updates: the offset's range check (ensureOffsetInRange) and
        the max timestamp so far; returns the offset relative to the base."""
        rel = largest_offset - self.base_offset
        if rel < 0 or rel > INT32_MAX:
            raise self._offset_overflow(largest_offset, position)
        if max_timestamp > self._max_ts:
            self._max_ts = max_timestamp
            self._offset_of_max_ts = offset_of_max_timestamp
        return rel

    def _append_entries(self, offset: int, rel: int, position: int) -> None:
        """An offset-index entry, and a time-index entry for the max timestamp so far if it is new."""
        self._append_offset(offset, rel, position)
        self._maybe_append_time(self._max_ts, self._offset_of_max_ts, False)

    def _offset_overflow(self, offset: int, position: int) -> OffsetOverflowError:
        """LogSegment.ensureOffsetInRange's LogSegmentOffsetOverflowException: the broker splits
        the segment."""
        return OffsetOverflowError(
            f"Detected offset overflow at offset {offset} in segment with base offset "
            f"{self.base_offset}",
            position=position,
            offset=offset,
        )

    def _append_offset(self, offset: int, rel: int, position: int) -> None:
        n = len(self._offsets) >> 1
        if self.max_index_entries is not None and n >= self.max_index_entries:
            raise CorruptIndexError(
                f"requirement failed: Attempt to append to a full index (size = {n}).",
                position=position,
            )
        if self._last_offset is not None and offset <= self._last_offset:
            # InvalidOffsetException: recovery empties the whole segment on this
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to position {n} no larger than the last "
                f"offset appended ({self._last_offset}).",
                position=position,
            )
        self._offsets.append(rel)
        self._offsets.append(position)
        self._last_offset = offset

    def _maybe_append_time(self, timestamp: int, offset: int, skip_full_check: bool) -> None:
        n = len(self._times) >> 1
        if (
            not skip_full_check
            and self.max_time_entries is not None
            and n >= self.max_time_entries - 1
        ):
            raise CorruptIndexError(
                f"requirement failed: Attempt to append to a full time index (size = {n})."
            )
        if n and offset < self._last_time_off:
            raise CorruptIndexError(
                f"Attempt to append an offset ({offset}) to slot {n} no larger than the last "
                f"offset appended ({self._last_time_off})."
            )
        if n and timestamp < self._last_time_ts:
            raise CorruptIndexError(
                f"Attempt to append a timestamp ({timestamp}) to slot {n} no larger than the last "
                f"timestamp appended ({self._last_time_ts})."
            )
        if timestamp > self._last_time_ts:
            self._times.append(timestamp)
            self._times.append(_relative(offset, self.base_offset))
            self._last_time_ts = timestamp
            self._last_time_off = offset

    # -- results --------------------------------------------------------------------------------

    @property
    def max_timestamp(self) -> TimeIndexEntry:
        """(maxTimestampSoFar, offsetOfMaxTimestampSoFar); (-1, -1) before any timestamped batch."""
        return TimeIndexEntry(self._max_ts, self._offset_of_max_ts)

    @property
    def offset_entries(self) -> list[OffsetIndexEntry]:
        o, b = self._offsets, self.base_offset
        return [OffsetIndexEntry(b + o[i], o[i + 1]) for i in range(0, len(o), 2)]

    @property
    def time_entries(self) -> list[TimeIndexEntry]:
        t, b = self._times, self.base_offset
        return [TimeIndexEntry(t[i], b + t[i + 1]) for i in range(0, len(t), 2)]

    def offset_index_bytes(self) -> bytes:
        return struct.pack(f">{len(self._offsets)}i", *self._offsets)

    def time_index_bytes(self) -> bytes:
        return struct.pack(">" + "qi" * (len(self._times) >> 1), *self._times)
