"""`compare-replicas`: copies of one partition from different brokers, compared as the broker's
replica fetcher compares them after a leader change (Kafka 3.3.1).

A follower that (re)joins a leader finds where its log diverges from the leader's through the
leader epochs, not the records (KIP-101, KIP-279; AbstractFetcherThread): it asks the leader for
the end offset of its own latest epoch (OffsetsForLeaderEpoch, or the fetch response's
DivergingEpoch since IBP 2.7, the same computation), the leader answers from its
LeaderEpochFileCache (`end_offset_for`), and the follower truncates
(getOffsetTruncationState):

- the leader knows no such epoch (UNDEFINED_EPOCH_OFFSET): to the follower's high watermark;
- the leader answers with an epoch the follower does not have: to the follower's end offset of the
  largest epoch below it, and asks again with its new latest epoch;
- otherwise to min(the follower's end offset for that epoch, the leader's, its log end offset).

Each replica's epochs are its leader-epoch-checkpoint as the broker loads it (LeaderEpochFileCache
assign, then truncateFromEnd at the log end offset and truncateFromStart at the log start
offset). A replica without the file takes the epochs of its batches' headers, as the broker's
recovery assigns them (said in `notes`). Where a replica has no epochs at all (message format
v0/v1, or none in the batches), the replicas are compared record by record instead, and the
comparison says so.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.config import log_dir_node_id
from kafkalog_cli.errors import CheckpointError, InputError, UsageError
from kafkalog_cli.formats.checkpoints import (
    EpochEntry,
    load_leader_epoch_cache,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
    truncate_from_end,
    truncate_from_start,
)
from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.ops.high_watermark import checkpointed_high_watermark
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.fsops import ARCHIVE_SUFFIXES, unpack_archive
from kafkalog_cli.storage.logdir import LogDir, is_log_dir
from kafkalog_cli.storage.names import TopicPartition, parse_partition_dir_name
from kafkalog_cli.storage.partition import Partition

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochSource(str, enum.Enum):
    CHECKPOINT = "leader-epoch-checkpoint"
    BATCHES = "batch headers"  # no checkpoint file: the batches' partition leader epochs
    NONE = "none"  # no epochs anywhere: message format v0/v1


class Method(str, enum.Enum):
    LEADER_EPOCH = "leader-epoch"  # the fetcher's truncation by OffsetsForLeaderEpoch
    RECORDS = "records"  # record by record: a replica has no leader epochs


class TransactionState(str, enum.Enum):
    NONE = "none"  # not transactional
    COMMITTED = "committed"  # a COMMIT marker of its producer follows in this replica
    ABORTED = "aborted"  # an ABORT marker follows
    OPEN = "open"  # no marker follows (yet) in this replica
    MARKER = "marker"  # a control record itself


@dataclass
class Replica:
    """One copy of the partition, as the broker would load it."""

    label: str  # "broker 2" (meta.properties), else the path given
    partition: Partition
    broker_id: int | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None  # replication-offset-checkpoint, clamped as the broker loads it
    epochs: list[EpochEntry]
    epoch_source: EpochSource
    topic_id: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1].epoch if self.epochs else UNDEFINED_EPOCH

    @property
    def path(self) -> Path:
        return self.partition.directory


@dataclass(frozen=True)
class ReplicaRecord:
    """A record beyond the divergence point."""

    offset: int
    timestamp: int
    key: bytes | None
    producer_id: int
    producer_epoch: int
    partition_leader_epoch: int
    transaction: TransactionState
    control: str | None = None  # COMMIT / ABORT / ... for a control record

    def to_dict(self) -> dict:
        out = {
            "offset": self.offset,
            "timestamp": self.timestamp,
            "key": _text(self.key),
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "partition_leader_epoch": self.partition_leader_epoch,
            "transaction": self.transaction.value,
        }
        if self.key is not None and _text(self.key) is None:
            out["key_hex"] = self.key.hex()
        if self.control is not None:
            out["control"] = self.control
        return out


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class Step:
    """One OffsetsForLeaderEpoch round: what the follower asked, what the leader answered, where
    the follower truncates (and whether it asks again)."""

    requested_epoch: int
    leader_epoch: int
    leader_end_offset: int
    truncate_to: int
    done: bool
    why: str

    def to_dict(self) -> dict:
        return {
            "requested_epoch": self.requested_epoch,
            "leader_epoch": self.leader_epoch,
            "leader_end_offset": self.leader_end_offset,
            "truncate_to": self.truncate_to,
            "done": self.done,
            "why": self.why,
        }


@dataclass
class FollowerResult:
    """What happens to one follower against the leader."""

    follower: Replica
    method: Method
    truncate_to: int  # the follower's log end offset after truncation
    divergence_offset: int | None  # None: agrees with the leader up to the shorter log's end
    steps: list[Step] = field(default_factory=list)
    truncated: list[ReplicaRecord] = field(default_factory=list)  # the follower's, from truncate_to
    truncated_count: int = 0
    below_high_watermark: int = 0  # truncated records below the follower's high watermark

    @property
    def diverged(self) -> bool:
        return self.divergence_offset is not None


@dataclass
class Comparison:
    topic_partition: TopicPartition
    replicas: list[Replica]
    leader: Replica
    leader_reason: str
    followers: list[FollowerResult]
    leader_records: list[ReplicaRecord]  # the leader's, from the lowest divergence point
    leader_records_from: int | None
    leader_records_count: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return not any(f.diverged for f in self.followers)

    @property
    def method(self) -> Method:
        return (
            Method.RECORDS
            if any(f.method is Method.RECORDS for f in self.followers)
            else Method.LEADER_EPOCH
        )

    def to_dict(self) -> dict:
        tp = self.topic_partition
        by_replica = {id(f.follower): f for f in self.followers}
        replicas = []
        for r in self.replicas:
            out: dict[str, Any] = {
                "label": r.label,
                "path": str(r.path),
                "broker_id": r.broker_id,
                "topic_id": r.topic_id,
                "role": "leader" if r is self.leader else "follower",
                "log_start_offset": r.log_start_offset,
                "log_end_offset": r.log_end_offset,
                "high_watermark": r.high_watermark,
                "leader_epochs": [[e.epoch, e.start_offset] for e in r.epochs],
                "leader_epochs_source": r.epoch_source.value,
                "notes": r.notes,
            }
            f = by_replica.get(id(r))
            if f is not None:
                out.update(
                    method=f.method.value,
                    diverged=f.diverged,
                    divergence_offset=f.divergence_offset,
                    truncate_to=f.truncate_to,
                    truncated_records=f.truncated_count,
                    truncated_below_high_watermark=f.below_high_watermark,
                    steps=[s.to_dict() for s in f.steps],
                    records=[x.to_dict() for x in f.truncated],
                )
            else:
                out.update(
                    records_from=self.leader_records_from,
                    records_count=self.leader_records_count,
                    records=[x.to_dict() for x in self.leader_records],
                )
            replicas.append(out)
        return {
            "topic": tp.topic,
            "partition": tp.partition,
            "agree": self.agree,
            "method": self.method.value,
            "leader": self.leader.label,
            "leader_reason": self.leader_reason,
            "notes": self.notes,
            "replicas": replicas,
        }


# ------------------------------------------------------------------ LeaderEpochFileCache
def end_offset_for(
    epochs: list[EpochEntry], requested: int, log_end_offset: int
) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor (3.3.1): (epoch, end offset) the cache answers for
    `requested`; (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) when it cannot."""
    if requested == UNDEFINED_EPOCH or not epochs:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if epochs[-1].epoch == requested:
        return requested, log_end_offset
    higher = next((e for e in epochs if e.epoch > requested), None)
    if higher is None:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    floor = None
    for e in epochs:
        if e.epoch <= requested:
            floor = e
    if floor is None:
        return requested, higher.start_offset
    return floor.epoch, higher.start_offset


