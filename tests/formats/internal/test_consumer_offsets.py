"""--offsets-decoder text, byte for byte as Kafka 3.3.1 printed it (goldens)."""

from __future__ import annotations

import re
import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.consumer_offsets import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_offsets_record,
    format_offsets_record,
    read_group_metadata_value,
    read_key,
)

from ._logfile import fixture_records, golden_lines

# (key hex, value hex or None, key text, payload text) from the corpus (see SOURCES.md); texts
# copied from the golden lines.
GOLDEN = [
    # ArthurArutunyan04-co-19-0.log @258480: key v1, value v3 (leaderEpoch)
    (
        "0001001a756e6976657273652d6c6162732d6f6d732d636f6e73756d657200116f6d735f6f726465725f6372656174656400000001",
        "00030000000000013f430000000800000000019b0a43ad40",
        "offset_commit::group=universe-labs-oms-consumer,partition=oms_order_created-1",
        "offset=81731",
    ),
    # xpxwo100-co-40-0.log @1 (magic 1, Kafka 0.10): value v1 with expireTimestamp
    (
        "0001000647726f7570410003666f6f00000000",
        "0001000000000000000200000000015876893e4b000001587baf9a4b",
        "offset_commit::group=GroupA,partition=foo-0",
        "offset=2",
    ),
    # mscaldas2012-co-0-0.log @5: an offset tombstone, empty group name
    (
        "000100000016646f636b65722d636f6e6e6563742d636f6e6669677300000000",
        None,
        "offset_commit::group=,partition=docker-connect-configs-0",
        "<DELETE>",
    ),
    # ItumelengMogase-co-29-0.log @1 and @19: an empty schema-registry group, then its tombstone
    (
        "0002000f736368656d612d7265676973747279",
        "00030002737200000002ffffffff0000019276a4bf1c00000000",
        "group_metadata::group=schema-registry",
        '{"protocolType":"sr","protocol":null,"generationId":2,"assignment":"{}"}',
    ),
    (
        "0002000f736368656d612d7265676973747279",
        None,
        "group_metadata::group=schema-registry",
        "<DELETE>",
    ),
    # mscaldas2012-co-13-0.log @4: value v2
    (
        "000200285f636f6e666c75656e742d636f6e74726f6c63656e7465722d352d312d322d312d636f6d6d616e64",
        "00020008636f6e73756d657200000003ffffffff0000016aeca9e60f00000000",
        "group_metadata::group=_confluent-controlcenter-5-1-2-1-command",
        '{"protocolType":"consumer","protocol":null,"generationId":3,"assignment":"{}"}',
    ),
]


@pytest.mark.parametrize("key_hex,value_hex,key_text,payload", GOLDEN)
def test_golden(key_hex, value_hex, key_text, payload):
    value = None if value_hex is None else bytes.fromhex(value_hex)
    assert format_offsets_record(bytes.fromhex(key_hex), value) == (key_text, payload)


def _golden(name: str, offset: int) -> tuple[tuple[str | None, str | None], bytes]:
    for r, line in zip(fixture_records(name), golden_lines(name)):
        if r.offset == offset:
            return format_offsets_record(r.key, r.value), line
    raise AssertionError(offset)


def _line_tail(parsed: tuple[str | None, str | None]) -> bytes:
    return f" key: {parsed[0]} payload: {parsed[1]}".encode()


def test_consumer_group_assignment():
    parsed, line = _golden("formats-basic-before-co-0-0.log", 0)
    assert parsed == (
        "group_metadata::group=oracle-group",
        '{"protocolType":"consumer","protocol":"range","generationId":1,"assignment":'
        '"{kafka-python-3.0.12-cd5a03c0-4e10-45fb-b9ea-eab538818a8e=[codec-none-0]}"}',
    )
    assert line.endswith(_line_tail(parsed))


def test_connect_assignment_is_bigint_hex():
    # Connect's protocol is not "consumer": the assignment prints as "%X".format(BigInt(1, bytes)),
    # so its leading zero bytes (version 0, error 0) vanish
    parsed, line = _golden("mscaldas2012-co-37-0.log", 0)
    assert parsed[1].startswith(
        '{"protocolType":"connect","protocol":"default","generationId":1,"assignment":'
        '"{connect-1-cd243ec4-d6ab-4d15-943c-c380cdb8ef8d=2E636F6E6E6563742D312D'
    )
    assert line.endswith(_line_tail(parsed))


def test_members_print_in_scala_hashmap_order():
    # two members; the golden order comes from Scala's mutable.HashMap, keyed by member id
    parsed, line = _golden("ArthurArutunyan04-co-19-0.log", 186795)
    assert "rdkafka-68d84c5d-68c8-4027-955a-b24c32315bcc=[oms_order_status_changed-0, " in parsed[1]
    assert line.endswith(_line_tail(parsed))


def _member(member_id: str, assignment: bytes) -> bytes:
    def s(x: str) -> bytes:
        return struct.pack(">h", len(x)) + x.encode()

    return (
        s(member_id)
        + s("client")
        + s("/1.2.3.4")
        + struct.pack(">ii", 30000, 10000)
        + struct.pack(">i", 0)
        + struct.pack(">i", len(assignment))
        + assignment
    )


