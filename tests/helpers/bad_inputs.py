"""Builders of bad inputs shared by the bad-input and fuzz tests: each writes files under a
directory and returns the path to give the command."""

from __future__ import annotations

import struct
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

LOG0 = "00000000000000000000.log"
INDEX0 = "00000000000000000000.index"
TIMEINDEX0 = "00000000000000000000.timeindex"


def good_batch(base: int = 0, n: int = 3, compression: Compression = Compression.NONE) -> bytes:
    recs = [
        SimpleRecord(key=b"k%d" % i, value=b"value %d" % i, timestamp=1_700_000_000_000 + i)
        for i in range(n)
    ]
    return build_v2_batch(recs, base, compression=compression)


def fix_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return bytes(batch)


def partition(d: Path, log: bytes, index: bytes | None = None) -> Path:
    p = d / "topic-0"
    p.mkdir(parents=True, exist_ok=True)
    (p / LOG0).write_bytes(log)
    if index is not None:
        (p / INDEX0).write_bytes(index)
    return p


def empty(d):
    return partition(d, b"", b"") / LOG0


def text(d):
    return partition(d, b"This is not a Kafka log.\nJust some text, line after line.\n" * 4) / LOG0


def size_2gb(d):
    return partition(d, good_batch() + struct.pack(">qi", 3, 2**31 - 1) + b"\x02" * 64) / LOG0


def unknown_magic(d):
    b = bytearray(good_batch(3))
    b[16] = 7
    return partition(d, good_batch() + bytes(b)) / LOG0


def cut_short(d):
    return partition(d, good_batch() + good_batch(3)[:-10]) / LOG0


def garbage_compressed(d):
    b = bytearray(good_batch(0, 5, Compression.GZIP))
    b[61 + 12 : len(b) - 4] = bytes((x * 37 + 11) & 0xFF for x in range(len(b) - 4 - 73))
    return partition(d, fix_crc(b)) / LOG0


def bad_crc(d):
    b = bytearray(good_batch(3))
    b[-1] ^= 0xFF
    return partition(d, good_batch() + bytes(b)) / LOG0


def bad_name(d):
    p = d / "not-a-partition"
    p.mkdir(parents=True, exist_ok=True)
    (p / "segment.log").write_bytes(good_batch())
    (p / "segment.index").write_bytes(struct.pack(">ii", 0, 0))
    return p / "segment.log"


def index_without_log(d):
    p = d / "topic-0"
    p.mkdir(parents=True, exist_ok=True)
    (p / INDEX0).write_bytes(struct.pack(">ii", 0, 0) + struct.pack(">ii", 5, 100))
    return p / INDEX0


def index_odd_size(d):
    log = good_batch() + good_batch(3)
    return (
        partition(
            d,
            log,
            struct.pack(">ii", 0, 0) + struct.pack(">ii", 5, len(good_batch())) + b"\x00\x01\x02",
        )
        / INDEX0
    )


def missing(d):
    return d / "topic-0" / LOG0


def not_a_log_dir(d):
    p = d / "photos"
    p.mkdir(parents=True, exist_ok=True)
    (p / "cat.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really")
    return p


LOG_CASES = [
    "empty",
    "text",
    "size_2gb",
    "unknown_magic",
    "cut_short",
    "garbage_compressed",
    "bad_crc",
]


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert "internal error" not in r.stderr
    return r
