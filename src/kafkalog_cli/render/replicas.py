"""compare-replicas for people: the replicas, the divergence point as the fetcher finds it, and
the records beyond it. Formats values only (ops/compare_replicas.py computes them)."""

from __future__ import annotations

import datetime as _dt

from kafkalog_cli.errors import one_line
from kafkalog_cli.ops.compare_replicas import (
    Comparison,
    FollowerResult,
    Replica,
    ReplicaRecord,
    TransactionState,
)


def _epochs(r: Replica) -> str:
    if not r.epochs:
        return "none"
    return " ".join(f"{e.epoch}@{e.start_offset}" for e in r.epochs)


def _time(ms: int) -> str:
    if ms < 0:
        return str(ms)
    try:
        return (
            _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%S.%f"
            )[:-3]
            + "Z"
        )
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _key(k: bytes | None) -> str:
    if k is None:
        return "null"
    try:
        return '"' + one_line(k.decode("utf-8")).replace('"', '\\"') + '"'
    except UnicodeDecodeError:
        return "0x" + k.hex()


def record_line(x: ReplicaRecord) -> str:
    if x.transaction is TransactionState.MARKER:
        what = f"control {x.control or 'record'}"
    elif x.transaction is TransactionState.NONE:
        what = "not transactional"
    else:
        what = f"transactional, {x.transaction.value}"
    producer = (
        "no producer id"
        if x.producer_id < 0
        else f"producer {x.producer_id} epoch {x.producer_epoch}"
    )
    return (
        f"    offset {x.offset}  {_time(x.timestamp)}  key {_key(x.key)}  {producer}  "
        f"leader epoch {x.partition_leader_epoch}  {what}"
    )


def _records(title: str, records: list[ReplicaRecord], count: int) -> list[str]:
    if not count:
        return []
    lines = [title]
    lines += [record_line(x) for x in records]
    if count > len(records):
        lines.append(f"    ... {count - len(records)} more (--limit)")
    return lines


def _follower(f: FollowerResult, leader: Replica) -> list[str]:
    r = f.follower
    lines = []
    if f.diverged:
        lines.append(f"{r.label} diverges from {leader.label} at offset {f.divergence_offset}")
    else:
        lines.append(
            f"{r.label} agrees with {leader.label} up to offset "
            f"{min(r.log_end_offset, leader.log_end_offset)} (the shorter log's end)"
        )
    for s in f.steps:
        lines.append(
            f"  OffsetsForLeaderEpoch: epoch {s.requested_epoch} -> leader answers epoch {s.leader_epoch}, "
            f"end offset {s.leader_end_offset}: {s.why}: truncate to {s.truncate_to}"
        )
    if f.truncated_count:
        hw = (
            ""
            if not f.below_high_watermark
            else f"; {f.below_high_watermark} of them below its high watermark {r.high_watermark}"
        )
        lines.append(
            f"  a follower truncates {r.label} to offset {f.truncate_to}: {f.truncated_count} records "
            f"removed (offsets {f.truncate_to}..{r.log_end_offset - 1}){hw}"
        )
    else:
        lines.append(
            f"  a follower truncates nothing of {r.label} (log end offset {r.log_end_offset})"
        )
    lines += _records(
        f"  records of {r.label} from offset {f.truncate_to} (truncated):",
        f.truncated,
        f.truncated_count,
    )
    return lines


def comparison(c: Comparison) -> str:
    tp = c.topic_partition
    lines = [
        f"partition {tp}: {len(c.replicas)} replicas; leader {c.leader.label} ({c.leader_reason}); "
        f"compared by {'leader epochs' if c.method.value == 'leader-epoch' else 'records'}"
    ]
    for r in c.replicas:
        hw = "none" if r.high_watermark is None else r.high_watermark
        role = "  (leader)" if r is c.leader else ""
        where = "" if r.label == str(r.path) else f": {one_line(str(r.path))}"
        lines.append(f"  {one_line(r.label)}{where}{role}")
        lines.append(
            f"    log start {r.log_start_offset}, log end {r.log_end_offset}, high watermark {hw}, "
            f"leader epochs ({r.epoch_source.value}) {_epochs(r)}"
        )
        lines += [f"    note: {n}" for n in r.notes]
    lines += [f"note: {n}" for n in c.notes]
    for f in c.followers:
        lines += _follower(f, c.leader)
    if c.leader_records_from is not None:
        lines += _records(
            f"records of {c.leader.label} from offset {c.leader_records_from} (kept; the followers "
            f"fetch them):",
            c.leader_records,
            c.leader_records_count,
        )
    lines.append(
        "the replicas agree up to the shortest one's end" if c.agree else "the replicas diverge"
    )
    return "\n".join(lines)
