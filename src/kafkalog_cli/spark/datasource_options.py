"""The data source's `path`/`paths` and `topic`/`partition` options, as the CLI's PATHS and
--topic/--partition."""

from __future__ import annotations

import json
from dataclasses import dataclass

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


# the values of option `schema` that choose the columns (kafka_compat); any other item is a
# schema file bound to a topic, as --schema
SCHEMA_COLUMNS = ("kafka", "kafkalog")
_TRUE = ("true", "1", "yes")


def schema_items(value) -> tuple[str | None, list[str]]:
    """Option `schema`: (kafka or kafkalog when given, the TOPIC[:key|:value]=FILE bindings);
    items comma-separated or a JSON list."""
    if value is None:
        return None, []
    items = source_paths(value) if str(value).startswith("[") else _items(value)
    kinds = [i.lower() for i in items if i.lower() in SCHEMA_COLUMNS]
    if len(set(kinds)) > 1:
        raise InputError("option schema: give kafka or kafkalog, not both")
    bindings = [i for i in items if i.lower() not in SCHEMA_COLUMNS]
    for b in bindings:
        if "=" not in b:
            raise InputError(
                f"option schema: {b!r} is neither kafkalog (the default), kafka (Spark's Kafka "
                "source's columns) nor a schema file bound to a topic (TOPIC=FILE, "
                "TOPIC:key=FILE)"
            )
    return (kinds[0] if kinds else None), bindings


@dataclass(frozen=True)
class SchemaOptions:
    """decodeSchemas, schemas, schema (its bindings) and readerVersion, as the CLI's
    --decode-schemas, --schemas, --schema and --reader-version."""

    decode_schemas: bool = False
    sources: tuple[str, ...] = ()
    bindings: tuple[str, ...] = ()
    reader_version: int | None = None

    @property
    def decoding(self) -> bool:
        return bool(self.decode_schemas or self.sources or self.bindings)


def schema_options(options) -> SchemaOptions:
    """The schema options among a data source's `options` (case-insensitive, as Spark passes
    them); a reader version without anything to decode is an error, as on the command line."""
    lower = {str(k).lower(): v for k, v in options.items()}
    flag = lower.get("decodeschemas")
    sources = lower.get("schemas")
    version = lower.get("readerversion")
    out = SchemaOptions(
        decode_schemas=flag is not None and str(flag).strip().lower() in _TRUE,
        sources=tuple(
            ()
            if sources is None
            else source_paths(sources)
            if str(sources).startswith("[")
            else _items(sources)
        ),
        bindings=tuple(schema_items(lower.get("schema"))[1]),
        reader_version=None if version is None else _version(version),
    )
    if out.reader_version is not None and not out.decoding:
        raise InputError("option readerVersion needs decodeSchemas, schemas or schema")
    return out


def _version(value) -> int:
    v = str(value).strip()
    if not v.isdigit() or int(v) < 1:
        raise InputError(f"option readerVersion: {v!r} is not a version number (1, 2, ...)")
    return int(v)
