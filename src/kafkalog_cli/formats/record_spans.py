"""The records a rewritten batch is made of, as spans of its bytes: `scan_spans`, `record_starts`,
`span_at` (the cleaner's and compaction's rewrite). Raise `Declined` (or a decoder's error) on
anything only the reference decoder (records.py) may judge."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalog_cli.formats.v2_region import Declined
from kafkalog_cli.formats.varint import read_varlong


@dataclass(slots=True)
class RecordSpan:
    """One record of a v2 batch, enough to decide its fate and to copy it."""

    offset: int
    timestamp: int
    key: bytes | None
    has_value: bool
    rest_start: int  # start of offsetDelta: the bytes kept verbatim when rewriting
    end: int


def scan_spans(
    data, pos: int, end: int, count: int, base_offset: int, base_ts: int
) -> list[RecordSpan]:
    out: list[RecordSpan] = []
    append = out.append
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                v = (b & 0x7F) | (data[pos + 1] << 7)
                length = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                length, pos = read_varlong(data, pos)
            nxt = pos + length
            b = data[pos + 1]
            if b < 0x80:
                ts = (b >> 1) ^ -(b & 1)
                p = pos + 2
            elif data[pos + 2] < 0x80:
                v = (b & 0x7F) | (data[pos + 2] << 7)
                ts = (v >> 1) ^ -(v & 1)
                p = pos + 3
            else:
                ts, p = read_varlong(data, pos + 1)
            rest = p
            b = data[p]
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                od, p = read_varlong(data, p)
            b = data[p]
            if b < 0x80:
                kl = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                kl, p = read_varlong(data, p)
            key = None
            if kl >= 0:
                key = bytes(data[p : p + kl])
                p += kl
            b = data[p]
            vl = (b >> 1) ^ -(b & 1) if b < 0x80 else read_varlong(data, p)[0]
            if p > nxt:
                raise Declined()
            append(RecordSpan(base_offset + od, base_ts + ts, key, vl >= 0, rest, nxt))
            pos = nxt
    except IndexError:
        raise Declined() from None
    if pos != end:
        raise Declined()
    return out


def record_starts(data, pos: int, end: int, upto: int) -> list[int]:
    """Start positions of records 0..upto (only their length varints are read)."""
    out: list[int] = []
    append = out.append
    try:
        for _ in range(upto + 1):
            append(pos)
            b = data[pos]
            if b < 0x80:
                pos += 1 + ((b >> 1) ^ -(b & 1))
            elif data[pos + 1] < 0x80:
                v = (b & 0x7F) | (data[pos + 1] << 7)
                pos += 2 + ((v >> 1) ^ -(v & 1))
            else:
                length, p = read_varlong(data, pos)
                pos = p + length
            if pos > end:
                raise Declined()
    except IndexError:
        raise Declined() from None
    return out


def span_at(data, pos: int, base_offset: int, base_ts: int) -> RecordSpan:
    """The one record starting at `pos`."""
    try:
        return scan_spans(data, pos, _record_end(data, pos), 1, base_offset, base_ts)[0]
    except IndexError:
        raise Declined() from None


def _record_end(data, pos: int) -> int:
    b = data[pos]
    if b < 0x80:
        return pos + 1 + ((b >> 1) ^ -(b & 1))
    if data[pos + 1] < 0x80:
        v = (b & 0x7F) | (data[pos + 1] << 7)
        return pos + 2 + ((v >> 1) ^ -(v & 1))
    length, p = read_varlong(data, pos)
    return p + length
