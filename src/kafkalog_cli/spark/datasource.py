"""The PySpark Data Source `kafkalog`: Kafka log dirs, partition dirs and segments as a table.

    df = spark.read.format("kafkalog").load("/var/lib/kafka/data")

(pyspark finds it through the `pyspark_kafkalog` module; `register(spark)` registers it too and
decides filter pushdown. Spark ships it to its workers as spark/portable.py's classes.)

Options:
    level            record (default): one row per record; batch: one row per batch
    includePayload   true (default); false leaves out the key and value columns
    includeHeaders   true (default); false leaves out the headers column
    topic            only the partitions of topics matching these globs (comma-separated:
                     "orders-*,payments"), as --topic; matching nothing is an error
    partition        only these partition numbers (comma-separated), as --partition
    maxPartitionBytes  segments are bin-packed into Spark partitions of about this many bytes
                     (default 128 MiB), and into at least `minPartitions` of them
    minPartitions    default: the planning machine's core count (never more than the segments)
    isolationLevel   read_uncommitted (default) or read_committed (kafka.isolation.level too):
                     level=record rows are what a Kafka consumer of each partition is returned:
                     no control records, offsets from the log start offset up to the high
                     watermark; read_committed leaves out aborted transactions' records and stops
                     at the last stable offset (ops.consumer_view)
    includeControl   true: the raw view, every record of the files (control records, aborted
                     ones, past the high watermark): dump-log --format json --deep-iteration's rows
    schema           kafkalog (default) or kafka: Spark's Kafka source's columns, the default when
                     subscribe, subscribePattern or assign is given; with them Spark's Kafka
                     options (startingOffsets, endingOffsets, kafka.*) are mapped as
                     spark/kafka_compat.py says; a schema file bound to a topic
                     (TOPIC=FILE, TOPIC:key=FILE; comma-separated) as --schema
    decodeSchemas    true: keys and values decoded with the _schemas topic among the paths
                     (--decode-schemas): typed columns and value_schema_id, value_bytes and
                     value_error after each (spark/decoded.py)
    schemas          more schema sources, comma-separated (--schemas)
    readerVersion    every subject's records read with this version (--reader-version)

Filter pushdown (`register` decides): on a Spark whose Python scans keep their pushed filters to
themselves, filters on topic, partition, offset and timestamp are pushed down: topic and partition
choose the segments, offset and timestamp bounds start each segment's read through its offset
and time indexes (and skip segments whose offsets lie outside), as `dump-log --from-offset/
--from-time`. Spark 4.1 to 4.3 keep the first pushed-down reader of a DataFrame for its later
queries (PythonDataSourceV2.readInfo): a query with nothing to push would get an earlier query's
filters. There the source reads everything and Spark filters (the `topic` and `partition` options
still choose the segments).
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkalog_cli.allocator import tune_for_streaming
from kafkalog_cli.ops.consumer_view import (
    ISOLATION_LEVELS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    view_notes,
    views_for,
)
from kafkalog_cli.spark.arrow import Pushdown, bin_pack, columns, ddl, read_segment
from kafkalog_cli.spark.datasource_options import partition_filter, schema_options, source_paths
from kafkalog_cli.spark.kafka_compat import kafka_ddl, kafka_options, native_columns, to_kafka, warn
from kafkalog_cli.spark.portable import KafkalogPushdownSource, KafkalogSource
from kafkalog_cli.storage.remote import segments_of_sources

if TYPE_CHECKING:
    from kafkalog_cli.spark.decoded import Decoding

_TRUE = ("true", "1", "yes")
# the Spark class whose field `readInfo` means a pushed-down reader belongs to its own scan
_SCAN_BUILDER = "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"


def _flag(options, name: str, default: bool) -> bool:
    v = options.get(name)
    return default if v is None else str(v).strip().lower() in _TRUE


def pushdown_is_scan_scoped(spark) -> bool:
    """Whether this Spark builds each scan's Python reader from that scan's filters alone (its
    PythonScanBuilder holds the read info), so pushdown cannot leak into a later query. False on
    pyspark 4.0 (no pushFilters), on 4.1-4.3 (read info cached per DataFrame), and when the
    JVM cannot be asked (Spark Connect)."""
    try:
        from pyspark.sql import datasource

        if not hasattr(datasource, "EqualTo"):
            return False
        cls = spark.sparkContext._jvm.java.lang.Class.forName(_SCAN_BUILDER)
        return any(f.getName() == "readInfo" for f in cls.getDeclaredFields())
    except Exception:
        return False


class SegmentsPartition(InputPartition):
    """Segments, each with its partition's consumer view (None: every record)."""

    def __init__(self, refs, views=None):
        super().__init__(refs)
        self.refs = refs
        self.views = views if views is not None else [None] * len(refs)


