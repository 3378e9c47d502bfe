"""`kafkalog compact`: Kafka's log cleaner, offline (LogCleanerManager, LogCleaner).

plan(): per compacted partition, LogCleanerManager's view: the dirty section from the
cleaner-offset-checkpoint to the first uncleanable offset (the active segment, the last stable
offset, min.compaction.lag.ms against --now), its dirty ratio, and whether Kafka would clean it
(min.cleanable.dirty.ratio, max.compaction.lag.ms; --force: any cleanable bytes). With
`estimate=True` (--dry-run) a round is simulated without writing: keys, bytes to be freed.

apply(): per selected partition, rounds of Cleaner.doClean until the dirty section is done
(Kafka does one round per cleaner wake-up; a round ends early when the keys exceed the offset
map). Each group of segments goes `.cleaned` -> `.swap` -> old files out (to the quarantine, as
Kafka's `.deleted`) -> final name, then cleaner-offset-checkpoint. For compact,delete topics
retention runs after, when ops.retain is installed.

Refusal: a partition whose deciding values (config.compaction_deciding_configs; under --force
without min.cleanable.dirty.ratio and max.compaction.lag.ms) are not all known is not read nor
cleaned, and is listed in `CompactPlan.refused` (exit 7); so is one whose cleanup.policy is
unknown and resolved to delete: it may be a compacted topic.

run(): both, partition by partition (`compact_partition`), partitions in parallel over --jobs
worker processes under the parent's log dir lock (see `for_each_partition`).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import (
    ConfigResolver,
    TopicConfig,
    UnknownConfig,
    compaction_deciding_configs,
    refusal_line,
    unknown_configs,
)
from kafkalog_cli.config.versions import CLEANER_RETAINS_LAST_BATCH, KafkaVersions
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.ops.cleaner import (
    CleanContext,
    CleanedSegment,
    CleanerStats,
    LastRecord,
    build_offset_map,
    clean_into,
    collect_aborted_transactions,
    group_segments_by_size,
    segments_overlapping,
)
from kafkalog_cli.ops.cleaner_txn import CleanedTransactionMetadata
from kafkalog_cli.ops.high_watermark import high_watermark_at_load
from kafkalog_cli.ops.offset_map import DEFAULT_DEDUPE_BUFFER, DEFAULT_LOAD_FACTOR, OffsetMap
from kafkalog_cli.ops.plan import Plan, run_report
from kafkalog_cli.ops.producer_rebuild import rebuild_producer_state
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.names import parse_partition_dir
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment
from kafkalog_cli.storage.space import Space


@dataclass
class CompactOptions:
    now_ms: int
    force: bool = False
    dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER
    load_factor: float = DEFAULT_LOAD_FACTOR
    jobs: int = 1  # worker processes: partitions in parallel (see for_each_partition)
    resolver: ConfigResolver | None = None
    max_rounds: int = 10_000
    # the cleaner-offset-checkpoint's entries at the start of the run: rewrites keep their order
    # and sort the rest, so the file ends the same whatever order --jobs workers finish in
    checkpoint_order: list | None = None


@dataclass
class LogToClean:
    """LogCleanerManager's LogToClean for one partition."""

    name: str
    directory: Path
    topic: str
    partition: int
    cfg: TopicConfig
    segments: list[Segment]
    log_start_offset: int
    log_end_offset: int
    first_dirty: int
    first_uncleanable: int  # snapped to a segment base (calculateCleanableBytes)
    clean_bytes: int
    cleanable_bytes: int
    compaction_delay_ms: int
    active_producers: dict[int, LastRecord]
    checkpoint_reset: bool = (
        False  # forceUpdateCheckpoint: the checkpoint was outside [log start, LEO]
    )
    checkpoint: int | None = None  # the cleaner-offset-checkpoint's entry as read
    high_watermark: int = -1  # as Partition loads it (ops.high_watermark)
    checkpointed_hw: int | None = None  # the replication-offset-checkpoint's entry; None: none
    hw_note: str | None = None  # why the high watermark holds the dirty section back

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def need_compaction_now(self) -> bool:
        return self.compaction_delay_ms > 0


