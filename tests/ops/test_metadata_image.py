"""ops.metadata_image: the KRaft metadata image from the newest snapshot and the log after it, on
logs built from Kafka 4.2's record schemas (transactions, --at-offset, removals, ELR, secrets
left out, damage) and on the corpus' snapshots and logs of Kafka 3.3.1 to 4.2."""

from __future__ import annotations

import json
import lzma
import uuid
from pathlib import Path

import pytest

from kafkalog_cli.errors import InputError
from kafkalog_cli.formats.internal.kafka_protocol import uuid_to_string, write_struct
from kafkalog_cli.formats.internal.metadata_image import MetadataImage
from kafkalog_cli.formats.internal.schemas import METADATA_RECORDS
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops.metadata_image import read_metadata_image
from tests.helpers.paths import EXAMPLES
from tests.helpers.paths import INTERNAL as FIXTURES

KEYS = {s.name: k for k, s in METADATA_RECORDS.items()}
TID = uuid.UUID("00000000-0000-4000-8000-0000000000aa").bytes
TID2 = uuid.UUID("00000000-0000-4000-8000-0000000000bb").bytes


def rec(record: str, version: int = 0, **fields) -> bytes:
    key = KEYS[record]
    return bytes([1, key, version]) + write_struct(METADATA_RECORDS[key], fields, version)


def topic(name, tid):
    return rec("TopicRecord", name=name, topicId=tid)


def partition(tid, p, leader=1, replicas=(1, 2), isr=(1, 2)):
    return rec(
        "PartitionRecord",
        partitionId=p,
        topicId=tid,
        replicas=list(replicas),
        isr=list(isr),
        removingReplicas=[],
        addingReplicas=[],
        leader=leader,
        leaderRecoveryState=0,
        leaderEpoch=0,
        partitionEpoch=0,
    )


def config(resource_type, resource, name, value):
    return rec(
        "ConfigRecord", resourceType=resource_type, resourceName=resource, name=name, value=value
    )


def log(tmp_path: Path, *values: bytes, snapshot: tuple[int, list[bytes]] | None = None) -> Path:
    """A log dir whose __cluster_metadata-0 holds `values`, one record a batch from offset 0 (or
    from a snapshot's end offset, the snapshot holding its own records)."""
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    start = 0
    if snapshot is not None:
        start, records = snapshot
        (meta / f"{start:020d}-{1:010d}.checkpoint").write_bytes(
            b"".join(build_v2_batch([SimpleRecord(None, v, 0)], i) for i, v in enumerate(records))
        )
    (meta / f"{start:020d}.log").write_bytes(
        b"".join(
            build_v2_batch([SimpleRecord(None, v, 0)], start + i) for i, v in enumerate(values)
        )
    )
    return tmp_path


BASE = [
    rec("FeatureLevelRecord", name="metadata.version", featureLevel=14),
    topic("orders", TID),
    partition(TID, 0),
    partition(TID, 1),
]


def test_partition_changes_merge_as_kafka_merges_them(tmp_path):
    d = log(
        tmp_path,
        *BASE,
        rec("PartitionChangeRecord", partitionId=0, topicId=TID, isr=[1]),  # ISR only
        rec("PartitionChangeRecord", partitionId=1, topicId=TID, leader=2),  # a new leader
        rec(
            "PartitionChangeRecord",
            2,
            partitionId=0,
            topicId=TID,
            eligibleLeaderReplicas=[2],
            lastKnownElr=[2],
        ),
    )
    img = read_metadata_image(d).image
    p0, p1 = img.topics["orders"].partitions[0], img.topics["orders"].partitions[1]
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch, p0.elr) == (1, [1], 0, 2, [2])
    assert (p1.leader, p1.leader_epoch, p1.partition_epoch) == (2, 1, 1)
    assert img.metadata_version == 14 and img.last_offset == 6


