"""ops.erase's scan: a byte search for the selection's keys, key prefixes or header names over the
whole mapped segment, which passes by undecoded the uncompressed batches that cannot hold a
match. Nothing it passes by may hold a record the selection matches: these tests put the
searched bytes where a search can be fooled (across record and batch boundaries, in varints, in
batch headers, in values, in another record's header, in compressed batches, in v0/v1 messages)
and hold the scan to a decode of every record."""

from __future__ import annotations

import mmap
import re
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import CorruptRecordError
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    Header,
    SimpleRecord,
    build_legacy_batch,
    build_v2_batch,
    iter_batches,
)
from kafkalog_cli.ops import erase
from kafkalog_cli.ops.cleaner import iter_chunk_batches
from kafkalog_cli.storage.fsops import FsOps
from tests.helpers.compaction import write_segment

T0 = 1_700_000_000_000
CODECS = list(Compression)
LEGACY_CODECS = [c for c in CODECS if c != Compression.ZSTD]


def _plan_offsets(tmp_path: Path, batches: list[bytes], **selection) -> list[int]:
    """The offsets `erase --dry-run` would erase from one segment of these batches."""
    log_dir = tmp_path / "logs"
    part = log_dir / "t-0"
    write_segment(part, 0, batches)
    opts = erase.EraseOptions(topic="t", selection=erase.Selection(**selection))
    summary = erase.plan(log_dir, [part], opts).partitions["t-0"]
    return [o for a, b in summary["erased_offsets"] for o in range(a, b + 1)]


def _decoded(buf: bytes, sel: erase.Selection) -> list[int]:
    """The reference: every record of every batch decoded and tested."""
    return [
        r.offset
        for b in iter_batches(buf)
        if not b.is_control
        for r in b.records()
        if sel.matches(
            r.offset, r.key, r.value, [(h.key.encode("utf-8"), h.value) for h in r.headers]
        )
    ]


def _rec(key, value=b"v", headers=(), ts=T0) -> SimpleRecord:
    return SimpleRecord(key, value, ts, headers)


# ------------------------------------------------------------------ against a decode of everything
LETTERS = st.sampled_from([b"a", b"b", b"\x00", b"\x02"])  # \x00, \x02: varints of 0 and 1
SHORT = st.lists(LETTERS, max_size=6).map(b"".join)
SHORT_ABC = st.lists(st.sampled_from([b"a", b"b", b"c"]), min_size=1, max_size=4).map(b"".join)


@st.composite
def _batch(draw, base: int, codecs=CODECS) -> bytes:
    """A v2 batch of any codec, or a v0/v1 message or wrapper, of records whose keys, values
    and header names are short strings over few letters: the searched bytes turn up across
    fields, records and batches."""
    n = draw(st.integers(1, 5))
    recs = [
        _rec(
            draw(st.none() | SHORT),
            draw(st.none() | SHORT),
            tuple(
                Header(name.decode("latin-1"), draw(st.none() | SHORT))
                for name in draw(st.lists(st.sampled_from([b"a", b"ab", b"b\x00"]), max_size=2))
            ),
            T0 + i,
        )
        for i in range(n)
    ]
    kind = draw(st.sampled_from(["v2", "v2", "control", "v0", "v1"]))
    pid = draw(st.sampled_from([-1, 5, 6]))  # no producer, or one of two
    producer = {} if pid < 0 else {"producer_id": pid, "producer_epoch": 0, "base_sequence": 0}
    if kind == "control":  # a transaction's marker (it ends the producer's open transaction)
        marker = _rec(struct.pack(">hh", 0, draw(st.integers(0, 1))), struct.pack(">hi", 0, 0))
        return build_v2_batch([marker], base, is_transactional=True, is_control=True, **producer)
    if kind == "v2":
        return build_v2_batch(
            recs,
            base,
            compression=draw(st.sampled_from(codecs)),
            is_transactional=pid >= 0 and draw(st.booleans()),
            **producer,
        )
    legacy = [SimpleRecord(r.key, r.value, r.timestamp) for r in recs]
    codec = draw(st.sampled_from(LEGACY_CODECS))
    return build_legacy_batch(legacy, base, magic=int(kind[1]), compression=codec)


