"""The Kafka version range of a log dir (config.versions) and the rules that follow it: what the
dir proves bounds the next broker from below, --kafka-version states it, a rule applies where
the range agrees. On the corpus's real 4.x log dirs and on dirs written here from Kafka's schemas."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config import ConfigResolver, KafkaVersion, read_cluster_metadata
from kafkalog_cli.config.versions import (
    MAX_TIMESTAMP_EXACT,
    SHARE_GROUP_STATE_INTERNAL,
    TIERED_STORAGE,
    KafkaVersions,
    internal_topic,
    metadata_version_release,
)
from kafkalog_cli.errors import UsageError
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.corpus import corpus_path
from tests.corpus import needs_corpus as needs_corpus_at
from tests.helpers.kraft_records import config_record as _config_record
from tests.helpers.kraft_records import kraft_log_dir
from tests.helpers.kraft_records import topic_record as _topic_record
from tests.helpers.paths import EXAMPLES as EXAMPLE
from tests.helpers.transactions import v1_transaction_value as _v1_transaction_value

CORPUS = corpus_path()
WILD = CORPUS / "wild"
needs_corpus = needs_corpus_at("wild")  # real 4.x log dirs


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _feature_level(name: str, level: int) -> bytes:
    return (
        bytes([1, 12, 0])
        + bytes([len(name) + 1])
        + name.encode()
        + struct.pack(">h", level)
        + b"\x00"
    )


def _txn_record(api_key: int) -> bytes:
    return (
        bytes([1, api_key, 0]) + b"\x00"
    )  # Begin (tagged name absent), End, Abort (tagged reason absent)


# ------------------------------------------------------------------ the range
def test_metadata_version_levels_are_kafkas():
    # MetadataVersion: IBP_3_3_IV3(7), IBP_3_7_IV4(19), IBP_4_0_IV3(25), IBP_4_2_IV1(29)
    assert [metadata_version_release(n) for n in (7, 19, 25, 29)] == [
        "3.3-IV3",
        "3.7-IV4",
        "4.0-IV3",
        "4.2-IV1",
    ]


@needs_corpus
@pytest.mark.parametrize(
    "case, low, sources",
    [
        (
            "nomanazeem__Kafka-java/kafka-logs",
            "4.2",
            {"METADATA_VERSION", "DIRECTORY_ID", "CLEAN_SHUTDOWN"},
        ),
        (
            "ArthurArutunyan04__Backend_labs/kafka-data",
            "4.0",
            {"METADATA_VERSION", "DIRECTORY_ID", "CLEAN_SHUTDOWN"},
        ),
        (
            "MashaKosher__Internship/kafka/data",
            "4.0",
            {"METADATA_VERSION", "DIRECTORY_ID", "CLEAN_SHUTDOWN"},
        ),
        (
            "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data",
            "3.7",
            {"METADATA_VERSION", "DIRECTORY_ID"},
        ),
        ("Bheem6005__kafka/kafka-logs", "3.3", set()),  # ZooKeeper era: nothing bounds it
    ],
)
def test_describe_shows_the_range_of_real_log_dirs(case, low, sources):
    r = run("describe", WILD / case, "--format", "json")
    assert r.exit_code in (0, 3), r.output
    log_dir = [json.loads(x) for x in r.stdout.splitlines() if '"kind": "log_dir"' in x][0]
    v = log_dir["kafka_versions"]
    assert v["low"] == low
    assert {e["source"] for e in v["evidence"]} == sources


@needs_corpus
def test_describe_text_names_each_bound_and_refuses_an_older_stated_version():
    d = WILD / "nomanazeem__Kafka-java/kafka-logs"
    r = run("describe", d)
    assert "# Kafka version: 4.2 or later" in r.stdout
    assert "at least 4.2: metadata.version feature level 29 (4.2-IV1)" in r.stdout
    r = run("describe", d, "--kafka-version", "3.9")
    assert r.exit_code == 2
    assert "--kafka-version 3.9: the log dir needs Kafka 4.2 or later" in r.stderr


def test_a_rule_applies_where_the_range_agrees():
    none = KafkaVersions()
    assert none.decide(TIERED_STORAGE).applies is None  # 3.3 to 4.2
    assert none.with_stated(KafkaVersion.parse("3.9.0-rc3")).applies(TIERED_STORAGE) is True
    assert none.with_stated(KafkaVersion(3, 5)).applies(TIERED_STORAGE) is False
    assert internal_topic("__share_group_state", none).applies is None
    assert (
        internal_topic("__share_group_state", none.with_stated(KafkaVersion(3, 8))).applies is False
    )
    assert internal_topic("__consumer_offsets", none).applies is True
    assert internal_topic("orders", none) is None
    assert "--kafka-version" in none.decide(SHARE_GROUP_STATE_INTERNAL).refusal("x")
    with pytest.raises(UsageError):
        KafkaVersion.parse("three")


def test_metadata_version_in_the_dir_decides(tmp_path):
    d = kraft_log_dir(tmp_path / "l", [_feature_level("metadata.version", 21)])  # 3.9-IV0
    res = ConfigResolver.of_log_dir(d)
    assert str(res.versions.low) == "3.9"
    assert res.versions.decide(MAX_TIMESTAMP_EXACT).applies is True
    assert res.versions.decide(SHARE_GROUP_STATE_INTERNAL).applies is True


# ------------------------------------------------------------------ metadata transactions
def test_aborted_and_unfinished_metadata_transactions_set_no_config(tmp_path):
    d = kraft_log_dir(
        tmp_path / "l",
        [
            _topic_record("t", 1),
            _config_record(2, "t", "retention.ms", "100"),
            _txn_record(23),
            _config_record(2, "t", "retention.ms", "1"),
            _txn_record(25),  # aborted
            _txn_record(23),
            _config_record(2, "t", "retention.bytes", "5"),
            _txn_record(24),  # ended
            _txn_record(23),
            _config_record(2, "t", "cleanup.policy", "compact"),  # still open
        ],
    )
    meta = read_cluster_metadata(d)
    assert meta.topic_configs["t"] == {"retention.ms": "100", "retention.bytes": "5"}
    assert meta.aborted_transactions == 1 and meta.open_transaction


# ------------------------------------------------------------------ delete-records: internal topics
def _with_share_group_state(tmp_path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLE, d)
    shutil.copytree(d / "codec-none-0", d / "__share_group_state-0")
    (tmp_path / "offsets.json").write_text(
        '{"partitions": [{"topic": "__share_group_state", "partition": 0, "offset": 20}], "version": 1}'
    )
    return d


def test_share_group_state_is_internal_from_3_9(tmp_path):
    d = _with_share_group_state(tmp_path)
    offsets = tmp_path / "offsets.json"
    r = run("delete-records", "--dry-run", "--offset-json", offsets, d)
    assert r.exit_code == 7 and "state it with --kafka-version" in r.stderr
    r = run("delete-records", "--offset-json", offsets, "--kafka-version", "3.9", d)
    assert r.exit_code == 2
    assert (
        "INVALID_TOPIC_EXCEPTION: Cannot delete records of internal topic __share_group_state"
        in r.stderr
    )
    assert "INVALID_TOPIC" not in r.stdout
    r = run("delete-records", "--dry-run", "--offset-json", offsets, "--kafka-version", "3.8", d)
    assert (
        r.exit_code == 1 and "log start offset 0 -> 20" in r.stdout
    )  # a dry run with changes pending


def test_a_named_internal_topic_is_refused_with_before_too(tmp_path):
    d = _with_share_group_state(tmp_path)
    r = run("delete-records", "--dry-run", "--topic", "__consumer_offsets", "--before", 5, d)
    assert r.exit_code == 2
    assert "Cannot delete records of internal topic __consumer_offsets" in r.stderr
    r = run("delete-records", "--dry-run", "--before", 5, "--topic", "codec-*", d)
    assert r.exit_code == 1  # a dry run with changes pending


# ------------------------------------------------------------------ get-offsets
TS = CORPUS / "broker" / "formats" / "ts-nonmonotonic" / "before"


@needs_corpus_at("broker", "formats", "ts-nonmonotonic", "before")
def test_max_timestamp_by_version():
    def answer(*extra):
        r = run("get-offsets", TS, "--topic", "ts-jumble-zstd", "--time", "max-timestamp", *extra)
        return r.stdout.strip(), r.stderr

    out, err = answer("--kafka-version", "3.8")
    assert out == "ts-jumble-zstd:0:1083"  # the record with the largest timestamp
    assert answer("--kafka-version", "3.7")[0] == "ts-jumble-zstd:0:1084"  # the time index's offset
    out, err = answer()
    assert out == "ts-jumble-zstd:0:1084" and "3.8+: 1083, before 3.8: 1084" in err


@needs_corpus_at("broker", "formats", "ts-nonmonotonic", "before")
def test_earliest_local_and_latest_tiered_on_a_plain_partition():
    r = run("get-offsets", TS, "--topic", "ts-jumble", "--time", "earliest-local")
    assert r.stdout.strip() == "ts-jumble:0:0"
    # the broker answers UNKNOWN_OFFSET (-1), which GetOffsetShell does not print
    r = run("get-offsets", TS, "--topic", "ts-jumble", "--time", "-5", "--kafka-version", "3.9")
    assert r.exit_code == 0 and r.stdout.strip() == ""
    assert "not a remote-enabled partition" in r.stderr
    r = run(
        "get-offsets",
        TS,
        "--topic",
        "ts-jumble",
        "--time",
        "latest-tiered",
        "--kafka-version",
        "3.8",
    )
    assert r.stdout.strip() == "" and "does not know latest-tiered (3.9+)" in r.stderr


# ------------------------------------------------------------------ transactions on v1 values
def test_find_hanging_reads_flexible_v1_transaction_state(tmp_path):
    d = tmp_path / "logs"
    key = struct.pack(">h", 0) + struct.pack(">h", 3) + b"app"
    value = struct.pack(">h", 1) + write_struct(
        MESSAGES["TransactionLogValue"],
        {
            "producerId": 13,
            "previousProducerId": 12,
            "producerEpoch": 1,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 1,
            "transactionPartitions": [{"topic": "t", "partitionIds": [1]}],
            "transactionLastUpdateTimestampMs": 5,
            "transactionStartTimestampMs": 4,
            "clientTransactionVersion": 2,
        },
        1,
    )
    (d / "__transaction_state-0").mkdir(parents=True)
    (d / "__transaction_state-0" / "00000000000000000000.log").write_bytes(
        build_v2_batch([SimpleRecord(key, value, 5)], 0)
    )
    (d / "t-1").mkdir()
    (d / "t-1" / "00000000000000000000.log").write_bytes(
        build_v2_batch(
            [SimpleRecord(None, b"x", 1000)],
            0,
            producer_id=13,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
        )
    )
    (d / "replication-offset-checkpoint").write_text("0\n1\nt 1 1\n")
    r = run(
        "transactions", d, "--find-hanging", "--max-age", "0s", "--now", 10**13, "--format", "json"
    )
    assert r.exit_code == 0, r.output  # app's Ongoing transaction: the coordinator will end it
    assert "Unknown version" not in r.output


# ------------------------------------------------------------------ KAFKA-17076 (4.0 cleaner)
def _compacted_dir(root: Path) -> Path:
    """t-0: keyed records, then a batch of keyless records (the cleaner drops them) ending just
    below the active segment, where the round stops."""
    d = root / "t-0"
    d.mkdir(parents=True)
    first = build_v2_batch([SimpleRecord(b"k", b"1", 1000), SimpleRecord(b"k", b"2", 1000)], 0)
    keyless = build_v2_batch([SimpleRecord(None, b"x", 1000), SimpleRecord(None, b"y", 1000)], 2)
    (d / "00000000000000000000.log").write_bytes(first + keyless)
    (d / "00000000000000000004.log").write_bytes(
        build_v2_batch([SimpleRecord(b"k", b"3", 2000)], 4)
    )
    (root / "replication-offset-checkpoint").write_text("0\n1\nt 0 5\n")
    return root


@pytest.mark.parametrize("version, kept", [("3.9", []), ("4.0", [(2, 3)])])
def test_the_4_0_cleaner_keeps_the_last_batch_of_a_round_empty(tmp_path, version, kept):
    from kafkalog_cli.formats.records import iter_batches
    from kafkalog_cli.ops import compact
    from kafkalog_cli.storage.fsops import FsOps
    from kafkalog_cli.storage.quarantine_writer import Quarantine

    d = _compacted_dir(tmp_path / "l")
    res = ConfigResolver(
        overrides={
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "delete.retention.ms": "0",
        },
        kafka_versions=KafkaVersions().with_stated(KafkaVersion.parse(version)),
    )
    opts = compact.CompactOptions(now_ms=10**13, resolver=res, force=True)
    cp = compact.plan(d, [d / "t-0"], opts)
    compact.apply(cp, FsOps(d, Quarantine(None, "compact")), opts)
    batches = [
        (b.base_offset, b.last_offset, b.records_count)
        for b in iter_batches((d / "t-0" / "00000000000000000000.log").read_bytes())
    ]
    assert [(b, last) for b, last, n in batches if n == 0] == kept
    assert batches[0][:2] == (0, 1)  # the keyed batch: its latest record, 1, stays


def test_segment_bytes_floor_of_4_0_on_the_command_line():
    r = run(
        "roll", "--dry-run", "--kafka-version", "4.0", "--config", "segment.bytes=1000", EXAMPLE
    )
    assert r.exit_code == 2 and "at least 1048576 from Kafka 4.0, KIP-1030" in r.stderr
    r = run(
        "roll", "--dry-run", "--kafka-version", "3.9", "--config", "segment.bytes=1000", EXAMPLE
    )
    assert r.exit_code == 1  # a dry run with changes pending


# ------------------------------------------------------------------ records only 4.0+ writes
def _internal_dir(root: Path, name: str, key: bytes, value: bytes | None) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "00000000000000000000.log").write_bytes(
        build_v2_batch([SimpleRecord(key, value, 5)], 0)
    )
    return root


def _evidence(d: Path) -> list[dict]:
    r = run("describe", d, "--format", "json")
    return [json.loads(x) for x in r.stdout.splitlines() if '"kind": "log_dir"' in x][0][
        "kafka_versions"
    ]["evidence"]


def test_a_flexible_transaction_state_value_proves_4_0(tmp_path):
    key = struct.pack(">hh", 0, 3) + b"app"
    d = _internal_dir(tmp_path / "logs", "__transaction_state-0", key, _v1_transaction_value())
    path = str(d / "__transaction_state-0" / "00000000000000000000.log")
    assert _evidence(d) == [
        {
            "source": "TRANSACTION_STATE_VALUE",
            "at_least": "4.0",
            "detail": "1 at offset 0 (transaction.version >= 1)",
            "path": path,
        }
    ]
    r = run("describe", d)
    assert (
        f"#   at least 4.0: __transaction_state value version 1 at offset 0 (transaction.version >= 1) "
        f"({path})"
    ) in r.stdout
    assert run("describe", d, "--kafka-version", "3.9").exit_code == 2  # older than the dir proves


def test_share_group_state_and_new_group_records_prove_4_0(tmp_path):
    share_key = struct.pack(">h", 0) + write_struct(
        MESSAGES["ShareSnapshotKey"],
        {"groupId": "sg", "topicId": bytes(range(16)), "partition": 0},
        0,
    )
    share_value = struct.pack(">h", 0) + write_struct(
        MESSAGES["ShareSnapshotValue"],
        {
            "snapshotEpoch": 0,
            "stateEpoch": 0,
            "leaderEpoch": 0,
            "startOffset": 0,
            "createTimestamp": 1,
            "writeTimestamp": 1,
            "deliveryCompleteCount": -1,
            "stateBatches": [],
        },
        0,
    )
    d = _internal_dir(tmp_path / "logs", "__share_group_state-0", share_key, share_value)
    regex_key = struct.pack(">h", 16) + write_struct(
        MESSAGES["ConsumerGroupRegularExpressionKey"],
        {"groupId": "g", "regularExpression": "t.*"},
        16,
    )
    _internal_dir(d, "__consumer_offsets-0", regex_key, None)
    assert [(e["source"], e["at_least"], e["detail"]) for e in _evidence(d)] == [
        (
            "SHARE_GROUP_STATE_RECORD",
            "4.0",
            "ShareSnapshot at offset 0 (the share coordinator, KIP-932)",
        ),
        (
            "GROUP_RECORD_TYPE",
            "4.0",
            "16 (ConsumerGroupRegularExpression) at offset 0 (unknown to 3.9's group coordinator)",
        ),
    ]


def test_what_33_to_39_write_proves_nothing(tmp_path):
    # a version 0 transaction value, a classic offset commit, bytes in the share topic that are no record of it
    key = struct.pack(">hh", 0, 3) + b"app"
    d = _internal_dir(
        tmp_path / "logs", "__transaction_state-0", key, b"\x00\x00" + _v1_transaction_value()[2:]
    )
    _internal_dir(d, "__share_group_state-0", b"just a key", b"v")
    assert _evidence(d) == []
    assert {e["source"] for e in _evidence(EXAMPLE)} == {
        "METADATA_VERSION"
    }  # 3.3.1's own internal topics
