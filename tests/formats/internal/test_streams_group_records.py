"""Kafka Streams group records (KIP-1071) in __consumer_offsets, as kafka-dump-log 4.2 prints them:
each record built with our encoder at Kafka 4.2.0's layout, then checked against the text and
JSON written out by hand here (not derived from the schema, so a wrong schema fails)."""
from __future__ import annotations

import json
import struct

import pytest

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.internal.coordinator import (
    Coordinator, decode_coordinator_record, format_coordinator_record,
)
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

TOPIC_ID = bytes(16)


def _record(record_type: int, name: str, key: dict, value: dict | None) -> tuple[bytes, bytes | None]:
    k = struct.pack(">h", record_type) + write_struct(MESSAGES[name + "Key"], key, record_type)
    if value is None:
        return k, None
    return k, b"\0\0" + write_struct(MESSAGES[name + "Value"], value, 0)


MEMBER_KEY = {"groupId": "app", "memberId": "m-1"}
MEMBER = {
    "instanceId": "i-1", "rackId": "r1", "clientId": "app-StreamThread-1", "clientHost": "/10.0.0.7",
    "rebalanceTimeoutMs": 300000, "topologyEpoch": 2, "processId": "p-uuid",
    "userEndpoint": {"host": "h1", "port": 8080},
    "clientTags": [{"key": "zone", "value": "a"}, {"key": "k\"q", "value": ""}],
}
MEMBER_NULLS = {**MEMBER, "instanceId": None, "rackId": None, "userEndpoint": None, "clientTags": []}
TASKS = {
    "activeTasks": [{"subtopologyId": "0", "partitions": [0, 2]}, {"subtopologyId": "1", "partitions": [1]}],
    "standbyTasks": [{"subtopologyId": "0", "partitions": [1]}],
    "warmupTasks": [],
}
TOPIC_INFO = {"name": "app-store-changelog", "partitions": 0, "replicationFactor": -1,
              "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}
TOPOLOGY = {"epoch": 2, "subtopologies": [{
    "subtopologyId": "0", "sourceTopics": ["input"], "sourceTopicRegex": ["in-.*"],
    "stateChangelogTopics": [TOPIC_INFO], "repartitionSinkTopics": ["app-rep"],
    "repartitionSourceTopics": [{**TOPIC_INFO, "name": "app-rep", "partitions": 4, "replicationFactor": 3,
                                 "topicConfigs": []}],
    "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0, -1]}],
}]}

# (record type, name, key, value, the key text, the payload text) as kafka-dump-log 4.2 prints them
CASES = [
    (19, "StreamsGroupMemberMetadata", MEMBER_KEY, MEMBER,
     '{"type":"19","data":{"groupId":"app","memberId":"m-1"}}',
     '{"version":"0","data":{"instanceId":"i-1","rackId":"r1","clientId":"app-StreamThread-1",'
     '"clientHost":"/10.0.0.7","rebalanceTimeoutMs":300000,"topologyEpoch":2,"processId":"p-uuid",'
     '"userEndpoint":{"host":"h1","port":8080},'
     '"clientTags":[{"key":"zone","value":"a"},{"key":"k\\"q","value":""}]}}'),
    (19, "StreamsGroupMemberMetadata", MEMBER_KEY, MEMBER_NULLS,
     '{"type":"19","data":{"groupId":"app","memberId":"m-1"}}',
     '{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"app-StreamThread-1",'
     '"clientHost":"/10.0.0.7","rebalanceTimeoutMs":300000,"topologyEpoch":2,"processId":"p-uuid",'
     '"userEndpoint":null,"clientTags":[]}}'),
    (20, "StreamsGroupTargetAssignmentMetadata", {"groupId": "app"}, {"assignmentEpoch": 7},
     '{"type":"20","data":{"groupId":"app"}}', '{"version":"0","data":{"assignmentEpoch":7}}'),
    (21, "StreamsGroupTargetAssignmentMember", MEMBER_KEY, TASKS,
     '{"type":"21","data":{"groupId":"app","memberId":"m-1"}}',
     '{"version":"0","data":{"activeTasks":[{"subtopologyId":"0","partitions":[0,2]},'
     '{"subtopologyId":"1","partitions":[1]}],"standbyTasks":[{"subtopologyId":"0","partitions":[1]}],'
     '"warmupTasks":[]}}'),
    (23, "StreamsGroupTopology", {"groupId": "app"}, TOPOLOGY,
     '{"type":"23","data":{"groupId":"app"}}',
     '{"version":"0","data":{"epoch":2,"subtopologies":[{"subtopologyId":"0","sourceTopics":["input"],'
     '"sourceTopicRegex":["in-.*"],"stateChangelogTopics":[{"name":"app-store-changelog","partitions":0,'
     '"replicationFactor":-1,"topicConfigs":[{"key":"cleanup.policy","value":"compact"}]}],'
     '"repartitionSinkTopics":["app-rep"],"repartitionSourceTopics":[{"name":"app-rep","partitions":4,'
     '"replicationFactor":3,"topicConfigs":[]}],"copartitionGroups":[{"sourceTopics":[0],'
     '"sourceTopicRegex":[],"repartitionSourceTopics":[0,-1]}]}]}}'),
]
IDS = [f"{c[0]}-{c[1]}" + ("-nulls" if c[3] is MEMBER_NULLS else "") for c in CASES]


@pytest.mark.parametrize("record_type, name, key, value, key_text, payload", CASES, ids=IDS)
def test_a_streams_group_record_prints_as_kafka_4_2_prints_it(record_type, name, key, value, key_text, payload):
    k, v = _record(record_type, name, key, value)
    assert format_coordinator_record(Coordinator.GROUP, k, v, 3) == (key_text, payload)
    assert format_coordinator_record(Coordinator.GROUP, k, None, 3) == (key_text, "<DELETE>")


@pytest.mark.parametrize("record_type, name, key, value, key_text, payload", CASES, ids=IDS)
def test_a_streams_group_record_in_json(record_type, name, key, value, key_text, payload):
    k, v = _record(record_type, name, key, value)
    decoded = decode_coordinator_record(Coordinator.GROUP, k, v)
    assert json.loads(json.dumps(decoded)) == {
        "type": {19: "streams_group_member_metadata", 20: "streams_group_target_assignment_metadata",
                 21: "streams_group_target_assignment_member", 23: "streams_group_topology"}[record_type],
        "record_type": record_type,
        "key": json.loads(key_text)["data"],
        "version": 0,
        "value": json.loads(payload)["data"],
    }


def test_a_member_endpoint_with_a_high_port_reads_unsigned():
    k, v = _record(19, "StreamsGroupMemberMetadata", MEMBER_KEY, {**MEMBER, "userEndpoint": {"host": "h", "port": 65535}})
    assert '"userEndpoint":{"host":"h","port":65535}' in format_coordinator_record(Coordinator.GROUP, k, v, 0)[1]


def test_an_unknown_tagged_field_of_a_later_kafka_is_skipped():
    # Kafka 4.3 adds the tagged AssignmentTimestamp (tag 0) to the target assignment metadata; 4.2
    # skips a tag it does not know, and so do we
    k, _ = _record(20, "StreamsGroupTargetAssignmentMetadata", {"groupId": "app"}, None)
    v = b"\0\0" + struct.pack(">i", 7) + b"\x01\x00\x08" + struct.pack(">q", 1_700_000_000_000)
    assert format_coordinator_record(Coordinator.GROUP, k, v, 0)[1] == '{"version":"0","data":{"assignmentEpoch":7}}'


def test_the_removed_partition_metadata_record_stays_unknown_as_in_kafka_4_2():
    # StreamsGroupPartitionMetadata (type 18) left Kafka before 4.1 (KIP-1101's metadata hash)
    key = struct.pack(">h", 18) + struct.pack(">h", 3) + b"app"
    assert format_coordinator_record(Coordinator.GROUP, key, b"\0\0\0", 12) == (
        "Unknown record type 18 at offset 12, skipping.", None)
    assert decode_coordinator_record(Coordinator.GROUP, key, b"\0\0\0") == {
        "error": "Unknown record type 18, skipping."}


def test_a_truncated_streams_record_is_an_error_line_not_a_traceback():
    k, v = _record(21, "StreamsGroupTargetAssignmentMember", MEMBER_KEY, TASKS)
    key_text, payload = format_coordinator_record(Coordinator.GROUP, k, v[:-4], 8)
    assert key_text.startswith("Error at offset 8, skipping. Could not read record with version 0 from value's buffer")
    assert payload is None


def _segment(tmp_path) -> str:
    records = [_record(c[0], c[1], c[2], c[3]) for c in CASES]
    records.append(_record(19, "StreamsGroupMemberMetadata", MEMBER_KEY, None))     # a tombstone
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_v2_batch([SimpleRecord(k, v, 1_700_000_000_000 + i) for i, (k, v) in enumerate(records)], 0))
    return str(path)


