"""The one model of the log: Segment, Partition and LogDir answer what every op asks, by
Kafka's rules, from the files a real 3.3.1 broker wrote (examples/logdir) or made here."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from kafkalog_cli.errors import CheckpointError, CorruptRecordError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.storage.logdir import LogDir, partition_dirs_for
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment, last_index_entry
from tests.helpers.paths import EXAMPLES


def _batches(base: int, n: int, per: int = 3, ts0: int = 1_700_000_000_000) -> bytes:
    out = b""
    for i in range(n):
        off = base + i * per
        recs = [
            SimpleRecord(key=b"k%d" % j, value=b"v", timestamp=ts0 + off + j) for j in range(per)
        ]
        out += build_v2_batch(recs, off)
    return out


@pytest.fixture
def part(tmp_path) -> Path:
    d = tmp_path / "logs" / "t-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(_batches(0, 4))
    (d / "00000000000000000012.log").write_bytes(_batches(12, 2))
    (d / "00000000000000000012.snapshot").write_bytes(b"")
    (d / "00000000000000000012.index").write_bytes(b"")
    (d / "00000000000000000005.index").write_bytes(b"")  # an orphan index
    (d / "00000000000000000000.log.deleted").write_bytes(b"")
    (d / "leader-epoch-checkpoint.kafkalog-tmp").write_bytes(b"")
    (d / "partition.metadata").write_bytes(b"")
    return d


def test_partition_lists_its_dir_once_by_kind(part):
    p = Partition.open(part)
    assert p.base_offsets == [0, 12]
    assert [s.is_active for s in p.segments] == [False, True]
    assert p.snapshots == {12: "00000000000000000012.snapshot"}
    assert p.index_files == {12: ["00000000000000000012.index"], 5: ["00000000000000000005.index"]}
    assert p.temp_files == ["00000000000000000000.log.deleted"]
    assert p.leftovers == ["leader-epoch-checkpoint.kafkalog-tmp"]
    assert (p.log_start_offset, p.log_end_offset) == (0, 18)


def test_segment_facts_without_an_index(part):
    s = Segment(part, 0)
    assert s.read_next_offset() == 12
    assert s.first_batch_timestamp() == 1_700_000_000_002
    heads = list(s.headers())
    assert [(h.base_offset, h.last_offset) for h in heads] == [(0, 2), (3, 5), (6, 8), (9, 11)]
    assert heads[-1].position + heads[-1].size == s.size
    # no time index: LogSegment.largestTimestamp falls back to the .log's mtime, in whole ms
    os.utime(s.log_path, ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    s2 = Segment(part, 0)
    assert (s2.largest_timestamp, s2.largest_timestamp_from_mtime) == (1_600_000_000_123, True)


def test_active_segment_counts_its_unindexed_tail(part):
    # a time index whose last entry is older than the batches after it (an unclean shutdown)
    (part / "00000000000000000012.timeindex").write_bytes(
        struct.pack(">qi", 1_700_000_000_012, 0) + bytes(120)
    )
    inactive, active = Segment(part, 12), Segment(part, 12, is_active=True)
    assert inactive.largest_timestamp == 1_700_000_000_012
    assert active.largest_timestamp == 1_700_000_000_017
    assert not active.largest_timestamp_from_mtime


def test_last_index_entry_skips_preallocated_zeros(tmp_path):
    f = tmp_path / "x.index"
    f.write_bytes(struct.pack(">ii", 3, 100) + struct.pack(">ii", 7, 300) + bytes(8 * 1000))
    assert last_index_entry(f, struct.Struct(">ii"), 0) == (7, 300)
    f.write_bytes(bytes(8 * 10))
    assert last_index_entry(f, struct.Struct(">ii"), 0) is None
    assert last_index_entry(tmp_path / "missing.index", struct.Struct(">ii"), 0) is None


def test_tail_ends_at_zeros_but_names_garbage(part):
    log = part / "00000000000000000012.log"
    good = log.read_bytes()
    log.write_bytes(good + bytes(4096))  # preallocated .log
    assert Segment(part, 12).tail().next_offset == 18
    assert Segment(part, 12).tail().valid_size == len(good)
    log.write_bytes(good + struct.pack(">qi", 18, 5) + b"x" * 20)  # a size no batch can have
    with pytest.raises(CorruptRecordError) as e:
        Segment(part, 12).tail()
    assert e.value.path == str(log)
    assert Segment(part, 12).read_next_offset() == 18  # readNextOffset never raises


def test_mapped_unmaps_only_what_it_mapped(part):
    s = Segment(part, 0)
    with s.mapped() as buf:
        assert len(buf) == s.size
    assert s._log is None
    _ = s.log  # opens the log
    with s.mapped():
        pass
    assert s._log is not None
    s.close()


def test_read_from_reads_a_swap(part):
    os.rename(part / "00000000000000000012.log", part / "00000000000000000012.log.swap")
    s = Segment(part, 12, read_from=part / "00000000000000000012.log.swap")
    assert s.read_next_offset() == 18
    assert s.log_path.name == "00000000000000000012.log"


def test_logdir_checkpoints_reach_each_partition():
    ld = LogDir.open(EXAMPLES)
    parts = {p.name: p for p in ld.partitions()}
    c = parts["compacted-0"].checkpoints
    assert (c.recovery_point, c.high_watermark, c.cleaner_offset) == (37, 37, 36)
    assert parts["multi-segment-0"].base_offsets[0] == 0
    assert (
        parts["multi-segment-0"].log_end_offset
        == parts["multi-segment-0"].checkpoints.high_watermark
        == 600
    )


def test_damaged_root_checkpoint_strict_and_lenient(tmp_path):
    ld = tmp_path / "logs"
    shutil.copytree(EXAMPLES / "txn-0", ld / "txn-0")
    (ld / "replication-offset-checkpoint").write_text("0\n1\ntxn 0\n")
    with pytest.raises(CheckpointError):
        LogDir.open(ld).checkpoints(strict=True)
    roots = LogDir.open(ld).checkpoints(strict=False)
    assert roots.high_watermarks.exists and roots.high_watermarks.offsets == {}
    assert not roots.cleaner_offsets.exists


def test_partition_dirs_for_groups_by_log_dir():
    groups = partition_dirs_for([EXAMPLES / "txn-0", EXAMPLES / "codec-gzip-0"])
    assert groups == {EXAMPLES: [EXAMPLES / "codec-gzip-0", EXAMPLES / "txn-0"]}
    whole = partition_dirs_for([EXAMPLES])
    assert len(whole[EXAMPLES]) == 14


def test_segment_files_are_named_by_base_offset(tmp_path):
    seg = Segment(tmp_path, 42)
    names = [seg.log_path, seg.index_path, seg.time_index_path, seg.txn_index_path]
    assert names == [
        tmp_path / f"{42:020d}{s}" for s in (".log", ".index", ".timeindex", ".txnindex")
    ]


def test_seeks_say_why_they_do_not_use_an_index(tmp_path):
    from kafkalog_cli.formats.indexes import (
        OffsetIndexEntry,
        TimeIndexEntry,
        encode_offset_index,
        encode_time_index,
    )
    from kafkalog_cli.formats.records import iter_batches

    log = _batches(0, 4)  # offsets 0-11, timestamps TS0 + offset; batches end at 2, 5, 8, 11
    (tmp_path / f"{0:020d}.log").write_bytes(log)
    positions = [b.position for b in iter_batches(log)]
    seg = Segment(tmp_path, 0)
    notes: list[str] = []
    (tmp_path / f"{0:020d}.index").mkdir()  # unreadable: a directory
    assert seg.position_for_offset(7, notes.append) == positions[2]
    assert notes == [
        f"{seg.index_path}: cannot be read (is a directory, not a file); "
        f"scanning {0:020d}.log from its first byte instead"
    ]
    ts0 = 1_700_000_000_000
    tindex = tmp_path / f"{0:020d}.timeindex"
    tindex.write_bytes(
        encode_time_index([TimeIndexEntry(ts0 + 8, 8), TimeIndexEntry(ts0 + 5, 5)], 0)
    )
    notes.clear()
    assert seg.position_for_timestamp(ts0 + 9, notes.append) == positions[3]
    assert notes == [
        f"{tindex}: byte 12: entry (timestamp {ts0 + 5}, offset 5) is not after (timestamp {ts0 + 8}, "
        f"offset 8); scanning {0:020d}.log from its first byte instead"
    ]
    (tmp_path / f"{0:020d}.index").rmdir()
    (tmp_path / f"{0:020d}.index").write_bytes(
        encode_offset_index([OffsetIndexEntry(5, positions[1])], 0)
    )
    tindex.write_bytes(encode_time_index([TimeIndexEntry(ts0 + 5, 5)], 0))
    notes.clear()
    assert seg.position_for_timestamp(ts0 + 9, notes.append) == positions[3]
    assert seg.position_for_offset(7, notes.append) == positions[2]
    assert notes == []
