"""__transaction_state records, decoded as Kafka 3.3.1's TransactionLog does and printed as
`kafka-dump-log --transaction-log-decoder` prints them (TransactionLog.formatRecordKeyAndValue).

Where 3.3.1 throws (null key, unknown state id, bad bytes), kafka-dump-log dies; we raise
InvalidRecordError with the Java exception's text instead. A key or value version 3.3.1 does not
know (the flexible value version 1 of KIP-890) is printed as Kafka 4.2 prints it (coordinator.py).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, NoReturn

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.coordinator import (
    Coordinator,
    UnknownVersionError,
    decode_coordinator_record,
    format_coordinator_record,
)
from kafkalog_cli.formats.internal.kafka_protocol import (
    Field,
    Readable,
    ScalaHashOrder,
    Struct,
    Versioned,
    java_string_hash,
    read_struct,
    to_int32,
    versions,
)

__all__ = [
    "TransactionState",
    "TransactionLogKey",
    "TransactionLogValue",
    "format_transaction_record",
    "format_transaction_record_39",
    "format_transaction_record_40",
    "decode_transaction_record",
    "read_key",
    "read_value",
    "read_value_v0_or_v1",
]

# core/src/main/resources/common/message/TransactionLog{Key,Value}.json at 3.3.1 (version 0 only).
_KEY = Struct(
    "TransactionLogKey", versions("0"), None, (Field("transactionalId", "string", versions("0")),)
)
_V0 = versions("0")
_VALUE = Struct(
    "TransactionLogValue",
    _V0,
    None,
    (
        Field("producerId", "int64", _V0),
        Field("producerEpoch", "int16", _V0),
        Field("transactionTimeoutMs", "int32", _V0),
        Field("transactionStatus", "int8", _V0),
        Field(
            "transactionPartitions",
            "[]struct",
            _V0,
            nullable=_V0,
            fields=(Field("topic", "string", _V0), Field("partitionIds", "[]int32", _V0)),
        ),
        Field("transactionLastUpdateTimestampMs", "int64", _V0),
        Field("transactionStartTimestampMs", "int64", _V0),
    ),
)


class TransactionState(enum.IntEnum):
    """kafka.coordinator.transaction.TransactionState; `str()` is the Scala object's name."""

    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6
    PrepareEpochFence = 7

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TransactionLogKey(Versioned):
    transactional_id: str


@dataclass(frozen=True)
class TransactionLogValue(Versioned):
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    # (topic, [partition ids]) in wire order; None when the record holds a null array
    transaction_partitions: list[tuple[str, list[int]]] | None = field(default_factory=list)
    transaction_last_update_timestamp_ms: int = -1
    transaction_start_timestamp_ms: int = -1
    # the tagged fields of version 1 (KIP-890), their defaults in version 0. Kafka 4.0 to 4.2 write
    # only clientTransactionVersion (TransactionLog.valueToBytes); the producer ids are written
    # from KAFKA-20310 on, so -1 here does not mean the producer id never rotated
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0

    @property
    def epoch_bump_at_completion(self) -> bool:
        """TransactionVersion.supportsEpochBump: a client on transactions version 2 (its markers
        carry the epoch after the bump, TransactionMetadata.prepareAbortOrCommit)."""
        return self.client_transaction_version >= 2


def _keyless() -> NoReturn:
    """The NullPointerException TransactionLog.readTxnRecordKey throws on a record without a key."""
    raise InvalidRecordError(
        "java.lang.NullPointerException: __transaction_state record without a key"
    )


def read_key(key: bytes | memoryview | None) -> TransactionLogKey:
    """TransactionLog.readTxnRecordKey."""
    if key is None:
        _keyless()
    r = Readable(key)
    version = r.read_int16()
    if version != 0:
        raise UnknownVersionError(
            f"java.lang.IllegalStateException: Unknown version {version} from the "
            f"transaction log message",
            position=0,
        )
    return TransactionLogKey(version, read_struct(r, _KEY, version)["transactionalId"])


