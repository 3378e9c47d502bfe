"""__consumer_offsets records: offset commits (key versions 0-1) and group metadata (key
version 2), decoded as Kafka 3.3.1's GroupMetadataManager does, and printed as
`kafka-dump-log --offsets-decoder` prints them (GroupMetadataManager.formatRecordKeyAndValue).

Where 3.3.1 throws (a missing key, bytes that do not parse), kafka-dump-log dies with a stack
trace; we raise InvalidRecordError with the Java exception's text instead. A key or value version
3.3.1 does not know (the records Kafka 3.4+ added: KIP-848 consumer groups, share groups, flexible
offset commits) is printed as Kafka 4.2 prints it (coordinator.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.coordinator import (
    Coordinator,
    UnknownVersionError,
    decode_coordinator_record,
    format_coordinator_record,
)
from kafkalog_cli.formats.internal.kafka_protocol import (
    ALL,
    NULL,
    BufferUnderflowError,
    Field,
    Readable,
    ScalaHashOrder,
    Struct,
    Versioned,
    bigint_hex,
    java_string_hash,
    read_struct,
    to_json,
    versions,
)

__all__ = [
    "OffsetCommitKey",
    "OffsetCommitValue",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "ConsumerAssignment",
    "format_offsets_record",
    "format_offsets_record_34",
    "decode_offsets_record",
    "read_key",
    "read_offset_commit_value",
    "read_group_metadata_value",
    "deserialize_assignment",
]

CONSUMER_PROTOCOL_TYPE = "consumer"

# Schemas transcribed from core/src/main/resources/common/message/*.json at 3.3.1 (none flexible).
_OFFSET_COMMIT_KEY = Struct(
    "OffsetCommitKey",
    versions("0-1"),
    None,
    (
        Field("group", "string", versions("0-1")),
        Field("topic", "string", versions("0-1")),
        Field("partition", "int32", versions("0-1")),
    ),
)
_GROUP_METADATA_KEY = Struct(
    "GroupMetadataKey", versions("2"), None, (Field("group", "string", versions("2")),)
)
_OFFSET_COMMIT_VALUE = Struct(
    "OffsetCommitValue",
    versions("0-3"),
    None,
    (
        Field("offset", "int64"),
        Field("leaderEpoch", "int32", versions("3+"), default=-1, ignorable=True),
        Field("metadata", "string"),
        Field("commitTimestamp", "int64"),
        Field("expireTimestamp", "int64", versions("1"), default=-1, ignorable=True),
    ),
)
_MEMBER_METADATA = (
    Field("memberId", "string"),
    Field(
        "groupInstanceId",
        "string",
        versions("3+"),
        nullable=versions("3+"),
        default=NULL,
        ignorable=True,
    ),
    Field("clientId", "string"),
    Field("clientHost", "string"),
    Field("rebalanceTimeout", "int32", versions("1+"), ignorable=True),
    Field("sessionTimeout", "int32"),
    Field("subscription", "bytes"),
    Field("assignment", "bytes"),
)
_GROUP_METADATA_VALUE = Struct(
    "GroupMetadataValue",
    versions("0-3"),
    None,
    (
        Field("protocolType", "string"),
        Field("generation", "int32"),
        Field("protocol", "string", nullable=ALL),
        Field("leader", "string", nullable=ALL),
        Field("currentStateTimestamp", "int64", versions("2+"), default=-1, ignorable=True),
        Field("members", "[]struct", versions("0-3"), fields=_MEMBER_METADATA),
    ),
)
# clients/src/main/resources/common/message/ConsumerProtocol{Assignment,Subscription}.json; 3.3.1
# reads every version with the version-0 layout's prefix (checkAssignmentVersion caps it at 1).
_ASSIGNMENT = Struct(
    "ConsumerProtocolAssignment",
    versions("0-1"),
    None,
    (
        Field(
            "assignedPartitions",
            "[]struct",
            fields=(Field("topic", "string"), Field("partitions", "[]int32")),
        ),
        Field("userData", "bytes", nullable=ALL, default=NULL, zero_copy=True),
    ),
)
_SUBSCRIPTION_V0 = Struct(
    "ConsumerProtocolSubscription",
    versions("0-1"),
    None,
    (
        Field("topics", "[]string"),
        Field("userData", "bytes", nullable=ALL, default=NULL, zero_copy=True),
        Field(
            "ownedPartitions",
            "[]struct",
            versions("1+"),
            ignorable=True,
            fields=(
                Field("topic", "string", versions("1+")),
                Field("partitions", "[]int32", versions("1+")),
            ),
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class OffsetCommitKey(Versioned):
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey(Versioned):
    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue(Versioned):
    offset: int
    leader_epoch: int  # -1: none (NO_PARTITION_LEADER_EPOCH)
    metadata: str
    commit_timestamp: int
    expire_timestamp: int  # -1 unless version 1


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int  # Kafka uses session_timeout for version 0
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue(Versioned):
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # -1: unknown
    members: list[MemberMetadata] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConsumerAssignment:
    """ConsumerProtocol.Assignment: partitions as (topic, partition), in wire order."""

    partitions: list[tuple[str, int]]
    user_data: bytes | None


def _java_error(kind: str, message: str, r: Readable | None = None) -> InvalidRecordError:
    return InvalidRecordError(f"{kind}: {message}", position=None if r is None else r.position)


def read_key(key: bytes | memoryview) -> OffsetCommitKey | GroupMetadataKey:
    """GroupMetadataManager.readMessageKey."""
    r = Readable(key)
    version = r.read_int16()
    if 0 <= version <= 1:
        d = read_struct(r, _OFFSET_COMMIT_KEY, version)
        return OffsetCommitKey(version, d["group"], d["topic"], d["partition"])
    if version == 2:
        return GroupMetadataKey(version, read_struct(r, _GROUP_METADATA_KEY, version)["group"])
    raise UnknownVersionError(
        f"java.lang.IllegalStateException: Unknown group metadata message version: {version}",
        position=r.position,
    )


def _read_value(
    value: bytes | memoryview, schema: Struct, kind: str, flexible: bool = False
) -> tuple[int, dict[str, Any]]:
    """A value's int16 version, then its fields; 3.3.1 knows versions 0-3 of both values, 3.4.1
    to 3.7 also the flexible version 4 (`flexible`: KIP-915, OffsetCommitValue.json and
    GroupMetadataValue.json "validVersions": "0-4", "flexibleVersions": "4+")."""
    r = Readable(value)
    version = r.read_int16()
    if not 0 <= version <= (4 if flexible else 3):
        raise UnknownVersionError(
            f"java.lang.IllegalStateException: Unknown {kind} message version: {version}",
            position=r.position,
        )
    if version == 4:
        from kafkalog_cli.formats.internal.schemas import MESSAGES

        schema = MESSAGES[schema.name]  # 4.2's, the same as 3.5's for these two values
    return version, read_struct(r, schema, version)


def read_offset_commit_value(
    value: bytes | memoryview, flexible: bool = False
) -> OffsetCommitValue:
    """GroupMetadataManager.readOffsetMessageValue (for a non-null value)."""
    version, d = _read_value(value, _OFFSET_COMMIT_VALUE, "offset", flexible)
    return OffsetCommitValue(
        version,
        d["offset"],
        d["leaderEpoch"],
        d["metadata"],
        d["commitTimestamp"],
        d["expireTimestamp"],
    )


def read_group_metadata_value(
    value: bytes | memoryview, flexible: bool = False
) -> GroupMetadataValue:
    """The GroupMetadataValue message (for a non-null value)."""
    version, d = _read_value(value, _GROUP_METADATA_VALUE, "group metadata", flexible)
    members = [
        MemberMetadata(
            m["memberId"],
            m["groupInstanceId"],
            m["clientId"],
            m["clientHost"],
            m["sessionTimeout"] if version == 0 else m["rebalanceTimeout"],
            m["sessionTimeout"],
            m["subscription"],
            m["assignment"],
        )
        for m in d["members"]
    ]
    return GroupMetadataValue(
        version,
        d["protocolType"],
        d["generation"],
        d["protocol"],
        d["leader"],
        d["currentStateTimestamp"],
        members,
    )


def deserialize_assignment(data: bytes) -> ConsumerAssignment:
    """ConsumerProtocol.deserializeAssignment(ByteBuffer)."""
    r = Readable(data)
    try:
        version = r.read_int16()
    except BufferUnderflowError as e:
        raise _java_error(
            "org.apache.kafka.common.protocol.types.SchemaException",
            "Buffer underflow while parsing consumer protocol's header",
        ) from e
    if version < 0:
        raise _java_error(
            "org.apache.kafka.common.protocol.types.SchemaException",
            f"Unsupported assignment version: {version}",
        )
    try:
        d = read_struct(r, _ASSIGNMENT, min(version, 1))
    except BufferUnderflowError as e:
        raise _java_error(
            "org.apache.kafka.common.protocol.types.SchemaException",
            "Buffer underflow while parsing consumer protocol's assignment",
        ) from e
    parts = [(tp["topic"], p) for tp in d["assignedPartitions"] for p in tp["partitions"]]
    return ConsumerAssignment(parts, d["userData"])


def _check_subscriptions(members: list[MemberMetadata]) -> None:
    """GroupMetadata.computeSubscribedTopics, run by loadGroup for consumer groups: a buffer
    underflow is logged and ignored, any other parse failure escapes and kills kafka-dump-log."""
    for m in members:
        r = Readable(m.subscription)
        try:
            r.read_int16()
            read_struct(r, _SUBSCRIPTION_V0, 0)
        except BufferUnderflowError:
            return


def _loaded_members(group_id: str, value: GroupMetadataValue) -> list[MemberMetadata]:
    """GroupMetadata.loadGroup: members go into a Scala mutable.HashMap keyed by member id, and
    `allMemberMetadata` lists them in that map's iteration order, not in record order."""
    table = ScalaHashOrder()
    static: set[str] = set()
    supported = 0  # supportedProtocols(protocol): every member supports exactly the one protocol
    for m in value.members:
        if m.group_instance_id is not None:
            if m.group_instance_id in static:
                raise _java_error(
                    "java.lang.IllegalStateException",
                    f"Static member with groupInstanceId={m.group_instance_id} cannot be added to "
                    f"group {group_id} since it is already a member",
                )
            static.add(m.group_instance_id)
        if supported != len(table):  # GroupMetadata.add: assert(supportsProtocols(...))
            raise _java_error("java.lang.AssertionError", "assertion failed")
        table.put(m.member_id, java_string_hash(m.member_id), m)
        supported += 1
    members: list[MemberMetadata] = table.values()
    if value.protocol_type == CONSUMER_PROTOCOL_TYPE and members and value.protocol is not None:
        _check_subscriptions(members)
    return members


