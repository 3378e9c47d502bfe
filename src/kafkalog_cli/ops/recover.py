"""`kafkalog recover`: the broker's startup recovery, offline (LogLoader.load, LogSegment.recover).

plan() reads and decides; apply() (ops.plan.apply) changes files. Per partition, in this order,
which keeps every intermediate state loadable by a broker and by a second `recover`:

1. leftovers as LogLoader resolves them: our own `*.kafkalog-tmp`, `*.deleted`, `*.cleaned`,
   `.swap` files at or above the smallest `.cleaned` offset (an interrupted split) are removed;
   the files a valid `.swap` replaces are removed, then the `.swap` suffix is stripped;
2. segments from the one holding the recovery point to the end (every segment with `--all`, none
   after a clean shutdown) are checked batch by batch; the first invalid batch ends the log:
   the later segments go first (newest first), then the segment is truncated. A segment
   LogLoader.loadSegmentFiles recovers as it loads it (no .index, a .txnindex failing
   TransactionIndex.sanityCheck) is checked whatever the recovery point and the marker say, and
   its truncation keeps the later segments (a gap); a log end offset below the log start offset
   then deletes every segment, and the log starts empty at the log start offset (recoverLog);
3. .index, .timeindex and .txnindex rebuilt with Kafka's algorithm, written only where they differ;
   beyond Kafka: indexes of segments that are not recovered are checked too (a zero-filled or
   truncated index a broker would keep) and rebuilt;
4. producer snapshots: those LogLoader leaves, its steps replayed on the files (per recovered
   segment a rebuild up to its base and a snapshot at its end; strays removed; the rebuild up to
   the log end);
5. leader-epoch-checkpoint (rebuilt from the batches' partition leader epochs when a broker
   would refuse to load it), then the recovery point (= log end offset), last.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.errors import (
    CheckpointError,
    CorruptIndexError,
    InputError,
    InvalidOffsetError,
    KafkalogError,
    OffsetOverflowError,
)
from kafkalog_cli.formats.checkpoints import load_leader_epoch_cache, parse_leader_epoch_checkpoint
from kafkalog_cli.formats.indexes import parse_offset_index, read_start
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.formats.txnindex import encode_txn_index, load_sanity_check
from kafkalog_cli.ops.plan import Action, ActionKind, Finding, Plan, delete_interrupted_writes
from kafkalog_cli.ops.producer_rebuild import (
    LogView,
    ProducerState,
    SnapshotFiles,
    SnapshotManager,
    rebuild_producer_state,
    rebuild_snapshots,
    replay,
    snapshot_insertion_order,
)
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.fsops import TMP_SUFFIX, stage_copy
from kafkalog_cli.storage.index_checks import (
    IndexDefect,
    IndexFile,
    entry_kafka_never_writes,
    index_rebuild_reason,
)
from kafkalog_cli.storage.logdir import LogDir
from kafkalog_cli.storage.names import offset_from_name, parse_partition_dir, segment_file
from kafkalog_cli.storage.overflow import split_overflowed_segment
from kafkalog_cli.storage.partition import Partition, log_deleted_on_load
from kafkalog_cli.storage.recovery import (
    SegmentRecovery,
    StopReason,
    assign_epochs,
    next_valid_batch,
    recover_segment,
)
from kafkalog_cli.storage.segment import Segment, not_regular_reason, read_file

if TYPE_CHECKING:
    from kafkalog_cli.ops.verify import BitRot

METADATA_TOPIC = "__cluster_metadata"
_PREFIX = struct.Struct(">qi")


@dataclass
class KeptFinding(Finding):
    """Damage left as the broker leaves it (not rebuilt without --repair)."""

    def to_dict(self) -> dict:
        return {**super().to_dict(), "left_as_broker_leaves": True}


class RecoveredAtLoadFinding(Finding):
    """A segment LogLoader.loadSegmentFiles recovers as it loads it (no offset index, a
    .txnindex failing its sanity check), whatever the recovery point and the clean shutdown."""


@dataclass
class GapFinding(Finding):
    """A segment recovered at load (RecoveredAtLoadFinding) cut short with later segments kept:
    offsets missing from the middle of the log. `lost`: the first and last offset missing."""

    lost: tuple[int, int] | None = None


@dataclass
class LogRestartFinding(Finding):
    """The log end offset below the log start offset: the broker deletes every segment and starts
    the log empty at the log start offset (`_PartitionRecovery._delete_all`)."""

    first: int = 0  # the first segment's base offset
    log_end: int = 0
    log_start: int = 0
    segments: int = 0


class IndexFaultFinding(Finding):
    """An offset index whose last entry Kafka never writes, with which a load without recovery
    drops the active segment's offsets: recover rebuilds it (doctor warns of it)."""


def _note_hidden_by_marker(
    p: Plan, part: Partition, segments: list[Segment], recovery_point: int
) -> None:
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
        if not tail.corrupt_batch or tail.damage is None:
            continue  # a torn or zero-padded end: the active segment's note says it
        with s.mapped() as buf:
            lost = _offsets_in(buf, tail.valid_size)
            later = next_valid_batch(buf, tail.valid_size + 1, len(buf), tail.next_offset)
            intact = _offsets_in(buf, later) if later is not None else None
        cost = f"truncating at byte {tail.valid_size}" + (
            f" (offsets {lost[0]}..{lost[1]})" if lost else ""
        )
        if i + 1 < len(segments):
            cost += f" and deleting the {len(segments) - i - 1} later segment(s)"
        keep = (
            f"; `kafkalog recover --all --salvage` skips only the damaged bytes and keeps the intact batches "
            f"after them (offsets {intact[0]}..{intact[1]})"
            if intact
            else ""
        )
        p.findings.append(
            KeptFinding(
                part.name,
                (
                    f"segment {s.base_offset}: {tail.damage.message}: the broker does not look at it "
                    "(.kafka_cleanshutdown: "
                    f"no recovery) and serves it as it is, so consumers of these offsets fail on it. "
                    f"`kafkalog recover --all` recovers as the broker would without the marker, {cost}{keep}"
                ),
                str(s.log_path),
                tail.valid_size,
            )
        )


def _note_kept(
    p: Plan,
    name: str,
    s: Segment,
    b: int,
    damage: IndexDefect,
    buf,
    index: bytes,
    timeindex: bytes,
    missing_time_index: bool,
) -> None:
    """One finding for index damage a broker keeps: what, what the broker does, the consequence."""
    what = "creates it empty" if missing_time_index else "keeps it as it is"
    path = s.time_index_path if damage.file is IndexFile.TIME_INDEX else s.index_path
    p.findings.append(
        KeptFinding(
            name,
            f"segment {b}: {damage.why}; a broker {what} (it does not check the "
            f"indexes of a segment it does not recover){kept_consequence(buf, timeindex)}; "
            f"rerun with --repair to rebuild it",
            str(path),
        )
    )


