"""Bad input never gives a traceback: dump-log, dump-index and verify-crc each answer with a
documented exit code and, on failure, one line `kafkalog: <file>: [byte N: ]<what>`.

Documented codes (kafkalog(1), docs/safety.md): 0 done, 1 problems found (verify-crc), 3 corrupt input,
4 missing, unreadable or unrecognised path."""

from __future__ import annotations

import builtins
import io
import os
import struct
from pathlib import Path

import pytest

from tests.helpers import bad_inputs as B
from tests.helpers.bad_inputs import LOG_CASES, run


def one_error_line(r, name: str, *, byte: bool) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("kafkalog: ") and name in line, line
    if byte:
        assert ": byte " in line, line
    return line


def index_into(log: Path) -> Path:
    """An .index beside `log` with entries at the first and second batch."""
    second = len(B.good_batch())
    idx = log.with_suffix(".index")
    idx.write_bytes(struct.pack(">ii", 0, 0) + struct.pack(">ii", 3, second))
    return idx


# ------------------------------------------------------------------ damaged .log files
EXPECT_DUMP = {  # exit code of `dump-log --deep-iteration` (Kafka's success or failure)
    "empty": 0,
    "text": 0,
    "size_2gb": 0,
    "unknown_magic": 0,
    "cut_short": 0,
    "garbage_compressed": 3,
    "bad_crc": 3,
}


