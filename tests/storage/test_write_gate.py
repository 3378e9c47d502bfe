"""FsOps' write gate: no method changes a file outside the log dir and its quarantine, judged on
resolved paths, so never through a symbolic link that leads out (unless follow_symlinks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalog_cli.errors import ExitCode, OutsideLogDirError
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine


@pytest.fixture
def dirs(tmp_path):
    """logs/t-0 (a plain partition dir), logs/out-0 -> elsewhere/out-0, logs/t-0/link.log ->
    elsewhere/x.log, each target holding one file."""
    logs, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    (logs / "t-0").mkdir(parents=True)
    (elsewhere / "out-0").mkdir(parents=True)
    (elsewhere / "out-0" / "00000000000000000000.log").write_bytes(b"outside")
    (elsewhere / "x.log").write_bytes(b"outside")
    os.symlink(elsewhere / "out-0", logs / "out-0")
    os.symlink(elsewhere / "x.log", logs / "t-0" / "link.log")
    return logs, elsewhere


def _outside(elsewhere: Path) -> dict:
    return {
        str(p): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(elsewhere.rglob("*"))
        if p.is_file()
    } | {"names": sorted(str(p) for p in elsewhere.rglob("*"))}


def _changes(logs: Path):
    seg = logs / "out-0" / "00000000000000000000.log"
    link = logs / "t-0" / "link.log"
    return {
        "truncate through a dir link": lambda ops: ops.truncate(seg, 2, "test"),
        "truncate through a file link": lambda ops: ops.truncate(link, 2, "test"),
        "extend through a file link": lambda ops: ops.extend(link, 100),
        "append through a file link": lambda ops: ops.append_bytes(link, None, 10),
        "set the time through a file link": lambda ops: ops.set_mtime(link, 1_000_000_000),
        "delete in a linked dir": lambda ops: ops.delete(seg, "test"),
        "write a new file in a linked dir": lambda ops: ops.write_atomic(
            logs / "out-0" / "new", b"x"
        ),
        "create a file in a linked dir": lambda ops: ops.create(
            logs / "out-0" / "new.cleaned"
        ).__enter__(),
        "rename in a linked dir": lambda ops: ops.rename(
            seg, seg.with_name("00000000000000000000.log.deleted")
        ),
        "make a dir in a linked dir": lambda ops: ops.make_dir(logs / "out-0" / "sub"),
        "append a line through a file link": lambda ops: ops.append_line(link, b"line\n"),
        "probe a linked dir": lambda ops: ops.check_writable(logs / "out-0"),
        "copy a file into a linked dir": lambda ops: ops.copy_file(
            logs / "t-0" / "link.log", logs / "out-0" / "copy"
        ),
    }


@pytest.mark.parametrize("keep", [False, True], ids=["no quarantine", "quarantine"])
@pytest.mark.parametrize("change", sorted(_changes(Path("."))))
def test_the_gate_refuses_every_change_through_a_link_out(dirs, tmp_path, change, keep):
    logs, elsewhere = dirs
    before = _outside(elsewhere)
    ops = FsOps(logs, Quarantine(tmp_path / "q" if keep else None, "test"))
    with pytest.raises(OutsideLogDirError) as e:
        _changes(logs)[change](ops)
    assert e.value.exit_code == ExitCode.INPUT == 4
    assert "outside the log dir" in e.value.line() and str(elsewhere) in e.value.line()
    assert _outside(elsewhere) == before
    assert ops.steps == 0 and not ops.quarantine.entries  # refused before anything, no entry noted


def test_the_gate_refuses_a_path_outside_with_no_link(dirs, tmp_path):
    logs, elsewhere = dirs
    with pytest.raises(OutsideLogDirError):
        FsOps(logs).write_atomic(elsewhere / "y", b"x")
    assert not (elsewhere / "y").exists()


def test_follow_symlinks_writes_through(dirs):
    logs, elsewhere = dirs
    ops = FsOps(logs, follow_symlinks=True)
    ops.truncate(logs / "out-0" / "00000000000000000000.log", 2, "test")
    ops.append_bytes(logs / "t-0" / "link.log", None, 1)
    assert (elsewhere / "out-0" / "00000000000000000000.log").read_bytes() == b"ou"
    assert (elsewhere / "x.log").read_bytes() == b"outside\0"
    with pytest.raises(OutsideLogDirError):  # still nothing outside the log dir by its own path
        ops.write_atomic(elsewhere / "y", b"x")


def test_a_link_itself_may_be_replaced_or_removed(dirs):
    """Renaming over, or unlinking, a link inside the log dir changes nothing it leads to."""
    logs, elsewhere = dirs
    ops = FsOps(logs)
    ops.write_atomic(logs / "t-0" / "link.log", b"new")  # tmp + rename: the link is replaced
    assert (logs / "t-0" / "link.log").read_bytes() == b"new" and not (
        logs / "t-0" / "link.log"
    ).is_symlink()
    ops.delete(logs / "out-0", "test")  # the link, not the dir it leads to
    assert (elsewhere / "x.log").read_bytes() == b"outside"
    assert (elsewhere / "out-0" / "00000000000000000000.log").read_bytes() == b"outside"


def test_a_log_dir_reached_through_a_link_is_inside(dirs, tmp_path):
    logs, _ = dirs
    os.symlink(logs, tmp_path / "kafka")  # /var/lib/kafka -> /data/kafka
    ops = FsOps(tmp_path / "kafka", Quarantine(tmp_path / "q", "test"))
    ops.write_atomic(tmp_path / "kafka" / "t-0" / "f", b"x")
    ops.delete(tmp_path / "kafka" / "t-0" / "f", "test")
    assert ops.quarantine.entries and not (logs / "t-0" / "f").exists()


def test_the_quarantine_is_inside(dirs, tmp_path):
    logs, _ = dirs
    (tmp_path / "realq").mkdir()
    os.symlink(tmp_path / "realq", tmp_path / "q")  # --quarantine through a link
    (logs / "t-0" / "f").write_bytes(b"data")
    ops = FsOps(logs, Quarantine(tmp_path / "q", "test"))
    ops.delete(logs / "t-0" / "f", "test")
    assert list((tmp_path / "realq").rglob("f"))