def follower_truncation(
    leader: Replica, follower: Replica, max_rounds: int = 1000
) -> tuple[int, list[Step]]:
    """Where the follower's log ends after the fetcher's truncation against `leader`
    (AbstractFetcherThread.getOffsetTruncationState, repeated while it is not complete, the
    follower's epoch cache truncated from the end at each intermediate offset)."""
    epochs, leo = list(follower.epochs), follower.log_end_offset
    hw = (
        follower.high_watermark
        if follower.high_watermark is not None
        else follower.log_start_offset
    )
    steps: list[Step] = []
    for _ in range(max_rounds):
        requested = epochs[-1].epoch if epochs else UNDEFINED_EPOCH
        l_epoch, l_end = end_offset_for(leader.epochs, requested, leader.log_end_offset)
        if l_end == UNDEFINED_EPOCH_OFFSET:
            to = min(hw, leo)
            steps.append(
                Step(
                    requested,
                    l_epoch,
                    l_end,
                    to,
                    True,
                    "the leader knows no end offset for this epoch: truncate to the follower's "
                    "high watermark (the initial fetch offset)",
                )
            )
            return to, steps
        f_epoch, f_end = end_offset_for(epochs, l_epoch, leo)
        if f_end == UNDEFINED_EPOCH_OFFSET:
            to = min(l_end, leo)
            steps.append(
                Step(
                    requested,
                    l_epoch,
                    l_end,
                    to,
                    True,
                    "the leader's epoch is below every epoch of the follower: truncate to the "
                    "leader's end offset",
                )
            )
            return to, steps
        if f_epoch != l_epoch:
            to = min(f_end, leo)
            steps.append(
                Step(
                    requested,
                    l_epoch,
                    l_end,
                    to,
                    False,
                    f"the follower does not know epoch {l_epoch}: truncate to its end offset of epoch "
                    f"{f_epoch} and ask again",
                )
            )
            epochs, leo = truncate_from_end(epochs, to), to
            continue
        to = min(f_end, l_end, leo)
        steps.append(
            Step(
                requested,
                l_epoch,
                l_end,
                to,
                True,
                f"both know epoch {l_epoch}: truncate to the smaller end offset of it",
            )
        )
        return to, steps
    raise RuntimeError("the truncation did not converge")  # each round drops an epoch: unreachable


