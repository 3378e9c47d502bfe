"""Batches and segments the scanner and dump-log tests share: one batch parsed, one damaged with its
CRC made right again, a segment of every codec and batch kind, and the general path's text."""

from __future__ import annotations

import io
import struct

from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    RECORD_BATCH_OVERHEAD,
    Header,
    RecordBatch,
    SimpleRecord,
    TimestampType,
    build_legacy_batch,
    build_v2_batch,
    iter_batches,
    set_v2_crc,
)
from kafkalog_cli.render.kafka import DumpOptions, KafkaDumper, decoder_for, decoder_parser

STRING = decoder_parser(decoder_for("StringDecoder"), decoder_for("StringDecoder"))


def batch(raw: bytes) -> RecordBatch:
    (b,) = iter_batches(raw)
    return b


def damaged(raw: bytes, at: int, xor: int) -> RecordBatch:
    """The batch with one byte of its records changed and its CRC made right again, so only the
    record decoding can notice."""
    b = bytearray(raw)
    b[RECORD_BATCH_OVERHEAD + at % max(1, len(raw) - RECORD_BATCH_OVERHEAD)] ^= xor
    return batch(set_v2_crc(b))


def general_text(b: RecordBatch, last: int, metadata: bool, data_log: bool):
    """What dump-log's general path (Record objects from records()) writes for the batch's
    records, and the non-consecutive pairs in file order."""
    out = io.BytesIO()
    d = KafkaDumper(
        out,
        io.BytesIO(),
        DumpOptions(
            parser=STRING,
            deep_iteration=True,
            print_data_log=data_log,
            skip_record_metadata=not metadata,
        ),
    )
    d._fast = False
    pairs: list = []
    last = d._records(b, last, pairs)
    d.flush()
    return out.getvalue(), last, pairs[::-1]


def damaged_batch(raw: bytes, at: int, xor: int, crc: bool):
    """The batch with one byte of its records changed (its CRC made right again with `crc`)."""
    damaged = bytearray(raw)
    damaged[RECORD_BATCH_OVERHEAD + at % max(1, len(raw) - RECORD_BATCH_OVERHEAD)] ^= xor
    return batch(set_v2_crc(damaged) if crc else bytes(damaged))


CODECS = list(Compression)


def records(n: int, seed: int, *, headers: bool = False) -> list[SimpleRecord]:
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else b"key-%d" % (i * seed)
        value = None if i % 11 == 5 else (b"v" * ((i * 37 + seed) % 300))
        if i % 13 == 4:
            value = b"\xff\xfe bad utf-8 \xed\xa0\x80"  # Java's replacement rules
        if i % 17 == 2:
            value = "caf\u00e9 \u2603 \U0001f600".encode()
        hs = (Header("h1", b"x"), Header("caf\u00e9", None)) if headers and i % 3 == 0 else ()
        out.append(
            SimpleRecord(
                key=key,
                value=value,
                timestamp=1_700_000_000_000 + i * 1000 - (i % 5) * 777,
                headers=hs,
            )
        )
    return out


def control_batch(offset: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 7)
    return build_v2_batch(
        [SimpleRecord(key=key, value=value, timestamp=1_700_000_000_000)],
        offset,
        producer_id=42,
        producer_epoch=1,
        is_transactional=True,
        is_control=True,
    )


def segment() -> bytes:
    parts = []
    off = 0
    for ci, codec in enumerate(CODECS):
        for magic in (0, 1):
            if codec == Compression.ZSTD:
                continue
            recs = records(5, 3 + magic)
            parts.append(build_legacy_batch(recs, off, magic=magic, compression=codec))
            off += len(recs)
        recs = records(150, ci + 1, headers=ci % 2 == 0)
        parts.append(build_v2_batch(recs, off, compression=codec))
        off += len(recs)
        recs = records(40, ci + 5)
        parts.append(
            build_v2_batch(
                recs,
                off,
                compression=codec,
                producer_id=42,
                producer_epoch=1,
                base_sequence=2**31 - 10,
                is_transactional=True,
            )
        )
        off += len(recs)
        parts.append(control_batch(off, commit=ci % 2 == 0))
        off += 1
        recs = records(20, ci + 9)
        parts.append(
            build_v2_batch(
                recs,
                off + 5,
                compression=codec,  # a gap in the offsets
                timestamp_type=TimestampType.LOG_APPEND_TIME,
                log_append_time=1_800_000_000_000,
            )
        )
        off += 25 + 5
        # offsets given per record, with holes inside the batch (as the cleaner leaves them)
        recs = records(10, ci + 11)
        for i, r in enumerate(recs):
            r.offset = off + 2 * i
        parts.append(build_v2_batch(recs, off, compression=codec))
        off += 20
    parts.append(build_v2_batch([], off))  # an empty batch
    return b"".join(parts)


def corrupt_records(data: bytes) -> bytes:
    """The second v2 batch's first record claims a longer body (CRC fixed up, so only the record
    decoding fails)."""
    pos, seen = 0, 0
    while True:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if (
            data[pos + 16] == 2
            and struct.unpack_from(">h", data, pos + 21)[0] & 7 == 0
            and struct.unpack_from(">i", data, pos + 57)[0] > 0
        ):
            seen += 1
            if seen == 2:
                break
        pos += size
    b = bytearray(data[pos : pos + size])
    b[61] += 2  # the first record's length varint (one byte: zigzag of a short length)
    fixed = set_v2_crc(b)
    return data[:pos] + fixed + data[pos + size :]
