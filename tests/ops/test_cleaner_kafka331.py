"""`kafkalog compact` against Kafka 3.3.1's cleaner on the cases a review found it differed:
empty control batches, a full offset map, the high watermark, the round's last batch, a full
disk and a checkpoint outside the log. Each case is driven through the command line and checks
what a user sees: exit code, output, and the records and files left."""

from __future__ import annotations

import errno
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import ProducerSnapshotEntry, encode_producer_snapshot
from kafkalog_cli.formats.records import build_v2_batch, empty_v2_batch, iter_batches
from kafkalog_cli.ops import cleaner
from kafkalog_cli.storage import names
from tests.helpers.compaction import (
    NOW,
    T,
    batches,
    consumer_view,
    recs,
    replicated_to_the_end,
    write_segment,
)
from tests.helpers.run_lines import log_dir_report

# the broker these logs stand for ran with Kafka's defaults (compact refuses to guess them)
CFG = [
    "--topic-config",
    "t:cleanup.policy=compact",
    "--assume-kafka-defaults",
    "--no-quarantine",
    "--now",
    str(NOW),
]


def compact(part: Path, *args: str, replicated: bool = True):
    if replicated:
        replicated_to_the_end(part)
    return CliRunner().invoke(cli, ["compact", str(part), "--force", *CFG, *args])


def one(key: str, value: str | None, offset: int, **kw) -> bytes:
    return build_v2_batch(recs((key, value)), offset, **kw)


def empty_commit(offset: int, pid: int, epoch: int) -> bytes:
    """What Kafka's cleaner leaves of a marker kept for its producer (writeEmptyHeader)."""
    return empty_v2_batch(
        offset,
        0,
        max_timestamp=T,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=0,
    )


def checkpoint(part: Path, name: str) -> str:
    return (part.parent / name).read_text()


# ------------------------------------------------------------------------------ 1. empty control batch
def test_empty_control_batch_of_a_gone_producer_is_dropped(tmp_path):
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [one("a", "1", 0), empty_commit(1, 9, 4), one("a", "2", 2)])
    write_segment(part, 3, [one("z", "v", 3)])
    r = compact(part)
    assert r.exit_code == 0, r.output
    assert consumer_view(part) == [(2, "a", "2"), (3, "z", "v")]
    assert [b[:2] for b in batches(part)] == [(2, 2), (3, 3)]  # the empty batch at 1 is gone


def test_empty_control_batch_last_of_an_active_producer_stays_empty(tmp_path):
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [one("a", "1", 0), empty_commit(1, 9, 4), one("a", "2", 2)])
    write_segment(part, 3, [one("z", "v", 3)])
    snap = ProducerSnapshotEntry(
        9, 4, -1, -1, 0, T, 0, -1
    )  # producer 9's last entry: a marker, epoch 4
    (part / f"{4:020d}{names.SNAPSHOT_SUFFIX}").write_bytes(encode_producer_snapshot([snap]))
    r = compact(part)
    assert r.exit_code == 0, r.output
    kept = [b for b in iter_batches((part / f"{0:020d}.log").read_bytes()) if b.base_offset == 1]
    assert [(b.is_control, b.records_count, b.producer_id, b.producer_epoch) for b in kept] == [
        (True, 0, 9, 4)
    ]


# ------------------------------------------------------------------------------ 2. offset map full
def test_full_map_stops_at_any_keyed_record_once_full(tmp_path):
    part = tmp_path / "logs" / "t-0"  # 240 bytes: 10 slots, 9 keys
    write_segment(
        part, 0, [build_v2_batch(recs(*[(f"k{i}", "v") for i in range(9)]), 0), one("k0", "new", 9)]
    )
    write_segment(part, 10, [one("z", "v", 10)])
    r = compact(part, "--dedupe-buffer-size", "240", "--format", "json")
    assert r.exit_code == 0, r.output
    rounds = log_dir_report(r.output)["cleaned"][0]["rounds"]
    assert [x["end_offset"] for x in rounds] == [9, 10]  # Kafka's round 1 ends before k0 at 9
    assert consumer_view(part)[0] == (1, "k1", "v") and consumer_view(part)[-2] == (9, "k0", "new")


def test_batch_with_more_keys_than_the_map_progresses_mid_batch(tmp_path):
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [build_v2_batch(recs(*[(f"k{i}", "v") for i in range(12)]), 0)])
    write_segment(part, 12, [one("z", "v", 12)])
    r = compact(part, "--dedupe-buffer-size", "240", "--format", "json")
    assert r.exit_code == 0, r.output
    rounds = log_dir_report(r.output)["cleaned"][0]["rounds"]
    assert [x["end_offset"] for x in rounds] == [9, 12]
    assert checkpoint(part, names.CLEANER_CHECKPOINT).splitlines()[-1] == "t 0 12"
    assert [o for o, _, _ in consumer_view(part)] == list(range(13))


