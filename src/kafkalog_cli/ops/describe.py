"""`describe`: what a broker's `kafka-log-dirs --describe` tells about each partition, and what
the files say beyond it, read cheaply: directory listings, stats, index tails, the unindexed
tails of the .log files, the root checkpoints and the latest producer snapshot. No record is
decoded (except the markers after the latest producer snapshot, which the broker replays too).

Where each value comes from (the man page says the same):
- size: the .log files' sizes (kafka-log-dirs' `size`); segments: the .log files.
- log start offset: max(log-start-offset-checkpoint, the first segment's base) (UnifiedLog's
  load rule); for a remote-enabled partition (ops.tiered) the checkpoint's as is, remote data
  included, with its local log start offset beside it; log end offset: the active segment's
  LogSegment.readNextOffset (its last
  offset-index entry, then the valid batches after it: a damaged end is where the broker's
  recovery truncates, and a problem). A log start above it is the empty log LogLoader makes.
- high watermark: the replication-offset-checkpoint's entry clamped into [log start, log end]
  (ops.high_watermark, as get-offsets and transactions); recovery point, cleaner checkpoint:
  the entries in recovery-point-offset-checkpoint and cleaner-offset-checkpoint, as written
  (None: no entry).
- first timestamp: the max timestamp of the first batch of the first non-empty segment
  (LogSegment.rollingBasedTimestamp); max timestamp and its offset: the largest
  LogSegment.maxTimestampAndOffsetSoFar (time index last entries, the active segment's tail).
- codecs: of the first batch of each segment (one pread of its header) and of the active
  segment's batches after its last offset-index entry: a sample, not every batch.
- producers and open transactions: the latest producer snapshot at or below the log end
  offset that parses, then the batches from its offset to the log end offset replayed through
  ProducerStateManager's rules (as LogLoader does; nothing to replay after a clean shutdown,
  whose snapshot is at the log end offset). No producer is expired: the clock is not known.
- dirty ratio (compacted topics): LogCleanerManager's cleanable / (clean + cleanable) bytes,
  the dirty section from the cleaner checkpoint to the active segment or the last stable
  offset; min.compaction.lag.ms is not applied (it needs a clock: `compact --dry-run --now`).
- cleanup.policy, retention.ms, retention.bytes: config.ConfigResolver, each with its source;
  an unknown one is shown as unknown, never as a value.
- per log dir: the Kafka versions that may load it next (config.versions: what the dir proves
  bounds it from below: metadata.version, meta.properties' directory.id, .kafka_cleanshutdown's
  JSON, the metadata log's KRaftVersion/KRaftVoters records, records only a 4.0+ coordinator
  writes; --kafka-version states it), each bound with the file that gives it;
  its quarantine (storage.quarantine's default root beside it): folders, bytes
  kept, and how many are not restored.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import ConfigResolver, ConfigValue, KafkaVersions, TopicConfig
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.compression import compression_from_id
from kafkalog_cli.ops import tiered
from kafkalog_cli.ops.cleaner import segments_overlapping
from kafkalog_cli.ops.high_watermark import checkpointed_high_watermark, high_watermark_at_load
from kafkalog_cli.ops.index_health import zero_filled_indexes
from kafkalog_cli.ops.producer_rebuild import ProducerState, replay
from kafkalog_cli.storage import names
from kafkalog_cli.storage.live_files import read_listed
from kafkalog_cli.storage.logdir import (
    LOADED,
    DirKind,
    LogDir,
    PartitionSelection,
    RootCheckpoints,
    dir_kind,
    select_partition_dirs,
)
from kafkalog_cli.storage.names import PartitionFilter
from kafkalog_cli.storage.partition import Partition, PartitionCheckpoints

# the configs describe shows: what decides what retention and the cleaner remove
SHOWN_CONFIGS = ("cleanup.policy", "retention.ms", "retention.bytes")
_NEVER_EXPIRES = 1 << 62  # producer.id.expiration.ms for a state read without a clock


def config_json(v: ConfigValue) -> dict:
    """A config's value and source; an unknown value (not --assume-kafka-defaults) is null, with
    what it would be taken for only in `origin`'s words: never a guess presented as a value."""
    out = v.to_dict()
    if not v.known and not v.assumed:
        out["value"] = None
    return out


