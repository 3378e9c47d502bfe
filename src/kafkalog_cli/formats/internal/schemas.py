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

__all__ = ["MESSAGES", "METADATA_RECORDS", "GROUP_RECORD_TYPES", "SHARE_RECORD_TYPES", "TRANSACTION_RECORD_TYPES",
           "REMOTE_LOG_METADATA_RECORDS"]


def F(name: str, type_: str, v: str = "0+", null: str = "none", tag: int | None = None, tagged: str | None = None,
      default: Any = None, fields: tuple[Field, ...] = (), zero_copy: bool = False) -> Field:
    """A field as the schema writes it; a tagged field without its own taggedVersions is tagged
    in all its versions."""
    tagged_versions = versions(tagged or v) if tag is not None else None
    return Field(name, type_, versions(v), versions(null), tagged_versions, tag, default, fields, zero_copy)


def S(valid: str, flexible: str, fields: tuple[Field, ...]) -> Struct:
    return Struct("", versions(valid), versions(flexible), fields)


def _named(table: dict) -> dict:
    """Give each Struct its message name: {name: S} or {key: (name, S)}."""
    out = {}
    for key, entry in table.items():
        name, struct = (key, entry) if isinstance(entry, Struct) else entry
        out[key] = replace(struct, name=name)
    return out


