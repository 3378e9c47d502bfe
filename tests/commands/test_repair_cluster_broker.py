"""Acceptance with a real Kafka KRaft cluster (3.3.1, 3.9.0-rc3) on 127.0.0.1 (a controller and
two brokers): a follower's copy with bit rot, repaired offline from the leader's copy, is a replica
the cluster takes back as it was.

1. topic `t`, one partition on brokers 1 and 2 (leader 1), small segments; 200 records with
   acks=all: both copies hold them, under one leader epoch;
2. every node stops; broker 2's copy gets one flipped byte in a closed segment and a zeroed range
   in another; `repair` from broker 1's copy restores both ranges, and compare-replicas says the
   copies agree;
3. the cluster starts: broker 2 rejoins the ISR; broker 1 stops, so broker 2 leads, and consumers
   read every record from it exactly as broker 1 served them (offset, timestamp and its type, key,
   value, headers; read_uncommitted and read_committed; ListOffsets by every record's timestamp).

Skipped without KAFKA_HOME and KAFKA_PY (the kafka-python client)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.erase_records import CLIENT
from tests.helpers.kraft_cluster import Cluster, needs_cluster
from tests.helpers.repair import batches, damage

pytestmark = needs_cluster

CONSUME = {"op": "consume", "topics": ["t"]}


def test_a_repaired_follower_rejoins_and_serves_every_record_as_the_leader_did(tmp_path):
    c = Cluster(tmp_path / "cluster", brokers=2, broker_config={"replica.lag.time.max.ms": "5000"})
    b1, b2 = c.brokers[1], c.brokers[2]
    try:
        c.start(c.controller)
        c.start(b1)
        c.start(b2)
        c.client(
            1,
            {
                "op": "create",
                "topics": [
                    {"name": "t", "assignment": {"0": [1, 2]}, "configs": {"segment.bytes": "4096"}}
                ],
            },
        )
        c.wait_for(1, "t", 0, lambda s: s["leader"] == 1 and s["isr"] == [1, 2])
        c.client(
            1,
            {
                "op": "produce",
                "topic": "t",
                "partition": 0,
                "acks": "all",
                "keys": [f"k{i:03d}" for i in range(200)],
            },
        )
        served = c.client(1, CONSUME, script=CLIENT)["t"]
        assert len(served["read_uncommitted"]["records"]) == 200
        c.stop(b2)
        c.stop(b1)
        c.stop(c.controller)

        follower = b2.log_dirs[0] / "t-0"
        logs = sorted(follower.glob("*.log"))
        assert len(logs) >= 3, logs
        damage(logs[0], "flip", batches(logs[0])[3])
        damage(logs[1], "zero", batches(logs[1])[2])
        r = CliRunner().invoke(
            cli, ["repair", str(follower), "--from", str(b1.log_dirs[0]), "--format", "json"]
        )
        assert r.exit_code == 0, r.output
        (summary,) = [x for x in map(json.loads, r.output.splitlines()) if x["kind"] == "partition"]
        assert (
            summary["status"] == "repaired"
            and len(summary["restored"]) == 2
            and summary["lost"] == []
        )
        cmp = CliRunner().invoke(
            cli,
            ["compare-replicas", str(b1.log_dirs[0] / "t-0"), str(follower), "--format", "json"],
        )
        assert cmp.exit_code == 0 and json.loads(cmp.output)["agree"] is True, cmp.output

        c.start(c.controller)
        c.start(b1)
        c.start(b2)
        c.wait_for(1, "t", 0, lambda s: s["isr"] == [1, 2])
        c.stop(b1)
        c.wait_for(2, "t", 0, lambda s: s["leader"] == 2)
        got = c.client(2, CONSUME, script=CLIENT)["t"]
        assert got == served
        for iso in ("read_uncommitted", "read_committed"):
            assert got[iso]["position"] >= got[iso]["end"] == 200, iso
        assert "Corrupt" not in b2.log() and " ERROR " not in b2.log()
    finally:
        c.stop_all()
