"""KRaft metadata records (__cluster_metadata, snapshots, bootstrap.checkpoint) as Kafka 3.3.1
knows them, and the text `kafka-dump-log --cluster-metadata-decoder` prints for each.

A record value is: frame version (unsigned varint, must be 1), apiKey (unsigned varint), version
(unsigned varint), then the message body (MetadataRecordSerde / AbstractApiMessageSerde). 3.3.1's
generated readers never check the version, so a record from a newer Kafka is read with the 3.3.1
layout: it decodes if that layout happens to fit (PARTITION_CHANGE_RECORD v2: only new tagged
fields), and otherwise gives `Error at <offset>, skipping. Failed to deserialize record with type N`.
That is the text (kafka-dump-log 3.3.1's). The structured decoding (decode_metadata_record, for
JSON output and config replay) reads with Kafka 4.2's schemas, so records up to
metadata.version 4.2-IV1 decode whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.kafka_protocol import (
    ALL,
    NULL,
    Field,
    Readable,
    Struct,
    json_node,
    member,
    read_struct,
    to_int16,
    to_json,
    uuid_to_string,
    versions,
)
from kafkalog_cli.formats.internal.schemas import METADATA_RECORDS

__all__ = [
    "MetadataRecord",
    "METADATA_SCHEMAS",
    "decode_metadata_record",
    "format_metadata_record",
    "topic_configs",
    "MetadataParseError",
    "read_api_message",
    "METADATA_SCHEMAS_42",
    "METADATA_SCHEMAS_39",
    "METADATA_SCHEMAS_BY_RELEASE",
    "CONFIG_RESOURCE_TOPIC",
    "CONFIG_RESOURCE_BROKER",
    "ConfigsImage",
]

V1 = versions("1+")


def _f(name: str, type_: str, **kw: Any) -> Field:
    return Field(name, type_, **kw)


def _tag(name: str, type_: str, tag: int, since: str = "0+", **kw: Any) -> Field:
    v = versions(since)
    return Field(name, type_, versions=v, tagged=v, tag=tag, **kw)


# Transcribed from metadata/src/main/resources/common/metadata/*.json at tag 3.3.1: every record is
# flexible from version 0; (apiKey, name, valid versions, fields).
_SCHEMAS: list[tuple[int, str, str, tuple[Field, ...]]] = [
    (
        0,
        "RegisterBrokerRecord",
        "0-1",
        (
            _f("brokerId", "int32"),
            _f("incarnationId", "uuid"),
            _f("brokerEpoch", "int64"),
            _f(
                "endPoints",
                "[]struct",
                fields=(
                    _f("name", "string"),
                    _f("host", "string"),
                    _f("port", "uint16"),
                    _f("securityProtocol", "int16"),
                ),
            ),
            _f(
                "features",
                "[]struct",
                fields=(
                    _f("name", "string"),
                    _f("minSupportedVersion", "int16"),
                    _f("maxSupportedVersion", "int16"),
                ),
            ),
            _f("rack", "string", nullable=ALL),
            _f("fenced", "bool", default=True),
            _f("inControlledShutdown", "bool", versions=V1, default=False),
        ),
    ),
    (1, "UnregisterBrokerRecord", "0", (_f("brokerId", "int32"), _f("brokerEpoch", "int64"))),
    (2, "TopicRecord", "0", (_f("name", "string"), _f("topicId", "uuid"))),
    (
        3,
        "PartitionRecord",
        "0",
        (
            _f("partitionId", "int32", default=-1),
            _f("topicId", "uuid"),
            _f("replicas", "[]int32"),
            _f("isr", "[]int32"),
            _f("removingReplicas", "[]int32"),
            _f("addingReplicas", "[]int32"),
            _f("leader", "int32", default=-1),
            _tag("leaderRecoveryState", "int8", 0, default=0),
            _f("leaderEpoch", "int32", default=-1),
            _f("partitionEpoch", "int32", default=-1),
        ),
    ),
    (
        4,
        "ConfigRecord",
        "0",
        (
            _f("resourceType", "int8"),
            _f("resourceName", "string"),
            _f("name", "string"),
            _f("value", "string", nullable=ALL),
        ),
    ),
    (
        5,
        "PartitionChangeRecord",
        "0",
        (
            _f("partitionId", "int32", default=-1),
            _f("topicId", "uuid"),
            _tag("isr", "[]int32", 0, nullable=ALL, default=NULL),
            _tag("leader", "int32", 1, default=-2),
            _tag("replicas", "[]int32", 2, nullable=ALL, default=NULL),
            _tag("removingReplicas", "[]int32", 3, nullable=ALL, default=NULL),
            _tag("addingReplicas", "[]int32", 4, nullable=ALL, default=NULL),
            _tag("leaderRecoveryState", "int8", 5, default=-1),
        ),
    ),
    (
        6,
        "AccessControlRecord",
        "0",
        (
            _f("resourceType", "int8"),
            _f("resourceName", "string", nullable=ALL),
            _f("patternType", "int8"),
            _f("principal", "string"),
            _f("host", "string"),
            _f("operation", "int8"),
            _f("permissionType", "int8"),
        ),
    ),
    (7, "FenceBrokerRecord", "0", (_f("id", "int32"), _f("epoch", "int64"))),
    (8, "UnfenceBrokerRecord", "0", (_f("id", "int32"), _f("epoch", "int64"))),
    (9, "RemoveTopicRecord", "0", (_f("topicId", "uuid"),)),
    (
        10,
        "DelegationTokenRecord",
        "0",
        (
            _f("owner", "string"),
            _f("renewers", "[]string"),
            _f("issueTimestamp", "int64"),
            _f("maxTimestamp", "int64"),
            _f("expirationTimestamp", "int64"),
            _f("tokenId", "string"),
        ),
    ),
    (
        11,
        "UserScramCredentialRecord",
        "0",
        (
            _f("name", "string"),
            _f(
                "credentialInfos",
                "[]struct",
                fields=(
                    _f("mechanism", "int8"),
                    _f("salt", "bytes"),
                    _f("saltedPassword", "bytes"),
                    _f("iterations", "int32"),
                ),
            ),
        ),
    ),
    (12, "FeatureLevelRecord", "0", (_f("name", "string"), _f("featureLevel", "int16"))),
    (
        14,
        "ClientQuotaRecord",
        "0",
        (
            _f(
                "entity",
                "[]struct",
                fields=(_f("entityType", "string"), _f("entityName", "string", nullable=ALL)),
            ),
            _f("key", "string"),
            _f("value", "float64"),
            _f("remove", "bool"),
        ),
    ),
    (
        15,
        "ProducerIdsRecord",
        "0",
        (
            _f("brokerId", "int32"),
            _f("brokerEpoch", "int64", default=-1),
            _f("nextProducerId", "int64"),
        ),
    ),
    (
        17,
        "BrokerRegistrationChangeRecord",
        "0-1",
        (
            _f("brokerId", "int32"),
            _f("brokerEpoch", "int64"),
            _tag("fenced", "int8", 0, default=0),
            _tag("inControlledShutdown", "int8", 1, since="1+", default=0),
        ),
    ),
    (
        18,
        "AccessControlEntryRecord",
        "0",
        (
            _f("id", "uuid"),
            _f("resourceType", "int8"),
            _f("resourceName", "string"),
            _f("patternType", "int8"),
            _f("principal", "string"),
            _f("host", "string"),
            _f("operation", "int8"),
            _f("permissionType", "int8"),
        ),
    ),
    (19, "RemoveAccessControlEntryRecord", "0", (_f("id", "uuid"),)),
    (20, "NoOpRecord", "0", ()),
]


def type_name(name: str) -> str:
    """MessageGenerator.toSnakeCase(name).toUpperCase(): RegisterBrokerRecord -> REGISTER_BROKER_RECORD."""
    out = []
    prev_cap = True
    for ch in name:
        if ch.isupper():
            if not prev_cap:
                out.append("_")
            out.append(ch)
            prev_cap = True
        else:
            out.append(ch.upper())
            prev_cap = False
    return "".join(out)


METADATA_SCHEMAS: dict[int, tuple[str, Struct]] = {
    key: (type_name(name), Struct(name, versions(valid), ALL, fields))
    for key, name, valid, fields in _SCHEMAS
}
# Kafka 4.2's MetadataRecordType (metadata.version up to 4.2-IV1): what JSON output decodes with
METADATA_SCHEMAS_42: dict[int, tuple[str, Struct]] = {
    key: (type_name(struct.name), struct) for key, struct in METADATA_RECORDS.items()
}

# Kafka 3.9's MetadataRecordType: 4.2's but ClearElrRecord (28, 4.0); every other record's fields and
# versions checked one by one against 3.9.0-rc3's metadata JSON schemas
METADATA_SCHEMAS_39: dict[int, tuple[str, Struct]] = {
    k: v for k, v in METADATA_SCHEMAS_42.items() if k != 28
}


def _as_of(
    table: dict[int, tuple[str, Struct]],
    *,
    gone: tuple[int, ...] = (),
    valid: dict[int, str] | None = None,
    without: dict[int, tuple[str, ...]] | None = None,
    renamed: dict[str, str] | None = None,
) -> dict[int, tuple[str, Struct]]:
    """`table` as an older release's MetadataRecordType has it: without the record types `gone`,
    a record's valid versions cut to `valid[apiKey]` and its fields `without[apiKey]` dropped (the
    ones its newer versions added; a newer record then reads with the older layout, as the
    release's generated reader does), fields named as the release names them (`renamed`)."""
    valid, without, renamed = valid or {}, without or {}, renamed or {}
    out: dict[int, tuple[str, Struct]] = {}
    for key, (name, struct) in table.items():
        if key in gone:
            continue
        fields = tuple(
            replace(f, name=renamed.get(f.name, f.name))
            for f in struct.fields
            if f.name not in without.get(key, ())
        )
        out[key] = (
            name,
            replace(
                struct, fields=fields, valid=versions(valid[key]) if key in valid else struct.valid
            ),
        )
    return out


