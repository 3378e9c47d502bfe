"""Kafka's topic config names, units, defaults and validators, and the broker properties that
set them (LogConfig.configDef, ServerTopicConfigSynonyms, KafkaConfig; 3.3.1 unless a version is
named, see `versions` for what changed after it)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import InputError, KafkalogError, UsageError

LONG_MAX = (1 << 63) - 1
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = METADATA_TOPIC + "-0"


# ------------------------------------------------------------------ Kafka's validators
@dataclass(frozen=True)
class ConfigKey:
    """ConfigDef.ConfigKey, the part that checks a value: its type and validator (3.3.1)."""

    type: str  # INT, LONG, DOUBLE, BOOLEAN, LIST, STRING
    at_least: float | None = None  # ConfigDef.Range
    at_most: float | None = None
    choices: frozenset[str] | None = None  # ValidString.in / ValidList.in

    def parse(self, raw: str) -> Any:
        """ConfigDef.parseType, then the validator; ValueError(why) where Kafka refuses it."""
        value = self._parse_type(str(raw).strip())
        self._validate(value)
        return value

    def _parse_type(self, raw: str) -> Any:
        if self.type in ("INT", "LONG"):
            bits = 32 if self.type == "INT" else 64
            if not INTEGER.fullmatch(raw):
                raise ValueError("not a number")
            if not -(1 << bits - 1) <= int(raw) < 1 << bits - 1:
                raise ValueError(f"not a {bits}-bit integer")
            return int(raw)
        if self.type == "DOUBLE":
            try:
                value = float(raw)
            except ValueError:
                raise ValueError("not a number") from None
            if not math.isfinite(value):
                raise ValueError("not a finite number")
            return value
        if self.type == "BOOLEAN":
            if raw.lower() not in ("true", "false"):
                raise ValueError("true or false")
            return raw.lower() == "true"
        if self.type == "LIST":
            return tuple(p.strip() for p in raw.split(",") if p.strip())
        return raw

    def _validate(self, value: Any) -> None:
        if (
            self.choices is not None
            and not set(value if isinstance(value, tuple) else (value,)) <= self.choices
        ):
            raise ValueError(f"one of {', '.join(sorted(self.choices))}")
        if self.at_most is not None:
            assert self.at_least is not None  # Range.between: a maximum comes with its minimum
            if not self.at_least <= value <= self.at_most:
                raise ValueError(f"between {_num(self.at_least)} and {_num(self.at_most)}")
        if self.at_least is not None and value < self.at_least:
            raise ValueError(f"at least {_num(self.at_least)}")


INTEGER = re.compile(r"[+-]?[0-9]+")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# LogConfig.configDef at 3.3.1 (core/src/main/scala/kafka/log/LogConfig.scala), plus the broker's
# producer.id.expiration.ms (KafkaConfig: INT, at least 1).
CONFIG_DEF: dict[str, ConfigKey] = {
    "segment.bytes": ConfigKey("INT", 14),  # LegacyRecord.RECORD_OVERHEAD_V0
    "segment.ms": ConfigKey("LONG", 1),
    "segment.jitter.ms": ConfigKey("LONG", 0),
    "segment.index.bytes": ConfigKey("INT", 4),
    "flush.messages": ConfigKey("LONG", 1),
    "flush.ms": ConfigKey("LONG", 0),
    "retention.bytes": ConfigKey("LONG"),
    "retention.ms": ConfigKey("LONG", -1),
    "max.message.bytes": ConfigKey("INT", 0),
    "index.interval.bytes": ConfigKey("INT", 0),
    "delete.retention.ms": ConfigKey("LONG", 0),
    "min.compaction.lag.ms": ConfigKey("LONG", 0),
    "max.compaction.lag.ms": ConfigKey("LONG", 1),
    "file.delete.delay.ms": ConfigKey("LONG", 0),
    "min.cleanable.dirty.ratio": ConfigKey("DOUBLE", 0, 1),
    "cleanup.policy": ConfigKey("LIST", choices=frozenset({"compact", "delete"})),
    "unclean.leader.election.enable": ConfigKey("BOOLEAN"),
    "min.insync.replicas": ConfigKey("INT", 1),
    "compression.type": ConfigKey(
        "STRING", choices=frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})
    ),
    "preallocate": ConfigKey("BOOLEAN"),
    "message.format.version": ConfigKey("STRING"),
    "message.timestamp.type": ConfigKey(
        "STRING", choices=frozenset({"CreateTime", "LogAppendTime"})
    ),
    "message.timestamp.difference.max.ms": ConfigKey("LONG", 0),
    "leader.replication.throttled.replicas": ConfigKey("LIST"),
    "follower.replication.throttled.replicas": ConfigKey("LIST"),
    "message.downconversion.enable": ConfigKey("BOOLEAN"),
    "remote.storage.enable": ConfigKey("BOOLEAN"),
    "local.retention.ms": ConfigKey("LONG", -2),
    "local.retention.bytes": ConfigKey("LONG", -2),
    "remote.log.copy.disable": ConfigKey(
        "BOOLEAN"
    ),  # 3.9 (TopicConfig.REMOTE_LOG_COPY_DISABLE_CONFIG)
    "producer.id.expiration.ms": ConfigKey("INT", 1),
}

# Topic configs without a broker synonym (ServerTopicConfigSynonyms has none): where the topic
# does not set them, Kafka's default holds on every broker, a known value.
TOPIC_ONLY_CONFIGS = frozenset({"remote.storage.enable", "remote.log.copy.disable"})

# Kafka's topic-level config names (TopicConfig, 3.x and 4.x): accepted on the command line;
# those without a TopicConfig field do not change what kafkalog does, those newer than 3.3.1
# are not checked.
KAFKA_TOPIC_CONFIGS = frozenset(CONFIG_DEF) | frozenset(
    {
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "remote.log.delete.on.disable",
    }
)


def parse_value(name: str, raw: str, error: type[KafkalogError] = InputError, where: str = ""):
    """A Kafka-named value as its type, checked by Kafka's validator; `error` when it fails."""
    key = CONFIG_DEF.get(name)
    return str(raw).strip() if key is None else _parse_as(key, name, raw, error, where)


