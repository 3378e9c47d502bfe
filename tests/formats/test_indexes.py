"""Offset and time indexes against real Kafka files (tests/fixtures/small/SOURCES.md)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import CorruptIndexError
from kafkalog_cli.formats.indexes import (
    IndexBuilder,
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_index,
    encode_time_index,
    lookup_offset,
    lookup_timestamp,
    offset_index_entry_count,
    parse_offset_index,
    parse_time_index,
    sanity_check_offset_index,
    sanity_check_time_index,
    time_index_entry_count,
)
from tests.helpers.paths import SMALL

PREALLOCATED_INDEX = 10485760  # recover/unclean-kill/PREALLOCATED.txt
PREALLOCATED_TIMEINDEX = 10485756


def read(rel: str) -> bytes:
    return (SMALL / rel).read_bytes()


def padded(rel: str, length: int) -> bytes:
    """The broker's preallocated file: the stored entries followed by zeros up to `length`."""
    data = read(rel)
    return data + bytes(length - len(data))


def v2_batches(log: bytes):
    """(position, size, lastOffset, maxTimestamp) per v2 batch, straight from the header bytes."""
    pos = 0
    while pos + 61 <= len(log):
        base, batch_length = struct.unpack_from(">qi", log, pos)
        assert log[pos + 16] == 2
        (last_delta,) = struct.unpack_from(">i", log, pos + 23)
        (max_ts,) = struct.unpack_from(">q", log, pos + 35)
        size = batch_length + 12
        yield pos, size, base + last_delta, max_ts
        pos += size
    assert pos == len(log)


def dumped_lines(rel: str) -> list[str]:
    return read(rel).decode().splitlines()[1:]  # drop "Dumping <path>"


# --- reading real files ----------------------------------------------------------------------


def test_preallocated_index_reads_like_kafka_dump_log():
    buf = padded("unclean-kill/00000000000000000600.index", PREALLOCATED_INDEX)
    entries = parse_offset_index(buf, 600)
    printed = [f"offset: {e.offset} position: {e.position}" for e in entries]
    assert printed == dumped_lines("unclean-kill/600.index.dump-plain.stdout")
    assert len(entries) == 9
    # without the stop rule Kafka's entry count includes every zero slot
    assert offset_index_entry_count(len(buf)) == 1310720
    assert len(parse_offset_index(buf[:200], 600, stop_at_zero=False)) == 25


def test_preallocated_time_index_reads_like_kafka_dump_log():
    buf = padded("unclean-kill/00000000000000000600.timeindex", PREALLOCATED_TIMEINDEX)
    entries = parse_time_index(buf, 600)
    printed = [f"timestamp: {e.timestamp} offset: {e.offset}" for e in entries]
    assert printed == dumped_lines("unclean-kill/600.timeindex.dump-plain.stdout")
    assert time_index_entry_count(len(buf)) == 873813


def test_stop_rule_keeps_entry_zero_at_base_offset():
    # entry 0 may legitimately sit at the base offset; only i > 0 marks padding
    buf = encode_time_index([TimeIndexEntry(5, 100)], 100) + bytes(24)
    assert parse_time_index(buf, 100) == [TimeIndexEntry(5, 100)]
    assert parse_time_index(buf, 100, stop_at_zero=False)[1:] == [TimeIndexEntry(0, 100)] * 2


def test_stop_rule_stops_at_the_first_zero_offset_after_entry_zero():
    # a zero relative offset ends the entries even when real-looking slots follow it (DumpLogSegments)
    slots = [(0, 0), (3, 4096), (0, 8192), (7, 12288)]
    buf = b"".join(struct.pack(">ii", rel, pos) for rel, pos in slots) + b"\x00\x00\x01"
    assert parse_offset_index(buf, 10) == [OffsetIndexEntry(10, 0), OffsetIndexEntry(13, 4096)]
    assert parse_offset_index(buf, 10, stop_at_zero=False) == [
        OffsetIndexEntry(10 + r, p) for r, p in slots
    ]
    tbuf = b"".join(struct.pack(">qi", 5 + i, rel) for i, (rel, _) in enumerate(slots))
    assert parse_time_index(tbuf, 10) == [TimeIndexEntry(5, 10), TimeIndexEntry(6, 13)]
    assert parse_time_index(tbuf, 10, stop_at_zero=False)[3] == TimeIndexEntry(8, 17)
    for data in (b"", b"\x00" * 7):
        assert (
            parse_offset_index(data, 10) == parse_offset_index(data, 10, stop_at_zero=False) == []
        )
    assert parse_offset_index(bytes(8), 10) == [OffsetIndexEntry(10, 0)]


