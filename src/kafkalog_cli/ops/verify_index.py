"""The checks kafka-dump-log runs on `.index` and `.timeindex` files (DumpLogSegments.dumpIndex and
dumpTimeIndex, Kafka 3.3.1), as values: each index entry checked against the `.log` batch it
names. Both renderers format these values: Kafka's text (the reports on stderr after all files)
and dump-index's JSON objects.

A check walks the entries in file order and stops at the first preallocated zero slot, as Kafka
does. Where Kafka dies partway (an entry pointing outside the log, a batch that does not parse),
the result holds the entries walked so far and the error, so the caller prints what Kafka printed
before it raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkalog_cli.errors import CorruptIndexError, KafkalogError, KafkaToolError
from kafkalog_cli.formats.indexes import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    OffsetIndexEntry,
    TimeIndexEntry,
    parse_offset_index,
    parse_time_index,
    sanity_check_offset_index,
    sanity_check_time_index,
)
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage.live_files import listed, map_file, read_file, was_listed
from kafkalog_cli.storage.names import offset_from_name

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # kafka-dump-log's --max-message-size


# What kafka-dump-log reports, one class per report (its Scala maps and lists named in brackets).
# Named tuples, not dataclasses: every dump-log imports this module, and they are built faster.
class IndexMismatch(NamedTuple):
    """[misMatchesForIndexFilesMap] an offset-index entry whose batch ends at another offset."""

    index_offset: int
    log_offset: int  # the last offset of the batch at the entry's position


class OffsetNotFound(NamedTuple):
    """[shallowOffsetNotFound] a time-index entry whose offset no batch ends at."""

    index_offset: int
    log_offset: (
        int | None
    )  # the last offset of the batch found instead; None: no batch (Kafka prints -1)


class TimestampMismatch(NamedTuple):
    """[misMatchesForTimeIndexFilesMap] a time-index entry whose batch has another max timestamp."""

    index_timestamp: int
    log_timestamp: int  # the batch's largest record timestamp


class OutOfOrderTimestamp(NamedTuple):
    """[outOfOrderTimestamp] a time-index entry not after the entry before it."""

    index_timestamp: int
    previous_timestamp: int  # the entry before it


class NonConsecutiveOffsets(NamedTuple):
    """[nonConsecutivePairsForLogFilesMap] two records in a row whose offsets are not consecutive
    (found by the dump as it renders the records)."""

    previous: int
    offset: int


@dataclass
class OffsetIndexCheck:
    path: Path
    empty: bool = False  # no whole entry: Kafka prints "<file> is empty."
    entries: list[OffsetIndexEntry] = field(default_factory=list)  # walked, in file order
    mismatches: list[IndexMismatch] = field(default_factory=list)  # in file order
    error: KafkalogError | None = None  # where kafka-dump-log dies, after `entries`


@dataclass
class TimeIndexCheck:
    path: Path
    entries: list[TimeIndexEntry] = field(default_factory=list)  # walked, in file order
    not_found: list[OffsetNotFound] = field(default_factory=list)
    mismatches: list[TimestampMismatch] = field(default_factory=list)
    out_of_order: list[OutOfOrderTimestamp] = field(default_factory=list)
    error: KafkalogError | None = None


def start_offset_of(path: Path) -> int:
    """The base offset kafka-dump-log reads from a file name: the text before the first '.',
    as a number of any length (Scala's toLong)."""
    stem = path.name.split(".")[0]
    try:
        return int(stem)
    except ValueError:
        raise KafkaToolError(
            f'file name does not start with an offset (NumberFormatException: For input string: "{stem}")',
            path=str(path),
        ) from None


def _beside(path: Path, suffix: str) -> Path:
    """The segment's file with `suffix`. Beside a listed index, listed too: a live broker moves a
    segment's files together (storage.live_files.followed)."""
    other = path.with_name(path.name.split(".")[0] + suffix)
    if was_listed(path):
        listed([other])
    return other


def check_offset_index(
    path: Path, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, *, sanity_only: bool = False
) -> OffsetIndexCheck:
    """dumpIndex: each entry's position must hold a batch (read within `max_message_size`) whose
    last offset is the entry's. With `sanity_only`, OffsetIndex.sanityCheck instead (it raises
    CorruptIndexError); an empty index is reported as such either way, as Kafka does."""
    base = start_offset_of(path)
    log_path = _beside(path, ".log")
    log = map_file(log_path)
    raw = read_file(path)
    if len(raw) < OFFSET_ENTRY_SIZE:
        return OffsetIndexCheck(path, empty=True)
    where = str(path.absolute())
    if sanity_only:
        sanity_check_offset_index(raw, base, path=where)
        return OffsetIndexCheck(path)
    check = OffsetIndexCheck(path)
    for i, entry in enumerate(parse_offset_index(raw, base)):
        position = entry.position
        if position > len(log) or position < 0:
            check.error = KafkaToolError(
                f"Slice from position {position} exceeds end position of the log ({len(log)} bytes)",
                path=where,
                position=i * OFFSET_ENTRY_SIZE,
            )
            break
        end = min(len(log), position + max_message_size)
        # errors here are about bytes of the .log: name it, and the index entry
        entry_at = f" (the position of the entry at byte {i * OFFSET_ENTRY_SIZE} of {path.name})"
        try:
            first = next(iter_batches(log, position, end), None)
        except KafkalogError as e:
            e.message += entry_at
            check.error = e.located(path=str(log_path.absolute()), position=position)
            break
        if first is None:
            check.error = KafkaToolError(
                f"no complete batch at position {position} within --max-message-size "
                f"{max_message_size}{entry_at} (kafka-dump-log dies with NoSuchElementException)",
                path=str(log_path.absolute()),
                position=position,
            )
            break
        if first.last_offset != entry.offset:
            check.mismatches.append(IndexMismatch(entry.offset, first.last_offset))
        check.entries.append(entry)
    return check


def check_time_index(path: Path, *, sanity_only: bool = False) -> TimeIndexCheck:
    """dumpTimeIndex: each entry's offset, looked up in the offset index as the broker does, must
    be the last offset of a batch whose largest timestamp is the entry's, and each timestamp must
    be after the one before. With `sanity_only`, TimeIndex.sanityCheck instead (it raises)."""
    base = start_offset_of(path)
    log = map_file(_beside(path, ".log"))
    offset_slots = parse_offset_index(read_file(_beside(path, ".index")), base, stop_at_zero=False)
    raw = read_file(path)
    where = str(path.absolute())
    if sanity_only:
        sanity_check_time_index(raw, base, path=where)
        return TimeIndexCheck(path)
    check = TimeIndexCheck(path)
    prev_ts = -1
    for i, entry in enumerate(parse_time_index(raw, base)):
        ts, offset = entry.timestamp, entry.offset
        position = index_lookup(offset_slots, offset)
        if position < 0 or position > len(log):  # FileRecords.slice throws
            check.error = KafkaToolError(
                f"Invalid position: {position} from the offset index"
                if position < 0
                else f"Slice from position {position} exceeds end position of the log ({len(log)} bytes)",
                path=where,
                position=i * TIME_ENTRY_SIZE,
            )
            break
        try:
            found = next((b for b in iter_batches(log, position) if b.last_offset >= offset), None)
            if found is None:
                check.not_found.append(OffsetNotFound(offset, None))
            elif found.last_offset != offset:
                check.not_found.append(OffsetNotFound(offset, found.last_offset))
            else:
                max_ts = max([-1, *(r.timestamp for r in found.records())])
                if max_ts != ts:
                    check.mismatches.append(TimestampMismatch(ts, max_ts))
                if prev_ts >= ts:
                    check.out_of_order.append(OutOfOrderTimestamp(ts, prev_ts))
        except KafkalogError as e:
            check.error = e
            break
        check.entries.append(entry)
        prev_ts = ts
    return check


def index_lookup(slots: list[OffsetIndexEntry], target: int) -> int:
    """OffsetIndex.lookup(target).position, with AbstractIndex's warm/cold binary search run over
    every slot, preallocated zero slots included, exactly as the broker's mmap sees them."""
    n = len(slots)
    if n == 0:
        return 0
    warm = 8192 // OFFSET_ENTRY_SIZE
    first_hot = max(0, n - 1 - warm)

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            off = slots[mid].offset
            if off > target:
                hi = mid - 1
            elif off < target:
                lo = mid
            else:
                return mid
        return lo

    if slots[first_hot].offset < target:
        slot = search(first_hot, n - 1)
    elif slots[0].offset > target:
        slot = -1
    else:
        slot = search(0, first_hot)
    return 0 if slot == -1 else slots[slot].position


def sanity_check(path: Path) -> None:
    """`dump-index --index-sanity-check` in JSON: Kafka's sanityCheck of one .index or .timeindex,
    on its own (no .log needed); raises CorruptIndexError, also for a name that is not a
    20-digit offset."""
    base = offset_from_name(path.name)
    if base is None:
        raise CorruptIndexError("file name does not start with a 20-digit offset", path=str(path))
    raw = read_file(path)
    if path.suffix == ".index":
        sanity_check_offset_index(raw, base, path=str(path.absolute()))
    else:
        sanity_check_time_index(raw, base, path=str(path.absolute()))
