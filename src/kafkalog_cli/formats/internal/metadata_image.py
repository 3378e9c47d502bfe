"""Kafka's MetadataImage as values: built by replaying decoded metadata records in log order, as
MetadataLoader builds it. Pure: records in, image out (ops.metadata_image reads the files).

What each record changes follows Kafka's deltas (metadata/src/main/java/org/apache/kafka/image):
TopicsDelta (TopicRecord, PartitionRecord, PartitionChangeRecord through
PartitionRegistration.merge, RemoveTopicRecord, ClearElrRecord), ClusterDelta (brokers and
controllers, fencing, controlled shutdown), ConfigurationsDelta, ClientQuotasDelta,
ProducerIdsDelta, AclsDelta, ScramDelta (user names and mechanisms only: salts, stored and server
keys are never kept), DelegationTokenDelta (ids and owners), FeaturesDelta (metadata.version and
the other finalized features).

Metadata transactions (KIP-868, Kafka 3.6+): records after a BeginTransactionRecord are held
back and applied at its EndTransactionRecord; an AbortTransactionRecord drops them, as
MetadataLoader's transaction handling does. A transaction still open where replay stops is not
applied; the image says so.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.formats.internal.cluster_metadata import MetadataRecord
from kafkalog_cli.formats.metadata_versions import METADATA_VERSIONS

METADATA_VERSION_FEATURE = "metadata.version"
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
CONFIG_RESOURCE_TYPES = {
    2: "topic",
    4: "broker",
    8: "broker_logger",
    16: "client_metrics",
    32: "group",
}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
ACL_RESOURCE_TYPES = {
    0: "UNKNOWN",
    1: "ANY",
    2: "TOPIC",
    3: "GROUP",
    4: "CLUSTER",
    5: "TRANSACTIONAL_ID",
    6: "DELEGATION_TOKEN",
    7: "USER",
}
ACL_PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {
    0: "UNKNOWN",
    1: "ANY",
    2: "ALL",
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    9: "CLUSTER_ACTION",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
    12: "IDEMPOTENT_WRITE",
    13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS",
    15: "TWO_PHASE_COMMIT",
}
ACL_PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord: the leader stays


class LeaderRecoveryState(enum.IntEnum):
    RECOVERED = 0
    RECOVERING = 1


def metadata_version_name(level: int | None) -> str | None:
    if level is None:
        return None
    return METADATA_VERSIONS.get(level, f"level {level}")


def _name(table: dict[int, str], value: int) -> str:
    return table.get(value, str(value))


@dataclass
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: str

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port} ({self.security_protocol})"


def _endpoints(raw: list[dict]) -> list[Endpoint]:
    return [
        Endpoint(e["name"], e["host"], e["port"], _name(SECURITY_PROTOCOLS, e["securityProtocol"]))
        for e in raw
    ]


def _features(raw: list[dict]) -> dict[str, tuple[int, int]]:
    return {f["name"]: (f["minSupportedVersion"], f["maxSupportedVersion"]) for f in raw}


@dataclass
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: str
    endpoints: list[Endpoint]
    supported_features: dict[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool = False
    directories: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "epoch": self.epoch,
            "incarnation_id": self.incarnation_id,
            "endpoints": [e.__dict__ for e in self.endpoints],
            "supported_features": {
                n: {"min": lo, "max": hi} for n, (lo, hi) in self.supported_features.items()
            },
            "rack": self.rack,
            "fenced": self.fenced,
            "in_controlled_shutdown": self.in_controlled_shutdown,
            "is_migrating_zk_broker": self.is_migrating_zk_broker,
            "directories": self.directories,
        }


@dataclass
class ControllerRegistration:
    id: int
    incarnation_id: str
    zk_migration_ready: bool
    endpoints: list[Endpoint]
    supported_features: dict[str, tuple[int, int]]

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "incarnation_id": self.incarnation_id,
            "zk_migration_ready": self.zk_migration_ready,
            "endpoints": [e.__dict__ for e in self.endpoints],
            "supported_features": {
                n: {"min": lo, "max": hi} for n, (lo, hi) in self.supported_features.items()
            },
        }


@dataclass
class PartitionRegistration:
    replicas: list[int]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader: int
    leader_recovery_state: LeaderRecoveryState
    leader_epoch: int
    partition_epoch: int
    directories: list[str] = field(default_factory=list)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)

    @classmethod
    def from_record(cls, d: dict) -> PartitionRegistration:
        return cls(
            list(d["replicas"]),
            list(d["isr"]),
            list(d["removingReplicas"]),
            list(d["addingReplicas"]),
            d["leader"],
            LeaderRecoveryState(d["leaderRecoveryState"]),
            d["leaderEpoch"],
            d["partitionEpoch"],
            list(d.get("directories") or ()),
            list(d.get("eligibleLeaderReplicas") or ()),
            list(d.get("lastKnownElr") or ()),
        )

    def merge(self, d: dict) -> None:
        """PartitionRegistration.merge(PartitionChangeRecord): null fields keep their value, a
        new leader bumps the leader epoch, every change bumps the partition epoch."""
        for attr, key in (
            ("replicas", "replicas"),
            ("isr", "isr"),
            ("removing_replicas", "removingReplicas"),
            ("adding_replicas", "addingReplicas"),
            ("directories", "directories"),
            ("elr", "eligibleLeaderReplicas"),
            ("last_known_elr", "lastKnownElr"),
        ):
            if d.get(key) is not None:
                setattr(self, attr, list(d[key]))
        if d["leader"] != NO_LEADER_CHANGE:
            self.leader = d["leader"]
            self.leader_epoch += 1
        if d["leaderRecoveryState"] != -1:
            self.leader_recovery_state = LeaderRecoveryState(d["leaderRecoveryState"])
        self.partition_epoch += 1

    def to_dict(self) -> dict:
        return {
            "replicas": self.replicas,
            "isr": self.isr,
            "eligible_leader_replicas": self.elr,
            "last_known_elr": self.last_known_elr,
            "removing_replicas": self.removing_replicas,
            "adding_replicas": self.adding_replicas,
            "leader": self.leader,
            "leader_recovery_state": self.leader_recovery_state.name,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "directories": self.directories,
        }


@dataclass
class TopicImage:
    name: str
    id: str
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)

    def to_dict(self, configs: dict[str, str]) -> dict:
        return {
            "name": self.name,
            "id": self.id,
            "configs": configs,
            "partitions": [
                {"partition": p, **r.to_dict()} for p, r in sorted(self.partitions.items())
            ],
        }


@dataclass
class StandardAcl:
    id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str

    def __str__(self) -> str:
        return (
            f"{self.permission_type} {self.principal} from {self.host} {self.operation} on "
            f"{self.resource_type}:{self.pattern_type}:{self.resource_name}"
        )


@dataclass
class ProducerIdsImage:
    """The last producer id block handed out: the next block starts at next_producer_id."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass
