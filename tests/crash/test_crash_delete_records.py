"""Crash safety of delete-records: kill it after every single file-system step; running it again
(or `recover` then it again) must reach the uninterrupted run's state, no record at or above the
new log start offset may be lost, and the broker's load rule must give that log start offset."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.ops import recover
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FAULT_ENV, FsOps, InjectedFault
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.delete_records import SEGMENTS, run
from tests.helpers.file_states import hashes as state
from tests.helpers.file_states import partition_hashes as partition_files
from tests.helpers.paths import EXAMPLES
from tests.helpers.retention import kept_offsets, make_log_dir

OFFSETS = {("t", 0): 7, ("u", 0): 4}  # into the third and the second segment


def fresh(path: Path) -> Path:
    return make_log_dir(path, {"t-0": SEGMENTS, "u-0": SEGMENTS}, log_start={"u-0": 0})


def kept_from(d: Path, starts: dict) -> set:
    """The batches at or above each partition's new log start offset."""
    return {b for b in kept_offsets(d) if b[2] >= starts[b[0]]}


def loaded_log_start(d: Path, name: str) -> tuple[int, bool]:
    """LogLoader's rule, max(log-start-offset-checkpoint, first segment base), and whether every
    segment is still there."""
    bases = sorted(int(f.stem) for f in (d / name).glob("*.log"))
    lines = (d / "log-start-offset-checkpoint").read_text().splitlines()[2:]
    entry = next((int(x.split()[2]) for x in lines if f"{x.split()[0]}-{x.split()[1]}" == name), 0)
    return max(entry, bases[0]), bases == [0, 3, 6]


@pytest.mark.parametrize("quarantine", [True, False])
def test_kill_after_every_step_then_rerun(tmp_path, quarantine):
    ref = fresh(tmp_path / "ref")
    total = run(ref, tmp_path / "qref" if quarantine else None, offsets=OFFSETS)["fs_steps"]
    want = state(ref)
    starts = {"t-0": 7, "u-0": 4}
    kept = kept_from(ref, starts)
    assert total > 8
    for n in range(1, total):
        d = fresh(tmp_path / f"k{n}")
        q = tmp_path / f"q{n}" if quarantine else None
        with pytest.raises(InjectedFault):
            run(d, q, fault_after=n, offsets=OFFSETS)
        for (topic, partition), offset in OFFSETS.items():
            # once a segment is gone, a broker loading the dir starts at the raised log start offset
            start, whole = loaded_log_start(d, f"{topic}-{partition}")
            assert whole or start == offset, f"{topic}-{partition} after a kill at step {n}"
        run(d, q, offsets=OFFSETS)
        assert state(d) == want, f"after a kill at step {n} of {total}"
        assert kept <= kept_from(d, starts)


def recovered(d: Path, q: Path) -> None:
    ((ld, parts),) = partition_dirs_for([d]).items()
    apply(
        recover.plan(ld, parts, recover.RecoverOptions(now_ms=0)),
        FsOps(ld, Quarantine(q, "recover")),
    )


def test_kill_then_recover_then_rerun(tmp_path):
    ref = fresh(tmp_path / "ref")
    total = run(ref, tmp_path / "qref", offsets=OFFSETS)["fs_steps"]
    ref = fresh(tmp_path / "ref2")  # what recover writes (indexes) differs from the fixture's
    recovered(ref, tmp_path / "qref2")
    run(ref, tmp_path / "qref2", offsets=OFFSETS)
    want = partition_files(ref)
    for n in range(1, total, 2):
        d = fresh(tmp_path / f"k{n}")
        with pytest.raises(InjectedFault):
            run(d, tmp_path / f"q{n}", fault_after=n, offsets=OFFSETS)
        recovered(d, tmp_path / f"q{n}")
        run(d, tmp_path / f"q{n}", offsets=OFFSETS)
        assert partition_files(d) == want, f"after a kill at step {n}"


def test_installed_command_killed_midway_then_rerun(tmp_path):
    """The real process dies (exit 137, as after SIGKILL) after step N; the same command again finishes."""

    def copy(name):
        d = tmp_path / name / "logdir"
        shutil.copytree(EXAMPLES, d)
        return d

    exe = [
        str(Path(sys.executable).with_name("kafkalog")),
        "delete-records",
        "--topic",
        "multi-segment",
        "--topic",
        "idempotent-lz4",
        "--before",
        "-1",
        "--no-quarantine",
    ]
    ref = copy("ref")
    assert subprocess.run(exe + [str(ref)], capture_output=True).returncode == 0
    for n in (1, 3, 5):
        d = copy(f"k{n}")
        killed = subprocess.run(
            exe + [str(d)], env={**os.environ, FAULT_ENV: str(n)}, capture_output=True
        )
        assert killed.returncode == 137
        again = subprocess.run(exe + [str(d)], capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert state(d) == state(ref), f"after a kill at step {n}"
