"""dump-log --kafka-version 3.4 to 3.8 and 4.0: kafka-dump-log's text of each release, as its
differences from the texts kafkalog checks byte for byte (3.3.1's, 3.9.0-rc3's goldens in
tests/fixtures/dump-log-3.9, 4.2's). Each expectation is derived from the rule the release's
source states (config.versions DUMP_LOG_*; docs/kafka-4-parity.md cites the source), on real
broker files: the 3.9 broker's KIP-848 log dir, a 4.2 broker's __consumer_offsets (offset commits
of the flexible version 4) and __cluster_metadata, a 4.0 broker's __cluster_metadata, a 3.9
broker's __remote_log_metadata; and on records built here where no broker file has them."""

from __future__ import annotations

import json
import lzma
import re
import struct

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config.versions import KNOWN_VERSIONS
from kafkalog_cli.errors import ExitCode
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.helpers.paths import FIXTURES, INTERNAL
from tests.helpers.transactions import v1_transaction_value

GOLDEN_39 = FIXTURES / "dump-log-3.9"
KIP848 = FIXTURES / "groups-broker-3.9-kip848" / "logdir"
OFFSETS_39 = [KIP848 / f"__consumer_offsets-{n}" / "00000000000000000000.log" for n in range(3)]
METADATA_39 = KIP848 / "__cluster_metadata-0" / "00000000000000000000.log"
REMOTE_39 = GOLDEN_39 / "__remote_log_metadata-9" / "00000000000000000000.log"
BEFORE_JSON_OFFSETS = ["3.4", "3.5", "3.6", "3.7"]  # 3.4 is 3.4.1 (KIP-915 backported)


def dump(*args, cwd=None, monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, ["dump-log", *map(str, args)])


def records(stdout: str) -> list[str]:
    """The `| offset: ...` lines."""
    return [line for line in stdout.splitlines() if line.startswith("| offset: ")]


@pytest.fixture
def internal(tmp_path):
    """An xz fixture of tests/fixtures/internal as a segment file to dump."""

    def unpack(name: str):
        seg = tmp_path / name.split(".")[0] / "00000000000000000000.log"
        seg.parent.mkdir()
        seg.write_bytes(lzma.decompress((INTERNAL / name).read_bytes()))
        return seg

    return unpack


def segment(tmp_path, *pairs: tuple[bytes | None, bytes | None]):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_v2_batch([SimpleRecord(k, v, 1_700_000_000_000) for k, v in pairs], 0))
    return path


# ------------------------------------------------------------------ every version has a text
@pytest.mark.parametrize("version", [str(v) for v in KNOWN_VERSIONS])
def test_every_version_the_rules_know_prints_text(version):
    r = dump("--kafka-version", version, "--offsets-decoder", "--files", OFFSETS_39[0])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"Dumping {OFFSETS_39[0]}\n") and records(r.stdout)


def test_a_version_after_the_newest_is_still_a_usage_error():
    r = dump("--kafka-version", "4.3", "--files", OFFSETS_39[0])
    assert r.exit_code == ExitCode.USAGE and r.stderr.startswith("kafkalog: --kafka-version 4.3:")


# ------------------------------------------------------------------ --offsets-decoder
def _offsets(version, files, monkeypatch=None):
    r = dump(
        *(["--kafka-version", version] if version else []),
        "--print-data-log",
        "--offsets-decoder",
        "--files",
        ",".join(map(str, files)),
        cwd=GOLDEN_39,
        monkeypatch=monkeypatch,
    )
    assert r.exit_code == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("version", ["3.8", "4.0"])
def test_offsets_as_json_from_3_8_equal_the_3_9_golden(monkeypatch, version):
    """3.8's OffsetsMessageParser is 3.9's (KAFKA-16470); 4.0 reads more record types (9-16) with
    the same parser and JsonConverters: on a 3.9 broker's records all three print alike."""
    files = [
        f"../groups-broker-3.9-kip848/logdir/__consumer_offsets-{n}/00000000000000000000.log"
        for n in range(3)
    ]
    assert _offsets(version, files, monkeypatch) == (GOLDEN_39 / "consumer-offsets.txt").read_text()


