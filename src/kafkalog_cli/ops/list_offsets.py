"""`get-offsets`: what a broker's ListOffsets would answer for a partition, from its files.

Kafka 3.3.1: Partition.fetchOffsetForTimestamp over UnifiedLog.fetchOffsetByTimestamp.

- earliest (-2): the log start offset.
- latest (-1): the last fetchable offset of the isolation level: the high watermark for
  read_uncommitted (what kafka-get-offsets asks), the last stable offset for read_committed,
  the log end offset without isolation (a follower's request). The high watermark is the
  replication-offset-checkpoint's entry clamped into [log start, log end] as the broker loads
  it; without an entry the files do not say it, and the log end offset stands in, flagged
  (`high_watermark_known` false).
- max-timestamp (-3): the segment with the largest maxTimestampSoFar (the first, on a tie),
  and its offset of that timestamp: the time index's last entry's offset (TimeIndex.lastEntry;
  for an uncompressed CreateTime batch written live, the offset of the record holding it), or,
  for the active segment's batches after its last offset-index entry, the last offset of the
  first batch holding it (what recovery puts in the time index).
- a timestamp: the first segment whose largestTimestamp (its .log mtime when it has no
  timestamp) is >= it; in that segment only, from the time index's entry below it and the
  offset index, the first record with a timestamp >= it and an offset >= the log start offset
  (LogSegment.findOffsetByTimestamp, FileRecords.searchForTimestamp).

A damaged active segment is read as the broker's recovery leaves it: up to its last valid batch
(time-index entries past it ignored when the dir had no clean shutdown), the damage told to
`warn`. A log start offset above the segments' end is the log LogLoader starts empty there.

- earliest-pending-upload (-6, Kafka 4.2+, KIP-1023): UnifiedLog.fetchEarliestPendingUploadOffset:
  -1 (kafka-get-offsets prints no line) when the partition is not remote-enabled; else
  max(highestOffsetInRemoteStorage + 1, log start offset), or with nothing uploaded the log start
  offset while the local log starts there (-1 when it does not: the leader does not know yet what
  was uploaded). Before 4.2 it is refused: kafka-get-offsets of those versions has no such spec.

Every answer but earliest and latest is dropped unless its offset is below the last fetchable
offset, as Partition.fetchOffsetForTimestamp drops it: the broker then answers no offset (-1),
and kafka-get-offsets prints no line for the partition.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from kafkalog_cli.config.versions import EARLIEST_LOCAL_TIMESTAMP as EARLIEST_LOCAL_TIMESTAMP_RULE
from kafkalog_cli.config.versions import (
    EARLIEST_PENDING_UPLOAD_TIMESTAMP as EARLIEST_PENDING_UPLOAD_RULE,
)
from kafkalog_cli.config.versions import LATEST_TIERED_TIMESTAMP as LATEST_TIERED_TIMESTAMP_RULE
from kafkalog_cli.config.versions import MAX_TIMESTAMP_EXACT, KafkaVersions
from kafkalog_cli.errors import KafkalogError, UsageError
from kafkalog_cli.ops.describe import producer_facts
from kafkalog_cli.ops.high_watermark import checkpointed_high_watermark
from kafkalog_cli.ops.tiered import RemoteLog
from kafkalog_cli.storage import names
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsetsRequest, 3.5+ (KIP-405)
LATEST_TIERED_TIMESTAMP = -5  # ListOffsetsRequest, 3.9+ (KIP-1005)
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # ListOffsetsRequest, 4.2+ (KIP-1023)
SPEC_NAMES = {
    "earliest": EARLIEST_TIMESTAMP,
    "latest": LATEST_TIMESTAMP,
    "max-timestamp": MAX_TIMESTAMP,
    "earliest-local": EARLIEST_LOCAL_TIMESTAMP,
    "latest-tiered": LATEST_TIERED_TIMESTAMP,
    "earliest-pending-upload": EARLIEST_PENDING_UPLOAD_TIMESTAMP,
}


class IsolationLevel(enum.Enum):
    READ_UNCOMMITTED = "read_uncommitted"  # up to the high watermark (kafka-get-offsets)
    READ_COMMITTED = "read_committed"  # up to the last stable offset
    NONE = "none"  # up to the log end offset (a follower's request)


@dataclass(frozen=True)
class OffsetSpec:
    """ListOffsets' timestamp: EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP or epoch ms."""

    timestamp: int

    @property
    def name(self) -> str:
        return next((n for n, t in SPEC_NAMES.items() if t == self.timestamp), str(self.timestamp))


