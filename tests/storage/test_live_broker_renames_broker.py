"""Issue 26, point 14 with a real broker: kafkalog's read-only commands run again and again on the
log dir of a live Kafka broker whose retention deletes 16 KiB segments every second while a
producer writes. No run fails because the broker renamed or deleted a segment under it.

Runs when KAFKA_HOME and KAFKA_PY are set (tests/helpers/kafka_broker.py), skipped otherwise."""

import sys
from pathlib import Path

from tests.helpers.kafka_broker import KAFKA_HOME, broker_run, format_log_dir, needs_broker

pytestmark = needs_broker
KAFKALOG = str(Path(sys.executable).parent / "kafkalog")

SCRIPT = r"""
import json, subprocess, sys, threading, time
from kafka import KafkaProducer
server, kafkalog, log_dir = sys.argv[1:4]
stop = threading.Event()
sent = [0]
def produce():
    p = KafkaProducer(bootstrap_servers=server, linger_ms=5)
    while not stop.is_set():
        for i in range(500):
            p.send("live", key=b"k%d" % i, value=b"x" * 200, partition=0)
        p.flush()
        sent[0] += 500
t = threading.Thread(target=produce); t.start()
time.sleep(5)
part = log_dir + "/live-0"
commands = [["verify-crc", part, "--jobs", "1"], ["dump-log", part], ["dump-log", part, "--format", "json"],
            ["dump-index", part], ["describe", log_dir, "--topic", "live"],
            ["export", part, "-", "--to", "jsonl", "--jobs", "1", "--include-control"]]
runs = []
deadline = time.time() + 45
while time.time() < deadline:
    for c in commands:
        r = subprocess.run([kafkalog] + c, capture_output=True, text=True)
        runs.append({"command": c[0], "rc": r.returncode, "stderr": r.stderr[-400:],
                     "followed": r.stderr.count("by the broker while this command ran")})
stop.set(); t.join()
print(json.dumps({"runs": runs, "sent": sent[0]}), flush=True)
"""


def test_read_only_commands_on_a_live_brokers_dir(tmp_path):
    d = tmp_path / "logdir"
    d.mkdir()
    format_log_dir(d, tmp_path)
    served = broker_run(
        d,
        tmp_path,
        SCRIPT,
        KAFKALOG,
        str(d),
        properties={
            "log.segment.bytes": 16384,
            "log.retention.bytes": 65536,
            "log.retention.check.interval.ms": 1000,
            "file.delete.delay.ms": 500,
            "log.retention.hours": 1,
            "auto.create.topics.enable": "true",
        },
    )
    out = served["output"]
    runs = out["runs"]
    print(
        f"broker {KAFKA_HOME}: {len(runs)} runs, {sum(r['followed'] for r in runs)} segments followed or "
        f"reported as removed, {out['sent']} records sent"
    )
    assert len(runs) >= 12 and out["sent"] > 0
    failed = [r for r in runs if r["rc"] != 0]
    assert failed == [], failed[:3]
