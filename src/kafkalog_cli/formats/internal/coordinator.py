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


class Coordinator(enum.Enum):
    """Which coordinator wrote the topic, and so which record types it holds."""

    GROUP = GROUP_RECORD_TYPES
    SHARE = SHARE_RECORD_TYPES
    TRANSACTION = TRANSACTION_RECORD_TYPES
    # Kafka 3.9's CoordinatorRecordSerde: the consumer group records, types 0-8 (its share group
    # schemas exist, its serde does not read them). Their schemas are 4.2's, checked field by field
    # against 3.9.0-rc3's JSON, but for the tagged fields 3.9 does not have (_NOT_IN_39)
    GROUP_39 = {t: n for t, n in GROUP_RECORD_TYPES.items() if t <= 8}

    def schemas(self, record_type: int) -> tuple[str, Struct, Struct] | None:
        """(record name, key schema, value schema) of a record type, or None if unknown."""
        name = self.value.get(record_type)
        if name is None:
            return None
        key, value = MESSAGES[name + "Key"], MESSAGES[name + "Value"]
        if self is Coordinator.GROUP_39 and name + "Value" in _NOT_IN_39:
            gone = _NOT_IN_39[name + "Value"]
            value = replace(value, fields=tuple(f for f in value.fields if f.name not in gone))
        return name, key, value


# tagged fields added after 3.9: a 3.9 reader skips them as unknown tags, its JSON does not show them
_NOT_IN_39 = {"ConsumerGroupMetadataValue": {"metadataHash"}}


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
    coordinator: Coordinator, key: bytes | memoryview, value: bytes | memoryview | None
) -> CoordinatorRecord:
    """CoordinatorRecordSerde.deserialize. Raises UnknownRecordTypeError, or InvalidRecordError
    with the RuntimeException's message."""
    r = Readable(key)
    record_type = _read_version(r, "key")
    known = coordinator.schemas(record_type)
    if known is None:
        raise UnknownRecordTypeError(record_type)
    name, key_schema, value_schema = known
    key_fields = _read_message(r, key_schema, record_type, "key")
    kafka_39 = coordinator is Coordinator.GROUP_39
    if value is None:
        return CoordinatorRecord(
            record_type, name, key_schema, key_fields, value_schema, None, None, kafka_39
        )
    rv = Readable(value)
    version = _read_version(rv, "value")
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
) -> tuple[str | None, str | None]:
    """(key text, payload text) as kafka-dump-log 4.2 prints them with --offsets-decoder,
    --share-group-state-decoder or --transaction-log-decoder (3.9's --offsets-decoder with
    Coordinator.GROUP_39). A record without a key is an InvalidRecordError: Kafka throws and
    stops there."""
    if key is None:
        decoder = (
            "offset topic decoder"
            if coordinator is Coordinator.GROUP_39
            else "the specified decoder"
        )
        raise InvalidRecordError(
            f"Failed to decode message at offset {offset} using {decoder} "
            f"(message had a missing key)"
        )
    try:
        rec = deserialize(coordinator, key, value)
    except UnknownRecordTypeError as e:
        return f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
    except InvalidRecordError as e:
        return f"Error at offset {offset}, skipping. {e.message}", None
    key_text = to_json({"type": str(rec.record_type), "data": rec.key_json()})
    if rec.value is None:
        return key_text, "<DELETE>"
    return key_text, to_json({"version": str(rec.value_version), "data": rec.value_json()})


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
