"""recover's fast batch walk (`_fast_run`, LogSegment.recover's loop for plain v2 batches) gives
exactly the SegmentRecovery of the general path: valid bytes, next offset, index bytes, leader epochs,
aborted transactions, the error and where it is, the producer state. Generated segments mix
plain, producer, transactional, control and legacy batches, then tear, flip and pad them."""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import SimpleRecord, build_legacy_batch, build_v2_batch
from kafkalog_cli.formats.txnindex import encode_txn_index
from kafkalog_cli.ops.producer_rebuild import ProducerState
from kafkalog_cli.storage import recovery

T = 1_700_000_000_000
KINDS = ("plain", "plain", "plain", "producer", "txn", "commit", "abort", "legacy")


def _batch(kind: str, offset: int, n: int, epoch: int, codec: Compression, ts: int) -> bytes:
    recs = [SimpleRecord(b"k%d" % (i % 3), b"v" * (i * 7 % 40), ts + i, ()) for i in range(n)]
    if kind == "plain":
        return build_v2_batch(recs, offset, compression=codec, partition_leader_epoch=epoch)
    if kind == "legacy":
        return build_legacy_batch(recs, offset, magic=1, compression=codec)
    if kind in ("commit", "abort"):
        key = struct.pack(">hh", 0, 1 if kind == "commit" else 0)
        marker = SimpleRecord(key, struct.pack(">hi", 0, 5), ts, ())
        return build_v2_batch(
            [marker],
            offset,
            producer_id=7,
            producer_epoch=0,
            is_transactional=True,
            is_control=True,
            partition_leader_epoch=epoch,
        )
    return build_v2_batch(
        recs,
        offset,
        compression=codec,
        producer_id=7 if kind == "txn" else 3,
        producer_epoch=0,
        base_sequence=offset,
        is_transactional=kind == "txn",
        partition_leader_epoch=epoch,
    )


batch_spec = st.tuples(
    st.sampled_from(KINDS),
    st.integers(1, 4),  # records
    st.sampled_from([-1, 0, 0, 1, 2, 5]),  # partition leader epoch (also going down)
    st.sampled_from([0, 0, 0, 0, 3, -2]),  # gap before the batch (negative: offsets go back)
    st.sampled_from([Compression.NONE, Compression.NONE, Compression.GZIP]),
    st.integers(-5, 50),  # timestamp step (also going back)
)
damage = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(st.just("tear"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(
        st.just("pad"),
        st.sampled_from(
            [b"\0" * 40, b"\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x03", b"garbage!" * 3]
        ),
        st.just(0),
    ),
)


def _segment(base: int, specs, damages) -> bytes:
    data, offset, ts = bytearray(), base, T
    for kind, n, epoch, gap, codec, step in specs:
        offset = max(base, offset + gap)
        ts += step
        data += _batch(kind, offset, n, epoch, codec, ts)
        offset += 1 if kind in ("commit", "abort") else n
    for what, where, arg in damages:
        if what == "flip" and data:
            data[int(where * len(data))] ^= arg
        elif what == "tear" and data:
            del data[int(where * len(data)) :]
        elif what == "pad":
            data += where
    return bytes(data)


def _general_only(mv, buf, pos, end, valid, builder, latest_epoch, new_epochs):
    """`_fast_run` that takes no batch: the general path sees every one."""
    return pos, valid, None, latest_epoch


def _scan(data: bytes, base: int, interval: int, epochs: list) -> tuple:
    state, epochs = ProducerState(), list(epochs)
    try:
        r = recovery.recover_segment(data, base, interval, state, epochs)
    except Exception as e:  # the same exception either way is the property
        return ("raised", type(e).__name__, str(e))
    err = r.error
    return (
        r.valid_bytes,
        r.next_offset,
        r.builder.offset_index_bytes(),
        r.builder.time_index_bytes(),
        r.epochs,
        epochs,
        encode_txn_index(r.aborted),
        r.invalid_offset,
        r.kept_ranges,
        r.skipped,
        None if err is None else (type(err).__name__, err.message, err.position),
        state.snapshot_bytes(),
    )


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([0, 1000]),
    st.lists(batch_spec, max_size=12),
    st.lists(damage, max_size=3),
    st.sampled_from([0, 1, 100, 4096]),
    st.sampled_from([[], [(0, 0)], [(3, 0)]]),
)
@example(
    0, [("plain", 3, 1, 0, Compression.NONE, 1)] * 4, [("flip", 0.6, 1)], 100, []
)  # a CRC mismatch
@example(
    0, [("plain", 3, 1, 0, Compression.NONE, 1)] * 4, [("tear", 0.9, 0)], 0, [(0, 0)]
)  # a torn tail
def test_fast_walk_matches_the_general_path(base, specs, damages, interval, epochs):
    data = _segment(base, specs, damages)
    fast = _scan(data, base, interval, epochs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recovery, "_fast_run", _general_only)
        general = _scan(data, base, interval, epochs)
    assert fast == general


def test_the_fast_walk_takes_plain_batches():
    """The property above compares two paths only if the fast one runs: on plain v2 batches it
    takes them all, the general path none."""
    data = b"".join(_batch("plain", i * 2, 2, 0, Compression.NONE, T + i) for i in range(5))
    real, calls = recovery._fast_run, []

    def spy(*args):
        out = real(*args)
        calls.append(out[0])
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recovery, "_fast_run", spy)
        r = recovery.recover_segment(data, 0, 4096, ProducerState(), [])
    assert calls[0] == len(data) and r.valid_bytes == len(data) and r.next_offset == 10