# the names register() and the tests know the sources by
KafkalogDataSource = KafkalogSource
KafkalogPushdownDataSource = KafkalogPushdownSource


def jar_scan_scoped() -> bool:
    """pushdown_is_scan_scoped asked of the Spark jars, for a Python worker (it has no JVM to
    ask): whether the PythonScanBuilder class of this Spark's spark-sql jar declares `readInfo`.
    False when it cannot tell."""
    import zipfile
    from pathlib import Path

    try:
        import pyspark
        from pyspark.sql import datasource

        if not hasattr(datasource, "EqualTo"):
            return False
        home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
        for jar in sorted(Path(home, "jars").glob("spark-sql_*.jar")):
            with zipfile.ZipFile(jar) as z:
                data = z.read(_SCAN_BUILDER.replace(".", "/") + ".class")
            return "readInfo" in declared_fields(data)
    except Exception:  # no jar, another layout, a class file this reader does not know
        return False
    return False


def declared_fields(data: bytes) -> set[str]:
    """The names of the fields a Java class file declares (JVMS 4.1: the constant pool, then the
    fields table)."""
    import struct

    pos = 10  # magic, minor and major version, constant_pool_count
    count = struct.unpack_from(">H", data, 8)[0]
    utf8: dict[int, str] = {}
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2}
    sizes.update({17: 4, 18: 4, 19: 2, 20: 2})
    i = 1
    while i < count:
        tag = data[pos]
        if tag == 1:
            n = struct.unpack_from(">H", data, pos + 1)[0]
            utf8[i] = data[pos + 3 : pos + 3 + n].decode("utf-8", "replace")
            pos += 3 + n
        else:
            pos += 1 + sizes[tag]
        i += 2 if tag in (5, 6) else 1  # a long or a double takes two entries
    pos += 6  # access_flags, this_class, super_class
    interfaces = struct.unpack_from(">H", data, pos)[0]
    pos += 2 + 2 * interfaces
    fields = struct.unpack_from(">H", data, pos)[0]
    pos += 2
    names = set()
    for _ in range(fields):
        _, name, _, attrs = struct.unpack_from(">HHHH", data, pos)
        names.add(utf8[name])
        pos += 8
        for _ in range(attrs):
            pos += 6 + struct.unpack_from(">I", data, pos + 2)[0]
    return names


def source_columns(options, decoding: bool = False) -> list:
    """The (name, Arrow type) columns the options ask for, before any decoding; `decoding`
    keeps the headers, which may hold the schema ids."""
    level = options.get("level", "record").lower()
    if kafka_options(options).kafka_schema:
        if level != "record":
            raise ValueError(
                "kafkalog: option schema=kafka has one row per record: it excludes level=batch"
            )
        wanted = native_columns(decoding or _flag(options, "includeHeaders", False))
        return [c for c in columns("record") if c[0] in wanted]
    if decoding:
        if level != "record":
            raise ValueError(
                "kafkalog: option decodeSchemas decodes records: it excludes level=batch"
            )
        return columns(level, _flag(options, "includePayload", True), True)
    return columns(
        level,
        _flag(options, "includePayload", True),
        _flag(options, "includeHeaders", True),
    )


def source_schema(options):
    """The table's schema: a DDL string, or with decoding a StructType (the typed key and value
    columns of the topics read, spark/decoded.py)."""
    decoding = decoding_of(options)
    if decoding is not None:
        return decoding.spark_schema(source_columns(options, True), _planned_topics(options))
    if kafka_options(options).kafka_schema:
        return kafka_ddl(_flag(options, "includeHeaders", False))
    return ddl(source_columns(options))


