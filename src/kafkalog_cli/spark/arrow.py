"""Segments as Arrow record batches: the rows of the `kafkalog` data source and of `kafkalog export`.

Pure pyarrow (no pyspark), so `kafkalog export --engine local` and Spark executors share it. The
values are those of `dump-log --format json` (`render.jsonl.record_object` / `batch_object`), with
payloads as bytes instead of encoded text; nothing is decoded here that the library does not decode.
"""

from __future__ import annotations

import functools
import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from kafkalog_cli.errors import InputError, KafkalogError
from kafkalog_cli.formats.byte_loops import (
    columns_of_batches,
    gather_spans,
    scan_columns,
    take_fixed_width,
)
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.record_columns import RecordColumns
from kafkalog_cli.ops.consumer_view import CUT, SKIP, STOP, ConsumerView
from kafkalog_cli.render import schema
from kafkalog_cli.render.jsonl import batch_object, control_object
from kafkalog_cli.storage.live_files import release_pages
from kafkalog_cli.storage.remote import segment_batches  # noqa: F401 (segment_batches: export)
from kafkalog_cli.storage.remote import segment_chunks as _chunks
from kafkalog_cli.storage.segment import Segment
from kafkalog_cli.storage.selection import Filters

ROWS_PER_BATCH = 8192
BYTES_PER_BATCH = 32 << 20  # or this many bytes of keys, values and headers (records of a MiB)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# Arrow type and Spark DDL type of each of render.schema's type names
_SCALARS = {
    schema.INT8: (pa.int8(), "tinyint"),
    schema.INT32: (pa.int32(), "int"),
    schema.INT64: (pa.int64(), "bigint"),
    schema.STRING: (pa.string(), "string"),
    schema.BINARY: (pa.binary(), "binary"),
    schema.BOOL: (pa.bool_(), "boolean"),
    schema.TIMESTAMP_MS: (pa.timestamp("ms", tz="UTC"), "timestamp"),
}


def _types(t) -> tuple[pa.DataType, str]:
    """A render.schema type as (Arrow type, Spark DDL type)."""
    if isinstance(t, schema.ListOf):
        arrow, ddl_type = _types(t.item)
        return pa.list_(arrow), f"array<{ddl_type}>"
    if isinstance(t, schema.Struct):
        parts = [(n, *_types(ft)) for n, ft in t.fields]
        return (
            pa.struct([(n, a) for n, a, _ in parts]),
            "struct<" + ", ".join(f"{n}: {d}" for n, _, d in parts) + ">",
        )
    return _SCALARS[t]


HEADER_TYPE = _types(schema.HEADER)[0]
CONTROL_TYPE = _types(schema.CONTROL)[0]

# (name, arrow type, Spark DDL type), in the order the DataFrame shows them
RECORD_COLUMNS = [(f.name, *_types(f.arrow)) for f in schema.RECORD.arrow_fields]
BATCH_COLUMNS = [(f.name, *_types(f.arrow)) for f in schema.BATCH.arrow_fields]


def columns(level: str = "record", include_payload: bool = True, include_headers: bool = True):
    if level == "batch":
        return list(BATCH_COLUMNS)
    if level != "record":
        raise InputError(f"level must be 'record' or 'batch', not {level!r}")
    out = []
    for c in RECORD_COLUMNS:
        if c[0] in ("key", "value") and not include_payload:
            continue
        if c[0] == "headers" and not include_headers:
            continue
        out.append(c)
    return out


def arrow_schema(cols) -> pa.Schema:
    return pa.schema([(n, t) for n, t, _ in cols])


def ddl(cols) -> str:
    return ", ".join(f"`{n}` {d}" for n, _, d in cols)


# ------------------------------------------------------------------ what to read
def bin_pack(refs: list[Segment], bins: int) -> list[list[Segment]]:
    """Longest processing time first: the biggest segment goes to the emptiest bin. Each bin keeps
    its segments in input order, so a partition's offsets come out ascending within a bin."""
    bins = max(1, min(bins, len(refs)))
    loads = [0] * bins
    members: list[list[int]] = [[] for _ in range(bins)]
    for i in sorted(range(len(refs)), key=lambda i: -refs[i].size):
        j = min(range(bins), key=loads.__getitem__)
        loads[j] += max(refs[i].size, 1)
        members[j].append(i)
    return [[refs[i] for i in sorted(m)] for m in members if m]