@dataclass
class PartitionDecision:
    log: LogToClean
    selected: bool
    reason: str
    estimate: dict | None = None
    deciding: tuple[
        str, ...
    ] = ()  # the configs that decided it (config.compaction_deciding_configs)

    def to_dict(self) -> dict:
        lg = self.log
        out = {
            "partition": lg.name,
            "selected": self.selected,
            "reason": self.reason,
            "dirty_section": [lg.first_dirty, lg.first_uncleanable],
            "dirty_ratio": round(lg.ratio, 6),
            "clean_bytes": lg.clean_bytes,
            "cleanable_bytes": lg.cleanable_bytes,
            "min_cleanable_dirty_ratio": lg.cfg.min_cleanable_dirty_ratio,
            "compaction_delay_ms": lg.compaction_delay_ms,
            "high_watermark": lg.high_watermark,
            "configs": lg.cfg.provenance(self.deciding),
        }
        if lg.checkpoint_reset:
            out["cleaner_offset_checkpoint_reset"] = {"from": lg.checkpoint, "to": lg.first_dirty}
        if self.estimate is not None:
            out.update(self.estimate)
        return out


@dataclass
class RefusedPartition:
    """A partition compact does not clean: a value that decides what it removes is unknown."""

    name: str
    cfg: TopicConfig
    deciding: tuple[str, ...]
    unknown: list[UnknownConfig]

    @property
    def line(self) -> str:
        return refusal_line(self.name, self.unknown)

    def to_dict(self) -> dict:
        return {
            "partition": self.name,
            "selected": False,
            "reason": "refused: " + self.line.partition(": ")[2],
            "refused": [u.to_dict() for u in self.unknown],
            "configs": self.cfg.provenance(self.deciding),
        }


@dataclass
class TieredRefusal:
    """A partition compact refuses as Kafka does: remote.storage.enable on a compacted topic
    (LogConfig.validateNoRemoteStorageForCompactedTopic, 3.6+: "Remote log storage is
    unsupported for the compacted topics"; UnifiedLog.isRemoteLogEnabled never tiers one)."""

    name: str
    cfg: TopicConfig

    @property
    def line(self) -> str:
        v = self.cfg.source("remote.storage.enable")
        return (
            f"{self.name}: refused as Kafka refuses it: Remote log storage is unsupported for the compacted "
            f"topics (remote.storage.enable=true from {v.origin}; LogConfig.validateNoRemoteStorageForCompactedTopic)"
        )

    def to_dict(self) -> dict:
        return {
            "partition": self.name,
            "selected": False,
            "reason": "refused: " + self.line.partition(": ")[2],
            "exit_code": 2,
            "configs": self.cfg.provenance(("cleanup.policy", "remote.storage.enable")),
        }


@dataclass
class CompactPlan:
    log_dir: Path
    now_ms: int
    decisions: list[PartitionDecision] = field(default_factory=list)
    notes: Plan = field(
        default_factory=lambda: Plan("compact", Path())
    )  # plan() gives the log dir's
    refused: list[RefusedPartition] = field(default_factory=list)
    tiered: list[TieredRefusal] = field(default_factory=list)

    @property
    def kafka_refusals(self) -> list[str]:
        return [t.line for t in self.tiered]

    @property
    def selected(self) -> list[PartitionDecision]:
        return [d for d in self.decisions if d.selected]

    @property
    def refusals(self) -> list[str]:
        return [r.line for r in self.refused]

    @property
    def pending(self) -> bool:
        """Running it would change something: a partition to clean, a cleaner-offset-checkpoint
        entry to reset, or the notes' own changes."""
        return (
            bool(self.selected)
            or any(d.log.checkpoint_reset for d in self.decisions)
            or bool(self.notes is not None and self.notes.actions)
        )

    def partitions_json(self) -> list[dict]:
        return (
            [d.to_dict() for d in self.decisions]
            + [r.to_dict() for r in self.refused]
            + [t.to_dict() for t in self.tiered]
        )

    def to_dict(self) -> dict:
        return {
            "op": "compact",
            "log_dir": str(self.log_dir),
            "now_ms": self.now_ms,
            "partitions": self.partitions_json(),
            "findings": [f.to_dict() for f in self.notes.findings],
        }


