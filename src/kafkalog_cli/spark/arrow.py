"""Segments as Arrow record batches: the rows of the `kafkalog` data source and of `kafkalog export`.

Pure pyarrow (no pyspark), so `kafkalog export --engine local` and Spark executors share it. The
values are those of `dump-log --format json` (`render.jsonl.record_object` / `batch_object`), with
payloads as bytes instead of encoded text; nothing is decoded here that the library does not decode.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from kafkalog_cli.errors import InputError, KafkalogError
from kafkalog_cli.render import schema
from kafkalog_cli.render.jsonl import batch_object, control_object
from kafkalog_cli.storage.segment import Segment

ROWS_PER_BATCH = 8192

# Arrow type and Spark DDL type of each of render.schema's type names
_SCALARS = {
    schema.INT8: (pa.int8(), "tinyint"),
    schema.INT32: (pa.int32(), "int"),
    schema.INT64: (pa.int64(), "bigint"),
    schema.STRING: (pa.string(), "string"),
    schema.BINARY: (pa.binary(), "binary"),
    schema.BOOL: (pa.bool_(), "boolean"),
}


def _types(t) -> tuple[pa.DataType, str]:
    """A render.schema type as (Arrow type, Spark DDL type)."""
    if isinstance(t, schema.ListOf):
        arrow, ddl_type = _types(t.item)
        return pa.list_(arrow), f"array<{ddl_type}>"
    if isinstance(t, schema.Struct):
        parts = [(n, *_types(ft)) for n, ft in t.fields]
        return (pa.struct([(n, a) for n, a, _ in parts]),
                "struct<" + ", ".join(f"{n}: {d}" for n, _, d in parts) + ">")
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
class Pushdown:
    """Conjunction of the filters Spark pushed down; each field narrows, None means any."""

    topics: frozenset | None = None
    partitions: frozenset | None = None
    offset_min: int | None = None
    offset_max: int | None = None
    offsets: frozenset | None = None
    ts_min: int | None = None
    ts_max: int | None = None
    timestamps: frozenset | None = None
    not_topics: frozenset = frozenset()
    not_partitions: frozenset = frozenset()
    empty: bool = False             # contradictory filters: nothing matches

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
            if self.offset_max is not None and ref.base_offset > self.offset_max:
                return False
            if self.offset_min is not None and ref.next_base_offset is not None and ref.next_base_offset <= self.offset_min:
                return False
        return True

    @property
    def on_records(self) -> bool:
        return any(v is not None for v in (self.offset_min, self.offset_max, self.offsets, self.ts_min,
                                           self.ts_max, self.timestamps))

    def keeps_record(self, offset: int, timestamp: int) -> bool:
        if self.offset_min is not None and offset < self.offset_min:
            return False
        if self.offset_max is not None and offset > self.offset_max:
            return False
        if self.offsets is not None and offset not in self.offsets:
            return False
        if self.ts_min is not None and timestamp < self.ts_min:
            return False
        if self.ts_max is not None and timestamp > self.ts_max:
            return False
        return self.timestamps is None or timestamp in self.timestamps


# ------------------------------------------------------------------ reading
def _start_position(seg: Segment, f: Pushdown | None) -> int:
    """Where to start reading: through the offset index for a lower offset bound, through the time
    index for a lower timestamp bound (as `dump-log --from-offset/--from-time`)."""
    if f is None or not seg.is_log:
        return 0
    lo = f.offset_min
    if f.offsets is not None:
        lo = max(lo if lo is not None else min(f.offsets), min(f.offsets))
    tlo = f.ts_min
    if f.timestamps is not None:
        tlo = max(tlo if tlo is not None else min(f.timestamps), min(f.timestamps))
    if lo is None and tlo is None:
        return 0
    pos = 0
    if lo is not None and lo > seg.base_offset:
        pos = max(pos, seg.position_for_offset(lo))
    if tlo is not None:
        pos = max(pos, seg.position_for_timestamp(tlo))
    return pos


def read_segment(ref: Segment, cols, *, level: str = "record", pushdown: Pushdown | None = None,
                 rows_per_batch: int = ROWS_PER_BATCH, verify_crc: bool = False) -> Iterator[pa.RecordBatch]:
    """The segment's rows as Arrow record batches (mmap'd, decoded batch by batch). The table shows
    what is there, as dump-log does (legacy rows carry is_valid); `verify_crc` (export) stops at
    a batch whose CRC fails instead, as a consumer with check.crcs does."""
    from kafkalog_cli.formats.records import iter_batches

    schema = arrow_schema(cols)
    names = [c[0] for c in cols]
    fixed = {"topic": ref.topic, "partition": ref.partition, "segment": ref.path}
    value_names = [n for n in names if n not in fixed]
    data: dict[str, list] = {n: [] for n in value_names}
    appenders = [(data[n].append, n) for n in value_names]
    rows = 0

    def flush():
        nonlocal rows
        arrays = []
        for n, t, _ in cols:
            if n in fixed:
                arrays.append(pa.array([fixed[n]] * rows, type=t))
            else:
                arrays.append(pa.array(data[n], type=t))
                data[n].clear()
        rb = pa.RecordBatch.from_arrays(arrays, schema=schema)
        rows = 0
        return rb

    f = pushdown if pushdown is not None and (pushdown.on_records or pushdown.empty) else None
    if pushdown is not None and not pushdown.keeps_segment(ref):
        return
    with ref.mapped() as buf:
        try:
            pos = _start_position(ref, f) if level == "record" else 0
            for b in iter_batches(buf, pos, len(buf)):
                if level == "batch":
                    obj = batch_object(b, ref.path)
                    for app, n in appenders:
                        app(obj.get(n))
                    rows += 1
                else:
                    if f is not None:
                        if f.offset_max is not None and b.magic >= 2 and b.base_offset_field > f.offset_max:
                            break
                        if f.offset_min is not None and b.last_offset < f.offset_min:
                            continue
                        if f.ts_min is not None and b.max_timestamp < f.ts_min:
                            continue
                    if verify_crc:
                        b.ensure_valid()
                    recs = b.records()
                    if f is not None:
                        recs = [r for r in recs if f.keeps_record(r.offset, r.timestamp)]
                    rows += _append_records(data, recs, b)
                if rows >= rows_per_batch:
                    yield flush()
        except KafkalogError as e:
            raise e.located(path=ref.path)
        if rows:
            yield flush()


_NONE = (None,)


def _append_records(data: dict[str, list], recs, b) -> int:
    """Append the records of batch `b` to the column lists in `data` (those present): the values of
    render.jsonl.record_object, with payloads as bytes. Batch-wide values go in per batch."""
    n = len(recs)
    if not n:
        return 0
    g = data.get
    g("offset").extend([r.offset for r in recs])
    g("timestamp").extend([r.timestamp for r in recs])
    if (c := g("key")) is not None:
        c.extend([r.key for r in recs])
    if (c := g("value")) is not None:
        c.extend([r.value for r in recs])
    if (c := g("headers")) is not None:
        c.extend([[(h.key, h.value) for h in r.headers] if r.headers else [] for r in recs])
    g("sequence").extend([r.sequence for r in recs])
    g("timestamp_type").extend([b.timestamp_type.kafka_name] * n)
    g("base_offset").extend([b.base_offset] * n)
    g("producer_id").extend([b.producer_id] * n)
    g("producer_epoch").extend([b.producer_epoch] * n)
    g("is_transactional").extend([b.is_transactional] * n)
    ctrl = b.is_control
    g("is_control").extend([ctrl] * n)
    if b.magic < 2:
        g("crc").extend([r.crc for r in recs])
        g("is_valid").extend([r.valid for r in recs])
    else:
        g("crc").extend(_NONE * n)
        g("is_valid").extend(_NONE * n)
    g("control").extend([control_object(r) for r in recs] if ctrl else _NONE * n)
    return n


def scan_segment(ref: Segment, level: str = "record") -> int:
    """Decode a whole segment into Arrow batches and return its row count (benchmarks, checks)."""
    return sum(rb.num_rows for rb in read_segment(ref, columns(level), level=level))
