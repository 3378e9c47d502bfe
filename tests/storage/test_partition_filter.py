"""storage's --topic/--partition: PartitionFilter, and expand_paths / segments_of /
select_partition_dirs taking it (`only=`)."""

from __future__ import annotations

import shutil

import pytest

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage.logdir import (
    FilterTally,
    expand_paths,
    segments_of,
    select_partition_dirs,
)
from kafkalog_cli.storage.names import PartitionFilter, TopicPartition
from tests.helpers.paths import EXAMPLES


def test_globs_are_case_sensitive_and_partitions_and_topics_both_hold():
    f = PartitionFilter(("orders-*", "pay?"), (0, 2))
    assert f.matches(TopicPartition("orders-eu", 2)) and f.matches(TopicPartition("pays", 0))
    assert not f.matches(TopicPartition("Orders-eu", 0))
    assert not f.matches(TopicPartition("orders-eu", 1))
    assert PartitionFilter((), (1,)).matches(TopicPartition("any", 1))
    assert not PartitionFilter() and PartitionFilter().matches_dir("/tmp/not-a-partition")
    assert not PartitionFilter(("*",)).matches_dir("/tmp/copy")  # no topic to match
    assert PartitionFilter(("t",), (3,)).matches_dir("t-3.0123456789abcdef0123456789abcdef-future")


def test_segments_of_keeps_an_empty_matching_partition_without_error(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / "empty-0").mkdir()
    assert segments_of([d], only=PartitionFilter(("empty",))) == []
    with pytest.raises(InputError, match="no partition dir matches --topic 'none'"):
        segments_of([d], only=PartitionFilter(("none",)))


def test_segments_of_filters_a_file_given_directly_by_its_dir():
    lz4, txn = (
        EXAMPLES / "codec-lz4-0" / "00000000000000000000.log",
        EXAMPLES / "txn-0" / "00000000000000000000.log",
    )
    segs = segments_of([lz4, txn], only=PartitionFilter(("txn",)))
    assert [s.directory.name for s in segs] == ["txn-0"]


def test_a_tally_checks_once_over_paths_expanded_one_at_a_time():
    tally = FilterTally(PartitionFilter(("txn",)))
    assert expand_paths([EXAMPLES / "codec-lz4-0"], tally=tally) == []  # no error yet
    assert [p.parent.name for p in expand_paths([EXAMPLES], tally=tally)] == ["txn-0"]
    tally.check([EXAMPLES])
    empty = FilterTally(PartitionFilter(("txn",)))
    expand_paths([EXAMPLES / "codec-lz4-0"], tally=empty)
    with pytest.raises(InputError):
        empty.check([EXAMPLES / "codec-lz4-0"])


def test_select_partition_dirs_drops_log_dirs_without_a_match(tmp_path):
    other = tmp_path / "other"
    shutil.copytree(EXAMPLES, other)
    sel = select_partition_dirs([EXAMPLES, other / "txn-0"], only=PartitionFilter(("codec-lz4",)))
    assert {k: [d.name for d in v] for k, v in sel.groups.items()} == {EXAMPLES: ["codec-lz4-0"]}
