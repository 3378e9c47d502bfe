"""KRaft control records' values (LeaderChangeMessage, KRaftVersionRecord, VotersRecord,
SnapshotHeaderRecord, SnapshotFooterRecord), read
as Kafka 4.2's ControlRecordUtils reads them: always at the current version 0, then written as
JSON at the version their own `version` field holds (DumpLogSegments).
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.kafka_protocol import Readable, json_node, read_struct, to_json
from kafkalog_cli.formats.internal.schemas import MESSAGES

__all__ = [
    "RAFT_CONTROL_RECORDS",
    "decode_raft_control",
    "format_raft_control",
    "decode_control_value",
    "add_control_body",
]

# ControlRecordType name -> (the message, the word kafka-dump-log 4.2 prints before it)
RAFT_CONTROL_RECORDS = {
    "LEADER_CHANGE": ("LeaderChangeMessage", "LeaderChange:"),
    "KRAFT_VERSION": ("KRaftVersionRecord", "KRaftVersion"),
    "KRAFT_VOTERS": ("VotersRecord", "KRaftVoters"),
    "SNAPSHOT_HEADER": ("SnapshotHeaderRecord", "SnapshotHeader"),
    "SNAPSHOT_FOOTER": ("SnapshotFooterRecord", "SnapshotFooter"),
}


def decode_raft_control(control_type: str, value: bytes | memoryview | None) -> dict[str, Any]:
    """The value of a KRaft control record (a RAFT_CONTROL_RECORDS type) as its JsonConverter
    writes it. Raises InvalidRecordError where Kafka throws."""
    name, _ = RAFT_CONTROL_RECORDS[control_type]
    if value is None:
        raise InvalidRecordError(
            f"java.lang.NullPointerException: {control_type} control record without a value"
        )
    schema = MESSAGES[name]
    fields = read_struct(Readable(value), schema, 0)
    return json_node(schema, fields, fields["version"])


def format_raft_control(control_type: str, value: bytes | memoryview | None) -> str:
    """What kafka-dump-log 4.2 prints after a KRaft control record's metadata."""
    return f" {RAFT_CONTROL_RECORDS[control_type][1]} {to_json(decode_raft_control(control_type, value))}"


# the types whose value the Kafka text itself decodes (so a value that does not read stops it
# there); the others' values are decoded for JSON output only
TEXT_DECODES = frozenset({"KRAFT_VERSION", "KRAFT_VOTERS"})


def decode_control_value(
    control_type: str, value: bytes | memoryview | None
) -> dict[str, Any] | None:
    """A control record's value for JSON output: None for a transaction marker or an unknown
    type (nothing beyond the `control` object); `{"error": ...}` where a value the Kafka text
    does not decode does not read."""
    if control_type not in RAFT_CONTROL_RECORDS:
        return None
    try:
        return decode_raft_control(control_type, value)
    except InvalidRecordError as e:
        if control_type in TEXT_DECODES:
            raise
        return {"error": e.message}


def add_control_body(control: dict[str, Any], value: bytes | memoryview | None) -> None:
    """A JSON record's `control` object (type, type_id) with `body`, the value as kafka-dump-log
    4.1+ prints it after the metadata, for LeaderChange, KRaftVersion and KRaftVoters: a value that does not read
    stops the dump there (InvalidRecordError), as it stops Kafka's."""
    if control["type"] in BODY_IN_CONTROL:
        control["body"] = decode_raft_control(control["type"], value)


# the types kafka-dump-log 4.1+ decodes with their JSON converter (the snapshot header and footer
# it reads field by field: formats.control)
BODY_IN_CONTROL = frozenset({"LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"})