class MetadataImage:
    """Kafka's MetadataImage, built by replaying metadata records in order (`replay`)."""

    features: dict[str, int] = field(default_factory=dict)  # name -> finalized level
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    controllers: dict[int, ControllerRegistration] = field(default_factory=dict)
    topics: dict[str, TopicImage] = field(default_factory=dict)  # by name
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name
    configs: dict[tuple[str, str], dict[str, str]] = field(
        default_factory=dict
    )  # (resource type, name)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(
        default_factory=dict
    )
    producer_ids: ProducerIdsImage | None = None
    acls: dict[str, StandardAcl] = field(default_factory=dict)
    scram_users: dict[str, set[str]] = field(default_factory=dict)  # mechanism -> user names
    delegation_tokens: dict[str, str] = field(default_factory=dict)  # token id -> owner
    zk_migration_state: int | None = None
    last_offset: int | None = None  # the last record applied (None: only a snapshot's)
    records: int = 0  # records applied
    aborted_transactions: list[tuple[int | None, int | None, str | None]] = field(
        default_factory=list
    )
    undecoded_records: list[tuple[int | None, str]] = field(default_factory=list)
    # an open metadata transaction: (offset of its BeginTransactionRecord, the records held back)
    pending: tuple[int | None, list[tuple[MetadataRecord, int | None]]] | None = None

    @property
    def metadata_version(self) -> int | None:
        return self.features.get(METADATA_VERSION_FEATURE)

    # -------------------------------------------------------------------- replay
    def replay(self, rec: MetadataRecord, offset: int | None = None) -> None:
        """One record, in log order (`offset` None: inside a snapshot)."""
        name = rec.type_name
        if name == "BEGIN_TRANSACTION_RECORD":
            self.pending = (offset, [])
            return
        if name == "END_TRANSACTION_RECORD":
            held = self.pending[1] if self.pending is not None else []
            self.pending = None
            for r, o in held:
                self._apply(r, o)
            self._applied(offset)
            return
        if name == "ABORT_TRANSACTION_RECORD":
            begin = self.pending[0] if self.pending is not None else None
            self.aborted_transactions.append((begin, offset, rec.data.get("reason")))
            self.pending = None
            self._applied(offset)
            return
        if self.pending is not None:
            self.pending[1].append((rec, offset))
            return
        self._apply(rec, offset)

    def undecoded(self, offset: int | None, error: Exception) -> None:
        self.undecoded_records.append((offset, getattr(error, "message", str(error))))

    def _applied(self, offset: int | None) -> None:
        self.records += 1
        if offset is not None:
            self.last_offset = offset

    def _apply(self, rec: MetadataRecord, offset: int | None) -> None:
        handler = getattr(self, "_" + rec.type_name.lower(), None)
        if handler is not None:
            handler(rec.data)
        self._applied(offset)

    def _register_broker_record(self, d: dict) -> None:
        self.brokers[d["brokerId"]] = BrokerRegistration(
            d["brokerId"],
            d["brokerEpoch"],
            d["incarnationId"],
            _endpoints(d["endPoints"]),
            _features(d["features"]),
            d["rack"],
            d["fenced"],
            d.get("inControlledShutdown", False),
            d.get("isMigratingZkBroker", False),
            list(d.get("logDirs") or ()),
        )

    def _unregister_broker_record(self, d: dict) -> None:
        self.brokers.pop(d["brokerId"], None)

    def _fence_broker_record(self, d: dict) -> None:
        if d["id"] in self.brokers:
            self.brokers[d["id"]].fenced = True

    def _unfence_broker_record(self, d: dict) -> None:
        if d["id"] in self.brokers:
            self.brokers[d["id"]].fenced = False

    def _broker_registration_change_record(self, d: dict) -> None:
        b = self.brokers.get(d["brokerId"])
        if b is None:
            return
        if d.get("fenced"):  # BrokerRegistrationFencingChange: 1 fence, -1 unfence
            b.fenced = d["fenced"] == 1
        if d.get("inControlledShutdown") == 1:  # BrokerRegistrationInControlledShutdownChange
            b.in_controlled_shutdown = True
        if d.get("logDirs"):
            b.directories = list(d["logDirs"])

    def _register_controller_record(self, d: dict) -> None:
        self.controllers[d["controllerId"]] = ControllerRegistration(
            d["controllerId"],
            d["incarnationId"],
            d["zkMigrationReady"],
            _endpoints(d["endPoints"]),
            _features(d["features"]),
        )

    def _topic_record(self, d: dict) -> None:
        self.topics[d["name"]] = TopicImage(d["name"], d["topicId"])
        self.topic_names[d["topicId"]] = d["name"]

    def _partition_record(self, d: dict) -> None:
        topic = self._topic(d["topicId"])
        if topic is not None:
            topic.partitions[d["partitionId"]] = PartitionRegistration.from_record(d)

    def _partition_change_record(self, d: dict) -> None:
        topic = self._topic(d["topicId"])
        part = topic.partitions.get(d["partitionId"]) if topic is not None else None
        if part is not None:
            part.merge(d)

    def _remove_topic_record(self, d: dict) -> None:
        name = self.topic_names.pop(d["topicId"], None)
        if name is not None:
            self.topics.pop(name, None)
            self.configs.pop(("topic", name), None)

    def _clear_elr_record(self, d: dict) -> None:
        """ClearElrRecord: the named topic's ELRs, or every topic's when the name is empty."""
        topics = (
            [self.topics[d["topicName"]]]
            if d["topicName"] in self.topics
            else list(self.topics.values())
            if not d["topicName"]
            else []
        )
        for t in topics:
            for p in t.partitions.values():
                if p.elr or p.last_known_elr:
                    p.elr, p.last_known_elr = [], []
                    p.partition_epoch += 1

    def _topic(self, topic_id: str) -> TopicImage | None:
        name = self.topic_names.get(topic_id)
        return self.topics.get(name) if name is not None else None

    def _config_record(self, d: dict) -> None:
        key = (_name(CONFIG_RESOURCE_TYPES, d["resourceType"]), d["resourceName"])
        configs = self.configs.setdefault(key, {})
        if d["value"] is None:
            configs.pop(d["name"], None)
            if not configs:
                del self.configs[key]
        else:
            configs[d["name"]] = d["value"]

    def _client_quota_record(self, d: dict) -> None:
        entity = tuple(sorted((e["entityType"], e["entityName"]) for e in d["entity"]))
        quotas = self.client_quotas.setdefault(entity, {})
        if d["remove"]:
            quotas.pop(d["key"], None)
            if not quotas:
                del self.client_quotas[entity]
        else:
            quotas[d["key"]] = d["value"]

    def _producer_ids_record(self, d: dict) -> None:
        self.producer_ids = ProducerIdsImage(d["brokerId"], d["brokerEpoch"], d["nextProducerId"])

    def _access_control_entry_record(self, d: dict) -> None:
        self.acls[d["id"]] = StandardAcl(
            d["id"],
            _name(ACL_RESOURCE_TYPES, d["resourceType"]),
            d["resourceName"],
            _name(ACL_PATTERN_TYPES, d["patternType"]),
            d["principal"],
            d["host"],
            _name(ACL_OPERATIONS, d["operation"]),
            _name(ACL_PERMISSIONS, d["permissionType"]),
        )

    def _remove_access_control_entry_record(self, d: dict) -> None:
        self.acls.pop(d["id"], None)

    def _user_scram_credential_record(self, d: dict) -> None:
        # the salt, stored key and server key are never kept: only who has a credential
        self.scram_users.setdefault(_name(SCRAM_MECHANISMS, d["mechanism"]), set()).add(d["name"])

    def _remove_user_scram_credential_record(self, d: dict) -> None:
        self.scram_users.get(_name(SCRAM_MECHANISMS, d["mechanism"]), set()).discard(d["name"])

    def _delegation_token_record(self, d: dict) -> None:
        self.delegation_tokens[d["tokenId"]] = d["owner"]

    def _remove_delegation_token_record(self, d: dict) -> None:
        self.delegation_tokens.pop(d["tokenId"], None)

    def _feature_level_record(self, d: dict) -> None:
        # FeaturesDelta: level 0 removes a feature (metadata.version is never 0)
        if d["featureLevel"] == 0 and d["name"] != METADATA_VERSION_FEATURE:
            self.features.pop(d["name"], None)
        else:
            self.features[d["name"]] = d["featureLevel"]

    def _zk_migration_state_record(self, d: dict) -> None:
        self.zk_migration_state = d["zkMigrationState"]

    # -------------------------------------------------------------------- output
    def topic_configs(self, name: str) -> dict[str, str]:
        return dict(sorted(self.configs.get(("topic", name), {}).items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "metadata_version": metadata_version_name(self.metadata_version),
            "metadata_version_level": self.metadata_version,
            "features": dict(sorted(self.features.items())),
            "brokers": [b.to_dict() for _, b in sorted(self.brokers.items())],
            "controllers": [c.to_dict() for _, c in sorted(self.controllers.items())],
            "topics": [t.to_dict(self.topic_configs(n)) for n, t in sorted(self.topics.items())],
            "configs": [
                {"resource_type": rt, "resource_name": rn, "configs": dict(sorted(c.items()))}
                for (rt, rn), c in sorted(self.configs.items())
                if rt != "topic"
            ],
            "client_quotas": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in e],
                    "quotas": dict(sorted(q.items())),
                }
                for e, q in sorted(self.client_quotas.items(), key=lambda x: repr(x[0]))
            ],
            "producer_ids": None if self.producer_ids is None else self.producer_ids.__dict__,
            "acls": [a.__dict__ for _, a in sorted(self.acls.items())],
            "scram_users": {m: sorted(u) for m, u in sorted(self.scram_users.items()) if u},
            "delegation_tokens": [
                {"token_id": t, "owner": o} for t, o in sorted(self.delegation_tokens.items())
            ],
        }
