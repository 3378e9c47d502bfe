"""--report FILE on every mutating command: the JSON report, one object per log dir, written
whole (it is what a cron wrapper keeps as a record of what a run did)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.cli import cli

EXAMPLES = Path(__file__).parents[2] / "examples" / "logdir"


@pytest.mark.parametrize("command", [
    ["recover"], ["roll"], ["retain", "--assume-kafka-defaults", "--now", "1900000000000"],
    ["compact", "--assume-kafka-defaults"],
])
def test_report_file_holds_one_report_per_log_dir(tmp_path, runner, command):
    ld = tmp_path / "logs"
    shutil.copytree(EXAMPLES, ld)
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    r = runner.invoke(cli, [*command, "--dry-run", "--report", str(report), str(ld)])
    assert r.exit_code in (0, 1, 7), r.output
    (only,) = json.loads(report.read_text())
    assert only["log_dir"] == str(ld) and only["partitions"]
    assert not list(report.parent.glob("*.kafkalog-tmp"))
