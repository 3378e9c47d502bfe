"""ops.consumer_groups: __consumer_offsets replayed as the group coordinator loads it, on logs
built from Kafka's own schemas (classic and KIP-848 records, tombstones, transactional commits
and their markers), on the corpus' Kafka 3.3.1 to 4.2 files, and Kafka's group -> partition hash."""

from __future__ import annotations

import lzma
import struct
import uuid
from pathlib import Path

import pytest

from kafkalog_cli.errors import CorruptRecordError, InputError, KafkalogError
from kafkalog_cli.formats.internal.kafka_protocol import uuid_to_string, write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import ControlRecordType, SimpleRecord, build_v2_batch
from kafkalog_cli.ops.consumer_groups import (
    GroupCoordinatorReplay,
    GroupState,
    GroupType,
    describe_groups,
    metadata_image_of,
    offsets_topic_layout,
    partition_for,
)
from kafkalog_cli.storage.partition import Partition
from tests.helpers.paths import EXAMPLES
from tests.helpers.paths import INTERNAL as FIXTURES

T = 1_700_000_000_000
TOPIC_ID = uuid.UUID("6f1b1c2e-0000-4000-8000-000000000001").bytes


# ------------------------------------------------------------------ records, as Kafka writes them
def key(record_type: int, name: str, **fields) -> bytes:
    return struct.pack(">h", record_type) + write_struct(
        MESSAGES[name + "Key"], fields, record_type
    )


def value(name: str, version: int, **fields) -> bytes:
    return struct.pack(">h", version) + write_struct(MESSAGES[name + "Value"], fields, version)


def commit(group, topic, partition, offset, metadata="", version=3, leader_epoch=-1):
    return (
        key(1, "OffsetCommit", group=group, topic=topic, partition=partition),
        value(
            "OffsetCommit",
            version,
            offset=offset,
            leaderEpoch=leader_epoch,
            metadata=metadata,
            commitTimestamp=T,
            expireTimestamp=T + 1000,
        ),
    )


def assignment(*tps) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return struct.pack(">h", 1) + write_struct(
        MESSAGES["ConsumerProtocolAssignment"],
        {
            "assignedPartitions": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            "userData": None,
        },
        1,
    )


def subscription(*topics) -> bytes:
    return struct.pack(">h", 1) + write_struct(
        MESSAGES["ConsumerProtocolSubscription"],
        {"topics": list(topics), "userData": None, "ownedPartitions": []},
        1,
    )


def group_metadata(group, generation, members=(), protocol="range"):
    return (
        key(2, "GroupMetadata", group=group),
        value(
            "GroupMetadata",
            3,
            protocolType="consumer",
            generation=generation,
            protocol=protocol,
            leader=members[0][0] if members else None,
            currentStateTimestamp=T,
            members=[
                {
                    "memberId": mid,
                    "groupInstanceId": None,
                    "clientId": "client-" + mid,
                    "clientHost": "/10.0.0.1",
                    "rebalanceTimeout": 300000,
                    "sessionTimeout": 45000,
                    "subscription": subscription("orders"),
                    "assignment": assignment(*tps),
                }
                for mid, tps in members
            ],
        ),
    )


def batch(offset: int, *records, pid: int = -1, txn: bool = False) -> bytes:
    return build_v2_batch(
        [SimpleRecord(k, v, T) for k, v in records],
        offset,
        producer_id=pid,
        producer_epoch=0,
        is_transactional=txn,
    )


def marker(offset: int, kind: ControlRecordType, pid: int) -> bytes:
    r = SimpleRecord(struct.pack(">hh", 0, int(kind)), struct.pack(">hi", 0, 0), T)
    return build_v2_batch(
        [r], offset, producer_id=pid, producer_epoch=0, is_transactional=True, is_control=True
    )


def partition_dir(root: Path, number: int, *batches: bytes) -> Path:
    d = root / f"__consumer_offsets-{number}"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    return d


def replay(d: Path, group: str | None = None) -> GroupCoordinatorReplay:
    r = GroupCoordinatorReplay(group)
    r.replay_partition(Partition.open(d))
    return r


