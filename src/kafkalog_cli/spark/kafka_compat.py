"""Spark's own Kafka source (`format("kafka")`, batch queries), mapped onto kafkalog's: its
columns and its options, so a batch job written for a cluster runs on a log dir with only the
format and the path changed.

Columns (spark-sql-kafka's KafkaRecordToRowConverter): key binary, value binary, topic string,
partition int, offset bigint, timestamp timestamp, timestampType int (0 CreateTime, 1
LogAppendTime), and headers array<struct<key: string, value: binary>> with includeHeaders=true.

Options: exactly one of `subscribe` (topics, comma-separated), `subscribePattern` (a Java regex
matched against the whole topic name; internal topics left out, as the consumer's
exclude.internal.topics) or `assign` (JSON {"topic": [partitions]}); `startingOffsets`
(earliest, the default, or JSON {"topic": {"partition": offset}}, -2 for earliest) and
`endingOffsets` (latest, the default, or JSON with -1 for latest; exclusive);
`kafka.isolation.level` (read_uncommitted, the default, or read_committed) is honoured; every
other `kafka.*` option is about a cluster and is ignored with a warning on stderr.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field, replace

from kafkalog_cli.errors import InputError
from kafkalog_cli.spark.datasource_options import schema_items

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
TIMESTAMP_TYPES = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}
# with decoding, after the key and the value (render/schema_arrow.py)
DECODED_SUFFIXES = ("_schema_id", "_bytes", "_error")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
_SUBSCRIPTIONS = ("subscribe", "subscribePattern", "assign")
# spark-sql-kafka's options that mean nothing for files (streaming, consumer pools, polling)
_NO_EFFECT = (
    "failOnDataLoss",
    "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "groupIdPrefix",
)


@dataclass
class KafkaOptions:
    """What Spark's Kafka options ask of the kafkalog source."""

    kafka_schema: bool = False
    topics: frozenset | None = None  # subscribe
    pattern: re.Pattern | None = None  # subscribePattern
    assigned: frozenset | None = None  # assign: {(topic, partition)}
    starting: dict = field(default_factory=dict)  # {(topic, partition): offset}; -2 earliest
    ending: dict = field(default_factory=dict)  # {(topic, partition): offset}; -1 latest
    isolation: str | None = None  # kafka.isolation.level
    warnings: list = field(default_factory=list)

    def keeps(self, topic: str | None, partition: int | None) -> bool:
        if topic is None:
            return not (self.topics or self.pattern or self.assigned)
        if self.topics is not None and topic not in self.topics:
            return False
        if self.pattern is not None and (
            topic in INTERNAL_TOPICS or not self.pattern.fullmatch(topic)
        ):
            return False
        return self.assigned is None or (topic, partition) in self.assigned

    def bounded(self, view, topic: str, partition: int):
        """The partition's ConsumerView narrowed to startingOffsets/endingOffsets."""
        start = self.starting.get((topic, partition), -2)
        end = self.ending.get((topic, partition), -1)
        changes = {}
        if start >= 0:
            changes["start"] = max(view.start, start)
        if end >= 0:
            changes["end"] = min(view.end, end)
        return replace(view, **changes) if changes else view


def _offsets(name: str, value, latest_ok: bool, earliest_ok: bool) -> dict:
    if value is None:
        return {}
    v = str(value).strip()
    if v in ("earliest", "latest"):
        if (v == "latest" and not latest_ok) or (v == "earliest" and not earliest_ok):
            raise InputError(
                f"option {name}: {v!r} is not allowed for a batch query (as Spark's Kafka source)"
            )
        return {}
    try:
        parsed = json.loads(v)
        return {(t, int(p)): int(o) for t, parts in parsed.items() for p, o in parts.items()}
    except (ValueError, AttributeError, TypeError):
        raise InputError(
            f"option {name}: {v!r} is neither earliest/latest nor JSON such as "
            f'{{"topicA": {{"0": 23, "1": -2}}}}'
        ) from None


