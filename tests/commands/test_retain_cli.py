"""`kafkalog retain` as a cron job sees it: output, exit codes, locking, quarantine, idempotence."""

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers import paths
from tests.helpers.file_states import tree
from tests.helpers.paths import BROKER as FIXTURES
from tests.helpers.retention import (
    NEW,
    NOW,
    OLD,
    copy_case,
    make_log_dir,
    params,
    partition_files,
    server_properties,
)
from tests.helpers.run_lines import ENVELOPE, of_kind, partitions, totals

KAFKALOG = Path(sys.executable).with_name("kafkalog")


def retain(*args, case="time"):
    base = [
        "retain",
        "--now",
        str(params(case)["now_ms"]),
        "--server-properties",
        str(server_properties(case)),
    ]
    return CliRunner().invoke(cli, base + [str(a) for a in args])


@pytest.mark.parametrize("case", ["time", "size"])
def test_acceptance_through_the_command_line(case, tmp_path):
    d = copy_case(case, tmp_path)
    r = retain("--no-quarantine", d, case=case)
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""  # quiet unless -v
    after = FIXTURES / f"retain-{case}" / "after"

    def strip(files):
        return {k: v for k, v in files.items() if not k.endswith("leader-epoch-checkpoint")}

    assert strip(partition_files(d)) == strip(partition_files(after))
    assert (d / "log-start-offset-checkpoint").read_bytes() == (
        after / "log-start-offset-checkpoint"
    ).read_bytes()


def test_json_is_one_summary_per_partition(tmp_path):
    d = copy_case("time", tmp_path)
    r = retain("--format", "json", "--no-quarantine", d)
    assert r.exit_code == 0, r.stderr
    by = partitions(r.stdout)
    assert set(by) == {"__cluster_metadata-0", "ret-time-0", "ret-time-blocker-0"}
    t = by["ret-time-0"]
    assert (t["segments_deleted"], t["old_log_start_offset"], t["new_log_start_offset"]) == (
        5,
        0,
        944,
    )
    assert t["bytes_freed"] == sum(
        len(v)
        for k, v in partition_files(FIXTURES / "retain-time/before").items()
        if k.startswith("ret-time-0/0") and int(k[11:31]) < 944
    )
    assert t["segments"][0] == {
        "base_offset": 0,
        "size": 16313,
        "reason": "retention.ms",
        "detail": "retention time 2592000000ms breach based on the largest record "
        "timestamp in the segment",
        "largest_timestamp": 1622926400000,
        "timestamp_from": "time index",
    }
    assert by["ret-time-blocker-0"]["new_log_start_offset"] == 192
    assert by["__cluster_metadata-0"]["status"] == "skipped"
    assert totals(r.stdout)["segments_deleted"] == sum(
        p.get("segments_deleted") or 0 for p in by.values()
    )
    assert (
        totals(r.stdout)["freed_on_disk"] >= t["bytes_freed"]
    )  # --no-quarantine: the blocks of what went


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path):
    d = copy_case("time", tmp_path)
    before = tree(d)
    r = retain("--dry-run", d)
    assert r.exit_code == 1  # segments would go
    assert "delete " + str(d / "ret-time-0" / "00000000000000000760.log") in r.stdout
    assert (
        "ret-time-0: would delete 5 segment(s)" in r.stdout
        and "log start offset 0 -> 944" in r.stdout
    )
    assert tree(d) == before
    assert not (tmp_path / ".kafkalog-quarantine").exists()


def test_verbose_then_idempotent(tmp_path):
    d = copy_case("time", tmp_path)
    r = retain("-v", d)
    assert r.exit_code == 0
    assert "ret-time-blocker-0: deleted 1 segment(s)" in r.stdout
    quarantine = tmp_path / ".kafkalog-quarantine" / "logs"
    assert f"removed files kept in {quarantine}" in r.stdout
    kept = sorted(p.name for p in quarantine.rglob("*.log"))
    assert kept == ["00000000000000000000.log"] * 2 + [
        f"{b:020d}.log" for b in (192, 384, 576, 760)
    ]
    state = tree(d)
    r = retain("-v", d)
    assert r.exit_code == 0 and "ret-time-0: nothing to do" in r.stdout
    assert tree(d) == state


def test_configs_from_the_command_line_win(tmp_path):
    d = copy_case("time", tmp_path)
    r = retain("--dry-run", "--format", "json", "--topic-config", "ret-time:retention.ms=-1", d)
    by = partitions(r.stdout)
    assert by["ret-time-0"]["status"] == "nothing to do"
    assert by["ret-time-blocker-0"]["segments_deleted"] == 1
    # without the log dir's __cluster_metadata the topic has no retention.bytes: nothing is due
    d2 = copy_case("size", tmp_path / "2")
    r = retain("--dry-run", "--format", "json", "--no-cluster-metadata", d2, case="size")
    assert of_kind(r.stdout, "partition")[1]["status"] == "nothing to do"


