"""Kafka's Cleaner (LogCleaner.scala `Cleaner`, MemoryRecords.filterTo), offline: the offset map
over the dirty section, then every group of segments up to the map's end copied into one
`.cleaned` segment with Kafka's record and batch retention rules
(Cleaner.cleanInto, shouldRetainRecord, shouldDiscardBatch).

Speed. A record that survives in the dirty section is, by construction, the one whose offset the
map holds for its key; so a data batch of the dirty section that holds none of the map's offsets
(a bisect over the sorted offsets) loses all its records, and is dropped or emptied without being
decoded or even decompressed. Only batches holding a survivor, and the clean section, are read
record by record. The map pass stores keys straight into the offset map's dict while it surely
has room (formats.record_keys.scan_keys_into), and is split across byte ranges in worker processes when
the section has fewer records than the map's capacity (so no key can be refused and the merge is
exact) and cores are left over by --jobs (ops.compact.for_each_partition: a partition cleaned
alone); on one 256 MiB partition and 2 cores that is ~1.4x faster than one process.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kafkalog_cli.errors import CorruptRecordError, InputError, InvalidRecordError, KafkalogError
from kafkalog_cli.formats.compression import compress
from kafkalog_cli.formats.indexes import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE, IndexBuilder
from kafkalog_cli.formats.record_keys import scan_keys, scan_keys_into
from kafkalog_cli.formats.record_spans import RecordSpan, record_starts, scan_spans, span_at
from kafkalog_cli.formats.records import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    RECORD_BATCH_OVERHEAD,
    Record,
    RecordBatch,
    SimpleRecord,
    TimestampType,
    build_legacy_batch,
    empty_v2_batch,
    iter_batches,
    set_v2_crc,
)
from kafkalog_cli.formats.txnindex import AbortedTxn, encode_txn_index
from kafkalog_cli.formats.v2_region import Declined, records_region
from kafkalog_cli.formats.varint import write_varint, write_varlong
from kafkalog_cli.ops.cleaner_txn import CleanedTransactionMetadata
from kafkalog_cli.ops.offset_map import OffsetMap
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.names import segment_file
from kafkalog_cli.storage.segment import Segment

IO_BUFFER = 262144  # log.cleaner.io.buffer.size 524288 / 1 thread / 2: Kafka's read chunk
MAX_IO_BUFFER = 1048588  # message.max.bytes: how far the cleaner grows its buffers
MAP_READ_CHUNK = 8 << 20  # the map pass's reads (any size gives the same map)
_PREFIX = struct.Struct(">qi")
_V2_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount


# ------------------------------------------------------------------------------ segments
def segments_overlapping(segments: list[Segment], start: int, end: int) -> list[Segment]:
    """UnifiedLog.logSegments(from, to): segments holding offsets in [start, end)."""
    out = []
    for i, s in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if s.base_offset < end and (nxt is None or nxt > start):
            out.append(s)
    return out


def collect_aborted_transactions(
    segments: list[Segment], start: int, upper: int
) -> list[AbortedTxn]:
    """UnifiedLog.collectAbortedTransactions: from the floor segment of `start` on, entries with
    lastOffset >= start and firstOffset < upper, until one has lastStableOffset >= upper."""
    bases = [s.base_offset for s in segments]
    i = max(bisect.bisect_right(bases, start) - 1, 0)
    out = []
    for s in segments[i:]:
        for t in s.aborted_txns():
            if t.last_offset >= start and t.first_offset < upper:
                out.append(t)
            if t.last_stable_offset >= upper:
                return out
    return out


# ------------------------------------------------------------------------------ reading
def iter_chunk_batches(
    path: Path, start: int, end: int, chunk: int
) -> Iterator[tuple[bytes, list[RecordBatch]]]:
    """Complete batches of [start, end), read `chunk` bytes at a time as Kafka's readBuffer.
    A read failure is an InputError naming the file (it must not pass for a failure to write
    the `.cleaned` file that the batches are streamed to)."""
    try:
        with files.opened(path) as f:
            pos = start
            while pos < end:
                f.seek(pos)
                buf = f.read(min(chunk, end - pos))
                batches = _complete(buf, path, pos)
                if not batches:
                    need = _batch_size_at(buf, 0, len(buf))
                    if pos + need > end or need <= len(buf):  # cut short, or no batch
                        raise _cut_short(need, path, pos, end)
                    chunk = max(need, min(chunk * 2, MAX_IO_BUFFER))
                    continue
                yield buf, batches
                last = batches[-1]
                pos += last.position + last.size
    except OSError as e:
        raise InputError(e.strerror or str(e), path=str(e.filename or path)) from None


def mapped_batches(
    buf, path: Path, start: int = 0, end: int | None = None
) -> Iterator[RecordBatch]:
    """The batches iter_chunk_batches reads from [start, end) of a file, over the file's map
    (storage.live_files.map_file: no copy), with its errors: bytes left after the last complete
    batch are a batch cut short, corrupt input."""
    if end is None:
        end = len(buf)
    pos = start
    try:
        for b in iter_batches(buf, start, end):
            yield b
            pos = b.position + b.size
    except KafkalogError as e:
        raise e.located(path=str(path)) from None
    if pos < end:
        raise _cut_short(_batch_size_at(buf, pos, end), path, pos, end)


def _batch_size_at(buf, pos: int, end: int) -> int:
    """The size of the batch at `pos` from its length field; 0 when fewer than 12 bytes are left."""
    return _PREFIX.unpack_from(buf, pos)[1] + 12 if end - pos >= 12 else 0


def _cut_short(need: int, path: Path, pos: int, end: int) -> CorruptRecordError:
    """The bytes at `pos`, the last of the file's range, make no complete batch."""
    left = end - pos
    what = (
        f"batch size {need} > {left} bytes left in segment"
        if need > left
        else f"{left} bytes left in segment, too few for a batch"
    )
    return CorruptRecordError(f"log segment may be corrupt: {what}", path=str(path), position=pos)


