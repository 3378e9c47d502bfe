"""Consumer groups, offline: `__consumer_offsets` replayed as the group coordinator loads it, to
each group's state and latest committed offsets, with the lag against the log end offsets found
in the same log dirs.

The replay is Kafka's (3.3.1 GroupMetadataManager.doLoadGroupsAndOffsets; 4.x
GroupCoordinatorShard.replay, GroupMetadataManager.replay and OffsetMetadataManager.replay):
- batches in offset order from the log start offset to the log end offset (the active segment
  read as the broker's recovery leaves it);
- an offset commit sets the group's offset of its topic-partition, a tombstone removes it;
- a transactional offset commit (a batch of a transactional producer) is held per producer id
  and applied at that producer's COMMIT marker, unless a commit written later in the log is
  already there (CommitRecordMetadataAndOffset.olderThan); an ABORT marker drops it; one still
  open at the end is reported as pending;
- a classic group's GroupMetadata record replaces the group (protocol, generation, leader,
  members and their assignments), a tombstone removes it; its state is Empty without members,
  Stable with them (GroupMetadataManager.readGroupMessageValue);
- KIP-848 consumer groups (Kafka 3.7+ records 3-8 and 16): the group epoch, the target
  assignment epoch, each member's metadata and current assignment (topic ids, named through the
  metadata log or the group's partition metadata); the state as ConsumerGroup computes it:
  Empty, Assigning, Reconciling or Stable. Share and streams groups (Kafka 4.x) are kept with
  their epoch and members;
- offsets of a group without metadata make a classic Empty group, as the coordinator does.
Record types Kafka does not know are skipped with a note, as CoordinatorLoaderImpl skips them.

A group lives in partition `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`
(GroupMetadataManager.partitionFor); the partition count comes from the metadata log
(__consumer_offsets' PartitionRecords), or is stated, or is guessed from the
`__consumer_offsets-N` dirs present, and says which.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kafkalog_cli.errors import InputError, InvalidRecordError, KafkalogError
from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.formats.internal.consumer_offsets import deserialize_assignment
from kafkalog_cli.formats.internal.coordinator import (
    Coordinator,
    UnknownRecordTypeError,
    deserialize,
)
from kafkalog_cli.formats.internal.kafka_protocol import (
    Readable,
    java_string_hash,
    read_struct,
    uuid_to_string,
)
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.storage.logdir import LogDir, PartitionDirKind, select_partition_dirs
from kafkalog_cli.storage.names import TopicPartition, parse_partition_dir
from kafkalog_cli.storage.partition import Partition

if TYPE_CHECKING:
    from kafkalog_cli.formats.internal.metadata_image import MetadataImage

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions
CONSUMER_PROTOCOL_TYPE = "consumer"
NO_PRODUCER_ID = -1


class GroupType(enum.Enum):
    CLASSIC = "classic"
    CONSUMER = "consumer"  # KIP-848
    SHARE = "share"
    STREAMS = "streams"


class GroupState(enum.Enum):
    """The states kafka-consumer-groups prints (classic and KIP-848 groups)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"


# MemberState (group-coordinator modern/MemberState.java)
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}


