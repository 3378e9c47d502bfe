"""Topic configs with Kafka's names, units, defaults and validators, and where every effective
value comes from (spec §12: LogConfig, KafkaConfig, DynamicBrokerConfig, Kafka 3.3.1).

Resolution, most specific first (ConfigSource names the level):

  1. `--topic-config TOPIC:KEY=VALUE`                                      TOPIC_CONFIG_OPTION
  2. `--config KEY=VALUE`, for every topic                                 CONFIG_OPTION
  3. the topic's ConfigRecords in the log dir's `__cluster_metadata`      DYNAMIC_TOPIC_CONFIG
     (when those cannot be read, an internal topic's creation configs
     stand in: GroupCoordinator and TransactionStateManager create
     __consumer_offsets and __transaction_state compacted)                INTERNAL_TOPIC_CONFIG
  -- a name the topic does not override takes the broker's default: --
  4. this broker's ConfigRecord there (resource type BROKER, resource
     name = node.id of the log dir's meta.properties)                      DYNAMIC_BROKER_CONFIG
  5. the cluster-wide broker ConfigRecord (resource name "")              DYNAMIC_DEFAULT_BROKER_CONFIG
  6. `--server-properties FILE`                                            STATIC_BROKER_CONFIG
  7. Kafka's default                                                       DEFAULT_CONFIG

Levels 4-6 are merged as DynamicBrokerConfig.updateCurrentConfig merges them (a dynamic key
removes its static synonyms, so a dynamic log.retention.ms beats a static log.retention.hours);
then each topic config takes its first broker synonym present, in LogConfig.AllTopicConfigSynonyms
order (log.retention.ms > log.retention.minutes > log.retention.hours; any negative retention
is -1, KafkaConfig.logRetentionTimeMillis). __cluster_metadata itself is KafkaMetadataLog's: its
LogConfig is built from metadata.log.* alone, never from the broker's log.* defaults.

Known or unknown: a value that decides a deletion must never be a guess.

- An override (1, 2) is known.
- The topic level is known when __cluster_metadata was read to its end and holds the topic's
  TopicRecord: its ConfigRecords are then all of the topic's overrides, and a name without one
  takes the broker default (a fact, not a guess). The topic level cannot be read -- and every
  value not overridden is then unknown, even with --server-properties, since a topic override
  (cleanup.policy=compact) may hide behind the broker's value -- when the log dir has no
  __cluster_metadata (a ZooKeeper-era broker keeps topic overrides in ZooKeeper; a KRaft broker
  may keep its metadata log in another log dir), with --no-cluster-metadata, when the metadata
  has no TopicRecord for the topic, and when it is damaged: any record after the damage could
  have changed any topic. Internal topics' creation configs are known.
- The broker level is known from a broker ConfigRecord, or from --server-properties: the
  broker's static config is that whole file, so a key it lacks is Kafka's default on that
  broker too. Without either, Kafka's default is a guess.
- cleanup.policy follows the same rules. With readable metadata and the TopicRecord, no
  cleanup.policy ConfigRecord means the broker's log.cleanup.policy, known only from
  --server-properties or a broker ConfigRecord; Kafka's "delete" is never assumed, or a
  compacted topic of a ZooKeeper-era log dir would lose its data to time retention.
- KAFKA-17584: once a dynamic broker config changes any of DynamicLogConfig's keys, Kafka 3.3.1
  rebuilds the broker defaults from the primary keys only (log.retention.ms, log.roll.ms,
  log.roll.jitter.ms, log.flush.interval.ms) and forgets a static log.retention.hours/minutes,
  log.roll.hours, log.roll.jitter.hours or log.flush.scheduler.interval.ms; later Kafka versions
  keep them. A value from such a synonym is then unknown: it depends on the broker's version.
- `assume_kafka_defaults` (--assume-kafka-defaults) makes every unknown value count, marked
  "(assumed)": the value kafkalog resolved anyway (what the readable part of __cluster_metadata
  says, else --server-properties', else Kafka's default).

`retention_deciding_configs` and `compaction_deciding_configs` name the values that decide what
retain and compact delete -- only those that can delete: an unknown retention taken as infinite
deletes nothing the broker kept -- and `unknown_configs` says which of them are unknown and how
to state each; `refusal_line` puts that on one line per partition.

Damaged __cluster_metadata is read as the broker reads a log: batches in order up to the first
invalid one (CRC, size, records that do not parse, offsets missing), on top of the latest valid
`.checkpoint` snapshot. The end of the last segment may be cut short by a crash (an incomplete
batch, or zeros): the broker truncates it on recovery, it was never part of the replicated log,
and it is not damage.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from kafkalog_cli.errors import InputError, KafkalogError, UsageError

LONG_MAX = (1 << 63) - 1
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = METADATA_TOPIC + "-0"


# ------------------------------------------------------------------ Kafka's validators
@dataclass(frozen=True)
class ConfigKey:
    """ConfigDef.ConfigKey, the part that checks a value: its type and validator (3.3.1)."""

    type: str                             # INT, LONG, DOUBLE, BOOLEAN, LIST, STRING
    at_least: float | None = None         # ConfigDef.Range
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
            if not _INTEGER.fullmatch(raw):
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
        if self.choices is not None and not set(value if isinstance(value, tuple) else (value,)) <= self.choices:
            raise ValueError(f"one of {', '.join(sorted(self.choices))}")
        if self.at_most is not None and not self.at_least <= value <= self.at_most:
            raise ValueError(f"between {_num(self.at_least)} and {_num(self.at_most)}")
        if self.at_least is not None and value < self.at_least:
            raise ValueError(f"at least {_num(self.at_least)}")


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# LogConfig.configDef at 3.3.1 (core/src/main/scala/kafka/log/LogConfig.scala), plus the broker's
# producer.id.expiration.ms (KafkaConfig: INT, at least 1).
CONFIG_DEF: dict[str, ConfigKey] = {
    "segment.bytes": ConfigKey("INT", 14),                # LegacyRecord.RECORD_OVERHEAD_V0
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
    "compression.type": ConfigKey("STRING", choices=frozenset(
        {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})),
    "preallocate": ConfigKey("BOOLEAN"),
    "message.format.version": ConfigKey("STRING"),
    "message.timestamp.type": ConfigKey("STRING", choices=frozenset({"CreateTime", "LogAppendTime"})),
    "message.timestamp.difference.max.ms": ConfigKey("LONG", 0),
    "leader.replication.throttled.replicas": ConfigKey("LIST"),
    "follower.replication.throttled.replicas": ConfigKey("LIST"),
    "message.downconversion.enable": ConfigKey("BOOLEAN"),
    "remote.storage.enable": ConfigKey("BOOLEAN"),
    "local.retention.ms": ConfigKey("LONG", -2),
    "local.retention.bytes": ConfigKey("LONG", -2),
    "producer.id.expiration.ms": ConfigKey("INT", 1),
}

# Kafka's topic-level config names (TopicConfig, 3.x and 4.x): accepted on the command line;
# those without a TopicConfig field do not change what kafkalog does, those newer than 3.3.1
# are not checked.
KAFKA_TOPIC_CONFIGS = frozenset(CONFIG_DEF) | frozenset({
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "remote.log.copy.disable", "remote.log.delete.on.disable",
})


def parse_value(name: str, raw: str, error: type[KafkalogError] = InputError, where: str = ""):
    """A Kafka-named value as its type, checked by Kafka's validator; `error` when it fails."""
    key = CONFIG_DEF.get(name)
    return str(raw).strip() if key is None else _parse_as(key, name, raw, error, where)


