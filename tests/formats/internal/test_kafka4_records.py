"""Records of Kafka 3.4 to 4.2: the wild 4.0 and 4.2 log dirs through dump-log in both formats,
and every coordinator record type built from its schema (write_struct) and read back."""

from __future__ import annotations

import json
import lzma
import struct

import pytest

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.internal.coordinator import (
    Coordinator,
    decode_coordinator_record,
    format_coordinator_record,
)
from kafkalog_cli.formats.internal.kafka_protocol import (
    Field,
    Struct,
    json_node,
    to_json,
    write_struct,
)
from kafkalog_cli.formats.internal.raft import format_raft_control
from kafkalog_cli.formats.internal.remote_log_metadata import (
    decode_remote_log_metadata,
    format_remote_log_metadata,
)
from kafkalog_cli.formats.internal.schemas import MESSAGES

from ._logfile import FIXTURES

# (fixture, the name Kafka gives the file, decoder flag, Kafka version that wrote it)
WILD = [
    ("nomanazeem-co-15-0.log.xz", "00000000000000000000.log", "--offsets-decoder"),  # 4.2
    ("MashaKosher-co-15-0.log.xz", "00000000000000000000.log", "--offsets-decoder"),  # 4.0
    ("MashaKosher-co-15-1124.log.xz", "00000000000000001124.log", "--offsets-decoder"),  # 4.0
    ("ArthurArutunyan04-co-19-0.log.xz", "00000000000000000000.log", "--offsets-decoder"),  # 4.0
    ("nomanazeem-cm-0-0.log.xz", "00000000000000000000.log", "--cluster-metadata-decoder"),  # 4.2
    (
        "nomanazeem-kafka-logs-bootstrap.checkpoint.xz",
        "bootstrap.checkpoint",
        "--cluster-metadata-decoder",
    ),
    (
        "ArthurArutunyan04-cm-0-00000000000000005151.log.xz",
        "00000000000000005151.log",
        "--cluster-metadata-decoder",
    ),
]


def _unpacked(tmp_path, fixture: str, name: str) -> str:
    path = tmp_path / name
    path.write_bytes(lzma.decompress((FIXTURES / fixture).read_bytes()))
    return str(path)


@pytest.mark.parametrize("fixture, name, flag", WILD, ids=[w[0] for w in WILD])
def test_every_record_of_a_kafka_4_log_decodes_in_json(runner, tmp_path, fixture, name, flag):
    path = _unpacked(tmp_path, fixture, name)
    res = runner.invoke(cli, ["dump-log", "--files", path, flag, "--format", "json"])
    assert res.exit_code == 0, res.stderr
    records = [o for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "record"]
    assert records
    for r in records:
        decoded = r["decoded"]
        if r["is_control"] and r["control"]["type"] in ("ABORT", "COMMIT"):
            assert decoded is None
            continue
        assert isinstance(decoded, dict) and "error" not in decoded, r


@pytest.mark.parametrize(
    "fixture, name, flag",
    [w for w in WILD if w[2] == "--offsets-decoder"],
    ids=[w[0] for w in WILD if w[2] == "--offsets-decoder"],
)
def test_every_record_of_a_kafka_4_offsets_log_decodes_in_kafka_text(
    runner, tmp_path, fixture, name, flag
):
    path = _unpacked(tmp_path, fixture, name)
    res = runner.invoke(cli, ["dump-log", "--files", path, flag])
    assert res.exit_code == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("| offset:")]
    assert lines and all(" key: " in ln and " payload: " in ln for ln in lines)
    assert "Unknown" not in res.stdout and "Error at" not in res.stdout


def test_a_kafka_4_2_offset_commit_prints_as_kafka_4_2_prints_it(runner, tmp_path):
    path = _unpacked(tmp_path, "nomanazeem-co-15-0.log.xz", "00000000000000000000.log")
    out = runner.invoke(cli, ["dump-log", "--files", path, "--offsets-decoder"]).stdout.splitlines()
    # version 4 (flexible) offset commit values did not exist in 3.3.1
    assert out[7] == (
        "| offset: 2 CreateTime: 1779275930671 keySize: 30 valueSize: 24 sequence: 0 headerKeys: [] "
        'key: {"type":"1","data":{"group":"demo-group","topic":"demo-topic","partition":2}} '
        'payload: {"version":"4","data":{"offset":0,"leaderEpoch":-1,"metadata":"",'
        '"commitTimestamp":1779275930663}}'
    )
    # a record 3.3.1 knows keeps 3.3.1's text
    assert out[3].endswith(
        'key: group_metadata::group=demo-group payload: {"protocolType":"","protocol":null,'
        '"generationId":0,"assignment":"{}"}'
    )