@dataclass
class OffsetAnswer:
    topic: str | None
    partition: int | None
    directory: str
    spec: OffsetSpec
    isolation: IsolationLevel
    offset: int | None  # None: the broker answers no offset (-1)
    timestamp: int | None  # the record's, for max-timestamp and a timestamp
    source: str  # where the offset comes from, in words
    last_fetchable_offset: int | None
    last_fetchable_source: str
    high_watermark_known: bool
    reason: str | None = None  # why there is no offset
    by_version: dict | None = None  # {rule: answer} where the versions the dir allows disagree

    def to_dict(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "partition_dir": self.directory,
            "time": self.spec.name,
            "isolation_level": self.isolation.value,
            "offset": self.offset,
            "timestamp": self.timestamp,
            "source": self.source,
            "last_fetchable_offset": self.last_fetchable_offset,
            "last_fetchable_source": self.last_fetchable_source,
            "high_watermark_known": self.high_watermark_known,
            "reason": self.reason,
            "by_version": self.by_version,
        }


def list_offsets(
    part: Partition,
    spec: OffsetSpec,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    warn: Callable[[str], None] | None = None,
    versions: KafkaVersions | None = None,
    remote: RemoteLog | None = None,
) -> OffsetAnswer:
    """The broker's answer for `part` (its `checkpoints` filled from the log dir's files).
    `warn` gets a line when an index cannot be used as a shortcut (the log is scanned instead).
    `versions`: the Kafka versions that may load the dir (config.versions; None: 3.3 to 4.2);
    `remote`: the partition's tiered state (ops.tiered; None: not tiered)."""
    versions = versions if versions is not None else KafkaVersions()
    tp = part.topic_partition
    answer = OffsetAnswer(
        tp.topic if tp else None,
        tp.partition if tp else None,
        str(part.directory),
        spec,
        isolation,
        None,
        None,
        "",
        None,
        "",
        part.checkpoints.high_watermark is not None,
    )
    leo, log_start, active = part.log_end_offset, part.log_start_offset, part.active_segment
    if leo is None or log_start is None or active is None:  # all three known with a segment
        answer.reason = "the partition dir has no segment"
        return answer
    damage = active.recovered_tail().damage
    for problem in (damage.line() if damage is not None else None, part.load_problem):
        if problem is not None and warn is not None:
            warn(problem)
    answer.last_fetchable_offset, answer.last_fetchable_source = _last_fetchable(
        part, isolation, log_start, leo
    )
    t = spec.timestamp
    tiered = remote is not None and remote.enabled is True
    if t == EARLIEST_PENDING_UPLOAD_TIMESTAMP:
        return _earliest_pending_upload(answer, part, remote if tiered else None, versions)
    if (
        tiered
        and remote is not None
        and t in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP)
    ):
        return _tiered_answer(answer, part, t, remote, versions)
    if t in (EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP):
        rule = (
            EARLIEST_LOCAL_TIMESTAMP_RULE
            if t == EARLIEST_LOCAL_TIMESTAMP
            else LATEST_TIERED_TIMESTAMP_RULE
        )
        if versions.applies(rule) is False:
            answer.reason = f"Kafka {versions.stated or versions.range_text} does not know {spec.name} ({rule.since}+)"
            return answer
        if (
            t == LATEST_TIERED_TIMESTAMP
        ):  # UnifiedLog.fetchOffsetByTimestamp: -1 when not remote-enabled
            # UNKNOWN_OFFSET, which kafka-get-offsets (GetOffsetShell) does not print
            answer.reason = (
                "not a remote-enabled partition: the broker answers -1 "
                "(UnifiedLog.fetchOffsetByTimestamp)"
            )
            return answer
        t = EARLIEST_TIMESTAMP  # not remote-enabled: earliest-local is earliest
    if t == EARLIEST_TIMESTAMP:
        answer.offset = log_start
        from_checkpoint = (
            part.checkpoints.log_start_offset is not None
            and part.checkpoints.log_start_offset >= part.segments[0].base_offset
        )
        answer.source = "log start offset: " + (
            names.LOG_START_OFFSET_CHECKPOINT
            if from_checkpoint
            else "the first segment's base offset"
        )
        return answer
    if t == LATEST_TIMESTAMP:
        answer.offset, answer.source = answer.last_fetchable_offset, answer.last_fetchable_source
        return answer
    if part.segments_deleted_on_load:
        answer.reason = "the broker deletes every segment on load: its log holds no record"
        return answer
    found: tuple[int, int] | None
    if t == MAX_TIMESTAMP:
        found = _max_timestamp(part.segments)
        answer.source = (
            "the largest timestamp of the time indexes (and the active segment's unindexed batches)"
        )
        exact = versions.decide(MAX_TIMESTAMP_EXACT)
        if exact.applies is not False:
            try:
                in_batch = _max_timestamp_in_batch(part.segments, warn)
            except KafkalogError as e:
                if exact.applies:
                    raise
                in_batch = None
                answer.by_version = {"3.8+": f"error: {e.line()}", "before 3.8": found[1]}
            if exact.applies:
                found = in_batch
                answer.source = (
                    "the record with the largest timestamp, in the batch the time index points at "
                    "(Kafka 3.8+)"
                )
            elif in_batch != found and answer.by_version is None:
                answer.by_version = {
                    "3.8+": None if in_batch is None else in_batch[1],
                    "before 3.8": found[1],
                }
                answer.source += (
                    f" (before 3.8; {exact.by}: 3.8+ answers the record itself, "
                    f"{'none' if in_batch is None else in_batch[1]})"
                )
        if found is None:
            answer.reason = (
                "no record in the batch holding the largest timestamp has it (a magic 0 batch)"
            )
            return answer
    else:
        seg = next((s for s in part.segments if _largest_timestamp(s) >= t), None)
        answer.source = (
            f"the first record with a timestamp >= {t}, through the time index then the batches"
        )
        found = _offset_for_timestamp(seg, t, log_start, warn) if seg is not None else None
        if found is None:
            answer.reason = (
                f"no segment has a largest timestamp >= {t}"
                if seg is None
                else f"no record at or after the log start offset in {seg.log_path.name}, the first "
                f"segment whose largest timestamp is >= {t}, has a timestamp >= {t}"
            )
            return answer
    ts, offset = found
    if offset >= answer.last_fetchable_offset:
        answer.reason = (
            f"offset {offset} (timestamp {ts}) is not below the last fetchable offset "
            f"{answer.last_fetchable_offset}"
        )
        return answer
    answer.timestamp, answer.offset = ts, offset
    return answer