def deciding_configs(cfg: TopicConfig, force: bool) -> tuple[str, ...]:
    """compaction_deciding_configs, less what --force overrides (the dirty ratio, the max lag).
    A topic not compacted whose cleanup.policy is a guess: cleanup.policy itself."""
    if not cfg.compact:
        return ("cleanup.policy",)
    names = compaction_deciding_configs(cfg)
    return (
        tuple(n for n in names if n not in ("min.cleanable.dirty.ratio", "max.compaction.lag.ms"))
        if force
        else names
    )


# ------------------------------------------------------------------------------ LogCleanerManager


def plan(
    log_dir: Path, partition_dirs: list[Path], opts: CompactOptions, estimate: bool = False
) -> CompactPlan:
    """LogCleanerManager's view of every compacted partition; nothing is written. With
    `estimate` each selected partition gets a simulated round (--dry-run)."""
    return run(log_dir, partition_dirs, opts, None, estimate=estimate)[0]


def run(
    log_dir: Path,
    partition_dirs: list[Path],
    opts: CompactOptions,
    fsops: FsOps | None,
    estimate: bool = False,
) -> tuple[CompactPlan, dict | None]:
    """Plan and (with `fsops`) clean every compacted partition of `partition_dirs`: each one by
    `compact_partition`, partitions in parallel over `opts.jobs` processes (see
    `for_each_partition`). Returns the plan and the report `apply` would return (None without
    `fsops`). The caller holds the log dir's lock."""
    log_dir = Path(log_dir)
    resolver = opts.resolver or ConfigResolver.of_log_dir(log_dir)
    cp = CompactPlan(log_dir, opts.now_ms, notes=Plan("compact", log_dir))
    checkpoints = ckpt.read_offsets(log_dir / names.CLEANER_CHECKPOINT)
    starts = ckpt.read_offsets(log_dir / names.LOG_START_OFFSET_CHECKPOINT)
    hws = _high_watermarks(log_dir, cp.notes)
    opts = dataclasses.replace(opts, checkpoint_order=list(checkpoints))
    items: list[_Item] = []
    for d in partition_dirs:
        tp = parse_partition_dir(d.name)
        assert tp is not None  # a live partition dir (partition_groups): its name parses
        cfg = resolver.for_topic(tp.topic)
        deciding = deciding_configs(cfg, opts.force)
        unknown = unknown_configs(tp.topic, cfg, deciding)
        if cfg.compact and cfg.remote_storage_enable:
            cp.tiered.append(TieredRefusal(d.name, cfg))
        elif unknown:
            cp.refused.append(RefusedPartition(d.name, cfg, deciding, unknown))
        elif cfg.compact:
            key = (tp.topic, tp.partition)
            items.append(
                (
                    d,
                    tp.topic,
                    tp.partition,
                    cfg,
                    checkpoints.get(key),
                    starts.get(key),
                    hws.get(key),
                )
            )

    def job(item: _Item, wfs: FsOps | None, map_jobs: int):
        return compact_partition(log_dir, *item, opts, wfs, estimate=estimate, map_jobs=map_jobs)

    cleaned = []
    for dec, entry, findings in for_each_partition(items, job, fsops, opts.jobs):
        cp.notes.findings.extend(findings)
        if dec is not None:
            cp.decisions.append(dec)
        if entry is not None:
            cleaned.append(entry)
    return cp, (None if fsops is None else _report(cp, fsops, cleaned))


# one partition's work for --jobs: (dir, topic, partition, configs, cleaner checkpoint, log start
# checkpoint, high watermark checkpoint), compact_partition's arguments after the log dir
_Item = tuple[Path, str, int, TopicConfig, int | None, int | None, int | None]


