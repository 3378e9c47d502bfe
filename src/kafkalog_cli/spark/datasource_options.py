"""The data source's `path`/`paths` and `topic`/`partition` options, as the CLI's PATHS and
--topic/--partition."""

from __future__ import annotations

import json

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage.names import PartitionFilter


def source_paths(value) -> list[str]:
    """`load("p")`, `load(["p", "q"])` (Spark passes a JSON list) or a comma-free string."""
    if isinstance(value, str) and value.startswith("["):
        value = json.loads(value)
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _items(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def partition_filter(topics=None, partitions=None) -> PartitionFilter:
    """.option("topic", "orders-*,payments") and .option("partition", "0,3"): a PartitionFilter
    (falsy when neither is given)."""
    numbers = []
    for p in _items(partitions):
        if not p.isdigit():
            raise InputError(
                f"option partition: {p!r} is not a partition number (give e.g. '0' or '0,3')"
            )
        numbers.append(int(p))
    return PartitionFilter(tuple(_items(topics)), tuple(numbers))
