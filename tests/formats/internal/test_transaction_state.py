"""--transaction-log-decoder text, byte for byte as Kafka 3.3.1 printed it (goldens)."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.internal.transaction_state import (
    TransactionState,
    decode_transaction_record,
    format_transaction_record,
    format_transaction_record_39,
    format_transaction_record_40,
    read_value_v0_or_v1,
)

from ._logfile import fixture_records, golden_lines

KEY = bytes.fromhex(
    "0000000864656661756c745f"
)  # ItumelengMogase-ts-44-0.log: transactionalId "default_"


def test_empty_state_golden():
    value = bytes.fromhex(
        "0000000000000000000000000000ea6000ffffffff00000192764aec98ffffffffffffffff"
    )
    assert format_transaction_record(KEY, value) == (
        "transaction_metadata::transactionalId=default_",
        "producerId:0,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=1728561474712,"
        "txnTimeoutMs=60000",
    )


def test_every_state_in_the_basic_case():
    name = "formats-basic-before-ts-0-0.log"
    states = []
    for r, line in zip(fixture_records(name), golden_lines(name)):
        key, payload = format_transaction_record(r.key, r.value)
        assert line.endswith(f" key: {key} payload: {payload}".encode())
        states.append(payload.split("state=")[1].split(",")[0])
    assert {
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
        "PrepareAbort",
        "CompleteAbort",
    } <= set(states)


def _value(state: int, partitions: list[tuple[str, list[int]]] | None, version: int = 0) -> bytes:
    out = struct.pack(">hqhib", version, 7, 1, 60000, state)
    if partitions is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(partitions))
        for topic, ids in partitions:
            out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(ids))
            out += b"".join(struct.pack(">i", p) for p in ids)
    return out + struct.pack(">qq", 100, 50)


def test_partitions_print_in_scala_hashset_order():
    # TopicPartition("t", p).hashCode = 31 * (31 + p) + "t".hashCode = 1077 + 31p: t-0 in bucket 5,
    # t-1 in bucket 4 of 16, so t-1 prints first
    payload = format_transaction_record(KEY, _value(1, [("t", [0, 1])]))[1]
    assert (
        payload
        == "producerId:7,producerEpoch:1,state=Ongoing,partitions=[t-1,t-0],txnLastUpdateTimestamp=100,"
        "txnTimeoutMs=60000"
    )


def test_tombstone_and_empty_state_ignores_partitions():
    assert format_transaction_record(KEY, None) == (
        "transaction_metadata::transactionalId=default_",
        "<DELETE>",
    )
    assert "partitions=[]" in format_transaction_record(KEY, _value(0, [("t", [0])]))[1]
    assert "state=PrepareEpochFence" in format_transaction_record(KEY, _value(7, []))[1]


@pytest.mark.parametrize(
    "key,value,message",
    [
        (None, None, "NullPointerException"),
        (KEY, _value(8, []), "Unknown transaction state id 8"),
        (KEY, _value(1, None), "NullPointerException"),
        (KEY, _value(1, [])[:-3], "BufferUnderflowException"),
    ],
)
def test_what_kills_kafka_dump_log_raises(key, value, message):
    with pytest.raises(InvalidRecordError, match=message):
        format_transaction_record(key, value)


def test_versions_3_3_1_does_not_know_print_as_kafka_4_2_prints_them():
    assert format_transaction_record(b"\x00\x01\x00\x01x", None, 7) == (
        "Unknown record type 1 at offset 7, skipping.",
        None,
    )
    # the flexible version 1 of KIP-890, with two of its tagged fields
    value = struct.pack(">h", 1) + write_struct(
        MESSAGES["TransactionLogValue"],
        {
            "producerId": 7,
            "previousProducerId": 6,
            "producerEpoch": 1,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 4,
            "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
            "transactionLastUpdateTimestampMs": 5,
            "transactionStartTimestampMs": 4,
            "clientTransactionVersion": 2,
        },
        1,
    )
    assert format_transaction_record(KEY, value, 7) == (
        '{"type":"0","data":{"transactionalId":"default_"}}',
        '{"version":"1","data":{"producerId":7,"previousProducerId":6,"producerEpoch":1,"transactionTimeoutMs":60000,'
        '"transactionStatus":4,"transactionPartitions":[{"topic":"t","partitionIds":[0,1]}],'
        '"transactionLastUpdateTimestampMs":5,"transactionStartTimestampMs":4,"clientTransactionVersion":2}}',
    )


def test_decode_transaction_record():
    d = decode_transaction_record(KEY, _value(2, [("t", [0, 1])]))
    assert d["key"] == {"version": 0, "transactional_id": "default_"}
    assert d["value"]["state"] == "PrepareCommit" and TransactionState(2).name == "PrepareCommit"
    assert d["value"]["transaction_partitions"] == [{"topic": "t", "partition_ids": [0, 1]}]
    assert decode_transaction_record(KEY, None)["value"] is None


def _value_v1(**tagged) -> bytes:
    """TransactionLogValue version 1 as TransactionLog.valueToBytes writes it (tagged fields
    written where they differ from their defaults)."""
    return struct.pack(">h", 1) + write_struct(
        MESSAGES["TransactionLogValue"],
        {
            "producerId": 7,
            "producerEpoch": 2,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 2,
            "transactionPartitions": [{"topic": "t", "partitionIds": [0]}],
            "transactionLastUpdateTimestampMs": 5,
            "transactionStartTimestampMs": 4,
            **tagged,
        },
        1,
    )


def test_version_1_tagged_fields_in_the_value():
    """TransactionLogValue.json 0-1: PreviousProducerId (tag 0), NextProducerId (tag 1),
    ClientTransactionVersion (tag 2); version 0 has their defaults (TransactionLog.readTxnRecordValue)."""
    v = read_value_v0_or_v1(
        _value_v1(previousProducerId=6, nextProducerId=9, clientTransactionVersion=2)
    )
    assert (v.previous_producer_id, v.next_producer_id, v.client_transaction_version) == (6, 9, 2)
    assert v.epoch_bump_at_completion
    v0 = read_value_v0_or_v1(_value(2, [("t", [0])]))
    assert (v0.previous_producer_id, v0.next_producer_id, v0.client_transaction_version) == (
        -1,
        -1,
        0,
    )
    assert not v0.epoch_bump_at_completion
    # tags absent: their defaults (Kafka 4.0 to 4.2 write only clientTransactionVersion)
    assert read_value_v0_or_v1(_value_v1(clientTransactionVersion=2)).previous_producer_id == -1


def test_json_has_one_form_for_values_0_and_1():
    """A partition of __transaction_state holds both versions once transaction.version is raised:
    one form, version 1 with its tagged fields; version 0's form is unchanged."""
    d = decode_transaction_record(KEY, _value_v1(nextProducerId=9, clientTransactionVersion=2))
    assert d == {
        "type": "transaction_metadata",
        "key": {"version": 0, "transactional_id": "default_"},
        "value": {
            "version": 1,
            "producer_id": 7,
            "producer_epoch": 2,
            "transaction_timeout_ms": 60000,
            "state": "PrepareCommit",
            "transaction_partitions": [{"topic": "t", "partition_ids": [0]}],
            "transaction_last_update_timestamp_ms": 5,
            "transaction_start_timestamp_ms": 4,
            "previous_producer_id": -1,
            "next_producer_id": 9,
            "client_transaction_version": 2,
        },
    }
    assert list(decode_transaction_record(KEY, _value(2, [("t", [0])]))["value"]) == [
        "version",
        "producer_id",
        "producer_epoch",
        "transaction_timeout_ms",
        "state",
        "transaction_partitions",
        "transaction_last_update_timestamp_ms",
        "transaction_start_timestamp_ms",
    ]


