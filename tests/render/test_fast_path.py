"""The record fast path (batch_text, formats/byte_loops.py) writes exactly what the general path writes:
same stdout bytes, same stderr reports, same error at the same point."""
from __future__ import annotations

import io
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    Header, SimpleRecord, TimestampType, build_legacy_batch, build_v2_batch, iter_batches, set_v2_crc,
)
from kafkalog_cli.formats.byte_loops import batch_text
from kafkalog_cli.render.kafka import DumpOptions, KafkaDumper, decoder_for, decoder_parser
from tests.formats.strategies import v2_batches

CODECS = list(Compression)
STRING = decoder_parser(decoder_for("StringDecoder"), decoder_for("StringDecoder"))


def _records(n: int, seed: int, *, headers: bool = False) -> list[SimpleRecord]:
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else b"key-%d" % (i * seed)
        value = None if i % 11 == 5 else (b"v" * ((i * 37 + seed) % 300))
        if i % 13 == 4:
            value = b"\xff\xfe bad utf-8 \xed\xa0\x80"      # Java's replacement rules
        if i % 17 == 2:
            value = "caf\u00e9 \u2603 \U0001F600".encode()
        hs = (Header("h1", b"x"), Header("caf\u00e9", None)) if headers and i % 3 == 0 else ()
        out.append(SimpleRecord(key=key, value=value, timestamp=1_700_000_000_000 + i * 1000 - (i % 5) * 777, headers=hs))
    return out


def _control(offset: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 7)
    return build_v2_batch([SimpleRecord(key=key, value=value, timestamp=1_700_000_000_000)], offset,
                          producer_id=42, producer_epoch=1, is_transactional=True, is_control=True)


def _segment() -> bytes:
    parts = []
    off = 0
    for ci, codec in enumerate(CODECS):
        for magic in (0, 1):
            if codec == Compression.ZSTD:
                continue
            recs = _records(5, 3 + magic)
            parts.append(build_legacy_batch(recs, off, magic=magic, compression=codec))
            off += len(recs)
        recs = _records(150, ci + 1, headers=ci % 2 == 0)
        parts.append(build_v2_batch(recs, off, compression=codec))
        off += len(recs)
        recs = _records(40, ci + 5)
        parts.append(build_v2_batch(recs, off, compression=codec, producer_id=42, producer_epoch=1,
                                    base_sequence=2**31 - 10, is_transactional=True))
        off += len(recs)
        parts.append(_control(off, commit=ci % 2 == 0))
        off += 1
        recs = _records(20, ci + 9)
        parts.append(build_v2_batch(recs, off + 5, compression=codec,            # a gap in the offsets
                                    timestamp_type=TimestampType.LOG_APPEND_TIME,
                                    log_append_time=1_800_000_000_000))
        off += 25 + 5
        # offsets given per record, with holes inside the batch (as the cleaner leaves them)
        recs = _records(10, ci + 11)
        for i, r in enumerate(recs):
            r.offset = off + 2 * i
        parts.append(build_v2_batch(recs, off, compression=codec))
        off += 20
    parts.append(build_v2_batch([], off))                         # an empty batch
    return b"".join(parts)


def _dump(tmp_path, data: bytes, *, fast: bool, **opts) -> tuple[bytes, bytes, str | None]:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    out, err = io.BytesIO(), io.BytesIO()
    o = DumpOptions(parser=STRING, **opts)
    d = KafkaDumper(out, err, o)
    d._fast = fast and d._fast
    error = None
    try:
        d.dump(str(path))
        d.finish()
    except KafkalogError as e:
        d.flush()
        error = str(e)
    return out.getvalue(), err.getvalue(), error


FLAGS = [
    dict(deep_iteration=True),
    dict(deep_iteration=True, print_data_log=True),
    dict(deep_iteration=True, print_data_log=True, skip_record_metadata=True),
]


@pytest.mark.parametrize("flags", FLAGS, ids=["deep", "data", "data-skip-metadata"])
def test_fast_path_matches_the_general_path_on_every_codec(tmp_path, flags):
    data = _segment()
    fast = _dump(tmp_path, data, fast=True, **flags)
    slow = _dump(tmp_path, data, fast=False, **flags)
    assert fast == slow
    assert fast[2] is None
    assert b"Non-consecutive offsets" in fast[1]
    if not flags.get("skip_record_metadata"):
        assert b"headerKeys: [h1,caf\xc3\xa9]" in fast[0]
        assert b"endTxnMarker: COMMIT" in fast[0]


def test_the_fast_path_takes_every_well_formed_v2_batch():
    data = _segment()
    n = 0
    for b in iter_batches(data):
        if b.magic == 2 and not b.is_control:
            batch_text(b, -1, [], True, True)   # raises if it would fall back
            n += 1
    assert n == 4 * len(CODECS) + 1


def test_the_fast_path_is_used(tmp_path):
    o = DumpOptions(parser=STRING, deep_iteration=True, print_data_log=True)
    assert KafkaDumper(io.BytesIO(), io.BytesIO(), o)._fast
    other = decoder_parser(decoder_for("IntegerDecoder"), decoder_for("StringDecoder"))
    assert not KafkaDumper(io.BytesIO(), io.BytesIO(), DumpOptions(parser=other, print_data_log=True))._fast
    # an IntegerDecoder only matters with --print-data-log
    assert KafkaDumper(io.BytesIO(), io.BytesIO(), DumpOptions(parser=other, deep_iteration=True))._fast


def _corrupt_records(data: bytes) -> bytes:
    """The second v2 batch's first record claims a longer body (CRC fixed up, so only the record
    decoding fails)."""
    pos, seen = 0, 0
    while True:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if data[pos + 16] == 2 and struct.unpack_from(">h", data, pos + 21)[0] & 7 == 0 and \
                struct.unpack_from(">i", data, pos + 57)[0] > 0:
            seen += 1
            if seen == 2:
                break
        pos += size
    b = bytearray(data[pos : pos + size])
    b[61] += 2   # the first record's length varint (one byte: zigzag of a short length)
    fixed = set_v2_crc(b)
    return data[:pos] + fixed + data[pos + size :]


@pytest.mark.parametrize("flags", FLAGS, ids=["deep", "data", "data-skip-metadata"])
def test_a_malformed_batch_fails_at_the_same_point(tmp_path, flags):
    recs = [SimpleRecord(key=b"k%d" % i, value=b"v" * 20, timestamp=1000 + i) for i in range(10)]
    data = b"".join(build_v2_batch(recs, 10 * i) for i in range(5))
    bad = _corrupt_records(data)
    fast = _dump(tmp_path, bad, fast=True, **flags)
    slow = _dump(tmp_path, bad, fast=False, **flags)
    assert fast == slow
    assert fast[2] is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=v2_batches(), flags=st.sampled_from(FLAGS))
def test_fast_path_matches_the_general_path_at_varint_edges(tmp_path, batch, flags):
    fast = _dump(tmp_path, batch, fast=True, **flags)
    assert fast == _dump(tmp_path, batch, fast=False, **flags)
    assert fast[2] is None
    (b,) = iter_batches(batch)
    batch_text(b, -1, [], True, True)   # the fast path took it: no fallback hid a difference
