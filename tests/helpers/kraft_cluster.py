"""A small KRaft cluster of a real Kafka (KAFKA_HOME) on 127.0.0.1 for acceptance tests: one
controller-only node and brokers, each node a process of its own with its own free ports, work
dir and log dirs, started and stopped one by one by its PID (SIGTERM: a controlled shutdown),
never by kafka-server-stop.sh. A kafka-python script (KAFKA_PY) creates topics, produces and
describes. Skip with `needs_cluster` without them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.differential.broker import free_ports
from tests.helpers.kafka_dist import kafka_dist

KAFKA_HOME = os.environ.get("KAFKA_HOME", "")
KAFKA_PY = os.environ.get("KAFKA_PY", "")
STARTED = "Kafka Server started"

needs_cluster = pytest.mark.skipif(
    not (KAFKA_HOME and Path(KAFKA_HOME, "bin", "kafka-server-start.sh").exists() and KAFKA_PY),
    reason="needs KAFKA_HOME (a Kafka 3.x distribution) and KAFKA_PY (a Python with kafka-python)",
)


def kafka_version() -> str:
    libs = Path(KAFKA_HOME, "libs")
    jar = next(libs.glob("kafka-clients-*.jar"), None) if libs.is_dir() else None
    return jar.name[len("kafka-clients-") : -len(".jar")] if jar else "unknown"


CLIENT = r"""
import json, sys, time
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
server, request = sys.argv[1], json.loads(sys.argv[2])
op = request["op"]
if op == "create":
    admin = KafkaAdminClient(bootstrap_servers=server)
    admin.create_topics([NewTopic(t["name"], replica_assignments={int(k): v for k, v in t["assignment"].items()},
                                  topic_configs=t.get("configs", {}), num_partitions=-1, replication_factor=-1)
                         for t in request["topics"]])
    admin.close()
    print(json.dumps({}))
elif op == "describe":
    admin = KafkaAdminClient(bootstrap_servers=server)
    out = {}
    for t in admin.describe_topics([request["topic"]]):
        for p in t["partitions"]:
            out[str(p["partition_index"])] = {"leader": p["leader_id"], "isr": sorted(p["isr_nodes"]),
                                              "epoch": p.get("leader_epoch")}
    admin.close()
    print(json.dumps(out))
elif op == "consume":
    from kafka import KafkaConsumer, TopicPartition
    tp = TopicPartition(request["topic"], request["partition"])
    c = KafkaConsumer(bootstrap_servers=server, enable_auto_commit=False, consumer_timeout_ms=10000)
    c.assign([tp])
    end = c.end_offsets([tp])[tp]
    c.seek_to_beginning(tp)
    out = []
    for m in c:
        out.append([m.offset, m.key.decode() if m.key is not None else None,
                    m.value.decode() if m.value is not None else None])
        if m.offset >= end - 1:
            break
    c.close()
    print(json.dumps({"records": out, "end": end}))
elif op == "produce":
    p = KafkaProducer(bootstrap_servers=server, acks=request.get("acks", "all"), linger_ms=0, retries=20,
                      max_in_flight_requests_per_connection=1)
    offsets = []
    for key in request["keys"]:
        value = request.get("values", {}).get(key, key + "-value")
        f = p.send(request["topic"], key=key.encode(), value=value.encode(), partition=request["partition"])
        offsets.append(f.get(timeout=60).offset)
        p.flush()
    p.close()
    print(json.dumps({"offsets": offsets}))
