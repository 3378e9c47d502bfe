"""__remote_log_metadata records (tiered storage, TopicBasedRemoteLogMetadataManager), and the
text `kafka-dump-log --remote-log-metadata-decoder` (Kafka 4.2) prints for each: the value is
framed as a metadata record (frame version, apiKey, version; RemoteLogMetadataSerde), and the
tool prints the `toString()` of the RemoteLogMetadata it becomes. Records have no key.
"""

from __future__ import annotations

import functools
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.kafka_protocol import json_node, uuid_to_string

__all__ = ["format_remote_log_metadata", "decode_remote_log_metadata"]


@functools.cache
def _schemas() -> dict[int, tuple[str, Any]]:
    """The records' schemas by apiKey, with the metadata record reader: loaded when a record is
    read (a command that only asks whether a partition is tiered reads none)."""
    from kafkalog_cli.formats.internal.cluster_metadata import type_name
    from kafkalog_cli.formats.internal.schemas import MESSAGES, REMOTE_LOG_METADATA_RECORDS

    return {
        key: (type_name(name), MESSAGES[name]) for key, name in REMOTE_LOG_METADATA_RECORDS.items()
    }


def _read(value) -> tuple[int, int, Any, dict[str, Any]]:
    """cluster_metadata.read_api_message with these records' schemas."""
    from kafkalog_cli.formats.internal.cluster_metadata import read_api_message

    return read_api_message(value, _schemas())


# RemoteLogSegmentState and RemotePartitionDeleteState, by id
SEGMENT_STATES = (
    "COPY_SEGMENT_STARTED",
    "COPY_SEGMENT_FINISHED",
    "DELETE_SEGMENT_STARTED",
    "DELETE_SEGMENT_FINISHED",
)
PARTITION_DELETE_STATES = (
    "DELETE_PARTITION_MARKED",
    "DELETE_PARTITION_STARTED",
    "DELETE_PARTITION_FINISHED",
)


def _state(states: tuple[str, ...], state_id: int, npe: str = "state can not be null") -> str:
    """forId finds no state for an unknown id: the constructor's requireNonNull throws (its
    getMessage() is `npe`)."""
    if not 0 <= state_id < len(states):
        raise InvalidRecordError(npe)
    return states[state_id]


def _topic_id_partition(t: dict[str, Any]) -> str:
    """TopicIdPartition.toString."""
    return f"{uuid_to_string(t['id'])}:{t['name']}-{t['partition']}"


def _segment_id(s: dict[str, Any]) -> str:
    tip = _topic_id_partition(s["topicIdPartition"])
    return f"RemoteLogSegmentId{{topicIdPartition={tip}, id={uuid_to_string(s['id'])}}}"


def _custom(data: bytes | None) -> str:
    """Optional<CustomMetadata>.toString."""
    return "Optional.empty" if data is None else f"Optional[CustomMetadata{{{len(data)} bytes}}]"


def _leader_epochs(entries: list[dict[str, Any]]) -> str:
    """The TreeMap<Integer, Long> of leader epoch -> start offset, as AbstractMap.toString;
    RemoteLogSegmentMetadata refuses an empty one."""
    if not entries:
        raise InvalidRecordError("segmentLeaderEpochs can not be null or empty")
    epochs = {e["leaderEpoch"]: e["offset"] for e in entries}
    return "{" + ", ".join(f"{k}={epochs[k]}" for k in sorted(epochs)) + "}"


def _offsets(start: int, end: int) -> str:
    if start < 0:
        raise InvalidRecordError(
            f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative"
        )
    if end < start:
        raise InvalidRecordError(
            f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
            f"startOffset = {start}"
        )
    return f"startOffset={start}, endOffset={end}"


