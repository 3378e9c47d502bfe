"""A FIFO where Kafka expects a regular file: every command returns, never
blocked in open(); a command that reads the file exits 4 with one stderr line naming it (doctor:
exit 8 with a finding naming it); one that does not read it answers as on the intact copy. Never
a traceback or "internal error".

The commands run in-process (CliRunner); a guard thread unblocks a command stuck in open() on
the FIFO (opening its other end) and the test fails, so a regression is a failure, not a hang.
A few cases run end to end in a subprocess with a timeout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES, SRC

GUARD_S = 20.0

# the file kinds a FIFO stands in for, each at one place in examples/logdir
KINDS = {
    "recovery-point-offset-checkpoint": "recovery-point-offset-checkpoint",
    "meta.properties": "meta.properties",
    "bootstrap.checkpoint": "bootstrap.checkpoint",
    ".kafka_cleanshutdown": ".kafka_cleanshutdown",
    ".index": "multi-segment-0/00000000000000000000.index",
    ".timeindex": "multi-segment-0/00000000000000000000.timeindex",
    ".txnindex": "txn-0/00000000000000000000.txnindex",
    ".snapshot": "multi-segment-0/00000000000000000600.snapshot",
    "partition.metadata": "multi-segment-0/partition.metadata",
    "leader-epoch-checkpoint": "multi-segment-0/leader-epoch-checkpoint",
    ".log": "multi-segment-0/00000000000000000000.log",
    "active .log": "multi-segment-0/00000000000000000300.log",
}


def args_of(cmd: str, ld: Path, tmp: Path) -> list:
    """Every command of `kafkalog --help` but completion (which reads no file), over the log dir."""
    return {
        "describe": ["describe", ld],
        "verify-crc": ["verify-crc", ld],
        "dump-index": ["dump-index", "--verify-index-only", ld],
        "dump-log": ["dump-log", ld],
        "get-offsets": ["get-offsets", ld],
        "transactions": ["transactions", "--now", "1700000000000", ld],
        "consumer-groups": ["consumer-groups", ld],
        "doctor": ["doctor", ld],
        "export": ["export", ld, tmp / "out.jsonl", "--to", "jsonl"],
        "compare-replicas": [
            "compare-replicas",
            ld / "multi-segment-0",
            tmp / "other" / "multi-segment-0",
        ],
        "metadata": ["metadata", ld],
        "quarantine": ["quarantine", "list", ld],
        "recover": ["recover", "--no-quarantine", ld],
        "retain": ["retain", "--assume-kafka-defaults", "--now", "1900000000000", ld],
        "compact": ["compact", "--assume-kafka-defaults", ld],
        "roll": ["roll", ld],
        "delete-records": ["delete-records", "--before", "100", "--topic", "multi-segment", ld],
        "move-partition": [
            "move-partition",
            "--topic",
            "multi-segment",
            "--partition",
            "0",
            ld,
            tmp / "other-dir",
        ],
    }[cmd]


COMMANDS = [
    "describe",
    "verify-crc",
    "dump-index",
    "dump-log",
    "get-offsets",
    "transactions",
    "consumer-groups",
    "doctor",
    "export",
    "compare-replicas",
    "metadata",
    "quarantine",
    "recover",
    "retain",
    "compact",
    "roll",
    "delete-records",
    "move-partition",
]

_ROOT = {
    "recovery-point-offset-checkpoint",
    "meta.properties",
    "bootstrap.checkpoint",
    ".kafka_cleanshutdown",
}
_MULTI = {
    ".index",
    ".timeindex",
    ".snapshot",
    "partition.metadata",
    "leader-epoch-checkpoint",
    ".log",
    "active .log",
}

# (command, kind) pairs whose command reads that file: exit 4 and one line naming it. The
# others do not read it (verify-crc and dump-log read only .log files, consumer-groups and
# metadata only their internal topics, compact only compacted topics, ...).
READS: dict[str, set[str]] = {
    "describe": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        ".index",
        ".timeindex",
        ".snapshot",
        ".log",
        "active .log",
    },
    "verify-crc": {".log", "active .log"},
    "dump-index": {".index", ".timeindex", ".txnindex", ".snapshot", ".log", "active .log"},
    "dump-log": {".log", "active .log"},
    "get-offsets": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        "active .log",
    },
    "transactions": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        ".snapshot",
        "active .log",
    },
    "consumer-groups": {"recovery-point-offset-checkpoint"},
    "export": {"meta.properties", ".log", "active .log"},
    "compare-replicas": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "partition.metadata",
        "leader-epoch-checkpoint",
        "active .log",
    },
    "metadata": set(),
    "quarantine": set(),
    "recover": {  # .txnindex: LogSegment.sanityCheck reads it in every indexed segment
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        ".index",
        ".timeindex",
        ".txnindex",
        ".snapshot",
        "leader-epoch-checkpoint",
        ".log",
        "active .log",
    },
    # retain deletes segment 0 of multi-segment-0 and txn-0's: a file it would keep in the
    # quarantine that is not a regular file is refused before anything changes
    "retain": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        ".index",
        ".timeindex",
        ".txnindex",
        ".snapshot",
        "leader-epoch-checkpoint",
        ".log",
        "active .log",
    },
    "compact": {"meta.properties", "bootstrap.checkpoint", ".kafka_cleanshutdown"},
    "roll": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        ".snapshot",
        "active .log",
    },
    "delete-records": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        "bootstrap.checkpoint",
        ".kafka_cleanshutdown",
        "leader-epoch-checkpoint",
        "active .log",
    },
    "move-partition": {
        "recovery-point-offset-checkpoint",
        "meta.properties",
        ".index",
        ".timeindex",
        ".snapshot",
        "partition.metadata",
        "leader-epoch-checkpoint",
        ".log",
        "active .log",
    },
    # doctor: every file the broker reads is judged (a finding, exit 8), .txnindex included
    "doctor": set(KINDS),
}


def _unblock(fifo: Path, stop: threading.Event) -> None:
    """Open the FIFO's other ends until `stop`: a command blocked in open() on it returns."""
    while not stop.is_set():
        fds = []
        for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            try:
                fds.append(os.open(fifo, flags))
            except OSError:
                pass
        time.sleep(0.05)
        for fd in fds:
            os.close(fd)


