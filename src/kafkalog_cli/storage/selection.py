"""Which segments, batches and records a read shows: our filters on kafka-dump-log (an offset or
time range, an exact key, a record limit), applied through the indexes where they can be.

Both renderers (Kafka text and JSON Lines) read through this module, so a filter selects the same
batches and records in either format."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kafkalog_cli.formats.records import Record, RecordBatch, iter_batches
from kafkalog_cli.storage.names import offset_from_name
from kafkalog_cli.storage.segment import Segment


class Verdict(enum.Enum):
    SHOW = 1
    SKIP = 2
    STOP = 3  # nothing further in this file can be shown


@dataclass
class Filters:
    """An offset or time range, an exact key, a record limit. `limit` counts down as records (or,
    without deep iteration, batches) are shown, across all the files of one command."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    key: bytes | None = None
    limit: int | None = None

    @classmethod
    def given(cls, *, from_offset: int | None = None, to_offset: int | None = None,
              from_time: int | None = None, to_time: int | None = None, key: str | None = None,
              limit: int | None = None) -> "Filters | None":
        """The filters of a command's options (the key as UTF-8), or None when none is given:
        an unfiltered read takes the fast paths."""
        f = cls(from_offset, to_offset, from_time, to_time,
                key.encode("utf-8") if key is not None else None, limit)
        return None if f == cls() else f

    @property
    def spent(self) -> bool:
        """The limit is reached: nothing more is shown, in this file or the next."""
        return self.limit is not None and self.limit <= 0

    @property
    def needs_records(self) -> bool:
        return self.key is not None or self.from_time is not None or self.to_time is not None

    def record_matches(self, r: Record) -> bool:
        if self.from_offset is not None and r.offset < self.from_offset:
            return False
        if self.to_offset is not None and r.offset > self.to_offset:
            return False
        if self.from_time is not None and r.timestamp < self.from_time:
            return False
        if self.to_time is not None and r.timestamp > self.to_time:
            return False
        return self.key is None or r.key == self.key

    def batch_may_match(self, b: RecordBatch) -> bool:
        if self.from_offset is not None and b.last_offset < self.from_offset:
            return False
        if self.to_offset is not None and b.base_offset_field > self.to_offset and b.magic >= 2:
            return False
        if self.from_time is not None and b.max_timestamp < self.from_time:
            return False
        return True

    def judge_batch(self, b: RecordBatch, deep: bool) -> Verdict:
        """The header-only verdict on a batch; without deep iteration a shown batch counts
        against the limit (with it, records count in `take_record`)."""
        if self.spent:
            return Verdict.STOP
        if self.to_offset is not None and b.magic >= 2 and b.base_offset_field > self.to_offset:
            return Verdict.STOP
        if not self.batch_may_match(b):
            return Verdict.SKIP
        if not deep and self.limit is not None:
            self.limit -= 1
        return Verdict.SHOW

    def holds_match(self, records: list[Record]) -> bool:
        return any(self.record_matches(r) for r in records)

    def take_record(self, r: Record) -> Verdict:
        """Whether to show `r`; a shown record counts against the limit."""
        if not self.record_matches(r):
            return Verdict.SKIP
        if self.limit is not None:
            if self.limit <= 0:
                return Verdict.STOP
            self.limit -= 1
        return Verdict.SHOW

    def shown(self, records: Iterable[Record]) -> Iterator[Record]:
        """The records of a shown batch that are shown, in order, up to the limit."""
        for r in records:
            verdict = self.take_record(r)
            if verdict is Verdict.STOP:
                return
            if verdict is Verdict.SHOW:
                yield r


def start_position(segment: Segment, f: Filters, warn: Callable[[str], None] | None = None) -> int:
    """Where a filtered read of `segment` starts: through the offset index for `from_offset`,
    through the time index for `from_time`, so a filter need not scan the log from its first
    byte. An index that cannot be trusted is not used (the log is scanned instead; `warn` hears
    why)."""
    pos = 0
    if f.from_offset is not None:
        pos = max(pos, segment.position_for_offset(f.from_offset, warn))
    if f.from_time is not None:
        pos = max(pos, segment.position_for_timestamp(f.from_time, warn))
    return pos


def selected_batches(buf, start: int, end: int, f: Filters | None,
                     deep: bool) -> Iterator[tuple[RecordBatch, list[Record] | None]]:
    """The batches of buf[start:end) that `f` shows (all of them without filters), each with its
    records when the filter had to decode them to judge it (else None). Batches are read one at
    a time, so a format error is raised where the walk meets it, and none is read once the limit
    is spent."""
    if f is None:
        for b in iter_batches(buf, start, end):
            yield b, None
        return
    batches = iter_batches(buf, start, end)
    while not f.spent:
        b = next(batches, None)
        if b is None:
            return
        verdict = f.judge_batch(b, deep)
        if verdict is Verdict.STOP:
            return
        if verdict is Verdict.SKIP:
            continue
        records = None
        if f.needs_records:
            records = b.records()
            if not f.holds_match(records):
                continue
        yield b, records


def segments_in_range(paths: Iterable[Path], from_offset: int | None,
                      to_offset: int | None) -> Iterator[Path]:
    """Of a partition's .log files in offset order, those that can hold offsets in the range:
    a segment ends where the next one begins, so no file outside the range is opened."""
    paths = list(paths)
    for i, p in enumerate(paths):
        base = offset_from_name(p.name)
        nxt = offset_from_name(paths[i + 1].name) if i + 1 < len(paths) and paths[i + 1].parent == p.parent else None
        if from_offset is not None and nxt is not None and nxt <= from_offset:
            continue
        if to_offset is not None and base is not None and base > to_offset:
            continue
        yield p
