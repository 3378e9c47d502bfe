"""compare-replicas: the fetcher's truncation by leader epochs (Kafka 3.3.1), checked against
hand-worked cases and, as a property, against the ground truth of generated replica histories;
the record-by-record fallback; the records listed beyond the divergence point."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import CheckpointError, InputError, UsageError
from kafkalog_cli.formats.checkpoints import EpochEntry
from kafkalog_cli.ops import compare_replicas as cr
from tests.helpers.replicas import run, unclean_election, write_replica

# ------------------------------------------------------------------ building replicas on disk


def bare(epochs, leo, hw=None, lso=0) -> cr.Replica:
    """A Replica with only what the truncation reads."""
    return cr.Replica(
        "r",
        None,
        None,
        lso,
        leo,
        hw,
        [EpochEntry(e, o) for e, o in epochs],
        cr.EpochSource.CHECKPOINT,
    )


# ------------------------------------------------------------------ LeaderEpochFileCache.endOffsetFor
@pytest.mark.parametrize(
    "requested, want",
    [
        (-1, (-1, -1)),  # UNDEFINED_EPOCH
        (4, (4, 100)),  # the latest epoch: the log end offset
        (2, (2, 50)),  # a known epoch: the next epoch's start
        (3, (2, 50)),  # unknown, between two: the floor's epoch, the next one's start
        (0, (0, 10)),  # below every epoch: the requested one, the first start
        (5, (-1, -1)),  # above every epoch
    ],
)
def test_end_offset_for_as_kafkas_cache(requested, want):
    epochs = [EpochEntry(1, 10), EpochEntry(2, 30), EpochEntry(4, 50)]
    assert cr.end_offset_for(epochs, requested, 100) == want


def test_end_offset_for_an_empty_cache_is_undefined():
    assert cr.end_offset_for([], 3, 100) == (-1, -1)


# ------------------------------------------------------------------ the fetcher's truncation
def test_unclean_election_truncates_the_old_leader_to_the_new_leaders_epoch_start():
    old, new = bare([(0, 0), (1, 100)], 150, hw=120), bare([(0, 0), (2, 80)], 120)
    to, steps = cr.follower_truncation(new, old)
    assert to == 80
    assert [
        (s.requested_epoch, s.leader_epoch, s.leader_end_offset, s.truncate_to) for s in steps
    ] == [(1, 0, 80, 80)]


def test_several_rounds_when_the_follower_does_not_know_the_leaders_epoch():
    follower = bare([(0, 0), (1, 50), (3, 70)], 80)
    leader = bare([(0, 0), (2, 60), (4, 90)], 100)
    to, steps = cr.follower_truncation(leader, follower)
    assert [
        (s.requested_epoch, s.leader_epoch, s.leader_end_offset, s.truncate_to, s.done)
        for s in steps
    ] == [(3, 2, 90, 70, False), (1, 0, 60, 50, True)]
    assert to == 50


def test_a_follower_ahead_in_the_same_epoch_truncates_to_the_leaders_end():
    assert cr.follower_truncation(bare([(0, 0), (1, 40)], 60), bare([(0, 0), (1, 40)], 90))[0] == 60


def test_a_follower_the_leader_cannot_answer_truncates_to_its_high_watermark():
    # the follower's epoch is above every epoch of the leader: UNDEFINED_EPOCH_OFFSET
    to, steps = cr.follower_truncation(bare([(0, 0)], 50), bare([(0, 0), (3, 40)], 70, hw=30))
    assert to == 30 and "high watermark" in steps[0].why


# ------------------------------------------------------------------ the property
@st.composite
def histories(draw):
    """Two replicas of one partition: a common history, then what each got on its own. Epochs
    rise; one leader per epoch, so a suffix continues the last common epoch on one side at most
    (its old leader's unreplicated tail), and otherwise uses epochs of its own."""
    common = draw(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4)), min_size=1, max_size=5))
    epochs, e = [], 0
    for gap, n in common:
        e += gap
        epochs += [e] * n
    last = epochs[-1]
    pool = list(range(last + 1, last + 30))
    mine = set(draw(st.lists(st.sampled_from(pool), max_size=4, unique=True)))
    theirs = set(
        draw(st.lists(st.sampled_from([p for p in pool if p not in mine]), max_size=4, unique=True))
    )

    def suffix(own: set, continues: bool) -> list[int]:
        out = [last] * draw(st.integers(1, 3)) if continues else []
        for ep in sorted(own):
            out += [ep] * draw(st.integers(1, 3))
        return out

    cont = draw(st.sampled_from([None, "a", "b"]))
    return epochs, suffix(mine, cont == "a"), suffix(theirs, cont == "b")


