"""`kafkalog quarantine list|restore|prune`: for each of recover, roll, retain and compact run
through the command line, `quarantine restore` gives back the log dir byte for byte, also after
a kill -9 during the run; a conflicting change is refused; list, prune, --help, the man page."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.fsops import FAULT_ENV
from tests.helpers import broker_cases, compaction, retention
from tests.helpers.paths import MAN
from tests.helpers.run_lines import of_kind

MAN = MAN / "kafkalog-quarantine.1"
COMPACT_CFG = [
    "--now",
    "1795248446186",
    "--topic-config",
    "cmp-none:cleanup.policy=compact",
    "--topic-config",
    "cmp-none:segment.bytes=16384",
    "--topic-config",
    "cmp-none:index.interval.bytes=512",
    "--topic-config",
    "cmp-none:min.cleanable.dirty.ratio=0.01",
    "--topic-config",
    "cmp-lz4:cleanup.policy=compact",
    "--topic-config",
    "cmp-lz4:min.cleanable.dirty.ratio=0.01",
    # the rest of what the broker ran with (PARAMS.json)
    "--config",
    "delete.retention.ms=86400000",
    "--config",
    "min.compaction.lag.ms=0",
]


def _recover(case):
    return lambda dest: (broker_cases.copy_case(case, dest), ["recover", "--now", "1795248200000"])


def _roll(dest):
    return broker_cases.copy_case("roll-time-roll", dest), [
        "roll",
        "--if-needed",
        "--now",
        "1795249186389",
    ]


def _retain(dest):
    return retention.copy_case("time", dest), [
        "retain",
        "--now",
        str(retention.params("time")["now_ms"]),
        "--server-properties",
        str(retention.server_properties("time")),
    ]


def _compact(dest):
    return compaction.restore("keyed-overwrites", "before", dest / "logs"), [
        "compact",
        *COMPACT_CFG,
    ]


OPS = {
    "recover-torn-tail": _recover("recover-torn-tail"),
    "recover-zeroed-index": _recover("recover-zeroed-index"),
    "roll": _roll,
    "retain": _retain,
    "compact": _compact,
}


def tree(d: Path) -> dict[str, tuple[int, str]]:
    """Every file of the log dir: name -> (size, sha256). The .lock, which taking the lock
    creates (as a broker does), is left out."""
    out = {}
    for root, _, files in os.walk(d):
        for n in files:
            f = Path(root) / n
            if n != ".lock":
                data = f.read_bytes()
                out[str(f.relative_to(d))] = (len(data), hashlib.sha256(data).hexdigest())
    return out


def kafkalog(*args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], **kw)


def folders(d: Path) -> list[dict]:
    r = kafkalog("quarantine", "list", "--format", "json", d)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def restore_all(d: Path) -> None:
    """Every folder of the log dir, newest first, as a user undoing the runs would."""
    for f in reversed(folders(d)):
        r = kafkalog("quarantine", "restore", f["folder"])
        assert r.exit_code == 0, r.output


@pytest.mark.parametrize("op", sorted(OPS))
def test_restore_gives_back_the_log_dir_byte_for_byte(op, tmp_path):
    d, args = OPS[op](tmp_path)
    before = tree(d)
    r = kafkalog(*args, d)
    assert r.exit_code == 0, r.output
    assert tree(d) != before
    (f,) = folders(d)
    assert (
        f["op"] == args[0] and f["entries"] > 0 and f["status"] == "kept" and f["log_dir"] == str(d)
    )
    r = kafkalog("quarantine", "restore", "--dry-run", f["folder"])
    assert r.exit_code == 0 and tree(d) != before and "entries to undo, newest first" in r.output
    r = kafkalog("quarantine", "restore", f["folder"])
    assert r.exit_code == 0, r.output
    assert f"restored {d} from {f['folder']}" in r.output
    assert tree(d) == before
    assert folders(d)[0]["status"] == "restored"
    r = kafkalog("quarantine", "restore", f["folder"])
    assert r.exit_code == 0 and "was restored already" in r.output and tree(d) == before


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(OPS))
def test_after_a_kill_9_during_the_run_restore_gives_back_the_log_dir(op, tmp_path):
    for n in (2, 6, 13, 29):
        d, args = OPS[op](tmp_path / f"k{n}")
        before = tree(d)
        env = {**os.environ, FAULT_ENV: str(n), "PYTHONPATH": os.pathsep.join(sys.path)}
        p = subprocess.run(
            [sys.executable, "-m", "kafkalog_cli", *args, str(d)],
            env=env,
            capture_output=True,
            text=True,
        )
        assert p.returncode in (137, 0), p.stderr
        restore_all(d)
        assert tree(d) == before, f"{op} killed after step {n}"


def test_a_conflicting_change_is_refused_exit_3_and_nothing_changes(tmp_path):
    d, args = OPS["recover-torn-tail"](tmp_path)
    assert kafkalog(*args, d).exit_code == 0
    (f,) = folders(d)
    log = d / "rec-none-0" / "00000000000000000725.log"
    with open(log, "ab") as fh:  # a broker appended after recover
        fh.write(b"\0" * 10)
    after, kept = tree(d), tree(Path(f["folder"]))
    r = kafkalog("quarantine", "restore", f["folder"])
    assert r.exit_code == 3
    assert r.output.strip() == (
        f"kafkalog: {log}: is 5716 bytes; recover left it at 5706 bytes; refusing to "
        f"restore {f['folder']}, nothing changed"
    )
    assert tree(d) == after and tree(Path(f["folder"])) == kept
    r = kafkalog("quarantine", "restore", "--dry-run", f["folder"])
    assert r.exit_code == 3 and f"  ! {log}: is 5716 bytes" in r.output
    r = kafkalog("quarantine", "restore", "--dry-run", "--format", "json", f["folder"])
    assert of_kind(r.stdout, "folder")[0]["conflicts"] == [
        {"path": str(log), "message": "is 5716 bytes; recover left it at 5706 bytes"}
    ]


def test_a_damaged_kept_copy_is_refused(tmp_path):
    d, args = OPS["retain"](tmp_path)
    assert kafkalog(*args, d).exit_code == 0
    (f,) = folders(d)
    kept = next(Path(f["folder"]).rglob("*.log"))
    kept.write_bytes(kept.read_bytes()[:-1] + b"!")
    r = kafkalog("quarantine", "restore", f["folder"])
    assert r.exit_code == 3 and f"{kept}: the kept copy is damaged" in r.output


def test_restore_takes_the_lock_exit_5(tmp_path):
    d, args = OPS["roll"](tmp_path)
    assert kafkalog(*args, d).exit_code == 0
    (f,) = folders(d)
    after = tree(d)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time;f=open(sys.argv[1],'a');"
            "fcntl.lockf(f,fcntl.LOCK_EX);print('x',flush=True);time.sleep(30)",
            str(d / ".lock"),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        holder.stdout.readline()
        r = kafkalog("quarantine", "restore", f["folder"])
        assert r.exit_code == 5 and f"in use by process {holder.pid}" in r.output
        assert tree(d) == after
        assert kafkalog("quarantine", "restore", "--dry-run", f["folder"]).exit_code == 0  # no lock
    finally:
        holder.kill()
        holder.wait()


def test_list_text_and_json(tmp_path):
    d, args = OPS["recover-torn-tail"](tmp_path)
    assert kafkalog("quarantine", "list", d).output == "no quarantine folders\n"
    assert kafkalog(*args, d).exit_code == 0
    (f,) = folders(d)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", f["time"])
    assert f["bytes"] == sum(
        p.stat().st_size
        for p in Path(f["folder"]).rglob("*")
        if p.is_file() and p.name != "manifest.jsonl"
    )
    r = kafkalog("quarantine", "list", d)
    header, row = r.output.splitlines()
    assert header.split() == ["TIME", "OP", "ENTRIES", "BYTES", "STATUS", "FOLDER"]
    assert row.split() == [
        f["time"][:19] + "Z",
        "recover",
        str(f["entries"]),
        str(f["bytes"]),
        "kept",
        f["folder"],
    ]
    # the quarantine dir itself, and the current directory by default
    assert folders(tmp_path / ".kafkalog-quarantine") == [f]
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert json.loads(kafkalog("quarantine", "list", "--format", "json").output) == [f]
    finally:
        os.chdir(cwd)
    r = kafkalog("quarantine", "list", tmp_path / "nope")
    assert r.exit_code == 4 and "no such file or directory" in r.output


def test_prune_removes_folders_older_than_the_duration(tmp_path):
    d, args = OPS["recover-torn-tail"](tmp_path)
    assert kafkalog(*args, d).exit_code == 0
    (new,) = folders(d)
    root = Path(new["folder"]).parent
    old = root / "20200101T000000.000000Z-retain"
    old.mkdir()
    (old / "manifest.jsonl").write_text(
        json.dumps(
            {
                "kafkalog_quarantine": 2,
                "op": "retain",
                "created": "20200101T000000.000000Z",
                "log_dir": str(d),
            }
        )
        + "\n"
    )
    leftover = root / ".20190101T000000.000000Z-roll.kafkalog-pruning"
    leftover.mkdir()
    r = kafkalog("quarantine", "prune", "--older-than", "7d", "--dry-run", d)
    assert r.exit_code == 0 and f"would remove {old} (retain, 0 entries, 0 bytes)" in r.output
    assert old.exists() and leftover.exists()
    r = kafkalog("quarantine", "prune", "--older-than", "1d12h", d)
    assert r.exit_code == 0, r.output
    assert f"removed {old}" in r.output and f"removed {leftover}" in r.output
    assert not old.exists() and not leftover.exists() and folders(d) == [new]
    r = kafkalog("quarantine", "prune", "--older-than", "12h", d)
    assert r.exit_code == 0 and r.output == "nothing to prune\n"
    r = kafkalog("quarantine", "prune", "--older-than", "7 days", d)
    assert r.exit_code == 2 and "not a duration" in r.output
    assert kafkalog("quarantine", "prune", d).exit_code == 2  # --older-than is required
    time.sleep(0.01)
    r = kafkalog("quarantine", "prune", "--older-than", "0s", d)
    assert r.exit_code == 0 and not any(root.iterdir())


def test_restore_of_what_is_not_a_quarantine_folder_exit_4(tmp_path):
    r = kafkalog("quarantine", "restore", tmp_path)
    assert r.exit_code == 4 and "not a quarantine folder" in r.output


def test_help_names_the_subcommands_and_exit_codes():
    r = kafkalog("quarantine", "--help")
    assert r.exit_code == 0
    for word in ("list", "restore", "prune", "3  restore refused", "5  the log dir is locked"):
        assert word in r.output
    for sub, option in (("list", "--format"), ("restore", "--dry-run"), ("prune", "--older-than")):
        r = kafkalog("quarantine", sub, "--help")
        assert r.exit_code == 0 and option in r.output
    assert "quarantine" in kafkalog("--help").output


def test_the_man_page_names_every_option_and_exit_code():
    text = re.sub(r"\\f[A-Z]", "", MAN.read_text()).replace("\\-", "-")
    assert ".TH KAFKALOG-QUARANTINE 1" in text
    group = cli.get_command(click.Context(cli), "quarantine")
    for name, sub in group.commands.items():
        assert name in text
        for param in sub.params:
            if isinstance(param, click.Option) and "--help" not in param.opts:
                assert any(o in text for o in param.opts), (name, param.opts)
    for code in range(2, 7):
        assert re.search(rf"^\.B {code}$", text[text.index(".SH EXIT STATUS") :], re.M), code
    assert "manifest.jsonl" in text and "restore.jsonl" in text


def test_completion_offers_the_subcommands():
    comp = ShellComplete(cli, {}, "kafkalog", "_KAFKALOG_COMPLETE")
    assert [c.value for c in comp.get_completions(["quarantine"], "")] == [
        "list",
        "prune",
        "restore",
    ]
    assert "--older-than" in [c.value for c in comp.get_completions(["quarantine", "prune"], "--")]
