"""Resolution: each topic's effective TopicConfig, every value with its provenance (the package
docstring), and which values decide a deletion and are unknown."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.config.config_sources import (
    ClusterMetadata,
    MetadataState,
    node_id_of,
    read_cluster_metadata,
)
from kafkalog_cli.config.defaults import (
    BROKER_SYNONYMS,
    DYNAMIC_LOG_CONFIGS,
    INTERNAL_TOPICS,
    LONG_MAX,
    METADATA_TOPIC,
    TOPIC_ONLY_CONFIGS,
    broker_value,
    json_value,
    parse_value,
    synonym_group,
)
from kafkalog_cli.config.provenance import ConfigSource, ConfigValue, Unknown
from kafkalog_cli.config.versions import (
    SEGMENT_BYTES_FLOOR_1MIB,
    KafkaVersion,
    KafkaVersions,
    read_kafka_versions,
)
from kafkalog_cli.errors import UsageError


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
    producer_id_expiration_ms: int = 86400000  # a broker config, needed to load producer snapshots
    # tiered storage (LogConfig.RemoteLogConfig, 3.6+; remote.log.copy.disable 3.9+); -2: as retention.*
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    config_values: Mapping[str, ConfigValue] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def local_retention_ms_effective(self) -> int:
        """LogConfig.localRetentionMs: -2 means retention.ms."""
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def local_retention_bytes_effective(self) -> int:
        """LogConfig.localRetentionBytes: -2 means retention.bytes."""
        return (
            self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes
        )

    def get(self, name: str):
        return getattr(self, name.replace(".", "_"))

    def source(self, name: str) -> ConfigValue:
        """The value of `name` with its provenance (a TopicConfig built by hand: Kafka default)."""
        found = self.config_values.get(name)
        return (
            found
            if found is not None
            else ConfigValue(name, self.get(name), ConfigSource.DEFAULT_CONFIG)
        )

    @property
    def sources(self) -> dict[str, str]:
        """{name: where it came from} for the values that are not Kafka's defaults."""
        return {
            n: v.source.value
            for n, v in self.config_values.items()
            if v.source is not ConfigSource.DEFAULT_CONFIG
        }

    def provenance(self, names: Iterable[str]) -> dict[str, dict]:
        """{name: {value, source, origin, known, assumed, unknown}}, for JSON plans."""
        return {n: self.source(n).to_dict() for n in names}

    def describe(self, names: Iterable[str]) -> str:
        """`retention.ms=-1 from --server-properties: log.retention.hours=-1; retention.bytes=40000
        from cluster metadata; cleanup.policy=delete from Kafka default (assumed)`, for text plans."""
        return "; ".join(str(self.source(n)) for n in names)

    def to_dict(self) -> dict:
        return {n: json_value(getattr(self, a)) for n, a in _FIELD_OF.items()}


_FIELD_OF = {
    f.name.replace("_", "."): f.name
    for f in dataclasses.fields(TopicConfig)
    if f.name != "config_values"
}
FIELD_NAMES = tuple(_FIELD_OF)  # the Kafka names TopicConfig holds
_DEFAULTS = {
    n: TopicConfig.__dataclass_fields__[a].default for n, a in _FIELD_OF.items()
}  # Kafka's, by name


# ------------------------------------------------------------------ what decides a deletion
def retention_deciding_configs(cfg: TopicConfig, tiered: bool = False) -> tuple[str, ...]:
    """The values that decide what time and size retention delete (UnifiedLog.deleteOldSegments):
    cleanup.policy when it has delete, and each retention that is not infinite. An infinite
    retention deletes nothing, so an unknown one taken as infinite is no danger: the broker can
    only have deleted more. The log-start-offset rule needs no config.

    `tiered` (the partition may be remote-enabled, ops.tiered): remote.storage.enable decides too
    (a tiered partition keeps what was not uploaded), and local.retention.ms/bytes instead of
    retention.* where they are set (LogConfig.localRetentionMs/Bytes; -2: retention.*)."""
    if "delete" not in cfg.cleanup_policy:
        return ()
    limits = tuple(n for n in ("retention.ms", "retention.bytes") if cfg.get(n) >= 0)
    if tiered:
        limits = tuple(
            dict.fromkeys(
                (f"local.{n}" if cfg.get(f"local.{n}") != -2 else n)
                for n in ("retention.ms", "retention.bytes")
                if (
                    cfg.local_retention_ms_effective
                    if n == "retention.ms"
                    else cfg.local_retention_bytes_effective
                )
                >= 0
            )
        )
    if not limits:
        return ()
    remote = ("remote.storage.enable",) if tiered and not cfg.compact else ()
    return ("cleanup.policy",) + remote + limits


