"""Acceptance for KIP-848 consumer groups against a real Kafka 3.9 broker (the new group
coordinator, `group.coordinator.rebalance.protocols=classic,consumer`) and Kafka's own Java
consumer (`group.protocol=consumer`, KIP-848's preview in 3.9). Needs KAFKA_HOME_39 (default
/opt/kafka-3.9.0-rc3) and KAFKA_PY; skipped without them.

One group reads and leaves (Empty, its offsets kept); another is still running when
kafka-consumer-groups.sh describes it and is then killed, so the broker stops with its member
and assignment recorded. `kafkalog consumer-groups` must give the broker's rows, the live member's
consumer id, host and client id included, from the files."""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.kafka_broker import KAFKA_PY, broker_run, format_log_dir

from .metadata_checks import (
    image_before_controlled_shutdown,
    image_partitions,
    kafka_topic_ids,
    kafka_topics_partitions,
)

KAFKA_HOME_39 = os.environ.get("KAFKA_HOME_39", "/opt/kafka-3.9.0-rc3")
pytestmark = pytest.mark.skipif(
    not (Path(KAFKA_HOME_39, "bin", "kafka-server-start.sh").exists() and KAFKA_PY),
    reason="needs KAFKA_HOME_39 (a Kafka 3.9 distribution, for KIP-848 groups) and KAFKA_PY",
)

SCRIPT = r"""
import json, os, signal, subprocess, sys, time
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
server, home = sys.argv[1], sys.argv[2]
admin = KafkaAdminClient(bootstrap_servers=server)
admin.create_topics([NewTopic("events", 2, 1)])
time.sleep(2)
p = KafkaProducer(bootstrap_servers=server)
for i in range(40):
    p.send("events", value=b"e%d" % i, partition=i % 2)
p.flush()

def consumer(group, *extra):
    return [home + "/bin/kafka-console-consumer.sh", "--bootstrap-server", server, "--topic", "events",
            "--group", group, "--from-beginning", "--consumer-property", "group.protocol=consumer",
            "--consumer-property", "client.id=" + group + "-client", *extra]

def tool(*args):
    done = subprocess.run([home + "/bin/" + args[0], "--bootstrap-server", server, *args[1:]],
                          capture_output=True, text=True, timeout=180)
    return {"stdout": done.stdout, "stderr": done.stderr, "rc": done.returncode}

# a KIP-848 group that reads 25 records, commits them as it closes, and leaves
left = subprocess.run(consumer("g848-left", "--max-messages", "25", "--timeout-ms", "90000"),
                      capture_output=True, text=True, timeout=180)
# one that keeps running: its member and assignment are in the log when the broker stops
live = subprocess.Popen(consumer("g848-live"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True)
deadline = time.time() + 120
described = None
while time.time() < deadline:
    described = tool("kafka-consumer-groups.sh", "--describe", "--all-groups", "--offsets", "--timeout", "60000")
    if "g848-live" in described["stdout"] and "g848-live-client" in described["stdout"] and \
            " 20 " in described["stdout"].split("g848-live", 1)[1]:
        break
    time.sleep(3)
topics = tool("kafka-topics.sh", "--describe")
members = tool("kafka-consumer-groups.sh", "--describe", "--group", "g848-live", "--members", "--verbose",
               "--timeout", "60000")
os.killpg(live.pid, signal.SIGKILL)
live.wait()
print(json.dumps({"left": left.returncode, "left_err": left.stderr[-2000:], "groups": described,
                  "members": members, "topics": topics}), flush=True)
"""


def _rows(text: str) -> set[tuple]:
    return {
        tuple(line.split())
        for line in text.splitlines()
        if len(line.split()) >= 6 and line.split()[0] != "GROUP" and line.split()[2].isdigit()
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    work = tmp_path_factory.mktemp("kip848-broker")
    log_dir = work / "logdir"
    log_dir.mkdir()
    format_log_dir(log_dir, work, KAFKA_HOME_39)
    res = broker_run(
        log_dir,
        work,
        SCRIPT,
        KAFKA_HOME_39,
        kafka_home=KAFKA_HOME_39,
        properties={
            "group.coordinator.rebalance.protocols": "classic,consumer",
            "offsets.topic.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "transaction.state.log.num.partitions": "1",
        },
    )
    out = res["output"]
    assert out["left"] == 0, out["left_err"]
    if os.environ.get(
        "KAFKALOG_SAVE_BROKER_RUN"
    ):  # how tests/fixtures/groups-broker-3.9-kip848 was made
        import shutil

        shutil.copytree(log_dir, os.environ["KAFKALOG_SAVE_BROKER_RUN"], dirs_exist_ok=True)
        Path(os.environ["KAFKALOG_SAVE_BROKER_RUN"], "expected.json").write_text(
            json.dumps(out, indent=1)
        )
    return log_dir, out


def test_kip_848_groups_give_the_rows_kafka_consumer_groups_gave(served):
    log_dir, out = served
    kafka = _rows(out["groups"]["stdout"])
    assert {r[0] for r in kafka} == {"g848-left", "g848-live"}, out["groups"]
    r = CliRunner().invoke(cli, ["consumer-groups", str(log_dir)])
    assert r.exit_code == 0, r.output
    assert _rows(r.stdout) == kafka


def test_the_json_says_they_are_kip_848_groups(served):
    log_dir, _ = served
    r = CliRunner().invoke(cli, ["consumer-groups", str(log_dir), "--format", "json"])
    groups = {g["group"]: g for g in map(json.loads, r.stdout.splitlines())}
    assert {g["type"] for g in groups.values()} == {"consumer"}
    assert groups["g848-left"]["state"] == "Empty" and groups["g848-left"]["members"] == []
    live = groups["g848-live"]
    (member,) = live["members"]
    assert live["state"] == "Stable" and member["client_id"] == "g848-live-client"
    assert sorted((a["topic"], a["partition"]) for a in member["assignment"]) == [
        ("events", 0),
        ("events", 1),
    ]
    assert live["group_epoch"] >= 1 and member["member_epoch"] == live["target_assignment_epoch"]


def test_members_table_is_kafkas(served):
    log_dir, out = served
    r = CliRunner().invoke(
        cli, ["consumer-groups", str(log_dir), "--group", "g848-live", "--members"]
    )
    assert r.exit_code == 0, r.output
    (kafka,) = [
        line.split()
        for line in out["members"]["stdout"].splitlines()
        if line.startswith("g848-live")
    ]
    (ours,) = [line.split() for line in r.stdout.splitlines() if line.startswith("g848-live")]
    assert ours[:-1] == kafka[:-1], (out["members"], r.stdout)
    # Kafka 3.9's tool prints a KIP-848 member's assignment without its topic name ("(0,1)"); the
    # topic is named here, from the metadata log's topic ids
    assert (kafka[-1], ours[-1]) == ("(0,1)", "events(0,1)")


def test_the_3_9_metadata_image_agrees_with_kafka_topics(served):
    log_dir, out = served
    before = image_before_controlled_shutdown(log_dir)
    assert image_partitions(before) == kafka_topics_partitions(out["topics"]["stdout"])
    assert {t["name"]: t["id"] for t in before["topics"]} == kafka_topic_ids(
        out["topics"]["stdout"]
    )
    assert before["metadata_version"] == "3.9-IV0" and [c["id"] for c in before["controllers"]] == [
        1
    ]
    # 3.9 records each replica's log directory: the broker's one directory
    dirs = {d for t in before["topics"] for p in t["partitions"] for d in p["directories"]}
    assert dirs == set(before["brokers"][0]["directories"]) and len(dirs) == 1
