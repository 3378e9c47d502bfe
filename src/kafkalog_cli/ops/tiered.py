"""Tiered storage (KIP-405), as the broker that loads the log dir next applies it to one partition.

Whether a partition is tiered -- UnifiedLog.isRemoteLogEnabled (3.6+):
    remote.log.storage.system.enable (broker) && remote.storage.enable (topic)
    && !(compacted || Topic.isInternal || __remote_log_metadata || __cluster_metadata)
Before 3.6 remote.storage.enable changes nothing (config.versions.TIERED_STORAGE). The broker's
remote.log.storage.system.enable is read from --server-properties; without it, a topic with
remote.storage.enable=true proves it was on when that config was set (LogConfig.
validateRemoteStorageOnlyIfSystemEnabled refuses the topic config otherwise, 3.6+), so it is
taken as on: the tiered rules delete less locally, never more, than the plain ones.

What a tiered partition keeps (UnifiedLog 3.9):
- two start offsets: the log start offset (log-start-offset-checkpoint; LogLoader takes it as
  is, not max(it, first segment base), for a remote-enabled log) and the local log start offset
  (max(log start, first local segment base)); local retention raises only the local one
  (incrementStartOffset -> maybeIncrementLocalLogStartOffset), so the leader epochs and the
  checkpoint entry the remote tier needs stay;
- deletableSegments: a local segment goes only once uploaded (its last offset at or below
  highestOffsetInRemoteStorage), or (3.7+) when the log start offset reached the next segment;
  the active segment is never uploaded; by local.retention.ms/bytes (-2: retention.ms/bytes);
  3.7+ rolls the active segment when it breaches them (shouldRoll);
- remote.log.copy.disable=true (3.9+): the plain rules again (remoteLogEnabledAndRemoteCopyEnabled).

What was uploaded is known only from __remote_log_metadata (TopicBasedRemoteLogMetadataManager):
the partition murmur2(topicIdPartition) % remote.log.metadata.topic.num.partitions (50) of it.
Where this log dir holds that partition, its records say which segments reached
COPY_SEGMENT_FINISHED; highestOffsetInRemoteStorage is taken as the largest end offset among them
(RemoteLogLeaderEpochState.highestLogOffset; the broker's RemoteLogManager also bounds it by the
local leader-epoch lineage, which can only make it lower for segments of a divergent epoch). A
replica of that partition may lag its leader: it then shows fewer uploads, never more, so planned
deletions are still ones the broker makes. Without the partition the upload state is unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import ConfigResolver, TopicConfig
from kafkalog_cli.config.versions import (
    REMOTE_LOG_COPY_DISABLE,
    TIERED_ROLL_AND_START_OFFSET,
    TIERED_STORAGE,
    KafkaVersions,
    RuleDecision,
)
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.checkpoints import parse_partition_metadata, topic_id_bytes
from kafkalog_cli.formats.internal.remote_log_metadata import (
    COPY_SEGMENT_FINISHED,
    DEFAULT_METADATA_TOPIC_PARTITIONS,
    METADATA_TOPIC,
    decode_remote_log_record,
    metadata_partition,
)
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.names import TopicPartition
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import read_file

# never remote-enabled, whatever their configs (UnifiedLog.isRemoteLogEnabled, Topic.isInternal)
NEVER_TIERED = frozenset(
    {
        "__consumer_offsets",
        "__transaction_state",
        "__share_group_state",
        METADATA_TOPIC,
        "__cluster_metadata",
    }
)
SYSTEM_ENABLE = "remote.log.storage.system.enable"
NUM_PARTITIONS_PROPS = (
    "rlmm.config.remote.log.metadata.topic.num.partitions",
    "remote.log.metadata.topic.num.partitions",
)


@dataclass(frozen=True)
class UploadState:
    """What __remote_log_metadata says was uploaded for one partition."""

    known: bool
    highest_offset_in_remote_storage: int = -1  # -1: nothing uploaded
    remote_log_start_offset: int | None = None  # the smallest start offset of the uploaded segments
    segments: int = 0  # uploaded (COPY_SEGMENT_FINISHED) segments
    source: str = ""  # where it comes from, or why it is unknown

    def to_dict(self) -> dict:
        return {
            "known": self.known,
            "highest_offset_in_remote_storage": self.highest_offset_in_remote_storage
            if self.known
            else None,
            "remote_log_start_offset": self.remote_log_start_offset,
            "uploaded_segments": self.segments,
            "source": self.source,
        }


@dataclass(frozen=True)
class RemoteLog:
    """How the next broker treats one partition's remote tier.

    `enabled` (UnifiedLog.remoteLogEnabled) and `copy_enabled` (remoteLogEnabledAndRemoteCopyEnabled):
    True, False or None (unknown: the versions the log dir allows disagree, or a deciding value is
    unknown); `why` says what decided each, in words."""

    enabled: bool | None
    copy_enabled: bool | None
    why: str
    upload: UploadState = field(default_factory=lambda: UploadState(False))
    roll_and_start_offset_rule: RuleDecision | None = None  # 3.7+: shouldRoll, log-start deletion
    undecided: str | None = None  # why enabled or copy_enabled is None, in a few words

    @property
    def tiered(self) -> bool:
        """The tiered rules apply (enabled and copying)."""
        return bool(self.enabled and self.copy_enabled)

    @property
    def maybe_tiered(self) -> bool:
        return self.enabled is not False and self.copy_enabled is not False

    def to_dict(self) -> dict:
        return {
            "remote_log_enabled": self.enabled,
            "remote_copy_enabled": self.copy_enabled,
            "why": self.why,
            "upload": self.upload.to_dict(),
        }


NOT_TIERED = RemoteLog(False, False, "remote.storage.enable=false")


def remote_log(partition: Partition, cfg: TopicConfig, resolver: ConfigResolver) -> RemoteLog:
    """The partition's RemoteLog for the broker that loads the log dir next (module docstring)."""
    tp = partition.topic_partition
    topic = tp.topic if tp is not None else ""
    enable = cfg.source("remote.storage.enable")
    if not enable.value and enable.known:
        return NOT_TIERED
    if not enable.value:
        # unknown (the topic's configs cannot be read): it decides only where the log dir shows
        # tiered storage in use; elsewhere the plain rules, as every other version applies them
        shown = tiered_storage_in_use(partition, resolver)
        if shown is None:
            return RemoteLog(
                False,
                False,
                f"remote.storage.enable unknown ({enable.origin}); nothing in the log "
                f"dir shows tiered storage in use",
            )
        assert enable.unknown is not None  # not known (above)
        return RemoteLog(
            None,
            None,
            f"remote.storage.enable is unknown ({enable.origin})",
            undecided=f"remote.storage.enable is unknown ({enable.unknown.value}) and {shown}; "
            f"state it with --topic-config {topic}:remote.storage.enable=true|false, or "
            f"--assume-kafka-defaults (false)",
        )
    if topic in NEVER_TIERED:
        return RemoteLog(False, False, f"{topic} is never remote (UnifiedLog.isRemoteLogEnabled)")
    if cfg.compact:
        return RemoteLog(
            False, False, "a compacted topic is never remote (UnifiedLog.isRemoteLogEnabled)"
        )
    versions = resolver.versions
    rule = versions.decide(TIERED_STORAGE)
    raw, origin = resolver.broker_property(SYSTEM_ENABLE)
    if raw is not None and raw.lower() != "true":
        return RemoteLog(False, False, f"{SYSTEM_ENABLE}={raw} ({origin})")
    system = (
        f"{SYSTEM_ENABLE}=true ({origin})"
        if raw is not None
        else f"{SYSTEM_ENABLE} taken as true: the topic has remote.storage.enable=true, which Kafka refuses "
        f"unless it is (LogConfig.validateRemoteStorageOnlyIfSystemEnabled)"
    )
    why = f"remote.storage.enable=true ({enable.origin}); {system}"
    if rule.applies is False:
        return RemoteLog(
            False,
            False,
            f"{why}; but Kafka {versions.stated or versions.range_text} has no tiered storage",
        )
    copy = _copy_enabled(cfg, versions)
    enabled = True if rule.applies else None
    if rule.applies is None:
        why += f"; tiered storage is 3.6+, and {rule.by}"
    if copy is not True:
        why += "; remote.log.copy.disable=true " + (
            "(3.9+: the plain rules)"
            if copy is False
            else "(3.9+ only; the versions the log dir allows disagree)"
        )
    undecided = None
    if enabled is None:
        undecided = f"tiered storage (remote.storage.enable=true) is Kafka 3.6+, and {rule.by}"
    elif copy is None:
        undecided = (
            f"remote.log.copy.disable=true acts from Kafka 3.9, and "
            f"{versions.decide(REMOTE_LOG_COPY_DISABLE).by}"
        )
    upload = UploadState(False)
    if enabled is not False:
        upload = upload_state(
            partition, metadata_partitions(resolver)[0], resolver.remote_log_metadata
        )
    return RemoteLog(
        enabled, copy, why, upload, versions.decide(TIERED_ROLL_AND_START_OFFSET), undecided
    )


