"""storage's one rule for what a directory is, and partition dirs with their kind (LogManager.loadLog)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage.logdir import (
    LOADED,
    DirKind,
    LogDir,
    dir_kind,
    expand_paths,
    is_log_dir,
    partition_dirs_for,
    segments_of,
    select_partition_dirs,
)
from kafkalog_cli.storage.names import (
    PartitionDirKind,
    TopicPartition,
    parse_partition_dir,
    parse_partition_dir_name,
)
from tests.helpers.paths import EXAMPLES

ROOT_FILES = shutil.ignore_patterns(
    "*-checkpoint", "meta.properties", "bootstrap.checkpoint", ".lock", ".kafka_cleanshutdown"
)
UUID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    "name, tp, kind",
    [
        ("orders-3", ("orders", 3), PartitionDirKind.LIVE),
        ("my-topic-12", ("my-topic", 12), PartitionDirKind.LIVE),
        (f"orders-3.{UUID}-future", ("orders", 3), PartitionDirKind.FUTURE),
        (f"orders-3.{UUID}-delete", ("orders", 3), PartitionDirKind.DELETE),
        (f"a.b-0.{UUID}-stray", ("a.b", 0), PartitionDirKind.STRAY),
    ],
)
def test_partition_dir_names_parse_with_their_kind(name, tp, kind):
    parsed = parse_partition_dir_name(name)
    assert parsed.topic_partition == TopicPartition(*tp) and parsed.kind is kind
    # the logs a broker loads have their topic-partition; the others none
    assert (parse_partition_dir(name) is not None) is kind.loaded


@pytest.mark.parametrize("name", ["orders", "orders-x", "lost+found", "orders-3-future"])
def test_names_that_are_no_partition_dir(name):
    assert parse_partition_dir_name(name) is None


def _log_dir_with_kinds(tmp_path: Path) -> Path:
    ld = tmp_path / "ld"
    shutil.copytree(EXAMPLES, ld)
    for kind in ("future", "delete", "stray"):
        shutil.copytree(ld / "txn-0", ld / f"txn-0.{UUID}-{kind}")
    return ld


def test_a_listing_knows_every_kind_and_loads_live_and_future(tmp_path):
    ld = _log_dir_with_kinds(tmp_path)
    listing = LogDir(ld).listing()
    loaded = [p.name for p in listing.of(LOADED)]
    assert loaded.index(f"txn-0.{UUID}-future") == loaded.index("txn-0") + 1
    assert {(p.name, k) for p, k in listing.other_than(LOADED)} == {
        (f"txn-0.{UUID}-delete", PartitionDirKind.DELETE),
        (f"txn-0.{UUID}-stray", PartitionDirKind.STRAY),
    }
    assert LogDir(ld).partition_dirs() == listing.of(LOADED)


def test_read_paths_include_future_logs_and_report_the_others(tmp_path):
    ld = _log_dir_with_kinds(tmp_path)
    left_out = []
    files = expand_paths([ld], on_left_out=lambda d, k: left_out.append((d.name, k)))
    assert any(f.parent.name.endswith("-future") for f in files)
    assert not any(f.parent.name.endswith(("-delete", "-stray")) for f in files)
    assert sorted(k.value for _, k in left_out) == ["delete", "stray"]


def test_mutating_selection_leaves_out_what_it_is_not_given_to_act_on(tmp_path):
    ld = _log_dir_with_kinds(tmp_path)
    sel = select_partition_dirs([ld])
    assert not any("." + UUID in p.name for p in sel.groups[ld])
    assert sorted(k.value for _, k in sel.left_out) == ["delete", "future", "stray"]
    sel = select_partition_dirs([ld, ld / f"txn-0.{UUID}-delete"], LOADED)
    assert ld / f"txn-0.{UUID}-future" in sel.groups[ld]
    assert [k.value for _, k in sel.left_out].count("delete") == 2


def test_a_dir_without_any_partition_is_neither(tmp_path):
    d = tmp_path / "etc"
    (d / "conf-1").mkdir(parents=True)  # named like a partition, holds nothing of Kafka's
    (d / "conf-1" / "app.conf").write_text("x")
    (d / "passwd").write_text("root:x:0:0")
    assert dir_kind(d) is None and not is_log_dir(d)
    for f in (lambda: expand_paths([d]), lambda: partition_dirs_for([d]), lambda: segments_of([d])):
        with pytest.raises(InputError, match="not a Kafka log dir or partition dir"):
            f()


def test_partition_dirs_without_checkpoint_files_are_a_log_dir(tmp_path):
    ld = tmp_path / "copy"
    shutil.copytree(EXAMPLES, ld, ignore=ROOT_FILES)
    assert dir_kind(ld) is DirKind.LOG_DIR
    groups = partition_dirs_for([ld])
    assert len(groups[ld]) == len(LogDir(EXAMPLES).partition_dirs())


@pytest.mark.parametrize("keep_meta", [True, False])
def test_a_log_dir_named_like_a_partition_is_a_log_dir(tmp_path, keep_meta):
    ld = tmp_path / "broker-0"
    shutil.copytree(EXAMPLES, ld, ignore=None if keep_meta else ROOT_FILES)
    assert dir_kind(ld) is DirKind.LOG_DIR
    segs = segments_of([ld])  # what the Spark source and export read
    assert len(segs) >= len(LogDir(EXAMPLES).partition_dirs())
    assert list(partition_dirs_for([ld])) == [ld]


def test_an_empty_partition_dir_of_a_log_dir_is_a_partition_dir(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(EXAMPLES, ld)
    (ld / "fresh-0").mkdir()
    assert dir_kind(ld / "fresh-0") is DirKind.PARTITION_DIR
    assert partition_dirs_for([ld / "fresh-0"]) == {ld: [ld / "fresh-0"]}
