"""Every record scanner (formats/byte_loops.py's, and the key and span scanners) against the
reference decoder (formats.records): the same
values on well-formed batches (and no fallback there), and never a different answer on damaged
ones (a scanner may give up with Declined, never disagree)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import CorruptRecordError, KafkalogError
from kafkalog_cli.formats.byte_loops import batch_text, v2_records_ok
from kafkalog_cli.formats.compression import Compression, compress
from kafkalog_cli.formats.framing import (
    CRC,
    INNER_CRC,
    MAGIC,
    OFFSETS,
    RECORDS,
    SIZE,
    TRAILING,
    check_batches,
)
from kafkalog_cli.formats.record_keys import scan_keys, scan_keys_into
from kafkalog_cli.formats.record_spans import record_starts, scan_spans, span_at
from kafkalog_cli.formats.records import (
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    SimpleRecord,
    build_legacy_batch,
    build_v2_batch,
    encode_legacy_message,
    encode_v2_record,
    iter_batches,
    set_v2_crc,
)
from kafkalog_cli.formats.v2_region import Declined, records_region
from kafkalog_cli.formats.varint import read_varint, write_varlong
from tests.helpers.segments import batch as _batch
from tests.helpers.segments import damaged as _damaged
from tests.helpers.segments import general_text as _general_text
from tests.helpers.strategies import FIELDS as _FIELDS
from tests.helpers.strategies import VALUES as _VALUES
from tests.helpers.strategies import damaged_chains, v2_batches

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLAGS = [(True, False), (True, True), (False, True), (False, False)]  # (metadata, data_log)


def _uncompressed():
    return v2_batches(codecs=[Compression.NONE])


# ------------------------------------------------------------------ record text


def _fast_text(b: RecordBatch, last: int, metadata: bool, data_log: bool):
    pairs: list = []
    text, last = batch_text(b, last, pairs, metadata, data_log)
    return text.encode("utf-8", "replace"), last, pairs


@PROPERTY
@given(raw=v2_batches(), flags=st.sampled_from(FLAGS), before=st.sampled_from([-1, 0, 10**12]))
def test_record_text_is_the_general_paths(raw, flags, before):
    b = _batch(raw)
    assert _fast_text(b, before, *flags) == _general_text(b, before, *flags)


@PROPERTY
@given(
    raw=_uncompressed(),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    flags=st.sampled_from(FLAGS),
)
def test_record_text_of_damaged_records_is_the_general_paths_or_none(raw, at, xor, flags):
    b = _damaged(raw, at, xor)
    try:
        fast = _fast_text(b, -1, *flags)
    except Exception:
        return  # the caller falls back to the general path
    assert fast == _general_text(b, -1, *flags)


# ------------------------------------------------------------------ keys
def _keys(b: RecordBatch):
    keys, offsets = [], []
    data, s, e = records_region(b)
    scan_keys(data, s, e, b.records_count, b.base_offset_field, keys, offsets)
    return [(bytes(k), o) for k, o in zip(keys, offsets)]


def _reference_keys(b: RecordBatch):
    return [(r.key, r.offset) for r in b.records() if r.key is not None]


def _keys_into(b: RecordBatch, start: int):
    d: dict = {}
    data, s, e = records_region(b)
    n, kl = scan_keys_into(data, s, e, b.records_count, b.base_offset_field, d, start)
    return {bytes(k): o for k, o in d.items()}, n, kl


def _reference_keys_into(b: RecordBatch, start: int):
    keyed = _reference_keys(b)
    stored = [(k, o) for k, o in keyed if o >= start]
    return dict(stored), len(stored), len(keyed[-1][0]) if keyed else -1


@PROPERTY
@given(raw=v2_batches())
def test_scan_keys_is_records(raw):
    b = _batch(raw)
    assert _keys(b) == _reference_keys(b)


@PROPERTY
@given(raw=v2_batches(), skip=st.integers(0, 20))
def test_scan_keys_into_is_records(raw, skip):
    b = _batch(raw)
    start = b.base_offset_field + skip * 4000
    assert _keys_into(b, start) == _reference_keys_into(b, start)


@PROPERTY
@given(raw=_uncompressed(), at=st.integers(0, 2**20), xor=st.integers(1, 255))
def test_key_scans_of_damaged_records_agree_or_give_up(raw, at, xor):
    b = _damaged(raw, at, xor)
    try:
        want = _reference_keys(b)
    except KafkalogError:
        return  # the scanners check lengths, not every field: the reference judges the rest
    for scan, ref in (
        (_keys, lambda b: want),
        (lambda b: _keys_into(b, 0), lambda b: _reference_keys_into(b, 0)),
    ):
        try:
            got = scan(b)
        except (Declined, KafkalogError):
            continue
        assert got == ref(b)


# ------------------------------------------------------------------ spans
def _create_time(raw: bytes) -> RecordBatch:
    """The batch read as CreateTime (its records' own timestamp deltas; the walk is the same)."""
    b = bytearray(raw)
    b[22] &= ~0x08
    return _batch(bytes(b))


def _reference_spans(b: RecordBatch):
    """(offset, timestamp, key, has value, the record's bytes from offsetDelta on)."""
    out = []
    for r in b.records():
        td = r.timestamp - b.base_timestamp
        enc = encode_v2_record(r.offset - b.base_offset_field, td, r.key, r.value, r.headers)
        _, body = read_varint(enc, 0)
        rest = body + 1 + len(write_varlong(td))  # past the attributes and timestampDelta
        out.append((r.offset, r.timestamp, r.key, r.value is not None, enc[rest:]))
    return out


def _spans(b: RecordBatch):
    data, s, e = records_region(b)
    spans = scan_spans(data, s, e, b.records_count, b.base_offset_field, b.base_timestamp)
    return data, s, e, spans


@PROPERTY
@given(raw=v2_batches())
def test_scan_spans_is_records(raw):
    b = _create_time(raw)
    data, s, e, spans = _spans(b)
    got = [
        (x.offset, x.timestamp, x.key, x.has_value, bytes(data[x.rest_start : x.end]))
        for x in spans
    ]
    assert got == _reference_spans(b)
    assert (spans[-1].end if spans else s) == e


@PROPERTY
@given(raw=v2_batches(), pick=st.integers(0, 11))
def test_record_starts_and_span_at_are_scan_spans(raw, pick):
    b = _create_time(raw)
    data, s, e, spans = _spans(b)
    upto = pick % len(spans)
    starts = record_starts(data, s, e, upto)
    assert starts == [s] + [x.end for x in spans[:upto]]
    assert span_at(data, starts[upto], b.base_offset_field, b.base_timestamp) == spans[upto]


@PROPERTY
@given(raw=_uncompressed(), at=st.integers(0, 2**20), xor=st.integers(1, 255))
def test_span_scans_of_damaged_records_agree_or_give_up(raw, at, xor):
    b = _damaged(_create_time(raw).data.tobytes(), at, xor)
    try:
        want = _reference_spans(b)
    except KafkalogError:
        return
    try:
        data, s, e, spans = _spans(b)
    except (Declined, KafkalogError):
        return
    # (re-encoding a damaged header key is lossy, so the bytes are compared on well-formed ones)
    assert [(x.offset, x.timestamp, x.key, x.has_value) for x in spans] == [w[:4] for w in want]


# ------------------------------------------------------------------ batch checks


def _reference_deep(b: RecordBatch, found: set) -> None:
    """What a deep check finds in one batch, by way of records()."""
    if b.magic < 2 and not b.compression_id:
        return
    try:
        recs = b.records()
    except Exception:
        found.add((RECORDS, b.position))
        return
    offsets = [r.offset for r in recs]
    increasing = all(x < y for x, y in zip(offsets, offsets[1:]))
    if b.magic == 2:
        if len(recs) != b.records_count:
            found.add((RECORDS, b.position))
        if not increasing or any(o < b.base_offset_field or o > b.last_offset for o in offsets):
            found.add((OFFSETS, b.position))
        return
    if not all(r.valid for r in recs):
        found.add((INNER_CRC, b.position))
    if not increasing:
        found.add((OFFSETS, b.position))


def _reference_check(buf: bytes, deep: bool):
    """verify-crc's findings by way of iter_batches and RecordBatch: (batches, bytes, first and
    last offset, {(kind, position)})."""
    found = set()
    batches, first, prev, end = [], None, None, 0
    try:
        for b in iter_batches(buf):
            batches.append(b)
            end = b.position + b.size
    except CorruptRecordError as e:
        found.add((SIZE, e.position))
    for b in batches:
        if b.magic not in (0, 1, 2):
            found.add((MAGIC, b.position))
            continue
        if b.magic == 2 and b.size < RECORD_BATCH_OVERHEAD:
            found.add((SIZE, b.position))
            continue
        if not b.is_valid():
            found.add((CRC, b.position))
        if b.magic == 2 and b.last_offset_delta < 0:
            found.add((OFFSETS, b.position))
        if deep:
            _reference_deep(b, found)
        if prev is not None and b.base_offset_field <= prev:
            found.add((OFFSETS, b.position))
        first = b.base_offset_field if first is None else first
        prev = b.last_offset
    if end < len(buf) and (SIZE, end) not in found:
        found.add((TRAILING, end))
    return len(batches), end, first, prev, found


def _check(buf: bytes, deep: bool):
    c = check_batches(buf, 0, len(buf), deep=deep)
    return (
        c.batches,
        c.bytes,
        c.first_offset,
        c.last_offset,
        {(f.kind, f.position) for f in c.findings},
    )


@PROPERTY
@given(buf=damaged_chains(), deep=st.booleans())
def test_check_batches_is_iter_batches(buf, deep):
    assert _check(buf, deep) == _reference_check(buf, deep)


def _fixed_chain() -> bytes:
    """One batch of each kind: v2 plain, v2 compressed, v2 empty, v0 entries, a v1 wrapper, and a
    v1 wrapper one of whose inner messages fails its CRC."""
    recs = [SimpleRecord(b"k%d" % i, b"v" * 30, 1000 + i) for i in range(3)]
    inner = bytearray(build_legacy_batch(recs, 0, magic=1))
    inner[12] ^= 0xFF  # the first inner message's CRC
    bad = encode_legacy_message(
        1, int(Compression.GZIP), 1002, None, compress(Compression.GZIP, bytes(inner), 1)
    )
    return b"".join(
        [
            build_v2_batch(recs, 0),
            build_v2_batch(recs, 3, compression=Compression.LZ4),
            build_v2_batch([], 6),
            build_legacy_batch(recs, 7, magic=0),
            build_legacy_batch(recs, 10, magic=1, compression=Compression.GZIP),
            struct.pack(">qi", 15, len(bad)) + bad,
        ]
    )


def test_check_batches_is_iter_batches_for_every_header_field_at_its_edges():
    chain = _fixed_chain()
    _, _, _, _, found = _reference_check(chain, True)
    assert {k for k, _ in found} == {INNER_CRC}
    n = 0
    for b in iter_batches(chain):
        for at, width in _FIELDS.values():
            for value in _VALUES + [b.last_offset_delta - 1, b.last_offset_delta + 1]:
                buf = bytearray(chain)
                buf[b.position + at : b.position + at + width] = (
                    value.to_bytes(width, "big", signed=True)
                    if -(1 << (8 * width - 1)) <= value < 1 << (8 * width - 1)
                    else b"\x7f" * width
                )
                for fix in (False, True):
                    if fix and b.magic == 2:
                        whole = slice(b.position, b.position + b.size)
                        buf[whole] = set_v2_crc(bytearray(buf[whole]))
                    for deep in (False, True):
                        assert _check(bytes(buf), deep) == _reference_check(bytes(buf), deep), (
                            b.position,
                            at,
                            value,
                        )
                        n += 1
    assert n > 1000


def test_every_record_scanner_gives_up_where_the_reference_fails():
    """A record whose length says two bytes more than it holds: each record scanner gives up."""
    raw = bytearray(
        build_v2_batch([SimpleRecord(b"k%d" % i, b"v" * 10, 1000 + i) for i in range(3)], 0)
    )
    raw[RECORD_BATCH_OVERHEAD] += 2  # the first record's 1-byte length varint, zigzag + 1
    b = _batch(set_v2_crc(raw))
    with pytest.raises(KafkalogError):
        b.records()
    for scan in (
        lambda: batch_text(b, -1, [], True, True),
        lambda: _keys(b),
        lambda: _keys_into(b, 0),
        lambda: _spans(b),
    ):
        with pytest.raises((Declined, IndexError)):
            scan()


# ------------------------------------------------------------------ deep record checks
def _reference_ok(b: RecordBatch) -> bool:
    try:
        offsets = [r.offset for r in b.records()]
    except Exception:
        return False
    return all(b.base_offset_field <= o <= b.last_offset for o in offsets) and all(
        x < y for x, y in zip(offsets, offsets[1:])
    )


@PROPERTY
@given(raw=v2_batches())
def test_v2_records_ok_takes_every_well_formed_batch(raw):
    assert v2_records_ok(_batch(raw)) is True


@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE, Compression.GZIP]),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    field=st.sampled_from([None, 23, 57]),
)
def test_v2_records_ok_never_passes_what_the_reference_rejects(raw, at, xor, field):
    b = bytearray(raw)
    if field is None:  # a byte of the records (of the compressed stream, for gzip)
        b[RECORD_BATCH_OVERHEAD + at % max(1, len(raw) - RECORD_BATCH_OVERHEAD)] ^= xor
    else:  # lastOffsetDelta or the record count
        b[field + 3] ^= xor & 3
    batch = _batch(set_v2_crc(b))
    try:
        ok = v2_records_ok(batch)
    except Exception:
        ok = False
    if ok:
        assert _reference_ok(batch)


def test_a_negative_key_length_other_than_minus_one_is_no_key():
    """Kafka's DefaultRecord.readFrom takes any keySize < 0 as a null key; the scanners used to
    take only -1 so, and read a length of -54 as an empty key (a case hypothesis found)."""
    raw = bytes.fromhex(
        "000000000000000100000039ffffffff028266b33f"
        + "00" * 22
        + "ff" * 14
        + "000000010e000000026b0100"
    )
    b = _damaged(raw, 2, 128)
    assert _reference_keys(b) == [] and _keys(b) == []
    assert _keys_into(b, 0) == _reference_keys_into(b, 0)