def _unknown_key_line(line: str) -> str:
    """3.4.1 to 3.7: a record whose key version is not 0-2 prints `unknown::version=N`, no payload."""
    head, key = line.split(" key: ", 1)
    return f"{head} key: unknown::version={json.loads(key.split(' payload: ')[0])['type']}"


@pytest.mark.parametrize("version", BEFORE_JSON_OFFSETS)
def test_offsets_before_3_8_print_unknown_keys_as_their_version(version):
    default = records(_offsets(None, OFFSETS_39))
    expected = [_unknown_key_line(line) if ' key: {"type":"' in line else line for line in default]
    assert sum(" key: unknown::version=" in line for line in expected) == 17  # types 3-8
    assert records(_offsets(version, OFFSETS_39)) == expected
    assert records(_offsets("3.3", OFFSETS_39)) == default  # 3.3.1 (and 3.4.0) die there


def _offset_commit_331(line: str) -> str:
    """A version 4 offset commit, which 3.3.1 cannot read (kafkalog then prints 4.2's JSON), in
    3.3.1's words, as 3.4.1 to 3.7 print it (GroupMetadataManager.formatRecordKeyAndValue)."""
    head, rest = line.split(" key: ", 1)
    key, value = (json.loads(part) for part in rest.split(" payload: "))
    k, v = key["data"], value["data"]
    assert value["version"] == "4"
    payload = f"offset={v['offset']}" + (f",metadata={v['metadata']}" if v["metadata"] else "")
    return f"{head} key: offset_commit::group={k['group']},partition={k['topic']}-{k['partition']} payload: {payload}"


@pytest.mark.parametrize("version", BEFORE_JSON_OFFSETS)
def test_offsets_before_3_8_read_the_flexible_version_4(internal, version):
    log = internal("nomanazeem-co-15-0.log.xz")  # a 4.2 broker's offset commits: value version 4
    default = records(_offsets(None, [log]))
    expected = [_offset_commit_331(line) if '"version":"4"' in line else line for line in default]
    assert sum(a != b for a, b in zip(default, expected)) == 252
    assert records(_offsets(version, [log])) == expected


def test_offsets_of_4_0_read_the_regular_expression_records(tmp_path):
    key = struct.pack(">h", 16) + write_struct(
        MESSAGES["ConsumerGroupRegularExpressionKey"],
        {"groupId": "g", "regularExpression": "t.*"},
        16,
    )
    value = struct.pack(">h", 0) + write_struct(
        MESSAGES["ConsumerGroupRegularExpressionValue"],
        {"topics": ["t1"], "version": 3, "timestamp": 5},
        0,
    )
    log = segment(tmp_path, (key, value))
    line = records(_offsets("4.0", [log]))[0]
    assert line.endswith(
        ' key: {"type":"16","data":{"groupId":"g","regularExpression":"t.*"}} payload: '
        '{"version":"0","data":{"topics":["t1"],"version":3,"timestamp":5}}'
    )
    assert records(_offsets("3.9", [log]))[0].endswith(
        " key: Unknown record type 16 at offset 0, skipping."
    )


def test_from_4_0_a_value_of_an_unknown_version_is_skipped(tmp_path):
    """CoordinatorRecordSerde.deserialize's UnknownRecordVersionException (KAFKA-18672, 4.0)."""
    key = struct.pack(">h", 1) + write_struct(
        MESSAGES["OffsetCommitKey"], {"group": "g", "topic": "t", "partition": 0}, 1
    )
    value = struct.pack(">h", 5) + bytes(40)
    log = segment(tmp_path, (key, value))
    skipped = " key: Error at offset 0, skipping. Found an unknown record version 5 for 1 type"
    for version in ("4.0", "4.1", "4.2"):
        assert records(_offsets(version, [log]))[0].endswith(skipped), version
    assert not records(_offsets("3.9", [log]))[0].endswith(skipped)