# What each release's kafka-dump-log reads (metadata/src/main/resources/common/metadata/*.json at
# 3.4.0, 3.5.0, 3.6.0, 3.7.0; checked field by field), as changes to 4.2's or 3.3.1's tables; keyed
# by the release that changed them (config.versions.DUMP_LOG_METADATA_RECORDS says what each adds)
_NEWER_FIELDS = ("directories", "eligibleLeaderReplicas", "lastKnownElr")  # 3.7's, KIP-858/966


def _before_37(table: dict[int, tuple[str, Struct]]) -> dict[int, tuple[str, Struct]]:
    """`table` with the records 3.7 changed as 3.4 to 3.6 have them."""
    return _as_of(
        table,
        valid={0: "0-2", 3: "0", 5: "0", 17: "0-1"},
        without={0: ("logDirs",), 3: _NEWER_FIELDS, 5: _NEWER_FIELDS, 17: ("logDirs",)},
    )


_METADATA_SCHEMAS_34 = {
    **METADATA_SCHEMAS,
    0: _before_37(METADATA_SCHEMAS_42)[0],  # v2: isMigratingZkBroker
    21: METADATA_SCHEMAS_42[21],  # ZkMigrationStateRecord
}
_METADATA_SCHEMAS_36 = _before_37(_as_of(METADATA_SCHEMAS_42, gone=(27, 28)))
_METADATA_SCHEMAS_35 = {
    **{k: v for k, v in _METADATA_SCHEMAS_36.items() if k not in (23, 24, 25, 26)},
    10: _as_of(METADATA_SCHEMAS_42, without={10: ("requester",)})[10],
}
_METADATA_SCHEMAS_37 = _as_of(
    METADATA_SCHEMAS_42, gone=(28,), renamed={"lastKnownElr": "lastKnownELR"}
)
METADATA_SCHEMAS_BY_RELEASE: dict[str, dict[int, tuple[str, Struct]]] = {
    "3.3.1": METADATA_SCHEMAS,
    "3.4": _METADATA_SCHEMAS_34,
    "3.5": _METADATA_SCHEMAS_35,
    "3.6": _METADATA_SCHEMAS_36,
    "3.7": _METADATA_SCHEMAS_37,
    "3.8": METADATA_SCHEMAS_39,  # 3.8 and 3.9
    "3.9": METADATA_SCHEMAS_39,
    "4.0": METADATA_SCHEMAS_42,  # 4.0 to 4.2
    "4.2": METADATA_SCHEMAS_42,
}