def source_reader(options, schema, pushdown: bool) -> KafkalogReader:
    """The reader of one scan (`schema`: the StructType Spark planned it with); with pushdown,
    one whose pushFilters takes what it can."""
    decoding = decoding_of(options)
    cls = KafkalogPushdownReader if pushdown else KafkalogReader
    reader = cls(options, source_columns(options, decoding is not None), decoding)
    if decoding is not None:
        import inspect

        from pyspark.sql.pandas.types import to_arrow_schema

        # pyspark 4.1+ names the time zone; 4.0's timestamps are UTC without the argument
        utc = (
            {"timezone": "UTC"}
            if "timezone" in inspect.signature(to_arrow_schema).parameters
            else {}
        )
        reader.target = to_arrow_schema(schema, **utc)
    return reader


def decoding_of(options):
    """The scan's spark.decoded.Decoding, or None when no schema option is given."""
    so = schema_options(options)
    if not so.decoding:
        return None
    from kafkalog_cli.ops.schema_registry import load_registry
    from kafkalog_cli.spark.decoded import Decoding

    registry = load_registry(
        _paths(options) if so.decode_schemas else (),
        so.sources,
        so.bindings,
        lambda skip: warn([skip.line()]),
    )
    kafka = kafka_options(options)
    headers_default = not kafka.kafka_schema
    return Decoding(
        registry,
        so.reader_version,
        keep_headers=_flag(options, "includeHeaders", headers_default),
        kafka_schema=kafka.kafka_schema,
    )


def _planned_topics(options) -> list[str]:
    """The topics of the segments a scan with these options reads ("" for a bare segment)."""
    only = partition_filter(options.get("topic"), options.get("partition"))
    kafka = kafka_options(options)
    return sorted(
        {
            r.topic or ""
            for r in segments_of_sources(_paths(options), only=only)
            if kafka.keeps(r.topic, r.partition)
        }
    )


def _paths(options) -> list[str]:
    paths = options.get("paths") or options.get("path")
    if not paths:
        raise ValueError("kafkalog: give a path: spark.read.format('kafkalog').load(PATH)")
    return source_paths(paths)


class KafkalogReader(DataSourceReader):
    def __init__(self, options, cols, decoding: Decoding | None = None):
        self.paths = _paths(options)
        self.decoding = decoding
        self.target = None  # with decoding: the scan's Arrow schema (source_reader sets it)
        self.only = partition_filter(options.get("topic"), options.get("partition"))
        self.level = options.get("level", "record").lower()
        self.cols = cols
        self.max_bytes = int(options.get("maxPartitionBytes", 128 << 20))
        self.min_partitions = int(options.get("minPartitions", os.cpu_count() or 1))
        self.pushdown = Pushdown()
        self.kafka = kafka_options(options)
        warn(self.kafka.warnings)
        self.isolation = str(
            options.get("isolationLevel") or self.kafka.isolation or READ_UNCOMMITTED
        ).strip()
        if self.isolation not in ISOLATION_LEVELS:
            raise ValueError(
                f"kafkalog: isolationLevel must be one of {', '.join(ISOLATION_LEVELS)}, "
                f"not {self.isolation!r}"
            )
        self.include_control = _flag(options, "includeControl", False)
        if self.include_control and self.isolation == READ_COMMITTED:
            raise ValueError(
                "kafkalog: includeControl=true is the raw view (every record): it excludes "
                "isolationLevel read_committed"
            )

    # -- planning
    def partitions(self):
        refs = [
            r
            for r in segments_of_sources(self.paths, only=self.only)
            if self.kafka.keeps(r.topic, r.partition)
        ]
        views: dict = {}
        if self.level == "record" and not self.include_control:
            views = views_for([r for r in refs if self.pushdown.keeps_segment(r)], self.isolation)
            view_notes(views, lambda text: warn([text]))
            where = {str(r.directory): (r.topic, r.partition) for r in refs}
            views = {d: self.kafka.bounded(v, *where[d]) for d, v in views.items()}
        refs = [r for r in refs if self.pushdown.keeps_segment(r)]
        if not refs:
            return [SegmentsPartition([])]
        total = sum(r.size for r in refs)
        bins = max(math.ceil(total / max(self.max_bytes, 1)), min(self.min_partitions, len(refs)))
        return [
            SegmentsPartition(group, [views.get(str(r.directory)) for r in group])
            for group in bin_pack(refs, bins)
        ]

    # -- executors
    def read(self, partition):
        tune_for_streaming()
        decoding = self.decoding
        for ref, view in zip(partition.refs, partition.views):
            for rb in read_segment(
                ref, self.cols, level=self.level, pushdown=self.pushdown, view=view
            ):
                if decoding is not None:
                    yield decoding.for_spark(decoding.decode(rb, ref.topic), self.target)
                else:
                    yield _spark_timestamps(to_kafka(rb) if self.kafka.kafka_schema else rb)


