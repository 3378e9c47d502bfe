"""Acceptance: a real Kafka 3.3.1 broker with a transaction left open (its producer dies before
committing) answers ListOffsets read_committed with the last stable offset and read_uncommitted
with the high watermark; stopped, its files must give `kafkalog transactions` the same answers,
the open transaction, and no hanging one while the coordinator's log says it is Ongoing.

Runs when KAFKA_HOME and KAFKA_PY are set (tests/helpers/kafka_broker.py), skipped otherwise."""

import json
import shutil

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.kafka_broker import broker_run, needs_broker
from tests.helpers.paths import EXAMPLES

pytestmark = needs_broker

# begin a transaction on txn-0, write 3 records, ask both end offsets, die without committing
OPEN_TXN = r"""
import json, os, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
server = sys.argv[1]
p = KafkaProducer(bootstrap_servers=server, transactional_id="left-open")
p.init_transactions()
p.begin_transaction()
for i in range(3):
    p.send("txn", key=b"k%d" % i, value=b"never committed", partition=0)
p.flush()
tp = TopicPartition("txn", 0)
out = {}
for isolation in ("read_committed", "read_uncommitted"):
    c = KafkaConsumer(bootstrap_servers=server, isolation_level=isolation)
    out[isolation] = c.end_offsets([tp])[tp]
    c.close()
print(json.dumps(out), flush=True)
os._exit(0)
"""


def test_lso_and_open_transaction_as_the_broker_answered(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    served = broker_run(d, tmp_path, OPEN_TXN)
    assert served["errors"] == []
    lso, hw = served["output"]["read_committed"], served["output"]["read_uncommitted"]
    assert (lso, hw) == (15, 18)  # the transaction began at the old log end offset

    r = CliRunner().invoke(cli, ["transactions", str(d), "--topic", "txn", "--format", "json"])
    assert r.exit_code == 0, r.output
    (got,) = map(json.loads, r.stdout.splitlines())
    assert (got["last_stable_offset"], got["high_watermark"], got["log_end_offset"]) == (
        lso,
        hw,
        hw,
    )
    (txn,) = got["open_transactions"]
    assert (txn["start_offset"], txn["topic"], txn["partition"]) == (15, "txn", 0)

    # the coordinator's log (__transaction_state in the same log dir) still expects to end it
    r = CliRunner().invoke(cli, ["transactions", str(d), "--find-hanging", "--max-age", "0s"])
    assert r.exit_code == 0 and r.stdout.count("\n") == 1
    # without the coordinator's log nothing tells it from a hanging one: reported, exit 1
    alone = tmp_path / "alone"
    shutil.copytree(d, alone, ignore=shutil.ignore_patterns("__transaction_state-*"))
    r = CliRunner().invoke(
        cli, ["transactions", str(alone), "--find-hanging", "--max-age", "0s", "--format", "json"]
    )
    assert r.exit_code == 1
    (hanging,) = map(json.loads, r.stdout.splitlines())
    assert (hanging["start_offset"], hanging["coordinator_state"]) == (15, None)
