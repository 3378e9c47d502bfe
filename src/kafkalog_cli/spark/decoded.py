"""The data source's typed keys and values (options decodeSchemas, schemas, schema, readerVersion).

The columns are export's (render/schema_arrow.py: the Arrow type of the topic's reader schema,
then `<field>_schema_id`, `<field>_bytes` and `<field>_error`), given to Spark in the Arrow types
it takes from a Python source: timestamps in microseconds (UTC, or without a zone for Avro's
local-timestamp-*), UUIDs as text, fixed-size binary as binary, unsigned integers widened, and
decimals of more than 38 digits as text, as Spark's from_avro gives them. One DataFrame has one
schema: the topics read must agree on their key and value types (choose them with `topic` or
`subscribe`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from kafkalog_cli.errors import InputError
from kafkalog_cli.ops.schema_decode import SchemaDecoder
from kafkalog_cli.ops.schema_registry import Registry
from kafkalog_cli.render.schema_arrow import decode_table, storage_type
from kafkalog_cli.spark.arrow import arrow_schema
from kafkalog_cli.spark.kafka_compat import to_kafka

_SPARK_MAX_DIGITS = 38


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """`t` as Spark takes it from a Python source (its types have no unsigned integers, no
    extension types, one timestamp unit, decimals up to 38 digits)."""
    if isinstance(t, pa.BaseExtensionType):  # arrow.uuid: text, as from_avro gives a uuid
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(spark_arrow_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type), spark_arrow_type(t.item_type))
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_time(t):
        return pa.time64("ns")
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_decimal(t) and (t.precision > _SPARK_MAX_DIGITS or pa.types.is_decimal256(t)):
        return pa.string()
    if pa.types.is_float16(t):
        return pa.float32()
    widened = {
        pa.uint8(): pa.int16(),
        pa.uint16(): pa.int32(),
        pa.uint32(): pa.int64(),
        pa.uint64(): pa.decimal128(20, 0),
    }
    return widened.get(t, t)


def _python(v, t: pa.DataType):
    """A Python value (as to_pylist gives it) in the shape pyarrow builds `t` from: what a cast
    cannot do (UUIDs and wide decimals to text)."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _python(v.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return [(k, _python(x, t.item_type)) for k, x in v]
    if pa.types.is_list(t):
        return [_python(x, t.value_type) for x in v]
    if pa.types.is_string(t) and not isinstance(v, str):
        return str(v)
    return v


def to_spark_array(arr, t: pa.DataType):
    """`arr` as an array of `t` (a Spark Arrow type of spark_arrow_type's)."""
    if arr.type == t:
        return arr
    if not _has_extension(arr.type):  # a cast would take a UUID's 16 bytes for text
        try:
            return arr.cast(t, safe=False)  # Protobuf's nanosecond timestamps: microseconds
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            pass
    return pa.array([_python(v, t) for v in arr.to_pylist()], type=t)


def _has_extension(t: pa.DataType) -> bool:
    if isinstance(t, pa.BaseExtensionType):
        return True
    return any(_has_extension(t.field(i).type) for i in range(t.num_fields))


@dataclass
class Decoding:
    """What a scan decodes with: the registry (the schemas of the log dirs, sources and bound
    files), the reader version asked for, and what the rows keep."""

    registry: Registry
    reader_version: int | None = None
    keep_headers: bool = True
    kafka_schema: bool = False
    _decoder: SchemaDecoder | None = field(default=None, repr=False, compare=False)
    _columns: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_decoder"], state["_columns"] = None, {}  # built again in each worker
        return state

    @property
    def decoder(self) -> SchemaDecoder:
        if self._decoder is None:
            self._decoder = SchemaDecoder(
                self.registry, self.reader_version, protobuf_messages=True
            )
        return self._decoder

    def decode(self, rb, topic: str | None):
        """A batch of the native record columns with the topic's key and value decoded (and
        in the Kafka source's columns with schema=kafka)."""
        table = decode_table(
            pa.Table.from_batches([rb]),
            topic or "",
            self.decoder,
            self._columns,
            self.keep_headers,
        )
        out = table.combine_chunks().to_batches()
        rb = out[0] if out else _empty_batch(table.schema)
        return to_kafka(rb) if self.kafka_schema else rb

    def spark_schema(self, cols, topics):
        """The StructType of a scan of `topics` whose native columns are `cols`; an InputError
        when they do not agree on it."""
        from pyspark.sql.pandas.types import from_arrow_type
        from pyspark.sql.types import StructField, StructType

        empty = _empty_batch(arrow_schema(cols))
        by_type: dict = {}
        for topic in topics or [""]:
            rb = self.decode(empty, topic)
            st = StructType(
                [
                    StructField(f.name, from_arrow_type(spark_arrow_type(f.type)), True)
                    for f in rb.schema
                ]
            )
            by_type.setdefault(st, []).append(topic)
        if len(by_type) > 1:
            kinds = "; ".join(
                f"{', '.join(ts)}: key {_kind(st, 'key')}, value {_kind(st, 'value')}"
                for st, ts in by_type.items()
            )
            raise InputError(
                "option decodeSchemas: one DataFrame has one schema, and the topics read have "
                f"different key or value types ({kinds}): choose the topics with option topic "
                "or subscribe"
            )
        return next(iter(by_type))

    @staticmethod
    def for_spark(rb, target: pa.Schema):
        """`rb` in the Arrow types of the scan's schema (`target`, as Spark checks it)."""
        arrays = [to_spark_array(rb.column(f.name), f.type) for f in target]
        return pa.RecordBatch.from_arrays(arrays, schema=target)


def _empty_batch(schema: pa.Schema):
    """A batch of no rows (pyarrow builds no empty extension array directly)."""
    arrays = [pa.array([], type=storage_type(f.type)).cast(f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _kind(st, name: str) -> str:
    f = next((f for f in st.fields if f.name == name), None)
    return "absent" if f is None else f.dataType.simpleString()