@st.composite
def _log(draw, codecs=CODECS, most: int = 6) -> bytes:
    out, base = [], 0
    for _ in range(draw(st.integers(1, most))):
        b = draw(_batch(base, codecs))
        out.append(b)
        base = max(b_.last_offset for b_ in iter_batches(b)) + 1
    return b"".join(out)


SELECTIONS = st.one_of(
    st.builds(lambda k: erase.Selection(keys=k), st.lists(SHORT, min_size=1, max_size=2)),
    st.builds(lambda p: erase.Selection(key_prefixes=p), st.lists(SHORT, min_size=1, max_size=2)),
    st.builds(
        lambda n, v: erase.Selection(headers=((n, v),)),
        st.sampled_from([b"a", b"ab", b"b\x00", b"b"]),
        st.none() | SHORT,
    ),
    st.builds(
        lambda k, n: erase.Selection(keys=(k,), headers=((n, None),)),
        SHORT,
        st.sampled_from([b"a", b"ab"]),
    ),
    st.builds(lambda k: erase.Selection(key_regexes=(re.compile(k),)), SHORT.map(re.escape)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=_log(), sel=SELECTIONS, window=st.sampled_from([1, 7, 64, 1 << 20]))
def test_the_scan_finds_every_record_a_decode_of_every_batch_finds(
    tmp_path_factory, log, sel, window
):
    """Over the file's map, as the scan reads a segment, and over bytes; the search a window at
    a time of any size (a segment is searched 64 MiB ahead of the walk at most). The batches an
    empty rewrite keeps (each producer's last data batch, its open transaction's first, the
    log's last) are those a walk noting every decoded batch finds, though most are passed by
    undecoded."""
    path = tmp_path_factory.mktemp("seg") / "00000000000000000000.log"
    path.write_bytes(log)
    want = _decoded(log, sel)
    kept_batches = _kept_by_a_decode(log, sel)
    kept, erase._WINDOW = erase._WINDOW, window
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            seen = erase.ProducerBatches()
            got = [
                o for _b, hits, _n in erase.matched_batches(m, path, sel, seen) for o, _, _ in hits
            ]
        assert got == want
        assert (seen.retain_empty(), seen.last_batch) == kept_batches
        seen = erase.ProducerBatches()
        got = [
            o for _b, hits, _n in erase.matched_batches(log, path, sel, seen) for o, _, _ in hits
        ]
        assert got == want
        assert (seen.retain_empty(), seen.last_batch) == kept_batches
    finally:
        erase._WINDOW = kept


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    log=_log(codecs=[Compression.NONE] * 3 + [Compression.GZIP], most=12),
    window=st.sampled_from([1, 64, 1 << 20]),
)
def test_batches_passed_by_undecoded_count_for_what_an_empty_rewrite_keeps(log, window):
    """A key found nowhere: every uncompressed v2 batch is passed by in the compiled walk
    (formats.byte_loops.pass_plain_batches), and still each producer's last data batch, its
    open transaction's first batch and the log's last batch are the ones a decode finds."""
    sel = erase.Selection(keys=(b"q",))
    kept, erase._WINDOW = erase._WINDOW, window
    try:
        seen = erase.ProducerBatches()
        assert [
            h for _b, hits, _n in erase.matched_batches(log, Path("x.log"), sel, seen) for h in hits
        ] == []
        assert (seen.retain_empty(), seen.last_batch) == _kept_by_a_decode(log, sel)
    finally:
        erase._WINDOW = kept


def _kept_by_a_decode(buf: bytes, sel: erase.Selection) -> tuple[set[int], tuple]:
    """The reference for what an empty rewrite keeps: every batch decoded and noted."""
    seen = erase.ProducerBatches()
    for b in iter_batches(buf):
        recs = [] if b.is_control else b.records()
        hits = [
            (r.offset, "", r.key)
            for r in recs
            if sel.matches(
                r.offset, r.key, r.value, [(h.key.encode("utf-8"), h.value) for h in r.headers]
            )
        ]
        seen.note(b, hits, len(recs))
    return seen.retain_empty(), seen.last_batch


