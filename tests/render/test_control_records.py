"""Control records through both renderers: dump-log's Kafka text and its JSON Lines decode them with
the one decoder (formats.control), so they accept and reject the same bytes. Until issue 10 the
JSON renderer printed markers that kafka-dump-log rejects (a negative version, a value under 6
bytes) and snapshot headers and footers too short to hold their fields."""

from __future__ import annotations

import json
import struct

import pytest

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import ExitCode
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch


def control_log(tmp_path, key: bytes, value: bytes | None) -> str:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(
        build_v2_batch(
            [SimpleRecord(key, value, 1_700_000_000_000)],
            0,
            producer_id=7,
            producer_epoch=0,
            is_transactional=True,
            is_control=True,
        )
    )
    return str(path)


def dump(runner, path: str, fmt: str):
    return runner.invoke(cli, ["dump-log", "--files", path, "--deep-iteration", "--format", fmt])


GOOD = [
    (
        struct.pack(">hh", 0, 1),
        struct.pack(">hi", 0, 5),
        " endTxnMarker: COMMIT coordinatorEpoch: 5",
        {"type": "COMMIT", "type_id": 1, "version": 0, "coordinator_epoch": 5},
    ),
    # a marker of version 2 is read as version 0
    (
        struct.pack(">hh", 0, 0),
        struct.pack(">hi", 2, 9),
        " endTxnMarker: ABORT coordinatorEpoch: 9",
        {"type": "ABORT", "type_id": 0, "version": 2, "coordinator_epoch": 9},
    ),
    (
        struct.pack(">hh", 0, 3),
        struct.pack(">hq", 0, 12) + b"\0",
        ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":12}',
        {"type": "SNAPSHOT_HEADER", "type_id": 3},
    ),
    (
        struct.pack(">hh", 0, 4),
        b"\0\0\0",
        ' SnapshotFooter {"version":0}',
        {"type": "SNAPSHOT_FOOTER", "type_id": 4},
    ),
    (
        struct.pack(">hh", 0, 2),
        b"",
        " controlType: LEADER_CHANGE(2)",
        {"type": "LEADER_CHANGE", "type_id": 2},
    ),
    # kafka-dump-log 3.3.1 printed UNKNOWN(5); 4.2 decodes a KRaftVersionRecord
    (
        struct.pack(">hh", 0, 5),
        b"\0\0\0\1\0",
        ' KRaftVersion {"version":0,"kRaftVersion":1}',
        {"type": "KRAFT_VERSION", "type_id": 5},
    ),
    (
        struct.pack(">hh", 0, 77),
        None,
        " controlType: UNKNOWN(77)",
        {"type": "UNKNOWN", "type_id": 77},
    ),
]


@pytest.mark.parametrize(
    "key, value, text, obj", GOOD, ids=[g[2].split()[0] + str(i) for i, g in enumerate(GOOD)]
)
def test_both_renderers_show_a_control_record(runner, tmp_path, key, value, text, obj):
    path = control_log(tmp_path, key, value)
    res = dump(runner, path, "kafka")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[-1].endswith(text)
    res = dump(runner, path, "json")
    assert res.exit_code == 0, res.stderr
    (record,) = [o for o in map(json.loads, res.stdout.splitlines()) if o["kind"] == "record"]
    assert record["control"] == obj


# each with what the JSON renderer printed before issue 10 (now an error, as in Kafka text)
BAD = [
    (
        struct.pack(">hh", 0, 1),
        struct.pack(">hi", -1, 5),  # "version": -1, "coordinator_epoch": 5
        "Invalid version found for end transaction marker: -1. May indicate data corruption",
    ),
    (
        struct.pack(">hh", 0, 0),
        b"\0\0\0\0",  # {"type": "ABORT", "type_id": 0}
        "Invalid value size found for end transaction marker. Must have at least 6 bytes, but found only 4",
    ),
    (
        struct.pack(">hh", 0, 1),
        None,  # {"type": "COMMIT", "type_id": 1}
        "Invalid value size found for end transaction marker. Must have at least 6 bytes, but found only 0",
    ),
    (
        struct.pack(">hh", 0, 3),
        b"\0" * 9,
        "Found invalid SnapshotHeaderRecord",
    ),  # {"type": "SNAPSHOT_HEADER", ...}
    (
        struct.pack(">hh", 0, 4),
        b"",
        "Found invalid SnapshotFooterRecord",
    ),  # {"type": "SNAPSHOT_FOOTER", ...}
    # rejected by both already
    (
        struct.pack(">hh", -1, 1),
        struct.pack(">hi", 0, 5),
        "Invalid version found for control record: -1. May indicate data corruption",
    ),
]


@pytest.mark.parametrize("key, value, message", BAD, ids=[b[2][:40] for b in BAD])
def test_json_rejects_what_kafka_rejects_with_the_same_line(runner, tmp_path, key, value, message):
    path = control_log(tmp_path, key, value)
    text = dump(runner, path, "kafka")
    as_json = dump(runner, path, "json")
    assert text.exit_code == as_json.exit_code == ExitCode.CORRUPT
    assert text.stderr == as_json.stderr
    assert text.stderr.strip().endswith(message)
    # the batch is shown, the record is not
    assert [o["kind"] for o in map(json.loads, as_json.stdout.splitlines())] == ["file", "batch"]