def epochs_of(offsets: list[int]) -> list[tuple[int, int]]:
    out = []
    for offset, e in enumerate(offsets):
        if not out or e > out[-1][0]:
            out.append((e, offset))
    return out


@settings(max_examples=300, deadline=None)
@given(histories())
def test_truncation_finds_where_the_histories_part(h):
    common, sa, sb = h
    a, b = common + sa, common + sb
    ra, rb = bare(epochs_of(a), len(a)), bare(epochs_of(b), len(b))
    leader, follower = (
        (ra, rb) if (ra.latest_epoch, len(a)) >= (rb.latest_epoch, len(b)) else (rb, ra)
    )
    lo, fo = (a, b) if leader is ra else (b, a)
    to, _ = cr.follower_truncation(leader, follower)
    # ground truth: the longest common prefix of the two offset -> epoch sequences; epochs are
    # unique to a leader, so equal epochs at an offset mean the same record
    n = 0
    while n < min(len(lo), len(fo)) and lo[n] == fo[n]:
        n += 1
    assert to == n


@settings(max_examples=40, deadline=None)
@given(histories())
def test_records_fallback_finds_the_same_point_as_the_epochs(tmp_path_factory, h):
    common, sa, sb = h
    tmp = tmp_path_factory.mktemp("h")

    def batches(suffix, who):
        out = [{"epoch": e, "keys": [f"k{i}"]} for i, e in enumerate(common)]
        return out + [
            {"epoch": e, "keys": [f"k{len(common) + i}"], "value": f"{who}{e}"}
            for i, e in enumerate(suffix)
        ]

    pa = write_replica(tmp / "a", 1, batches(sa, "a"))
    pb = write_replica(tmp / "b", 2, batches(sb, "b"))
    by_epochs = cr.compare([cr.open_replica(pa), cr.open_replica(pb)])
    for p in (pa, pb):
        (p / "leader-epoch-checkpoint").unlink()
    na = write_replica(
        tmp / "na", 1, [{**x, "epoch": -1} for x in batches(sa, "a")], checkpoint=False
    )
    nb = write_replica(
        tmp / "nb", 2, [{**x, "epoch": -1} for x in batches(sb, "b")], checkpoint=False
    )
    by_records = cr.compare([cr.open_replica(na), cr.open_replica(nb)])
    assert by_records.method is cr.Method.RECORDS
    assert by_epochs.agree == by_records.agree
    assert [f.divergence_offset for f in by_epochs.followers] == [
        f.divergence_offset for f in by_records.followers
    ]


# ------------------------------------------------------------------ on disk
def test_unclean_election_replicas_on_disk(tmp_path):
    a, b = unclean_election(tmp_path)
    c = cr.compare([cr.open_replica(a), cr.open_replica(b)])
    assert c.leader.label == "broker 2" and not c.agree and c.method is cr.Method.LEADER_EPOCH
    (f,) = c.followers
    assert (f.follower.label, f.divergence_offset, f.truncate_to, f.truncated_count) == (
        "broker 1",
        80,
        80,
        70,
    )
    assert f.below_high_watermark == 40  # offsets 80..119 were below broker 1's high watermark
    assert [x.offset for x in f.truncated][:3] == [80, 81, 82] and f.truncated[0].key == b"k80"
    assert (c.leader_records_from, c.leader_records_count) == (80, 40)
    assert c.leader_records[0].key == b"new80" and c.leader_records[0].partition_leader_epoch == 2