def _format_assignment(protocol_type: str, member: MemberMetadata) -> str:
    if protocol_type == CONSUMER_PROTOCOL_TYPE:
        a = deserialize_assignment(member.assignment)
        partitions = (
            "[" + ", ".join(f"{t}-{p}" for t, p in a.partitions) + "]"
        )  # List<TopicPartition>.toString
        user_data = bigint_hex(a.user_data) if a.user_data is not None else ""
        return (
            f"{member.member_id}={partitions}:{user_data}"
            if user_data
            else f"{member.member_id}={partitions}"
        )
    return f"{member.member_id}={bigint_hex(member.assignment)}"


def format_offsets_record(
    key: bytes | memoryview | None, value: bytes | memoryview | None, offset: int = -1
) -> tuple[str | None, str | None]:
    """(key text, payload text) exactly as kafka-dump-log 3.3.1 --offsets-decoder prints them,
    or for a record 3.3.1 does not know as 4.2 prints it (`offset` is in 4.2's error lines).
    Raises InvalidRecordError where 3.3.1 throws (and so stops dumping)."""
    if key is None:
        raise _java_error(
            "org.apache.kafka.common.KafkaException",
            "Failed to decode message using offset topic decoder (message had a missing key)",
        )
    try:
        return _format_331(key, value)
    except UnknownVersionError:
        return format_coordinator_record(Coordinator.GROUP, key, value, offset)


