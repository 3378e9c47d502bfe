"""Topic configs with Kafka's names, units, defaults and validators, and where every effective
value comes from (LogConfig, KafkaConfig, DynamicBrokerConfig, Kafka 3.3.1).

Resolution, most specific first (ConfigSource names the level):

  1. `--topic-config TOPIC:KEY=VALUE`                                      TOPIC_CONFIG_OPTION
  2. `--config KEY=VALUE`, for every topic                                 CONFIG_OPTION
  3. the topic's ConfigRecords in the log dir's `__cluster_metadata`      DYNAMIC_TOPIC_CONFIG
     (when those cannot be read, an internal topic's creation configs
     stand in: GroupCoordinator and TransactionStateManager create
     __consumer_offsets and __transaction_state compacted)                INTERNAL_TOPIC_CONFIG
  -- a name the topic does not override takes the broker's default: --
  4. this broker's ConfigRecord there (resource type BROKER, resource
     name = node.id of the log dir's meta.properties)                      DYNAMIC_BROKER_CONFIG
  5. the cluster-wide broker ConfigRecord (resource name "")              DYNAMIC_DEFAULT_BROKER_CONFIG
  6. `--server-properties FILE`                                            STATIC_BROKER_CONFIG
  7. Kafka's default                                                       DEFAULT_CONFIG

Levels 4-6 are merged as DynamicBrokerConfig.updateCurrentConfig merges them (a dynamic key
removes its static synonyms, so a dynamic log.retention.ms beats a static log.retention.hours);
then each topic config takes its first broker synonym present, in LogConfig.AllTopicConfigSynonyms
order (log.retention.ms > log.retention.minutes > log.retention.hours; any negative retention
is -1, KafkaConfig.logRetentionTimeMillis). __cluster_metadata itself is KafkaMetadataLog's: its
LogConfig is built from metadata.log.* alone, never from the broker's log.* defaults.

Known or unknown: a value that decides a deletion must never be a guess.

- An override (1, 2) is known.
- The topic level is known when __cluster_metadata was read to its end and holds the topic's
  TopicRecord: its ConfigRecords are then all of the topic's overrides, and a name without one
  takes the broker default (a fact, not a guess). The topic level cannot be read -- and every
  value not overridden is then unknown, even with --server-properties, since a topic override
  (cleanup.policy=compact) may hide behind the broker's value -- when the log dir has no
  __cluster_metadata (a ZooKeeper-era broker keeps topic overrides in ZooKeeper; a KRaft broker
  may keep its metadata log in another log dir), with --no-cluster-metadata, when the metadata
  has no TopicRecord for the topic, and when it is damaged: any record after the damage could
  have changed any topic. Internal topics' creation configs are known.
- The broker level is known from a broker ConfigRecord, or from --server-properties: the
  broker's static config is that whole file, so a key it lacks is Kafka's default on that
  broker too. Without either, Kafka's default is a guess.
- cleanup.policy follows the same rules. With readable metadata and the TopicRecord, no
  cleanup.policy ConfigRecord means the broker's log.cleanup.policy, known only from
  --server-properties or a broker ConfigRecord; Kafka's "delete" is never assumed, or a
  compacted topic of a ZooKeeper-era log dir would lose its data to time retention.
- KAFKA-17584: once a dynamic broker config changes any of DynamicLogConfig's keys, Kafka 3.3.1
  rebuilds the broker defaults from the primary keys only (log.retention.ms, log.roll.ms,
  log.roll.jitter.ms, log.flush.interval.ms) and forgets a static log.retention.hours/minutes,
  log.roll.hours, log.roll.jitter.hours or log.flush.scheduler.interval.ms; later Kafka versions
  keep them. A value from such a synonym is then unknown: it depends on the broker's version.
- `assume_kafka_defaults` (--assume-kafka-defaults) makes every unknown value count, marked
  "(assumed)": the value kafkalog resolved anyway (what the readable part of __cluster_metadata
  says, else --server-properties', else Kafka's default).

`retention_deciding_configs` and `compaction_deciding_configs` name the values that decide what
retain and compact delete -- only those that can delete: an unknown retention taken as infinite
deletes nothing the broker kept -- and `unknown_configs` says which of them are unknown and how
to state each; `refusal_line` puts that on one line per partition.

Damaged __cluster_metadata is read as the broker reads a log: batches in order up to the first
invalid one (CRC, size, records that do not parse, offsets missing), on top of the latest valid
`.checkpoint` snapshot. The end of the last segment may be cut short by a crash (an incomplete
batch, or zeros): the broker truncates it on recovery, it was never part of the replicated log,
and it is not damage.
"""

from kafkalog_cli.config.config_sources import (  # noqa: F401
    ClusterMetadata,
    MetadataDamage,
    MetadataLogRead,
    MetadataState,
    check_topic_overrides,
    cluster_metadata_configs,
    log_dir_node_id,
    node_id_of,
    parse_key_values,
    parse_topic_key_values,
    read_cluster_metadata,
    read_properties,
    read_server_properties,
    replay_metadata_log,
)
from kafkalog_cli.config.defaults import (  # noqa: F401
    BROKER_KEYS,
    BROKER_SYNONYMS,
    CONFIG_DEF,
    DYNAMIC_LOG_CONFIGS,
    INTERNAL_TOPICS,
    KAFKA_TOPIC_CONFIGS,
    LONG_MAX,
    METADATA_PARTITION_DIR,
    METADATA_TOPIC,
    ConfigKey,
    broker_defaults,
    check_compaction_lags,
    parse_value,
)
from kafkalog_cli.config.provenance import ConfigSource, ConfigValue, Unknown  # noqa: F401
from kafkalog_cli.config.resolver import (  # noqa: F401
    FIELD_NAMES,
    ConfigResolver,
    TopicConfig,
    UnknownConfig,
    compaction_deciding_configs,
    how_to_state,
    refusal_line,
    retention_deciding_configs,
    unknown_configs,
    versions_of,
)
from kafkalog_cli.config.versions import (  # noqa: F401
    KafkaVersion,
    KafkaVersions,
    RuleDecision,
    VersionEvidence,
    VersionRule,
    VersionSource,
    read_kafka_versions,
)
