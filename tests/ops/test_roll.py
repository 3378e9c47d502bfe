from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.ops import recover, roll
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps, Quarantine

from .conftest import FIXTURES, copy_case, segment_files

NOW = 1795249186389


def do_roll(d, tmp_path, **kw):
    (ld, parts), = partition_dirs_for([d]).items()
    p = roll.plan(ld, parts, roll.RollOptions(now_ms=NOW, **kw))
    apply(p, FsOps(ld, Quarantine(tmp_path / "q", "roll")))
    return p


def test_time_roll_closed_segment_matches_the_broker(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    p = do_roll(d, tmp_path, if_needed=True)   # segment.ms=5000 comes from __cluster_metadata
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
        assert got[f"{part}/00000000000000000060.index"] == want[f"{part}/00000000000000000060.index"] == b""
        assert got[f"{part}/00000000000000000060.timeindex"] == b""   # after/ has run 2's one entry
        assert (d / part / "00000000000000000060.snapshot").read_bytes() == \
            (FIXTURES / "roll-time-roll" / "after" / part / "00000000000000000060.snapshot").read_bytes()
    assert do_roll(d, tmp_path).actions == []          # the new segment is empty: nothing to roll


def test_if_needed_does_nothing_when_no_condition_holds(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    (ld, parts), = partition_dirs_for([d]).items()
    p = roll.plan(ld, parts, roll.RollOptions(if_needed=True, now_ms=1700000000200))
    assert p.actions == []


def test_recover_after_roll_trims_the_new_indexes(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    do_roll(d, tmp_path)
    (ld, parts), = partition_dirs_for([d]).items()
    p = recover.plan(ld, parts, recover.RecoverOptions(all_segments=True))
    apply(p, FsOps(ld, Quarantine(None, "recover")))
    assert (d / "roll-createtime-0" / "00000000000000000060.index").stat().st_size == 0