def test_trailing_partial_entry_is_ignored():
    data = read("recover-missing-index/00000000000000000185.index")
    assert parse_offset_index(data + b"\x00\x00\x01", 185) == parse_offset_index(data, 185)


@pytest.mark.parametrize(
    "rel,base",
    [
        ("recover-missing-index/00000000000000000185", 185),
        ("multi-segment/00000000000000000300", 300),
        ("unclean-kill/after/00000000000000000600", 600),
    ],
)
def test_real_indexes_reencode_byte_identical(rel, base):
    oi, ti = read(rel + ".index"), read(rel + ".timeindex")
    offsets, times = parse_offset_index(oi, base), parse_time_index(ti, base)
    assert offsets and times
    assert encode_offset_index(offsets, base) == oi
    assert encode_time_index(times, base) == ti
    sanity_check_offset_index(oi, base)
    sanity_check_time_index(ti, base)


# --- rebuilding: the broker's own output is the oracle ---------------------------------------


@pytest.mark.parametrize(
    "rel,base",
    [
        ("recover-missing-index/00000000000000000185", 185),  # rebuilt by LogSegment.recover
        ("unclean-kill/after/00000000000000000600", 600),  # recovered after kill -9
    ],
)
def test_rebuild_matches_broker_recovery(rel, base):
    b = IndexBuilder(base, index_interval_bytes=512)
    for batch in v2_batches(read(rel + ".log")):
        b.on_batch(*batch)
    b.finish()
    assert b.offset_index_bytes() == read(rel + ".index")
    assert b.time_index_bytes() == read(rel + ".timeindex")
    assert b.offset_entries == parse_offset_index(read(rel + ".index"), base)
    assert b.time_entries == parse_time_index(read(rel + ".timeindex"), base)


def test_append_path_matches_broker_appends():
    # multi-segment was written by produce requests of one batch each, then rolled
    rel, base = "multi-segment/00000000000000000300", 300
    b = IndexBuilder(base, index_interval_bytes=512)
    for pos, size, last, ts in v2_batches(read(rel + ".log")):
        b.on_append(pos, size, last, ts, last)
    b.finish()  # onBecomeInactiveSegment at roll
    assert b.offset_index_bytes() == read(rel + ".index")
    assert b.time_index_bytes() == read(rel + ".timeindex")


def test_default_interval_builds_sparser_index():
    rel = "recover-missing-index/00000000000000000185"
    b = IndexBuilder(185)
    for batch in v2_batches(read(rel + ".log")):
        b.on_batch(*batch)
    b.finish()
    assert 0 < len(b.offset_entries) < len(parse_offset_index(read(rel + ".index"), 185))


def test_builder_rejects_offset_overflow_and_non_increasing_offsets():
    b = IndexBuilder(100, index_interval_bytes=0)
    with pytest.raises(CorruptIndexError, match="Detected offset overflow at offset 99") as e:
        b.on_batch(0, 50, 99, 1)
    assert e.value.position == 0
    b.on_batch(0, 50, 110, 1)
    b.on_batch(50, 50, 120, 2)
    with pytest.raises(
        CorruptIndexError, match=r"Attempt to append an offset \(120\) to position 1"
    ):
        b.on_batch(100, 50, 120, 3)