def _tiered_answer(
    answer: OffsetAnswer, part: Partition, t: int, remote: RemoteLog, versions: KafkaVersions
) -> OffsetAnswer:
    """UnifiedLog.fetchOffsetByTimestamp on a remote-enabled log (3.9): earliest is the log start
    offset as LogLoader loads it (the checkpoint's, remote data included; 0 without an entry),
    earliest-local the local log start offset, latest-tiered highestOffsetInRemoteStorage."""
    checkpointed = part.checkpoints.log_start_offset
    log_start = checkpointed if checkpointed is not None else 0
    local = max(log_start, part.segments[0].base_offset)
    if t == EARLIEST_TIMESTAMP:
        answer.offset = log_start
        answer.source = (
            f"log start offset of a remote-enabled partition: {names.LOG_START_OFFSET_CHECKPOINT} as is"
            if checkpointed is not None
            else f"log start offset of a remote-enabled partition: no {names.LOG_START_OFFSET_CHECKPOINT} "
            f"entry, 0 until the remote tier raises it"
        )
    elif t == EARLIEST_LOCAL_TIMESTAMP:
        answer.offset, answer.source = (
            local,
            "local log start offset: max(log start offset, first local segment base)",
        )
    else:
        if versions.applies(LATEST_TIERED_TIMESTAMP_RULE) is False:
            answer.reason = (
                f"Kafka {versions.stated or versions.range_text} does not know latest-tiered (3.9+)"
            )
        elif not remote.upload.known:
            answer.reason = remote.upload.source
        elif remote.upload.highest_offset_in_remote_storage < 0:
            # nothing uploaded: UNKNOWN_OFFSET, which kafka-get-offsets does not print
            answer.reason = f"nothing uploaded yet: the broker answers -1 ({remote.upload.source})"
        else:
            answer.offset = remote.upload.highest_offset_in_remote_storage
            answer.source = f"highestOffsetInRemoteStorage: {remote.upload.source}"
    return answer