def partition_for(group_id: str, partitions: int) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % partitions (Utils.abs
    maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass
class OffsetAndMetadata:
    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None  # only value version 1 records one
    record_offset: int  # the commit's batch in __consumer_offsets (olderThan compares these)
    producer_id: int | None = None  # a transactional commit's producer

    def to_dict(self) -> dict:
        return {
            "committed_offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "expire_timestamp": self.expire_timestamp,
            "record_offset": self.record_offset,
            "producer_id": self.producer_id,
        }


@dataclass
class GroupMember:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None = None
    rack_id: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    subscribed_topics: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int | None = None  # KIP-848
    state: str | None = None  # KIP-848 MemberState
    # (topic name, or topic id while unresolved, partition), as recorded
    assignment: list[tuple[str, int]] = field(default_factory=list)
    assignment_topic_ids: bool = False  # the assignment names topics by id (KIP-848)
    pending_revocation: list[tuple[str, int]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rack_id": self.rack_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscribed_topics": self.subscribed_topics,
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "server_assignor": self.server_assignor,
            "member_epoch": self.member_epoch,
            "state": self.state,
            "assignment": [{"topic": t, "partition": p} for t, p in self.assignment],
            "partitions_pending_revocation": [
                {"topic": t, "partition": p} for t, p in self.pending_revocation
            ],
        }


@dataclass
class Group:
    group_id: str
    type: GroupType = GroupType.CLASSIC
    coordinator_partition: int | None = None  # the __consumer_offsets partition it was read from
    protocol_type: str | None = None  # classic: "consumer", "connect", ...
    protocol: str | None = None  # classic: the assignor; KIP-848: the server assignor
    generation: int = 0  # classic generation, or KIP-848 group epoch
    leader: str | None = None
    state_timestamp: int | None = None  # classic currentStateTimestamp
    target_assignment_epoch: int | None = None  # KIP-848
    members: dict[str, GroupMember] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    has_metadata: bool = False  # False: known by its offsets only
    topic_names: dict[str, str] = field(
        default_factory=dict
    )  # KIP-848 partition metadata: id -> name

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.type is GroupType.CLASSIC:
            return GroupState.STABLE  # readGroupMessageValue: loaded Stable with members
        target = self.target_assignment_epoch
        if target is None or self.generation > target:
            return GroupState.ASSIGNING
        if any(
            m.member_epoch != target or (m.state is not None and m.state != "STABLE")
            for m in self.members.values()
        ):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def assignor(self) -> str:
        if self.type is GroupType.CLASSIC:
            return self.protocol or ""
        assignors = {m.server_assignor for m in self.members.values() if m.server_assignor}
        return ",".join(sorted(assignors))

    def to_dict(self) -> dict:
        return {
            "group": self.group_id,
            "type": self.type.value,
            "state": self.state.value,
            "coordinator_partition": self.coordinator_partition,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol
            if self.type is GroupType.CLASSIC
            else self.assignor() or None,
            "generation": self.generation if self.type is GroupType.CLASSIC else None,
            "group_epoch": self.generation if self.type is not GroupType.CLASSIC else None,
            "target_assignment_epoch": self.target_assignment_epoch,
            "leader": self.leader,
            "state_timestamp": self.state_timestamp,
            "has_metadata": self.has_metadata,
            "members": [m.to_dict() for _, m in sorted(self.members.items())],
        }


class GroupCoordinatorReplay:
    """The groups of the __consumer_offsets partitions replayed into it (`replay_partition`)."""

    def __init__(self, only_group: str | None = None, note: Callable[[str], None] | None = None):
        self.groups: dict[str, Group] = {}
        # producer id -> {(group, topic, partition): commit} of transactions not yet ended
        self.pending: dict[int, dict[tuple[str, str, int], OffsetAndMetadata]] = {}
        self.only_group = only_group
        self.note = note or (lambda line: None)

    def group(self, group_id: str, partition: int | None) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id, coordinator_partition=partition)
        return g

    def replay_partition(self, part: Partition) -> None:
        tp = part.topic_partition
        number = tp.partition if tp is not None else None
        log_start = part.log_start_offset or 0
        for seg, batch in _batches(part, self.note):
            try:
                if batch.is_control:
                    self._marker(batch, number)
                    continue
                txn_pid = batch.producer_id if batch.is_transactional else None
                for rec in batch.records():
                    if rec.offset < log_start:
                        continue
                    try:
                        self._record(rec.key, rec.value, batch.base_offset, txn_pid, number)
                    except UnknownRecordTypeError as e:
                        self.note(
                            f"{seg.log_path}: byte {batch.position}: record at offset {rec.offset}: "
                            f"{e.message}, skipped (a record of a Kafka this one does not know)"
                        )
                    except KafkalogError as e:
                        raise e.in_record(rec.offset, batch.position) from None
            except KafkalogError as e:
                raise e.located(path=str(seg.log_path), position=batch.position) from None

    def _marker(self, batch, partition: int | None) -> None:
        """A COMMIT applies the producer's pending offsets (unless a later commit is there), an
        ABORT drops them (GroupMetadataManager, OffsetMetadataManager.replayEndTransactionMarker)."""
        records = batch.records()
        if not records:
            return
        kind = ControlRecordType.parse(records[0].key)
        if not kind.is_transaction_marker:
            return
        held = self.pending.pop(batch.producer_id, {})
        if kind is ControlRecordType.COMMIT:
            for (group_id, topic, tp), commit in held.items():
                g = self.group(group_id, partition)
                now = g.offsets.get((topic, tp))
                if now is None or now.record_offset < commit.record_offset:
                    g.offsets[(topic, tp)] = commit

    def _record(
        self, key, value, batch_offset: int, txn_pid: int | None, partition: int | None
    ) -> None:
        if key is None:
            raise InvalidRecordError("a __consumer_offsets record without a key")
        rec = deserialize(Coordinator.GROUP, key, value)
        k, v = rec.key, rec.value
        name = rec.name
        if name == "OffsetCommit":
            self._offset_commit(
                k["group"], k["topic"], k["partition"], v, batch_offset, txn_pid, partition
            )
            return
        group_id = cast(str, k.get("group", k.get("groupId")))  # every group record's key has one
        if self.only_group is not None and group_id != self.only_group:
            return
        if name == "GroupMetadata":
            self._group_metadata(group_id, v, rec.value_version, partition)
        elif name.startswith(("ConsumerGroup", "ShareGroup", "StreamsGroup")):
            self._modern(name, group_id, k.get("memberId"), v, partition)

    def _offset_commit(
        self,
        group_id: str,
        topic: str,
        tp: int,
        v: dict | None,
        batch_offset: int,
        txn_pid: int | None,
        partition: int | None,
    ) -> None:
        if self.only_group is not None and group_id != self.only_group:
            return
        commit = (
            None
            if v is None
            else OffsetAndMetadata(
                v["offset"],
                None if v["leaderEpoch"] == -1 else v["leaderEpoch"],
                v["metadata"],
                v["commitTimestamp"],
                None if v["expireTimestamp"] == -1 else v["expireTimestamp"],
                batch_offset,
                txn_pid,
            )
        )
        if txn_pid is not None and txn_pid != NO_PRODUCER_ID:
            held = self.pending.setdefault(txn_pid, {})
            if commit is None:
                held.pop((group_id, topic, tp), None)
            else:
                held[(group_id, topic, tp)] = commit
            return
        g = self.groups.get(group_id)
        if commit is None:
            if g is not None:
                g.offsets.pop((topic, tp), None)
            return
        if g is None:
            g = self.group(group_id, partition)
        g.offsets[(topic, tp)] = commit

    def _group_metadata(
        self, group_id: str, v: dict | None, version: int | None, partition: int | None
    ) -> None:
        if v is None:  # the group is removed; its offsets have their own tombstones
            g = self.groups.get(group_id)
            if g is not None:
                g.has_metadata, g.members, g.type = False, {}, GroupType.CLASSIC
                g.protocol_type = g.protocol = g.leader = None
            return
        g = self.group(group_id, partition)
        g.type, g.has_metadata = GroupType.CLASSIC, True
        g.protocol_type = v["protocolType"] or None
        g.protocol, g.leader, g.generation = v["protocol"], v["leader"], v["generation"]
        g.state_timestamp = None if v["currentStateTimestamp"] == -1 else v["currentStateTimestamp"]
        g.target_assignment_epoch = None
        g.members = {}
        for m in v["members"]:
            member = GroupMember(
                m["memberId"],
                m["clientId"],
                m["clientHost"],
                m["groupInstanceId"],
                session_timeout_ms=m["sessionTimeout"],
                rebalance_timeout_ms=m["sessionTimeout"] if version == 0 else m["rebalanceTimeout"],
            )
            if g.protocol_type == CONSUMER_PROTOCOL_TYPE:
                member.subscribed_topics = _subscribed_topics(m["subscription"])
                try:
                    member.assignment = deserialize_assignment(m["assignment"]).partitions
                except InvalidRecordError:
                    pass  # an assignment the consumer protocol does not read: none shown
            g.members[member.member_id] = member

    def _modern(
        self, name: str, group_id: str, member_id: str | None, v: dict | None, partition: int | None
    ) -> None:
        kind = (
            GroupType.CONSUMER
            if name.startswith("Consumer")
            else GroupType.SHARE
            if name.startswith("Share")
            else GroupType.STREAMS
        )
        record = name.split("Group", 1)[1]  # "Metadata", "MemberMetadata", ...
        g = self.groups.get(group_id)
        if record == "Metadata":
            if v is None:
                if g is not None:
                    g.has_metadata, g.members = False, {}
                return
            g = self.group(group_id, partition)
            g.type, g.has_metadata, g.generation = kind, True, v["epoch"]
            g.protocol_type = kind.value
            return
        if v is None:
            if g is not None and member_id is not None and record == "MemberMetadata":
                g.members.pop(member_id, None)
            return
        g = self.group(group_id, partition) if g is None else g
        g.type = kind
        if record == "PartitionMetadata":
            g.topic_names.update(
                {uuid_to_string(t["topicId"]): t["topicName"] for t in v["topics"]}
            )
        elif record == "TargetAssignmentMetadata":
            g.target_assignment_epoch = v["assignmentEpoch"]
        elif record == "MemberMetadata":
            assert member_id is not None  # its key has memberId
            m = g.members.get(member_id) or GroupMember(member_id, v["clientId"], v["clientHost"])
            m.client_id, m.client_host = v["clientId"], v["clientHost"]
            m.group_instance_id, m.rack_id = v.get("instanceId"), v.get("rackId")
            m.rebalance_timeout_ms = v.get("rebalanceTimeoutMs")
            m.subscribed_topics = list(v.get("subscribedTopicNames") or ())
            m.subscribed_topic_regex = v.get("subscribedTopicRegex")
            m.server_assignor = v.get("serverAssignor")
            classic = v.get("classicMemberMetadata")
            if classic:
                m.session_timeout_ms = classic["sessionTimeoutMs"]
            g.members[member_id] = m
        elif record == "CurrentMemberAssignment" and kind is not GroupType.STREAMS:
            assert member_id is not None  # its key has memberId
            m = g.members.setdefault(member_id, GroupMember(member_id, "", ""))
            m.member_epoch, m.state = (
                v["memberEpoch"],
                MEMBER_STATES.get(v["state"], str(v["state"])),
            )
            m.assignment = _by_topic_id(v["assignedPartitions"])
            m.pending_revocation = _by_topic_id(v.get("partitionsPendingRevocation") or ())
            m.assignment_topic_ids = True
        elif record == "CurrentMemberAssignment":
            assert member_id is not None  # its key has memberId
            m = g.members.setdefault(member_id, GroupMember(member_id, "", ""))
            m.member_epoch, m.state = (
                v["memberEpoch"],
                MEMBER_STATES.get(v["state"], str(v["state"])),
            )

    def finish(self, topic_names: dict[str, str]) -> list[Group]:
        """The groups, by id, with KIP-848 assignments' topic ids named (`topic_names`: the
        metadata log's, then the group's own partition metadata)."""
        for g in self.groups.values():
            names = {**g.topic_names, **topic_names}
            for m in g.members.values():
                if m.assignment_topic_ids:
                    m.assignment = [(names.get(t, t), p) for t, p in m.assignment]
                    m.pending_revocation = [(names.get(t, t), p) for t, p in m.pending_revocation]
                    m.assignment_topic_ids = False
        return [g for _, g in sorted(self.groups.items()) if g.has_metadata or g.offsets]

    def pending_offsets(self) -> list[tuple[int, str, str, int, OffsetAndMetadata]]:
        """Transactional commits whose transaction has no marker yet: (producer id, group, topic,
        partition, commit)."""
        return sorted(
            (pid, g, t, p, c) for pid, held in self.pending.items() for (g, t, p), c in held.items()
        )