# ------------------------------------------------------------------ classic groups and offsets
def test_the_latest_commit_wins_and_a_tombstone_removes_it(tmp_path):
    d = partition_dir(
        tmp_path,
        0,
        batch(0, commit("g", "orders", 0, 5, "first")),
        batch(1, commit("g", "orders", 0, 9, "second"), commit("g", "orders", 1, 4)),
        batch(3, (commit("g", "orders", 1, 0)[0], None)),
    )
    (g,) = replay(d).finish({})
    assert {tp: (c.offset, c.metadata, c.record_offset) for tp, c in g.offsets.items()} == {
        ("orders", 0): (9, "second", 1)
    }
    assert (g.type, g.state, g.has_metadata) == (GroupType.CLASSIC, GroupState.EMPTY, False)


def test_group_metadata_gives_members_assignments_and_a_tombstone_removes_the_group(tmp_path):
    d = partition_dir(
        tmp_path,
        0,
        batch(
            0,
            group_metadata(
                "g", 1, [("m1", [("orders", 0), ("orders", 1)]), ("m2", [("orders", 2)])]
            ),
        ),
        batch(1, group_metadata("gone", 4)),
        batch(2, (key(2, "GroupMetadata", group="gone"), None)),
    )
    groups = replay(d).finish({})
    (g,) = groups  # "gone" has neither metadata nor offsets left
    assert (g.group_id, g.generation, g.protocol, g.leader, g.state) == (
        "g",
        1,
        "range",
        "m1",
        GroupState.STABLE,
    )
    assert g.members["m1"].assignment == [("orders", 0), ("orders", 1)]
    assert g.members["m1"].subscribed_topics == ["orders"]
    assert (g.members["m2"].client_id, g.members["m2"].client_host) == ("client-m2", "/10.0.0.1")


def test_offsets_of_a_removed_group_stay_until_their_own_tombstones(tmp_path):
    d = partition_dir(
        tmp_path,
        0,
        batch(0, group_metadata("g", 1)),
        batch(1, commit("g", "t", 0, 3)),
        batch(2, (key(2, "GroupMetadata", group="g"), None)),
    )
    (g,) = replay(d).finish({})
    assert not g.has_metadata and g.offsets[("t", 0)].offset == 3


# ------------------------------------------------------------------ transactional commits
def test_a_transactional_commit_applies_at_its_commit_marker_and_not_at_an_abort(tmp_path):
    d = partition_dir(
        tmp_path,
        0,
        batch(0, commit("g", "t", 0, 5)),
        batch(1, commit("g", "t", 0, 10, "txn"), pid=7, txn=True),
        batch(2, commit("g", "t", 1, 20), pid=8, txn=True),
        marker(3, ControlRecordType.COMMIT, 7),
        marker(4, ControlRecordType.ABORT, 8),
        batch(5, commit("g", "t", 2, 30), pid=9, txn=True),
    )
    r = replay(d)
    (g,) = r.finish({})
    assert {tp: (c.offset, c.producer_id) for tp, c in g.offsets.items()} == {("t", 0): (10, 7)}
    ((pid, group, topic, partition, c),) = r.pending_offsets()  # no marker yet: held back
    assert (pid, group, topic, partition, c.offset) == (9, "g", "t", 2, 30)


def test_a_commit_written_after_the_transactional_one_wins_over_its_marker(tmp_path):
    """CommitRecordMetadataAndOffset.olderThan: the later record in the log stays."""
    d = partition_dir(
        tmp_path,
        0,
        batch(0, commit("g", "t", 0, 10), pid=7, txn=True),
        batch(1, commit("g", "t", 0, 12)),
        marker(2, ControlRecordType.COMMIT, 7),
    )
    (g,) = replay(d).finish({})
    assert g.offsets[("t", 0)].offset == 12


# ------------------------------------------------------------------ KIP-848 consumer groups
def _kip848(group="g848", member="m-1", member_epoch=5, target=5, group_epoch=5, state=0):
    return [
        (
            key(3, "ConsumerGroupMetadata", groupId=group),
            value("ConsumerGroupMetadata", 0, epoch=group_epoch),
        ),
        (
            key(5, "ConsumerGroupMemberMetadata", groupId=group, memberId=member),
            value(
                "ConsumerGroupMemberMetadata",
                0,
                instanceId=None,
                rackId="r1",
                clientId="cl",
                clientHost="/h",
                subscribedTopicNames=["orders"],
                subscribedTopicRegex=None,
                rebalanceTimeoutMs=300000,
                serverAssignor="uniform",
            ),
        ),
        (
            key(6, "ConsumerGroupTargetAssignmentMetadata", groupId=group),
            value("ConsumerGroupTargetAssignmentMetadata", 0, assignmentEpoch=target),
        ),
        (
            key(8, "ConsumerGroupCurrentMemberAssignment", groupId=group, memberId=member),
            value(
                "ConsumerGroupCurrentMemberAssignment",
                0,
                memberEpoch=member_epoch,
                previousMemberEpoch=4,
                state=state,
                assignedPartitions=[{"topicId": TOPIC_ID, "partitions": [0, 2]}],
                partitionsPendingRevocation=[],
            ),
        ),
    ]


