"""The records of a v2 batch as bytes, and what the record scanners (formats/_scan_py.py and its
compiled twin formats/_scan.pyx) share: `Declined`, which a scanner raises where only the
reference decoder (records.py) may judge, and the headers of a record already walked."""

from __future__ import annotations

from kafkalog_cli.formats.compression import decompress
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.records import RECORD_BATCH_OVERHEAD, Header, RecordBatch
from kafkalog_cli.formats.varint import ZIGZAG, read_varint


class Declined(Exception):
    """A record scanner met what only the reference decoder may judge."""


def records_region(batch: RecordBatch) -> tuple[bytes, int, int]:
    """The records of a v2 batch as (bytes, start, end): the batch's own buffer when
    uncompressed, else the decompressed stream."""
    p = batch.position
    start, end = p + RECORD_BATCH_OVERHEAD, p + batch.size
    codec = batch.compression_id
    if codec:
        data = decompress(codec, memoryview(batch.buf)[start:end], 2)
        return data, 0, len(data)
    return batch.buf, start, end


def header_pairs(data: bytes, pos: int, end: int) -> tuple[list[tuple[bytes, bytes | None]], int]:
    """A record's headers as (key bytes, value bytes or None) pairs, and where they end.
    One-byte varints inline, as in the record loops (tracing headers ride on every record)."""
    zz = ZIGZAG
    b = data[pos]
    if b < 0x80:
        nh = zz[b]
        pos += 1
    else:
        nh, pos = read_varint(data, pos)
    if nh < 0 or nh > end - pos:
        raise Declined("header count")
    pairs: list[tuple[bytes, bytes | None]] = []
    for _ in range(nh):
        b = data[pos]
        if b < 0x80:
            hk = zz[b]
            pos += 1
        else:
            hk, pos = read_varint(data, pos)
        if hk < 0 or pos + hk > end:
            raise Declined("header key")
        key = data[pos : pos + hk]
        pos += hk
        b = data[pos]
        if b < 0x80:
            hv = zz[b]
            pos += 1
        else:
            hv, pos = read_varint(data, pos)
        if hv >= 0:
            if pos + hv > end:
                raise Declined("header value")
            pairs.append((key, data[pos : pos + hv]))
            pos += hv
        else:
            pairs.append((key, None))
    return pairs, pos


def headers_at(data: bytes, pos: int) -> tuple[Header, ...]:
    """The headers of a record already walked (their sizes hold), as the reference builds them."""
    pairs, _ = header_pairs(data, pos, len(data))
    return tuple([Header(java_utf8(key), value) for key, value in pairs])
