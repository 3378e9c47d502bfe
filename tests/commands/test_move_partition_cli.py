"""kafkalog move-partition on the command line: the plan, the run, refusals, the lock."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.locks import hold_lock
from tests.helpers.run_lines import log_dir_report, totals

from ..ops.move_helpers import TP, live_copies, state, two_log_dirs


def invoke(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    before = state(src, dst)
    r = invoke(
        "move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition, "--dry-run"
    )
    assert r.exit_code == 1, r.output  # a dry run with changes pending
    assert r.output.startswith(f"move-partition {TP}: {src} -> {dst} (move, ")
    assert (
        "copy 10 file(s), 16057 bytes" in r.output
        and "-> multi-segment-0: the copy becomes the partition's live dir" in r.output
    )
    assert state(src, dst) == before


def test_moves_then_nothing_to_do(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke(
        "move-partition",
        src,
        dst,
        "--topic",
        TP.topic,
        "--partition",
        TP.partition,
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    report = log_dir_report(r.output)
    assert report["state"] == "move" and report["bytes_copied"] == 16057 and report["quarantine"]
    assert report["partitions"][str(TP)] and totals(r.output)["quarantine"] == [
        report["quarantine"]
    ]
    assert live_copies(TP, src, dst) == [dst / str(TP)]
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 0 and "nothing to do (moved)" in r.output


def test_refusals_and_the_lock(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", "nope", "--partition", 0)
    assert r.exit_code == 4 and "no partition dir of nope-0 in the source log dir" in r.output
    r = invoke("move-partition", src, dst, "--topic", TP.topic)
    assert r.exit_code == 2
    holder = hold_lock(dst / ".lock")  # a broker: another process
    try:
        r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    finally:
        holder.kill()
        holder.wait()
    assert r.exit_code == 5 and f"in use by process {holder.pid}" in r.output
    assert live_copies(TP, src, dst) == [src / str(TP)]
    (src / ".kafka_cleanshutdown").unlink()
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert (
        r.exit_code == 2
        and "not shut down cleanly" in r.output
        and len(r.output.strip().splitlines()) == 1
    )


def test_completion_offers_both_commands_and_their_options():
    from click.shell_completion import ShellComplete

    comp = ShellComplete(cli, {}, "kafkalog", "_KAFKALOG_COMPLETE")
    names = [c.value for c in comp.get_completions([], "")]
    assert "move-partition" in names and "compare-replicas" in names
    assert {"--topic", "--partition", "--dry-run", "--quarantine"} <= {
        c.value for c in comp.get_completions(["move-partition"], "--")
    }
    assert {"--topic", "--partition", "--leader", "--limit", "--format"} <= {
        c.value for c in comp.get_completions(["compare-replicas"], "--")
    }


def _files(*dirs):
    out = {}
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in names:
                if n != ".lock":
                    p = os.path.join(root, n)
                    # a FIFO a test put in a file's place is named, never opened (it would block)
                    out[os.path.relpath(p, d.parent)] = (
                        open(p, "rb").read() if os.path.isfile(p) else "not a file"
                    )
    return out


def test_the_text_counts_the_bytes_it_copied(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 0, r.output
    assert "copy 10 file(s), 16057 bytes" in r.output and "(16057 bytes copied)" in r.output


def test_the_copy_bytes_are_in_the_json_plan(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke(
        "move-partition",
        src,
        dst,
        "--topic",
        TP.topic,
        "--partition",
        TP.partition,
        "--dry-run",
        "--format",
        "json",
    )
    assert r.exit_code == 1, r.output
    copies = [a for a in log_dir_report(r.output)["actions"] if a["action"] == "copy_file"]
    assert len(copies) == 10 and sum(a["bytes"] for a in copies) == 16057


def test_no_staging_dir_is_left(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 0, r.output
    assert not (tmp_path / ".kafkalog-staging").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kafkalog-quarantine", "disk1", "disk2"]


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_file_it_cannot_copy_stops_it_before_anything_is_staged(tmp_path, kind):
    src, dst = two_log_dirs(tmp_path)
    bad = src / str(TP) / "00000000000000000000.timeindex"
    bad.unlink()
    bad.mkdir() if kind == "directory" else os.mkfifo(bad)
    before = _files(src, dst)
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 4, r.output
    assert r.stderr.startswith(f"kafkalog: {bad}: ") and len(r.stderr.splitlines()) == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["disk1", "disk2"]
    assert _files(src, dst) == before


def test_an_empty_staging_dir_a_kill_left_is_removed_by_the_rerun(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    assert (
        invoke(
            "move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition
        ).exit_code
        == 0
    )
    (tmp_path / ".kafkalog-staging" / "disk2").mkdir(parents=True)
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 0, r.output
    assert not (tmp_path / ".kafkalog-staging").exists()


def test_restore_of_its_quarantine_folder_puts_the_partition_back_in_the_source(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    before = _files(src, dst)
    r = invoke(
        "move-partition",
        src,
        dst,
        "--topic",
        TP.topic,
        "--partition",
        TP.partition,
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    folder = log_dir_report(r.output)["quarantine"]
    r = invoke("quarantine", "restore", folder, "--dry-run")
    assert r.exit_code == 0, r.output
    r = invoke("quarantine", "restore", folder)
    assert r.exit_code == 0, r.output
    assert "restored" in r.output
    assert _files(src, dst) == before
    assert live_copies(TP, src, dst) == [src / str(TP)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kafkalog-quarantine", "disk1", "disk2"]
    r = invoke("quarantine", "restore", folder)
    assert r.exit_code == 0 and "nothing to restore" in r.output


def test_restore_of_a_move_between_log_dirs_named_through_a_link(tmp_path):
    """/var/lib/kafka -> /data/kafka: the staging dir is beside the resolved log dir, and the
    restore finds the entries there inside the run's log dirs."""
    (tmp_path / "real").mkdir()
    src, dst = two_log_dirs(tmp_path / "real")
    (tmp_path / "via").symlink_to(tmp_path / "real")
    before = _files(src, dst)
    r = invoke(
        "move-partition",
        tmp_path / "via" / src.name,
        tmp_path / "via" / dst.name,
        "--topic",
        TP.topic,
        "--partition",
        TP.partition,
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    r = invoke("quarantine", "restore", log_dir_report(r.output)["quarantine"])
    assert r.exit_code == 0, r.output
    assert _files(src, dst) == before
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == [
        ".kafkalog-quarantine",
        "disk1",
        "disk2",
    ]


def test_restore_refuses_when_the_moved_copy_changed(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke(
        "move-partition",
        src,
        dst,
        "--topic",
        TP.topic,
        "--partition",
        TP.partition,
        "--format",
        "json",
    )
    folder = log_dir_report(r.output)["quarantine"]
    log = sorted((dst / str(TP)).glob("*.log"))[-1]
    log.write_bytes(log.read_bytes() + b"more")  # the broker appended after the move
    moved = _files(src, dst)
    r = invoke("quarantine", "restore", folder)
    assert r.exit_code == 3, r.output
    assert "nothing changed" in r.output and str(log.name) in r.output
    assert _files(src, dst) == moved


def test_moves_off_a_full_source_disk(tmp_path):
    from tests.helpers.fullfs import fill, free_bytes, tmpfs

    with tmpfs(tmp_path / "fs", "4m") as fs:
        src, dst = two_log_dirs(tmp_path / "x")
        import shutil

        shutil.move(str(src), str(fs / "disk1"))
        src = fs / "disk1"
        fill(fs)
        r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
        assert r.exit_code == 0, r.output
        assert live_copies(TP, src, dst) == [dst / str(TP)]
        assert "the broker drops" in r.output
        assert free_bytes(fs) == 0
        r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
        assert r.exit_code == 0 and "nothing to do (moved)" in r.output, r.output
