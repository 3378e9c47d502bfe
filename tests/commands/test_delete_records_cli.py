"""`kafkalog delete-records` as an operator sees it: output, exit codes, --dry-run, the lock,
--report, the quarantine, --topic/--partition and bad input."""

import json
import re
import shutil

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.file_states import tree
from tests.helpers.paths import EXAMPLES
from tests.helpers.retention import NEW, make_log_dir
from tests.helpers.run_lines import log_dir_report, of_kind, partitions, totals

SEGMENTS = [[NEW] * 3, [NEW] * 3, [NEW] * 3]  # offsets 0-2, 3-5, 6-8


def invoke(*args):
    return CliRunner().invoke(cli, ["delete-records", *map(str, args)])


def offsets_file(tmp_path, *entries, name="offsets.json"):
    f = tmp_path / name
    f.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": t, "partition": p, "offset": o} for t, p, o in entries],
            }
        )
    )
    return f


def test_before_deletes_and_says_so_in_kafkas_words(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    r = invoke(d, "--before", 4, "--quarantine", tmp_path / "q")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    # a quarantine on the same file system holds what went (hard links) and frees nothing; the
    # checkpoints written take their blocks
    assert re.fullmatch(
        r"t-0: deleted 1 segment\(s\), 355 bytes \(0: log start offset 4 breach\); "
        r"\d+ bytes taken on disk, 363 held in the quarantine; "
        r"log start offset 0 -> 4 \(low_watermark: 4\)",
        lines[0],
    ), lines[0]
    assert lines[1].startswith(f"removed files kept in {tmp_path / 'q'}/")
    assert r.stderr == ""
    assert not (d / "t-0" / "00000000000000000000.log").exists()


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    before = tree(d)
    r = invoke(d, "--before", 6, "--dry-run")
    assert r.exit_code == 1, r.output  # a dry run with changes pending
    assert r.stdout.startswith(f"delete-records {d}: ")
    assert (
        f"  - delete {d / 't-0' / '00000000000000000000.log'}: segment 0: log start offset 6 breach"
        in r.stdout
    )
    assert "t-0: would delete 2 segment(s)" in r.stdout
    assert tree(d) == before


def test_json_is_one_object_per_partition(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS, "u-0": SEGMENTS}, hw={"u-0": 2})
    r = invoke(d, "--before", 3, "--format", "json", "--no-quarantine")
    assert r.exit_code == 2
    by = partitions(r.stdout)
    assert (
        by["t-0"]["status"],
        by["t-0"]["new_log_start_offset"],
        by["t-0"]["high_watermark"],
    ) == ("deleted", 3, 9)
    assert by["t-0"]["configs"]["cleanup.policy"]["origin"] == "Kafka default (unknown)"
    assert (by["u-0"]["status"], by["u-0"]["error"]) == ("error", "OFFSET_OUT_OF_RANGE")
    assert r.stderr == (
        "kafkalog: u-0: OFFSET_OUT_OF_RANGE: cannot increment the log start offset to 3 since "
        "it is larger than the high watermark 2\n"
    )
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n0\n"  # t-0 went to a segment base


def test_offset_json_and_the_topic_filter(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS, "t-1": SEGMENTS, "u-0": SEGMENTS})
    spec = offsets_file(tmp_path, ("t", 0, 4), ("t", 1, -1), ("u", 0, 5))
    r = invoke(d, "--offset-json-file", spec, "--topic", "t", "--partition", 1, "--format", "json")
    assert r.exit_code == 0, r.output
    assert list(partitions(r.stdout)) == ["t-1"]
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n1\nt 1 9\n"


def test_a_partition_of_the_json_not_in_the_paths_is_exit_4_before_any_change(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    before = tree(d)
    r = invoke(d, "--offset-json", offsets_file(tmp_path, ("t", 0, 4), ("nope", 3, 1)))
    assert r.exit_code == 4
    assert r.stderr == (
        f"kafkalog: {tmp_path / 'offsets.json'}: partition nope-3 of the offset JSON is in "
        f"none of the paths given\n"
    )
    assert tree(d) == before


def test_minus_one_without_a_high_watermark_is_refused_as_a_guess(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS}, hw={"t-0": None})
    r = invoke(d, "--before", -1)
    assert r.exit_code == 7
    assert r.stderr == (
        "kafkalog: t-0: offset -1 means the high watermark, and replication-offset-checkpoint has "
        "none for it; give the offset itself (at most the log end offset 9)\n"
    )


