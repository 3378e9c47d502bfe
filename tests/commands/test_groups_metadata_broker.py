"""Acceptance against a real Kafka broker (KAFKA_HOME, a Kafka 3.3.1 distribution; KAFKA_PY, a
Python with kafka-python; skipped without them, see tests/helpers/kafka_broker.py). Kafka 3.3.1 has no
KIP-848 consumer groups: their replay is tested on records built from Kafka 4.2's schemas and
on the corpus' Kafka 4.x files instead (tests/ops/test_consumer_groups.py).

One broker run: groups commit through kafka-python (a subscribed group, a group with manual
assignment and commit metadata, a transactional commit and an aborted one), topics are created
with configs, altered and deleted; while the broker runs the script records what
kafka-consumer-groups.sh --describe --offsets, kafka-topics.sh --describe and kafka-configs.sh
--describe answer. Then, with the broker stopped, `kafkalog consumer-groups` and `kafkalog
metadata` must answer the same from the files."""

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.kafka_broker import KAFKA_HOME, broker_run, format_log_dir, needs_broker
from tests.helpers.kafka_dist import kafka_dist

from .metadata_checks import (
    image,
    image_before_controlled_shutdown,
    image_partitions,
    kafka_topic_ids,
    kafka_topics_partitions,
)

_DIST = kafka_dist(KAFKA_HOME) if KAFKA_HOME else None

pytestmark = [
    needs_broker,
    pytest.mark.skipif(
        _DIST is not None and _DIST.version_tuple[:2] != (3, 3),
        reason=f"written for a Kafka 3.3.1 broker (its metadata.version, its controlled shutdown); KAFKA_HOME has "
        f"{_DIST.label if _DIST else None}",
    ),
]