def _by_topic_id(entries: Iterable[dict]) -> list[tuple[str, int]]:
    return [(uuid_to_string(e["topicId"]), p) for e in entries for p in e["partitions"]]


def _subscribed_topics(data: bytes) -> list[str]:
    """ConsumerProtocolSubscription's topics ([] where it does not read)."""
    r = Readable(data)
    try:
        version = r.read_int16()
        return list(
            read_struct(r, MESSAGES["ConsumerProtocolSubscription"], min(max(version, 0), 3))[
                "topics"
            ]
        )
    except InvalidRecordError:
        return []


def _batches(part: Partition, note: Callable[[str], None]) -> Iterator:
    """The partition's batches up to its log end offset: after an unclean shutdown, the active
    segment up to where the broker's recovery would truncate it (what follows told to `note`).
    Every batch is checked (size, CRC): a damaged one raises with its file and position."""
    segments = part.segments
    for i, seg in enumerate(segments):
        end = None
        if i == len(segments) - 1:
            tail = seg.recovered_tail()
            end = tail.valid_size
            if tail.damage is not None and not seg.recovered_on_load:
                raise tail.damage  # after a clean shutdown the broker reads it as it is, and fails
            if tail.damage is not None:
                note(
                    f"{tail.damage.line()}: the broker's recovery truncates the log here; read up to it"
                )
        for batch in seg.batches(0, end):
            try:
                batch.ensure_valid()
            except KafkalogError as e:
                raise e.located(path=str(seg.log_path), position=batch.position) from None
            yield seg, batch