@dataclass
class ProducerFacts:
    """The producer state a broker would load: the snapshot it starts from, and the state."""

    snapshot: str | None  # the snapshot's file name; None: replayed from the log start
    replayed_from: int  # the offset the log was replayed from (= LEO: nothing replayed)
    state: ProducerState
    skipped: list[str] = field(default_factory=list)  # snapshots that do not parse

    @property
    def open_transactions(self) -> list[tuple[int, int]]:
        """(first offset, producer id) of each ongoing transaction, by first offset."""
        return sorted(self.state.ongoing.items())

    def last_stable_offset(self, high_watermark: int) -> int:
        """UnifiedLog.lastStableOffset: the first unstable offset if below the HW, else the HW."""
        return min([high_watermark, *self.state.ongoing])


def producer_facts(part: Partition, log_end_offset: int) -> ProducerFacts:
    """The latest snapshot that parses in (log start offset, log end offset] (the broker deletes
    the others: Kafka 3.3.1 ProducerStateManager.truncateAndReload), then the batches from its
    offset, or from the log start offset, to the log end offset (UnifiedLog.rebuildProducerState)."""
    log_start = part.log_start_offset or 0
    state, start, used, skipped = ProducerState(), log_start, None, []
    for off in sorted(part.snapshots, reverse=True):
        if off > log_end_offset or off <= log_start:
            continue
        path = part.snapshot_path(off)
        data = read_listed(path)
        if data is None:  # removed by a live broker since the listing (noted)
            continue
        try:
            state = ProducerState.from_snapshot(data, 0, _NEVER_EXPIRES, str(path))
        except KafkalogError as e:
            skipped.append(e.line())
            continue
        start, used = off, path.name
        break
    if start < log_end_offset:
        for seg in segments_overlapping(part.segments, start, log_end_offset):
            replay(seg, state, start)
    return ProducerFacts(used, start, state, skipped)


@dataclass
class PartitionDescription:
    log_dir: str | None
    directory: str
    topic: str | None
    partition: int | None
    size_bytes: int
    segments: int
    log_start_offset: int | None
    log_end_offset: int | None
    checkpoints: PartitionCheckpoints
    first_timestamp: int | None
    max_timestamp: int | None
    max_timestamp_offset: int | None
    codecs: list[str]
    producers: ProducerFacts | None
    dirty_ratio: float | None
    configs: dict[str, ConfigValue]
    problems: list[str] = field(default_factory=list)
    high_watermark: int | None = None  # the checkpoint's entry clamped as the broker loads it
    local_log_start_offset: int | None = None  # a remote-enabled partition's (ops.tiered)
    remote_log: dict | None = None  # ops.tiered.RemoteLog.to_dict, where it may be tiered
    problem_codes: list[int] = field(
        default_factory=list
    )  # exit codes of the problems that carry one

    @property
    def name(self) -> str:
        return os.path.basename(self.directory)

    def to_dict(self) -> dict:
        c = self.checkpoints
        p = self.producers
        return {
            "kind": "partition",
            "log_dir": self.log_dir,
            "partition_dir": self.directory,
            "topic": self.topic,
            "partition": self.partition,
            "size_bytes": self.size_bytes,
            "segments": self.segments,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "local_log_start_offset": self.local_log_start_offset,
            "remote_log": self.remote_log,
            "high_watermark": self.high_watermark,
            "high_watermark_checkpoint": c.high_watermark,
            "recovery_point": c.recovery_point,
            "cleaner_checkpoint": c.cleaner_offset,
            "log_start_offset_checkpoint": c.log_start_offset,
            "first_timestamp": self.first_timestamp,
            "max_timestamp": self.max_timestamp,
            "max_timestamp_offset": self.max_timestamp_offset,
            "codecs": self.codecs,
            "producer_ids": sorted(p.state.entries) if p else [],
            "open_transactions": [
                {"producer_id": pid, "first_offset": first} for first, pid in p.open_transactions
            ]
            if p
            else [],
            "producer_snapshot": p.snapshot if p else None,
            "producer_state_replayed_from": p.replayed_from if p else None,
            "dirty_ratio": None if self.dirty_ratio is None else round(self.dirty_ratio, 6),
            "configs": {n: config_json(v) for n, v in self.configs.items()},
            "problems": self.problems,
        }


