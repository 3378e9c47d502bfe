"""The broker's entry order of root offset checkpoints (formats.scala_order).

tests/fixtures/checkpoint_order/ holds what a Kafka 3.3.1 broker wrote (tests/broker_order made
them: one log dir with 1, 3, 5, 12, 40 and 200 partitions in turn, names of many lengths, some
partitions with a raised log start, 8 cleaned compacted ones; `shutdown-200` is the clean
shutdown's, `restart-200` a restarted broker's). Our writer, given the same entries and no earlier
order, writes the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.formats.checkpoints import (
    encode_offset_checkpoint,
    parse_offset_checkpoint_entries,
)
from kafkalog_cli.formats.scala_order import (
    CheckpointKind,
    any_ref_map_order,
    broker_order,
    champ_order,
    concurrent_hash_map_order,
    hash_map_order,
    immutable_map_order,
    topic_partition_hash,
)
from tests.helpers.paths import FIXTURES

FIXTURES = FIXTURES / "checkpoint_order"
BROKER_FILES = sorted(p for p in FIXTURES.glob("*/*-offset-checkpoint"))


def entries(path: Path) -> list[tuple[str, int, int]]:
    return parse_offset_checkpoint_entries(path.read_bytes(), path=str(path))


def test_the_fixtures_cover_every_kind_and_size():
    sizes = {(p.name, len(entries(p))) for p in BROKER_FILES}
    assert {n for n, _ in sizes} == {k.value for k in CheckpointKind}
    assert ("recovery-point-offset-checkpoint", 200) in sizes
    assert ("replication-offset-checkpoint", 200) in sizes
    assert ("cleaner-offset-checkpoint", 8) in sizes
    assert max(n for name, n in sizes if name == "log-start-offset-checkpoint") > 100
    assert {n for name, n in sizes if name == "recovery-point-offset-checkpoint"} >= {
        1,
        3,
        5,
        12,
        40,
        200,
    }


@pytest.mark.parametrize("path", BROKER_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_our_bytes_are_the_brokers(path):
    data = path.read_bytes()
    offsets = {(t, p): o for t, p, o in entries(path)}
    # rewriting the broker's file with its own order changes nothing
    assert encode_offset_checkpoint(offsets, order=list(offsets), kind=path.name) == data
    # and from the entries alone, unless two keys hash alike (their order is the broker's insertion order)
    if not {("a", 0), ("B", 1)} <= offsets.keys():
        assert encode_offset_checkpoint(offsets, kind=path.name) == data


def test_equal_hashes_in_the_broker_files():
    # the broker wrote ("B", 1) before ("a", 0) in one file and after it in another: insertion order
    def rank(path):
        keys = [(t, p) for t, p, _ in entries(path)]
        return keys.index(("a", 0)) < keys.index(("B", 1))

    assert rank(FIXTURES / "phase6-200" / "recovery-point-offset-checkpoint")
    assert not rank(FIXTURES / "phase5-40" / "replication-offset-checkpoint")
    # a restart swapped them, and nothing else
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        before = [(t, p) for t, p, _ in entries(FIXTURES / "shutdown-200" / name)]
        after = [(t, p) for t, p, _ in entries(FIXTURES / "restart-200" / name)]
        assert rank(FIXTURES / "shutdown-200" / name) != rank(FIXTURES / "restart-200" / name)
        assert [k for k in before if k not in {("a", 0), ("B", 1)}] == [
            k for k in after if k not in {("a", 0), ("B", 1)}
        ]


def test_written_from_scratch_not_sorted():
    # 12 partitions of the fixture: the broker's order is neither sorted nor the order they were made in
    path = FIXTURES / "phase4-12" / "recovery-point-offset-checkpoint"
    keys = [(t, p) for t, p, _ in entries(path)]
    assert keys != sorted(keys)
    assert broker_order(CheckpointKind.RECOVERY_POINT, sorted(keys)) == keys


def test_topic_partition_hash_is_javas():
    # TopicPartition.hashCode as kafka-clients 3.3.1 computes it
    assert topic_partition_hash(("a", 0)) == 1058
    assert topic_partition_hash(("B", 1)) == 1058
    assert topic_partition_hash(("telemetry-raw-events-2024", 99)) == -31789895
    assert topic_partition_hash(("héllo-wörld", 7)) == 2000329094
    assert topic_partition_hash(("__consumer_offsets", 49)) == -970368889


def test_recovery_points_and_log_starts_differ_below_six_entries():
    """`.map` sizes the HashMap for its known size (8 buckets up to 5 entries); `.collect` cannot,
    so it keeps 16: the same keys can come out in another order."""
    keys = [("orders", 0), ("orders", 1), ("payments", 0)]
    # what scala-library 2.13.18's HashMap.from gives for View.Map and View.Collect of these
    assert broker_order(CheckpointKind.RECOVERY_POINT, keys) == keys
    assert broker_order(CheckpointKind.LOG_START_OFFSET, keys) == [
        ("payments", 0),
        ("orders", 0),
        ("orders", 1),
    ]
    many = [("a", p) for p in range(6)]
    assert broker_order(CheckpointKind.RECOVERY_POINT, many) == broker_order(
        CheckpointKind.LOG_START_OFFSET, many
    )


def test_equal_hashes_keep_the_existing_order():
    """("a", 0) and ("B", 1) hash alike: the broker orders them by insertion, which only the
    existing file tells."""
    a, b = ("a", 0), ("B", 1)
    for kind in CheckpointKind:
        assert broker_order(kind, [a, b], existing=[a, b]) == [a, b]
        assert broker_order(kind, [a, b], existing=[b, a]) == [b, a]


def test_cleaner_checkpoint_small_maps_keep_insertion_order():
    """Up to 4 entries the cleaner's immutable Map is a Map1..Map4: the file's order, a new
    partition last (the order the cleaner finished them in)."""
    keys = [("cmp-none", 0), ("cmp-lz4", 0)]  # the corpus' keyed-overwrites case
    assert broker_order(CheckpointKind.CLEANER_OFFSET, keys, existing=[("cmp-none", 0)]) == keys
    existing = [("z", 0), ("a", 1), ("m", 2)]
    got = broker_order(CheckpointKind.CLEANER_OFFSET, existing + [("b", 0)], existing=existing)
    assert got == existing + [("b", 0)]
    # a partition gone (its log deleted) is filtered out, the others keep their places
    assert broker_order(CheckpointKind.CLEANER_OFFSET, [("z", 0), ("m", 2)], existing=existing) == [
        ("z", 0),
        ("m", 2),
    ]


def test_cleaner_checkpoint_from_five_entries_is_a_hash_map():
    keys = [("t", p) for p in range(5)]
    assert immutable_map_order(keys[:4], set(keys), [keys[4]], topic_partition_hash) == champ_order(
        keys, topic_partition_hash
    )
    # read with 5 entries, filtered to 3: still a HashMap (its order, not the file's)
    got = broker_order(CheckpointKind.CLEANER_OFFSET, keys[:3], existing=list(reversed(keys)))
    assert got == champ_order(keys[:3], topic_partition_hash)
    assert got == broker_order(CheckpointKind.CLEANER_OFFSET, keys[:3], existing=keys)


def test_any_ref_map_and_concurrent_hash_map_grow():
    keys = [("topic", p) for p in range(100)]
    for order in (
        any_ref_map_order(keys, topic_partition_hash),
        concurrent_hash_map_order(keys, topic_partition_hash),
        hash_map_order(keys, known_size=True),
        champ_order(keys, topic_partition_hash),
    ):
        assert sorted(order) == keys


topics = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\x0b\f\r"),
    min_size=1,
    max_size=12,
)
key_sets = st.lists(
    st.tuples(st.one_of(topics, st.sampled_from(["a", "B", "Aa", "BB"])), st.integers(0, 300)),
    max_size=60,
    unique=True,
)


@given(key_sets, st.sampled_from(list(CheckpointKind)), st.randoms(use_true_random=False))
def test_order_is_a_permutation_and_a_function_of_the_keys(keys, kind, rnd):
    got = broker_order(kind, keys)
    assert sorted(got) == sorted(keys)
    shuffled = list(keys)
    rnd.shuffle(shuffled)
    assert broker_order(kind, shuffled) == got


@given(key_sets, st.sampled_from(list(CheckpointKind)))
def test_the_order_written_is_kept_on_rewrite(keys, kind):
    """Rewriting a file in the order we wrote it gives the same bytes (the broker's too)."""
    offsets = {k: i for i, k in enumerate(keys)}
    data = encode_offset_checkpoint(offsets, kind=kind)
    order = [(t, p) for t, p, _ in parse_offset_checkpoint_entries(data)]
    assert encode_offset_checkpoint(offsets, order=order, kind=kind) == data


def test_replication_order_can_depend_on_creation_order():
    """("metrics", 0) and ("logs", 2) share a ConcurrentHashMap bin and compete for one AnyRefMap
    slot: which the broker created first decides (what Java's own maps give, checked against
    scala-library 2.13.18 and Java 17)."""
    h = topic_partition_hash
    keys = [("orders", 0), ("metrics", 0), ("logs", 2)]
    assert any_ref_map_order(concurrent_hash_map_order(keys, h), h) == keys
    assert any_ref_map_order(concurrent_hash_map_order([keys[2], keys[1], keys[0]], h), h) == [
        ("orders", 0),
        ("logs", 2),
        ("metrics", 0),
    ]
    # so an unchanged set of partitions keeps the file's order, either one
    for existing in (
        [("orders", 0), ("metrics", 0), ("logs", 2)],
        [("orders", 0), ("logs", 2), ("metrics", 0)],
    ):
        assert (
            broker_order(CheckpointKind.REPLICATION_OFFSET, sorted(keys), existing=existing)
            == existing
        )
