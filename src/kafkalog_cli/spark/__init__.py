"""kafkalog on Apache Spark (extra: kafkalog-cli[spark]).

    spark.read.format("kafkalog").load("/var/lib/kafka/data")      # one row per record
    spark.read.format("kafkalog").option("level", "batch").load(...)  # one row per batch

pyspark finds the source by itself (the top-level module `pyspark_kafkalog`); `register(spark)`
also turns filter pushdown on where this Spark gets it right.

`spark.session.get_session()` makes a quiet local session; `spark.engine.run_partitions()` runs a
per-partition library function over a process pool or Spark tasks.
"""

from __future__ import annotations


def register(spark) -> bool:
    """Register the `kafkalog` data source with `spark`; True when it pushes filters down.

    Pushdown is switched on (spark.sql.python.filterPushdown.enabled) only on a Spark whose
    Python scans keep their pushed filters to themselves: pyspark 4.1-4.3 reuse a DataFrame's
    first pushed-down reader for its later queries, which would answer them with wrong rows."""
    from kafkalog_cli.spark.datasource import (
        KafkalogDataSource,
        KafkalogPushdownDataSource,
        pushdown_is_scan_scoped,
    )

    pushdown = pushdown_is_scan_scoped(spark)
    if pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        spark.dataSource.register(KafkalogPushdownDataSource if pushdown else KafkalogDataSource)
    except Exception as e:
        # pyspark 4.0 lets no session replace a source it found as an installed `pyspark_*`
        # module's DefaultSource: that one (pyspark_kafkalog) already serves format("kafkalog")
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
    return pushdown


__all__ = ["register"]
