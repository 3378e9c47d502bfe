"""freed_on_disk and held_in_quarantine (storage/space.py): the same two fields, per partition and
in total, in the report of every command that removes data."""

from __future__ import annotations

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.compaction import DIRTY
from tests.helpers.run_lines import log_dir_report, totals


def _dirty(tmp_path):
    from tests.helpers.compaction import restore

    return restore("keyed-overwrites", "before", tmp_path / "logs")


def test_compact_reports_both_fields_per_partition_and_in_total(tmp_path):
    d = _dirty(tmp_path)
    r = CliRunner().invoke(cli, ["compact", str(d), "--format", "json", "--no-quarantine", *DIRTY])
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.stdout)
    assert rep["cleaned"] and all(
        c["freed_on_disk"] > 0 and c["held_in_quarantine"] == 0 for c in rep["cleaned"]
    )
    assert (
        rep["freed_on_disk"] >= sum(c["freed_on_disk"] for c in rep["cleaned"]) - 3 * 4096
    )  # + checkpoints
    assert (
        totals(r.stdout)["freed_on_disk"] == rep["freed_on_disk"]
        and totals(r.stdout)["held_in_quarantine"] == 0
    )


def test_compact_with_the_default_quarantine_holds_what_it_replaced(tmp_path):
    d = _dirty(tmp_path)
    r = CliRunner().invoke(cli, ["compact", str(d), "--format", "json", *DIRTY])
    rep = log_dir_report(r.stdout)
    assert totals(r.stdout)["held_in_quarantine"] == rep["held_in_quarantine"] > 0
    for c in rep["cleaned"]:
        assert c["held_in_quarantine"] > c["bytes_freed"] > 0
        assert c["freed_on_disk"] <= 0  # hard links: the old segments still take their blocks


def test_recover_reports_what_its_cut_frees_and_holds(tmp_path):
    from tests.helpers.broker_cases import copy_case

    d = copy_case("recover-torn-tail", tmp_path)
    r = CliRunner().invoke(
        cli, ["recover", str(d), "--format", "json", "--quarantine", str(tmp_path / "q")]
    )
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.stdout)
    assert rep["held_in_quarantine"] > 0 and "freed_on_disk" in rep
    assert all(
        "freed_on_disk" in s and "held_in_quarantine" in s for s in rep["partitions"].values()
    )