def compaction_deciding_configs(cfg: TopicConfig) -> tuple[str, ...]:
    """The values that decide what the cleaner removes (LogCleanerManager's choice of log and
    range, the tombstone and marker horizon), then retention's for compact,delete. An infinite
    max.compaction.lag.ms forces nothing, so it decides nothing."""
    if not cfg.compact:
        return ()
    names = [
        "cleanup.policy",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "delete.retention.ms",
    ]
    if cfg.max_compaction_lag_ms != LONG_MAX:
        names.append("max.compaction.lag.ms")
    return tuple(names) + retention_deciding_configs(cfg)[1:]


@dataclass(frozen=True)
class UnknownConfig:
    """A value that decides a deletion and cannot be read, and the flags that state it."""

    topic: str
    name: str
    value: Any  # what it would have been taken to be
    reason: Unknown
    how_to_state: tuple[str, ...]

    def __str__(self) -> str:
        return (
            f"{self.name} is unknown ({self.reason.value}); state it with "
            f"{_either(self.how_to_state)}"
        )

    def to_dict(self) -> dict:
        return {
            "topic": self.topic,
            "name": self.name,
            "value": json_value(self.value),
            "reason": self.reason.value,
            "how_to_state": list(self.how_to_state),
        }


def how_to_state(topic: str, name: str, reason: Unknown) -> tuple[str, ...]:
    flags = ("--server-properties FILE",) if reason.broker_config_states_it else ()
    return flags + (
        f"--config {name}=...",
        f"--topic-config {topic}:{name}=...",
        "--assume-kafka-defaults",
    )


def unknown_configs(topic: str, cfg: TopicConfig, names: Iterable[str]) -> list[UnknownConfig]:
    """Which of `names` in the topic's `cfg` are unknown (see the module docstring)."""
    out = []
    for name in names:
        v = cfg.source(name)
        if v.unknown is not None:
            out.append(
                UnknownConfig(topic, name, v.value, v.unknown, how_to_state(topic, name, v.unknown))
            )
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
        parts.append(
            f"{', '.join(u.name for u in group)} are unknown ({reason.value}); state them with "
            f"{_either(flags)}"
        )
    return f"{partition}: {'; '.join(parts)}"