# ------------------------------------------------------------------ which partitions, lag
@dataclass
class OffsetsTopicLayout:
    """How many partitions __consumer_offsets has, and where that comes from."""

    partitions: int
    source: str
    guessed: bool


def offsets_topic_layout(
    found: list[int], stated: int | None, image: MetadataImage | None = None
) -> OffsetsTopicLayout:
    """The partition count: stated, else the metadata log's (`image`, of the first log dir with
    one), else a guess from the partition numbers found."""
    if stated is not None:
        return OffsetsTopicLayout(stated, "stated with --offsets-partitions", False)
    topic = image.topics.get(CONSUMER_OFFSETS_TOPIC) if image is not None else None
    if topic is not None and topic.partitions:
        return OffsetsTopicLayout(
            len(topic.partitions), "the metadata log (__cluster_metadata-0)", False
        )
    if not found:
        return OffsetsTopicLayout(
            DEFAULT_OFFSETS_PARTITIONS,
            "a guess: no __consumer_offsets dir and no metadata "
            "log; offsets.topic.num.partitions' default",
            True,
        )
    n = max(found) + 1
    return OffsetsTopicLayout(
        n,
        f"a guess: the highest __consumer_offsets-N dir present is N={n - 1} and no metadata "
        f"log records the topic (state it with --offsets-partitions)",
        True,
    )


