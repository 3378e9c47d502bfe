"""LogSegment.recover's walk (storage.recovery) says where and why it stopped as a StopReason,
and recover decides on that, not on the wording of Kafka's messages; the index checks name the
Kafka rule on which a seek and a recovery differ (storage.index_checks)."""

from __future__ import annotations

import pytest

from kafkalog_cli.errors import OffsetOverflowError
from kafkalog_cli.formats.indexes import IndexBuilder, TimeIndexEntry, encode_time_index
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops.producer_rebuild import ProducerState
from kafkalog_cli.storage.index_checks import (
    IndexDefect,
    IndexFile,
    index_rebuild_reason,
    time_entries_problem,
)
from kafkalog_cli.storage.recovery import StopReason, next_valid_batch, recover_segment, walk_tail

T = 1_700_000_000_000


def _batch(offset: int, n: int = 2, ts: int = T) -> bytes:
    return build_v2_batch([SimpleRecord(b"k", b"v" * 10, ts + i, ()) for i in range(n)], offset)


def _walk(data: bytes, base: int = 0, salvage: bool = False):
    return recover_segment(data, base, 4096, ProducerState(), [], salvage)


def test_a_clean_segment_walks_to_its_end():
    data = _batch(0) + _batch(2)
    r = _walk(data)
    assert (r.stop, r.stopped_at, r.valid_bytes, r.next_offset) == (
        StopReason.END,
        None,
        len(data),
        4,
    )


def test_a_crc_mismatch_stops_the_walk_as_a_corrupt_record_at_its_batch():
    first = _batch(0)
    bad = bytearray(_batch(2))
    bad[-1] ^= 0xFF
    r = _walk(first + bytes(bad) + _batch(4))
    assert (r.stop, r.stopped_at, r.valid_bytes, r.next_offset) == (
        StopReason.CORRUPT_RECORD,
        len(first),
        len(first),
        2,
    )
    assert "Record is corrupt" in r.error.message


def test_recover_and_the_readers_stop_at_the_same_byte_each_in_its_own_words():
    first = _batch(0)
    bad = bytearray(_batch(2))
    bad[-1] ^= 0xFF
    data = first + bytes(bad) + _batch(4)
    r, tail = _walk(data), walk_tail(data, 0, "/d/t-0/00000000000000000000.log")
    assert (tail.stop, tail.valid_size, tail.next_offset) == (r.stop, r.stopped_at, r.next_offset)
    assert r.error.message.startswith("Record is corrupt (stored crc = ")
    assert str(tail.damage) == (
        f"/d/t-0/00000000000000000000.log: byte {len(first)}: "
        f"the batch of {len(bad)} bytes fails its CRC check"
    )


def test_an_unknown_magic_under_a_valid_crc_stops_the_readers_walk_but_not_recovery():
    # a v2 batch's CRC does not cover its magic byte: Kafka's ensureValid keeps such a batch
    bad = bytearray(_batch(2))
    bad[16] = 3
    data = _batch(0) + bytes(bad)
    r, tail = _walk(data), walk_tail(data, 0, "/d/t-0/00000000000000000000.log")
    assert (r.stop, r.valid_bytes, r.next_offset) == (StopReason.END, len(data), 4)
    assert (tail.stop, tail.valid_size) == (StopReason.CORRUPT_RECORD, len(_batch(0)))
    assert tail.damage.message == f"Invalid magic 3 in the batch of {len(bad)} bytes"


def test_a_torn_last_batch_is_a_truncated_batch_dropped_without_an_error():
    first = _batch(0)
    r = _walk(first + _batch(2)[:-5])
    assert (r.stop, r.stopped_at, r.valid_bytes, r.error) == (
        StopReason.TRUNCATED_BATCH,
        len(first),
        len(first),
        None,
    )


def test_offsets_that_go_back_are_an_invalid_offset_and_empty_the_segment():
    # an index entry per batch after the first (interval 0): OffsetIndex.append refuses the third
    data = _batch(10) + _batch(20) + _batch(5)
    r = recover_segment(data, 0, 0, ProducerState(), [])
    assert (r.stop, r.invalid_offset, r.valid_bytes, r.next_offset) == (
        StopReason.INVALID_OFFSET,
        True,
        0,
        0,
    )


