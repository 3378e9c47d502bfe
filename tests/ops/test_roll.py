import os

import pytest

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.errors import CorruptRecordError
from kafkalog_cli.formats.indexes import TimeIndexEntry, encode_time_index
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops import recover, roll
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from kafkalog_cli.storage.segment import Segment
from tests.helpers.broker_cases import FIXTURES, copy_case, segment_files
from tests.helpers.retention import make_log_dir

NOW = 1795249186389
T0 = 1_700_000_000_000


def do_roll(d, tmp_path, **kw):
    ((ld, parts),) = partition_dirs_for([d]).items()
    p = roll.plan(ld, parts, roll.RollOptions(now_ms=NOW, **kw))
    apply(p, FsOps(ld, Quarantine(tmp_path / "q", "roll")))
    return p


def test_time_roll_closed_segment_matches_the_broker(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    p = do_roll(d, tmp_path, if_needed=True)  # segment.ms=5000 comes from __cluster_metadata
    want = segment_files(FIXTURES / "roll-time-roll" / "after")
    got = segment_files(d)
    for part in ("roll-createtime-0", "roll-logappend-0", "roll-wallclock-0"):
        assert p.partitions[part]["rolled"]
        for suf in (".log", ".index", ".timeindex"):
            n = f"{part}/00000000000000000000{suf}"
            assert got[n] == want[n]
        assert (d / part / "00000000000000000060.log").stat().st_size == 0
        # empty, as the broker's clean shutdown left them in after/ (a broker takes a pre-existing
        # index for full: 10 MiB of zeros would be 1310720 entries)
        assert (
            got[f"{part}/00000000000000000060.index"]
            == want[f"{part}/00000000000000000060.index"]
            == b""
        )
        assert got[f"{part}/00000000000000000060.timeindex"] == b""  # after/ has run 2's one entry
        assert (d / part / "00000000000000000060.snapshot").read_bytes() == (
            FIXTURES / "roll-time-roll" / "after" / part / "00000000000000000060.snapshot"
        ).read_bytes()
    assert do_roll(d, tmp_path).actions == []  # the new segment is empty: nothing to roll


def test_if_needed_does_nothing_when_no_condition_holds(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    ((ld, parts),) = partition_dirs_for([d]).items()
    p = roll.plan(ld, parts, roll.RollOptions(if_needed=True, now_ms=1700000000200))
    assert p.actions == []


def test_recover_after_roll_trims_the_new_indexes(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    do_roll(d, tmp_path)
    ((ld, parts),) = partition_dirs_for([d]).items()
    p = recover.plan(ld, parts, recover.RecoverOptions(all_segments=True))
    apply(p, FsOps(ld, Quarantine(None, "recover")))
    assert (d / "roll-createtime-0" / "00000000000000000060.index").stat().st_size == 0


# ------------------------------------------------------------------ the active segment, on small synthetic logs
def synthetic(tmp_path, timestamps=(T0, T0 + 1, T0 + 2)):
    d = make_log_dir(tmp_path / "l", {"t-0": [list(timestamps)]})
    return d, d / "t-0" / "00000000000000000000.log"


def plan_for(d, **kw):
    ((ld, parts),) = partition_dirs_for([d]).items()
    return roll.plan(ld, parts, roll.RollOptions(now_ms=T0 + 10, **kw))


def test_a_corrupt_active_segment_is_left_to_recover(tmp_path):
    d, log = synthetic(tmp_path)
    first = next(iter_batches(log.read_bytes())).size
    with open(log, "r+b") as f:  # the second batch's length: below the minimum
        f.seek(first + 8)
        f.write((5).to_bytes(4, "big"))
    with pytest.raises(CorruptRecordError) as e:  # corrupt input: exit 3
        plan_for(d)
    assert "corrupt active segment; run `kafkalog recover` first" in e.value.message
    assert e.value.path == str(log) and e.value.position == first


def test_bytes_after_the_last_complete_batch_are_left_to_recover(tmp_path):
    d, log = synthetic(tmp_path)
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b"\x00\x07\x00")
    with pytest.raises(CorruptRecordError) as e:
        plan_for(d)
    assert "bytes after the last complete batch" in e.value.message
    assert e.value.path == str(log) and e.value.position == size


def test_preallocated_files_are_trimmed_and_the_final_time_entry_added(tmp_path):
    d, log = synthetic(tmp_path, [T0 + i for i in range(20)])
    seg = Segment(log.parent, 0)
    offsets, times = seg.offset_index(), seg.time_index()
    assert offsets and times
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(bytes(10))  # fewer than a batch header: the walk stops
    os.truncate(seg.index_path, 10485760)
    os.truncate(seg.time_index_path, 10485756)
    p = plan_for(d)
    by_path = {a.path: a for a in p.actions}
    assert p.partitions["t-0"] == {
        "active_segment": 0,
        "log_end_offset": 20,
        "rolled": True,
        "reason": "requested",
        "new_segment": 20,
    }
    assert (by_path[log].at, by_path[log].bytes_removed) == (size, 10)
    assert (by_path[seg.index_path].at, by_path[seg.index_path].bytes_removed) == (
        8 * len(offsets),
        10485760 - 8 * len(offsets),
    )
    final = times + ([] if times[-1].timestamp == T0 + 19 else [TimeIndexEntry(T0 + 19, 19)])
    assert by_path[seg.time_index_path].data == encode_time_index(final, 0)


def test_roll_conditions(tmp_path):
    d, _ = synthetic(tmp_path)
    assert plan_for(d, if_needed=True).partitions["t-0"]["reason"] == "no roll condition holds"
    small = ConfigResolver(overrides={"segment.bytes": "100"})
    assert (
        plan_for(d, if_needed=True, resolver=small)
        .partitions["t-0"]["reason"]
        .startswith("segment.bytes")
    )
    young = ConfigResolver(overrides={"segment.ms": "5"})
    assert (
        plan_for(d, if_needed=True, resolver=young).partitions["t-0"]["reason"]
        == "segment.ms: 10 ms since the first batch > 5"
    )
    tiny = ConfigResolver(overrides={"segment.index.bytes": "24"})
    assert plan_for(d, if_needed=True, resolver=tiny).partitions["t-0"]["reason"] == "index full"


def test_an_empty_active_segment_is_not_rolled(tmp_path):
    d, log = synthetic(tmp_path)
    log.write_bytes(b"")
    p = plan_for(d)
    assert p.actions == [] and not p.partitions["t-0"]["rolled"]
