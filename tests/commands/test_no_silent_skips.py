"""No silent skips, no empty success (issue 11, item 6): every command classifies directories by
storage's one rule, says what it does with -future/-delete/-stray partition dirs, and exits 4 on
what it cannot read."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.run_lines import log_dir_report

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "logdir"
UUID = "0123456789abcdef0123456789abcdef"
NOW = "1900000000000"
DEFAULTS = ("--assume-kafka-defaults",)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def state(d: Path) -> dict[str, str]:
    """Every entry under `d`: a regular file's sha256, else what it is (a FIFO is never opened)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in files + dirs:
            p = Path(root) / n
            if n == ".lock":
                continue
            if p.is_symlink():
                out[str(p.relative_to(d))] = "link:" + os.readlink(p)
            elif p.is_file() and not p.is_fifo():
                out[str(p.relative_to(d))] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p.relative_to(d))] = "fifo" if p.is_fifo() else "dir"
    return out


# a log dir's own files: without them, only its partition dirs say what it is
ROOT_FILES = shutil.ignore_patterns("*-checkpoint", "meta.properties", "bootstrap.checkpoint", ".lock",
                                    ".kafka_cleanshutdown")


def copy_examples(tmp_path: Path, name: str = "ld", **kw) -> Path:
    ld = tmp_path / name
    shutil.copytree(EXAMPLES, ld, **kw)
    return ld


def mutating(cmd: str, path: Path, *extra) -> list:
    """A mutating command's dry run over `path` (what it selects is the same as without)."""
    opts = {"recover": [], "roll": [], "retain": ["--now", NOW, *DEFAULTS], "compact": [*DEFAULTS]}[cmd]
    return [cmd, "--dry-run", *opts, *extra, path]


def read(cmd: str, path: Path, tmp_path: Path) -> list:
    return {"dump-log": ["dump-log", path], "dump-index": ["dump-index", path],
            "verify-crc": ["verify-crc", path],
            "export": ["export", path, tmp_path / "out.jsonl", "--to", "jsonl"]}[cmd]


def _supports_assume_defaults(cmd: str) -> bool:
    r = invoke(cmd, "--help")
    return "--assume-kafka-defaults" in r.output


def mutating_args(cmd: str, path: Path) -> list:
    args = mutating(cmd, path)
    if cmd in ("retain", "compact") and not _supports_assume_defaults(cmd):
        args.remove("--assume-kafka-defaults")
    return args


READS = ["dump-log", "dump-index", "verify-crc", "export"]
MUTATES = ["recover", "roll", "retain", "compact"]


# ------------------------------------------------------------------ recover on unreadable segments
def _make_unreadable(seg: Path, how: str) -> None:
    seg.unlink()
    if how == "fifo":
        os.mkfifo(seg)
    elif how == "symlink":
        seg.symlink_to(seg.parent / "gone.log")
    else:
        seg.mkdir()