def _parse_as(key: ConfigKey, name: str, raw: str, error: type[KafkalogError], where: str):
    try:
        return key.parse(raw)
    except ValueError as e:
        raise error(f"{where}invalid value {str(raw).strip()!r} for config {name} ({e})") from None


def check_compaction_lags(values: Mapping[str, str], where: str) -> None:
    """LogConfig.validateValues: min.compaction.lag.ms must not exceed max.compaction.lag.ms."""
    if "min.compaction.lag.ms" in values and "max.compaction.lag.ms" in values:
        lo = parse_value("min.compaction.lag.ms", values["min.compaction.lag.ms"], UsageError)
        hi = parse_value("max.compaction.lag.ms", values["max.compaction.lag.ms"], UsageError)
        if lo > hi:
            raise UsageError(f"{where}min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})")


# ------------------------------------------------------------------ provenance
class ConfigSource(enum.Enum):
    """Where an effective value comes from; Kafka's DescribeConfigs names where they exist. The
    value is the text plans show."""

    TOPIC_CONFIG_OPTION = "--topic-config"
    CONFIG_OPTION = "--config"
    DYNAMIC_TOPIC_CONFIG = "cluster metadata"
    INTERNAL_TOPIC_CONFIG = "internal topic default"
    DYNAMIC_BROKER_CONFIG = "broker config in cluster metadata"
    DYNAMIC_DEFAULT_BROKER_CONFIG = "cluster-wide broker default in cluster metadata"
    STATIC_BROKER_CONFIG = "--server-properties"
    DEFAULT_CONFIG = "Kafka default"


class Unknown(enum.Enum):
    """Why the real value cannot be read (so kafkalog's value would be a guess)."""

    NO_BROKER_CONFIG = "no --server-properties, and __cluster_metadata has no broker config for it"
    NO_CLUSTER_METADATA = ("no __cluster_metadata in this log dir: the topic's configs live in ZooKeeper, "
                           "or in the KRaft metadata log of another log dir")
    CLUSTER_METADATA_IGNORED = "--no-cluster-metadata: the topic's own configs were not read"
    NO_TOPIC_RECORD = "__cluster_metadata has no TopicRecord for the topic"
    DAMAGED_METADATA = "__cluster_metadata is damaged: a record after the damage may have changed it"
    UNKNOWN_BROKER_ID = ("__cluster_metadata has per-broker configs, and this log dir's broker id is "
                         "unknown (no meta.properties)")
    KAFKA_17584 = ("a dynamic broker log config makes Kafka 3.3.1 ignore this static synonym "
                   "(KAFKA-17584), later versions keep it")

    @property
    def broker_config_states_it(self) -> bool:
        """--server-properties can state it (the topic level is known, the broker's is not)."""
        return self is Unknown.NO_BROKER_CONFIG