CONFIG_RESOURCE_TOPIC = 2  # ConfigResource.Type.TOPIC
CONFIG_RESOURCE_BROKER = (
    4  # ConfigResource.Type.BROKER: resource name "" = the cluster default, else a broker id
)


class MetadataParseError(InvalidRecordError):
    """org.apache.kafka.server.common.serialization.MetadataParseException; `str(message)` is its
    getMessage(), which kafka-dump-log prints after `Error at <offset>, skipping. `."""


@dataclass(frozen=True)
class MetadataRecord:
    """One decoded metadata record. `data` holds every field of the message (Kafka's camelCase
    names, uuids as their base64 strings, bytes as bytes), including defaulted tagged fields."""

    type_name: str
    api_key: int
    version: int
    data: dict[str, Any]


def _read_short(r: Readable, entity: str) -> int:
    """AbstractApiMessageSerde.unsignedIntToShort."""
    try:
        val = r.read_unsigned_varint()
    except InvalidRecordError as e:
        raise MetadataParseError(f"Error while reading {entity}", position=e.position) from e
    if val > 0x7FFF:
        raise MetadataParseError(f"Value for {entity} was too large.", position=r.position)
    return to_int16(val)


def read_api_message(
    value: bytes | memoryview | None,
    schemas: dict[int, tuple[str, Struct]] | None = None,
) -> tuple[int, int, Struct, dict[str, Any]]:
    """AbstractApiMessageSerde.read over a record value: (apiKey, version, schema, raw fields).
    `schemas` is the serde's table by apiKey (3.3.1's metadata records unless given)."""
    schemas = METADATA_SCHEMAS if schemas is None else schemas
    if value is None:
        # ByteBufferAccessor(null): the first read throws NullPointerException
        raise MetadataParseError("Error while reading frame version", position=0)
    r = Readable(value)
    frame = _read_short(r, "frame version")
    if frame == 0:
        raise MetadataParseError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades "
            "from the preview release of KRaft in 2.8 to newer versions are not supported.",
            position=0,
        )
    if frame != 1:
        raise MetadataParseError(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version 1 is supported)",
            position=0,
        )
    api_key = _read_short(r, "type")
    version = _read_short(r, "version")
    known = schemas.get(api_key)
    if known is None:
        # MetadataParseException(cause): the message is the cause's toString()
        raise MetadataParseError(
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}",
            position=r.position,
        )
    schema = known[1]
    start = r.position
    try:
        fields = read_struct(r, schema, version)
    except InvalidRecordError as e:
        raise MetadataParseError(
            f"Failed to deserialize record with type {api_key}",
            position=e.position if e.position is not None else start,
        ) from e
    if r.remaining() > 0:
        raise MetadataParseError(
            f"Found {r.remaining()} byte(s) of garbage after {api_key}", position=r.position
        )
    return api_key, version, schema, fields