def invoke_guarded(args: list, fifo: Path):
    """CliRunner.invoke, and whether it had to be unblocked (it hung in open() on `fifo`)."""
    done, stop = threading.Event(), threading.Event()
    hung = []

    def guard():
        if not done.wait(GUARD_S):
            hung.append(True)
            _unblock(fifo, stop)

    t = threading.Thread(target=guard, daemon=True)
    t.start()
    try:
        r = CliRunner().invoke(cli, [str(a) for a in args])
    finally:
        done.set()
        stop.set()
        t.join()
    return r, bool(hung)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """Each command's exit code on the intact copy."""
    out = {}
    for cmd in COMMANDS:
        tmp = tmp_path_factory.mktemp(f"base-{cmd}")
        ld = _copy(tmp)
        r = CliRunner().invoke(cli, [str(a) for a in args_of(cmd, ld, tmp)])
        out[cmd] = r.exit_code
    return out


def _copy(tmp: Path) -> Path:
    ld = tmp / "ld"
    shutil.copytree(EXAMPLES, ld)
    shutil.copytree(EXAMPLES / "multi-segment-0", tmp / "other" / "multi-segment-0")
    (tmp / "other-dir").mkdir()  # move-partition's destination: a log dir of the same broker
    shutil.copy(EXAMPLES / "meta.properties", tmp / "other-dir" / "meta.properties")
    (tmp / "other-dir" / ".kafka_cleanshutdown").write_bytes(b"")
    return ld


def _with_fifo(tmp: Path, kind: str) -> tuple[Path, Path]:
    ld = _copy(tmp)
    fifo = ld / KINDS[kind]
    fifo.unlink()
    os.mkfifo(fifo)
    return ld, fifo


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("cmd", COMMANDS)
def test_a_fifo_in_a_files_place_never_blocks(tmp_path, baseline, cmd, kind):
    ld, fifo = _with_fifo(tmp_path, kind)
    r, hung = invoke_guarded(args_of(cmd, ld, tmp_path), fifo)
    assert not hung, f"{cmd} blocked in open() on a FIFO {kind}"
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    err = r.stderr.strip().splitlines()
    if cmd == "doctor":
        assert r.exit_code == 8, r.output
        assert any(
            str(fifo) in line and "not a regular file (a FIFO)" in line
            for line in r.stdout.splitlines()
        ), r.stdout
    elif kind in READS[cmd]:
        assert r.exit_code == 4, r.output
        named = [line for line in err if str(fifo) in line]
        assert len(named) == 1 and "not a regular file (a FIFO)" in named[0], err
        assert (
            named[0].startswith("kafkalog: ")
            and len([x for x in err if not x.startswith("kafkalog: note:")]) == 1
        )
    else:
        assert r.exit_code == baseline[cmd], r.output


# ------------------------------------------------------------------ end to end: the hang itself
@pytest.mark.parametrize(
    "cmd, kind",
    [
        ("describe", "meta.properties"),
        ("doctor", "meta.properties"),
        ("compare-replicas", "meta.properties"),
        ("recover", ".index"),
        ("retain", "recovery-point-offset-checkpoint"),
        ("export", ".log"),
    ],
)
def test_the_cli_returns_within_a_timeout(tmp_path, cmd, kind):
    ld, fifo = _with_fifo(tmp_path, kind)
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        p = subprocess.run(
            [sys.executable, "-m", "kafkalog_cli", *map(str, args_of(cmd, ld, tmp_path))],
            capture_output=True,
            text=True,
            timeout=GUARD_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        _unblock_once(fifo)
        pytest.fail(f"{cmd} hung on a FIFO {kind}")
    assert p.returncode == (8 if cmd == "doctor" else 4), p.stderr
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    where = p.stdout if cmd == "doctor" else p.stderr
    assert any(str(fifo) in line and "a FIFO" in line for line in where.splitlines()), (
        p.stdout,
        p.stderr,
    )


def _unblock_once(fifo: Path) -> None:
    stop = threading.Event()
    t = threading.Thread(target=_unblock, args=(fifo, stop), daemon=True)
    t.start()
    time.sleep(0.5)
    stop.set()
    t.join()


@pytest.mark.parametrize("kind", ["a directory", "a socket"])
def test_other_non_regular_files_are_named_by_what_they_are(tmp_path, kind):
    ld = _copy(tmp_path)
    f = ld / KINDS["meta.properties"]
    f.unlink()
    if kind == "a directory":
        f.mkdir()
    else:
        import socket

        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(str(f))
        except OSError as e:  # a path too long for sun_path
            pytest.skip(str(e))
        s.close()
    r = CliRunner().invoke(cli, ["describe", str(ld)])
    assert r.exit_code == 4, r.output
    what = (
        "is a directory, not a file"
        if kind == "a directory"
        else "not a regular file (a socket); only regular files are read"
    )
    assert r.stderr.strip().splitlines() == [f"kafkalog: {f}: {what}"]