def _either(options: tuple[str, ...]) -> str:
    return ", ".join(options[:-1]) + f" or {options[-1]}" if len(options) > 1 else options[0]


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
    kafka_versions: KafkaVersions | None = None  # None: nothing read (3.3 to 4.2, none stated)
    remote_log_metadata: tuple = ()  # --remote-log-metadata: where __remote_log_metadata partitions are
    _broker: dict | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def of_log_dir(cls, log_dir, stated: KafkaVersion | None = None, **kw) -> ConfigResolver:
        """The resolver an op uses when none is given: the log dir's own __cluster_metadata and
        the Kafka versions it allows."""
        meta = read_cluster_metadata(log_dir)
        return cls(cluster_metadata=meta, kafka_versions=versions_of(log_dir, meta, stated), **kw)

    @property
    def versions(self) -> KafkaVersions:
        return self.kafka_versions if self.kafka_versions is not None else KafkaVersions()

    def check_version_bounds(self) -> None:
        """The validators that changed with the version, on the command line's values, where the next
        broker is known to apply them: 4.0's segment.bytes floor of 1 MiB (KIP-1030: LogConfig
        SEGMENT_BYTES_CONFIG atLeast(1024 * 1024); before, atLeast(LegacyRecord.RECORD_OVERHEAD_V0))."""
        if self.versions.applies(SEGMENT_BYTES_FLOOR_1MIB) is not True:
            return
        layers = [("--config", self.overrides)] + [
            (f"--topic-config {t}", v) for t, v in self.topic_overrides.items()
        ]
        for option, values in layers:
            raw = values.get("segment.bytes")
            if raw is not None and int(raw) < 1 << 20:
                raise UsageError(
                    f"{option}: invalid value {raw} for config segment.bytes (at least 1048576 from "
                    f"Kafka 4.0, KIP-1030; {self.versions.decide(SEGMENT_BYTES_FLOOR_1MIB).by})"
                )

    def check_retention_bounds(self, topics: Iterable[str]) -> None:
        """config.bounds on the values given (--config, --topic-config, --server-properties) for
        `topics` (those of the log dirs processed): tiered storage's local retention within the
        total, as LogConfig checks it."""
        from kafkalog_cli.config.bounds import (
            BROKER_INVOLVED,
            INVOLVED,
            SYSTEM_ENABLE,
            check_retention_bounds,
        )

        meta = self.metadata

        def given(topic: str) -> tuple[str, set]:
            own = set(self.topic_overrides.get(topic, {}))
            return (f"--topic-config {topic}" if own & set(INVOLVED) else "--config"), own | set(
                self.overrides
            )

        def effective(topic: str):
            cfg = self.for_topic(topic).config_values
            if any(not cfg[n].known and not cfg[n].assumed for n in INVOLVED if n in cfg):
                return None
            return {n: cfg[n].value for n in INVOLVED if n in cfg}

        props = self.server_properties or {}
        broker = None
        if props:
            on = props.get(SYSTEM_ENABLE, "").strip().lower() == "true" and any(
                p in props for p in BROKER_INVOLVED
            )
            broker = (on, {n: v.value for n, v in self._broker_level(meta).items()})
        check_retention_bounds(self.versions, topics, given, effective, broker)

    def broker_property(self, prop: str) -> tuple[str | None, str]:
        """A broker property that is no topic config's synonym (remote.log.storage.system.enable):
        (its raw value, where from), or (None, why unknown). Static only: server.properties."""
        props = self.server_properties
        if props is None:
            return None, "no --server-properties"
        if prop in props:
            return props[prop].strip(), f"--server-properties: {prop}={props[prop].strip()}"
        return None, f"--server-properties has no {prop}"

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
            values = {
                n: dataclasses.replace(v, unknown=None, assumed=True) if v.unknown else v
                for n, v in values.items()
            }
        return TopicConfig(
            **{_FIELD_OF[n]: v.value for n, v in values.items()}, config_values=values
        )

    def _resolve(self, topic: str, name: str, meta: ClusterMetadata) -> ConfigValue:
        for source, layer in (
            (ConfigSource.TOPIC_CONFIG_OPTION, self.topic_overrides.get(topic, {})),
            (ConfigSource.CONFIG_OPTION, self.overrides),
        ):
            if name in layer:
                return ConfigValue(name, parse_value(name, layer[name]), source)
        internal = INTERNAL_TOPICS.get(topic, {})
        if topic == METADATA_TOPIC:  # KafkaMetadataLog: no topic record, no broker log defaults
            return (
                self._internal(name, internal[name])
                if name in internal
                else ConfigValue(name, _DEFAULTS[name], ConfigSource.DEFAULT_CONFIG)
            )
        unreadable = meta.topic_unreadable(topic)
        if unreadable is not None and name in internal:
            return self._internal(name, internal[name])
        recorded = meta.topic_configs.get(topic, {}).get(name)
        if recorded is not None:  # unknown when read before damage: a later record may change it
            return ConfigValue(
                name,
                parse_value(name, recorded, where="__cluster_metadata: "),
                ConfigSource.DYNAMIC_TOPIC_CONFIG,
                unknown=unreadable,
            )
        broker = self._broker_level(meta)[name]
        return broker if unreadable is None else dataclasses.replace(broker, unknown=unreadable)

    def _internal(self, name: str, creation: tuple[str, str]) -> ConfigValue:
        """An internal topic's creation config: known, unless a broker property sets it and no
        --server-properties was given."""
        raw, prop = creation
        props = self.server_properties
        if prop and props is not None and prop in props:
            return ConfigValue(
                name,
                parse_value(name, props[prop]),
                ConfigSource.INTERNAL_TOPIC_CONFIG,
                f"{prop}={props[prop].strip()}",
            )
        unknown = Unknown.NO_BROKER_CONFIG if prop and props is None else None
        return ConfigValue(
            name, parse_value(name, raw), ConfigSource.INTERNAL_TOPIC_CONFIG, unknown=unknown
        )

    def _broker_level(self, meta: ClusterMetadata) -> dict[str, ConfigValue]:
        """The broker's default for every topic config name, computed once."""
        if self._broker is None:
            self._broker = _broker_level(self.server_properties, meta, self._node_id(meta))
        return self._broker

    def _node_id(self, meta: ClusterMetadata) -> int | None:
        return (
            meta.node_id if meta.node_id is not None else node_id_of(self.server_properties or {})
        )


