"""Coordinator records as Kafka 4.2 reads and prints them: __consumer_offsets (the group
coordinator), __share_group_state (the share coordinator) and __transaction_state (the
transaction coordinator).

Every such record is `key: int16 record type | key fields`, `value: int16 version | value
fields` (CoordinatorRecordSerde); the record type picks the key and value schema
(schemas.GROUP_RECORD_TYPES ...). kafka-dump-log 4.2 prints the key as
`{"type":"<record type>","data":<key as JSON>}` and the value as
`{"version":"<version>","data":<value as JSON>}` (`<DELETE>` for a tombstone); a record it cannot
read prints one `Unknown record type ...` or `Error at offset ...` line in the key's place.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.kafka_protocol import (
    BufferUnderflowError,
    Readable,
    Struct,
    json_node,
    read_struct,
    to_json,
)
from kafkalog_cli.formats.internal.schemas import (
    GROUP_RECORD_TYPES,
    MESSAGES,
    SHARE_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
)

__all__ = [
    "Coordinator",
    "CoordinatorRecord",
    "UnknownRecordTypeError",
    "UnknownVersionError",
    "format_coordinator_record",
    "decode_coordinator_record",
    "snake_case",
]

CONSUMER_PROTOCOL_TYPE = "consumer"


class _OwnTypes(dict):
    """A record-type table equal only to itself: two releases' readers may know the same record
    types, and an Enum member whose value equals an earlier one's would be an alias of it."""

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = None


class Coordinator(enum.Enum):
    """Which coordinator wrote the topic, and so which record types it holds."""

    GROUP = GROUP_RECORD_TYPES
    SHARE = SHARE_RECORD_TYPES
    TRANSACTION = TRANSACTION_RECORD_TYPES
    # Kafka 3.8 and 3.9's CoordinatorRecordSerde: the consumer group records, types 0-8 (3.9's
    # share group schemas exist, its serde does not read them). Their schemas are 4.2's, checked
    # field by field against 3.8.0's and 3.9.0-rc3's JSON, but for the fields in _NOT_IN[GROUP_39]
    GROUP_39 = {t: n for t, n in GROUP_RECORD_TYPES.items() if t <= 8}
    # Kafka 4.0's GroupCoordinatorRecordSerde: types 0-16 (the share group records of KIP-932's
    # early access, the regular expressions of KIP-848); 4.2's schemas checked field by field against
    # 4.0's JSON (4ae681446f), but for the fields in _NOT_IN[GROUP_40]
    GROUP_40 = {t: n for t, n in GROUP_RECORD_TYPES.items() if t <= 16}
    # Kafka 4.0's ShareCoordinatorRecordSerde: 4.2's record types, 4.0's value schemas (_SHARE_40)
    SHARE_40 = _OwnTypes(SHARE_RECORD_TYPES)

    @property
    def kafka_39_json(self) -> bool:
        """Written by the 3.8 to 4.0 kafka-dump-log (its parsers and the generated JsonConverters:
        json_node's struct_tag_defaults)."""
        return self in (Coordinator.GROUP_39, Coordinator.GROUP_40, Coordinator.SHARE_40)

    def schemas(self, record_type: int) -> tuple[str, Struct, Struct] | None:
        """(record name, key schema, value schema) of a record type, or None if unknown."""
        name = self.value.get(record_type)
        if name is None:
            return None
        key, value = MESSAGES[name + "Key"], MESSAGES[name + "Value"]
        if self is Coordinator.SHARE_40:
            value = _SHARE_40[name + "Value"]
        gone = _NOT_IN.get(self.name, {}).get(name + "Value")
        if gone:
            value = _without(value, gone)
        return name, key, value


# the value fields a release's schema does not have ("a.b": field b of struct field a): a tagged one
# its reader skips as an unknown tag and its JSON does not show; another changes the layout it reads
_NOT_IN = {
    "GROUP_39": {"ConsumerGroupMetadataValue": {"metadataHash"}},
    "GROUP_40": {
        "ConsumerGroupMetadataValue": {"metadataHash"},
        # 4.0: InitializedTopics of {TopicId, TopicName, Partitions}, DeletingTopics
        "ShareGroupStatePartitionMetadataValue": {
            "initializingTopics",
            "initializedTopics.createTimestamp",
        },
    },
}