def metadata_image_of(paths: Iterable[Path]) -> MetadataImage | None:
    """The metadata image of the first log dir among `paths` (or the parent of a partition dir
    given) with a __cluster_metadata-0 that reads; None without one."""
    from kafkalog_cli.ops.metadata_image import read_metadata_image

    for p in paths:
        for d in (Path(p), Path(p).parent):
            if (d / "__cluster_metadata-0").is_dir():
                try:
                    return read_metadata_image(d).image
                except KafkalogError:
                    continue
    return None


def live_partitions(paths: Iterable[Path]) -> dict[TopicPartition, list[tuple[Path, Path]]]:
    """Every live partition dir of `paths` (log dirs or partition dirs), by topic-partition:
    [(log dir, partition dir)], several where several brokers' log dirs hold a copy."""
    out: dict[TopicPartition, list[tuple[Path, Path]]] = {}
    for log_dir, dirs in select_partition_dirs(paths, (PartitionDirKind.LIVE,)).groups.items():
        for d in dirs:
            tp = parse_partition_dir(d.name)
            if tp is not None:
                out.setdefault(tp, []).append((log_dir, d))
    return out


def open_partition(log_dir: Path, d: Path) -> Partition:
    """The partition with its entries in the log dir's root checkpoints (read leniently)."""
    part = Partition.open(d)
    assert part.topic_partition is not None  # a dir of live_partitions: its name parses
    part.checkpoints = LogDir(log_dir).checkpoints(strict=False).for_partition(part.topic_partition)
    return part


