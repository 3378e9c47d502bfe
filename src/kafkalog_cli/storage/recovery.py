"""LogSegment.recover's walk of a segment's batches, the one home of its rules.

Kafka walks a segment batch by batch on recovery (LogSegment.recover): each batch is checked
(ensureValid: its size and CRC), its offsets are checked against the segment's index range
(ensureOffsetInRange), the offset and time indexes are rebuilt from it, producer state and leader
epochs are updated; the first batch that fails ends the log there (the caller truncates), and
bytes after the last complete batch are dropped silently. That walk is written once,
`walk_batches`: it checks each batch (`BatchValidation`), hands the ones it keeps to a `WalkVisitor`,
and says where and why it stopped as a `WalkStop` (a `StopReason`, the byte, the batch, the
error as a value). Its two visitors:

- `recover_segment`: the whole recovery, for `kafkalog recover` (what it rebuilds: the indexes,
  the aborted transactions, the leader epochs);
- `walk_tail`: the walk rebuilding nothing (`Segment.recovery_walk`: describe, doctor, roll,
  clean-shutdown, retention), and, with `validate` False, the walk of a load without recovery
  (LogSegment.readNextOffset: sizes only).

Callers decide on the structured fields (`StopReason`, positions), never on a message's text;
each words its own message from them (recover Kafka's words, the tail its own).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kafkalog_cli.errors import (
    CorruptIndexError,
    CorruptRecordError,
    InvalidRecordError,
    KafkalogError,
    OffsetOverflowError,
)
from kafkalog_cli.formats.checkpoints import EpochEntry, assign_epoch
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.framing import all_zero, first_nonzero
from kafkalog_cli.formats.indexes import IndexBuilder
from kafkalog_cli.formats.records import RecordBatch, iter_batches

_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength
_V2H = struct.Struct(">qiibIhiqqqhii")  # a v2 batch header, baseOffset .. recordsCount
_MAGICS = (0, 1, 2)


class StopReason(enum.Enum):
    """Where LogSegment.recover's walk ends, in Kafka's terms (the exception it meets)."""

    END = "end"  # every complete batch is valid and nothing follows
    TRUNCATED_BATCH = "truncated batch"  # bytes after the last complete batch: dropped silently
    CORRUPT_RECORD = (
        "CorruptRecordException"  # a size below 14, an unknown magic, a CRC that does not match
    )
    INVALID_RECORD = "InvalidRecordException"  # a batch whose fields break the format
    INVALID_OFFSET = (
        "InvalidOffsetException"  # offsets that do not increase: the segment is emptied
    )
    OFFSET_OVERFLOW = "LogSegmentOffsetOverflowException"  # the broker splits the segment
    # a load without recovery (readNextOffset): the offset index's last entry leads to no complete batch
    NO_BATCH_AT_INDEX_ENTRY = "no batch at the offset index's last entry"


class BatchValidation(enum.Enum):
    """What the walk checks of each complete batch, beyond the size of at least 14 that
    FileLogInputStream needs to read one at all."""

    SIZES = "sizes"  # LogSegment.readNextOffset (a load without recovery): nothing more
    ENSURE_VALID = "ensureValid"  # LogSegment.recover: the minimum overhead and the CRC
    # beyond Kafka, for the readers (describe, doctor, roll, clean-shutdown): also a magic of 0..2,
    # as a v2 batch's CRC does not cover its magic byte
    KNOWN_MAGIC = "ensureValid and a known magic"


def check_batch(batch: RecordBatch, check: BatchValidation) -> None:
    """Raises the CorruptRecordError (Kafka's message, at the batch's byte) of a complete batch
    that fails `check`."""
    if check is BatchValidation.SIZES:
        return
    if check is BatchValidation.KNOWN_MAGIC and batch.magic not in _MAGICS:
        raise CorruptRecordError(
            f"Invalid magic {batch.magic} in the batch of {batch.size} bytes",
            position=batch.position,
        )
    batch.ensure_valid()


def passes(batch: RecordBatch, check: BatchValidation) -> bool:
    """Whether a complete batch passes `check` (`check_batch` as a verdict)."""
    try:
        check_batch(batch, check)
    except CorruptRecordError:
        return False
    return True


@dataclass(frozen=True)
class WalkStop:
    """Where and why `walk_batches` stopped, as values: `position` is the byte of the batch (or
    of the bytes that are not one; None at the END), `batch` the complete batch that failed
    (None when its size field is below 14 or nothing failed), `error` the exception Kafka meets
    there, with Kafka's message (an unknown magic, which Kafka does not check, in our words)."""

    reason: StopReason
    position: int | None = None
    batch: RecordBatch | None = None
    error: KafkalogError | None = None