def _to_string(api_key: int, d: dict[str, Any], txn_idx_empty: bool = True) -> str:
    """The RemoteLogMetadata's toString(); `txn_idx_empty`: 4.x's RemoteLogSegmentMetadata ends
    with it (KIP-1058's tagged txnIndexEmpty), 3.9's has neither the field nor the text."""
    if api_key == 0:
        return (
            f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
            f"{_offsets(d['startOffset'], d['endOffset'])}, brokerId={d['brokerId']}, "
            f"maxTimestampMs={d['maxTimestampMs']}, eventTimestampMs={d['eventTimestampMs']}, "
            f"segmentLeaderEpochs={_leader_epochs(d['segmentLeaderEpochs'])}, "
            f"segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d['customMetadata'])}, "
            f"state={_state(SEGMENT_STATES, d['remoteLogSegmentState'])}"
            + (
                f", txnIdxEmpty={'true' if d['txnIndexEmpty'] else 'false'}}}"
                if txn_idx_empty
                else "}"
            )
        )
    if api_key == 1:
        return (
            f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
            f"customMetadata={_custom(d['customMetadata'])}, "
            f"state={_state(SEGMENT_STATES, d['remoteLogSegmentState'])}, "
            f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
        )
    if api_key == 2:
        state = _state(PARTITION_DELETE_STATES, d["remotePartitionDeleteState"], "null")
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(d['topicIdPartition'])}, "
            f"state={state}, eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
        )
    state = _state(
        SEGMENT_STATES, d["remoteLogSegmentState"]
    )  # checked before the epochs, offsets never
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={uuid_to_string(d['segmentId'])}, "
        f"startOffset={d['startOffset']}, endOffset={d['endOffset']}, maxTimestampMs={d['maxTimestampMs']}, "
        f"segmentLeaderEpochs={_leader_epochs(d['segmentLeaderEpochs'])}, "
        f"segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d['customMetadata'])}, "
        f"state={state}}}"
    )


def format_remote_log_metadata(
    value: bytes | memoryview | None, offset: int, txn_idx_empty: bool = True
) -> str:
    """What kafka-dump-log 4.2 --remote-log-metadata-decoder prints after ` payload: `
    (`txn_idx_empty=False`: 3.9's)."""
    try:
        if value is None:
            raise InvalidRecordError("null")  # record.value().remaining() on a null value
        api_key, _, _, fields = _read(value)
        return _to_string(api_key, fields, txn_idx_empty)
    except InvalidRecordError as e:
        return f"Error at offset {offset}, skipping. {e.message}"


def decode_remote_log_metadata(value: bytes | memoryview | None) -> dict[str, Any]:
    """Structured form for our JSON output: `type` (the record type's name), `version`, and
    `data` as Kafka's JsonConverter writes it, plus `text`, what the text output prints."""
    if value is None:
        raise InvalidRecordError("__remote_log_metadata record without a value")
    api_key, version, schema, fields = _read(value)
    return {
        "type": _schemas()[api_key][0],
        "version": version,
        "data": json_node(schema, fields, version),
        "text": _to_string(api_key, fields),
    }


# ------------------------------------------------------------------ which partition, what state
DEFAULT_METADATA_TOPIC_PARTITIONS = 50  # TopicBasedRemoteLogMetadataManagerConfig
METADATA_TOPIC = "__remote_log_metadata"  # ...REMOTE_LOG_METADATA_TOPIC_NAME
COPY_SEGMENT_FINISHED = 1  # RemoteLogSegmentState.COPY_SEGMENT_FINISHED's id


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def murmur2(data: bytes) -> int:
    """org.apache.kafka.common.utils.Utils.murmur2, a signed 32-bit int."""
    m, r, mask = 0x5BD1E995, 24, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4 : i * 4 + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return _int32(h)


def _java_long_hash(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return _int32(v ^ (v >> 32))


def metadata_partition(
    topic_id: bytes, partition: int, partitions: int = DEFAULT_METADATA_TOPIC_PARTITIONS
) -> int:
    """RemoteLogMetadataTopicPartitioner.metadataPartition: murmur2 of the 4 bytes of
    Objects.hash(topicId's least and most significant bits, partition), made positive
    (Utils.toPositive), modulo the metadata topic's partition count."""
    most, least = int.from_bytes(topic_id[:8], "big"), int.from_bytes(topic_id[8:16], "big")
    h = 1
    for part in (_java_long_hash(least), _java_long_hash(most), _int32(partition)):
        h = _int32(31 * h + part)
    return (murmur2((h & 0xFFFFFFFF).to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


def decode_remote_log_record(value: bytes | memoryview | None) -> tuple[int, dict[str, Any]]:
    """(apiKey, fields as read) of one __remote_log_metadata record; InvalidRecordError if not one."""
    if value is None:
        raise InvalidRecordError("__remote_log_metadata record without a value")
    api_key, _, _, fields = _read(value)
    return api_key, fields
