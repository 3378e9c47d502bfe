"""Which segments, batches and records a read shows: our filters on kafka-dump-log (an offset or
time range, a search on keys and values, a record limit), applied through the indexes where they
can be, and the search through search_v2 (formats/byte_loops.py), which builds only the records
it finds.

Both renderers (Kafka text and JSON Lines) read through this module, so a filter selects the same
batches and records in either format."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.formats.byte_loops import search_v2
from kafkalog_cli.formats.record_search import HeaderMatch, RecordSearch
from kafkalog_cli.formats.records import Record, RecordBatch, iter_batches
from kafkalog_cli.storage.names import offset_from_name
from kafkalog_cli.storage.segment import Segment

_NO_SEARCH = RecordSearch()


class Verdict(enum.Enum):
    SHOW = 1
    SKIP = 2
    STOP = 3  # nothing further in this file can be shown


@dataclass
class Filters:
    """An offset or time range, a search on keys and values (an exact key, a key prefix, a regex
    on keys, a regex on values: a record must pass every one given, and a null key or value
    passes none of its own), a record limit. `limit` counts down as records (or, without deep
    iteration, batches) are shown, across all the files of one command.

    `headers`: a record must hold a header passing one of them (OR). `producer_id` (with
    `producer_epoch`) and `leader_epoch` (the batch's partitionLeaderEpoch) judge whole batches
    from their header: the records of a batch they leave out are never decoded."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    key: bytes | None = None
    limit: int | None = None
    key_prefix: bytes | None = None
    key_regex: re.Pattern[bytes] | None = None
    value_regex: re.Pattern[bytes] | None = None
    headers: tuple[HeaderMatch, ...] = ()
    producer_id: int | None = None
    producer_epoch: int | None = None
    leader_epoch: int | None = None

    @classmethod
    def given(
        cls,
        *,
        from_offset: int | None = None,
        to_offset: int | None = None,
        from_time: int | None = None,
        to_time: int | None = None,
        key: str | bytes | None = None,
        limit: int | None = None,
        key_prefix: bytes | None = None,
        key_regex: re.Pattern[bytes] | None = None,
        value_regex: re.Pattern[bytes] | None = None,
        headers: tuple[HeaderMatch, ...] = (),
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        leader_epoch: int | None = None,
    ) -> Filters | None:
        """The filters of a command's options (a key given as text: its UTF-8), or None when
        none is given: an unfiltered read takes the fast paths."""
        f = cls(
            from_offset,
            to_offset,
            from_time,
            to_time,
            key.encode("utf-8") if isinstance(key, str) else key,
            limit,
            key_prefix,
            key_regex,
            value_regex,
            tuple(headers),
            producer_id,
            producer_epoch,
            leader_epoch,
        )
        return None if f == cls() else f

    @property
    def search(self) -> RecordSearch | None:
        """The tests on keys and values, for the fast scanner; None without any."""
        s = RecordSearch(self.key, self.key_prefix, self.key_regex, self.value_regex)
        return None if s == _NO_SEARCH else s

    @property
    def bounds_records(self) -> bool:
        """An offset or time range that judges records one by one."""
        return (
            self.from_offset is not None
            or self.to_offset is not None
            or self.from_time is not None
            or self.to_time is not None
        )

    @property
    def spent(self) -> bool:
        """The limit is reached: nothing more is shown, in this file or the next."""
        return self.limit is not None and self.limit <= 0

    @property
    def needs_records(self) -> bool:
        """A record-level filter: the batches shown are those holding a record it shows, and
        only those records are shown (a search implies --deep-iteration, as --key always did)."""
        return (
            self.key is not None
            or self.key_prefix is not None
            or self.key_regex is not None
            or self.value_regex is not None
            or self.from_time is not None
            or self.to_time is not None
            or bool(self.headers)
        )

    @property
    def judges_batches(self) -> bool:
        """A batch-level test (producer, leader epoch): the batches shown leave gaps between
        them that are not the log's."""
        return (
            self.producer_id is not None
            or self.producer_epoch is not None
            or self.leader_epoch is not None
        )

    @property
    def whole_batches(self) -> bool:
        """Only batch-level tests: a batch shown is shown whole (its records need no judging or
        counting), so a renderer may write them the way it writes an unfiltered batch's."""
        return (
            self.judges_batches
            and not self.needs_records
            and not self.bounds_records
            and self.limit is None
        )

    def record_matches(self, r: Record) -> bool:
        if self.from_offset is not None and r.offset < self.from_offset:
            return False
        if self.to_offset is not None and r.offset > self.to_offset:
            return False
        if self.from_time is not None and r.timestamp < self.from_time:
            return False
        if self.to_time is not None and r.timestamp > self.to_time:
            return False
        if self.headers and not self.headers_match(r.headers):
            return False
        return self._searched(r)

    def headers_match(self, headers) -> bool:
        """Whether a record with these headers passes `headers` (one of them: OR)."""
        return not self.headers or any(m.found_in(headers) for m in self.headers)

    def _searched(self, r: Record) -> bool:
        """Whether `r` passes every test on keys and values (the reference for search_v2)."""
        k = r.key
        if k is None:
            if self.key is not None or self.key_prefix is not None or self.key_regex is not None:
                return False
        elif (
            (self.key is not None and k != self.key)
            or (self.key_prefix is not None and not k.startswith(self.key_prefix))
            or (self.key_regex is not None and self.key_regex.search(k) is None)
        ):
            return False
        return self.value_regex is None or (
            r.value is not None and self.value_regex.search(r.value) is not None
        )

    def batch_may_match(self, b: RecordBatch) -> bool:
        if self.from_offset is not None and b.last_offset < self.from_offset:
            return False
        if self.to_offset is not None and b.base_offset_field > self.to_offset and b.magic >= 2:
            return False
        if self.from_time is not None and b.max_timestamp < self.from_time:
            return False
        return self.batch_selected(b)

    def batch_selected(self, b: RecordBatch) -> bool:
        """The batch-level tests, on the batch's header alone: its producer id and epoch, its
        partitionLeaderEpoch (legacy batches have Kafka's "none", -1, for all three)."""
        if self.producer_id is not None and b.producer_id != self.producer_id:
            return False
        if self.producer_epoch is not None and b.producer_epoch != self.producer_epoch:
            return False
        return self.leader_epoch is None or b.partition_leader_epoch == self.leader_epoch

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


def selected_batches(
    buf, start: int, end: int, f: Filters | None, deep: bool
) -> Iterator[tuple[RecordBatch, list[Record] | None]]:
    """The batches of buf[start:end) that `f` shows (all of them without filters), each with the
    records the filter had to decode to judge it (else None): all of the batch's, or with a
    search on keys and values (v2 batches) only those it found. Batches are read one at
    a time, so a format error is raised where the walk meets it, and none is read once the limit
    is spent."""
    if f is None:
        for batch in iter_batches(buf, start, end):
            yield batch, None
        return
    batches = iter_batches(buf, start, end)
    search = f.search
    while not f.spent:
        b = next(batches, None)
        if b is None:
            return
        verdict = f.judge_batch(b, deep)
        if verdict is Verdict.STOP:
            return
        if verdict is Verdict.SKIP:
            continue
        records: list[Record] | None = None
        if f.needs_records:
            records = found_records(b, search) if search is not None and b.magic == 2 else None
            if records is None:
                records = b.records()
            if not f.holds_match(records):
                continue
        yield b, records


class FoundRecords(list[Record]):
    """The records a search found in one batch, in order, and their places in it (`indices`)."""

    def __init__(self, records: list[Record], indices: list[int]):
        super().__init__(records)
        self.indices = indices


def found_records(b: RecordBatch, search: RecordSearch) -> FoundRecords | None:
    """The records of v2 batch `b` the search finds, built by the fast scanner alone; None when
    the batch has anything unusual, for the reference decoder to judge (and report) it."""
    indices: list[int] = []
    try:
        return FoundRecords(search_v2(b, search, indices), indices)
    except Exception:  # anything unusual: the general path says what is wrong
        return None


def found_lines(
    b: RecordBatch, records: list[Record], f: Filters, batch_lines: Callable[[], list]
) -> list[tuple[Record, object]] | None:
    """The records of `b` that `f` shows, each with its line, cut out of all the batch's lines as a
    renderer's record fast path writes them (`batch_lines`: one line a record, in order), when
    `records` are a search's (they know their places) and enough of the batch is shown for the
    fast path to cost less than rendering them one by one; else None, and nothing counted
    against the limit: the caller renders `records` itself."""
    indices = getattr(records, "indices", None)
    if indices is None or 4 * len(records) < b.records_count:
        return None
    try:
        lines = batch_lines()
    except Exception:  # anything unusual: the general path says what is wrong
        return None
    if len(lines) != b.records_count:
        return None
    if not f.bounds_records and not f.headers:
        # the search's records are the ones shown, up to the limit: no record to judge again
        n = len(records) if f.limit is None else min(len(records), max(f.limit, 0))
        if f.limit is not None:
            f.limit -= n
        return [(records[k], lines[indices[k]]) for k in range(n)]
    place = {id(r): i for r, i in zip(records, indices)}
    return [(r, lines[place[id(r)]]) for r in f.shown(records)]


def segments_in_range(
    paths: Iterable[Path], from_offset: int | None, to_offset: int | None
) -> Iterator[Path]:
    """Of a partition's .log files in offset order, those that can hold offsets in the range:
    a segment ends where the next one begins, so no file outside the range is opened."""
    paths = list(paths)
    for i, p in enumerate(paths):
        base = offset_from_name(p.name)
        nxt = (
            offset_from_name(paths[i + 1].name)
            if i + 1 < len(paths) and paths[i + 1].parent == p.parent
            else None
        )
        if from_offset is not None and nxt is not None and nxt <= from_offset:
            continue
        if to_offset is not None and base is not None and base > to_offset:
            continue
        yield p
