"""What a Kafka consumer of a partition is returned, from the files: the view `export` and the
Spark source show by default.

Kafka 3.3.1:
- a fetch returns offsets in [log start offset, high watermark) to a read_uncommitted consumer
  and [log start offset, last stable offset) to a read_committed one (Partition.fetchRecords:
  FetchIsolation's upper bound, UnifiedLog.read's maxOffsetMetadata);
- the consumer never hands control records to the application (CompletedFetch.nextFetchedRecord:
  `if (!currentBatch.isControlBatch())`), whatever its isolation level;
- read_committed: the broker sends the aborted transactions overlapping the fetch (from the
  .txnindex: UnifiedLog.collectAbortedTransactions) and the consumer skips every batch of an
  aborted producer from the transaction's first offset up to its ABORT marker
  (CompletedFetch.isBatchAborted / abortedProducerIds). The same ranges are found here from the
  markers themselves, in one walk of the batch headers: each transactional data batch opens its
  producer's transaction if none is open, and a COMMIT or ABORT marker of the producer closes it.
  A transaction whose first batch went with retention starts at the log start offset.
  Producer epochs play no part (the consumer's abortedProducerIds and the .txnindex key on the
  producer id): under transactions version 2 (4.0) a marker at its data's epoch + 1 closes the
  transaction as one at the same epoch does (config.versions.TRANSACTIONS_V2), and a marker
  written again after its transaction completed closes nothing.

The high watermark is the replication-offset-checkpoint's, clamped as the broker loads it
(ops.high_watermark); with no entry (a copy without the log dir's checkpoints) the log end
offset stands in for it, as `transactions` does, and the view says so (`high_watermark_known`).
The last stable offset is UnifiedLog.lastStableOffset: the first offset of the earliest
transaction still open at the high watermark, else the high watermark (as ops.transactions).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkalog_cli.ops.high_watermark import high_watermark_at_load

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
ISOLATION_LEVELS = (READ_UNCOMMITTED, READ_COMMITTED)

KEEP, SKIP, CUT, STOP = "keep", "skip", "cut", "stop"
_UNBOUNDED = 1 << 63


@dataclass(frozen=True)
class ConsumerView:
    """One partition as a consumer at `isolation` sees it: offsets in [start, end), no control
    batch, and (read_committed) no batch of an aborted transaction."""

    isolation: str
    start: int
    end: int
    high_watermark: int
    last_stable_offset: int
    high_watermark_known: bool = True
    aborted: dict = field(default_factory=dict)  # {producer id: [(first offset, marker offset)]}

    def verdict(
        self,
        base_offset: int,
        last_offset: int,
        is_control: bool,
        is_transactional: bool,
        producer_id: int,
    ) -> str:
        """KEEP the batch, SKIP it, CUT it (only its records in [start, end)), or STOP: it and
        every later batch of the partition are past the end."""
        if base_offset >= self.end:
            return STOP
        if is_control or last_offset < self.start:
            return SKIP
        if is_transactional and producer_id in self.aborted:
            for first, marker in self.aborted[producer_id]:
                if first <= base_offset <= marker:
                    return SKIP
        if base_offset < self.start or last_offset >= self.end:
            return CUT
        return KEEP

    def keeps_offset(self, offset: int) -> bool:
        return self.start <= offset < self.end

    def keeps_segment(self, base_offset: int, next_base_offset: int | None) -> bool:
        return base_offset < self.end and (
            next_base_offset is None or next_base_offset > self.start
        )

    def to_dict(self) -> dict:
        return {
            "isolation_level": self.isolation,
            "log_start_offset": self.start,
            "end_offset": self.end,
            "high_watermark": self.high_watermark,
            "high_watermark_known": self.high_watermark_known,
            "last_stable_offset": self.last_stable_offset,
            "aborted_transactions": sum(len(v) for v in self.aborted.values()),
        }


def consumer_view(
    batches: Iterable,
    isolation: str,
    checkpointed_hw: int | None,
    checkpointed_log_start: int | None,
    complete=True,
) -> ConsumerView:
    """The view of a partition from its batches in offset order (RecordBatch objects: only their
    headers are read, and a marker's key), its replication-offset-checkpoint entry and its
    log-start-offset-checkpoint entry (None: no entry). `complete` (or what it returns, asked
    once the batches are read) False: some batches could not
    be read (damage); the high watermark is then not clamped to what was read, nor stood in for
    by it, so reading the records meets the damage and says so rather than leaving them out."""
    from kafkalog_cli.formats.control import ControlRecordType

    first_base: int | None = None
    leo = 0
    open_first: dict[int, int] = {}  # producer id -> first offset of its open transaction
    txns: list[tuple[int, int, int | None, bool]] = []  # (producer, first, marker offset, aborted)
    for b in batches:
        base = b.base_offset
        if first_base is None:
            first_base = base
        leo = b.last_offset + 1
        if not b.is_transactional:
            continue
        pid = b.producer_id
        if not b.is_control:
            open_first.setdefault(pid, base)
            continue
        kind = None
        for r in b.records():
            kind = ControlRecordType.parse(r.key)
            break
        if kind is None or not kind.is_transaction_marker:
            continue
        first = open_first.pop(pid, None)
        txns.append((pid, base if first is None else first, base, kind is ControlRecordType.ABORT))
    for pid, first in open_first.items():
        txns.append((pid, first, None, False))
    log_start = max(checkpointed_log_start or 0, first_base if first_base is not None else 0)
    if first_base is None:
        leo = log_start
    known = checkpointed_hw is not None
    if complete() if callable(complete) else complete:
        hw = high_watermark_at_load(checkpointed_hw, log_start, leo) if known else leo
    else:
        hw = high_watermark_at_load(checkpointed_hw, log_start) if known else _UNBOUNDED
    lso = min(
        [first for _, first, marker, _ in txns if first < hw and (marker is None or marker >= hw)]
        + [hw]
    )
    aborted: dict[int, list] = {}
    if isolation == READ_COMMITTED:
        for pid, first, marker, was_aborted in txns:
            if was_aborted:
                aborted.setdefault(pid, []).append((first, marker))
    end = lso if isolation == READ_COMMITTED else hw
    return ConsumerView(isolation, log_start, end, hw, lso, known, aborted)


def views_for(refs, isolation: str) -> dict[str, ConsumerView]:
    """{partition dir: its ConsumerView} for the partitions of `refs` (local Segments or
    storage.remote.RemoteSegments; every segment of a partition should be among them). A segment
    outside a partition dir has no partition to consume: it gets no view."""
    from kafkalog_cli.storage.remote import segment_batches

    groups: dict[str, list] = {}
    for r in refs:
        if r.topic is not None:
            groups.setdefault(str(r.directory), []).append(r)
    roots: dict[str, tuple[dict, dict]] = {}
    out = {}
    for d, segs in groups.items():
        log_dir = segs[0].log_dir if hasattr(segs[0], "log_dir") else str(segs[0].directory.parent)
        if log_dir not in roots:
            roots[log_dir] = _root_entries(log_dir)
        hws, starts = roots[log_dir]
        tp = (segs[0].topic, segs[0].partition)
        segs.sort(key=lambda s: s.base_offset)
        damage: list = []
        out[d] = consumer_view(
            _readable(segs, segment_batches, damage),
            isolation,
            hws.get(tp),
            starts.get(tp),
            complete=lambda damage=damage: not damage,  # this partition's list
        )
    return out


def _readable(segs, segment_batches, damage: list):
    """The batches of the segments in order; a segment's batches after one that does not read
    are skipped, and `damage` gets the error (reading the records reports it, with its byte).
    A segment that cannot be opened at all (permission denied, a FIFO) is an InputError at once:
    taken as damage, the view would start after it and the export would leave it out unread."""
    from kafkalog_cli.errors import InputError, KafkalogError

    for s in segs:
        try:
            for _, b in segment_batches(s):
                yield b
        except InputError:
            raise
        except KafkalogError as e:
            damage.append(e)


def _root_entries(log_dir: str) -> tuple[dict, dict]:
    """The log dir's replication-offset-checkpoint and log-start-offset-checkpoint entries, read
    leniently (a damaged or missing file has none)."""
    from kafkalog_cli.errors import InputError, KafkalogError
    from kafkalog_cli.formats.checkpoints import parse_offset_checkpoint
    from kafkalog_cli.storage import names
    from kafkalog_cli.storage.remote import read_any

    out = []
    for name in (names.REPLICATION_CHECKPOINT, names.LOG_START_OFFSET_CHECKPOINT):
        path = f"{log_dir}/{name}"
        try:
            out.append(parse_offset_checkpoint(read_any(path), path=path))
        except (OSError, KafkalogError) as e:
            if isinstance(e, InputError) and os.path.exists(path):
                raise  # there but unreadable (a FIFO, permission denied): a broker fails on it too
            out.append({})
    return out[0], out[1]


def view_notes(views: dict[str, ConsumerView], note) -> None:
    """One note for the partitions whose high watermark is not known (no entry in their log dir's
    replication-offset-checkpoint): their log end offset stands in for it."""
    unknown = sorted(d for d, v in views.items() if not v.high_watermark_known)
    if unknown and note is not None:
        names = ", ".join(d.rstrip("/").rsplit("/", 1)[-1] for d in unknown[:5]) + (
            ", ..." if len(unknown) > 5 else ""
        )
        note(
            f"{len(unknown)} partition(s) have no entry in their log dir's replication-offset-checkpoint "
            f"({names}): read up to their log end offset, as if everything were replicated"
        )