def test_an_aborted_metadata_transaction_is_not_applied_and_an_ended_one_is(tmp_path):
    d = log(
        tmp_path,
        *BASE,
        rec("BeginTransactionRecord", name="create"),
        topic("committed", TID2),
        partition(TID2, 0),
        rec("EndTransactionRecord"),
        rec("BeginTransactionRecord", name="create"),
        topic("aborted", uuid.uuid4().bytes),
        rec("AbortTransactionRecord", reason="controller failover"),
        rec("BeginTransactionRecord"),
        topic("open", uuid.uuid4().bytes),
    )
    read = read_metadata_image(d)
    img = read.image
    assert set(img.topics) == {"orders", "committed"}
    assert img.aborted_transactions == [(8, 10, "controller failover")]
    assert img.pending[0] == 11 and len(img.pending[1]) == 1
    out = read.to_dict()
    assert out["open_transaction"] == {"begin_offset": 11, "records_held_back": 1}


def test_at_offset_stops_after_that_record(tmp_path):
    d = log(tmp_path, *BASE, topic("later", TID2))
    assert set(read_metadata_image(d, at_offset=3).image.topics) == {"orders"}
    assert set(read_metadata_image(d, at_offset=4).image.topics) == {"orders", "later"}
    assert read_metadata_image(d, at_offset=2).image.topics["orders"].partitions.keys() == {0}


def test_the_newest_snapshot_then_the_log_after_it(tmp_path):
    d = log(
        tmp_path,
        config(2, "orders", "retention.ms", "1000"),
        rec("RemoveTopicRecord", topicId=TID2),
        snapshot=(10, [*BASE, topic("old", TID2)]),
    )
    read = read_metadata_image(d)
    assert read.snapshot == "00000000000000000010-0000000001.checkpoint"
    assert set(read.image.topics) == {"orders"}
    assert (
        read.image.topic_configs("orders") == {"retention.ms": "1000"}
        and read.image.last_offset == 11
    )
    # --at-offset before the snapshot's end: the snapshot cannot be used, and the log before it is gone
    with pytest.raises(InputError, match="no image as of offset 5"):
        read_metadata_image(d, at_offset=5)
    with pytest.raises(InputError, match="reach offset 11"):
        read_metadata_image(d, at_offset=12)


def test_removed_topic_takes_its_configs_and_brokers_fence(tmp_path):
    endpoint = [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}]
    d = log(
        tmp_path,
        *BASE,
        config(2, "orders", "cleanup.policy", "compact"),
        rec("RemoveTopicRecord", topicId=TID),
        rec(
            "RegisterBrokerRecord",
            1,
            brokerId=3,
            incarnationId=TID,
            brokerEpoch=7,
            endPoints=endpoint,
            features=[],
            rack="r",
            fenced=True,
            inControlledShutdown=False,
        ),
        rec("UnfenceBrokerRecord", id=3, epoch=7),
        config(4, "", "log.retention.ms", "5"),
    )
    img = read_metadata_image(d).image
    assert img.topics == {} and ("topic", "orders") not in img.configs
    b = img.brokers[3]
    assert (b.fenced, b.rack, b.epoch, str(b.endpoints[0])) == (
        False,
        "r",
        7,
        "PLAINTEXT://h:9092 (PLAINTEXT)",
    )
    assert img.configs[("broker", "")] == {"log.retention.ms": "5"}


