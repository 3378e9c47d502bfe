"""Symbolic links out of the log dir: the broker follows them, and so do the
read commands; a mutating command changes nothing through one unless --follow-symlinks, says
on stderr which partition it left and why, exits 4, and still does the other partitions."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES as EXAMPLE

NOW = "1900000000000"
LINKED, TWIN = "multi-segment-0", "multi-segment-1"
ACTIVE_LOG = "00000000000000000300.log"

# each mutating command, with what makes it change both multi-segment partitions
COMMANDS = {
    "recover": ["recover", "--repair"],
    "recover --salvage": ["recover", "--salvage", "--all"],
    "roll": ["roll", "--now", NOW],
    "retain": ["retain", "--now", NOW, "--config", "retention.ms=1000", "--assume-kafka-defaults"],
    "compact": [
        "compact",
        "--force",
        "--now",
        NOW,
        "--assume-kafka-defaults",
        "--jobs",
        "1",
        "--topic-config",
        "multi-segment:cleanup.policy=compact",
        "--topic-config",
        "multi-segment:min.cleanable.dirty.ratio=0.01",
    ],
    "delete-records": ["delete-records", "--before", "400", "--topic", "multi-segment"],
}
DAMAGE = {"recover", "recover --salvage"}  # a torn write at the end of the active segment


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _add_entry(checkpoint: Path, line: str) -> None:
    version, _, *entries = checkpoint.read_text().splitlines()
    entries.append(line)
    checkpoint.write_text("\n".join([version, str(len(entries)), *entries]) + "\n")


def log_dir(root: Path, name: str = "logdir") -> Path:
    """examples/logdir with multi-segment-1, a twin of multi-segment-0 (its checkpoint entries
    too): a plain partition dir that each command changes as it would change multi-segment-0."""
    d = root / name
    shutil.copytree(EXAMPLE, d)
    shutil.copytree(d / LINKED, d / TWIN)
    for f in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        _add_entry(d / f, "multi-segment 1 600")
    return d


def tear(partition: Path) -> None:
    """A torn write: 14 bytes after the last batch of the active segment."""
    with open(partition / ACTIVE_LOG, "ab") as f:
        f.write(b"garbagegarbage")


def link_partition(d: Path, elsewhere: Path) -> Path:
    """`mv LOGDIR/multi-segment-0 ELSEWHERE/ && ln -s ELSEWHERE/multi-segment-0 LOGDIR/`"""
    elsewhere.mkdir(exist_ok=True)
    shutil.move(str(d / LINKED), str(elsewhere / LINKED))
    os.symlink(elsewhere / LINKED, d / LINKED)
    return elsewhere / LINKED


def link_segment(d: Path, elsewhere: Path) -> Path:
    """The active segment's .log of multi-segment-0 moved out and linked back in."""
    elsewhere.mkdir(exist_ok=True)
    shutil.move(str(d / LINKED / ACTIVE_LOG), str(elsewhere / ACTIVE_LOG))
    os.symlink(elsewhere / ACTIVE_LOG, d / LINKED / ACTIVE_LOG)
    return elsewhere / ACTIVE_LOG


def snapshot(root: Path) -> dict:
    """Every name under `root` (links not followed), with each file's bytes, mtime and mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            st = os.lstat(p)
            digest = (
                hashlib.sha256(p.read_bytes()).hexdigest()
                if p.is_file() and not p.is_symlink()
                else None
            )
            out[str(p.relative_to(root))] = (
                digest,
                st.st_mtime_ns,
                st.st_mode,
                os.readlink(p) if p.is_symlink() else None,
            )
    return out


def partition_view(p: Path) -> dict:
    """A partition dir's files as a reader sees them (through links): name -> sha256."""
    return {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(p.iterdir())
        if f.name != ".lock"
    }


def _setup(tmp_path, name, how):
    d = log_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    link = link_partition if how == "dir" else link_segment
    link(d, elsewhere)
    if name in DAMAGE:
        tear(d / LINKED)
        tear(d / TWIN)
    return d, elsewhere


