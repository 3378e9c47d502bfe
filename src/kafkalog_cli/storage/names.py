"""Kafka's file and directory names (LogFileUtils, LocalLog.logDirName)."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"  # KRaft snapshots: <20-digit offset>-<10-digit epoch>.checkpoint
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
TEMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
TMP_SUFFIX = ".kafkalog-tmp"  # a file kafkalog is writing (storage.fsops), until it is renamed
STAGING_DIRNAME = ".kafkalog-staging"  # beside a log dir: move-partition's copies being made
PARTIAL_SUFFIX = ".partial"  # a copy into the quarantine, until it is complete
PRUNING_SUFFIX = ".kafkalog-pruning"  # a quarantine folder prune renamed aside before removing it

# Root files of a log dir
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
# where a kafkalog run keeps the marker while it changes the log dir (ops.clean_shutdown)
CLEAN_SHUTDOWN_ASIDE = CLEAN_SHUTDOWN_FILE + TMP_SUFFIX
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"  # high watermarks
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"
# Partition dir files
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

_DIGITS = re.compile(r"^\d{20}$")
LONG_MAX = (1 << 63) - 1
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# UnifiedLog.logDirNameWithSuffix: `<topic>-<partition>.<uuid>-<suffix>` (the uuid without dashes);
# Kafka's patterns take any non-blank uuid
_SUFFIXED_DIR = re.compile(r"^(?P<name>\S+-\S+)\.\S+-(?P<suffix>delete|future|stray)$")


def filename_prefix(offset: int) -> str:
    """The 20-digit zero-padded offset Kafka names files with. An offset above Long.MAX_VALUE (a
    batch whose offsets overflow) names no file Kafka can read: a CorruptRecordError, at planning."""
    if offset > LONG_MAX:
        from kafkalog_cli.errors import CorruptRecordError

        raise CorruptRecordError(
            f"offset {offset} is not a Kafka long: a batch whose offsets overflow "
            "Long.MAX_VALUE (the broker's recovery fails on it too)"
        )
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / (filename_prefix(base_offset) + suffix)


def staging_dir(log_dir: Path | str) -> Path:
    """Where move-partition stages a copy into `log_dir`: `<log dir>/../.kafkalog-staging/<log dir
    name>/` of the resolved log dir (beside it on its file system, outside every log dir), however
    the log dir was named (a link to it, a path through one)."""
    real = Path(os.path.realpath(log_dir))
    return real.parent / STAGING_DIRNAME / real.name


def offset_from_name(name: str) -> int | None:
    """Kafka's offsetFromFileName: the text before the first '.'; None if it is not 20 digits
    or not a long (unparsable_offset)."""
    stem = name.split(".", 1)[0]
    if _DIGITS.match(stem):
        offset = int(stem)
        return offset if offset <= LONG_MAX else None
    return None


def unparsable_offset(directory, name: str, suffixes: tuple[str, ...]) -> None:
    """An InputError (exit 4) for a file with one of `suffixes` named with 20 digits above
    Long.MAX_VALUE: Kafka's offsetFromFileName (Long.parseLong) fails on it, so the broker loads
    no partition that holds it, and no reader may take it for absent."""
    stem, dot, suffix = name.partition(".")
    if _DIGITS.match(stem) and int(stem) > LONG_MAX and dot + suffix in suffixes:
        from kafkalog_cli.errors import InputError

        raise InputError(
            "a base offset above Long.MAX_VALUE in the file name: Kafka's offsetFromFileName "
            "(Long.parseLong) fails on it and the broker does not load this partition",
            path=f"{directory}/{name}",
        )


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


class PartitionDirKind(Enum):
    """What a broker does with a partition dir, by its name (LogManager.loadLog)."""

    LIVE = "live"  # `<topic>-<partition>`: the partition's current log
    FUTURE = "future"  # `.<uuid>-future`: a replica being moved into this log dir
    # (alter-replica-log-dirs); loaded and recovered like a live log
    DELETE = "delete"  # `.<uuid>-delete`: renamed when the partition was deleted; the broker
    # deletes it (addLogToBeDeleted), never serves it
    STRAY = "stray"  # `.<uuid>-stray` (KRaft): a replica no longer assigned to this broker,
    # kept aside for an operator
    NOT_UTF8 = "not-utf8"  # a name whose bytes are not UTF-8: the JVM reads them as U+FFFD, a
    # topic name no topic has ([a-zA-Z0-9._-]), so nobody is served its
    # log; never read or changed (its name cannot be written out either)

    @property
    def loaded(self) -> bool:
        """A log the broker loads, recovers and serves: live and future logs."""
        return self in (PartitionDirKind.LIVE, PartitionDirKind.FUTURE)


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """A partition directory's name, parsed: its topic-partition and its kind."""

    topic_partition: TopicPartition
    kind: PartitionDirKind


def parse_partition_dir_name(name: str) -> PartitionDir | None:
    """Kafka's parseTopicPartitionName: the `.<uuid>-delete`/`-future`/`-stray` suffix comes off,
    then `<topic>-<partition>` is split at the last '-'. None for a name that is none of these."""
    kind = PartitionDirKind.LIVE
    m = _SUFFIXED_DIR.match(name)
    if m:
        name, kind = m.group("name"), PartitionDirKind(m.group("suffix"))
    m = _PARTITION_DIR.match(name)
    if not m:
        return None
    if kind.loaded and not _utf8(name):
        kind = PartitionDirKind.NOT_UTF8
    return PartitionDir(TopicPartition(m.group("topic"), int(m.group("partition"))), kind)


def _utf8(name: str) -> bool:
    """The name's bytes were UTF-8 (os.fsdecode escapes other bytes as lone surrogates)."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def parse_partition_dir(name: str) -> TopicPartition | None:
    """The topic-partition of a log the broker loads (a live or a future one); None for a dir
    being deleted, a stray one, or a name that is not a partition's."""
    parsed = parse_partition_dir_name(name)
    if parsed is None or not parsed.kind.loaded:
        return None
    return parsed.topic_partition


@dataclass(frozen=True)
class PartitionFilter:
    """`--topic PATTERN` / `--partition N`: which topic-partitions a command acts on. Topic
    patterns are shell globs (fnmatch, case-sensitive as Kafka's topic names are); an empty
    tuple takes every topic (every partition)."""

    topics: tuple[str, ...] = ()
    partitions: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.topics or self.partitions)

    def matches(self, tp: TopicPartition) -> bool:
        if self.partitions and tp.partition not in self.partitions:
            return False
        return not self.topics or any(fnmatch.fnmatchcase(tp.topic, t) for t in self.topics)

    def matches_dir(self, directory: Path | str) -> bool:
        """A partition dir (of any kind) by its name; a dir whose name is not a partition's
        matches only when there is nothing to filter on."""
        parsed = parse_partition_dir_name(Path(directory).name)
        return not self if parsed is None else self.matches(parsed.topic_partition)

    def describe(self) -> str:
        """For messages: `--topic 'orders-*' --partition 0`."""
        parts = [f"--topic {t!r}" for t in self.topics] + [
            f"--partition {n}" for n in self.partitions
        ]
        return " ".join(parts)
