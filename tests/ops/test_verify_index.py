"""ops/verify_index.py: kafka-dump-log's index checks, as values."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkalog_cli.errors import CorruptIndexError, KafkaToolError
from kafkalog_cli.formats.indexes import (
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_index,
    encode_time_index,
)
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.ops.verify_index import (
    IndexMismatch,
    OffsetNotFound,
    OutOfOrderTimestamp,
    TimestampMismatch,
    check_offset_index,
    check_time_index,
    index_lookup,
    sanity_check,
    start_offset_of,
)
from tests.helpers.paths import READ

TS = 1_700_000_000_000
NAME = "00000000000000000000"


def segment(
    d: Path, index: list[OffsetIndexEntry] = (), time_index: list[TimeIndexEntry] = ()
) -> Path:
    """Four batches of three records (offsets 0-11, record i at TS + i) and the given indexes."""
    log = b"".join(
        build_v2_batch([SimpleRecord(b"k", b"v", TS + i) for i in range(b * 3, b * 3 + 3)], b * 3)
        for b in range(4)
    )
    (d / f"{NAME}.log").write_bytes(log)
    (d / f"{NAME}.index").write_bytes(encode_offset_index(index, 0))
    (d / f"{NAME}.timeindex").write_bytes(encode_time_index(time_index, 0))
    return d


def positions(d: Path) -> list[int]:
    return [b.position for b in iter_batches((d / f"{NAME}.log").read_bytes())]


def test_an_entry_naming_the_wrong_batch_is_a_mismatch(tmp_path):
    part = shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")
    check = check_offset_index(part / "00000000000000000363.index")
    assert check.mismatches == [IndexMismatch(363, 369)] and check.error is None
    assert check.entries and not check.empty


def test_offset_index_entries_are_checked_in_file_order(tmp_path):
    d = segment(tmp_path)
    pos = positions(d)
    entries = [
        OffsetIndexEntry(2, pos[0]),
        OffsetIndexEntry(4, pos[1]),
        OffsetIndexEntry(8, pos[2]),
        OffsetIndexEntry(10, pos[2]),
    ]
    (d / f"{NAME}.index").write_bytes(
        encode_offset_index(entries, 0) + b"\0" * 16
    )  # preallocated slots
    check = check_offset_index(d / f"{NAME}.index")
    assert check.entries == entries
    assert check.mismatches == [IndexMismatch(4, 5), IndexMismatch(10, 8)]


def test_an_entry_past_the_log_ends_the_walk_with_kafkas_error(tmp_path):
    d = segment(tmp_path)
    pos = positions(d)
    entries = [
        OffsetIndexEntry(2, pos[0]),
        OffsetIndexEntry(5, 1 << 20),
        OffsetIndexEntry(8, pos[2]),
    ]
    (d / f"{NAME}.index").write_bytes(encode_offset_index(entries, 0))
    check = check_offset_index(d / f"{NAME}.index")
    assert check.entries == entries[:1]
    assert isinstance(check.error, KafkaToolError) and check.error.position == 8
    assert "exceeds end position of the log" in check.error.message


def test_an_empty_index_is_reported_as_empty_even_for_the_sanity_check(tmp_path):
    d = segment(tmp_path)
    assert check_offset_index(d / f"{NAME}.index").empty
    assert check_offset_index(d / f"{NAME}.index", sanity_only=True).empty


def test_the_sanity_check_raises_and_checks_nothing_else(tmp_path):
    d = segment(tmp_path)
    (d / f"{NAME}.index").write_bytes(
        encode_offset_index([OffsetIndexEntry(4, 0)], 0)
    )  # a mismatch
    check = check_offset_index(d / f"{NAME}.index", sanity_only=True)
    assert check.entries == [] and check.mismatches == []
    (d / f"{NAME}.index").write_bytes(b"\0" * 12)
    with pytest.raises(CorruptIndexError):
        check_offset_index(d / f"{NAME}.index", sanity_only=True)
    with pytest.raises(CorruptIndexError):
        sanity_check(d / f"{NAME}.index")


def test_time_index_problems(tmp_path):
    entries = [
        TimeIndexEntry(TS + 2, 2),  # right
        TimeIndexEntry(TS + 4, 5),  # the batch's max timestamp is TS + 5
        TimeIndexEntry(TS + 1, 8),  # wrong, and before the entry before it
        TimeIndexEntry(TS + 9, 10),  # no batch ends at 10: the one found ends at 11
        TimeIndexEntry(TS + 20, 20),
    ]  # no batch holds 20
    d = segment(tmp_path, time_index=entries)
    check = check_time_index(d / f"{NAME}.timeindex")
    assert check.error is None and check.entries == entries
    assert check.mismatches == [
        TimestampMismatch(TS + 4, TS + 5),
        TimestampMismatch(TS + 1, TS + 8),
    ]
    assert check.out_of_order == [OutOfOrderTimestamp(TS + 1, TS + 4)]
    assert check.not_found == [OffsetNotFound(10, 11), OffsetNotFound(20, None)]


def test_a_time_index_entry_looked_up_past_the_log_is_kafkas_error(tmp_path):
    d = segment(
        tmp_path,
        index=[OffsetIndexEntry(5, 1 << 20)],
        time_index=[TimeIndexEntry(TS + 2, 2), TimeIndexEntry(TS + 5, 5)],
    )
    check = check_time_index(d / f"{NAME}.timeindex")
    assert check.entries == [TimeIndexEntry(TS + 2, 2)]
    assert isinstance(check.error, KafkaToolError) and check.error.position == 12


def test_index_lookup_searches_every_slot_as_the_broker_does():
    slots = [
        OffsetIndexEntry(0, 0),
        OffsetIndexEntry(5, 100),
        OffsetIndexEntry(9, 200),
        OffsetIndexEntry(0, 0),
    ]
    assert [index_lookup(slots, t) for t in (0, 4, 5, 8, 9)] == [0, 0, 100, 100, 200]
    assert index_lookup([], 7) == 0


def test_start_offset_is_kafkas_reading_of_the_name():
    assert start_offset_of(Path("d/5.index")) == 5
    assert start_offset_of(Path(f"d/{NAME}.timeindex")) == 0
    with pytest.raises(KafkaToolError, match="NumberFormatException"):
        start_offset_of(Path("d/x.index"))