def compact_partition(
    log_dir: Path,
    d: Path,
    topic: str,
    partition: int,
    cfg: TopicConfig,
    checkpoint: int | None,
    start_checkpoint: int | None,
    high_watermark: int | None,
    opts: CompactOptions,
    fsops: FsOps | None,
    estimate: bool = False,
    map_jobs: int = 1,
):
    """One partition, planned and (with `fsops`) cleaned: (decision or None, cleaned entry or
    None, findings). The unit of work of --jobs."""
    notes = Plan("compact", log_dir)
    finish_interrupted_rewrite(d, fsops, notes)
    ltc = log_to_clean(
        d, topic, partition, cfg, checkpoint, start_checkpoint, opts.now_ms, notes, high_watermark
    )
    if ltc is None:
        return None, None, notes.findings
    dec = _decide(ltc, opts.force)
    dec.deciding = deciding_configs(cfg, opts.force)
    if ltc.checkpoint_reset and fsops is not None:
        # grabFilthiestCompactedLog: updateCheckpoints for every such log, cleaned or not
        fsops.about_to_change()
        with _log_dir_files(fsops):
            _update_checkpoint(fsops, ltc, ltc.first_dirty, opts.checkpoint_order)
    entry = None
    if dec.selected and fsops is not None:
        fsops.about_to_change()
        entry = clean_partition(ltc, fsops, opts, notes, map_jobs)
    elif dec.selected and estimate:
        dec.estimate = clean_round(ltc, opts, None, map_jobs)
    return dec, entry, notes.findings


def finish_interrupted_rewrite(d: Path, fsops: FsOps | None, notes: Plan) -> bool:
    """A killed run's `.cleaned`/`.swap`/`.deleted` files (this command's own replace protocol,
    or the broker's cleaner's) finished first, as the broker's LogLoader finishes them on start
    (LogLoader.removeTempFilesAndCollectSwapFiles: `.cleaned` deleted, a `.swap` at or above the
    smallest `.cleaned` offset deleted; then each valid `.swap` completes: the files in its range
    removed, its suffix stripped), through `fsops`; without it (a plan) only noted. A rerun of a
    killed compact so goes on from where Kafka's own protocol left it, and ends where it would
    have ended (the producer snapshot at a swapped segment's base kept: recover's
    `finish_interrupted_rewrites`). True when there were any."""
    from kafkalog_cli.ops import recover
    from kafkalog_cli.ops.plan import apply as apply_plan

    finish = Plan("compact", fsops.base_dir if fsops is not None else d.parent)
    left = recover.finish_interrupted_rewrites(finish, Partition.open(d), keep_base_snapshots=True)
    if not left:
        return False
    shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    notes.note(
        d.name,
        f"an interrupted rewrite left {shown}: {'finished' if fsops is not None else 'finishing it'} "
        f"first as the broker's LogLoader does ({len(finish.actions)} step(s))",
        d,
    )
    if fsops is not None and finish.actions:
        fsops.about_to_change()
        apply_plan(finish, fsops)
    return True


def _decide(ltc: LogToClean, force: bool) -> PartitionDecision:
    if ltc.cleanable_bytes <= 0:
        return PartitionDecision(
            ltc, False, "nothing cleanable" + (f" ({ltc.hw_note})" if ltc.hw_note else "")
        )
    if force:
        return PartitionDecision(ltc, True, "--force")
    if ltc.need_compaction_now:
        return PartitionDecision(
            ltc, True, f"max.compaction.lag.ms exceeded by {ltc.compaction_delay_ms} ms"
        )
    if ltc.ratio > ltc.cfg.min_cleanable_dirty_ratio:
        return PartitionDecision(
            ltc,
            True,
            f"dirty ratio > min.cleanable.dirty.ratio {ltc.cfg.min_cleanable_dirty_ratio}",
        )
    return PartitionDecision(
        ltc, False, f"dirty ratio <= min.cleanable.dirty.ratio {ltc.cfg.min_cleanable_dirty_ratio}"
    )