def tiered_storage_in_use(partition: Partition, resolver: ConfigResolver) -> str | None:
    """Why the log dir shows tiered storage in use (None: it does not): the broker's
    remote.log.storage.system.enable=true, a __remote_log_metadata partition beside the
    partition, or a log start offset checkpointed below the first local segment (only a
    remote-enabled log loads one: LogLoader; the others take max(it, the first base))."""
    raw, origin = resolver.broker_property(SYSTEM_ENABLE)
    if raw is not None:
        return f"{origin}" if raw.lower() == "true" else None
    start = partition.checkpoints.log_start_offset
    if partition.segments and start is not None and start < partition.segments[0].base_offset:
        return (
            f"its log start offset {start} ({names.LOG_START_OFFSET_CHECKPOINT}) is below its first local "
            f"segment {partition.segments[0].base_offset}"
        )
    try:
        found = next(
            (
                n
                for n in os.listdir(partition.directory.parent)
                if n.startswith(METADATA_TOPIC + "-")
            ),
            None,
        )
    except OSError:
        found = None
    return f"the log dir holds {found}" if found else None


def _copy_enabled(cfg: TopicConfig, versions: KafkaVersions) -> bool | None:
    if not cfg.remote_log_copy_disable:
        return True
    applies = versions.applies(REMOTE_LOG_COPY_DISABLE)
    return None if applies is None else not applies


