"""The root offset checkpoints a real Kafka 3.3.1 broker writes, against our writer's bytes for the
same entries written from empty (formats.scala_order decides the order from the keys alone).

One broker start on a fresh log dir: topics (names of many lengths) are created in phases, so
the dir holds 1, 3, 5, 12, 40 and 200 partitions in turn; after each phase the script waits
until the broker has checkpointed them all (intervals of 1 s) and keeps a copy of the four
files. Records are produced to every partition and DeleteRecords raises the start of some, so
log-start-offset-checkpoint has entries; a compacted topic of 8 partitions is cleaned (the cleaner
checkpoint from 5 entries on is a HashMap, ordered by the keys). The last snapshot is what the
clean shutdown wrote, and a restart on it writes the same again (only partitions whose hashCodes
are equal may swap: the broker itself orders those by insertion).

Runs when KAFKA_HOME and KAFKA_PY are set (tests/helpers/kafka_broker.py); skipped otherwise.
    KAFKA_HOME=/opt/kafka-3.3.1 KAFKA_PY=/opt/kafka-build/venv/bin/python \\
      python -m pytest tests/broker_order
`python -m tests.broker_order.test_broker_order OUT` keeps the snapshots in OUT (the fixtures of
tests/formats/test_scala_order.py came from such a run)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from kafkalog_cli.formats.checkpoints import (
    encode_offset_checkpoint,
    parse_offset_checkpoint_entries,
)
from kafkalog_cli.formats.scala_order import topic_partition_hash
from tests.helpers.kafka_broker import broker_run, format_log_dir, needs_broker

FILES = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)

# phase -> topics created in it: (name, partitions, compacted); cumulative 1, 3, 5, 12, 40, 200
PHASES = [
    [("a", 1, False)],
    [("orders-eu-west", 2, False)],
    [("x_y", 2, False)],
    [("payments.v2.transactions.high-priority-queue", 7, False)],
    [
        ("B", 3, False),
        ("metrics", 17, False),
        ("compacted-state.store-changelog", 4, True),
        ("kv", 4, True),
    ],
    [("telemetry-raw-events-2024", 100, False), ("z", 37, False), ("Aa", 23, False)],
]

SCRIPT = r"""
import json, os, shutil, sys, time
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
server, log_dir, out, phases = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
FILES = ["recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
         "replication-offset-checkpoint", "cleaner-offset-checkpoint"]
admin = KafkaAdminClient(bootstrap_servers=server)
producer = KafkaProducer(bootstrap_servers=server, acks=1, linger_ms=0)

def entries(name):
    try:
        lines = open(os.path.join(log_dir, name)).read().splitlines()
    except FileNotFoundError:
        return None
    return len(lines) - 2 if len(lines) >= 2 else 0

def wait_for(name, n, timeout=120):
    deadline = time.time() + timeout
    while entries(name) != n:
        assert time.time() < deadline, (name, n, entries(name))
        time.sleep(0.3)

total, starts, compacted, done = 0, 0, 0, []
for i, phase in enumerate(phases):
    new = []
    for topic, parts, compact in phase:
        cfg = {"cleanup.policy": "compact", "segment.bytes": "200", "min.cleanable.dirty.ratio": "0.01",
               "min.compaction.lag.ms": "0", "file.delete.delay.ms": "100"} if compact else {}
        admin.create_topics([NewTopic(topic, parts, 1, topic_configs=cfg)])
        new += [(topic, p, compact) for p in range(parts)]
    total += len(new)
    wait_for("recovery-point-offset-checkpoint", total)
    deletes = {}
    for k, (topic, p, compact) in enumerate(new):
        for j in range(12 if compact else 3):
            producer.send(topic, key=b"k%d" % (j % 3), value=b"v" * 40, partition=p)
            if compact:
                producer.flush()                 # one batch each: small segments roll
        if not compact and k % 3 != 1:
            deletes[TopicPartition(topic, p)] = 2
    producer.flush()
    if deletes:
        admin.delete_records(deletes)
    starts += len(deletes)
    compacted += sum(1 for _, _, c in new if c)
    wait_for("replication-offset-checkpoint", total)
    wait_for("log-start-offset-checkpoint", starts)
    if compacted:
        wait_for("cleaner-offset-checkpoint", compacted)
    time.sleep(1.5)                               # one more round of every checkpoint
    dest = os.path.join(out, "phase%d-%d" % (i + 1, total))
    os.makedirs(dest)
    for f in FILES:
        if os.path.exists(os.path.join(log_dir, f)):
            shutil.copyfile(os.path.join(log_dir, f), os.path.join(dest, f))
    done.append(dest)