def log_to_clean(
    d: Path,
    topic: str,
    partition: int,
    cfg: TopicConfig,
    checkpoint: int | None,
    start_checkpoint: int | None,
    now_ms: int,
    notes: Plan,
    high_watermark: int | None = None,
) -> LogToClean | None:
    """LogCleanerManager.cleanableOffsets and calculateCleanableBytes. `high_watermark` is the
    replication-offset-checkpoint's entry, None when there is none (or no file)."""
    part = Partition.open(d)
    segs = part.segments
    if not segs:
        notes.note(d.name, "no segment")
        return None
    bases = part.base_offsets
    active = part.active_segment
    assert active is not None  # segs is not empty
    leo = active.read_next_offset()
    log_start = max(start_checkpoint, bases[0]) if start_checkpoint is not None else bases[0]
    state = _producer_state(d, segs, leo, cfg, now_ms, notes)
    # cleanableOffsets
    reset = False
    if checkpoint is None or checkpoint < log_start or checkpoint > leo:
        reset = checkpoint is not None
        first_dirty = log_start
    else:
        first_dirty = checkpoint
    # UnifiedLog.lastStableOffset: the first unstable offset if below the high watermark, else
    # the HW, as Partition loads it
    hw = high_watermark_at_load(high_watermark, log_start, leo)
    lso = min(min(state.ongoing), hw) if state.ongoing else hw
    candidates = [lso, active.base_offset]
    dirty_floor = bases[part.segment_index_for(first_dirty)]
    non_active = [s for s in segs[:-1] if s.base_offset >= dirty_floor]
    if cfg.min_compaction_lag_ms > 0:
        for s in non_active:
            if s.largest_timestamp > now_ms - cfg.min_compaction_lag_ms:
                candidates.append(s.base_offset)
                break
    uncleanable = max(first_dirty, min(candidates))
    # calculateCleanableBytes: snap to the base of the segment holding it (or the active one)
    i = bisect.bisect_right(bases, uncleanable) - 1
    first_uncleanable = segs[i].base_offset if 0 <= i < len(segs) - 1 else active.base_offset
    cleanable = sum(
        s.size
        for s in segments_overlapping(segs, min(first_dirty, first_uncleanable), first_uncleanable)
    )
    clean = sum(s.size for s in segments_overlapping(segs, -1, first_dirty))
    delay = _compaction_delay(non_active, cfg, now_ms)
    producers = {
        pid: LastRecord(e.last_offset if e.last_offset >= 0 else None, e.epoch)
        for pid, e in state.entries.items()
    }
    hw_note = _hw_note(high_watermark, hw, lso, active.base_offset)
    return LogToClean(
        d.name,
        d,
        topic,
        partition,
        cfg,
        segs,
        log_start,
        leo,
        first_dirty,
        first_uncleanable,
        clean,
        cleanable,
        delay,
        producers,
        reset,
        checkpoint,
        hw,
        high_watermark,
        hw_note,
    )


def _high_watermarks(log_dir: Path, notes: Plan) -> dict[tuple[str, int], int]:
    """replication-offset-checkpoint (read as retain reads it); {} when the broker never wrote
    one, as no entry (ops.high_watermark), and noted."""
    path = log_dir / names.REPLICATION_CHECKPOINT
    if not path.exists():
        notes.note(
            log_dir.name,
            f"no {names.REPLICATION_CHECKPOINT}: high watermarks are the log start offsets, "
            f"as the broker loads them",
        )
        return {}
    return ckpt.read_offsets_strict(path)[0]


def _hw_note(checkpointed: int | None, hw: int, lso: int, active_base: int) -> str | None:
    """The high watermark, when it is what holds cleaning back (before the active segment)."""
    if lso != hw or hw >= active_base:
        return None
    return f"high watermark {hw} from {names.REPLICATION_CHECKPOINT}" + (
        ": the partition has no entry there" if checkpointed is None else ""
    )


def _compaction_delay(dirty_non_active: list[Segment], cfg: TopicConfig, now_ms: int) -> int:
    """LogCleanerManager.computeCompactionDelay: how far the earliest dirty batch is past
    max.compaction.lag.ms."""
    firsts = [t for s in dirty_non_active if (t := s.first_batch_timestamp()) is not None and t > 0]
    if not firsts:
        return 0
    until = now_ms - max(cfg.max_compaction_lag_ms, 0)
    return max(until - min(firsts), 0)


def _producer_state(
    d: Path, segs: list[Segment], leo: int, cfg: TopicConfig, now_ms: int, notes: Plan
):
    return rebuild_producer_state(
        d,
        segs,
        leo + 1,
        now_ms=now_ms,
        expiration_ms=cfg.producer_id_expiration_ms,
        ignored=lambda m, f: notes.note(d.name, m, f),
    )