def test_scram_credentials_keep_the_user_names_and_never_the_secrets(tmp_path):
    secret = b"s3cr3t-stored-key"
    d = log(
        tmp_path,
        rec(
            "UserScramCredentialRecord",
            name="alice",
            mechanism=1,
            salt=b"salt",
            storedKey=secret,
            serverKey=secret,
            iterations=4096,
        ),
        rec(
            "UserScramCredentialRecord",
            name="bob",
            mechanism=2,
            salt=b"salt",
            storedKey=secret,
            serverKey=secret,
            iterations=4096,
        ),
        rec("RemoveUserScramCredentialRecord", name="bob", mechanism=2),
        rec(
            "AccessControlEntryRecord",
            id=TID,
            resourceType=2,
            resourceName="orders",
            patternType=3,
            principal="User:alice",
            host="*",
            operation=3,
            permissionType=3,
        ),
        rec(
            "ClientQuotaRecord",
            entity=[{"entityType": "user", "entityName": "alice"}],
            key="producer_byte_rate",
            value=1024.0,
            remove=False,
        ),
        rec("ProducerIdsRecord", brokerId=1, brokerEpoch=4, nextProducerId=5000),
    )
    read = read_metadata_image(d)
    out = json.dumps(read.to_dict())
    assert "s3cr3t" not in out and "c2Vjcm" not in out
    j = read.to_dict()
    assert j["scram_users"] == {"SCRAM-SHA-256": ["alice"]}
    (acl,) = j["acls"]
    assert (
        acl["operation"],
        acl["permission_type"],
        acl["resource_type"],
        acl["pattern_type"],
    ) == ("READ", "ALLOW", "TOPIC", "LITERAL")
    assert j["client_quotas"] == [
        {
            "entity": [{"entity_type": "user", "entity_name": "alice"}],
            "quotas": {"producer_byte_rate": 1024.0},
        }
    ]
    assert j["producer_ids"] == {"broker_id": 1, "broker_epoch": 4, "next_producer_id": 5000}


def test_a_damaged_batch_stops_the_replay_with_its_position(tmp_path):
    d = log(tmp_path, *BASE, topic("after", TID2))
    path = d / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    sizes, pos = [], 0
    while pos < len(data):
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
        sizes.append(pos)
        pos += size
    data[sizes[2] + 70] ^= 0xFF  # inside the third batch's records: its CRC fails
    path.write_bytes(bytes(data))
    (d / ".kafka_cleanshutdown").write_text("")
    read = read_metadata_image(d)
    assert read.damage is not None and read.damage.position == sizes[2]
    assert set(read.image.topics) == {"orders"} and read.image.topics["orders"].partitions == {}


def test_not_a_kraft_log_dir_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no __cluster_metadata-0"):
        read_metadata_image(tmp_path)


def test_the_image_replays_the_same_records_as_the_config_reader():
    """The example log dir: 3.3.1's broker; topics and configs as config.read_cluster_metadata has them."""
    from kafkalog_cli.config import read_cluster_metadata

    img = read_metadata_image(EXAMPLES).image
    configs = read_cluster_metadata(EXAMPLES)
    assert set(img.topics) == set(configs.topics)
    assert {t: img.topic_configs(t) for t in img.topics} == {
        t: dict(configs[t]) for t in configs.topics
    }


@pytest.mark.parametrize(
    "fixture, snapshot, version, topics",
    [
        # Kafka 3.7 (CP 7.7) snapshots only: the newest one is read
        (
            [
                "ItumelengMogase-cm-0-00000000000000007364-0000000001.checkpoint.xz",
                "ItumelengMogase-cm-0-00000000000000060500-0000000025.checkpoint.xz",
            ],
            "00000000000000060500-0000000025.checkpoint",
            "3.7-IV4",
            9,
        ),
        # Kafka 4.2
        (["nomanazeem-cm-0-0.log.xz"], None, "4.2-IV1", 2),
    ],
)
def test_corpus_metadata(tmp_path, fixture, snapshot, version, topics):
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    for f in fixture:
        name = f.split("-cm-0-", 1)[1].removesuffix(".xz")
        if name == "0.log":
            name = "00000000000000000000.log"
        (meta / name).write_bytes(lzma.decompress((FIXTURES / f).read_bytes()))
    read = read_metadata_image(tmp_path)
    assert (read.snapshot, read.damage) == (snapshot, None)
    img = read.image
    assert (img.metadata_version and read.to_dict()["metadata_version"], len(img.topics)) == (
        version,
        topics,
    )
    assert img.brokers and all(t.partitions for t in img.topics.values())
    assert uuid_to_string(bytes(16)) not in {t.id for t in img.topics.values()}


def test_a_metadata_image_is_built_only_by_replay():
    img = MetadataImage()
    assert img.to_dict()["topics"] == [] and img.metadata_version is None
