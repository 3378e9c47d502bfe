"""Producer snapshots against real Kafka files."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.errors import CorruptSnapshotError
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.producer_state import (
    ProducerSnapshot,
    ProducerSnapshotEntry,
    encode_producer_snapshot,
    parse_producer_snapshot,
)
from tests.helpers.paths import SMALL

TXN = (SMALL / "txn" / "00000000000000000015.snapshot").read_bytes()
IDEMPOTENT = (SMALL / "idempotent" / "00000000000000000030.snapshot").read_bytes()
EMPTY = (SMALL / "multi-segment" / "00000000000000000300.snapshot").read_bytes()


def dump_line(e: ProducerSnapshotEntry) -> str:
    """DumpLogSegments.dumpProducerIdSnapshot as 3.3.1 prints it (Option -> None / Some(n))."""
    txn = "None" if e.ongoing_txn_first_offset is None else f"Some({e.ongoing_txn_first_offset})"
    line = (
        f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: "
        f"{e.coordinator_epoch} currentTxnFirstOffset: {txn} lastTimestamp: {e.timestamp} "
    )
    if e.has_batch_metadata:
        line += (
            f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: "
            f"{e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
        )
    return line


@pytest.mark.parametrize(
    "data,golden",
    [
        (TXN, "txn/snapshot.dump-plain.stdout"),
        (IDEMPOTENT, "idempotent/snapshot.dump-plain.stdout"),
    ],
)
def test_real_snapshots_match_kafka_dump_log_and_reencode(data, golden):
    snap = parse_producer_snapshot(data)
    expected = (SMALL / golden).read_text().splitlines()[1:]
    assert [dump_line(e) for e in snap.entries] == expected
    assert snap.version == 1 and snap.crc == crc32c(data[6:])
    assert encode_producer_snapshot(snap.entries) == data


def test_empty_snapshot():
    snap = parse_producer_snapshot(EMPTY)
    assert snap == ProducerSnapshot(1, struct.unpack_from(">I", EMPTY, 2)[0], [])
    assert encode_producer_snapshot([]) == EMPTY


def test_crc_mismatch_message():
    bad = bytearray(IDEMPOTENT)
    bad[-1] ^= 1
    with pytest.raises(CorruptSnapshotError) as e:
        parse_producer_snapshot(bytes(bad), path="p.snapshot")
    stored = struct.unpack_from(">I", IDEMPOTENT, 2)[0]
    assert e.value.message == (
        f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
        f"Computed crc: {crc32c(bytes(bad[6:]))}"
    )
    assert str(e.value).startswith("p.snapshot: byte 2: Snapshot is corrupt")


def test_unknown_version_is_checked_before_crc():
    bad = b"\x00\x02" + IDEMPOTENT[2:-1] + b"\x00"
    assert bad[6:] != IDEMPOTENT[6:]
    with pytest.raises(CorruptSnapshotError) as e:
        parse_producer_snapshot(bad)
    assert e.value.message == "Snapshot contained an unknown file version 2"


@pytest.mark.parametrize(
    "cut,message,position",
    [
        (1, "Error reading field 'version': java.nio.BufferUnderflowException", 0),
        (5, "Error reading field 'crc': java.nio.BufferUnderflowException", 2),
        (9, "Error reading field 'producer_entries': java.nio.BufferUnderflowException", 6),
        (
            10 + 30,
            "Error reading field 'producer_entries': Error reading field 'timestamp': "
            "java.nio.BufferUnderflowException",
            10 + 26,
        ),
    ],
)
def test_truncated_snapshot_messages(cut, message, position):
    with pytest.raises(CorruptSnapshotError) as e:
        parse_producer_snapshot(IDEMPOTENT[:cut])
    assert e.value.message == "Snapshot failed schema validation: " + message
    assert e.value.position == position


def test_count_larger_than_bytes_and_negative_count():
    too_many = IDEMPOTENT[:6] + struct.pack(">i", 47) + IDEMPOTENT[10:]
    with pytest.raises(
        CorruptSnapshotError, match="Error reading array of size 47, only 46 bytes available"
    ):
        parse_producer_snapshot(too_many)
    negative = IDEMPOTENT[:6] + struct.pack(">i", -1)
    with pytest.raises(CorruptSnapshotError, match="Array size -1 cannot be negative"):
        parse_producer_snapshot(negative)


def test_first_sequence_wraps_like_kafka():
    e = ProducerSnapshotEntry(1, 0, 3, 100, 5, 0, -1, -1)
    assert e.first_sequence == 2**31 - 2  # decrementSequence(3, 5)


entries_strategy = st.lists(
    st.builds(
        ProducerSnapshotEntry,
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**15), 2**15 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
    ),
    max_size=20,
)


@given(entries_strategy)
def test_round_trip(entries):
    data = encode_producer_snapshot(entries)
    assert len(data) == 10 + 46 * len(entries)
    assert parse_producer_snapshot(data).entries == entries