# ------------------------------------------------------------------------------ Cleaner.doClean
def clean_round(
    ltc: LogToClean, opts: CompactOptions, fsops: FsOps | None, map_jobs: int = 1
) -> dict:
    """One Cleaner.doClean round. Without `fsops` nothing is written (the --dry-run estimate)."""
    cfg, segs, now = ltc.cfg, ltc.segments, opts.now_ms
    before = segments_overlapping(segs, 0, ltc.first_dirty)
    legacy_horizon = before[-1].last_modified_ms - cfg.delete_retention_ms if before else 0
    m = OffsetMap(opts.dedupe_buffer_size, opts.load_factor)
    dirty = segments_overlapping(segs, ltc.first_dirty, ltc.first_uncleanable)
    nexts = [s.base_offset for s in dirty[1:]] + [ltc.first_uncleanable]
    txns = collect_aborted_transactions(segs, ltc.first_dirty, ltc.first_uncleanable)
    map_stats = build_offset_map(
        m, list(zip(dirty, nexts)), ltc.first_dirty, ltc.first_uncleanable, txns, map_jobs
    )
    end_offset = m.latest_offset + 1
    # KAFKA-17076 (4.0) where the next broker is 4.0+; where the versions the dir allows disagree,
    # 3.x's rule: the two differ only in an empty batch (no record), which every version loads
    retain_last = (
        opts.resolver.versions if opts.resolver is not None else KafkaVersions()
    ).applies(CLEANER_RETAINS_LAST_BATCH) is True
    ctx = CleanContext(
        m,
        sorted(m.offsets()),
        ltc.first_dirty,
        now,
        cfg.delete_retention_ms,
        ltc.active_producers,
        CleanedTransactionMetadata(),
        upper_bound_offset=ltc.first_uncleanable if retain_last else None,
    )
    groups = group_segments_by_size(
        segments_overlapping(segs, 0, end_offset),
        cfg.segment_bytes,
        cfg.segment_index_bytes,
        ltc.first_uncleanable,
    )
    source_bytes = 0
    for group in groups:
        source_bytes += sum(s.size for s in group)
        _clean_group(ltc, group, ctx, legacy_horizon, fsops)
    if fsops is not None:
        with _log_dir_files(fsops):
            _update_checkpoint(fsops, ltc, end_offset, opts.checkpoint_order)
    st: CleanerStats = ctx.stats
    return {
        "keys": m.size,
        "map_records_read": map_stats.records_read,
        "end_offset": end_offset,
        "rounds_needed": 1 if end_offset >= ltc.first_uncleanable else 2,
        "groups": [[s.base_offset for s in g] for g in groups],
        "messages_read": st.messages_read,
        "messages_written": st.messages_written,
        "bytes_read": source_bytes,
        "bytes_written": st.bytes_written,
        "bytes_freed": source_bytes - st.bytes_written,
        "invalid_messages": st.invalid_messages,
        "offset_map_layout": "kafka-slots" if m.compact_layout else "dict",
    }


def _clean_group(
    ltc: LogToClean,
    group: list[Segment],
    ctx: CleanContext,
    legacy_horizon: int,
    fsops: FsOps | None,
) -> None:
    """Cleaner.cleanSegments: the group into one `.cleaned` segment, then replaceSegments.
    Without `fsops` the records are only counted."""
    cfg = ltc.cfg
    dest = CleanedSegment(
        ltc.directory, group[0].base_offset, cfg.index_interval_bytes, cfg.segment_index_bytes
    )
    ctx.txn.cleaned_index = dest.aborted.append

    def fill() -> None:
        for i, seg in enumerate(group):
            upper = group[i + 1].base_offset if i + 1 < len(group) else seg.read_next_offset()
            ctx.txn.add_aborted_transactions(
                collect_aborted_transactions(ltc.segments, seg.base_offset, upper)
            )
            clean_into(seg, dest, ctx, seg.last_modified_ms > legacy_horizon)

    if fsops is None:
        fill()
        dest.finish()
        return
    # LogSegment.lastModified_ takes milliseconds
    cleaned = dest.write(fsops, fill, group[-1].last_modified_ms * 1_000_000)
    fsops.replace_segments(cleaned, _replaced_files(group))


def _replaced_files(group: list[Segment]) -> list[tuple[Path, str]]:
    """The group's files that the cleaned segment replaces, with why: every segment's files, and
    the producer snapshots of the segments merged into the first (deleteProducerSnapshots)."""
    new_base = group[0].base_offset
    old = []
    for seg in group:
        old += [
            (seg.file(suffix), f"replaced by the cleaned segment {new_base}")
            for suffix in names.SEGMENT_SUFFIXES
        ]
        if seg.base_offset != new_base:
            old.append(
                (
                    seg.file(names.SNAPSHOT_SUFFIX),
                    f"segment {seg.base_offset} merged into the cleaned segment {new_base}",
                )
            )
    return old


