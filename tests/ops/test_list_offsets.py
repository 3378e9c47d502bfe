"""ops.list_offsets: Kafka 3.3.1's ListOffsets answers, checked against a brute-force reading of
every record (no index) and against the root checkpoints' text.

The broker case formats/ts-nonmonotonic has late and future CreateTimes over 7 segments with an
index entry every 256 bytes, so the time index is what makes a lookup fast and the answers are
not the naive "first record after T in the log"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops import describe
from kafkalog_cli.ops.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    IsolationLevel,
    OffsetSpec,
    list_offsets,
)
from kafkalog_cli.storage.logdir import LogDir
from tests.helpers.file_states import checkpoint
from tests.helpers.paths import EXAMPLES, FIXTURES

TS = FIXTURES / "corpus" / "broker" / "formats" / "ts-nonmonotonic" / "before"
PARTITIONS = ("ts-jumble-0", "ts-jumble-zstd-0")


def partition(log_dir: Path, name: str):
    return next(describe.partitions_of(log_dir, [log_dir / name]))


def segments_records(part_dir: Path) -> list[list]:
    """Per segment, every record (offset, timestamp) in log order, and each batch's (max
    timestamp, base offset, last offset)."""
    out = []
    for log in sorted(part_dir.glob("*.log")):
        batches = list(iter_batches(log.read_bytes()))
        out.append(
            (
                [(r.offset, r.timestamp) for b in batches for r in b.records()],
                [(b.max_timestamp, b.base_offset, b.last_offset) for b in batches],
            )
        )
    return out


def brute_force(part_dir: Path, target: int, log_start: int = 0, segs: list | None = None):
    """UnifiedLog.fetchOffsetByTimestamp read without an index: the first segment with a
    timestamp >= target, then its first record at or after target and the log start offset."""
    for records, _ in segs or segments_records(part_dir):
        if records and max(ts for _, ts in records) >= target:
            return next(((ts, o) for o, ts in records if ts >= target and o >= log_start), None)
    return None


@pytest.mark.parametrize("name", PARTITIONS)
def test_every_timestamp_lookup_is_the_brute_force_answer(name):
    part = partition(TS, name)
    segs = segments_records(TS / name)
    records = [r for recs, _ in segs for r in recs]
    lo, hi = min(ts for _, ts in records), max(ts for _, ts in records)
    targets = sorted(
        {
            *range(lo - 5000, hi + 5000, 4999),
            *(ts for _, ts in records[::13]),
            *(ts + 1 for _, ts in records[::17]),
        }
    )
    warnings = []
    for t in targets:
        a = list_offsets(part, OffsetSpec(t), warn=warnings.append)
        expected = brute_force(TS / name, t, segs=segs)
        assert (a.timestamp, a.offset) == (expected or (None, None)), t
        assert a.reason is None if expected else "no segment has a largest timestamp" in a.reason
    assert warnings == []  # the broker's indexes are sound: used, never scanned around


@pytest.mark.parametrize("name", PARTITIONS)
def test_max_timestamp_is_the_time_index_entry_of_the_largest(name):
    part = partition(TS, name)
    segs = segments_records(TS / name)
    top = max(ts for recs, _ in segs for _, ts in recs)
    a = list_offsets(part, OffsetSpec(MAX_TIMESTAMP))
    assert a.timestamp == top
    base, last = next((b, last) for _, batches in segs for m, b, last in batches if m == top)
    # the broker indexed the record's own offset (uncompressed, LogValidator in place) or the
    # batch's last offset (compressed): either way, inside the first batch holding the max
    holder = next(o for recs, _ in segs for o, ts in recs if ts == top)
    assert a.offset == (holder if name == "ts-jumble-0" else last)
    assert base <= a.offset <= last


def test_earliest_and_latest_are_the_checkpoints():
    hws = checkpoint(TS, "replication-offset-checkpoint")
    for name in PARTITIONS:
        part = partition(TS, name)
        assert list_offsets(part, OffsetSpec(EARLIEST_TIMESTAMP)).offset == 0
        a = list_offsets(part, OffsetSpec(LATEST_TIMESTAMP))
        assert a.offset == hws[name] == 1200 and a.high_watermark_known
        assert "replication-offset-checkpoint" in a.source


def test_a_raised_log_start_offset_is_earliest_and_bounds_the_lookups(tmp_path):
    log_dir = tmp_path / "logs"
    shutil.copytree(TS, log_dir)
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\nts-jumble 0 500\n")
    part = partition(log_dir, "ts-jumble-0")
    a = list_offsets(part, OffsetSpec(EARLIEST_TIMESTAMP))
    assert (a.offset, a.source) == (500, "log start offset: log-start-offset-checkpoint")
    # as the broker: the first segment with a late enough timestamp is searched, and only it
    for t in (1_699_999_000_000, 1_700_000_300_000, 1_700_000_520_000, 1_700_000_700_000):
        got = list_offsets(part, OffsetSpec(t))
        expected = brute_force(log_dir / "ts-jumble-0", t, log_start=500)
        assert (got.timestamp, got.offset) == (expected or (None, None)), t
        if expected is None:
            assert "no record at or after the log start offset" in got.reason
        else:
            assert got.offset >= 500


def test_without_a_high_watermark_the_log_end_offset_stands_in_flagged(tmp_path):
    log_dir = tmp_path / "logs"
    shutil.copytree(TS, log_dir)
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\nts-jumble 0 900\n")
    a = list_offsets(partition(log_dir, "ts-jumble-zstd-0"), OffsetSpec(LATEST_TIMESTAMP))
    assert (a.offset, a.high_watermark_known) == (1200, False)
    assert "no high watermark" in a.source
    # a lookup past the high watermark has no offset (Partition.fetchOffsetForTimestamp)
    part = partition(log_dir, "ts-jumble-0")
    assert list_offsets(part, OffsetSpec(LATEST_TIMESTAMP)).offset == 900
    # after every timestamp of the offsets below 900 (late and future ones are mixed in)
    target = (
        max(
            ts for recs, _ in segments_records(log_dir / "ts-jumble-0") for o, ts in recs if o < 900
        )
        + 1
    )
    late = brute_force(log_dir / "ts-jumble-0", target)
    assert late[1] >= 900
    got = list_offsets(part, OffsetSpec(target))
    assert got.offset is None and "not below the last fetchable offset 900" in got.reason
    got = list_offsets(part, OffsetSpec(target), IsolationLevel.NONE)
    assert (got.timestamp, got.offset) == late


def test_a_checkpointed_high_watermark_past_the_log_end_is_clamped(tmp_path):
    log_dir = tmp_path / "logs"
    shutil.copytree(EXAMPLES, log_dir)
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\ncodec-none 0 99\n")
    a = list_offsets(partition(log_dir, "codec-none-0"), OffsetSpec(LATEST_TIMESTAMP))
    assert a.offset == 60


def test_read_committed_stops_at_the_first_open_transaction(tmp_path):
    from tests.helpers.transactions import txn_partition as _txn_partition

    _txn_partition(tmp_path)
    part = partition(tmp_path, "t-0")
    latest = {iso: list_offsets(part, OffsetSpec(LATEST_TIMESTAMP), iso) for iso in IsolationLevel}
    assert latest[IsolationLevel.READ_UNCOMMITTED].offset == 5
    assert latest[IsolationLevel.READ_COMMITTED].offset == 0
    assert "open transaction" in latest[IsolationLevel.READ_COMMITTED].source
    assert latest[IsolationLevel.NONE].offset == 5
    # the plain batch at 3 is after the open transaction: not fetchable read_committed
    assert list_offsets(part, OffsetSpec(2000), IsolationLevel.READ_COMMITTED).offset is None
    assert list_offsets(part, OffsetSpec(2000)).offset == 3


def test_a_partition_dir_without_a_segment_has_no_offset(tmp_path):
    (tmp_path / "empty-0").mkdir()
    (tmp_path / "empty-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    part = next(describe.partitions_of(tmp_path, [tmp_path / "empty-0"]))
    a = list_offsets(part, OffsetSpec(EARLIEST_TIMESTAMP))
    assert a.offset is None and a.reason == "the partition dir has no segment"
    assert LogDir(tmp_path).path == tmp_path