def _share_value_40(name: str, *fields: str) -> Struct:
    """A share coordinator value as 4.0 has it (ShareSnapshotValue.json, ShareUpdateValue.json at
    4ae681446f): SnapshotEpoch a uint16, then `fields` of 4.2's (4.1 made the epoch an int32 and
    added the timestamps and deliveryCompleteCount)."""
    newest = MESSAGES[name]
    by_name = {f.name: f for f in newest.fields}
    epoch = replace(by_name["snapshotEpoch"], type="uint16")
    return replace(newest, fields=(epoch, *(by_name[f] for f in fields)))


_SHARE_40 = {
    "ShareSnapshotValue": _share_value_40(
        "ShareSnapshotValue", "stateEpoch", "leaderEpoch", "startOffset", "stateBatches"
    ),
    "ShareUpdateValue": _share_value_40(
        "ShareUpdateValue", "leaderEpoch", "startOffset", "stateBatches"
    ),
}


def _without(struct: Struct, gone: set[str]) -> Struct:
    """`struct` without the fields named in `gone` (dotted names reach into struct fields)."""
    fields = []
    for f in struct.fields:
        if f.name in gone:
            continue
        inner = {g.split(".", 1)[1] for g in gone if g.startswith(f.name + ".")}
        if inner:
            f = replace(
                f, fields=_without(Struct(f.name, f.versions, None, f.fields), inner).fields
            )
        fields.append(f)
    return replace(struct, fields=tuple(fields))


class UnknownVersionError(InvalidRecordError):
    """A key or value version Kafka 3.3.1's reader does not know (it throws
    IllegalStateException): a record of a newer Kafka, which 4.2 reads."""


class UnknownRecordTypeError(InvalidRecordError):
    """CoordinatorLoader.UnknownRecordTypeException: a record type this coordinator does not know."""

    def __init__(self, record_type: int):
        super().__init__(f"Unknown record type {record_type}")
        self.record_type = record_type


@dataclass(frozen=True)
class CoordinatorRecord:
    """One decoded record: `key` and `value` hold every field read (camelCase, uuids as 16
    bytes); `value` is None for a tombstone."""

    record_type: int
    name: str  # e.g. "ConsumerGroupMemberMetadata"
    key_schema: Struct
    key: dict[str, Any]
    value_schema: Struct
    value_version: int | None
    value: dict[str, Any] | None
    kafka_39: bool = (
        False  # JSON as 3.9's generated converters write it (json_node's struct_tag_defaults)
    )

    def key_json(self) -> dict[str, Any]:
        return json_node(
            self.key_schema, self.key, self.record_type, struct_tag_defaults=self.kafka_39
        )

    def value_json(self) -> dict[str, Any] | None:
        """The value as the record's JsonConverter writes it; a classic group's consumer
        protocol members get their subscription and assignment decoded (DumpLogSegments'
        prepareGroupMetadataValue)."""
        if self.value is None or self.value_version is None:
            return None
        node = json_node(
            self.value_schema, self.value, self.value_version, struct_tag_defaults=self.kafka_39
        )
        if self.name == "GroupMetadata" and node.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
            for member in node.get("members") or ():
                for field, schema in (
                    ("subscription", "ConsumerProtocolSubscription"),
                    ("assignment", "ConsumerProtocolAssignment"),
                ):
                    if isinstance(member.get(field), bytes):
                        member[field] = _embedded(member[field], MESSAGES[schema])
        return node


def _embedded(data: bytes, schema: Struct) -> Any:
    """An int16 version, then `schema` at that version, as JSON; the bytes themselves where
    that does not read (Kafka swallows the RuntimeException and keeps them)."""
    r = Readable(data)
    try:
        version = r.read_int16()
        return json_node(schema, read_struct(r, schema, version), version)
    except InvalidRecordError:
        return data


def _java_message(e: InvalidRecordError) -> str:
    """Throwable.getMessage() of the Java exception our error stands for: the text after
    `java.x.Y: `, or "null" for an exception without a message (BufferUnderflowException)."""
    m = re.fullmatch(r"(?:[a-z]+\.)+[A-Za-z]+(?:: (.*))?", e.message, re.S)
    if m is None:
        return e.message
    return "null" if m.group(1) is None else m.group(1)


def _read_version(r: Readable, which: str) -> int:
    try:
        return r.read_int16()
    except BufferUnderflowError:
        raise InvalidRecordError(f"Could not read version from {which}'s buffer.") from None


