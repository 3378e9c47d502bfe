"""Crash safety of retain: kill it after every single file-system step; a rerun of retain (or
`recover` then retain) must reach the uninterrupted run's state, and no kept record may be lost."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.ops import recover
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FAULT_ENV, FsOps, InjectedFault
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers import paths
from tests.helpers.file_states import hashes as state
from tests.helpers.file_states import partition_hashes as partition_files
from tests.helpers.retention import (
    NOW,
    OLD,
    copy_case,
    kept_offsets,
    make_log_dir,
    params,
    res_with,
    resolver,
    run,
)


def crash_then_rerun(
    case: str, tmp_path: Path, n: int, quarantine: bool, via_recover: bool = False
) -> Path:
    d = copy_case(case, tmp_path / f"k{n}")
    q = tmp_path / f"q{n}" if quarantine else None
    with pytest.raises(InjectedFault):
        run(d, params(case)["now_ms"], resolver(case, d), quarantine=q, fault_after=n)
    if via_recover:
        ((ld, parts),) = partition_dirs_for([d]).items()
        apply(
            recover.plan(ld, parts, recover.RecoverOptions(now_ms=params(case)["now_ms"])),
            FsOps(ld, Quarantine(q, "recover")),
        )
    run(d, params(case)["now_ms"], resolver(case, d), quarantine=q)
    return d


@pytest.mark.parametrize("case,quarantine", [("time", True), ("size", False)])
def test_kill_after_every_step_then_rerun(case, quarantine, tmp_path):
    ref = copy_case(case, tmp_path / "ref")
    total = run(
        ref,
        params(case)["now_ms"],
        resolver(case, ref),
        quarantine=tmp_path / "qref" if quarantine else None,
    )["fs_steps"]
    want, kept = state(ref), kept_offsets(ref)
    assert total > 10
    for n in range(1, total):
        d = crash_then_rerun(case, tmp_path, n, quarantine)
        assert state(d) == want, f"after a kill at step {n} of {total}"
        assert kept <= kept_offsets(d)


def test_kill_then_recover_then_retain(tmp_path):
    ref = copy_case("size", tmp_path / "ref")
    total = run(ref, params("size")["now_ms"], resolver("size", ref), quarantine=tmp_path / "qref")[
        "fs_steps"
    ]
    want = partition_files(ref)
    for n in range(1, total, 3):
        d = crash_then_rerun("size", tmp_path, n, quarantine=True, via_recover=True)
        assert partition_files(d) == want, f"after a kill at step {n}"


def test_kill_during_roll_and_delete_of_every_segment(tmp_path):
    def fresh(name):
        return make_log_dir(tmp_path / name, {"t-0": [[OLD, OLD], [OLD]]})

    ref = fresh("ref")
    total = run(ref, NOW, res_with())["fs_steps"]
    want, kept = state(ref), kept_offsets(ref)
    assert (ref / "t-0" / "00000000000000000003.log").exists()
    for n in range(1, total):
        d = fresh(f"k{n}")
        with pytest.raises(InjectedFault):
            run(d, NOW, res_with(), fault_after=n)
        run(d, NOW, res_with())
        assert state(d) == want, f"after a kill at step {n} of {total}"
        assert kept <= kept_offsets(d)


def test_installed_command_killed_midway_then_rerun(tmp_path):
    """The real process dies (exit 137, as after SIGKILL) after step N; cron's next run finishes."""
    ref = copy_case("time", tmp_path / "ref")
    now, props = (
        str(params("time")["now_ms"]),
        str(paths.BROKER / "retain-time" / "config" / "server.properties"),
    )
    exe = [
        str(Path(sys.executable).with_name("kafkalog")),
        "retain",
        "--now",
        now,
        "--server-properties",
        props,
        "--no-quarantine",
    ]
    assert subprocess.run(exe + [str(ref)]).returncode == 0
    for n in (1, 7, 20):
        d = copy_case("time", tmp_path / f"k{n}")
        killed = subprocess.run(exe + [str(d)], env={**os.environ, FAULT_ENV: str(n)})
        assert killed.returncode == 137
        again = subprocess.run(exe + [str(d)], capture_output=True, text=True)
        assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
        assert state(d) == state(ref), f"after a kill at step {n}"