def read_value(value: bytes | memoryview) -> TransactionLogValue:
    """TransactionLog.readTxnRecordValue (for a non-null value)."""
    r = Readable(value)
    version = r.read_int16()
    if version != 0:
        raise UnknownVersionError(
            f"java.lang.IllegalStateException: Unknown version {version} from the "
            f"transaction log message value",
            position=0,
        )
    return _value_of(version, read_struct(r, _VALUE, version))


def _value_of(version: int, d: dict[str, Any]) -> TransactionLogValue:
    """TransactionLogValue from its read fields (any version), its status checked."""
    status = d["transactionStatus"]
    if not 0 <= status <= 7:
        raise InvalidRecordError(
            f"java.lang.IllegalStateException: Unknown transaction state id {status} "
            f"from the transaction status message"
        )
    parts = d["transactionPartitions"]
    return TransactionLogValue(
        version,
        d["producerId"],
        d["producerEpoch"],
        d["transactionTimeoutMs"],
        TransactionState(status),
        None if parts is None else [(p["topic"], list(p["partitionIds"])) for p in parts],
        d["transactionLastUpdateTimestampMs"],
        d["transactionStartTimestampMs"],
        d.get("previousProducerId", -1),
        d.get("nextProducerId", -1),
        d.get("clientTransactionVersion", 0),
    )


def read_value_v0_or_v1(value: bytes | memoryview) -> TransactionLogValue:
    """TransactionLog.readTxnRecordValue as Kafka 4.x reads it: version 0, or the flexible version
    1 (KIP-890, TransactionLogValue.json "validVersions": "0-1", "flexibleVersions": "1+"), which
    brokers write once the finalized transaction.version is at least 1. 3.3.1 knows only 0
    (read_value); the tagged fields of 1 (previous/next producer id, clientTransactionVersion)
    do not change what a transaction's state is."""
    from kafkalog_cli.formats.internal.schemas import MESSAGES

    r = Readable(value)
    version = r.read_int16()
    if version == 0:
        return read_value(value)
    if version != 1:
        raise UnknownVersionError(
            f"java.lang.IllegalStateException: Unknown version {version} from the "
            f"transaction log message value",
            position=0,
        )
    return _value_of(version, read_struct(r, MESSAGES["TransactionLogValue"], version))


def _topic_partition_hash(topic: str, partition: int) -> int:
    """TopicPartition.hashCode."""
    return to_int32(31 * (31 + partition) + java_string_hash(topic))


def _partitions_in_set_order(value: TransactionLogValue) -> list[str]:
    """TransactionMetadata.topicPartitions is a Scala mutable.HashSet filled by one `++=` per
    topic (each a `.toSet` of that topic's partitions); its iteration order is what prints."""
    if value.state == TransactionState.Empty:
        return []
    if value.transaction_partitions is None:
        raise InvalidRecordError("java.lang.NullPointerException: null transactionPartitions")
    table = ScalaHashOrder()
    for topic, ids in value.transaction_partitions:
        distinct = list(dict.fromkeys(ids))
        table.size_hint(len(distinct))
        # Set1..Set4 are added one by one (with growth checks); a larger immutable.HashSet is
        # added without them. Ties on equal hash codes keep insertion order (not the trie's).
        grow = len(distinct) <= 4
        for p in distinct:
            table.put((topic, p), _topic_partition_hash(topic, p), grow=grow)
    return [f"{t}-{p}" for t, p in table.keys()]


def format_transaction_record(
    key: bytes | memoryview | None, value: bytes | memoryview | None, offset: int = -1
) -> tuple[str | None, str | None]:
    """(key text, payload text) exactly as kafka-dump-log 3.3.1 --transaction-log-decoder prints
    them, or for a record 3.3.1 does not know as 4.2 prints it."""
    try:
        return _format_331(key, value)
    except UnknownVersionError:
        return format_coordinator_record(Coordinator.TRANSACTION, key, value, offset)


