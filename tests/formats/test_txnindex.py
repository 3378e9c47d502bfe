"""Aborted-transaction index against a real Kafka file."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.errors import CorruptIndexError
from kafkalog_cli.formats.txnindex import (
    AbortedTxn,
    aborted_txn_count,
    encode_aborted_txn,
    encode_txn_index,
    parse_txn_index,
    sanity_check,
)
from tests.helpers.paths import SMALL

REAL = (SMALL / "txn" / "00000000000000000000.txnindex").read_bytes()


def dump_line(t: AbortedTxn) -> str:  # DumpLogSegments.dumpTxnIndex's line
    return (
        f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
        f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}"
    )


def test_real_txnindex_matches_kafka_dump_log_and_reencodes():
    entries = parse_txn_index(REAL)
    golden = (SMALL / "txn" / "txnindex.dump-plain.stdout").read_text().splitlines()[1:]
    assert [dump_line(t) for t in entries] == golden
    assert entries == [AbortedTxn(0, 1, 6, 10, 11)]
    assert encode_txn_index(entries) == REAL
    sanity_check(entries, 0)


def test_trailing_partial_entry_is_ignored():
    assert parse_txn_index(REAL + REAL[:33]) == parse_txn_index(REAL)
    assert aborted_txn_count(len(REAL) * 2 + 33) == 2


def test_version_is_the_first_byte_only():
    second_byte_set = b"\x00\x07" + REAL[2:]
    assert parse_txn_index(second_byte_set)[0].version == 0
    negative = b"\xff\x00" + REAL[2:]  # signed byte -1: not "> 0", so Kafka accepts it
    assert parse_txn_index(negative)[0].version == -1
    assert encode_aborted_txn(parse_txn_index(negative)[0]) == negative


def test_newer_version_raises_with_kafka_message_and_position():
    data = REAL + b"\x01" + REAL[1:]
    with pytest.raises(CorruptIndexError) as e:
        parse_txn_index(data, path="/logs/t-0/00000000000000000000.txnindex")
    assert e.value.message == (
        "Unexpected aborted transaction version 1 in transaction index "
        "/logs/t-0/00000000000000000000.txnindex, current version is 0"
    )
    assert e.value.position == 34


def test_sanity_check_message():
    entries = [AbortedTxn(0, 1, 6, 10, 11), AbortedTxn(0, 2, 3, 4, 5)]
    with pytest.raises(CorruptIndexError) as e:
        sanity_check(entries, 5, path="x.txnindex")
    assert e.value.message == (
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=2, "
        "firstOffset=3, lastOffset=4, lastStableOffset=5) in index x.txnindex "
        "is less than start offset 5"
    )
    assert e.value.position == 34


def test_encode_requires_increasing_last_offsets():
    with pytest.raises(ValueError, match="must increase sequentially"):
        encode_txn_index([AbortedTxn(0, 1, 1, 5, 6), AbortedTxn(0, 2, 2, 5, 6)])


longs = st.integers(-(2**63), 2**63 - 1)


@given(
    st.lists(
        st.tuples(longs, longs, st.integers(-(2**62), 2**62), longs),
        max_size=30,
        unique_by=lambda t: t[2],
    )
)
def test_round_trip(rows):
    rows.sort(key=lambda t: t[2])
    entries = [AbortedTxn(0, pid, first, last, lso) for pid, first, last, lso in rows]
    data = encode_txn_index(entries)
    assert len(data) == 34 * len(entries)
    assert struct.unpack_from(">h", data)[0] == 0 if entries else True
    assert parse_txn_index(data) == entries
