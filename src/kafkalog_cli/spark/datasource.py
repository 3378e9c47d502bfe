"""The PySpark Data Source `kafkalog`: Kafka log dirs, partition dirs and segments as a table.

    from kafkalog_cli.spark import register
    register(spark)
    df = spark.read.format("kafkalog").load("/var/lib/kafka/data")

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
                     spark/kafka_compat.py says

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

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkalog_cli.allocator import tune_for_streaming
from kafkalog_cli.ops.consumer_view import (
    ISOLATION_LEVELS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    view_notes,
    views_for,
)
from kafkalog_cli.spark.arrow import Pushdown, bin_pack, columns, ddl, read_segment
from kafkalog_cli.spark.datasource_options import partition_filter, source_paths
from kafkalog_cli.spark.kafka_compat import kafka_ddl, kafka_options, native_columns, to_kafka, warn
from kafkalog_cli.storage.remote import segments_of_sources

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


class KafkalogDataSource(DataSource):
    """`spark.read.format("kafkalog")`: Spark applies every filter (safe on every Spark)."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def _kafka(self):
        return kafka_options(self.options)

    def _columns(self):
        level = self.options.get("level", "record").lower()
        if self._kafka().kafka_schema:
            if level != "record":
                raise ValueError(
                    "kafkalog: option schema=kafka has one row per record: it excludes level=batch"
                )
            wanted = native_columns(_flag(self.options, "includeHeaders", False))
            return [c for c in columns("record") if c[0] in wanted]
        return columns(
            level,
            _flag(self.options, "includePayload", True),
            _flag(self.options, "includeHeaders", True),
        )

    def schema(self) -> str:
        if self._kafka().kafka_schema:
            return kafka_ddl(_flag(self.options, "includeHeaders", False))
        return ddl(self._columns())

    def reader(self, schema) -> KafkalogReader:
        return KafkalogReader(self.options, self._columns())


class KafkalogPushdownDataSource(KafkalogDataSource):
    """The same table, with filters pushed down: only for a Spark where pushdown_is_scan_scoped."""

    def reader(self, schema) -> KafkalogReader:
        return KafkalogPushdownReader(self.options, self._columns())


class KafkalogReader(DataSourceReader):
    def __init__(self, options, cols):
        paths = options.get("paths") or options.get("path")
        if not paths:
            raise ValueError("kafkalog: give a path: spark.read.format('kafkalog').load(PATH)")
        self.paths = source_paths(paths)
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
        for ref, view in zip(partition.refs, partition.views):
            for rb in read_segment(
                ref, self.cols, level=self.level, pushdown=self.pushdown, view=view
            ):
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
