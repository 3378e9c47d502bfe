"""kafkalog's Spark data source, for pyspark to find by itself.

pyspark 4 registers the `DefaultSource` of every installed top-level module whose name starts with
`pyspark_` the first time a session looks a Python data source up
(pyspark/sql/worker/lookup_data_sources.py), so `spark.read.format("kafkalog")` works without
`kafkalog_cli.spark.register(spark)`. Spark applies the filters unless the session pushes them
down (spark.sql.python.filterPushdown.enabled) on a Spark that keeps a scan's pushed filters to
that scan (docs/spark.md: Filter pushdown)."""

from kafkalog_cli.spark.portable import KafkalogDropInSource as DefaultSource

__all__ = ["DefaultSource"]
