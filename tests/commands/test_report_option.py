"""--report FILE on every mutating command: the run's JSON Lines (render/change_report.py), appended
(an hourly cron job keeps one file): each line with the run's id and its time, the totals last,
the same lines --format json prints."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.locks import hold_lock
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_lines import ENVELOPE


@pytest.mark.parametrize(
    "command",
    [
        ["recover"],
        ["roll"],
        ["retain", "--assume-kafka-defaults", "--now", "1900000000000"],
        ["compact", "--assume-kafka-defaults"],
        ["delete-records", "--before", "1", "--topic", "multi-segment"],
    ],
)
def test_each_run_appends_its_lines_with_its_run_id_and_totals_last(tmp_path, runner, command):
    ld = tmp_path / "logs"
    shutil.copytree(EXAMPLES, ld)
    report = tmp_path / "out" / "report.jsonl"
    report.parent.mkdir()
    outputs = []
    for _ in range(2):  # cron, hourly
        r = runner.invoke(
            cli, [*command, "--dry-run", "--format", "json", "--report", str(report), str(ld)]
        )
        assert r.exit_code in (0, 1, 7), r.output
        outputs.append(r.stdout)
    lines = [json.loads(x) for x in report.read_text().splitlines()]
    assert [list(o)[:4] for o in lines] == [list(ENVELOPE)] * len(lines)
    first, second = (
        [o for o in lines if o["run_id"] == rid]
        for rid in dict.fromkeys(o["run_id"] for o in lines)
    )
    assert len(first) == len(second) and lines == first + second  # appended, run by run
    assert [json.loads(x) for x in outputs[0].splitlines()] == first  # what --format json printed
    for run in (first, second):
        assert [o["kind"] for o in run][-2:] == ["log_dir", "totals"]
        assert {o["kind"] for o in run[:-2]} == {"partition"}
        assert all(o["log_dir"] == str(ld) and o["dry_run"] for o in run[:-1])
        assert all(dt.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ") for o in run)
        totals = run[-1]
        assert totals["command"] == command[0] and totals["log_dirs"] == 1
        assert totals["partitions"] == len(run) - 2
        assert totals["exit_code"] == r.exit_code
        for field in ("freed_on_disk", "held_in_quarantine"):
            assert (totals[field] is None) == (field in totals["unknown"])
    assert not list(report.parent.glob("*.kafkalog-tmp"))


def test_the_totals_sum_the_log_dirs_and_a_locked_one_is_named(tmp_path, runner):
    """Two log dirs, one held by another process: its line says locked, the totals count both."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        shutil.copytree(EXAMPLES, d)
    p = hold_lock(b / ".lock")
    try:
        r = runner.invoke(
            cli,
            [
                "retain",
                "--assume-kafka-defaults",
                "--now",
                "1900000000000",
                "--no-quarantine",
                "--format",
                "json",
                str(a),
                str(b),
            ],
        )
    finally:
        p.kill()
        p.wait()
    assert r.exit_code == 5, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    by_dir = {o["log_dir"]: o for o in lines if o["kind"] == "log_dir"}
    assert by_dir[str(a)]["status"] == "done" and by_dir[str(b)]["status"] == "locked"
    assert by_dir[str(b)]["exit_code"] == 5
    totals = lines[-1]
    assert (totals["log_dirs"], totals["failed"], totals["exit_code"]) == (2, 1, 5)
    assert totals["freed_on_disk"] == by_dir[str(a)]["freed_on_disk"] > 0
    assert totals["segments_deleted"] == sum(
        o.get("segments_deleted") or 0 for o in lines if o["kind"] == "partition"
    )