def metadata_partitions(resolver: ConfigResolver) -> tuple[int, str]:
    """remote.log.metadata.topic.num.partitions (the broker's rlmm.config. prefix), and its source."""
    props = resolver.server_properties or {}
    for prop in NUM_PARTITIONS_PROPS:
        if prop in props and props[prop].strip().isdigit() and int(props[prop]) > 0:
            return int(props[prop]), f"--server-properties: {prop}"
    return DEFAULT_METADATA_TOPIC_PARTITIONS, "Kafka's default"


def upload_state(
    partition: Partition, partitions: int = DEFAULT_METADATA_TOPIC_PARTITIONS, elsewhere: tuple = ()
) -> UploadState:
    """What the __remote_log_metadata partition for `partition` says was uploaded: the one in
    `elsewhere` (--remote-log-metadata: log dirs or that partition's dirs, e.g. copied from the
    broker that leads it), else the one beside the partition in its log dir."""
    tp = partition.topic_partition
    assert tp is not None  # the callers' partition dirs are loaded logs': the name parses
    d = partition.directory
    try:
        meta = parse_partition_metadata(
            files.read_bytes(d / names.PARTITION_METADATA), path=str(d / names.PARTITION_METADATA)
        )
    except (OSError, KafkalogError) as e:
        why = getattr(e, "message", None) or getattr(e, "strerror", None) or str(e)
        return UploadState(
            False,
            source=f"upload state unknown: the topic id is unknown ({names.PARTITION_METADATA}: "
            f"{why})",
        )
    topic_id = topic_id_bytes(meta.topic_id)
    n = metadata_partition(topic_id, tp.partition, partitions)
    name = f"{METADATA_TOPIC}-{n}"
    candidates = (
        [Path(p) for p in elsewhere if Path(p).name == name]
        + [Path(p) / name for p in elsewhere if Path(p).name != name]
        + [d.parent / name]
    )
    rlm_dir = next((c for c in candidates if os.path.isdir(c)), None)
    if rlm_dir is None:
        where = "this log dir" + (" nor --remote-log-metadata" if elsewhere else "")
        return UploadState(
            False,
            source=f"upload state unknown: neither {where} has {name} (where "
            f"TopicBasedRemoteLogMetadataManager records {tp}'s uploads; it is usually on "
            f"another broker: give it with --remote-log-metadata)"
            if elsewhere
            else f"upload state unknown: this log dir has no {name} (where TopicBasedRemoteLogMetadataManager "
            f"records {tp}'s uploads; it is usually on another broker)",
        )
    return read_uploads(rlm_dir, topic_id, tp)


