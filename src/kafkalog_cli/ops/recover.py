"""`kafkalog recover`: the broker's startup recovery, offline (LogLoader.load, LogSegment.recover).

plan() reads and decides; apply() (ops.plan.apply) changes files. Per partition, in this order,
which keeps every intermediate state loadable by a broker and by a second `recover`:

1. leftovers as LogLoader resolves them: our own `*.kafkalog-tmp`, `*.deleted`, `*.cleaned`,
   `.swap` files at or above the smallest `.cleaned` offset (an interrupted split) are removed;
   the files a valid `.swap` replaces are removed, then the `.swap` suffix is stripped;
2. segments from the one holding the recovery point to the end (every segment with `--all`, none
   after a clean shutdown) are checked batch by batch; the first invalid batch ends the log:
   the later segments go first (newest first), then the segment is truncated;
3. .index, .timeindex and .txnindex rebuilt with Kafka's algorithm, written only where they differ;
   beyond Kafka: indexes of segments that are not recovered are checked too (a zero-filled or
   truncated index a broker would keep) and rebuilt;
4. producer snapshots: one at the end of each recovered segment and at the log end; strays removed;
5. leader-epoch-checkpoint (rebuilt from the batches' partition leader epochs when a broker
   would refuse to load it), then the recovery point (= log end offset), last.
"""
from __future__ import annotations

import dataclasses
import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.errors import (CheckpointError, CorruptIndexError, CorruptRecordError, InputError,
                                 InvalidRecordError, KafkalogError, OffsetOverflowError)
from kafkalog_cli.formats.checkpoints import (EpochEntry, assign_epoch, load_leader_epoch_cache,
                                              parse_leader_epoch_checkpoint)
from kafkalog_cli.formats.indexes import (IndexBuilder, offset_entry_problem, parse_offset_index, parse_time_index,
                                          read_start)
from kafkalog_cli.formats.producer_state import parse_producer_snapshot
from kafkalog_cli.formats.records import iter_batches, RecordBatch
from kafkalog_cli.formats.txnindex import encode_txn_index
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.ops.plan import Action, ActionKind, Finding, Plan, delete_interrupted_writes
from kafkalog_cli.ops.producer_rebuild import ProducerState, rebuild_producer_state, replay
from kafkalog_cli.storage import names
from kafkalog_cli.storage import files
from kafkalog_cli.storage.fsops import TMP_SUFFIX
from kafkalog_cli.storage.logdir import LogDir
from kafkalog_cli.storage.names import offset_from_name, parse_partition_dir, segment_file
from kafkalog_cli.storage.fsops import stage_copy
from kafkalog_cli.storage.overflow import split_overflowed_segment
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment, not_regular_reason, read_file

if TYPE_CHECKING:
    from kafkalog_cli.ops.verify import BitRot

METADATA_TOPIC = "__cluster_metadata"
_PREFIX = struct.Struct(">qi")


@dataclass
class ScanResult:
    valid_bytes: int
    next_offset: int
    builder: IndexBuilder
    aborted: list
    epochs: list[tuple[int, int]]            # (epoch, start offset) assigned from batch headers
    error: KafkalogError | None = None
    invalid_offset: bool = False
    kept_ranges: list[tuple[int, int]] | None = None   # --salvage
    skipped: list[tuple[int, int]] = field(default_factory=list)


# ------------------------------------------------------------------ LogSegment.recover
def scan_segment(buf, base: int, interval: int, state: ProducerState, epochs: list[tuple[int, int]],
                 salvage: bool = False) -> ScanResult:
    """Run LogSegment.recover's loop over `buf` (an mmap). Updates `state` and `epochs` in place."""
    mv = memoryview(buf) if len(buf) else None
    try:
        return _scan(buf, mv, base, interval, state, epochs, salvage)
    finally:
        if mv is not None:
            mv.release()


def _scan(buf, mv, base, interval, state, epochs, salvage) -> ScanResult:
    builder = IndexBuilder(base, interval)
    aborted = []
    new_epochs: list[tuple[int, int]] = []
    valid = 0            # bytes kept so far (positions in the rewritten file with --salvage)
    pos = 0
    end = len(buf)
    next_offset = base
    kept: list[tuple[int, int]] = []
    skipped: list[tuple[int, int]] = []
    error = None
    latest_epoch = epochs[-1][0] if epochs else -1
    while True:
        try:
            if not salvage and mv is not None:
                # fast path: plain v2 batches (no producer id, not control) checked inline
                pos, valid, nxt, latest_epoch = _fast_run(mv, buf, pos, end, valid, builder, latest_epoch, new_epochs)
                if nxt is not None:
                    next_offset = nxt
            batch = next(iter_batches(buf, pos, end), None)
            if batch is None:
                break
            batch.ensure_valid()
            if salvage and kept and batch.base_offset < next_offset:
                raise CorruptRecordError("offsets go backwards", position=batch.position)
            builder.on_batch(valid, batch.size, batch.last_offset, batch.max_timestamp)
            if salvage:
                if kept and kept[-1][1] == batch.position:
                    kept[-1] = (kept[-1][0], batch.position + batch.size)
                else:
                    kept.append((batch.position, batch.position + batch.size))
            valid += batch.size
            next_offset = batch.last_offset + 1
            if batch.magic >= 2:
                ple = batch.partition_leader_epoch
                if ple >= 0 and ple > latest_epoch:
                    new_epochs.append((ple, batch.base_offset))
                    latest_epoch = ple
                if batch.producer_id >= 0:
                    txn = state.update(batch)
                    if txn is not None:
                        aborted.append(txn)
            pos = batch.position + batch.size
            continue
            break
        except CorruptIndexError as e:
            if "offset overflow" not in e.message:
                # InvalidOffsetException: Kafka empties the segment
                return ScanResult(0, base, IndexBuilder(base, interval), [], [], e, invalid_offset=True)
            where = batch.position if salvage else e.position
            overflow = OffsetOverflowError(
                f"a batch at byte {where} ends at offset {e.message.split()[5]}, more than 2^31 - 1 above the "
                f"segment's base offset {base} (LogSegmentOffsetOverflowException: a damaged base offset)",
                position=where)
            if not salvage:
                raise overflow from None
            # --salvage: the batch whose offsets overflow is damage, skipped like any other
            error = overflow
            nxt = _next_valid_batch(buf, where + 1, end, next_offset)
            skipped.append((where, end if nxt is None else nxt))
            if nxt is None:
                break
            pos = nxt
            continue
        except (CorruptRecordError, InvalidRecordError) as e:
            error = e
            bad = e.position if e.position is not None else pos
            if not salvage:
                break
            nxt = _next_valid_batch(buf, bad + 1, end, next_offset)
            if nxt is None:
                skipped.append((bad, end))
                break
            skipped.append((bad, nxt))
            pos = nxt
            continue
    for e, o in new_epochs:
        assign_epochs(epochs, e, o)
    builder.finish()
    # bytes after the last complete batch (a torn tail) are dropped too, silently, as by Kafka
    return ScanResult(valid, next_offset, builder, aborted, new_epochs, error,
                      kept_ranges=kept if salvage else None, skipped=skipped)