# ------------------------------------------------------------------ pushed-down filters
@dataclass
class Bounds:
    """What Spark pushed down on one integer column (offset, timestamp): lo <= value <= hi and
    value in `among`; None bounds nothing."""

    lo: int | None = None
    hi: int | None = None
    among: frozenset | None = None

    def at_least(self, v: int) -> None:
        self.lo = v if self.lo is None else max(self.lo, v)

    def at_most(self, v: int) -> None:
        self.hi = v if self.hi is None else min(self.hi, v)

    def within(self, values: frozenset) -> None:
        self.among = values if self.among is None else self.among & values

    @property
    def given(self) -> bool:
        return self.lo is not None or self.hi is not None or self.among is not None

    @property
    def empty(self) -> bool:
        """Contradictory: no value passes."""
        return (self.among is not None and not self.among) or (
            self.lo is not None and self.hi is not None and self.lo > self.hi
        )

    @property
    def lowest(self) -> int | None:
        """The least value that can pass (where an index lookup starts), None when unbounded."""
        lows = [v for v in (self.lo, min(self.among) if self.among else None) if v is not None]
        return max(lows) if lows else None

    def admits(self, v: int) -> bool:
        return (
            (self.lo is None or v >= self.lo)
            and (self.hi is None or v <= self.hi)
            and (self.among is None or v in self.among)
        )


@dataclass
class Pushdown:
    """Conjunction of the filters Spark pushed down; each field narrows, None means any."""

    topics: frozenset | None = None
    partitions: frozenset | None = None
    not_topics: frozenset = frozenset()
    not_partitions: frozenset = frozenset()
    offset: Bounds = field(default_factory=Bounds)
    timestamp: Bounds = field(default_factory=Bounds)
    # export's --header, --producer-id, --leader-epoch: a storage.selection.Filters judges them
    tests: Filters | None = None

    @property
    def empty(self) -> bool:
        """Contradictory filters: nothing matches."""
        return self.offset.empty or self.timestamp.empty

    def keeps_segment(self, ref: Segment) -> bool:
        if self.empty:
            return False
        if self.topics is not None and ref.topic not in self.topics:
            return False
        if self.partitions is not None and ref.partition not in self.partitions:
            return False
        # `topic <> x` is false (not null) for a row whose topic is null: such segments go too
        if self.not_topics and (ref.topic is None or ref.topic in self.not_topics):
            return False
        if self.not_partitions and (ref.partition is None or ref.partition in self.not_partitions):
            return False
        if ref.is_log:
            if self.offset.hi is not None and ref.base_offset > self.offset.hi:
                return False
            if (
                self.offset.lo is not None
                and ref.next_base_offset is not None
                and ref.next_base_offset <= self.offset.lo
            ):
                return False
        return True

    @property
    def on_records(self) -> bool:
        return self.offset.given or self.timestamp.given or self.tests is not None

    @property
    def judges_records(self) -> bool:
        """A test that takes the records one by one (else whole batches are kept or left)."""
        return (
            self.offset.given
            or self.timestamp.given
            or (self.tests is not None and bool(self.tests.headers))
        )

    def keeps_record(self, offset: int, timestamp: int) -> bool:
        return self.offset.admits(offset) and self.timestamp.admits(timestamp)

    def keeps(self, r) -> bool:
        """Whether record `r` passes: its offset, timestamp and headers."""
        return self.keeps_record(r.offset, r.timestamp) and (
            self.tests is None or self.tests.headers_match(r.headers)
        )


# ------------------------------------------------------------------ reading
def within_view(f: Pushdown | None, view: ConsumerView) -> Pushdown:
    """`f` narrowed to the view's offsets, for a batch the view cuts."""
    import copy

    g = Pushdown() if f is None else copy.deepcopy(f)
    g.offset.at_least(view.start)
    g.offset.at_most(view.end - 1)
    return g


def _start_position(seg: Segment, f: Pushdown | None) -> int:
    """Where to start reading: through the offset index for a lower offset bound, through the time
    index for a lower timestamp bound (as `dump-log --from-offset/--from-time`)."""
    if f is None or not seg.is_log:
        return 0
    lo, tlo = f.offset.lowest, f.timestamp.lowest
    if lo is None and tlo is None:
        return 0
    pos = 0
    if lo is not None and lo > seg.base_offset:
        pos = max(pos, seg.position_for_offset(lo))
    if tlo is not None:
        pos = max(pos, seg.position_for_timestamp(tlo))
    return pos