@dataclass
class QuarantineUsage:
    root: str
    folders: int = 0
    bytes: int = 0
    not_restored: int = 0  # folders whose content is still kept (not fully restored)

    def to_dict(self) -> dict:
        return {
            "root": self.root,
            "folders": self.folders,
            "bytes": self.bytes,
            "not_restored": self.not_restored,
        }


@dataclass
class LogDirDescription:
    path: str
    is_log_dir: bool  # False: the parent of partition dirs given alone, with no root file
    partitions: int
    size_bytes: int
    clean_shutdown: bool
    checkpoint_files: list[str]
    quarantine: QuarantineUsage | None
    config_warning: str | None
    left_out: list[tuple[str, str]]  # (partition dir, kind) of the dirs not read
    kafka_versions: KafkaVersions | None = None  # the Kafka versions that may load it next

    def to_dict(self) -> dict:
        return {
            "kind": "log_dir",
            "log_dir": self.path,
            "is_log_dir": self.is_log_dir,
            "partitions": self.partitions,
            "size_bytes": self.size_bytes,
            "clean_shutdown": self.clean_shutdown,
            "checkpoint_files": self.checkpoint_files,
            "quarantine": self.quarantine.to_dict() if self.quarantine else None,
            "config_warning": self.config_warning,
            "left_out": [{"partition_dir": d, "kind": k} for d, k in self.left_out],
            "kafka_versions": self.kafka_versions.to_dict()
            if self.kafka_versions is not None
            else None,
        }


def describe_partition(
    part: Partition,
    cfg: TopicConfig | None,
    log_dir: Path | None = None,
    resolver: ConfigResolver | None = None,
) -> PartitionDescription:
    """The facts of one partition (see the module docstring for where each comes from)."""
    problems: list[str] = []
    codes: list[int] = []
    segs = part.segments
    first_ts = max_ts = max_off = None
    codecs: set[int] = set()
    for s in segs:
        first = _guarded(
            s.first_batch_attributes, problems, codes
        )  # also stats the .log for its size
        if first is not None:
            codecs.add(first[1])
            if first_ts is None:
                first_ts = first[0]
        found = _guarded(s.max_timestamp_and_offset, problems, codes)
        if found is not None and found[0] >= 0 and (max_ts is None or found[0] > max_ts):
            max_ts, max_off = found
    if segs:
        tail = _guarded(segs[-1].recovered_tail, problems, codes)
        if tail is not None:
            codecs |= tail.codecs
            if (
                tail.damage is not None
            ):  # the broker's recovery truncates it: the answers stop before it
                problems.append(tail.damage.line())
    if part.load_problem is not None:
        problems.append(part.load_problem)
    problems.extend(
        f"{z.path}: byte {z.position}: {z.message()}"
        for z in zero_filled_indexes(part)
        if z.problem
    )
    size = sum(s.size for s in segs)
    leo = part.log_end_offset
    log_start = part.log_start_offset
    producers = producer_facts(part, leo) if leo is not None else None
    if producers is not None:
        problems.extend(f"producer snapshot ignored: {line}" for line in producers.skipped)
    problems = list(dict.fromkeys(problems))  # the active segment's tail is read for two facts
    configs = {n: cfg.source(n) for n in SHOWN_CONFIGS} if cfg is not None else {}
    dirty = (
        _dirty_ratio(part, leo, producers)
        if cfg is not None and cfg.compact and leo is not None
        else None
    )
    tp = part.topic_partition
    local_start = remote_json = None
    if resolver is not None and cfg is not None and tp is not None and segs:
        remote = tiered.remote_log(part, cfg, resolver)
        if remote is not tiered.NOT_TIERED:
            remote_json = remote.to_dict()
        if remote.enabled:
            # LogLoader: a remote-enabled log's start is the checkpoint's as is (0 without an entry)
            checkpointed = part.checkpoints.log_start_offset
            log_start = checkpointed if checkpointed is not None else 0
            local_start = max(log_start, segs[0].base_offset)
    return PartitionDescription(
        str(log_dir) if log_dir is not None else None,
        str(part.directory),
        tp.topic if tp else None,
        tp.partition if tp else None,
        size,
        len(segs),
        log_start,
        leo,
        part.checkpoints,
        first_ts,
        max_ts,
        max_off,
        sorted(compression_from_id(c).kafka_name for c in codecs),
        producers,
        dirty,
        configs,
        problems,
        checkpointed_high_watermark(part),
        local_start,
        remote_json,
        codes,
    )