"""


@dataclass
class Node:
    node_id: int
    roles: str  # "controller" or "broker"
    work: Path
    log_dirs: list[Path]
    port: int = 0
    config: dict = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    @property
    def server_log(self) -> Path:
        return self.work / "logs" / "server.log"

    def log(self) -> str:
        return self.server_log.read_text(errors="replace") if self.server_log.exists() else ""


class Cluster:
    """Node 100 is the controller; brokers are 1, 2, ... `broker_config` goes to every broker."""

    def __init__(
        self,
        root: Path,
        brokers: int = 2,
        broker_config: dict | None = None,
        log_dirs_per_broker: int = 1,
    ):
        self.root = root
        cport, *ports = free_ports(1 + brokers)
        self.voters = f"100@127.0.0.1:{cport}"
        self.controller = Node(
            100, "controller", root / "node-100", [root / "node-100" / "meta"], cport
        )
        self.brokers = {
            i + 1: Node(
                i + 1,
                "broker",
                root / f"node-{i + 1}",
                [root / f"node-{i + 1}" / f"data{j}" for j in range(log_dirs_per_broker)],
                ports[i],
                dict(broker_config or {}),
            )
            for i in range(brokers)
        }
        self.cluster_id = subprocess.run(
            [f"{KAFKA_HOME}/bin/kafka-storage.sh", "random-uuid"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for node in self.nodes:
            subprocess.run(
                [
                    f"{KAFKA_HOME}/bin/kafka-storage.sh",
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(self._write_config(node)),
                ],
                capture_output=True,
                check=True,
                env=self._env(node),
            )

    @property
    def nodes(self) -> list[Node]:
        return [self.controller, *self.brokers.values()]

    def _env(self, node: Node) -> dict:
        return {**os.environ, "LOG_DIR": str(node.work / "logs"), "KAFKA_HEAP_OPTS": "-Xmx384m"}

    def _write_config(self, node: Node) -> Path:
        node.work.mkdir(parents=True, exist_ok=True)
        common = {
            "node.id": str(node.node_id),
            "controller.quorum.voters": self.voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": ",".join(str(d) for d in node.log_dirs),
        }
        if node.roles == "controller":
            cfg = {
                "process.roles": "controller",
                "listeners": f"CONTROLLER://127.0.0.1:{node.port}",
                **common,
            }
        else:
            cfg = {
                "process.roles": "broker",
                "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                "inter.broker.listener.name": "PLAINTEXT",
                **common,
                "offsets.topic.replication.factor": "1",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "num.partitions": "1",
                "auto.leader.rebalance.enable": "false",
                "log.retention.hours": "-1",
                "group.initial.rebalance.delay.ms": "0",
                **node.config,
            }
        path = node.work / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in cfg.items()))
        return path

    def start(self, node: Node, timeout: float = 180) -> None:
        props = self._write_config(node)
        if node.server_log.exists():
            node.server_log.rename(node.server_log.with_name(f"server.log.{time.monotonic_ns()}"))
        node.proc = subprocess.Popen(
            [f"{KAFKA_HOME}/bin/kafka-server-start.sh", str(props)],
            stdout=open(node.work / "stdout", "ab"),
            stderr=subprocess.STDOUT,
            env=self._env(node),
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while STARTED not in node.log():
            if node.proc.poll() is not None or time.monotonic() > deadline:
                log = node.log()
                self.stop(node)
                raise RuntimeError(f"node {node.node_id} did not start: {log[-3000:]}")
            time.sleep(0.3)

    def stop(self, node: Node) -> None:
        if node.proc is not None and node.proc.poll() is None:
            os.killpg(node.proc.pid, signal.SIGTERM)
            try:
                node.proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(node.proc.pid, signal.SIGKILL)
                node.proc.wait()
        node.proc = None

    def stop_all(self) -> None:
        for node in [*self.brokers.values(), self.controller]:
            self.stop(node)

    def client(
        self, broker: int, request: dict, timeout: float = 180, script: str = CLIENT
    ) -> dict:
        """Run the kafka-python `script` (default: this module's CLIENT) against `broker`."""
        r = subprocess.run(
            [KAFKA_PY, "-c", script, f"127.0.0.1:{self.brokers[broker].port}", json.dumps(request)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode != 0:
            raise RuntimeError(f"client {request['op']} failed: {r.stderr[-3000:]}")
        return json.loads(r.stdout)

    def elect_unclean(self, broker: int, topic: str, partition: int) -> str:
        """Make `broker`, a live replica outside the ISR of a leaderless partition whose topic
        has unclean.leader.election.enable=true, its leader in a new epoch. 3.9+ controllers
        do it themselves as the broker unfences; older ones (3.3.1: ConfigurationControlManager.
        uncleanLeaderElectionEnabledForTopic returns false) only on an explicit ElectLeaders,
        `kafka-leader-election --election-type unclean` (kafka_dist.kraft_unclean_election_by_config).
        Returns how it was elected."""
        if kafka_dist(KAFKA_HOME).kraft_unclean_election_by_config:
            self.wait_for(broker, topic, partition, lambda s: s["leader"] == broker)
            return "by the controller (unclean.leader.election.enable)"
        self.wait_for(broker, topic, partition, lambda s: s["leader"] == -1)
        r = subprocess.run(
            [
                f"{KAFKA_HOME}/bin/kafka-leader-election.sh",
                "--bootstrap-server",
                f"127.0.0.1:{self.brokers[broker].port}",
                "--election-type",
                "unclean",
                "--topic",
                topic,
                "--partition",
                str(partition),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "KAFKA_HEAP_OPTS": "-Xmx128m"},
        )
        return r.stdout + r.stderr

    def wait_for(
        self, broker: int, topic: str, partition: int, check, timeout: float = 120
    ) -> dict:
        """Poll the partition's leader and ISR (as broker `broker` describes them) until `check`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                state = self.client(broker, {"op": "describe", "topic": topic}).get(str(partition))
            except RuntimeError:
                state = None
            if state is not None and check(state):
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}-{partition}: still {state}")
            time.sleep(1)