def _complete(buf: bytes, path: Path, base_pos: int) -> list[RecordBatch]:
    try:
        return list(iter_batches(buf))
    except KafkalogError as e:
        raise e.located(path=str(path), position=base_pos + (e.position or 0)) from None


def _located(e: KafkalogError, path: Path, chunk_pos: int, batch: RecordBatch) -> KafkalogError:
    e.path = str(path)
    e.position = chunk_pos + batch.position
    return e


def _decode_error(batch: RecordBatch, path: Path, chunk_pos: int) -> KafkalogError:
    """The located error for a batch our fast scan rejected."""
    try:
        batch.records()
    except KafkalogError as e:
        return _located(e, path, chunk_pos, batch)
    return InvalidRecordError(
        "invalid record structure", path=str(path), position=chunk_pos + batch.position
    )


# ------------------------------------------------------------------------------ the offset map
@dataclass
class MapStats:
    records_read: int = 0
    bytes_read: int = 0


def map_segment_range(
    m: OffsetMap,
    path: Path,
    start_pos: int,
    end_pos: int,
    start_offset: int,
    txn: CleanedTransactionMetadata,
    stats: MapStats,
) -> bool:
    """Cleaner.buildOffsetMapForSegment over [start_pos, end_pos) of one .log; True when full."""
    for buf, batches in iter_chunk_batches(path, start_pos, end_pos, MAP_READ_CHUNK):
        chunk_pos = start_pos
        for b in batches:
            if b.is_control:
                try:
                    txn.on_control_batch_read(b)
                except KafkalogError as e:
                    raise _located(e, path, chunk_pos, b) from None
                stats.records_read += 1
            elif not txn.on_batch_read(b):
                d = m.dict_for(b.records_count) if b.magic >= 2 else None
                if d is not None:  # the common case: straight into the dict
                    before = len(d)
                    try:
                        data, s, end = records_region(b)
                        n, kl = scan_keys_into(
                            data, s, end, b.records_count, b.base_offset_field, d, start_offset
                        )
                    except (Declined, KafkalogError):
                        raise _decode_error(b, path, chunk_pos) from None
                    m.added(len(d) - before, max(kl, 0))
                    stats.records_read += n
                else:  # near the map's capacity: key by key, it may fill up
                    keys: list = []
                    offs: list = []
                    _batch_keys(b, keys, offs, path, chunk_pos)
                    if b.base_offset < start_offset:
                        kept = [(k, o) for k, o in zip(keys, offs) if o >= start_offset]
                        keys, offs = [k for k, _ in kept], [o for _, o in kept]
                    if m.put_all(keys, offs) < len(keys):
                        return True
                    stats.records_read += len(keys)
            if b.last_offset >= start_offset:
                m.update_latest_offset(b.last_offset)
        last = batches[-1]
        stats.bytes_read += last.position + last.size
        start_pos += last.position + last.size
    return False


