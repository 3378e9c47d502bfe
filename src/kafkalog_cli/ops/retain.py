"""`retain`: Kafka's retention, offline (UnifiedLog.deleteOldSegments, deletableSegments,
deleteSegments; LogManager's checkpoints).

For each partition, three passes in Kafka's order, each over what the previous one left:
1. log-start-offset breach (every cleanup.policy): a segment goes when the next one starts at or
   below the log start offset;
2. size (cleanup.policy with `delete`, retention.bytes >= 0): while the log stays at or above
   retention.bytes without the segment;
3. time (cleanup.policy with `delete`, retention.ms >= 0): while `now - largestTimestamp >
   retention.ms`, the largest timestamp being the last time-index entry, else the .log mtime.

Passes 2 and 3 never run on a guess: when a value that decides them (config.retention_deciding_configs)
is unknown -- no broker config, no readable topic config, damaged metadata -- the partition is
`refused`: only pass 1, which needs no config, runs (exit 7, one line per partition).

Each pass walks from the oldest segment and stops at the first one that must stay; only segments
wholly below the high watermark (replication-offset-checkpoint, as the broker loads it:
ops.high_watermark) are eligible; an empty last
segment always stays. When every segment goes, Kafka first rolls a new empty active segment at
the log end offset (ops.roll), and deletes the old ones after.

Planning reads file names, sizes, index tails and, for the last segment only, the bytes after its
last offset-index entry: never a whole log. They are storage's facts (Partition.open lists the
directory once; Segment reads each fact on demand), asked in the order the walk needs them, so a
partition with nothing expired costs one directory listing and one index tail.

The plan's order is crash safe: roll files first (ops.roll's own order), then segments oldest
first, each `.log` before its indexes (a crash leaves either a shorter log or index files without
a `.log`, which recover, Kafka and a rerun of retain delete), then producer snapshots below the first
kept segment, the leader-epoch-checkpoint, and the log dir's checkpoints last. At every
instant the remaining segments are a suffix of the old ones, and Kafka's load rule
(logStartOffset = max(checkpoint, first segment base)) gives the right start.

When every segment goes, the new empty active segment at the log end offset is created first,
never the log-start checkpoint first: its files are empty (an inode each, no block), so this
works on a 100% full disk too, and a kill before the last old segment goes leaves a segment at
the log end, so the loader never creates one at an older checkpointed offset (3.3.1 LogLoader,
no segment left) and reuses offsets. The roll's writes to the segment it closes are left out,
as that segment goes in the same run. On a full disk (full_disk: less than
storage.space.FULL_BELOW free) what needs blocks (the roll's producer snapshot) moves after the
deletions. An empty log's leader-epoch-checkpoint is written as the broker's next load leaves
it (truncateFromEnd(log end offset)), so `recover` finds nothing to do.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import (
    ConfigResolver,
    TopicConfig,
    refusal_line,
    retention_deciding_configs,
    unknown_configs,
)
from kafkalog_cli.errors import InputError, KafkalogError
from kafkalog_cli.formats.checkpoints import (
    encode_leader_epoch_checkpoint,
    load_leader_epoch_cache,
    parse_leader_epoch_checkpoint,
    truncate_from_end,
    truncate_from_start,
)
from kafkalog_cli.ops import tiered
from kafkalog_cli.ops.high_watermark import high_watermark_at_load
from kafkalog_cli.ops.plan import (  # noqa: F401  (apply: the op's API)
    Action,
    ActionKind,
    Plan,
    apply,
    delete_interrupted_writes,
    takes_blocks,
)
from kafkalog_cli.ops.tiered import RemoteLog
from kafkalog_cli.storage import checkpoints as checkpoint_text
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.logdir import OffsetCheckpoint, RootCheckpoints
from kafkalog_cli.storage.names import TopicPartition, parse_partition_dir
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment
from kafkalog_cli.storage.space import FreeSpace

KRAFT_METADATA_TOPIC = "__cluster_metadata"  # LogManager leaves it to KRaft: never retained here


class DeletionReason(str, enum.Enum):
    """Kafka's SegmentDeletionReason subclasses, in the order the passes run."""

    LOG_START_OFFSET_BREACH = "log-start-offset"  # StartOffsetBreach
    RETENTION_SIZE_BREACH = "retention.bytes"  # RetentionSizeBreach
    RETENTION_MS_BREACH = "retention.ms"  # RetentionMsBreach

    def describe(self, cfg: TopicConfig, log_start_offset: int) -> str:
        """The words of the broker's "Deleting segment ... due to ..." line."""
        if self is DeletionReason.LOG_START_OFFSET_BREACH:
            return f"log start offset {log_start_offset} breach"
        if self is DeletionReason.RETENTION_SIZE_BREACH:
            return f"retention size {cfg.retention_bytes} breach"
        return (
            f"retention time {cfg.retention_ms}ms breach based on the largest record timestamp "
            f"in the segment"
        )

    def describe_local(self, cfg: TopicConfig, local_log_start_offset: int) -> str:
        """The broker's words for a remote-enabled log (StartOffsetBreach, RetentionSizeBreach,
        RetentionMsBreach with remoteLogEnabledAndRemoteCopyEnabled), the segment uploaded."""
        if self is DeletionReason.LOG_START_OFFSET_BREACH:
            return f"local log start offset {local_log_start_offset} breach"
        if self is DeletionReason.RETENTION_SIZE_BREACH:
            return (
                f"local log retention size {cfg.local_retention_bytes_effective} breach (uploaded)"
            )
        return (
            f"local log retention time {cfg.local_retention_ms_effective}ms breach based on the largest record "
            f"timestamp in the segment (uploaded)"
        )


