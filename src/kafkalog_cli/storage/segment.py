"""One segment: `<base>.log` (mmap'd) and its `.index`, `.timeindex` and `.txnindex` (LogSegment)."""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kafkalog_cli.errors import CorruptRecordError, InputError
from kafkalog_cli.storage import files, live_files
from kafkalog_cli.storage.live_files import map_file, read_file, unmap

if TYPE_CHECKING:  # records are imported when batches are read, not to map a file
    from kafkalog_cli.formats.records import RecordBatch
    from kafkalog_cli.storage.recovery import LogTail
from kafkalog_cli.storage.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    TopicPartition,
    offset_from_name,
    parse_partition_dir,
    segment_file,
)

_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength
_V2_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount, from byte 21
_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


class BatchHeader(NamedTuple):
    """What a batch header tells without its records."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int


def not_regular_reason(path: Path | str) -> str | None:
    """Why `path` cannot be read as a file (missing, a dangling symlink, a directory, a FIFO,
    a device or socket), or None for a regular file (or a symlink to one). Only stats: a FIFO
    is never opened, since opening one for reading blocks until a writer comes."""
    try:
        st = os.stat(path)
    except OSError as e:
        if (
            isinstance(e, FileNotFoundError)
            and live_files.was_listed(path)
            and not os.path.islink(path)
        ):
            return (
                None  # a live broker moved or removed it since the listing: reading it follows it
            )
        return files.os_error_message(path, e)
    kind = files.kind_of(st.st_mode)
    return None if kind is None else files.not_regular_message(kind)


def _file_property(suffix: str) -> property:
    """A Segment property: its file with this suffix, `<base offset><suffix>` in its directory."""

    def path(self: Segment) -> Path:
        return self.file(suffix)

    return property(path, doc=f"The segment's `{suffix}` file.")


@dataclass(eq=False)
class Segment:
    """One segment, after Kafka's LogSegment: every fact an operation needs about it is computed
    here, on demand and once (stat, index tails, the walk after the last index entry).

    `read_from` is where the `.log` bytes are now when that is not `log_path` (a `.swap` that
    recovery is about to rename). `is_active`: the partition's last segment, whose unindexed
    tail counts for its largest timestamp and next offset (an unclean shutdown leaves batches
    after the last index entry)."""

    directory: Path
    base_offset: int
    read_from: Path | None = None
    is_active: bool = False
    next_base_offset: int | None = None  # the next segment's base in the partition, if known
    recovered_on_load: bool = False  # the broker recovers it on load (no clean shutdown)
    listed: bool = False  # found by a listing: a live broker may move it (`live_files.followed`)
    _log: object = field(default=None, repr=False)
    _stat: os.stat_result | None = field(default=None, repr=False)
    _tail: LogTail | None = field(default=None, repr=False)
    _largest: tuple[int, bool] | None = field(default=None, repr=False)

    @classmethod
    def from_log_path(cls, path: Path | str) -> Segment:
        path = Path(path)
        base = offset_from_name(path.name)
        if base is None:
            raise InputError("file name is not a 20-digit offset followed by .log", path=str(path))
        return cls(path.parent, base)

    @classmethod
    def from_file(cls, path: Path | str) -> Segment:
        """A `.log`, or another file read as a log (a KRaft snapshot `.checkpoint`, whose name's
        20 digits are its end offset)."""
        path = Path(path)
        if path.name.endswith(LOG_SUFFIX):
            return cls.from_log_path(path)
        base = int(path.name[:20]) if path.name[:20].isdigit() else -1
        return cls(path.parent, base, read_from=path)

    def __getstate__(self):  # sent to Spark executors and worker processes: never the mapping
        state = dict(self.__dict__)
        state["_log"] = None
        return state

    @property
    def path(self) -> str:
        """The file read, as a string (what reports and Arrow rows name)."""
        return str(self.source_path)

    @property
    def is_log(self) -> bool:
        """A real segment (`.log`), not a file read as one (a KRaft snapshot)."""
        return self.read_from is None or self.read_from.name.endswith(LOG_SUFFIX + SWAP_SUFFIX)

    @property
    def topic_partition(self) -> TopicPartition | None:
        return parse_partition_dir(self.directory.name) if self.is_log else None

    @property
    def topic(self) -> str | None:
        tp = self.topic_partition
        return tp.topic if tp else None

    @property
    def partition(self) -> int | None:
        tp = self.topic_partition
        return tp.partition if tp else None

    @classmethod
    def with_log(cls, directory: Path, base_offset: int, log) -> Segment:
        """A segment over a .log its reader has already mapped (`map_file`), so the indexes are
        checked against the same bytes and the file is not mapped twice."""
        return cls(directory, base_offset, _log=log)

    # -- files
    def file(self, suffix: str) -> Path:
        return segment_file(self.directory, self.base_offset, suffix)

    log_path = _file_property(LOG_SUFFIX)
    index_path = _file_property(INDEX_SUFFIX)
    time_index_path = _file_property(TIME_INDEX_SUFFIX)
    txn_index_path = _file_property(TXN_INDEX_SUFFIX)

    @property
    def source_path(self) -> Path:
        """The file the `.log` bytes are read from."""
        return self.read_from if self.read_from is not None else self.log_path

    @property
    def log(self):
        if self._log is None:
            if self.listed:  # also in a worker process, whose own listing this was not
                live_files.listed([self.source_path])
            self._log = map_file(self.source_path)
        return self._log

    @contextlib.contextmanager
    def mapped(self):
        """The .log's bytes for the body; unmapped after, unless they were mapped before."""
        was_mapped = self._log is not None
        try:
            yield self.log
        finally:
            if not was_mapped:
                self.close()

    def close(self) -> None:
        log, self._log = self._log, None
        unmap(log)

    # -- LogSegment.size, lastModified
    def _name(self, suffix: str) -> str:
        # a str, not a Path: retention stats and reads index tails of many thousand segments
        return f"{self.directory}/{self.base_offset:020d}{suffix}"

    def stat(self) -> os.stat_result:
        if self._stat is None:
            path = self.read_from if self.read_from is not None else self._name(LOG_SUFFIX)
            try:
                self._stat = os.stat(path)
            except FileNotFoundError:
                if not self.listed and not live_files.was_listed(path):
                    raise
                live_files.listed([path])
                try:  # renamed or removed by a live broker since the listing
                    self._stat = os.stat(live_files.followed(path))
                except (live_files.RemovedByBroker, FileNotFoundError):
                    self._stat = os.stat_result((0,) * 10)
        return self._stat

    @property
    def size(self) -> int:
        return len(self.log) if self._log is not None else self.stat().st_size

    @property
    def mtime_ns(self) -> int:
        return self.stat().st_mtime_ns

    @property
    def last_modified_ms(self) -> int:
        """File.lastModified: whole milliseconds."""
        return self.stat().st_mtime_ns // 1_000_000

    def _open_fd(self, path) -> int | None:
        """os.open for reading; a listed file a live broker has moved since is followed, and one
        it removed is None (storage.live_files.followed)."""
        try:
            return files.open_fd(path)
        except files.MissingFile:
            if not self.listed and not live_files.was_listed(path):
                raise
        live_files.listed([path])
        try:
            return files.open_fd(live_files.followed(path))
        except (live_files.RemovedByBroker, files.MissingFile):
            return None

    def index_file_bytes(self, suffix: str, entry_size: int) -> int:
        """An index file's size in whole entries (LogCleaner's group sizing), 0 when absent."""
        try:
            n = os.stat(self.file(suffix)).st_size
        except FileNotFoundError:
            return 0
        return n - n % entry_size

    # -- batches
    def batches(
        self, start_position: int = 0, end_position: int | None = None
    ) -> Iterator[RecordBatch]:
        from kafkalog_cli.formats.records import iter_batches

        try:
            yield from iter_batches(self.log, start_position, end_position)
        except Exception as e:  # locate any format error in this file
            if hasattr(e, "located"):
                raise e.located(path=str(self.source_path))
            raise

    def headers(self) -> Iterator[BatchHeader]:
        """Every complete batch's header, read a header at a time with pread (no record is
        touched, nothing is mapped); stops at the first size that does not fit."""
        from kafkalog_cli.formats.records import RECORD_BATCH_OVERHEAD, RecordBatch

        size = self.size
        fd = self._open_fd(self.source_path)
        if fd is None:
            return
        try:
            pos = 0
            while pos + 17 < size:
                head = os.pread(fd, RECORD_BATCH_OVERHEAD, pos)
                off, n = _PREFIX.unpack_from(head)
                total = n + 12
                if n < 14 or pos + total > size:
                    return
                magic = head[16]
                if magic >= 2 and len(head) >= RECORD_BATCH_OVERHEAD:
                    _, delta, _, max_ts, *_ = _V2_TAIL.unpack_from(head, 21)
                    yield BatchHeader(pos, total, off, off + delta, max_ts)
                else:
                    b = RecordBatch(
                        os.pread(fd, total, pos), 0, total, magic if magic < 128 else magic - 256
                    )
                    yield BatchHeader(pos, total, b.base_offset, b.last_offset, b.max_timestamp)
                pos += total
        finally:
            os.close(fd)

    def first_batch_attributes(self) -> tuple[int, int] | None:
        """(max timestamp, compression id) of the first batch, from one pread of its header
        (the file's stat is kept for `size`); None when the .log has no whole batch header."""
        from kafkalog_cli.formats.records import RECORD_BATCH_OVERHEAD, RecordBatch

        # a str path: describe reads the first header of every segment of a log dir
        fd = self._open_fd(self.read_from if self.read_from is not None else self._name(LOG_SUFFIX))
        if fd is None:
            self._stat = os.stat_result((0,) * 10)
            return None
        try:
            self._stat = os.fstat(fd)
            head = os.pread(fd, RECORD_BATCH_OVERHEAD, 0)
        finally:
            os.close(fd)
        if len(head) < 17:
            return None
        n = _PREFIX.unpack_from(head)[1]
        magic = head[16]
        if n < 14 or 12 + n > self._stat.st_size or magic > 2:
            return None
        if magic == 2:
            if len(head) < RECORD_BATCH_OVERHEAD:
                return None
            attributes, _, _, max_ts, *_ = _V2_TAIL.unpack_from(head, 21)
            return max_ts, attributes & 0x07
        b = RecordBatch(head, 0, min(12 + n, len(head)), magic)
        return b.max_timestamp, b.compression_id

    def first_batch_timestamp(self) -> int | None:
        """The first batch's max timestamp (LogSegment.rollingBasedTimestamp), None when empty."""
        for h in self.headers():
            return h.max_timestamp
        return None

    # -- the tail: LogSegment.readNextOffset and the unindexed batches
    def last_offset_index_entry(self) -> tuple[int, int] | None:
        """(relative offset, position) of the offset index's last real entry."""
        return last_index_entry(self._name(INDEX_SUFFIX), _OFFSET_ENTRY, 0)

    def last_time_index_entry(self) -> tuple[int, int] | None:
        """(timestamp, relative offset) of the time index's last real entry."""
        return last_index_entry(self._name(TIME_INDEX_SUFFIX), _TIME_ENTRY, 1)

    def tail(self) -> LogTail:
        """`recovered_tail`, for the callers that act on the segment (retention, compaction):
        a batch that is not sound is raised (a CorruptRecordError naming the file and byte), as
        repairing it is recover's job; a torn end is not an error (the broker truncates it)."""
        tail = self.recovered_tail()
        if tail.corrupt_batch and tail.damage is not None:
            raise tail.damage
        return tail

    def recovered_tail(self) -> LogTail:
        """The batches after the last offset-index entry (from byte 0 when that entry does not
        point at a sound batch), walked by `recovery_walk`: the next offset (the log end offset
        for the active segment), their largest timestamp, the end of the valid batches, and the
        damage that ended the walk. Never raises on the .log's content: what the broker's
        recovery would leave."""
        if self._tail is None:
            with self.mapped():  # one mapping for the entry's check and the walk
                if self.recovered_on_load:
                    self._tail = self.recovery_walk(self._tail_start(), validate=True)
                else:
                    self._tail = self.unrecovered_tail(self.last_offset_index_entry())
        return self._tail

    def unrecovered_tail(self, entry: tuple[int, int] | None) -> LogTail:
        """The tail as a broker that loads the segment without recovering it (after a clean
        shutdown) reads it, LogSegment.readNextOffset exactly: from the offset index's last entry
        `entry` (relative offset, position; None: an empty index), the batches from the first
        whose last offset reaches the entry's offset. When no complete batch does (the entry points
        at a torn batch or past the file's end) the log ends at the base offset, whatever the file
        holds before it; that is the tail's `damage`, naming what the broker will not serve."""
        with self.mapped() as log:
            start = read_next_offset_position(log, self.base_offset, entry)
            if start is not None:
                return self.recovery_walk(start, validate=False)
            whole = self.recovery_walk(0, validate=False)
            if whole.next_offset == self.base_offset:
                return whole
            from kafkalog_cli.formats.indexes import OffsetIndexEntry, read_start
            from kafkalog_cli.storage.index_checks import never_written_entry
            from kafkalog_cli.storage.recovery import LogTail, StopReason

            off, pos = (self.base_offset + entry[0], entry[1]) if entry else (self.base_offset, 0)
            bad = (
                never_written_entry(OffsetIndexEntry(off, pos), self.base_offset) if entry else None
            )
            why = (
                f"the offset index's last entry (offset {off}, position {pos}) leads to no complete batch"
                + (f" ({bad.why})" if bad else "")
                + f": a broker that loads this segment without recovering it (after a clean shutdown) "
                f"takes its log end as the base offset {self.base_offset} and does not serve offsets "
                f"{self.base_offset}..{whole.next_offset - 1}; its next appends reuse them"
            )
            # a bad entry is the index's fault: name the index, else the .log where the entry points
            where = (
                dict(path=str(self.index_path))
                if bad
                else dict(path=str(self.source_path), position=read_start(pos, len(log)))
            )
            return LogTail(
                self.base_offset,
                -1,
                0,
                damage=CorruptRecordError(why, **where),
                stop=StopReason.NO_BATCH_AT_INDEX_ENTRY,
            )

    def _tail_start(self) -> int:
        entry = self.last_offset_index_entry()
        if entry is None or entry[1] == 0:
            return 0
        with self.mapped() as log:
            from kafkalog_cli.storage.index_checks import entry_batch_problem

            sound = entry_batch_problem(log, entry[1], self.base_offset + entry[0]) is None
        return entry[1] if sound else 0

    def read_next_offset(self) -> int:
        """LogSegment.readNextOffset, from the last index entry; never raises on a damaged tail:
        the offset after the last valid batch, where the broker's recovery truncates."""
        return self.recovered_tail().next_offset

    @property
    def empty(self) -> bool:
        return self.tail().next_offset == self.base_offset if self.is_active else self.size == 0

    # -- LogSegment.largestTimestamp (asked several times by retention: read once; not a
    #    cached_property, whose lock costs more than the lookup on Python 3.11)
    @property
    def largest_timestamp_and_source(self) -> tuple[int, bool]:
        """(largest_timestamp, largest_timestamp_from_mtime)."""
        if self._largest is None:
            entry = self.last_time_index_entry()
            ts = entry[0] if entry else -1
            if self.is_active:
                ts = max(ts, self.tail().max_timestamp)
            self._largest = (ts, False) if ts >= 0 else (self.last_modified_ms, True)
        return self._largest

    @property
    def largest_timestamp(self) -> int:
        """LogSegment.largestTimestamp: the time index's last entry (for the active segment also
        the batches after its last offset-index entry, which an unclean shutdown leaves
        unindexed), else the .log's mtime."""
        return self.largest_timestamp_and_source[0]

    @property
    def largest_timestamp_from_mtime(self) -> bool:
        return self.largest_timestamp_and_source[1]

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """LogSegment.maxTimestampAndOffsetSoFar: the time index's last entry, (-1, base offset)
        without one (TimeIndex.lastEntry); for the active segment also the batches after its last
        offset-index entry, which an unclean shutdown leaves unindexed and recovery indexes (the
        last offset of the first batch with that timestamp). A segment the broker recovers on
        load keeps only the entries below its last valid batch's end."""
        entry = self.last_time_index_entry()
        ts, offset = (entry[0], self.base_offset + entry[1]) if entry else (-1, self.base_offset)
        if self.is_active:
            tail = self.recovered_tail()
            if self.recovered_on_load and entry is not None and offset >= tail.next_offset:
                ts, offset = self._time_entry_below(tail.next_offset)
            if tail.max_timestamp > ts:
                ts, offset = tail.max_timestamp, tail.offset_of_max_timestamp
        return ts, offset

    def _time_entry_below(self, next_offset: int) -> tuple[int, int]:
        """The last time-index entry below `next_offset`, as (timestamp, offset); (-1, base)."""
        kept = [e for e in self.mapped_index_entries(TIME_INDEX_SUFFIX) if e.offset < next_offset]
        return (kept[-1].timestamp, kept[-1].offset) if kept else (-1, self.base_offset)

    # -- indexes
    def offset_index(self):
        """The offset index's entries, without preallocated zero slots."""
        from kafkalog_cli.formats.indexes import parse_offset_index

        return parse_offset_index(_read_or_empty(self.index_path), self.base_offset)

    def time_index(self):
        from kafkalog_cli.formats.indexes import parse_time_index

        return parse_time_index(_read_or_empty(self.time_index_path), self.base_offset)

    def aborted_txns(self):
        from kafkalog_cli.formats.txnindex import parse_txn_index

        return parse_txn_index(_read_or_empty(self.txn_index_path), path=str(self.txn_index_path))

    # -- seeking (OffsetIndex.lookup, TimeIndex.lookup)
    def position_for_offset(self, offset: int, warn: Callable[[str], None] | None = None) -> int:
        """Byte position of the first batch whose last offset is >= `offset` (OffsetIndex.lookup,
        then a forward scan), or the end of the log if there is none.

        The index is only a shortcut and is not trusted blindly: its entries must be in order and
        in range, and the entry used must point at the start of a sound batch that does not begin
        after the entry's offset. Otherwise the log is scanned from its first byte (and `warn`,
        if given, gets one line saying why), so a damaged index never hides records."""
        log = self.log
        for b in self.batches(self.offset_index_position(offset, warn)):
            if b.last_offset >= offset:
                return b.position
        return len(log)

    def offset_index_position(self, offset: int, warn: Callable[[str], None] | None = None) -> int:
        """OffsetIndex.lookup(offset).position: the position of the largest offset-index entry at
        or below `offset` (0 without one), where the broker starts reading for it; the index
        checked as position_for_offset checks it (0 when it cannot be used)."""
        log = self.log
        start = 0
        entry = None
        from kafkalog_cli.storage.index_checks import (
            entry_batch_problem,
            offset_entries_problem,
            usable_entries,
        )

        entries, why = usable_entries(
            self.offset_index, lambda es: offset_entries_problem(es, self.base_offset, len(log))
        )
        if why is None:
            lo, hi = 0, len(entries) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if entries[mid].offset <= offset:
                    entry = entries[mid]
                    lo = mid + 1
                else:
                    hi = mid - 1
            if entry is not None and entry.position > 0:
                why = entry_batch_problem(log, entry.position, entry.offset)
                if why is None:
                    start = entry.position
        return self._scan_start(start, why, self.index_path, warn)

    def position_for_timestamp(
        self, timestamp: int, warn: Callable[[str], None] | None = None
    ) -> int:
        """Byte position of the first batch that may hold a record with timestamp >= `timestamp`:
        the time index gives a lower bound, then batches are scanned by their max timestamp.

        A time-index entry is used only if the entries are in order and in range and the batch
        holding the entry's offset has the entry's timestamp as its max timestamp; otherwise the
        log is scanned from its first byte (and `warn` says why)."""
        entry = None
        from kafkalog_cli.storage.index_checks import time_entries_problem, usable_entries

        entries, why = usable_entries(
            self.time_index, lambda es: time_entries_problem(es, self.base_offset)
        )
        if why is None:
            for e in entries:
                if e.timestamp < timestamp:
                    entry = e
                else:
                    break
        start = 0
        if why is None and entry is not None:
            pos = self.position_for_offset(entry.offset, warn)
            b = next(self.batches(pos), None) if pos < len(self.log) else None
            if b is None or b.base_offset_field > entry.offset and b.magic >= 2:
                why = (
                    f"entry (timestamp {entry.timestamp}, offset {entry.offset}) "
                    "names an offset that is not in the log"
                )
            elif b.max_timestamp != entry.timestamp:
                why = (
                    f"entry (timestamp {entry.timestamp}, offset {entry.offset}) does not match the log "
                    f"(the batch at byte {b.position} has max timestamp {b.max_timestamp})"
                )
            else:
                start = pos
        for b in self.batches(self._scan_start(start, why, self.time_index_path, warn)):
            if b.max_timestamp >= timestamp:
                return b.position
        return len(self.log)

    def _scan_start(
        self, start: int, why: str | None, index: Path, warn: Callable[[str], None] | None
    ) -> int:
        """Where a seek scans the .log from: `start` (from its index entry) when the index could
        be used, else the first byte, after telling `warn` why."""
        if why is None:
            return start
        if warn is not None:
            warn(f"{index}: {why}; scanning {self.log_path.name} from its first byte instead")
        return 0

    # -- for ops.recover: LogLoader reads a segment whose offset index is not at index_path yet
    #    (a .index.swap about to be renamed) or not to be trusted (a .log.swap's own walk)
    def next_offset_after(self, entry: tuple[int, int] | None) -> int:
        """LogSegment.readNextOffset of a segment loaded without recovery, from `entry`, the last
        (relative offset, position) of an offset index the caller holds (None: none), as
        `unrecovered_tail`. Never raises on the .log's content, as read_next_offset."""
        return self.unrecovered_tail(entry).next_offset

    # -- closing the active segment (roll: LogSegment.shouldRoll, onBecomeInactiveSegment) needs
    # every batch from byte 0, not only the unindexed tail, and the indexes' entries without
    # reading a preallocated 10 MiB index whole.
    class Walk(NamedTuple):
        """Every batch from byte 0, as LogSegment.recover walks them."""

        valid_size: int  # where the complete batches end
        next_offset: int
        max_timestamp: int  # maxTimestampSoFar, -1 without a batch
        offset_of_max_timestamp: (
            int  # its batch's last offset (what recovery puts in the time index)
        )
        zeros_after: bool  # only zeros (or nothing) after the complete batches
        appended_offset_of_max_timestamp: int  # the offset LogSegment.append tracked for it

    def walk(self) -> Segment.Walk:
        """`recovery_walk` from byte 0. Raises the CorruptRecordError (naming the file and byte)
        of a batch that is not sound (a size below 14, an unknown magic, a CRC that does not
        match); bytes after the last complete batch are told by `zeros_after`."""
        with self.mapped():
            t = self.recovery_walk(0, validate=self.recovered_on_load)
            if t.corrupt_batch and t.damage is not None:
                raise t.damage
            appended = -1
            if t.max_timestamp >= 0:
                b = next(self.batches(t.position_of_max_timestamp))
                appended = appended_offset_of_max_timestamp(b)
            return Segment.Walk(
                t.valid_size,
                t.next_offset,
                t.max_timestamp,
                t.offset_of_max_timestamp,
                t.damage is None,
                appended,
            )

    def recovery_walk(self, start: int = 0, validate: bool = True) -> LogTail:
        """`storage.recovery.walk_tail` over this segment's .log from `start` (LogSegment.recover's
        rule without rebuilding anything; `validate` False: readNextOffset's, sizes only)."""
        from kafkalog_cli.storage.recovery import walk_tail

        with self.mapped() as buf:
            return walk_tail(buf, self.base_offset, str(self.source_path), start, validate)

    def mapped_index_entries(self, suffix: str) -> list:
        """The `.index` or `.timeindex` entries (INDEX_SUFFIX or TIME_INDEX_SUFFIX) through an
        mmap: parsing stops at the preallocated zeros, so only the pages holding entries are read.
        No file: no entry."""
        from kafkalog_cli.formats.indexes import parse_offset_index, parse_time_index

        path = self.file(suffix)
        if not os.path.lexists(path):
            return []
        parse = parse_time_index if suffix == TIME_INDEX_SUFFIX else parse_offset_index
        from kafkalog_cli.formats.indexes import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE

        size = TIME_ENTRY_SIZE if suffix == TIME_INDEX_SUFFIX else OFFSET_ENTRY_SIZE
        return parse(_entries_prefix(path, size), self.base_offset)


