"""Acceptance with a real Kafka KRaft cluster (3.3.1, 3.9.0-rc3) on 127.0.0.1 (a controller and
two brokers, each its own process): two replicas diverged by an unclean leader election, compared
offline, give the records the broker itself then truncates.

1. topic `t`, one partition on brokers 1 and 2 (leader 1), unclean.leader.election.enable=true;
   A records with acks=all: both have them;
2. broker 2 stops: the ISR is {1}; X records to broker 1 only; broker 1 stops (no leader left);
3. broker 2 starts: not in the ISR, it is elected uncleanly in a new leader epoch (by a 3.9
   controller itself; 3.3.1's ignores unclean.leader.election.enable, so kafka-leader-election
   --election-type unclean) and takes Y records; it stops;
4. the two log dirs are copied and compared: broker 1's X records are the ones it would lose;
5. broker 2 then broker 1 start: broker 1, now a follower, truncates and fetches Y. Its log
   afterwards has none of the records we listed and every one of broker 2's, and the offset it
   truncated to (its server.log) is the one compare-replicas gave.

Skipped without KAFKA_HOME and KAFKA_PY (the kafka-python client)."""

from __future__ import annotations

import json
import re
import shutil

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.kraft_cluster import Cluster, kafka_version, needs_cluster

pytestmark = needs_cluster


def keys_by_offset(partition_dir) -> dict[int, str]:
    r = CliRunner().invoke(
        cli,
        [
            "dump-log",
            str(partition_dir),
            "--format",
            "json",
            "--deep-iteration",
            "--print-data-log",
        ],
    )
    assert r.exit_code == 0, r.output
    return {
        x["offset"]: x["key"]
        for x in map(json.loads, r.output.splitlines())
        if x["kind"] == "record" and not x["is_control"]
    }


def test_unclean_election_divergence_is_what_the_broker_truncates(tmp_path):
    print("Kafka", kafka_version())
    c = Cluster(
        tmp_path / "cluster",
        brokers=2,
        broker_config={"unclean.leader.election.enable": "true", "replica.lag.time.max.ms": "5000"},
    )
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
                    {
                        "name": "t",
                        "assignment": {"0": [1, 2]},
                        "configs": {"unclean.leader.election.enable": "true"},
                    }
                ],
            },
        )
        c.wait_for(1, "t", 0, lambda s: s["leader"] == 1 and s["isr"] == [1, 2])
        a = c.client(
            1,
            {
                "op": "produce",
                "topic": "t",
                "partition": 0,
                "acks": "all",
                "keys": [f"a{i}" for i in range(20)],
            },
        )["offsets"]
        c.stop(b2)
        c.wait_for(1, "t", 0, lambda s: s["isr"] == [1])
        x = c.client(
            1,
            {
                "op": "produce",
                "topic": "t",
                "partition": 0,
                "acks": 1,
                "keys": [f"x{i}" for i in range(7)],
            },
        )["offsets"]
        c.stop(b1)
        c.start(b2)
        elected = c.elect_unclean(2, "t", 0)
        state = c.wait_for(2, "t", 0, lambda s: s["leader"] == 2)
        y = c.client(
            2,
            {
                "op": "produce",
                "topic": "t",
                "partition": 0,
                "acks": 1,
                "keys": [f"y{i}" for i in range(5)],
            },
        )["offsets"]
        c.stop(b2)
        assert (a[-1], x, y) == (19, list(range(20, 27)), list(range(20, 25))), (state, elected)
        # 4. the replicas as the brokers left them, compared offline
        r1, r2 = tmp_path / "copies" / "b1", tmp_path / "copies" / "b2"
        shutil.copytree(b1.log_dirs[0], r1)
        shutil.copytree(b2.log_dirs[0], r2)
        res = CliRunner().invoke(
            cli,
            [
                "compare-replicas",
                str(r1),
                str(r2),
                "--topic",
                "t",
                "--partition",
                "0",
                "--format",
                "json",
            ],
        )
        assert res.exit_code == 1, res.output
        doc = json.loads(res.output)
        assert doc["leader"] == "broker 2" and doc["method"] == "leader-epoch"
        f = next(r for r in doc["replicas"] if r["label"] == "broker 1")
        assert (f["divergence_offset"], f["truncate_to"], f["truncated_records"]) == (20, 20, 7)
        assert [r["key"] for r in f["records"]] == [f"x{i}" for i in range(7)]
        lead = next(r for r in doc["replicas"] if r["label"] == "broker 2")
        assert [r["key"] for r in lead["records"]] == [f"y{i}" for i in range(5)]
        # 5. what the broker does: broker 1 follows broker 2 and truncates
        c.start(b2)
        c.wait_for(2, "t", 0, lambda s: s["leader"] == 2)
        c.start(b1)
        c.wait_for(2, "t", 0, lambda s: s["isr"] == [1, 2])
        truncations = re.findall(r"Truncating to offset (\d+)", b1.log())
        c.stop(b1)
        c.stop(b2)
        assert truncations and int(truncations[-1]) == f["truncate_to"], truncations
        after = keys_by_offset(b1.log_dirs[0] / "t-0")
        assert after == keys_by_offset(b2.log_dirs[0] / "t-0")
        assert not {r["key"] for r in f["records"]} & set(after.values())
        assert [after[o] for o in range(20, 25)] == [f"y{i}" for i in range(5)]
    finally:
        c.stop_all()