def format_offsets_record_34(
    key: bytes | memoryview | None, value: bytes | memoryview | None, offset: int = -1
) -> tuple[str | None, str | None]:
    """(key text, payload text) as kafka-dump-log 3.4.1 to 3.7 --offsets-decoder prints them:
    3.3.1's text, values of version 0 to 4 (4 the flexible one), and a key of a version other than
    0-2 as `unknown::version=N` with no payload (GroupMetadataManager.readMessageKey's UnknownKey,
    KIP-915). A value of another version throws (IllegalStateException): an InvalidRecordError,
    the dump stops."""
    if key is None:
        return format_offsets_record(key, value, offset)  # the KafkaException 3.3.1 has too
    r = Readable(key)
    version = r.read_int16()
    if not 0 <= version <= 2:
        return f"unknown::version={version}", None
    return _format_331(key, value, flexible=True)


def _format_331(
    key: bytes | memoryview, value: bytes | memoryview | None, flexible: bool = False
) -> tuple[str, str]:
    k = read_key(key)
    if isinstance(k, OffsetCommitKey):
        key_text = f"offset_commit::group={k.group},partition={k.topic}-{k.partition}"
        if value is None:
            return key_text, "<DELETE>"
        v = read_offset_commit_value(value, flexible)
        if not v.metadata:
            return key_text, f"offset={v.offset}"
        return key_text, f"offset={v.offset},metadata={v.metadata}"
    key_text = f"group_metadata::group={k.group}"
    if value is None:
        return key_text, "<DELETE>"
    g = read_group_metadata_value(value, flexible)
    members = _loaded_members(k.group, g)
    # loadGroup: an empty protocolType becomes None; the first member sets it back to its own
    protocol_type = g.protocol_type
    assignment = "{" + ",".join(_format_assignment(protocol_type, m) for m in members) + "}"
    return key_text, to_json(
        {
            "protocolType": protocol_type,
            "protocol": g.protocol,
            "generationId": g.generation,
            "assignment": assignment,
        }
    )


