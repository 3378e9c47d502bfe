"""The JSON Lines record fast path (batch_json, formats/byte_loops.py, with render.jsonl's layout) writes
exactly what the general path (Record objects, render.jsonl.record_object, json) writes: the same
bytes, for every payload encoding, and the same error at the same point; big files rendered by
worker processes come out the same too."""

from __future__ import annotations

import io
import json
import struct

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.byte_loops import batch_json
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    RECORD_BATCH_OVERHEAD,
    Header,
    SimpleRecord,
    build_v2_batch,
    iter_batches,
    set_v2_crc,
)
from kafkalog_cli.formats.varint import read_varint
from kafkalog_cli.render import jsonl
from kafkalog_cli.render.jsonl import JsonDumper, dumps
from tests.helpers.segments import corrupt_records as _corrupt_records
from tests.helpers.segments import damaged as _damaged
from tests.helpers.segments import segment as _segment
from tests.helpers.strategies import v2_batches

ENCODINGS = ["utf8", "hex", "base64"]
PROPERTY = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _dump(
    tmp_path,
    data: bytes,
    *,
    fast: bool,
    encoding: str = "utf8",
    jobs: int = 1,
    name: str = "00000000000000000000.log",
) -> tuple[bytes, str | None]:
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / f"out-{fast}-{jobs}"
    error = None
    with open(out, "wb") as f:
        d = JsonDumper(f, deep=True, payload_encoding=encoding, jobs=jobs)
        if not fast:
            d.layout = None
        try:
            d.dump(str(path))
        except KafkalogError as e:
            error = str(e)
    return out.read_bytes(), error


def _fast_layout(encoding: str):
    return JsonDumper(io.BytesIO(), deep=True, payload_encoding=encoding).layout


def test_orjson_escapes_every_code_point_as_json_does():
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for i in range(0, len(chars), 4096):
        text = "".join(chars[i : i + 4096])
        assert orjson.dumps(text) == dumps(text).encode()
    for c in chars[:0x800] + ["\u2028", "\u2029", "\ufdd0", "\U0001f600"]:
        assert orjson.dumps(c) == dumps(c).encode()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_fast_path_matches_the_general_path_on_every_codec(tmp_path, encoding):
    data = _segment()
    fast = _dump(tmp_path, data, fast=True, encoding=encoding)
    assert fast == _dump(tmp_path, data, fast=False, encoding=encoding)
    assert fast[1] is None
    objs = [json.loads(line) for line in fast[0].splitlines()]
    assert any(o.get("headers") for o in objs) and any(o.get("control") for o in objs)
    assert any(o.get("crc") for o in objs if o["kind"] == "record")  # legacy records, general path


def test_the_fast_path_takes_every_well_formed_v2_batch():
    data = _segment()
    for encoding in ENCODINGS:
        layout = _fast_layout(encoding)
        n = 0
        for b in iter_batches(data):
            if b.magic == 2 and not b.is_control:
                batch_json(b, layout)  # raises if it would fall back
                n += 1
        assert n > 20


def test_payloads_the_column_encoding_cannot_take_go_one_by_one(tmp_path):
    """Invalid UTF-8 (Java's replacements), a DEL (the column separator), a NUL, a lone
    surrogate's encoding, nulls among strings, in one batch."""
    values = [
        b"plain",
        b"\x7f inside",
        b"bad \xff utf-8",
        None,
        b"\xed\xa0\x80",
        b'\x00\x1f"\\',
        b"",
        "caf\u00e9 \U0001f600".encode(),
    ]
    recs = [
        SimpleRecord(
            key=None if i % 3 == 0 else v,
            value=v,
            timestamp=1000 + i,
            headers=(Header("h\x7f", v),) if i % 2 else (),
        )
        for i, v in enumerate(values)
    ]
    data = build_v2_batch(recs, 0) + build_v2_batch(recs[:1], 8) + build_v2_batch(recs[1:2], 9)
    for encoding in ENCODINGS:
        layout = _fast_layout(encoding)
        for b in iter_batches(data):
            batch_json(b, layout)
        fast = _dump(tmp_path, data, fast=True, encoding=encoding)
        assert fast == _dump(tmp_path, data, fast=False, encoding=encoding)


@PROPERTY
@given(batch=v2_batches(), encoding=st.sampled_from(ENCODINGS))
def test_fast_path_matches_the_general_path_at_varint_edges(tmp_path, batch, encoding):
    fast = _dump(tmp_path, batch, fast=True, encoding=encoding)
    assert fast == _dump(tmp_path, batch, fast=False, encoding=encoding)
    assert fast[1] is None
    (b,) = iter_batches(batch)
    batch_json(b, _fast_layout(encoding))  # the fast path took it: no fallback hid a difference


