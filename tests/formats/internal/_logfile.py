"""A tiny, independent reader of uncompressed record batches, only to pull (key, value) pairs
out of the fixture files; the real reader lives in kafkalog_cli.formats.records."""

from __future__ import annotations

import json
import lzma
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from tests.helpers.paths import INTERNAL as FIXTURES


@dataclass(frozen=True)
class Rec:
    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    control: bool
    sequence: int | None  # None for magic 0/1
    crc: int | None  # wrapper CRC for magic 0/1

    def metadata_line(self) -> str:
        """kafka-dump-log's record prefix, without key/payload."""
        ks = -1 if self.key is None else len(self.key)
        vs = -1 if self.value is None else len(self.value)
        head = f"| offset: {self.offset} {self.timestamp_type}: {self.timestamp} keySize: {ks} valueSize: {vs}"
        if self.sequence is None:
            return f"{head} isValid: true crc: {self.crc}}}"
        return f"{head} sequence: {self.sequence} headerKeys: []"


def _uvarint(b: bytes, i: int) -> tuple[int, int]:
    v = s = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        if not x & 0x80:
            return v, i
        s += 7


def _varint(b: bytes, i: int) -> tuple[int, int]:
    v, i = _uvarint(b, i)
    return (v >> 1) ^ -(v & 1), i


def records(buf: bytes) -> Iterator[Rec]:
    pos = 0
    while pos + 17 <= len(buf):
        base, size = struct.unpack_from(">qi", buf, pos)
        end = pos + 12 + size
        if size < 14 or end > len(buf):
            return
        magic = buf[pos + 16]
        if magic < 2:
            (crc,) = struct.unpack_from(">I", buf, pos + 12)
            attrs = buf[pos + 17]
            assert attrs & 7 == 0, "compressed legacy message"
            i = pos + 18
            ts, ts_type = -1, "NoTimestampType"
            if magic == 1:
                (ts,) = struct.unpack_from(">q", buf, i)
                i += 8
                ts_type = "LogAppendTime" if attrs & 8 else "CreateTime"
            (kl,) = struct.unpack_from(">i", buf, i)
            key = None if kl < 0 else buf[i + 4 : i + 4 + kl]
            i += 4 + max(kl, 0)
            (vl,) = struct.unpack_from(">i", buf, i)
            value = None if vl < 0 else buf[i + 4 : i + 4 + vl]
            yield Rec(base, ts, ts_type, key, value, False, None, crc)
        else:
            (attrs,) = struct.unpack_from(">h", buf, pos + 21)
            assert attrs & 7 == 0, "compressed batch"
            first_ts, max_ts, _pid, _epoch, base_seq, count = struct.unpack_from(
                ">qqqhii", buf, pos + 27
            )
            log_append = bool(attrs & 8)
            i = pos + 61
            for _ in range(count):
                length, i = _varint(buf, i)
                rec_end = i + length
                i += 1  # attributes
                ts_delta, i = _varint(buf, i)
                off_delta, i = _varint(buf, i)
                kl, i = _varint(buf, i)
                key = None if kl < 0 else buf[i : i + kl]
                i += max(kl, 0)
                vl, i = _varint(buf, i)
                value = None if vl < 0 else buf[i : i + vl]
                seq = -1 if base_seq == -1 else (base_seq + off_delta) & 0x7FFFFFFF
                yield Rec(
                    base + off_delta,
                    max_ts if log_append else first_ts + ts_delta,
                    "LogAppendTime" if log_append else "CreateTime",
                    key,
                    value,
                    bool(attrs & 0x20),
                    seq,
                    None,
                )
                i = rec_end
        pos = end


def manifest() -> list[dict]:
    return json.loads((FIXTURES / "manifest.json").read_text())


def fixture_records(name: str) -> list[Rec]:
    return list(records(lzma.decompress((FIXTURES / f"{name}.xz").read_bytes())))


def golden_lines(name: str) -> list[bytes]:
    """The `| offset: ...` lines kafka-dump-log 3.3.1 printed for the fixture (bytes, unsplit by CR)."""
    data = lzma.decompress((FIXTURES / f"{name}.golden.xz").read_bytes())
    return data.split(b"\n")[:-1]