def offsets_partitions(
    live: dict[TopicPartition, list[tuple[Path, Path]]],
) -> dict[int, list[tuple[Path, Path]]]:
    """The __consumer_offsets partition dirs among `live`, by partition number."""
    return {tp.partition: dirs for tp, dirs in live.items() if tp.topic == CONSUMER_OFFSETS_TOPIC}


@dataclass
class LogEnd:
    offset: int
    source: str  # "high watermark" or "log end offset (...)"


def log_end_offsets(
    live: dict[TopicPartition, list[tuple[Path, Path]]],
    wanted: set[tuple[str, int]],
    warn: Callable[[str], None] | None = None,
) -> dict[tuple[str, int], LogEnd]:
    """What kafka-consumer-groups shows as LOG-END-OFFSET (ListOffsets latest, read_uncommitted:
    the high watermark) for each of `wanted` found among `live`; the largest where several log
    dirs hold a copy (the leader's is the highest)."""
    from kafkalog_cli.ops.list_offsets import (
        LATEST_TIMESTAMP,
        IsolationLevel,
        OffsetSpec,
        list_offsets,
    )

    out: dict[tuple[str, int], LogEnd] = {}
    for topic, partition in sorted(wanted):
        for log_dir, d in live.get(TopicPartition(topic, partition), ()):
            part = open_partition(log_dir, d)
            try:
                answer = list_offsets(
                    part, OffsetSpec(LATEST_TIMESTAMP), IsolationLevel.READ_UNCOMMITTED, warn
                )
            except KafkalogError as e:
                if warn is not None:
                    warn(f"{e.line()}: no log end offset for {topic}-{partition}")
                continue
            finally:
                part.close()
            now = out.get((topic, partition))
            if answer.offset is not None and (now is None or answer.offset > now.offset):
                out[(topic, partition)] = LogEnd(answer.offset, answer.source)
    return out


# ------------------------------------------------------------------ the whole job
@dataclass
class OffsetRow:
    """One line of kafka-consumer-groups --describe --offsets."""

    group: str
    topic: str | None
    partition: int | None
    commit: OffsetAndMetadata | None
    log_end: LogEnd | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.commit is None or self.log_end is None or self.commit.offset == -1:
            return None
        return self.log_end.offset - self.commit.offset

    def to_dict(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            **(self.commit.to_dict() if self.commit else {"committed_offset": None}),
            "log_end_offset": self.log_end.offset if self.log_end else None,
            "log_end_offset_source": self.log_end.source if self.log_end else None,
            "lag": self.lag,
            "consumer_id": self.consumer_id,
            "host": self.host,
            "client_id": self.client_id,
        }


MISSING = "-"


