"""The record schemas of Kafka 4.2, as data for kafka_protocol.read_struct / json_node.

Our own transcription of the message JSON that Kafka 4.2 builds its records from: the group,
share and transaction coordinators' keys and values (__consumer_offsets, __share_group_state,
__transaction_state), the KRaft metadata records (up to metadata.version 4.2-IV1), the KRaft
control records, the consumer protocol, and the tiered-storage metadata records
(__remote_log_metadata). Each field: its camelCase name (as Kafka's JsonConverters write it),
type, versions ("0+", "1-3", "none"), nullable versions, tag and default for tagged fields.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalog_cli.formats.internal.kafka_protocol import NULL, Field, Struct, versions

__all__ = [
    "MESSAGES",
    "METADATA_RECORDS",
    "GROUP_RECORD_TYPES",
    "SHARE_RECORD_TYPES",
    "TRANSACTION_RECORD_TYPES",
    "REMOTE_LOG_METADATA_RECORDS",
]


def F(
    name: str,
    type_: str,
    v: str = "0+",
    null: str = "none",
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = None,
    fields: tuple[Field, ...] = (),
    zero_copy: bool = False,
) -> Field:
    """A field as the schema writes it; a tagged field without its own taggedVersions is tagged
    in all its versions."""
    tagged_versions = versions(tagged or v) if tag is not None else None
    return Field(
        name, type_, versions(v), versions(null), tagged_versions, tag, default, fields, zero_copy
    )


def S(valid: str, flexible: str, fields: tuple[Field, ...]) -> Struct:
    return Struct("", versions(valid), versions(flexible), fields)


def _named(table: dict) -> dict:
    """Give each Struct its message name: {name: S} or {key: (name, S)}."""
    out = {}
    for key, entry in table.items():
        name, struct = (key, entry) if isinstance(entry, Struct) else entry
        out[key] = replace(struct, name=name)
    return out


def _key(version: str, *fields: str | Field) -> Struct:
    """A coordinator record key: not flexible, its one version the record type (a name alone is
    a string field)."""
    return S(
        version,
        "none",
        tuple(F(f, "string", v=version) if isinstance(f, str) else f for f in fields),
    )


def _flexible(*fields: Field) -> Struct:
    """A coordinator record value of version 0 only, flexible."""
    return S("0", "0+", fields)


def _share_key(version: str) -> Struct:
    return _key(
        version, "groupId", F("topicId", "uuid", v=version), F("partition", "int32", v=version)
    )


# pieces several schemas share
_TOPIC_PARTITIONS = (F("topicId", "uuid"), F("partitions", "[]int32"))
_MEMBER_ASSIGNMENT = (
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    F("assignedPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
)
# what a consumer or streams group member record says of its client
_MEMBER_CLIENT = (
    F("instanceId", "string", null="0+"),
    F("rackId", "string", null="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
)
_PARTITION_METADATA = F(
    "topics",
    "[]struct",
    fields=(
        F("topicId", "uuid"),
        F("topicName", "string"),
        F("numPartitions", "int32"),
        F(
            "partitionMetadata",
            "[]struct",
            fields=(F("partition", "int32"), F("racks", "[]string")),
        ),
    ),
)
_STATE_BATCHES = F(
    "stateBatches",
    "[]struct",
    fields=(
        F("firstOffset", "int64"),
        F("lastOffset", "int64"),
        F("deliveryState", "int8"),
        F("deliveryCount", "int16"),
    ),
)
_DELIVERY_COMPLETE_COUNT = F("deliveryCompleteCount", "int32", tag=0, default=-1)  # 4.2, KIP-1226
_TOPIC_ID_PARTITION = F(
    "topicIdPartition",
    "struct",
    fields=(F("name", "string"), F("id", "uuid"), F("partition", "int32")),
)
_SEGMENT_ID = F("remoteLogSegmentId", "struct", fields=(_TOPIC_ID_PARTITION, F("id", "uuid")))
_CUSTOM_METADATA = F("customMetadata", "bytes", null="0+", default=NULL)
# a remote segment's fields after its id
_SEGMENT = (
    F("startOffset", "int64"),
    F("endOffset", "int64"),
    F("brokerId", "int32"),
    F("maxTimestampMs", "int64"),
    F("eventTimestampMs", "int64"),
    F("segmentLeaderEpochs", "[]struct", fields=(F("leaderEpoch", "int32"), F("offset", "int64"))),
    F("segmentSizeInBytes", "int32"),
    _CUSTOM_METADATA,
    F("remoteLogSegmentState", "int8"),
)
_VOTERS = (F("voterId", "int32"), F("voterDirectoryId", "uuid", v="1+"))
_ENDPOINTS = F(
    "endPoints",
    "[]struct",
    fields=(
        F("name", "string"),
        F("host", "string"),
        F("port", "uint16"),
        F("securityProtocol", "int16"),
    ),
)
_FEATURES = F(
    "features",
    "[]struct",
    fields=(
        F("name", "string"),
        F("minSupportedVersion", "int16"),
        F("maxSupportedVersion", "int16"),
    ),
)
_BROKER_ID_EPOCH = (F("id", "int32"), F("epoch", "int64"))
# Kafka Streams group pieces
_KEY_VALUE = (F("key", "string"), F("value", "string"))
_TASK_IDS = (F("subtopologyId", "string"), F("partitions", "[]int32"))
# a current assignment's tasks also carry the epoch each partition was assigned at (KAFKA-19779)
_TASK_IDS_WITH_EPOCHS = (
    *_TASK_IDS,
    F("assignmentEpochs", "[]int32", null="0+", tag=0, default=NULL),
)
_TOPIC_INFO = (
    F("name", "string"),
    F("partitions", "int32"),
    F("replicationFactor", "int16"),
    F("topicConfigs", "[]struct", fields=_KEY_VALUE),
)


MESSAGES: dict[str, Struct] = _named(
    {
        # __consumer_offsets (group coordinator)
        "OffsetCommitKey": _key("0-1", "group", "topic", F("partition", "int32", v="0-1")),
        "OffsetCommitValue": S(
            "0-4",
            "4+",
            (
                F("offset", "int64"),
                F("leaderEpoch", "int32", v="3+", default=-1),
                F("metadata", "string"),
                F("commitTimestamp", "int64"),
                F("expireTimestamp", "int64", v="1", default=-1),
            ),
        ),
        "GroupMetadataKey": _key("2", "group"),
        "GroupMetadataValue": S(
            "0-4",
            "4+",
            (
                F("protocolType", "string"),
                F("generation", "int32"),
                F("protocol", "string", null="0+"),
                F("leader", "string", null="0+"),
                F("currentStateTimestamp", "int64", v="2+", default=-1),
                F(
                    "members",
                    "[]struct",
                    fields=(
                        F("memberId", "string"),
                        F("groupInstanceId", "string", v="3+", null="3+", default=NULL),
                        F("clientId", "string"),
                        F("clientHost", "string"),
                        F("rebalanceTimeout", "int32", v="1+", default=-1),
                        F("sessionTimeout", "int32"),
                        F("subscription", "bytes"),
                        F("assignment", "bytes"),
                    ),
                ),
            ),
        ),
        "ConsumerGroupMetadataKey": _key("3", "groupId"),
        "ConsumerGroupMetadataValue": _flexible(
            F("epoch", "int32"), F("metadataHash", "int64", tag=0, default=0)
        ),
        "ConsumerGroupPartitionMetadataKey": _key("4", "groupId"),
        "ConsumerGroupPartitionMetadataValue": _flexible(_PARTITION_METADATA),
        "ConsumerGroupMemberMetadataKey": _key("5", "groupId", "memberId"),
        "ConsumerGroupMemberMetadataValue": _flexible(
            *_MEMBER_CLIENT,
            F("subscribedTopicNames", "[]string"),
            F("subscribedTopicRegex", "string", null="0+"),
            F("rebalanceTimeoutMs", "int32", default=-1),
            F("serverAssignor", "string", null="0+"),
            F(
                "classicMemberMetadata",
                "struct",
                null="0+",
                tag=0,
                default=NULL,
                fields=(
                    F("sessionTimeoutMs", "int32"),
                    F(
                        "supportedProtocols",
                        "[]struct",
                        fields=(F("name", "string"), F("metadata", "bytes")),
                    ),
                ),
            ),
        ),
        "ConsumerGroupTargetAssignmentMetadataKey": _key("6", "groupId"),
        "ConsumerGroupTargetAssignmentMetadataValue": _flexible(F("assignmentEpoch", "int32")),
        "ConsumerGroupTargetAssignmentMemberKey": _key("7", "groupId", "memberId"),
        "ConsumerGroupTargetAssignmentMemberValue": _flexible(
            F("topicPartitions", "[]struct", fields=_TOPIC_PARTITIONS)
        ),
        "ConsumerGroupCurrentMemberAssignmentKey": _key("8", "groupId", "memberId"),
        "ConsumerGroupCurrentMemberAssignmentValue": _flexible(
            *_MEMBER_ASSIGNMENT,
            F("partitionsPendingRevocation", "[]struct", fields=_TOPIC_PARTITIONS),
        ),
        "ShareGroupPartitionMetadataKey": _key("9", "groupId"),
        "ShareGroupPartitionMetadataValue": _flexible(_PARTITION_METADATA),
        "ShareGroupMemberMetadataKey": _key("10", "groupId", "memberId"),
        "ShareGroupMemberMetadataValue": _flexible(
            F("rackId", "string", null="0+"),
            F("clientId", "string"),
            F("clientHost", "string"),
            F("subscribedTopicNames", "[]string"),
        ),
        "ShareGroupMetadataKey": _key("11", "groupId"),
        "ShareGroupMetadataValue": _flexible(F("epoch", "int32")),
        "ShareGroupTargetAssignmentMetadataKey": _key("12", "groupId"),
        "ShareGroupTargetAssignmentMetadataValue": _flexible(F("assignmentEpoch", "int32")),
        "ShareGroupTargetAssignmentMemberKey": _key("13", "groupId", "memberId"),
        "ShareGroupTargetAssignmentMemberValue": _flexible(
            F("topicPartitions", "[]struct", fields=_TOPIC_PARTITIONS)
        ),
        "ShareGroupCurrentMemberAssignmentKey": _key("14", "groupId", "memberId"),
        "ShareGroupCurrentMemberAssignmentValue": _flexible(*_MEMBER_ASSIGNMENT),
        "ShareGroupStatePartitionMetadataKey": _key("15", "groupId"),
        "ShareGroupStatePartitionMetadataValue": _flexible(
            F(
                "initializingTopics",
                "[]struct",
                fields=(
                    *_TOPIC_PARTITIONS[:1],
                    F("topicName", "string"),
                    *_TOPIC_PARTITIONS[1:],
                    F("createTimestamp", "int64"),
                ),
            ),
            F(
                "initializedTopics",
                "[]struct",
                fields=(
                    *_TOPIC_PARTITIONS[:1],
                    F("topicName", "string"),
                    *_TOPIC_PARTITIONS[1:],
                    F("createTimestamp", "int64"),
                ),
            ),
            F(
                "deletingTopics",
                "[]struct",
                fields=(*_TOPIC_PARTITIONS[:1], F("topicName", "string")),
            ),
        ),
        "ConsumerGroupRegularExpressionKey": _key("16", "groupId", "regularExpression"),
        "ConsumerGroupRegularExpressionValue": _flexible(
            F("topics", "[]string"), F("version", "int64"), F("timestamp", "int64")
        ),
        # Kafka Streams groups (KIP-1071), as Kafka 4.2.0 writes them.
        # Evidence (apache/kafka, group-coordinator/src/main/resources/common/message):
        # - 19, 23: StreamsGroupMemberMetadataKey.json @7e11ea85 ("apiKey": 19), StreamsGroupTopologyKey.json
        #   @59bf751f (key version 23); values @59bf751f. The fields are the ones 4.x
        #   StreamsCoordinatorRecordHelpers (newStreamsGroupMemberRecord, convertToStreamsGroupTopologyRecord)
        #   sets, and the topology is StreamsGroupHeartbeatRequest v0's (Kafka 4.1). Later changes to
        #   either (KAFKA-20169 static membership, KAFKA-20744 rack tags) are of May 2026, after 4.2.0.
        # - 20: StreamsGroupTargetAssignmentMetadataValue.json @5c1644fc ("apiKey": 20): AssignmentEpoch
        #   alone; its tagged AssignmentTimestamp came with KAFKA-20266 (PR #21652, March 2026), after
        #   4.2.0 (released before the 4.2 docs update of 2026-02-25).
        # - 21: StreamsGroupTargetAssignmentMemberValue.json @75a150ae ("apiKey": 21); PR #20730
        #   (KAFKA-19779, Oct 2025) keeps target assignments without assignment epochs.
        # - 17: StreamsGroupMetadataValue.json @1291a930 ("apiKey": 17): Epoch, MetadataHash, tagged
        #   ValidatedTopologyEpoch (tag 0, default -1; PR #20600, Sep 2025). PR #20702 (KAFKA-19765, merged
        #   Oct 2025, before the 4.2 cut) adds the last assignment configs: its review diff of 2025-10-16 has
        #   them tagged, "tag": 1, nullableVersions "0+", default null, a list of {Key string, Value string}
        #   ("we should handle null in replay": 4.1's records lack it); a transcription of 4.3.1's JSON has the
        #   same tag, type and default (the untagged variant @1291a930 predates that review: a 4.3 that
        #   reads 4.2's records cannot have turned it tagged).
        #   Kafka 4.2 always writes it (newStreamsGroupMetadataRecord requires the configs, an empty map
        #   gives []). Its JSON name: that review diff says "AssignmentConfigs"; every later source says
        #   "LastAssignmentConfigs" (StreamsGroup.lastAssignmentConfigs / setLastAssignmentConfigs of the
        #   Oct 2025 KAFKA-19779 [4/N] tree, StreamsGroupMetadataValue.LastAssignmentConfig and
        #   setLastAssignmentConfigs in trunk of 2026, PR #22464, #23165): we print lastAssignmentConfigs,
        #   the name of the nearest later source, as the name at the cut is not pinned. Tags 2 and 3
        #   (KIP-1331 topology description epochs, PR #22464, June 2026) are not 4.2.0's: skipped.
        # - 22: StreamsGroupCurrentMemberAssignmentValue.json @5096058a: MemberEpoch, PreviousMemberEpoch,
        #   State, then six []TaskIds (the three roles, then their pending revocations), as
        #   newStreamsGroupCurrentAssignmentRecord sets them. KAFKA-19779 [3/N] (PR #20730, merged Oct 2025)
        #   gives TaskIds the assignment epoch of each partition: TasksTupleWithEpochs.
        #   fromCurrentAssignmentRecord reads taskIds.assignmentEpochs() and takes null for a record written
        #   without epochs, while the value stays version 0, so the field is tagged and nullable with
        #   default null; Kafka writes it for the active tasks (and active tasks pending revocation) only.
        #   Its tag, 0 (the struct's only tagged field), is the one a transcription of 4.3.1's JSON gives;
        #   a record whose epochs had any other tag would show without them, never with wrong values.
        #   The [1/N] PR #20681 (a RevocationEpoch field) was closed unmerged: not in 4.2.0.
        # Not decoded: 24 StreamsGroupTargetAssignmentResolvedTopicIds: not shown to be in 4.2.0. 18
        # StreamsGroupPartitionMetadata was removed before 4.1 (PR #19802, May 2025): 4.2 prints it unknown.
        "StreamsGroupMetadataKey": _key("17", "groupId"),
        "StreamsGroupMetadataValue": _flexible(
            F("epoch", "int32"),
            F("metadataHash", "int64"),
            F("validatedTopologyEpoch", "int32", tag=0, default=-1),
            F(
                "lastAssignmentConfigs",
                "[]struct",
                null="0+",
                tag=1,
                default=NULL,
                fields=_KEY_VALUE,
            ),
        ),
        "StreamsGroupMemberMetadataKey": _key("19", "groupId", "memberId"),
        "StreamsGroupMemberMetadataValue": _flexible(
            *_MEMBER_CLIENT,
            F("rebalanceTimeoutMs", "int32", default=-1),
            F("topologyEpoch", "int32"),
            F("processId", "string"),
            F(
                "userEndpoint",
                "struct",
                null="0+",
                default=NULL,
                fields=(F("host", "string"), F("port", "uint16")),
            ),
            F("clientTags", "[]struct", fields=_KEY_VALUE),
        ),
        "StreamsGroupTargetAssignmentMetadataKey": _key("20", "groupId"),
        "StreamsGroupTargetAssignmentMetadataValue": _flexible(F("assignmentEpoch", "int32")),
        "StreamsGroupTargetAssignmentMemberKey": _key("21", "groupId", "memberId"),
        "StreamsGroupTargetAssignmentMemberValue": _flexible(
            *(
                F(role, "[]struct", fields=_TASK_IDS)
                for role in ("activeTasks", "standbyTasks", "warmupTasks")
            )
        ),
        "StreamsGroupCurrentMemberAssignmentKey": _key("22", "groupId", "memberId"),
        "StreamsGroupCurrentMemberAssignmentValue": _flexible(
            F("memberEpoch", "int32"),
            F("previousMemberEpoch", "int32"),
            F("state", "int8"),
            *(
                F(role + suffix, "[]struct", fields=_TASK_IDS_WITH_EPOCHS)
                for suffix in ("", "PendingRevocation")
                for role in ("activeTasks", "standbyTasks", "warmupTasks")
            ),
        ),
        "StreamsGroupTopologyKey": _key("23", "groupId"),
        "StreamsGroupTopologyValue": _flexible(
            F("epoch", "int32"),
            F(
                "subtopologies",
                "[]struct",
                fields=(
                    F("subtopologyId", "string"),
                    F("sourceTopics", "[]string"),
                    F("sourceTopicRegex", "[]string"),
                    F("stateChangelogTopics", "[]struct", fields=_TOPIC_INFO),
                    F("repartitionSinkTopics", "[]string"),
                    F("repartitionSourceTopics", "[]struct", fields=_TOPIC_INFO),
                    F(
                        "copartitionGroups",
                        "[]struct",
                        fields=tuple(
                            F(name, "[]int16")
                            for name in (
                                "sourceTopics",
                                "sourceTopicRegex",
                                "repartitionSourceTopics",
                            )
                        ),
                    ),
                ),
            ),
        ),
        # __transaction_state
        "TransactionLogKey": _key("0", "transactionalId"),
        "TransactionLogValue": S(
            "0-1",
            "1+",
            (
                F("producerId", "int64"),
                F("previousProducerId", "int64", v="1+", tag=0, default=-1),
                F("nextProducerId", "int64", v="1+", tag=1, default=-1),
                F("producerEpoch", "int16"),
                F("transactionTimeoutMs", "int32"),
                F("transactionStatus", "int8"),
                F(
                    "transactionPartitions",
                    "[]struct",
                    null="0+",
                    fields=(F("topic", "string"), F("partitionIds", "[]int32")),
                ),
                F("transactionLastUpdateTimestampMs", "int64"),
                F("transactionStartTimestampMs", "int64"),
                F("clientTransactionVersion", "int16", v="1+", tag=2, default=0),
            ),
        ),
        # __share_group_state (share coordinator)
        "ShareSnapshotKey": _share_key("0"),
        "ShareSnapshotValue": _flexible(
            F("snapshotEpoch", "int32"),
            F("stateEpoch", "int32"),
            F("leaderEpoch", "int32"),
            F("startOffset", "int64"),
            F("createTimestamp", "int64"),
            F("writeTimestamp", "int64"),
            _DELIVERY_COMPLETE_COUNT,
            _STATE_BATCHES,
        ),
        "ShareUpdateKey": _share_key("1"),
        "ShareUpdateValue": _flexible(
            F("snapshotEpoch", "int32"),
            F("leaderEpoch", "int32"),
            F("startOffset", "int64"),
            _DELIVERY_COMPLETE_COUNT,
            _STATE_BATCHES,
        ),
        # the consumer protocol, inside GroupMetadataValue members
        "ConsumerProtocolSubscription": S(
            "0-3",
            "none",
            (
                F("topics", "[]string"),
                F("userData", "bytes", null="0+", default=NULL, zero_copy=True),
                F(
                    "ownedPartitions",
                    "[]struct",
                    v="1+",
                    fields=(F("topic", "string", v="1+"), F("partitions", "[]int32", v="1+")),
                ),
                F("generationId", "int32", v="2+", default=-1),
                F("rackId", "string", v="3+", null="3+", default=NULL),
            ),
        ),
        "ConsumerProtocolAssignment": S(
            "0-3",
            "none",
            (
                F(
                    "assignedPartitions",
                    "[]struct",
                    fields=(F("topic", "string"), F("partitions", "[]int32")),
                ),
                F("userData", "bytes", null="0+", default=NULL, zero_copy=True),
            ),
        ),
        # KRaft control records
        "LeaderChangeMessage": S(
            "0-1",
            "0+",
            (
                F("version", "int16"),
                F("leaderId", "int32"),
                F("voters", "[]struct", fields=_VOTERS),
                F("grantingVoters", "[]struct", fields=_VOTERS),
            ),
        ),
        "SnapshotHeaderRecord": _flexible(
            F("version", "int16"), F("lastContainedLogTimestamp", "int64")
        ),
        "SnapshotFooterRecord": _flexible(F("version", "int16")),
        "KRaftVersionRecord": _flexible(F("version", "int16"), F("kRaftVersion", "int16")),
        "VotersRecord": _flexible(
            F("version", "int16"),
            F(
                "voters",
                "[]struct",
                fields=(
                    F("voterId", "int32"),
                    F("voterDirectoryId", "uuid"),
                    F(
                        "endpoints",
                        "[]struct",
                        fields=(F("name", "string"), F("host", "string"), F("port", "uint16")),
                    ),
                    F(
                        "kRaftVersionFeature",
                        "struct",
                        fields=(
                            F("minSupportedVersion", "int16"),
                            F("maxSupportedVersion", "int16"),
                        ),
                    ),
                ),
            ),
        ),
        # __remote_log_metadata (tiered storage)
        "RemoteLogSegmentMetadataRecord": _flexible(
            _SEGMENT_ID, *_SEGMENT, F("txnIndexEmpty", "bool", tag=0, default=False)
        ),
        "RemoteLogSegmentMetadataUpdateRecord": _flexible(
            _SEGMENT_ID,
            F("brokerId", "int32"),
            F("eventTimestampMs", "int64"),
            _CUSTOM_METADATA,
            F("remoteLogSegmentState", "int8"),
        ),
        "RemotePartitionDeleteMetadataRecord": _flexible(
            _TOPIC_ID_PARTITION,
            F("brokerId", "int32"),
            F("eventTimestampMs", "int64"),
            F("remotePartitionDeleteState", "int8"),
        ),
        "RemoteLogSegmentMetadataSnapshotRecord": _flexible(F("segmentId", "uuid"), *_SEGMENT),
    }
)

# KRaft metadata records by apiKey (MetadataRecordType), every one flexible from version 0
METADATA_RECORDS: dict[int, Struct] = _named(
    {
        0: (
            "RegisterBrokerRecord",
            S(
                "0-3",
                "0+",
                (
                    F("brokerId", "int32"),
                    F("isMigratingZkBroker", "bool", v="2+", default=False),
                    F("incarnationId", "uuid"),
                    F("brokerEpoch", "int64"),
                    _ENDPOINTS,
                    _FEATURES,
                    F("rack", "string", null="0+"),
                    F("fenced", "bool", default=True),
                    F("inControlledShutdown", "bool", v="1+", default=False),
                    F("logDirs", "[]uuid", v="3+", tag=0),
                ),
            ),
        ),
        1: ("UnregisterBrokerRecord", _flexible(F("brokerId", "int32"), F("brokerEpoch", "int64"))),
        2: ("TopicRecord", _flexible(F("name", "string"), F("topicId", "uuid"))),
        3: (
            "PartitionRecord",
            S(
                "0-2",
                "0+",
                (
                    F("partitionId", "int32", default=-1),
                    F("topicId", "uuid"),
                    F("replicas", "[]int32"),
                    F("isr", "[]int32"),
                    F("removingReplicas", "[]int32"),
                    F("addingReplicas", "[]int32"),
                    F("leader", "int32", default=-1),
                    F("leaderRecoveryState", "int8", tag=0, default=0),
                    F("leaderEpoch", "int32", default=-1),
                    F("partitionEpoch", "int32", default=-1),
                    F("directories", "[]uuid", v="1+"),
                    F("eligibleLeaderReplicas", "[]int32", v="2+", null="2+", tag=1, default=NULL),
                    F("lastKnownElr", "[]int32", v="2+", null="2+", tag=2, default=NULL),
                ),
            ),
        ),
        4: (
            "ConfigRecord",
            _flexible(
                F("resourceType", "int8"),
                F("resourceName", "string"),
                F("name", "string"),
                F("value", "string", null="0+"),
            ),
        ),
        5: (
            "PartitionChangeRecord",
            S(
                "0-2",
                "0+",
                (
                    F("partitionId", "int32", default=-1),
                    F("topicId", "uuid"),
                    F("isr", "[]int32", null="0+", tag=0, default=NULL),
                    F("leader", "int32", tag=1, default=-2),
                    F("replicas", "[]int32", null="0+", tag=2, default=NULL),
                    F("removingReplicas", "[]int32", null="0+", tag=3, default=NULL),
                    F("addingReplicas", "[]int32", null="0+", tag=4, default=NULL),
                    F("leaderRecoveryState", "int8", tag=5, default=-1),
                    F("directories", "[]uuid", v="1+", null="1+", tag=8, default=NULL),
                    F("eligibleLeaderReplicas", "[]int32", v="2+", null="2+", tag=6, default=NULL),
                    F("lastKnownElr", "[]int32", v="2+", null="2+", tag=7, default=NULL),
                ),
            ),
        ),
        7: ("FenceBrokerRecord", _flexible(*_BROKER_ID_EPOCH)),
        8: ("UnfenceBrokerRecord", _flexible(*_BROKER_ID_EPOCH)),
        9: ("RemoveTopicRecord", _flexible(F("topicId", "uuid"))),
        10: (
            "DelegationTokenRecord",
            _flexible(
                F("owner", "string"),
                F("requester", "string"),
                F("renewers", "[]string"),
                F("issueTimestamp", "int64"),
                F("maxTimestamp", "int64"),
                F("expirationTimestamp", "int64"),
                F("tokenId", "string"),
            ),
        ),
        11: (
            "UserScramCredentialRecord",
            _flexible(
                F("name", "string"),
                F("mechanism", "int8"),
                F("salt", "bytes"),
                F("storedKey", "bytes"),
                F("serverKey", "bytes"),
                F("iterations", "int32"),
            ),
        ),
        12: ("FeatureLevelRecord", _flexible(F("name", "string"), F("featureLevel", "int16"))),
        14: (
            "ClientQuotaRecord",
            _flexible(
                F(
                    "entity",
                    "[]struct",
                    fields=(F("entityType", "string"), F("entityName", "string", null="0+")),
                ),
                F("key", "string"),
                F("value", "float64"),
                F("remove", "bool"),
            ),
        ),
        15: (
            "ProducerIdsRecord",
            _flexible(
                F("brokerId", "int32"),
                F("brokerEpoch", "int64", default=-1),
                F("nextProducerId", "int64"),
            ),
        ),
        17: (
            "BrokerRegistrationChangeRecord",
            S(
                "0-2",
                "0+",
                (
                    F("brokerId", "int32"),
                    F("brokerEpoch", "int64"),
                    F("fenced", "int8", tag=0),
                    F("inControlledShutdown", "int8", v="1+", tag=1),
                    F("logDirs", "[]uuid", v="2+", tag=2),
                ),
            ),
        ),
        18: (
            "AccessControlEntryRecord",
            _flexible(
                F("id", "uuid"),
                F("resourceType", "int8"),
                F("resourceName", "string"),
                F("patternType", "int8"),
                F("principal", "string"),
                F("host", "string"),
                F("operation", "int8"),
                F("permissionType", "int8"),
            ),
        ),
        19: ("RemoveAccessControlEntryRecord", _flexible(F("id", "uuid"))),
        20: ("NoOpRecord", _flexible()),
        21: ("ZkMigrationStateRecord", _flexible(F("zkMigrationState", "int8"))),
        22: (
            "RemoveUserScramCredentialRecord",
            _flexible(F("name", "string"), F("mechanism", "int8")),
        ),
        23: (
            "BeginTransactionRecord",
            _flexible(F("name", "string", null="0+", tag=0, default=NULL)),
        ),
        24: ("EndTransactionRecord", _flexible()),
        25: (
            "AbortTransactionRecord",
            _flexible(F("reason", "string", null="0+", tag=0, default=NULL)),
        ),
        26: ("RemoveDelegationTokenRecord", _flexible(F("tokenId", "string"))),
        27: (
            "RegisterControllerRecord",
            _flexible(
                F("controllerId", "int32"),
                F("incarnationId", "uuid"),
                F("zkMigrationReady", "bool"),
                _ENDPOINTS,
                _FEATURES,
            ),
        ),
        28: ("ClearElrRecord", _flexible(F("topicName", "string"))),
    }
)
# CoordinatorRecordType ids: the key's leading int16 says which key and value schema follow.
# Type 0 is the offset commit key version 0 (LegacyOffsetCommitKey in 4.1+), same layout.
GROUP_RECORD_TYPES: dict[int, str] = {
    0: "OffsetCommit",
    1: "OffsetCommit",
    2: "GroupMetadata",
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata",
    10: "ShareGroupMemberMetadata",
    11: "ShareGroupMetadata",
    12: "ShareGroupTargetAssignmentMetadata",
    13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment",
    15: "ShareGroupStatePartitionMetadata",
    16: "ConsumerGroupRegularExpression",
    17: "StreamsGroupMetadata",
    19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment",
    23: "StreamsGroupTopology",
}
SHARE_RECORD_TYPES: dict[int, str] = {0: "ShareSnapshot", 1: "ShareUpdate"}
TRANSACTION_RECORD_TYPES: dict[int, str] = {0: "TransactionLog"}
# RemoteLogMetadataSerde's apiKeys
REMOTE_LOG_METADATA_RECORDS: dict[int, str] = {
    0: "RemoteLogSegmentMetadataRecord",
    1: "RemoteLogSegmentMetadataUpdateRecord",
    2: "RemotePartitionDeleteMetadataRecord",
    3: "RemoteLogSegmentMetadataSnapshotRecord",
}