@settings(max_examples=500, deadline=None)
@given(data=st.data(), window=st.integers(1, 40))
def test_the_search_a_window_at_a_time_says_what_a_search_of_each_range_says(data, window):
    """The scan's search over consecutive ranges (a segment's batches), the window cutting
    anywhere in them: a literal is within a range exactly when bytes.find finds it there."""
    hay = b"".join(data.draw(st.lists(st.sampled_from([b"a", b"b"]), min_size=8, max_size=120)))
    lits = tuple(data.draw(st.lists(SHORT_ABC, min_size=1, max_size=3)))
    cuts = data.draw(st.lists(st.integers(0, len(hay)), min_size=1, max_size=12))
    cuts = sorted({*cuts, 0, len(hay)})
    kept, erase._WINDOW = erase._WINDOW, window
    try:
        found = erase._Occurrences(hay, lits)
        for a, b in zip(cuts, cuts[1:]):
            assert found.within(a, b) == any(hay.find(lit, a, b) >= 0 for lit in lits), (a, b)
            assert all(hay.find(lit, a, found.none_before) < 0 for lit in lits if lit)
    finally:
        erase._WINDOW = kept


# ------------------------------------------------------------------ where a search can be fooled
@pytest.mark.parametrize("codec", CODECS[1:], ids=[c.name for c in CODECS[1:]])
def test_a_key_only_in_a_compressed_batch_is_found(tmp_path, codec):
    key = b"victim" * 8  # the codec writes its repeats as copies: the bytes are not in the file
    batches = [
        build_v2_batch([_rec(b"k%d" % i) for i in range(5)], 0),
        build_v2_batch([_rec(b"k5"), _rec(key), _rec(b"k7")], 5, compression=codec),
        build_v2_batch([_rec(b"k%d" % i) for i in range(8, 12)], 8),
    ]
    assert key not in b"".join(batches)
    assert _plan_offsets(tmp_path, batches, keys=(key,)) == [6]


def test_a_key_whose_first_occurrence_straddles_records_is_found_further_on(tmp_path):
    """The bytes `ab` first occur across two records: the first one's header value ends with
    `a`, the next one's length varint (zigzag 49) is the byte `b`. No key there; the record
    keyed `ab` after them is found."""
    r1 = _rec(b"x", b"v", headers=(Header("h", b"za"),))
    r2 = _rec(b"k2", b"v" * 41)  # a record of 49 bytes
    batch = build_v2_batch([r1, r2, _rec(b"ab")], 0)
    first = batch.find(b"ab")
    assert first < batch.rfind(b"ab") and batch[first - 1 : first + 1] == b"za"
    assert _plan_offsets(tmp_path, [batch], keys=(b"ab",)) == [2]


def test_key_bytes_across_a_batch_boundary_do_not_hide_the_next_batchs_key(tmp_path):
    """The key's bytes first occur from the last byte of one batch (a header value's `Z`) into
    the next batch's base offset (zeros): no record's key, and not within either batch; the next
    batch, which holds the key itself, is still searched."""
    key = b"Z" + b"\x00" * 6
    first = build_v2_batch([_rec(b"k0", b"v", headers=(Header("h", b"Z"),))], 0)
    second = build_v2_batch([_rec(b"k1"), _rec(key)], 1)
    log = first + second
    assert log.find(key) < len(first) < log.find(key) + len(key)
    assert _plan_offsets(tmp_path, [first, second], keys=(key,)) == [2]


def test_a_key_in_a_records_length_varint_and_header_matches_only_the_record_keyed_so(tmp_path):
    """A selection equal to bytes of the batch header (the magic and attributes of every batch),
    of a record's varints and of another record's header name: only the record with that key."""
    key = b"\x02"  # magic 2; zigzag 1
    batches = [
        build_v2_batch([_rec(b"a", headers=(Header("\x02", b"x"),)), _rec(b"b")], 0),
        build_v2_batch([_rec(b"c"), _rec(key), _rec(b"\x02\x02")], 2),
    ]
    assert _plan_offsets(tmp_path, batches, keys=(key,)) == [3]


def test_a_key_prefix_is_searched_as_the_keys_first_bytes(tmp_path):
    batch = build_v2_batch(
        [_rec(b"user-1"), _rec(b"x-user-2"), _rec(b"user-3", headers=(Header("user-", b"h"),))], 0
    )
    assert _plan_offsets(tmp_path, [batch], key_prefixes=(b"user-",)) == [0, 2]


