"""Hypothesis strategies: v2 batches whose fields sit at the edges of the varint widths, chains of
them damaged, and dump-log searches; shared by the scanner, fast path and search tests."""

from __future__ import annotations

import re

from hypothesis import strategies as st

from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    RECORD_BATCH_OVERHEAD,
    Header,
    SimpleRecord,
    TimestampType,
    build_legacy_batch,
    build_v2_batch,
    iter_batches,
    set_v2_crc,
)
from kafkalog_cli.storage.selection import Filters

CODECS = list(Compression)
# zigzag varints: 0..63 take one byte, 64..8191 two, 8192.. three (and 1 << 20 four)
EDGE_SIZES = st.sampled_from([0, 1, 63, 64, 65, 127, 128, 8191, 8192, 8200])
EDGE_DELTAS = st.sampled_from([0, 1, 63, 64, 8191, 8192, 1 << 20])
SMALL_SIZES = st.sampled_from([0, 1, 63, 64, 127, 128])


def _payload(n: int) -> bytes:
    # multi-byte UTF-8 and, at odd sizes, one invalid byte (Java's replacement rules)
    return b"\xc3\xa9" * (n // 2) + (b"\xff" if n % 2 else b"")


headers = st.lists(
    st.builds(Header, SMALL_SIZES.map(lambda n: "h" * n), st.none() | SMALL_SIZES.map(_payload)),
    max_size=3,
) | st.just([Header(f"k{i}", None if i % 2 else b"v") for i in range(64)])  # a 2-byte count


@st.composite
def v2_batches(draw, *, with_headers: bool = True, codecs=CODECS) -> bytes:
    """One v2 batch: 1 to 12 records; null and edge-sized keys, values and header fields; edge
    timestamp and offset deltas; every codec; both timestamp types; producer ids with sequences
    that wrap."""
    n = draw(st.integers(1, 12))
    base_ts = draw(st.integers(0, 2**41))
    off = draw(st.integers(0, 2**40))
    recs = []
    for _ in range(n):
        key = draw(st.none() | EDGE_SIZES.map(lambda k: b"k" * k))
        value = draw(st.none() | EDGE_SIZES.map(_payload))
        ts = base_ts + draw(EDGE_DELTAS) * draw(st.sampled_from([1, -1]))
        hs = draw(headers) if with_headers and draw(st.booleans()) else ()
        r = SimpleRecord(key=key, value=value, timestamp=ts, headers=hs)
        off += draw(EDGE_DELTAS.filter(lambda d: d < 1 << 20)) + 1
        r.offset = off
        recs.append(r)
    producer = draw(st.sampled_from([None, 0, 2**31 - 3]))
    log_append = draw(st.booleans())
    return build_v2_batch(
        recs,
        recs[0].offset,
        compression=draw(st.sampled_from(codecs)),
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=base_ts + 5 if log_append else None,
        producer_id=-1 if producer is None else 42,
        producer_epoch=-1 if producer is None else 3,
        base_sequence=-1 if producer is None else producer,
        is_transactional=producer is not None,
    )


@st.composite
def legacy_batches(draw, base_offset: int) -> bytes:
    """Legacy entries (v0 or v1, plain or a compressed wrapper) of 1 to 4 records."""
    magic = draw(st.sampled_from([0, 1]))
    recs = [
        SimpleRecord(
            key=draw(st.none() | st.binary(max_size=8)),
            value=draw(st.none() | st.binary(max_size=80)),
            timestamp=1_700_000_000_000 + i,
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    codec = draw(st.sampled_from([c for c in CODECS if c != Compression.ZSTD]))
    return build_legacy_batch(recs, base_offset, magic=magic, compression=codec)


@st.composite
def batch_chains(draw) -> bytes:
    """1 to 6 batches of any format, offsets mostly increasing (sometimes not)."""
    parts = []
    off = 0
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 3)) == 0:
            parts.append(draw(legacy_batches(off)))
        else:
            recs = [
                SimpleRecord(
                    key=b"k%d" % i, value=b"v" * draw(st.integers(0, 70)), timestamp=1000 + i
                )
                for i in range(draw(st.integers(0, 5)))
            ]
            parts.append(build_v2_batch(recs, off, compression=draw(st.sampled_from(CODECS))))
        off = max(0, off + draw(st.sampled_from([10, 10, 10, -30])))
    return b"".join(parts)


# (offset within a batch, width) of the header fields a damaged chain gets wrong values in
FIELDS = {
    "size": (8, 4),
    "magic": (16, 1),
    "crc": (17, 4),
    "last_offset_delta": (23, 4),
    "count": (57, 4),
}

VALUES = [-1, 0, 1, 13, 14, 48, 49, 2**31 - 1]


@st.composite
def damaged_chains(draw) -> bytes:
    """A chain of batches, then: a byte changed anywhere, a header field set to an edge value
    (the CRC made right again or not), or the end cut off; or nothing."""
    chain = draw(batch_chains())
    buf = bytearray(chain)
    how = draw(st.sampled_from(["none", "byte", "field", "cut"]))
    if how == "byte":
        buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
    elif how == "field":
        b = draw(st.sampled_from(list(iter_batches(chain))))
        at, width = FIELDS[draw(st.sampled_from(sorted(FIELDS)))]
        value = draw(st.sampled_from(VALUES + [b.last_offset_delta - 1, b.last_offset_delta + 1]))
        field = (
            (value % 256).to_bytes(1, "big") if width == 1 else (value % 2**32).to_bytes(4, "big")
        )
        buf[b.position + at : b.position + at + width] = field
        if b.magic == 2 and b.size >= RECORD_BATCH_OVERHEAD and at != 17 and draw(st.booleans()):
            buf[b.position : b.position + b.size] = set_v2_crc(
                bytearray(buf[b.position : b.position + b.size])
            )
    elif how == "cut":
        buf = buf[: draw(st.integers(0, len(buf)))]
    return bytes(buf)


# keys in the strategies are b"k" * n or null, values runs of "é" (c3 a9), odd ones ending in ff
KEYS = st.none() | st.sampled_from([b"", b"k", b"kk", b"k" * 63, b"k" * 64, b"k" * 8192, b"zz"])

PREFIXES = st.none() | st.sampled_from([b"", b"k", b"k" * 64, b"z"])

KEY_REGEXES = st.none() | st.sampled_from(
    [rb"", rb"^k{1,2}$", rb"k{64}", rb"^$", rb"x", rb"(?<=k)k", rb"\Ak"]
)

VALUE_REGEXES = st.none() | st.sampled_from(
    [
        rb"",
        rb"\xff",
        rb"\xff$",
        rb"^\xc3",
        rb"^$",
        rb"(\xc3\xa9){32}",
        rb"\xa9\xc3\xa9\xff",
        rb"nothing",
        rb"^(?!\xc3)",
    ]
)


@st.composite
def searches(draw) -> Filters:
    f = Filters(
        key=draw(KEYS),
        key_prefix=draw(PREFIXES),
        key_regex=draw(KEY_REGEXES.map(_compiled)),
        value_regex=draw(VALUE_REGEXES.map(_compiled)),
    )
    return f if f.search is not None else Filters(value_regex=re.compile(rb"\xa9"))


def _compiled(pattern: bytes | None):
    return None if pattern is None else re.compile(pattern)
