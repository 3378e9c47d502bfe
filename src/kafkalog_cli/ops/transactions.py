"""`transactions`: what a broker knows of each partition's producers and transactions, offline.

Kafka 3.3.1's sources:
- the producer state: ProducerStateManager as UnifiedLog loads it (the latest usable snapshot,
  then the log replayed: ops.producer_rebuild), without the producers expired at `now`
  (ProducerStateManager.isProducerExpired: no open transaction and idle for
  producer.id.expiration.ms);
- the last stable offset: UnifiedLog.lastStableOffset, the first unstable offset if it is below
  the high watermark, else the high watermark. The first unstable offset is the first offset of
  the earliest transaction still open at the high watermark: an ongoing one, or one whose marker
  is at or above it (ProducerStateManager's ongoingTxns and unreplicatedTxns). The high watermark
  is the replication-offset-checkpoint's, clamped as the broker loads it; without an entry the
  log end offset bounds it instead (`stable_bound`);
- transactions version 2 (KIP-890, 4.0): a transaction's marker carries its data's epoch + 1 and
  closes it all the same (config.versions.TRANSACTIONS_V2: one rule for every version); at epoch
  exhaustion the producer id rotates, and the old id stays a producer without a transaction
  until it expires;
- hanging transactions: TransactionsCommand's find-hanging. An open transaction whose producer's
  last timestamp is more than `max_age_ms` before `now` is a candidate; it hangs unless the
  transaction coordinator still expects to write its marker: its producer id has a
  transactional id in __transaction_state whose current transaction (Ongoing, PrepareCommit,
  PrepareAbort) includes the partition. Offline, the coordinator's state is only known from the
  __transaction_state partitions in the paths given; without any, every candidate is reported,
  with `coordinator_state` null.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.internal.transaction_state import (
    TransactionLogValue,
    TransactionState,
    read_key,
    read_value_v0_or_v1,
)
from kafkalog_cli.ops.high_watermark import checkpointed_high_watermark
from kafkalog_cli.ops.producer_rebuild import (
    ProducerEntry,
    ProducerState,
    rebuild_producer_state,
    replay,
)
from kafkalog_cli.storage.logdir import RootCheckpoints
from kafkalog_cli.storage.names import parse_partition_dir
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment

TRANSACTION_STATE_TOPIC = "__transaction_state"
_NEVER = 1 << 62  # an expiration no producer reaches
KRAFT_METADATA_TOPIC = "__cluster_metadata"  # the controller's log: no producer, no transaction
# DescribeTransactions lists a transaction's partitions in these states: the coordinator still
# writes their markers (TransactionsCommand.filterHangingTransactions)
MARKERS_PENDING = (
    TransactionState.Ongoing,
    TransactionState.PrepareCommit,
    TransactionState.PrepareAbort,
)


@dataclass(frozen=True)
class CoordinatorTransaction:
    """A transactional id's latest TransactionMetadata in __transaction_state."""

    transactional_id: str
    metadata: TransactionLogValue

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ids in self.metadata.transaction_partitions or () for p in ids}

    def expects_marker(self, topic: str, partition: int) -> bool:
        return self.metadata.state in MARKERS_PENDING and (topic, partition) in self.partitions


@dataclass
class OpenTransaction:
    topic: str
    partition: int
    producer: ProducerEntry
    now_ms: int

    @property
    def start_offset(self) -> int:
        return self.producer.current_txn_first_offset

    @property
    def age_ms(self) -> int:
        """find-hanging's duration: since the producer's last timestamp."""
        return self.now_ms - self.producer.timestamp

    @property
    def duration_min(self) -> int:
        """TimeUnit.MILLISECONDS.toMinutes: truncated toward zero."""
        minutes = abs(self.age_ms) // 60_000
        return minutes if self.age_ms >= 0 else -minutes

    def to_dict(self) -> dict:
        p = self.producer
        return {
            "topic": self.topic,
            "partition": self.partition,
            "producer_id": p.producer_id,
            "producer_epoch": p.epoch,
            "coordinator_epoch": p.coordinator_epoch,
            "start_offset": self.start_offset,
            "last_timestamp": p.timestamp,
            "age_ms": self.age_ms,
            "duration_min": self.duration_min,
        }