def test_a_header_name_is_searched_and_its_value_tested(tmp_path):
    batches = [
        build_v2_batch([_rec(b"k0"), _rec(b"trace")], 0),  # the name as a key: no header
        build_v2_batch(
            [
                _rec(b"k2", headers=(Header("trace", b"1"),)),
                _rec(b"k3", headers=(Header("trace", b"2"),)),
                _rec(b"k4", b"trace"),  # the name as a value
            ],
            2,
        ),
    ]
    assert _plan_offsets(tmp_path, batches, headers=((b"trace", None),)) == [2, 3]
    assert _plan_offsets(tmp_path / "b", batches, headers=((b"trace", b"2"),)) == [3]


def test_a_key_found_only_in_values_erases_nothing(tmp_path):
    batches = [
        build_v2_batch([_rec(b"k0", b"victim"), _rec(b"k1", b"a victim here")], 0),
        build_v2_batch([_rec(None, b"victim")], 2),
        build_legacy_batch([SimpleRecord(b"k3", b"victim", T0)], 3, magic=1),
    ]
    assert _plan_offsets(tmp_path, batches, keys=(b"victim",)) == []
    assert _plan_offsets(tmp_path / "b", batches, key_prefixes=(b"vic",)) == []


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=[c.name for c in LEGACY_CODECS])
def test_v0_v1_messages_and_wrappers_are_searched(tmp_path, magic, codec):
    recs = [SimpleRecord(b"k%d" % i, b"v", T0 + i) for i in range(3)]
    victim = [SimpleRecord(b"victim", b"v", T0 + 3)]
    batches = [
        build_legacy_batch(recs, 0, magic=magic, compression=codec),
        build_legacy_batch(victim, 3, magic=magic, compression=codec),
        build_legacy_batch(recs, 4, magic=magic, compression=codec),
    ]
    assert _plan_offsets(tmp_path, batches, keys=(b"victim",)) == [3]


def test_a_regex_selection_decodes_every_batch(tmp_path):
    batch = build_v2_batch([_rec(b"user-1"), _rec(b"admin-2")], 0)
    sel = {"key_regexes": (re.compile(rb"^a.*\d$"),)}
    assert _plan_offsets(tmp_path, [batch], **sel) == [1]


def test_every_copy_holding_the_key_is_erased_through_the_search(tmp_path):
    """The real run after the scan: the key's records in one segment of three go, the other
    segments are not rewritten."""
    log_dir = tmp_path / "logs"
    part = log_dir / "t-0"
    for base in (0, 10, 20):
        recs = [_rec(b"k%d" % (base + i)) for i in range(10)]
        if base == 10:
            recs[4] = _rec(b"victim")
        write_segment(part, base, [build_v2_batch(recs, base)])
    before = {p.name: p.stat().st_ino for p in part.glob("*.log")}
    opts = erase.EraseOptions(topic="t", selection=erase.Selection(keys=(b"victim",)))
    p, _ = erase.run(log_dir, [part], opts, FsOps(log_dir))
    assert p.partitions["t-0"]["erased_offsets"] == [[14, 14]]
    after = {p.name: p.stat().st_ino for p in part.glob("*.log")}
    assert [n for n in before if before[n] != after[n]] == ["00000000000000000010.log"]


# ------------------------------------------------------------------ a segment's end
@pytest.mark.parametrize("tail", [5, 11, 17])
def test_bytes_after_the_last_batch_too_few_for_one_are_corrupt_input(tmp_path, tail):
    """A segment ending in a few bytes that make no batch (here a length field of 2): the scan
    and the rewrite's chunked reads say so at that position, and neither hangs."""
    batch = build_v2_batch([_rec(b"k")], 0)
    junk = (struct.pack(">qi", 1, 2) + b"\x00" * 8)[:tail]
    with pytest.raises(CorruptRecordError) as e:
        _plan_offsets(tmp_path, [batch, junk], keys=(b"k",))
    assert e.value.position == len(batch)
    assert "bytes left in segment" in e.value.message
    log = tmp_path / "logs" / "t-0" / "00000000000000000000.log"
    with pytest.raises(CorruptRecordError) as e:
        for _ in iter_chunk_batches(log, 0, log.stat().st_size, 1 << 20):
            pass
    assert e.value.position == len(batch)