class WalkVisitor:
    """What a caller of `walk_batches` does with the batches it keeps, and where it goes on
    after one that stops the walk. The default keeps nothing and ends at the first stop."""

    # the fast path: a function walking plain batches itself from a position, returning where it
    # stopped (the walk takes over there); None: every batch goes through `take`
    skim: Callable[[int], int] | None = None

    def take(self, batch: RecordBatch) -> None:
        """A batch that passed the check. May raise what ends the walk (CorruptIndexError, ...)."""

    def resume_after(self, stop: WalkStop) -> int | None:
        """Where the walk goes on after `stop`, or None: it ends there."""
        return None


# what ends LogSegment.recover's walk at a batch, most specific first
_STOPS = (
    (OffsetOverflowError, StopReason.OFFSET_OVERFLOW),
    (CorruptIndexError, StopReason.INVALID_OFFSET),
    (InvalidRecordError, StopReason.INVALID_RECORD),
    (CorruptRecordError, StopReason.CORRUPT_RECORD),
)


def walk_batches(buf, start: int, check: BatchValidation, visitor: WalkVisitor) -> WalkStop:
    """LogSegment.recover's walk over `buf` (a segment's bytes) from `start`, the one loop: each
    complete batch is checked (`check`) and handed to `visitor.take`; the first that fails (or
    whose take raises) stops the walk there, unless `visitor.resume_after` says where to go on.
    Bytes after the last complete batch end it as TRUNCATED_BATCH (dropped silently by Kafka)."""
    end = len(buf)
    pos = start
    skim = visitor.skim
    batches = None
    while True:
        batch = None
        try:
            if skim is not None:
                pos, batches = skim(pos), None
            if batches is None:
                batches = iter_batches(buf, pos, end)
            batch = next(batches, None)
            if batch is None:
                return (
                    WalkStop(StopReason.TRUNCATED_BATCH, pos)
                    if pos < end
                    else WalkStop(StopReason.END)
                )
            check_batch(batch, check)
            visitor.take(batch)
            pos = batch.position + batch.size
        except (CorruptRecordError, InvalidRecordError, CorruptIndexError) as e:
            reason = next(r for cls, r in _STOPS if isinstance(e, cls))
            stop = WalkStop(reason, e.position if e.position is not None else pos, batch, e)
            resume = visitor.resume_after(stop)
            if resume is None:
                return stop
            pos, batches = resume, None


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
    kept_ranges: list[tuple[int, int]] | None = None  # --salvage: the byte ranges kept, in order
    skipped: list[tuple[int, int]] = field(default_factory=list)  # --salvage: the ranges skipped
    # the producer state's map end offset after it (LogSegment.updateProducerState): the last v2
    # batch's last offset + 1; None without a v2 batch (v0/v1 batches do not move it)
    map_end: int | None = None

    @property
    def invalid_offset(self) -> bool:
        """InvalidOffsetException: Kafka empties the segment."""
        return self.stop is StopReason.INVALID_OFFSET


def recover_segment(
    buf,
    base: int,
    interval: int,
    state: ProducerStateUpdate,
    epochs: list[tuple[int, int]],
    salvage: bool = False,
) -> SegmentRecovery:
    """LogSegment.recover over `buf` (a segment's bytes, an mmap), for a segment at offset `base`
    with index.interval.bytes `interval`: `walk_batches` with what it rebuilds. Updates `state`
    and `epochs` in place.

    Raises OffsetOverflowError (the broker splits the segment: LogLoader.retryOnOffsetOverflow)
    unless `salvage`, which instead skips every damaged byte range and keeps the intact batches
    after it (beyond Kafka)."""
    mv = memoryview(buf) if len(buf) else None
    try:
        return _Recovery(buf, mv, base, interval, state, epochs, salvage).run()
    finally:
        if mv is not None:
            mv.release()