def _parse_as(key: ConfigKey, name: str, raw: str, error: type[KafkalogError], where: str):
    try:
        return key.parse(raw)
    except ValueError as e:
        raise error(f"{where}invalid value {str(raw).strip()!r} for config {name} ({e})") from None


def check_remote_storage(values: Mapping[str, str], where: str) -> None:
    """LogConfig.validateNoRemoteStorageForCompactedTopic (3.6+): remote.storage.enable=true with
    a cleanup.policy that has compact is refused, as Kafka refuses the topic config."""
    if (
        str(values.get("remote.storage.enable", "")).strip().lower() == "true"
        and "compact" in str(values.get("cleanup.policy", "")).lower()
    ):
        raise UsageError(
            f"{where}Remote log storage is unsupported for the compacted topics "
            f"(remote.storage.enable=true with cleanup.policy={values['cleanup.policy'].strip()})"
        )


def check_compaction_lags(values: Mapping[str, str], where: str) -> None:
    """LogConfig.validateValues: min.compaction.lag.ms must not exceed max.compaction.lag.ms."""
    if "min.compaction.lag.ms" in values and "max.compaction.lag.ms" in values:
        lo = parse_value("min.compaction.lag.ms", values["min.compaction.lag.ms"], UsageError)
        hi = parse_value("max.compaction.lag.ms", values["max.compaction.lag.ms"], UsageError)
        if lo > hi:
            raise UsageError(f"{where}min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})")