# ------------------------------------------------------------------ replicas
def open_replica(
    path: Path, topic: str | None = None, partition: int | None = None, scratch: Path | None = None
) -> Replica:
    """A partition dir, or a log dir with `topic` and `partition` naming the partition in it; or
    an archive of either (tar, zip), unpacked into `scratch` (a dir outside every log dir)."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path=str(path))
    if path.is_file() and path.name.endswith(ARCHIVE_SUFFIXES):
        if scratch is None:
            raise UsageError(f"{path} is an archive: unpacking it needs a scratch dir")
        replica = open_replica(unpack_archive(path, scratch), topic, partition)
        if replica.broker_id is None:
            replica.label = str(path)
        return replica
    if not path.is_dir():
        raise InputError(
            "not a directory (give a partition dir, or a log dir with --topic and --partition)",
            path=str(path),
        )
    parsed = parse_partition_dir_name(path.name)
    if parsed is None or is_log_dir(path):
        if topic is None or partition is None:
            raise UsageError(
                f"{path} is not a partition dir: give --topic and --partition to choose the "
                f"partition in it"
            )
        tp = TopicPartition(topic, partition)
        candidates = [
            d
            for d, pd in LogDir(path).listing().dirs
            if pd.topic_partition == tp and pd.kind.loaded
        ]
        if not candidates:
            raise InputError(f"no partition dir of {tp} in this log dir", path=str(path))
        path = candidates[0]  # the live one sorts before a future one
        parsed = parse_partition_dir_name(path.name)
        assert parsed is not None  # a partition dir of the listing
    elif (topic is not None and topic != parsed.topic_partition.topic) or (
        partition is not None and partition != parsed.topic_partition.partition
    ):
        raise UsageError(
            f"{path} is a partition dir of {parsed.topic_partition}, not of the --topic/--partition given"
        )
    log_dir = LogDir(path.parent)
    roots = log_dir.checkpoints(strict=False)
    part = Partition.open(path, roots.for_partition(parsed.topic_partition), parsed.topic_partition)
    if not part.segments:
        raise InputError("no segment (.log) in this partition dir", path=str(path))
    broker = log_dir_node_id(path.parent)
    lso, leo = part.log_start_offset, part.log_end_offset
    assert lso is not None and leo is not None  # None only without segments (above)
    notes: list[str] = []
    epochs, source = loaded_epochs(part, lso, leo, notes)
    return Replica(
        label=f"broker {broker}" if broker is not None else str(path),
        partition=part,
        broker_id=broker,
        log_start_offset=lso,
        log_end_offset=leo,
        high_watermark=checkpointed_high_watermark(part),
        epochs=epochs,
        epoch_source=source,
        topic_id=_topic_id(path),
        notes=notes,
    )


def _topic_id(path: Path) -> str | None:
    f = path / names.PARTITION_METADATA
    raw = files.read_bytes_if_exists(f)
    if raw is None:
        return None
    return parse_partition_metadata(raw, path=str(f)).topic_id


def loaded_epochs(
    part: Partition, lso: int, leo: int, notes: list[str]
) -> tuple[list[EpochEntry], EpochSource]:
    """The epoch cache the broker loads: the checkpoint's entries assigned in order (a damaged file
    is an error: the broker would not load the partition), truncated from the end at the log end
    offset and from the start at the log start offset; without the file, the batches' epochs."""
    f = part.path(names.LEADER_EPOCH_CHECKPOINT)
    raw = files.read_bytes_if_exists(f)
    if raw is not None:
        try:
            cache = load_leader_epoch_cache(parse_leader_epoch_checkpoint(raw, path=str(f)))
        except ValueError as e:
            raise CheckpointError(str(e), path=str(f), position=0) from None
        source = EpochSource.CHECKPOINT
    else:
        cache = []
        for seg in part.segments:
            for b in seg.batches():
                ple = b.partition_leader_epoch
                if ple >= 0 and (not cache or ple > cache[-1].epoch):
                    cache.append(EpochEntry(ple, b.base_offset))
        source = EpochSource.BATCHES if cache else EpochSource.NONE
        notes.append(
            "no leader-epoch-checkpoint: "
            + (
                "the epochs of the batches' headers are taken, as the broker's recovery assigns them"
                if cache
                else "and no batch carries a partition leader epoch (message format v0/v1)"
            )
        )
    cache = truncate_from_start(truncate_from_end(cache, leo), lso)
    if raw is not None and not cache and leo > lso:
        notes.append("leader-epoch-checkpoint has no entry for the records present")
        source = EpochSource.NONE
    return cache, source