def kept_consequence(buf, timeindex: bytes) -> str:
    """What a broker serving a damaged time index does with it, where it matters: time retention
    takes a closed segment's largest timestamp from the last entry (AbstractIndex counts every slot
    of an existing file, preallocated zeros included), or from the file's mtime when there is none."""
    n = len(timeindex) // 12
    if n and struct.unpack_from(">q", timeindex, (n - 1) * 12)[0] == 0:
        return (
            ": its last time index entry has timestamp 0, so the broker's time retention deletes "
            "the segment at once once it is not the active one"
        )
    if n == 0 and len(buf):
        return (
            ": the broker's time retention takes the segment's age from the file's mtime and "
            "offset-for-timestamp lookups find nothing in it"
        )
    return ""


def _valid_data_lost(
    buf, base: int, interval: int, state: ProducerState, epochs: list, last: bool
) -> str | None:
    """What LogSegment.recover would drop that is valid, or None: it truncates at the first
    invalid batch, which loses nothing valid only when no valid batch follows in this segment and
    no segment follows (the later ones are deleted)."""
    r = recover_segment(buf, base, interval, state.copy(), list(epochs))
    if r.valid_bytes == len(buf):
        return None
    if not last:
        return f"the segment is cut at byte {r.valid_bytes} and every later segment deleted"
    if next_valid_batch(buf, r.valid_bytes + 1, len(buf), r.next_offset) is not None:
        return f"valid batches follow the invalid one at byte {r.valid_bytes}"
    return None


def _unrecovered_end(s: Segment, entry: tuple[int, int] | None) -> tuple[str, int | None] | None:
    """What a broker that loads the active segment without recovering it (after a clean shutdown)
    leaves wrong at its end, and where, or None: the offsets it will not serve, or the bytes after
    the last complete batch that it keeps and appends after."""
    tail = s.unrecovered_tail(entry)
    if tail.damage is None:
        return None
    if tail.stop is StopReason.NO_BATCH_AT_INDEX_ENTRY:
        return tail.damage.message, tail.damage.position
    size = s.size
    return (
        f"{size - tail.valid_size} bytes after the last complete batch (log end {tail.next_offset}) are not a "
        f"whole batch: the broker keeps them and appends its next batches after them, where readers of "
        f"those offsets will meet them",
        tail.valid_size,
    )


def load_failure(buf, start: int) -> str | None:
    """Why a broker loading this active segment without recovering it (after a clean shutdown)
    would fail to start, or None: LogSegment.readNextOffset walks the batch headers from the last
    offset-index entry (FileLogInputStream.nextBatch), and a size below 14 there is a
    CorruptRecordException that stops LogManager (zeros or garbage appended after the shutdown)."""
    pos, end = read_start(start, len(buf)), len(buf)
    while pos + 17 <= end:
        size = _PREFIX.unpack_from(buf, pos)[1]
        if size < 14:
            return (
                f"batch header at byte {pos} has size {size}: a broker would fail to start on it "
                f"(CorruptRecordException in LogSegment.readNextOffset)"
            )
        if pos > end - 12 - size:
            return None
        pos += 12 + size
    return None


# ------------------------------------------------------------------ the plan
@dataclass
class RecoverOptions:
    all_segments: bool = False
    salvage: bool = False
    now_ms: int = 0
    repair: bool = False  # also rebuild the indexes a broker keeps damaged
    resolver: ConfigResolver | None = (
        None  # None: Kafka defaults + the log dir's __cluster_metadata
    )
    check_crc: bool = True  # read every segment for bit rot (note_bit_rot)


def check_partition_dirs(partition_dirs) -> None:
    """InputError (exit 4) for a partition dir whose topic name a checkpoint line cannot hold
    (whitespace): Kafka 3.3.1's parseTopicPartitionName accepts it (no topic name validation), but
    the broker then writes a recovery-point-offset-checkpoint it cannot read back. recover stops
    before changing anything."""
    for d in partition_dirs:
        tp = parse_partition_dir(Path(d).name)
        if tp is None:  # not a log the broker loads: no checkpoint line of its own
            continue
        try:
            ckpt.encode_offsets({(tp.topic, tp.partition): 0})
        except ValueError:
            raise InputError(
                f"partition dir whose topic name {tp.topic!r} cannot be written to a "
                f"checkpoint file (a broker would write a recovery-point-offset-checkpoint "
                f"it cannot read back); move it out of the log dir",
                path=str(d),
            ) from None


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
        if tp is None:  # the partition dirs given are the logs the broker loads
            continue
        part = Partition.open(d, roots.for_partition(tp))
        leo = _plan_partition_or_split(p, part, clean, opts)
        if leo is not None and (tp.topic != METADATA_TOPIC or rps.get(tp) is not None):
            # KRaft's metadata log is not LogManager's: it never has a recovery-point entry
            new_rps[(tp.topic, tp.partition)] = leo
    if new_rps != rps.offsets:
        p.add(
            Action(
                ActionKind.UPDATE_CHECKPOINT,
                rps.path,
                "recovery point = log end offset",
                data=ckpt.encode_offsets(new_rps, order=rps.order),
            )
        )
    if opts.check_crc:
        note_bit_rot(p, partition_dirs)
    else:
        p.note(
            log_dir.name,
            "the CRCs of the segments the broker does not recover were not checked "
            "(--no-crc-check): bit rot there is not named; kafkalog verify-crc checks them",
        )
    return p


@dataclass
class BitRotFinding(KeptFinding):
    """A batch failing its CRC in a segment the plan leaves as it is: the broker serves it."""

    rot: BitRot | None = None
    kept_problem: ClassVar[bool] = True  # a run that leaves it exits 1 (something found)

    def to_dict(self) -> dict:
        rot = self.rot
        return {
            **super().to_dict(),
            "damage": "crc",
            "offsets": [rot.base_offset, rot.last_offset] if rot is not None else None,
        }


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
            read = (
                a.source
                if a.kind is ActionKind.REWRITE_SEGMENT and a.source is not None
                else a.path
            )
            removed.setdefault(os.path.abspath(read), []).append(a)

    def cut(file: str, position: int) -> bool:
        for a in removed.get(os.path.abspath(file), ()):
            if a.kind is ActionKind.DELETE or (
                a.kind is ActionKind.TRUNCATE and a.at is not None and position >= a.at
            ):
                return True
            if a.kind is ActionKind.REWRITE_SEGMENT and not any(
                lo <= position < hi for lo, hi in a.ranges or ()
            ):
                return True
        return False

    named = {
        (os.path.abspath(f.path), f.position)
        for f in p.findings
        if isinstance(f, KeptFinding) and f.path
    }
    for d in partition_dirs:
        for rot in bit_rot(d, cut):
            if (os.path.abspath(rot.file), rot.position) in named:
                continue
            p.findings.append(
                BitRotFinding(
                    rot.partition,
                    f"{rot.what()}: left as it is; {rot.who_is_hit()}. Fix: {rot.fixes(p.log_dir)}",
                    rot.file,
                    rot.position,
                    rot=rot,
                )
            )