def test_kafka_4_2_leader_change_decodes_in_json(runner, tmp_path):
    path = _unpacked(tmp_path, "nomanazeem-cm-0-0.log.xz", "00000000000000000000.log")
    res = runner.invoke(
        cli, ["dump-log", "--files", path, "--cluster-metadata-decoder", "--format", "json"]
    )
    objs = [o for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "record"]
    (leader,) = [o for o in objs if o["is_control"]]
    assert leader["decoded"] == {
        "version": 0,
        "leaderId": 1,
        "voters": [{"voterId": 1}],
        "grantingVoters": [{"voterId": 1}],
    }
    types = {o["decoded"]["type_name"] for o in objs if not o["is_control"]}
    assert {
        "REGISTER_CONTROLLER_RECORD",
        "PARTITION_RECORD",
        "BEGIN_TRANSACTION_RECORD",
        "END_TRANSACTION_RECORD",
        "FEATURE_LEVEL_RECORD",
    } <= types
    (partition,) = [
        o["decoded"]
        for o in objs
        if not o["is_control"]
        and o["decoded"]["type_name"] == "PARTITION_RECORD"
        and o["decoded"]["data"]["partitionId"] == 0
    ][:1]
    assert partition["version"] >= 1 and "directories" in partition["data"]


# ------------------------------------------------------------------ every record type, from its schema
def _sample(f: Field, version: int, seed: int):
    """A value for field `f` that differs from its default."""
    t = f.type
    if t == "struct":
        return _sample_struct(f.fields, version, seed)
    if t.startswith("[]"):
        el = Field(f.name, t[2:], fields=f.fields)
        return [_sample(el, version, seed + i) for i in range(2)]
    return {
        "int8": 3,
        "int16": 300 + seed,
        "uint16": 9092,
        "int32": 70000 + seed,
        "int64": 1_700_000_000_000 + seed,
        "bool": True,
        "float64": 2.5,
        "uuid": bytes(range(seed, seed + 16)),
        "string": f"s{seed}",
        "bytes": b"\x01\x02" + bytes([seed]),
    }[t]


def _sample_struct(fields: tuple[Field, ...], version: int, seed: int = 1) -> dict:
    return {f.name: _sample(f, version, seed + i) for i, f in enumerate(fields)}


COORDINATOR_TYPES = [(c, t) for c in Coordinator for t in sorted(c.value)]


@pytest.mark.parametrize(
    "coordinator, record_type",
    COORDINATOR_TYPES,
    ids=[f"{c.name}-{t}-{c.value[t]}" for c, t in COORDINATOR_TYPES],
)
def test_every_coordinator_record_type_round_trips(coordinator, record_type):
    name, key_schema, value_schema = coordinator.schemas(record_type)
    version = value_schema.valid[1] if value_schema.valid[1] is not None else value_schema.valid[0]
    key_fields = _sample_struct(key_schema.fields, record_type)
    value_fields = _sample_struct(value_schema.fields, version)
    if name == "GroupMetadata":
        value_fields["protocolType"] = "connect"  # a consumer group's members' bytes get decoded
    key = struct.pack(">h", record_type) + write_struct(key_schema, key_fields, record_type)
    value = struct.pack(">h", version) + write_struct(value_schema, value_fields, version)
    key_text, payload = format_coordinator_record(coordinator, key, value, 5)
    assert key_text == to_json(
        {"type": str(record_type), "data": json_node(key_schema, key_fields, record_type)}
    )
    label = "type" if coordinator is Coordinator.SHARE_40 else "version"  # 4.0's share parser
    assert payload == to_json(
        {label: str(version), "data": json_node(value_schema, value_fields, version)}
    )
    assert format_coordinator_record(coordinator, key, None, 5) == (key_text, "<DELETE>")
    decoded = decode_coordinator_record(coordinator, key, value)
    assert decoded["record_type"] == record_type and decoded["version"] == version
    assert json.loads(to_json(decoded["value"])) == json.loads(payload)["data"]


