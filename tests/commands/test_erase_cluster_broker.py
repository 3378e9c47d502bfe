"""Acceptance with a real Kafka 3.3.1 KRaft cluster on 127.0.0.1 (a controller and two brokers):
`erase` given both brokers' log dirs erases every copy of the partition, and the replicas stay a
cluster's replicas.

1. topics `t` (lz4, headers) and `tx` (transactions, committed and aborted), one partition each
   on brokers 1 and 2 (leader 1), small segments; acks=all: both copies hold every record;
2. every node stops; `erase` with both log dirs erases the key from both copies (a report line
   per copy) and compare-replicas says the copies agree;
3. the cluster starts: broker 2 rejoins the ISR; a new produce to the leader is replicated (the
   ISR stays full); consumers on broker 1 and then, broker 1 stopped, on broker 2 as leader read
   every other record unchanged and none of the erased; once stopped, the copies agree again.

Skipped without KAFKA_HOME and KAFKA_PY (the kafka-python client)."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.erase_records import CLIENT, VICTIM, expected, groups, rows
from tests.helpers.kraft_cluster import KAFKA_PY, Cluster, needs_cluster

pytestmark = [needs_cluster, pytest.mark.slow]

TOPICS = ("t", "tx")


def client(c: Cluster, broker: int, request: dict) -> dict:
    done = subprocess.run(
        [KAFKA_PY, "-c", CLIENT, f"127.0.0.1:{c.brokers[broker].port}", json.dumps(request)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def agree(c: Cluster, topic: str) -> None:
    dirs = [str(b.log_dirs[0] / f"{topic}-0") for b in c.brokers.values()]
    r = CliRunner().invoke(cli, ["compare-replicas", *dirs, "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["agree"] is True, r.output


def test_erased_replicas_stay_in_sync(tmp_path):
    c = Cluster(tmp_path / "cluster", brokers=2, broker_config={"replica.lag.time.max.ms": "5000"})
    b1, b2 = c.brokers[1], c.brokers[2]
    cfg = {"segment.bytes": "2048", "min.insync.replicas": "2"}
    txn = rows("tx", 60, {4, 15, 33, 52})
    jobs = [
        {"topic": "t", "codec": "lz4", "groups": groups(rows("t", 150, {7, 8, 70, 149}), 10)},
        {
            "topic": "tx",
            "codec": "gzip",
            "txn": "erase-cluster",
            "groups": [
                {"rows": txn[i : i + 10], "commit": i // 10 % 2 == 0} for i in range(0, 60, 10)
            ],
        },
    ]
    more = {"topic": "t", "groups": groups(rows("t", 20, set(), 200), 5)}
    try:
        for node in c.nodes:
            c.start(node)
        c.client(
            1,
            {
                "op": "create",
                "topics": [
                    {"name": t, "assignment": {"0": [1, 2]}, "configs": cfg} for t in TOPICS
                ],
            },
        )
        for t in TOPICS:
            c.wait_for(1, t, 0, lambda s: s["leader"] == 1 and s["isr"] == [1, 2])
        client(c, 1, {"op": "produce", "jobs": jobs})
        before = client(c, 1, {"op": "consume", "topics": list(TOPICS)})
        c.stop_all()

        for t in TOPICS:
            assert len(list((b2.log_dirs[0] / f"{t}-0").glob("*.log"))) >= 2
            r = CliRunner().invoke(
                cli,
                [
                    "erase",
                    str(b1.log_dirs[0]),
                    str(b2.log_dirs[0]),
                    "--topic",
                    t,
                    "--key",
                    VICTIM,
                    "--format",
                    "json",
                ],
            )
            assert r.exit_code == 0, r.output
            lines = [x for x in map(json.loads, r.output.splitlines()) if x["kind"] == "partition"]
            assert sorted(x["log_dir"] for x in lines) == sorted(
                str(b.log_dirs[0]) for b in (b1, b2)
            )
            assert all(x["status"] == "erased" for x in lines), lines
            agree(c, t)

        for node in c.nodes:
            c.start(node)
        # the leader need not be broker 1 again (no preferred-leader rebalance here)
        leader = c.wait_for(1, "t", 0, lambda s: s["isr"] == [1, 2])["leader"]
        c.wait_for(1, "tx", 0, lambda s: s["isr"] == [1, 2])
        client(c, 1, {"op": "produce", "jobs": [more]})
        c.wait_for(1, "t", 0, lambda s: s["isr"] == [1, 2])
        from_leader = client(c, leader, {"op": "consume", "topics": list(TOPICS)})
        # then the other copy serves: t's leader stops
        other = 3 - leader
        c.stop(c.brokers[leader])
        for t in TOPICS:
            c.wait_for(other, t, 0, lambda s: s["leader"] == other)
        from_follower = client(c, other, {"op": "consume", "topics": list(TOPICS)})
        logs = {n: b.log() for n, b in c.brokers.items()}
        c.stop_all()
        for t in TOPICS:
            agree(c, t)
    finally:
        c.stop_all()

    victim = VICTIM.encode().hex()
    end = before["t"]["read_uncommitted"]["end"]
    for t in TOPICS:
        for iso in ("read_uncommitted", "read_committed"):
            was = before[t][iso]["records"]
            gone = {r[0] for r in was if r[3] == victim}
            assert gone, (t, iso)
            want = expected(was, gone, tombstone=False)
            for got in (from_leader, from_follower):
                records = got[t][iso]["records"]
                if t == "t":
                    new = [r[0] for r in records if r[0] >= end]
                    assert new == list(range(end, end + 20)), new
                    records = [r for r in records if r[0] < end]
                assert records == want, (t, iso)
    for n, text in logs.items():
        assert " ERROR " not in text and "Corrupt" not in text, n
