"""`kafkalog repair`: damaged batches put back from another copy, as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.partition import Partition
from tests.helpers.paths import CORPUS, EXAMPLES
from tests.helpers.repair import batches, damage

LEGACY = CORPUS / "legacy"


def copies(tmp_path: Path, src: Path = EXAMPLES) -> tuple[Path, Path]:
    """Two copies of a log dir: `a` to damage and repair, `b` the donor."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        shutil.copytree(src, d)
        (d / ".lock").unlink(missing_ok=True)
    return a, b


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def records(part: Path) -> int:
    p = Partition.open(part)
    try:
        return sum(
            b.last_offset - b.base_offset + 1
            for _, b in p.batches()
            if b.magic == 2 and not b.is_control
        )
    finally:
        p.close()


def logs_of(part: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(part.glob("*.log"))}


def json_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_one_flipped_byte_in_a_closed_segment_restores_all_600_records(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    log = part / "00000000000000000000.log"
    damage(log, "flip", 2593)  # the batch of offsets 100..124
    assert run("verify-crc", part).exit_code == 1
    r = run("repair", part, "--from", b)
    assert r.exit_code == 0, r.output
    assert "offsets 100..124 (623 bytes at byte 2593) restored from" in r.output
    assert logs_of(part) == logs_of(b / "multi-segment-0")
    assert run("verify-crc", part).exit_code == 0
    assert records(part) == 600
    cmp = run("compare-replicas", part, b / "multi-segment-0", "--format", "json")
    assert cmp.exit_code == 0, cmp.output
    assert json.loads(cmp.output)["agree"] is True


def test_a_second_run_changes_nothing_and_a_dry_run_changes_nothing(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    damage(part / "00000000000000000000.log", "flip", 2593)
    before = logs_of(part)
    dry = run("repair", part, "--from", b, "--dry-run")
    assert dry.exit_code == 1, dry.output  # something would be repaired
    assert "would" in dry.output or "1 change pending" in dry.output
    assert logs_of(part) == before
    assert not (tmp_path / ".kafkalog-quarantine").exists()
    assert run("repair", part, "--from", b).exit_code == 0
    after = {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in part.iterdir()}
    again = run("repair", part, "--from", b)
    assert again.exit_code == 0 and "nothing to do" in again.output
    assert {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in part.iterdir()} == after


def test_quarantine_restore_gives_the_damaged_bytes_back(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    log = part / "00000000000000000000.log"
    damage(log, "flip", 2593)
    damaged, mtime = log.read_bytes(), log.stat().st_mtime_ns
    r = run("repair", part, "--from", b, "--format", "json")
    assert r.exit_code == 0, r.output
    totals = json_lines(r.output)[-1]
    assert (
        totals["kind"] == "totals"
        and totals["command"] == "repair"
        and len(totals["quarantine"]) == 1
    )
    assert log.stat().st_mtime_ns == mtime  # the segment's age kept
    assert run("quarantine", "restore", totals["quarantine"][0]).exit_code == 0
    assert log.read_bytes() == damaged


def test_the_json_report_names_each_range_restored(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    damage(part / "00000000000000000000.log", "flip", 2593)
    damage(part / "00000000000000000300.log", "zero", batches(part / "00000000000000000300.log")[4])
    r = run("repair", a, "--from", b, "--format", "json")
    assert r.exit_code == 0, r.output
    lines = json_lines(r.output)
    (summary,) = [
        x for x in lines if x["kind"] == "partition" and x["partition"] == "multi-segment-0"
    ]
    assert summary["status"] == "repaired" and summary["lost"] == []
    assert [x["offsets"] for x in summary["restored"]] == [[100, 124], [400, 449]]
    assert all(x["from"].startswith(str(b / "multi-segment-0")) for x in summary["restored"])
    assert {
        x["status"]
        for x in lines
        if x["kind"] == "partition" and x["partition"] != "multi-segment-0"
    } == {"sound"}
    assert logs_of(part) == logs_of(b / "multi-segment-0")


@pytest.mark.parametrize(
    "partition",
    [
        "codec-gzip-0",
        "codec-zstd-0",
        "codec-snappy-0",
        "txn-0",
        "idempotent-lz4-0",
        "compacted-0",
        "logappend-time-0",
        "multi-segment-0",
    ],
)
@pytest.mark.parametrize("how", ["flip", "size", "base", "zero", "garbage"])
def test_each_kind_of_damage_in_each_kind_of_partition(tmp_path, partition, how):
    a, b = copies(tmp_path)
    part = a / partition
    log = sorted(part.glob("*.log"))[0]
    cuts = batches(log)
    if how == "base" and (len(cuts) < 2 or partition == "compacted-0"):
        # a wrong base offset in a segment's last batch, or inside a compacted log's gap, breaks
        # no order a check can see (verify-crc passes it too)
        assert run("verify-crc", part).exit_code == 0
        return
    damage(
        log,
        how,
        cuts[min(len(cuts) // 2, len(cuts) - 2)] if how == "base" else cuts[len(cuts) // 2],
    )
    assert logs_of(part) != logs_of(b / partition)
    r = run("repair", part, "--from", b / partition)
    assert r.exit_code == 0, r.output
    assert logs_of(part) == logs_of(b / partition)
    assert run("verify-crc", part).exit_code == 0


def test_a_donor_of_another_leader_epoch_is_refused_and_the_range_reported_lost(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    log = part / "00000000000000000000.log"
    damage(log, "flip", 2593)
    damaged = log.read_bytes()
    (b / "multi-segment-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 100\n")
    r = run("repair", part, "--from", b, "--format", "json")
    assert r.exit_code == 1, r.output
    (summary,) = [x for x in json_lines(r.output) if x["kind"] == "partition"]
    assert summary["status"] == "lost" and summary["restored"] == []
    (lost,) = summary["lost"]
    assert lost["offsets"] == [100, 124] and lost["position"] == 2593
    assert "leader epochs differ" in lost["why"]
    assert log.read_bytes() == damaged


def test_a_donor_damaged_at_the_same_offsets_is_not_taken(tmp_path):
    a, b = copies(tmp_path)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    damage(b / "multi-segment-0" / "00000000000000000000.log", "zero", 2593)
    r = run("repair", a / "multi-segment-0", "--from", b)
    assert r.exit_code == 1
    assert "offsets 100..124 not restored" in r.output and "is damaged too" in r.output


def test_a_second_donor_is_tried_when_the_first_does_not_fit(tmp_path):
    a, b = copies(tmp_path)
    c = tmp_path / "c"
    shutil.copytree(b, c)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    damage(b / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    r = run("repair", a / "multi-segment-0", "--from", b, "--from", c)
    assert r.exit_code == 0, r.output
    assert f"restored from {c / 'multi-segment-0'}" in r.output
    assert logs_of(a / "multi-segment-0") == logs_of(c / "multi-segment-0")


def test_a_torn_tail_below_the_own_high_watermark_is_restored(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    log = part / "00000000000000000300.log"
    os.truncate(log, log.stat().st_size - 7)
    r = run("repair", part, "--from", b, "--format", "json")
    assert r.exit_code == 0, r.output
    (summary,) = [x for x in json_lines(r.output) if x["kind"] == "partition"]
    assert [x["offsets"] for x in summary["restored"]] == [[575, 599]]
    assert logs_of(part) == logs_of(b / "multi-segment-0")


def test_a_tail_past_the_own_high_watermark_is_never_taken_from_the_donor(tmp_path):
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    (a / "replication-offset-checkpoint").write_text(
        (a / "replication-offset-checkpoint")
        .read_text()
        .replace("multi-segment 0 600", "multi-segment 0 575")
    )
    log = part / "00000000000000000300.log"
    os.truncate(log, log.stat().st_size - 7)
    before = log.read_bytes()
    r = run("repair", part, "--from", b, "--format", "json")
    assert r.exit_code == 1
    (summary,) = [x for x in json_lines(r.output) if x["kind"] == "partition"]
    (lost,) = summary["lost"]
    assert (
        lost["offsets"][0] == 575
        and "missing tail" in lost["why"]
        and "high watermark (575)" in lost["why"]
    )
    assert log.read_bytes() == before


def test_bytes_that_differ_from_the_donor_where_they_are_sound_are_not_overwritten(tmp_path):
    """A base offset wrong (no CRC covers it) but a donor whose batch there holds other bytes:
    another batch, not a copy of this one."""
    a, b = copies(tmp_path)
    part = a / "multi-segment-0"
    damage(part / "00000000000000000000.log", "base", 2593)
    donor_log = b / "multi-segment-0" / "00000000000000000000.log"
    data = bytearray(donor_log.read_bytes())
    data[2593 + 70] ^= 0x10  # then its CRC fixed: a sound batch of other bytes
    from kafkalog_cli.formats.crc import crc32c

    data[2593 + 17 : 2593 + 21] = crc32c(bytes(data[2593 + 21 : 2593 + 623])).to_bytes(4, "big")
    donor_log.write_bytes(bytes(data))
    r = run("repair", part, "--from", b)
    assert r.exit_code == 1
    assert "differ from the donor's batch" in r.output


def test_no_copy_of_the_partition_among_from(tmp_path):
    a, b = copies(tmp_path)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    r = run("repair", a / "multi-segment-0", "--from", b / "codec-gzip-0")
    assert r.exit_code == 1
    assert "no copy of this partition among --from" in r.output


def test_a_copy_of_another_topic_id_is_not_used(tmp_path):
    a, b = copies(tmp_path)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    meta = b / "multi-segment-0" / "partition.metadata"
    meta.write_text("version: 0\ntopic_id: rHc3nVAXQ0KAnYGJNzjKcA\n")
    r = run("repair", a / "multi-segment-0", "--from", b)
    assert r.exit_code == 1
    assert "another topic of the same name" in r.output


def test_a_locked_log_dir_is_exit_5(tmp_path):
    import fcntl

    a, b = copies(tmp_path)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    with open(a / ".lock", "w") as f:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        import subprocess
        import sys

        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkalog_cli",
                "repair",
                str(a / "multi-segment-0"),
                "--from",
                str(b),
            ],
            capture_output=True,
            text=True,
        )
    assert r.returncode == 5, r.stderr
    assert r.stderr.startswith("kafkalog: ")


def _legacy_log_dir(root: Path, fixture: str, high_watermark: int | None) -> Path:
    """A log dir with one message-format v0/v1 partition (no leader epochs) and its high watermark."""
    d = root / "logdir"
    part = d / "legacy-0"
    part.mkdir(parents=True)
    for f in (LEGACY / fixture).glob("*.log"):
        shutil.copy(f, part / f.name)
    if high_watermark is not None:
        (d / "replication-offset-checkpoint").write_text(f"0\n1\nlegacy 0 {high_watermark}\n")
    return d


@pytest.mark.parametrize("fixture", ["v0-gzip", "v1-none-create", "v1-snappy-create"])
def test_message_format_v0_v1_below_both_high_watermarks(tmp_path, fixture):
    src = _legacy_log_dir(tmp_path / "src", fixture, 1 << 40)
    a, b = copies(tmp_path, src)
    log = sorted((a / "legacy-0").glob("*.log"))[0]
    cuts = batches(log)
    damage(log, "flip", cuts[len(cuts) // 2])
    r = run("repair", a / "legacy-0", "--from", b)
    assert r.exit_code == 0, r.output
    assert logs_of(a / "legacy-0") == logs_of(b / "legacy-0")


def test_message_format_v0_v1_without_a_high_watermark_is_lost(tmp_path):
    src = _legacy_log_dir(tmp_path / "src", "v1-none-create", None)
    a, b = copies(tmp_path, src)
    log = sorted((a / "legacy-0").glob("*.log"))[0]
    damage(log, "flip", batches(log)[3])
    r = run("repair", a / "legacy-0", "--from", b)
    assert r.exit_code == 1
    assert "neither copy has leader epochs" in r.output


def _follower_behind(tmp_path: Path) -> tuple[Path, Path]:
    """A follower whose last 25 records never arrived (its high watermark 575), the leader's copy."""
    a, b = copies(tmp_path)
    ckpt = a / "replication-offset-checkpoint"
    ckpt.write_text(ckpt.read_text().replace("multi-segment 0 600", "multi-segment 0 575"))
    log = a / "multi-segment-0" / "00000000000000000300.log"
    os.truncate(log, batches(log)[-1])
    return a, b


def test_a_follower_s_missing_tail_is_left_without_leader_tail(tmp_path):
    a, b = _follower_behind(tmp_path)
    before = logs_of(a / "multi-segment-0")
    r = run("repair", a / "multi-segment-0", "--from", b)
    assert r.exit_code == 0 and "nothing to do" in r.output, r.output
    assert logs_of(a / "multi-segment-0") == before


def test_leader_tail_takes_the_missing_tail_up_to_the_leader_s_high_watermark_and_says_so(tmp_path):
    a, b = _follower_behind(tmp_path)
    r = run("repair", a / "multi-segment-0", "--from", b, "--leader-tail", "--format", "json")
    assert r.exit_code == 0, r.output
    (summary,) = [x for x in json_lines(r.output) if x["kind"] == "partition"]
    (restored,) = summary["restored"]
    assert restored["offsets"] == [575, 599] and restored["past_own_high_watermark"] is True
    (log_line,) = [x for x in json_lines(r.output) if x["kind"] == "log_dir"]
    assert any(
        "past this copy's own high watermark 575" in f["message"] for f in log_line["findings"]
    )
    assert logs_of(a / "multi-segment-0") == logs_of(b / "multi-segment-0")
    assert records(a / "multi-segment-0") == 600
    assert run("repair", a / "multi-segment-0", "--from", b, "--leader-tail").exit_code == 0


def _local_tiered_storage(root: Path, part: Path) -> Path:
    """`part`'s segments as LocalTieredStorage uploads them: <topic>-<partition>-<topic id>/
    <start offset>-<segment id>.log with the segment's .leader_epoch_checkpoint."""
    topic_id = (part / "partition.metadata").read_text().split("topic_id:")[1].strip()
    d = root / "tiered" / f"{part.name}-{topic_id}"
    d.mkdir(parents=True)
    for i, log in enumerate(sorted(part.glob("*.log"))):
        stem = f"{int(log.name[:20])}-segment{i:015d}"
        shutil.copy(log, d / f"{stem}.log")
        shutil.copy(part / "leader-epoch-checkpoint", d / f"{stem}.leader_epoch_checkpoint")
    return d


def test_an_uploaded_segment_of_local_tiered_storage_is_a_donor(tmp_path):
    a, b = copies(tmp_path)
    tiered = _local_tiered_storage(tmp_path, b / "multi-segment-0")
    part = a / "multi-segment-0"
    damage(part / "00000000000000000000.log", "flip", 2593)
    damage(part / "00000000000000000300.log", "zero", batches(part / "00000000000000000300.log")[4])
    r = run("repair", part, "--from", tiered.parent, "--format", "json")
    assert r.exit_code == 0, r.output
    (summary,) = [x for x in json_lines(r.output) if x["kind"] == "partition"]
    assert [x["offsets"] for x in summary["restored"]] == [[100, 124], [400, 449]]
    assert all(x["from"] == str(tiered) for x in summary["restored"])
    assert logs_of(part) == logs_of(b / "multi-segment-0")


def test_an_uploaded_segment_of_another_topic_id_is_not_used(tmp_path):
    a, b = copies(tmp_path)
    tiered = _local_tiered_storage(tmp_path, b / "multi-segment-0")
    other = tiered.with_name("multi-segment-0-rHc3nVAXQ0KAnYGJNzjKcA")
    tiered.rename(other)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    r = run("repair", a / "multi-segment-0", "--from", other)
    assert r.exit_code == 1
    assert "another topic of the same name" in r.output


def test_a_donor_its_cleaner_rewrote_is_matched_by_offsets_not_positions(tmp_path):
    """Each broker cleans its own copy: the donor's cleaned batches for the damaged offsets do
    not tile the damaged bytes (reported lost, nothing changed); a batch the cleaner left alone
    (the active segment) is restored from the same donor."""
    import subprocess
    import sys

    from tests.helpers.compaction import params, restore

    a = restore("tombstones", "before", tmp_path / "a")
    b = restore("tombstones", "before", tmp_path / "b")
    p = params("tombstones")
    configs = [
        x
        for k, v in p["partitions"]["cmp-tomb-0"]["configs"].items()
        for x in ("--config", f"{k}={v}")
    ]
    cleaned = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkalog_cli",
            "compact",
            "--now",
            str(p["now_ms"]),
            "--assume-kafka-defaults",
            *configs,
            str(b),
            "--no-quarantine",
        ],
        capture_output=True,
    )
    assert cleaned.returncode == 0, cleaned.stderr
    part = a / "cmp-tomb-0"
    first, active = part / "00000000000000000000.log", part / "00000000000000000875.log"
    damage(first, "flip", 1010)  # offsets 10..19, cleaned in the donor
    damage(active, "flip", 915)  # offsets 885..894, not cleaned
    before = first.read_bytes()
    r = run("repair", part, "--from", b, "--format", "json")
    assert r.exit_code == 1, r.output
    (summary,) = [x for x in json_lines(r.output) if x["kind"] == "partition"]
    assert summary["status"] == "partly repaired"
    assert [x["offsets"] for x in summary["restored"]] == [[885, 894]]
    (lost,) = summary["lost"]
    assert (
        lost["offsets"][0] == 10
        and lost["position"] == 1010
        and "holds no batch between offsets 10" in lost["why"]
    )
    assert first.read_bytes() == before
    assert active.read_bytes() == (b / "cmp-tomb-0" / "00000000000000000875.log").read_bytes()