def test_a_kip_848_member_prints_as_kafka_4_2_prints_it():
    key = struct.pack(">h", 5) + write_struct(
        MESSAGES["ConsumerGroupMemberMetadataKey"], {"groupId": "g", "memberId": "m"}, 5
    )
    value = b"\0\0" + write_struct(
        MESSAGES["ConsumerGroupMemberMetadataValue"],
        {
            "instanceId": None,
            "rackId": None,
            "clientId": "c",
            "clientHost": "/10.0.0.1",
            "subscribedTopicNames": ["orders"],
            "subscribedTopicRegex": None,
            "rebalanceTimeoutMs": 300000,
            "serverAssignor": "uniform",
        },
        0,
    )
    assert format_coordinator_record(Coordinator.GROUP, key, value, 9) == (
        '{"type":"5","data":{"groupId":"g","memberId":"m"}}',
        '{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"c","clientHost":"/10.0.0.1",'
        '"subscribedTopicNames":["orders"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":300000,'
        '"serverAssignor":"uniform"}}',
    )


def test_a_classic_consumer_group_in_4_2_text_shows_subscriptions_decoded():
    subscription = b"\0\1" + write_struct(
        MESSAGES["ConsumerProtocolSubscription"], {"topics": ["t"]}, 1
    )
    members = [
        {
            "memberId": "m",
            "clientId": "c",
            "clientHost": "/h",
            "rebalanceTimeout": 1,
            "sessionTimeout": 2,
            "subscription": subscription,
            "assignment": b"\xff",
        }
    ]
    value = b"\0\4" + write_struct(
        MESSAGES["GroupMetadataValue"],
        {
            "protocolType": "consumer",
            "generation": 1,
            "protocol": "range",
            "leader": "m",
            "currentStateTimestamp": 5,
            "members": members,
        },
        4,
    )
    key = b"\0\2" + write_struct(MESSAGES["GroupMetadataKey"], {"group": "g"}, 2)
    _, payload = format_coordinator_record(Coordinator.GROUP, key, value, 0)
    member = json.loads(payload)["data"]["members"][0]
    assert member["subscription"] == {"topics": ["t"], "userData": None, "ownedPartitions": []}
    assert member["assignment"] == "/w=="  # does not read: Kafka keeps the bytes