class SegmentOverflow(Exception):
    """Recovery met a batch whose offsets overflow its segment's index: the broker splits the
    segment and recovers again (LogLoader.retryOnOffsetOverflow)."""

    def __init__(self, segment: Segment, error: OffsetOverflowError, leftovers: list[Action]):
        super().__init__(error.message)
        self.segment, self.error = segment, error
        self.leftovers = leftovers  # the leftover files' deletes and renames, done first


def _plan_partition_or_split(
    p: Plan, part: Partition, clean: bool, opts: RecoverOptions
) -> int | None:
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
        p.add(
            dataclasses.replace(a, path=real(a.path), target=real(a.target), source=real(a.source))
        )
    for f in sub.findings:  # replaced, not rebuilt: a KeptFinding stays one
        p.findings.append(
            f if moved is None or f.path is None else dataclasses.replace(f, path=str(real(f.path)))
        )
    p.partitions.update(sub.partitions)


def _plan_split(
    p: Plan, part: Partition, clean: bool, opts: RecoverOptions, o: SegmentOverflow
) -> int | None:
    """LocalLog.splitOverflowedSegment, then the recovery run again (on a staged copy of the
    partition with the split made, so that the plan shows both; applying it splits first)."""
    s, name = o.segment, part.name
    resolver, tp = opts.resolver, part.topic_partition
    # plan() sets the resolver, and the partition dirs it plans are logs the broker loads
    assert resolver is not None and tp is not None, "a partition dir of plan()"
    cfg = resolver.for_topic(tp.topic)
    with s.mapped() as buf:
        try:
            position = o.error.position
            assert position is not None, "recover_segment locates every overflow it raises"
            pieces = split_overflowed_segment(
                buf, s.base_offset, cfg.index_interval_bytes, position
            )
        except OffsetOverflowError as e:
            # the broker does not start: refused, with what stops it
            raise OffsetOverflowError(
                f"{o.error.message}; the broker splits such a segment, but here it "
                f"cannot: {e.message}. `kafkalog recover --salvage` skips the damaged batch",
                path=str(s.log_path),
                position=e.position,
            ) from None
    with tempfile.TemporaryDirectory(prefix="kafkalog-split-") as tmp:
        staged = _stage_split(part, s, pieces, Path(tmp), clean, o.leftovers)
        sub = Plan(p.op, p.log_dir)
        leo = _plan_partition_or_split(sub, Partition.open(staged, part.checkpoints), clean, opts)
    bases = [x.base_offset for x in pieces]
    with s.mapped() as buf:  # a piece holds at least one batch: the split appends one or fails
        layout = ", ".join(
            f"{x.base_offset} (offsets {x.base_offset}..{_last_in(buf, (x.start, x.end))})"
            for x in sorted(pieces, key=lambda x: x.base_offset)
        )
    p.note(
        name,
        f"segment {s.base_offset}: {o.error.message}. The broker splits the segment "
        f"(LocalLog.splitOverflowedSegment) into segments {layout} and recovers them, and so does "
        f"kafkalog: the damaged batch's records are served at those offsets, the log end becomes {leo}, "
        f"and producers and consumers go on from there. `kafkalog recover --salvage` skips the damaged "
        f"batch instead",
        s.log_path,
        o.error.position,
    )
    for a in o.leftovers:
        p.add(a)
    p.add(
        Action(
            ActionKind.SPLIT_SEGMENT,
            s.log_path,
            "offsets overflow the segment's index: split as the broker splits it",
            name,
            pieces=pieces,
            source=s.log_path,
        )
    )
    _merge(p, sub, moved=(staged, part.directory))
    p.partitions[name]["split_segments"] = {str(s.base_offset): bases}
    return leo


def _stage_split(
    part: Partition, s: Segment, pieces, tmp: Path, clean: bool, leftovers: list[Action]
) -> Path:
    """A copy of the partition dir as the leftover handling and the split leave it (the old
    segment's files gone, the new ones in place with its mtime), to plan the recovery that
    follows. Unchanged files are hard links where the file system allows, else copies; nothing in
    the log dir is touched."""
    old = {
        s.file(suf).name
        for suf in (
            names.LOG_SUFFIX,
            names.INDEX_SUFFIX,
            names.TIME_INDEX_SUFFIX,
            names.TXN_INDEX_SUFFIX,
        )
    }
    gone = {a.path.name for a in leftovers if a.kind == ActionKind.DELETE}
    renamed = {
        a.target.name: a.path
        for a in leftovers
        if a.kind == ActionKind.RENAME and a.target is not None
    }
    links = {f.name: f for f in part.directory.iterdir() if f.is_file() and f.name not in gone}
    for src in renamed.values():
        links.pop(src.name, None)
    links.update(renamed)
    links = {name: f for name, f in links.items() if name not in old}
    mtime = s.source_path.stat().st_mtime_ns
    contents: dict[str, tuple[bytes, int | None]] = {}
    with files.opened(s.source_path) as log:
        for piece in pieces:
            log.seek(piece.start)
            name = segment_file(Path(), piece.base_offset, "").name
            contents[name + names.LOG_SUFFIX] = (log.read(piece.size), mtime)
            contents[name + names.INDEX_SUFFIX] = (piece.index, None)
            contents[name + names.TIME_INDEX_SUFFIX] = (piece.time_index, None)
    if clean:  # Partition.open reads the marker beside the partition dir
        stage_copy(tmp, {}, {names.CLEAN_SHUTDOWN_FILE: (b"", None)})
    return stage_copy(tmp / part.directory.name, links, contents)


def check_segments_readable(part: Partition) -> None:
    """InputError (exit 4) for a segment that is not a regular file (a FIFO, a dangling symlink,
    a directory): LogLoader lists regular files only, so a broker would load the partition
    without it and lose its records without a word. Nothing in the log dir is changed."""
    for s in part.segments:
        why = not_regular_reason(s.log_path)
        if why is not None:
            raise InputError(
                f"segment cannot be recovered: {why} (a broker would load the partition "
                f"without it); restore the file or move it away",
                path=str(s.log_path),
            )


def _plan_partition(p: Plan, part: Partition, clean: bool, opts: RecoverOptions) -> int | None:
    """LogLoader.load for one partition, planned into `p`: the leftovers resolved, the segments
    from the one holding the recovery point recovered (the others' indexes checked), then the
    producer snapshots, the leader epochs and the log end offset, which it returns."""
    check_segments_readable(part)
    run = _PartitionRecovery(p, part, clean, opts)
    run.plan_segments()
    return run.finish()


@dataclass
class _Recovered:
    """What recovering one segment left, for the snapshot replay: the byte ranges kept (None:
    all), the map end offset, where the batches with a producer id lie, whether
    recoverSegment took its closing snapshot."""

    ranges: list[tuple[int, int]] | None
    map_end: int | None
    positions: list[int]
    snapshot: bool