def read_segment(
    ref,
    cols,
    *,
    level: str = "record",
    pushdown: Pushdown | None = None,
    rows_per_batch: int = ROWS_PER_BATCH,
    verify_crc: bool = False,
    view: ConsumerView | None = None,
) -> Iterator[pa.RecordBatch]:
    """The segment's rows as Arrow record batches, decoded batch by batch: a local Segment
    mmap'd, a storage.remote.RemoteSegment by ranged reads. The table shows what is there, as
    dump-log does (legacy rows carry is_valid); `verify_crc` (export) stops at a batch whose
    CRC fails instead, as a consumer with check.crcs does. `view` (records only): what a
    consumer of the partition is returned (ops.consumer_view), chosen batch by batch here, before
    any column is built. An Arrow batch ends after the Kafka batch that brings it to
    `rows_per_batch` rows or BYTES_PER_BATCH bytes of payloads."""
    f = pushdown if pushdown is not None and (pushdown.on_records or pushdown.empty) else None
    if pushdown is not None and not pushdown.keeps_segment(ref):
        return
    if level != "record":
        view = None
    if view is not None and not view.keeps_segment(ref.base_offset, ref.next_base_offset):
        return
    rows = _BatchRows(ref, cols) if level == "batch" else _RecordRows(ref, cols)
    run = None
    if level == "record" and f is None:
        run = rows.runner(view, verify_crc, rows_per_batch)
    released, last_buf = 0, None
    for off, buf, b, g in selected(
        ref, f if level == "record" else None, view, verify_crc, level == "record", run
    ):
        at = g if b is None else b.position
        if buf is not last_buf:
            released, last_buf = at, buf
        if b is not None:
            rows.offset = off  # chunk positions are relative to the chunk
            try:
                rows.add(b, g)
            except KafkalogError as e:  # a record that does not decode
                if e.path is None and e.position is not None:
                    e.position += off
                raise e.located(path=ref.path)
        if rows.count >= rows_per_batch or rows.size >= BYTES_PER_BATCH:
            yield rows.flush()
            release_pages(buf, released, at)
            released = at
    if rows.count:
        yield rows.flush()


def selected(
    ref,
    f: Pushdown | None,
    view: ConsumerView | None,
    verify_crc: bool,
    records: bool = True,
    run=None,
):
    """(chunk position, chunk, batch, the batch's record filter) for the batches of the segment
    that `f` (pushed-down filters or export's ranges) and `view` (a consumer's view) keep: the one
    selection of read_segment and of export's JSON Lines. Errors name the segment and the byte in
    it. `run` (read_segment's: _RecordRows.runner) takes runs of batches
    itself, (chunk, position) -> the position of the first batch it leaves to this loop; after
    each run this yields (chunk position, chunk, None, that position)."""
    from kafkalog_cli.formats.records import iter_batches

    chunks = None
    off = 0
    try:
        start = _start_position(ref, f) if records else 0
        chunks = _chunks(ref, start)
        for off, buf in chunks:
            pos = start - off if start > off else 0
            for b in (
                iter_batches(buf, pos, len(buf)) if run is None else _between_runs(buf, pos, run)
            ):
                if b.__class__ is int:  # a run's end
                    yield off, buf, None, b
                    continue
                g = f  # this batch's record filter
                if records:
                    if view is not None:
                        verdict = view.verdict(
                            b.base_offset,
                            b.last_offset,
                            b.is_control,
                            b.is_transactional,
                            b.producer_id,
                        )
                        if verdict == STOP:
                            return
                        if verify_crc:  # as the consumer checks every batch it is sent
                            b.ensure_valid()
                        if verdict == SKIP:
                            continue
                        if verdict == CUT:
                            g = within_view(f, view)
                    if f is not None:
                        if (
                            f.offset.hi is not None
                            and b.magic >= 2
                            and b.base_offset_field > f.offset.hi
                        ):
                            return
                        if f.offset.lo is not None and b.last_offset < f.offset.lo:
                            continue
                        if f.timestamp.lo is not None and b.max_timestamp < f.timestamp.lo:
                            continue
                        if f.tests is not None and not f.tests.batch_selected(b):
                            continue  # on the batch header: its records are not decoded
                    if verify_crc and view is None:
                        b.ensure_valid()
                yield off, buf, b, g
    except KafkalogError as e:
        if e.position is not None and off:
            e.position += off
        raise e.located(path=ref.path)
    finally:
        if chunks is not None:
            chunks.close()  # a local segment is unmapped now, not when collected