def _batch_keys(b: RecordBatch, keys: list, offs: list, path: Path, chunk_pos: int) -> None:
    if b.magic >= 2:
        try:
            data, s, e = records_region(b)
            scan_keys(data, s, e, b.records_count, b.base_offset_field, keys, offs)
            return
        except (Declined, KafkalogError):
            raise _decode_error(b, path, chunk_pos) from None
    try:
        recs = b.records()
    except KafkalogError as e:
        raise _located(e, path, chunk_pos, b) from None
    for r in recs:
        if r.key is not None:
            keys.append(r.key)
            offs.append(r.offset)


def _map_worker(args) -> tuple[dict[bytes, int], int, int, int]:
    """One byte range of the dirty section, in a worker process (no capacity limit: the caller
    checked that the whole section has fewer records than the map holds)."""
    path, start_pos, end_pos, start_offset, first_offset, txns = args
    m = OffsetMap(1 << 40)
    txn = CleanedTransactionMetadata()
    txn.start_at(first_offset, txns)
    stats = MapStats()
    map_segment_range(m, Path(path), start_pos, end_pos, start_offset, txn, stats)
    d = m.as_dict()
    assert d is not None  # a map of 1 TiB keeps the dict layout
    return d, m.latest_offset, stats.records_read, stats.bytes_read


def build_offset_map(
    m: OffsetMap,
    dirty: list[tuple[Segment, int]],
    start: int,
    end: int,
    txns: list[AbortedTxn],
    jobs: int = 1,
) -> MapStats:
    """Cleaner.buildOffsetMap over the dirty segments [(segment, next segment's base)]."""
    stats = MapStats()
    ranges = _split_for_workers(dirty, start, m.capacity, jobs)
    if ranges is not None:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(len(ranges)) as pool:
            results = pool.map(
                _map_worker, [(str(p), s, e, start, fo, txns) for p, s, e, fo in ranges]
            )
        for d, latest, n, nbytes in results:
            m.merge(d)
            stats.records_read += n
            stats.bytes_read += nbytes
        m.update_latest_offset(end - 1)
        return stats
    txn = CleanedTransactionMetadata()
    txn.add_aborted_transactions(txns)
    for i, (seg, next_base) in enumerate(dirty):
        pos = _start_position(seg, start) if i == 0 else 0
        if map_segment_range(m, seg.source_path, pos, seg.size, start, txn, stats):
            return stats
        m.update_latest_offset(next_base - 1)  # offset gaps: fast forward
    return stats


def _start_position(seg: Segment, start: int) -> int:
    """Where the first batch holding `start` or later begins (the map never needs earlier ones)."""
    if start <= seg.base_offset:
        return 0
    for pos, _size_, _b, last, _ts in seg.headers():
        if last >= start:
            return pos
    return seg.size


