"""A partition directory: its segments in offset order, and reads across them (LocalLog)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from kafkalog_cli.errors import InputError
from kafkalog_cli.formats.records import RecordBatch
from kafkalog_cli.storage.names import LOG_SUFFIX, TopicPartition, offset_from_name, parse_partition_dir
from kafkalog_cli.storage.segment import Segment


@dataclass
class Partition:
    directory: Path
    topic_partition: TopicPartition | None
    segments: list[Segment] = field(default_factory=list)

    @classmethod
    def open(cls, directory: Path | str) -> "Partition":
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError("not a directory", path=str(directory))
        bases = sorted(
            o for p in directory.iterdir()
            if p.name.endswith(LOG_SUFFIX) and (o := offset_from_name(p.name)) is not None
            and p.name == f"{o:020d}{LOG_SUFFIX}"
        )
        return cls(directory, parse_partition_dir(directory.name), [Segment(directory, b) for b in bases])

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def base_offsets(self) -> list[int]:
        return [s.base_offset for s in self.segments]

    @property
    def active_segment(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    def segment_index_for(self, offset: int) -> int:
        """Index of the segment holding `offset` (the floor by base offset), or 0."""
        i = bisect.bisect_right(self.base_offsets, offset) - 1
        return max(i, 0)

    def batches(self, from_offset: int | None = None, to_offset: int | None = None) -> Iterator[tuple[Segment, RecordBatch]]:
        """Batches across segments, starting at the batch holding `from_offset` (found through the
        offset index) and stopping after the batch holding `to_offset`."""
        start = self.segment_index_for(from_offset) if from_offset is not None else 0
        for seg in self.segments[start:]:
            if to_offset is not None and seg.base_offset > to_offset:
                return
            pos = seg.position_for_offset(from_offset) if from_offset is not None and seg.base_offset <= from_offset else 0
            for b in seg.batches(pos):
                yield seg, b
                if to_offset is not None and b.last_offset >= to_offset:
                    return

    def close(self) -> None:
        for s in self.segments:
            s.close()