@dataclass
class RetainPlan(Plan):
    """retain's Plan, with one line per partition whose retention by config was refused."""

    refusals: list[str] = field(default_factory=list)


@dataclass
class RetainOptions:
    now_ms: int
    resolver: ConfigResolver | None = (
        None  # None: Kafka defaults + the log dir's __cluster_metadata
    )
    free_first: bool | None = None  # None: when the log dir's file system is full (full_disk)


# ------------------------------------------------------------------ Kafka's walk
Predicate = Callable[[Segment, "Segment | None"], bool]


def deletable_segments(
    segments: list[Segment], high_watermark: int, predicate: Predicate
) -> list[Segment]:
    """LocalLog.deletableSegments with UnifiedLog's high-watermark guard: oldest first, stop at the
    first segment that must stay; an empty last segment always stays.

    `high_watermark` is the broker's at load (ops.high_watermark), without its upper clamp to the
    log end offset, which never changes a comparison with an upper bound that is itself at most
    the log end offset."""
    out: list[Segment] = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else seg.tail().next_offset
        if not (high_watermark >= upper and predicate(seg, nxt)):
            break
        if nxt is None and seg.empty:
            break
        out.append(seg)
    return out


def log_start_breach(log_start_offset: int) -> Predicate:
    return lambda seg, nxt: nxt is not None and nxt.base_offset <= log_start_offset


def size_breach(segments: list[Segment], retention_bytes: int) -> Predicate | None:
    if retention_bytes < 0:
        return None
    total = sum(s.size for s in segments)
    if total < retention_bytes:
        return None
    diff = total - retention_bytes

    def predicate(seg: Segment, nxt) -> bool:
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
    segment: Segment
    reason: DeletionReason
    detail: str

    def to_dict(self) -> dict:
        s = self.segment
        out = {
            "base_offset": s.base_offset,
            "size": s.size,
            "reason": self.reason.value,
            "detail": self.detail,
        }
        if self.reason is DeletionReason.RETENTION_MS_BREACH:
            out["largest_timestamp"], from_mtime = s.largest_timestamp_and_source
            out["timestamp_from"] = "mtime" if from_mtime else "time index"
        return out


