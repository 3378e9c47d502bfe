"""Acceptance on a real broker with transactions version 2 (KIP-890 part 2): Kafka 4.0.0-SNAPSHOT
(trunk 1eb76443, tools/kafka-broker), its dir formatted at metadata.version 4.0-IV2, whose
transaction.version is 2 (an unstable feature there: `unstable.feature.versions.enable`, and
`unstable.api.versions.enable` for EndTxn v5). kafka-python with EndTxn v5 (the client change
tools/kafka-broker/05-smoke-4.0.sh makes)
commits three transactions and aborts one, each marker one epoch above its data, then leaves
one open and dies. Stopped, the broker's files must give kafkalog its answers: the last stable
offset and high watermark it served, the producer state of its own clean-shutdown snapshot
rebuilt from the log alone, read_committed's records, no hanging transaction while the
coordinator's log says Ongoing, and recover's .txnindex equal to the broker's.

Runs when KAFKA_HOME is a Kafka 4.x distribution and KAFKA_PY a Python with kafka-python,
skipped otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config.versions import transactions_v2_evidence
from kafkalog_cli.formats.internal.transaction_state import (
    format_transaction_record_39,
    read_value_v0_or_v1,
)
from kafkalog_cli.formats.producer_state import parse_producer_snapshot
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops.producer_rebuild import rebuild_producer_state
from kafkalog_cli.storage.partition import Partition, PartitionCheckpoints
from tests.helpers.kafka_broker import DIST, KAFKA_HOME, _free_port, broker_run, needs_broker

pytestmark = [
    needs_broker,
    pytest.mark.skipif(
        not (DIST and DIST.at_least(4, 0)),
        reason="needs KAFKA_HOME of Kafka 4.0 or later (transactions version 2)",
    ),
]
TV2_PROPERTIES = {
    "unstable.feature.versions.enable": "true",
    "unstable.api.versions.enable": "true",
    "transaction.state.log.num.partitions": "1",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}

TV2_CLIENT = r"""
import json, os, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
import kafka.producer.transaction_manager as tm

server = sys.argv[1]
seen = []
_init, _handle = tm.EndTxnHandler.__init__, tm.EndTxnHandler.handle_response

def init(self, manager, committed):
    _init(self, manager, committed)
    self.request = tm.EndTxnRequest(transactional_id=self.transactional_id, producer_id=self.producer_id,
                                    producer_epoch=self.producer_epoch, committed=committed, max_version=5)

def handle(self, response):
    # EndTxn v5: the coordinator bumped the epoch; the next transaction uses it, from sequence 0
    pid, epoch = getattr(response, "producer_id", -1), getattr(response, "producer_epoch", -1)
    seen.append([self.producer_id, self.producer_epoch, pid, epoch])
    if response.error_code == 0 and pid >= 0:
        m = self.transaction_manager
        m.set_producer_id_and_epoch(tm.ProducerIdAndEpoch(pid, epoch))
        m._sequence_numbers.clear()
    _handle(self, response)

tm.EndTxnHandler.__init__, tm.EndTxnHandler.handle_response = init, handle
p = KafkaProducer(bootstrap_servers=server, transactional_id="tv2", acks="all")
p.init_transactions()
for n, commit in enumerate([True, False, True, True, None]):
    p.begin_transaction()
    for i in range(5):
        p.send("tv2", key=b"t%d" % n, value=b"txn %d record %d" % (n, i), partition=0)
    p.flush()
    if commit is True:
        p.commit_transaction()
    elif commit is False:
        p.abort_transaction()
tp = TopicPartition("tv2", 0)
out = {"end_txn": seen}
for isolation in ("read_committed", "read_uncommitted"):
    c = KafkaConsumer(bootstrap_servers=server, isolation_level=isolation)
    out[isolation] = c.end_offsets([tp])[tp]
    c.close()
c = KafkaConsumer(bootstrap_servers=server, isolation_level="read_committed", enable_auto_commit=False,
                  consumer_timeout_ms=5000)