def _split_for_workers(dirty, start: int, capacity: int, jobs: int):
    """Byte ranges of about equal size at batch boundaries, or None for one sequential pass."""
    if jobs <= 1 or not dirty:
        return None
    heads = []  # (segment, position, size, base offset, record count upper bound)
    total_records = 0
    for i, (seg, _next) in enumerate(dirty):
        first = _start_position(seg, start) if i == 0 else 0
        for pos, size, base, last, _ts in seg.headers():
            if pos < first:
                continue
            heads.append((seg, pos, size, base))
            total_records += last - base + 1
    total = sum(h[2] for h in heads)
    if total_records > capacity or total < (8 << 20):
        return None  # the map could fill up (exact order matters), or too small to pay
    per = total / jobs
    ranges: list[tuple] = []
    acc = 0
    cur: list | None = None
    for seg, pos, size, base in heads:
        if (
            cur is None
            or cur[0] is not seg
            or (acc >= per * len(ranges) + per and len(ranges) < jobs - 1)
        ):
            if cur is not None:
                ranges.append(tuple(cur))
            cur = [seg, pos, pos + size, base]
        else:
            cur[2] = pos + size
        acc += size
    assert cur is not None  # heads is not empty (else total is 0, returned above)
    ranges.append(tuple(cur))
    return [(seg.source_path, s, e, fo) for seg, s, e, fo in ranges]


# ------------------------------------------------------------------------------ cleaning
@dataclass
class CleanerStats:
    """Kafka's CleanerStats, as far as the report needs them (its bytes read are the segments' sizes)."""

    messages_read: int = 0
    messages_written: int = 0
    bytes_written: int = 0
    invalid_messages: int = 0


@dataclass
class LastRecord:
    """UnifiedLog.lastRecordsOfActiveProducers: a producer's last data offset (or None) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass
class CleanContext:
    map: OffsetMap
    survivors: list[int]  # the map's offsets, sorted
    first_dirty: int
    now_ms: int
    delete_retention_ms: int
    active_producers: dict[int, LastRecord]
    txn: CleanedTransactionMetadata
    stats: CleanerStats = field(default_factory=CleanerStats)
    # KAFKA-17076 (4.0+, Cleaner.cleanInto): the round's upper bound (firstUncleanableOffset); the
    # batch ending just below it is retained, empty if need be, so the log end offset survives.
    # None: the 3.x rule (only an active producer's last batch is retained empty)
    upper_bound_offset: int | None = None


class CleanedSegment:
    """The `.cleaned` destination: LogSegment.append per chunk (index entries as the cleaner's
    appends make them), then onBecomeInactiveSegment. Appends only count (--dry-run) unless they
    run inside `write`, which streams them to `<base>.log.cleaned`."""

    def __init__(self, directory: Path, base: int, index_interval_bytes: int, max_index_bytes: int):
        self.directory, self.base = directory, base
        self.size = 0
        self.index = IndexBuilder(
            base,
            index_interval_bytes,
            max_index_bytes // OFFSET_ENTRY_SIZE,
            max_index_bytes // TIME_ENTRY_SIZE,
        )
        self.aborted: list[AbortedTxn] = []
        self._f: BinaryIO | None = None

    def path(self, suffix: str) -> Path:
        return segment_file(self.directory, self.base, suffix + names.CLEANED_SUFFIX)

    def append(
        self,
        data: bytes | memoryview,
        largest_offset: int,
        largest_ts: int,
        shallow_offset_of_max_ts: int,
    ) -> None:
        self.index.on_append(
            self.size, len(data), largest_offset, largest_ts, shallow_offset_of_max_ts
        )
        if self._f is not None:
            self._f.write(data)
        self.size += len(data)

    def finish(self) -> None:
        """onBecomeInactiveSegment: the time index's closing entry."""
        self.index.finish()

    def index_files(self) -> list[tuple[str, bytes]]:
        """(suffix, bytes) of the indexes; a .txnindex only when a retained ABORT marker has an entry."""
        out = [
            (names.INDEX_SUFFIX, self.index.offset_index_bytes()),
            (names.TIME_INDEX_SUFFIX, self.index.time_index_bytes()),
        ]
        if self.aborted:
            out.append((names.TXN_INDEX_SUFFIX, encode_txn_index(self.aborted)))
        return out

    def write(self, fsops: FsOps, fill: Callable[[], None], mtime_ns: int) -> list[Path]:
        """The `.cleaned` files through fsops, one step each: the log streamed while `fill()`
        appends, then its indexes, then the source's mtime on the log and its two indexes
        (LogSegment.lastModified_). Returns the files, log first.

        An error leaves the directory as it was. Each file is created inside the previous one's
        `create`, so an error in any of them passes through, and removes, those before it; a file
        complete before a later step failed (its fsync, an mtime) is moved out through fsops. A
        crash leaves them all: nothing refers to a `.cleaned` file, and LogLoader deletes them."""
        files = [self.path(names.LOG_SUFFIX)]
        try:
            with contextlib.ExitStack() as stack:
                self._f = stack.enter_context(fsops.create(files[0]))
                fill()
                self.finish()
                for suffix, data in self.index_files():
                    files.append(self.path(suffix))
                    stack.enter_context(fsops.create(files[-1])).write(data)
            self._f = None
            for p in files[:3]:
                fsops.set_mtime(p, mtime_ns)
        except KafkalogError:
            self._f = None
            for p in files:
                if os.path.lexists(p):
                    with contextlib.suppress(KafkalogError):
                        fsops.delete(p, "an incomplete cleaned segment, after a write error")
            raise
        return files