@dataclass
class Retention:
    """The outcome of the three passes for one partition."""

    old_log_start_offset: int
    new_log_start_offset: int
    first_segment_base: int
    deleted: list[DeletedSegment] = field(default_factory=list)
    rolled_at: int | None = None  # the new empty segment's base, when all went
    # tiered storage (ops.tiered): the local log start offset, raised by local deletions while the
    # log start offset stays; the checkpoint entry kept (3.8+ lists every remote-enabled
    # partition, KAFKA-16146); the leader epochs truncated only where the log start moved
    local_log_start_offset: int | None = None
    remote_log_enabled: bool = False
    blocked: str | None = None  # why a deletion the predicates ask for cannot be decided

    @property
    def log_start_changed(self) -> bool:
        return self.new_log_start_offset > self.old_log_start_offset


def run_passes(
    partition: Partition,
    cfg: TopicConfig,
    now_ms: int,
    by_config: bool = True,
    raise_log_start_to: int | None = None,
) -> Retention:
    """UnifiedLog.deleteOldSegments: the passes in order, each on what the previous one left.
    `by_config` False: the log-start-offset pass alone (a deciding config is unknown).
    `raise_log_start_to`: the log start offset is first raised to it, as
    UnifiedLog.maybeIncrementLogStartOffset does for a DeleteRecords request (the caller checks it
    against the high watermark); a lower one changes nothing."""
    segments = list(partition.segments)
    log_start = partition.log_start_offset
    assert log_start is not None  # None only without segments, and segments[0] is read below
    hw_checkpoint = partition.checkpoints.high_watermark
    result = Retention(
        log_start,
        max(log_start, raise_log_start_to if raise_log_start_to is not None else log_start),
        segments[0].base_offset,
    )
    passes: list[tuple[DeletionReason, Callable[[], Predicate | None]]] = [
        (
            DeletionReason.LOG_START_OFFSET_BREACH,
            lambda: log_start_breach(result.new_log_start_offset),
        )
    ]
    if by_config and "delete" in cfg.cleanup_policy:
        passes += [
            (
                DeletionReason.RETENTION_SIZE_BREACH,
                lambda: size_breach(segments, cfg.retention_bytes),
            ),
            (DeletionReason.RETENTION_MS_BREACH, lambda: time_breach(now_ms, cfg.retention_ms)),
        ]
    for reason, make in passes:
        predicate = make()
        if predicate is None or not segments:
            continue
        hw = high_watermark_at_load(hw_checkpoint, result.new_log_start_offset)
        gone = deletable_segments(segments, hw, predicate)
        if not gone:
            continue
        detail = reason.describe(cfg, result.new_log_start_offset)
        result.deleted += [DeletedSegment(s, reason, detail) for s in gone]
        segments = segments[len(gone) :]
        if not segments:
            # deleteSegments: "we must always have at least one segment": roll first. The new
            # segment is empty, and an empty last segment is never deleted: no pass has more to do.
            result.rolled_at = result.first_segment_base = gone[-1].tail().next_offset
            result.new_log_start_offset = max(result.new_log_start_offset, result.rolled_at)
            break
        result.first_segment_base = segments[0].base_offset
        result.new_log_start_offset = max(result.new_log_start_offset, result.first_segment_base)
    return result