def require_earliest_pending_upload(versions: KafkaVersions) -> None:
    """-6 exists from Kafka 4.2 (GetOffsetShell.parseOffsetSpec): a usage error where the Kafka
    version is older, or not known (then it says how to state it)."""
    decision = versions.decide(EARLIEST_PENDING_UPLOAD_RULE)
    if decision.applies is False:
        raise UsageError(
            f"--time -6 (earliest-pending-upload): Kafka {decision.by.removeprefix('--kafka-version ')} "
            f"has no such time; kafka-get-offsets takes it from Kafka 4.2 on (KIP-1023)"
        )
    if decision.applies is None:
        raise UsageError(decision.refusal("--time -6 (earliest-pending-upload)"))


def _earliest_pending_upload(
    answer: OffsetAnswer, part: Partition, remote: RemoteLog | None, versions: KafkaVersions
) -> OffsetAnswer:
    """UnifiedLog.fetchEarliestPendingUploadOffset (Kafka 4.2); -1 is no offset: kafka-get-offsets
    prints no line for UNKNOWN_OFFSET."""
    require_earliest_pending_upload(versions)
    unknown = "the broker answers -1 (ListOffsetsResponse.UNKNOWN_OFFSET: kafka-get-offsets prints no line): "
    if remote is None:
        answer.reason = unknown + "not a remote-enabled partition"
        return answer
    if not remote.upload.known:
        answer.reason = remote.upload.source
        return answer
    checkpointed = part.checkpoints.log_start_offset
    log_start = checkpointed if checkpointed is not None else 0
    local = max(log_start, part.segments[0].base_offset)
    highest = remote.upload.highest_offset_in_remote_storage
    if highest == -1:
        if local != log_start:
            answer.reason = (
                unknown
                + f"nothing uploaded as far as the leader knows, and the local log starts at "
                f"{local}, above the log start offset {log_start}"
            )
            return answer
        answer.offset = log_start
        answer.source = f"nothing uploaded yet: the log start offset ({remote.upload.source})"
        return answer
    answer.offset = max(highest + 1, log_start)
    answer.source = f"max(highestOffsetInRemoteStorage + 1, log start offset {log_start}): {remote.upload.source}"
    return answer


def _max_timestamp_in_batch(
    segments: list[Segment], warn: Callable[[str], None] | None
) -> tuple[int, int] | None:
    """UnifiedLog's MAX_TIMESTAMP from 3.8 (KAFKA-16310): the segment with the largest
    maxTimestampSoFar, its batches from the offset index's entry for that offset, the first batch
    whose max timestamp is it, and in it the first record with it (RecordBatch.offsetOfMaxTimestamp;
    none for magic 0)."""
    # the first segment with the largest (the caller's partition has segments)
    best_seg, (ts, offset) = max(
        ((seg, seg.max_timestamp_and_offset()) for seg in segments), key=lambda found: found[1][0]
    )
    error = None
    with best_seg.mapped():
        try:
            end = best_seg.recovered_tail().valid_size if best_seg.is_active else None
            for batch in best_seg.batches(best_seg.offset_index_position(offset, warn), end):
                if batch.max_timestamp != ts:
                    continue
                if batch.magic == 0:
                    return None
                try:
                    records = batch.records()
                except KafkalogError as e:  # its position is inside the payload: name the batch's
                    raise type(e)(
                        f"the batch of offsets {batch.base_offset_field}..{batch.last_offset}: {e.message}",
                        path=str(best_seg.source_path),
                        position=batch.position,
                    ) from None
                return next(((r.timestamp, r.offset) for r in records if r.timestamp == ts), None)
        except KafkalogError as e:
            error = e
            # the frames hold views of the mapping: free them before it closes
            chained: BaseException | None = e
            while chained is not None:
                chained.__traceback__, chained = None, chained.__cause__ or chained.__context__
            error.__cause__ = error.__context__ = None
    if error is not None:
        raise error
    return None


