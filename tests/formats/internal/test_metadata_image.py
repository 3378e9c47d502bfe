"""formats.internal.metadata_image: MetadataImage replayed from decoded records, no files."""

from __future__ import annotations

from kafkalog_cli.formats.internal.cluster_metadata import MetadataRecord
from kafkalog_cli.formats.internal.metadata_image import (
    LeaderRecoveryState,
    MetadataImage,
    metadata_version_name,
)


def r(type_name: str, **data) -> MetadataRecord:
    return MetadataRecord(type_name, 0, 0, data)


def _partition(**over):
    d = {
        "partitionId": 0,
        "topicId": "T",
        "replicas": [1, 2, 3],
        "isr": [1, 2, 3],
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": 1,
        "leaderRecoveryState": 0,
        "leaderEpoch": 4,
        "partitionEpoch": 9,
    }
    return r("PARTITION_RECORD", **{**d, **over})


def _change(**over):
    d = {
        "partitionId": 0,
        "topicId": "T",
        "isr": None,
        "leader": -2,
        "replicas": None,
        "removingReplicas": None,
        "addingReplicas": None,
        "leaderRecoveryState": -1,
    }
    return r("PARTITION_CHANGE_RECORD", **{**d, **over})


def test_partition_change_record_merges_as_partition_registration_merge():
    img = MetadataImage()
    img.replay(r("TOPIC_RECORD", name="t", topicId="T"), 0)
    img.replay(_partition(), 1)
    img.replay(_change(isr=[1, 2]), 2)  # the leader stays: its epoch too
    img.replay(_change(leader=2, leaderRecoveryState=1), 3)  # a new leader: leader epoch + 1
    p = img.topics["t"].partitions[0]
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == (
        2,
        [1, 2],
        5,
        11,
        LeaderRecoveryState.RECOVERING,
    )
    assert p.replicas == [1, 2, 3] and img.last_offset == 3 and img.records == 4


def test_a_transaction_is_held_back_until_its_end_and_dropped_at_an_abort():
    img = MetadataImage()
    img.replay(r("BEGIN_TRANSACTION_RECORD", name=None), 0)
    img.replay(r("TOPIC_RECORD", name="t", topicId="T"), 1)
    assert img.topics == {} and img.pending[0] == 0
    img.replay(r("END_TRANSACTION_RECORD"), 2)
    assert set(img.topics) == {"t"} and img.pending is None and img.last_offset == 2
    img.replay(r("BEGIN_TRANSACTION_RECORD", name=None), 3)
    img.replay(r("REMOVE_TOPIC_RECORD", topicId="T"), 4)
    img.replay(r("ABORT_TRANSACTION_RECORD", reason="failover"), 5)
    assert set(img.topics) == {"t"} and img.aborted_transactions == [(3, 5, "failover")]


def test_features_level_zero_removes_but_metadata_version_stays():
    img = MetadataImage()
    img.replay(r("FEATURE_LEVEL_RECORD", name="metadata.version", featureLevel=7))
    img.replay(r("FEATURE_LEVEL_RECORD", name="group.version", featureLevel=1))
    img.replay(r("FEATURE_LEVEL_RECORD", name="group.version", featureLevel=0))
    assert (
        img.features == {"metadata.version": 7}
        and metadata_version_name(img.metadata_version) == "3.3-IV3"
    )
    assert (
        metadata_version_name(99) == "level 99" and img.last_offset is None
    )  # a snapshot's records


def test_clear_elr_clears_one_topic_or_all():
    img = MetadataImage()
    for name, tid in (("a", "A"), ("b", "B")):
        img.replay(r("TOPIC_RECORD", name=name, topicId=tid))
        img.replay(_partition(topicId=tid, eligibleLeaderReplicas=[2], lastKnownElr=[3]))
    img.replay(r("CLEAR_ELR_RECORD", topicName="a"))
    assert img.topics["a"].partitions[0].elr == [] and img.topics["b"].partitions[0].elr == [2]
    img.replay(r("CLEAR_ELR_RECORD", topicName=""))
    assert img.topics["b"].partitions[0].last_known_elr == []
