"""The `kafkalog` data source as Spark ships it to its Python workers.

Spark pickles a Python data source, its reader and its partitions on the driver and unpickles them
in every worker that plans or reads. Pickled by reference, a worker that cannot import
kafkalog_cli fails while unpickling, with a bare ModuleNotFoundError from deep in pyspark. These
classes are pickled by value (cloudpickle's register_pickle_by_value) and import kafkalog_cli
only inside their methods; the real reader and partitions travel as pickled bytes. A worker
without kafkalog_cli (or one of its dependencies) therefore gets to run `read` and fails at once
with one line saying what is missing and how to ship it.

Nothing here may refer to a kafkalog_cli name at module level: it would be pickled by reference.
"""

from __future__ import annotations

import importlib
import pickle
import sys
from types import FrameType

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

# the pyspark worker that asks a reader to push filters down: Spark starts it only when
# spark.sql.python.filterPushdown.enabled is true (PythonScanBuilder.pushFilters)
_PUSHDOWN_WORKER = "data_source_pushdown_filters.py"


def missing_message(e: ImportError) -> str:
    """The one line a worker without kafkalog (or a dependency of it) fails with."""
    what = e.name or "kafkalog_cli"
    return (
        f"kafkalog: this Spark worker's Python ({sys.executable}) cannot import {what} ({e}); "
        "the kafkalog data source runs kafkalog-cli on every worker: install "
        "'kafkalog-cli[spark]' into the Python PYSPARK_PYTHON names there, or ship a packed "
        "environment (spark-submit --archives kafkalog-env.tar.gz#env with "
        "PYSPARK_PYTHON=./env/bin/python), or, when its dependencies are there, the wheel with "
        "--py-files (docs/spark.md: What executors need)"
    )


def _kafkalog(module: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(missing_message(e)) from None


def _unpickle(data: bytes):
    try:
        return pickle.loads(data)
    except ImportError as e:
        raise ImportError(missing_message(e)) from None


def _pushdown_planning() -> bool:
    """Whether the caller is pyspark's pushdown worker (the session pushes filters down)."""
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename.endswith(_PUSHDOWN_WORKER):
            return True
        f = f.f_back
    return False


class KafkalogSource(DataSource):
    """`spark.read.format("kafkalog")` (kafkalog_cli.spark.datasource says what it reads).
    `pushdown`: True, the reader takes filters (register chose it for this Spark); False,
    Spark applies every filter; None (the drop-in, registered by no one): decided per scan, on
    when the session pushes filters down (spark.sql.python.filterPushdown.enabled) and this
    Spark keeps a scan's pushed filters to that scan."""

    pushdown: bool | None = False

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self):
        return _kafkalog("kafkalog_cli.spark.datasource").source_schema(self.options)

    def reader(self, schema):
        ds = _kafkalog("kafkalog_cli.spark.datasource")
        push = self.pushdown
        if push is None:
            push = _pushdown_planning() and ds.jar_scan_scoped()
        real = ds.source_reader(self.options, schema, push)
        return PortablePushdownReader(real) if push else PortableReader(real)


class KafkalogPushdownSource(KafkalogSource):
    """The same table, with filters pushed down: for a Spark where pushdown_is_scan_scoped."""

    pushdown = True


class KafkalogDropInSource(KafkalogSource):
    """The source pyspark finds by itself (the `pyspark_kafkalog` module's DefaultSource)."""

    pushdown = None


class PortablePartition(InputPartition):
    """A partition of the real reader, as pickled bytes."""


class PortableReader(DataSourceReader):
    """The real reader (kafkalog_cli.spark.datasource.KafkalogReader) as pickled bytes."""

    def __init__(self, real):
        self.real = real

    def __getstate__(self):
        return {"payload": pickle.dumps(self.real, protocol=pickle.HIGHEST_PROTOCOL)}

    def __setstate__(self, state):
        self.payload = state["payload"]
        self.real = None

    def partitions(self):
        return [
            PortablePartition(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL))
            for p in self.real.partitions()
        ]

    def read(self, partition):
        if self.real is None:
            self.real = _unpickle(self.payload)
        return self.real.read(_unpickle(partition.value))


class PortablePushdownReader(PortableReader):
    def pushFilters(self, filters):
        return self.real.pushFilters(filters)


cloudpickle.register_pickle_by_value(sys.modules[__name__])