@dataclass
class FilterResult:
    """MemoryRecords.FilterResult of one chunk: what its index entries are made of."""

    max_offset: int = -1
    max_timestamp: int = -1
    shallow_offset_of_max_ts: int = -1
    originals: int = 0  # batches written as they were (writeOriginalBatch)

    def update(self, max_ts: int, shallow: int, max_offset: int) -> None:
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.shallow_offset_of_max_ts = shallow
        if max_offset > self.max_offset:
            self.max_offset = max_offset


def clean_into(
    seg: Segment, dest: CleanedSegment, ctx: CleanContext, retain_legacy_deletes: bool
) -> None:
    """Cleaner.cleanInto: one source segment, chunk by chunk, into `dest`."""
    ctx.stats.bytes_written += filter_segment_into(
        seg,
        dest,
        lambda b, res, path, pos: _filter_batch(b, ctx, retain_legacy_deletes, res, path, pos),
    )


# a batch as written: new bytes, or a view of the chunk read (original_batch)
Piece = bytes | memoryview
# (batch, the chunk's FilterResult, the segment's path, the chunk's position) -> what is written
BatchFilter = Callable[[RecordBatch, "FilterResult", Path, int], "Piece | None"]


def filter_segment_into(seg: Segment, dest: CleanedSegment, filter_batch: BatchFilter) -> int:
    """MemoryRecords.filterTo over one source segment, read chunk by chunk as Cleaner.cleanInto
    reads it: each batch through `filter_batch`, each chunk's output one append to `dest` (its
    index entries as the cleaner's appends make them). A batch's error is located in the
    segment. Returns the bytes written."""
    path = seg.source_path
    pos = 0
    written = 0
    for buf, batches in iter_chunk_batches(path, 0, seg.size, IO_BUFFER):
        out: list[Piece] = []
        res = FilterResult()
        for b in batches:
            try:
                piece = filter_batch(b, res, path, pos)
            except KafkalogError as e:
                raise _located(e, path, pos, b) if e.path is None else e from None
            if piece:
                out.append(piece)
        last = batches[-1]
        pos += last.position + last.size
        if out:
            data: Piece
            if res.originals == len(batches):  # the chunk as it was read: written, not copied
                data = memoryview(buf)[batches[0].position : last.position + last.size]
            else:
                data = b"".join(out)
            written += len(data)
            dest.append(data, res.max_offset, res.max_timestamp, res.shallow_offset_of_max_ts)
    return written


def _is_last_of_producer(b: RecordBatch, ctx: CleanContext) -> bool:
    last = ctx.active_producers.get(b.producer_id)
    if last is None:
        return False
    if last.last_data_offset is not None:
        return b.last_offset == last.last_data_offset
    return b.is_control and b.producer_epoch == last.producer_epoch