# Payload bytes that mean something to the joined path: %-format syntax, its DEL separator,
# what JSON escapes, multi-byte and invalid UTF-8
_TRICKY = st.lists(
    st.sampled_from(
        [
            b"%",
            b"%b",
            b"%d",
            b"%%",
            b"%%%%b",
            b"\x7f",
            b"\x00",
            b"\n",
            b'"',
            b"\\",
            b"plain",
            "\u00e9\U0001f600".encode(),
            b"\xff",
            b"\xed\xa0\x80",
        ]
    ),
    max_size=6,
).map(b"".join)


_HEADER_KEYS = st.sampled_from(
    ["h", "", "%", "%b", "%%d", "\x7f", "traceparent", "caf\u00e9", '"\\\n']
)
_HEADERS = st.lists(st.tuples(_HEADER_KEYS, st.none() | _TRICKY), max_size=3)


@PROPERTY
@given(
    records=st.lists(st.tuples(_TRICKY, _TRICKY, _HEADERS), min_size=1, max_size=8),
    producer=st.booleans(),
)
def test_the_joined_payloads_path_writes_what_the_general_path_writes(
    tmp_path, monkeypatch, records, producer
):
    """Batches without null keys or values have every payload (header keys and values too)
    escaped in one call and the lines made in two %-passes (_scan_py._joined_lines): any payload
    (%-syntax, empty, DEL, invalid UTF-8), any headers (none, several, null values) come out
    as the general path writes them, and the path is taken whenever no payload holds a DEL or
    invalid UTF-8. (The pure core's way: the compiled one writes each line itself, and
    tests/formats/test_core.py holds it equal to this.)"""
    from kafkalog_cli.formats import _scan_py

    taken = []
    real = _scan_py._joined_lines
    monkeypatch.setattr(_scan_py, "_joined_lines", lambda *a: taken.append(real(*a)) or taken[-1])
    monkeypatch.setattr(jsonl, "batch_json", _scan_py.batch_json)
    monkeypatch.setattr(jsonl, "lines_of_batches", _scan_py.lines_of_batches)
    recs = [
        SimpleRecord(
            key=k, value=v, timestamp=1000 + i, headers=tuple(Header(hk, hv) for hk, hv in hs)
        )
        for i, (k, v, hs) in enumerate(records)
    ]
    batch = build_v2_batch(
        recs,
        5,
        producer_id=7 if producer else -1,
        producer_epoch=0 if producer else -1,
        base_sequence=3 if producer else -1,
    )
    fast = _dump(tmp_path, batch, fast=True)
    assert fast == _dump(tmp_path, batch, fast=False)
    assert fast[1] is None
    payloads = [
        p
        for k, v, hs in records
        for p in (k, v, *(hk.encode() for hk, _ in hs), *(hv for _, hv in hs))
    ]
    plain = all(b"\x7f" not in p and _utf8(p) for p in payloads if p is not None)
    assert (taken[-1] is not None) == plain


def _utf8(b: bytes) -> bool:
    try:
        b.decode()
    except UnicodeDecodeError:
        return False
    return True


@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE]),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    encoding=st.sampled_from(ENCODINGS),
)
def test_record_lines_of_damaged_records_are_the_general_paths_or_none(raw, at, xor, encoding):
    """One byte of the records changed (the CRC made right again): the fast path gives up, or
    writes exactly the general path's lines, which then decodes the records too."""
    b = _damaged(raw, at, xor)
    try:
        fast = batch_json(b, _fast_layout(encoding))
    except Exception:
        return  # the caller falls back to the general path
    enc, template = jsonl.payload_encoder(encoding), jsonl.record_template(b)
    assert fast == b"\n".join(
        dumps(jsonl.record_object(r, b, enc, template)).encode("utf-8", "surrogatepass")
        for r in b.records()
    )


def test_a_record_longer_than_its_fields_is_left_to_the_general_path():
    """The first record's length covers the second record too, and the count says one record:
    the reference rejects it ("Invalid record size"), so the fast path must give up."""
    raw = bytearray(
        build_v2_batch([SimpleRecord(b"k%d" % i, b"v" * 10, 1000 + i) for i in range(2)], 0)
    )
    first, _ = read_varint(raw, RECORD_BATCH_OVERHEAD)
    second_at = RECORD_BATCH_OVERHEAD + 1 + first
    rest = len(raw) - second_at
    raw[RECORD_BATCH_OVERHEAD] = (first + rest) * 2  # one-byte zigzag varint, still
    struct.pack_into(">i", raw, 57, 1)  # records count
    (b,) = iter_batches(bytes(set_v2_crc(raw)))
    with pytest.raises(KafkalogError):
        b.records()
    with pytest.raises(Exception):  # noqa: B017 - the fast path's own error; any one is a refusal
        batch_json(b, _fast_layout("utf8"))