def _entries_prefix(path: Path | str, entry_size: int) -> bytes:
    """An index file's bytes up to the first chunk that ends in a zero slot (the preallocated
    tail, where parsing stops), read with pread 64 KiB at a time. Not an mmap: a live broker
    trims the active segment's preallocated index when it rolls (LogSegment.onBecomeInactiveSegment),
    and a mapping read past the new end is a SIGBUS. A file gone since is empty."""
    try:
        fd = files.open_fd(path)
    except files.MissingFile:
        return b""  # gone since it was listed
    out = bytearray()
    try:
        while True:
            chunk = os.pread(fd, 1 << 16, len(out))
            if not chunk:
                break
            out += chunk
            n = len(out) - len(out) % entry_size
            if n > entry_size and not any(out[n - entry_size : n]):
                del out[n:]  # whole entries, the zero slot last
                break
    finally:
        os.close(fd)
    return bytes(out)


def appended_offset_of_max_timestamp(batch: RecordBatch) -> int:
    """The offset a leader's LogSegment.append tracks with a batch's max timestamp (Kafka 3.3.1
    LogValidator's shallowOffsetOfMaxTimestamp): in an uncompressed CreateTime batch the first
    record holding the max; in a compressed one (validated in place or recompressed) and under
    LogAppendTime the batch's last offset. Recovery and a restart use the last offset instead."""
    from kafkalog_cli.formats.records import TimestampType

    if batch.compression_id == 0 and batch.timestamp_type == TimestampType.CREATE_TIME:
        for r in batch.records():
            if r.timestamp == batch.max_timestamp:
                return r.offset
    return batch.last_offset


