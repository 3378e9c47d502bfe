"""Kafka Streams group records (KIP-1071) in __consumer_offsets, as kafka-dump-log 4.2 prints them:
each record built with our encoder at Kafka 4.2.0's layout, then checked against the text and
JSON written out by hand here (not derived from the schema, so a wrong schema fails)."""

from __future__ import annotations

import json
import struct

import pytest

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.internal.coordinator import (
    Coordinator,
    decode_coordinator_record,
    format_coordinator_record,
)
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

TOPIC_ID = bytes(16)


def _record(
    record_type: int, name: str, key: dict, value: dict | None
) -> tuple[bytes, bytes | None]:
    k = struct.pack(">h", record_type) + write_struct(MESSAGES[name + "Key"], key, record_type)
    if value is None:
        return k, None
    return k, b"\0\0" + write_struct(MESSAGES[name + "Value"], value, 0)


MEMBER_KEY = {"groupId": "app", "memberId": "m-1"}
MEMBER = {
    "instanceId": "i-1",
    "rackId": "r1",
    "clientId": "app-StreamThread-1",
    "clientHost": "/10.0.0.7",
    "rebalanceTimeoutMs": 300000,
    "topologyEpoch": 2,
    "processId": "p-uuid",
    "userEndpoint": {"host": "h1", "port": 8080},
    "clientTags": [{"key": "zone", "value": "a"}, {"key": 'k"q', "value": ""}],
}
MEMBER_NULLS = {
    **MEMBER,
    "instanceId": None,
    "rackId": None,
    "userEndpoint": None,
    "clientTags": [],
}
TASKS = {
    "activeTasks": [
        {"subtopologyId": "0", "partitions": [0, 2]},
        {"subtopologyId": "1", "partitions": [1]},
    ],
    "standbyTasks": [{"subtopologyId": "0", "partitions": [1]}],
    "warmupTasks": [],
}
TOPIC_INFO = {
    "name": "app-store-changelog",
    "partitions": 0,
    "replicationFactor": -1,
    "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}],
}
TOPOLOGY = {
    "epoch": 2,
    "subtopologies": [
        {
            "subtopologyId": "0",
            "sourceTopics": ["input"],
            "sourceTopicRegex": ["in-.*"],
            "stateChangelogTopics": [TOPIC_INFO],
            "repartitionSinkTopics": ["app-rep"],
            "repartitionSourceTopics": [
                {
                    **TOPIC_INFO,
                    "name": "app-rep",
                    "partitions": 4,
                    "replicationFactor": 3,
                    "topicConfigs": [],
                }
            ],
            "copartitionGroups": [
                {"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0, -1]}
            ],
        }
    ],
}

# (record type, name, key, value, the key text, the payload text) as kafka-dump-log 4.2 prints them
CASES = [
    (
        19,
        "StreamsGroupMemberMetadata",
        MEMBER_KEY,
        MEMBER,
        '{"type":"19","data":{"groupId":"app","memberId":"m-1"}}',
        '{"version":"0","data":{"instanceId":"i-1","rackId":"r1","clientId":"app-StreamThread-1",'
        '"clientHost":"/10.0.0.7","rebalanceTimeoutMs":300000,"topologyEpoch":2,"processId":"p-uuid",'
        '"userEndpoint":{"host":"h1","port":8080},'
        '"clientTags":[{"key":"zone","value":"a"},{"key":"k\\"q","value":""}]}}',
    ),
    (
        19,
        "StreamsGroupMemberMetadata",
        MEMBER_KEY,
        MEMBER_NULLS,
        '{"type":"19","data":{"groupId":"app","memberId":"m-1"}}',
        '{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"app-StreamThread-1",'
        '"clientHost":"/10.0.0.7","rebalanceTimeoutMs":300000,"topologyEpoch":2,"processId":"p-uuid",'
        '"userEndpoint":null,"clientTags":[]}}',
    ),
    (
        20,
        "StreamsGroupTargetAssignmentMetadata",
        {"groupId": "app"},
        {"assignmentEpoch": 7},
        '{"type":"20","data":{"groupId":"app"}}',
        '{"version":"0","data":{"assignmentEpoch":7}}',
    ),
    (
        21,
        "StreamsGroupTargetAssignmentMember",
        MEMBER_KEY,
        TASKS,
        '{"type":"21","data":{"groupId":"app","memberId":"m-1"}}',
        '{"version":"0","data":{"activeTasks":[{"subtopologyId":"0","partitions":[0,2]},'
        '{"subtopologyId":"1","partitions":[1]}],"standbyTasks":[{"subtopologyId":"0","partitions":[1]}],'
        '"warmupTasks":[]}}',
    ),
    (
        23,
        "StreamsGroupTopology",
        {"groupId": "app"},
        TOPOLOGY,
        '{"type":"23","data":{"groupId":"app"}}',
        '{"version":"0","data":{"epoch":2,"subtopologies":[{"subtopologyId":"0","sourceTopics":["input"],'
        '"sourceTopicRegex":["in-.*"],"stateChangelogTopics":[{"name":"app-store-changelog","partitions":0,'
        '"replicationFactor":-1,"topicConfigs":[{"key":"cleanup.policy","value":"compact"}]}],'
        '"repartitionSinkTopics":["app-rep"],"repartitionSourceTopics":[{"name":"app-rep","partitions":4,'
        '"replicationFactor":3,"topicConfigs":[]}],"copartitionGroups":[{"sourceTopics":[0],'
        '"sourceTopicRegex":[],"repartitionSourceTopics":[0,-1]}]}]}}',
    ),
]
# Kafka 4.2 writes the group metadata with its last assignment configs; a record of 4.1 has neither
# tagged field, an empty config map is written as []
GROUP_METADATA = {
    "epoch": 12,
    "metadataHash": -8_070_450_532_247_928_832,
    "validatedTopologyEpoch": 2,
    "lastAssignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}],
}
GROUP_METADATA_4_1 = {
    "epoch": 3,
    "metadataHash": 0,
    "validatedTopologyEpoch": -1,
    "lastAssignmentConfigs": None,
}
GROUP_METADATA_NO_CONFIGS = {
    **GROUP_METADATA_4_1,
    "validatedTopologyEpoch": 0,
    "lastAssignmentConfigs": [],
}
# active tasks carry their assignment epochs, standby and warm-up tasks none
CURRENT_ASSIGNMENT = {
    "memberEpoch": 12,
    "previousMemberEpoch": 11,
    "state": 1,
    "activeTasks": [{"subtopologyId": "0", "partitions": [0, 2], "assignmentEpochs": [10, 12]}],
    "standbyTasks": [{"subtopologyId": "1", "partitions": [3], "assignmentEpochs": None}],
    "warmupTasks": [],
    "activeTasksPendingRevocation": [
        {"subtopologyId": "1", "partitions": [1], "assignmentEpochs": [9]}
    ],
    "standbyTasksPendingRevocation": [],
    "warmupTasksPendingRevocation": [
        {"subtopologyId": "0", "partitions": [5], "assignmentEpochs": None}
    ],
}
# a record of Kafka 4.1: no assignment epochs; an empty list is not null
CURRENT_ASSIGNMENT_4_1 = {
    "memberEpoch": 3,
    "previousMemberEpoch": 2,
    "state": 0,
    "activeTasks": [
        {"subtopologyId": "0", "partitions": [0, 1], "assignmentEpochs": None},
        {"subtopologyId": "2", "partitions": [], "assignmentEpochs": []},
    ],
    "standbyTasks": [],
    "warmupTasks": [],
    "activeTasksPendingRevocation": [],
    "standbyTasksPendingRevocation": [],
    "warmupTasksPendingRevocation": [],
}
CASES += [
    (
        17,
        "StreamsGroupMetadata",
        {"groupId": "app"},
        GROUP_METADATA,
        '{"type":"17","data":{"groupId":"app"}}',
        '{"version":"0","data":{"epoch":12,"metadataHash":-8070450532247928832,"validatedTopologyEpoch":2,'
        '"lastAssignmentConfigs":[{"key":"num.standby.replicas","value":"1"}]}}',
    ),
    (
        17,
        "StreamsGroupMetadata",
        {"groupId": "app"},
        GROUP_METADATA_4_1,
        '{"type":"17","data":{"groupId":"app"}}',
        '{"version":"0","data":{"epoch":3,"metadataHash":0}}',
    ),
    (
        17,
        "StreamsGroupMetadata",
        {"groupId": "app"},
        GROUP_METADATA_NO_CONFIGS,
        '{"type":"17","data":{"groupId":"app"}}',
        '{"version":"0","data":{"epoch":3,"metadataHash":0,"validatedTopologyEpoch":0,"lastAssignmentConfigs":[]}}',
    ),
    (
        22,
        "StreamsGroupCurrentMemberAssignment",
        MEMBER_KEY,
        CURRENT_ASSIGNMENT,
        '{"type":"22","data":{"groupId":"app","memberId":"m-1"}}',
        '{"version":"0","data":{"memberEpoch":12,"previousMemberEpoch":11,"state":1,'
        '"activeTasks":[{"subtopologyId":"0","partitions":[0,2],"assignmentEpochs":[10,12]}],'
        '"standbyTasks":[{"subtopologyId":"1","partitions":[3]}],"warmupTasks":[],'
        '"activeTasksPendingRevocation":[{"subtopologyId":"1","partitions":[1],"assignmentEpochs":[9]}],'
        '"standbyTasksPendingRevocation":[],'
        '"warmupTasksPendingRevocation":[{"subtopologyId":"0","partitions":[5]}]}}',
    ),
    (
        22,
        "StreamsGroupCurrentMemberAssignment",
        MEMBER_KEY,
        CURRENT_ASSIGNMENT_4_1,
        '{"type":"22","data":{"groupId":"app","memberId":"m-1"}}',
        '{"version":"0","data":{"memberEpoch":3,"previousMemberEpoch":2,"state":0,'
        '"activeTasks":[{"subtopologyId":"0","partitions":[0,1]},'
        '{"subtopologyId":"2","partitions":[],"assignmentEpochs":[]}],'
        '"standbyTasks":[],"warmupTasks":[],"activeTasksPendingRevocation":[],'
        '"standbyTasksPendingRevocation":[],"warmupTasksPendingRevocation":[]}}',
    ),
]
IDS = [
    "19-member",
    "19-member-nulls",
    "20-target-metadata",
    "21-target-member",
    "23-topology",
    "17-group-metadata",
    "17-group-metadata-of-4.1",
    "17-group-metadata-no-configs",
    "22-current-assignment",
    "22-current-assignment-of-4.1",
]


@pytest.mark.parametrize("record_type, name, key, value, key_text, payload", CASES, ids=IDS)
def test_a_streams_group_record_prints_as_kafka_4_2_prints_it(
    record_type, name, key, value, key_text, payload
):
    k, v = _record(record_type, name, key, value)
    assert format_coordinator_record(Coordinator.GROUP, k, v, 3) == (key_text, payload)
    assert format_coordinator_record(Coordinator.GROUP, k, None, 3) == (key_text, "<DELETE>")


@pytest.mark.parametrize("record_type, name, key, value, key_text, payload", CASES, ids=IDS)
def test_a_streams_group_record_in_json(record_type, name, key, value, key_text, payload):
    k, v = _record(record_type, name, key, value)
    decoded = decode_coordinator_record(Coordinator.GROUP, k, v)
    assert json.loads(json.dumps(decoded)) == {
        "type": {
            17: "streams_group_metadata",
            19: "streams_group_member_metadata",
            20: "streams_group_target_assignment_metadata",
            21: "streams_group_target_assignment_member",
            22: "streams_group_current_member_assignment",
            23: "streams_group_topology",
        }[record_type],
        "record_type": record_type,
        "key": json.loads(key_text)["data"],
        "version": 0,
        "value": json.loads(payload)["data"],
    }


def test_a_member_endpoint_with_a_high_port_reads_unsigned():
    k, v = _record(
        19,
        "StreamsGroupMemberMetadata",
        MEMBER_KEY,
        {**MEMBER, "userEndpoint": {"host": "h", "port": 65535}},
    )
    assert (
        '"userEndpoint":{"host":"h","port":65535}'
        in format_coordinator_record(Coordinator.GROUP, k, v, 0)[1]
    )


def test_an_unknown_tagged_field_of_a_later_kafka_is_skipped():
    # Kafka 4.3 adds the tagged AssignmentTimestamp (tag 0) to the target assignment metadata; 4.2
    # skips a tag it does not know, and so do we
    k, _ = _record(20, "StreamsGroupTargetAssignmentMetadata", {"groupId": "app"}, None)
    v = b"\0\0" + struct.pack(">i", 7) + b"\x01\x00\x08" + struct.pack(">q", 1_700_000_000_000)
    assert (
        format_coordinator_record(Coordinator.GROUP, k, v, 0)[1]
        == '{"version":"0","data":{"assignmentEpoch":7}}'
    )


def test_the_group_metadata_tags_are_kafkas_and_a_later_tag_is_skipped():
    # written out byte by byte: tag 0 ValidatedTopologyEpoch, tag 1 the last assignment configs (a
    # compact array of {key, value} structs), tag 2 a KIP-1331 topology epoch of a Kafka after 4.2
    k, _ = _record(17, "StreamsGroupMetadata", {"groupId": "app"}, None)
    configs = b"\x02" + b"\x04nsr" + b"\x021" + b"\x00"
    v = (
        b"\0\0"
        + struct.pack(">iq", 12, 5)
        + b"\x03"
        + b"\x00\x04"
        + struct.pack(">i", 2)
        + b"\x01"
        + bytes([len(configs)])
        + configs
        + b"\x02\x04"
        + struct.pack(">i", 7)
    )
    assert format_coordinator_record(Coordinator.GROUP, k, v, 0)[1] == (
        '{"version":"0","data":{"epoch":12,"metadataHash":5,"validatedTopologyEpoch":2,'
        '"lastAssignmentConfigs":[{"key":"nsr","value":"1"}]}}'
    )
    # the configs written as null (compact length 0) print as Kafka prints its default: not at all
    v = b"\0\0" + struct.pack(">iq", 12, 5) + b"\x01" + b"\x01\x01\x00"
    assert format_coordinator_record(Coordinator.GROUP, k, v, 0)[1] == (
        '{"version":"0","data":{"epoch":12,"metadataHash":5}}'
    )


def test_the_assignment_epochs_are_tag_0_of_a_task_list_entry():
    k, _ = _record(22, "StreamsGroupCurrentMemberAssignment", MEMBER_KEY, None)
    epochs = b"\x03" + struct.pack(">ii", 10, 12)
    active = (
        b"\x02"
        + b"\x020"
        + b"\x03"
        + struct.pack(">ii", 0, 2)
        + b"\x01"
        + b"\x00"
        + bytes([len(epochs)])
        + epochs
    )
    v = b"\0\0" + struct.pack(">iib", 12, 11, 1) + active + b"\x01" * 5 + b"\x00"
    assert format_coordinator_record(Coordinator.GROUP, k, v, 0)[1] == (
        '{"version":"0","data":{"memberEpoch":12,"previousMemberEpoch":11,"state":1,'
        '"activeTasks":[{"subtopologyId":"0","partitions":[0,2],"assignmentEpochs":[10,12]}],'
        '"standbyTasks":[],"warmupTasks":[],"activeTasksPendingRevocation":[],'
        '"standbyTasksPendingRevocation":[],"warmupTasksPendingRevocation":[]}}'
    )
    # and our encoder writes those same bytes
    assert (
        _record(
            22,
            "StreamsGroupCurrentMemberAssignment",
            MEMBER_KEY,
            {
                "memberEpoch": 12,
                "previousMemberEpoch": 11,
                "state": 1,
                "activeTasks": [
                    {"subtopologyId": "0", "partitions": [0, 2], "assignmentEpochs": [10, 12]}
                ],
            },
        )[1]
        == v
    )


def test_the_removed_partition_metadata_record_stays_unknown_as_in_kafka_4_2():
    # StreamsGroupPartitionMetadata (type 18) left Kafka before 4.1 (KIP-1101's metadata hash)
    key = struct.pack(">h", 18) + struct.pack(">h", 3) + b"app"
    assert format_coordinator_record(Coordinator.GROUP, key, b"\0\0\0", 12) == (
        "Unknown record type 18 at offset 12, skipping.",
        None,
    )
    assert decode_coordinator_record(Coordinator.GROUP, key, b"\0\0\0") == {
        "error": "Unknown record type 18, skipping."
    }


def test_a_truncated_streams_record_is_an_error_line_not_a_traceback():
    k, v = _record(21, "StreamsGroupTargetAssignmentMember", MEMBER_KEY, TASKS)
    key_text, payload = format_coordinator_record(Coordinator.GROUP, k, v[:-4], 8)
    assert key_text.startswith(
        "Error at offset 8, skipping. Could not read record with version 0 from value's buffer"
    )
    assert payload is None


def _segment(tmp_path) -> str:
    records = [_record(c[0], c[1], c[2], c[3]) for c in CASES]
    records.append(_record(19, "StreamsGroupMemberMetadata", MEMBER_KEY, None))  # a tombstone
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(
        build_v2_batch(
            [SimpleRecord(k, v, 1_700_000_000_000 + i) for i, (k, v) in enumerate(records)], 0
        )
    )
    return str(path)


def test_dump_log_prints_streams_group_records_in_kafka_text(runner, tmp_path):
    res = runner.invoke(cli, ["dump-log", "--files", _segment(tmp_path), "--offsets-decoder"])
    assert res.exit_code == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("| offset:")]
    assert len(lines) == len(CASES) + 1
    for line, (_, _, _, _, key_text, payload) in zip(lines, CASES):
        assert line.endswith(f" key: {key_text} payload: {payload}")
    assert lines[-1].endswith(
        ' key: {"type":"19","data":{"groupId":"app","memberId":"m-1"}} payload: <DELETE>'
    )
    assert "Unknown" not in res.stdout