# ------------------------------------------------------------------ --transaction-log-decoder
TXN_KEY = struct.pack(">hh", 0, 8) + b"default_"


def _transactions(version, log):
    return dump(
        *(["--kafka-version", version] if version else []),
        "--transaction-log-decoder",
        "--files",
        log,
    )


@pytest.mark.parametrize("version", ["3.4", "3.5", "3.6", "3.7", "3.8", "3.9", "4.0"])
def test_transactions_from_3_4_1_to_4_0_print_3_9s_text(tmp_path, version):
    log = segment(
        tmp_path, (TXN_KEY, v1_transaction_value()), (struct.pack(">hh", 1, 1) + b"x", None)
    )
    r = _transactions(version, log)
    assert r.exit_code == 0, r.stderr
    assert [line.split("headerKeys: [] ", 1)[1] for line in records(r.stdout)] == [
        "key: transaction_metadata::transactionalId=default_ payload: producerId:13,producerEpoch:1,"
        "state=CompleteCommit,partitions=[t-1],txnLastUpdateTimestamp=5,txnTimeoutMs=60000",
        "key: unknown::version=1",
    ]
    default = _transactions(None, log)  # 3.3.1 cannot read either: kafkalog prints 4.2's JSON
    assert records(default.stdout)[0].split(" key: ")[1].startswith('{"type":"0"')


def test_transactions_of_4_0_die_on_a_transaction_version_it_does_not_know(tmp_path):
    unknown = struct.pack(">h", 1) + write_struct(
        MESSAGES["TransactionLogValue"],
        {
            "producerId": 13,
            "previousProducerId": -1,
            "producerEpoch": 1,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 4,
            "transactionPartitions": [],
            "transactionLastUpdateTimestampMs": 5,
            "transactionStartTimestampMs": 4,
            "clientTransactionVersion": 3,
        },
        1,
    )
    log = segment(tmp_path, (TXN_KEY, unknown))
    r = _transactions("4.0", log)
    assert r.exit_code == ExitCode.CORRUPT
    assert r.stderr.startswith(f"kafkalog: {log}") and (
        "No feature:transaction.version with feature level 3" in r.stderr
    )
    assert _transactions("3.9", log).exit_code == 0


# ------------------------------------------------------------------ --cluster-metadata-decoder
# what each release's MetadataRecordType knows (metadata/src/main/resources/common/metadata at the
# release): apiKey -> newest version, where it differs from 4.2's
_KNOWN_33 = {k: None for k in (*range(0, 13), 14, 15, 17, 18, 19, 20)}
KNOWN = {
    "3.4": {**_KNOWN_33, 0: 2, 3: 0, 5: 0, 17: 1, 21: None},
    "3.5": {**{k: None for k in _KNOWN_33 if k != 6}, 0: 2, 3: 0, 5: 0, 17: 1, 21: None, 22: None},
}
KNOWN["3.6"] = {**KNOWN["3.5"], **{k: None for k in (23, 24, 25, 26)}}
KNOWN["3.7"] = {k: None for k in (*KNOWN["3.6"], 27)}
KNOWN["3.8"] = KNOWN["3.7"]
KNOWN["4.0"] = {**KNOWN["3.8"], 28: None}
SAME_VERSION_OTHER_FIELDS = {"3.4": {10, 11}, "3.5": {10}}  # older layouts of the same version
TYPE_IDS = {
    "REGISTER_BROKER_RECORD": 0, "UNREGISTER_BROKER_RECORD": 1, "TOPIC_RECORD": 2,
    "PARTITION_RECORD": 3, "CONFIG_RECORD": 4, "PARTITION_CHANGE_RECORD": 5,
    "ACCESS_CONTROL_RECORD": 6, "FENCE_BROKER_RECORD": 7, "UNFENCE_BROKER_RECORD": 8,
    "REMOVE_TOPIC_RECORD": 9, "DELEGATION_TOKEN_RECORD": 10, "USER_SCRAM_CREDENTIAL_RECORD": 11,
    "FEATURE_LEVEL_RECORD": 12, "CLIENT_QUOTA_RECORD": 14, "PRODUCER_IDS_RECORD": 15,
    "BROKER_REGISTRATION_CHANGE_RECORD": 17, "ACCESS_CONTROL_ENTRY_RECORD": 18,
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": 19, "NO_OP_RECORD": 20, "ZK_MIGRATION_STATE_RECORD": 21,
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": 22, "BEGIN_TRANSACTION_RECORD": 23,
    "END_TRANSACTION_RECORD": 24, "ABORT_TRANSACTION_RECORD": 25,
    "REMOVE_DELEGATION_TOKEN_RECORD": 26, "REGISTER_CONTROLLER_RECORD": 27, "CLEAR_ELR_RECORD": 28,
}  # fmt: skip


