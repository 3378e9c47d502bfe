"""A partition directory: its segments in offset order, the other files by kind, and reads across
the segments (LocalLog). The directory is listed once, with one os.listdir: a log dir holds
hundreds of thousands of files, and only the files acted on become Paths."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage import names
from kafkalog_cli.storage.live_files import listed
from kafkalog_cli.storage.names import TMP_SUFFIX, TopicPartition, parse_partition_dir
from kafkalog_cli.storage.segment import Segment

if TYPE_CHECKING:  # records are imported when batches are read, not to list a directory
    from kafkalog_cli.formats.records import RecordBatch

_INDEX_SUFFIXES = (names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX, names.TXN_INDEX_SUFFIX)
# the files LogLoader and ProducerStateManager parse an offset from (offsetFromFile)
_KAFKA_SUFFIXES = (names.LOG_SUFFIX, names.SNAPSHOT_SUFFIX, *_INDEX_SUFFIXES)


@dataclass(frozen=True)
class PartitionCheckpoints:
    """This partition's entries in the log dir's root checkpoint files; None where it has none."""

    recovery_point: int | None = None
    log_start_offset: int | None = None
    high_watermark: int | None = None
    cleaner_offset: int | None = None


def log_deleted_on_load(log_end: int, log_start: int | None) -> bool:
    """LogLoader.recoverLog's deleteSegmentsIfLogStartGreaterThanLogEnd (3.3.1 and 3.9.0-rc3
    LogLoader.scala): a log end offset, after the recovery, below the checkpointed log start
    offset deletes every segment, and the log starts empty at the log start offset."""
    return log_start is not None and log_end < log_start


@dataclass(eq=False)
class Partition:
    directory: Path
    topic_partition: TopicPartition | None
    segments: list[Segment] = field(default_factory=list)
    snapshots: dict[int, str] = field(default_factory=dict)  # producer snapshots by offset
    index_files: dict[int, list[str]] = field(
        default_factory=dict
    )  # .index/.timeindex/.txnindex by base
    temp_files: list[str] = field(default_factory=list)  # .deleted/.cleaned/.swap leftovers
    leftovers: list[str] = field(default_factory=list)  # interrupted kafkalog writes
    checkpoints: PartitionCheckpoints = field(default_factory=PartitionCheckpoints)

    @property
    def interrupted_rewrite(self) -> list[str]:
        """The files an interrupted rewrite left (ours, and the broker's `.deleted`, `.cleaned`,
        `.swap`), which LogLoader, and so a rerun, finishes first; none: nothing to finish."""
        return sorted([*self.leftovers, *self.temp_files])

    @classmethod
    def open(
        cls,
        directory: Path | str,
        checkpoints: PartitionCheckpoints | None = None,
        topic_partition: TopicPartition | None = None,
    ) -> Partition:
        """`topic_partition`: the directory name's, when the caller has parsed it already."""
        if not isinstance(directory, Path):
            directory = Path(directory)
        try:
            entries = os.listdir(directory)
        except (NotADirectoryError, FileNotFoundError):
            raise InputError("not a directory", path=str(directory)) from None
        except PermissionError:
            raise InputError("permission denied", path=str(directory)) from None
        bases: list[int] = []
        snapshots: dict[int, str] = {}
        index_files: dict[int, list[str]] = {}
        temp_files: list[str] = []
        leftovers: list[str] = []
        for name in entries:
            if name.endswith(TMP_SUFFIX):
                leftovers.append(name)
                continue
            # Kafka's names: 20 digits, then the suffix (temporary suffixes come after it)
            if len(name) < 22 or name[20] != "." or not name[:20].isdigit():
                if name.endswith(names.TEMP_SUFFIXES):  # LogLoader goes by the suffix alone
                    temp_files.append(name)
                continue
            suffix = name[20:]
            names.unparsable_offset(directory, name, _KAFKA_SUFFIXES)
            if suffix == names.LOG_SUFFIX:
                bases.append(int(name[:20]))
            elif suffix == names.SNAPSHOT_SUFFIX:
                snapshots[int(name[:20])] = name
            elif suffix in _INDEX_SUFFIXES:
                index_files.setdefault(int(name[:20]), []).append(name)
            elif suffix.endswith(names.TEMP_SUFFIXES):
                temp_files.append(name)
        bases.sort()
        # a live broker may rename or delete them before they are read (storage.live_files.followed)
        listed(f"{directory}/{name}" for name in entries if len(name) >= 22 and name[:20].isdigit())
        last = len(bases) - 1
        segments = [
            Segment(directory, b, is_active=i == last, listed=True) for i, b in enumerate(bases)
        ]
        if segments:  # LogManager recovers every log of a dir without its clean-shutdown file
            segments[-1].recovered_on_load = not os.path.exists(
                os.path.join(directory.parent, names.CLEAN_SHUTDOWN_FILE)
            )
        return cls(
            directory,
            topic_partition or parse_partition_dir(directory.name),
            segments,
            snapshots,
            index_files,
            sorted(temp_files),
            sorted(leftovers),
            checkpoints or PartitionCheckpoints(),
        )

    @property
    def name(self) -> str:
        return self.directory.name

    def path(self, name: str) -> Path:
        return self.directory / name

    @property
    def base_offsets(self) -> list[int]:
        return [s.base_offset for s in self.segments]

    @property
    def active_segment(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    @property
    def log_start_offset(self) -> int | None:
        """UnifiedLog's load rule: max(log-start-offset-checkpoint, the first segment's base)."""
        if not self.segments:
            return self.checkpoints.log_start_offset
        return max(self.checkpoints.log_start_offset or 0, self.segments[0].base_offset)

    @property
    def segments_end_offset(self) -> int | None:
        """The offset after the segments' last valid batch (the active segment's next offset)."""
        seg = self.active_segment
        return None if seg is None else seg.read_next_offset()

    @property
    def segments_deleted_on_load(self) -> bool:
        """The log start offset is above the segments' end: Kafka 3.3.1's LogLoader
        (deleteSegmentsIfLogStartGreaterThanLogEnd) then deletes every segment and starts an
        empty one at the log start offset."""
        end = self.segments_end_offset
        return (
            bool(self.segments)
            and end is not None
            and log_deleted_on_load(end, self.checkpoints.log_start_offset)
        )

    @property
    def load_problem(self) -> str | None:
        """What the broker would change on load that the read-only answers already assume."""
        if not self.segments_deleted_on_load:
            return None
        return (
            f"{self.directory}: the log start offset {self.checkpoints.log_start_offset} "
            f"({names.LOG_START_OFFSET_CHECKPOINT}) is above the segments' log end offset "
            f"{self.segments_end_offset}: the broker deletes every segment on load and starts an "
            f"empty log at {self.checkpoints.log_start_offset}"
        )

    @property
    def log_end_offset(self) -> int | None:
        """The active segment's next offset, or the log start offset when the broker would delete
        every segment (`segments_deleted_on_load`)."""
        if self.segments_deleted_on_load:
            return self.checkpoints.log_start_offset
        return self.segments_end_offset

    def snapshot_path(self, offset: int) -> Path:
        return self.path(self.snapshots[offset])

    def segment_index_for(self, offset: int) -> int:
        """Index of the segment holding `offset` (the floor by base offset), or 0."""
        i = bisect.bisect_right(self.base_offsets, offset) - 1
        return max(i, 0)

    def batches(
        self, from_offset: int | None = None, to_offset: int | None = None
    ) -> Iterator[tuple[Segment, RecordBatch]]:
        """Batches across segments, starting at the batch holding `from_offset` (found through the
        offset index) and stopping after the batch holding `to_offset`."""
        start = self.segment_index_for(from_offset) if from_offset is not None else 0
        for seg in self.segments[start:]:
            if to_offset is not None and seg.base_offset > to_offset:
                return
            pos = (
                seg.position_for_offset(from_offset)
                if from_offset is not None and seg.base_offset <= from_offset
                else 0
            )
            for b in seg.batches(pos):
                yield seg, b
                if to_offset is not None and b.last_offset >= to_offset:
                    return

    def close(self) -> None:
        for s in self.segments:
            s.close()