def test_a_kip_848_group_has_its_epochs_members_and_assignment_named_through_the_metadata(tmp_path):
    d = partition_dir(tmp_path, 0, batch(0, *_kip848()), batch(4, commit("g848", "orders", 2, 40)))
    (g,) = replay(d).finish({uuid_to_string(TOPIC_ID): "orders"})
    assert (g.type, g.state, g.generation, g.target_assignment_epoch) == (
        GroupType.CONSUMER,
        GroupState.STABLE,
        5,
        5,
    )
    m = g.members["m-1"]
    assert (m.member_epoch, m.state, m.server_assignor, m.rack_id) == (5, "STABLE", "uniform", "r1")
    assert m.assignment == [("orders", 0), ("orders", 2)]
    assert g.assignor() == "uniform" and g.offsets[("orders", 2)].offset == 40


@pytest.mark.parametrize(
    "member_epoch, target, group_epoch, state, expected",
    [
        (5, 5, 6, 0, GroupState.ASSIGNING),  # the group epoch is ahead of the target assignment
        (4, 5, 5, 0, GroupState.RECONCILING),  # a member is behind the target assignment
        (5, 5, 5, 1, GroupState.RECONCILING),  # a member still has partitions to revoke
    ],
)
def test_a_kip_848_group_state_is_computed_as_consumer_group_computes_it(
    tmp_path, member_epoch, target, group_epoch, state, expected
):
    d = partition_dir(
        tmp_path,
        0,
        batch(
            0,
            *_kip848(
                member_epoch=member_epoch, target=target, group_epoch=group_epoch, state=state
            ),
        ),
    )
    (g,) = replay(d).finish({})
    assert g.state is expected
    assert g.members["m-1"].assignment[0][0] == uuid_to_string(
        TOPIC_ID
    )  # no metadata: the id stays


def test_a_kip_848_member_tombstone_and_group_tombstone(tmp_path):
    recs = _kip848()
    d = partition_dir(tmp_path, 0, batch(0, *recs), batch(4, (recs[1][0], None)))
    (g,) = replay(d).finish({})
    assert g.state is GroupState.EMPTY and not g.members
    d2 = partition_dir(tmp_path / "x", 0, batch(0, *recs), batch(4, (recs[0][0], None)))
    assert replay(d2).finish({}) == []


# ------------------------------------------------------------------ damage, unknown records
def test_a_damaged_batch_names_its_file_and_position(tmp_path):
    good = batch(0, commit("g", "t", 0, 5))
    bad = bytearray(batch(1, commit("g", "t", 0, 6)))
    bad[-3] ^= 0xFF  # a payload byte: the CRC no longer matches
    d = partition_dir(tmp_path, 0, good, bytes(bad), batch(2, commit("g", "t", 0, 7)))
    (tmp_path / ".kafka_cleanshutdown").write_text("")  # the broker loads it as it is: no recovery
    with pytest.raises(KafkalogError) as e:
        replay(d)
    assert e.value.path.endswith("00000000000000000000.log") and e.value.position == len(good)
    assert isinstance(e.value, CorruptRecordError)


