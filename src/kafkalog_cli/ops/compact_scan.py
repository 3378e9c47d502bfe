"""The cleaner's hot loops over v2 records: keys for the offset map, and the record spans a
rewritten batch is made of. Varints are decoded inline (the 1-byte case without a call), keys
are sliced from `bytes`, and nothing else is decoded.

Any anomaly (a short buffer, a length that does not add up) raises `_Malformed`; the caller then
decodes the batch with `RecordBatch.records()`, whose error names the file and byte position as
Kafka's own reader would.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkalog_cli.formats.compression import compression_from_id, decompress
from kafkalog_cli.formats.records import RECORD_BATCH_OVERHEAD, RecordBatch
# Multi-byte varints (the rare case; one and two bytes are inlined) read as varlongs: the widest
# Kafka accepts; a longer one is an InvalidRecordError, which callers treat as _Malformed.
from kafkalog_cli.formats.varint import read_varlong


class _Malformed(Exception):
    pass


def records_region(batch: RecordBatch) -> tuple[bytes, int, int]:
    """The records of a v2 batch as (bytes, start, end): the batch's own buffer when
    uncompressed, else the decompressed stream."""
    p = batch.position
    start, end = p + RECORD_BATCH_OVERHEAD, p + batch.size
    codec = batch.compression_id
    if codec:
        data = decompress(compression_from_id(codec), memoryview(batch.buf)[start:end], 2)
        return data, 0, len(data)
    return batch.buf, start, end


def scan_keys(data, pos: int, end: int, count: int, base_offset: int, keys: list, offsets: list) -> None:
    """Append (key, offset) of every keyed record to `keys`/`offsets`. Varints of one and two
    bytes are decoded inline: a Python call costs more than the rest of a record."""
    kappend, oappend = keys.append, offsets.append
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                nxt = pos + 1 + ((b >> 1) ^ -(b & 1))
                p = pos + 2
            else:
                length, p = read_varlong(data, pos)
                nxt = p + length
                p += 1
            while data[p] > 0x7F:               # timestampDelta: skipped
                p += 1
            b = data[p + 1]                     # offsetDelta
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                b2 = data[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    od = (v >> 1) ^ -(v & 1)
                    p += 3
                else:
                    od, p = read_varlong(data, p + 1)
            b = data[p]                         # keyLength
            if b < 0x80:
                if b != 1:                      # 1 is zigzag(-1): no key
                    kl = (b >> 1) ^ -(b & 1)
                    p += 1
                    if p + kl > nxt:
                        raise _Malformed()
                    kappend(data[p:p + kl])
                    oappend(base_offset + od)
            else:
                kl, p = read_varlong(data, p)
                if kl >= 0:
                    if p + kl > nxt:
                        raise _Malformed()
                    kappend(data[p:p + kl])
                    oappend(base_offset + od)
            pos = nxt
    except IndexError:
        raise _Malformed() from None
    if pos != end:
        raise _Malformed()


def scan_keys_into(data, pos: int, end: int, count: int, base_offset: int, d: dict,
                   start_offset: int) -> tuple[int, int]:
    """The map pass's loop when the offset map is a dict with room for `count` more keys:
    `d[key] = offset` for every keyed record at or after `start_offset`, in order (later offsets
    win, as SkimpyOffsetMap.put). Returns (records stored, length of the last key). The record
    length's varint, two bytes for records of 64 to 8191 bytes, is decoded inline as well."""
    kl = -1
    n = 0
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                nxt = pos + 1 + ((b >> 1) ^ -(b & 1))
                p = pos + 2
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    nxt = pos + 2 + ((v >> 1) ^ -(v & 1))
                    p = pos + 3
                else:
                    length, p = read_varlong(data, pos)
                    nxt = p + length
                    p += 1
            while data[p] > 0x7F:               # timestampDelta: skipped
                p += 1
            b = data[p + 1]                     # offsetDelta
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                b2 = data[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    od = (v >> 1) ^ -(v & 1)
                    p += 3
                else:
                    od, p = read_varlong(data, p + 1)
            b = data[p]                         # keyLength
            if b < 0x80:
                if b != 1:
                    kl = (b >> 1) ^ -(b & 1)
                    p += 1
                    if p + kl > nxt:
                        raise _Malformed()
                    o = base_offset + od
                    if o >= start_offset:
                        d[data[p:p + kl]] = o
                        n += 1
            else:
                k, p = read_varlong(data, p)
                if k >= 0:
                    kl = k
                    if p + kl > nxt:
                        raise _Malformed()
                    o = base_offset + od
                    if o >= start_offset:
                        d[data[p:p + kl]] = o
                        n += 1
            pos = nxt
    except IndexError:
        raise _Malformed() from None
    if pos != end:
        raise _Malformed()
    return n, kl


@dataclass(slots=True)
class RecordSpan:
    """One record of a v2 batch, enough to decide its fate and to copy it."""

    offset: int
    timestamp: int
    key: bytes | None
    has_value: bool
    rest_start: int      # start of offsetDelta: the bytes kept verbatim when rewriting
    end: int


def scan_spans(data, pos: int, end: int, count: int, base_offset: int, base_ts: int) -> list[RecordSpan]:
    out = []
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
                raise _Malformed()
            append(RecordSpan(base_offset + od, base_ts + ts, key, vl >= 0, rest, nxt))
            pos = nxt
    except IndexError:
        raise _Malformed() from None
    if pos != end:
        raise _Malformed()
    return out


def record_starts(data, pos: int, end: int, upto: int) -> list[int]:
    """Start positions of records 0..upto (only their length varints are read)."""
    out = []
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
                raise _Malformed()
    except IndexError:
        raise _Malformed() from None
    return out


def span_at(data, pos: int, base_offset: int, base_ts: int) -> RecordSpan:
    """The one record starting at `pos`."""
    try:
        return scan_spans(data, pos, _record_end(data, pos), 1, base_offset, base_ts)[0]
    except IndexError:
        raise _Malformed() from None


def _record_end(data, pos: int) -> int:
    b = data[pos]
    if b < 0x80:
        return pos + 1 + ((b >> 1) ^ -(b & 1))
    if data[pos + 1] < 0x80:
        v = (b & 0x7F) | (data[pos + 1] << 7)
        return pos + 2 + ((v >> 1) ^ -(v & 1))
    length, p = read_varlong(data, pos)
    return p + length