def test_leader_can_be_chosen_and_limit_lists_fewer(tmp_path):
    a, b = unclean_election(tmp_path)
    c = cr.compare([cr.open_replica(a), cr.open_replica(b)], leader="1", limit=2)
    assert c.leader.label == "broker 1" and c.leader_reason == "chosen with --leader"
    (f,) = c.followers
    # broker 2 asks for epoch 2, which broker 1 never had: truncated to its high watermark (120,
    # its end), while the histories part at 80 all the same
    assert (f.truncate_to, f.truncated_count, f.divergence_offset) == (120, 0, 80)
    assert "later leader epoch" in c.notes[0]
    assert (c.leader_records_from, c.leader_records_count, len(c.leader_records)) == (80, 70, 2)
    with pytest.raises(UsageError):
        cr.compare([cr.open_replica(a), cr.open_replica(b)], leader="7")


def test_transactional_state_of_the_records_beyond(tmp_path):
    common = run(5, 0)
    tail = [
        {"epoch": 1, "keys": ["t1"], "pid": 7, "txn": True},
        {"epoch": 1, "marker": "COMMIT", "pid": 7},
        {"epoch": 1, "keys": ["t2"], "pid": 8, "txn": True},
        {"epoch": 1, "marker": "ABORT", "pid": 8},
        {"epoch": 1, "keys": ["t3"], "pid": 9, "txn": True},
        {"epoch": 1, "keys": ["plain"], "pid": 10},
    ]
    a = write_replica(tmp_path / "b1", 1, common + tail)
    b = write_replica(tmp_path / "b2", 2, common + run(2, 2, "x", 5))
    (f,) = cr.compare([cr.open_replica(a), cr.open_replica(b)]).followers
    got = [(x.offset, x.transaction.value, x.control, x.producer_id) for x in f.truncated]
    assert got == [
        (5, "committed", None, 7),
        (6, "marker", "COMMIT", 7),
        (7, "aborted", None, 8),
        (8, "marker", "ABORT", 8),
        (9, "open", None, 9),
        (10, "none", None, 10),
    ]


def test_copies_that_agree(tmp_path):
    a = write_replica(tmp_path / "b1", 1, run(30, 0) + run(10, 3, start=30))
    b = write_replica(tmp_path / "b2", 2, run(30, 0) + run(4, 3, start=30))
    c = cr.compare([cr.open_replica(a), cr.open_replica(b)])
    assert c.agree and c.leader.label == "broker 1" and c.leader_records_from is None
    assert c.followers[0].truncated_count == 0


def test_epochs_from_batches_without_a_checkpoint_are_noted(tmp_path):
    a, b = unclean_election(tmp_path, checkpoint=False)
    ra = cr.open_replica(a)
    assert ra.epoch_source is cr.EpochSource.BATCHES and "no leader-epoch-checkpoint" in ra.notes[0]
    assert cr.compare([ra, cr.open_replica(b)]).followers[0].divergence_offset == 80


def test_log_dirs_with_topic_and_partition(tmp_path):
    a, b = unclean_election(tmp_path)
    assert cr.open_replica(tmp_path / "b1", "t", 0).path == a
    with pytest.raises(UsageError):
        cr.open_replica(tmp_path / "b1")
    with pytest.raises(InputError):
        cr.open_replica(tmp_path / "b1", "other", 0)
    with pytest.raises(InputError):
        cr.open_replica(tmp_path / "missing")


def test_not_copies_of_one_partition(tmp_path):
    a = write_replica(tmp_path / "b1", 1, run(3, 0))
    b = write_replica(tmp_path / "b2", 2, run(3, 0), topic="u")
    with pytest.raises(UsageError, match="not copies of one partition"):
        cr.compare([cr.open_replica(a), cr.open_replica(b)])
    c = write_replica(tmp_path / "b3", 3, run(3, 0), topic_id="AgAAAAAAAAAAAAAAAAAAAA")
    d = write_replica(tmp_path / "b4", 4, run(3, 0), topic_id="AQAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(UsageError, match="deleted and created again"):
        cr.compare([cr.open_replica(c), cr.open_replica(d)])


def test_a_damaged_leader_epoch_checkpoint_is_located(tmp_path):
    a = write_replica(tmp_path / "b1", 1, run(3, 0))
    (a / "leader-epoch-checkpoint").write_text("0\n1\n0 x\n")
    with pytest.raises(CheckpointError) as e:
        cr.open_replica(a)
    assert e.value.path.endswith("leader-epoch-checkpoint") and e.value.position == 4
