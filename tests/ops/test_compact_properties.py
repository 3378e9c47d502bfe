"""Compaction's documented guarantees, on generated logs (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.ops import compact
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.compaction import replicated_to_the_end

NOW = 1_800_000_000_000
RETENTION = 86_400_000

record = st.tuples(
    st.one_of(st.none(), st.integers(0, 12)), st.one_of(st.none(), st.binary(max_size=8))
)
batch = st.lists(record, min_size=1, max_size=6)
codec = st.sampled_from([Compression.NONE, Compression.GZIP, Compression.LZ4])


def _write_log(part, batches, codec, per_segment):
    part.mkdir(parents=True)
    (part.parent / "meta.properties").write_text("version=1\n")
    offset, segs, current = 0, [], []
    for i, recs in enumerate(batches):
        if i % per_segment == 0:
            current = []
            segs.append((offset, current))
        srs = [
            SimpleRecord(None if k is None else b"k%d" % k, v, 1_700_000_000_000 + offset + j)
            for j, (k, v) in enumerate(recs)
        ]
        current.append(build_v2_batch(srs, offset, compression=codec))
        offset += len(recs)
    segs.append((offset, []))  # the active segment
    for base, data in segs:
        (part / f"{base:020d}.log").write_bytes(b"".join(data))
    return offset


def _read(part):
    out = []
    for log in sorted(part.glob("*.log")):
        for b in iter_batches(log.read_bytes()):
            out.extend(b.records())
    return out


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(batch, min_size=1, max_size=30), codec, st.integers(1, 4))
def test_compaction_guarantees(tmp_path_factory, batches, codec, per_segment):
    part = tmp_path_factory.mktemp("g") / "t-0"
    _write_log(part, batches, codec, per_segment)
    before = _read(part)
    active = sorted(part.glob("*.log"))[-1]
    active_bytes = active.read_bytes()
    replicated_to_the_end(part)
    resolver = ConfigResolver(
        overrides={
            "cleanup.policy": "compact",
            "delete.retention.ms": str(RETENTION),
            "min.compaction.lag.ms": "0",
        }
    )
    opts = compact.CompactOptions(now_ms=NOW, force=True, resolver=resolver, jobs=1)
    cp = compact.plan(part.parent, [part], opts)
    compact.apply(cp, FsOps(part.parent, Quarantine(None, "compact")), opts)
    after = _read(part)
    # offsets are only removed, never changed or reordered
    before_ids = [(r.offset, r.key, r.value, r.timestamp) for r in before]
    after_ids = [(r.offset, r.key, r.value, r.timestamp) for r in after]
    assert [o for o in after_ids if o in set(before_ids)] == after_ids
    assert [r.offset for r in after] == sorted(r.offset for r in after)
    # a consumer reading from the start sees the final value of every key
    final = {}
    for r in before:
        if r.key is not None:
            final[r.key] = r.value
    seen = {}
    for r in after:
        if r.key is not None:
            seen[r.key] = r.value
    assert seen == final  # tombstones too: the first pass keeps them (horizon = now + retention)
    # the head after the dirty section is untouched
    assert active.read_bytes() == active_bytes
    # tombstones survive at least delete.retention.ms: every kept batch with one carries the horizon
    for log in sorted(part.glob("*.log")):
        for b in iter_batches(log.read_bytes()):
            if (
                any(r.value is None for r in b.records())
                and b.base_offset < cp.decisions[0].log.first_uncleanable
            ):
                assert b.delete_horizon_ms is not None and b.delete_horizon_ms >= NOW + RETENTION


# the map pass's dict loop against the list loop it replaces (record lengths of 1, 2 and 3 varint bytes)
from kafkalog_cli.formats.record_keys import scan_keys, scan_keys_into  # noqa: E402
from kafkalog_cli.formats.v2_region import records_region  # noqa: E402

sized = st.tuples(
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.integers(0, 40), st.integers(60, 200), st.integers(8180, 9000)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(sized, min_size=1, max_size=12), st.integers(0, 12), st.integers(0, 1000))
def test_scan_keys_into_matches_scan_keys(spec, skip, base):
    srs = [
        SimpleRecord(k, None if n is None else b"v" * n, 1_700_000_000_000 + i)
        for i, (k, n) in enumerate(spec)
    ]
    b = next(iter_batches(build_v2_batch(srs, base)))
    keys, offs = [], []
    data, s, e = records_region(b)
    scan_keys(data, s, e, b.records_count, b.base_offset_field, keys, offs)
    want = {}
    for k, o in zip(keys, offs):
        if o >= base + skip:
            want[k] = o
    d = {}
    n, kl = scan_keys_into(data, s, e, b.records_count, b.base_offset_field, d, base + skip)
    assert d == want and n == sum(1 for o in offs if o >= base + skip)