def _update_checkpoint(
    fsops: FsOps, ltc: LogToClean, end_offset: int, order: list | None = None
) -> None:
    path = fsops.base_dir / names.CLEANER_CHECKPOINT
    offsets = ckpt.read_offsets(path)
    order = list(offsets) if order is None else order
    offsets[(ltc.topic, ltc.partition)] = end_offset
    fsops.write_atomic(path, ckpt.encode_offsets(offsets, order, kind=path.name))


def apply(cp: CompactPlan, fsops: FsOps, opts: CompactOptions) -> dict:
    """Clean every selected partition of a plan (partitions in parallel over `opts.jobs`)."""
    opts = dataclasses.replace(
        opts, checkpoint_order=list(ckpt.read_offsets(fsops.base_dir / names.CLEANER_CHECKPOINT))
    )

    def job(dec: PartitionDecision, wfs: FsOps, map_jobs: int):
        notes = Plan("compact", cp.log_dir)
        ltc = dec.log
        if finish_interrupted_rewrite(
            ltc.directory, wfs, notes
        ):  # planned before: the log as it is now
            key = (ltc.topic, ltc.partition)
            now = log_to_clean(
                ltc.directory,
                ltc.topic,
                ltc.partition,
                ltc.cfg,
                ckpt.read_offsets(wfs.base_dir / names.CLEANER_CHECKPOINT).get(key),
                ckpt.read_offsets(wfs.base_dir / names.LOG_START_OFFSET_CHECKPOINT).get(key),
                opts.now_ms,
                notes,
                ltc.checkpointed_hw,
            )
            if now is None:
                return None, notes.findings
            ltc = now
        return clean_partition(ltc, wfs, opts, notes, map_jobs), notes.findings

    done = []
    for entry, findings in for_each_partition(cp.selected, job, fsops, opts.jobs):
        cp.notes.findings.extend(findings)
        done.append(entry)
    return _report(cp, fsops, done)


def clean_partition(
    ltc: LogToClean, fsops: FsOps, opts: CompactOptions, notes: Plan, map_jobs: int = 1
) -> dict:
    """Rounds of Cleaner.doClean until the dirty section is done, then retention for
    compact,delete; the partition's entry of the report."""
    rounds = []
    while True:
        r = clean_round(ltc, opts, fsops, map_jobs)
        rounds.append(r)
        if r["end_offset"] >= ltc.first_uncleanable or len(rounds) >= opts.max_rounds:
            break
        checkpoints = ckpt.read_offsets(fsops.base_dir / names.CLEANER_CHECKPOINT)
        starts = ckpt.read_offsets(fsops.base_dir / names.LOG_START_OFFSET_CHECKPOINT)
        key = (ltc.topic, ltc.partition)
        again = log_to_clean(
            ltc.directory,
            ltc.topic,
            ltc.partition,
            ltc.cfg,
            checkpoints.get(key),
            starts.get(key),
            opts.now_ms,
            notes,
            ltc.checkpointed_hw,
        )
        assert (
            again is not None
        )  # None only for a partition without segments, and a round keeps one
        ltc = again
    entry = {
        "partition": ltc.name,
        "rounds": rounds,
        "messages_read": sum(r["messages_read"] for r in rounds),
        "messages_written": rounds[-1]["messages_written"],
        "bytes_freed": sum(r["bytes_freed"] for r in rounds),
        "cleaner_offset_checkpoint": rounds[-1]["end_offset"],
    }
    if "delete" in ltc.cfg.cleanup_policy:
        with _log_dir_files(fsops):
            entry["retention"] = _retention_after(fsops, ltc, opts)
    return entry


def _report(cp: CompactPlan, fsops: FsOps, done: list[dict]) -> dict:
    by_name = {Path(d).name: figures for d, figures in fsops.space.items()}
    for entry in done:
        if isinstance(entry, dict) and "partition" in entry:
            entry.update(by_name.get(entry["partition"], Space()).to_dict())
    return run_report(
        "compact",
        cp.log_dir,
        fsops,
        now_ms=cp.now_ms,
        cleaned=done,
        partitions=cp.partitions_json(),
        findings=[f.to_dict() for f in cp.notes.findings],
    )