def _last_fetchable(
    part: Partition, isolation: IsolationLevel, log_start: int, leo: int
) -> tuple[int, str]:
    if isolation is IsolationLevel.NONE:
        return leo, "log end offset"
    hw = checkpointed_high_watermark(part)
    if hw is None:
        hw, source = leo, f"log end offset (no high watermark in {names.REPLICATION_CHECKPOINT})"
    else:
        source = f"high watermark ({names.REPLICATION_CHECKPOINT})"
    if isolation is IsolationLevel.READ_UNCOMMITTED:
        return hw, source
    producers = producer_facts(part, leo)
    lso = producers.last_stable_offset(hw)
    if lso < hw:
        return lso, "last stable offset (the first offset of the earliest open transaction)"
    return lso, f"last stable offset (no open transaction below it): {source}"


def _max_timestamp(segments: list[Segment]) -> tuple[int, int]:
    """UnifiedLog's MAX_TIMESTAMP: segments.maxBy(maxTimestampSoFar).maxTimestampAndOffsetSoFar."""
    # the first of the largest (the caller's partition has segments)
    return max((seg.max_timestamp_and_offset() for seg in segments), key=lambda found: found[0])


def _largest_timestamp(seg: Segment) -> int:
    """LogSegment.largestTimestamp (maxTimestampSoFar, else the .log's mtime), the active
    segment read as the broker's recovery leaves it."""
    ts = seg.max_timestamp_and_offset()[0]
    return ts if ts >= 0 else seg.last_modified_ms


def _offset_for_timestamp(
    seg: Segment, target: int, log_start: int, warn: Callable[[str], None] | None
) -> tuple[int, int] | None:
    """LogSegment.findOffsetByTimestamp(target, log start offset): (timestamp, offset) or None.
    A batch that does not decode raises its error once the .log is unmapped (a traceback
    still holding views of the mapping would keep it from closing)."""
    error = None
    with seg.mapped():
        try:
            return _search_for_timestamp(seg, target, log_start, warn)
        except KafkalogError as e:
            error = e
            chained: BaseException | None = e  # the chained errors' frames hold views too
            while chained is not None:
                chained.__traceback__, chained = None, chained.__cause__ or chained.__context__
            error.__cause__ = error.__context__ = None
    raise error


def _search_for_timestamp(
    seg: Segment, target: int, log_start: int, warn: Callable[[str], None] | None
) -> tuple[int, int] | None:
    # the time index's entry below the target, or the offset index's for the log start offset
    # when that is later: no record before either position can be the answer
    pos = seg.position_for_timestamp(target, warn)
    if log_start > seg.base_offset:
        pos = max(pos, seg.position_for_offset(log_start, warn))
    # the active segment ends where the broker's recovery would truncate it
    end = seg.recovered_tail().valid_size if seg.is_active else None
    for batch in seg.batches(pos, end):
        if batch.max_timestamp >= target:
            try:
                records = batch.records()
            except KafkalogError as e:  # its position is inside the payload: name the batch's
                raise type(e)(
                    f"the batch of offsets {batch.base_offset_field}..{batch.last_offset}: {e.message}",
                    path=str(seg.source_path),
                    position=batch.position,
                ) from None
            for record in records:
                if record.timestamp >= target and record.offset >= log_start:
                    return record.timestamp, record.offset
    return None
