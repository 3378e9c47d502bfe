"""formats.control: control records decoded and rejected as Kafka 3.3.1 does (ControlRecordType.parse,
EndTransactionMarker.deserializeValue, DumpLogSegments' snapshot header and footer)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.control import (
    ControlRecord,
    ControlRecordType,
    EndTransactionMarker,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    decode_control,
)


def key(type_id: int, version: int = 0) -> bytes:
    return struct.pack(">hh", version, type_id)


def marker(coordinator_epoch: int, version: int = 0) -> bytes:
    return struct.pack(">hi", version, coordinator_epoch)


def test_each_type_decodes_to_its_value():
    assert decode_control(key(0), marker(7)) == ControlRecord(
        ControlRecordType.ABORT, 0, EndTransactionMarker(ControlRecordType.ABORT, 0, 7)
    )
    assert decode_control(key(1), marker(-3)).value == EndTransactionMarker(
        ControlRecordType.COMMIT, 0, -3
    )
    assert decode_control(
        key(3), struct.pack(">hq", 0, 1_700_000_000_000) + b"\0"
    ).value == SnapshotHeaderRecord(0, 1_700_000_000_000)
    assert decode_control(key(4), struct.pack(">h", 0) + b"\0").value == SnapshotFooterRecord(0)
    # values kafka-dump-log 3.3.1 does not decode
    for type_id, ctype in (
        (2, ControlRecordType.LEADER_CHANGE),
        (5, ControlRecordType.KRAFT_VERSION),
        (6, ControlRecordType.KRAFT_VOTERS),
        (99, ControlRecordType.UNKNOWN),
        (-7, ControlRecordType.UNKNOWN),
    ):
        assert decode_control(key(type_id), None) == ControlRecord(ctype, type_id, None)


def test_newer_versions_are_read_as_version_0():
    assert decode_control(key(1, version=3), marker(9, version=2)).value == EndTransactionMarker(
        ControlRecordType.COMMIT, 2, 9
    )
    assert (
        decode_control(key(1, version=3) + b"more", marker(9) + b"more").value.coordinator_epoch
        == 9
    )


@pytest.mark.parametrize(
    "k, v, message",
    [
        (None, None, "end control record key. Must have at least 4 bytes, but found only 0"),
        (b"\0\0\0", None, "end control record key. Must have at least 4 bytes, but found only 3"),
        (
            key(1, version=-1),
            marker(0),
            "Invalid version found for control record: -1. May indicate data corruption",
        ),
        (key(0), None, "end transaction marker. Must have at least 6 bytes, but found only 0"),
        (
            key(1),
            b"\0\0\0\0\0",
            "end transaction marker. Must have at least 6 bytes, but found only 5",
        ),
        (
            key(0),
            marker(5, version=-2),
            "Invalid version found for end transaction marker: -2. May indicate data corruption",
        ),
        (key(3), b"\0" * 9, "Found invalid SnapshotHeaderRecord"),
        (key(4), b"\0", "Found invalid SnapshotFooterRecord"),
    ],
)
def test_what_kafka_rejects_is_an_invalid_record(k, v, message):
    with pytest.raises(InvalidRecordError, match=message):
        decode_control(k, v)


def test_a_marker_is_only_an_abort_or_a_commit():
    with pytest.raises(ValueError):
        EndTransactionMarker.deserialize_value(ControlRecordType.LEADER_CHANGE, marker(1))


def test_the_key_alone_is_parsed_by_control_record_type():
    assert ControlRecordType.parse(key(1)) == ControlRecordType.COMMIT
    assert ControlRecordType.parse(key(42)) == ControlRecordType.UNKNOWN
    with pytest.raises(InvalidRecordError):
        ControlRecordType.parse(key(0, version=-5))


@given(k=st.binary(max_size=8), v=st.none() | st.binary(max_size=12))
def test_any_bytes_decode_or_are_an_invalid_record(k, v):
    try:
        c = decode_control(k, v)
    except InvalidRecordError:
        return
    assert c.type_id == struct.unpack_from(">h", k, 2)[0]
    assert (c.value is not None) == (
        c.type
        in (
            ControlRecordType.ABORT,
            ControlRecordType.COMMIT,
            ControlRecordType.SNAPSHOT_HEADER,
            ControlRecordType.SNAPSHOT_FOOTER,
        )
    )
