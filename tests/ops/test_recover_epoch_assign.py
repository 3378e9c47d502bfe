"""recover assigns the leader epochs of the batches it recovers as LogSegment.recover does, through
LeaderEpochFileCache.assign: a batch whose epoch is above the cache's latest drops the entries that
start at or after its base offset (maybeTruncateNonMonotonicEntries) before it is added. Found by
the differential campaign against 4.0.0-SNAPSHOT (seed 1100003, codec-zstd-0: a flipped byte in the
first batch's partition leader epoch, 0 -> 1946157056, which the CRC does not cover): the broker
recovered the checkpoint "0 0" into "1946157056 0"; kafkalog kept both."""

from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

NOW = 1_800_000_000_000


def log_dir(tmp_path: Path, epochs: list[int], checkpoint: str) -> Path:
    """One partition, one batch per entry of `epochs` (its partition leader epoch), not cleanly shut
    down, recovery point 0: recover scans every batch."""
    root = tmp_path / "logdir"
    d = root / "t-0"
    d.mkdir(parents=True)
    (d / f"{0:020d}.log").write_bytes(
        b"".join(
            build_v2_batch([SimpleRecord(b"k", b"v", NOW - 1000 + i)], i, partition_leader_epoch=e)
            for i, e in enumerate(epochs)
        )
    )
    (d / "leader-epoch-checkpoint").write_text(checkpoint)
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    return root


def recovered_epochs(root: Path) -> str:
    r = CliRunner().invoke(
        cli, ["recover", "--now", str(NOW), "--no-quarantine", str(root / "t-0")]
    )
    assert r.exit_code in (0, 1), r.output
    return (root / "t-0" / "leader-epoch-checkpoint").read_text()


def test_a_higher_epoch_at_an_entry_s_start_offset_replaces_it(tmp_path):
    root = log_dir(tmp_path, [1946157056, 0, 0], "0\n1\n0 0\n")
    assert recovered_epochs(root) == "0\n1\n1946157056 0\n"


def test_a_higher_epoch_drops_every_entry_from_its_start_offset_on(tmp_path):
    root = log_dir(tmp_path, [0, 7, 7, 7], "0\n3\n0 0\n1 1\n2 2\n")
    assert recovered_epochs(root) == "0\n2\n0 0\n7 1\n"


def test_epochs_in_order_are_added_as_before(tmp_path):
    root = log_dir(tmp_path, [0, 0, 1, 3], "0\n1\n0 0\n")
    assert recovered_epochs(root) == "0\n3\n0 0\n1 2\n3 3\n"