def _metadata(version, log):
    r = dump("--kafka-version", version, "--cluster-metadata-decoder", "--files", log)
    assert r.exit_code == 0, r.stderr
    return records(r.stdout)


def _expected_metadata_line(release: str, line_42: str) -> str | None:
    """What `release` prints for the record 4.2 printed as `line_42`; None where the rule says
    only that it reads the record with its own, older layout (a version newer than it knows)."""
    if " payload: " not in line_42:  # a control record: LeaderChange decoded from 4.1 on only
        return (
            line_42.split(" LeaderChange: ")[0].replace(
                "headerKeys: []", "headerKeys: [] controlType: LEADER_CHANGE(2)", 1
            )
            if " LeaderChange: " in line_42
            else line_42
        )
    head, payload = line_42.split(" payload: ", 1)
    if payload.startswith("Error at "):
        return line_42
    rec = json.loads(payload)
    api_key, known = TYPE_IDS[rec["type"]], KNOWN[release]
    offset = re.match(r"\| offset: (\d+) ", head).group(1)
    if api_key not in known:
        return (
            f"{head} payload: Error at {offset}, skipping. "
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
        )
    newest = known[api_key]
    if (newest is not None and rec["version"] > newest) or api_key in SAME_VERSION_OTHER_FIELDS.get(
        release, ()
    ):
        return None
    if release == "3.7":  # LastKnownELR, renamed LastKnownElr in 3.8 (KAFKA-15585)
        payload = payload.replace('"lastKnownElr":', '"lastKnownELR":')
    return f"{head} payload: {payload}"


@pytest.mark.parametrize("release", sorted(KNOWN))
@pytest.mark.parametrize(
    "log", ["kip848-3.9", "ArthurArutunyan04-cm-0-0.log.xz", "nomanazeem-cm-0-0.log.xz"]
)
def test_metadata_records_each_release_knows(internal, release, log):
    path = METADATA_39 if log == "kip848-3.9" else internal(log)
    newest, printed = _metadata("4.2", path), _metadata(release, path)
    assert len(printed) == len(newest)
    checked = 0
    for line_42, line in zip(newest, printed):
        expected = _expected_metadata_line(release, line_42)
        if expected is None:  # read with the older layout: the same record, or an error
            assert line.split(" payload: ")[0] == line_42.split(" payload: ")[0]
            continue
        assert line == expected
        checked += 1
    assert checked > len(newest) // 2


def test_metadata_of_3_6_cannot_read_a_3_7_controller_registration():
    assert any(
        line.endswith("UnsupportedVersionException: Unknown metadata id 27")
        for line in _metadata("3.6", METADATA_39)
    )
    assert all("Unknown metadata id" not in line for line in _metadata("3.7", METADATA_39))


@pytest.mark.parametrize("release", ["3.8", "4.0"])
def test_metadata_of_3_8_and_4_0_equal_the_3_9_golden_on_a_3_9_log(monkeypatch, release):
    r = dump(
        "--kafka-version",
        release,
        "--print-data-log",
        "--cluster-metadata-decoder",
        "--files",
        "../groups-broker-3.9-kip848/logdir/__cluster_metadata-0/00000000000000000000.log",
        cwd=GOLDEN_39,
        monkeypatch=monkeypatch,
    )
    assert r.stdout == (GOLDEN_39 / "cluster-metadata.txt").read_text()