class _Recovery(WalkVisitor):
    """One run of `recover_segment`: the walk's visitor that rebuilds what recovery rebuilds."""

    def __init__(
        self,
        buf,
        mv: memoryview | None,
        base: int,
        interval: int,
        state: ProducerStateUpdate,
        epochs: list[tuple[int, int]],
        salvage: bool,
    ):
        self.buf, self.mv, self.base, self.interval = buf, mv, base, interval
        self.state, self.epochs, self.salvage = state, epochs, salvage
        self.builder = IndexBuilder(base, interval)
        self.aborted: list = []
        self.new_epochs: list[tuple[int, int]] = []
        self.latest_epoch = epochs[-1][0] if epochs else -1
        self.valid = 0  # bytes kept so far (positions in the rewritten file with --salvage)
        self.end = len(buf)
        self.next_offset = base
        self.map_end: int | None = None
        self.kept: list[tuple[int, int]] = []
        self.skipped: list[tuple[int, int]] = []
        self.error: KafkalogError | None = None
        self.stop = StopReason.END
        self.stopped_at: int | None = None
        if not salvage and mv is not None:
            self.skim = self._skim

    def run(self) -> SegmentRecovery:
        stop = walk_batches(self.buf, 0, BatchValidation.ENSURE_VALID, self)
        if stop.reason is StopReason.INVALID_OFFSET:
            # InvalidOffsetException: Kafka empties the segment
            assert stop.error is not None
            return SegmentRecovery(
                0,
                self.base,
                IndexBuilder(self.base, self.interval),
                [],
                [],
                stop.error,
                StopReason.INVALID_OFFSET,
                stop.error.position,
            )
        if stop.reason is StopReason.TRUNCATED_BATCH and self.error is None:
            self.stop, self.stopped_at = StopReason.TRUNCATED_BATCH, stop.position
        for epoch, start_offset in self.new_epochs:
            assign_epochs(self.epochs, epoch, start_offset)
        self.builder.finish()
        # bytes after the last complete batch (a torn tail) are dropped too, silently, as by Kafka
        return SegmentRecovery(
            self.valid,
            self.next_offset,
            self.builder,
            self.aborted,
            self.new_epochs,
            self.error,
            self.stop,
            self.stopped_at,
            kept_ranges=self.kept if self.salvage else None,
            skipped=self.skipped,
            map_end=self.map_end,
        )

    def _skim(self, pos: int) -> int:
        """The fast path: plain v2 batches (no producer id, not control) checked inline."""
        assert self.mv is not None
        pos, self.valid, nxt, self.latest_epoch = _fast_run(
            self.mv,
            self.buf,
            pos,
            self.end,
            self.valid,
            self.builder,
            self.latest_epoch,
            self.new_epochs,
        )
        if nxt is not None:
            self.next_offset = self.map_end = nxt  # v2 batches only
        return pos

    def take(self, batch: RecordBatch) -> None:
        """One batch that LogSegment.recover keeps (ensureValid passed): indexed, counted, its
        leader epoch and producer state taken."""
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
            self.map_end = self.next_offset
            ple = batch.partition_leader_epoch
            if ple >= 0 and ple > self.latest_epoch:
                self.new_epochs.append((ple, batch.base_offset))
                self.latest_epoch = ple
            if batch.producer_id >= 0:
                txn = self.state.update(batch)
                if txn is not None:
                    self.aborted.append(txn)

    def resume_after(self, stop: WalkStop) -> int | None:
        if stop.reason is StopReason.INVALID_OFFSET:
            return None
        if stop.reason is StopReason.OFFSET_OVERFLOW:
            return self._skip_overflow(stop)
        return self._skip_damage(stop)

    def _skip_overflow(self, stop: WalkStop) -> int | None:
        """A batch whose offsets overflow the segment's index: raised for the broker's split, or
        with --salvage skipped like any other damage. Returns where the walk goes on."""
        e = stop.error
        assert isinstance(e, OffsetOverflowError)
        # IndexBuilder locates every overflow at the bytes kept so far: the batch's own byte
        # with --salvage, where kept bytes and positions differ
        where = (
            stop.batch.position if self.salvage and stop.batch is not None else (e.position or 0)
        )
        overflow = OffsetOverflowError(
            f"a batch at byte {where} ends at offset {e.offset}, more than 2^31 - 1 above the "
            f"segment's base offset {self.base} (LogSegmentOffsetOverflowException: a damaged base offset)",
            position=where,
            offset=e.offset,
        )
        if not self.salvage:
            raise overflow from None
        self.error, self.stop, self.stopped_at = overflow, StopReason.OFFSET_OVERFLOW, where
        nxt = next_valid_batch(self.buf, where + 1, self.end, self.next_offset)
        self.skipped.append((where, self.end if nxt is None else nxt))
        return nxt

    def _skip_damage(self, stop: WalkStop) -> int | None:
        """A batch LogSegment.recover rejects: the walk ends there, or with --salvage it skips to
        the next valid batch. Returns where the walk goes on."""
        bad = stop.position
        assert bad is not None
        self.error, self.stop, self.stopped_at = stop.error, stop.reason, bad
        if not self.salvage:
            return None
        nxt = next_valid_batch(self.buf, bad + 1, self.end, self.next_offset)
        self.skipped.append((bad, self.end if nxt is None else nxt))
        return nxt


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
        if crc32c(mv[pos + 21 : pos + total]) != crc:
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