def _read_message(r: Readable, schema: Struct, version: int, which: str) -> dict[str, Any]:
    try:
        return read_struct(r, schema, version)
    except InvalidRecordError as e:
        raise InvalidRecordError(
            f"Could not read record with version {version} from {which}'s buffer due to: "
            f"{_java_message(e)}.",
            position=e.position,
        ) from None


def deserialize(
    coordinator: Coordinator,
    key: bytes | memoryview,
    value: bytes | memoryview | None,
    check_value_version: bool = False,
) -> CoordinatorRecord:
    """CoordinatorRecordSerde.deserialize. Raises UnknownRecordTypeError, or InvalidRecordError
    with the RuntimeException's message. `check_value_version`: a value version outside its
    schema's valid versions is an UnknownRecordVersionException (4.0 and later)."""
    r = Readable(key)
    record_type = _read_version(r, "key")
    known = coordinator.schemas(record_type)
    if known is None:
        raise UnknownRecordTypeError(record_type)
    name, key_schema, value_schema = known
    key_fields = _read_message(r, key_schema, record_type, "key")
    kafka_39 = coordinator.kafka_39_json
    if value is None:
        return CoordinatorRecord(
            record_type, name, key_schema, key_fields, value_schema, None, None, kafka_39
        )
    rv = Readable(value)
    version = _read_version(rv, "value")
    low, high = value_schema.valid or (0, -1)
    if check_value_version and not (low <= version and (high is None or version <= high)):
        raise InvalidRecordError(
            f"Found an unknown record version {version} for {record_type} type"
        )
    return CoordinatorRecord(
        record_type,
        name,
        key_schema,
        key_fields,
        value_schema,
        version,
        _read_message(rv, value_schema, version, "value"),
        kafka_39,
    )


def format_coordinator_record(
    coordinator: Coordinator,
    key: bytes | memoryview | None,
    value: bytes | memoryview | None,
    offset: int,
    check_value_version: bool = False,
) -> tuple[str | None, str | None]:
    """(key text, payload text) as kafka-dump-log 4.2 prints them with --offsets-decoder,
    --share-group-state-decoder or --transaction-log-decoder (3.8 and 3.9's --offsets-decoder with
    Coordinator.GROUP_39, 4.0's with GROUP_40; `check_value_version` from 4.0 on, see deserialize).
    A record without a key is an InvalidRecordError: Kafka throws and stops there."""
    if key is None:
        decoder = (
            "share group state topic decoder"
            if coordinator is Coordinator.SHARE_40
            else "offset topic decoder"
            if coordinator.kafka_39_json
            else "the specified decoder"
        )
        raise InvalidRecordError(
            f"Failed to decode message at offset {offset} using {decoder} "
            f"(message had a missing key)"
        )
    try:
        rec = deserialize(coordinator, key, value, check_value_version)
    except UnknownRecordTypeError as e:
        return f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
    except InvalidRecordError as e:
        return f"Error at offset {offset}, skipping. {e.message}", None
    key_text = to_json({"type": str(rec.record_type), "data": rec.key_json()})
    if rec.value is None:
        return key_text, "<DELETE>"
    # 4.0's ShareGroupStateMessageParser labels the value's version "type" too (its jsonString)
    label = "type" if coordinator is Coordinator.SHARE_40 else "version"
    return key_text, to_json({label: str(rec.value_version), "data": rec.value_json()})


def snake_case(name: str) -> str:
    """ConsumerGroupMemberMetadata -> consumer_group_member_metadata."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def decode_coordinator_record(
    coordinator: Coordinator, key: bytes | memoryview | None, value: bytes | memoryview | None
) -> dict[str, Any]:
    """Structured form for our JSON output: `type` (the record name in snake_case),
    `record_type`, `key` and `value` as Kafka's JsonConverters write them (camelCase; bytes stay
    bytes), `version` of the value; `value` is None for a tombstone. A record Kafka skips (an
    unknown record type, bytes that do not read) is `{"error": <the line Kafka prints>}`; one
    without a key raises InvalidRecordError, as Kafka stops there."""
    if key is None:
        raise InvalidRecordError("coordinator record without a key")
    try:
        rec = deserialize(coordinator, key, value)
    except UnknownRecordTypeError as e:
        return {"error": f"Unknown record type {e.record_type}, skipping."}
    except InvalidRecordError as e:
        return {"error": f"Error, skipping. {e.message}"}
    return {
        "type": snake_case(rec.name),
        "record_type": rec.record_type,
        "key": rec.key_json(),
        "version": rec.value_version,
        "value": rec.value_json(),
    }