def _public(schema: Struct, fields: dict[str, Any], version: int) -> dict[str, Any]:
    """The fields the record has at `version` (tagged ones with their defaults), uuids as
    strings, recursively (for library users)."""
    out: dict[str, Any] = {}
    for f in schema.fields:
        if not member(f.versions, schema.valid, version):
            continue
        v = fields[f.name]
        if v is not None and f.type == "uuid":
            v = uuid_to_string(v)
        elif v is not None and f.type == "[]uuid":
            v = [uuid_to_string(x) for x in v]
        elif v is not None and f.type == "[]struct":
            nested = Struct(f.name, f.versions, ALL, f.fields)
            v = [_public(nested, x, version) for x in v]
        elif v is not None and f.type == "struct":
            v = _public(Struct(f.name, f.versions, ALL, f.fields), v, version)
        out[f.name] = v
    return out


def decode_metadata_record(value: bytes | memoryview | None) -> MetadataRecord:
    """Decode one record value with Kafka 4.2's schemas; raises MetadataParseError (an
    InvalidRecordError) where 4.2 fails."""
    api_key, version, schema, fields = read_api_message(value, METADATA_SCHEMAS_42)
    return MetadataRecord(
        METADATA_SCHEMAS_42[api_key][0], api_key, version, _public(schema, fields, version)
    )