def _spark_timestamps(rb):
    """Spark takes a Python source's TimestampType columns as Arrow timestamp(us, UTC)
    (plan_data_source_read's to_arrow_schema): the millisecond columns, cast."""
    import pyarrow as pa

    at = [
        i for i, f in enumerate(rb.schema) if pa.types.is_timestamp(f.type) and f.type.unit != "us"
    ]
    if not at:
        return rb
    arrays = [
        c.cast(pa.timestamp("us", tz="UTC")) if i in at else c for i, c in enumerate(rb.columns)
    ]
    return pa.RecordBatch.from_arrays(arrays, names=rb.schema.names)


class KafkalogPushdownReader(KafkalogReader):
    # -- filter pushdown: this reader is new for each scan, so its Pushdown holds this scan's filters
    def pushFilters(self, filters):
        p = self.pushdown
        for flt in filters:
            if not self._push(p, flt):
                yield flt

    def _push(self, p: Pushdown, flt) -> bool:
        from pyspark.sql.datasource import (
            EqualTo,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            LessThan,
            LessThanOrEqual,
            Not,
        )

        if (
            isinstance(flt, Not)
            and isinstance(flt.child, (EqualTo, In))
            and flt.child.attribute in (("topic",), ("partition",))
        ):
            c = flt.child
            vals = frozenset([c.value]) if isinstance(c, EqualTo) else frozenset(c.value)
            if c.attribute == ("topic",):
                p.not_topics = p.not_topics | vals
            else:
                p.not_partitions = p.not_partitions | vals
            return True
        if not isinstance(
            flt, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual, In)
        ):
            return False
        col = flt.attribute[0] if len(flt.attribute) == 1 else None
        if col in ("topic", "partition"):
            if isinstance(flt, EqualTo):
                vals = frozenset([flt.value])
            elif isinstance(flt, In):
                vals = frozenset(flt.value)
            else:
                return False
            attr = "topics" if col == "topic" else "partitions"
            cur = getattr(p, attr)
            setattr(p, attr, vals if cur is None else cur & vals)
            return True
        if self.level != "record" or col not in ("offset", "timestamp"):
            return False
        v = _millis(flt.value) if col == "timestamp" else flt.value
        if not isinstance(v, (int, list, tuple)) or isinstance(v, bool):
            return False
        bounds = p.offset if col == "offset" else p.timestamp
        if isinstance(flt, EqualTo):
            bounds.at_least(v)
            bounds.at_most(v)
        elif isinstance(flt, GreaterThan):
            bounds.at_least(v + 1)
        elif isinstance(flt, GreaterThanOrEqual):
            bounds.at_least(v)
        elif isinstance(flt, LessThan):
            bounds.at_most(v - 1)
        elif isinstance(flt, LessThanOrEqual):
            bounds.at_most(v)
        elif isinstance(flt, In) and all(isinstance(x, int) for x in v):
            bounds.within(frozenset(v))
        else:
            return False
        return True


def _millis(value):
    """A pushed-down timestamp (a datetime, or a list of them) as epoch milliseconds; anything
    else as it is (then not pushed down)."""
    from datetime import datetime, timezone

    if isinstance(value, (list, tuple)):
        return [_millis(v) for v in value]
    if isinstance(value, datetime):
        if value.tzinfo is None:  # pyspark hands TimestampType values as local naive datetimes
            value = value.astimezone()
        delta = value.astimezone(timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return (
            (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
            if not delta.microseconds % 1000
            else None
        )
    return value