def _broker_level(
    static: Mapping[str, str] | None, meta: ClusterMetadata, node_id: int | None
) -> dict[str, ConfigValue]:
    """The broker's default for every topic config: static props, overridden by the cluster-wide
    dynamic configs, then by this broker's (DynamicBrokerConfig.updateCurrentConfig); each topic
    config takes its first synonym present."""
    readable = meta.state in (MetadataState.READ, MetadataState.DAMAGED)
    per_broker = {k: v for k, v in meta.broker_configs.items() if k != ""} if readable else {}
    layers: list[tuple[ConfigSource, str | None, Mapping[str, str]]] = [
        (
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            None,
            meta.broker_configs.get("", {}) if readable else {},
        )
    ]
    if node_id is not None:
        layers.append(
            (
                ConfigSource.DYNAMIC_BROKER_CONFIG,
                f"broker {node_id}",
                per_broker.get(str(node_id), {}),
            )
        )
    props = _merged_broker_props(static or {}, layers)
    dynamic = {k: v for _, _, layer in layers for k, v in layer.items()}
    kafka_17584 = static is not None and any(
        k in DYNAMIC_LOG_CONFIGS and static.get(k) != v for k, v in dynamic.items()
    )
    maybe_other_broker = (
        set().union(*per_broker.values()) if node_id is None and per_broker else set()
    )
    out: dict[str, ConfigValue] = {}
    for name in FIELD_NAMES:
        value = ConfigValue(
            name,
            _DEFAULTS[name],
            ConfigSource.DEFAULT_CONFIG,
            unknown=Unknown.NO_BROKER_CONFIG
            if static is None and name not in TOPIC_ONLY_CONFIGS
            else None,
        )
        for i, (prop, mult) in enumerate(BROKER_SYNONYMS.get(name, ())):
            if prop in props:
                raw, source, who = props[prop]
                v = broker_value(name, prop, mult, raw, where=f"{source.value}: ")
                # KAFKA-17584: a later synonym than DynamicLogConfig's own is forgotten
                unknown = (
                    Unknown.KAFKA_17584 if kafka_17584 and i > 0 and v != _DEFAULTS[name] else None
                )
                value = ConfigValue(
                    name, v, source, f"{prop}={raw.strip()}" + (f" ({who})" if who else ""), unknown
                )
                break
        if any(prop in maybe_other_broker for prop, _ in BROKER_SYNONYMS.get(name, ())):
            value = dataclasses.replace(value, unknown=Unknown.UNKNOWN_BROKER_ID)
        out[name] = value
    return out


def _merged_broker_props(
    static: Mapping[str, str], layers: Iterable[tuple[ConfigSource, str | None, Mapping[str, str]]]
) -> dict[str, tuple[str, ConfigSource, str | None]]:
    """{broker property: (value, source, which broker)}: DynamicBrokerConfig.overrideProps, a
    dynamic key replacing its static synonyms (brokerConfigSynonyms)."""
    props: dict[str, tuple[str, ConfigSource, str | None]] = {
        k: (v, ConfigSource.STATIC_BROKER_CONFIG, None) for k, v in static.items()
    }
    for source, who, layer in layers:
        for k, v in layer.items():
            for synonym in synonym_group(k):
                props.pop(synonym, None)
            props[k] = (v, source, who)
    return props


def versions_of(
    log_dir, meta: ClusterMetadata, stated: KafkaVersion | None = None
) -> KafkaVersions:
    """The Kafka versions `log_dir` allows (config.versions), its __cluster_metadata read as `meta`."""
    from pathlib import Path

    level = (
        meta.metadata_version if meta.state in (MetadataState.READ, MetadataState.DAMAGED) else None
    )
    return read_kafka_versions(log_dir, level, str(Path(log_dir) / "__cluster_metadata-0"), stated)