MESSAGES: dict[str, Struct] = _named({
    'ConsumerGroupCurrentMemberAssignmentKey': S('8', 'none', (
        F('groupId', 'string', v='8'),
        F('memberId', 'string', v='8'),
    )),
    'ConsumerGroupCurrentMemberAssignmentValue': S('0', '0+', (
        F('memberEpoch', 'int32'),
        F('previousMemberEpoch', 'int32'),
        F('state', 'int8'),
        F('assignedPartitions', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('partitions', '[]int32'),
        )),
        F('partitionsPendingRevocation', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('partitions', '[]int32'),
        )),
    )),
    'ConsumerGroupMemberMetadataKey': S('5', 'none', (
        F('groupId', 'string', v='5'),
        F('memberId', 'string', v='5'),
    )),
    'ConsumerGroupMemberMetadataValue': S('0', '0+', (
        F('instanceId', 'string', null='0+'),
        F('rackId', 'string', null='0+'),
        F('clientId', 'string'),
        F('clientHost', 'string'),
        F('subscribedTopicNames', '[]string'),
        F('subscribedTopicRegex', 'string', null='0+'),
        F('rebalanceTimeoutMs', 'int32', default=-1),
        F('serverAssignor', 'string', null='0+'),
        F('classicMemberMetadata', 'struct', null='0+', tag=0, fields=(
            F('sessionTimeoutMs', 'int32'),
            F('supportedProtocols', '[]struct', fields=(
                F('name', 'string'),
                F('metadata', 'bytes'),
            )),
        )),
    )),
    'ConsumerGroupMetadataKey': S('3', 'none', (
        F('groupId', 'string', v='3'),
    )),
    'ConsumerGroupMetadataValue': S('0', '0+', (
        F('epoch', 'int32'),
        F('metadataHash', 'int64', tag=0, default=0),
    )),
    'ConsumerGroupPartitionMetadataKey': S('4', 'none', (
        F('groupId', 'string', v='4'),
    )),
    'ConsumerGroupPartitionMetadataValue': S('0', '0+', (
        F('topics', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('topicName', 'string'),
            F('numPartitions', 'int32'),
            F('partitionMetadata', '[]struct', fields=(
                F('partition', 'int32'),
                F('racks', '[]string'),
            )),
        )),
    )),
    'ConsumerGroupRegularExpressionKey': S('16', 'none', (
        F('groupId', 'string', v='16'),
        F('regularExpression', 'string', v='16'),
    )),
    'ConsumerGroupRegularExpressionValue': S('0', '0+', (
        F('topics', '[]string'),
        F('version', 'int64'),
        F('timestamp', 'int64'),
    )),
    'ConsumerGroupTargetAssignmentMemberKey': S('7', 'none', (
        F('groupId', 'string', v='7'),
        F('memberId', 'string', v='7'),
    )),
    'ConsumerGroupTargetAssignmentMemberValue': S('0', '0+', (
        F('topicPartitions', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('partitions', '[]int32'),
        )),
    )),
    'ConsumerGroupTargetAssignmentMetadataKey': S('6', 'none', (
        F('groupId', 'string', v='6'),
    )),
    'ConsumerGroupTargetAssignmentMetadataValue': S('0', '0+', (
        F('assignmentEpoch', 'int32'),
    )),
    'GroupMetadataKey': S('2', 'none', (
        F('group', 'string', v='2'),
    )),
    'GroupMetadataValue': S('0-4', '4+', (
        F('protocolType', 'string'),
        F('generation', 'int32'),
        F('protocol', 'string', null='0+'),
        F('leader', 'string', null='0+'),
        F('currentStateTimestamp', 'int64', v='2+', default=-1),
        F('members', '[]struct', fields=(
            F('memberId', 'string'),
            F('groupInstanceId', 'string', v='3+', null='3+', default=NULL),
            F('clientId', 'string'),
            F('clientHost', 'string'),
            F('rebalanceTimeout', 'int32', v='1+', default=-1),
            F('sessionTimeout', 'int32'),
            F('subscription', 'bytes'),
            F('assignment', 'bytes'),
        )),
    )),
    'OffsetCommitKey': S('0-1', 'none', (
        F('group', 'string', v='0-1'),
        F('topic', 'string', v='0-1'),
        F('partition', 'int32', v='0-1'),
    )),
    'OffsetCommitValue': S('0-4', '4+', (
        F('offset', 'int64'),
        F('leaderEpoch', 'int32', v='3+', default=-1),
        F('metadata', 'string'),
        F('commitTimestamp', 'int64'),
        F('expireTimestamp', 'int64', v='1', default=-1),
    )),
    'ShareGroupCurrentMemberAssignmentKey': S('14', 'none', (
        F('groupId', 'string', v='14'),
        F('memberId', 'string', v='14'),
    )),
    'ShareGroupCurrentMemberAssignmentValue': S('0', '0+', (
        F('memberEpoch', 'int32'),
        F('previousMemberEpoch', 'int32'),
        F('state', 'int8'),
        F('assignedPartitions', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('partitions', '[]int32'),
        )),
    )),
    'ShareGroupMemberMetadataKey': S('10', 'none', (
        F('groupId', 'string', v='10'),
        F('memberId', 'string', v='10'),
    )),
    'ShareGroupMemberMetadataValue': S('0', '0+', (
        F('rackId', 'string', null='0+'),
        F('clientId', 'string'),
        F('clientHost', 'string'),
        F('subscribedTopicNames', '[]string'),
    )),
    'ShareGroupMetadataKey': S('11', 'none', (
        F('groupId', 'string', v='11'),
    )),
    'ShareGroupMetadataValue': S('0', '0+', (
        F('epoch', 'int32'),
    )),
    'ShareGroupPartitionMetadataKey': S('9', 'none', (
        F('groupId', 'string', v='9'),
    )),
    'ShareGroupPartitionMetadataValue': S('0', '0+', (
        F('topics', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('topicName', 'string'),
            F('numPartitions', 'int32'),
            F('partitionMetadata', '[]struct', fields=(
                F('partition', 'int32'),
                F('racks', '[]string'),
            )),
        )),
    )),
    'ShareGroupStatePartitionMetadataKey': S('15', 'none', (
        F('groupId', 'string', v='15'),
    )),
    'ShareGroupStatePartitionMetadataValue': S('0', '0+', (
        F('initializingTopics', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('topicName', 'string'),
            F('partitions', '[]int32'),
            F('createTimestamp', 'int64'),
        )),
        F('initializedTopics', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('topicName', 'string'),
            F('partitions', '[]int32'),
            F('createTimestamp', 'int64'),
        )),
        F('deletingTopics', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('topicName', 'string'),
        )),
    )),
    'ShareGroupTargetAssignmentMemberKey': S('13', 'none', (
        F('groupId', 'string', v='13'),
        F('memberId', 'string', v='13'),
    )),
    'ShareGroupTargetAssignmentMemberValue': S('0', '0+', (
        F('topicPartitions', '[]struct', fields=(
            F('topicId', 'uuid'),
            F('partitions', '[]int32'),
        )),
    )),
    'ShareGroupTargetAssignmentMetadataKey': S('12', 'none', (
        F('groupId', 'string', v='12'),
    )),
    'ShareGroupTargetAssignmentMetadataValue': S('0', '0+', (
        F('assignmentEpoch', 'int32'),
    )),
    'TransactionLogKey': S('0', 'none', (
        F('transactionalId', 'string', v='0'),
    )),
    'TransactionLogValue': S('0-1', '1+', (
        F('producerId', 'int64'),
        F('previousProducerId', 'int64', v='1+', tag=0, default=-1),
        F('nextProducerId', 'int64', v='1+', tag=1, default=-1),
        F('producerEpoch', 'int16'),
        F('transactionTimeoutMs', 'int32'),
        F('transactionStatus', 'int8'),
        F('transactionPartitions', '[]struct', null='0+', fields=(
            F('topic', 'string'),
            F('partitionIds', '[]int32'),
        )),
        F('transactionLastUpdateTimestampMs', 'int64'),
        F('transactionStartTimestampMs', 'int64'),
        F('clientTransactionVersion', 'int16', v='1+', tag=2, default=0),
    )),
    'ShareSnapshotKey': S('0', 'none', (
        F('groupId', 'string', v='0'),
        F('topicId', 'uuid', v='0'),
        F('partition', 'int32', v='0'),
    )),
    'ShareSnapshotValue': S('0', '0+', (
        F('snapshotEpoch', 'int32'),
        F('stateEpoch', 'int32'),
        F('leaderEpoch', 'int32'),
        F('startOffset', 'int64'),
        F('createTimestamp', 'int64'),
        F('writeTimestamp', 'int64'),
        F('deliveryCompleteCount', 'int32', tag=0, default=-1),
        F('stateBatches', '[]struct', fields=(
            F('firstOffset', 'int64'),
            F('lastOffset', 'int64'),
            F('deliveryState', 'int8'),
            F('deliveryCount', 'int16'),
        )),
    )),
    'ShareUpdateKey': S('1', 'none', (
        F('groupId', 'string', v='1'),
        F('topicId', 'uuid', v='1'),
        F('partition', 'int32', v='1'),
    )),
    'ShareUpdateValue': S('0', '0+', (
        F('snapshotEpoch', 'int32'),
        F('leaderEpoch', 'int32'),
        F('startOffset', 'int64'),
        F('deliveryCompleteCount', 'int32', tag=0, default=-1),
        F('stateBatches', '[]struct', fields=(
            F('firstOffset', 'int64'),
            F('lastOffset', 'int64'),
            F('deliveryState', 'int8'),
            F('deliveryCount', 'int16'),
        )),
    )),
    'ConsumerProtocolSubscription': S('0-3', 'none', (
        F('topics', '[]string'),
        F('userData', 'bytes', null='0+', default=NULL, zero_copy=True),
        F('ownedPartitions', '[]struct', v='1+', fields=(
            F('topic', 'string', v='1+'),
            F('partitions', '[]int32', v='1+'),
        )),
        F('generationId', 'int32', v='2+', default=-1),
        F('rackId', 'string', v='3+', null='3+', default=NULL),
    )),
    'ConsumerProtocolAssignment': S('0-3', 'none', (
        F('assignedPartitions', '[]struct', fields=(
            F('topic', 'string'),
            F('partitions', '[]int32'),
        )),
        F('userData', 'bytes', null='0+', default=NULL, zero_copy=True),
    )),
    'LeaderChangeMessage': S('0-1', '0+', (
        F('version', 'int16'),
        F('leaderId', 'int32'),
        F('voters', '[]struct', fields=(
            F('voterId', 'int32'),
            F('voterDirectoryId', 'uuid', v='1+'),
        )),
        F('grantingVoters', '[]struct', fields=(
            F('voterId', 'int32'),
            F('voterDirectoryId', 'uuid', v='1+'),
        )),
    )),
    'SnapshotHeaderRecord': S('0', '0+', (
        F('version', 'int16'),
        F('lastContainedLogTimestamp', 'int64'),
    )),
    'SnapshotFooterRecord': S('0', '0+', (
        F('version', 'int16'),
    )),
    'KRaftVersionRecord': S('0', '0+', (
        F('version', 'int16'),
        F('kRaftVersion', 'int16'),
    )),
    'VotersRecord': S('0', '0+', (
        F('version', 'int16'),
        F('voters', '[]struct', fields=(
            F('voterId', 'int32'),
            F('voterDirectoryId', 'uuid'),
            F('endpoints', '[]struct', fields=(
                F('name', 'string'),
                F('host', 'string'),
                F('port', 'uint16'),
            )),
            F('kRaftVersionFeature', 'struct', fields=(
                F('minSupportedVersion', 'int16'),
                F('maxSupportedVersion', 'int16'),
            )),
        )),
    )),
    'RemoteLogSegmentMetadataRecord': S('0', '0+', (
        F('remoteLogSegmentId', 'struct', fields=(
            F('topicIdPartition', 'struct', fields=(
                F('name', 'string'),
                F('id', 'uuid'),
                F('partition', 'int32'),
            )),
            F('id', 'uuid'),
        )),
        F('startOffset', 'int64'),
        F('endOffset', 'int64'),
        F('brokerId', 'int32'),
        F('maxTimestampMs', 'int64'),
        F('eventTimestampMs', 'int64'),
        F('segmentLeaderEpochs', '[]struct', fields=(
            F('leaderEpoch', 'int32'),
            F('offset', 'int64'),
        )),
        F('segmentSizeInBytes', 'int32'),
        F('customMetadata', 'bytes', null='0+', default=NULL),
        F('remoteLogSegmentState', 'int8'),
        F('txnIndexEmpty', 'bool', tag=0, default=False),
    )),
    'RemoteLogSegmentMetadataUpdateRecord': S('0', '0+', (
        F('remoteLogSegmentId', 'struct', fields=(
            F('topicIdPartition', 'struct', fields=(
                F('name', 'string'),
                F('id', 'uuid'),
                F('partition', 'int32'),
            )),
            F('id', 'uuid'),
        )),
        F('brokerId', 'int32'),
        F('eventTimestampMs', 'int64'),
        F('customMetadata', 'bytes', null='0+', default=NULL),
        F('remoteLogSegmentState', 'int8'),
    )),
    'RemotePartitionDeleteMetadataRecord': S('0', '0+', (
        F('topicIdPartition', 'struct', fields=(
            F('name', 'string'),
            F('id', 'uuid'),
            F('partition', 'int32'),
        )),
        F('brokerId', 'int32'),
        F('eventTimestampMs', 'int64'),
        F('remotePartitionDeleteState', 'int8'),
    )),
    'RemoteLogSegmentMetadataSnapshotRecord': S('0', '0+', (
        F('segmentId', 'uuid'),
        F('startOffset', 'int64'),
        F('endOffset', 'int64'),
        F('brokerId', 'int32'),
        F('maxTimestampMs', 'int64'),
        F('eventTimestampMs', 'int64'),
        F('segmentLeaderEpochs', '[]struct', fields=(
            F('leaderEpoch', 'int32'),
            F('offset', 'int64'),
        )),
        F('segmentSizeInBytes', 'int32'),
        F('customMetadata', 'bytes', null='0+', default=NULL),
        F('remoteLogSegmentState', 'int8'),
    )),
})