_V2H = struct.Struct(">qiibIhiqqqhii")


def _fast_run(mv, buf, pos, end, valid, builder, latest_epoch, new_epochs):
    """LogSegment.recover's loop for the common batch, without building batch objects: stops
    (for the general path to handle, with Kafka's messages) at anything else."""
    from kafkalog_cli.formats.crc import crc32c
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


def _next_valid_batch(buf, start: int, end: int, min_offset: int) -> int | None:
    """--salvage: the next position holding a whole batch with a valid header and CRC whose
    offsets continue upward."""
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


# ------------------------------------------------------------------ index checks
def index_problem(seg_buf, base: int, index: bytes, timeindex: bytes, next_offset: int) -> str | None:
    """Why a broker-kept index is wrong (zero-filled, truncated, pointing nowhere), or None."""
    if len(index) % 8:
        return f"offset index length {len(index)} is not a multiple of 8"
    if len(timeindex) % 12:
        return f"time index length {len(timeindex)} is not a multiple of 12"
    entries = parse_offset_index(index, base)
    if len(entries) * 8 != len(index):
        return "offset index has zero-filled slots after its entries"
    last_pos = -1
    for i, e in enumerate(entries):
        if (offset_entry_problem(e, base, len(seg_buf), entries[i - 1] if i else None) is not None
                or e.position <= last_pos or e.position + 17 > len(seg_buf)):
            return f"offset index entry ({e.offset}, {e.position}) is out of order or beyond the log"
        try:
            b = next(iter_batches(seg_buf, e.position))
        except (StopIteration, KafkalogError):
            return f"offset index entry ({e.offset}, {e.position}) does not point at a batch"
        if b.last_offset != e.offset and not _cleaned_entry(seg_buf, b, e.offset, next_offset):
            return f"offset index entry ({e.offset}, {e.position}) points at a batch ending at {b.last_offset}"
        last_pos = e.position
    tentries = parse_time_index(timeindex, base)
    if len(tentries) * 12 != len(timeindex):
        return "time index has zero-filled slots after its entries"
    last_ts, last_o = None, base
    for t in tentries:
        if (last_ts is not None and t.timestamp <= last_ts) or t.offset < last_o or t.offset >= max(next_offset, base + 1):
            return f"time index entry ({t.timestamp}, {t.offset}) is out of order or beyond the log"
        last_ts, last_o = t.timestamp, t.offset
    if len(seg_buf) and not tentries:
        # a closed segment always gets a final entry unless no batch has a timestamp
        try:
            for b in iter_batches(seg_buf):
                if b.max_timestamp >= 0:
                    return "time index is empty but the log has timestamps"
        except KafkalogError as e:
            return f"time index is empty and the log does not read to its end ({e.message})"
    return None


@dataclass
class KeptFinding(Finding):
    """Damage left as the broker leaves it (not rebuilt without --repair)."""

    def to_json(self) -> dict:
        return {**super().to_json(), "left_as_broker_leaves": True}


class IndexFaultFinding(Finding):
    """An offset index whose last entry Kafka never writes, with which a load without recovery
    drops the active segment's offsets: recover rebuilds it (doctor warns of it)."""


def _note_hidden_by_marker(p: Plan, part: Partition, segments: list[Segment], recovery_point: int) -> None:
    """Under .kafka_cleanshutdown the broker recovers nothing. The segments it would have
    recovered without the marker (from the one holding the recovery point) are checked all the
    same: a batch that fails LogSegment.recover's check is kept, and served as it is. One finding
    each, with what the broker does, what --all would cost and what --salvage would keep."""
    start = 0
    for i, s in enumerate(segments):
        if s.base_offset <= recovery_point:
            start = i
    for i, s in enumerate(segments[start:], start):
        tail = s.recovery_walk(0, validate=True)
        if not tail.corrupt_batch:
            continue            # a torn or zero-padded end: the active segment's note says it
        with s.mapped() as buf:
            lost = _offsets_in(buf, tail.valid_size)
            later = _next_valid_batch(buf, tail.valid_size + 1, len(buf), tail.next_offset)
            intact = _offsets_in(buf, later) if later is not None else None
        cost = f"truncating at byte {tail.valid_size}" + (f" (offsets {lost[0]}..{lost[1]})" if lost else "")
        if i + 1 < len(segments):
            cost += f" and deleting the {len(segments) - i - 1} later segment(s)"
        keep = (f"; `kafkalog recover --all --salvage` skips only the damaged bytes and keeps the intact batches "
                f"after them (offsets {intact[0]}..{intact[1]})" if intact else "")
        p.findings.append(KeptFinding(part.name, (
            f"segment {s.base_offset}: {tail.damage.message}: the broker does not look at it (.kafka_cleanshutdown: "
            f"no recovery) and serves it as it is, so consumers of these offsets fail on it. "
            f"`kafkalog recover --all` recovers as the broker would without the marker, {cost}{keep}"),
            str(s.log_path), tail.valid_size))


def _note_kept(p: Plan, name: str, s: Segment, b: int, damage: str, buf, index: bytes, timeindex: bytes,
               missing_time_index: bool) -> None:
    """One finding for index damage a broker keeps: what, what the broker does, the consequence."""
    what = "creates it empty" if missing_time_index else "keeps it as it is"
    path = s.time_index_path if "time index" in damage else s.index_path
    p.findings.append(KeptFinding(name, f"segment {b}: {damage}; a broker {what} (it does not check the "
                                  f"indexes of a segment it does not recover){kept_consequence(buf, timeindex)}; "
                                  f"rerun with --repair to rebuild it", str(path)))


def kept_consequence(buf, timeindex: bytes) -> str:
    """What a broker serving a damaged time index does with it, where it matters: time retention
    takes a closed segment's largest timestamp from the last entry (AbstractIndex counts every slot
    of an existing file, preallocated zeros included), or from the file's mtime when there is none."""
    n = len(timeindex) // 12
    if n and struct.unpack_from(">q", timeindex, (n - 1) * 12)[0] == 0:
        return (": its last time index entry has timestamp 0, so the broker's time retention deletes "
                "the segment at once once it is not the active one")
    if n == 0 and len(buf):
        return (": the broker's time retention takes the segment's age from the file's mtime and "
                "offset-for-timestamp lookups find nothing in it")
    return ""


