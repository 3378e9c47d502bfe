"""The order of a producer snapshot's entries where two producer ids share a hash bucket, against a
real broker (config.versions.PRODUCER_SNAPSHOT_INSERTION_ORDER: Kafka 3.3/3.4 write a bucket sorted by
hash, 3.5+ in insertion order).

The broker allocates producer ids in sequence, so a partition meets its producers in ascending id
order unless one comes back: a transactional producer ("low", id a) writes first elsewhere, fifteen
idempotent producers take a+1..a+15, the sixteenth (a+16: bucket a & 15 of 16 too) appends to `order`,
then "low" appends there under its old id. The broker's clean shutdown snapshots `order-0` at its
log end; `kafkalog recover` on a copy without that snapshot and as after a crash replays the log
and writes it again; the two must be the
same bytes, and the entries a+16, a (3.5+) or a, a+16 (3.3)."""

from __future__ import annotations

from pathlib import Path

from tests.differential.broker import Broker, version_label
from tests.differential.cases import copy_dir
from tests.differential.generate import leo
from tests.differential.loadcheck import kafkalog, now_ms

FILLERS = 15  # producers between "low" and the one that shares its bucket (16 buckets)


def _one(topic: str, producer: dict, txn: str | None = None) -> dict:
    return {
        "topic": topic,
        "producer": producer,
        "batches": [{"records": [["k", "v", None, []]], "txn": txn}],
    }


def _snapshot_ids(path: Path) -> list[int]:
    from kafkalog_cli.formats.producer_state import parse_producer_snapshot

    return [e.producer_id for e in parse_producer_snapshot(path.read_bytes()).entries]


def _appended_ids(part: Path) -> list[int]:
    """The producer ids of the partition's batches, in the order they were appended (first time each)."""
    from kafkalog_cli.storage.partition import Partition

    out: list[int] = []
    for s in Partition.open(part).segments:
        with s.mapped() as buf:
            from kafkalog_cli.formats.records import iter_batches

            for b in iter_batches(buf):
                if b.producer_id >= 0 and b.producer_id not in out:
                    out.append(b.producer_id)
    return out


def producer_order_case(work: Path) -> dict:
    """One broker run as above, then `kafkalog recover` of the same dir; a JSON-ready dict."""
    data = work / "data"
    b = Broker(data, work / "broker")
    b.format()
    b.start()
    try:
        b.client({"op": "create", "topics": [{"name": "pad"}, {"name": "order"}]})
        low = {"transactional_id": "low", "enable_idempotence": True}
        b.client(
            {
                "op": "produce",
                "jobs": [_one("pad", low, "commit")]
                + [_one("pad", {"enable_idempotence": True}) for _ in range(FILLERS)]
                + [_one("order", {"enable_idempotence": True}), _one("order", low, "commit")],
            }
        )
    finally:
        run = b.stop()
    if not run.clean_stop:
        raise RuntimeError(f"the broker did not shut down cleanly: {run.log[-2000:]}")
    end = leo(data, "order-0")
    snap = data / "order-0" / f"{end:020d}.snapshot"
    ours = copy_dir(data, work / "kafkalog")
    (ours / "order-0" / snap.name).unlink()
    # after a crash (no clean-shutdown marker) the log is replayed; after a clean one a missing
    # snapshot is taken empty (UnifiedLog.rebuildProducerState, reloadFromCleanShutdown)
    (ours / ".kafka_cleanshutdown").unlink()
    r = kafkalog("recover", "--now", now_ms(), "--no-quarantine", ours)
    appended = _appended_ids(data / "order-0")
    out = {
        "kafka": version_label(),
        "appended": appended,
        "same_bucket": len(appended) == 2 and appended[0] & 15 == appended[1] & 15,
        "broker": _snapshot_ids(snap),
        "kafkalog_rc": r.rc,
        "kafkalog_stderr": r.stderr[-1000:],
    }
    mine = ours / "order-0" / snap.name
    out["kafkalog"] = _snapshot_ids(mine) if mine.exists() else None
    out["identical"] = mine.exists() and mine.read_bytes() == snap.read_bytes()
    return out
