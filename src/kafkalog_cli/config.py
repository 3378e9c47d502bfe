"""Topic configs with Kafka's names, units and defaults (spec §12: LogConfig, ServerLogConfigs).

Resolution, most specific wins:

  1. Kafka's defaults (3.x), then the internal topics' own (__consumer_offsets and
     __transaction_state are compacted with segment.bytes 104857600);
  2. `--server-properties FILE`: the broker's synonyms (log.segment.bytes, log.roll.ms/hours,
     log.retention.ms/minutes/hours, ...), with Kafka's precedence among synonyms
     (log.retention.ms > log.retention.minutes > log.retention.hours);
  3. the topic configs recorded in the log dir's own __cluster_metadata (ConfigRecord), read by
     default (`--no-cluster-metadata` skips them);
  4. `--config KEY=VALUE`, for every topic;
  5. `--topic-config TOPIC:KEY=VALUE`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from kafkalog_cli.errors import InputError, UsageError

LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class TopicConfig:
    """A topic's effective storage configs; field names are Kafka's with '.' -> '_'."""

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
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    def get(self, name: str):
        return getattr(self, name.replace(".", "_"))

    def with_values(self, values: Mapping[str, str], source: str) -> "TopicConfig":
        """Apply Kafka-named string values; unknown names are ignored (Kafka has many)."""
        changes: dict = {}
        for name, raw in values.items():
            attr = name.replace(".", "_")
            f = _FIELDS.get(attr)
            if f is None or attr == "sources":
                continue
            changes[attr] = _parse(name, f, raw)
        if not changes:
            return self
        sources = dict(self.sources)
        sources.update({k.replace("_", "."): source for k in changes})
        return dataclasses.replace(self, sources=sources, **changes)

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            if f.name == "sources":
                continue
            v = getattr(self, f.name)
            out[f.name.replace("_", ".")] = ",".join(v) if isinstance(v, tuple) else v
        return out


_FIELDS = {f.name: f for f in dataclasses.fields(TopicConfig)}


# Kafka's topic-level config names (TopicConfig, 3.x and 4.x): accepted on the command line;
# those without a TopicConfig field do not change what kafkalog does.
KAFKA_TOPIC_CONFIGS = frozenset({
    "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.downconversion.enable",
    "message.format.version", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms",
    "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
    "producer.id.expiration.ms",   # a broker config, but it decides which producers a snapshot keeps
})
_CHOICES = {
    "cleanup_policy": {"compact", "delete"},
    "message_timestamp_type": {"CreateTime", "LogAppendTime"},
    "compression_type": {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
}


def _parse(name: str, f: dataclasses.Field, raw: str, error: type = InputError):
    raw = str(raw).strip()
    try:
        if f.type in ("int", int):
            return int(raw)
        if f.type in ("float", float):
            return float(raw)
        if f.type in ("bool", bool):
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        if f.name == "cleanup_policy":
            value = tuple(p.strip() for p in raw.split(",") if p.strip())
            if not set(value) <= _CHOICES["cleanup_policy"]:
                raise ValueError(raw)
            return value
        if f.name in _CHOICES and raw not in _CHOICES[f.name]:
            raise ValueError(raw)
        return raw
    except ValueError:
        choices = f" (one of {', '.join(sorted(_CHOICES[f.name]))})" if f.name in _CHOICES else ""
        raise error(f"invalid value {raw!r} for config {name}{choices}") from None


# Broker property -> (topic config, multiplier), in Kafka's precedence: the first present wins.
BROKER_SYNONYMS: dict[str, list[tuple[str, int]]] = {
    "segment.bytes": [("log.segment.bytes", 1)],
    "segment.ms": [("log.roll.ms", 1), ("log.roll.hours", 3600000)],
    "segment.jitter.ms": [("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3600000)],
    "segment.index.bytes": [("log.index.size.max.bytes", 1)],
    "index.interval.bytes": [("log.index.interval.bytes", 1)],
    "retention.ms": [("log.retention.ms", 1), ("log.retention.minutes", 60000),
                     ("log.retention.hours", 3600000)],
    "retention.bytes": [("log.retention.bytes", 1)],
    "cleanup.policy": [("log.cleanup.policy", 1)],
    "delete.retention.ms": [("log.cleaner.delete.retention.ms", 1)],
    "min.compaction.lag.ms": [("log.cleaner.min.compaction.lag.ms", 1)],
    "max.compaction.lag.ms": [("log.cleaner.max.compaction.lag.ms", 1)],
    "min.cleanable.dirty.ratio": [("log.cleaner.min.cleanable.ratio", 1)],
    "file.delete.delay.ms": [("log.segment.delete.delay.ms", 1)],
    "message.timestamp.type": [("log.message.timestamp.type", 1)],
    "max.message.bytes": [("message.max.bytes", 1)],
    "preallocate": [("log.preallocate", 1)],
    "compression.type": [("compression.type", 1)],
    "flush.messages": [("log.flush.interval.messages", 1)],
    "flush.ms": [("log.flush.interval.ms", 1)],
    "producer.id.expiration.ms": [("producer.id.expiration.ms", 1)],
}

# Topic-creation defaults of the internal topics (GroupCoordinator, TransactionLog configs),
# with the broker property that changes each.
INTERNAL_TOPICS: dict[str, dict[str, tuple[str, str]]] = {
    "__consumer_offsets": {"cleanup.policy": ("compact", ""),
                           "segment.bytes": ("104857600", "offsets.topic.segment.bytes"),
                           "compression.type": ("producer", "")},
    "__transaction_state": {"cleanup.policy": ("compact", ""),
                            "segment.bytes": ("104857600", "transaction.state.log.segment.bytes"),
                            "compression.type": ("uncompressed", "")},
    "__cluster_metadata": {"segment.bytes": ("1073741824", "metadata.log.segment.bytes"),
                           "segment.ms": ("604800000", "metadata.log.segment.ms")},
}


def broker_defaults(props: Mapping[str, str]) -> dict[str, str]:
    """Topic-config values implied by server.properties, with Kafka's synonym precedence."""
    out: dict[str, str] = {}
    for topic_name, synonyms in BROKER_SYNONYMS.items():
        for prop, mult in synonyms:
            if prop in props:
                raw = props[prop].strip()
                if mult != 1:
                    try:
                        value = int(raw) * mult
                    except ValueError:
                        raise InputError(f"invalid value {raw!r} for {prop}") from None
                    raw = str(value)
                if topic_name == "retention.ms" and int(raw) < 0:
                    raw = "-1"      # KafkaConfig.logRetentionTimeMillis: any negative is "infinite"
                out[topic_name] = raw
                break
    return out