def _valid_data_lost(buf, base: int, interval: int, state: ProducerState, epochs: list, last: bool) -> str | None:
    """What LogSegment.recover would drop that is valid, or None: it truncates at the first
    invalid batch, which loses nothing valid only when no valid batch follows in this segment and
    no segment follows (the later ones are deleted)."""
    r = scan_segment(buf, base, interval, state.copy(), list(epochs))
    if r.valid_bytes == len(buf):
        return None
    if not last:
        return f"the segment is cut at byte {r.valid_bytes} and every later segment deleted"
    if _next_valid_batch(buf, r.valid_bytes + 1, len(buf), r.next_offset) is not None:
        return f"valid batches follow the invalid one at byte {r.valid_bytes}"
    return None


def _unrecovered_end(s: Segment, entry: tuple[int, int] | None) -> tuple[str, int] | None:
    """What a broker that loads the active segment without recovering it (after a clean shutdown)
    leaves wrong at its end, and where, or None: the offsets it will not serve, or the bytes after
    the last complete batch that it keeps and appends after."""
    tail = s.unrecovered_tail(entry)
    if tail.damage is None:
        return None
    if tail.next_offset == s.base_offset and tail.valid_size == 0 and tail.max_timestamp < 0 \
            and "leads to no complete batch" in tail.damage.message:
        return tail.damage.message, tail.damage.position
    size = s.size
    return (f"{size - tail.valid_size} bytes after the last complete batch (log end {tail.next_offset}) are not a "
            f"whole batch: the broker keeps them and appends its next batches after them, where readers of "
            f"those offsets will meet them", tail.valid_size)


def _entry_kafka_never_writes(entries: list, base: int) -> bool:
    """The offset index's last entry is one OffsetIndex.append never writes (a negative position,
    an offset below the base): the index's damage, not a .log cut since."""
    return bool(entries) and offset_entry_problem(entries[-1], base, None) is not None


def load_failure(buf, start: int) -> str | None:
    """Why a broker loading this active segment without recovering it (after a clean shutdown)
    would fail to start, or None: LogSegment.readNextOffset walks the batch headers from the last
    offset-index entry (FileLogInputStream.nextBatch), and a size below 14 there is a
    CorruptRecordException that stops LogManager (zeros or garbage appended after the shutdown)."""
    pos, end = read_start(start, len(buf)), len(buf)
    while pos + 17 <= end:
        size = _PREFIX.unpack_from(buf, pos)[1]
        if size < 14:
            return (f"batch header at byte {pos} has size {size}: a broker would fail to start on it "
                    f"(CorruptRecordException in LogSegment.readNextOffset)")
        if pos > end - 12 - size:
            return None
        pos += 12 + size
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
    return offset < (nxt.base_offset if nxt is not None else max(next_offset, batch.last_offset + 1))


# ------------------------------------------------------------------ the plan
@dataclass
class RecoverOptions:
    all_segments: bool = False
    salvage: bool = False
    now_ms: int = 0
    repair: bool = False                     # also rebuild the indexes a broker keeps damaged
    resolver: ConfigResolver | None = None   # None: Kafka defaults + the log dir's __cluster_metadata
    check_crc: bool = True                   # read every segment for bit rot (note_bit_rot)


def check_partition_dirs(partition_dirs) -> None:
    """InputError (exit 4) for a partition dir whose topic name a checkpoint line cannot hold
    (whitespace): Kafka 3.3.1's parseTopicPartitionName accepts it (no topic name validation), but
    the broker then writes a recovery-point-offset-checkpoint it cannot read back. recover stops
    before changing anything."""
    for d in partition_dirs:
        tp = parse_partition_dir(Path(d).name)
        try:
            ckpt.encode_offsets({(tp.topic, tp.partition): 0})
        except ValueError:
            raise InputError(f"partition dir whose topic name {tp.topic!r} cannot be written to a "
                             f"checkpoint file (a broker would write a recovery-point-offset-checkpoint "
                             f"it cannot read back); move it out of the log dir", path=str(d)) from None


def plan(log_dir: Path, partition_dirs: list[Path], opts: RecoverOptions) -> Plan:
    log_dir = Path(log_dir)
    check_partition_dirs(partition_dirs)
    p = Plan("recover", log_dir)
    if opts.resolver is None:
        opts = dataclasses.replace(opts, resolver=ConfigResolver.of_log_dir(log_dir))
    ld = LogDir(log_dir)
    clean = ld.file(names.CLEAN_SHUTDOWN_FILE).exists()
    # read leniently: a damaged checkpoint has no entry, as a broker starting afresh takes it
    roots = ld.checkpoints(strict=False)
    rps = roots.recovery_points
    delete_interrupted_writes(p, log_dir)
    new_rps = dict(rps.offsets)
    for d in partition_dirs:
        tp = parse_partition_dir(Path(d).name)
        part = Partition.open(d, roots.for_partition(tp))
        leo = _plan_partition_or_split(p, part, clean, opts)
        if leo is not None and (tp.topic != METADATA_TOPIC or rps.get(tp) is not None):
            # KRaft's metadata log is not LogManager's: it never has a recovery-point entry
            new_rps[(tp.topic, tp.partition)] = leo
    if new_rps != rps.offsets:
        p.add(Action(ActionKind.UPDATE_CHECKPOINT, rps.path, "recovery point = log end offset",
                     data=ckpt.encode_offsets(new_rps, order=rps.order)))
    if opts.check_crc:
        note_bit_rot(p, partition_dirs)
    else:
        p.note(log_dir.name, "the CRCs of the segments the broker does not recover were not checked "
               "(--no-crc-check): bit rot there is not named; kafkalog verify-crc checks them")
    return p


@dataclass
class BitRotFinding(KeptFinding):
    """A batch failing its CRC in a segment the plan leaves as it is: the broker serves it."""

    rot: "BitRot | None" = None
    kept_problem: ClassVar[bool] = True     # a run that leaves it exits 1 (something found)

    def to_json(self) -> dict:
        return {**super().to_json(), "damage": "crc", "offsets": [self.rot.base_offset, self.rot.last_offset]}


def note_bit_rot(p: Plan, partition_dirs: list[Path]) -> None:
    """Damage the broker keeps and recover leaves by default: every batch failing its CRC
    (ops.verify's check) that the plan's truncations, deletions and salvage rewrites leave in
    place, one finding each with who is hit and the fixes. A batch already named as kept under
    .kafka_cleanshutdown is not named twice."""
    from kafkalog_cli.ops.verify import bit_rot

    removed: dict[str, list[Action]] = {}
    for a in p.actions:
        if a.kind in (ActionKind.TRUNCATE, ActionKind.DELETE, ActionKind.REWRITE_SEGMENT):
            # a salvage rewrite's ranges are positions in its source
            read = a.source if a.kind is ActionKind.REWRITE_SEGMENT and a.source is not None else a.path
            removed.setdefault(os.path.abspath(read), []).append(a)

    def cut(file: str, position: int) -> bool:
        for a in removed.get(os.path.abspath(file), ()):
            if a.kind is ActionKind.DELETE or (a.kind is ActionKind.TRUNCATE and a.at is not None and position >= a.at):
                return True
            if a.kind is ActionKind.REWRITE_SEGMENT and not any(lo <= position < hi for lo, hi in a.ranges or ()):
                return True
        return False

    named = {(os.path.abspath(f.path), f.position) for f in p.findings if isinstance(f, KeptFinding) and f.path}
    for d in partition_dirs:
        for rot in bit_rot(d, cut):
            if (os.path.abspath(rot.file), rot.position) in named:
                continue
            p.findings.append(BitRotFinding(rot.partition, f"{rot.what()}: left as it is; {rot.who_is_hit()}. Fix: "
                                            f"{rot.fixes(p.log_dir)}", rot.file, rot.position, rot=rot))