@dataclass(frozen=True)
class ConfigValue:
    """One effective value and its provenance."""

    name: str
    value: Any
    source: ConfigSource
    detail: str | None = None       # the broker property that gave it ("log.retention.hours=-1")
    unknown: Unknown | None = None  # why the real value cannot be read; None: it is known
    assumed: bool = False           # unknown, but taken: --assume-kafka-defaults

    @property
    def known(self) -> bool:
        return self.unknown is None

    @property
    def text(self) -> str:
        """The value as Kafka writes it (cleanup.policy "compact,delete", booleans lowercase)."""
        return _text(self.value)

    @property
    def origin(self) -> str:
        """Where it came from, in words: `--server-properties: log.retention.hours=-1`."""
        out = self.source.value + (f": {self.detail}" if self.detail else "")
        if self.assumed:
            out += " (assumed)"
        elif self.unknown is not None:
            out += " (unknown)"
        return out

    def __str__(self) -> str:
        return f"{self.name}={self.text} from {self.origin}"

    def to_dict(self) -> dict:
        return {"value": _json_value(self.value), "source": self.source.name, "origin": self.origin,
                "known": self.known, "assumed": self.assumed,
                "unknown": self.unknown.value if self.unknown else None}


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _json_value(value: Any) -> Any:
    return ",".join(value) if isinstance(value, tuple) else value


# ------------------------------------------------------------------ the effective config
@dataclass(frozen=True)
class TopicConfig:
    """A topic's effective storage configs; field names are Kafka's with '.' -> '_'. Built by
    ConfigResolver.for_topic, which records every value's provenance in `config_values`."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = ("delete",)
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60000
    message_timestamp_type: str = "CreateTime"
    max_message_bytes: int = 1048588
    preallocate: bool = False
    compression_type: str = "producer"
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    producer_id_expiration_ms: int = 86400000   # a broker config, needed to load producer snapshots
    config_values: Mapping[str, ConfigValue] = field(default_factory=dict, compare=False, repr=False)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    def get(self, name: str):
        return getattr(self, name.replace(".", "_"))

    def source(self, name: str) -> ConfigValue:
        """The value of `name` with its provenance (a TopicConfig built by hand: Kafka default)."""
        found = self.config_values.get(name)
        return found if found is not None else ConfigValue(name, self.get(name), ConfigSource.DEFAULT_CONFIG)

    @property
    def sources(self) -> dict[str, str]:
        """{name: where it came from} for the values that are not Kafka's defaults."""
        return {n: v.source.value for n, v in self.config_values.items() if v.source is not ConfigSource.DEFAULT_CONFIG}

    def provenance(self, names: Iterable[str]) -> dict[str, dict]:
        """{name: {value, source, origin, known, assumed, unknown}}, for JSON plans."""
        return {n: self.source(n).to_dict() for n in names}

    def describe(self, names: Iterable[str]) -> str:
        """`retention.ms=-1 from --server-properties: log.retention.hours=-1; retention.bytes=40000
        from cluster metadata; cleanup.policy=delete from Kafka default (assumed)`, for text plans."""
        return "; ".join(str(self.source(n)) for n in names)

    def to_dict(self) -> dict:
        return {n: _json_value(getattr(self, a)) for n, a in _FIELD_OF.items()}


_FIELD_OF = {f.name.replace("_", "."): f.name for f in dataclasses.fields(TopicConfig) if f.name != "config_values"}
FIELD_NAMES = tuple(_FIELD_OF)   # the Kafka names TopicConfig holds
_DEFAULTS = {n: TopicConfig.__dataclass_fields__[a].default for n, a in _FIELD_OF.items()}   # Kafka's, by name


# ------------------------------------------------------------------ what decides a deletion
def retention_deciding_configs(cfg: TopicConfig) -> tuple[str, ...]:
    """The values that decide what time and size retention delete (UnifiedLog.deleteOldSegments):
    cleanup.policy when it has delete, and each retention that is not infinite. An infinite
    retention deletes nothing, so an unknown one taken as infinite is no danger: the broker can
    only have deleted more. The log-start-offset rule needs no config."""
    if "delete" not in cfg.cleanup_policy:
        return ()
    limits = tuple(n for n in ("retention.ms", "retention.bytes") if cfg.get(n) >= 0)
    return ("cleanup.policy",) + limits if limits else ()


def compaction_deciding_configs(cfg: TopicConfig) -> tuple[str, ...]:
    """The values that decide what the cleaner removes (LogCleanerManager's choice of log and
    range, the tombstone and marker horizon), then retention's for compact,delete. An infinite
    max.compaction.lag.ms forces nothing, so it decides nothing."""
    if not cfg.compact:
        return ()
    names = ["cleanup.policy", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "delete.retention.ms"]
    if cfg.max_compaction_lag_ms != LONG_MAX:
        names.append("max.compaction.lag.ms")
    return tuple(names) + retention_deciding_configs(cfg)[1:]