def _filter_batch(
    b: RecordBatch,
    ctx: CleanContext,
    retain_legacy: bool,
    res: FilterResult,
    path: Path,
    chunk_pos: int,
) -> Piece | None:
    """checkBatchRetention + filterBatch + the rewrite of MemoryRecords.filterTo for one batch."""
    is_control = b.is_control
    can_discard = ctx.txn.on_control_batch_read(b) if is_control else ctx.txn.on_batch_read(b)
    if is_control:
        discard_records = can_discard and b.has_delete_horizon and b.base_timestamp <= ctx.now_ms
    else:
        discard_records = can_discard
    # RETAIN_EMPTY for an active producer's last batch, and (4.0+, KAFKA-17076) for the batch
    # whose next offset is the round's upper bound
    retain_empty = (b.producer_id >= 0 and _is_last_of_producer(b, ctx)) or (
        ctx.upper_bound_offset is not None and b.last_offset + 1 == ctx.upper_bound_offset
    )
    if not retain_empty and discard_records:
        return None  # BatchRetention.DELETE
    marker_for_empty_txn = can_discard and is_control
    if b.magic < 2:
        return _filter_legacy(b, ctx, retain_legacy, res)
    count = b.records_count
    ctx.stats.messages_read += count
    survivors = None if is_control or discard_records else _survivors_in(b, ctx)
    if discard_records or survivors == []:
        retained = None
    elif survivors is not None and b.last_offset_delta + 1 == count:
        retained = _retained_by_survivors(b, ctx, survivors, path, chunk_pos)
    else:
        retained = _retained_spans(b, ctx, is_control, path, chunk_pos)
    if retained:
        return _write_retained(b, retained, count, marker_for_empty_txn, ctx, res)
    if retain_empty:
        return retained_empty(b, res)
    return None


def retained_empty(b: RecordBatch, res: FilterResult) -> bytes:
    """BatchRetention.RETAIN_EMPTY with no record left: the batch's header alone (its base and
    last offsets, producer id, epoch, base sequence, leader epoch and max timestamp kept), so the
    producer state and the log end offset it carries survive."""
    res.update(b.max_timestamp, b.last_offset, b.last_offset)
    return empty_v2_batch(
        b.base_offset_field,
        b.last_offset_delta,
        max_timestamp=b.max_timestamp,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
        is_transactional=b.is_transactional,
        is_control=b.is_control,
        partition_leader_epoch=b.partition_leader_epoch,
        timestamp_type=b.timestamp_type,
    )


def _survivors_in(b: RecordBatch, ctx: CleanContext) -> list[int] | None:
    """For a data batch wholly in the dirty section and at or below the map's latest offset: the
    offsets the map holds within it, the only records that can be retained. None otherwise."""
    if b.base_offset_field < ctx.first_dirty or b.last_offset > ctx.map.latest_offset:
        return None
    s = ctx.survivors
    return s[bisect.bisect_left(s, b.base_offset_field) : bisect.bisect_right(s, b.last_offset)]


def _retained_by_survivors(
    b: RecordBatch, ctx: CleanContext, survivors: list[int], path: Path, chunk_pos: int
):
    """A batch with consecutive offsets (count = lastOffsetDelta + 1, as producers write them):
    record i has offset base + i, so only the survivors' records are decoded. Each is checked
    (its offset and its key's map entry); any mismatch falls back to reading every record."""
    base = b.base_offset_field
    try:
        data, s, e = records_region(b)
        starts = record_starts(data, s, e, survivors[-1] - base)
        spans = [span_at(data, starts[o - base], base, b.base_timestamp) for o in survivors]
    except (Declined, KafkalogError):
        raise _decode_error(b, path, chunk_pos) from None
    d = ctx.map.as_dict()
    get = ctx.map.get if d is None else d.get
    if any(sp.offset != o or sp.key is None or get(sp.key) != o for sp, o in zip(spans, survivors)):
        return _retained_spans(b, ctx, False, path, chunk_pos)
    if b.attributes & ATTR_TIMESTAMP_TYPE:
        for sp in spans:
            sp.timestamp = b.max_timestamp
    horizon_ok = not b.has_delete_horizon or ctx.now_ms < b.base_timestamp
    kept = [sp for sp in spans if sp.has_value or horizon_ok]
    tombstones = any(not sp.has_value for sp in kept)
    return (kept, data, tombstones) if kept else None


