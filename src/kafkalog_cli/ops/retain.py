"""`retain`: Kafka's retention, offline (spec §9: UnifiedLog.deleteOldSegments, deletableSegments,
deleteSegments; LogManager's checkpoints).

For each partition, three passes in Kafka's order, each over what the previous one left:
1. log-start-offset breach (every cleanup.policy): a segment goes when the next one starts at or
   below the log start offset;
2. size (cleanup.policy with `delete`, retention.bytes >= 0): while the log stays at or above
   retention.bytes without the segment;
3. time (cleanup.policy with `delete`, retention.ms >= 0): while `now - largestTimestamp >
   retention.ms`, the largest timestamp being the last time-index entry, else the .log mtime.

Each pass walks from the oldest segment and stops at the first one that must stay; only segments
wholly below the high watermark (replication-offset-checkpoint) are eligible; an empty last
segment always stays. When every segment goes, Kafka first rolls a new empty active segment at
the log end offset (ops.roll), and deletes the old ones after.

Planning reads file names, sizes, index tails and, for the last segment only, the bytes after its
last offset-index entry: never a whole log. Everything is read lazily, in the order the walk
needs it, so a partition with nothing expired costs one directory listing and one index tail.

The plan's order is crash safe: roll files first (ops.roll's own order), then segments oldest
first, each `.log` before its indexes (a crash leaves either a shorter log or index files without
a `.log`, which recover, Kafka and a rerun of retain delete), then producer snapshots below the first
kept segment, the leader-epoch-checkpoint, and the log dir's checkpoints last. At every
instant the remaining segments are a suffix of the old ones, and Kafka's load rule
(logStartOffset = max(checkpoint, first segment base)) gives the right start.
"""
from __future__ import annotations

import enum
import os
import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from kafkalog_cli.config import ConfigResolver, TopicConfig, cluster_metadata_configs
from kafkalog_cli.errors import CorruptRecordError, InputError, KafkalogError
from kafkalog_cli.formats.checkpoints import (encode_leader_epoch_checkpoint, load_leader_epoch_cache,
                                              parse_leader_epoch_checkpoint,
                                              truncate_from_start)
from kafkalog_cli.formats.indexes import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage import checkpoints as checkpoint_text
from kafkalog_cli.ops.plan import Action, ActionKind, Plan, apply  # noqa: F401  (apply: the op's API)
from kafkalog_cli.storage import names
from kafkalog_cli.storage.fsops import TMP_SUFFIX
from kafkalog_cli.storage.names import TopicPartition, parse_partition_dir
from kafkalog_cli.storage.segment import map_file

KRAFT_METADATA_TOPIC = "__cluster_metadata"   # LogManager leaves it to KRaft: never retained here
_TIME_ENTRY = struct.Struct(">qi")
_OFFSET_ENTRY = struct.Struct(">ii")


class DeletionReason(str, enum.Enum):
    """Kafka's SegmentDeletionReason subclasses, in the order the passes run."""

    LOG_START_OFFSET_BREACH = "log-start-offset"    # StartOffsetBreach
    RETENTION_SIZE_BREACH = "retention.bytes"       # RetentionSizeBreach
    RETENTION_MS_BREACH = "retention.ms"            # RetentionMsBreach

    def describe(self, cfg: TopicConfig, log_start_offset: int) -> str:
        """The words of the broker's "Deleting segment ... due to ..." line."""
        if self is DeletionReason.LOG_START_OFFSET_BREACH:
            return f"log start offset {log_start_offset} breach"
        if self is DeletionReason.RETENTION_SIZE_BREACH:
            return f"retention size {cfg.retention_bytes} breach"
        return (f"retention time {cfg.retention_ms}ms breach based on the largest record timestamp "
                f"in the segment")


@dataclass
class RetainOptions:
    now_ms: int
    resolver: ConfigResolver | None = None   # None: Kafka defaults + the log dir's __cluster_metadata