def test_dump_log_prints_streams_group_records_in_kafka_text(runner, tmp_path):
    res = runner.invoke(cli, ["dump-log", "--files", _segment(tmp_path), "--offsets-decoder"])
    assert res.exit_code == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("| offset:")]
    assert len(lines) == len(CASES) + 1
    for line, (_, _, _, _, key_text, payload) in zip(lines, CASES):
        assert line.endswith(f" key: {key_text} payload: {payload}")
    assert lines[-1].endswith(' key: {"type":"19","data":{"groupId":"app","memberId":"m-1"}} payload: <DELETE>')
    assert "Unknown" not in res.stdout


def test_dump_log_prints_streams_group_records_in_json(runner, tmp_path):
    res = runner.invoke(cli, ["dump-log", "--files", _segment(tmp_path), "--offsets-decoder", "--format", "json"])
    assert res.exit_code == 0, res.stderr
    decoded = [o["decoded"] for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "record"]
    assert [d["record_type"] for d in decoded] == [19, 19, 20, 21, 23, 19]
    assert decoded[4]["type"] == "streams_group_topology"
    assert decoded[4]["value"]["subtopologies"][0]["copartitionGroups"] == [
        {"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0, -1]}]
    assert decoded[1]["value"]["userEndpoint"] is None
    assert decoded[-1]["value"] is None and decoded[-1]["key"] == {"groupId": "app", "memberId": "m-1"}
