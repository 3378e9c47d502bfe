"""kafkalog move-partition on the command line: the plan, the run, refusals, the lock."""
from __future__ import annotations

import json

from click.testing import CliRunner

from kafkalog_cli.cli import cli

from ..run_lines import log_dir_report, totals
from ..storage.test_lock import hold_lock
from ..ops.move_helpers import TP, live_copies, state, two_log_dirs


def invoke(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    before = state(src, dst)
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition, "--dry-run")
    assert r.exit_code == 1, r.output      # a dry run with changes pending
    assert r.output.startswith(f"move-partition {TP}: {src} -> {dst} (move, ")
    assert "copy 10 file(s), 16057 bytes" in r.output and "-> multi-segment-0: the copy becomes the partition's live dir" in r.output
    assert state(src, dst) == before


def test_moves_then_nothing_to_do(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition, "--format", "json")
    assert r.exit_code == 0, r.output
    report = log_dir_report(r.output)
    assert report["state"] == "move" and report["bytes_copied"] == 16057 and report["quarantine"]
    assert report["partitions"][str(TP)] and totals(r.output)["quarantine"] == [report["quarantine"]]
    assert live_copies(TP, src, dst) == [dst / str(TP)]
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 0 and "nothing to do (moved)" in r.output


def test_refusals_and_the_lock(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", "nope", "--partition", 0)
    assert r.exit_code == 4 and "no partition dir of nope-0 in the source log dir" in r.output
    r = invoke("move-partition", src, dst, "--topic", TP.topic)
    assert r.exit_code == 2
    holder = hold_lock(dst / ".lock")     # a broker: another process
    try:
        r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    finally:
        holder.kill()
        holder.wait()
    assert r.exit_code == 5 and f"in use by process {holder.pid}" in r.output
    assert live_copies(TP, src, dst) == [src / str(TP)]
    (src / ".kafka_cleanshutdown").unlink()
    r = invoke("move-partition", src, dst, "--topic", TP.topic, "--partition", TP.partition)
    assert r.exit_code == 2 and "not shut down cleanly" in r.output and len(r.output.strip().splitlines()) == 1


def test_completion_offers_both_commands_and_their_options():
    from click.shell_completion import ShellComplete

    comp = ShellComplete(cli, {}, "kafkalog", "_KAFKALOG_COMPLETE")
    names = [c.value for c in comp.get_completions([], "")]
    assert "move-partition" in names and "compare-replicas" in names
    assert {"--topic", "--partition", "--dry-run", "--quarantine"} <= {
        c.value for c in comp.get_completions(["move-partition"], "--")}
    assert {"--topic", "--partition", "--leader", "--limit", "--format"} <= {
        c.value for c in comp.get_completions(["compare-replicas"], "--")}
