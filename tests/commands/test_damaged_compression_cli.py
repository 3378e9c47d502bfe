"""A compressed batch whose codec cannot read it (gzip bytes damaged under a fixed-up CRC, or
codec id 5, which no Kafka has): every reader answers with the one line naming the file and the
batch's byte (CompressionError, exit 3), on the compiled core and on the pure one, never a
Python traceback or "internal error: BufferError" (a view of the segment's mmap held by the
error while the segment is unmapped)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.formats.compression import Compression
from tests.helpers.bad_inputs import fix_crc, garbage_compressed, good_batch, partition
from tests.helpers.paths import SRC


def codec_5(d: Path) -> Path:
    b = bytearray(good_batch(0, 5, Compression.GZIP))
    b[22] = (b[22] & ~7) | 5  # attributes' low three bits: the codec
    return partition(d, fix_crc(b)) / "00000000000000000000.log"


def as_consumer_offsets(log: Path) -> Path:
    d = log.parent.with_name("__consumer_offsets-0")
    log.parent.rename(d)
    return d


def kafkalog(*args, pure: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("KAFKALOG_PURE_PYTHON", None)
    if pure:
        env["KAFKALOG_PURE_PYTHON"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def assert_one_line(r: subprocess.CompletedProcess, log: Path) -> None:
    assert (
        "Traceback" not in r.stderr
        and "internal error" not in r.stderr
        and "BufferError" not in r.stderr
    ), r.stderr
    assert r.returncode == 3, (r.returncode, r.stderr)
    lines = [
        ln
        for ln in r.stderr.splitlines()
        if ln.startswith("kafkalog: ") and not ln.startswith("kafkalog: note")
    ]
    assert len(lines) == 1 and lines[0].startswith(f"kafkalog: {log}: byte 0: "), r.stderr


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
@pytest.mark.parametrize("damage", [garbage_compressed, codec_5])
@pytest.mark.parametrize("to", ["parquet", "jsonl"])
def test_export(to, damage, pure, tmp_path):
    log = damage(tmp_path / "in")
    r = kafkalog("export", log.parent, tmp_path / f"out.{to}", "--to", to, pure=pure)
    assert_one_line(r, log.absolute())
    assert not (tmp_path / f"out.{to}").exists()


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
@pytest.mark.parametrize("damage", [garbage_compressed, codec_5])
def test_consumer_groups(damage, pure, tmp_path):
    d = as_consumer_offsets(damage(tmp_path / "in"))
    r = kafkalog("consumer-groups", d, pure=pure)
    assert_one_line(r, d / "00000000000000000000.log")