class _Recording:
    """The walk's producer state, noting where each batch it takes lies."""

    def __init__(self, state: ProducerState):
        self.state = state
        self.positions: list[int] = []

    def update(self, batch):
        self.positions.append(batch.position)
        return self.state.update(batch)


class _PartitionRecovery:
    """One partition's recovery plan: what the steps share, one method per step."""

    def __init__(self, p: Plan, part: Partition, clean: bool, opts: RecoverOptions):
        self.p, self.part, self.clean, self.opts = p, part, clean, opts
        self.name = part.name
        resolver, tp = opts.resolver, part.topic_partition
        # plan() sets the resolver, and the partition dirs it plans are logs the broker loads
        assert resolver is not None and tp is not None, "a partition dir of plan()"
        # KafkaMetadataLog.apply loads KRaft's metadata log with logStartOffset 0, whatever
        # LogManager's checkpoint says (3.3.1 and 3.9 KafkaMetadataLog.scala)
        self.log_start = 0 if tp.topic == METADATA_TOPIC else part.checkpoints.log_start_offset or 0
        self.resolver = resolver
        self.cfg = resolver.for_topic(tp.topic)
        self.segs = _resolve_leftovers(p, part)
        self.leftovers = list(p.actions)  # LogLoader's first pass, before any recovery
        self.bases = sorted(self.segs)
        recovery_point = part.checkpoints.recovery_point or 0
        self.summary: dict[str, Any] = {
            "recovery_point": recovery_point,
            "clean_shutdown": clean,
            "segments": len(self.bases),
            "recovered_segments": [],
            "truncated_bytes": 0,
            "deleted_segments": [],
        }
        p.partitions[self.name] = self.summary
        self.recover_set = self._segments_recovered(recovery_point)
        self.from_recovery_point = set(self.recover_set)
        # base -> why LogLoader.loadSegmentFiles recovers it as it loads it, in file order
        self.recovered_at_load: dict[int, str] = {}
        if clean and not opts.all_segments:
            _note_hidden_by_marker(p, part, [self.segs[b] for b in self.bases], recovery_point)
        self.swapped_without_index = self._segments_without_index()
        self.epochs_path = part.path(names.LEADER_EPOCH_CHECKPOINT)
        self.epochs_problem, self.old_epochs, self.epochs = self._starting_epochs()
        self.state = self._state_at(
            min(self.recover_set) if self.recover_set else None,
            ignored=lambda m, f: p.note(self.name, m, f),
        )
        self.recovered: dict[int, _Recovered] = {}  # in the order of the walk
        self.leo = self.bases[0] if self.bases else self.log_start
        self.deleted_from: int | None = None

    # -- before the segments
    def _segments_recovered(self, recovery_point: int) -> set[int]:
        """The segments LogLoader checks batch by batch: every one with --all, none after a clean
        shutdown, else from the one holding the recovery point."""
        if self.opts.all_segments:
            start_idx = 0
        elif self.clean:
            start_idx = len(self.bases)
        else:
            start_idx = 0
            for i, b in enumerate(self.bases):
                if b <= recovery_point:
                    start_idx = i
        return set(self.bases[start_idx:])

    def _segments_without_index(self) -> dict[int, int]:
        """LogLoader.loadSegmentFiles: LogSegment.sanityCheck on each segment (is there an .index;
        its .txnindex's check), and the ones it recovers (`_recovered_at_load`). A swapped-in
        segment is loaded like any other once its .swap files are renamed (Kafka 3.3.1); returns
        base -> the zero-filled .index length the broker leaves for a swapped-in segment without
        an .index.swap that is not recovered."""
        out: dict[int, int] = {}
        for b in self.bases:
            index_source = _source(self.p, self.segs[b].index_path)
            swapped_in_without_index_swap = self.segs[b].read_from is not None and (
                index_source is None or index_source == self.segs[b].index_path
            )
            if swapped_in_without_index_swap and (b in self.recover_set or not self.opts.repair):
                # the swap pass opened the .swap segment: readNextOffset created a preallocated
                # .index.swap, renamed with the rest (over an old .index an empty .swap's range did
                # not delete), so loadSegmentFiles finds that index (recoverLog rebuilds it)
                if b not in self.recover_set:
                    out[b] = self.cfg.segment_index_bytes // 8 * 8
                why = self._txn_index_problem(b)
            elif index_source is None:
                why = "no offset index (LogSegment.sanityCheck: NoSuchFileException)"
            else:
                why = self._txn_index_problem(b)
            if why is not None:
                self._recovered_at_load(b, why)
        return out

    def _txn_index_problem(self, b: int) -> str | None:
        """Why TransactionIndex.sanityCheck fails on segment `b`'s .txnindex as loadSegmentFiles
        runs it (CorruptIndexException), or None. A version it cannot read stops the load (a
        KafkaException): raised, recover refuses (exit 3) and doctor says the broker exits."""
        f = self.segs[b].txn_index_path
        raw = _current(self.p, f)
        if raw is None:
            return None
        try:
            corrupt = load_sanity_check(raw, b, path=str(f))
        except CorruptIndexError as e:
            raise KafkalogError(
                f"{e.message}: a broker fails to load the log on it (LogLoader.loadSegmentFiles: "
                f"KafkaException from TransactionIndex.sanityCheck) and exits. kafkalog leaves it: "
                f"move the file out of the partition dir, then `kafkalog recover --all` rebuilds it "
                f"from the segment",
                path=e.path,
                position=e.position,
            ) from None
        if corrupt is None:
            return None
        return f"a corrupt transaction index at byte {corrupt.position} (CorruptIndexException: {corrupt.message})"

    def _recovered_at_load(self, b: int, why: str) -> None:
        """Segment `b` recovered by LogLoader.loadSegmentFiles (recoverSegment) as it loads it,
        before recoverLog: its truncation deletes no later segment (`_recover`)."""
        self.recover_set.add(b)
        self.recovered_at_load[b] = why
        self.p.findings.append(
            RecoveredAtLoadFinding(
                self.name,
                f"segment {b}: {why}: the broker recovers the segment as it loads it "
                f"(LogLoader.loadSegmentFiles) and rebuilds its indexes; so does kafkalog",
                str(self.segs[b].log_path),
            )
        )

    def _starting_epochs(self) -> tuple[str | None, list | None, list[tuple[int, int]]]:
        """The leader-epoch-checkpoint as recovery starts from it: (why a broker would refuse it
        or None, its entries or None, the epochs recovery goes on from)."""
        problem = _epochs_problem(self.epochs_path)
        if problem is not None:
            # a broker refuses to load the partition; rebuilt from the batches' partition leader epochs:
            # headers of the segments not scanned, the scan of the others
            self.p.note(
                self.name,
                f"{problem}; Kafka would refuse it: rebuilt from the partition leader "
                f"epochs of the batches",
                self.epochs_path,
            )
            old = None
        else:
            old = ckpt.read_epochs(self.epochs_path)
        epochs = list(old or [])
        if epochs and self.bases:
            # entries at or past the log end before recovery go at its end in any case
            # (LeaderEpochFileCache.truncateFromEnd); dropped first, as a second load starts without
            # them, so that the epochs LogSegment.recover assigns only above the latest one are
            # assigned in this run and the result is a fixed point
            bound = self.segs[self.bases[-1]].read_next_offset()
            epochs = [(e, o) for e, o in epochs if o < bound]
        return problem, old, epochs

    def _state_at(
        self, upto: int | None, bases: list[int] | None = None, ignored=None
    ) -> ProducerState:
        """rebuildProducerState up to `upto` over the segments `bases` (all by default)."""
        kw = {} if ignored is None else {"ignored": ignored}
        return rebuild_producer_state(
            self.part.directory,
            [self.segs[b] for b in (self.bases if bases is None else bases)],
            upto,
            now_ms=self.opts.now_ms,
            expiration_ms=self.cfg.producer_id_expiration_ms,
            log_start=self.log_start,
            versions=self.resolver.versions,
            **kw,
        )

    # -- the segments
    def plan_segments(self) -> None:
        """Each segment in order: kept as the broker keeps it, or recovered; a recovery that cuts
        the log ends the walk (the later segments are deleted)."""
        for i, b in enumerate(self.bases):
            s = self.segs[b]
            with s.mapped() as buf:
                if b not in self.recover_set and self._kept(s, buf):
                    continue
                self._recover(i, s, buf)
            if self.deleted_from is not None:
                break

    def _kept(self, s: Segment, buf) -> bool:
        """A segment the broker does not recover: True when it stays as it is (its kept damage
        noted), False when recover recovers it all the same (a finding says why)."""
        p, b, name = self.p, s.base_offset, self.name
        idx = _current(p, s.index_path) or b""
        if b in self.swapped_without_index:
            idx = bytes(self.swapped_without_index[b])
            p.add(
                Action(
                    ActionKind.CREATE_SEGMENT_FILE,
                    s.index_path,
                    "the swapped-in segment had no "
                    ".index.swap: the broker's swap pass leaves a preallocated zero-filled index",
                    name,
                    data=b"",
                    preallocate=len(idx),
                )
            )
        tidx = _current(p, s.time_index_path) or b""
        # the index as it will be (maybe a .index.swap), not necessarily s.index_path's
        entries = parse_offset_index(idx, b)
        nxt = s.next_offset_after(
            (entries[-1].offset - b, entries[-1].position) if entries else None
        )
        # the broker does not check the indexes of a segment it does not recover
        # (LogSegment.sanityCheck): their damage is repaired with --repair only
        damage = index_rebuild_reason(buf, b, idx, tidx, nxt)
        problem = damage.why if damage is not None and self.opts.repair else None
        index_fault = False
        if problem is None and b == self.bases[-1]:
            problem, index_fault = self._active_segment_problem(s, buf, entries)
        if problem is None and damage is not None:
            _note_kept(
                p,
                name,
                s,
                b,
                damage,
                buf,
                idx,
                tidx,
                missing_time_index=_source(p, s.time_index_path) is None,
            )
        if (
            problem is not None
            and not self.opts.salvage
            and self._recovery_costs_valid_data(s, buf, problem)
        ):
            problem = None
        if problem is None:
            self._keep(s, buf, nxt)
            return True
        p.findings.append(
            (IndexFaultFinding if index_fault else Finding)(
                name, f"segment {b}: {problem}; recovering it", str(s.index_path)
            )
        )
        return False

    def _active_segment_problem(self, s: Segment, buf, entries: list) -> tuple[str | None, bool]:
        """What makes recover recover the active segment a broker loads without recovery (after
        a clean shutdown), or None: a load that would fail, or (with --repair, or for an index
        entry Kafka never writes) an end the broker gets wrong. The bool: the index's fault."""
        b = s.base_offset
        problem = load_failure(buf, entries[-1].position if entries else 0)
        if problem is not None:
            return problem, False
        kept = _unrecovered_end(
            s, (entries[-1].offset - b, entries[-1].position) if entries else None
        )
        if kept is not None and (self.opts.repair or entry_kafka_never_writes(entries, b)):
            # such an entry (not an unflushed tail) drops the segment's offsets from a
            # clean load: recovering it rebuilds the index (_valid_data_lost guards the batches)
            return kept[0], not self.opts.repair
        if kept is not None:
            self.p.note(
                self.name,
                f"segment {b}: {kept[0]}; kafkalog leaves it as the broker loads it "
                f"(.kafka_cleanshutdown: no recovery); `kafkalog recover --repair` "
                f"recovers the segment instead",
                s.log_path,
                kept[1],
            )
        return None, False

    def _recovery_costs_valid_data(self, s: Segment, buf, problem: str) -> bool:
        """True (noted) when recovering a segment the broker keeps would drop valid batches: a
        repair beyond Kafka never costs valid batches."""
        b = s.base_offset
        try:
            lost = _valid_data_lost(
                buf, b, self.cfg.index_interval_bytes, self.state, self.epochs, b == self.bases[-1]
            )
        except OffsetOverflowError as e:
            lost = f"its offsets overflow: {e.message}; a broker splits it only when it recovers it"
        if lost is None:
            return False
        # the broker keeps the segment as it is (below the recovery point or after a clean shutdown)
        self.p.note(
            self.name,
            f"segment {b}: {problem}; not rebuilt: recovering it would drop "
            f"valid batches ({lost}); a broker keeps it as it is. --all recovers "
            f"it as a broker's recovery would, --salvage skips only the damage",
            s.log_path,
        )
        return True

    def _keep(self, s: Segment, buf, nxt: int) -> None:
        """A segment loaded as it is: a missing time index created empty, its end taken as the log
        end so far, its epochs and producers taken from its headers."""
        if _source(self.p, s.time_index_path) is None:
            self.p.add(
                Action(
                    ActionKind.CREATE_SEGMENT_FILE,
                    s.time_index_path,
                    "no time index: the "
                    "broker creates it empty (LogSegment.sanityCheck resizes a new one to 0)",
                    self.name,
                    data=b"",
                )
            )
        self.leo = nxt
        if self.epochs_problem is not None:
            _epochs_from_headers(buf, self.epochs)
        if self.recover_set and s.base_offset > min(self.recover_set):
            replay(s, self.state)

    def _recover(self, i: int, s: Segment, buf) -> None:
        """LogSegment.recover on segment `i`: the walk, then the truncation (or --salvage's
        rewrite) with the later segments' deletion, the rebuilt indexes and the snapshot."""
        b, name = s.base_offset, self.name
        self.summary["recovered_segments"].append(b)
        recording = _Recording(self.state)
        try:
            r = recover_segment(
                buf, b, self.cfg.index_interval_bytes, recording, self.epochs, self.opts.salvage
            )
        except OffsetOverflowError as e:
            e.located(path=str(s.log_path))
            raise SegmentOverflow(s, e, self.leftovers) from None
        size = len(buf)
        cut = size - (
            r.valid_bytes if r.kept_ranges is None else sum(e - s_ for s_, e in r.kept_ranges)
        )
        truncating = r.valid_bytes < size if r.kept_ranges is None else cut > 0
        if r.error is not None:
            self.p.note(
                name,
                f"segment {b}: {r.error.message}",
                s.log_path,
                r.error.position if r.error.position is not None else r.valid_bytes,
            )
        if r.invalid_offset and b in self.recovered_at_load:
            raise InvalidOffsetError(
                f"segment {b}: offsets out of order, recovering it as the broker loads it "
                f"({self.recovered_at_load[b]}): a broker fails to load the log "
                f"(InvalidOffsetException from LogLoader.loadSegmentFiles; only recoverLog's "
                f"recovery empties such a segment) and exits",
                path=str(s.log_path),
                position=r.valid_bytes,
            )
        later = self.bases[i + 1 :]
        if truncating and later and not self.opts.salvage:
            if b in self.recovered_at_load:
                self._note_gap(s, buf, r, later[0])
            else:
                self._delete_later(b, later)
        if truncating:
            self.summary["truncated_bytes"] += cut
            self._cut(s, buf, r, cut)
        _index_actions(self.p, s, r, name)
        self.leo = r.next_offset
        self.recovered[b] = _Recovered(
            r.kept_ranges
            if r.kept_ranges is not None
            else ([(0, r.valid_bytes)] if truncating or r.invalid_offset else None),
            r.map_end,
            recording.positions,
            # InvalidOffsetException leaves recoverSegment before its takeSnapshot
            not r.invalid_offset,
        )

    def _note_gap(self, s: Segment, buf, r: SegmentRecovery, next_base: int) -> None:
        """A segment recovered at load and cut short keeps the segments after it: recoverSegment
        returns the bytes it truncated, and only recoverLog deletes the later segments on them
        (3.3.1 and 3.9 LogLoader.scala: loadSegmentFiles, recoverLog). Recovered again by
        recoverLog (from the recovery point), it truncates nothing more. The offsets between its
        new end and the next segment are gone from the log."""
        lost = (r.next_offset, next_base - 1) if next_base > r.next_offset else None
        gone = f"offsets {lost[0]}..{lost[1]} are gone" if lost else "no offset is lost"
        self.p.findings.append(
            GapFinding(
                self.name,
                f"segment {s.base_offset}: cut at byte {r.valid_bytes} (its log end becomes "
                f"{r.next_offset}); the later segments stay (from {next_base}), as the broker keeps "
                f"them: {gone} from the middle of the log",
                str(s.log_path),
                r.valid_bytes,
                lost=lost,
            )
        )

    def _delete_later(self, b: int, later: list[int]) -> None:
        """Kafka deletes all segments after a truncated one; newest first, .log first, so that a
        crash leaves a log that still ends in order."""
        for lb in reversed(later):
            for suf in (
                names.LOG_SUFFIX,
                names.INDEX_SUFFIX,
                names.TIME_INDEX_SUFFIX,
                names.TXN_INDEX_SUFFIX,
            ):
                f = self.segs[lb].file(suf)
                if _source(self.p, f) is not None:
                    self.p.add(
                        Action(
                            ActionKind.DELETE, f, f"after the corruption in segment {b}", self.name
                        )
                    )
            self.summary["deleted_segments"].append(lb)
        self.deleted_from = later[0]

    def _cut(self, s: Segment, buf, r: SegmentRecovery, cut: int) -> None:
        """The bytes recovery drops: --salvage's rewrite without the damaged ranges, else the
        truncation at the end of the valid batches."""
        p, b, name, size = self.p, s.base_offset, self.name, len(buf)
        holes = [(a_, e_) for a_, e_ in r.skipped if e_ < size]
        if holes:
            p.add(
                Action(
                    ActionKind.REWRITE_SEGMENT,
                    s.log_path,
                    "--salvage: damaged bytes "
                    + ", ".join(f"[{a_}, {e_})" for a_, e_ in r.skipped),
                    name,
                    ranges=r.kept_ranges,
                    bytes_removed=cut,
                    source=s.log_path,
                )
            )
            for a_, e_ in r.skipped:
                gap = _offsets_between(buf, r.kept_ranges, a_, e_)
                p.note(
                    name,
                    f"segment {b}: skipped damaged bytes [{a_}, {e_})"
                    + (f": offsets {gap[0]}..{gap[1]} are lost for good" if gap else ""),
                    s.log_path,
                    a_,
                )
            return
        valid_end = r.valid_bytes
        why = (
            "invalid or incomplete batches at the end"
            if not r.invalid_offset
            else "offsets out of order: Kafka empties the segment"
        )
        later = (
            None if r.invalid_offset else next_valid_batch(buf, valid_end + 1, size, r.next_offset)
        )
        if later is not None and (intact := _offsets_in(buf, later)) is not None:
            why += (
                f"; offsets {r.next_offset}..{intact[0] - 1} are damaged, and the intact batches "
                f"after them (offsets {intact[0]}..{intact[1]}) go too: --salvage keeps those"
            )
        p.add(
            Action(
                ActionKind.TRUNCATE,
                s.log_path,
                why,
                name,
                at=valid_end,
                bytes_removed=size - valid_end,
                offsets_removed=_offsets_in(buf, valid_end),
            )
        )

    def _delete_all(self, live_bases: list[int]) -> None:
        """LogLoader.recoverLog's deleteSegmentsIfLogStartGreaterThanLogEnd, after the recovery:
        a log end offset below the checkpointed log start offset deletes every segment (with its
        producer snapshot), clears the leader epochs (clearAndFlush) and the producer state
        (truncateFullyAndStartAt: every snapshot the loader's manager listed goes); `finish` then
        creates the empty segment at the log start offset, where the log end and the recovery
        point go. The same in 3.3.1 and 3.9 (LogLoader.scala). What the recovery wrote to these
        segments' files is dropped: they go as they were."""
        p, name = self.p, self.name
        doomed = {self.segs[b].file(suf) for b in live_bases for suf in names.SEGMENT_SUFFIXES}
        p.actions[:] = [a for a in p.actions if a in self.leftovers or a.path not in doomed]
        first = live_bases[0]
        p.findings.append(
            LogRestartFinding(
                name,
                f"log end offset {self.leo} is below the log start offset {self.log_start} "
                f"(log-start-offset-checkpoint): the broker deletes all {len(live_bases)} "
                f"segment(s) (offsets {first}..{self.leo - 1}), its leader epochs and producer "
                f"state, and starts the log empty at {self.log_start} (LogLoader.recoverLog: "
                f'"Deleting all segments because logEndOffset ({self.leo}) is smaller than '
                f'logStartOffset {self.log_start}"); so does kafkalog'
                if self.leo > first
                else f"log end offset {self.leo} is below the log start offset {self.log_start} "
                f"(log-start-offset-checkpoint): the broker deletes all {len(live_bases)} empty "
                f"segment(s), its leader epochs and producer state, and starts the log at "
                f"{self.log_start} (LogLoader.recoverLog); so does kafkalog",
                str(self.part.directory),
                first=first,
                log_end=self.leo,
                log_start=self.log_start,
                segments=len(live_bases),
            )
        )
        for b in reversed(live_bases):
            for suf in names.SEGMENT_SUFFIXES:
                f = self.segs[b].file(suf)
                if _source(p, f) is not None:
                    p.add(
                        Action(
                            ActionKind.DELETE,
                            f,
                            f"log end offset {self.leo} below the log start offset {self.log_start}",
                            name,
                        )
                    )
            self.summary["deleted_segments"].append(b)
        self.epochs = []
        self.leo = self.log_start

    def _snapshots(self, live_bases: list[int], log_start: int, restarted: bool = False) -> None:
        """The producer snapshots LogLoader.load leaves, its steps replayed on the files
        (SnapshotFiles): each segment loadSegmentFiles recovers (no index) over the segments
        before it, then each one recoverLog recovers over all of them (recoverSegment: a new
        ProducerStateManager, rebuildProducerState up to its base, LogSegment.recover, a snapshot
        at its end); the snapshots of the segments it deletes; removeStraySnapshots and
        rebuildProducerState up to the log end (3.3.1 and 4.0 alike). Then what the next load
        does first (removeStraySnapshots, truncateAndReload) to what is left, so that a second
        recover changes nothing: a clean load keeps an older stray above the last segment base
        next to the one it writes at the log end, and its next load deletes it."""
        p, part = self.p, self.part
        gone = _gone(p)
        listed = {off: part.path(f) for off, f in part.snapshots.items()}
        snaps = SnapshotFiles({off: f for off, f in listed.items() if f not in gone})
        views = {
            b: LogView(b, self.segs[b], r.ranges if (r := self.recovered.get(b)) else None)
            for b in self.bases
        }
        order = snapshot_insertion_order(self.resolver.versions)

        def manager() -> SnapshotManager:
            return SnapshotManager(
                snaps,
                now_ms=self.opts.now_ms,
                expiration_ms=self.cfg.producer_id_expiration_ms,
                insertion_order=order,
            )

        every = [views[b] for b in self.bases]
        for b in self.recovered_at_load:
            before = [v for v in every if v.base_offset < b]
            self._recover_snapshots(manager(), before, [v.base_offset for v in before], b)
        for b in self.recovered:
            # a segment recovered beyond Kafka (--repair, a load that would fail) is one the
            # broker loads as it is: its snapshots are those of the load that follows
            if b in self.from_recovery_point:
                self._recover_snapshots(manager(), every, self.bases, b)
        for b in self.summary["deleted_segments"]:
            if b in listed:  # deleteProducerSnapshotsAsync: the loader's manager lists them
                snaps.remove(b, "of a segment deleted after the corruption")
        segments = [views.get(b, LogView(b)) for b in live_bases]
        main = manager()
        if restarted:  # the loader's manager lists the files as load() starts
            main.truncate_fully_and_start_at(
                log_start, [o for o in listed if listed[o] not in gone]
            )
        main.remove_stray_snapshots(live_bases)
        rebuild_snapshots(main, segments, log_start, self.leo, self.clean)
        nxt = manager()
        nxt.remove_stray_snapshots(live_bases)
        nxt.drop_out_of_range(log_start, self.leo)
        for off, data in sorted(snaps.files.items()):
            f = segment_file(part.directory, off, names.SNAPSHOT_SUFFIX)
            if isinstance(data, bytes) and _current(p, f) != data:
                p.add(
                    Action(
                        ActionKind.WRITE_SNAPSHOT,
                        f,
                        "producer state at this offset",
                        self.name,
                        data=data,
                    )
                )
        for off, f in sorted(listed.items()):
            if f not in gone and off not in snaps.files:
                p.add(Action(ActionKind.DELETE, f, snaps.removed[off], self.name))

    def _recover_snapshots(
        self, psm: SnapshotManager, segments: list[LogView], bases: list[int], b: int
    ) -> None:
        """LogLoader.recoverSegment's snapshots for the segment at `b`: rebuildProducerState up
        to its base over `segments` (at `bases`), the recovered batches' producers, a snapshot
        at its map end."""
        rebuild_snapshots(psm, segments, self.log_start, b, False, bases)
        r = self.recovered.get(b)
        if r is None:  # not reached: deleted after an earlier corruption
            return
        seg = LogView(b, self.segs[b])
        with self.segs[b].mapped():
            for pos in r.positions:
                psm.state.update(seg.batch_at(pos))
        if r.snapshot and r.map_end is not None:
            psm.map_end = r.map_end
            psm.take_snapshot()

    # -- after the segments
    def finish(self) -> int:
        """An empty segment where there is none, the producer snapshots, the leader epochs (cut
        at the log end) and the summary's log end offset, which it returns."""
        p, part, name = self.p, self.part, self.name
        live_bases = [b for b in self.bases if self.deleted_from is None or b < self.deleted_from]
        restarted = bool(live_bases) and log_deleted_on_load(self.leo, self.log_start)
        if restarted:
            self._delete_all(live_bases)
            live_bases = []
        if not live_bases:
            if not restarted:
                p.note(
                    name,
                    f"no segment: creating an empty one at the log start offset {self.log_start}",
                )
            for suf in (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX):
                p.add(
                    Action(
                        ActionKind.CREATE_SEGMENT_FILE,
                        segment_file(part.directory, self.log_start, suf),
                        "empty log",
                        name,
                        data=b"",
                    )
                )
            live_bases = [self.log_start]
            self.leo = self.log_start
        self._snapshots(
            live_bases,
            _loaded_log_start(p, part, self.cfg, self.resolver, self.log_start, live_bases[0]),
            restarted,
        )
        # leader epochs: assigned from the batches, then truncated to [.., LEO)
        epochs = [(e, o) for e, o in self.epochs if o < self.leo]
        if epochs != self.old_epochs:
            p.add(
                Action(
                    ActionKind.UPDATE_CHECKPOINT,
                    self.epochs_path,
                    "leader epochs of the recovered log",
                    name,
                    data=ckpt.encode_epochs(epochs),
                )
            )
        self.summary["log_end_offset"] = self.leo
        return self.leo


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
    except ValueError as e:  # a negative epoch or offset
        return str(e)
    return None


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


