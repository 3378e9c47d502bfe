"""--topic PATTERN / --partition N on every command that takes log dirs (issue 13, item 5): a glob
selecting several topics, partition numbers, repeated options, a filter matching nothing (exit
4, one line), and a filter over paths given directly (partition dirs, segment files)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_lines import log_dir_report, partitions

LOG = "00000000000000000000.log"
READ_COMMANDS = ("dump-log", "dump-index", "verify-crc")
CHANGE_COMMANDS = ("recover", "roll", "retain", "compact")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def sha256_tree(d: Path) -> dict[str, str]:
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.fixture
def logdir(tmp_path) -> Path:
    """examples/logdir, with partition 1 of two topics (copies of their partition 0)."""
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    for topic in ("codec-lz4", "codec-gzip"):
        shutil.copytree(d / f"{topic}-0", d / f"{topic}-1")
    return d


def dumped_logs(output: str) -> list[str]:
    """The .log files dump-log --format json dumped, as <partition dir>/<file>."""
    objs = [json.loads(line) for line in output.splitlines()]
    return ["/".join(Path(o["file"]).parts[-2:]) for o in objs if o["kind"] == "file"]


def dumped_indexes(output: str) -> list[str]:
    return [
        "/".join(Path(line.split()[1]).parts[-2:])
        for line in output.splitlines()
        if line.startswith("Dumping ")
    ]


def verified(output: str) -> int:
    """verify-crc --format json: the files its summary counts."""
    return json.loads(output.splitlines()[-1])["files"]


# ------------------------------------------------------------------ the read commands
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_dump_log_glob_selects_two_topics(fmt):
    r = invoke("dump-log", EXAMPLES, "--topic", "*-lz4", "--format", fmt)
    assert r.exit_code == 0, r.output
    if fmt == "json":
        assert dumped_logs(r.stdout) == [f"codec-lz4-0/{LOG}", f"idempotent-lz4-0/{LOG}"]
    else:
        assert [line for line in r.stdout.splitlines() if line.startswith("Dumping")] == [
            f"Dumping {EXAMPLES}/codec-lz4-0/{LOG}",
            f"Dumping {EXAMPLES}/idempotent-lz4-0/{LOG}",
        ]


def test_dump_log_partition_numbers_and_repeats(logdir):
    r = invoke("dump-log", logdir, "--partition", "1", "--format", "json")
    assert dumped_logs(r.stdout) == [f"codec-gzip-1/{LOG}", f"codec-lz4-1/{LOG}"]
    r = invoke("dump-log", logdir, "--topic", "codec-lz4", "--partition", "1", "--format", "json")
    assert dumped_logs(r.stdout) == [f"codec-lz4-1/{LOG}"]
    r = invoke(
        "dump-log",
        logdir,
        "--topic",
        "codec-lz4",
        "--topic",
        "txn",
        "--partition",
        "0",
        "--partition",
        "1",
        "--format",
        "json",
    )
    assert dumped_logs(r.stdout) == [f"codec-lz4-0/{LOG}", f"codec-lz4-1/{LOG}", f"txn-0/{LOG}"]


@pytest.mark.parametrize("command", READ_COMMANDS)
def test_a_filter_matching_nothing_is_exit_4_with_one_line(command, logdir):
    r = invoke(command, logdir, "--topic", "orders-*", "--partition", "7")
    assert r.exit_code == 4
    assert r.stdout == ""
    assert (
        r.stderr
        == f"kafkalog: {logdir}: no partition dir matches --topic 'orders-*' --partition 7\n"
    )


@pytest.mark.parametrize("command", READ_COMMANDS + CHANGE_COMMANDS)
def test_no_match_over_several_paths_names_them_all_and_changes_nothing(command, logdir):
    before = sha256_tree(logdir)
    a, b = logdir / "codec-lz4-0", logdir / "txn-0"
    r = invoke(command, a, b, "--partition", "3")
    assert r.exit_code == 4 and r.stdout == ""
    assert r.stderr == f"kafkalog: {a}, {b}: no partition dir matches --partition 3\n"
    assert sha256_tree(logdir) == before


def test_one_path_without_a_match_is_no_error_when_another_has_one(logdir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copytree(EXAMPLES / "txn-0", other / "txn-0")
    (other / "meta.properties").write_bytes((EXAMPLES / "meta.properties").read_bytes())
    r = invoke("dump-log", other, logdir, "--topic", "codec-lz4", "--format", "json")
    assert r.exit_code == 0, r.output
    assert dumped_logs(r.stdout) == [f"codec-lz4-0/{LOG}", f"codec-lz4-1/{LOG}"]


def test_a_partition_dir_given_directly_is_filtered_by_its_name(logdir):
    r = invoke(
        "dump-log",
        logdir / "codec-lz4-0",
        logdir / "codec-lz4-1",
        "--partition",
        "1",
        "--format",
        "json",
    )
    assert r.exit_code == 0 and dumped_logs(r.stdout) == [f"codec-lz4-1/{LOG}"]
    r = invoke("dump-log", logdir / "codec-lz4-0", "--topic", "txn")
    assert r.exit_code == 4
    assert (
        r.stderr == f"kafkalog: {logdir / 'codec-lz4-0'}: no partition dir matches --topic 'txn'\n"
    )


def test_a_segment_file_given_directly_is_filtered_by_its_dir(logdir, tmp_path):
    lz4, txn = logdir / "codec-lz4-0" / LOG, logdir / "txn-0" / LOG
    r = invoke("dump-log", "--files", f"{lz4},{txn}", "--topic", "txn", "--format", "json")
    assert r.exit_code == 0 and dumped_logs(r.stdout) == [f"txn-0/{LOG}"]
    # a copy outside any partition dir cannot be told to be of a topic: it never matches
    loose = tmp_path / LOG
    shutil.copy(lz4, loose)
    r = invoke("dump-log", loose, "--topic", "codec-lz4")
    assert (
        r.exit_code == 4
        and r.stderr == f"kafkalog: {loose}: no partition dir matches --topic 'codec-lz4'\n"
    )
    # without a filter the copy is dumped as before
    assert invoke("dump-log", loose).exit_code == 0


def test_a_missing_file_is_reported_whatever_the_filter(logdir):
    missing = logdir / "txn-0" / "00000000000000000999.log"
    r = invoke(
        "dump-log", logdir / "codec-lz4-0", missing, "--topic", "codec-lz4", "--format", "json"
    )
    assert r.exit_code == 4
    assert dumped_logs(r.stdout) == [f"codec-lz4-0/{LOG}", "txn-0/00000000000000000999.log"]
    assert r.stderr == f"kafkalog: {missing}: no such file\n"


def test_dump_index_glob_and_files(logdir):
    r = invoke("dump-index", logdir, "--topic", "*-lz4", "--partition", "0")
    assert r.exit_code == 0, r.output
    assert dumped_indexes(r.stdout) == [
        "codec-lz4-0/00000000000000000000.index",
        "codec-lz4-0/00000000000000000000.timeindex",
        "codec-lz4-0/00000000000000000060.snapshot",
        "idempotent-lz4-0/00000000000000000000.index",
        "idempotent-lz4-0/00000000000000000000.timeindex",
        "idempotent-lz4-0/00000000000000000030.snapshot",
    ]
    index = logdir / "codec-lz4-1" / "00000000000000000000.index"
    r = invoke("dump-index", index, logdir / "txn-0", "--topic", "codec-*", "--partition", "1")
    assert r.exit_code == 0 and dumped_indexes(r.stdout) == [
        "codec-lz4-1/00000000000000000000.index"
    ]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_verify_crc_counts_only_the_matching_files(logdir, jobs):
    r = invoke(
        "verify-crc",
        logdir,
        "--topic",
        "codec-*",
        "--topic",
        "txn",
        "--format",
        "json",
        "--jobs",
        jobs,
    )
    assert r.exit_code == 0, r.output
    assert verified(r.stdout) == 8  # codec-{gzip,lz4}-{0,1}, codec-{none,snappy,zstd}-0, txn-0
    r = invoke("verify-crc", logdir, "--partition", "1", "--format", "json", "--jobs", jobs)
    assert verified(r.stdout) == 2


def test_verify_crc_reports_an_unreadable_path_in_its_place(logdir):
    r = invoke(
        "verify-crc",
        logdir / "codec-lz4-0",
        logdir / "nothing.log",
        logdir / "txn-0",
        "--topic",
        "txn",
    )
    assert r.exit_code == 4
    assert r.stdout.splitlines()[0] == f"{logdir / 'nothing.log'}: no such file or directory"
    assert r.stdout.splitlines()[1].startswith("verify-crc: 1 file, 6 batches")


def test_left_out_dirs_get_a_note_only_when_the_filter_matches_them(logdir):
    shutil.copytree(logdir / "txn-0", logdir / "txn-0.0123456789abcdef0123456789abcdef-delete")
    r = invoke("dump-log", logdir, "--topic", "codec-lz4", "--format", "json")
    assert r.exit_code == 0 and r.stderr == ""
    r = invoke("dump-log", logdir, "--topic", "txn", "--format", "json")
    assert r.exit_code == 0 and "txn-0.0123456789abcdef0123456789abcdef-delete" in r.stderr
    assert dumped_logs(r.stdout) == [f"txn-0/{LOG}"]


# ------------------------------------------------------------------ the commands that change log dirs
def test_roll_rolls_only_the_matching_partitions(logdir):
    before = sha256_tree(logdir)
    r = invoke("roll", logdir, "--topic", "*-lz4", "--partition", "1", "--topic", "codec-gzip")
    assert r.exit_code == 0, r.output
    changed = {k.split("/")[0] for k, v in sha256_tree(logdir).items() if before.get(k) != v}
    assert changed == {"codec-lz4-1", "codec-gzip-1"}


def planned(command: str, stdout: str) -> list[str]:
    """The partitions a --dry-run --format json plans."""
    return sorted(partitions(stdout))


def _dry_run_code(command: str, stdout: str) -> int:
    """1 when the dry run has changes pending, else 0 (compact: nothing to clean here)."""
    if command == "retain":
        pending = any(p.get("segments_deleted") for p in partitions(stdout).values())
    else:
        pending = command != "compact" and bool(log_dir_report(stdout)["actions"])
    return 1 if pending else 0


@pytest.mark.parametrize("command", CHANGE_COMMANDS)
def test_dry_run_plans_only_the_matching_partitions(command, logdir):
    # compact plans the compacted topics only: __consumer_offsets and compacted
    everything = planned(
        command,
        invoke(command, logdir, "--dry-run", "--format", "json", "--assume-kafka-defaults").stdout,
    )
    assert len(everything) >= 2
    r = invoke(
        command,
        logdir,
        "--topic",
        "codec-lz4",
        "--topic",
        "compacted",
        "--dry-run",
        "--format",
        "json",
        "--assume-kafka-defaults",
    )
    # 1: a dry run with changes pending (the fixture's retain has segments past 7 days; compact, none to clean)
    assert r.exit_code == _dry_run_code(command, r.stdout), r.output
    expected = (
        ["codec-lz4-0", "codec-lz4-1", "compacted-0"] if command != "compact" else ["compacted-0"]
    )
    assert planned(command, r.stdout) == expected
    r = invoke(
        command,
        logdir,
        "--partition",
        "1",
        "--dry-run",
        "--format",
        "json",
        "--assume-kafka-defaults",
    )
    assert r.exit_code == _dry_run_code(command, r.stdout), r.output
    assert planned(command, r.stdout) == (
        [] if command == "compact" else ["codec-gzip-1", "codec-lz4-1"]
    )


def test_a_log_dir_without_a_match_is_left_alone_its_lock_not_taken(logdir, tmp_path, held_lock):
    other = tmp_path / "other"
    shutil.copytree(EXAMPLES, other)
    held_lock(other)  # a broker runs on it: touching it would be exit 5
    for command in ("retain", "recover", "roll"):
        r = invoke(
            command,
            logdir,
            other / "txn-0",
            "--topic",
            "codec-lz4",
            "--assume-kafka-defaults",
            "--format",
            "json",
        )
        assert r.exit_code == 0, (command, r.output)
        assert str(other) not in r.stdout


def test_a_filter_matching_only_a_dir_being_deleted_is_exit_4(logdir):
    (logdir / "txn-0").rename(logdir / "txn-0.0123456789abcdef0123456789abcdef-delete")
    before = sha256_tree(logdir)
    r = invoke("roll", logdir, "--topic", "txn")
    assert (
        r.exit_code == 4
        and r.stderr == f"kafkalog: {logdir}: no partition dir matches --topic 'txn'\n"
    )
    assert sha256_tree(logdir) == before
