"""ops.describe against what the files state: the root checkpoints as their text says, and the
batches as a full walk of every .log finds them (the describe path reads only tails and headers)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.compression import compression_from_id
from kafkalog_cli.formats.producer_state import (
    ProducerSnapshotEntry,
    encode_producer_snapshot,
    parse_producer_snapshot,
)
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops import compact
from kafkalog_cli.ops import describe as ops
from kafkalog_cli.ops.describe import LogDirDescription, PartitionDescription
from tests.helpers.compaction import params, resolver_for, restore
from tests.helpers.file_states import checkpoint
from tests.helpers.paths import EXAMPLES
from tests.helpers.transactions import txn_partition as _txn_partition


def walk(part_dir: Path) -> list:
    """Every batch of every .log, from byte 0 (no index used)."""
    out = []
    for log in sorted(part_dir.glob("*.log")):
        out.extend(iter_batches(log.read_bytes()))
    return out


def describe_all(
    paths, resolver=None
) -> tuple[list[PartitionDescription], list[LogDirDescription]]:
    items = list(ops.describe(ops.select(paths), (lambda _: resolver) if resolver else None))
    return (
        [i for i in items if isinstance(i, PartitionDescription)],
        [i for i in items if isinstance(i, LogDirDescription)],
    )


def test_every_fact_of_the_example_log_dir_is_what_the_files_state():
    parts, dirs = describe_all([EXAMPLES])
    assert [d.name for d in parts] == sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    hws = checkpoint(EXAMPLES, "replication-offset-checkpoint")
    rps = checkpoint(EXAMPLES, "recovery-point-offset-checkpoint")
    cleaner = checkpoint(EXAMPLES, "cleaner-offset-checkpoint")
    for d in parts:
        pd = Path(d.directory)
        batches = walk(pd)
        logs = sorted(pd.glob("*.log"))
        assert d.segments == len(logs)
        assert d.size_bytes == sum(os.path.getsize(f) for f in logs)
        assert d.log_start_offset == 0
        assert d.log_end_offset == batches[-1].last_offset + 1
        assert d.checkpoints.high_watermark == hws.get(d.name)
        assert d.checkpoints.recovery_point == rps.get(d.name)
        assert d.checkpoints.cleaner_offset == cleaner.get(d.name)
        assert d.first_timestamp == batches[0].max_timestamp
        top = max(b.max_timestamp for b in batches)
        assert d.max_timestamp == top
        assert d.max_timestamp_offset == next(
            b.last_offset for b in batches if b.max_timestamp == top
        )
        assert set(d.codecs) <= {compression_from_id(b.compression_id).kafka_name for b in batches}
        assert d.codecs
        assert d.problems == []
    by_name = {d.name: d for d in parts}
    assert by_name["txn-0"].codecs == ["gzip", "none"]  # the markers are uncompressed
    assert by_name["multi-segment-0"].segments == 2
    assert by_name["compacted-0"].checkpoints.cleaner_offset == 36
    # producers: the latest snapshot's entries (a clean shutdown: nothing replayed after it)
    for name in ("idempotent-lz4-0", "txn-0"):
        d = by_name[name]
        snap = max((EXAMPLES / name).glob("*.snapshot"))
        assert d.producers.snapshot == snap.name
        assert d.producers.replayed_from == d.log_end_offset
        assert sorted(d.producers.state.entries) == sorted(
            e.producer_id for e in parse_producer_snapshot(snap.read_bytes()).entries
        )
        assert d.producers.open_transactions == []
    (ld,) = dirs
    assert ld.partitions == len(parts) and ld.size_bytes == sum(d.size_bytes for d in parts)
    assert ld.clean_shutdown and ld.is_log_dir
    assert ld.quarantine.folders == 0 and ld.quarantine.bytes == 0


def test_json_objects_carry_their_kind():
    items = [i.to_dict() for i in ops.describe(ops.select([EXAMPLES / "txn-0"]))]
    assert [i["kind"] for i in items] == ["partition", "log_dir"]
    assert items[0]["topic"] == "txn" and items[0]["high_watermark"] == 15
    assert items[0]["producer_ids"] == [1] and items[0]["open_transactions"] == []
    assert items[1]["log_dir"] == str(EXAMPLES)


def test_an_open_transaction_is_found_by_replaying_the_log_after_the_latest_snapshot(tmp_path):
    _txn_partition(tmp_path)
    (d,), _ = describe_all([tmp_path])
    assert d.producers.snapshot is None and d.producers.replayed_from == 0
    assert d.producers.open_transactions == [(0, 7)]
    assert d.to_dict()["open_transactions"] == [{"producer_id": 7, "first_offset": 0}]
    assert d.producers.last_stable_offset(5) == 0


def test_an_open_transaction_recorded_in_the_snapshot_at_the_log_end(tmp_path):
    entry = ProducerSnapshotEntry(9, 1, 2, 2, 2, 1002, 0, 0)
    _txn_partition(tmp_path, snapshot=encode_producer_snapshot([entry]))
    (d,), _ = describe_all([tmp_path])
    assert d.producers.snapshot == "00000000000000000005.snapshot"
    assert d.producers.replayed_from == 5  # nothing replayed: the snapshot is at the LEO
    assert d.producers.open_transactions == [(0, 9)]


def test_a_damaged_snapshot_is_a_problem_and_the_log_is_replayed_instead(tmp_path):
    _txn_partition(tmp_path, snapshot=b"\x00\x01garbage!")
    (d,), _ = describe_all([tmp_path])
    assert any(
        "00000000000000000005.snapshot" in p and "producer snapshot ignored" in p
        for p in d.problems
    )
    assert d.producers.open_transactions == [(0, 7)]


def test_unknown_configs_have_no_value_and_stated_ones_their_source():
    (d,), _ = describe_all([EXAMPLES / "codec-gzip-0"], ConfigResolver(cluster_metadata={}))
    j = d.to_dict()["configs"]
    assert j["retention.ms"]["value"] is None and j["retention.ms"]["known"] is False
    assert "unknown" in j["retention.ms"]["origin"]
    resolver = ConfigResolver(
        cluster_metadata={"codec-gzip": {}},
        server_properties={"log.retention.hours": "1"},
        overrides={"retention.bytes": "1000"},
    )
    (d,), _ = describe_all([EXAMPLES / "codec-gzip-0"], resolver)
    j = d.to_dict()["configs"]
    assert (
        j["retention.ms"]["value"] == 3_600_000
        and j["retention.ms"]["source"] == "STATIC_BROKER_CONFIG"
    )
    assert j["retention.bytes"] == {
        **j["retention.bytes"],
        "value": 1000,
        "source": "CONFIG_OPTION",
        "known": True,
    }
    assert j["cleanup.policy"]["value"] == "delete" and j["cleanup.policy"]["known"] is True


@pytest.mark.parametrize("case", ["keyed-overwrites", "tombstones"])
def test_the_dirty_ratio_is_the_cleaners(tmp_path, case):
    """What `compact` computes for the same partitions (min.compaction.lag.ms is 0 there)."""
    log_dir = restore(case, "before", tmp_path / "logs")
    p = params(case)
    resolver = resolver_for(case)
    names = sorted(p["partitions"])
    now = max(part.get("now_ms", p.get("now_ms", 0)) for part in p["partitions"].values())
    plan = compact.plan(
        log_dir, [log_dir / n for n in names], compact.CompactOptions(now_ms=now, resolver=resolver)
    )
    expected = {dec.log.name: dec.log.ratio for dec in plan.decisions}
    parts, _ = describe_all([log_dir / n for n in names], resolver)
    assert {d.name: d.dirty_ratio for d in parts} == pytest.approx(expected)
    assert any(r > 0 for r in expected.values())


def test_a_damaged_tail_is_a_problem_and_the_other_facts_are_told(corpus_copy):
    log_dir = corpus_copy / "broker" / "recover" / "tail-garbage" / "before"
    parts, _ = describe_all([log_dir])
    damaged = [d for d in parts if d.problems]
    assert [d.name for d in damaged] == ["rec-none-0"]
    (line,) = damaged[0].problems
    assert "00000000000000000725.log: byte 6169:" in line
    d = damaged[0]
    assert d.log_end_offset is not None and d.segments == len(list(Path(d.directory).glob("*.log")))


def test_quarantine_usage_of_the_log_dir(tmp_path, runner):
    from kafkalog_cli.cli import cli
    from kafkalog_cli.storage.quarantine import QuarantineFolder, find_folders

    log_dir = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, log_dir)
    r = runner.invoke(cli, ["roll", str(log_dir / "codec-none-0")])
    assert r.exit_code == 0, r.output
    _, (ld,) = describe_all([log_dir])
    folders = [QuarantineFolder.open(f) for f in find_folders(log_dir)]
    assert ld.quarantine.folders == len(folders) == 1
    assert ld.quarantine.bytes == sum(f.bytes for f in folders)
    assert ld.quarantine.not_restored == 1
    assert ld.to_dict()["quarantine"]["root"] == str(tmp_path / ".kafkalog-quarantine" / "logdir")


def test_a_log_dir_of_many_partitions_in_worker_processes_gives_the_same_answers(
    tmp_path, monkeypatch
):
    log_dir = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, log_dir)
    monkeypatch.setattr(ops, "PARALLEL_MIN_PARTITIONS", 2)
    monkeypatch.setattr(ops, "_CHUNK", 3)
    one = [i.to_dict() for i in ops.describe(ops.select([log_dir]), jobs=1)]
    two = [i.to_dict() for i in ops.describe(ops.select([log_dir]), jobs=2)]
    assert one == two and len(one) == 15