@pytest.mark.parametrize("case", LOG_CASES)
def test_dump_log_damaged(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    r = run("dump-log", "--deep-iteration", "--files", log)
    assert r.stdout.startswith(f"Dumping {log}\nLog starting offset: 0\n")
    assert r.exit_code == EXPECT_DUMP[case], (r.exit_code, r.stderr)
    if r.exit_code:
        one_error_line(r, log.name, byte=True)
    if case in ("size_2gb", "cut_short"):
        assert "invalid bytes at the end of 00000000000000000000.log" in r.stdout


@pytest.mark.parametrize("case", LOG_CASES)
def test_dump_log_json_damaged(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    r = run("dump-log", "--format", "json", "--deep-iteration", log)
    assert r.exit_code in (0, 3)
    if r.exit_code:
        one_error_line(r, log.name, byte=True)


@pytest.mark.parametrize("case", LOG_CASES)
def test_dump_index_over_damaged_log(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    idx = index_into(log)
    for args in ([], ["--verify-index-only"], ["--format", "json", "--verify-index-only"]):
        r = run("dump-index", *args, idx)
        assert r.exit_code in (0, 3), (args, r.exit_code, r.stderr)
        if r.exit_code and args == ["--verify-index-only"]:
            # it goes on past the damage, so kafka-dump-log's reports of what it checked come first
            assert "Traceback" not in r.stderr
            (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: ")]
            assert idx.name in line and ": byte " in line, line
        elif r.exit_code:
            one_error_line(r, idx.name, byte=True)
        else:
            assert "kafkalog:" not in r.stderr


EXPECT_VERIFY = {  # (exit code, problem kind) of `verify-crc --deep`
    "empty": (0, None),
    "text": (1, "trailing_bytes"),
    "size_2gb": (1, "trailing_bytes"),
    "unknown_magic": (1, "magic"),
    "cut_short": (1, "trailing_bytes"),
    "garbage_compressed": (1, "records"),
    "bad_crc": (1, "crc"),
}


@pytest.mark.parametrize("case", LOG_CASES)
def test_verify_crc_damaged(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    r = run("verify-crc", "--deep", log)
    code, kind = EXPECT_VERIFY[case]
    assert r.exit_code == code, r.stdout
    lines = r.stdout.strip().splitlines()
    assert lines[-1].startswith("verify-crc: 1 file, ")
    if code:
        assert lines[0].startswith(f"{log}: byte "), lines[0]
        rj = run("verify-crc", "--deep", "--format", "json", log)
        import json

        objs = [json.loads(x) for x in rj.stdout.splitlines()]
        assert objs[0]["problem"] == kind and isinstance(objs[0]["position"], int)
        assert objs[-1]["kind"] == "summary" and objs[-1]["problems"] == len(objs) - 1
    else:
        assert lines == [lines[-1]] and " 0 problems " in lines[-1]


def test_verify_crc_positions(tmp_path):
    """The damaged batch's byte position, offsets and both CRCs are in the line."""
    log = B.bad_crc(tmp_path)
    r = run("verify-crc", log)
    line = r.stdout.splitlines()[0]
    pos = len(B.good_batch())
    assert line.startswith(
        f"{log}: byte {pos}: v2 batch CRC-32C mismatch (offsets 3..5, stored crc "
    )
    assert "computed crc " in line


# ------------------------------------------------------------------ names and paths
def test_bad_name(tmp_path):
    log = B.bad_name(tmp_path)
    r = run("dump-log", "--files", log)
    assert r.exit_code == 3
    one_error_line(r, "segment.log", byte=False)
    r = run("dump-index", log.with_suffix(".index"))
    assert r.exit_code == 3
    one_error_line(r, "segment.index", byte=False)
    r = run("verify-crc", log)
    assert r.exit_code == 1
    assert r.stdout.splitlines()[0] == (
        f"{log}: file name is not a 20-digit offset, so the segment's base offset cannot be checked"
    )


def test_index_without_log(tmp_path):
    idx = B.index_without_log(tmp_path)
    r = run("dump-index", idx)
    assert r.exit_code == 4
    assert r.stdout == f"Dumping {idx}\n"  # what Kafka prints before it fails
    line = one_error_line(r, idx.name, byte=True)
    assert "no 00000000000000000000.log beside this index" in line
    r = run("dump-log", "--files", idx)
    assert r.exit_code == 4
    one_error_line(r, "00000000000000000000.log", byte=False)
    r = run("verify-crc", idx)
    assert r.exit_code == 4
    one_error_line(r, idx.name, byte=False)


def test_index_odd_size(tmp_path):
    idx = B.index_odd_size(tmp_path)
    r = run("dump-index", idx)
    assert r.exit_code == 0
    assert r.stdout.splitlines()[1:] == [
        "offset: 0 position: 0",
        f"offset: 5 position: {len(B.good_batch())}",
    ]
    assert r.stderr.splitlines()[-1] == (
        f"kafkalog: {idx}: byte 16: 3 trailing bytes are not a whole "
        "8-byte entry (ignored, as Kafka does)"
    )
    r = run("dump-index", "--index-sanity-check", idx)
    assert r.exit_code == 3
    one_error_line(r, idx.name, byte=True)
    r = run("dump-index", "--format", "json", idx)
    assert r.stdout.splitlines()[-1] == (
        f'{{"kind": "trailing_bytes", "file": "{idx}", "position": 16, "size": 3}}'
    )
    r = run("dump-log", "--files", idx)
    assert r.exit_code == 0 and "Index offset: 0, log offset: 2" in r.stderr


@pytest.mark.parametrize("command", [["dump-log", "--files"], ["dump-index"], ["verify-crc"]])
def test_missing(tmp_path, command):
    p = B.missing(tmp_path)
    if command[0] == "dump-index":
        p = p.with_suffix(".index")
    r = run(*command, p)
    assert r.exit_code == 4
    assert "no such file" in one_error_line(r, p.name, byte=False)


@pytest.mark.parametrize("command", [["dump-log"], ["dump-index"], ["verify-crc"]])
def test_not_a_log_dir(tmp_path, command):
    d = B.not_a_log_dir(tmp_path)
    r = run(*command, d)
    assert r.exit_code == 4
    assert "not a Kafka log dir or partition dir" in one_error_line(r, str(d), byte=False)


@pytest.mark.parametrize("command", [["dump-log", "--files"], ["dump-index"], ["verify-crc"]])
def test_fifo_is_not_read(tmp_path, command):
    """A FIFO would block a reader forever: it is refused."""
    fifo = tmp_path / (
        "00000000000000000000.index" if command[0] == "dump-index" else "00000000000000000000.log"
    )
    os.mkfifo(fifo)
    r = run(*command, fifo)
    assert r.exit_code == 4
    assert "not a regular file" in one_error_line(r, fifo.name, byte=False)


@pytest.fixture
def unreadable(monkeypatch):
    """chmod 000 does not stop root: refuse to open the chosen paths the way the OS would."""
    denied: set[str] = set()
    real_open = builtins.open

    def guarded(file, *a, **k):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(os.fspath(file)) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, *a, **k)

    real_os_open = os.open

    def os_guarded(file, *a, **k):  # storage.files opens every file with os.open
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(os.fspath(file)) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_os_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)
    monkeypatch.setattr(os, "open", os_guarded)
    return lambda p: denied.add(os.path.abspath(p))


def test_unreadable_files(tmp_path, unreadable):
    log = B.cut_short(tmp_path)
    idx = index_into(log)
    unreadable(log)
    r = run("dump-log", "--files", log)
    assert r.exit_code == 4
    assert "permission denied" in one_error_line(r, log.name, byte=False)
    r = run("verify-crc", log.parent)
    assert r.exit_code == 4
    assert "permission denied" in one_error_line(r, log.name, byte=False)
    assert r.stdout.splitlines()[-1].startswith("verify-crc: 1 file, 0 batches")
    other = index_into(B.cut_short(tmp_path / "other"))
    unreadable(other)
    r = run("dump-index", other)
    assert r.exit_code == 4
    assert "permission denied" in one_error_line(r, other.name, byte=False)
    r = run("dump-index", idx)  # the index is readable, its .log is not
    assert r.exit_code == 4
    assert "permission denied" in one_error_line(r, log.name, byte=False)
