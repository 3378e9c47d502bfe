"""Kafka's file and directory names (LogFileUtils, LocalLog.logDirName)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"          # KRaft snapshots: <20-digit offset>-<10-digit epoch>.checkpoint
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
TEMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)

# Root files of a log dir
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"   # high watermarks
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"
# Partition dir files
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

_DIGITS = re.compile(r"^\d{20}$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?P<suffix>\.[0-9a-f]{32}-delete|-future|-stray)?$")


def filename_prefix(offset: int) -> str:
    """The 20-digit zero-padded offset Kafka names files with."""
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / (filename_prefix(base_offset) + suffix)


def offset_from_name(name: str) -> int | None:
    """Kafka's offsetFromFileName: the text before the first '.'; None if it is not 20 digits."""
    stem = name.split(".", 1)[0]
    if _DIGITS.match(stem):
        return int(stem)
    return None


def strip_temp_suffix(name: str) -> tuple[str, str | None]:
    """'00..0.log.swap' -> ('00..0.log', '.swap'); a name without one -> (name, None)."""
    for s in TEMP_SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)], s
    return name, None


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    """`<topic>-<partition>` split at the last '-', as Kafka's parseTopicPartitionName does.

    Directories being deleted (`.<uuid>-delete`), future and stray replicas are not live
    partitions: they return None."""
    m = _PARTITION_DIR.match(name)
    if not m or m.group("suffix"):
        return None
    return TopicPartition(m.group("topic"), int(m.group("partition")))