def _between_runs(buf, pos: int, run):
    """The batches of buf from pos that `run` leaves, and the position where each run ends."""
    from kafkalog_cli.formats.records import iter_batches

    end = len(buf)
    while True:
        at = run(buf, pos)
        if at != pos:
            pos = at
            yield at
            continue  # it stopped at its rows (the caller made them a batch) or at a batch it leaves
        b = next(iter_batches(buf, pos, end), None)
        if b is None:
            return
        yield b
        pos = b.position + b.size


def segment_log_dir(ref) -> str | None:
    """The log dir holding the segment's partition dir (a path or URI), None outside one."""
    if ref.topic is None:
        return None
    return ref.log_dir if hasattr(ref, "log_dir") else str(ref.directory.parent)


@functools.lru_cache(maxsize=1024)
def broker_id(log_dir: str | None) -> int | None:
    """node.id (KRaft) or broker.id of the log dir's meta.properties; None without a readable one.
    One the broker would refuse (node.id=99999999999999999999) raises, naming the file: the
    column is never a guess."""
    if log_dir is None:
        return None
    from kafkalog_cli.formats.checkpoints import parse_properties
    from kafkalog_cli.formats.meta_properties import MetaProperties
    from kafkalog_cli.storage.remote import read_any

    path = f"{log_dir}/meta.properties"
    try:
        data = read_any(path)
    except OSError:
        return None
    except InputError:
        if os.path.exists(path):
            raise  # there but unreadable (a FIFO, permission denied): a broker fails on it too
        return None
    return MetaProperties.node_id_in(parse_properties(data, path=path), path=path)


class _Rows:
    """Rows read so far, until they become one Arrow record batch."""

    def __init__(self, ref: Segment, cols):
        self.cols = cols
        self.schema = arrow_schema(cols)
        log_dir = segment_log_dir(ref)
        self.fixed = {
            "topic": ref.topic,
            "partition": ref.partition,
            "segment": ref.path,
            "log_dir": log_dir,
            "broker_id": broker_id(log_dir),
        }
        self.count = 0
        self.offset = 0  # where the bytes read start in the file (a remote segment's chunk)
        self._constants: dict = {}

    @property
    def size(self) -> int:
        """Bytes of payloads held (what ends an Arrow batch besides its rows)."""
        return 0

    def flush(self) -> pa.RecordBatch:
        # timestamps are built as the int64 milliseconds they are, and typed as timestamps here
        arrays = [
            self._constant(n, self.fixed[n], t)
            if n in self.fixed
            else self._array(n, pa.int64()).view(t)
            if pa.types.is_timestamp(t)
            else self._array(n, t)
            for n, t, _ in self.cols
        ]
        self.count = 0
        self._clear()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _constant(self, name: str, value, type_: pa.DataType) -> pa.Array:
        """`value` for each of the rows: a slice of the column's last such array while its value
        stays (a segment's topic and path, a producer's id...), not made again each time; one
        array a column at most."""
        kept = self._constants.get(name)
        if (
            kept is None
            or len(kept[1]) < self.count
            or kept[0] != value
            or type(kept[0]) is not type(value)
        ):
            kept = self._constants[name] = (
                value,
                _repeat(value, type_, max(self.count, ROWS_PER_BATCH + 1024)),
            )
        return kept[1].slice(0, self.count)

    def _array(self, name: str, type_: pa.DataType) -> pa.Array:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError


class _BatchRows(_Rows):
    """One row per batch: the values of render.jsonl.batch_object."""

    def __init__(self, ref: Segment, cols):
        super().__init__(ref, cols)
        self.path = ref.path
        self.values: dict[str, list] = {n: [] for n, _, _ in cols if n not in self.fixed}

    def add(self, b, f) -> None:
        obj = batch_object(b, self.path)
        obj["position"] += self.offset
        for n, column in self.values.items():
            column.append(obj.get(n))
        self.count += 1

    def _array(self, name, type_):
        return pa.array(self.values[name], type=type_)

    def _clear(self) -> None:
        for column in self.values.values():
            column.clear()