def _retained_spans(
    b: RecordBatch, ctx: CleanContext, is_control: bool, path: Path, chunk_pos: int
):
    """(spans, data, contains tombstones) of the records Cleaner.shouldRetainRecord keeps."""
    try:
        data, s, e = records_region(b)
        lat = b.max_timestamp if b.attributes & ATTR_TIMESTAMP_TYPE else None
        spans = scan_spans(data, s, e, b.records_count, b.base_offset_field, b.base_timestamp)
    except (Declined, KafkalogError):
        raise _decode_error(b, path, chunk_pos) from None
    if lat is not None:
        for sp in spans:
            sp.timestamp = lat
    if is_control:  # an empty one was already cleaned: retained only as RETAIN_EMPTY
        return (spans, data, False) if spans else None
    latest = ctx.map.latest_offset
    mget = ctx.map.as_dict()
    get = mget.get if mget is not None else None
    horizon_ok = not b.has_delete_horizon or ctx.now_ms < b.base_timestamp
    kept = []
    tombstones = False
    for sp in spans:
        if sp.offset > latest:
            ok = True
        elif sp.key is None:
            ctx.stats.invalid_messages += 1
            ok = False
        else:
            found = get(sp.key, -1) if get is not None else ctx.map.get(sp.key)
            ok = sp.offset >= found and (sp.has_value or horizon_ok)
        if ok:
            kept.append(sp)
            if not sp.has_value:
                tombstones = True
    return (kept, data, tombstones) if kept else None


def _write_retained(
    b: RecordBatch,
    retained,
    count: int,
    marker_for_empty_txn: bool,
    ctx: CleanContext,
    res: FilterResult,
) -> Piece:
    spans, data, tombstones = retained
    ctx.stats.messages_written += len(spans)
    need_horizon = (tombstones or marker_for_empty_txn) and not b.has_delete_horizon
    new_horizon = ctx.now_ms + ctx.delete_retention_ms if need_horizon else None
    return write_retained(b, spans, data, count, res, new_horizon)


def original_batch(b: RecordBatch, res: FilterResult) -> memoryview:
    """filterTo's writeOriginalBatch: the batch's bytes as they are (a view of the chunk read)."""
    res.update(b.max_timestamp, b.last_offset, b.last_offset)
    res.originals += 1
    return b.data


def write_retained(
    b: RecordBatch,
    spans: list[RecordSpan],
    data,
    count: int,
    res: FilterResult,
    new_horizon: int | None = None,
) -> Piece:
    """MemoryRecords.filterTo's write of a v2 batch's retained records (`spans` of its records
    region `data`, in offset order): the original batch when all `count` are kept and no delete
    horizon is to be set (writeOriginalBatch), else a batch built as buildRetainedRecordsInto
    builds it: the same base offset, last offset delta, producer id and epoch, base sequence,
    partition leader epoch, codec and attributes; the base timestamp the delete horizon
    (`new_horizon`, or the batch's own) or the first record's; the max timestamp the records'
    (LOG_APPEND_TIME: the batch's)."""
    if len(spans) == count and new_horizon is None:
        return original_batch(b, res)
    horizon: int | None
    if new_horizon is not None:
        horizon = new_horizon
    else:
        horizon = b.base_timestamp if b.has_delete_horizon else None
    base_ts = horizon if horizon is not None else spans[0].timestamp
    body: bytes | bytearray = bytearray()
    for sp in spans:  # attributes 0, the new timestamp delta, the rest of the record verbatim
        rec = b"\x00" + write_varlong(sp.timestamp - base_ts) + data[sp.rest_start : sp.end]
        body += write_varint(len(rec))
        body += rec
    lat = bool(b.attributes & ATTR_TIMESTAMP_TYPE)
    max_ts = b.max_timestamp if lat else max(sp.timestamp for sp in spans)
    if b.compression_id:
        body = compress(b.compression_id, bytes(body), 2)
    attrs = b.compression_id | (
        b.attributes & (ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL)
    )
    if horizon is not None:
        attrs |= ATTR_DELETE_HORIZON
    head = struct.pack(
        ">qiibI",
        b.base_offset_field,
        RECORD_BATCH_OVERHEAD - 12 + len(body),
        b.partition_leader_epoch,
        2,
        0,
    )
    tail = _V2_TAIL.pack(
        attrs,
        b.last_offset_delta,
        base_ts,
        max_ts,
        b.producer_id,
        b.producer_epoch,
        b.base_sequence,
        len(spans),
    )
    out = set_v2_crc(bytearray(head + tail + bytes(body)))
    # MemoryRecordsBuilder.info for v2: shallow offset = the (overridden) last offset
    res.update(max_ts, b.last_offset, spans[-1].offset)
    return out