# ------------------------------------------------------------------ tiered storage
def tiered_deletable(
    segments: list[Segment],
    high_watermark: int,
    predicate: Predicate,
    log_start_offset: int,
    remote: RemoteLog,
) -> tuple[list[Segment], bool, str | None]:
    """UnifiedLog.deletableSegments for a remote-enabled log with remote copy on (3.6+): as
    deletable_segments, and each segment also eligible (isSegmentEligibleForDeletion): uploaded
    (its last offset <= highestOffsetInRemoteStorage) or, 3.7+, the log start offset at or past
    the next segment. Returns (the deletable segments, whether the broker rolls the active
    segment first (shouldRoll, 3.7+), why the walk stopped undecided: None when it did not)."""
    out: list[Segment] = []
    upload = remote.upload
    highest = upload.highest_offset_in_remote_storage if upload.known else None
    rule37 = (
        remote.roll_and_start_offset_rule.applies if remote.roll_and_start_offset_rule else None
    )
    roll = False
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else seg.tail().next_offset
        breached = high_watermark >= upper and predicate(seg, nxt)
        if breached and nxt is None and seg.size > 0:
            if rule37 is None:
                return (
                    out,
                    False,
                    (
                        remote.roll_and_start_offset_rule.refusal(
                            f"rolling the active segment {seg.base_offset}"
                        )
                        if remote.roll_and_start_offset_rule
                        else None
                    ),
                )
            roll = rule37
        if not breached or (nxt is None and seg.size == 0):
            break
        uploaded = None if highest is None else upper > 0 and upper - 1 <= highest
        by_start = nxt is not None and log_start_offset >= nxt.base_offset
        if uploaded or (by_start and rule37):
            out.append(seg)
            continue
        if uploaded is None and nxt is not None:
            return (
                out,
                roll,
                (
                    f"segment {seg.base_offset}: {upload.source}; a local segment of a tiered partition "
                    f"goes only once uploaded (UnifiedLog.deletableSegments)"
                ),
            )
        if by_start and rule37 is None:
            return (
                out,
                roll,
                (
                    remote.roll_and_start_offset_rule.refusal(
                        f"deleting segment {seg.base_offset}, below the log start offset but not uploaded,"
                    )
                    if remote.roll_and_start_offset_rule
                    else None
                ),
            )
        break
    return out, roll, None


def run_tiered_passes(
    partition: Partition,
    cfg: TopicConfig,
    now_ms: int,
    remote: RemoteLog,
    by_config: bool = True,
    raise_log_start_to: int | None = None,
) -> Retention:
    """UnifiedLog.deleteOldSegments on a remote-enabled log with remote copy on (module ops.tiered):
    the log start offset is the checkpoint's as is (LogLoader, isRemoteLogEnabled; 0 without an
    entry); the local log start offset is max(it, the first segment base); the passes use
    local.retention.ms/bytes and raise only the local log start offset. `raise_log_start_to`: a
    DeleteRecords first (UnifiedLog.maybeIncrementLogStartOffset: the local one follows)."""
    segments = list(partition.segments)
    checkpointed = partition.checkpoints.log_start_offset
    log_start = checkpointed if checkpointed is not None else 0
    if raise_log_start_to is not None:
        log_start_new = max(log_start, raise_log_start_to)
    else:
        log_start_new = log_start
    result = Retention(
        log_start,
        log_start_new,
        segments[0].base_offset,
        local_log_start_offset=max(log_start_new, segments[0].base_offset),
        remote_log_enabled=True,
    )
    hw_checkpoint = partition.checkpoints.high_watermark

    def local_start() -> int:
        """The local log start offset: set above, raised by each pass."""
        assert result.local_log_start_offset is not None
        return result.local_log_start_offset

    passes: list[tuple[DeletionReason, Callable[[], Predicate | None]]] = [
        (DeletionReason.LOG_START_OFFSET_BREACH, lambda: log_start_breach(local_start()))
    ]
    if by_config:
        passes += [
            (
                DeletionReason.RETENTION_SIZE_BREACH,
                lambda: size_breach(segments, cfg.local_retention_bytes_effective),
            ),
            (
                DeletionReason.RETENTION_MS_BREACH,
                lambda: time_breach(now_ms, cfg.local_retention_ms_effective),
            ),
        ]
    for reason, make in passes:
        predicate = make()
        if predicate is None or not segments:
            continue
        # LogLoader raises the high watermark to the local log start offset (updateLocalLogStartOffset)
        hw = max(high_watermark_at_load(hw_checkpoint, log_start), local_start())
        gone, roll, blocked = tiered_deletable(
            segments, hw, predicate, result.new_log_start_offset, remote
        )
        if gone:
            detail = reason.describe_local(cfg, local_start())
            result.deleted += [DeletedSegment(s, reason, detail) for s in gone]
            segments = segments[len(gone) :]
            result.first_segment_base = result.local_log_start_offset = segments[0].base_offset
        if blocked is not None and result.blocked is None:
            result.blocked = blocked
        if roll:
            result.rolled_at = (
                segments[-1].tail().next_offset
            )  # the old active segment stays, not uploaded
            break
        if blocked is not None:
            break
    return result