def test_a_locked_log_dir_is_exit_5_and_untouched(tmp_path, held_lock):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    pid = held_lock(d)
    before = tree(d)
    r = invoke(d, "--before", 4)
    assert r.exit_code == 5
    assert r.stderr == (
        f"kafkalog: {d}: skipped: {d / '.lock'}: in use by process {pid} "
        f"(a broker or another kafkalog holds the lock)\n"
    )
    assert tree(d) == before


def test_report_file(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    r = invoke(d, "--before", 6, "--report", tmp_path / "report.jsonl", "--no-quarantine")
    assert r.exit_code == 0, r.output
    report = log_dir_report((tmp_path / "report.jsonl").read_text())
    assert (
        report["command"] == "delete-records"
        and report["partitions"]["t-0"]["new_log_start_offset"] == 6
    )
    assert report["quarantine"] is None
    total = totals((tmp_path / "report.jsonl").read_text())
    assert (
        total["segments_deleted"] == report["partitions"]["t-0"]["segments_deleted"] > 0
        and total["held_in_quarantine"] == 0
        and total["quarantine"] == []
    )
    assert r.output.splitlines()[-1].startswith("delete-records: 1 log dir, 1 partition, ")


def test_internal_topics_and_policy_on_the_example_log_dir(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    spec = offsets_file(tmp_path, ("__consumer_offsets", 0, 1), ("compacted", 0, 1))
    r = invoke(d, "--offset-json", spec, "--dry-run")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "kafkalog: __consumer_offsets-0: INVALID_TOPIC_EXCEPTION: Cannot delete records of internal topic "
        "__consumer_offsets",
        "kafkalog: compacted-0: POLICY_VIOLATION: records of partition compacted-0 can not be deleted due to the "
        "configured policy (cleanup.policy=compact from cluster metadata)",
    ]


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "give exactly one of --offset-json FILE and --before OFFSET"),
        (
            ["--before", "1", "--offset-json", "SPEC"],
            "give exactly one of --offset-json FILE and --before OFFSET",
        ),
        (["--before", "x"], "'x' is not a valid integer"),
    ],
)
def test_usage_errors(tmp_path, args, message):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    spec = offsets_file(tmp_path, ("t", 0, 1))
    r = invoke(d, *[str(spec) if a == "SPEC" else a for a in args])
    assert r.exit_code == 2
    assert message in r.stderr and "Traceback" not in r.output


def test_bad_offset_json_is_one_line_with_the_byte(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS})
    spec = tmp_path / "bad.json"
    spec.write_text('{"partitions": [{"topic": "t", "partition": 0}]}')
    r = invoke(d, "--offset-json", spec)
    assert r.exit_code == 2
    assert r.stderr == f"kafkalog: {spec}: byte 16: missing offset field\n"


def test_a_path_with_no_partition_is_exit_4(tmp_path):
    (tmp_path / "empty").mkdir()
    r = invoke(tmp_path / "empty", "--before", 1)
    assert r.exit_code == 4 and r.stderr.count("\n") == 1


def test_quarantine_restore_undoes_a_run_exactly(tmp_path):
    d = make_log_dir(tmp_path / "logs", {"t-0": SEGMENTS, "u-0": SEGMENTS})
    before = tree(d)
    r = invoke(d, "--before", 7, "--format", "json")
    assert r.exit_code == 0, r.output
    folder = {x["quarantine"] for x in of_kind(r.stdout, "partition")} - {None}
    assert totals(r.stdout)["quarantine"] == list(folder)
    assert len(folder) == 1 and tree(d) != before
    r = CliRunner().invoke(cli, ["quarantine", "restore", folder.pop()])
    assert r.exit_code == 0, r.output
    assert tree(d) == before