def text_of(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def json_value(value: Any) -> Any:
    return ",".join(value) if isinstance(value, tuple) else value


# ------------------------------------------------------------------ broker configs
def _synonym_table(table: str) -> dict[str, list[tuple[str, int]]]:
    """`topic.config  broker.prop[*unit_ms] ...` lines -> {topic config: [(broker prop, unit)]}."""
    out = {}
    for line in table.strip().splitlines():
        name, *props = line.split()
        out[name] = [(p, int(u)) if u else (p, 1) for p, _, u in (q.partition("*") for q in props)]
    return out


# Topic config -> its broker synonyms (property, multiplier) in LogConfig.AllTopicConfigSynonyms
# order: the first present wins; the first is the one DynamicLogConfig knows.
BROKER_SYNONYMS: dict[str, list[tuple[str, int]]] = _synonym_table("""
    segment.bytes              log.segment.bytes
    segment.ms                 log.roll.ms  log.roll.hours*3600000
    segment.jitter.ms          log.roll.jitter.ms  log.roll.jitter.hours*3600000
    segment.index.bytes        log.index.size.max.bytes
    index.interval.bytes       log.index.interval.bytes
    retention.ms               log.retention.ms  log.retention.minutes*60000  log.retention.hours*3600000
    retention.bytes            log.retention.bytes
    cleanup.policy             log.cleanup.policy
    delete.retention.ms        log.cleaner.delete.retention.ms
    min.compaction.lag.ms      log.cleaner.min.compaction.lag.ms
    max.compaction.lag.ms      log.cleaner.max.compaction.lag.ms
    min.cleanable.dirty.ratio  log.cleaner.min.cleanable.ratio
    file.delete.delay.ms       log.segment.delete.delay.ms
    message.timestamp.type     log.message.timestamp.type
    max.message.bytes          message.max.bytes
    preallocate                log.preallocate
    compression.type           compression.type
    flush.messages             log.flush.interval.messages
    flush.ms                   log.flush.interval.ms  log.flush.scheduler.interval.ms
    producer.id.expiration.ms  producer.id.expiration.ms
    local.retention.ms         log.local.retention.ms
    local.retention.bytes      log.local.retention.bytes
""")

# DynamicLogConfig.ReconfigurableConfigs: the first synonym of every LogConfig topic config but
# log.message.format.version. A dynamic change to any of them triggers KAFKA-17584 (above).
DYNAMIC_LOG_CONFIGS = frozenset(
    syns[0][0]
    for name, syns in BROKER_SYNONYMS.items()
    if name not in ("producer.id.expiration.ms", "local.retention.ms", "local.retention.bytes")
) | {
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "log.message.timestamp.difference.max.ms",
    "log.message.downconversion.enable",
}

# Topic-creation configs of the internal topics (GroupCoordinator.offsetsTopicConfigs,
# TransactionStateManager.transactionTopicConfigs): value, and the broker property that sets it.
INTERNAL_TOPICS: dict[str, dict[str, tuple[str, str]]] = {
    "__consumer_offsets": {
        "cleanup.policy": ("compact", ""),
        "segment.bytes": ("104857600", "offsets.topic.segment.bytes"),
        "compression.type": ("producer", ""),
    },
    "__transaction_state": {
        "cleanup.policy": ("compact", ""),
        "segment.bytes": ("104857600", "transaction.state.log.segment.bytes"),
        "compression.type": ("uncompressed", ""),
    },
    # KafkaMetadataLog's whole LogConfig: these, and Kafka's defaults for the rest
    METADATA_TOPIC: {
        "segment.bytes": ("1073741824", "metadata.log.segment.bytes"),
        "segment.ms": ("604800000", "metadata.log.segment.ms"),
        "max.message.bytes": ("8388608", ""),  # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
        "file.delete.delay.ms": ("60000", ""),
        "retention.ms": ("-1", ""),
        "retention.bytes": ("-1", ""),
    },
}

# Broker keys besides log.* that mark a file as a server.properties
BROKER_KEYS = frozenset(
    {prop for syns in BROKER_SYNONYMS.values() for prop, _ in syns}
    | {prop for configs in INTERNAL_TOPICS.values() for _, prop in configs.values() if prop}
    | {
        "broker.id",
        "node.id",
        "process.roles",
        "zookeeper.connect",
        "controller.quorum.voters",
        "controller.listener.names",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "num.network.threads",
        "num.io.threads",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "socket.request.max.bytes",
        "num.partitions",
        "num.recovery.threads.per.data.dir",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "auto.create.topics.enable",
        "default.replication.factor",
        "delete.topic.enable",
        "group.initial.rebalance.delay.ms",
        "metadata.log.dir",
    }
)


def synonym_group(prop: str) -> list[str]:
    """DynamicBrokerConfig.brokerConfigSynonyms: the keys a dynamic `prop` replaces (a dynamic
    log.flush.interval.ms replaces log.flush.scheduler.interval.ms, not the other way round)."""
    for synonyms in BROKER_SYNONYMS.values():
        group = [p for p, _ in synonyms]
        if len(group) > 1 and prop in group and prop != "log.flush.scheduler.interval.ms":
            return group
    return [prop]


def broker_value(
    name: str,
    prop: str,
    mult: int,
    raw: str,
    error: type[KafkalogError] = InputError,
    where: str = "",
) -> Any:
    """Broker property `prop` as topic config `name`: hours and minutes (INTs) converted, any
    negative retention -1 (KafkaConfig.logRetentionTimeMillis), then LogConfig's validator,
    since the broker builds its default LogConfig from it."""
    if mult != 1:
        raw = str(_parse_as(ConfigKey("INT"), prop, raw, error, where) * mult)
    if name == "retention.ms":
        value = _parse_as(ConfigKey("LONG"), prop, raw, error, where)
        return -1 if value < 0 else value
    return parse_value(name, raw, error, where)


def broker_defaults(
    props: Mapping[str, str], error: type[KafkalogError] = InputError, where: str = ""
) -> dict[str, str]:
    """Topic-config values implied by server.properties, with Kafka's synonym precedence."""
    out: dict[str, str] = {}
    for name, synonyms in BROKER_SYNONYMS.items():
        for prop, mult in synonyms:
            if prop in props:
                out[name] = text_of(broker_value(name, prop, mult, props[prop], error, where))
                break
    return out