@dataclass(frozen=True)
class UnknownConfig:
    """A value that decides a deletion and cannot be read, and the flags that state it."""

    topic: str
    name: str
    value: Any                 # what it would have been taken to be
    reason: Unknown
    how_to_state: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.name} is unknown ({self.reason.value}); state it with "
                f"{_either(self.how_to_state)}")

    def to_dict(self) -> dict:
        return {"topic": self.topic, "name": self.name, "value": _json_value(self.value),
                "reason": self.reason.value, "how_to_state": list(self.how_to_state)}


def how_to_state(topic: str, name: str, reason: Unknown) -> tuple[str, ...]:
    flags = ("--server-properties FILE",) if reason.broker_config_states_it else ()
    return flags + (f"--config {name}=...", f"--topic-config {topic}:{name}=...", "--assume-kafka-defaults")


def unknown_configs(topic: str, cfg: TopicConfig, names: Iterable[str]) -> list[UnknownConfig]:
    """Which of `names` in the topic's `cfg` are unknown (see the module docstring)."""
    out = []
    for name in names:
        v = cfg.source(name)
        if v.unknown is not None:
            out.append(UnknownConfig(topic, name, v.value, v.unknown, how_to_state(topic, name, v.unknown)))
    return out


def refusal_line(partition: str, unknowns: list[UnknownConfig]) -> str:
    """One line for a partition whose deletion by time, size or policy is refused:
    `ret-size-0: cleanup.policy, retention.ms are unknown (no --server-properties, ...); state
    them with --server-properties FILE, --config NAME=..., --topic-config ret-size:NAME=... or
    --assume-kafka-defaults`."""
    by_reason: dict[Unknown, list[UnknownConfig]] = {}
    for u in unknowns:
        by_reason.setdefault(u.reason, []).append(u)
    parts = []
    for reason, group in by_reason.items():
        if len(group) == 1:
            parts.append(str(group[0]))
            continue
        flags = how_to_state(group[0].topic, "NAME", reason)
        parts.append(f"{', '.join(u.name for u in group)} are unknown ({reason.value}); state them with "
                     f"{_either(flags)}")
    return f"{partition}: {'; '.join(parts)}"


def _either(options: tuple[str, ...]) -> str:
    return ", ".join(options[:-1]) + f" or {options[-1]}" if len(options) > 1 else options[0]


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
""")

# DynamicLogConfig.ReconfigurableConfigs: the first synonym of every LogConfig topic config but
# log.message.format.version. A dynamic change to any of them triggers KAFKA-17584 (above).
DYNAMIC_LOG_CONFIGS = frozenset(
    syns[0][0] for name, syns in BROKER_SYNONYMS.items() if name != "producer.id.expiration.ms"
) | {"min.insync.replicas", "unclean.leader.election.enable", "log.message.timestamp.difference.max.ms",
     "log.message.downconversion.enable"}

# Topic-creation configs of the internal topics (GroupCoordinator.offsetsTopicConfigs,
# TransactionStateManager.transactionTopicConfigs): value, and the broker property that sets it.
INTERNAL_TOPICS: dict[str, dict[str, tuple[str, str]]] = {
    "__consumer_offsets": {"cleanup.policy": ("compact", ""),
                           "segment.bytes": ("104857600", "offsets.topic.segment.bytes"),
                           "compression.type": ("producer", "")},
    "__transaction_state": {"cleanup.policy": ("compact", ""),
                            "segment.bytes": ("104857600", "transaction.state.log.segment.bytes"),
                            "compression.type": ("uncompressed", "")},
    # KafkaMetadataLog's whole LogConfig: these, and Kafka's defaults for the rest
    METADATA_TOPIC: {"segment.bytes": ("1073741824", "metadata.log.segment.bytes"),
                     "segment.ms": ("604800000", "metadata.log.segment.ms"),
                     "max.message.bytes": ("8388608", ""),     # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
                     "file.delete.delay.ms": ("60000", ""),
                     "retention.ms": ("-1", ""), "retention.bytes": ("-1", "")},
}

# Broker keys besides log.* that mark a file as a server.properties
BROKER_KEYS = frozenset(
    {prop for syns in BROKER_SYNONYMS.values() for prop, _ in syns}
    | {prop for configs in INTERNAL_TOPICS.values() for _, prop in configs.values() if prop}
    | {"broker.id", "node.id", "process.roles", "zookeeper.connect", "controller.quorum.voters",
       "controller.listener.names", "listeners", "advertised.listeners", "listener.security.protocol.map",
       "inter.broker.listener.name", "num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
       "socket.receive.buffer.bytes", "socket.request.max.bytes", "num.partitions",
       "num.recovery.threads.per.data.dir", "offsets.topic.replication.factor",
       "transaction.state.log.replication.factor", "transaction.state.log.min.isr", "min.insync.replicas",
       "unclean.leader.election.enable", "auto.create.topics.enable", "default.replication.factor",
       "delete.topic.enable", "group.initial.rebalance.delay.ms", "metadata.log.dir"})


def _synonym_group(prop: str) -> list[str]:
    """DynamicBrokerConfig.brokerConfigSynonyms: the keys a dynamic `prop` replaces (a dynamic
    log.flush.interval.ms replaces log.flush.scheduler.interval.ms, not the other way round)."""
    for synonyms in BROKER_SYNONYMS.values():
        group = [p for p, _ in synonyms]
        if len(group) > 1 and prop in group and prop != "log.flush.scheduler.interval.ms":
            return group
    return [prop]


def _broker_value(name: str, prop: str, mult: int, raw: str, error: type[KafkalogError] = InputError,
                  where: str = "") -> Any:
    """Broker property `prop` as topic config `name`: hours and minutes (INTs) converted, any
    negative retention -1 (KafkaConfig.logRetentionTimeMillis), then LogConfig's validator,
    since the broker builds its default LogConfig from it."""
    if mult != 1:
        raw = str(_parse_as(ConfigKey("INT"), prop, raw, error, where) * mult)
    if name == "retention.ms":
        value = _parse_as(ConfigKey("LONG"), prop, raw, error, where)
        return -1 if value < 0 else value
    return parse_value(name, raw, error, where)


def broker_defaults(props: Mapping[str, str], error: type[KafkalogError] = InputError,
                    where: str = "") -> dict[str, str]:
    """Topic-config values implied by server.properties, with Kafka's synonym precedence."""
    out: dict[str, str] = {}
    for name, synonyms in BROKER_SYNONYMS.items():
        for prop, mult in synonyms:
            if prop in props:
                out[name] = _text(_broker_value(name, prop, mult, props[prop], error, where))
                break
    return out


