from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.broker_cases import copy_case, tree_state
from tests.helpers.run_lines import log_dir_report, partitions


def test_roll_if_needed_dry_run_then_apply(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    before = tree_state(d)
    r = CliRunner().invoke(
        cli,
        ["roll", "--if-needed", "--now", "1795249186389", "--dry-run", "--format", "json", str(d)],
    )
    assert r.exit_code == 1, r.output  # a roll is due
    plan = log_dir_report(r.output)
    assert plan["partitions"]["roll-createtime-0"]["rolled"]
    assert tree_state(d) == before
    r = CliRunner().invoke(cli, ["roll", "--if-needed", "--now", "1795249186389", str(d)])
    assert r.exit_code == 0, r.output
    assert (d / "roll-createtime-0" / "00000000000000000060.log").exists()


def test_roll_config_override(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    r = CliRunner().invoke(
        cli,
        [
            "roll",
            "--if-needed",
            "--now",
            "1795249186389",
            "--dry-run",
            "--format",
            "json",
            "--config",
            "segment.ms=604800000",
            str(d),
        ],
    )
    assert not partitions(r.output)["roll-wallclock-0"]["rolled"]
