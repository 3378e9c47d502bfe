"""What the erase broker tests (tests/commands/test_erase_broker.py, test_erase_cluster_broker.py)
produce and expect: records with a victim key, the kafka-python script that creates topics,
produces (codecs, transactions committed, aborted or left open) and consumes (both isolation
levels, every field, ListOffsets by timestamp; test_repair_broker.py's consumer too), and what a
consumer must read after an erase."""

from __future__ import annotations

import hashlib

VICTIM = "victim"
T0 = 1_760_000_000_000

CLIENT = r"""
import json, os, sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
server, req = sys.argv[1], json.loads(sys.argv[2])

def send(p, topic, row):
    key, value, headers, ts = row
    return p.send(topic, key=None if key is None else key.encode(),
                  value=None if value is None else value.encode(),
                  headers=[(h, v.encode()) for h, v in headers], partition=0, timestamp_ms=ts)

if req["op"] == "create":
    admin = KafkaAdminClient(bootstrap_servers=server)
    admin.create_topics([NewTopic(t, 1, 1, topic_configs=c) for t, c in req["topics"].items()])
    admin.close()
    print(json.dumps({}))
elif req["op"] == "produce":
    for job in req["jobs"]:
        extra = {"transactional_id": job["txn"], "transaction_timeout_ms": 900000} if job.get("txn") else {}
        p = KafkaProducer(bootstrap_servers=server, acks="all", linger_ms=1000, batch_size=1 << 20,
                          compression_type=job.get("codec"), **extra)
        if job.get("txn"):
            p.init_transactions()
        ongoing = False
        for group in job["groups"]:
            if job.get("txn") and not ongoing:
                p.begin_transaction()
                ongoing = True
            futures = [send(p, job["topic"], row) for row in group["rows"]]
            p.flush()  # written before an abort: the aborted records are in the log
            for f in futures:
                f.get(timeout=60)
            if group["commit"] == "more":  # the transaction goes on with the next group
                continue
            if group["commit"] == "open":  # the process ends with the transaction ongoing
                print(json.dumps({}), flush=True)
                os._exit(0)
            if job.get("txn"):
                (p.commit_transaction if group["commit"] else p.abort_transaction)()
                ongoing = False
        p.close()
    print(json.dumps({}))
elif req["op"] == "consume":
    out = {}
    for topic in req["topics"]:
        out[topic] = {}
        for iso in ("read_uncommitted", "read_committed"):
            tp = TopicPartition(topic, 0)
            c = KafkaConsumer(bootstrap_servers=server, enable_auto_commit=False,
                              isolation_level=iso, fetch_max_wait_ms=100)
            c.assign([tp])
            end, start = c.end_offsets([tp])[tp], c.beginning_offsets([tp])[tp]
            c.seek_to_beginning(tp)
            rows, deadline = [], time.monotonic() + 60
            while c.position(tp) < end and time.monotonic() < deadline:
                for batch in c.poll(timeout_ms=500).values():
                    for m in batch:
                        rows.append([m.offset, m.timestamp, m.timestamp_type,
                                     None if m.key is None else m.key.hex(),
                                     None if m.value is None else m.value.hex(),
                                     [[h, None if v is None else v.hex()] for h, v in m.headers]])
            out[topic][iso] = {"start": start, "end": end, "position": c.position(tp), "records": rows}
            if iso == "read_uncommitted":  # ListOffsets by timestamp: the time index at work
                times = {r[1] for r in rows if r[1] is not None and r[1] >= 0}
                times |= {t + d for t in req.get("times", {}).get(topic, []) for d in (0, 1)}
                found = {}
                for t in sorted(times):
                    got = c.offsets_for_times({tp: t})[tp]
                    found[str(t)] = None if got is None else [got.offset, got.timestamp]
                out[topic]["times"] = found
            c.close()
    print(json.dumps(out))
"""


def rows(topic: str, n: int, victim_at: set[int], start: int = 0) -> list[list]:
    """[key, value, headers, timestamp] for records start..start+n-1: the victim key at
    `victim_at`, a header on every third, timestamps not in order within a batch."""
    out = []
    for i in range(start, start + n):
        key = VICTIM if i in victim_at else f"{topic}-k{i:03d}"
        headers = [["h", f"h{i}"]] if i % 3 == 0 else []
        noise = hashlib.sha256(f"{topic}{i}".encode()).hexdigest()  # compresses to half
        value = f"{topic}-v{i:03d}-" + noise[: 20 + i * 7 % 44]
        out.append([key, value, headers, T0 + i * 1000 - (i % 4) * 1500])
    return out


def groups(records: list[list], size: int) -> list[dict]:
    return [{"rows": records[i : i + size], "commit": True} for i in range(0, len(records), size)]


def erased(selection: list[str], records: list[list]) -> set[int]:
    """The offsets the selection matches among the records a consumer was served."""
    if selection[0] == "--offsets":
        a, _, b = selection[1].partition("-")
        return {r[0] for r in records if int(a) <= r[0] <= int(b or a)}
    key = selection[1].encode().hex()
    return {r[0] for r in records if r[3] == key}


def expected(records: list[list], gone: set[int], tombstone: bool) -> list[list]:
    """The records after the erase: the erased ones gone, or with --tombstone the key's last
    one kept as a tombstone (same offset, timestamp and key; null value, no headers)."""
    last = max(gone) if tombstone and gone else None
    return [
        [r[0], r[1], r[2], r[3], None, []] if r[0] == last else r
        for r in records
        if r[0] not in gone or r[0] == last
    ]


def first_at_or_after(records: list[list], t: int) -> list | None:
    """What ListOffsets answers for timestamp t: the earliest offset whose timestamp is t or
    later, with that timestamp."""
    hits = [r for r in records if r[1] is not None and r[1] >= t]
    return [hits[0][0], hits[0][1]] if hits else None
