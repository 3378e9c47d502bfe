"""search_v2 (formats/byte_loops.py: dump-log's search) against the reference: on well-formed batches the
records it finds are exactly those of RecordBatch.records() that storage.selection.Filters lets
through (and it never gives up there); on damaged ones it gives up, or agrees, or (a CRC-valid
batch whose bytes hold no possible match) finds nothing."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.formats.byte_loops import search_v2
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.record_search import RecordSearch
from kafkalog_cli.formats.records import (
    SimpleRecord,
    build_v2_batch,
    iter_batches,
)
from kafkalog_cli.formats.v2_region import records_region
from kafkalog_cli.storage.selection import Filters
from tests.helpers.segments import damaged_batch
from tests.helpers.strategies import searches, v2_batches

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _batch(raw: bytes):
    (b,) = iter_batches(raw)
    return b


def _reference(b, f: Filters) -> list:
    return [r for r in b.records() if f.record_matches(r)]


@PROPERTY
@given(raw=v2_batches(), f=searches())
def test_search_finds_what_filtering_the_general_paths_records_finds(raw, f):
    b = _batch(raw)
    indices: list[int] = []
    found = search_v2(b, f.search, indices)
    assert found == _reference(b, f)
    assert [b.records()[i] for i in indices] == found  # each found record's place in the batch


@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE]),
    f=searches(),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    crc=st.booleans(),
)
def test_on_damaged_records_search_gives_up_agrees_or_rules_the_batch_out(raw, f, at, xor, crc):
    b = damaged_batch(raw, at, xor, crc)
    try:
        found = search_v2(b, f.search)
    except Exception:
        return  # the caller decodes the batch with records()
    try:
        reference = _reference(b, f)
    except Exception:
        # only a batch the broker wrote (its CRC holds) and that holds no possible match is left
        # unwalked: its damage cannot hide a match
        assert found == [] and b.is_valid() and f.search.rules_out(*records_region(b))
        return
    assert found == reference


def test_an_anchored_regex_never_rules_a_batch_out():
    # "^val" matches each value alone, never the batch's bytes (a value does not start them)
    raw = build_v2_batch([SimpleRecord(b"k%d" % i, b"value-%d" % i, 1000 + i) for i in range(5)], 0)
    b = _batch(raw)
    for pattern in (
        rb"^val",
        rb"\Aval",
        rb"-3$",
        rb"\bvalue-4\b",
        rb"(?<!x)value-2",
        rb"(?>value-1)",
    ):
        search = RecordSearch(value_regex=re.compile(pattern))
        assert not search.rules_out(*records_region(b)), pattern
        assert search_v2(b, search), pattern
    assert RecordSearch(value_regex=re.compile(rb"value-9")).rules_out(*records_region(b))
    assert RecordSearch(key=b"k9").rules_out(*records_region(b))
    assert not RecordSearch(key=b"").rules_out(*records_region(b))


def test_a_prefix_longer_than_the_key_never_reads_past_it():
    raw = build_v2_batch([SimpleRecord(b"ab", b"cd", 1000), SimpleRecord(b"abc", b"d", 1001)], 0)
    b = _batch(raw)
    # the bytes after key "ab" are its value's length and "cd": a prefix must not run into them
    assert [r.offset for r in search_v2(b, RecordSearch(key_prefix=b"abc"))] == [1]
    assert [r.offset for r in search_v2(b, RecordSearch(key=b"ab", key_prefix=b"abc"))] == []