def _offsets_between(
    buf, kept: list[tuple[int, int]] | None, start: int, end: int
) -> tuple[int, int] | None:
    """--salvage: the offsets a skipped byte range [start, end) held, from the kept batches around
    it (the damaged bytes themselves cannot be trusted): after the last kept batch before it, up to
    the first kept batch after it (or the end of what the skipped bytes' headers still say)."""
    before = [r for r in kept or [] if r[1] <= start]
    after = [r for r in kept or [] if r[0] >= end]
    first = _last_in(buf, before[-1]) + 1 if before else None
    last = found[0] - 1 if after and (found := _offsets_in(buf, after[0][0])) else None
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
    return None if first is None or last is None else (first, last)  # set together


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


def _index_actions(p: Plan, s: Segment, r: SegmentRecovery, name: str) -> None:
    b = r.builder
    for suf, data in (
        (names.INDEX_SUFFIX, b.offset_index_bytes()),
        (names.TIME_INDEX_SUFFIX, b.time_index_bytes()),
    ):
        f = s.file(suf)
        if _current(p, f) != data:
            p.add(
                Action(
                    ActionKind.REBUILD_INDEX,
                    f,
                    "rebuilt as LogSegment.recover builds it",
                    name,
                    data=data,
                )
            )
    txn = s.file(names.TXN_INDEX_SUFFIX)
    data = encode_txn_index(r.aborted)
    old = _current(p, txn)
    if (data or old is not None) and old != data:
        p.add(
            Action(
                ActionKind.REBUILD_INDEX,
                txn,
                "aborted transactions of the recovered segment",
                name,
                data=data,
            )
        )


