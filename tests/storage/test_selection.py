"""storage/selection.py: which segments, batches and records a filtered read shows."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafkalog_cli.errors import CorruptRecordError
from kafkalog_cli.formats.indexes import OffsetIndexEntry, encode_offset_index
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.storage.segment import Segment, map_file
from kafkalog_cli.storage.selection import (
    Filters,
    Verdict,
    segments_in_range,
    selected_batches,
    start_position,
)

TS = 1_700_000_000_000


def batches(n_batches: int = 4, per_batch: int = 3) -> bytes:
    """Batches of `per_batch` records; record i has key k<i> and timestamp TS + i."""
    out = b""
    for b in range(n_batches):
        base = b * per_batch
        out += build_v2_batch(
            [SimpleRecord(b"k%d" % i, b"v", TS + i) for i in range(base, base + per_batch)], base
        )
    return out


def shown(log: bytes, f: Filters | None, deep: bool = True) -> list[int]:
    """The offsets a read shows: each shown batch's records, through `Filters.shown`."""
    offsets = []
    for b, records in selected_batches(log, 0, len(log), f, deep):
        records = b.records() if records is None else records
        offsets += [r.offset for r in (records if f is None else f.shown(records))]
    return offsets


def test_no_options_is_no_filters():
    assert Filters.given() is None
    assert Filters.given(limit=0) == Filters(limit=0)
    assert Filters.given(key="k1").key == b"k1"


def test_without_filters_every_batch_is_shown_undecoded():
    log = batches()
    got = list(selected_batches(log, 0, len(log), None, True))
    assert [b.base_offset for b, _ in got] == [0, 3, 6, 9] and all(r is None for _, r in got)


@pytest.mark.parametrize(
    "f,offsets",
    [
        (Filters(from_offset=4, to_offset=7), [4, 5, 6, 7]),
        (Filters(key=b"k5"), [5]),
        (Filters(from_time=TS + 10), [10, 11]),
        (Filters(to_time=TS + 1), [0, 1]),
        (Filters(from_offset=2, limit=3), [2, 3, 4]),
    ],
)
def test_records_shown(f, offsets):
    assert shown(batches(), f) == offsets


def test_a_key_filter_decodes_only_to_judge_and_skips_batches_without_a_match():
    log = batches()
    got = list(selected_batches(log, 0, len(log), Filters(key=b"k7"), True))
    # the search builds only the records it finds (search_v2, formats/byte_loops.py)
    assert [(b.base_offset, [r.offset for r in recs]) for b, recs in got] == [(6, [7])]
    got = list(selected_batches(log, 0, len(log), Filters(from_time=TS + 7), True))
    assert [(b.base_offset, [r.offset for r in recs]) for b, recs in got] == [
        (6, [6, 7, 8]),
        (9, [9, 10, 11]),
    ]


def test_to_offset_stops_the_walk_at_the_first_batch_after_it():
    log = (
        batches() + b"\0" * 8 + struct.pack(">i", 3) + b"\0" * 10
    )  # a size below 14 after the range
    assert shown(log, Filters(to_offset=4)) == [0, 1, 2, 3, 4]
    with pytest.raises(CorruptRecordError):
        shown(log, None)


def test_without_deep_iteration_the_limit_counts_batches():
    log = batches()
    f = Filters(limit=2)
    assert [b.base_offset for b, _ in selected_batches(log, 0, len(log), f, False)] == [0, 3]
    assert f.spent


def test_a_spent_limit_reads_no_further_batch():
    log = batches(2) + b"\0" * 8 + struct.pack(">i", 3) + b"\0" * 10
    f = Filters(limit=6)
    assert shown(log, f) == [0, 1, 2, 3, 4, 5]
    assert f.spent and shown(log, f) == []


def test_take_record_counts_shown_records_only():
    recs = next(iter_batches(batches(1))).records()
    f = Filters(key=b"k1", limit=1)
    assert [f.take_record(r) for r in recs] == [Verdict.SKIP, Verdict.SHOW, Verdict.SKIP]
    assert f.take_record(recs[1]) is Verdict.STOP


def write_segment(d: Path, log: bytes, entries: list[OffsetIndexEntry]) -> Segment:
    (d / "00000000000000000000.log").write_bytes(log)
    (d / "00000000000000000000.index").write_bytes(encode_offset_index(entries, 0))
    return Segment.with_log(d, 0, map_file(d / "00000000000000000000.log"))


def test_start_position_goes_through_the_offset_index(tmp_path):
    log = batches()
    positions = [b.position for b in iter_batches(log)]
    seg = write_segment(
        tmp_path, log, [OffsetIndexEntry(5, positions[1]), OffsetIndexEntry(8, positions[2])]
    )
    assert start_position(seg, Filters(from_offset=7)) == positions[2]
    assert start_position(seg, Filters(from_offset=100)) == len(log)
    assert start_position(seg, Filters(key=b"k1")) == 0


def test_start_position_does_not_trust_a_wrong_index(tmp_path):
    log = batches()
    positions = [b.position for b in iter_batches(log)]
    seg = write_segment(
        tmp_path, log, [OffsetIndexEntry(5, positions[3])]
    )  # the batch holding 9-11
    notes = []
    assert start_position(seg, Filters(from_offset=5), notes.append) == positions[1]
    assert len(notes) == 1 and "scanning 00000000000000000000.log from its first byte" in notes[0]


def test_segment_with_log_reads_the_given_bytes(tmp_path):
    log = batches()
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    seg = Segment.with_log(tmp_path, 0, log)
    assert seg.log is log and [b.base_offset for b in seg.batches()] == [0, 3, 6, 9]


def test_segments_in_range_opens_no_segment_outside_it():
    d = Path("p-0")
    paths = [d / f"{base:020d}.log" for base in (0, 100, 200)]
    assert list(segments_in_range(paths, 150, None)) == paths[1:]
    assert list(segments_in_range(paths, None, 99)) == paths[:1]
    assert list(segments_in_range(paths, 100, 100)) == paths[1:2]
    assert list(segments_in_range(paths, None, None)) == paths