class SegmentOverflow(Exception):
    """Recovery met a batch whose offsets overflow its segment's index: the broker splits the
    segment and recovers again (LogLoader.retryOnOffsetOverflow)."""

    def __init__(self, segment: Segment, error: OffsetOverflowError, leftovers: list[Action]):
        super().__init__(error.message)
        self.segment, self.error = segment, error
        self.leftovers = leftovers         # the leftover files' deletes and renames, done first


def _plan_partition_or_split(p: Plan, part: Partition, clean: bool, opts: RecoverOptions) -> int | None:
    """`_plan_partition`, in a plan of its own, merged into `p`; where the recovery meets an
    offset overflow, the broker's split first, then the recovery of the split segments."""
    sub = Plan(p.op, p.log_dir)
    try:
        leo = _plan_partition(sub, part, clean, opts)
    except SegmentOverflow as o:
        return _plan_split(p, part, clean, opts, o)
    _merge(p, sub)
    return leo


def _merge(p: Plan, sub: Plan, moved: tuple[Path, Path] | None = None) -> None:
    """`sub`'s actions, findings and summaries appended to `p`; with `moved` (staged dir, real
    dir), its paths taken from the staged copy to the partition itself."""
    def real(path):
        if moved is None or path is None:
            return path
        path = Path(path)
        return moved[1] / path.relative_to(moved[0]) if path.is_relative_to(moved[0]) else path

    for a in sub.actions:
        p.add(dataclasses.replace(a, path=real(a.path), target=real(a.target), source=real(a.source)))
    for f in sub.findings:     # replaced, not rebuilt: a KeptFinding stays one
        p.findings.append(f if moved is None or f.path is None else dataclasses.replace(f, path=str(real(f.path))))
    p.partitions.update(sub.partitions)


def _plan_split(p: Plan, part: Partition, clean: bool, opts: RecoverOptions, o: SegmentOverflow) -> int | None:
    """LocalLog.splitOverflowedSegment, then the recovery run again (on a staged copy of the
    partition with the split made, so that the plan shows both; applying it splits first)."""
    s, name = o.segment, part.name
    cfg = opts.resolver.for_topic(part.topic_partition.topic)
    with s.mapped() as buf:
        try:
            pieces = split_overflowed_segment(buf, s.base_offset, cfg.index_interval_bytes, o.error.position)
        except OffsetOverflowError as e:
            # the broker does not start: refused, with what stops it
            raise OffsetOverflowError(f"{o.error.message}; the broker splits such a segment, but here it "
                                      f"cannot: {e.message}. `kafkalog recover --salvage` skips the damaged batch",
                                      path=str(s.log_path), position=e.position) from None
    with tempfile.TemporaryDirectory(prefix="kafkalog-split-") as tmp:
        staged = _stage_split(part, s, pieces, Path(tmp), clean, o.leftovers)
        sub = Plan(p.op, p.log_dir)
        leo = _plan_partition_or_split(sub, Partition.open(staged, part.checkpoints), clean, opts)
    bases = [x.base_offset for x in pieces]
    with s.mapped() as buf:     # a piece holds at least one batch: the split appends one or fails
        layout = ", ".join(f"{x.base_offset} (offsets {x.base_offset}..{_last_in(buf, (x.start, x.end))})"
                           for x in sorted(pieces, key=lambda x: x.base_offset))
    p.note(name, f"segment {s.base_offset}: {o.error.message}. The broker splits the segment "
                 f"(LocalLog.splitOverflowedSegment) into segments {layout} and recovers them, and so does "
                 f"kafkalog: the damaged batch's records are served at those offsets, the log end becomes {leo}, "
                 f"and producers and consumers go on from there. `kafkalog recover --salvage` skips the damaged "
                 f"batch instead", s.log_path, o.error.position)
    for a in o.leftovers:
        p.add(a)
    p.add(Action(ActionKind.SPLIT_SEGMENT, s.log_path, "offsets overflow the segment's index: split as the "
                 "broker splits it", name, pieces=pieces, source=s.log_path))
    _merge(p, sub, moved=(staged, part.directory))
    p.partitions[name]["split_segments"] = {str(s.base_offset): bases}
    return leo


def _stage_split(part: Partition, s: Segment, pieces, tmp: Path, clean: bool, leftovers: list[Action]) -> Path:
    """A copy of the partition dir as the leftover handling and the split leave it (the old
    segment's files gone, the new ones in place with its mtime), to plan the recovery that
    follows. Unchanged files are hard links where the file system allows, else copies; nothing in
    the log dir is touched."""
    old = {s.file(suf).name for suf in (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX,
                                        names.TXN_INDEX_SUFFIX)}
    gone = {a.path.name for a in leftovers if a.kind == ActionKind.DELETE}
    renamed = {a.target.name: a.path for a in leftovers if a.kind == ActionKind.RENAME}
    links = {f.name: f for f in part.directory.iterdir() if f.is_file() and f.name not in gone}
    for src in renamed.values():
        links.pop(src.name, None)
    links.update(renamed)
    links = {name: f for name, f in links.items() if name not in old}
    mtime = s.source_path.stat().st_mtime_ns
    contents: dict[str, tuple[bytes, int | None]] = {}
    with files.opened(s.source_path) as src:
        for piece in pieces:
            src.seek(piece.start)
            name = segment_file(Path(), piece.base_offset, "").name
            contents[name + names.LOG_SUFFIX] = (src.read(piece.size), mtime)
            contents[name + names.INDEX_SUFFIX] = (piece.index, None)
            contents[name + names.TIME_INDEX_SUFFIX] = (piece.time_index, None)
    if clean:     # Partition.open reads the marker beside the partition dir
        stage_copy(tmp, {}, {names.CLEAN_SHUTDOWN_FILE: (b"", None)})
    return stage_copy(tmp / part.directory.name, links, contents)