def _loaded_log_start(
    p: Plan, part: Partition, cfg, resolver: ConfigResolver, checkpointed: int, first_base: int
) -> int:
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
        p.note(
            part.name,
            f"producer snapshots at or below the first segment {first_base} kept: whether the "
            f"log is remote-enabled is not known ({remote.undecided})",
        )
    return checkpointed if remote.enabled is not False else first_base


def _loader_files(part: Partition) -> list[str]:
    """The names LogLoader looks at, from the partition's one listing, sorted: our interrupted
    writes, the .deleted/.cleaned/.swap files, segments, indexes and snapshots. Only regular files:
    LogLoader lists `file.isFile` alone."""
    listed = [
        *part.leftovers,
        *part.temp_files,
        *(s.log_path.name for s in part.segments),
        *(n for ns in part.index_files.values() for n in ns),
        *part.snapshots.values(),
    ]
    return sorted(n for n in listed if os.path.isfile(part.path(n)))


def finish_interrupted_rewrites(
    p: Plan, part: Partition, keep_base_snapshots: bool = False
) -> list[str]:
    """The leftovers of an interrupted rewrite (our `*.kafkalog-tmp`, `.deleted`, `.cleaned`,
    `.swap`) resolved as LogLoader resolves them on start (removeTempFilesAndCollectSwapFiles,
    then the swap pass: the files a valid `.swap` covers removed, the `.swap` renamed): the
    actions into `p`; the leftover names (none: nothing to finish).

    `keep_base_snapshots`: the producer snapshot named after a swapped segment's base offset is
    kept, where LogLoader's pass deletes it (and the broker rebuilds it on load). It holds the
    state before that offset, which a rewrite of the segment leaves as it was, and the rewrite
    that was not interrupted keeps it (LocalLog.replaceSegments deletes no file of a segment
    replaced at its own base offset): a killed compact or erase, run again, so ends where it
    would have ended."""
    left = part.interrupted_rewrite
    if left:
        _resolve_leftovers(p, part, keep_base_snapshots)
    return left