@pytest.mark.parametrize("how", ["dir", "file"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_nothing_changes_through_a_link_out_of_the_log_dir(tmp_path, name, how):
    d, elsewhere = _setup(tmp_path, name, how)
    outside, twin = snapshot(elsewhere), partition_view(d / TWIN)
    linked = partition_view(d / LINKED)
    r = invoke(*COMMANDS[name], "--no-quarantine", d)
    assert r.exit_code == 4, r.output
    assert snapshot(elsewhere) == outside
    assert partition_view(d / LINKED) == linked
    left = [line for line in r.stderr.splitlines() if "outside the log dir" in line]
    assert len(left) == 1, r.stderr
    assert left[0].startswith(f"kafkalog: {d / LINKED}: ") and left[0].endswith(
        "left unchanged (--follow-symlinks changes it)"
    ), left[0]
    assert str(elsewhere / (LINKED if how == "dir" else ACTIVE_LOG)) in left[0]
    assert "Traceback" not in r.output
    assert partition_view(d / TWIN) != twin  # the other partitions are done


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_json_lines_say_which_partition_was_left(tmp_path, name):
    d, elsewhere = _setup(tmp_path, name, "dir")
    r = invoke(*COMMANDS[name], "--format", "json", "--no-quarantine", d)
    assert r.exit_code == 4, r.output
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    left = [line for line in lines if line["kind"] == "partition" and line["partition"] == LINKED]
    assert len(left) == 1, lines
    assert left[0]["status"] == "left unchanged" and left[0]["exit_code"] == 4
    assert left[0]["link"] == str(d / LINKED) and left[0]["leads_to"] == str(elsewhere / LINKED)
    assert lines[-1]["kind"] == "totals" and lines[-1]["exit_code"] == 4


@pytest.mark.parametrize("name", ["retain", "roll", "delete-records"])
def test_a_dry_run_says_so_too(tmp_path, name):
    d, elsewhere = _setup(tmp_path, name, "dir")
    before = snapshot(tmp_path)
    r = invoke(*COMMANDS[name], "--dry-run", d)
    assert r.exit_code == 4, r.output
    assert (
        f"kafkalog: {d / LINKED}: a symbolic link to {elsewhere / LINKED}, outside the log dir"
        in r.stderr
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("how", ["dir", "file"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_follow_symlinks_changes_it(tmp_path, name, how):
    d, elsewhere = _setup(tmp_path, name, how)
    linked = partition_view(d / LINKED)
    r = invoke(*COMMANDS[name], "--follow-symlinks", d)
    assert r.exit_code == 0, r.output
    assert "outside the log dir" not in r.stderr
    assert partition_view(d / LINKED) != linked


def test_a_link_that_stays_inside_the_log_dir_is_inside(tmp_path):
    d = log_dir(tmp_path)
    shutil.move(str(d / LINKED), str(d / "multi-segment-2"))
    os.symlink("multi-segment-2", d / LINKED)  # relative, to a partition dir of the same log dir
    before = partition_view(d / LINKED)
    r = invoke("roll", "--now", NOW, d)
    assert r.exit_code == 0, r.output
    assert partition_view(d / LINKED) != before


def test_a_log_dir_that_is_itself_a_link_works_as_before(tmp_path):
    real = log_dir(tmp_path / "data")
    (tmp_path / "var").mkdir()
    os.symlink(real, tmp_path / "var" / "kafka")  # /var/lib/kafka -> /data/kafka
    twin, linked = partition_view(real / TWIN), partition_view(real / LINKED)
    r = invoke(*COMMANDS["retain"], tmp_path / "var" / "kafka")
    assert r.exit_code == 0, r.output
    assert partition_view(real / TWIN) != twin and partition_view(real / LINKED) != linked
    assert r.stderr == ""


def test_the_other_log_dirs_are_still_done(tmp_path):
    a = log_dir(tmp_path, "a")
    b = log_dir(tmp_path, "b")
    link_partition(a, tmp_path / "elsewhere")
    before = partition_view(b / LINKED)
    r = invoke("roll", "--now", NOW, a, b)
    assert r.exit_code == 4, r.output
    assert partition_view(b / LINKED) != before


# -- move-partition ---------------------------------------------------------------------------
def _two_log_dirs(tmp_path) -> tuple[Path, Path]:
    src = log_dir(tmp_path, "disk1")
    (src / ".kafka_cleanshutdown").write_bytes(b"")
    dst = tmp_path / "disk2"
    dst.mkdir()
    shutil.copy(src / "meta.properties", dst / "meta.properties")
    (dst / ".kafka_cleanshutdown").write_bytes(b"")
    return src, dst


def test_move_partition_leaves_a_linked_partition(tmp_path):
    src, dst = _two_log_dirs(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    link_partition(src, elsewhere)
    before = snapshot(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", "multi-segment", "--partition", 0)
    assert r.exit_code == 4, r.output
    assert (
        f"kafkalog: {src / LINKED}: a symbolic link to {elsewhere / LINKED}, outside the log dir"
        in r.stderr
    )
    assert snapshot(tmp_path) == before
    r = invoke(
        "move-partition",
        src,
        dst,
        "--topic",
        "multi-segment",
        "--partition",
        0,
        "--follow-symlinks",
    )
    assert r.exit_code == 0, r.output
    assert (dst / LINKED).is_dir() and not (dst / LINKED).is_symlink()
    assert not os.path.lexists(src / LINKED)
    assert partition_view(elsewhere / LINKED)  # the data itself is left where it was


def test_move_partition_of_a_plain_partition_works_as_before(tmp_path):
    src, dst = _two_log_dirs(tmp_path)
    r = invoke("move-partition", src, dst, "--topic", "multi-segment", "--partition", 1)
    assert r.exit_code == 0, r.output
    assert (dst / TWIN).is_dir() and not os.path.lexists(src / TWIN)


# -- quarantine restore -----------------------------------------------------------------------
def test_restore_never_writes_through_a_link_out_of_the_log_dir(tmp_path):
    d, elsewhere = _setup(tmp_path, "retain", "dir")
    r = invoke(*COMMANDS["retain"], "--follow-symlinks", "--format", "json", d)
    assert r.exit_code == 0, r.output
    folder = Path(json.loads(r.stdout.splitlines()[-1])["quarantine"][0])
    before = snapshot(elsewhere)
    r = invoke("quarantine", "restore", folder)
    assert r.exit_code == 4, r.output
    assert "outside the log dir" in r.output and "--follow-symlinks" in r.output
    assert snapshot(elsewhere) == before
    r = invoke("quarantine", "restore", folder, "--follow-symlinks")
    assert r.exit_code == 0, r.output
    assert snapshot(elsewhere) != before
    assert partition_view(d / LINKED) == partition_view(EXAMPLE / LINKED)


# -- doctor -----------------------------------------------------------------------------------
def test_doctor_notes_a_link_out_of_the_log_dir(tmp_path):
    d = log_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    link_partition(d, elsewhere)
    r = invoke("doctor", d)
    note = [line for line in r.output.splitlines() if "symbolic link" in line]
    assert len(note) == 1, r.output
    assert note[0].startswith(
        f"NOTE    {d / LINKED}: a symbolic link to {elsewhere / LINKED}, outside the log dir"
    )
    assert "leave this partition unchanged unless --follow-symlinks" in r.output
    plain = invoke("doctor", log_dir(tmp_path, "plain"))
    assert r.exit_code == plain.exit_code, (r.output, plain.output)  # a note: the broker starts


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_lock_file_linked_out_is_not_created_there(tmp_path, name):
    d = log_dir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (d / ".lock").unlink(missing_ok=True)
    (d / ".lock").symlink_to(outside / "lock")
    r = invoke(*COMMANDS[name], d)
    assert r.exit_code == 4, r.output
    assert (
        f"kafkalog: {d / '.lock'}: through a symbolic link to {outside / 'lock'}, outside the log dir"
        in r.output
    )
    assert list(outside.iterdir()) == []
