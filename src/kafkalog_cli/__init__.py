"""kafkalog: read, verify, repair, retain and compact Apache Kafka's on-disk logs.

The public library API is re-exported here, imported lazily so that `kafkalog` starts fast:

    from kafkalog_cli import Partition, iter_batches
    for segment, batch in Partition.open("/var/lib/kafka/data/orders-3").batches(from_offset=1000):
        ...
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    # formats: bytes <-> values
    "iter_batches": "kafkalog_cli.formats.records",
    "RecordBatch": "kafkalog_cli.formats.records",
    "Record": "kafkalog_cli.formats.records",
    "Header": "kafkalog_cli.formats.records",
    "SimpleRecord": "kafkalog_cli.formats.records",
    "TimestampType": "kafkalog_cli.formats.records",
    "ControlRecordType": "kafkalog_cli.formats.records",
    "build_v2_batch": "kafkalog_cli.formats.records",
    "build_legacy_batch": "kafkalog_cli.formats.records",
    "Compression": "kafkalog_cli.formats.compression",
    "compress": "kafkalog_cli.formats.compression",
    "decompress": "kafkalog_cli.formats.compression",
    # storage: Kafka's files and directories
    "Segment": "kafkalog_cli.storage.segment",
    "Partition": "kafkalog_cli.storage.partition",
    "LogDir": "kafkalog_cli.storage.logdir",
    "TopicPartition": "kafkalog_cli.storage.names",
    # errors
    "KafkalogError": "kafkalog_cli.errors",
    "ExitCode": "kafkalog_cli.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkalog_cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