def _resolve_leftovers(
    p: Plan, part: Partition, keep_base_snapshots: bool = False
) -> dict[int, Segment]:
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
        if f.endswith(names.DELETED_SUFFIX) and not f.endswith(
            names.CHECKPOINT_SUFFIX + names.DELETED_SUFFIX
        ):
            p.add(
                Action(
                    ActionKind.DELETE,
                    part.path(f),
                    "leftover .deleted file (LogLoader deletes it)",
                    name,
                )
            )
            present.discard(f)
    cleaned = [f for f in files if f.endswith(names.CLEANED_SUFFIX)]
    swaps = [f for f in files if f.endswith(names.SWAP_SUFFIX)]
    min_cleaned = min((o for f in cleaned if (o := offset_from_name(f)) is not None), default=None)
    valid_swaps = []
    for f in swaps:
        off = offset_from_name(f)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            p.add(
                Action(
                    ActionKind.DELETE,
                    part.path(f),
                    f"invalid .swap file (at or above the smallest "
                    f".cleaned offset {min_cleaned}: an interrupted split)",
                    name,
                )
            )
            present.discard(f)
        else:
            valid_swaps.append(f)
    for f in cleaned:
        p.add(
            Action(
                ActionKind.DELETE,
                part.path(f),
                "leftover .cleaned file (LogLoader deletes it)",
                name,
            )
        )
        present.discard(f)
    swapped_bases = set()
    log_swaps = {
        f: swap_base
        for f in valid_swaps
        if f.endswith(names.LOG_SUFFIX + names.SWAP_SUFFIX)
        and (swap_base := offset_from_name(f)) is not None
    }
    if log_swaps:
        # the range the swapped-in segments cover: each .swap's own walk, from its first byte
        lo = min(log_swaps.values())
        hi = max(
            Segment(part.directory, base, read_from=part.path(f)).next_offset_after(None)
            for f, base in log_swaps.items()
        )
        for f in files:
            off = offset_from_name(f)
            if (
                f in present
                and off is not None
                and lo <= off < hi
                and not f.endswith(names.SWAP_SUFFIX)
                and f.endswith(names.SEGMENT_SUFFIXES + (names.SNAPSHOT_SUFFIX,))
                and not (
                    keep_base_snapshots
                    and f.endswith(names.SNAPSHOT_SUFFIX)
                    and off in log_swaps.values()
                )
            ):
                p.add(
                    Action(
                        ActionKind.DELETE,
                        part.path(f),
                        f"replaced by the .swap segments [{lo}, {hi})",
                        name,
                    )
                )
                present.discard(f)
    for f in valid_swaps:
        final = f[: -len(names.SWAP_SUFFIX)]
        p.add(
            Action(
                ActionKind.RENAME,
                part.path(f),
                "completes an interrupted swap (LogLoader)",
                name,
                target=part.path(final),
            )
        )
        present.discard(f)
        present.add(final)
        if final.endswith(names.LOG_SUFFIX):
            swapped_bases.add(offset_from_name(final))
    logs = sorted(
        (off, f)
        for f in present
        if f.endswith(names.LOG_SUFFIX) and (off := offset_from_name(f)) is not None
    )
    segs = {}
    for i, (off, f) in enumerate(logs):
        read_from = part.path(f + names.SWAP_SUFFIX) if off in swapped_bases else None
        segs[off] = Segment(part.directory, off, read_from=read_from, is_active=i == len(logs) - 1)
    for f in sorted(present):
        off = offset_from_name(f)
        if off is None or off in segs:
            continue
        if f.endswith((names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX, names.TXN_INDEX_SUFFIX)):
            p.add(
                Action(
                    ActionKind.DELETE,
                    part.path(f),
                    "index file without a .log (LogLoader deletes it)",
                    name,
                )
            )
    return segs