def _guarded(read: Callable, problems: list[str], codes: list[int]):
    """A fact read from a file, or None with the one-line reason in `problems` and its exit code
    in `codes` (a damaged tail is what `kafkalog recover` repairs, exit 3; a file that cannot be
    read is exit 4; the other facts are still told)."""
    try:
        return read()
    except KafkalogError as e:
        problems.append(e.line())
        codes.append(int(e.exit_code))
        return None


def _dirty_ratio(part: Partition, leo: int, producers: ProducerFacts | None) -> float:
    """LogCleanerManager.cleanableOffsets and calculateCleanableBytes, without the clock's
    min.compaction.lag.ms: the dirty section [first dirty, first uncleanable) snapped to segments."""
    segs = part.segments
    log_start = part.log_start_offset or 0
    checkpoint = part.checkpoints.cleaner_offset
    first_dirty = (
        checkpoint if checkpoint is not None and log_start <= checkpoint <= leo else log_start
    )
    hw = high_watermark_at_load(part.checkpoints.high_watermark, log_start, leo)
    lso = producers.last_stable_offset(hw) if producers else hw
    active = segs[-1]
    uncleanable = max(first_dirty, min(lso, active.base_offset))
    bases = part.base_offsets
    i = bisect.bisect_right(bases, uncleanable) - 1
    first_uncleanable = segs[i].base_offset if 0 <= i < len(segs) - 1 else active.base_offset
    cleanable = sum(
        s.size
        for s in segments_overlapping(segs, min(first_dirty, first_uncleanable), first_uncleanable)
    )
    clean = sum(s.size for s in segments_overlapping(segs, -1, first_dirty))
    return cleanable / (clean + cleanable) if clean + cleanable else 0.0


def quarantine_usage(log_dir: Path) -> QuarantineUsage:
    """The log dir's default quarantine (beside it): its folders and the bytes they keep."""
    from kafkalog_cli.storage.quarantine import (
        QuarantineFolder,
        default_quarantine_root,
        find_folders,
    )

    usage = QuarantineUsage(str(default_quarantine_root(log_dir)))
    for path in find_folders(log_dir):
        folder = QuarantineFolder.open(path)
        usage.folders += 1
        usage.bytes += folder.bytes
        usage.not_restored += folder.status != "restored"
    return usage


def select(paths, only: PartitionFilter | None = None, kinds=LOADED) -> PartitionSelection:
    """The partition dirs to read, by log dir: by default the logs a broker loads (live, future)."""
    return select_partition_dirs(paths, kinds, only=only or None)


def partitions_of(log_dir: Path, dirs: list[Path]) -> Iterator[Partition]:
    """The partitions of `dirs`, one at a time, each with its entries in the root checkpoints of
    `log_dir` (read leniently: a damaged checkpoint is no entry, as a broker starting afresh)."""
    roots = LogDir(log_dir).checkpoints(strict=False)
    for d in dirs:
        yield open_partition(d, roots)


def open_partition(d: Path, roots: RootCheckpoints) -> Partition:
    part = Partition.open(d)
    if part.topic_partition is not None:
        part.checkpoints = roots.for_partition(part.topic_partition)
    return part


