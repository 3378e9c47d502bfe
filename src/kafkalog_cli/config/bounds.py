"""LogConfig's cross-checks of tiered storage's retention, on the values a run was given.

Kafka refuses a topic config (and a broker does not start on a server.properties) whose local
retention exceeds its total retention, each checked with the other's value after layering the
topic's configs over the broker's (LogConfig.validate -> validateTopicLogConfigValues, and
LogManager's validateBrokerLogConfigValues at startup):

- with remote.storage.enable=true (topic) or remote.log.storage.system.enable=true (broker), where
  retention.bytes > -1 and local.retention.bytes is not -2 ("the same as retention.bytes"), the
  local value must be neither -1 nor above it; likewise local.retention.ms against retention.ms
  where that is not -1 (validateRemoteStorageRetentionSize / Time, KAFKA-15295, 3.6);
- with remote.log.copy.disable=true as well, each local value must be -2 or equal to the total
  (validateRetentionConfigsWhenRemoteCopyDisabled, KIP-950, 3.9).

kafkalog takes such values as a config Kafka would have refused, so it refuses them too (a usage
error, exit 2, with Kafka's own message), where a version of the range that will load the dir
validates them. Values the run was not given (recorded in __cluster_metadata, Kafka's defaults)
passed Kafka's checks already and are not judged here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkalog_cli.config.versions import (
    REMOTE_COPY_DISABLE_RETENTION,
    REMOTE_RETENTION_BOUNDS,
    KafkaVersions,
)
from kafkalog_cli.errors import UsageError

INVOLVED = (
    "remote.storage.enable",
    "retention.ms",
    "retention.bytes",
    "local.retention.ms",
    "local.retention.bytes",
    "remote.log.copy.disable",
    "cleanup.policy",
)
SYSTEM_ENABLE = "remote.log.storage.system.enable"
# the broker properties of the same checks at startup (LogManager)
BROKER_INVOLVED = (
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
    "log.local.retention.ms",
    "log.local.retention.bytes",
)


def config_exception(name: str, value, message: str) -> str:
    """org.apache.kafka.common.config.ConfigException(name, value, message).getMessage()."""
    return f"Invalid value {value} for configuration {name}: {message}"


def retention_problem(values: Mapping[str, Any], copy_disable_checked: bool) -> str | None:
    """Kafka's message for the first check `values` (retention.ms/bytes, local.retention.ms/bytes,
    remote.log.copy.disable: parsed) fails, or None."""
    for total_name, local_name, unlimited in (
        ("retention.bytes", "local.retention.bytes", lambda v: v <= -1),
        ("retention.ms", "local.retention.ms", lambda v: v == -1),
    ):
        total, local = values[total_name], values[local_name]
        if unlimited(total) or local == -2:
            continue
        if local == -1:
            return config_exception(
                local_name, local, f"Value must not be -1 as {total_name} value is set as {total}."
            )
        if local > total:
            return config_exception(
                local_name,
                local,
                f"Value must not be more than {total_name} property value: {total}",
            )
    if copy_disable_checked and values.get("remote.log.copy.disable"):
        for total_name, local_name in (
            ("retention.bytes", "local.retention.bytes"),
            ("retention.ms", "local.retention.ms"),
        ):
            if values[local_name] != -2 and values[local_name] != values[total_name]:
                return (
                    f"When `remote.log.copy.disable` is set to true, the `{local_name}` and `{total_name}` must be "
                    f"set to the identical value because there will be no more logs copied to the remote storage."
                )
    return None


def check_retention_bounds(
    versions: KafkaVersions,
    topics: Iterable[str],
    given: Callable[[str], tuple[str, set]],
    effective: Callable[[str], Mapping[str, object] | None],
    broker: tuple[bool, Mapping[str, object]] | None,
) -> None:
    """UsageError with Kafka's message where the values given fail LogConfig's checks.
    `given(topic)`: (the option that gave values to the topic, the names it gave); `effective(topic)`:
    the topic's layered values (None: one of them cannot be known); `broker`: (whether
    server.properties turns remote storage on and gives a retention property, the broker-level values)."""
    if versions.applies(REMOTE_RETENTION_BOUNDS) is False:
        return  # no version that may load the dir validates these (tiered storage came with 3.6)
    copy_checked = versions.applies(REMOTE_COPY_DISABLE_RETENTION) is not False
    why = f"Kafka {REMOTE_RETENTION_BOUNDS.since}+ refuses it: {REMOTE_RETENTION_BOUNDS.where}"
    if broker is not None and broker[0]:
        problem = retention_problem(broker[1], False)
        if problem is not None:
            raise UsageError(
                f"--server-properties: {problem} (with {SYSTEM_ENABLE}=true a broker does not start on it; "
                f"{why})"
            )
    for topic in sorted(set(topics)):
        option, names = given(topic)
        if not names & set(INVOLVED):
            continue
        values = effective(topic)
        if values is None or not values.get("remote.storage.enable"):
            continue
        problem = retention_problem(values, copy_checked)
        if problem is not None:
            raise UsageError(
                f"{option}: {problem} (topic {topic} with remote.storage.enable=true; {why})"
            )