# ------------------------------------------------------------------ records
def records_from(
    part: Partition, start: int, limit: int | None, below: int | None = None
) -> tuple[list[ReplicaRecord], int, int]:
    """The records at and above `start` (at most `limit` of them listed), with each transactional
    record's fate in this replica: (records, how many there are in all, how many of them are
    below `below`)."""
    if start >= (part.log_end_offset or 0):
        return [], 0, 0
    batches = [b for _, b in part.batches(from_offset=start)]
    # the first marker of each producer after an offset decides its transaction's fate
    markers: list[tuple[int, int, str]] = []
    for b in batches:
        if b.is_control and b.is_transactional:
            t = b.control_type()
            if t is not None and t.is_transaction_marker:
                markers.append((b.base_offset, b.producer_id, t.name))
    out: list[ReplicaRecord] = []
    count = under = 0
    for b in batches:
        ctrl = b.control_type() if b.is_control else None
        if b.is_control:
            state = TransactionState.MARKER
        elif b.is_transactional:
            fate = next(
                (
                    kind
                    for off, pid, kind in markers
                    if off > b.last_offset and pid == b.producer_id
                ),
                None,
            )
            state = {
                None: TransactionState.OPEN,
                ControlRecordType.COMMIT.name: TransactionState.COMMITTED,
                ControlRecordType.ABORT.name: TransactionState.ABORTED,
            }.get(fate, TransactionState.OPEN)
        else:
            state = TransactionState.NONE
        for r in b.records():
            if r.offset < start:
                continue
            count += 1
            under += below is not None and r.offset < below
            if limit is None or len(out) < limit:
                out.append(
                    ReplicaRecord(
                        r.offset,
                        r.timestamp,
                        r.key,
                        b.producer_id,
                        b.producer_epoch,
                        b.partition_leader_epoch,
                        state,
                        ctrl.name if ctrl is not None else None,
                    )
                )
    return out, count, under


def _record_identity(part: Partition, start: int, end: int):
    """(offset, what makes the record itself) for every record in [start, end)."""
    for _, b in part.batches(from_offset=start, to_offset=end - 1):
        for r in b.records():
            if start <= r.offset < end:
                yield (
                    r.offset,
                    (
                        r.timestamp,
                        r.key,
                        r.value,
                        tuple((h.key, h.value) for h in r.headers),
                        b.producer_id,
                        b.producer_epoch,
                        b.is_transactional,
                        b.is_control,
                    ),
                )


def first_difference(a: Replica, b: Replica) -> int | None:
    """Record by record, from the larger log start offset to the smaller log end offset: the first
    offset where the two differ (a record on one side only, or another record), or None."""
    start = max(a.log_start_offset, b.log_start_offset)
    end = min(a.log_end_offset, b.log_end_offset)
    if start >= end:
        return None
    ia, ib = _record_identity(a.partition, start, end), _record_identity(b.partition, start, end)
    sentinel = (end, None)
    while True:
        x, y = next(ia, sentinel), next(ib, sentinel)
        if x[0] >= end and y[0] >= end:
            return None
        if x != y:
            return min(x[0], y[0])