def offset_rows(g: Group, ends: dict[tuple[str, int], LogEnd]) -> list[OffsetRow]:
    """ConsumerGroupCommand.collectGroupsOffsets: members with partitions (most first), their
    partitions by number; then the committed partitions no member holds, without a consumer."""
    rows: list[OffsetRow] = []
    assigned: set[tuple[str, int]] = set()
    members = sorted(
        (m for m in g.members.values() if m.assignment), key=lambda m: -len(m.assignment)
    )
    for m in members:
        for t, p in sorted(m.assignment, key=lambda tp: (tp[1], tp[0])):
            assigned.add((t, p))
            rows.append(
                OffsetRow(
                    g.group_id,
                    t,
                    p,
                    g.offsets.get((t, p)),
                    ends.get((t, p)),
                    m.member_id,
                    m.client_host,
                    m.client_id,
                )
            )
    for t, p in sorted(set(g.offsets) - assigned, key=lambda tp: (tp[0], tp[1])):
        rows.append(
            OffsetRow(
                g.group_id, t, p, g.offsets[(t, p)], ends.get((t, p)), MISSING, MISSING, MISSING
            )
        )
    return rows


@dataclass
class GroupsReport:
    groups: list[Group]
    rows: dict[str, list[OffsetRow]]
    pending: list[tuple[int, str, str, int, OffsetAndMetadata]]
    layout: OffsetsTopicLayout | None
    partitions_read: list[str]


def describe_groups(
    paths: list[Path],
    group: str | None = None,
    stated_partitions: int | None = None,
    note: Callable[[str], None] | None = None,
) -> GroupsReport:
    """Replay the __consumer_offsets partitions in `paths` (only the group's with `group`), then
    the log end offsets of the committed partitions found in `paths`."""
    note = note or (lambda line: None)
    live = live_partitions(paths)
    by_number = offsets_partitions(live)
    image = None
    layout = None
    if group is not None:
        image = metadata_image_of(paths) if stated_partitions is None else None
        layout = offsets_topic_layout(sorted(by_number), stated_partitions, image)
        number = partition_for(group, layout.partitions)
        if layout.guessed:
            note(
                f"group {group!r} is in __consumer_offsets-{number} of {layout.partitions} partitions: "
                f"{layout.source}"
            )
        if number not in by_number:
            raise InputError(
                f"group {group!r} is in __consumer_offsets-{number} ({layout.partitions} partitions: "
                f"{layout.source}), which is not in the paths given",
                path=", ".join(str(p) for p in paths),
            )
        by_number = {number: by_number[number]}
    elif not by_number:
        raise InputError(
            "no __consumer_offsets partition dir here", path=", ".join(str(p) for p in paths)
        )
    replay = GroupCoordinatorReplay(group, note)
    read = []
    for number in sorted(by_number):
        copies = [open_partition(log_dir, d) for log_dir, d in by_number[number]]
        part = max(copies, key=lambda p: p.log_end_offset or 0)
        if len(copies) > 1:
            note(
                f"__consumer_offsets-{number} is in {len(copies)} log dirs: reading {part.directory}, the copy "
                f"with the highest log end offset"
            )
        try:
            replay.replay_partition(part)
        finally:
            for p in copies:
                p.close()
        read.append(str(part.directory))
    if image is None and any(
        m.assignment_topic_ids for g in replay.groups.values() for m in g.members.values()
    ):
        image = metadata_image_of(paths)  # KIP-848 assignments name topics by id
    groups = replay.finish(image.topic_names if image is not None else {})
    if group is not None:
        groups = [g for g in groups if g.group_id == group]
    wanted = {tp for g in groups for tp in g.offsets} | {
        tp for g in groups for m in g.members.values() for tp in m.assignment
    }
    ends = log_end_offsets(live, wanted, note)
    return GroupsReport(
        groups,
        {g.group_id: offset_rows(g, ends) for g in groups},
        replay.pending_offsets(),
        layout,
        read,
    )