def test_share_group_state_decoder(runner, tmp_path):
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    key = b"\0\1" + write_struct(
        MESSAGES["ShareUpdateKey"], {"groupId": "sg", "topicId": bytes(16), "partition": 3}, 1
    )
    value = b"\0\0" + write_struct(
        MESSAGES["ShareUpdateValue"],
        {
            "snapshotEpoch": 2,
            "leaderEpoch": 1,
            "startOffset": 10,
            "deliveryCompleteCount": 4,
            "stateBatches": [
                {"firstOffset": 10, "lastOffset": 12, "deliveryState": 2, "deliveryCount": 1}
            ],
        },
        0,
    )
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(
        build_v2_batch(
            [
                SimpleRecord(key, value, 1_700_000_000_000),
                SimpleRecord(b"\0\7", b"", 1_700_000_000_001),
            ],
            0,
        )
    )
    res = runner.invoke(cli, ["dump-log", "--files", str(path), "--share-group-state-decoder"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[3].endswith(
        'key: {"type":"1","data":{"groupId":"sg","topicId":"AAAAAAAAAAAAAAAAAAAAAA","partition":3}} '
        'payload: {"version":"0","data":{"snapshotEpoch":2,"leaderEpoch":1,"startOffset":10,"deliveryCompleteCount":4,'
        '"stateBatches":[{"firstOffset":10,"lastOffset":12,"deliveryState":2,"deliveryCount":1}]}}'
    )
    assert lines[4].endswith("key: Unknown record type 7 at offset 1, skipping.")
    res = runner.invoke(
        cli, ["dump-log", "--files", str(path), "--share-group-state-decoder", "--format", "json"]
    )
    decoded = [
        o["decoded"] for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "record"
    ]
    assert (
        decoded[0]["type"] == "share_update" and decoded[0]["value"]["deliveryCompleteCount"] == 4
    )
    assert decoded[1] == {"error": "Unknown record type 7, skipping."}


def _remote(api_key: int, fields: dict) -> bytes:
    name = {
        0: "RemoteLogSegmentMetadataRecord",
        1: "RemoteLogSegmentMetadataUpdateRecord",
        2: "RemotePartitionDeleteMetadataRecord",
    }[api_key]
    return bytes([1, api_key, 0]) + write_struct(MESSAGES[name], fields, 0)


TIP = {"name": "orders", "id": bytes(16), "partition": 2}
SEGMENT = {"topicIdPartition": TIP, "id": b"\1" * 16}


def test_remote_log_metadata_prints_its_to_string():
    seg = _remote(
        0,
        {
            "remoteLogSegmentId": SEGMENT,
            "startOffset": 0,
            "endOffset": 99,
            "brokerId": 1,
            "maxTimestampMs": 7,
            "eventTimestampMs": 8,
            "segmentSizeInBytes": 4096,
            "segmentLeaderEpochs": [
                {"leaderEpoch": 3, "offset": 50},
                {"leaderEpoch": 0, "offset": 0},
            ],
            "customMetadata": None,
            "remoteLogSegmentState": 0,
            "txnIndexEmpty": True,
        },
    )
    assert format_remote_log_metadata(seg, 4) == (
        "RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition="
        "AAAAAAAAAAAAAAAAAAAAAA:orders-2, "
        "id=AQEBAQEBAQEBAQEBAQEBAQ}, startOffset=0, endOffset=99, brokerId=1, maxTimestampMs=7, eventTimestampMs=8, "
        "segmentLeaderEpochs={0=0, 3=50}, segmentSizeInBytes=4096, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_STARTED, txnIdxEmpty=true}"
    )
    update = _remote(
        1,
        {
            "remoteLogSegmentId": SEGMENT,
            "brokerId": 1,
            "eventTimestampMs": 9,
            "customMetadata": b"abc",
            "remoteLogSegmentState": 1,
        },
    )
    assert format_remote_log_metadata(update, 5) == (
        "RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition="
        "AAAAAAAAAAAAAAAAAAAAAA:orders-2, id=AQEBAQEBAQEBAQEBAQEBAQ}, "
        "customMetadata=Optional[CustomMetadata{3 bytes}], "
        "state=COPY_SEGMENT_FINISHED, eventTimestampMs=9, brokerId=1}"
    )
    delete = _remote(
        2,
        {
            "topicIdPartition": TIP,
            "brokerId": 1,
            "eventTimestampMs": 9,
            "remotePartitionDeleteState": 2,
        },
    )
    assert format_remote_log_metadata(delete, 6) == (
        "RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAAAAAAAAAAAAA:orders-2, "
        "state=DELETE_PARTITION_FINISHED, "
        "eventTimestampMs=9, brokerId=1}"
    )
    assert decode_remote_log_metadata(delete)["data"]["remotePartitionDeleteState"] == 2
    assert format_remote_log_metadata(delete[:-3], 6).startswith("Error at offset 6, skipping. ")


def test_remote_log_metadata_decoder_flag(runner, tmp_path):
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    delete = _remote(
        2,
        {
            "topicIdPartition": TIP,
            "brokerId": 1,
            "eventTimestampMs": 9,
            "remotePartitionDeleteState": 0,
        },
    )
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_v2_batch([SimpleRecord(None, delete, 1_700_000_000_000)], 0))
    res = runner.invoke(cli, ["dump-log", "--files", str(path), "--remote-log-metadata-decoder"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[3].endswith(
        " payload: RemotePartitionDeleteMetadata{topicPartition="
        "AAAAAAAAAAAAAAAAAAAAAA:orders-2, state=DELETE_PARTITION_MARKED, "
        "eventTimestampMs=9, brokerId=1}"
    )


def test_kraft_voters_control_record():
    voters = write_struct(
        MESSAGES["VotersRecord"],
        {
            "version": 0,
            "voters": [
                {
                    "voterId": 1,
                    "voterDirectoryId": bytes(16),
                    "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
                    "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
                }
            ],
        },
        0,
    )
    assert format_raft_control("KRAFT_VOTERS", voters) == (
        ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
        '"endpoints":[{"name":"CONTROLLER","host":"h","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )


def test_write_struct_reads_back_a_nullable_tagged_struct():
    schema = MESSAGES["ConsumerGroupMemberMetadataValue"]
    fields = _sample_struct(schema.fields, 0)
    for classic in (None, fields["classicMemberMetadata"]):
        fields["classicMemberMetadata"] = classic
        from kafkalog_cli.formats.internal.kafka_protocol import Readable, read_struct

        assert read_struct(Readable(write_struct(schema, fields, 0)), schema, 0) == fields
    assert isinstance(schema, Struct)


def test_remote_log_metadata_that_kafka_refuses():
    seg = {
        "remoteLogSegmentId": SEGMENT,
        "startOffset": 5,
        "endOffset": 4,
        "brokerId": 1,
        "maxTimestampMs": 7,
        "eventTimestampMs": 8,
        "segmentSizeInBytes": 1,
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 5}],
        "remoteLogSegmentState": 0,
    }
    assert format_remote_log_metadata(_remote(0, seg), 3) == (
        "Error at offset 3, skipping. Unexpected end offset = 4. EndOffset for a remote segment cannot be less than "
        "startOffset = 5"
    )
    assert format_remote_log_metadata(
        _remote(0, {**seg, "endOffset": 9, "segmentLeaderEpochs": []}), 3
    ) == ("Error at offset 3, skipping. segmentLeaderEpochs can not be null or empty")
    assert format_remote_log_metadata(
        _remote(0, {**seg, "endOffset": 9, "remoteLogSegmentState": 9}), 3
    ) == ("Error at offset 3, skipping. state can not be null")
    delete = {
        "topicIdPartition": TIP,
        "brokerId": 1,
        "eventTimestampMs": 9,
        "remotePartitionDeleteState": 7,
    }
    assert format_remote_log_metadata(_remote(2, delete), 3) == "Error at offset 3, skipping. null"
    assert format_remote_log_metadata(bytes([1, 9, 0]), 3) == (
        "Error at offset 3, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 9"
    )


def test_kafka_4_2_metadata_text_from_the_library():
    from kafkalog_cli.formats.internal.cluster_metadata import (
        METADATA_SCHEMAS_42,
        format_metadata_record,
    )

    value = bytes([1, 28, 0]) + b"\x02t\x00"  # frame 1, ClearElrRecord v0: topicName "t", no tags
    assert format_metadata_record(value, 4) == (
        "Error at 4, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 28"
    )
    assert format_metadata_record(value, 4, METADATA_SCHEMAS_42) == (
        '{"type":"CLEAR_ELR_RECORD","version":0,"data":{"topicName":"t"}}'
    )


def test_control_values_in_json():
    from kafkalog_cli.errors import InvalidRecordError
    from kafkalog_cli.formats.internal.raft import decode_control_value

    assert decode_control_value("COMMIT", b"\0\0\0\0\0\5") is None
    assert decode_control_value("SNAPSHOT_HEADER", struct.pack(">hqb", 0, 12, 0)) == {
        "version": 0,
        "lastContainedLogTimestamp": 12,
    }
    # the Kafka text prints LEADER_CHANGE without reading it: JSON says it does not read, and goes on
    assert decode_control_value("LEADER_CHANGE", b"\0") == {
        "error": "java.nio.BufferUnderflowException"
    }
    with pytest.raises(InvalidRecordError):  # kafka-dump-log 4.2 dies on it
        decode_control_value("KRAFT_VERSION", b"\0")


METADATA = [w for w in WILD if w[2] == "--cluster-metadata-decoder"]


@pytest.mark.parametrize("fixture, name, flag", METADATA, ids=[w[0] for w in METADATA])
def test_every_record_of_a_kafka_4_metadata_log_decodes_in_kafka_4_2_text(
    runner, tmp_path, fixture, name, flag
):
    path = _unpacked(tmp_path, fixture, name)
    res = runner.invoke(
        cli, ["dump-log", "--files", path, flag, "--metadata-decoder-version", "4.2"]
    )
    assert res.exit_code == 0, res.stderr
    payloads = [
        ln.split(" payload: ", 1)[1]
        for ln in res.stdout.splitlines()
        if ln.startswith("| offset:") and " payload: " in ln
    ]
    assert payloads and "Unknown" not in res.stdout and "Error at" not in res.stdout
    for p in payloads:
        if not p.startswith(" "):  # a control record's text (KRaftVoters, LeaderChange) is not JSON
            assert json.loads(p)["type"].endswith("_RECORD")


def test_metadata_text_stays_kafka_3_3_1_by_default(runner, tmp_path):
    # 3.3.1 fails on the record versions a 4.2 broker writes (conformance holds it to that)
    path = _unpacked(tmp_path, "nomanazeem-cm-0-0.log.xz", "00000000000000000000.log")
    res = runner.invoke(cli, ["dump-log", "--files", path, "--cluster-metadata-decoder"])
    assert res.exit_code == 0, res.stderr
    assert "Error at" in res.stdout or "Unknown metadata id" in res.stdout