@pytest.mark.parametrize("how", ["fifo", "symlink", "directory"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_recover_exits_4_on_a_segment_that_is_not_a_regular_file(tmp_path, how, dry_run):
    ld = copy_examples(tmp_path)
    seg = ld / "txn-0" / "00000000000000000000.log"
    _make_unreadable(seg, how)
    (ld / ".kafka_cleanshutdown").unlink(missing_ok=True)
    before = state(ld)
    r = invoke("recover", *(["--dry-run"] if dry_run else []), "--no-quarantine", ld)
    assert r.exit_code == 4, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(seg) in lines[0], lines
    assert state(ld) == before        # nothing in the log dir changed


# ------------------------------------------------------------------ -future, -delete, -stray
def _with_kinds(tmp_path: Path) -> Path:
    ld = copy_examples(tmp_path)
    for kind in ("future", "delete", "stray"):
        shutil.copytree(ld / "txn-0", ld / f"txn-0.{UUID}-{kind}")
    return ld


def test_recover_recovers_a_future_log_and_leaves_delete_and_stray_untouched(tmp_path):
    ld = _with_kinds(tmp_path)
    (ld / ".kafka_cleanshutdown").unlink(missing_ok=True)
    for kind in ("future", "delete", "stray"):      # a torn tail in each
        with open(ld / f"txn-0.{UUID}-{kind}" / "00000000000000000000.log", "ab") as f:
            f.write(struct.pack(">qi", 99, 500) + b"\0" * 7)
    untouched = {k: state(ld / f"txn-0.{UUID}-{k}") for k in ("delete", "stray")}
    r = invoke("recover", "--format", "json", "--no-quarantine", ld)
    assert r.exit_code == 0, r.output
    report = log_dir_report(r.stdout)
    assert f"txn-0.{UUID}-future" in report["partitions"]
    assert (ld / f"txn-0.{UUID}-future" / "00000000000000000000.log").stat().st_size == \
        (ld / "txn-0" / "00000000000000000000.log").stat().st_size        # the torn tail is gone
    for k in ("delete", "stray"):
        assert state(ld / f"txn-0.{UUID}-{k}") == untouched[k]
        assert f"txn-0.{UUID}-{k}" not in report["partitions"]
        assert any(f"txn-0.{UUID}-{k}" in line and "left untouched" in line
                   for line in r.stderr.splitlines()), r.stderr


@pytest.mark.parametrize("cmd", READS)
def test_read_commands_read_future_logs_and_note_the_others(tmp_path, cmd):
    ld = _with_kinds(tmp_path)
    r = invoke(*read(cmd, ld, tmp_path))
    assert r.exit_code == 0, r.output
    notes = [line for line in r.stderr.splitlines() if "kafkalog: note:" in line]
    for k in ("delete", "stray"):
        assert any(f"txn-0.{UUID}-{k}" in n and "not" in n for n in notes), (k, r.stderr)
    assert not any("-future" in n for n in notes)
    if cmd in ("dump-log", "dump-index"):
        assert f"txn-0.{UUID}-future" in r.stdout and f"txn-0.{UUID}-delete" not in r.stdout


def test_verify_crc_counts_the_future_log(tmp_path):
    ld = _with_kinds(tmp_path)
    plain = copy_examples(tmp_path, "plain")
    with_future = json.loads(invoke("verify-crc", "--format", "json", ld).stdout.splitlines()[-1])
    without = json.loads(invoke("verify-crc", "--format", "json", plain).stdout.splitlines()[-1])
    assert with_future["files"] == without["files"] + 1


def test_roll_notes_what_it_leaves_alone(tmp_path):
    ld = _with_kinds(tmp_path)
    r = invoke("roll", "--dry-run", "--format", "json", ld)
    assert r.exit_code == 1, r.output       # segments to roll
    for k in ("future", "delete", "stray"):
        assert any(f"txn-0.{UUID}-{k}" in line and "left untouched" in line for line in r.stderr.splitlines())


# ------------------------------------------------------------------ what is a log dir
def _etc(tmp_path: Path) -> Path:
    d = tmp_path / "etc"
    (d / "conf-1").mkdir(parents=True)
    (d / "conf-1" / "app.conf").write_text("x=1\n")
    (d / "hostname").write_text("box\n")
    return d


@pytest.mark.parametrize("cmd", READS + MUTATES)
def test_a_dir_with_no_partition_is_exit_4_for_every_command(tmp_path, cmd):
    d = _etc(tmp_path)
    args = read(cmd, d, tmp_path) if cmd in READS else mutating_args(cmd, d)
    r = invoke(*args)
    assert r.exit_code == 4, r.output
    assert "not a Kafka log dir or partition dir" in r.stderr


@pytest.mark.parametrize("cmd", READS + MUTATES)
def test_partition_dirs_without_checkpoint_files_are_a_log_dir_for_every_command(tmp_path, cmd):
    ld = copy_examples(tmp_path, ignore=ROOT_FILES)
    args = read(cmd, ld, tmp_path) if cmd in READS else mutating_args(cmd, ld)
    r = invoke(*args)
    assert r.exit_code != 4 and "not a Kafka log dir" not in r.stderr, r.output
    if cmd == "verify-crc":
        assert "0 files" not in r.stdout


@pytest.mark.parametrize("keep_meta", [True, False])
@pytest.mark.parametrize("cmd", READS)
def test_a_log_dir_named_like_a_partition_is_read_as_a_log_dir(tmp_path, cmd, keep_meta):
    ld = copy_examples(tmp_path, "broker-0", ignore=None if keep_meta else ROOT_FILES)
    r = invoke(*read(cmd, ld, tmp_path))
    assert r.exit_code == 0, r.output
    if cmd == "verify-crc":
        assert "0 files" not in r.stdout
    elif cmd == "export":
        assert (tmp_path / "out.jsonl").stat().st_size > 0
    else:
        assert "Dumping" in r.stdout


@pytest.mark.parametrize("keep_meta", [True, False])
def test_a_log_dir_named_like_a_partition_is_a_log_dir_for_recover(tmp_path, keep_meta):
    ld = copy_examples(tmp_path, "kafka-1", ignore=None if keep_meta else ROOT_FILES)
    r = invoke("recover", "--dry-run", "--format", "json", ld)
    assert r.exit_code == (1 if log_dir_report(r.stdout)["actions"] else 0), r.output
    assert "txn-0" in log_dir_report(r.stdout)["partitions"]


# ------------------------------------------------------------------ dump-log --format json on non-segments
@pytest.mark.parametrize("name, code", [("x.log", 3), ("noext", 4), ("foo.checkpoint", 3)])
def test_dump_log_json_exits_as_kafka_mode_on_a_file_that_is_no_segment(tmp_path, name, code):
    f = tmp_path / name
    f.write_text("root:x:0:0:root:/root:/bin/bash\n")
    text = invoke("dump-log", f)
    js = invoke("dump-log", "--format", "json", f)
    assert text.exit_code == code, text.output
    assert js.exit_code == code, js.output
    assert js.stderr.strip().splitlines()[-1].startswith(f"kafkalog: {f}: ")
