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
from kafkalog_cli.spark.arrow import Pushdown, bin_pack, columns, ddl, read_segment
from kafkalog_cli.spark.sources import partition_filter, source_paths
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
    def __init__(self, refs):
        super().__init__(refs)
        self.refs = refs


class KafkalogDataSource(DataSource):
    """`spark.read.format("kafkalog")`: Spark applies every filter (safe on every Spark)."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def _columns(self):
        return columns(self.options.get("level", "record").lower(),
                       _flag(self.options, "includePayload", True), _flag(self.options, "includeHeaders", True))

    def schema(self) -> str:
        return ddl(self._columns())

    def reader(self, schema) -> "KafkalogReader":
        return KafkalogReader(self.options, self._columns())


class KafkalogPushdownDataSource(KafkalogDataSource):
    """The same table, with filters pushed down: only for a Spark where pushdown_is_scan_scoped."""

    def reader(self, schema) -> "KafkalogReader":
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

    # -- planning
    def partitions(self):
        refs = [r for r in segments_of_sources(self.paths, only=self.only) if self.pushdown.keeps_segment(r)]
        if not refs:
            return [SegmentsPartition([])]
        total = sum(r.size for r in refs)
        bins = max(math.ceil(total / max(self.max_bytes, 1)), min(self.min_partitions, len(refs)))
        return [SegmentsPartition(group) for group in bin_pack(refs, bins)]

    # -- executors
    def read(self, partition):
        tune_for_streaming()
        for ref in partition.refs:
            yield from read_segment(ref, self.cols, level=self.level, pushdown=self.pushdown)


class KafkalogPushdownReader(KafkalogReader):
    # -- filter pushdown: this reader is new for each scan, so its Pushdown holds this scan's filters
    def pushFilters(self, filters):
        p = self.pushdown
        for flt in filters:
            if not self._push(p, flt):
                yield flt

    def _push(self, p: Pushdown, flt) -> bool:
        from pyspark.sql.datasource import (
            EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual, Not,
        )

        if isinstance(flt, Not) and isinstance(flt.child, (EqualTo, In)) and flt.child.attribute in (("topic",), ("partition",)):
            c = flt.child
            vals = frozenset([c.value]) if isinstance(c, EqualTo) else frozenset(c.value)
            if c.attribute == ("topic",):
                p.not_topics = p.not_topics | vals
            else:
                p.not_partitions = p.not_partitions | vals
            return True
        if not isinstance(flt, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual, In)):
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
        if not isinstance(flt.value, (int, list, tuple)) or isinstance(flt.value, bool):
            return False
        bounds, v = (p.offset if col == "offset" else p.timestamp), flt.value
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
