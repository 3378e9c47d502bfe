"""Kafka's properties files with Kafka's types and ranges: meta.properties as the broker reads it
(3.3.1: kafka.server.RawMetaProperties and MetaProperties.parse in BrokerMetadataCheckpoint.scala;
3.7+: org.apache.kafka.metadata.properties.MetaProperties.Builder(Properties) with
PropertiesUtils.loadRequiredIntProp), and a server.properties INT as ConfigDef.parseType reads
it. The text itself is Properties.load's (formats.checkpoints.parse_properties); every reader of
node.id, broker.id, cluster.id or directory.id goes through here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.formats.checkpoints import topic_id_bytes

JAVA_INT_MIN, JAVA_INT_MAX = -(2**31), 2**31 - 1
# Integer.parseInt: an optional sign, then digits (Character.digit: any Unicode decimal digit);
# no blank anywhere, no underscore, no empty text
_JAVA_INT = re.compile(r"[+-]?\d+")


def java_int(raw: str) -> int | None:
    """Integer.parseInt(raw): the int, or None where Java throws NumberFormatException (not a
    number, a blank around it, outside -2^31..2^31-1)."""
    if not _JAVA_INT.fullmatch(raw):
        return None
    value = int(raw)
    return value if JAVA_INT_MIN <= value <= JAVA_INT_MAX else None


def config_int(props: Mapping[str, str], key: str, *, path: str | None = None) -> int | None:
    """A server.properties value of ConfigDef.Type.INT (node.id, broker.id): trimmed, then
    Integer.parseInt; None when the key is absent. A value Kafka refuses raises, in KafkaConfig's
    words (ConfigException: "Invalid value ... for configuration ...: Not a number of type INT")."""
    raw = props.get(key)
    if raw is None:
        return None
    value = java_int(raw.strip())
    if value is None:
        raise CheckpointError(
            f"Invalid value {raw.strip()} for configuration {key}: Not a number of type INT",
            path=path,
        )
    return value


def _int_prop(props: Mapping[str, str], key: str, path: str | None) -> int | None:
    """RawMetaProperties.intValue: absent is None; else Integer.parseInt, in the broker's words."""
    raw = props.get(key)
    if raw is None:
        return None
    value = java_int(raw)
    if value is None:
        raise CheckpointError(
            f'Failed to parse {key} property as an int: For input string: "{raw}"', path=path
        )
    return value


@dataclass(frozen=True)
class MetaProperties:
    """A log dir's meta.properties: version 0 (ZooKeeper era: broker.id, cluster.id optional) or
    1 (KRaft: cluster.id and node.id required); directory.id from 3.7 on."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None = None

    @classmethod
    def parse(cls, props: Mapping[str, str], *, path: str | None = None) -> MetaProperties:
        """What the broker makes of `props`, or a CheckpointError in its words. Integer.parseInt
        does not trim: `node.id=1 ` (a trailing blank Properties.load keeps) stops a broker."""
        version = _int_prop(props, "version", path)
        version = 0 if version is None else version
        if version not in (0, 1):
            raise CheckpointError(f"Unknown meta.properties version number {version}", path=path)
        cluster_id = props.get("cluster.id")
        node_id = _int_prop(props, "broker.id" if version == 0 else "node.id", path)
        if version == 1:
            for key, value in (("cluster.id", cluster_id), ("node.id", node_id)):
                if value is None:
                    raise CheckpointError(f"Failed to find required property {key}.", path=path)
        return cls(version, cluster_id, node_id, cls.directory_id_in(props, path=path))

    @staticmethod
    def directory_id_in(props: Mapping[str, str], *, path: str | None = None) -> str | None:
        """Just the log dir's directory.id (3.7+): None when absent, a CheckpointError where it is
        not a Uuid (Uuid.fromString, as for a topic id)."""
        directory_id = props.get("directory.id")
        if directory_id is not None:
            try:
                topic_id_bytes(directory_id)
            except ValueError as e:
                raise CheckpointError(
                    f"Unable to read directory.id as a Uuid: {e}", path=path
                ) from None
        return directory_id

    @staticmethod
    def node_id_in(props: Mapping[str, str], *, path: str | None = None) -> int | None:
        """Just the broker's id (node.id, else broker.id), for a reader that needs nothing else:
        None when absent, a CheckpointError where Kafka refuses the value."""
        return _int_prop(props, "node.id" if "node.id" in props else "broker.id", path)