def read_uploads(rlm_dir: Path, topic_id: bytes, tp: TopicPartition) -> UploadState:
    """Fold the records of one __remote_log_metadata partition dir for `topic_id`/`tp`: the segments
    whose state reached COPY_SEGMENT_FINISHED. A record that does not decode stops the read (the
    state is then unknown)."""
    try:
        part = Partition.open(rlm_dir)
    except KafkalogError as e:
        return UploadState(False, source=f"upload state unknown: {rlm_dir.name}: {e.message}")
    started: dict[bytes, tuple[int, int]] = {}  # segment id -> (start, end)
    finished: set[bytes] = set()

    for seg in part.segments:
        try:
            buf = read_file(seg.source_path)
            for batch in iter_batches(buf):
                batch.ensure_valid()
                if batch.is_control:
                    continue
                for rec in batch.records():
                    api_key, f = decode_remote_log_record(rec.value)
                    if api_key == 0 and _ours(
                        f["remoteLogSegmentId"]["topicIdPartition"], topic_id, tp
                    ):
                        sid = f["remoteLogSegmentId"]["id"]
                        started[sid] = (f["startOffset"], f["endOffset"])
                        if f["remoteLogSegmentState"] == COPY_SEGMENT_FINISHED:
                            finished.add(sid)
                    elif api_key == 1 and _ours(
                        f["remoteLogSegmentId"]["topicIdPartition"], topic_id, tp
                    ):
                        if f["remoteLogSegmentState"] == COPY_SEGMENT_FINISHED:
                            finished.add(f["remoteLogSegmentId"]["id"])
        except KafkalogError as e:
            at = f" byte {e.position}" if e.position is not None else ""
            return UploadState(
                False, source=f"upload state unknown: {seg.source_path}{at}: {e.message}"
            )
    done = [started[s] for s in finished if s in started]
    if not done:
        return UploadState(True, -1, None, 0, f"{rlm_dir.name}: no segment of {tp} uploaded")
    high = max(end for _, end in done)
    low = min(start for start, _ in done)
    return UploadState(
        True,
        high,
        low,
        len(done),
        f"{rlm_dir.name}: {len(done)} segment(s) of {tp} uploaded, offsets {low} to {high}",
    )


def _ours(tip: dict, topic_id: bytes, tp: TopicPartition) -> bool:
    return tip["id"] == topic_id and tip["partition"] == tp.partition