def _group_value(members: list[bytes], protocol_type: str = "consumer") -> bytes:
    body = (
        struct.pack(">h", 1)
        + struct.pack(">h", len(protocol_type.encode()))
        + protocol_type.encode()
        + struct.pack(">i", 5)
        + b"\x00\x05range"
        + b"\x00\x01m"
        + struct.pack(">i", len(members))
    )
    return body + b"".join(members)


def _assignment(topic: str, parts: list[int], user_data: bytes | None) -> bytes:
    out = (
        struct.pack(">hi", 1, 1)
        + struct.pack(">h", len(topic))
        + topic.encode()
        + struct.pack(">i", len(parts))
    )
    out += b"".join(struct.pack(">i", p) for p in parts)
    out += (
        struct.pack(">i", -1)
        if user_data is None
        else struct.pack(">i", len(user_data)) + user_data
    )
    return out


def test_hash_order_differs_from_record_order():
    # String.hashCode("b") = 98 -> bucket 2 of 16, "a" = 97 -> bucket 1: "a" prints first
    value = _group_value(
        [
            _member("b", _assignment("t", [1], None)),
            _member("a", _assignment("t", [0], b"\x00\x0f")),
        ]
    )
    key = bytes.fromhex("0002") + b"\x00\x01g"
    assert format_offsets_record(key, value)[1] == (
        '{"protocolType":"consumer","protocol":"range","generationId":5,"assignment":"{a=[t-0]:F,b=[t-1]}"}'
    )


def test_metadata_and_escaping():
    key = bytes.fromhex("0001") + b"\x00\x01g" + b"\x00\x01t" + struct.pack(">i", 3)
    value = struct.pack(">hq", 3, 42) + struct.pack(">i", 7) + b"\x00\x02hi" + struct.pack(">q", 1)
    assert format_offsets_record(key, value) == (
        "offset_commit::group=g,partition=t-3",
        "offset=42,metadata=hi",
    )
    value = _group_value([], protocol_type='a"\x01\u00e9')
    assert format_offsets_record(bytes.fromhex("0002") + b"\x00\x01g", value)[1] == (
        '{"protocolType":"a\\"\\u0001\u00e9","protocol":"range","generationId":5,"assignment":"{}"}'
    )


@pytest.mark.parametrize(
    "key,value,message",
    [
        (
            None,
            b"",
            "Failed to decode message using offset topic decoder (message had a missing key)",
        ),
        (b"\x00", None, "BufferUnderflowException"),
    ],
)
def test_what_kills_kafka_dump_log_raises(key, value, message):
    with pytest.raises(InvalidRecordError, match=re.escape(message)):
        format_offsets_record(key, value)


@pytest.mark.parametrize(
    "key,value,printed",
    [
        # a key version 3.3.1 does not know is a record type of Kafka 3.4+ (here a member of a KIP-848 group)
        (
            b"\x00\x05\x00\x01g",
            None,
            "Error at offset 7, skipping. Could not read record with version 5 from key's "
            "buffer due to: null.",
        ),
        (
            b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00",
            b"\x00\x04",
            "Error at offset 7, skipping. Could not read record with version 4 from value's buffer due to: null.",
        ),
        (
            b"\x00\x02\x00\x01g",
            b"\xff\xff",
            "Error at offset 7, skipping. Could not read record with version -1 from value's buffer due to: null.",
        ),
        (b"\x00\x63", None, "Unknown record type 99 at offset 7, skipping."),
    ],
)
def test_what_kills_3_3_1_prints_as_kafka_4_2_prints_it(key, value, printed):
    assert format_offsets_record(key, value, 7) == (printed, None)


def test_structured_decoders():
    k, v = bytes.fromhex(GOLDEN[0][0]), bytes.fromhex(GOLDEN[0][1])
    assert read_key(k) == OffsetCommitKey(1, "universe-labs-oms-consumer", "oms_order_created", 1)
    d = decode_offsets_record(k, v)
    assert (
        d["type"] == "offset_commit"
        and d["value"]["offset"] == 81731
        and d["value"]["leader_epoch"] == 8
    )
    assert read_key(bytes.fromhex(GOLDEN[3][0])) == GroupMetadataKey(2, "schema-registry")
    g = read_group_metadata_value(bytes.fromhex(GOLDEN[3][1]))
    assert (g.protocol_type, g.generation, g.protocol, g.members) == ("sr", 2, None, [])
    d = decode_offsets_record(
        bytes.fromhex("0002") + b"\x00\x01g",
        _group_value([_member("m", _assignment("t", [0, 1], None))]),
    )
    assert d["value"]["members"][0]["assigned_partitions"] == [
        {"topic": "t", "partition": 0},
        {"topic": "t", "partition": 1},
    ]
    assert decode_offsets_record(bytes.fromhex(GOLDEN[4][0]), None)["value"] is None