# ------------------------------------------------------------------------------ --jobs
# Partitions in parallel. The parent holds the log dir's .lock (LogDirLock, a POSIX lockf lock)
# for the whole run; worker processes are forked from it and never take that lock themselves:
# lockf locks belong to a process, so a child asking for it would be refused (never granted
# twice, never deadlocked), and a child closing its inherited descriptor releases nothing of the
# parent's. The children work under the parent's lock by design, and the parent outlives them
# (the pool is joined before the lock is released).
#
# Within the run, each partition's own files are touched by one process only. What the
# partitions share, the log dir's checkpoint files (cleaner-offset-checkpoint; retention's
# log-start and recovery-point checkpoints), is read, changed and rewritten under one
# multiprocessing RLock; the quarantine's manifest.jsonl takes whole appended lines from every
# worker. Workers are forked (they inherit the job, the resolver and the lock without pickling);
# results come back in input order. A partition that fails (a KafkalogError) does not stop the
# others, with one process or many: the first error in input order is raised once all are done,
# so output, exit code and the files left are the same whatever --jobs is.

_JOB: tuple | None = None  # (items, job, parent fsops, map_jobs, lock): inherited by forked workers


def for_each_partition(items: list, job, fsops: FsOps | None, jobs: int) -> list:
    """[job(item, fsops, map_jobs) for item in items], in up to `jobs` worker processes, in order.
    `map_jobs` is the share of the cores left to one partition (it splits its offset map's
    build when fewer partitions than cores are cleaned: a single big partition)."""
    global _JOB
    workers = min(jobs, len(items))
    results: list = []
    if workers <= 1:
        for item in items:
            try:
                results.append((job(item, fsops, max(jobs, 1)), None, 0, [], {}))
            except KafkalogError as e:
                results.append((None, e, 0, [], {}))
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        ctx = mp.get_context("fork")
        _JOB = (items, job, fsops, max(jobs // workers, 1), ctx.RLock())
        try:
            # not multiprocessing.Pool: its workers are daemons, which may not fork the map's workers
            with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                futures = [pool.submit(_worker, i) for i in range(len(items))]
                results = [f.result() for f in futures]
        except BrokenProcessPool:
            if fsops is not None and fsops.fault_exits:
                os._exit(137)  # a worker died at an injected fault (KAFKALOG_FAULT_AFTER)
            raise
        finally:
            _JOB = None
    out = []
    first_error = None
    for value, err, steps, entries, space in results:
        if fsops is not None:
            fsops.steps += steps
            if fsops.quarantine is not None:
                fsops.quarantine.entries.extend(entries)
            for directory, figures in space.items():
                fsops.space.setdefault(directory, Space()).add(figures)
        if err is not None and first_error is None:
            first_error = err
        out.append(value)
    if first_error is not None:
        raise first_error
    return out


def _worker(i: int):
    assert _JOB is not None  # set before the pool forks its workers
    items, job, parent, map_jobs, lock = _JOB
    wfs = None if parent is None else parent.for_worker(lock)
    try:
        value, err = job(items[i], wfs, map_jobs), None
    except KafkalogError as e:
        value, err = None, e
    if wfs is None:
        return value, err, 0, [], {}
    return (
        value,
        err,
        wfs.steps,
        (wfs.quarantine.entries if wfs.quarantine is not None else []),
        wfs.space,
    )


def _log_dir_files(fsops: FsOps | None):
    """The lock around the log dir's shared files (a no-op in a single process)."""
    return getattr(fsops, "shared", None) or contextlib.nullcontext()


def _retention_after(fsops: FsOps, ltc: LogToClean, opts: CompactOptions):
    """compact,delete: UnifiedLog.deleteOldSegments after cleaning, through ops.retain."""
    try:
        from kafkalog_cli.ops import retain
    except ImportError:
        return "skipped: ops.retain is not installed"
    rp = retain.plan(
        fsops.base_dir,
        [ltc.directory],
        retain.RetainOptions(now_ms=opts.now_ms, resolver=opts.resolver),
    )
    from kafkalog_cli.ops.plan import apply as apply_plan

    return apply_plan(rp, fsops)["changed"]
