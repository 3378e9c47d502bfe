"""Control records: the one record of a control batch (ControlRecordType, EndTransactionMarker).

The key is `version int16 | type int16` (Kafka's ControlRecordType); the value depends on the
type: an EndTransactionMarker for ABORT and COMMIT, a SnapshotHeaderRecord or
SnapshotFooterRecord in a KRaft snapshot. Every reader (dump-log's text and JSON, the Arrow
rows, producer state, the cleaner) decodes them here, so they all accept and reject the same
bytes, by Kafka 3.3.1's rules.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from kafkalog_cli.errors import InvalidRecordError

_KEY = struct.Struct(">hh")  # version, type
_END_TXN = struct.Struct(">hi")  # version, coordinatorEpoch


class ControlRecordType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def parse(cls, key: bytes | None) -> ControlRecordType:
        """ControlRecordType.parse: the type of a control record's key."""
        return cls.from_type_id(parse_type_id(key))

    @classmethod
    def from_type_id(cls, type_id: int) -> ControlRecordType:
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_transaction_marker(self) -> bool:
        return self in (ControlRecordType.ABORT, ControlRecordType.COMMIT)


def _versioned(layout: struct.Struct, data: bytes | None, sized: str, versioned: str) -> tuple:
    """The fields of a key or value that starts with an int16 version: Kafka requires the
    current version's size and a version >= 0 (a newer one is read with the current layout)."""
    if data is None or len(data) < layout.size:
        raise InvalidRecordError(
            f"Invalid value size found for {sized}. Must have at least {layout.size} bytes, "
            f"but found only {0 if data is None else len(data)}"
        )
    fields = layout.unpack_from(data, 0)
    if fields[0] < 0:
        raise InvalidRecordError(
            f"Invalid version found for {versioned}: {fields[0]}. May indicate data corruption"
        )
    return fields


def parse_type_id(key: bytes | None) -> int:
    """ControlRecordType.parseTypeId: the type id as stored (an unknown one stays itself)."""
    return _versioned(_KEY, key, "end control record key", "control record")[1]


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The value of an ABORT or COMMIT record. `version` is as stored: Kafka reads any version
    above 0 as version 0 (the same two fields)."""

    control_type: ControlRecordType
    version: int
    coordinator_epoch: int

    @classmethod
    def deserialize_value(
        cls, control_type: ControlRecordType, value: bytes | None
    ) -> EndTransactionMarker:
        """EndTransactionMarker.deserializeValue (Kafka 3.3.1)."""
        if not control_type.is_transaction_marker:
            raise ValueError(
                f"Invalid control record type for end transaction marker {control_type.name}"
            )
        version, coordinator_epoch = _versioned(
            _END_TXN, value, "end transaction marker", "end transaction marker"
        )
        return cls(control_type, version, coordinator_epoch)


@dataclass(frozen=True, slots=True)
class SnapshotHeaderRecord:
    version: int
    last_contained_log_timestamp: int


@dataclass(frozen=True, slots=True)
class SnapshotFooterRecord:
    version: int


# the snapshot records' fixed fields, read as DumpLogSegments reads them (tagged fields ignored):
# version and lastContainedLogTimestamp; version
_SNAPSHOT_RECORDS = {
    ControlRecordType.SNAPSHOT_HEADER: (SnapshotHeaderRecord, struct.Struct(">hq")),
    ControlRecordType.SNAPSHOT_FOOTER: (SnapshotFooterRecord, struct.Struct(">h")),
}


def _snapshot_record(ctype: ControlRecordType, value: bytes | None):
    cls, layout = _SNAPSHOT_RECORDS[ctype]
    if value is None or len(value) < layout.size:
        raise InvalidRecordError(f"Found invalid {cls.__name__}")
    return cls(*layout.unpack_from(value, 0))


ControlValue = EndTransactionMarker | SnapshotHeaderRecord | SnapshotFooterRecord


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record. `type_id` is the stored type (UNKNOWN's id is whatever the key
    says); `value` is None for the types whose value is not decoded (LEADER_CHANGE, KRaft
    version and voters, unknown types), as kafka-dump-log 3.3.1 does not decode them."""

    type: ControlRecordType
    type_id: int
    value: ControlValue | None = None


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """The key, then the value as its type says (DumpLogSegments' control branch): raises
    InvalidRecordError where Kafka raises."""
    type_id = parse_type_id(key)
    ctype = ControlRecordType.from_type_id(type_id)
    if ctype.is_transaction_marker:
        decoded: ControlValue | None = EndTransactionMarker.deserialize_value(ctype, value)
    elif ctype in _SNAPSHOT_RECORDS:
        decoded = _snapshot_record(ctype, value)
    else:
        decoded = None
    return ControlRecord(ctype, type_id, decoded)