SCRIPT = r"""
import json, os, subprocess, sys, time
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.structs import OffsetAndMetadata
server = sys.argv[1]
home = os.environ["KAFKA_HOME"]
admin = KafkaAdminClient(bootstrap_servers=server)
admin.create_topics([NewTopic("orders", 3, 1, topic_configs={"retention.ms": "3600000", "cleanup.policy": "delete"}),
                     NewTopic("audit", 1, 1), NewTopic("gone", 2, 1)])
time.sleep(2)
admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "audit", configs={"max.message.bytes": "200000"})])
p = KafkaProducer(bootstrap_servers=server)
for i in range(60):
    p.send("orders", key=b"k%d" % i, value=b"v", partition=i % 3)
for i in range(7):
    p.send("audit", value=b"a")
p.flush()

# a subscribed group: reads everything, commits, leaves (Empty, generation bumped)
c = KafkaConsumer("orders", bootstrap_servers=server, group_id="readers", auto_offset_reset="earliest",
                  enable_auto_commit=False, consumer_timeout_ms=15000)
n = sum(1 for _ in c)
c.commit()
c.close()
# manual assignment, offsets with metadata, one partition committed twice
m = KafkaConsumer(bootstrap_servers=server, group_id="manual", enable_auto_commit=False)
m.assign([TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("audit", 0)])
m.commit({TopicPartition("orders", 0): OffsetAndMetadata(3, "first", -1)})
m.commit({TopicPartition("orders", 0): OffsetAndMetadata(12, "second", -1),
          TopicPartition("orders", 1): OffsetAndMetadata(5, "", -1),
          TopicPartition("audit", 0): OffsetAndMetadata(2, "meta-a", -1)})
m.close()
# transactional offset commits: one committed, one aborted
tp = KafkaProducer(bootstrap_servers=server, transactional_id="txn-committer")
tp.init_transactions()
tp.begin_transaction()
tp.send("audit", value=b"t")
tp.send_offsets_to_transaction({TopicPartition("orders", 2): OffsetAndMetadata(17, "txn", -1)}, "txn-group")
tp.commit_transaction()
tp.begin_transaction()
tp.send_offsets_to_transaction({TopicPartition("orders", 2): OffsetAndMetadata(19, "aborted", -1),
                                TopicPartition("orders", 1): OffsetAndMetadata(4, "aborted", -1)}, "txn-group")
tp.abort_transaction()
tp.close()
admin.delete_topics(["gone"])
time.sleep(3)

def tool(*args):
    done = subprocess.run([home + "/bin/" + args[0], "--bootstrap-server", server, *args[1:]],
                          capture_output=True, text=True, timeout=120)
    return {"stdout": done.stdout, "stderr": done.stderr, "rc": done.returncode}

print(json.dumps({
    "consumed": n,
    "groups": tool("kafka-consumer-groups.sh", "--describe", "--all-groups", "--offsets", "--timeout", "60000"),
    "topics": tool("kafka-topics.sh", "--describe"),
    "configs": {t: tool("kafka-configs.sh", "--describe", "--entity-type", "topics", "--entity-name", t)
                for t in ("orders", "audit")},
}), flush=True)
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    work = tmp_path_factory.mktemp("groups-metadata-broker")
    log_dir = work / "logdir"
    log_dir.mkdir()
    format_log_dir(log_dir, work)
    res = broker_run(
        log_dir,
        work,
        SCRIPT,
        properties={
            "offsets.topic.num.partitions": "5",
            "group.initial.rebalance.delay.ms": "0",
            "transaction.state.log.num.partitions": "1",
        },
    )
    assert res["errors"] == [], res["errors"]
    if os.environ.get(
        "KAFKALOG_SAVE_BROKER_RUN"
    ):  # how tests/fixtures/groups-broker-3.3.1 was made
        import shutil

        shutil.copytree(log_dir, os.environ["KAFKALOG_SAVE_BROKER_RUN"], dirs_exist_ok=True)
        Path(os.environ["KAFKALOG_SAVE_BROKER_RUN"], "expected.json").write_text(
            json.dumps(res["output"], indent=1)
        )
    return log_dir, res["output"]


def _kafka_rows(text: str) -> set[tuple]:
    """(group, topic, partition, current offset, log end offset, lag) of each data line of
    kafka-consumer-groups --describe --offsets."""
    rows = set()
    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[0] != "GROUP" and cells[2].isdigit():
            rows.add(tuple(cells[:6]))
    return rows


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_consumer_groups_give_the_offsets_kafka_consumer_groups_gave(served):
    log_dir, out = served
    assert out["consumed"] == 60 and out["groups"]["rc"] == 0, out["groups"]
    kafka = _kafka_rows(out["groups"]["stdout"])
    assert {r[0] for r in kafka} == {"readers", "manual", "txn-group"}, out[
        "groups"
    ]  # no aborted commit
    r = _invoke("consumer-groups", log_dir)
    assert r.exit_code == 0, r.output
    assert _kafka_rows(r.stdout) == kafka
    # the same header and column layout as Kafka's, line for line (rows within a group may be ordered
    # differently: Kafka's come from a hash map)
    ours = sorted(line.rstrip() for line in r.stdout.splitlines())
    theirs = sorted(line.rstrip() for line in out["groups"]["stdout"].splitlines())
    assert ours == theirs


def test_the_json_has_the_commit_metadata_and_the_transactional_commit(served):
    log_dir, _ = served
    r = _invoke("consumer-groups", log_dir, "--format", "json")
    assert r.exit_code == 0, r.output
    groups = {g["group"]: g for g in map(json.loads, r.stdout.splitlines())}
    manual = {(o["topic"], o["partition"]): o for o in groups["manual"]["offsets"]}
    assert (manual[("orders", 0)]["committed_offset"], manual[("orders", 0)]["metadata"]) == (
        12,
        "second",
    )
    assert manual[("audit", 0)]["metadata"] == "meta-a"
    (txn,) = groups["txn-group"]["offsets"]
    assert (txn["topic"], txn["partition"], txn["committed_offset"], txn["metadata"]) == (
        "orders",
        2,
        17,
        "txn",
    )
    assert txn["producer_id"] is not None and txn["lag"] == 3
    readers = groups["readers"]
    assert (
        readers["state"] == "Empty"
        and readers["protocol_type"] == "consumer"
        and readers["generation"] >= 2
    )
    assert {o["lag"] for o in readers["offsets"]} == {0}


def test_group_reads_only_the_partition_kafka_hashes_it_to(served):
    log_dir, out = served
    r = _invoke("consumer-groups", log_dir, "--group", "manual")
    assert r.exit_code == 0, r.output
    assert _kafka_rows(r.stdout) == {
        row for row in _kafka_rows(out["groups"]["stdout"]) if row[0] == "manual"
    }
    assert "guess" not in r.stderr  # the metadata log says __consumer_offsets has 5 partitions


def test_the_metadata_image_agrees_with_kafka_topics_and_kafka_configs(served):
    log_dir, out = served
    live = kafka_topics_partitions(out["topics"]["stdout"])
    assert ("orders", 2) in live and not any(t == "gone" for t, _ in live)
    # as the broker answered: the image just before its controlled shutdown moved the leaders away
    before = image_before_controlled_shutdown(log_dir)
    assert image_partitions(before) == live
    assert before["metadata_version"] == "3.3-IV3"
    assert {t["name"]: t["id"] for t in before["topics"]} == kafka_topic_ids(
        out["topics"]["stdout"]
    )
    # dynamic topic configs, as kafka-configs --describe lists them
    configs = {t["name"]: t["configs"] for t in before["topics"]}
    for topic, answer in out["configs"].items():
        listed = dict(re.findall(r"\b([a-z.]+)=(\S+) sensitive=", answer["stdout"]))
        assert configs[topic] == listed, (topic, answer["stdout"])
    # after the shutdown: the broker fenced, leaders gone, the same replicas and ISR
    end = image(log_dir)
    assert end["brokers"][0]["fenced"] and end["last_offset"] > before["last_offset"]
    assert {k: v[1:] for k, v in image_partitions(end).items()} == {
        k: v[1:] for k, v in live.items()
    }


def test_the_tree_names_what_the_broker_holds(served):
    log_dir, _ = served
    r = _invoke("metadata", log_dir)
    assert r.exit_code == 0, r.output
    assert "metadata.version 3.3-IV3 (level 7)" in r.stdout
    assert re.search(r"orders  id \S+  3 partition\(s\)", r.stdout)
    assert "retention.ms=3600000" in r.stdout and "gone" not in r.stdout
