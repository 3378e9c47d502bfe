"""The order of a producer snapshot's entries: the broker writes its producer map in iteration
order (ProducerStateManager.writeSnapshot). Kafka 3.3/3.4 keep it in a Scala mutable.HashMap
(a bucket's entries sorted by hash), 3.5 and later in a java.util.HashMap (a bucket's entries in
insertion order): producer ids 8 and 1000 share bucket 8 of 16, and a log where 1000 appends first
is snapshotted 8, 1000 by 3.3 and 1000, 8 by 3.5+ (config.versions.PRODUCER_SNAPSHOT_INSERTION_ORDER)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import parse_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

NOW = 1_800_000_000_000
T = NOW - 60_000


def log_dir(tmp_path: Path, pids: list[int]) -> Path:
    """One partition, one idempotent batch per producer id in `pids`' order."""
    root = tmp_path / "logdir"
    d = root / "t-0"
    d.mkdir(parents=True)
    log = b"".join(
        build_v2_batch(
            [SimpleRecord(b"k", b"v", T + i)], i, producer_id=pid, producer_epoch=0, base_sequence=0
        )
        for i, pid in enumerate(pids)
    )
    (d / f"{0:020d}.log").write_bytes(log)
    (d / f"{0:020d}.index").write_bytes(b"")
    (d / f"{0:020d}.timeindex").write_bytes(b"")
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    (root / ".kafka_cleanshutdown").write_text("")
    return root


def rolled_snapshot_order(tmp_path: Path, pids: list[int], *version: str) -> list[int]:
    root = log_dir(tmp_path, pids)
    r = CliRunner().invoke(
        cli, ["roll", "--now", str(NOW), "--no-quarantine", *version, str(root / "t-0")]
    )
    assert r.exit_code == 0, r.output
    snap = root / "t-0" / f"{len(pids):020d}.snapshot"
    return [e.producer_id for e in parse_producer_snapshot(snap.read_bytes()).entries]


@pytest.mark.parametrize(
    "version, order",
    [
        ("3.3", [8, 1000]),
        ("3.4", [8, 1000]),
        ("3.5", [1000, 8]),
        ("3.9", [1000, 8]),
        ("4.0", [1000, 8]),
    ],
)
def test_colliding_producer_ids_are_written_in_the_versions_map_order(tmp_path, version, order):
    assert rolled_snapshot_order(tmp_path, [1000, 8], "--kafka-version", version) == order


def test_ids_in_different_buckets_are_in_bucket_order_in_every_version(tmp_path):
    for version in ("3.3", "4.0"):
        assert rolled_snapshot_order(
            tmp_path / version, [9, 1000, 3], "--kafka-version", version
        ) == [3, 1000, 9]


def test_a_dir_that_proves_no_version_keeps_the_oldest_order(tmp_path):
    assert rolled_snapshot_order(tmp_path, [1000, 8]) == [8, 1000]