def test_dump_log_prints_streams_group_records_in_json(runner, tmp_path):
    res = runner.invoke(
        cli, ["dump-log", "--files", _segment(tmp_path), "--offsets-decoder", "--format", "json"]
    )
    assert res.exit_code == 0, res.stderr
    decoded = [
        o["decoded"] for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "record"
    ]
    assert [d["record_type"] for d in decoded] == [19, 19, 20, 21, 23, 17, 17, 17, 22, 22, 19]
    assert decoded[5]["value"]["lastAssignmentConfigs"] == [
        {"key": "num.standby.replicas", "value": "1"}
    ]
    assert "lastAssignmentConfigs" not in decoded[6]["value"]
    assert decoded[8]["value"]["activeTasks"] == [
        {"subtopologyId": "0", "partitions": [0, 2], "assignmentEpochs": [10, 12]}
    ]
    assert decoded[8]["value"]["standbyTasks"] == [{"subtopologyId": "1", "partitions": [3]}]
    assert decoded[4]["type"] == "streams_group_topology"
    assert decoded[4]["value"]["subtopologies"][0]["copartitionGroups"] == [
        {"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0, -1]}
    ]
    assert decoded[1]["value"]["userEndpoint"] is None
    assert decoded[-1]["value"] is None and decoded[-1]["key"] == {
        "groupId": "app",
        "memberId": "m-1",
    }
