"""Acceptance: every corpus recover case, byte-identical .log/.index/.timeindex and the same
segments as the Kafka 3.3.1 broker left; twice == once."""

import pytest

from kafkalog_cli.ops import recover
from kafkalog_cli.ops.plan import ActionKind
from kafkalog_cli.storage.logdir import partition_dirs_for
from tests.helpers.broker_cases import FIXTURES, RECOVER_CASES, copy_case, segment_files, tree_state
from tests.helpers.recovery import run


@pytest.mark.parametrize("case", RECOVER_CASES)
def test_matches_the_broker(case, tmp_path):
    d = copy_case(f"recover-{case}", tmp_path)
    run(d, tmp_path)
    got = segment_files(d)
    want = segment_files(FIXTURES / f"recover-{case}" / "after")
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
    # producer snapshots too
    assert segment_files(d, (".snapshot",)) == segment_files(
        FIXTURES / f"recover-{case}" / "after", (".snapshot",)
    )


@pytest.mark.parametrize("case", RECOVER_CASES)
def test_twice_is_once(case, tmp_path):
    d = copy_case(f"recover-{case}", tmp_path)
    run(d, tmp_path)
    once = tree_state(d)
    p, _ = run(d, tmp_path)
    assert p.actions == []
    assert tree_state(d) == once


def test_dry_run_plan_changes_nothing(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    before = tree_state(d)
    groups = partition_dirs_for([d])
    ((ld, parts),) = groups.items()
    p = recover.plan(ld, parts, recover.RecoverOptions())
    kinds = [a.kind for a in p.actions]
    assert ActionKind.TRUNCATE in kinds
    t = next(a for a in p.actions if a.kind == ActionKind.TRUNCATE and "rec-none-0" in str(a.path))
    assert (t.at, t.bytes_removed, t.offsets_removed) == (5706, 231, None) or t.at == 5706
    assert tree_state(d) == before
    js = p.to_dict()
    assert js["op"] == "recover" and js["actions"]


def test_truncated_bytes_are_quarantined(tmp_path):
    d = copy_case("recover-tail-garbage", tmp_path)
    _, report = run(d, tmp_path)
    q = tmp_path / "q"
    stored = list(q.rglob("*.bytes-6169-6269"))
    assert len(stored) == 1 and len(stored[0].read_bytes()) == 100
    assert report["quarantine"]


def test_clean_shutdown_skips_recovery_and_keeps_the_zeroed_index_as_the_broker_does(tmp_path):
    d = copy_case("recover-zeroed-index", tmp_path)
    (d / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    index = d / "rec-none-0" / "00000000000000000363.index"
    damaged = index.read_bytes()
    p, _ = run(d, tmp_path)
    kept = [f for f in p.findings if f.to_dict().get("left_as_broker_leaves")]
    assert len(kept) == 1 and kept[0].path == str(index)
    assert "zero-filled" in kept[0].message and kept[0].message.endswith(
        "rerun with --repair to rebuild it"
    )
    assert index.read_bytes() == damaged


def test_clean_shutdown_with_repair_rebuilds_the_zeroed_index(tmp_path):
    d = copy_case("recover-zeroed-index", tmp_path)
    (d / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    p, _ = run(d, tmp_path, repair=True)
    assert any("zero" in f.message or "points at" in f.message for f in p.findings)
    want = segment_files(FIXTURES / "recover-zeroed-index" / "after")
    assert (
        segment_files(d)["rec-none-0/00000000000000000363.index"]
        == want["rec-none-0/00000000000000000363.index"]
    )


def test_corruption_in_the_middle_deletes_later_segments_or_salvages(tmp_path):
    for salvage in (False, True):
        d = copy_case("recover-missing-index", tmp_path / str(salvage))
        log = d / "rec-none-0" / "00000000000000000363.log"
        data = bytearray(log.read_bytes())
        data[2000] ^= 0xFF  # a flipped bit inside some batch
        log.write_bytes(bytes(data))
        p, _ = run(d, tmp_path / str(salvage), all_segments=True, salvage=salvage)
        names = sorted(f.name for f in (d / "rec-none-0").glob("*.log"))
        if not salvage:
            assert names == [
                "00000000000000000000.log",
                "00000000000000000185.log",
                "00000000000000000363.log",
            ]
            assert log.stat().st_size < 2000
        else:
            assert len(names) == 5
            assert 15000 < log.stat().st_size < len(data)  # one batch lost, not the rest
            assert any("skipped damaged bytes" in f.message for f in p.findings)
            p2, _ = run(d, tmp_path / str(salvage), all_segments=True)
            assert p2.actions == []
