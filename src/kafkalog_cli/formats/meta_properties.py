"""Kafka's properties files with Kafka's types and ranges: meta.properties as the broker reads it
(3.3.1: kafka.server.RawMetaProperties and MetaProperties.parse in BrokerMetadataCheckpoint.scala;
3.7+: org.apache.kafka.metadata.properties.MetaProperties.Builder(Properties) with
PropertiesUtils.loadRequiredIntProp), and a server.properties INT as ConfigDef.parseType reads
it. The text itself is Properties.load's (formats.checkpoints.parse_properties); every reader of
node.id, broker.id, cluster.id or directory.id goes through here.
"""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.errors import CheckpointError

META_PROPERTIES = "meta.properties"
JAVA_INT_MIN, JAVA_INT_MAX = -(2 ** 31), 2 ** 31 - 1
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
        raise CheckpointError(f"Invalid value {raw.strip()} for configuration {key}: Not a number of type INT",
                              path=path)
    return value


def uuid_problem(raw: str) -> str | None:
    """Why Uuid.fromString refuses `raw` (URL-safe base64 of 16 bytes, 22 characters), or None."""
    if len(raw) > 24:
        return f"Input string with prefix `{raw[:24]}` is too long to be decoded as a base64 UUID"
    try:
        decoded = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        return f"Input string `{raw}` cannot be decoded as a base64 UUID"
    if len(decoded) != 16 or not re.fullmatch(r"[A-Za-z0-9_-]+", raw):
        return f"Input string `{raw}` decoded as {len(decoded)} bytes, which is not equal to the expected 16 bytes"
    return None


@dataclass(frozen=True)
class MetaProperties:
    """A log dir's meta.properties: version 0 (ZooKeeper era: broker.id, cluster.id optional) or
    1 (KRaft: cluster.id and node.id required); directory.id from 3.7 on."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None = None

    @classmethod
    def parse(cls, props: Mapping[str, str], *, path: str | None = None) -> "MetaProperties":
        """What the broker makes of `props`, or a CheckpointError in its words. Integer.parseInt
        does not trim: `node.id=1 ` (a trailing blank Properties.load keeps) stops a broker."""
        def int_prop(key: str) -> int | None:
            raw = props.get(key)
            if raw is None:
                return None
            value = java_int(raw)
            if value is None:
                raise CheckpointError(f"Failed to parse {key} property as an int: For input string: \"{raw}\"",
                                      path=path)
            return value

        version = int_prop("version")
        version = 0 if version is None else version
        if version not in (0, 1):
            raise CheckpointError(f"Unknown meta.properties version {version}", path=path)
        cluster_id = props.get("cluster.id")
        node_id = int_prop("broker.id" if version == 0 else "node.id")
        if version == 1:
            for key, value in (("cluster.id", cluster_id), ("node.id", node_id)):
                if value is None:
                    raise CheckpointError(f"Failed to find required property {key}.", path=path)
        directory_id = props.get("directory.id")
        if directory_id is not None and (why := uuid_problem(directory_id)) is not None:
            raise CheckpointError(f"Unable to read directory.id as a Uuid: {why}", path=path)
        return cls(version, cluster_id, node_id, directory_id)

    @classmethod
    def read(cls, log_dir: str | Path, data: bytes | None = None) -> "MetaProperties":
        """The log dir's meta.properties (`data`: its bytes, when the caller read them); OSError
        when it cannot be read, CheckpointError naming the file when Kafka would refuse it."""
        from kafkalog_cli.formats.checkpoints import parse_properties

        path = f"{log_dir}/{META_PROPERTIES}"
        if data is None:
            data = Path(path).read_bytes()
        return cls.parse(parse_properties(data, path=path), path=path)