def format_transaction_record_39(
    key: bytes | memoryview | None,
    value: bytes | memoryview | None,
    offset: int = -1,
    transaction_version_levels: range | None = None,
) -> tuple[str | None, str | None]:
    """(key text, payload text) as kafka-dump-log 3.4.1 to 4.0 --transaction-log-decoder prints
    them: 3.3.1's text, values of version 0 or 1 (the flexible one), and a key of an unknown
    version as `unknown::version=N` with no payload (TransactionLog.readTxnRecordKey's UnknownKey).
    A value of another version throws (IllegalStateException): an InvalidRecordError, the dump
    stops. `transaction_version_levels`: the TransactionVersion feature levels the release knows
    (4.0: TV_0 to TV_2), where a value's clientTransactionVersion outside them throws too
    (TransactionVersion.fromFeatureLevel's IllegalArgumentException)."""
    if key is None:
        _keyless()  # the NullPointerException 3.3.1 has too
    r = Readable(key)
    version = r.read_int16()
    if version != 0:
        return f"unknown::version={version}", None
    if transaction_version_levels is None:
        return _format_331(key, value, read_value_v0_or_v1)
    levels = transaction_version_levels
    return _format_331(
        key, value, lambda v: _known_transaction_version(read_value_v0_or_v1(v), levels)
    )


def _known_transaction_version(v: TransactionLogValue, levels: range) -> TransactionLogValue:
    """`v`, if TransactionVersion.fromFeatureLevel knows its clientTransactionVersion."""
    if v.client_transaction_version not in levels:
        raise InvalidRecordError(
            "java.lang.IllegalArgumentException: No feature:transaction.version with "
            f"feature level {v.client_transaction_version}"
        )
    return v


def format_transaction_record_40(
    key: bytes | memoryview | None, value: bytes | memoryview | None, offset: int = -1
) -> tuple[str | None, str | None]:
    """(key text, payload text) as kafka-dump-log 4.1 and later prints them: every record,
    version 0 values included, through TransactionCoordinatorRecordSerde and the generated
    JsonConverters (KAFKA-18207, DumpLogSegments' TransactionLogMessageParser), so the tagged
    fields of version 1 print where they differ from their defaults. KAFKA-18207 came after the
    4.0 branch: 4.0's tool, like the 4.0.0-SNAPSHOT (trunk 1eb76443), prints 3.9's text
    (format_transaction_record_39)."""
    return format_coordinator_record(Coordinator.TRANSACTION, key, value, offset)


def _format_331(
    key: bytes | memoryview | None, value: bytes | memoryview | None, read=None
) -> tuple[str, str]:
    k = read_key(key)
    key_text = f"transaction_metadata::transactionalId={k.transactional_id}"
    if value is None:
        return key_text, "<DELETE>"
    v = (read or read_value)(value)
    partitions = ",".join(_partitions_in_set_order(v))
    return key_text, (
        f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},state={v.state},"
        f"partitions=[{partitions}],txnLastUpdateTimestamp={v.transaction_last_update_timestamp_ms},"
        f"txnTimeoutMs={v.transaction_timeout_ms}"
    )


def decode_transaction_record(
    key: bytes | memoryview | None, value: bytes | memoryview | None
) -> dict[str, Any]:
    """Structured form for our JSON output (snake_case keys); `value` is None for a tombstone.
    Values of version 0 and 1 have one form (a partition of __transaction_state holds both once
    transaction.version is raised), version 1 with its tagged fields (previous_producer_id,
    next_producer_id, client_transaction_version); a key or value version Kafka 4.x does not
    know has coordinator.decode_coordinator_record's form."""
    try:
        return _decode_331(key, value)
    except UnknownVersionError:
        return decode_coordinator_record(Coordinator.TRANSACTION, key, value)


_TAGGED_SINCE_V1 = ("previous_producer_id", "next_producer_id", "client_transaction_version")


def _decode_331(key: bytes | memoryview | None, value: bytes | memoryview | None) -> dict[str, Any]:
    k = read_key(key)
    out: dict[str, Any] = {"type": "transaction_metadata", "key": asdict(k), "value": None}
    if value is not None:
        v = read_value_v0_or_v1(value)
        d = asdict(v)
        if v.version == 0:
            for name in _TAGGED_SINCE_V1:
                del d[name]
        d["state"] = v.state.name
        d["transaction_partitions"] = (
            None
            if v.transaction_partitions is None
            else [{"topic": t, "partition_ids": ids} for t, ids in v.transaction_partitions]
        )
        out["value"] = d
    return out