def read_properties(path: Path) -> dict[str, str]:
    """A java.util.Properties file (Properties.load, as Kafka's Utils.loadProps reads it)."""
    from kafkalog_cli.formats.checkpoints import parse_properties

    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InputError(e.strerror or str(e), path=str(path)) from None
    return parse_properties(data, path=str(path))


def read_server_properties(path: Path) -> dict[str, str]:
    """--server-properties: a broker config, refused (usage error) when it is none (no log.* or
    other broker key: /etc/passwd) or when a log setting is outside Kafka's validators."""
    props = read_properties(path)
    where = f"--server-properties {path}: "
    if not any(k.startswith("log.") or k in BROKER_KEYS for k in props):
        raise UsageError(f"{where}not a Kafka broker config (no log.* or other broker setting in it)")
    for name, synonyms in BROKER_SYNONYMS.items():   # every synonym: the broker parses them all
        for prop, mult in synonyms:
            if prop in props:
                _broker_value(name, prop, mult, props[prop], UsageError, where)
    for configs in INTERNAL_TOPICS.values():
        for name, (_, prop) in configs.items():
            if prop and prop in props:
                parse_value(name, props[prop], UsageError, where)
    return props


# ------------------------------------------------------------------ command-line overrides
def parse_key_values(pairs: Iterable[str], option: str) -> dict[str, str]:
    """Command-line topic configs: Kafka's names only, values checked now by Kafka's validators
    (a typo must not fall back to a default in a command that deletes data)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"{option} expects KEY=VALUE, got {pair!r}")
        if key not in KAFKA_TOPIC_CONFIGS:
            raise UsageError(f"{option}: {key!r} is not a Kafka topic config{_did_you_mean(key, KAFKA_TOPIC_CONFIGS)}")
        parse_value(key, value, UsageError, f"{option}: ")
        out[key] = value
    check_compaction_lags(out, f"{option}: ")
    return out


def parse_topic_key_values(items: Iterable[str], topics: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """--topic-config TOPIC:KEY=VALUE items; with `topics` (those of the log dirs processed), a
    topic that is not among them is a usage error."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        topic, sep, kv = item.partition(":")
        if not sep or not topic:
            raise UsageError(f"--topic-config expects TOPIC:KEY=VALUE, got {item!r}")
        out.setdefault(topic, {}).update(parse_key_values([kv], "--topic-config"))
    for topic, values in out.items():
        check_compaction_lags(values, f"--topic-config {topic}: ")
    if topics is not None:
        check_topic_overrides(out, topics)
    return out


def check_topic_overrides(topic_overrides: Mapping[str, Mapping[str, str]], topics: Iterable[str]) -> None:
    """A --topic-config for a topic with no partition in the log dirs processed is a typo."""
    present = set(topics)
    for topic in topic_overrides:
        if topic not in present:
            raise UsageError(f"--topic-config: topic {topic!r} has no partition in the log dirs given"
                             f"{_did_you_mean(topic, present)}")


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib

    near = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {near[0]}?)" if near else ""


# ------------------------------------------------------------------ __cluster_metadata
class MetadataState(enum.Enum):
    READ = "read"            # read to its end: the topic level is known for the topics it holds
    DAMAGED = "damaged"      # read up to `damage`: any later record could have changed any topic
    ABSENT = "absent"        # the log dir has no __cluster_metadata-0
    IGNORED = "ignored"      # --no-cluster-metadata


@dataclass(frozen=True)
class MetadataDamage:
    """Where reading __cluster_metadata stopped, and why."""

    path: str
    position: int | None
    reason: str

    def __str__(self) -> str:
        where = self.path + (f": byte {self.position}" if self.position is not None else "")
        return f"{where}: {self.reason}"