def check_segments_readable(part: Partition) -> None:
    """InputError (exit 4) for a segment that is not a regular file (a FIFO, a dangling symlink,
    a directory): LogLoader lists regular files only, so a broker would load the partition
    without it and lose its records without a word. Nothing in the log dir is changed."""
    for s in part.segments:
        why = not_regular_reason(s.log_path)
        if why is not None:
            raise InputError(f"segment cannot be recovered: {why} (a broker would load the partition "
                             f"without it); restore the file or move it away", path=str(s.log_path))


def _plan_partition(p: Plan, part: Partition, clean: bool, opts: RecoverOptions) -> int | None:
    check_segments_readable(part)
    d, name = part.directory, part.name
    recovery_point = part.checkpoints.recovery_point or 0
    log_start = part.checkpoints.log_start_offset or 0
    cfg = opts.resolver.for_topic(part.topic_partition.topic)
    segs = _resolve_leftovers(p, part)
    leftovers = list(p.actions)          # LogLoader's first pass, before any recovery
    bases = sorted(segs)
    summary = {"recovery_point": recovery_point, "clean_shutdown": clean, "segments": len(bases),
               "recovered_segments": [], "truncated_bytes": 0, "deleted_segments": []}
    p.partitions[name] = summary
    # which segments to check batch by batch
    if opts.all_segments:
        start_idx = 0
    elif clean:
        start_idx = len(bases)
    else:
        start_idx = 0
        for i, b in enumerate(bases):
            if b <= recovery_point:
                start_idx = i
    recover_set = set(bases[start_idx:])
    if clean and not opts.all_segments:
        _note_hidden_by_marker(p, part, [segs[b] for b in bases], recovery_point)
    swapped_without_index: dict[int, int] = {}      # base -> the zero-filled .index length the broker leaves
    for b in bases:
        # LogLoader.loadSegmentFiles: a segment without an .index is recovered. A swapped-in
        # segment is loaded like any other once its .swap files are renamed (Kafka 3.3.1)
        index_source = _source(p, segs[b].index_path)
        swapped_in_without_index_swap = (segs[b].read_from is not None and
                                         (index_source is None or index_source == segs[b].index_path))
        if swapped_in_without_index_swap and b not in recover_set and not opts.repair:
            # the swap pass opened the .swap segment: readNextOffset created a preallocated
            # .index.swap, renamed with the rest (over an old .index an empty .swap's range did
            # not delete), so loadSegmentFiles finds that index
            swapped_without_index[b] = cfg.segment_index_bytes // 8 * 8
        elif index_source is None:
            recover_set.add(b)
    epochs_path = part.path(names.LEADER_EPOCH_CHECKPOINT)
    epochs_problem = _epochs_problem(epochs_path)
    if epochs_problem is not None:
        # a broker refuses to load the partition; rebuilt from the batches' partition leader epochs:
        # headers of the segments not scanned, the scan of the others
        p.note(name, f"{epochs_problem}; Kafka would refuse it: rebuilt from the partition leader "
                     f"epochs of the batches", epochs_path)
        old_epochs = None
    else:
        old_epochs = ckpt.read_epochs(epochs_path)
    epochs = list(old_epochs or [])
    if epochs and bases:
        # entries at or past the log end before recovery go at its end in any case
        # (LeaderEpochFileCache.truncateFromEnd); dropped first, as a second load starts without
        # them, so that the epochs LogSegment.recover assigns only above the latest one are
        # assigned in this run and the result is a fixed point
        bound = segs[bases[-1]].read_next_offset()
        epochs = [(e, o) for e, o in epochs if o < bound]
    state = rebuild_producer_state(d, [segs[b] for b in bases], min(recover_set) if recover_set else None,
                                   now_ms=opts.now_ms, expiration_ms=cfg.producer_id_expiration_ms,
                                   log_start=log_start, ignored=lambda m, f: p.note(name, m, f),
                                   versions=opts.resolver.versions)
    snapshots_to_write: dict[int, bytes] = {}
    last_end: int | None = None          # where the previous recovered segment ended
    if recover_set:
        snapshots_to_write.update(_snapshots_before_recovery(
            p, part, [segs[b] for b in bases], min(recover_set), state,
            lambda upto: rebuild_producer_state(d, [segs[b] for b in bases], upto, now_ms=opts.now_ms,
                                                expiration_ms=cfg.producer_id_expiration_ms, log_start=log_start,
                                                versions=opts.resolver.versions)))
    leo = bases[0] if bases else log_start
    deleted_from: int | None = None
    for i, b in enumerate(bases):
        s = segs[b]
        with s.mapped() as buf:
            if b not in recover_set:
                idx = _current(p, s.index_path) or b""
                if b in swapped_without_index:
                    idx = bytes(swapped_without_index[b])
                    p.add(Action(ActionKind.CREATE_SEGMENT_FILE, s.index_path, "the swapped-in segment had no "
                                 ".index.swap: the broker's swap pass leaves a preallocated zero-filled index",
                                 name, data=b"", preallocate=len(idx)))
                tidx = _current(p, s.time_index_path) or b""
                # the index as it will be (maybe a .index.swap), not necessarily s.index_path's
                entries = parse_offset_index(idx, b)
                nxt = s.next_offset_after((entries[-1].offset - b, entries[-1].position) if entries else None)
                # the broker does not check the indexes of a segment it does not recover
                # (LogSegment.sanityCheck): their damage is repaired with --repair only
                damage = index_problem(buf, b, idx, tidx, nxt)
                problem = damage if opts.repair else None
                index_fault = False
                if problem is None and b == bases[-1]:
                    problem = load_failure(buf, entries[-1].position if entries else 0)
                    kept = None if problem is not None else _unrecovered_end(
                        s, (entries[-1].offset - b, entries[-1].position) if entries else None)
                    if kept is not None and (opts.repair or _entry_kafka_never_writes(entries, b)):
                        # such an entry (not an unflushed tail) drops the segment's offsets from a
                        # clean load: recovering it rebuilds the index (_valid_data_lost guards the batches)
                        problem = kept[0]
                        index_fault = not opts.repair
                    elif kept is not None:
                        p.note(name, f"segment {b}: {kept[0]}; kafkalog leaves it as the broker loads it "
                                     f"(.kafka_cleanshutdown: no recovery); `kafkalog recover --repair` "
                                     f"recovers the segment instead", s.log_path, kept[1])
                if problem is None and damage is not None:
                    _note_kept(p, name, s, b, damage, buf, idx, tidx,
                               missing_time_index=_source(p, s.time_index_path) is None)
                if problem is not None and not opts.salvage:
                    try:
                        lost = _valid_data_lost(buf, b, cfg.index_interval_bytes, state, epochs, b == bases[-1])
                    except OffsetOverflowError as e:
                        lost = f"its offsets overflow: {e.message}; a broker splits it only when it recovers it"
                    if lost is not None:
                        # the broker keeps the segment as it is (below the recovery point or after a
                        # clean shutdown): a repair beyond Kafka never costs valid batches
                        p.note(name, f"segment {b}: {problem}; not rebuilt: recovering it would drop "
                                     f"valid batches ({lost}); a broker keeps it as it is. --all recovers "
                                     f"it as a broker's recovery would, --salvage skips only the damage",
                               s.log_path)
                        problem = None
                if problem is None:
                    if _source(p, s.time_index_path) is None:
                        p.add(Action(ActionKind.CREATE_SEGMENT_FILE, s.time_index_path, "no time index: the "
                                     "broker creates it empty (LogSegment.sanityCheck resizes a new one to 0)",
                                     name, data=b""))
                    leo = nxt
                    if epochs_problem is not None:
                        _epochs_from_headers(buf, epochs)
                    if recover_set and b > min(recover_set):
                        replay(s, state)
                    continue
                p.findings.append((IndexFaultFinding if index_fault else Finding)(
                    name, f"segment {b}: {problem}; recovering it", str(s.index_path)))
            summary["recovered_segments"].append(b)
            if last_end is not None and b > last_end:
                # recoverSegment's rebuild up to this base snapshots it: past the previous
                # segment's end when the cleaner left a gap
                snapshots_to_write[b] = state.snapshot_bytes()
            try:
                r = scan_segment(buf, b, cfg.index_interval_bytes, state, epochs, opts.salvage)
            except OffsetOverflowError as e:
                raise SegmentOverflow(s, e.located(path=str(s.log_path)), leftovers) from None
            size = len(buf)
            cut = size - (r.valid_bytes if r.kept_ranges is None else sum(e - s_ for s_, e in r.kept_ranges))
            truncating = r.valid_bytes < size if r.kept_ranges is None else cut > 0
            if r.error is not None:
                p.note(name, f"segment {b}: {r.error.message}", s.log_path,
                       r.error.position if r.error.position is not None else r.valid_bytes)
            later = bases[i + 1:]
            if truncating and later and not opts.salvage:
                # Kafka deletes all later segments; newest first, .log first, so that a crash
                # leaves a log that still ends in order
                for lb in reversed(later):
                    for suf in (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX, names.TXN_INDEX_SUFFIX):
                        f = segs[lb].file(suf)
                        if _source(p, f) is not None:
                            p.add(Action(ActionKind.DELETE, f, f"after the corruption in segment {b}", name))
                    summary["deleted_segments"].append(lb)
                deleted_from = later[0]
            if truncating:
                summary["truncated_bytes"] += cut
                holes = [(a_, e_) for a_, e_ in r.skipped if e_ < size]
                if holes:
                    p.add(Action(ActionKind.REWRITE_SEGMENT, s.log_path, "--salvage: damaged bytes "
                                 + ", ".join(f"[{a_}, {e_})" for a_, e_ in r.skipped), name,
                                 ranges=r.kept_ranges, bytes_removed=cut, source=s.log_path))
                    for a_, e_ in r.skipped:
                        gap = _offsets_between(buf, r.kept_ranges, a_, e_)
                        p.note(name, f"segment {b}: skipped damaged bytes [{a_}, {e_})"
                                     + (f": offsets {gap[0]}..{gap[1]} are lost for good" if gap else ""),
                               s.log_path, a_)
                else:
                    valid_end = r.valid_bytes
                    why = ("invalid or incomplete batches at the end" if not r.invalid_offset
                           else "offsets out of order: Kafka empties the segment")
                    later = None if r.invalid_offset else _next_valid_batch(buf, valid_end + 1, size, r.next_offset)
                    if later is not None:
                        intact = _offsets_in(buf, later)
                        why += (f"; offsets {r.next_offset}..{intact[0] - 1} are damaged, and the intact batches "
                                f"after them (offsets {intact[0]}..{intact[1]}) go too: --salvage keeps those")
                    p.add(Action(ActionKind.TRUNCATE, s.log_path, why, name, at=valid_end,
                                 bytes_removed=size - valid_end, offsets_removed=_offsets_in(buf, valid_end)))
            _index_actions(p, s, r, name)
            leo = r.next_offset
            if r.next_offset > b:
                # takeSnapshot writes only past the last snapshot: an emptied segment gets none
                snapshots_to_write[r.next_offset] = state.snapshot_bytes()
            last_end = r.next_offset
            if deleted_from is not None:
                break
    live_bases = [b for b in bases if deleted_from is None or b < deleted_from]
    if not bases:
        p.note(name, f"no segment: creating an empty one at the log start offset {log_start}")
        for suf in (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX):
            p.add(Action(ActionKind.CREATE_SEGMENT_FILE, segment_file(d, log_start, suf), "empty log", name, data=b""))
        live_bases = [log_start]
        leo = log_start
    if not recover_set and bases and not _upgrade_path(p, part, clean, live_bases):
        # nothing recovered: rebuildProducerState(lastOffset = the log end) runs truncateAndReload
        # (snapshots above the log end go), loads the latest snapshot at or below it and replays
        # the log from there up to it, snapshotting the last two segment bases on the way
        def state_at(upto: int) -> ProducerState:
            return rebuild_producer_state(d, [segs[b] for b in live_bases], upto, now_ms=opts.now_ms,
                                          expiration_ms=cfg.producer_id_expiration_ms, log_start=log_start,
                                          versions=opts.resolver.versions)
        state = state_at(leo)
        snapshots_to_write.update(_snapshots_before_recovery(p, part, [segs[b] for b in live_bases], leo,
                                                             state, state_at))
    _snapshot_actions(p, part, live_bases, leo, snapshots_to_write, state.snapshot_bytes(),
                      start=_loaded_log_start(p, part, cfg, opts.resolver, log_start, live_bases[0]), clean=clean,
                      recovered_from=min(recover_set) if recover_set else None)
    # leader epochs: assigned from the batches, then truncated to [.., LEO)
    epochs = [(e, o) for e, o in epochs if o < leo]
    if epochs != old_epochs:
        p.add(Action(ActionKind.UPDATE_CHECKPOINT, epochs_path, "leader epochs of the recovered log", name,
                     data=ckpt.encode_epochs(epochs)))
    summary["log_end_offset"] = leo
    return leo