def read_properties(path: Path) -> dict[str, str]:
    """java.util.Properties, the subset server.properties use: key=value or key: value, # and !
    comments, backslash line continuations."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(e.strerror or str(e), path=str(path)) from None
    props: dict[str, str] = {}
    pending = ""
    for line in text.splitlines():
        line = pending + line.lstrip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        for i, ch in enumerate(line):
            if ch in "=:" or ch.isspace():
                key, rest = line[:i], line[i + 1:].lstrip()
                if ch.isspace() and rest[:1] in ("=", ":"):
                    rest = rest[1:].lstrip()
                props[key] = rest
                break
        else:
            props[line] = ""
    return props


def parse_key_values(pairs: Iterable[str], option: str) -> dict[str, str]:
    """Command-line topic configs: Kafka's names only, values checked now (a typo must not fall
    back to a default in a command that deletes data)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"{option} expects KEY=VALUE, got {pair!r}")
        if key not in KAFKA_TOPIC_CONFIGS:
            import difflib

            near = difflib.get_close_matches(key, sorted(KAFKA_TOPIC_CONFIGS), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{option}: {key!r} is not a Kafka topic config{hint}")
        f = _FIELDS.get(key.replace(".", "_"))
        if f is not None:
            _parse(key, f, value, UsageError)
        out[key] = value
    return out


def parse_topic_key_values(items: Iterable[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for item in items:
        topic, sep, kv = item.partition(":")
        if not sep or not topic:
            raise UsageError(f"--topic-config expects TOPIC:KEY=VALUE, got {item!r}")
        out.setdefault(topic, {}).update(parse_key_values([kv], "--topic-config"))
    return out


@dataclass
class ConfigResolver:
    """Resolves each topic's TopicConfig from the layers above."""

    server_properties: Mapping[str, str] = field(default_factory=dict)
    cluster_metadata: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    overrides: Mapping[str, str] = field(default_factory=dict)
    topic_overrides: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def for_topic(self, topic: str) -> TopicConfig:
        cfg = TopicConfig()
        internal = INTERNAL_TOPICS.get(topic)
        if internal:
            cfg = cfg.with_values({k: v for k, (v, _) in internal.items()}, "internal topic default")
        cfg = cfg.with_values(broker_defaults(self.server_properties), "server properties")
        if internal:
            cfg = cfg.with_values({k: self.server_properties[p] for k, (_, p) in internal.items()
                                   if p and p in self.server_properties}, "server properties")
        cfg = cfg.with_values(self.cluster_metadata.get(topic, {}), "cluster metadata")
        cfg = cfg.with_values(self.overrides, "--config")
        cfg = cfg.with_values(self.topic_overrides.get(topic, {}), "--topic-config")
        return cfg


def cluster_metadata_configs(log_dir: Path) -> dict[str, dict[str, str]]:
    """Topic configs recorded in `<log_dir>/__cluster_metadata-0` (TopicRecord + ConfigRecord).
    Empty when the log dir has none (ZooKeeper-era brokers) or it cannot be read."""
    meta = Path(log_dir) / "__cluster_metadata-0"
    if not meta.is_dir():
        return {}
    try:
        from kafkalog_cli.formats.internal.cluster_metadata import topic_configs
        from kafkalog_cli.formats.records import iter_batches
    except ImportError:
        return {}
    import mmap
    import re

    # Old segments of the metadata log may be gone: the latest KRaft snapshot
    # (<end offset>-<epoch>.checkpoint) holds the state up to its end offset, the log the rest.
    snapshots = sorted((int(m.group(1)), p) for p in meta.glob("*.checkpoint")
                       if (m := re.fullmatch(r"(\d{20})-\d{10}\.checkpoint", p.name)))
    start = snapshots[-1][0] if snapshots else 0

    def records(path: Path, from_offset: int):
        with open(path, "rb") as f:
            if f.seek(0, 2) == 0:
                return
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                for batch in iter_batches(m):
                    if batch.is_control or batch.last_offset < from_offset:
                        continue
                    for rec in batch.records():
                        if rec.value is not None and rec.offset >= from_offset:
                            yield bytes(rec.value)

    def values():
        if snapshots:
            yield from records(snapshots[-1][1], 0)
        for log in sorted(meta.glob("*.log")):
            yield from records(log, start)

    try:
        return topic_configs(values())
    except Exception:   # a damaged metadata log must not stop a repair: fall back to the others
        return {}
