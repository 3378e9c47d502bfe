"""LogSegment.recover's walk of a segment's batches, the one home of its rules.

Kafka walks a segment batch by batch on recovery (LogSegment.recover): each batch is checked
(ensureValid: its size, magic and CRC), its offsets are checked against the segment's index range
(ensureOffsetInRange), the offset and time indexes are rebuilt from it, producer state and leader
epochs are updated; the first batch that fails ends the log there (the caller truncates), and
bytes after the last complete batch are dropped silently. Two walks here follow that rule:

- `recover_segment`: the whole recovery, for `kafkalog recover` (what it rebuilds: the indexes,
  the aborted transactions, the leader epochs; where and why it stopped, as a `StopReason`);
- `walk_tail`: the same walk without rebuilding anything (`Segment.recovery_walk`: describe,
  verify, doctor, roll, clean-shutdown), and, without `validate`, the walk of a load without
  recovery (LogSegment.readNextOffset: sizes only).

Callers decide on the structured fields (`StopReason`, positions), never on a message's text: the
messages are Kafka's, for the user.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Protocol

from kafkalog_cli.errors import (CorruptIndexError, CorruptRecordError, InvalidRecordError, KafkalogError,
                                 OffsetOverflowError)
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.indexes import IndexBuilder
from kafkalog_cli.formats.records import LOG_OVERHEAD, RecordBatch, iter_batches

_PREFIX = struct.Struct(">qi")                      # baseOffset, batchLength
_V2H = struct.Struct(">qiibIhiqqqhii")              # a v2 batch header, baseOffset .. recordsCount
_MAGICS = (0, 1, 2)


class StopReason(enum.Enum):
    """Where LogSegment.recover's walk ends, in Kafka's terms (the exception it meets)."""

    END = "end"                                  # every complete batch is valid and nothing follows
    TRUNCATED_BATCH = "truncated batch"          # bytes after the last complete batch: dropped silently
    CORRUPT_RECORD = "CorruptRecordException"    # a size below 14, an unknown magic, a CRC that does not match
    INVALID_RECORD = "InvalidRecordException"    # a batch whose fields break the format
    INVALID_OFFSET = "InvalidOffsetException"    # offsets that do not increase: the segment is emptied
    OFFSET_OVERFLOW = "LogSegmentOffsetOverflowException"   # the broker splits the segment
    # a load without recovery (readNextOffset): the offset index's last entry leads to no complete batch
    NO_BATCH_AT_INDEX_ENTRY = "no batch at the offset index's last entry"


class ProducerStateUpdate(Protocol):
    """What the walk updates per batch with a producer id (ops.producer_rebuild.ProducerState):
    returns the aborted transaction a control batch ends, or None."""

    def update(self, batch: RecordBatch): ...


@dataclass
class SegmentRecovery:
    """What `recover_segment` found and rebuilt.

    `stop` is why the walk ended (with --salvage, the last damage it skipped), `stopped_at` the
    byte of that batch in the segment, `error` Kafka's exception for it (its message is for the
    user). `builder` holds the rebuilt offset and time indexes, `aborted` the transaction index's
    entries, `epochs` the leader epochs assigned (epoch, start offset)."""

    valid_bytes: int
    next_offset: int
    builder: IndexBuilder
    aborted: list
    epochs: list[tuple[int, int]]
    error: KafkalogError | None = None
    stop: StopReason = StopReason.END
    stopped_at: int | None = None
    kept_ranges: list[tuple[int, int]] | None = None   # --salvage: the byte ranges kept, in order
    skipped: list[tuple[int, int]] = field(default_factory=list)   # --salvage: the ranges skipped

    @property
    def invalid_offset(self) -> bool:
        """InvalidOffsetException: Kafka empties the segment."""
        return self.stop is StopReason.INVALID_OFFSET


def recover_segment(buf, base: int, interval: int, state: ProducerStateUpdate, epochs: list[tuple[int, int]],
                    salvage: bool = False) -> SegmentRecovery:
    """LogSegment.recover over `buf` (a segment's bytes, an mmap), for a segment at offset `base`
    with index.interval.bytes `interval`. Updates `state` and `epochs` in place.

    Raises OffsetOverflowError (the broker splits the segment: LogLoader.retryOnOffsetOverflow)
    unless `salvage`, which instead skips every damaged byte range and keeps the intact batches
    after it (beyond Kafka)."""
    mv = memoryview(buf) if len(buf) else None
    try:
        return _Walk(buf, mv, base, interval, state, epochs, salvage).run()
    finally:
        if mv is not None:
            mv.release()


class _Walk:
    """One run of `recover_segment`: the walk's state, and one method per thing it does."""

    def __init__(self, buf, mv: memoryview | None, base: int, interval: int, state: ProducerStateUpdate,
                 epochs: list[tuple[int, int]], salvage: bool):
        self.buf, self.mv, self.base, self.interval = buf, mv, base, interval
        self.state, self.epochs, self.salvage = state, epochs, salvage
        self.builder = IndexBuilder(base, interval)
        self.aborted: list = []
        self.new_epochs: list[tuple[int, int]] = []
        self.latest_epoch = epochs[-1][0] if epochs else -1
        self.valid = 0           # bytes kept so far (positions in the rewritten file with --salvage)
        self.pos = 0
        self.end = len(buf)
        self.next_offset = base
        self.kept: list[tuple[int, int]] = []
        self.skipped: list[tuple[int, int]] = []
        self.error: KafkalogError | None = None
        self.stop = StopReason.END
        self.stopped_at: int | None = None

    def run(self) -> SegmentRecovery:
        batch = None
        while True:
            try:
                if not self.salvage and self.mv is not None:
                    # fast path: plain v2 batches (no producer id, not control) checked inline
                    self.pos, self.valid, nxt, self.latest_epoch = _fast_run(
                        self.mv, self.buf, self.pos, self.end, self.valid, self.builder, self.latest_epoch,
                        self.new_epochs)
                    if nxt is not None:
                        self.next_offset = nxt
                batch = next(iter_batches(self.buf, self.pos, self.end), None)
                if batch is None:
                    if self.pos < self.end and self.error is None:
                        self.stop, self.stopped_at = StopReason.TRUNCATED_BATCH, self.pos
                    break
                self._take(batch)
            except OffsetOverflowError as e:
                if not self._skip_overflow(e, batch):
                    break
            except CorruptIndexError as e:
                # InvalidOffsetException: Kafka empties the segment
                return SegmentRecovery(0, self.base, IndexBuilder(self.base, self.interval), [], [], e,
                                       StopReason.INVALID_OFFSET, e.position)
            except (CorruptRecordError, InvalidRecordError) as e:
                if not self._skip_damage(e):
                    break
        self.epochs.extend(self.new_epochs)
        self.builder.finish()
        # bytes after the last complete batch (a torn tail) are dropped too, silently, as by Kafka
        return SegmentRecovery(self.valid, self.next_offset, self.builder, self.aborted, self.new_epochs,
                               self.error, self.stop, self.stopped_at,
                               kept_ranges=self.kept if self.salvage else None, skipped=self.skipped)

    def _take(self, batch: RecordBatch) -> None:
        """One batch that LogSegment.recover checks and keeps: indexed, counted, its leader epoch
        and producer state taken."""
        batch.ensure_valid()
        if self.salvage and self.kept and batch.base_offset < self.next_offset:
            raise CorruptRecordError("offsets go backwards", position=batch.position)
        self.builder.on_batch(self.valid, batch.size, batch.last_offset, batch.max_timestamp)
        if self.salvage:
            if self.kept and self.kept[-1][1] == batch.position:
                self.kept[-1] = (self.kept[-1][0], batch.position + batch.size)
            else:
                self.kept.append((batch.position, batch.position + batch.size))
        self.valid += batch.size
        self.next_offset = batch.last_offset + 1
        if batch.magic >= 2:
            ple = batch.partition_leader_epoch
            if ple >= 0 and ple > self.latest_epoch:
                self.new_epochs.append((ple, batch.base_offset))
                self.latest_epoch = ple
            if batch.producer_id >= 0:
                txn = self.state.update(batch)
                if txn is not None:
                    self.aborted.append(txn)
        self.pos = batch.position + batch.size

    def _skip_overflow(self, e: OffsetOverflowError, batch: RecordBatch | None) -> bool:
        """A batch whose offsets overflow the segment's index: raised for the broker's split, or
        with --salvage skipped like any other damage. True: the walk goes on."""
        # IndexBuilder locates every overflow at the bytes kept so far: the batch's own byte
        # with --salvage, where kept bytes and positions differ
        where = batch.position if self.salvage and batch is not None else (e.position or 0)
        overflow = OffsetOverflowError(
            f"a batch at byte {where} ends at offset {e.offset}, more than 2^31 - 1 above the "
            f"segment's base offset {self.base} (LogSegmentOffsetOverflowException: a damaged base offset)",
            position=where, offset=e.offset)
        if not self.salvage:
            raise overflow from None
        self.error, self.stop, self.stopped_at = overflow, StopReason.OFFSET_OVERFLOW, where
        nxt = next_valid_batch(self.buf, where + 1, self.end, self.next_offset)
        self.skipped.append((where, self.end if nxt is None else nxt))
        if nxt is None:
            return False
        self.pos = nxt
        return True

    def _skip_damage(self, e: KafkalogError) -> bool:
        """A batch LogSegment.recover rejects: the walk ends there, or with --salvage it skips to
        the next valid batch. True: the walk goes on."""
        bad = e.position if e.position is not None else self.pos
        kind = StopReason.INVALID_RECORD if isinstance(e, InvalidRecordError) else StopReason.CORRUPT_RECORD
        self.error, self.stop, self.stopped_at = e, kind, bad
        if not self.salvage:
            return False
        nxt = next_valid_batch(self.buf, bad + 1, self.end, self.next_offset)
        if nxt is None:
            self.skipped.append((bad, self.end))
            return False
        self.skipped.append((bad, nxt))
        self.pos = nxt
        return True


def _fast_run(mv, buf, pos, end, valid, builder, latest_epoch, new_epochs):
    """LogSegment.recover's loop for the common batch, without building batch objects: stops
    (for the general path to handle, with Kafka's messages) at anything else."""
    unpack = _V2H.unpack_from
    on_batch = builder.on_batch
    nxt = None
    while pos + 61 <= end:
        bo, size, ple, magic, crc, attrs, lod, _bts, mts, pid, _pep, _seq, _cnt = unpack(buf, pos)
        total = size + 12
        if magic != 2 or size < 49 or pos > end - total or pid >= 0 or attrs & 0x20:
            break
        if crc32c(mv[pos + 21:pos + total]) != crc:
            break
        last = bo + lod
        on_batch(valid, total, last, mts)
        if ple >= 0 and ple > latest_epoch:
            new_epochs.append((ple, bo))
            latest_epoch = ple
        valid += total
        pos += total
        nxt = last + 1
    return pos, valid, nxt, latest_epoch


def next_valid_batch(buf, start: int, end: int, min_offset: int) -> int | None:
    """The next position from `start` holding a whole batch with a valid header and CRC whose
    offsets continue upward (from `min_offset`): where --salvage goes on, and whether valid
    batches follow the one recovery stops at."""
    pos = start
    while pos + 17 < end:
        # a v2 batch has magic 2 at +16; legacy 0/1. Check plausibility before the CRC.
        magic = buf[pos + 16]
        if magic <= 2:
            off, size = _PREFIX.unpack_from(buf, pos)
            if 14 <= size and pos + 12 + size <= end and off >= min_offset:
                b = RecordBatch(buf, pos, size + 12, magic)
                try:
                    if b.is_valid() and b.base_offset >= min_offset:
                        return pos
                except KafkalogError:
                    pass
        pos += 1
    return None


# ------------------------------------------------------------------ the walk without rebuilding
@dataclass
class LogTail:
    """What only the .log can tell about a segment's end, read by `walk_tail`: its next offset,
    the largest batch timestamp of the batches walked, and the end of the complete valid batches
    (where a broker's recovery would truncate)."""

    next_offset: int
    max_timestamp: int
    valid_size: int
    offset_of_max_timestamp: int = -1     # the last offset of the first batch with max_timestamp
    codecs: frozenset = frozenset()       # compression ids of those batches
    damage: "CorruptRecordError | None" = None   # what stopped the walk (not preallocated zeros)
    stop: StopReason = StopReason.END     # why the walk stopped (END also for preallocated zeros)
    position_of_max_timestamp: int = -1   # the byte of the batch with max_timestamp

    @property
    def corrupt_batch(self) -> bool:
        """The damage is a batch that is not sound, not a torn end."""
        return self.stop is StopReason.CORRUPT_RECORD


def walk_tail(buf, base_offset: int, path: str, start: int = 0, validate: bool = True) -> LogTail:
    """The walk of a segment's batches from `start` by LogSegment.recover's rule, rebuilding
    nothing: every complete batch with a size of at least 14 (and, `validate`, a known magic and
    a matching CRC: what recovery checks and a clean load's readNextOffset does not) counts; the
    first that is not (or bytes that are not a whole batch) ends the log there, and is the tail's
    `damage` (a CorruptRecordError naming `path` and the byte) unless only zeros follow (a
    preallocated .log)."""
    size = len(buf)
    if start >= size:
        start = 0
    nxt, max_ts, end = base_offset, -1, start
    offset_of_max, max_pos, codecs = -1, -1, set()
    fault = None
    try:
        for b in iter_batches(buf, start):
            fault = batch_fault(buf, b.position) if validate else None
            if fault is not None:
                break
            nxt, end = b.last_offset + 1, b.position + b.size
            if b.max_timestamp > max_ts:      # strictly: the first batch with it, as LogSegment
                max_ts, offset_of_max, max_pos = b.max_timestamp, b.last_offset, b.position
            codecs.add(b.compression_id)
    except CorruptRecordError as e:
        fault = e.message
    damage, stop = None, StopReason.END
    if bytes(buf[end:]).strip(b"\0"):
        why = fault or (f"{size - end} bytes after the last complete batch are not a whole batch"
                        f" (a broker's recovery truncates them, as `kafkalog recover` does)")
        damage = CorruptRecordError(why, path=path, position=end)
        stop = StopReason.CORRUPT_RECORD if fault is not None else StopReason.TRUNCATED_BATCH
    return LogTail(nxt, max_ts, end, offset_of_max, frozenset(codecs), damage, stop, max_pos)


def batch_fault(log, position: int) -> str | None:
    """Why the complete batch at `position` is not one LogSegment.recover keeps (an unknown
    magic, a CRC that does not match its bytes), or None."""
    size = int.from_bytes(log[position + 8 : position + 12], "big", signed=True)
    magic = log[position + 16]
    if magic not in _MAGICS:
        return f"Invalid magic {magic if magic < 128 else magic - 256} in the batch of {size + LOG_OVERHEAD} bytes"
    try:
        valid = RecordBatch(log, position, size + LOG_OVERHEAD, magic).is_valid()
    except Exception:  # noqa: BLE001 - a header too short to hold its CRC
        valid = False
    if not valid:
        return f"the batch of {size + LOG_OVERHEAD} bytes fails its CRC check"
    return None