def _epochs_problem(path: Path) -> str | None:
    """Why a broker would fail to load this leader-epoch-checkpoint (LeaderEpochCheckpointFile.read
    and LeaderEpochFileCache.assign), or None (also when there is none)."""
    raw = files.read_bytes_if_exists(path)
    if raw is None:
        return None
    try:
        load_leader_epoch_cache(parse_leader_epoch_checkpoint(raw, path=str(path)))
    except CheckpointError as e:
        return e.message
    except ValueError as e:      # a negative epoch or offset
        return str(e)
    return None


def assign_epochs(epochs: list[tuple[int, int]], epoch: int, start_offset: int) -> None:
    """LeaderEpochFileCache.assign on `epochs` in place, as LogSegment.recover calls it for a batch
    whose epoch is above the latest: entries from `start_offset` on go first (formats.checkpoints)."""
    epochs[:] = [(x.epoch, x.start_offset) for x in assign_epoch([EpochEntry(e, o) for e, o in epochs],
                                                                 epoch, start_offset)]


def _epochs_from_headers(buf, epochs: list[tuple[int, int]]) -> None:
    """Leader epochs assigned from the batch headers of a segment not scanned (no CRC check), as
    the scan assigns them."""
    latest = epochs[-1][0] if epochs else -1
    try:
        for b in iter_batches(buf):
            if b.magic >= 2 and b.partition_leader_epoch >= 0 and b.partition_leader_epoch > latest:
                latest = b.partition_leader_epoch
                assign_epochs(epochs, latest, b.base_offset)
    except KafkalogError:
        pass