def test_builder_full_index_and_reserved_time_slot():
    b = IndexBuilder(0, index_interval_bytes=0, max_index_entries=2, max_time_entries=3)
    b.on_batch(0, 10, 0, 1)
    b.on_batch(10, 10, 1, 2)
    b.on_batch(20, 10, 2, 3)
    with pytest.raises(CorruptIndexError, match="full index"):
        b.on_batch(30, 10, 3, 4)
    b2 = IndexBuilder(0, index_interval_bytes=0, max_time_entries=2)
    b2.on_batch(0, 10, 0, 1)
    b2.on_batch(10, 10, 1, 2)  # time index now holds maxEntries-1 = 1 entry: full
    with pytest.raises(CorruptIndexError, match="full time index"):
        b2.on_batch(20, 10, 2, 3)
    b2.finish()  # the reserved slot is still usable
    assert b2.time_entries == [TimeIndexEntry(2, 1), TimeIndexEntry(3, 2)]


def test_v0_segment_has_empty_time_index():
    b = IndexBuilder(0, index_interval_bytes=10)
    for i in range(5):
        b.on_batch(i * 40, 40, i, -1)  # NO_TIMESTAMP everywhere
    b.finish()
    assert b.time_index_bytes() == b""
    assert len(b.offset_entries) == 4


# --- lookups ---------------------------------------------------------------------------------


def test_lookups_on_real_index():
    rel = "recover-missing-index/00000000000000000185"
    offsets = parse_offset_index(read(rel + ".index"), 185)
    times = parse_time_index(read(rel + ".timeindex"), 185)
    assert lookup_offset(offsets, 185, 185) == OffsetIndexEntry(185, 0)
    first = offsets[0]
    assert lookup_offset(offsets, first.offset - 1, 185) == OffsetIndexEntry(185, 0)
    assert lookup_offset(offsets, first.offset, 185) == first
    assert lookup_offset(offsets, 10**12, 185) == offsets[-1]
    off, pos = lookup_offset(offsets, offsets[3].offset + 1, 185)
    assert (off, pos) == (offsets[3].offset, offsets[3].position)
    assert lookup_timestamp(times, times[0].timestamp - 1, 185) == TimeIndexEntry(-1, 185)
    assert lookup_timestamp(times, times[2].timestamp, 185) == times[2]
    assert lookup_timestamp(times, times[2].timestamp + 1, 185) == times[2]


# --- sanity checks ---------------------------------------------------------------------------


def test_preallocated_index_passes_and_time_index_fails_sanity_check_like_kafka():
    sanity_check_offset_index(
        padded("unclean-kill/00000000000000000600.index", PREALLOCATED_INDEX), 600
    )
    path = "{ROOT}/broker/recover/unclean-kill/before/crash-idem-0/00000000000000000600.timeindex"
    buf = padded("unclean-kill/00000000000000000600.timeindex", PREALLOCATED_TIMEINDEX)
    with pytest.raises(CorruptIndexError) as e:
        sanity_check_time_index(buf, 600, path=path)
    kafka_line = read("unclean-kill/600.timeindex.dump-sanity.stderr").decode().splitlines()[0]
    assert (
        kafka_line
        == f'Exception in thread "main" kafka.log.CorruptIndexException: {e.value.message}'
    )
    assert e.value.path == path and e.value.position == PREALLOCATED_TIMEINDEX - 12


def test_offset_index_sanity_messages():
    with pytest.raises(CorruptIndexError) as e:
        sanity_check_offset_index(struct.pack(">ii", -1, 0), 100, path="/d/x.index")
    assert e.value.message == (
        "Corrupt index found, index file (/d/x.index) has non-zero size but the "
        "last offset is 99 which is less than the base offset 100."
    )
    with pytest.raises(CorruptIndexError) as e:
        sanity_check_offset_index(bytes(12), 0, path="/d/x.index")
    assert e.value.message == (
        "Index file /d/x.index is corrupt, found 12 bytes which is neither "
        "positive nor a multiple of 8."
    )
    assert e.value.position == 8


