"""dump-log --kafka-version 3.9: kafka-dump-log 3.9.0-rc3's text, against what that tool printed
(tests/fixtures/dump-log-3.9, SOURCES.md there); the default stays 3.3.1's."""

import struct

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.transaction_state import format_transaction_record_39
from tests.helpers.paths import FIXTURES
from tests.helpers.transactions import v1_transaction_value as _v1_transaction_value

HERE = FIXTURES / "dump-log-3.9"
KIP848 = "../groups-broker-3.9-kip848/logdir"
CASES = {
    "remote-log-metadata": (
        "--remote-log-metadata-decoder",
        ["__remote_log_metadata-9/00000000000000000000.log"],
    ),
    "consumer-offsets": (
        "--offsets-decoder",
        [f"{KIP848}/__consumer_offsets-{n}/00000000000000000000.log" for n in range(3)],
    ),
    "cluster-metadata": (
        "--cluster-metadata-decoder",
        [f"{KIP848}/__cluster_metadata-0/00000000000000000000.log"],
    ),
}


def dump(monkeypatch, *args):
    monkeypatch.chdir(HERE)
    return CliRunner().invoke(cli, ["dump-log", *args])


@pytest.mark.parametrize("name", sorted(CASES))
def test_kafka_dump_log_39_goldens(monkeypatch, name):
    flag, files = CASES[name]
    r = dump(
        monkeypatch,
        "--kafka-version",
        "3.9.0-rc3",
        "--print-data-log",
        flag,
        "--files",
        ",".join(files),
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == (HERE / f"{name}.txt").read_text()


def test_the_default_is_still_331s_text(monkeypatch):
    flag, files = CASES["cluster-metadata"]
    r = dump(monkeypatch, "--print-data-log", flag, "--files", ",".join(files))
    assert (
        "payload: Error at 1, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 23" in r.stdout
    )
    assert r.stdout != (HERE / "cluster-metadata.txt").read_text()
    flag, files = CASES["consumer-offsets"]
    assert (
        "key: offset_commit::group=g848-left,partition=events-0 payload: offset="
        in dump(monkeypatch, "--print-data-log", flag, "--files", ",".join(files)).stdout
    )


KEY = struct.pack(">hh", 0, 8) + b"default_"


def test_transaction_log_39_reads_flexible_values_and_names_unknown_keys():
    value = _v1_transaction_value()
    assert format_transaction_record_39(KEY, value, 7) == (
        "transaction_metadata::transactionalId=default_",
        "producerId:13,producerEpoch:1,state=CompleteCommit,partitions=[t-1],txnLastUpdateTimestamp=5,"
        "txnTimeoutMs=60000",
    )
    assert format_transaction_record_39(b"\x00\x01\x00\x01x", None, 7) == (
        "unknown::version=1",
        None,
    )
    with pytest.raises(
        InvalidRecordError, match="Unknown version 2 from the transaction log message value"
    ):
        format_transaction_record_39(KEY, struct.pack(">h", 2) + value[2:], 7)