def test_text_of_kafka_4_0_and_of_the_4_0_snapshot():
    """Released 4.0+ kafka-dump-log prints every record as the coordinator's JSON, tagged fields
    where they differ from their defaults (KAFKA-18207); the trunk 1eb76443 snapshot's tool still
    prints TransactionLog.formatRecordKeyAndValue's text, as 3.9 does."""
    value = _value_v1(nextProducerId=9, clientTransactionVersion=2)
    assert format_transaction_record_40(KEY, value, 3) == (
        '{"type":"0","data":{"transactionalId":"default_"}}',
        '{"version":"1","data":{"producerId":7,"nextProducerId":9,"producerEpoch":2,"transactionTimeoutMs":60000,'
        '"transactionStatus":2,"transactionPartitions":[{"topic":"t","partitionIds":[0]}],'
        '"transactionLastUpdateTimestampMs":5,"transactionStartTimestampMs":4,"clientTransactionVersion":2}}',
    )
    assert format_transaction_record_40(KEY, _value(4, []), 3)[1] == (
        '{"version":"0","data":{"producerId":7,"producerEpoch":1,"transactionTimeoutMs":60000,"transactionStatus":4,'
        '"transactionPartitions":[],"transactionLastUpdateTimestampMs":100,"transactionStartTimestampMs":50}}'
    )
    assert format_transaction_record_39(KEY, value, 3)[1] == (
        "producerId:7,producerEpoch:2,state=PrepareCommit,partitions=[t-0],txnLastUpdateTimestamp=5,"
        "txnTimeoutMs=60000"
    )