def test_time_index_sanity_messages():
    bad_offset = struct.pack(">qi", 5, 0) + struct.pack(">qi", 6, -2)
    with pytest.raises(CorruptIndexError) as e:
        sanity_check_time_index(bad_offset, 10, path="t")
    assert e.value.message == (
        "Corrupt time index found, time index file (t) has non-zero size but "
        "the last offset is 8 which is less than the first offset 10"
    )
    with pytest.raises(CorruptIndexError) as e:
        sanity_check_time_index(struct.pack(">qi", 5, 0) + b"\x00", 10, path="t")
    assert (
        e.value.message
        == "Time index file t is corrupt, found 13 bytes which is neither positive nor a multiple of 12."
    )
    assert e.value.position == 12
    with pytest.raises(CorruptIndexError) as e:
        sanity_check_time_index(struct.pack(">qi", 5, 0) + struct.pack(">qi", 4, 1), 10)
    assert e.value.message == (
        "Corrupt time index found, time index file (<time index>) has non-zero size but "
        "the last timestamp is 4 which is less than the first timestamp 5"
    )
    assert (e.value.path, e.value.position) == (None, 12)
    with pytest.raises(
        CorruptIndexError, match=r"^byte 0: Index file <index> is corrupt, found 3 bytes"
    ):
        sanity_check_offset_index(b"abc", 0)
    sanity_check_time_index(b"", 10)
    sanity_check_offset_index(b"", 10)


# --- properties ------------------------------------------------------------------------------


@st.composite
def offset_entries(draw):
    base = draw(st.integers(0, 2**40))
    rels = draw(st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=50))
    positions = draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(rels), max_size=len(rels)))
    return base, [OffsetIndexEntry(base + r, p) for r, p in zip(sorted(rels), sorted(positions))]


@given(offset_entries())
def test_offset_index_round_trip(case):
    base, entries = case
    data = encode_offset_index(entries, base)
    assert len(data) == 8 * len(entries)
    assert parse_offset_index(data, base, stop_at_zero=False) == entries


@given(
    st.integers(0, 2**40),
    st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**31 - 1)), max_size=50),
)
def test_time_index_round_trip(base, pairs):
    entries = [TimeIndexEntry(ts, base + rel) for ts, rel in pairs]
    data = encode_time_index(entries, base)
    assert len(data) == 12 * len(entries)
    assert parse_time_index(data, base, stop_at_zero=False) == entries


def test_encode_rejects_offsets_outside_the_segment():
    with pytest.raises(CorruptIndexError, match="Integer overflow for offset: 99"):
        encode_offset_index([OffsetIndexEntry(99, 0)], 100)
    with pytest.raises(CorruptIndexError, match="Integer overflow"):
        encode_time_index([TimeIndexEntry(1, 100 + 2**31)], 100)


batches_strategy = st.lists(
    st.tuples(st.integers(61, 5000), st.integers(1, 20), st.integers(-1, 10**13)), max_size=200
)


@settings(max_examples=200)
@given(st.integers(0, 2**40), st.integers(0, 3000), batches_strategy)
def test_builder_invariants(base, interval, batches):
    b = IndexBuilder(base, index_interval_bytes=interval)
    pos, last, starts = 0, base - 1, {}
    max_ts = -1
    for size, count, ts in batches:
        last += count
        starts[pos] = last
        b.on_batch(pos, size, last, ts)
        max_ts = max(max_ts, ts)
        pos += size
    b.finish()
    offs, times = b.offset_entries, b.time_entries
    assert parse_offset_index(b.offset_index_bytes(), base, stop_at_zero=False) == offs
    assert parse_time_index(b.time_index_bytes(), base, stop_at_zero=False) == times
    assert all(e.position > 0 for e in offs)  # never at position 0
    assert all(starts[e.position] == e.offset for e in offs)  # batch lastOffset -> batch start
    assert all(x.offset < y.offset for x, y in zip(offs, offs[1:]))
    assert all(y.position - x.position > interval for x, y in zip(offs, offs[1:]))
    assert all(x.timestamp < y.timestamp for x, y in zip(times, times[1:]))
    assert all(x.offset <= y.offset for x, y in zip(times, times[1:]))
    # the final entry carries the segment's largest timestamp, if any batch had one
    assert (times[-1].timestamp if times else -1) == max_ts