# ------------------------------------------------------------------ the plan
def read_root_checkpoints(log_dir: Path) -> RootCheckpoints:
    """LogManager's checkpoints, strictly: a damaged one stops the log dir, as nothing in it can be
    judged without it. The cleaner's is read leniently: retention never uses it (neither does
    Kafka's), and compact, which runs retain for compact,delete, reads it leniently too."""

    def strict(name: str) -> OffsetCheckpoint:
        return OffsetCheckpoint.read(log_dir / name, strict=True)

    return RootCheckpoints(
        strict(names.RECOVERY_POINT_CHECKPOINT),
        strict(names.LOG_START_OFFSET_CHECKPOINT),
        strict(names.REPLICATION_CHECKPOINT),
        OffsetCheckpoint.read(log_dir / names.CLEANER_CHECKPOINT, strict=False),
    )


# plan_one(partition) -> (its summary, its Retention or None when nothing was run, its actions)
PlanOne = Callable[[Partition], "tuple[dict, Retention | None, list[Action]]"]


def plan_log_start_changes(
    p: Plan, log_dir: Path, partition_dirs: list[Path], plan_one: PlanOne
) -> RootCheckpoints:
    """The frame of every op that raises log start offsets and deletes segments below them
    (retain, delete-records): each partition planned by `plan_one` with its checkpoints' values,
    then LogManager's checkpoints for all of them, last. A partition that cannot be planned (a
    corrupt active segment or leader-epoch-checkpoint) gets an `error` in its summary and no
    action; a damaged root checkpoint raises, as nothing in the log dir can be judged without it.
    Returns the root checkpoints as they were."""
    roots = read_root_checkpoints(log_dir)
    new_log_starts: dict[tuple[str, int], int] = {}
    new_recovery_points: dict[tuple[str, int], int] = {}
    delete_interrupted_writes(p, log_dir)
    for d in partition_dirs:
        tp = parse_partition_dir(d.name)
        if tp is None:
            continue
        try:
            partition = Partition.open(d, roots.for_partition(tp), tp)
            summary, result, actions = plan_one(partition)
        except KafkalogError as e:
            p.partitions[d.name] = partition_summary(
                d.name, tp, status="error", detail=str(e), exit_code=int(e.exit_code)
            )
            p.note(d.name, e.message, e.path, e.position)
            continue
        p.actions.extend(actions)
        p.partitions[d.name] = summary
        if result is not None:
            # LogManager's rules, applied on every run so that a rerun finishes an interrupted one
            key, start = (tp.topic, tp.partition), result.new_log_start_offset
            if result.remote_log_enabled:
                # 3.8+ lists every remote-enabled partition (KAFKA-16146); its entry is the log start
                # offset the remote tier needs: written where it moved, else left as it is
                if result.log_start_changed:
                    new_log_starts[key] = start
            else:
                new_log_starts[key] = start if start > result.first_segment_base else -1
            if result.log_start_changed or not result.remote_log_enabled:
                if (partition.checkpoints.recovery_point or 0) < start:
                    new_recovery_points[key] = start
    _checkpoint_actions(p, roots, new_log_starts, new_recovery_points)
    return roots


def plan(log_dir: Path, partition_dirs: list[Path], opts: RetainOptions) -> RetainPlan:
    """Retention for `partition_dirs` of `log_dir` (plan_log_start_changes)."""
    log_dir = Path(log_dir)
    p = RetainPlan("retain", log_dir)
    resolver = opts.resolver or ConfigResolver.of_log_dir(log_dir)
    configs: dict[str, TopicConfig] = {}

    free_first = full_disk(p, opts.free_first)

    def plan_one(partition: Partition) -> tuple[dict, Retention | None, list[Action]]:
        name, tp = partition.name, partition.topic_partition
        assert tp is not None  # a live partition dir (partition_groups): its name parses
        if tp.topic == KRAFT_METADATA_TOPIC:
            return (
                partition_summary(
                    name,
                    tp,
                    status="skipped",
                    detail="the KRaft metadata log is retained by the controller",
                ),
                None,
                [],
            )
        cfg = configs.get(tp.topic) or configs.setdefault(tp.topic, resolver.for_topic(tp.topic))
        actions: list[Action] = []
        summary, result = _plan_partition(partition, cfg, opts, actions, resolver, free_first)
        if summary.get("refusal"):
            p.refusals.append(summary["refusal"])
        return summary, result, actions

    plan_log_start_changes(p, log_dir, partition_dirs, plan_one)
    return p