def _offsets_between(buf, kept: list[tuple[int, int]] | None, start: int, end: int) -> tuple[int, int] | None:
    """--salvage: the offsets a skipped byte range [start, end) held, from the kept batches around
    it (the damaged bytes themselves cannot be trusted): after the last kept batch before it, up to
    the first kept batch after it (or the end of what the skipped bytes' headers still say)."""
    before = [r for r in kept or [] if r[1] <= start]
    after = [r for r in kept or [] if r[0] >= end]
    first = _last_in(buf, before[-1]) + 1 if before else None
    last = _offsets_in(buf, after[0][0])[0] - 1 if after and _offsets_in(buf, after[0][0]) else None
    if first is None or last is None or last < first:
        return None
    return first, last


def _last_in(buf, rng: tuple[int, int]) -> int:
    last = -1
    for b in iter_batches(buf, rng[0], rng[1]):
        last = b.last_offset
    return last


def _offsets_in(buf, start: int) -> tuple[int, int] | None:
    first = last = None
    try:
        for b in iter_batches(buf, start):
            if first is None:
                first = b.base_offset_field
            last = b.last_offset
    except KafkalogError:
        pass
    return None if first is None else (first, last)


def _gone(p: Plan) -> set[Path]:
    """Files an earlier action of the plan removes: count them as absent."""
    return {a.path for a in p.actions if a.kind == ActionKind.DELETE}


def _source(p: Plan, f: Path) -> Path | None:
    """Where the bytes `f` holds once the plan's earlier actions have run are now: a file renamed
    onto it (a `.swap`), `f` itself, or None when it is removed or absent."""
    for a in reversed(p.actions):
        if a.kind == ActionKind.RENAME and a.target == f:
            return a.path
    if f in _gone(p) or not f.exists():
        return None
    return f


def _current(p: Plan, f: Path) -> bytes | None:
    src = _source(p, f)
    return None if src is None else read_file(src)


def _index_actions(p: Plan, s: Segment, r: ScanResult, name: str) -> None:
    b = r.builder
    for suf, data in ((names.INDEX_SUFFIX, b.offset_index_bytes()), (names.TIME_INDEX_SUFFIX, b.time_index_bytes())):
        f = s.file(suf)
        if _current(p, f) != data:
            p.add(Action(ActionKind.REBUILD_INDEX, f, "rebuilt as LogSegment.recover builds it", name, data=data))
    txn = s.file(names.TXN_INDEX_SUFFIX)
    data = encode_txn_index(r.aborted)
    old = _current(p, txn)
    if (data or old is not None) and old != data:
        p.add(Action(ActionKind.REBUILD_INDEX, txn, "aborted transactions of the recovered segment", name, data=data))


def _loaded_log_start(p: Plan, part: Partition, cfg, resolver: ConfigResolver, checkpointed: int,
                      first_base: int) -> int:
    """LogLoader's newLogStartOffset, below which rebuildProducerState (truncateAndReload) drops
    the snapshots: for a remote-enabled log (3.6+) the checkpoint's as is, which may lie below the
    first local segment (remote data), so the snapshot at that segment's base stays; else max(it,
    the first segment's base). Not known whether the log is remote-enabled: the snapshots stay
    (a broker that loads the log as a plain one removes them itself), with a note."""
    from kafkalog_cli.ops import tiered

    if checkpointed >= first_base:
        return checkpointed
    remote = tiered.remote_log(part, cfg, resolver)
    if remote.enabled is None:
        p.note(part.name, f"producer snapshots at or below the first segment {first_base} kept: whether the "
                          f"log is remote-enabled is not known ({remote.undecided})")
    return checkpointed if remote.enabled is not False else first_base


def _snapshot_actions(p: Plan, part: Partition, bases: list[int], leo: int, new: dict[int, bytes],
                      state_at_leo: bytes, start: int, clean: bool, recovered_from: int | None) -> None:
    """The producer snapshots LogLoader leaves: those of the recovered segments; strays removed
    (removeStraySnapshots) and those above the log end or at or below the log start offset
    (truncateAndReload); at the log end, the one there if it reads, else the state written
    (takeSnapshot, only past the latest snapshot). After a clean shutdown with no snapshot at
    all, empty ones at the last two segment bases and the log end (rebuildProducerState's
    upgrade path: the broker does not scan the log for producers then), those above the log
    start offset only, so that the result is one a second recover leaves as it is."""
    keep = set(bases) | {leo}
    gone = _gone(p)
    existing = {off: part.path(f) for off, f in part.snapshots.items() if part.path(f) not in gone}
    # recovering from a segment deletes every snapshot above its base (truncateAndReload)
    surviving = {off: f for off, f in existing.items() if off in keep and start < off <= leo
                 and (recovered_from is None or off <= recovered_from)}
    writes = {off: data for off, data in new.items() if off in keep and off > start}
    if leo not in writes:
        if not writes and (_upgrade_path(p, part, clean, bases) if recovered_from is None
                           else clean and not surviving):
            lower = [b for b in bases if b < bases[-1]]
            # none at or below the log start offset: the broker writes it here but its next
            # load deletes it (truncateAndReload), so recover would undo it on every other run
            last = start
            for off in (lower[-1] if lower else None, bases[-1], leo):
                if off is not None and off > last:
                    writes[off] = ProducerState().snapshot_bytes()
                    last = off
        elif not (leo in surviving and _snapshot_readable(surviving[leo])):
            readable = [o for o, f in surviving.items() if o < leo and _snapshot_readable(f)] + list(writes)
            if leo > max(readable, default=start):
                writes[leo] = state_at_leo
    for off, data in sorted(writes.items()):
        f = segment_file(part.directory, off, names.SNAPSHOT_SUFFIX)
        if _current(p, f) != data:
            p.add(Action(ActionKind.WRITE_SNAPSHOT, f, "producer state at this offset", part.name, data=data))
    for off, f in sorted(existing.items()):
        if off not in surviving and off not in writes:
            why = "at or below the log start offset" if off <= start else "stray producer snapshot"
            p.add(Action(ActionKind.DELETE, f, why, part.name))