def test_a_locked_log_dir_is_skipped_with_exit_code_5(tmp_path, held_lock):
    locked = make_log_dir(tmp_path / "a" / "logs", {"t-0": [[OLD], [NEW]]})
    free = make_log_dir(tmp_path / "b" / "logs", {"t-0": [[OLD], [NEW]]})
    pid = held_lock(locked)
    before = tree(locked)
    r = CliRunner().invoke(
        cli,
        [
            "retain",
            "--now",
            str(NOW),
            "--config",
            "cleanup.policy=delete",
            "--config",
            "retention.ms=604800000",
            "--format",
            "json",
            str(locked),
            str(free),
        ],
    )
    assert r.exit_code == 5
    assert (
        r.stderr == f"kafkalog: {locked}: skipped: {locked / '.lock'}: in use by process {pid} "
        f"(a broker or another kafkalog holds the lock)\n"
    )
    assert tree(locked) == before
    first, *others = of_kind(r.stdout, "log_dir")
    assert {k: v for k, v in first.items() if k not in ENVELOPE} == {
        "log_dir": str(locked),
        "dry_run": False,
        "status": "locked",
        "detail": r.stderr[10:].split(": skipped: ")[1].strip(),
        "exit_code": 5,
    }
    assert (
        partitions(r.stdout)["t-0"]["segments_deleted"] == 1
        and not (free / "t-0" / "00000000000000000000.log").exists()
    )


def test_safe_under_set_e_and_quiet(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": [[OLD], [NEW]]})
    script = (
        f"set -e\n{KAFKALOG} retain --now {NOW} --config cleanup.policy=delete "
        f"--config retention.ms=604800000 --no-quarantine {d}\n"
        f"{KAFKALOG} retain --now {NOW} --config cleanup.policy=delete "
        f"--config retention.ms=604800000 --no-quarantine {d}\necho still-here\n"
    )
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "still-here\n", "")
    assert [p.name for p in (d / "t-0").glob("*.log")] == ["00000000000000000001.log"]
    assert not (tmp_path / ".kafkalog-quarantine").exists()


def test_bad_checkpoint_is_one_line_with_file_and_byte(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": [[OLD], [NEW]]})
    (d / "replication-offset-checkpoint").write_text("0\n1\nt 0 x12\n")
    r = subprocess.run(
        [str(KAFKALOG), "retain", "--now", str(NOW), str(d)], capture_output=True, text=True
    )
    assert r.returncode == 3
    assert r.stderr.startswith(f"kafkalog: {d / 'replication-offset-checkpoint'}: byte 4: ")
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    assert (d / "t-0" / "00000000000000000000.log").exists()


def test_missing_path_exit_code_4(tmp_path):
    r = CliRunner().invoke(cli, ["retain", str(tmp_path / "nope")])
    assert r.exit_code == 4 and "nope: not a directory" in r.stderr


def test_a_corrupt_partition_fails_the_run_but_not_the_others(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"a-0": [[OLD], [NEW]], "b-0": [[OLD], [NEW]]})
    (d / "a-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    r = CliRunner().invoke(
        cli,
        [
            "retain",
            "--now",
            str(NOW),
            "--config",
            "cleanup.policy=delete",
            "--config",
            "retention.ms=604800000",
            "--no-quarantine",
            str(d),
        ],
    )
    assert r.exit_code == 3
    assert r.stderr.startswith(f"kafkalog: {d / 'a-0' / 'leader-epoch-checkpoint'}: ")
    assert (d / "a-0" / "00000000000000000000.log").exists()
    assert not (d / "b-0" / "00000000000000000000.log").exists()


@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_a_quarantine_inside_the_log_dir_is_refused(tmp_path, dry):
    d = copy_case("time", tmp_path)
    before = tree(d)
    r = retain(*dry, "--quarantine", d / "quarantine", d)
    assert r.exit_code == 2
    assert "is inside the log dir" in r.stderr and r.stderr.count("\n") == 1
    assert tree(d) == before and not (d / "quarantine").exists()
    r = CliRunner().invoke(cli, ["roll", *dry, "--quarantine", str(d), str(d)])
    assert r.exit_code == 2 and "is inside the log dir" in r.stderr
    assert tree(d) == before


def test_the_default_quarantine_of_a_symlinked_log_dir_is_beside_the_real_one(tmp_path):
    real = copy_case("time", tmp_path / "disk")
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "kafka-logs"
    link.symlink_to(real, target_is_directory=True)
    r = retain(link)
    assert r.exit_code == 0, r.output
    stored = list((real.parent / ".kafkalog-quarantine" / real.name).rglob("*.log"))
    assert stored, "deleted segments are kept beside the real log dir (a rename on its file system)"
    assert not (tmp_path / "links" / ".kafkalog-quarantine").exists()


def test_json_of_a_refused_partition_shows_no_guessed_value(tmp_path):
    # issue 26: "cleanup_policy": "delete", "retention_ms": 604800000 beside a refusal saying
    # those values are unknown; they are null, the refusal and `configs` say why
    import shutil

    from click.testing import CliRunner

    from kafkalog_cli.cli import cli

    d = tmp_path / "ld"
    shutil.copytree(paths.EXAMPLES, d)
    r = CliRunner().invoke(
        cli, ["retain", "--dry-run", "--format", "json", "--topic", "multi-segment", str(d)]
    )
    (part,) = of_kind(r.stdout, "partition")
    assert part["status"] == "refused"
    assert (part["cleanup_policy"], part["retention_ms"], part["retention_bytes"]) == (
        None,
        None,
        None,
    )
    assert (
        part["configs"]["retention.ms"]["known"] is False
        and part["configs"]["retention.ms"]["unknown"]
    )