# ------------------------------------------------------------------ reading, lazily
def _read_entry(fd: int, slot: int, entry: struct.Struct) -> tuple[int, int]:
    return entry.unpack(os.pread(fd, entry.size, slot * entry.size))


def last_index_entry(path: Path, entry: struct.Struct, rel_field: int) -> tuple[int, int] | None:
    """The last real entry of an index file, as raw fields, reading only a few slots.

    A preallocated index (the active segment's, or any after an unclean shutdown) ends in zero
    slots; a real entry at slot i > 0 never has relative offset 0 (offsets increase), so the first
    padding slot is found by bisection. An all-zero file has no entry."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        slots = os.fstat(fd).st_size // entry.size
        if slots == 0:
            return None
        last = _read_entry(fd, slots - 1, entry)
        if last[rel_field] != 0 or slots == 1:
            return last
        lo, hi = 1, slots - 1          # slot hi is padding; find the first padding slot
        while lo < hi:
            mid = (lo + hi) // 2
            if _read_entry(fd, mid, entry)[rel_field] == 0:
                hi = mid
            else:
                lo = mid + 1
        found = _read_entry(fd, lo - 1, entry)
        if lo == 1 and found == (0, 0):
            return None                # nothing but preallocated zeros
        return found
    finally:
        os.close(fd)


@dataclass
class LogTail:
    """What only the .log can tell about the last segment: its next offset (the log end offset),
    the largest batch timestamp after the last index entry, and its size in complete batches."""

    next_offset: int
    max_timestamp: int
    valid_size: int


def read_log_tail(log: Path, base: int, start: int) -> LogTail:
    """Walk batch headers from `start` (the last offset-index entry's position) to the end."""
    buf = map_file(log)
    try:
        size = len(buf)
        if start >= size:
            start = 0
        nxt, max_ts, end = base, -1, start
        pos = start
        try:
            for b in iter_batches(buf, start):
                nxt, end = b.last_offset + 1, b.position + b.size
                max_ts = max(max_ts, b.max_timestamp)
                pos = end
        except CorruptRecordError as e:
            # a preallocated .log (preallocate=true) ends in zeros: that is the end of the data
            if bytes(buf[pos:pos + 12]).strip(b"\0"):
                raise e.located(path=str(log)) from None
        if nxt == base and start:
            return read_log_tail(log, base, 0)   # the index pointed past the data: start over
        return LogTail(nxt, max_ts, end)
    finally:
        if hasattr(buf, "close"):
            buf.close()


@dataclass
class SegmentView:
    """One segment as retention sees it (LogSegment.size, largestTimestamp); read on demand.
    Paths are kept as strings: a log dir has hundreds of thousands of files."""

    directory: str
    base_offset: int
    is_last: bool = False

    def file(self, suffix: str) -> str:
        return f"{self.directory}/{self.base_offset:020d}{suffix}"

    @property
    def log_path(self) -> Path:
        return Path(self.file(names.LOG_SUFFIX))

    @cached_property
    def _stat(self) -> os.stat_result:
        return os.stat(self.file(names.LOG_SUFFIX))

    @cached_property
    def tail(self) -> LogTail:
        entry = last_index_entry(self.file(names.INDEX_SUFFIX), _OFFSET_ENTRY, 0)
        return read_log_tail(self.log_path, self.base_offset, entry[1] if entry else 0)

    @property
    def size(self) -> int:
        return self._stat.st_size

    @property
    def empty(self) -> bool:
        return self.tail.next_offset == self.base_offset if self.is_last else self.size == 0

    @cached_property
    def _largest(self) -> tuple[int, bool]:
        entry = last_index_entry(self.file(names.TIME_INDEX_SUFFIX), _TIME_ENTRY, 1)
        ts = entry[0] if entry else -1
        if self.is_last:
            ts = max(ts, self.tail.max_timestamp)
        if ts >= 0:
            return ts, False
        return self._stat.st_mtime_ns // 1_000_000, True   # File.lastModified: whole ms

    @property
    def largest_timestamp(self) -> int:
        """The last time-index entry's timestamp; for the last segment also the batches after its
        last index entry (which an unclean shutdown may have left unindexed); else the .log mtime."""
        return self._largest[0]

    @property
    def uses_mtime(self) -> bool:
        return self._largest[1]


_INDEX_SUFFIXES = (names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX, names.TXN_INDEX_SUFFIX)


@dataclass
class PartitionView:
    """A partition dir as one directory listing: segment bases, and the other files by kind
    (file names, not paths: only the files acted on become Paths)."""

    directory: Path
    topic_partition: TopicPartition
    segments: list[SegmentView]
    snapshots: dict[int, str]
    index_files: dict[int, list[str]]        # .index/.timeindex/.txnindex by base offset
    leftovers: list[str]                     # interrupted kafkalog writes (*.kafkalog-tmp)

    @classmethod
    def list(cls, directory: Path, tp: TopicPartition) -> "PartitionView":
        bases: list[int] = []
        snapshots: dict[int, str] = {}
        index_files: dict[int, list[str]] = {}
        leftovers: list[str] = []
        for name in os.listdir(directory):
            if name.endswith(TMP_SUFFIX):
                leftovers.append(name)
                continue
            # Kafka's names: 20 digits, then the suffix (temporary suffixes come after it)
            if len(name) < 22 or name[20] != "." or not name[:20].isdigit():
                continue
            suffix = name[20:]
            if suffix == names.LOG_SUFFIX:
                bases.append(int(name[:20]))
            elif suffix == names.SNAPSHOT_SUFFIX:
                snapshots[int(name[:20])] = name
            elif suffix in _INDEX_SUFFIXES:
                index_files.setdefault(int(name[:20]), []).append(name)
        bases.sort()
        last = len(bases) - 1
        where = str(directory)
        segs = [SegmentView(where, b, i == last) for i, b in enumerate(bases)]
        return cls(directory, tp, segs, snapshots, index_files, sorted(leftovers))

    @property
    def name(self) -> str:
        return self.directory.name

    def path(self, name: str) -> Path:
        return self.directory / name


# ------------------------------------------------------------------ Kafka's walk
Predicate = Callable[[SegmentView, "SegmentView | None"], bool]


def deletable_segments(segments: list[SegmentView], high_watermark: int, predicate: Predicate) -> list[SegmentView]:
    """LocalLog.deletableSegments with UnifiedLog's high-watermark guard: oldest first, stop at the
    first segment that must stay; an empty last segment always stays.

    `high_watermark` is the checkpoint's, raised to the log start offset (Kafka clamps it into
    [logStartOffset, logEndOffset]; the upper clamp never changes a comparison with an upper bound
    that is itself at most the log end offset)."""
    out: list[SegmentView] = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else seg.tail.next_offset
        if not (high_watermark >= upper and predicate(seg, nxt)):
            break
        if nxt is None and seg.empty:
            break
        out.append(seg)
    return out


def log_start_breach(log_start_offset: int) -> Predicate:
    return lambda seg, nxt: nxt is not None and nxt.base_offset <= log_start_offset


def size_breach(segments: list[SegmentView], retention_bytes: int) -> Predicate | None:
    if retention_bytes < 0:
        return None
    total = sum(s.size for s in segments)
    if total < retention_bytes:
        return None
    diff = total - retention_bytes

    def predicate(seg: SegmentView, nxt) -> bool:
        nonlocal diff
        if diff - seg.size >= 0:
            diff -= seg.size
            return True
        return False
    return predicate


def time_breach(now_ms: int, retention_ms: int) -> Predicate | None:
    if retention_ms < 0:
        return None
    return lambda seg, nxt: now_ms - seg.largest_timestamp > retention_ms


@dataclass
class DeletedSegment:
    segment: SegmentView
    reason: DeletionReason
    detail: str

    def to_json(self) -> dict:
        s = self.segment
        out = {"base_offset": s.base_offset, "size": s.size, "reason": self.reason.value,
               "detail": self.detail}
        if self.reason is DeletionReason.RETENTION_MS_BREACH:
            out["largest_timestamp"] = s.largest_timestamp
            out["timestamp_from"] = "mtime" if s.uses_mtime else "time index"
        return out


@dataclass
class Retention:
    """The outcome of the three passes for one partition."""

    old_log_start_offset: int
    new_log_start_offset: int
    first_segment_base: int
    deleted: list[DeletedSegment] = field(default_factory=list)
    rolled_at: int | None = None           # the new empty segment's base, when all went


def run_passes(view: PartitionView, cfg: TopicConfig, log_start_checkpoint: int, hw_checkpoint: int,
               now_ms: int) -> Retention:
    """UnifiedLog.deleteOldSegments: the passes in order, each on what the previous one left."""
    segments = list(view.segments)
    log_start = max(log_start_checkpoint, segments[0].base_offset)
    result = Retention(log_start, log_start, segments[0].base_offset)
    passes: list[tuple[DeletionReason, Callable[[], Predicate | None]]] = [
        (DeletionReason.LOG_START_OFFSET_BREACH, lambda: log_start_breach(result.new_log_start_offset))]
    if "delete" in cfg.cleanup_policy:
        passes += [(DeletionReason.RETENTION_SIZE_BREACH, lambda: size_breach(segments, cfg.retention_bytes)),
                   (DeletionReason.RETENTION_MS_BREACH, lambda: time_breach(now_ms, cfg.retention_ms))]
    for reason, make in passes:
        predicate = make()
        if predicate is None or not segments:
            continue
        hw = max(hw_checkpoint, result.new_log_start_offset)
        gone = deletable_segments(segments, hw, predicate)
        if not gone:
            continue
        detail = reason.describe(cfg, result.new_log_start_offset)
        result.deleted += [DeletedSegment(s, reason, detail) for s in gone]
        segments = segments[len(gone):]
        if not segments:
            # deleteSegments: "we must always have at least one segment": roll first. The new
            # segment is empty, and an empty last segment is never deleted: no pass has more to do.
            result.rolled_at = result.first_segment_base = gone[-1].tail.next_offset
            result.new_log_start_offset = max(result.new_log_start_offset, result.rolled_at)
            break
        result.first_segment_base = segments[0].base_offset
        result.new_log_start_offset = max(result.new_log_start_offset, result.first_segment_base)
    return result


# ------------------------------------------------------------------ the plan
@dataclass
class LogDirState:
    """The log dir's root checkpoints, read once (strictly: a damaged one stops the log dir)."""

    log_dir: Path
    high_watermarks: dict[tuple[str, int], int]
    log_starts: dict[tuple[str, int], int]
    log_start_order: list[tuple[str, int]]
    recovery_points: dict[tuple[str, int], int]
    recovery_point_order: list[tuple[str, int]]

    @classmethod
    def read(cls, log_dir: Path) -> "LogDirState":
        hw, _ = checkpoint_text.read_offsets_strict(log_dir / names.REPLICATION_CHECKPOINT)
        ls, ls_order = checkpoint_text.read_offsets_strict(log_dir / names.LOG_START_OFFSET_CHECKPOINT)
        rp, rp_order = checkpoint_text.read_offsets_strict(log_dir / names.RECOVERY_POINT_CHECKPOINT)
        return cls(log_dir, hw, ls, ls_order, rp, rp_order)


def plan(log_dir: Path, partition_dirs: list[Path], opts: RetainOptions) -> Plan:
    """Retention for `partition_dirs` of `log_dir`. A partition that cannot be planned (a corrupt
    active segment or leader-epoch-checkpoint) gets an `error` in its summary and no action; a
    damaged root checkpoint raises, as nothing in the log dir can be judged without it."""
    log_dir = Path(log_dir)
    p = Plan("retain", log_dir)
    resolver = opts.resolver or ConfigResolver(cluster_metadata=cluster_metadata_configs(log_dir))
    state = LogDirState.read(log_dir)
    configs: dict[str, TopicConfig] = {}
    new_log_starts: dict[tuple[str, int], int] = {}
    new_recovery_points: dict[tuple[str, int], int] = {}
    for tmp in sorted(log_dir.glob("*" + TMP_SUFFIX)):
        p.add(Action(ActionKind.DELETE, tmp, "an interrupted kafkalog write"))
    for d in partition_dirs:
        tp = parse_partition_dir(d.name)
        if tp is None:
            continue
        if tp.topic == KRAFT_METADATA_TOPIC:
            p.partitions[d.name] = _summary(d, status="skipped",
                                            detail="the KRaft metadata log is retained by the controller")
            continue
        cfg = configs.get(tp.topic) or configs.setdefault(tp.topic, resolver.for_topic(tp.topic))
        actions: list[Action] = []
        try:
            view = PartitionView.list(d, tp)
            summary, result = _plan_partition(view, cfg, state, opts, actions)
        except KafkalogError as e:
            p.partitions[d.name] = _summary(d, status="error", detail=str(e), exit_code=int(e.exit_code))
            p.note(d.name, e.message, e.path, e.position)
            continue
        p.actions.extend(actions)
        p.partitions[d.name] = summary
        if result is not None:
            # LogManager's rules, applied on every run so that a rerun finishes an interrupted one
            key, start = (tp.topic, tp.partition), result.new_log_start_offset
            new_log_starts[key] = start if start > result.first_segment_base else -1
            if state.recovery_points.get(key, 0) < start:
                new_recovery_points[key] = start
    _checkpoint_actions(p, state, new_log_starts, new_recovery_points)
    return p


def _summary(d: Path, **kw) -> dict:
    tp = parse_partition_dir(d.name)
    return {"partition": d.name, "topic": tp.topic if tp else None,
            "partition_id": tp.partition if tp else None, **kw}


def _plan_partition(view: PartitionView, cfg: TopicConfig, state: LogDirState, opts: RetainOptions,
                    actions: list[Action]) -> tuple[dict, Retention | None]:
    d, name = view.directory, view.name
    key = (view.topic_partition.topic, view.topic_partition.partition)
    actions += [Action(ActionKind.DELETE, view.path(f), "an interrupted kafkalog write", name)
                for f in view.leftovers]
    if not view.segments:
        return _summary(d, status="skipped", detail="no segment"), None
    result = run_passes(view, cfg, state.log_starts.get(key, 0), state.high_watermarks.get(key, 0), opts.now_ms)
    summary = _summary(
        d, status="deleted" if result.deleted else "nothing to do",
        cleanup_policy=",".join(cfg.cleanup_policy), retention_ms=cfg.retention_ms,
        retention_bytes=cfg.retention_bytes, segments_deleted=len(result.deleted), bytes_freed=0,
        old_log_start_offset=result.old_log_start_offset, new_log_start_offset=result.new_log_start_offset,
        rolled=result.rolled_at is not None, segments=[x.to_json() for x in result.deleted])
    if key not in state.high_watermarks:
        summary["detail"] = ("no high watermark in replication-offset-checkpoint: only segments below "
                             "the log start offset are eligible")
    if result.rolled_at is not None:
        _roll_actions(view, cfg, opts, actions)
    freed = 0
    for x in result.deleted:
        seg = x.segment
        for f in [seg.log_path] + [view.path(n) for n in sorted(view.index_files.get(seg.base_offset, []))]:
            freed += _size_of(f)
            actions.append(Action(ActionKind.DELETE, f, f"segment {seg.base_offset}: {x.detail}", name))
    # What follows also finishes a run that was interrupted after its segments went: on a log dir
    # a broker left behind, none of it changes anything.
    first = result.first_segment_base
    bases = {s.base_offset for s in view.segments}
    tidy = []
    for base in sorted(b for b in view.index_files if b < first and b not in bases):
        tidy += [Action(ActionKind.DELETE, view.path(f), "index file without its .log (an interrupted retain)",
                        name) for f in sorted(view.index_files[base])]
    # Kafka deletes the snapshots of the deleted segments; those of no segment below the first
    # are strays its LogLoader deletes
    for off in sorted(o for o in view.snapshots if o < first):
        snapshot = view.path(view.snapshots[off])
        freed += _size_of(snapshot)
        tidy.append(Action(ActionKind.DELETE, snapshot,
                           f"producer snapshot below the first segment {first}", name))
    epoch_action = _leader_epoch_action(d, result.new_log_start_offset, name)
    if epoch_action is not None:
        tidy.append(epoch_action)
    actions += tidy
    summary["bytes_freed"] = freed
    if tidy and not result.deleted:
        summary["status"] = "tidied"
        summary["detail"] = "finished an interrupted retain (stray snapshots, index files, leader epochs)"
    return summary, result


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _roll_actions(view: PartitionView, cfg: TopicConfig, opts: RetainOptions, actions: list[Action]) -> None:
    """Kafka rolls before deleting every segment: ops.roll's plan for this partition, as is."""
    from kafkalog_cli.ops import roll

    rolled = roll.plan(view.directory.parent, [view.directory],
                       roll.RollOptions(if_needed=False, now_ms=opts.now_ms, resolver=_FixedConfig(cfg)))
    if not rolled.actions:
        raise InputError("every segment has expired but the active segment cannot be rolled",
                         path=str(view.segments[-1].log_path))
    actions.extend(rolled.actions)


@dataclass
class _FixedConfig:
    """A resolver that answers the config retention already resolved (roll takes a resolver)."""

    cfg: TopicConfig

    def for_topic(self, topic: str) -> TopicConfig:
        return self.cfg


def _leader_epoch_action(d: Path, new_log_start: int, name: str) -> Action | None:
    """LeaderEpochFileCache.truncateFromStart(new log start), written as its flush writes it."""
    path = d / names.LEADER_EPOCH_CHECKPOINT
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    if _epochs_start_at_or_after(raw, new_log_start):
        return None
    try:
        cache = load_leader_epoch_cache(parse_leader_epoch_checkpoint(raw, path=str(path)))
    except ValueError as e:   # a negative epoch or offset: Kafka's assign refuses it too
        raise InputError(str(e), path=str(path)) from None
    data = encode_leader_epoch_checkpoint(truncate_from_start(cache, new_log_start))
    if data == raw:
        return None
    return Action(ActionKind.UPDATE_CHECKPOINT, path,
                  f"leader epochs truncated from the start at {new_log_start}", name, data=data)


def _epochs_start_at_or_after(raw: bytes, offset: int) -> bool:
    """The common case, without the full parse: no entry, or the first (lowest) one starts at or
    after `offset`, so truncateFromStart changes nothing."""
    lines = raw.split(b"\n", 3)
    try:
        if int(lines[1]) == 0:
            return True
        return int(lines[2].split()[1]) >= offset
    except (IndexError, ValueError):
        return False


def _checkpoint_actions(p: Plan, state: LogDirState, new_log_starts: dict, new_recovery_points: dict) -> None:
    """LogManager's checkpoints, written last. log-start-offset-checkpoint lists a partition only
    while its log start offset is above its first segment's base (-1 here: drop the entry)."""
    if new_log_starts:
        starts = dict(state.log_starts)
        for key, value in new_log_starts.items():
            if value < 0:
                starts.pop(key, None)
            else:
                starts[key] = value
        if starts != state.log_starts:
            path = state.log_dir / names.LOG_START_OFFSET_CHECKPOINT
            p.add(Action(ActionKind.UPDATE_CHECKPOINT, path, "log start offsets after segment deletion",
                         data=checkpoint_text.encode_offsets(starts, order=state.log_start_order)))
    if new_recovery_points and any(state.recovery_points.get(k) != v for k, v in new_recovery_points.items()):
        points = {**state.recovery_points, **new_recovery_points}
        path = state.log_dir / names.RECOVERY_POINT_CHECKPOINT
        p.add(Action(ActionKind.UPDATE_CHECKPOINT, path, "recovery points raised to the new log start offsets",
                     data=checkpoint_text.encode_offsets(points, order=state.recovery_point_order)))