def kafka_options(options) -> KafkaOptions:
    """Spark's Kafka options among a data source's `options` (case-insensitive keys, as Spark
    passes them)."""
    opts = {str(k): v for k, v in options.items()}
    lower = {k.lower(): v for k, v in opts.items()}
    k = KafkaOptions()
    given = [s for s in _SUBSCRIPTIONS if s.lower() in lower]
    if len(given) > 1:
        raise InputError(
            f"options {' and '.join(given)}: give only one of subscribe, subscribePattern and assign "
            "(as Spark's Kafka source)"
        )
    if "subscribe" in lower:
        k.topics = frozenset(t.strip() for t in str(lower["subscribe"]).split(",") if t.strip())
    if "subscribepattern" in lower:
        try:
            k.pattern = re.compile(str(lower["subscribepattern"]))
        except re.error as e:
            raise InputError(
                f"option subscribePattern: {lower['subscribepattern']!r} is not a regular expression: {e}"
            ) from None
    if "assign" in lower:
        try:
            k.assigned = frozenset(
                (t, int(p)) for t, ps in json.loads(str(lower["assign"])).items() for p in ps
            )
        except (ValueError, AttributeError, TypeError):
            raise InputError(
                f"option assign: {lower['assign']!r} is not JSON such as "
                '{"topicA": [0, 1], "topicB": [2, 4]}'
            ) from None
    k.starting = _offsets(
        "startingOffsets", lower.get("startingoffsets"), latest_ok=False, earliest_ok=True
    )
    k.ending = _offsets(
        "endingOffsets", lower.get("endingoffsets"), latest_ok=True, earliest_ok=False
    )
    schema = schema_items(lower.get("schema"))[0] or ("kafka" if given else "kafkalog")
    k.kafka_schema = schema == "kafka"
    for key, value in opts.items():
        low = key.lower()
        if low == "kafka.isolation.level":
            k.isolation = str(value).strip()
        elif low.startswith("kafka."):
            k.warnings.append(
                f"option {key} ignored: it configures a Kafka client, and kafkalog reads the files"
            )
        elif key in _NO_EFFECT or low in (n.lower() for n in _NO_EFFECT):
            k.warnings.append(f"option {key} ignored: it has no meaning for a batch read of files")
        elif low in (
            "startingoffsetsbytimestamp",
            "endingoffsetsbytimestamp",
            "startingtimestamp",
            "endingtimestamp",
            "startingoffsetsbytimestampstrategy",
        ):
            raise InputError(
                f"option {key} is not supported: filter on the timestamp column instead"
            )
    return k


_SHOWN: set[str] = set()


def warn(messages) -> None:
    """Each message as a `kafkalog: warning:` line on stderr, once per Spark application: a
    scan is planned in a Python worker each time a DataFrame runs, in a worker Spark reuses or
    one it starts anew, so what was said is also remembered in the application's own local dir
    (Spark's block manager dir, which it removes when it stops)."""
    for m in messages:
        if m in _SHOWN:
            continue
        _SHOWN.add(m)
        if _first_in_application(m):
            sys.stderr.write(f"kafkalog: warning: {m}\n")
            sys.stderr.flush()


def _first_in_application(message: str) -> bool:
    import hashlib
    import os

    # Spark gives its Python workers the application's block manager dirs (blockmgr-<uuid>)
    root = (os.environ.get("SPARK_LOCAL_DIRS") or "").split(",")[0]
    if not os.path.basename(root.rstrip("/")).startswith("blockmgr-"):
        return True  # not in a Spark worker: this process remembers it
    marker = os.path.join(
        root, "kafkalog-warnings", hashlib.sha256(message.encode()).hexdigest()[:32]
    )
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:  # a dir that cannot be written: better twice than never
        return True
    return True


def kafka_ddl(include_headers: bool) -> str:
    cols = [
        "`key` binary",
        "`value` binary",
        "`topic` string",
        "`partition` int",
        "`offset` bigint",
        "`timestamp` timestamp",
        "`timestampType` int",
    ]
    if include_headers:
        cols.append("`headers` array<struct<key: string, value: binary>>")
    return ", ".join(cols)


def native_columns(include_headers: bool) -> tuple[str, ...]:
    """The kafkalog record columns the Kafka columns are made of."""
    return ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value") + (
        ("headers",) if include_headers else ()
    )


def to_kafka(rb):
    """A record batch of native_columns as Spark's Kafka source's row (a projection: the arrays
    are kafkalog's, timestamp_type becomes its id); decoded keys and values keep their
    `_schema_id`, `_bytes` and `_error` columns after them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts_type = rb.column("timestamp_type")
    ids = pc.if_else(
        pc.equal(ts_type, "LogAppendTime"), 1, pc.if_else(pc.equal(ts_type, "CreateTime"), 0, -1)
    )
    names = [
        n
        for part in ("key", "value")
        for n in (part, *(f"{part}{s}" for s in DECODED_SUFFIXES))
        if n in rb.schema.names
    ]
    arrays = [rb.column(n) for n in names]
    arrays += [rb.column(n) for n in KAFKA_COLUMNS[2:-1]] + [ids.cast(pa.int32())]
    names += list(KAFKA_COLUMNS[2:])
    if "headers" in rb.schema.names:
        arrays.append(rb.column("headers"))
        names.append("headers")
    return pa.RecordBatch.from_arrays(arrays, names=names)