@dataclass(frozen=True, eq=False)
class ClusterMetadata(Mapping):
    """The configs a log dir's __cluster_metadata records (KRaft), and how far it could be read.
    As a Mapping: {topic: its config overrides}."""

    state: MetadataState
    topics: frozenset = frozenset()                                  # live TopicRecords
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # "" = cluster default
    node_id: int | None = None                                       # the log dir's broker (meta.properties)
    damage: MetadataDamage | None = None                             # the first invalid place found
    snapshot: str | None = None                                      # the .checkpoint read, if any

    @classmethod
    def of(cls, topic_configs: Mapping[str, Mapping[str, str]]) -> "ClusterMetadata":
        """Topic configs known in full (library callers, tests)."""
        return cls(MetadataState.READ, frozenset(topic_configs), dict(topic_configs))

    def __getitem__(self, topic: str) -> Mapping[str, str]:
        return self.topic_configs[topic]

    def __iter__(self) -> Iterator[str]:
        return iter(self.topic_configs)

    def __len__(self) -> int:
        return len(self.topic_configs)

    def topic_unreadable(self, topic: str) -> Unknown | None:
        """Why the topic's own configs cannot be read; None when they can."""
        if self.state is MetadataState.READ:
            return None if topic in self.topics else Unknown.NO_TOPIC_RECORD
        return {MetadataState.DAMAGED: Unknown.DAMAGED_METADATA, MetadataState.ABSENT: Unknown.NO_CLUSTER_METADATA,
                MetadataState.IGNORED: Unknown.CLUSTER_METADATA_IGNORED}[self.state]

    @property
    def warning(self) -> str | None:
        """One line for stderr when something was damaged (None otherwise)."""
        if self.damage is None:
            return None
        if self.state is MetadataState.DAMAGED:
            return (f"{self.damage}: __cluster_metadata read up to here; the configs of topics not stated "
                    f"with --topic-config or --config are unknown")
        instead = self.snapshot or "the log from its start"
        return f"{self.damage}: a damaged snapshot, skipped: read {instead} and the log instead"


_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


def read_cluster_metadata(log_dir: Path | str) -> ClusterMetadata:
    """The topic and broker configs in `<log_dir>/__cluster_metadata-0`: the latest valid KRaft
    snapshot (`<end offset>-<epoch>.checkpoint`), then the log from the snapshot's end offset,
    up to the first invalid batch. Never raises for what it reads: damage is in the result."""
    from kafkalog_cli.formats.internal.cluster_metadata import ConfigsImage

    log_dir = Path(log_dir)
    node_id = _node_id(log_dir)
    meta = log_dir / METADATA_PARTITION_DIR
    if not meta.is_dir():
        return ClusterMetadata(MetadataState.ABSENT, node_id=node_id)
    read = replay_metadata_log(meta, ConfigsImage)
    image = read.image
    state = MetadataState.DAMAGED if read.damage is not None else MetadataState.READ
    return ClusterMetadata(state, image.topics, image.topic_configs, image.broker_configs, node_id,
                           read.skipped or read.damage, read.snapshot)


@dataclass
class MetadataLogRead:
    """What replay_metadata_log read: the image, the snapshot it started from (None: the log
    from its start), where reading stopped (damage) or the first damaged snapshot skipped, and
    the offset after the last record read."""

    image: Any
    snapshot: str | None
    damage: MetadataDamage | None
    skipped: MetadataDamage | None
    next_offset: int


def replay_metadata_log(meta: Path, new_image, until: int | None = None) -> MetadataLogRead:
    """Replay `meta` (a __cluster_metadata-0 dir) into `new_image()`: the latest snapshot that
    reads whole (ending at or before `until` + 1), then the log's records from its end offset up
    to `until` (None: the end), up to the first invalid batch. The image's `replay(record,
    offset)` gets each decoded record (offset None inside a snapshot), `undecoded(offset, error)`
    each record that does not decode. Never raises for what it reads: damage is in the result."""
    from kafkalog_cli.storage.partition import Partition

    try:
        partition = Partition.open(meta)
        names = os.listdir(meta)
    except (KafkalogError, OSError) as e:
        damage = MetadataDamage(str(meta), None, f"cannot be read: {getattr(e, 'message', None) or e}")
        return MetadataLogRead(new_image(), None, damage, None, 0)
    snapshots = sorted(((int(m.group(1)), n) for n in names if (m := _SNAPSHOT_NAME.fullmatch(n))
                        and (until is None or int(m.group(1)) <= until + 1)), reverse=True)
    image, start, used, skipped = _latest_valid_snapshot(meta, snapshots, new_image)
    damage = None
    for i, seg in enumerate(partition.segments):
        if until is not None and seg.base_offset > until:
            break
        damage, start = _replay(seg, image, start, tail_may_be_cut=i == len(partition.segments) - 1, until=until)
        if damage is not None:
            break
    if damage is None and snapshots and start < snapshots[0][0]:
        damage = skipped      # the records up to the damaged snapshot's end are nowhere else
    return MetadataLogRead(image, used, damage, skipped, start)


