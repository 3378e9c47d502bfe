import errno
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage import fsops as fsops_mod
from tests.helpers import paths
from tests.helpers.broker_cases import copy_case, tree_state
from tests.helpers.locks import hold_lock
from tests.helpers.run_lines import log_dir_report, totals


def invoke(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


def test_dry_run_json_changes_nothing_and_takes_no_lock(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    before = tree_state(d)
    p = hold_lock(d / ".lock")
    try:
        r = invoke("recover", "--dry-run", "--format", "json", d)
    finally:
        p.kill()
        p.wait()
    assert r.exit_code == 1, r.output  # changes pending
    assert f"kafkalog: note: {d}/.lock is held by process {p.pid}" in r.stderr
    plan = log_dir_report(r.stdout)
    assert any(a["action"] == "truncate" for a in plan["actions"])
    assert tree_state(d) == before


def test_json_report_after_apply(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    r = invoke("recover", "--format", "json", "--quarantine", tmp_path / "q", d)
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.output)
    assert rep["changed"] and rep["quarantine"].startswith(str(tmp_path / "q"))
    assert rep["partitions"]["rec-none-0"]["log_end_offset"] == 794
    assert totals(r.output)["quarantine"] == [rep["quarantine"]]


def test_locked_dir(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    before = tree_state(d)
    p = hold_lock(d / ".lock")
    try:
        r = invoke("recover", d)
    finally:
        p.kill()
        p.wait()
    assert r.exit_code == 5
    assert f"in use by process {p.pid}" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert tree_state(d) == before


def test_not_a_log_dir(tmp_path):
    (tmp_path / "x").mkdir()
    r = invoke("recover", tmp_path / "x")
    assert r.exit_code == 4 and "not a Kafka log dir" in r.output


@pytest.mark.parametrize("err,where", [(errno.EROFS, "logdir"), (errno.ENOSPC, "quarantine")])
def test_write_failures_leave_the_dir_as_it_was(tmp_path, monkeypatch, err, where):
    d = copy_case("recover-torn-tail", tmp_path)
    before = tree_state(d)
    q = tmp_path / "q"
    orig = fsops_mod.FsOps.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)

        def before_hook(kind, path):
            if (where == "quarantine") == (str(q) in str(path)):
                raise OSError(err, "simulated", str(path))

        self.before = before_hook

    monkeypatch.setattr(fsops_mod.FsOps, "__init__", init)
    r = invoke("recover", "--quarantine", q, d)
    assert r.exit_code == 6, r.output
    assert len(r.output.strip().splitlines()) == 1
    assert ("read-only file system" if err == errno.EROFS else "no space left") in r.output
    after = tree_state(d)
    assert after == before


def test_installed_command_runs(tmp_path):
    d = copy_case("recover-tail-garbage", tmp_path)
    exe = [sys.executable, "-m", "kafkalog_cli"]
    r = subprocess.run(exe + ["recover", "--no-quarantine", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(exe + ["recover", str(d)], capture_output=True, text=True)
    assert "nothing to do" in r.stdout


def test_partition_dir_a_checkpoint_cannot_name_stops_with_exit_4(tmp_path):
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=0\n")
    bad = tmp_path / "with space-1"
    for d in (bad, tmp_path / "t-0"):
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(b"")
    before = tree_state(tmp_path)
    r = invoke("recover", "--no-quarantine", tmp_path)
    assert r.exit_code == 4, r.output
    assert "internal error" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and "checkpoint" in lines[0]
    assert tree_state(tmp_path) == before
    assert "exit 4" in invoke("recover", "--help").output


def test_a_dry_run_notes_a_held_lock(tmp_path):
    # a dry run takes no lock, so it plans on a live broker's dir: it says the real run would stop
    import shutil

    from click.testing import CliRunner

    from kafkalog_cli.cli import cli
    from tests.helpers.locks import hold_lock

    d = tmp_path / "ld"
    shutil.copytree(paths.EXAMPLES, d)
    holder = hold_lock(d / ".lock")
    try:
        for cmd in (["recover", "--dry-run"], ["retain", "--dry-run", "--assume-kafka-defaults"]):
            r = CliRunner().invoke(cli, [*cmd, str(d)])
            assert r.exit_code in (0, 1), r.output
            assert (
                f"kafkalog: note: {d}/.lock is held by process {holder.pid} (a broker running on this log dir?): "
                f"a real run would stop there with exit 5"
            ) in r.stderr, (cmd, r.stderr)
    finally:
        holder.kill()
        holder.wait()
    r = CliRunner().invoke(cli, ["recover", "--dry-run", str(d)])
    assert ".lock is held" not in r.stderr
