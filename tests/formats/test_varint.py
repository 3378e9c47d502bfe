from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kafkalog_cli
from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.varint import (
    ZIGZAG,
    read_varint,
    read_varlong,
    write_varint,
    write_varlong,
)


@pytest.mark.parametrize(
    "value,encoded",
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
    ],
)
def test_zigzag_varints_match_kafkas_byteutils(value, encoded):
    assert write_varint(value).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(v):
    assert read_varint(write_varint(v), 0)[0] == v


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(v):
    b = write_varlong(v)
    assert read_varlong(b, 0) == (v, len(b))


def test_a_sixth_varint_byte_is_too_long():
    with pytest.raises(InvalidRecordError, match="Varint is too long"):
        read_varint(b"\xff\xff\xff\xff\xff\x01", 0)


@given(st.integers(-(1 << 13), (1 << 13) - 1))
def test_zigzag_table_decodes_every_one_and_two_byte_varint(v):
    enc = write_varint(v)
    assert len(enc) <= 2
    index = enc[0] if len(enc) == 1 else enc[0] + (enc[1] << 7)
    assert ZIGZAG[index] == v == read_varint(enc, 0)[0]


def test_zigzag_table_reads_a_padded_two_byte_zero_as_kafka_does():
    assert ZIGZAG[0x80 + (0x00 << 7)] == read_varint(b"\x80\x00", 0)[0] == 0


def _byteutils(buf: bytes, max_bytes: int, bits: int):
    """ByteUtils.readVarint / readVarlong, transcribed: (value, next position) or the position and
    text of the IllegalArgumentException."""
    raw, shift, pos = 0, 0, 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= (1 << bits) - 1
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 7 * (max_bytes - 1):
            return "too long", pos


@given(st.integers(0, 11), st.binary(min_size=12, max_size=12))
def test_readers_match_byteutils_on_any_bytes(continued, raw):
    # `continued` bytes with the high bit, then one without: non-canonical encodings (b"\x80\x00"),
    # long ones and too long ones included
    data = (
        bytes(b | 0x80 for b in raw[:continued])
        + bytes([raw[continued] & 0x7F])
        + raw[continued + 1 :]
    )
    for read, max_bytes, bits in ((read_varint, 5, 32), (read_varlong, 10, 64)):
        expected = _byteutils(data, max_bytes, bits)
        if expected[0] == "too long":
            with pytest.raises(InvalidRecordError, match="is too long") as e:
                read(data, 0)
            assert e.value.position == expected[1]
        else:
            assert read(data, 0) == expected
            assert read(b"\x00" + data, 1) == (expected[0], expected[1] + 1)


def test_readers_keep_their_names():
    assert (read_varint.__name__, read_varlong.__name__) == ("read_varint", "read_varlong")
    with pytest.raises(
        InvalidRecordError, match="Varlong is too long, most significant bit in the 10th byte"
    ):
        read_varlong(b"\xff" * 10 + b"\x01", 0)


def _python_3_10() -> str | None:
    """A Python 3.10 (the oldest pyproject.toml allows), or None."""
    candidates = [
        shutil.which("python3.10"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python"))),
    ]
    for exe in filter(None, candidates):
        probe = subprocess.run(
            [exe, "-c", "import sys; sys.exit(sys.version_info[:2] != (3, 10))"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return exe
    return None


def test_the_varint_readers_import_on_python_3_10():
    exe = _python_3_10()
    if exe is None:
        pytest.skip("no Python 3.10 here")
    src = str(Path(kafkalog_cli.__file__).resolve().parent.parent)
    code = (
        "from kafkalog_cli.formats.varint import read_varint, read_varlong\n"
        "print(read_varint(b'\\x02', 0), read_varlong(b'\\x01', 0), read_varint.__name__)"
    )
    done = subprocess.run(
        [exe, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": src},
    )
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "(1, 1) (-1, 1) read_varint\n")