def full_disk(p: Plan, free_first: bool | None) -> bool:
    """Whether the plan frees space before it writes a byte: asked (`free_first`), or the log
    dir's file system has less than storage.space.FULL_BELOW free. Noted in the plan."""
    free = FreeSpace.of(p.log_dir)
    if free_first is None:
        free_first = free.full
    if free_first:
        p.note(
            p.log_dir.name,
            f"the log dir's file system is full ({free.bytes} bytes free): segments are deleted "
            f"before anything is written (a new active segment's files are empty: an inode each, no block); "
            f"the log start offset checkpoint and producer snapshots come after",
        )
    return free_first


def partition_summary(name: str, tp: TopicPartition, **kw) -> dict:
    return {"partition": name, "topic": tp.topic, "partition_id": tp.partition, **kw}


def _if_known(cfg: TopicConfig, name: str, value):
    """A deciding value for the JSON summary: null where it is only Kafka's default because the
    real one cannot be read (the `configs` and `refused` entries say why), never the guess."""
    return value if cfg.source(name).known else None


UPLOAD_UNKNOWN_HOW = (
    "to proceed, give that __remote_log_metadata partition (a copy of it from the broker "
    "that holds it, or that broker's log dir) with --remote-log-metadata PATH, or let the "
    "broker apply local retention itself (it knows what was uploaded)"
)


def _plan_partition(
    partition: Partition,
    cfg: TopicConfig,
    opts: RetainOptions,
    actions: list[Action],
    resolver: ConfigResolver,
    free_first: bool = False,
) -> tuple[dict, Retention | None]:
    name, tp = partition.name, partition.topic_partition
    assert tp is not None  # a live partition dir (partition_groups): its name parses
    actions += leftover_actions(partition)
    if not partition.segments:
        return partition_summary(name, tp, status="skipped", detail="no segment"), None
    remote = tiered.remote_log(partition, cfg, resolver)
    deciding = retention_deciding_configs(cfg, remote.maybe_tiered)
    unknown = unknown_configs(tp.topic, cfg, deciding)
    version_refusal = None
    if remote.enabled is None or remote.copy_enabled is None:
        # the plain rules and the tiered ones disagree, and nothing says which the broker applies
        version_refusal = f"{name}: retention by time or size refused: {remote.undecided}" + (
            ""
            if "state it with" in (remote.undecided or "")
            else "; state it with --kafka-version VERSION"
        )
    if remote.maybe_tiered and remote.enabled is not False:
        result = run_tiered_passes(
            partition, cfg, opts.now_ms, remote, by_config=not unknown and not version_refusal
        )
    else:
        result = run_passes(partition, cfg, opts.now_ms, by_config=not unknown)
    summary = partition_summary(
        name,
        tp,
        status="deleted" if result.deleted else "nothing to do",
        cleanup_policy=_if_known(cfg, "cleanup.policy", ",".join(cfg.cleanup_policy)),
        retention_ms=_if_known(cfg, "retention.ms", cfg.retention_ms),
        retention_bytes=_if_known(cfg, "retention.bytes", cfg.retention_bytes),
        segments_deleted=len(result.deleted),
        bytes_freed=0,
        old_log_start_offset=result.old_log_start_offset,
        new_log_start_offset=result.new_log_start_offset,
        rolled=result.rolled_at is not None,
        rolled_at=result.rolled_at,
        segments=[x.to_dict() for x in result.deleted],
        configs=cfg.provenance(deciding),
    )
    if remote is not tiered.NOT_TIERED:
        summary["remote_log"] = remote.to_dict()
        if result.remote_log_enabled:
            summary["local_log_start_offset"] = result.local_log_start_offset
    if partition.checkpoints.high_watermark is None:
        summary["detail"] = (
            "no high watermark in replication-offset-checkpoint: only segments below "
            "the log start offset are eligible"
        )
    if unknown:
        line = refusal_line(name, unknown)
        summary.update(
            status="refused",
            refused=[u.to_dict() for u in unknown],
            refusal=line,
            detail="refused to delete by time or size: " + line.partition(": ")[2],
        )
    elif version_refusal is not None or result.blocked is not None:
        line = version_refusal or f"{name}: {result.blocked}; {UPLOAD_UNKNOWN_HOW}"
        summary.update(status="refused", refusal=line, detail="refused: " + line.partition(": ")[2])
    later: list[Action] = []
    if result.rolled_at is not None:
        rolled = _roll_actions(partition, cfg, opts, result)
        if (
            free_first
        ):  # the new segment's empty files first; its producer snapshot once space is back
            later = [a for a in rolled if takes_blocks(a)]
            rolled = [a for a in rolled if not takes_blocks(a)]
        actions += rolled
    freed, tidy = deletion_actions(partition, result, actions)
    if later:
        at = len(actions) - len(tidy)
        actions[at:at] = later
    summary["bytes_freed"] = freed
    if tidy and not result.deleted and not unknown:
        summary["status"] = "tidied"
        summary["detail"] = (
            "finished an interrupted retain (stray snapshots, index files, leader epochs)"
        )
    return summary, result