METADATA_RECORDS: dict[int, Struct] = _named({
    0: ('RegisterBrokerRecord', S('0-3', '0+', (
        F('brokerId', 'int32'),
        F('isMigratingZkBroker', 'bool', v='2+', default=False),
        F('incarnationId', 'uuid'),
        F('brokerEpoch', 'int64'),
        F('endPoints', '[]struct', fields=(
            F('name', 'string'),
            F('host', 'string'),
            F('port', 'uint16'),
            F('securityProtocol', 'int16'),
        )),
        F('features', '[]struct', fields=(
            F('name', 'string'),
            F('minSupportedVersion', 'int16'),
            F('maxSupportedVersion', 'int16'),
        )),
        F('rack', 'string', null='0+'),
        F('fenced', 'bool', default=True),
        F('inControlledShutdown', 'bool', v='1+', default=False),
        F('logDirs', '[]uuid', v='3+', tag=0),
    ))),
    1: ('UnregisterBrokerRecord', S('0', '0+', (
        F('brokerId', 'int32'),
        F('brokerEpoch', 'int64'),
    ))),
    2: ('TopicRecord', S('0', '0+', (
        F('name', 'string'),
        F('topicId', 'uuid'),
    ))),
    3: ('PartitionRecord', S('0-2', '0+', (
        F('partitionId', 'int32', default=-1),
        F('topicId', 'uuid'),
        F('replicas', '[]int32'),
        F('isr', '[]int32'),
        F('removingReplicas', '[]int32'),
        F('addingReplicas', '[]int32'),
        F('leader', 'int32', default=-1),
        F('leaderRecoveryState', 'int8', tag=0, default=0),
        F('leaderEpoch', 'int32', default=-1),
        F('partitionEpoch', 'int32', default=-1),
        F('directories', '[]uuid', v='1+'),
        F('eligibleLeaderReplicas', '[]int32', v='2+', null='2+', tag=1, default=NULL),
        F('lastKnownElr', '[]int32', v='2+', null='2+', tag=2, default=NULL),
    ))),
    4: ('ConfigRecord', S('0', '0+', (
        F('resourceType', 'int8'),
        F('resourceName', 'string'),
        F('name', 'string'),
        F('value', 'string', null='0+'),
    ))),
    5: ('PartitionChangeRecord', S('0-2', '0+', (
        F('partitionId', 'int32', default=-1),
        F('topicId', 'uuid'),
        F('isr', '[]int32', null='0+', tag=0, default=NULL),
        F('leader', 'int32', tag=1, default=-2),
        F('replicas', '[]int32', null='0+', tag=2, default=NULL),
        F('removingReplicas', '[]int32', null='0+', tag=3, default=NULL),
        F('addingReplicas', '[]int32', null='0+', tag=4, default=NULL),
        F('leaderRecoveryState', 'int8', tag=5, default=-1),
        F('directories', '[]uuid', v='1+', null='1+', tag=8, default=NULL),
        F('eligibleLeaderReplicas', '[]int32', v='2+', null='2+', tag=6, default=NULL),
        F('lastKnownElr', '[]int32', v='2+', null='2+', tag=7, default=NULL),
    ))),
    7: ('FenceBrokerRecord', S('0', '0+', (
        F('id', 'int32'),
        F('epoch', 'int64'),
    ))),
    8: ('UnfenceBrokerRecord', S('0', '0+', (
        F('id', 'int32'),
        F('epoch', 'int64'),
    ))),
    9: ('RemoveTopicRecord', S('0', '0+', (
        F('topicId', 'uuid'),
    ))),
    10: ('DelegationTokenRecord', S('0', '0+', (
        F('owner', 'string'),
        F('requester', 'string'),
        F('renewers', '[]string'),
        F('issueTimestamp', 'int64'),
        F('maxTimestamp', 'int64'),
        F('expirationTimestamp', 'int64'),
        F('tokenId', 'string'),
    ))),
    11: ('UserScramCredentialRecord', S('0', '0+', (
        F('name', 'string'),
        F('mechanism', 'int8'),
        F('salt', 'bytes'),
        F('storedKey', 'bytes'),
        F('serverKey', 'bytes'),
        F('iterations', 'int32'),
    ))),
    12: ('FeatureLevelRecord', S('0', '0+', (
        F('name', 'string'),
        F('featureLevel', 'int16'),
    ))),
    14: ('ClientQuotaRecord', S('0', '0+', (
        F('entity', '[]struct', fields=(
            F('entityType', 'string'),
            F('entityName', 'string', null='0+'),
        )),
        F('key', 'string'),
        F('value', 'float64'),
        F('remove', 'bool'),
    ))),
    15: ('ProducerIdsRecord', S('0', '0+', (
        F('brokerId', 'int32'),
        F('brokerEpoch', 'int64', default=-1),
        F('nextProducerId', 'int64'),
    ))),
    17: ('BrokerRegistrationChangeRecord', S('0-2', '0+', (
        F('brokerId', 'int32'),
        F('brokerEpoch', 'int64'),
        F('fenced', 'int8', tag=0),
        F('inControlledShutdown', 'int8', v='1+', tag=1),
        F('logDirs', '[]uuid', v='2+', tag=2),
    ))),
    18: ('AccessControlEntryRecord', S('0', '0+', (
        F('id', 'uuid'),
        F('resourceType', 'int8'),
        F('resourceName', 'string'),
        F('patternType', 'int8'),
        F('principal', 'string'),
        F('host', 'string'),
        F('operation', 'int8'),
        F('permissionType', 'int8'),
    ))),
    19: ('RemoveAccessControlEntryRecord', S('0', '0+', (
        F('id', 'uuid'),
    ))),
    20: ('NoOpRecord', S('0', '0+', (
    ))),
    21: ('ZkMigrationStateRecord', S('0', '0+', (
        F('zkMigrationState', 'int8'),
    ))),
    22: ('RemoveUserScramCredentialRecord', S('0', '0+', (
        F('name', 'string'),
        F('mechanism', 'int8'),
    ))),
    23: ('BeginTransactionRecord', S('0', '0+', (
        F('name', 'string', null='0+', tag=0, default=NULL),
    ))),
    24: ('EndTransactionRecord', S('0', '0+', (
    ))),
    25: ('AbortTransactionRecord', S('0', '0+', (
        F('reason', 'string', null='0+', tag=0, default=NULL),
    ))),
    26: ('RemoveDelegationTokenRecord', S('0', '0+', (
        F('tokenId', 'string'),
    ))),
    27: ('RegisterControllerRecord', S('0', '0+', (
        F('controllerId', 'int32'),
        F('incarnationId', 'uuid'),
        F('zkMigrationReady', 'bool'),
        F('endPoints', '[]struct', fields=(
            F('name', 'string'),
            F('host', 'string'),
            F('port', 'uint16'),
            F('securityProtocol', 'int16'),
        )),
        F('features', '[]struct', fields=(
            F('name', 'string'),
            F('minSupportedVersion', 'int16'),
            F('maxSupportedVersion', 'int16'),
        )),
    ))),
    28: ('ClearElrRecord', S('0', '0+', (
        F('topicName', 'string'),
    ))),
})

