"""--cluster-metadata-decoder text, byte for byte as Kafka 3.3.1 printed it (goldens), plus the
failure texts for records 3.3.1 cannot read."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.cluster_metadata import (
    METADATA_SCHEMAS,
    MetadataRecord,
    decode_metadata_record,
    format_metadata_record,
    topic_configs,
)

from ._logfile import fixture_records, golden_lines

# (record value hex, offset, payload text) — from the corpus files named in SOURCES.md, each text
# copied from the golden line for that offset.
GOLDEN = [
    (
        "010c00116d657461646174612e76657273696f6e001900",
        2,
        '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":25}}',
    ),
    ("01140000", 9, '{"type":"NO_OP_RECORD","version":0,"data":{}}'),
    (
        "011100000000010000000000000007010001ff",
        8,
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":7,"fenced":-1}}',
    ),
    (
        "01110100000001000000000000000701010101",
        242,
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":1,"data":{"brokerId":1,"brokerEpoch":7,'
        '"inControlledShutdown":1}}',
    ),
    (
        "010200126f6d735f6f726465725f63726561746564d02334ad895f422a924c21fec79e198700",
        162,
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"oms_order_created","topicId":"0CM0rYlfQiqSTCH-x54Zhw"}}',
    ),
    (
        "01040002126f6d735f6f726465725f637265617465640f636c65616e75702e706f6c6963790764656c65746500",
        163,
        '{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"oms_order_created",'
        '"name":"cleanup.policy","value":"delete"}}',
    ),
    (
        "010f00ffffffffffffffffffffffff00000000000003e800",
        163,
        '{"type":"PRODUCER_IDS_RECORD","version":0,"data":{"brokerId":-1,"brokerEpoch":-1,"nextProducerId":1000}}',
    ),
    (
        "01030000000000eefb97e3fb2a434a9dcce999b12b9e4902000000010200000001010100000001000000000000000000",
        23,
        '{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":0,"topicId":"7vuX4_sqQ0qdzOmZsSueSQ",'
        '"replicas":[1],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,'
        '"partitionEpoch":0}}',
    ),
    (
        "01050000000000eefb97e3fb2a434a9dcce999b12b9e49010104ffffffff",
        39,
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"topicId":"7vuX4_sqQ0qdzOmZsSueSQ",'
        '"leader":-1}}',
    ),
    # a 3.7+ PartitionChangeRecord v2: 3.3.1 reads it with the v0 layout and it fits
    (
        "01050200000000d02334ad895f422a924c21fec79e1987010104ffffffff",
        243,
        '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":0,"topicId":"0CM0rYlfQiqSTCH-x54Zhw",'
        '"leader":-1}}',
    ),
    # ... a PartitionRecord v2 does not
    (
        "01030200000000d02334ad895f422a924c21fec79e1987020000000102000000010101000000010000000000000000023101e1b468"
        "5cf63d6770b336a6f975eb00",
        165,
        "Error at 165, skipping. Failed to deserialize record with type 3",
    ),
    # record types newer than 3.3.1 (23 = BeginTransaction, 24 = EndTransaction, 21 = ZkMigrationState)
    (
        "01170001001212426f6f747374726170207265636f726473",
        1,
        "Error at 1, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 23",
    ),
    (
        "01180000",
        5,
        "Error at 5, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 24",
    ),
    (
        "0115000000",
        2,
        "Error at 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 21",
    ),
]


@pytest.mark.parametrize("value_hex,offset,text", GOLDEN)
def test_golden_payloads(value_hex, offset, text):
    assert format_metadata_record(bytes.fromhex(value_hex), offset=offset) == text


def _golden_payload(name: str, offset: int) -> str:
    for r, line in zip(fixture_records(name), golden_lines(name)):
        if r.offset == offset:
            assert not r.control
            return format_metadata_record(r.value, offset), line.decode().split(" payload: ", 1)[1]
    raise AssertionError(offset)


def test_register_broker_v1():
    got, want = _golden_payload("compact-keyed-overwrites-after-cm-0-0.log", 3)
    assert (
        got
        == want
        == (
            '{"type":"REGISTER_BROKER_RECORD","version":1,"data":{"brokerId":1,"incarnationId":"do2rOWIbRsKicNRpaZ_5Yw",'
            '"brokerEpoch":3,"endPoints":[{"name":"PLAINTEXT","host":"127.0.0.1","port":19092,"securityProtocol":0}],'
            '"features":[{"name":"metadata.version","minSupportedVersion":1,"maxSupportedVersion":7}],"rack":null,'
            '"fenced":true,"inControlledShutdown":false}}'
        )
    )


def test_newer_register_broker_and_unknown_id_27():
    got, want = _golden_payload("ArthurArutunyan04-cm-0-0.log", 7)
    assert got == want == "Error at 7, skipping. Failed to deserialize record with type 0"
    got, want = _golden_payload("ArthurArutunyan04-cm-0-0.log", 6)
    assert (
        got
        == want
        == (
            "Error at 6, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
            "Unknown metadata id 27"
        )
    )


def _uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return _uv(len(b) + 1) + b


def _record(api_key: int, version: int, body: bytes) -> bytes:
    return b"\x01" + _uv(api_key) + _uv(version) + body


@pytest.mark.parametrize(
    "value,text",
    [
        (None, "Error at 7, skipping. Error while reading frame version"),
        (b"", "Error at 7, skipping. Error while reading frame version"),
        (
            b"\x00\x02\x00",
            "Error at 7, skipping. Could not deserialize metadata record with frame version 0. Note that "
            "upgrades from the preview release of KRaft in 2.8 to newer versions are not supported.",
        ),
        (
            b"\x02\x02\x00",
            "Error at 7, skipping. Could not deserialize metadata record due to unknown frame version 2"
            "(only frame version 1 is supported)",
        ),
        (b"\x01\xff\xff\x02\x00", "Error at 7, skipping. Value for type was too large."),
        (b"\x01", "Error at 7, skipping. Error while reading type"),
        (b"\x01\x14\x00\x00\x00", "Error at 7, skipping. Found 1 byte(s) of garbage after 20"),
        (b"\x01\x14\x00", "Error at 7, skipping. Failed to deserialize record with type 20"),
        # BrokerRegistrationChangeRecord v0 carrying tag 1, which 3.3.1 only allows from v1
        (
            _record(17, 0, b"\x00\x00\x00\x01" + bytes(8) + b"\x01\x01\x01\x01"),
            "Error at 7, skipping. Failed to deserialize record with type 17",
        ),
        # a non-nullable string sent as null
        (
            _record(2, 0, b"\x00" + bytes(16) + b"\x00"),
            "Error at 7, skipping. Failed to deserialize record with type 2",
        ),
    ],
)
def test_failures(value, text):
    assert format_metadata_record(value, offset=7) == text
    with pytest.raises(InvalidRecordError):
        decode_metadata_record(value)


def test_unknown_tagged_fields_are_skipped_and_defaults_omitted():
    # two tagged fields: tag 1 (leader = 2) and an unknown tag 9 that 3.3.1 keeps raw and never prints
    body = (
        struct.pack(">i", 3)
        + bytes(range(16))
        + b"\x02"
        + b"\x01\x04\x00\x00\x00\x02"
        + b"\x09\x02\xab\xcd"
    )
    text = format_metadata_record(_record(5, 0, body), offset=0)
    assert text == (
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":3,'
        '"topicId":"AAECAwQFBgcICQoLDA0ODw","leader":2}}'
    )


def test_types_without_golden():
    # AccessControlEntryRecord
    ace = _record(
        18,
        0,
        bytes(range(16))
        + b"\x02"
        + _cstr('t"q\n')
        + b"\x03"
        + _cstr("User:é")
        + _cstr("*")
        + b"\x02\x03\x00",
    )
    assert format_metadata_record(ace, 0) == (
        '{"type":"ACCESS_CONTROL_ENTRY_RECORD","version":0,"data":{"id":"AAECAwQFBgcICQoLDA0ODw","resourceType":2,'
        '"resourceName":"t\\"q\\n","patternType":3,"principal":"User:é","host":"*","operation":2,"permissionType":3}}'
    )
    # UserScramCredentialRecord: bytes are base64 (standard alphabet, padded)
    scram = _record(
        11,
        0,
        _cstr("alice")
        + b"\x02"
        + b"\x01"
        + _uv(4)
        + b"\xfb\xff\x01"
        + _uv(2)
        + b"\x00"
        + struct.pack(">i", 4096)
        + b"\x00"
        + b"\x00",
    )
    assert format_metadata_record(scram, 0) == (
        '{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"alice","credentialInfos":'
        '[{"mechanism":1,"salt":"+/8B","saltedPassword":"AA==","iterations":4096}]}}'
    )
    # ClientQuotaRecord: a float64 printed by Double.toString
    quota = _record(
        14,
        0,
        b"\x02"
        + _cstr("user")
        + _cstr(None)
        + b"\x00"
        + _cstr("producer_byte_rate")
        + struct.pack(">d", 1e7)
        + b"\x00"
        + b"\x00",
    )
    assert format_metadata_record(quota, 0) == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null}],'
        '"key":"producer_byte_rate","value":1.0E7,"remove":false}}'
    )
    # RemoveTopicRecord
    assert format_metadata_record(_record(9, 0, bytes(16) + b"\x00"), 0) == (
        '{"type":"REMOVE_TOPIC_RECORD","version":0,"data":{"topicId":"AAAAAAAAAAAAAAAAAAAAAA"}}'
    )


def test_every_3_3_1_type_is_known():
    assert sorted(METADATA_SCHEMAS) == [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        11,
        12,
        14,
        15,
        17,
        18,
        19,
        20,
    ]
    assert METADATA_SCHEMAS[6][0] == "ACCESS_CONTROL_RECORD"
    assert METADATA_SCHEMAS[17][0] == "BROKER_REGISTRATION_CHANGE_RECORD"


def test_decode_metadata_record():
    rec = decode_metadata_record(bytes.fromhex(GOLDEN[4][0]))
    assert rec == MetadataRecord(
        "TOPIC_RECORD", 2, 0, {"name": "oms_order_created", "topicId": "0CM0rYlfQiqSTCH-x54Zhw"}
    )
    rec = decode_metadata_record(bytes.fromhex(GOLDEN[8][0]))
    assert (
        rec.data["isr"] is None
        and rec.data["leader"] == -1
        and rec.data["leaderRecoveryState"] == -1
    )


def _topic(name: str, raw_id: bytes) -> bytes:
    return _record(2, 0, _cstr(name) + raw_id + b"\x00")


def _config(topic: str, key: str, value: str | None, resource_type: int = 2) -> bytes:
    return _record(
        4, 0, bytes([resource_type]) + _cstr(topic) + _cstr(key) + _cstr(value) + b"\x00"
    )


def test_topic_configs_replay():
    a, b = bytes(range(16)), bytes(range(1, 17))
    values = [
        _topic("a", a),
        _config("a", "cleanup.policy", "compact"),
        _config("a", "segment.ms", "100"),
        _topic("b", b),
        _config("b", "retention.ms", "5"),
        _config("1", "log.retention.ms", "7", resource_type=4),  # a broker config: ignored
        _config("a", "segment.ms", None),  # deleted
        _record(9, 0, b + b"\x00"),  # topic b removed
        bytes.fromhex("01180000"),  # undecodable: skipped
        None,
    ]
    assert topic_configs(values) == {"a": {"cleanup.policy": "compact"}}


def test_topic_configs_from_a_real_log():
    values = [
        r.value
        for r in fixture_records("compact-keyed-overwrites-after-cm-0-0.log")
        if not r.control
    ]
    configs = topic_configs(values)
    assert configs["cmp-none"]["cleanup.policy"] == "compact"