_NO_SIZE = bytes(4)


def next_valid_batch(buf, start: int, end: int, min_offset: int) -> int | None:
    """The next position from `start` holding a whole batch with a valid header and CRC whose
    offsets continue upward (from `min_offset`): where --salvage goes on, and whether valid
    batches follow the one recovery stops at."""
    pos = start
    while pos + 17 < end:
        if buf[pos + 8 : pos + 12] == _NO_SIZE:
            # a size of at least 14 has a byte that is not zero: no batch starts before the
            # next such byte's size field (a preallocated tail is skipped, not walked)
            pos = max(pos + 1, first_nonzero(buf, pos + 8, end) - 11)
            continue
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
    offset_of_max_timestamp: int = -1  # the last offset of the first batch with max_timestamp
    codecs: frozenset = frozenset()  # compression ids of those batches
    damage: CorruptRecordError | None = None  # what stopped the walk (not preallocated zeros)
    stop: StopReason = StopReason.END  # why the walk stopped (END also for preallocated zeros)
    position_of_max_timestamp: int = -1  # the byte of the batch with max_timestamp

    @property
    def corrupt_batch(self) -> bool:
        """The damage is a batch that is not sound, not a torn end."""
        return self.stop is StopReason.CORRUPT_RECORD


def walk_tail(buf, base_offset: int, path: str, start: int = 0, validate: bool = True) -> LogTail:
    """`walk_batches` from `start` rebuilding nothing: every complete batch with a size of at
    least 14 (and, `validate`, a known magic and a matching CRC: what recovery checks and a clean
    load's readNextOffset does not) counts; the first that is not (or bytes that are not a whole
    batch) ends the log there, and is the tail's `damage` (a CorruptRecordError naming `path`
    and the byte) unless only zeros follow (a preallocated .log)."""
    size = len(buf)
    if start >= size:
        start = 0
    tail = _Tail(base_offset, start)
    stop = walk_batches(
        buf, start, BatchValidation.KNOWN_MAGIC if validate else BatchValidation.SIZES, tail
    )
    fault = None if stop.error is None else tail_fault(stop)
    end = tail.valid_size
    damage, reason = None, StopReason.END
    if not all_zero(buf, end, size):
        why = fault or (
            f"{size - end} bytes after the last complete batch are not a whole batch"
            f" (a broker's recovery truncates them, as `kafkalog recover` does)"
        )
        damage = CorruptRecordError(why, path=path, position=end)
        reason = StopReason.CORRUPT_RECORD if fault is not None else StopReason.TRUNCATED_BATCH
    return LogTail(
        tail.next_offset,
        tail.max_ts,
        end,
        tail.offset_of_max,
        frozenset(tail.codecs),
        damage,
        reason,
        tail.max_pos,
    )


class _Tail(WalkVisitor):
    """The visitor of `walk_tail`: what the kept batches say of the segment's end."""

    def __init__(self, base_offset: int, start: int):
        self.next_offset, self.max_ts, self.valid_size = base_offset, -1, start
        self.offset_of_max, self.max_pos = -1, -1
        self.codecs: set[int] = set()

    def take(self, batch: RecordBatch) -> None:
        self.next_offset, self.valid_size = batch.last_offset + 1, batch.position + batch.size
        if batch.max_timestamp > self.max_ts:  # strictly: the first batch with it, as LogSegment
            self.max_ts, self.offset_of_max, self.max_pos = (
                batch.max_timestamp,
                batch.last_offset,
                batch.position,
            )
        self.codecs.add(batch.compression_id)

    def resume_after(self, stop: WalkStop) -> int | None:
        if stop.error is not None and not isinstance(stop.error, CorruptRecordError):
            raise stop.error  # nothing but a batch's check stops this walk
        return None


def tail_fault(stop: WalkStop) -> str:
    """The readers' words for the batch that stopped a walk (Kafka's, FileLogInputStream's, for
    a size below 14)."""
    b, e = stop.batch, stop.error
    if b is None:
        assert e is not None
        return e.message
    if b.magic not in _MAGICS:
        return f"Invalid magic {b.magic} in the batch of {b.size} bytes"
    return f"the batch of {b.size} bytes fails its CRC check"


def assign_epochs(epochs: list[tuple[int, int]], epoch: int, start_offset: int) -> None:
    """LeaderEpochFileCache.assign on `epochs` in place, as LogSegment.recover calls it for a batch
    whose epoch is above the latest: entries from `start_offset` on go first (formats.checkpoints)."""
    epochs[:] = [
        (x.epoch, x.start_offset)
        for x in assign_epoch([EpochEntry(e, o) for e, o in epochs], epoch, start_offset)
    ]