def leftover_actions(partition: Partition) -> list[Action]:
    """The partition's files of an interrupted kafkalog write (fsops' temporary names)."""
    return [
        Action(
            ActionKind.DELETE, partition.path(f), "an interrupted kafkalog write", partition.name
        )
        for f in partition.leftovers
    ]


def deletion_actions(
    partition: Partition, result: Retention, actions: list[Action]
) -> tuple[int, list[Action]]:
    """What the broker does once `result`'s segments go (UnifiedLog.deleteSegments and
    maybeIncrementLogStartOffset), appended to `actions` in a crash-safe order: each segment's
    .log before its indexes, then index files and producer snapshots below the first kept segment,
    then the leader-epoch-checkpoint truncated from the start. Returns the bytes freed and the
    tidying actions (what also finishes an interrupted run)."""
    d, name = partition.directory, partition.name
    freed = 0
    for x in result.deleted:
        seg, why = x.segment, f"segment {x.segment.base_offset}: {x.detail}"
        freed += seg.size  # stat'd for the summary already
        actions.append(Action(ActionKind.DELETE, seg.log_path, why, name))
        for n in sorted(partition.index_files.get(seg.base_offset, [])):
            f = partition.path(n)
            freed += _size_of(f)
            actions.append(Action(ActionKind.DELETE, f, why, name))
    # What follows also finishes a run that was interrupted after its segments went: on a log dir
    # a broker left behind, none of it changes anything.
    first = result.first_segment_base
    bases = {s.base_offset for s in partition.segments}
    tidy = []
    for base in sorted(b for b in partition.index_files if b < first and b not in bases):
        tidy += [
            Action(
                ActionKind.DELETE,
                partition.path(f),
                "index file without its .log (an interrupted retain)",
                name,
            )
            for f in sorted(partition.index_files[base])
        ]
    # Kafka deletes the snapshots of the deleted segments; those of no segment below the first
    # are strays its LogLoader deletes
    for off in sorted(o for o in partition.snapshots if o < first):
        snapshot = partition.path(partition.snapshots[off])
        freed += _size_of(snapshot)
        tidy.append(
            Action(
                ActionKind.DELETE,
                snapshot,
                f"producer snapshot below the first segment {first}",
                name,
            )
        )
    # an empty log (every segment went, now or in the run a kill interrupted): its log end offset
    empty_at = result.rolled_at
    left = partition.segments[len(result.deleted) :]
    if empty_at is None and len(left) == 1 and left[0].empty:
        empty_at = left[0].base_offset
    epoch_action = None
    if not result.remote_log_enabled or result.log_start_changed:
        epoch_action = _leader_epoch_action(d, result.new_log_start_offset, name, empty_at)
    if epoch_action is not None:
        tidy.append(epoch_action)
    actions += tidy
    return freed, tidy


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _roll_actions(
    partition: Partition, cfg: TopicConfig, opts: RetainOptions, result: Retention
) -> list[Action]:
    """Kafka rolls before deleting every segment: ops.roll's plan for this partition, less what
    it would write to the segment it closes (final time-index entry, trims), which goes in the
    same run: the new segment's files and its producer snapshot."""
    from kafkalog_cli.ops import roll

    rolled = Plan("roll", partition.directory.parent)
    roll.plan_partition(
        rolled,
        partition,
        cfg,
        roll.RollOptions(if_needed=False, now_ms=opts.now_ms, resolver=opts.resolver),
    )
    if not rolled.actions:
        raise InputError(
            "every segment has expired but the active segment cannot be rolled",
            path=str(partition.segments[-1].log_path),
        )
    closed = partition.segments[-1].base_offset
    return [a for a in rolled.actions if names.offset_from_name(a.path.name) != closed]