producer.close()
admin.close()
print(json.dumps(done))
"""


def run_broker(work: Path) -> list[Path]:
    """The snapshots, in phase order, then the clean shutdown's files and a restarted broker's."""
    log_dir, out = work / "logdir", work / "snapshots"
    log_dir.mkdir(parents=True)
    out.mkdir()
    format_log_dir(log_dir, work)
    res = broker_run(
        log_dir,
        work,
        SCRIPT,
        str(log_dir),
        str(out),
        json.dumps(PHASES),
        properties={
            "log.cleaner.enable": "true",
            "log.cleaner.backoff.ms": "300",
            "log.flush.offset.checkpoint.interval.ms": "1000",
            "log.flush.start.offset.checkpoint.interval.ms": "1000",
            "replica.high.watermark.checkpoint.interval.ms": "1000",
            "auto.create.topics.enable": "false",
            "num.partitions": "1",
        },
    )
    assert errors(res) == [], errors(res)[:5]
    res_phases = res["output"]
    final = _keep(log_dir, out / "shutdown-200")
    # a restart: the broker fills its maps afresh (partitions created from the metadata image)
    res = broker_run(log_dir, work, "import json, time; time.sleep(4); print(json.dumps(0))")
    assert errors(res) == [], errors(res)[:5]
    return [Path(p) for p in res_phases] + [final, _keep(log_dir, out / "restart-200")]


def errors(res: dict) -> list[str]:
    """The broker's ERROR lines, but for its controller's "unable to start processing because of
    TimeoutException" while a loaded machine starts it (it then goes on)."""
    return [line for line in res["errors"] if "QuorumController" not in line]


def _keep(log_dir: Path, dest: Path) -> Path:
    dest.mkdir()
    for f in FILES:
        shutil.copyfile(log_dir / f, dest / f)
    return dest


def equal_hashes(keys) -> bool:
    """Whether two partitions have equal TopicPartition hashCodes ("a"-0 and "B"-1 do): the broker
    orders them by insertion, which only the file's earlier order tells."""
    hashes = [topic_partition_hash(k) for k in keys]
    return len(set(hashes)) < len(hashes)


def compare(snapshot: Path) -> dict[str, str]:
    """{file: verdict} for the files with 2 entries or more: "same" (our bytes from the entries
    alone are the broker's), "tie" (they differ, the keys have equal hashes, and given the file's
    order ours are the broker's) or "DIFFERENT"."""
    got = {}
    for f in FILES:
        path = snapshot / f
        if not path.exists():
            continue
        data = path.read_bytes()
        entries = parse_offset_checkpoint_entries(data, path=str(path))
        if len(entries) < 2:
            continue
        offsets = {(t, p): o for t, p, o in entries}
        if encode_offset_checkpoint(offsets, kind=f) == data:
            got[f] = "same"
        elif (
            equal_hashes(offsets)
            and encode_offset_checkpoint(offsets, order=list(offsets), kind=f) == data
        ):
            got[f] = "tie"
        else:
            got[f] = "DIFFERENT"
    return got


@needs_broker
def test_the_brokers_checkpoints_are_our_bytes(tmp_path):
    snapshots = run_broker(tmp_path)
    results = {s.name: compare(s) for s in snapshots}
    assert [s.name for s in snapshots] == [
        "phase1-1",
        "phase2-3",
        "phase3-5",
        "phase4-12",
        "phase5-40",
        "phase6-200",
        "shutdown-200",
        "restart-200",
    ]
    assert set(results["phase6-200"]) == set(FILES)
    for name, r in results.items():
        print(name, r)  # pytest -s shows the counts
    verdicts = [v for r in results.values() for v in r.values()]
    assert "DIFFERENT" not in verdicts, results
    assert verdicts.count("same") >= 18, results


if __name__ == "__main__":
    work = Path(sys.argv[1])
    snaps = run_broker(work)
    for s in snaps:
        print(
            s.name,
            {
                f: (len(parse_offset_checkpoint_entries((s / f).read_bytes())), v)
                for f, v in compare(s).items()
            },
        )
