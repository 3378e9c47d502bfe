"""Issue 26, acceptance with a real broker: on a transactional topic with a committed, an aborted
and a still-open transaction (and plain records around them), a read_committed consumer of the
broker and `export --isolation-level read_committed` of the stopped broker's files return the
same records; a read_uncommitted consumer and the default export likewise.

Producers and consumers are kafka-python's (KAFKA_PY; its transactional producer and its
read_committed fetch); the broker is KAFKA_HOME's (tests/helpers/kafka_broker.py). Skipped without them."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.kafka_broker import KAFKA_HOME, broker_run, needs_broker
from tests.helpers.paths import EXAMPLES

pytestmark = needs_broker

SCRIPT = r"""
import json, os, sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
server = sys.argv[1]
tp = TopicPartition("txn", 0)
a = KafkaProducer(bootstrap_servers=server, transactional_id="acc-commit")
a.init_transactions(); a.begin_transaction()
for i in range(3):
    a.send("txn", key=b"c%d" % i, value=b"committed", partition=0)
a.commit_transaction()
b = KafkaProducer(bootstrap_servers=server, transactional_id="acc-abort")
b.init_transactions(); b.begin_transaction()
for i in range(2):
    b.send("txn", key=b"a%d" % i, value=b"aborted", partition=0)
b.flush(); b.abort_transaction()
plain = KafkaProducer(bootstrap_servers=server)
for i in range(2):
    plain.send("txn", key=b"p%d" % i, value=b"plain", partition=0)
plain.flush()
o = KafkaProducer(bootstrap_servers=server, transactional_id="acc-open")
o.init_transactions(); o.begin_transaction()
for i in range(2):
    o.send("txn", key=b"o%d" % i, value=b"open", partition=0)
o.flush()
for i in range(2):
    plain.send("txn", key=b"q%d" % i, value=b"plain", partition=0)
plain.flush()
out = {}
for iso in ("read_committed", "read_uncommitted"):
    c = KafkaConsumer(bootstrap_servers=server, isolation_level=iso, enable_auto_commit=False)
    c.assign([tp]); c.seek_to_beginning(tp)
    end = c.end_offsets([tp])[tp]
    got, deadline = [], time.time() + 60
    while c.position(tp) < end and time.time() < deadline:
        for recs in c.poll(timeout_ms=1000).values():
            got += [[r.offset, r.key.decode()] for r in recs]
    out[iso] = {"end": end, "records": got}
    c.close()
print(json.dumps(out), flush=True)
os._exit(0)
"""


def _version() -> str:
    libs = sorted(Path(KAFKA_HOME, "libs").glob("kafka_*.jar"))
    return libs[0].name if libs else KAFKA_HOME


def test_export_returns_what_the_brokers_consumers_returned(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    served = broker_run(d, tmp_path, SCRIPT)
    assert served["errors"] == []
    print(f"broker: {_version()}")
    consumed = served["output"]
    committed = [tuple(x) for x in consumed["read_committed"]["records"]]
    uncommitted = [tuple(x) for x in consumed["read_uncommitted"]["records"]]
    # what the broker's consumers saw: the aborted records only read_uncommitted, the open
    # transaction's and what follows it only up to the high watermark
    assert any(k.startswith("a") for _, k in uncommitted) and not any(
        k.startswith("a") for _, k in committed
    )
    assert any(k.startswith("o") for _, k in uncommitted) and not any(
        k.startswith(("o", "q")) for _, k in committed
    )
    for isolation, want in (("read_committed", committed), ("read_uncommitted", uncommitted)):
        args = [
            "export",
            str(d),
            "-",
            "--to",
            "jsonl",
            "--topic",
            "txn",
            "--payload-encoding",
            "utf8",
        ]
        if isolation == "read_committed":
            args += ["--isolation-level", "read_committed"]
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0, r.output
        got = [(row["offset"], row["key"]) for row in map(json.loads, r.stdout.splitlines())]
        assert got == want, isolation