@dataclass
class PartitionTransactions:
    """One partition: its offsets, its active producers and its open transactions."""

    name: str
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    last_stable_offset: int
    producers: list[ProducerEntry] = field(default_factory=list)
    open: list[OpenTransaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # producer snapshots that could not be used
    damage: KafkalogError | None = (
        None  # the active segment's tail that is not a batch (what follows is read up to it)
    )
    expired: list[ProducerEntry] = field(
        default_factory=list
    )  # in the state, expired at now_ms (not shown)

    @property
    def stable_bound(self) -> str:
        return "high_watermark" if self.high_watermark is not None else "log_end_offset"

    def to_dict(self) -> dict:
        return {
            "partition": self.name,
            "topic": self.topic,
            "partition_id": self.partition,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "stable_bound": self.stable_bound,
            "producers": [producer_json(p) for p in self.producers],
            "expired_producer_ids": [p.producer_id for p in self.expired],
            "open_transactions": [t.to_dict() for t in self.open],
        }


def producer_json(p: ProducerEntry) -> dict:
    """DescribeProducers' fields."""
    return {
        "producer_id": p.producer_id,
        "producer_epoch": p.epoch,
        "coordinator_epoch": p.coordinator_epoch,
        "last_sequence": p.last_seq,
        "last_timestamp": p.timestamp,
        "current_transaction_start_offset": p.current_txn_first_offset
        if p.current_txn_first_offset >= 0
        else None,
    }


class _OngoingAt(ProducerState):
    """Producer state replayed on, keeping the transactions open when the replay crosses `offset`."""

    def __init__(self, state: ProducerState, offset: int):
        super().__init__(state.entries, state.ongoing)
        self.offset = offset
        self.ongoing_at: dict[int, int] | None = None

    def update(self, batch):
        if self.ongoing_at is None and batch.base_offset >= self.offset:
            self.ongoing_at = dict(self.ongoing)
        return super().update(batch)


def partition_transactions(
    partition: Partition, now_ms: int, expiration_ms: int
) -> PartitionTransactions:
    """The producer state at the log end offset, and the transactions open at the high watermark."""
    tp = partition.topic_partition
    segments = partition.segments
    log_start, leo = partition.log_start_offset, partition.log_end_offset
    # a topic-partition dir with segments (the command skips the others): both offsets are known
    assert tp is not None and log_start is not None and leo is not None, "a partition with segments"
    hw = checkpointed_high_watermark(partition)
    bound = hw if hw is not None else leo
    notes: list[str] = []

    def rebuild(upto: int) -> ProducerState:
        # every producer kept (as describe reads them); those expired at now_ms are told apart below
        return rebuild_producer_state(
            partition.directory,
            segments,
            upto,
            now_ms=now_ms,
            expiration_ms=_NEVER,
            log_start=log_start,
            ignored=lambda message, f: notes.append(f"{f}: {message}"),
        )

    if (
        bound >= leo
    ):  # the usual case: the state at the log end offset (its snapshot, when there is one)
        tracked = state = rebuild(leo)
        open_at_bound = state.ongoing
    else:  # up to the segment holding the bound, then on from there, noting it
        first = segments[partition.segment_index_for(bound)]
        tracked = _OngoingAt(rebuild(first.base_offset), bound)
        for seg in segments[segments.index(first) :]:
            replay(seg, tracked, log_start)
        open_at_bound = tracked.ongoing if tracked.ongoing_at is None else tracked.ongoing_at
    lso = min([o for o in open_at_bound if o < bound] + [bound])
    active = [
        e
        for e in tracked.entries.values()
        if e.current_txn_first_offset >= 0 or now_ms - e.timestamp < expiration_ms
    ]
    active.sort(key=lambda e: e.producer_id)
    kept = {e.producer_id for e in active}
    expired = sorted(
        (e for e in tracked.entries.values() if e.producer_id not in kept),
        key=lambda e: e.producer_id,
    )
    open_txns = [
        OpenTransaction(tp.topic, tp.partition, e, now_ms)
        for e in active
        if e.current_txn_first_offset >= 0
    ]
    open_txns.sort(key=lambda t: t.start_offset)
    return PartitionTransactions(
        partition.name,
        tp.topic,
        tp.partition,
        log_start,
        leo,
        hw,
        lso,
        active,
        open_txns,
        notes,
        tail_damage(segments[-1]),
        expired,
    )


def tail_damage(seg: Segment) -> KafkalogError | None:
    """What in the active segment is not a valid batch nor preallocated zeros: the broker's
    recovery truncates it after an unclean shutdown, so the answers above stop before it."""
    return seg.recovered_tail().damage


def coordinator_transactions(partitions: Iterable[Partition]) -> dict[int, CoordinatorTransaction]:
    """{producer id: its transactional id's latest metadata} from __transaction_state partitions
    (compacted: the last record of a key is its state; a tombstone removes it)."""
    by_id: dict[str, TransactionLogValue] = {}
    for p in partitions:
        for seg, batch in p.batches():
            if batch.is_control:
                continue
            try:
                for rec in batch.records():
                    key = read_key(rec.key).transactional_id
                    if rec.value is None:
                        by_id.pop(key, None)
                    else:
                        by_id[key] = read_value_v0_or_v1(rec.value)
            except KafkalogError as e:
                raise e.located(path=str(seg.log_path), position=batch.position) from None
    return {v.producer_id: CoordinatorTransaction(t, v) for t, v in by_id.items()}


@dataclass
class Hanging:
    """A find-hanging row: the open transaction and what the coordinator's log says of it."""

    txn: OpenTransaction
    coordinator: CoordinatorTransaction | None
    reason: str

    @property
    def abort_command(self) -> str:
        """kafka-transactions.sh's abort (TransactionsCommand.AbortTransactionCommand), for brokers
        3.0 and later: the partition's leader writes the ABORT marker, and the LSO moves on."""
        t = self.txn
        return (
            f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {t.topic} "
            f"--partition {t.partition} --start-offset {t.start_offset}"
        )

    @property
    def abort_command_before_3_0(self) -> str:
        p = self.txn.producer
        return (
            f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {self.txn.topic} "
            f"--partition {self.txn.partition} --producer-id {p.producer_id} --producer-epoch {p.epoch} "
            f"--coordinator-epoch {p.coordinator_epoch}"
        )

    @property
    def describe_command(self) -> str | None:
        c = self.coordinator
        return (
            None
            if c is None
            else f"kafka-transactions.sh --bootstrap-server HOST:PORT describe --transactional-id {c.transactional_id}"
        )

    def to_dict(self) -> dict:
        c = self.coordinator
        return {
            "kind": "hanging_transaction",
            **self.txn.to_dict(),
            "transactional_id": c.transactional_id if c else None,
            "coordinator_state": c.metadata.state.name if c else None,
            "reason": self.reason,
            "abort_command": self.abort_command,
            "abort_command_before_3_0": self.abort_command_before_3_0,
            "describe_command": self.describe_command,
        }


def find_hanging(
    txns: Iterable[OpenTransaction],
    max_age_ms: int,
    coordinator: dict[int, CoordinatorTransaction] | None,
) -> list[Hanging]:
    """TransactionsCommand.FindHangingTransactionsCommand: candidates older than `max_age_ms`
    (strictly), then filterHangingTransactions against the coordinator's state when it is known
    (`coordinator` None: no __transaction_state was given)."""
    out = []
    # transactions version 2 rotates the producer id at epoch exhaustion: the transactional id's
    # value then names the old id as previousProducerId (written from KAFKA-20310 on; -1 before)
    rotated = (
        {}
        if coordinator is None
        else {
            c.metadata.previous_producer_id: c
            for c in coordinator.values()
            if c.metadata.previous_producer_id >= 0
            and c.metadata.previous_producer_id != c.metadata.producer_id
        }
    )
    for t in txns:
        if t.age_ms <= max_age_ms:
            continue
        if coordinator is None:
            out.append(
                Hanging(
                    t,
                    None,
                    "open longer than the maximum age; the coordinator's state is unknown "
                    "(no __transaction_state in the paths given)",
                )
            )
            continue
        c = coordinator.get(t.producer.producer_id)
        if c is None and t.producer.producer_id in rotated:
            moved = rotated[t.producer.producer_id]
            out.append(
                Hanging(
                    t,
                    None,
                    f"the transactional id {moved.transactional_id} moved on to producer id "
                    f"{moved.metadata.producer_id} (previousProducerId {t.producer.producer_id} "
                    f"in __transaction_state): no marker comes under this producer id",
                )
            )
        elif c is None:
            out.append(
                Hanging(t, None, "no transactional id has this producer id in __transaction_state")
            )
        elif not c.expects_marker(t.topic, t.partition):
            out.append(
                Hanging(
                    t,
                    c,
                    f"the coordinator's transaction is {c.metadata.state.name} and does not "
                    f"include this partition",
                )
            )
    return out


def expiration_ms(resolver: ConfigResolver, topic: str) -> int:
    return resolver.for_topic(topic).producer_id_expiration_ms


def read_partitions(log_dir: Path, dirs: list[Path]) -> list[Partition]:
    """The partitions of `dirs` with their log dir's checkpoints (read leniently, as a reader)."""
    roots = RootCheckpoints.read(log_dir, strict=False)
    out = []
    for d in dirs:
        tp = parse_partition_dir(d.name)
        if tp is not None:
            out.append(Partition.open(d, roots.for_partition(tp), tp))
    return out
