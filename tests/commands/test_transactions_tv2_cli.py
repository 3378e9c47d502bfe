"""Transactions version 2 (Kafka 4.0, KIP-890) through the commands, as an operator sees them:
`transactions` and --find-hanging, `recover`'s producer snapshot and .txnindex, `export`
read_committed, `dump-log --transaction-log-decoder --format json` and `describe`'s evidence,
on a log dir built batch by batch as a 4.0 broker and coordinator write it (the markers one epoch
above their data; __transaction_state values of version 1)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import ProducerSnapshotEntry, parse_producer_snapshot
from kafkalog_cli.formats.records import build_v2_batch
from kafkalog_cli.formats.txnindex import parse_txn_index

from ..ops.test_transactions_v2 import MIN, NOW, TV2_LOG, T, _txn_state_v1


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def log_dir(tmp_path: Path) -> Path:
    """t-0: TV2_LOG (producer 10: a commit, an abort, one open from 8; producer 20 idle);
    __transaction_state-0: transactional id `app` of producer 10 in PrepareCommit at the bumped
    epoch 3, so its marker for t-0 is still to come."""
    d = tmp_path / "logs"
    state = [
        _txn_state_v1("app", 10, 2, 1, [("t", [0])]),
        _txn_state_v1("app", 10, 3, 2, [("t", [0])]),
    ]
    for name, batches in {
        "t-0": TV2_LOG,
        "__transaction_state-0": [build_v2_batch(state, 0)],
    }.items():
        (d / name).mkdir(parents=True)
        (d / name / "00000000000000000000.log").write_bytes(b"".join(batches))
    (d / "replication-offset-checkpoint").write_text("0\n2\nt 0 10\n__transaction_state 0 2\n")
    return d


def test_transactions_and_find_hanging(tmp_path):
    d = log_dir(tmp_path)
    r = invoke("transactions", d, "--now", NOW, "--producers", "--topic", "t")
    assert r.exit_code == 0, r.output
    assert [x.split() for x in r.stdout.splitlines()[-2:]] == [
        ["t", "0", "10", "2", "4", "1", str(NOW - 20 * MIN), "8"],
        ["t", "0", "20", "5", "3", "7", str(T), "None"],
    ]
    # the open transaction is PrepareCommit's: the coordinator still writes its marker
    r = invoke(
        "transactions", d, "--now", NOW, "--find-hanging", "--max-age", "1m", "--format", "json"
    )
    assert (r.exit_code, r.stdout) == (0, "")
    # without the coordinator's log it is a candidate, and only it: the TV2 markers closed the others
    r = invoke(
        "transactions",
        d / "t-0",
        "--now",
        NOW,
        "--find-hanging",
        "--max-age",
        "1m",
        "--format",
        "json",
    )
    assert r.exit_code == 1
    assert [
        (x["producer_id"], x["producer_epoch"], x["start_offset"])
        for x in map(json.loads, r.stdout.splitlines())
    ] == [(10, 2, 8)]


def test_recover_writes_the_4_0_brokers_snapshot_and_txnindex(tmp_path):
    d = log_dir(tmp_path)
    r = invoke("recover", d)
    assert r.exit_code == 0, r.output
    part = d / "t-0"
    snap = parse_producer_snapshot((part / "00000000000000000010.snapshot").read_bytes())
    assert sorted(snap.entries, key=lambda e: e.producer_id) == [
        ProducerSnapshotEntry(10, 2, 1, 9, 1, NOW - 20 * MIN, 4, 8),
        ProducerSnapshotEntry(20, 5, 7, 6, 0, T, 3, -1),
    ]
    (aborted,) = parse_txn_index((part / "00000000000000000000.txnindex").read_bytes())
    assert (
        aborted.producer_id,
        aborted.first_offset,
        aborted.last_offset,
        aborted.last_stable_offset,
    ) == (10, 4, 5, 6)
    assert invoke("recover", d).output.startswith(
        f"recover {d}: nothing to do"
    )  # a second run changes nothing


def test_export_read_committed(tmp_path):
    d = log_dir(tmp_path)
    r = invoke("export", d / "t-0", "-", "--to", "jsonl", "--isolation-level", "read_committed")
    assert r.exit_code == 0, r.output
    assert [x["offset"] for x in map(json.loads, r.stdout.splitlines())] == [0, 1, 2, 6]


def test_dump_log_json_of_version_1_values(tmp_path):
    d = log_dir(tmp_path)
    r = invoke(
        "dump-log",
        d / "__transaction_state-0",
        "--transaction-log-decoder",
        "--format",
        "json",
        "--deep-iteration",
    )
    assert r.exit_code == 0, r.output
    values = [
        x["decoded"]["value"]
        for x in map(json.loads, r.stdout.splitlines())
        if x.get("kind") == "record"
    ]
    assert [
        (v["version"], v["state"], v["producer_epoch"], v["client_transaction_version"])
        for v in values
    ] == [(1, "Ongoing", 2, 2), (1, "PrepareCommit", 3, 2)]


def test_describe_names_the_evidence(tmp_path):
    d = log_dir(tmp_path)
    r = invoke("describe", d, "--format", "json")
    (versions,) = [
        x["kafka_versions"]
        for x in map(json.loads, r.stdout.splitlines())
        if x["kind"] == "log_dir"
    ]
    # the coordinator's version 1 value proves 4.0 already: the partitions' markers are not read
    assert (versions["low"], [e["source"] for e in versions["evidence"]]) == (
        "4.0",
        ["TRANSACTION_STATE_VALUE"],
    )
    (d / "__transaction_state-0" / "00000000000000000000.log").unlink()
    r = invoke("describe", d, "--format", "json")
    (versions,) = [
        x["kafka_versions"]
        for x in map(json.loads, r.stdout.splitlines())
        if x["kind"] == "log_dir"
    ]
    assert (versions["low"], [e["detail"] for e in versions["evidence"]]) == (
        "4.0",
        ["COMMIT of producer 10 at offset 3, epoch 1: its data's epoch + 1"],
    )