# ------------------------------------------------------------------------------ 3. high watermark
def _hw_log(tmp_path, hw_lines: str | None) -> Path:
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [one("a", str(i), i) for i in range(5)])
    write_segment(part, 5, [one("a", str(i), i) for i in range(5, 10)])
    write_segment(part, 10, [one("z", "v", 10)])
    if hw_lines is not None:
        (part.parent / names.REPLICATION_CHECKPOINT).write_text(
            f"0\n{hw_lines.count(chr(10))}\n{hw_lines}"
        )
    return part


def test_nothing_cleaned_past_the_checkpointed_high_watermark(tmp_path):
    part = _hw_log(tmp_path, "t 0 2\n")
    r = compact(part)
    assert r.exit_code == 0, r.output
    assert "nothing cleanable (high watermark 2 from replication-offset-checkpoint)" in r.output
    assert len(consumer_view(part)) == 11
    assert not (part.parent / names.CLEANER_CHECKPOINT).exists()


def test_partition_missing_from_the_hw_checkpoint_is_not_cleaned(tmp_path):
    part = _hw_log(tmp_path, "other 0 7\n")
    r = compact(part)
    assert r.exit_code == 0 and "the partition has no entry there" in r.output, r.output
    assert len(consumer_view(part)) == 11


def test_high_watermark_at_a_segment_bound_cleans_below_it(tmp_path):
    part = _hw_log(tmp_path, "t 0 5\n")
    r = compact(part)
    assert r.exit_code == 0, r.output
    assert [o for o, _, _ in consumer_view(part)] == [4, 5, 6, 7, 8, 9, 10]
    assert checkpoint(part, names.CLEANER_CHECKPOINT).splitlines()[-1] == "t 0 5"


def test_no_hw_checkpoint_file_takes_the_log_start_offset_and_says_so(tmp_path):
    # Partition.updateHighWatermark: no entry (no file) is 0, clamped to the log start offset,
    # as retain takes it (ops.high_watermark)
    part = _hw_log(tmp_path, None)
    r = compact(part, replicated=False)
    assert r.exit_code == 0, r.output
    assert "no replication-offset-checkpoint" in r.output and "nothing cleanable" in r.output
    assert len(consumer_view(part)) == 11
    assert not (part.parent / names.CLEANER_CHECKPOINT).exists()


# ------------------------------------------------------------------------------ 4. the round's last batch
def test_batch_emptied_at_the_end_of_the_round_is_dropped(tmp_path):
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [one("a", "1", 0), build_v2_batch(recs((None, "keyless")), 1)])
    write_segment(part, 2, [one("z", "v", 2)])
    r = compact(part)
    assert r.exit_code == 0, r.output
    assert [b[:2] for b in batches(part)] == [(0, 0), (2, 2)]


# ------------------------------------------------------------------------------ 5. full disk
def test_full_disk_names_the_file_exit_6_and_leaves_the_log_dir_as_it_was(tmp_path, monkeypatch):
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [one("a", "1", 0), one("a", "2", 1)])
    write_segment(part, 2, [one("z", "v", 2)])
    replicated_to_the_end(part)

    def files():
        return {
            p.name: p.read_bytes()
            for p in part.parent.rglob("*")
            if p.is_file() and p.name != ".lock"
        }

    before = files()

    def append(self, data, *a):
        self._f.write(data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cleaner.CleanedSegment, "append", append)
    r = compact(part)
    assert r.exit_code == 6, r.output
    line = r.output.strip()
    assert (
        "\n" not in line and "00000000000000000000.log.cleaned" in line and "no space left" in line
    )
    assert files() == before
    monkeypatch.undo()
    r = compact(part)  # and the next compact runs
    assert r.exit_code == 0 and consumer_view(part) == [(1, "a", "2"), (2, "z", "v")], r.output


# ------------------------------------------------------------------------------ 6. checkpoint reset
def test_checkpoint_past_the_log_end_is_reset_even_when_not_cleaned(tmp_path):
    part = tmp_path / "logs" / "t-0"
    write_segment(part, 0, [one("z", "v", 0)])  # only the active segment: nothing cleanable
    (part.parent / names.CLEANER_CHECKPOINT).write_text("0\n1\nt 0 50\n")
    r = compact(part, "--dry-run")
    assert r.exit_code == 1  # the reset is a change pending
    assert "cleaner-offset-checkpoint 50 outside [0, 1]: reset to 0" in r.output, r.output
    assert checkpoint(part, names.CLEANER_CHECKPOINT) == "0\n1\nt 0 50\n"  # not with --dry-run
    r = compact(part)
    assert r.exit_code == 0 and "nothing cleanable" in r.output, r.output
    assert checkpoint(part, names.CLEANER_CHECKPOINT) == "0\n1\nt 0 0\n"