_FIRST_PAGE = 4096


def _read_entry(fd: int, slot: int, entry: struct.Struct) -> tuple[int, int]:
    return entry.unpack(os.pread(fd, entry.size, slot * entry.size))


def last_index_entry(
    path: Path | str, entry: struct.Struct, rel_field: int
) -> tuple[int, int] | None:
    """The last real entry of an index file, as raw fields, reading only a few slots.

    A preallocated index (the active segment's, or any after an unclean shutdown) ends in zero
    slots; a real entry at slot i > 0 never has relative offset 0 (offsets increase), so the first
    padding slot is found by bisection. An all-zero file has no entry."""
    try:
        fd = files.open_fd(path)
    except files.MissingFile:
        return None
    try:
        slots = os.fstat(fd).st_size // entry.size
        if slots == 0:
            return None
        last = _read_entry(fd, slots - 1, entry)
        if last[rel_field] != 0 or slots == 1:
            return last
        lo, hi = 1, slots - 1  # slot hi is padding; find the first padding slot
        # most preallocated indexes hold few entries: when the first page ends in padding, the
        # bisection runs in it, one read instead of twenty
        page = os.pread(fd, min(hi, _FIRST_PAGE // entry.size) * entry.size, 0)
        n = len(page) // entry.size
        if n > 1 and entry.unpack_from(page, (n - 1) * entry.size)[rel_field] == 0:
            hi = n - 1
            read = lambda i: entry.unpack_from(page, i * entry.size)  # noqa: E731
        else:
            lo = max(lo, n)
            read = lambda i: _read_entry(fd, i, entry)  # noqa: E731
        while lo < hi:
            mid = (lo + hi) // 2
            if read(mid)[rel_field] == 0:
                hi = mid
            else:
                lo = mid + 1
        found = _read_entry(fd, lo - 1, entry)
        if lo == 1 and found == (0, 0):
            return None  # nothing but preallocated zeros
        return found
    finally:
        os.close(fd)


def _read_or_empty(path: Path) -> bytes:
    """An index's bytes, or b'' when there is no such file (a FIFO there is an InputError)."""
    if not os.path.lexists(path):
        return b""
    return read_file(path)


def read_next_offset_position(log, base_offset: int, entry: tuple[int, int] | None) -> int | None:
    """Where LogSegment.readNextOffset starts reading (Kafka 3.3.1: read(offsetIndex.lastOffset,
    log.sizeInBytes) -> translateOffset -> FileRecords.searchForOffsetWithSize): the first
    complete batch, walking the headers from the index's last entry, whose last offset is at
    least that entry's offset; None when there is none (the read returns null and the log end is
    the base offset). FileLogInputStream.nextBatch checks sizes only: no CRC, no magic. A size
    below 14 stops the walk here (the broker fails to start on it: recover's load_failure)."""
    from kafkalog_cli.formats.indexes import read_start

    n = len(log)
    target, pos = (base_offset + entry[0], read_start(entry[1], n)) if entry else (base_offset, 0)
    while pos + 17 < n:
        size = int.from_bytes(log[pos + 8 : pos + 12], "big", signed=True)
        if size < 14 or pos > n - 12 - size:
            return None
        magic = log[pos + 16]
        if (
            magic >= 2 and magic < 0x80
        ):  # DefaultFileChannelRecordBatch: baseOffset + lastOffsetDelta
            last = (
                (
                    int.from_bytes(log[pos : pos + 8], "big", signed=True)
                    + int.from_bytes(log[pos + 23 : pos + 27], "big", signed=True)
                )
                if size >= 15
                else -1
            )
        else:  # a legacy wrapper: its own offset
            last = int.from_bytes(log[pos : pos + 8], "big", signed=True)
        if last >= target:
            return pos
        pos += 12 + size
    return None