def _leader_epoch_action(
    d: Path, new_log_start: int, name: str, rolled_at: int | None = None
) -> Action | None:
    """LeaderEpochFileCache.truncateFromStart(new log start), written as its flush writes it.
    When the log is left empty (`rolled_at`: its log end offset, every segment gone), also
    LogLoader's truncateFromEnd(log end offset), which the broker's next start applies to an
    entry at the log end offset: the file is written as that start leaves it, so `recover` has
    nothing to do (and a rerun after a kill writes the same)."""
    path = d / names.LEADER_EPOCH_CHECKPOINT
    raw = files.read_bytes_if_exists(path)
    if raw is None:
        return None
    if _epochs_start_at_or_after(raw, new_log_start) and rolled_at is None:
        return None
    try:
        cache = load_leader_epoch_cache(parse_leader_epoch_checkpoint(raw, path=str(path)))
    except ValueError as e:  # a negative epoch or offset: Kafka's assign refuses it too
        raise InputError(str(e), path=str(path)) from None
    cache = truncate_from_start(cache, new_log_start)
    if rolled_at is not None:
        cache = truncate_from_end(cache, rolled_at)
    data = encode_leader_epoch_checkpoint(cache)
    if data == raw:
        return None
    return Action(
        ActionKind.UPDATE_CHECKPOINT,
        path,
        f"leader epochs truncated from the start at {new_log_start}",
        name,
        data=data,
    )


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


def _checkpoint_actions(
    p: Plan, roots: RootCheckpoints, new_log_starts: dict, new_recovery_points: dict
) -> None:
    """LogManager's checkpoints, written last. log-start-offset-checkpoint lists a partition only
    while its log start offset is above its first segment's base (-1 here: drop the entry)."""
    log_starts, recovery_points = roots.log_start_offsets, roots.recovery_points
    if new_log_starts:
        starts = dict(log_starts.offsets)
        for key, value in new_log_starts.items():
            if value < 0:
                starts.pop(key, None)
            else:
                starts[key] = value
        if starts != log_starts.offsets:
            p.add(
                Action(
                    ActionKind.UPDATE_CHECKPOINT,
                    log_starts.path,
                    "log start offsets after segment deletion",
                    data=checkpoint_text.encode_offsets(
                        starts, order=log_starts.order, kind=log_starts.path.name
                    ),
                )
            )
    if new_recovery_points and any(
        recovery_points.offsets.get(k) != v for k, v in new_recovery_points.items()
    ):
        points = {**recovery_points.offsets, **new_recovery_points}
        p.add(
            Action(
                ActionKind.UPDATE_CHECKPOINT,
                recovery_points.path,
                "recovery points raised to the new log start offsets",
                data=checkpoint_text.encode_offsets(points, order=recovery_points.order),
            )
        )