def _filter_legacy(
    b: RecordBatch, ctx: CleanContext, retain_legacy: bool, res: FilterResult
) -> Piece | None:
    recs = b.records()
    ctx.stats.messages_read += len(recs)
    latest = ctx.map.latest_offset
    kept = []
    for r in recs:
        if r.offset > latest:
            kept.append(r)
        elif r.key is None:
            ctx.stats.invalid_messages += 1
        elif r.offset >= ctx.map.get(r.key) and (r.value is not None or retain_legacy):
            kept.append(r)
    if not kept:
        return None
    ctx.stats.messages_written += len(kept)
    return write_legacy(b, kept, len(recs), res)


def write_legacy(
    b: RecordBatch, kept: list[Record], count: int, res: FilterResult, rewrite: bool = False
) -> Piece:
    """filterTo for a v0/v1 message or wrapper: the original when all `count` records are kept
    (and of its magic) and not `rewrite`, else the `kept` ones (not empty) in a new wrapper of
    the same magic, codec and timestamp type, at their offsets."""
    if not rewrite and len(kept) == count and all(r.magic == b.magic for r in kept):
        return original_batch(b, res)
    lat = b.timestamp_type == TimestampType.LOG_APPEND_TIME
    out = build_legacy_batch(
        [SimpleRecord(r.key, r.value, r.timestamp, (), r.offset) for r in kept],
        kept[0].offset,
        magic=b.magic,
        compression=b.compression,
        timestamp_type=b.timestamp_type,
        log_append_time=b.max_timestamp if lat else None,
    )
    if lat:
        max_ts = b.max_timestamp
    else:
        max_ts = max(r.timestamp for r in kept)
    shallow = kept[-1].offset if b.compression_id else max(kept, key=lambda r: r.timestamp).offset
    res.update(max_ts, shallow, kept[-1].offset)
    return out


# ------------------------------------------------------------------------------ grouping
def group_segments_by_size(
    segments: list[Segment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[Segment]]:
    """Cleaner.groupSegmentsBySize."""
    groups = []
    segs = [
        (
            s,
            s.size,
            s.index_file_bytes(names.INDEX_SUFFIX, OFFSET_ENTRY_SIZE),
            s.index_file_bytes(names.TIME_INDEX_SUFFIX, TIME_ENTRY_SIZE),
        )
        for s in segments
    ]
    while segs:
        first, log_size, index_size, time_size = segs.pop(0)
        group = [first]
        while segs:
            nxt, size, index_bytes, time_bytes = segs[0]
            last_offset = (segs[1][0].base_offset - 1) if len(segs) > 1 else first_uncleanable - 1
            if not (
                log_size + size <= max_size
                and index_size + index_bytes <= max_index_size
                and time_size + time_bytes <= max_index_size
                and (size == 0 or last_offset - first.base_offset <= 0x7FFFFFFF)
            ):
                break
            group.append(nxt)
            segs.pop(0)
            log_size += size
            index_size += index_bytes
            time_size += time_bytes
        groups.append(group)
    return groups