def decode_offsets_record(
    key: bytes | memoryview | None, value: bytes | memoryview | None
) -> dict[str, Any]:
    """Structured form for our JSON output (snake_case keys). `type` is "offset_commit" or
    "group_metadata"; `value` is None for a tombstone. Members keep their record order here."""
    if key is None:
        raise InvalidRecordError("__consumer_offsets record without a key")
    try:
        return _decode_331(key, value)
    except UnknownVersionError:
        return decode_coordinator_record(Coordinator.GROUP, key, value)


def _decode_331(key: bytes | memoryview, value: bytes | memoryview | None) -> dict[str, Any]:
    k = read_key(key)
    if isinstance(k, OffsetCommitKey):
        v: Any = None if value is None else read_offset_commit_value(value)
        return {
            "type": "offset_commit",
            "key": asdict(k),
            "value": None if v is None else asdict(v),
        }
    g = None if value is None else read_group_metadata_value(value)
    out: dict[str, Any] = {"type": "group_metadata", "key": asdict(k), "value": None}
    if g is not None:
        gv = asdict(g)
        for m, raw in zip(gv["members"], g.members):
            m["subscription"] = raw.subscription.hex()
            m["assignment"] = raw.assignment.hex()
            if g.protocol_type == CONSUMER_PROTOCOL_TYPE:
                try:
                    a = deserialize_assignment(raw.assignment)
                    m["assigned_partitions"] = [
                        {"topic": t, "partition": p} for t, p in a.partitions
                    ]
                    m["user_data"] = None if a.user_data is None else a.user_data.hex()
                except InvalidRecordError:
                    pass
        out["value"] = gv
    return out
