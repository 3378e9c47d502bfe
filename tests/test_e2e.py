"""The installed `kafkalog` command, run as a user runs it."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers.e2e import _exe, kafkalog
from tests.helpers.paths import EXAMPLES

pytestmark = pytest.mark.e2e


def test_version_and_help():
    p = kafkalog("--version")
    assert p.returncode == 0 and p.stdout.decode().startswith("kafkalog, version ")
    p = kafkalog("--help")
    assert b"dump-log" in p.stdout and b"Exit codes" in p.stdout
    listing = p.stdout.decode().split("Commands:\n")[1]
    for name in ("compact", "dump-index", "dump-log", "recover", "retain", "roll", "verify-crc"):
        line = next(ln for ln in listing.splitlines() if ln.split()[:1] == [name])
        assert not line.endswith("..."), line  # a whole sentence, not click's cut-off


def test_dump_log_of_the_sample_log_dir_as_the_quick_start_runs_it():
    p = kafkalog("dump-log", str(EXAMPLES / "txn-0"), "--print-data-log")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode().splitlines()
    assert out[0] == f"Dumping {EXAMPLES / 'txn-0' / '00000000000000000000.log'}"
    assert "endTxnMarker: ABORT coordinatorEpoch: 0" in p.stdout.decode()
    assert p.stderr == b""


def test_json_output_pipes_into_a_json_parser():
    p = kafkalog("dump-log", str(EXAMPLES), "--format", "json", "--deep-iteration")
    objs = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert {o["kind"] for o in objs} >= {"file", "batch", "record"}


def test_a_closed_pipe_is_not_an_error():
    p = subprocess.run(
        f"'{_exe()}' dump-log '{EXAMPLES}' --deep-iteration | head -1",
        shell=True,
        capture_output=True,
        timeout=60,
    )
    assert p.stdout.decode().startswith("Dumping ") and b"Traceback" not in p.stderr
    assert b"Broken pipe" not in p.stderr


def test_a_text_file_is_all_invalid_bytes_as_kafka_says(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_text("this is not a kafka segment, just some text that goes on for a while\n")
    p = kafkalog("dump-log", str(f))
    assert p.returncode == 0
    assert (
        p.stdout.decode().splitlines()[-1]
        == "Found 69 invalid bytes at the end of 00000000000000000000.log"
    )


def test_bad_input_gives_one_line_and_a_documented_code(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"text" * 10)
    p = kafkalog("dump-log", str(f))
    assert p.returncode == 3
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kafkalog: {f}: byte 0: ")