c.assign([tp]); c.seek(tp, 0)
out["consumed"] = [m.offset for m in c]
c.close()
print(json.dumps(out), flush=True)
os._exit(0)          # the fifth transaction stays open
"""


def _format_tv2(log_dir: Path, work: Path) -> None:
    """kafka-storage.sh format at metadata.version 4.0-IV2, whose default transaction.version is 2
    (TransactionVersion.TV_2's bootstrapMetadataVersion), reading unstable.feature.versions.enable
    from the config; this snapshot's format parses --feature but ignores it (tools/kafka-broker)."""
    ctl, port = _free_port(), _free_port()
    cfg = work / "format.properties"
    cfg.write_text(
        f"process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{ctl}\n"
        f"controller.listener.names=CONTROLLER\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctl}\n"
        f"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
        f"log.dirs={log_dir}\nunstable.feature.versions.enable=true\n"
    )
    env = {**os.environ, "LOG_DIR": str(work / "format-logs")}
    subprocess.run(
        DIST.format_args("a2Fma2Fsb2ctdHYyLWNoZWNr", cfg, release_version="4.0-IV2"),
        check=True,
        capture_output=True,
        env=env,
    )


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_tv2_broker_and_kafkalog_agree(tmp_path):
    d = tmp_path / "logdir"
    d.mkdir()
    _format_tv2(d, tmp_path)
    served = broker_run(d, tmp_path, TV2_CLIENT, properties=TV2_PROPERTIES)
    assert served["errors"] == []
    out = served["output"]
    assert [e[3] for e in out["end_txn"]] == [
        e[1] + 1 for e in out["end_txn"]
    ]  # the coordinator bumped
    lso, hw = out["read_committed"], out["read_uncommitted"]

    part = d / "tv2-0"
    # what the broker wrote: each marker one epoch above its transaction's data, the evidence of TV2
    batches = list(iter_batches(sorted(part.glob("*.log"))[0].read_bytes()))
    data_epochs, marker_epochs = [], []
    for b in batches:
        if b.is_control:
            marker_epochs.append(b.producer_epoch)
        elif not data_epochs or data_epochs[-1] != b.producer_epoch:
            data_epochs.append(b.producer_epoch)
    assert marker_epochs == [e + 1 for e in data_epochs[:4]] and len(data_epochs) == 5
    assert transactions_v2_evidence(d)[0].detail.startswith("COMMIT of producer ")
    r = invoke("transactions", d, "--topic", "tv2", "--format", "json")
    assert r.exit_code == 0, r.output
    (got,) = map(json.loads, r.stdout.splitlines())
    assert (got["last_stable_offset"], got["high_watermark"]) == (lso, hw)
    (txn,) = got["open_transactions"]
    assert txn["start_offset"] == lso
    # the coordinator's log says Ongoing with tv2-0: not hanging
    r = invoke("transactions", d, "--find-hanging", "--max-age", "0s")
    assert r.exit_code == 0 and r.stdout.count("\n") == 1

    # the broker's clean-shutdown snapshot at the log end, against the log replayed alone
    snaps = sorted(part.glob("*.snapshot"))
    broker_entries = sorted(
        parse_producer_snapshot(snaps[-1].read_bytes()).entries, key=lambda e: e.producer_id
    )
    alone = tmp_path / "alone" / "tv2-0"
    shutil.copytree(part, alone, ignore=shutil.ignore_patterns("*.snapshot"))
    p = Partition.open(alone, PartitionCheckpoints())
    state = rebuild_producer_state(alone, p.segments, None, now_ms=0, expiration_ms=1 << 62)
    ours = sorted(
        parse_producer_snapshot(state.snapshot_bytes()).entries, key=lambda e: e.producer_id
    )
    assert ours == broker_entries

    # read_committed: what the broker's consumer got
    r = invoke("export", part, "-", "--to", "jsonl", "--isolation-level", "read_committed")
    assert r.exit_code == 0, r.output
    assert [x["offset"] for x in map(json.loads, r.stdout.splitlines())] == out["consumed"]

    # recover (as after an unclean stop) rebuilds the broker's .txnindex byte for byte
    txnindex = {f.name: f.read_bytes() for f in part.glob("*.txnindex")}
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    (copy / ".kafka_cleanshutdown").unlink(missing_ok=True)
    for f in (copy / "tv2-0").glob("*.txnindex"):
        f.unlink()
    r = invoke("recover", copy, "--all")
    assert r.exit_code == 0, r.output
    assert {f.name: f.read_bytes() for f in (copy / "tv2-0").glob("*.txnindex")} == txnindex


def test_the_tv2_coordinators_log_as_the_snapshots_kafka_dump_log_prints_it(tmp_path):
    """Values of version 1 with clientTransactionVersion 2; the trunk 1eb76443 snapshot's
    kafka-dump-log --transaction-log-decoder prints them as 3.9 does (TransactionLog
    .formatRecordKeyAndValue; released 4.0 prints JSON, format_transaction_record_40)."""
    d = tmp_path / "logdir"
    d.mkdir()
    _format_tv2(d, tmp_path)
    broker_run(d, tmp_path, TV2_CLIENT, properties=TV2_PROPERTIES)
    log = sorted((d / "__transaction_state-0").glob("*.log"))[0]
    ours, values = [], []
    for b in iter_batches(log.read_bytes()):
        if not b.is_control:
            for rec in b.records():
                key, payload = format_transaction_record_39(rec.key, rec.value, rec.offset)
                ours.append(f" key: {key} payload: {payload}")
                if rec.value is not None:
                    values.append(read_value_v0_or_v1(rec.value))
    # the end of a transaction records the client's transactions version (prepareAbortOrCommit,
    # prepareComplete); this snapshot's other transitions write TV_0 (prepareTransitionTo's default)
    assert {v.version for v in values} == {1}
    ends = [
        v
        for v in values
        if v.state.name in ("PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort")
    ]
    assert len(ends) == 8 and {v.client_transaction_version for v in ends} == {2}
    # the epoch bumps at every prepare: 4 ends after the initial epoch
    assert [v.producer_epoch for v in ends if v.state.name.startswith("Prepare")] == [
        ends[0].producer_epoch + i for i in range(4)
    ]
    tool = subprocess.run(
        [f"{KAFKA_HOME}/bin/kafka-dump-log.sh", "--transaction-log-decoder", "--files", str(log)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    theirs = [line[line.index(" key: ") :] for line in tool.splitlines() if " key: " in line]
    assert ours == theirs