def test_an_offset_overflow_is_raised_with_its_offset_whatever_kafka_calls_it(monkeypatch):
    """recover splits the segment on LogSegmentOffsetOverflowException: told by its type and its
    offset field, so a message worded otherwise (another Kafka version) changes nothing."""

    def reworded(self, offset, position):
        return OffsetOverflowError(
            f"offset {offset} cannot be indexed here", position=position, offset=offset
        )

    monkeypatch.setattr(IndexBuilder, "_offset_overflow", reworded)
    far = 2**31 + 7
    data = _batch(0) + _batch(far)
    with pytest.raises(OffsetOverflowError) as e:
        _walk(data)
    assert (e.value.offset, e.value.position) == (far + 1, len(_batch(0)))
    assert f"ends at offset {far + 1}" in e.value.message
    r = _walk(data, salvage=True)
    assert (r.stop, r.stopped_at, r.skipped, r.valid_bytes) == (
        StopReason.OFFSET_OVERFLOW,
        len(_batch(0)),
        [(len(_batch(0)), len(data))],
        len(_batch(0)),
    )


def test_an_equal_timestamp_is_usable_for_a_seek_but_not_what_recovery_writes():
    """TimeIndex.maybeAppend throws on a timestamp below the last (a seek relies on that) but
    skips an equal one (a recovery never writes it): the one rule on which the two checks differ."""
    log = _batch(0, ts=T) + _batch(2, ts=T + 5)
    entries = [TimeIndexEntry(T + 1, 1), TimeIndexEntry(T + 1, 3)]
    assert time_entries_problem(entries, 0) is None
    defect = index_rebuild_reason(log, 0, b"", encode_time_index(entries, 0), 4)
    assert defect == IndexDefect(
        IndexFile.TIME_INDEX, f"time index entry ({T + 1}, 3) is out of order or beyond the log"
    )


def test_an_empty_time_index_beside_timestamps_is_told_by_a_field_not_by_its_words():
    """clean-shutdown forgives the active segment only this defect (its final entry comes when
    it is closed): a field says which, whatever the message."""
    log = _batch(0) + _batch(2)
    assert index_rebuild_reason(log, 0, b"", b"", 4) == IndexDefect(
        IndexFile.TIME_INDEX,
        "time index is empty but the log has timestamps",
        no_final_time_entry=True,
    )


class _Watched(bytes):
    """A segment's bytes that count how Python code reads them: each byte looked at alone, and
    the largest slice taken (a copy of that many bytes)."""

    single = largest = 0

    def __getitem__(self, k):
        if isinstance(k, slice):
            start, stop, _ = k.indices(len(self))
            self.largest = max(self.largest, stop - start)
        else:
            self.single += 1
        return super().__getitem__(k)


PREALLOCATED = 4 << 20  # log.preallocate's zeros (segment.bytes of them, a GiB by default)


def test_a_preallocated_tail_is_read_in_pieces_never_copied_whole():
    first = _batch(0)
    buf = _Watched(first + bytes(PREALLOCATED))
    tail = walk_tail(buf, 0, "/d/t-0/00000000000000000000.log")
    assert (tail.damage, tail.stop, tail.valid_size, tail.next_offset) == (
        None,
        StopReason.END,
        len(first),
        2,
    )
    assert buf.largest <= 1 << 20


def test_the_search_for_a_valid_batch_skips_zeros_without_walking_them_byte_by_byte():
    first, later = _batch(0), _batch(7)
    buf = _Watched(first + bytes(PREALLOCATED) + later)
    assert next_valid_batch(buf, len(first) + 1, len(buf), 2) == len(first) + PREALLOCATED
    assert buf.single < 100
    zeros_only = first + bytes(PREALLOCATED)
    assert next_valid_batch(zeros_only, len(first), len(zeros_only), 2) is None
