"""The record fast path (batch_text, formats/byte_loops.py) writes exactly what the general path writes:
same stdout bytes, same stderr reports, same error at the same point."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.byte_loops import batch_text
from kafkalog_cli.formats.records import (
    SimpleRecord,
    build_v2_batch,
    iter_batches,
)
from kafkalog_cli.render.kafka import DumpOptions, KafkaDumper, decoder_for, decoder_parser
from tests.helpers.segments import CODECS, STRING
from tests.helpers.segments import corrupt_records as _corrupt_records
from tests.helpers.segments import segment as _segment
from tests.helpers.strategies import v2_batches


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
            batch_text(b, -1, [], True, True)  # raises if it would fall back
            n += 1
    assert n == 4 * len(CODECS) + 1


def test_the_fast_path_is_used(tmp_path):
    o = DumpOptions(parser=STRING, deep_iteration=True, print_data_log=True)
    assert KafkaDumper(io.BytesIO(), io.BytesIO(), o)._fast
    other = decoder_parser(decoder_for("IntegerDecoder"), decoder_for("StringDecoder"))
    assert not KafkaDumper(
        io.BytesIO(), io.BytesIO(), DumpOptions(parser=other, print_data_log=True)
    )._fast
    # an IntegerDecoder only matters with --print-data-log
    assert KafkaDumper(
        io.BytesIO(), io.BytesIO(), DumpOptions(parser=other, deep_iteration=True)
    )._fast


@pytest.mark.parametrize("flags", FLAGS, ids=["deep", "data", "data-skip-metadata"])
def test_a_malformed_batch_fails_at_the_same_point(tmp_path, flags):
    recs = [SimpleRecord(key=b"k%d" % i, value=b"v" * 20, timestamp=1000 + i) for i in range(10)]
    data = b"".join(build_v2_batch(recs, 10 * i) for i in range(5))
    bad = _corrupt_records(data)
    fast = _dump(tmp_path, bad, fast=True, **flags)
    slow = _dump(tmp_path, bad, fast=False, **flags)
    assert fast == slow
    assert fast[2] is not None


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=v2_batches(), flags=st.sampled_from(FLAGS))
def test_fast_path_matches_the_general_path_at_varint_edges(tmp_path, batch, flags):
    fast = _dump(tmp_path, batch, fast=True, **flags)
    assert fast == _dump(tmp_path, batch, fast=False, **flags)
    assert fast[2] is None
    (b,) = iter_batches(batch)
    batch_text(b, -1, [], True, True)  # the fast path took it: no fallback hid a difference