def _upgrade_path(p: Plan, part: Partition, clean: bool, bases: list[int]) -> bool:
    """rebuildProducerState's upgrade path: after a clean shutdown with no snapshot left once
    removeStraySnapshots has run (it keeps those at segment bases and the latest stray above the
    last base), the broker writes empty snapshots instead of scanning the log."""
    if not clean:
        return False
    gone = _gone(p)
    return not any(part.path(f) not in gone and (off in bases or off > bases[-1])
                   for off, f in part.snapshots.items())


def _snapshots_before_recovery(p: Plan, part: Partition, segments: list[Segment], first: int,
                               state: ProducerState, state_at) -> dict[int, bytes]:
    """The snapshots LogLoader.recoverSegment takes before it recovers the first segment (its
    rebuildProducerState up to that segment's base): replaying from the latest readable snapshot
    (else the log start offset), one at each of the last two segment bases passed, then one at the
    base itself, each only past the last one taken (takeSnapshot)."""
    out: dict[int, bytes] = {}
    if first <= 0:
        return out
    log_start = part.checkpoints.log_start_offset or 0
    gone = _gone(p)
    readable = [o for o, f in part.snapshots.items()
                if log_start < o <= first and part.path(f) not in gone and _snapshot_readable(part.path(f))]
    last = max(readable, default=log_start)
    bases = [s.base_offset for s in segments]
    for b in bases[-2:]:
        if last < b < first and b >= bases[0]:
            out[b] = state_at(b).snapshot_bytes()
            last = b
    if first > last:
        out[first] = state.snapshot_bytes()
    return out


def _snapshot_readable(f: Path) -> bool:
    """ProducerStateManager.readSnapshot accepts it (else the broker deletes it and loads an older one)."""
    try:
        parse_producer_snapshot(read_file(f), path=str(f))
        return True
    except KafkalogError:
        return False


def _loader_files(part: Partition) -> list[str]:
    """The names LogLoader looks at, from the partition's one listing, sorted: our interrupted
    writes, the .deleted/.cleaned/.swap files, segments, indexes and snapshots. Only regular files:
    LogLoader lists `file.isFile` alone."""
    listed = [*part.leftovers, *part.temp_files, *(s.log_path.name for s in part.segments),
              *(n for ns in part.index_files.values() for n in ns), *part.snapshots.values()]
    return sorted(n for n in listed if os.path.isfile(part.path(n)))


def finish_interrupted_rewrites(p: Plan, part: Partition) -> list[str]:
    """The leftovers of an interrupted rewrite (our `*.kafkalog-tmp`, `.deleted`, `.cleaned`,
    `.swap`) resolved as LogLoader resolves them on start (removeTempFilesAndCollectSwapFiles,
    then the swap pass: the files a valid `.swap` covers removed, the `.swap` renamed): the
    actions into `p`; the leftover names (none: nothing to finish)."""
    left = sorted([*part.leftovers, *part.temp_files])
    if left:
        _resolve_leftovers(p, part)
    return left


def _resolve_leftovers(p: Plan, part: Partition) -> dict[int, Segment]:
    """LogLoader.removeTempFilesAndCollectSwapFiles + the swap handling; returns the segments as
    they will be once the actions run (a swapped-in one read from its .swap until it is renamed)."""
    name = part.name
    files = _loader_files(part)
    present = set(files)
    for f in files:
        if f.endswith(TMP_SUFFIX):
            p.add(Action(ActionKind.DELETE, part.path(f), "an interrupted kafkalog write", name))
            present.discard(f)
    for f in files:
        if f.endswith(names.DELETED_SUFFIX) and not f.endswith(names.CHECKPOINT_SUFFIX + names.DELETED_SUFFIX):
            p.add(Action(ActionKind.DELETE, part.path(f), "leftover .deleted file (LogLoader deletes it)", name))
            present.discard(f)
    cleaned = [f for f in files if f.endswith(names.CLEANED_SUFFIX)]
    swaps = [f for f in files if f.endswith(names.SWAP_SUFFIX)]
    min_cleaned = min((offset_from_name(f) for f in cleaned if offset_from_name(f) is not None), default=None)
    valid_swaps = []
    for f in swaps:
        off = offset_from_name(f)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            p.add(Action(ActionKind.DELETE, part.path(f), f"invalid .swap file (at or above the smallest "
                         f".cleaned offset {min_cleaned}: an interrupted split)", name))
            present.discard(f)
        else:
            valid_swaps.append(f)
    for f in cleaned:
        p.add(Action(ActionKind.DELETE, part.path(f), "leftover .cleaned file (LogLoader deletes it)", name))
        present.discard(f)
    swapped_bases = set()
    log_swaps = [f for f in valid_swaps if f.endswith(names.LOG_SUFFIX + names.SWAP_SUFFIX)]
    if log_swaps:
        # the range the swapped-in segments cover: each .swap's own walk, from its first byte
        lo = min(offset_from_name(f) for f in log_swaps)
        hi = max(Segment(part.directory, offset_from_name(f), read_from=part.path(f)).next_offset_after(None)
                 for f in log_swaps)
        for f in files:
            off = offset_from_name(f)
            if (f in present and off is not None and lo <= off < hi and not f.endswith(names.SWAP_SUFFIX)
                    and f.endswith(names.SEGMENT_SUFFIXES + (names.SNAPSHOT_SUFFIX,))):
                p.add(Action(ActionKind.DELETE, part.path(f), f"replaced by the .swap segments [{lo}, {hi})", name))
                present.discard(f)
    for f in valid_swaps:
        final = f[: -len(names.SWAP_SUFFIX)]
        p.add(Action(ActionKind.RENAME, part.path(f), "completes an interrupted swap (LogLoader)", name,
                     target=part.path(final)))
        present.discard(f)
        present.add(final)
        if final.endswith(names.LOG_SUFFIX):
            swapped_bases.add(offset_from_name(final))
    logs = sorted((off, f) for f in present
                  if f.endswith(names.LOG_SUFFIX) and (off := offset_from_name(f)) is not None)
    segs = {}
    for i, (off, f) in enumerate(logs):
        read_from = part.path(f + names.SWAP_SUFFIX) if off in swapped_bases else None
        segs[off] = Segment(part.directory, off, read_from=read_from, is_active=i == len(logs) - 1)
    for f in sorted(present):
        off = offset_from_name(f)
        if off is None or off in segs:
            continue
        if f.endswith((names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX, names.TXN_INDEX_SUFFIX)):
            p.add(Action(ActionKind.DELETE, part.path(f), "index file without a .log (LogLoader deletes it)", name))
    return segs