def test_after_an_unclean_shutdown_the_active_segment_is_read_up_to_where_recovery_truncates(
    tmp_path,
):
    good = batch(0, commit("g", "t", 0, 5))
    d = partition_dir(tmp_path, 0, good, b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05torn")
    notes = []
    r = GroupCoordinatorReplay(None, notes.append)
    r.replay_partition(Partition.open(d))
    (g,) = r.finish({})
    assert g.offsets[("t", 0)].offset == 5 and f"byte {len(good)}" in notes[0]


def test_a_record_that_does_not_parse_names_its_offset(tmp_path):
    d = partition_dir(
        tmp_path,
        0,
        batch(0, commit("g", "t", 0, 5)),
        batch(1, (key(1, "OffsetCommit", group="g", topic="t", partition=0), b"\0\3")),
    )
    with pytest.raises(KafkalogError) as e:
        replay(d)
    assert "record at offset 1" in e.value.message and e.value.position > 0


def test_an_unknown_record_type_is_skipped_with_a_note(tmp_path):
    notes = []
    d = partition_dir(
        tmp_path,
        0,
        batch(0, (struct.pack(">h", 99) + b"x", b"\0\0")),
        batch(1, commit("g", "t", 0, 5)),
    )
    r = GroupCoordinatorReplay(None, notes.append)
    r.replay_partition(Partition.open(d))
    assert len(r.finish({})) == 1 and "Unknown record type 99" in notes[0]


# ------------------------------------------------------------------ which partition holds a group
@pytest.mark.parametrize(
    "group, partitions, expected",
    [
        # Utils.abs(groupId.hashCode) % 50, worked in Java: "console-consumer-1".hashCode() etc.
        ("oracle-group", 1, 0),
        ("demo-group", 50, 15),  # nomanazeem's broker wrote it to __consumer_offsets-15
        ("authService", 50, 15),  # MashaKosher's too
    ],
)
def test_partition_for_is_kafkas_hash(group, partitions, expected):
    assert partition_for(group, partitions) == expected


def test_partition_for_handles_integer_min_value():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs gives 0
    assert partition_for("polygenelubricants", 7) == 0


def test_the_partition_count_is_the_metadata_logs_or_a_stated_guess(tmp_path):
    layout = offsets_topic_layout([0], None, metadata_image_of([EXAMPLES]))
    assert (layout.partitions, layout.guessed) == (1, False) and "metadata log" in layout.source
    guessed = offsets_topic_layout([0, 3, 7], None)
    assert (guessed.partitions, guessed.guessed) == (8, True) and "guess" in guessed.source
    assert offsets_topic_layout([0], 50).partitions == 50


def test_group_reads_only_its_partition_and_says_the_count_is_a_guess(tmp_path):
    # "g" hashes to partition 103 % 4 == 3 of 4 partitions
    assert partition_for("g", 4) == 3
    partition_dir(tmp_path, 0, b"garbage that is never read")
    partition_dir(tmp_path, 3, batch(0, commit("g", "t", 0, 5)))
    notes = []
    report = describe_groups([tmp_path], "g", note=notes.append)
    assert [g.group_id for g in report.groups] == ["g"] and report.partitions_read[0].endswith(
        "__consumer_offsets-3"
    )
    assert any("guess" in n for n in notes)
    with pytest.raises(InputError, match="__consumer_offsets-1"):
        describe_groups(
            [tmp_path], "g", stated_partitions=2
        )  # "g" is in partition 1 of 2: not here


def test_lag_is_against_the_high_watermark_of_the_partition_in_the_paths():
    report = describe_groups([EXAMPLES])
    (row,) = report.rows["oracle-group"]
    assert (row.topic, row.partition, row.commit.offset, row.log_end.offset, row.lag) == (
        "codec-none",
        0,
        60,
        60,
        0,
    )
    assert "high watermark" in row.log_end.source


# ------------------------------------------------------------------ the corpus, Kafka 3.3.1 to 4.2
def _corpus_partition(tmp_path, fixture: str, name: str, number: int) -> Path:
    d = tmp_path / f"__consumer_offsets-{number}"
    d.mkdir()
    (d / name).write_bytes(lzma.decompress((FIXTURES / fixture).read_bytes()))
    return d


@pytest.mark.parametrize(
    "fixture, name, number, expected",
    [
        # Kafka 4.2 (flexible offset commit values): demo-group, 3 partitions at 0, one member
        (
            "nomanazeem-co-15-0.log.xz",
            "00000000000000000000.log",
            15,
            {
                "demo-group": (
                    GroupState.STABLE,
                    "range",
                    3,
                    {("demo-topic", 0): 0, ("demo-topic", 1): 0, ("demo-topic", 2): 0},
                )
            },
        ),
        # Kafka 4.0 with the cleaner's delete horizons
        ("ArthurArutunyan04-co-19-0.log.xz", "00000000000000000000.log", 19, None),
        # Kafka 3.3.1's own broker
        ("formats-basic-before-co-0-0.log.xz", "00000000000000000000.log", 0, None),
    ],
)
def test_corpus_offsets_logs_replay(tmp_path, fixture, name, number, expected):
    d = _corpus_partition(tmp_path, fixture, name, number)
    groups = {g.group_id: g for g in replay(d).finish({})}
    assert groups
    if expected:
        for group_id, (state, protocol, generation, offsets) in expected.items():
            g = groups[group_id]
            assert (g.state, g.protocol, g.generation) == (state, protocol, generation)
            assert {tp: c.offset for tp, c in g.offsets.items()} == offsets
