""".kafka_cleanshutdown after a change (ops.clean_shutdown): kept byte for byte where a broker
that skips recovery loads every changed partition as a recovery would, removed into the
quarantine (restorable) otherwise, with the reason in the report."""

import shutil
import struct

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.ops.clean_shutdown import WHOLE, judge
from tests.helpers.clean_shutdown import MARKER_37, NOW, logdir, seg
from tests.helpers.run_lines import log_dir_report


def run(*args):
    return CliRunner().invoke(cli, [*map(str, args)])


def test_recover_all_keeps_the_37_marker_byte_for_byte(tmp_path):
    # a torn last batch the marker hides: --all cuts it, and the result loads the same without recovery
    d = logdir(tmp_path)
    log = seg(d, "codec-none-0", 0, ".log")
    whole = log.read_bytes()
    log.write_bytes(whole + whole[:40])
    r = run("recover", "--all", "--quarantine", tmp_path / "q", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    assert log.read_bytes() == whole
    assert (d / ".kafka_cleanshutdown").read_bytes() == MARKER_37
    assert "kafka_cleanshutdown" not in r.output + r.stderr


def test_roll_keeps_the_empty_33_marker(tmp_path):
    d = logdir(tmp_path, b"")
    r = run("roll", "--no-quarantine", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    assert (d / ".kafka_cleanshutdown").read_bytes() == b""


def test_recover_keeps_the_marker_its_plan_loads_with(tmp_path):
    # recover creates the missing time index empty, as the broker's load under the marker does: its
    # plan is that load, so the marker stays (without it, the next recover would plan a recovery
    # and undo this run: recover's result is a fixed point)
    d = logdir(tmp_path)
    seg(d, "multi-segment-0", 300, ".timeindex").unlink()
    r = run("recover", "--quarantine", tmp_path / "q", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    assert seg(d, "multi-segment-0", 300, ".timeindex").read_bytes() == b""
    assert (d / ".kafka_cleanshutdown").read_bytes() == MARKER_37
    assert "kafka_cleanshutdown" not in r.stderr
    again = run("recover", "--dry-run", "--now", NOW, d)
    assert (again.exit_code, ": 0 change(s)" in again.stdout) == (0, True), again.stdout


def test_an_empty_active_time_index_removes_the_marker_and_restore_puts_it_back(tmp_path):
    # a marker a killed run set aside is judged over every partition: a broker that skips recovery
    # would take the active segment's largest timestamp from the empty time index (none): it goes
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").rename(d / ".kafka_cleanshutdown.kafkalog-tmp")
    seg(d, "multi-segment-0", 300, ".timeindex").write_bytes(b"")
    r = run(
        "recover",
        "--topic",
        "codec-none",
        "--quarantine",
        tmp_path / "q",
        "--format",
        "json",
        "--now",
        NOW,
        d,
    )
    assert r.exit_code == 0, r.output
    report = log_dir_report(r.stdout)
    assert not (d / ".kafka_cleanshutdown").exists()
    why = (
        "removed .kafka_cleanshutdown, with which the broker skips recovery and would load the log dir otherwise "
        "than kafkalog left it (multi-segment-0: segment 300: the time index's last entry (none) is below the "
        "segment's largest timestamp 1700000599000: a load that skips recovery takes the smaller one); without "
        "it the broker recovers the log dir on its next start"
    )
    assert f"kafkalog: note: {why}" in r.stderr
    assert report["findings"][-1] == {
        "partition": "logdir",
        "message": why,
        "path": str(d / ".kafka_cleanshutdown"),
    }
    assert report["changed"][-1] == {
        "action": "delete",
        "path": str(d / ".kafka_cleanshutdown"),
        "reason": why,
    }
    assert not (d / ".kafka_cleanshutdown.kafkalog-tmp").exists()
    folder = report["quarantine"]
    r = run("quarantine", "restore", folder)
    assert r.exit_code == 0, r.output
    # back as the killed run left it, set aside: the next run settles it again
    assert (d / ".kafka_cleanshutdown.kafkalog-tmp").read_bytes() == MARKER_37


def test_damage_in_a_partition_the_run_did_not_change_keeps_the_marker(tmp_path):
    # the broker skipped codec-none-0's torn tail before the run and skips it after: not this run's doing
    d = logdir(tmp_path)
    log = seg(d, "codec-none-0", 0, ".log")
    log.write_bytes(log.read_bytes() + bytes(range(1, 41)))
    r = run("roll", "--topic", "multi-segment", "--no-quarantine", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    assert (d / ".kafka_cleanshutdown").read_bytes() == MARKER_37


def test_no_producer_snapshot_under_the_marker_is_an_empty_producer_state(tmp_path):
    d = logdir(tmp_path)
    for f in (d / "idempotent-lz4-0").glob("*.snapshot"):
        f.unlink()
    verdict = judge(d, {"idempotent-lz4-0": {"00000000000000000000.timeindex"}})
    assert verdict.problems == {
        "idempotent-lz4-0": (
            "no producer snapshot, and the batch at offset 0 has producer id 0: a load that skips recovery starts with "
            "an empty producer state, a recovery rebuilds it"
        )
    }
    assert judge(d, {"codec-none-0": WHOLE}).keep


def test_an_offset_index_entry_past_the_log_ends_a_skipped_load_at_the_base_offset(tmp_path):
    d = logdir(tmp_path)
    seg(d, "multi-segment-0", 300, ".index").write_bytes(struct.pack(">ii", 250, 9000))
    verdict = judge(d, {"multi-segment-0": {"00000000000000000300.index"}})
    assert verdict.problems["multi-segment-0"] == (
        "segment 300: a load that skips recovery ends the log at 300 (from the offset index's last entry), "
        "a recovery at 600"
    )


def test_batches_of_an_epoch_the_checkpoint_lacks(tmp_path):
    # a recovery assigns the epochs of the batches it reads; a load that skips it keeps the checkpoint's
    d = logdir(tmp_path)
    (d / "codec-none-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    verdict = judge(d, {"codec-none-0": {"00000000000000000000.log"}})
    assert verdict.problems["codec-none-0"] == (
        "segment 0: batches of leader epoch 0, beyond leader-epoch-checkpoint's latest (-1): a recovery adds it, "
        "a load that skips recovery does not"
    )


def test_changed_partitions_through_a_symlinked_log_dir(tmp_path):
    from kafkalog_cli.ops.clean_shutdown import changed_partitions

    d = logdir(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(d)
    got = changed_partitions(
        link,
        [
            d / "multi-segment-0" / "00000000000000000300.timeindex",
            link / "codec-none-0",
            d / "recovery-point-offset-checkpoint",
            None,
        ],
    )
    assert got == {"multi-segment-0": {"00000000000000000300.timeindex"}, "codec-none-0": WHOLE}


@pytest.mark.slow  # kills a run
def test_a_run_killed_with_the_marker_set_aside_leaves_a_dir_the_broker_recovers_and_the_next_run_settles_it(
    tmp_path,
):
    # the marker is renamed aside before the first change: a kill at any instant after it leaves a
    # log dir without the marker (the broker recovers it in full); the next run puts it back
    import os
    import subprocess
    import sys

    for step in range(
        1, 6
    ):  # the first step after which the marker is aside (the quarantine's come first)
        shutil.rmtree(tmp_path / "logdir", ignore_errors=True)
        d = logdir(tmp_path)
        log = seg(d, "codec-none-0", 0, ".log")
        whole = log.read_bytes()
        log.write_bytes(whole + whole[:40])
        env = {**os.environ, "KAFKALOG_FAULT_AFTER": str(step)}
        killed = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkalog_cli",
                "recover",
                "--all",
                "--quarantine",
                str(tmp_path / "q"),
                "--now",
                str(NOW),
                str(d),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        assert killed.returncode == 137, killed.stderr
        if not (d / ".kafka_cleanshutdown").exists():
            break
    assert (d / ".kafka_cleanshutdown.kafkalog-tmp").read_bytes() == MARKER_37
    assert log.read_bytes() == whole + whole[:40]  # the kill came before any change to the log
    dry = run("recover", "--all", "--dry-run", "--now", NOW, d)
    assert (
        ".kafka_cleanshutdown.kafkalog-tmp: the clean-shutdown marker, set aside by a kafkalog run that was killed"
        in dry.output
    )
    doctor = run("doctor", d)
    assert (
        doctor.exit_code != 8
        and "the clean-shutdown marker, set aside by a kafkalog run that was killed"
        in doctor.output
        and f"kafkalog recover {d}" in doctor.output
    )
    r = run("recover", "--all", "--quarantine", tmp_path / "q", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    assert log.read_bytes() == whole
    assert (d / ".kafka_cleanshutdown").read_bytes() == MARKER_37
    assert not (d / ".kafka_cleanshutdown.kafkalog-tmp").exists()
    assert (
        "put back .kafka_cleanshutdown, set aside by a kafkalog run that was killed: every partition loads "
        "without recovery as a recovery loads it"
    ) in r.stdout


def test_a_run_without_changes_leaves_the_marker_untouched(tmp_path):
    d = logdir(tmp_path)
    before = os_stat = (d / ".kafka_cleanshutdown").stat()
    r = run("recover", "--quarantine", tmp_path / "q", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    after = (d / ".kafka_cleanshutdown").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, os_stat.st_mtime_ns)
    assert not (tmp_path / "q").exists() or not any((tmp_path / "q").rglob("manifest.jsonl"))
