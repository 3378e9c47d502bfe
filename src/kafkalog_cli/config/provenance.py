"""Where an effective config value comes from (ConfigSource), why it may be unknown (Unknown),
and the value with both (ConfigValue)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.config.defaults import json_value, text_of


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
    NO_CLUSTER_METADATA = (
        "no __cluster_metadata in this log dir: the topic's configs live in ZooKeeper, "
        "or in the KRaft metadata log of another log dir"
    )
    CLUSTER_METADATA_IGNORED = "--no-cluster-metadata: the topic's own configs were not read"
    NO_TOPIC_RECORD = "__cluster_metadata has no TopicRecord for the topic"
    DAMAGED_METADATA = (
        "__cluster_metadata is damaged: a record after the damage may have changed it"
    )
    UNKNOWN_BROKER_ID = (
        "__cluster_metadata has per-broker configs, and this log dir's broker id is "
        "unknown (no meta.properties)"
    )
    KAFKA_17584 = (
        "a dynamic broker log config makes Kafka 3.3.1 ignore this static synonym "
        "(KAFKA-17584), later versions keep it"
    )

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
    detail: str | None = None  # the broker property that gave it ("log.retention.hours=-1")
    unknown: Unknown | None = None  # why the real value cannot be read; None: it is known
    assumed: bool = False  # unknown, but taken: --assume-kafka-defaults

    @property
    def known(self) -> bool:
        return self.unknown is None

    @property
    def text(self) -> str:
        """The value as Kafka writes it (cleanup.policy "compact,delete", booleans lowercase)."""
        return text_of(self.value)

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
        return {
            "value": json_value(self.value),
            "source": self.source.name,
            "origin": self.origin,
            "known": self.known,
            "assumed": self.assumed,
            "unknown": self.unknown.value if self.unknown else None,
        }