# CoordinatorRecordType ids: the key's leading int16 says which key and value schema follow.
# Type 0 is the offset commit key version 0 (LegacyOffsetCommitKey in 4.1+), same layout.
GROUP_RECORD_TYPES: dict[int, str] = {
    0: "OffsetCommit", 1: "OffsetCommit", 2: "GroupMetadata", 3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata", 5: "ConsumerGroupMemberMetadata", 6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata", 10: "ShareGroupMemberMetadata", 11: "ShareGroupMetadata",
    12: "ShareGroupTargetAssignmentMetadata", 13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment", 15: "ShareGroupStatePartitionMetadata",
    16: "ConsumerGroupRegularExpression",
}
SHARE_RECORD_TYPES: dict[int, str] = {0: "ShareSnapshot", 1: "ShareUpdate"}
TRANSACTION_RECORD_TYPES: dict[int, str] = {0: "TransactionLog"}
# RemoteLogMetadataSerde's apiKeys
REMOTE_LOG_METADATA_RECORDS: dict[int, str] = {
    0: "RemoteLogSegmentMetadataRecord", 1: "RemoteLogSegmentMetadataUpdateRecord",
    2: "RemotePartitionDeleteMetadataRecord", 3: "RemoteLogSegmentMetadataSnapshotRecord",
}
