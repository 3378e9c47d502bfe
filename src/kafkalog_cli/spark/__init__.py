"""kafkalog on Apache Spark (extra: kafkalog-cli[spark]).

    from kafkalog_cli.spark import register
    register(spark)
    spark.read.format("kafkalog").load("/var/lib/kafka/data")      # one row per record
    spark.read.format("kafkalog").option("level", "batch").load(...)  # one row per batch

`spark.session.get_session()` makes a quiet local session; `spark.engine.run_partitions()` runs a
per-partition library function over a process pool or Spark tasks.
"""
from __future__ import annotations


def register(spark) -> None:
    """Register the `kafkalog` data source with `spark` and enable Python filter pushdown."""
    from kafkalog_cli.spark.datasource import KafkalogDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KafkalogDataSource)


__all__ = ["register"]