def _latest_valid_snapshot(meta: Path, snapshots: list[tuple[int, str]], new_image):
    """(image, end offset, file name, the first damaged snapshot skipped) of the newest snapshot
    that reads whole; an empty image at offset 0 when none does."""
    from kafkalog_cli.storage.segment import Segment

    skipped = None
    for end_offset, name in snapshots:
        image = new_image()
        damage, _ = _replay(Segment.from_file(meta / name), image, None, tail_may_be_cut=False)
        if damage is None:
            return image, end_offset, name, skipped
        skipped = skipped or damage
    return new_image(), 0, None, skipped


cluster_metadata_configs = read_cluster_metadata   # the name ops and tests have used


def _replay(seg, image, start: int | None, tail_may_be_cut: bool,
            until: int | None = None) -> tuple[MetadataDamage | None, int | None]:
    """Replay one file's records at offsets >= `start` (and <= `until`) into `image` (`start`
    None: all of them, for a snapshot, whose offsets are its own). The log's offsets must follow
    on from `start` without a hole. Returns where the file stops being valid (or None) and the
    next offset."""
    from kafkalog_cli.formats.internal.cluster_metadata import decode_metadata_record
    from kafkalog_cli.formats.records import iter_batches
    from kafkalog_cli.storage.segment import read_file

    path = str(seg.source_path)
    try:
        buf = read_file(seg.source_path)   # bytes, not a mapping: records keep views into it
    except KafkalogError as e:
        return MetadataDamage(path, None, f"cannot be read: {e.message}"), start
    expected, pos = start, 0
    try:
        for batch in iter_batches(buf):
            pos = batch.position
            batch.ensure_valid()                  # Kafka's CorruptRecordException text
            if expected is not None and batch.last_offset < expected:
                pos += batch.size
                continue
            if until is not None and batch.base_offset > until and (expected is None or expected > until):
                return None, expected
            if expected is not None and batch.base_offset > expected:
                return MetadataDamage(path, pos, f"offsets {expected} to {batch.base_offset - 1} are missing"), expected
            if not batch.is_control:
                for rec in batch.records():
                    if rec.value is None or expected is not None and rec.offset < expected:
                        continue
                    if until is not None and rec.offset > until:
                        break
                    offset = rec.offset if expected is not None else None
                    try:
                        record = decode_metadata_record(rec.value)
                    except KafkalogError as e:
                        image.undecoded(offset, e)   # a record 3.3.1 cannot read sets no config
                        continue
                    image.replay(record, offset)
            if expected is not None:
                expected = batch.last_offset + 1 if until is None else min(batch.last_offset, until) + 1
            pos = batch.position + batch.size
    except KafkalogError as e:
        at = e.position if e.position is not None else pos
        if tail_may_be_cut and buf.count(0, at) == len(buf) - at:
            return None, expected                 # zeros to the end: a crash's unwritten tail
        return MetadataDamage(path, at, e.message), expected
    if pos < len(buf) and not tail_may_be_cut:
        return MetadataDamage(path, pos, "an incomplete batch"), expected
    return None, expected


def _node_id(log_dir: Path) -> int | None:
    """node.id (KRaft) or broker.id (ZooKeeper era) from the log dir's meta.properties."""
    from kafkalog_cli.formats.checkpoints import parse_properties

    path = log_dir / "meta.properties"
    try:
        return node_id_of(parse_properties(path.read_bytes(), path=str(path)))
    except (OSError, KafkalogError):
        return None


def node_id_of(props: Mapping[str, str]) -> int | None:
    """node.id (KRaft) or broker.id (ZooKeeper era) of meta.properties or server.properties."""
    raw = props.get("node.id", props.get("broker.id", "")).strip()
    return int(raw) if _INTEGER.fullmatch(raw) else None


