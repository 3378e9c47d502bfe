"""Arrow rows without Record objects (scan_columns, formats/byte_loops.py, and spark.arrow's column builders)
are the rows of the general path (Record objects, one value at a time): the same Arrow values,
and the same Parquet bytes, for every codec, headers, nulls, legacy and control batches mixed in."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.formats.byte_loops import scan_columns
from kafkalog_cli.formats.record_columns import RecordColumns
from kafkalog_cli.formats.records import Header, SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.spark import arrow
from kafkalog_cli.spark.arrow import arrow_schema, columns, read_segment
from kafkalog_cli.storage.logdir import segments_of
from tests.helpers.segments import corrupt_records as _corrupt_records
from tests.helpers.segments import segment as _segment
from tests.helpers.strategies import batch_chains, v2_batches

PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _ref(tmp_path, data: bytes):
    d = tmp_path / "topic-3"
    d.mkdir(exist_ok=True)
    (d / "00000000000000000000.log").write_bytes(data)
    (ref,) = segments_of([str(d)])
    return ref


def _read(ref, monkeypatch, *, fast: bool, rows: int = 8192, **options) -> list[pa.RecordBatch]:
    from kafkalog_cli.formats import _scan_py

    with monkeypatch.context() as m:
        if not fast:

            def general(b, cols):
                raise ValueError("the general path, please")

            m.setattr(arrow, "scan_columns", general)
            m.setattr(
                arrow, "columns_of_batches", lambda buf, pos, *_: pos
            )  # no run: add takes each batch
            for name in ("gather_spans", "take_fixed_width"):  # the pure twin's
                m.setattr(arrow, name, getattr(_scan_py, name))
        return list(read_segment(ref, columns("record", **options), rows_per_batch=rows))


def _same(tmp_path, monkeypatch, data: bytes, **kw) -> list[pa.RecordBatch]:
    ref = _ref(tmp_path, data)
    fast, slow = _read(ref, monkeypatch, fast=True, **kw), _read(ref, monkeypatch, fast=False, **kw)
    assert [b.num_rows for b in fast] == [b.num_rows for b in slow]
    for a, b in zip(fast, slow):
        assert a.schema == b.schema
        assert a.to_pylist() == b.to_pylist()
    return fast


def test_every_codec_with_legacy_and_control_batches(tmp_path, monkeypatch):
    fast = _same(tmp_path, monkeypatch, _segment(), rows=50)
    rows = [r for b in fast for r in b.to_pylist()]
    assert (
        any(r["headers"] for r in rows)
        and any(r["control"] for r in rows)
        and any(r["crc"] for r in rows)
    )
    assert any(r["key"] is None for r in rows) and any(r["value"] is None for r in rows)
    _same(tmp_path, monkeypatch, _segment(), include_payload=False, include_headers=False)


def test_the_same_parquet_bytes(tmp_path, monkeypatch):
    ref = _ref(tmp_path, _segment())
    files = []
    for fast in (True, False):
        cols = [c for c in columns("record") if c[0] not in ("topic", "partition")]
        path = tmp_path / f"{fast}.parquet"
        with pq.ParquetWriter(path, arrow_schema(cols), compression="snappy") as w:
            for rb in _read(ref, monkeypatch, fast=fast, rows=100):
                w.write_batch(rb.select([c[0] for c in cols]))
        files.append(path.read_bytes())
    assert files[0] == files[1]


def test_header_keys_of_invalid_utf8_take_javas_replacements(tmp_path, monkeypatch):
    recs = [
        SimpleRecord(b"k", b"v", 1, headers=(Header("a", b"x"), Header("b", None))),
        SimpleRecord(None, None, 2, headers=(Header("c", b""),)),
    ]
    data = bytearray(build_v2_batch(recs, 0))
    data = data.replace(b"\x02a", b"\x02\xff")  # the first header key's one byte
    from kafkalog_cli.formats.records import set_v2_crc

    fast = _same(tmp_path, monkeypatch, set_v2_crc(data))
    assert fast[0].to_pylist()[0]["headers"] == [
        {"key": "\ufffd", "value": b"x"},
        {"key": "b", "value": None},
    ]


@PROPERTY
@given(batch=v2_batches(), chain=batch_chains())
def test_fast_columns_are_the_general_paths(tmp_path, monkeypatch, batch, chain):
    _same(tmp_path, monkeypatch, batch + chain, rows=7)
    (b,) = iter_batches(batch)
    scan_columns(b, RecordColumns())  # the fast path took it: no fallback hid a difference


def test_a_batch_that_does_not_scan_leaves_the_columns_as_they_were():
    recs = [SimpleRecord(key=b"k%d" % i, value=b"v" * 20, timestamp=1000 + i) for i in range(10)]
    bad = _corrupt_records(b"".join(build_v2_batch(recs, 10 * i) for i in range(5)))
    cols = RecordColumns()
    batches = list(iter_batches(bad))
    scan_columns(batches[0], cols)
    before = (cols.rows, cols.size, list(cols.offsets), list(cols.spans), list(cols.header_ends))
    with pytest.raises(Exception):  # noqa: B017 - the fast path's own error; any one is a refusal
        scan_columns(batches[1], cols)
    assert (
        cols.rows,
        cols.size,
        list(cols.offsets),
        list(cols.spans),
        list(cols.header_ends),
    ) == before


@pytest.mark.parametrize("level", ["record", "batch"])
def test_a_broken_batch_is_the_same_error(tmp_path, monkeypatch, level):
    recs = [SimpleRecord(key=b"k%d" % i, value=b"v" * 20, timestamp=1000 + i) for i in range(10)]
    ref = _ref(tmp_path, _corrupt_records(b"".join(build_v2_batch(recs, 10 * i) for i in range(5))))
    if level == "batch":
        assert sum(b.num_rows for b in read_segment(ref, columns("batch"), level="batch")) == 5
        return
    errors = []
    for fast in (True, False):
        with pytest.raises(Exception) as e:
            _read(ref, monkeypatch, fast=fast)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "Invalid record size" in errors[0]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 300),
    text=st.text(max_size=20),
    number=st.integers(-(2**31), 2**31 - 1),
    flags=st.lists(st.booleans(), max_size=40),
    texts=st.lists(st.text(max_size=8), max_size=40),
)
def test_columns_built_from_buffers_equal_pyarrows_own(n, text, number, flags, texts):
    """The fixed and per-batch columns of a record read are built from buffers (pa.array and
    pa.scalar would import pandas in every worker): each equals what pyarrow itself builds, so the
    Parquet bytes stay the same."""
    for value, type_ in (
        (text, pa.string()),
        (number, pa.int32()),
        (number, pa.int64()),
        (None, pa.int32()),
        (None, pa.string()),
    ):
        built = arrow._repeat(value, type_, n)
        assert built.equals(pa.repeat(pa.scalar(value, type=type_), n))
        assert built.null_count == (n if value is None else 0)
    for values, type_ in (
        (flags, pa.bool_()),
        (texts, pa.string()),
        ([int(f) for f in flags], pa.int64()),
        ([int(f) for f in flags], pa.int32()),
    ):
        built = arrow._column(values, type_)
        built.validate(full=True)
        assert built.equals(pa.array(values, type=type_))