class _RecordRows(_Rows):
    """One row per record: the values of render.jsonl.record_object, with payloads as bytes. The
    records of a v2 batch are cut into columns by scan_columns (formats/byte_loops.py; no Record objects);
    keys, values and headers become Arrow arrays over the batches' own bytes, and a batch's
    values become its rows' by one `take`, a column at a time. Legacy and control batches, and
    filtered reads, go through Record objects."""

    def __init__(self, ref: Segment, cols):
        super().__init__(ref, cols)
        self._clear()

    @property
    def size(self) -> int:
        return self.records.payload

    def runner(self, view: ConsumerView | None, verify_crc: bool, rows_per_batch: int):
        """columns_of_batches as selected's `run`: the batches `add` would take with no record filter
        (inside the view's offsets; transactional ones only where no transaction was aborted;
        CRCs checked when `verify_crc`), until rows_per_batch rows or BYTES_PER_BATCH bytes."""
        lo, hi, txn = (
            (_INT64_MIN, _INT64_MAX, True)
            if view is None
            else (view.start, min(view.end, _INT64_MAX), not view.aborted)
        )

        def run(buf, pos: int) -> int:
            at = columns_of_batches(
                buf,
                pos,
                len(buf),
                self.records,
                tuple(self.batch_values[n] for n in _BATCH_VALUES),
                self.batch_of_row,
                lo,
                hi,
                txn,
                verify_crc,
                rows_per_batch,
                BYTES_PER_BATCH,
            )
            self.count = self.records.rows
            return at

        return run

    def add(self, b, f) -> None:
        start = self.records.rows
        if (f is None or not f.judges_records) and b.magic == 2 and not b.is_control:
            try:
                scan_columns(b, self.records)
            except Exception:  # anything unusual: records() says what is wrong, or decodes it
                pass
        recs = None
        if self.records.rows == start:
            recs = b.records()
            if f is not None:
                recs = [r for r in recs if f.keeps(r)]
            for r in recs:
                self.records.add_record(
                    r.offset,
                    r.timestamp,
                    r.sequence,
                    r.key,
                    r.value,
                    [(h.key.encode("utf-8"), h.value) for h in r.headers],
                )
        n = self.records.rows - start
        if not n:
            return
        v = self.batch_values
        v["timestamp_type"].append(b.timestamp_type.kafka_name)
        v["base_offset"].append(b.base_offset)
        v["producer_id"].append(b.producer_id)
        v["producer_epoch"].append(b.producer_epoch)
        v["is_transactional"].append(b.is_transactional)
        v["is_control"].append(b.is_control)
        self.batch_of_row += array("i", [len(v["base_offset"]) - 1]) * n
        if b.magic < 2 or b.is_control:  # values of their own
            self.record_values.append(
                (
                    start,
                    n,
                    [r.crc for r in recs] if b.magic < 2 else None,
                    [r.valid for r in recs] if b.magic < 2 else None,
                    [control_object(r) for r in recs] if b.is_control else None,
                )
            )
        self.count += n

    def flush(self) -> pa.RecordBatch:
        self._payloads = _payload_arrays(self.records, {n for n, _, _ in self.cols})
        self._batch_index = pa.Array.from_buffers(
            pa.int32(), self.count, [None, pa.py_buffer(self.batch_of_row)]
        )
        return super().flush()

    def _array(self, name, type_):
        if name in self._payloads:
            return self._payloads[name]
        if name in ("offset", "timestamp", "sequence"):
            return _integers(getattr(self.records, name + "s"), type_)
        if name in self.batch_values:
            values = self.batch_values[name]
            if values.count(values[0]) == len(
                values
            ):  # one value for all (a segment's are, mostly)
                return self._constant(name, values[0], type_)
            if type_ in _INT_CODES:
                values = array(_INT_CODES[type_], values)
                return pa.Array.from_buffers(
                    type_,
                    self.count,
                    [
                        None,
                        pa.py_buffer(take_fixed_width(values, values.itemsize, self.batch_of_row)),
                    ],
                )
            return _column(values, type_).take(self._batch_index)
        i = _RECORD_VALUES.index(name)
        if not self.record_values:
            return self._constant(name, None, type_)
        column: list = [None] * self.count
        for start, n, *values in self.record_values:
            if values[i] is not None:
                column[start : start + n] = values[i]
        return pa.array(column, type=type_)

    def _clear(self) -> None:
        self.records = RecordColumns()
        self.batch_values: dict[str, list] = {n: [] for n in _BATCH_VALUES}
        self.batch_of_row = array("i")
        self.record_values: list[tuple] = []  # (first row, rows, crcs, valids, controls)
        self._payloads: dict = {}


