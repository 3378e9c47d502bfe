"""Hypothesis strategies for v2 batches whose fields sit at the edges of the varint widths, shared
by the scanner tests (tests/formats/test_scan.py) and the dump-log fast path tests."""
from __future__ import annotations

from hypothesis import strategies as st

from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    Header, SimpleRecord, TimestampType, build_legacy_batch, build_v2_batch,
)

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
) | st.just([Header("k%d" % i, None if i % 2 else b"v") for i in range(64)])   # a 2-byte count


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
        recs, recs[0].offset, compression=draw(st.sampled_from(codecs)),
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=base_ts + 5 if log_append else None,
        producer_id=-1 if producer is None else 42, producer_epoch=-1 if producer is None else 3,
        base_sequence=-1 if producer is None else producer, is_transactional=producer is not None)


@st.composite
def legacy_batches(draw, base_offset: int) -> bytes:
    """Legacy entries (v0 or v1, plain or a compressed wrapper) of 1 to 4 records."""
    magic = draw(st.sampled_from([0, 1]))
    recs = [SimpleRecord(key=draw(st.none() | st.binary(max_size=8)), value=draw(st.none() | st.binary(max_size=80)),
                         timestamp=1_700_000_000_000 + i) for i in range(draw(st.integers(1, 4)))]
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
            recs = [SimpleRecord(key=b"k%d" % i, value=b"v" * draw(st.integers(0, 70)), timestamp=1000 + i)
                    for i in range(draw(st.integers(0, 5)))]
            parts.append(build_v2_batch(recs, off, compression=draw(st.sampled_from(CODECS))))
        off = max(0, off + draw(st.sampled_from([10, 10, 10, -30])))
    return b"".join(parts)
