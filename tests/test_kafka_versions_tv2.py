"""Transactions version 2 as version evidence (config.versions.TRANSACTIONS_V2): a COMMIT marker
one producer epoch above its transaction's data is written only by a Kafka 4.0+ coordinator with
transaction.version 2 (TransactionMetadata.prepareAbortOrCommit); an ABORT one epoch up is not
proof (TV0/TV1 fencing aborts at a bumped epoch: prepareFenceProducerEpoch)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config.versions import TRANSACTIONS_V2, KafkaVersion, read_kafka_versions

from .ops.test_transactions_v2 import ABORT, COMMIT, data, marker


def _log_dir(root: Path, batches: list[bytes], name: str = "t-0") -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "00000000000000000000.log").write_bytes(b"".join(batches))
    return root


def _evidence(d: Path) -> list[dict]:
    r = CliRunner().invoke(cli, ["describe", str(d), "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    return [json.loads(x) for x in r.stdout.splitlines() if '"kind": "log_dir"' in x][0][
        "kafka_versions"
    ]["evidence"]


def test_a_commit_one_epoch_above_its_data_proves_4_0(tmp_path):
    d = _log_dir(
        tmp_path / "logs",
        [data(0, 10, 0, n=2), data(2, 11, 3, txn=False), marker(3, 10, 1, COMMIT)],
    )
    path = str(d / "t-0" / "00000000000000000000.log")
    assert _evidence(d) == [
        {
            "source": "TRANSACTIONS_V2_MARKER",
            "at_least": "4.0",
            "path": path,
            "detail": "COMMIT of producer 10 at offset 3, epoch 1: its data's epoch + 1",
        }
    ]
    assert read_kafka_versions(d).decide(TRANSACTIONS_V2).applies is True
    # a broker older than 4.0 cannot have written it
    r = CliRunner().invoke(cli, ["describe", str(d), "--kafka-version", "3.9"])
    assert r.exit_code == 2 and "needs Kafka 4.0 or later" in r.output


def test_markers_at_their_datas_epoch_or_a_fencing_abort_prove_nothing(tmp_path):
    tv1 = [
        data(0, 10, 0),
        marker(1, 10, 0, COMMIT),
        data(2, 10, 0, seq=1),
        marker(3, 10, 1, ABORT),
        marker(4, 12, 7, COMMIT),
    ]  # a marker without its data in the walk: its epoch says nothing
    d = _log_dir(tmp_path / "logs", tv1)
    assert _evidence(d) == []
    versions = read_kafka_versions(d)
    assert versions.low == KafkaVersion(3, 3)
    assert versions.decide(TRANSACTIONS_V2).applies is None  # 3.3 to 4.2: the range disagrees
