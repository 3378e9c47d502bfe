"""Crash safety of move-partition: killed after every single file-system step, the two log dirs
are ones the broker starts on (one live copy of the partition, never a future dir without a
current one), `kafkalog recover --dry-run` has nothing to do in either, and the same command run
again ends where an uninterrupted run ends. The one exception, by design and stated in the man
page: the step between the two renames leaves two identical live copies (the broker refuses to
start, "Duplicate log directories"; nothing is lost; running again finishes)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.storage.fsops import FAULT_ENV, TMP_SUFFIX, InjectedFault
from kafkalog_cli.storage.names import PartitionDirKind, parse_partition_dir_name

from ..ops.move_helpers import TP, live_copies, move, recover_actions, state, two_log_dirs


def kinds(d: Path) -> dict:
    out = {}
    for e in d.iterdir():
        parsed = parse_partition_dir_name(e.name)
        if e.is_dir() and parsed is not None and parsed.topic_partition == TP:
            out.setdefault(parsed.kind, []).append(e)
    return out


def files(d: Path) -> dict:
    return {f.name: f.read_bytes() for f in d.iterdir()}


@pytest.mark.parametrize("quarantine", [True, False])
def test_kill_after_every_step_then_rerun(tmp_path, quarantine):
    src, dst = two_log_dirs(tmp_path / "ref")
    original = files(src / str(TP))
    total = move(src, dst, tmp_path / "qref" if quarantine else None)["fs_steps"]
    want = state(src, dst)
    assert total > 20
    duplicates = []
    for n in range(1, total):
        src, dst = two_log_dirs(tmp_path / f"k{n}")
        q = tmp_path / f"q{n}" if quarantine else None
        with pytest.raises(InjectedFault):
            move(src, dst, q, fault_after=n)
        live = live_copies(TP, src, dst)
        s, d = kinds(src), kinds(dst)
        assert live, f"no live copy after a kill at step {n}"
        assert not s.get(PartitionDirKind.FUTURE), n
        if len(live) == 2:  # the one instant between the two renames
            duplicates.append(n)
            assert files(live[0]) == files(live[1]) == original
        # a future dir is only ever beside the live source, and whole
        for fut in d.get(PartitionDirKind.FUTURE, []):
            assert (src / str(TP)).is_dir() and files(fut) == original, n
        # every copy that the broker loads (live, future) or deletes (-delete) is whole
        for dirs in (s, d):
            for group in dirs.values():
                for x in group:
                    assert files(x) == original, f"{x.name} after a kill at step {n}"
        # nothing to do but, at worst, the temporary file of a checkpoint write killed before its
        # rename (the broker ignores it; recover and the next run remove it)
        left = [
            a
            for a in recover_actions(src) + recover_actions(dst)
            if not a.path.name.endswith(TMP_SUFFIX)
        ]
        assert left == [], n
        move(src, dst, q)
        assert state(src, dst) == want, f"after a kill at step {n} of {total}"
        assert recover_actions(src) == [] and recover_actions(dst) == []
    # one instant: the rename of the copy to live, and the fsync of its directory
    assert len(duplicates) == 2 and duplicates[1] == duplicates[0] + 1, duplicates


def test_installed_command_killed_midway_then_rerun(tmp_path):
    """The real process dies (exit 137, as after SIGKILL) after step N; the same command again finishes."""
    exe = [
        str(Path(sys.executable).with_name("kafkalog")),
        "move-partition",
        "--topic",
        TP.topic,
        "--partition",
        str(TP.partition),
    ]
    src, dst = two_log_dirs(tmp_path / "ref")
    assert subprocess.run(exe + [str(src), str(dst)], capture_output=True).returncode == 0
    want = state(src, dst)
    for n in (2, 9, 27):
        src, dst = two_log_dirs(tmp_path / f"k{n}")
        killed = subprocess.run(
            exe + [str(src), str(dst)], env={**os.environ, FAULT_ENV: str(n)}, capture_output=True
        )
        assert killed.returncode == 137
        again = subprocess.run(exe + [str(src), str(dst)], capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert state(src, dst) == want, f"after a kill at step {n}"


def test_kill_rerun_then_restore_every_folder_gives_back_the_dirs(tmp_path):
    """A run killed after any step, then run again, leaves two quarantine folders; restoring
    them newest first puts both log dirs back as they were before the move, with nothing left in
    the staging dir. The killed run journals each rename before it makes it, so its folder names
    renames that never happened: restore finds the directory where the chain of renames stopped."""
    from click.testing import CliRunner

    from kafkalog_cli.cli import cli
    from kafkalog_cli.storage.quarantine import staging_dir

    src, dst = two_log_dirs(tmp_path / "ref")
    total = move(src, dst, tmp_path / "qref")["fs_steps"]
    for n in range(1, total):
        src, dst = two_log_dirs(tmp_path / f"k{n}")
        before = state(src, dst)
        q = tmp_path / f"q{n}"
        with pytest.raises(InjectedFault):
            move(src, dst, q, fault_after=n)
        move(src, dst, q)
        for folder in sorted(q.iterdir(), reverse=True):
            r = CliRunner().invoke(cli, ["quarantine", "restore", str(folder)])
            assert r.exit_code == 0, (
                f"restore of {folder.name} after a kill at step {n}: {r.output}"
            )
        assert state(src, dst) == before, f"after a kill at step {n} of {total}"
        for d in (src, dst):
            staged = staging_dir(d)
            assert not staged.exists() or not any(staged.iterdir()), f"{staged} after step {n}"