# ------------------------------------------------------------------ compare
def choose_leader(replicas: list[Replica], leader: str | None) -> tuple[Replica, str]:
    """`leader` (a label or path given, or the position 1.. of a replica); by default the replica
    with the highest latest leader epoch (the one the controller made leader last), then the
    longest log, then the first given."""
    if leader is not None:
        for i, r in enumerate(replicas, 1):
            if leader in (r.label, str(r.path), str(i)) or (
                r.broker_id is not None and leader == str(r.broker_id)
            ):
                return r, "chosen with --leader"
        raise UsageError(
            f"--leader {leader}: no replica is called that (give a broker id, a path given or 1.."
            f"{len(replicas)})"
        )
    best = max(replicas, key=lambda r: (r.latest_epoch, r.log_end_offset, -replicas.index(r)))
    if best.latest_epoch >= 0:
        return best, f"the highest leader epoch ({best.latest_epoch})"
    return best, "the longest log (no leader epochs)"


def compare(
    replicas: list[Replica], leader: str | None = None, limit: int | None = None
) -> Comparison:
    if len(replicas) < 2:
        raise UsageError("give at least two copies of the partition")
    tps = {r.partition.topic_partition for r in replicas}
    if len(tps) != 1:
        raise UsageError(
            "these are not copies of one partition: " + ", ".join(sorted(str(t) for t in tps))
        )
    ids = {r.topic_id for r in replicas if r.topic_id is not None}
    if len(ids) > 1:
        raise UsageError(
            "these are copies of different topics of the same name (partition.metadata topic ids "
            + ", ".join(sorted(ids))
            + "): the topic was deleted and created again"
        )
    labels = [r.label for r in replicas]
    for r in replicas:
        if labels.count(r.label) > 1:
            r.label = str(r.path)
    seen: dict[str, int] = {}
    for r in replicas:  # the same path twice: still two names
        seen[r.label] = seen.get(r.label, 0) + 1
        if seen[r.label] > 1:
            r.label = f"{r.label} (#{seen[r.label]})"
    chosen, reason = choose_leader(replicas, leader)
    notes: list[str] = []
    followers = []
    for r in replicas:
        if r is chosen:
            continue
        if chosen.epoch_source is EpochSource.NONE or r.epoch_source is EpochSource.NONE:
            first = first_difference(chosen, r)
            to = min(r.log_end_offset, chosen.log_end_offset) if first is None else first
            result = FollowerResult(r, Method.RECORDS, to, first)
            notes.append(
                f"{r.label}: compared record by record "
                f"({'the leader' if chosen.epoch_source is EpochSource.NONE else 'it'} "
                f"has no leader epochs): the broker itself would truncate to the high watermark"
            )
        else:
            to, steps = follower_truncation(chosen, r)
            # where the two histories part: found by the fetcher when the replica with the later
            # epoch leads (a stale leader, chosen with --leader, makes the follower truncate to its
            # high watermark instead, which may keep records past that point)
            point = (
                to if chosen.latest_epoch >= r.latest_epoch else follower_truncation(r, chosen)[0]
            )
            shorter = min(r.log_end_offset, chosen.log_end_offset)
            result = FollowerResult(
                r, Method.LEADER_EPOCH, to, point if point < shorter else None, steps
            )
            if result.diverged and point != to:
                notes.append(
                    f"{r.label} has a later leader epoch ({r.latest_epoch}) than the leader chosen "
                    f"({chosen.latest_epoch}): the leader cannot answer for it, so a follower truncates "
                    f"to its high watermark {to}; the histories part at offset {point}"
                )
        result.truncated, result.truncated_count, result.below_high_watermark = records_from(
            r.partition, result.truncate_to, limit, r.high_watermark
        )
        followers.append(result)
    points = [f.divergence_offset for f in followers if f.divergence_offset is not None]
    start = min(points) if points else None
    lead, count, _ = (
        records_from(chosen.partition, start, limit) if start is not None else ([], 0, 0)
    )
    tp = next(iter(tps))
    assert tp is not None  # open_replica opens partition dirs by their parsed name
    return Comparison(tp, replicas, chosen, reason, followers, lead, start, count, notes)