def describe(
    selection: PartitionSelection,
    resolver_for: Callable[[Path], ConfigResolver] | None = None,
    jobs: int = 1,
) -> Iterator[LogDirDescription | PartitionDescription]:
    """For each log dir of `selection`: its partitions' descriptions, in order, then the log
    dir's own. `jobs` > 1: a large log dir's partitions are read in that many forked processes."""
    left_out: dict[Path, list[tuple[str, str]]] = {}
    for d, kind in selection.left_out:
        left_out.setdefault(d.parent, []).append((str(d), kind.value))
    for log_dir, dirs in selection.groups.items():
        is_log_dir = dir_kind(log_dir) is DirKind.LOG_DIR
        resolver = resolver_for(log_dir) if resolver_for is not None else None
        topics = {tp.topic for d in dirs if (tp := names.parse_partition_dir(d.name)) is not None}
        cfgs = {t: resolver.for_topic(t) for t in sorted(topics)} if resolver is not None else {}
        roots = LogDir(log_dir).checkpoints(strict=False)
        total = 0
        for desc in _describe_dirs(log_dir, dirs, roots, cfgs, jobs, resolver):
            total += desc.size_bytes
            yield desc
        present = [
            n
            for n in (
                names.RECOVERY_POINT_CHECKPOINT,
                names.LOG_START_OFFSET_CHECKPOINT,
                names.REPLICATION_CHECKPOINT,
                names.CLEANER_CHECKPOINT,
            )
            if os.path.exists(os.path.join(log_dir, n))
        ]
        yield LogDirDescription(
            str(log_dir),
            is_log_dir,
            len(dirs),
            total,
            os.path.exists(os.path.join(log_dir, names.CLEAN_SHUTDOWN_FILE)),
            present,
            quarantine_usage(log_dir) if is_log_dir else None,
            resolver.warning if resolver is not None else None,
            left_out.get(log_dir, []),
            resolver.versions if resolver is not None else None,
        )


PARALLEL_MIN_PARTITIONS = 1000  # fewer are read here: forking costs more than it saves
_CHUNK = 250
_SHARED: tuple | None = (
    None  # (log dir, root checkpoints, configs, resolver), inherited by forked workers
)


def _describe_dir(
    log_dir: Path,
    d: Path,
    roots: RootCheckpoints,
    cfgs: dict[str, TopicConfig],
    resolver: ConfigResolver | None = None,
) -> PartitionDescription:
    part = open_partition(d, roots)
    try:
        tp = part.topic_partition
        return describe_partition(
            part, cfgs.get(tp.topic) if tp is not None else None, log_dir, resolver
        )
    finally:
        part.close()


def _describe_chunk(dirs: list[Path]) -> list[PartitionDescription]:
    # a forked worker's: _describe_dirs sets _SHARED before its pool forks
    assert _SHARED is not None, "a worker of _describe_dirs' pool"
    log_dir, roots, cfgs, resolver = _SHARED
    return [_describe_dir(log_dir, d, roots, cfgs, resolver) for d in dirs]


def _describe_dirs(
    log_dir: Path,
    dirs: list[Path],
    roots: RootCheckpoints,
    cfgs: dict[str, TopicConfig],
    jobs: int,
    resolver: ConfigResolver | None = None,
) -> Iterator[PartitionDescription]:
    """The descriptions of `dirs` in order: here, or in chunks in forked workers (the root
    checkpoints and configs, read once here, are inherited, not sent)."""
    if jobs <= 1 or len(dirs) < PARALLEL_MIN_PARTITIONS:
        for d in dirs:
            yield _describe_dir(log_dir, d, roots, cfgs, resolver)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    global _SHARED
    _SHARED = (log_dir, roots, cfgs, resolver)
    try:
        with ProcessPoolExecutor(jobs, mp_context=mp.get_context("fork")) as pool:
            for chunk in pool.map(
                _describe_chunk, [dirs[i : i + _CHUNK] for i in range(0, len(dirs), _CHUNK)]
            ):
                yield from chunk
    finally:
        _SHARED = None