def format_metadata_record(
    value: bytes | memoryview | None,
    offset: int,
    schemas: dict[int, tuple[str, Struct]] | None = None,
) -> str:
    """What kafka-dump-log 3.3.1 --cluster-metadata-decoder prints after ` payload: ` for the
    record at `offset` (the offset appears in the error text). Metadata records print no key.
    With `schemas=METADATA_SCHEMAS_42`, what kafka-dump-log 4.2 prints (the same form, 4.2's
    record types and versions)."""
    schemas = METADATA_SCHEMAS if schemas is None else schemas
    try:
        api_key, version, schema, fields = read_api_message(value, schemas)
        data = json_node(schema, fields, version)
    except MetadataParseError as e:
        return f"Error at {offset}, skipping. {e.message}"
    return to_json({"type": schemas[api_key][0], "version": version, "data": data})


@dataclass
class ConfigsImage:
    """The part of Kafka's MetadataImage that decides a log's config, built by replaying records
    in log order (TopicsDelta and ConfigurationsDelta): the live topics, each topic's config
    overrides, the broker configs by resource name ("" is the cluster-wide default) and the
    finalized feature levels (FeatureLevelRecord: metadata.version, transaction.version, ...).

    Metadata transactions (KIP-868, 3.6+; MetadataBatchLoader.replay): the records after a
    BeginTransactionRecord take effect at its EndTransactionRecord, are dropped at an
    AbortTransactionRecord, and a transaction still open where the log ends is not published."""

    topic_ids: dict[str, str] = field(default_factory=dict)  # topic id -> name
    topic_configs: dict[str, dict[str, str]] = field(
        default_factory=dict
    )  # topic name -> overrides
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)  # name -> finalized level
    pending: list | None = None  # the records of an open metadata transaction
    aborted_transactions: int = 0

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self.topic_ids.values())

    @property
    def in_transaction(self) -> bool:
        return self.pending is not None

    def replay(self, rec: MetadataRecord, offset: int | None = None) -> None:
        if rec.api_key == BEGIN_TRANSACTION_RECORD:
            self.pending = []  # a second Begin: Kafka's loader faults; the newer one counts
            return
        if rec.api_key == END_TRANSACTION_RECORD:
            pending, self.pending = self.pending or [], None
            for r in pending:
                self._apply(r)
            return
        if rec.api_key == ABORT_TRANSACTION_RECORD:
            if self.pending is not None:
                self.aborted_transactions += 1
            self.pending = None
            return
        if self.pending is not None:
            self.pending.append(rec)
        else:
            self._apply(rec)

    def _apply(self, rec: MetadataRecord) -> None:
        d = rec.data
        if rec.api_key == 2:  # TOPIC_RECORD
            self.topic_ids[d["topicId"]] = d["name"]
            self.topic_configs.setdefault(d["name"], {})
        elif rec.api_key == 9:  # REMOVE_TOPIC_RECORD: the topic's configs go with it
            name = self.topic_ids.pop(d["topicId"], None)
            if name is not None:
                self.topic_configs.pop(name, None)
        elif rec.api_key == 12:  # FEATURE_LEVEL_RECORD
            self.features[d["name"]] = d["featureLevel"]
        elif rec.api_key == 4:  # CONFIG_RECORD: a null value deletes the key
            if d["resourceType"] == CONFIG_RESOURCE_TOPIC:
                configs = self.topic_configs.setdefault(d["resourceName"], {})
            elif d["resourceType"] == CONFIG_RESOURCE_BROKER:
                configs = self.broker_configs.setdefault(d["resourceName"], {})
            else:
                return
            if d["value"] is None:
                configs.pop(d["name"], None)
            else:
                configs[d["name"]] = d["value"]

    def undecoded(self, offset: int | None, error: Exception) -> None:
        """A record that does not decode sets no config."""


# MetadataRecordType ids of the metadata transaction records (3.6+)
BEGIN_TRANSACTION_RECORD, END_TRANSACTION_RECORD, ABORT_TRANSACTION_RECORD = 23, 24, 25


def topic_configs(values: Iterable[bytes | memoryview | None]) -> dict[str, dict[str, str]]:
    """Replay TOPIC_RECORD, REMOVE_TOPIC_RECORD and CONFIG_RECORD (resource type 2) over record
    values in log order and return each live topic's config overrides. Records that do not
    decode are skipped, as the controller would never have written them for 3.3.1."""
    image = ConfigsImage()
    for value in values:
        try:
            rec = decode_metadata_record(value)
        except InvalidRecordError:
            continue
        image.replay(rec)
    return image.topic_configs