def test_a_malformed_batch_fails_at_the_same_point(tmp_path):
    recs = [SimpleRecord(key=b"k%d" % i, value=b"v" * 20, timestamp=1000 + i) for i in range(10)]
    bad = _corrupt_records(b"".join(build_v2_batch(recs, 10 * i) for i in range(5)))
    fast = _dump(tmp_path, bad, fast=True)
    assert fast == _dump(tmp_path, bad, fast=False)
    assert fast[1] is not None and fast[0].count(b'"kind": "record"') == 10


def test_a_record_line_is_a_record_object_of_the_schema():
    (b,) = iter_batches(
        build_v2_batch(
            [SimpleRecord(b"k", b"v", 5)],
            7,
            producer_id=3,
            producer_epoch=1,
            base_sequence=2**31 - 1,
            is_transactional=True,
        )
    )
    (line,) = batch_json(b, _fast_layout("utf8")).splitlines()
    assert json.loads(line) == {
        "kind": "record",
        "offset": 7,
        "timestamp": 5,
        "timestamp_type": "CreateTime",
        "key": "k",
        "value": "v",
        "headers": [],
        "sequence": 2**31 - 1,
        "base_offset": 7,
        "producer_id": 3,
        "producer_epoch": 1,
        "is_transactional": True,
        "is_control": False,
    }
    assert jsonl.record_line(b, 0).count(b"%") == 4  # offset, timestamp, key, value


# ------------------------------------------------------------------ worker processes
def _big(damage_at: float | None = None, tail: bytes = b"") -> bytes:
    """Just over 32 MiB of 100-record batches, with gaps in the offsets."""
    recs = [
        SimpleRecord(
            key=b"k%d" % i, value=b"value-%03d\x01\xc3\xa9" % i * 8, timestamp=1_700_000_000_000 + i
        )
        for i in range(100)
    ]
    batch = build_v2_batch(recs, 0)
    n = (33 << 20) // len(batch)
    out = bytearray(batch * n)
    for i in range(n):
        struct.pack_into(">q", out, i * len(batch), i * 100 + i // 997)
    if damage_at is not None:
        pos = int(n * damage_at) * len(batch)
        b = bytearray(out[pos : pos + len(batch)])
        b[61] += 2  # the first record's length
        out[pos : pos + len(batch)] = set_v2_crc(b)
    return bytes(out) + tail


@pytest.mark.slow
def test_workers_write_what_one_process_writes(tmp_path):
    data = _big(tail=struct.pack(">qi", 10**9, 500) + b"\0" * 28)
    par = _dump(tmp_path, data, fast=True, jobs=2)
    assert par == _dump(tmp_path, data, fast=True, jobs=1)
    assert par[0].endswith(
        b'{"kind": "trailing_bytes", "file": "%s", "position": %d, "size": 40}\n'
        % (str(tmp_path / "00000000000000000000.log").encode(), len(data) - 40)
    )


@pytest.mark.slow
def test_workers_stop_at_a_broken_batch_as_one_process_does(tmp_path, monkeypatch):
    ranges = []
    real = jsonl.render_ranges

    def spy(buf, rs, *a):
        ranges.extend(rs)
        return real(buf, rs, *a)

    monkeypatch.setattr(jsonl, "render_ranges", spy)
    data = _big(damage_at=0.7)
    par = _dump(tmp_path, data, fast=True, jobs=2)
    assert len(ranges) > 4
    assert par == _dump(tmp_path, data, fast=True, jobs=1)
    assert par[1] is not None and "Invalid record size" in par[1]


@PROPERTY
@given(
    batch=v2_batches(with_headers=False),
    attributes=st.integers(0, 0xFFFF).filter(lambda a: a & 7 <= 4),
    crc=st.sampled_from([None, 0, 2**32 - 1]),
    leader_epoch=st.integers(-1, 2**31 - 1),
    file=st.text(min_size=1, max_size=12),
)
def test_a_batch_line_is_the_batch_object_encoded(batch, attributes, crc, leader_epoch, file):
    """render.jsonl.batch_line, the %-format every v2 batch line of a JSON dump takes, writes
    exactly dumps(batch_object): every attribute bit (delete horizon, control, transactional,
    LogAppendTime, codec), a bad CRC, any file name (quotes, %, non-ASCII)."""
    data = bytearray(batch)
    struct.pack_into(">H", data, 21, attributes)
    struct.pack_into(">i", data, 12, leader_epoch)
    if crc is None:
        set_v2_crc(data)
    else:
        struct.pack_into(">I", data, 17, crc)
    b = next(iter_batches(bytes(data), 0))
    # twice: the second line comes from the cached format
    for _ in range(2):
        assert jsonl.batch_line(b, file) == dumps(jsonl.batch_object(b, file)).encode(
            "utf-8", "surrogatepass"
        )
