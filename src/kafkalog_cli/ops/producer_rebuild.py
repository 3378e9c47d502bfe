"""Producer state rebuilt from snapshots plus the log (Kafka's ProducerStateManager and
ProducerAppendInfo, as LogSegment.recover and UnifiedLog.rebuildProducerState drive them).

The load replays batches as AppendOrigin.REPLICATION, whose checks only warn, so every version
takes a transaction marker at any epoch. Under transactions version 2 (Kafka 4.0, KIP-890) each
marker carries its data's epoch + 1: ProducerAppendInfo.appendEndTxnMarker (its checkProducerEpoch
only warns for REPLICATION) completes the transaction, and ProducerStateEntry.update takes
the marker's epoch, which drops the batch metadata of the old one (maybeUpdateProducerEpoch):
the snapshot has the new epoch, lastSequence -1, lastOffset -1, offsetDelta 0 and no
currentTxnFirstOffset. One rule for every version (config.versions.TRANSACTIONS_V2)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config.versions import PRODUCER_SNAPSHOT_INSERTION_ORDER, KafkaVersions
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.control import ControlRecordType, EndTransactionMarker
from kafkalog_cli.formats.producer_state import (
    ProducerSnapshotEntry,
    encode_producer_snapshot,
    parse_producer_snapshot,
)
from kafkalog_cli.formats.records import RecordBatch
from kafkalog_cli.formats.txnindex import AbortedTxn
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.live_files import read_listed, was_listed
from kafkalog_cli.storage.names import offset_from_name
from kafkalog_cli.storage.segment import Segment


@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int = -1
    last_seq: int = -1  # of the last batch's metadata; -1 when there is none
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1  # lastTimestamp
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    def to_snapshot(self) -> ProducerSnapshotEntry:
        return ProducerSnapshotEntry(
            self.producer_id,
            self.epoch,
            self.last_seq,
            self.last_offset,
            self.offset_delta,
            self.timestamp,
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )


@dataclass
class ProducerState:
    entries: dict[int, ProducerEntry] = field(default_factory=dict)
    ongoing: dict[int, int] = field(default_factory=dict)  # txn first offset -> producer id
    # the snapshot's order (config.versions.PRODUCER_SNAPSHOT_INSERTION_ORDER): java.util.HashMap's
    # (3.5+) or Scala's mutable.HashMap's (3.3, 3.4); `entries` keeps insertion order for the former
    insertion_order: bool = False

    def copy(self) -> ProducerState:
        return ProducerState(
            {k: ProducerEntry(**vars(v)) for k, v in self.entries.items()},
            dict(self.ongoing),
            self.insertion_order,
        )

    @classmethod
    def from_snapshot(
        cls, buf, now_ms: int, expiration_ms: int, path: str | None = None
    ) -> ProducerState:
        """loadFromSnapshot: entries whose producer expired (no ongoing txn, lastTimestamp older
        than producer.id.expiration.ms) are dropped, as the broker drops them."""
        st = cls()
        for e in parse_producer_snapshot(buf, path=path).entries:
            if e.current_txn_first_offset < 0 and now_ms - e.timestamp >= expiration_ms:
                continue
            st.entries[e.producer_id] = ProducerEntry(
                e.producer_id,
                e.producer_epoch,
                e.last_sequence if e.last_offset >= 0 else -1,
                e.last_offset,
                e.offset_delta if e.last_offset >= 0 else 0,
                e.timestamp,
                e.coordinator_epoch,
                e.current_txn_first_offset,
            )
            if e.current_txn_first_offset >= 0:
                st.ongoing[e.current_txn_first_offset] = e.producer_id
        return st

    def update(self, batch: RecordBatch) -> AbortedTxn | None:
        """One v2 batch with a producer id; returns the aborted txn its marker completes."""
        pid = batch.producer_id
        e = self.entries.get(pid)
        if e is None:
            e = self.entries[pid] = ProducerEntry(pid)
        if batch.is_control and not batch.records_count:
            # ProducerAppendInfo.append: "An empty control batch means the entire transaction has
            # been cleaned from the log, so no need to append": no epoch update, nothing cleared
            # (ProducerStateManager.update still registers an empty entry for an unknown producer)
            return None
        epoch = batch.producer_epoch
        if (
            e.epoch != epoch
        ):  # maybeUpdateProducerEpoch: a new epoch (a TV2 marker's) clears the batch metadata
            e.epoch = epoch
            e.last_seq, e.last_offset, e.offset_delta = -1, -1, 0
        if batch.is_control:
            return self._end_txn(e, batch)
        e.last_seq = batch.last_sequence
        e.last_offset = batch.last_offset
        e.offset_delta = batch.last_offset - batch.base_offset
        e.timestamp = batch.max_timestamp
        if batch.is_transactional and e.current_txn_first_offset < 0:
            e.current_txn_first_offset = batch.base_offset
            self.ongoing[batch.base_offset] = pid
        return None

    def _end_txn(self, e: ProducerEntry, batch: RecordBatch) -> AbortedTxn | None:
        recs = batch.records()
        ctype = batch.control_type()
        if ctype not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        # EndTransactionMarker.deserialize: a short value or a negative version is an InvalidRecordError
        e.coordinator_epoch = EndTransactionMarker.deserialize_value(
            ctype, recs[0].value
        ).coordinator_epoch
        offset = batch.base_offset
        first = e.current_txn_first_offset
        e.current_txn_first_offset = -1
        e.timestamp = batch.max_timestamp
        if first < 0:
            # appendEndTxnMarker: "Only emit the CompletedTxn for non-empty transactions"; a marker
            # with no data of its transaction before it changes no LSO and gets no .txnindex entry
            return None
        self.ongoing.pop(first, None)
        if ctype != ControlRecordType.ABORT:
            return None
        # lastStableOffset: the first offset of the earliest *other* ongoing txn, else marker + 1
        others = [o for o, p in self.ongoing.items() if p != e.producer_id]
        lso = min(others) if others else offset + 1
        return AbortedTxn(0, e.producer_id, first, offset, lso)

    def snapshot_bytes(self) -> bytes:
        order = _java_hashmap_order if self.insertion_order else _scala_hashmap_order
        return encode_producer_snapshot(e.to_snapshot() for e in order(self.entries))


def _table_size(n: int) -> int:
    """Buckets of a HashMap grown from 16 by doubling, at load factor 0.75, to hold `n` entries."""
    cap = 16
    while n > cap * 0.75:
        cap *= 2
    return cap


def _long_hash(pid: int) -> int:
    """A producer id's bucket hash: Long.hashCode ((int)(v ^ v >>> 32); Scala's ## agrees for every
    non-negative id) spread as both maps spread it (h ^ h >>> 16)."""
    x = (pid ^ (pid >> 32)) & 0xFFFFFFFF if not -(1 << 31) <= pid < (1 << 31) else pid & 0xFFFFFFFF
    return x ^ (x >> 16)


def _scala_hashmap_order(entries: dict[int, ProducerEntry]) -> list[ProducerEntry]:
    """Iteration order of Scala 2.13's mutable.HashMap[Long, _] (Kafka 3.3 ProducerStateManager):
    buckets ascending by improveHash(key.##) & (capacity - 1), nodes in a bucket sorted by hash."""
    cap = _table_size(len(entries))
    return sorted(
        entries.values(),
        key=lambda e: (_long_hash(e.producer_id) & (cap - 1), _long_hash(e.producer_id)),
    )


def _java_hashmap_order(entries: dict[int, ProducerEntry]) -> list[ProducerEntry]:
    """Iteration order of java.util.HashMap<Long, _> (Kafka 3.5+ ProducerStateManager.producers):
    buckets ascending by (h ^ h >>> 16) & (capacity - 1), a bucket's nodes in insertion order
    (`entries`' order: the snapshot's, then the log's; resize splits keep it). Not modelled: a
    table that grew beyond the current size before producers expired or truncateAndReload cleared
    it (clear() and removal keep the capacity), and tree bins (8+ ids in one bucket of 64+)."""
    cap = _table_size(len(entries))
    return sorted(entries.values(), key=lambda e: _long_hash(e.producer_id) & (cap - 1))


def snapshot_insertion_order(versions: KafkaVersions | None) -> bool:
    """PRODUCER_SNAPSHOT_INSERTION_ORDER for the log dir; where its versions disagree and none was
    stated, the lowest one's (an order of entries, not a deletion)."""
    versions = versions or KafkaVersions()
    decision = versions.decide(PRODUCER_SNAPSHOT_INSERTION_ORDER)
    if decision.applies is not None:
        return decision.applies
    return PRODUCER_SNAPSHOT_INSERTION_ORDER.applies(versions.low)


def rebuild_producer_state(
    directory: Path,
    segments: Sequence[Segment],
    upto: int | None,
    *,
    now_ms: int,
    expiration_ms: int,
    log_start: int | None = None,
    ignored: Callable[[str, Path], None] | None = None,
    versions: KafkaVersions | None = None,
) -> ProducerState:
    """Producer state at offset `upto` (the first segment to recover, the new segment's base...):
    the latest valid snapshot at or below it, then the log replayed up to it
    (UnifiedLog.rebuildProducerState). `upto=None`: past the log end.

    With `log_start` (the log-start-offset checkpoint's value) as Kafka 3.3.1's truncateAndReload:
    snapshots at or below it are not used (the broker deletes them) and without a snapshot the log
    is replayed from it. A snapshot that does not parse is skipped, and `ignored(message, path)`
    says so. `versions` (the Kafka versions that may load the dir) decides the order of the
    snapshots written from the state (snapshot_insertion_order)."""
    bases = [s.base_offset for s in segments]
    if upto is None:  # past the log end: the latest snapshot, then what follows it
        upto = 1 << 63
    snaps = sorted(
        (off, f)
        for f in directory.glob("*" + names.SNAPSHOT_SUFFIX)
        if (off := offset_from_name(f.name)) is not None
    )
    state = ProducerState()
    start = bases[0] if bases else 0
    if log_start is not None:
        start = max(start, log_start)
    for off, f in reversed(snaps):
        if off > upto or (log_start is not None and off <= log_start):
            continue
        data = read_listed(f) if was_listed(f) else files.read_bytes(f)
        if data is None:  # removed by a live broker since the listing (noted)
            continue
        try:
            state = ProducerState.from_snapshot(data, now_ms, expiration_ms, str(f))
            start = off
            break
        except KafkalogError as e:
            if ignored is not None:
                ignored(f"producer snapshot ignored: {e.message}", f)
    for i, seg in enumerate(segments):
        if seg.base_offset >= upto:
            break
        if i + 1 < len(segments) and segments[i + 1].base_offset <= start:
            continue
        replay(seg, state, start, upto)
    state.insertion_order = snapshot_insertion_order(versions)
    return state


def replay(seg: Segment, state: ProducerState, start: int = 0, stop: int = 1 << 63) -> None:
    """Producer state through a segment's batches from offset `start` to the batch holding `stop`
    (rebuildProducerState's maxPosition; headers only, no CRC); the walk stops quietly at the
    first batch that does not parse."""
    with seg.mapped():
        try:
            for batch in seg.batches():
                if batch.last_offset < start:
                    continue
                if batch.last_offset >= stop:
                    break
                if batch.magic >= 2 and batch.producer_id >= 0:
                    state.update(batch)
        except KafkalogError:
            pass


# ------------------------------------------------------------------ the snapshot files as LogLoader changes them
@dataclass
class LogView:
    """One segment as a rebuild reads it: its file (None: one created empty), and the byte ranges
    the log holds once recovery has cut it (None: the whole file)."""

    base_offset: int
    segment: Segment | None = None
    ranges: list[tuple[int, int]] | None = None

    def batches(self) -> Iterator[RecordBatch]:
        """The batches in order; stops quietly where one does not parse (a segment the broker
        keeps unrecovered below its recovery point)."""
        seg = self.segment
        if seg is None:
            return
        whole: list[tuple[int, int | None]] = [(0, None)]
        ranges: list[tuple[int, int | None]] = list(self.ranges) if self.ranges else whole
        with seg.mapped():
            for start, end in ranges:
                try:
                    yield from seg.batches(start, end)
                except KafkalogError:
                    return

    def batch_at(self, position: int) -> RecordBatch:
        """The batch at `position` of the file (one the recovery walk took)."""
        assert self.segment is not None, "a batch of a segment file"
        return next(self.segment.batches(position))


@dataclass
class SnapshotFiles:
    """A partition dir's producer snapshot files while LogLoader.load runs: offset -> the file on
    disk (a Path) or the bytes written; `removed` says why each removed one went."""

    files: dict[int, Path | bytes]
    removed: dict[int, str] = field(default_factory=dict)

    def read(self, offset: int) -> bytes:
        """The snapshot's bytes (none: removed by a live broker since the listing, unreadable)."""
        f = self.files[offset]
        if isinstance(f, bytes):
            return f
        return (read_listed(f) if was_listed(f) else files.read_bytes(f)) or b""

    def remove(self, offset: int, why: str) -> None:
        if self.files.pop(offset, None) is not None:
            self.removed[offset] = why


class SnapshotManager:
    """ProducerStateManager's snapshot handling over SnapshotFiles: a new one lists the files as
    they are (loadSnapshots) and deletes only those it listed (removeAndDeleteSnapshot); the map
    and snapshot offsets start at 0 (lastMapOffset, lastSnapOffset). The same in 3.3.1
    (ProducerStateManager.scala) and 4.0 (ProducerStateManager.java)."""

    def __init__(
        self,
        snapshots: SnapshotFiles,
        *,
        now_ms: int,
        expiration_ms: int,
        insertion_order: bool,
    ):
        self.dir = snapshots
        self.listed = set(snapshots.files)
        self.now_ms, self.expiration_ms = now_ms, expiration_ms
        self.insertion_order = insertion_order
        self.state = ProducerState(insertion_order=insertion_order)
        self.map_end = 0
        self.snap_end = 0

    def _delete(self, offset: int, why: str) -> None:
        if offset in self.listed:
            self.listed.discard(offset)
            self.dir.remove(offset, why)

    def latest(self) -> int | None:
        return max(self.listed, default=None)

    def remove_stray_snapshots(self, bases: Sequence[int]) -> None:
        """removeStraySnapshots: every snapshot not at a segment base goes but the latest such
        one, which stays only above the last base (the one a clean shutdown wrote)."""
        self.listed = set(self.dir.files)
        strays = sorted(o for o in self.listed if o not in set(bases))
        for o in strays[:-1]:
            self._delete(o, "stray producer snapshot")
        if strays and bases and strays[-1] < max(bases):
            self._delete(strays[-1], "stray producer snapshot")

    def truncate_fully_and_start_at(self, offset: int, listed: Sequence[int]) -> None:
        """truncateFullyAndStartAt: the producers cleared, every snapshot in `listed` (what the
        manager listed when it was created) deleted, the map restarted at `offset`."""
        self.listed = set(listed) & set(self.dir.files)
        for o in sorted(self.listed):
            self._delete(o, "the log restarts at the log start offset (truncateFullyAndStartAt)")
        self.state = ProducerState(insertion_order=self.insertion_order)
        self.snap_end, self.map_end = 0, offset

    def drop_out_of_range(self, log_start: int, log_end: int) -> None:
        """truncateAndReload's first step: the snapshots above the log end or at or below the
        log start offset go."""
        for o in sorted(self.listed):
            if o > log_end:
                self._delete(o, "above the log end offset")
            elif o <= log_start:
                self._delete(o, "at or below the log start offset")

    def truncate_and_reload(self, log_start: int, log_end: int) -> None:
        """truncateAndReload: the snapshots above the log end or at or below the log start go;
        the state is reloaded from the latest that reads (a corrupt one is deleted) unless the
        map already ends at `log_end`."""
        self.drop_out_of_range(log_start, log_end)
        if log_end != self.map_end:
            self.state = ProducerState(insertion_order=self.insertion_order)
            self._load_from_snapshot(log_start)
        else:  # onLogStartOffsetIncremented
            self.map_end = max(self.map_end, log_start)
            latest = self.latest()
            self.snap_end = log_start if latest is None else latest

    def _load_from_snapshot(self, log_start: int) -> None:
        while (latest := self.latest()) is not None:
            try:
                data = self.dir.read(latest)
                path = self.dir.files[latest]
                self.state = ProducerState.from_snapshot(
                    data,
                    self.now_ms,
                    self.expiration_ms,
                    None if isinstance(path, bytes) else str(path),
                )
                self.state.insertion_order = self.insertion_order
                self.snap_end = self.map_end = latest
                return
            except KafkalogError:  # CorruptSnapshotException: deleted, the next one tried
                self._delete(latest, "a producer snapshot the broker cannot read")
        self.snap_end = self.map_end = log_start

    def take_snapshot(self) -> None:
        """takeSnapshot: only past the last one taken or loaded."""
        if self.map_end > self.snap_end:
            self.dir.files[self.map_end] = self.state.snapshot_bytes()
            self.dir.removed.pop(self.map_end, None)
            self.listed.add(self.map_end)
            self.snap_end = self.map_end


def rebuild_snapshots(
    psm: SnapshotManager,
    segments: Sequence[LogView],
    log_start: int,
    last_offset: int,
    reload_from_clean_shutdown: bool,
    bases: Sequence[int] | None = None,
) -> None:
    """UnifiedLog.rebuildProducerState (3.3.1 Scala, 4.0 Java: the same steps). With no snapshot
    after a clean shutdown, empty snapshots at the last two segment bases and `last_offset` (the
    upgrade path); else truncateAndReload, the log replayed from the map end up to
    `last_offset` (LogSegments.values(mapEndOffset, lastOffset): from the segment holding the map
    end; a snapshot at each of the last two segment bases on the way), one at `last_offset`.
    `bases`: the segments' base offsets, when the caller has them."""
    if bases is None:
        bases = [s.base_offset for s in segments]
    to_snapshot = [*bases[-2:], last_offset]
    if psm.latest() is None and reload_from_clean_shutdown:
        for off in to_snapshot:
            psm.map_end = off
            psm.take_snapshot()
        return
    empty_before = not psm.state.entries and psm.map_end >= last_offset
    psm.truncate_and_reload(log_start, last_offset)
    if last_offset > psm.map_end and not empty_before:
        floor = bisect_right(bases, last_offset) - 1  # maxPosition applies in this one only
        for i in range(
            max(bisect_right(bases, psm.map_end) - 1, 0), bisect_left(bases, last_offset)
        ):
            start = max(bases[i], psm.map_end, log_start)
            psm.map_end = start
            if bases[i] in to_snapshot:
                psm.take_snapshot()
            _load_producers(segments[i], psm.state, start, last_offset if i == floor else None)
    psm.map_end = last_offset
    psm.take_snapshot()


def _load_producers(seg: LogView, state: ProducerState, start: int, stop: int | None) -> None:
    """loadProducersFromRecords over segment.read(start, maxPosition): from the first batch whose
    last offset reaches `start`, every batch up to the one whose last offset reaches `stop` (the
    segment holding it only: translateOffset), batches that jump back included."""
    reading = False
    for batch in seg.batches():
        if not reading and batch.last_offset < start:
            continue
        reading = True
        if stop is not None and batch.last_offset >= stop:
            break
        if batch.magic >= 2 and batch.producer_id >= 0:
            state.update(batch)