def test_metadata_decoder_version_must_name_the_same_text():
    ok = dump(
        "--kafka-version", "3.8", "--metadata-decoder-version", "3.9",
        "--cluster-metadata-decoder", "--files", METADATA_39,
    )  # fmt: skip
    clash = dump(
        "--kafka-version", "3.7", "--metadata-decoder-version", "3.9",
        "--cluster-metadata-decoder", "--files", METADATA_39,
    )  # fmt: skip
    assert ok.exit_code == 0 and clash.exit_code == ExitCode.USAGE
    assert "name two kafka-dump-logs" in clash.stderr


# ------------------------------------------------------------------ --remote-log-metadata-decoder
def _remote(version):
    r = dump(
        *(["--kafka-version", version] if version else []),
        "--remote-log-metadata-decoder",
        "--files",
        REMOTE_39,
    )
    assert r.exit_code == 0, r.stderr
    return records(r.stdout)


def test_remote_log_metadata_txn_idx_empty_from_4_0():
    """The decoder came with 3.9 (KAFKA-16228), whose text has no txnIdxEmpty; 4.0's has it
    (KAFKA-16780). Before 3.9 kafkalog prints the newest text, as by default."""
    newest = _remote(None)
    assert any(", txnIdxEmpty=" in line for line in newest)
    assert _remote("4.0") == _remote("4.2") == newest
    for version in ("3.4", "3.5", "3.6", "3.7", "3.8"):
        assert _remote(version) == newest, version
    assert _remote("3.9") == [re.sub(r", txnIdxEmpty=(true|false)", "", line) for line in newest]


# ------------------------------------------------------------------ --share-group-state-decoder
TOPIC_ID = bytes(range(16))


def _share_snapshot_40() -> tuple[bytes, bytes]:
    """A ShareSnapshot record as Kafka 4.0 writes it (ShareSnapshotValue.json at 4ae681446f:
    SnapshotEpoch a uint16, no timestamps)."""
    key = struct.pack(">hh", 0, 1) + b"g" + TOPIC_ID + struct.pack(">i", 0)
    batch = struct.pack(">qqbh", 10, 12, 0, 1) + b"\x00"  # StateBatch and its tagged fields
    value = struct.pack(">hHiiq", 0, 1, 2, 3, 10) + b"\x02" + batch + b"\x00"
    return key, value


def _share(version, log):
    return dump(
        *(["--kafka-version", version] if version else []),
        "--share-group-state-decoder",
        "--files",
        log,
    )


def test_share_group_state_of_4_0(tmp_path):
    """4.0's ShareGroupStateMessageParser (KAFKA-17633): 4.0's schemas, the value's version
    labelled "type"; 4.1 changed both (the newest text, kafkalog's before 4.0 too)."""
    log = segment(tmp_path, _share_snapshot_40())
    r = _share("4.0", log)
    assert r.exit_code == 0, r.stderr
    assert records(r.stdout)[0].split("headerKeys: [] ", 1)[1] == (
        'key: {"type":"0","data":{"groupId":"g","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":0}} '
        'payload: {"type":"0","data":{"snapshotEpoch":1,"stateEpoch":2,"leaderEpoch":3,'
        '"startOffset":10,"stateBatches":[{"firstOffset":10,"lastOffset":12,"deliveryState":0,'
        '"deliveryCount":1}]}}'
    )
    newest = records(_share("4.2", log).stdout)
    assert newest == records(_share("4.1", log).stdout) == records(_share(None, log).stdout)
    assert newest != records(r.stdout)


def test_share_group_state_of_4_0_names_its_decoder_on_a_missing_key(tmp_path):
    log = segment(tmp_path, (None, _share_snapshot_40()[1]))
    r = _share("4.0", log)
    assert r.exit_code == ExitCode.CORRUPT
    assert "Failed to decode message at offset 0 using share group state topic decoder" in r.stderr
    assert "using the specified decoder" in _share("4.2", log).stderr