# ------------------------------------------------------------------ resolution
@dataclass
class ConfigResolver:
    """Resolves each topic's TopicConfig, every value with its provenance (module docstring).

    `server_properties` None: none given (broker defaults are then unknown). `cluster_metadata`:
    a ClusterMetadata (read_cluster_metadata), a plain {topic: configs} taken as read in full, or
    None: the log dir's own was not read."""

    server_properties: Mapping[str, str] | None = None
    cluster_metadata: Mapping[str, Mapping[str, str]] | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    topic_overrides: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    assume_kafka_defaults: bool = False
    _broker: dict | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def metadata(self) -> ClusterMetadata:
        meta = self.cluster_metadata
        if isinstance(meta, ClusterMetadata):
            return meta
        return ClusterMetadata(MetadataState.ABSENT) if meta is None else ClusterMetadata.of(meta)

    @property
    def warning(self) -> str | None:
        return self.metadata.warning

    def for_topic(self, topic: str) -> TopicConfig:
        meta = self.metadata
        values = {name: self._resolve(topic, name, meta) for name in FIELD_NAMES}
        if self.assume_kafka_defaults:
            values = {n: dataclasses.replace(v, unknown=None, assumed=True) if v.unknown else v
                      for n, v in values.items()}
        return TopicConfig(**{_FIELD_OF[n]: v.value for n, v in values.items()}, config_values=values)

    def _resolve(self, topic: str, name: str, meta: ClusterMetadata) -> ConfigValue:
        for source, layer in ((ConfigSource.TOPIC_CONFIG_OPTION, self.topic_overrides.get(topic, {})),
                              (ConfigSource.CONFIG_OPTION, self.overrides)):
            if name in layer:
                return ConfigValue(name, parse_value(name, layer[name]), source)
        internal = INTERNAL_TOPICS.get(topic, {})
        if topic == METADATA_TOPIC:   # KafkaMetadataLog: no topic record, no broker log defaults
            return self._internal(name, internal[name]) if name in internal else \
                ConfigValue(name, _DEFAULTS[name], ConfigSource.DEFAULT_CONFIG)
        unreadable = meta.topic_unreadable(topic)
        if unreadable is not None and name in internal:
            return self._internal(name, internal[name])
        recorded = meta.topic_configs.get(topic, {}).get(name)
        if recorded is not None:    # unknown when read before damage: a later record may change it
            return ConfigValue(name, parse_value(name, recorded, where="__cluster_metadata: "),
                               ConfigSource.DYNAMIC_TOPIC_CONFIG, unknown=unreadable)
        broker = self._broker_level(meta)[name]
        return broker if unreadable is None else dataclasses.replace(broker, unknown=unreadable)

    def _internal(self, name: str, creation: tuple[str, str]) -> ConfigValue:
        """An internal topic's creation config: known, unless a broker property sets it and no
        --server-properties was given."""
        raw, prop = creation
        props = self.server_properties
        if prop and props is not None and prop in props:
            return ConfigValue(name, parse_value(name, props[prop]), ConfigSource.INTERNAL_TOPIC_CONFIG,
                               f"{prop}={props[prop].strip()}")
        unknown = Unknown.NO_BROKER_CONFIG if prop and props is None else None
        return ConfigValue(name, parse_value(name, raw), ConfigSource.INTERNAL_TOPIC_CONFIG, unknown=unknown)

    def _broker_level(self, meta: ClusterMetadata) -> dict[str, ConfigValue]:
        """The broker's default for every topic config name, computed once."""
        if self._broker is None:
            self._broker = _broker_level(self.server_properties, meta, self._node_id(meta))
        return self._broker

    def _node_id(self, meta: ClusterMetadata) -> int | None:
        return meta.node_id if meta.node_id is not None else node_id_of(self.server_properties or {})


def _broker_level(static: Mapping[str, str] | None, meta: ClusterMetadata, node_id: int | None
                  ) -> dict[str, ConfigValue]:
    """The broker's default for every topic config: static props, overridden by the cluster-wide
    dynamic configs, then by this broker's (DynamicBrokerConfig.updateCurrentConfig); each topic
    config takes its first synonym present."""
    readable = meta.state in (MetadataState.READ, MetadataState.DAMAGED)
    per_broker = {k: v for k, v in meta.broker_configs.items() if k != ""} if readable else {}
    layers = [(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, None, meta.broker_configs.get("", {}) if readable else {})]
    if node_id is not None:
        layers.append((ConfigSource.DYNAMIC_BROKER_CONFIG, f"broker {node_id}", per_broker.get(str(node_id), {})))
    props = _merged_broker_props(static or {}, layers)
    dynamic = {k: v for _, _, layer in layers for k, v in layer.items()}
    kafka_17584 = static is not None and any(k in DYNAMIC_LOG_CONFIGS and static.get(k) != v for k, v in dynamic.items())
    maybe_other_broker = set().union(*per_broker.values()) if node_id is None and per_broker else set()
    out: dict[str, ConfigValue] = {}
    for name in FIELD_NAMES:
        value = ConfigValue(name, _DEFAULTS[name], ConfigSource.DEFAULT_CONFIG,
                            unknown=Unknown.NO_BROKER_CONFIG if static is None else None)
        for i, (prop, mult) in enumerate(BROKER_SYNONYMS.get(name, ())):
            if prop in props:
                raw, source, who = props[prop]
                v = _broker_value(name, prop, mult, raw, where=f"{source.value}: ")
                # KAFKA-17584: a later synonym than DynamicLogConfig's own is forgotten
                unknown = Unknown.KAFKA_17584 if kafka_17584 and i > 0 and v != _DEFAULTS[name] else None
                value = ConfigValue(name, v, source, f"{prop}={raw.strip()}" + (f" ({who})" if who else ""), unknown)
                break
        if any(prop in maybe_other_broker for prop, _ in BROKER_SYNONYMS.get(name, ())):
            value = dataclasses.replace(value, unknown=Unknown.UNKNOWN_BROKER_ID)
        out[name] = value
    return out


def _merged_broker_props(static: Mapping[str, str], layers) -> dict[str, tuple[str, ConfigSource, str | None]]:
    """{broker property: (value, source, which broker)}: DynamicBrokerConfig.overrideProps, a
    dynamic key replacing its static synonyms (brokerConfigSynonyms)."""
    props = {k: (v, ConfigSource.STATIC_BROKER_CONFIG, None) for k, v in static.items()}
    for source, who, layer in layers:
        for k, v in layer.items():
            for synonym in _synonym_group(k):
                props.pop(synonym, None)
            props[k] = (v, source, who)
    return props