# the columns whose values are the batch's, and those legacy and control records have their own of
_BATCH_VALUES = (
    "timestamp_type",
    "base_offset",
    "producer_id",
    "producer_epoch",
    "is_transactional",
    "is_control",
)
_RECORD_VALUES = ("crc", "is_valid", "control")
_INT_CODES = {pa.int64(): "q", pa.int32(): "i"}


def _integers(values, type_: pa.DataType) -> pa.Array:
    """An int32/int64 column of an array.array of its width (as it is), or of ints (through one:
    pa.array would look for pandas)."""
    code = _INT_CODES[type_]
    if not isinstance(values, array) or values.typecode != code:
        values = array(code, values)
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


# Columns built from their buffers: pa.array and pa.scalar import pandas, when it is installed,
# on their first call (half a second of CPU in every worker process), and the record path needs
# neither.
def _column(values: list, type_: pa.DataType) -> pa.Array:
    """A column without nulls of ints, bools or strs (a batch's values, one per batch)."""
    if type_ in _INT_CODES:
        return _integers(values, type_)
    if type_ == pa.bool_():
        bits = bytearray(-(-len(values) // 8))
        for i, v in enumerate(values):
            if v:
                bits[i >> 3] |= 1 << (i & 7)
        return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(bits)])
    if type_ == pa.string():
        data = [v.encode("utf-8", "surrogatepass") for v in values]
        ends = array("i", [0])
        total = 0
        for d in data:
            total += len(d)
            ends.append(total)
        return pa.Array.from_buffers(
            type_, len(values), [None, pa.py_buffer(ends), pa.py_buffer(b"".join(data))]
        )
    return pa.array(values, type=type_)


def _repeat(value, type_: pa.DataType, n: int) -> pa.Array:
    """`value` n times (a row's topic, partition, segment...): pa.repeat of a scalar taken from a
    one-row column, not from pa.scalar."""
    if value is None:
        return pa.nulls(n, type_)
    return pa.repeat(_column([value], type_)[0], n)


def _payload_arrays(r: RecordColumns, names: set[str]) -> dict[str, pa.Array]:
    """Those of the key, value and headers columns of `r` in `names`: each column's buffers
    filled from the spans of its bytes in one pass (gather_spans), so each payload is copied
    once."""
    whole = b"".join(r.data)

    binary = pa.binary()

    def picked(spans: array, at: int, n: int, nulls, type_=binary) -> pa.Array | None:
        got = gather_spans(whole, spans, at - 1, n, type_ == pa.string())
        if got is None:
            return None
        return pa.Array.from_buffers(
            type_, n, [_validity(n, nulls), pa.py_buffer(got[0]), pa.py_buffer(got[1])]
        )

    out = {}
    if "key" in names or "value" in names:
        for name, at, nulls in (("key", 1, r.null_keys), ("value", 3, r.null_values)):
            if name in names:
                out[name] = picked(r.spans, at, r.rows, nulls)
    if "headers" not in names:
        return out
    n = len(r.header_spans) // 4
    keys = picked(r.header_spans, 1, n, (), pa.string())  # None: not all UTF-8
    if keys is None:  # Java's replacement characters, one at a time
        keys = pa.array(
            [java_utf8(whole[a:b]) for a, b in zip(r.header_spans[0::4], r.header_spans[1::4])],
            pa.string(),
        )
    values = picked(r.header_spans, 3, n, r.null_header_values)
    offsets = _integers(array("i", [0]) + r.header_ends, pa.int32())
    out["headers"] = pa.ListArray.from_arrays(
        offsets, pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE))
    )
    return out


def _validity(n: int, nulls) -> pa.Buffer | None:
    """An Arrow validity bitmap of n rows, the rows in `nulls` cleared (None: no null)."""
    if not nulls:
        return None
    valid = bytearray(b"\xff") * -(-n // 8)
    for row in nulls:
        valid[row >> 3] &= ~(1 << (row & 7))
    return pa.py_buffer(valid)


def scan_segment(ref: Segment, level: str = "record") -> int:
    """Decode a whole segment into Arrow batches and return its row count (benchmarks, checks)."""
    return sum(rb.num_rows for rb in read_segment(ref, columns(level), level=level))
