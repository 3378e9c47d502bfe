"""What a log dir proves about the Kafka version that wrote it, Kafka 3.9 and 4.x evidence: the
KRaftVersion and KRaftVoters control records (3.9+, KIP-853) in the metadata log, beside what
config.versions already reads (metadata.version, directory.id, .kafka_cleanshutdown, 4.0+
coordinator records); describe names each; --kafka-version takes 3.3 to 4.2."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config.versions import (
    KNOWN_VERSIONS_TEXT,
    read_kafka_versions,
    rules_summary,
    stated_version,
)
from kafkalog_cli.errors import UsageError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.corpus import corpus_path

WILD = corpus_path() / "wild"
needs_corpus = pytest.mark.skipif(not WILD.is_dir(), reason="needs the corpus's real 4.x log dirs")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _control(type_id: int, value: bytes, offset: int) -> bytes:
    return build_v2_batch(
        [SimpleRecord(struct.pack(">hh", 0, type_id), value, 1_700_000_000_000)],
        offset,
        is_control=True,
    )


def metadata_log_dir(tmp_path, *batches: bytes) -> Path:
    d = tmp_path / "logdir"
    (d / "__cluster_metadata-0").mkdir(parents=True)
    (d / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=ytU2o_qzT-eCvGOTk9Y8iw\n")
    (d / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"".join(batches))
    return d


LEADER_CHANGE = (
    bytes.fromhex("0000000000010000000000010000000001") + b"\0\0"
)  # not read for evidence
KRAFT_VERSION_1 = b"\0\0\0\1\0"  # KRaftVersionRecord v0: kRaftVersion 1, no tags


def test_a_kraft_version_record_proves_3_9(tmp_path):
    d = metadata_log_dir(tmp_path, _control(2, LEADER_CHANGE, 0), _control(5, KRAFT_VERSION_1, 1))
    v = read_kafka_versions(d)
    assert str(v.low) == "3.9"
    assert [str(e) for e in v.evidence] == [
        f"KRaft control record KRaftVersion at offset 1 (kraft.version 1, KIP-853) in "
        f"{d / '__cluster_metadata-0' / '00000000000000000000.log'}: Kafka 3.9 or later"
    ]
    r = run("describe", d, "--format", "json")
    log_dir = [json.loads(x) for x in r.stdout.splitlines() if '"kind": "log_dir"' in x][0]
    assert log_dir["kafka_versions"]["low"] == "3.9"
    assert [e["source"] for e in log_dir["kafka_versions"]["evidence"]] == ["KRAFT_CONTROL_RECORD"]
    r = run("describe", d)
    assert "#   at least 3.9: KRaft control record KRaftVersion at offset 1" in r.stdout


def test_a_leader_change_alone_proves_nothing(tmp_path):
    d = metadata_log_dir(tmp_path, _control(2, LEADER_CHANGE, 0))
    assert read_kafka_versions(d).evidence == ()


def test_a_damaged_metadata_log_proves_nothing(tmp_path):
    d = metadata_log_dir(tmp_path, _control(5, KRAFT_VERSION_1, 0)[:-3])
    assert read_kafka_versions(d).evidence == ()


@pytest.mark.parametrize(
    "text, version",
    [
        ("3.3", "3.3"),
        ("3.4", "3.4"),
        ("3.8.1", "3.8"),
        ("4.0.0", "4.0"),
        ("4.1", "4.1"),
        ("4.2.0", "4.2"),
        ("2.8", "3.3"),
    ],
)
def test_kafka_version_takes_every_version_the_rules_know(text, version):
    assert str(stated_version(text)) == version


def test_a_release_newer_than_the_rules_is_a_usage_error():
    with pytest.raises(
        UsageError,
        match="kafkalog knows the rules of Kafka 3.3, 3.4, 3.5, 3.6, 3.7, 3.8, 3.9, 4.0, 4.1, 4.2",
    ):
        stated_version("4.3")
    r = run(
        "get-offsets",
        Path(__file__).resolve().parents[1] / "examples" / "logdir",
        "--kafka-version",
        "5.0",
    )
    assert (
        r.exit_code == 2
        and "--kafka-version 5.0: kafkalog knows the rules of Kafka 3.3" in r.stderr
    )


@pytest.mark.parametrize(
    "command", ["get-offsets", "describe", "retain", "compact", "roll", "delete-records"]
)
def test_help_names_the_versions_and_what_changes(command):
    r = run(command, "--help")
    if "--kafka-version" not in r.stdout:
        pytest.skip(f"{command} has no --kafka-version")
    text = "".join(r.stdout.split())  # click wraps lines, at blanks and hyphens
    assert "".join(KNOWN_VERSIONS_TEXT.split()) in text
    assert "4.2+ListOffsetsearliest-pending-upload(-6)" in text


def test_rules_summary_is_in_version_order():
    assert rules_summary().startswith("3.5+ ListOffsets earliest-local (-4); 3.6+")
    assert rules_summary().endswith("4.2+ ListOffsets earliest-pending-upload (-6)")


@needs_corpus
def test_real_4_2_dir_is_refused_to_4_1_tools_and_start_up():
    d = WILD / "nomanazeem__Kafka-java" / "kafka-logs"  # metadata.version 29 (4.2-IV1)
    assert str(read_kafka_versions(d).low) == "4.2"
    r = run("describe", d, "--kafka-version", "4.1")
    assert r.exit_code == 2 and "the log dir needs Kafka 4.2 or later" in r.stderr
    r = run("doctor", d, "--kafka-version", "4.1", "--format", "json")
    assert r.exit_code == 8
    assert any(
        "Valid feature levels are from 7 to 27." in f["broker"]
        for f in json.loads(r.stdout)["findings"]
    )


# a log dir the 4.0.0-SNAPSHOT broker (trunk 1eb76443) wrote with transactions version 2 (t33-tv2's run)
SNAPSHOT_DIR = (
    Path(
        __import__("os").environ.get(
            "KAFKALOG_TV2_EXAMPLE", "/opt/kafka-4.0.0-SNAPSHOT-tv2-example"
        )
    )
    / "data"
)


@pytest.mark.skipif(
    not SNAPSHOT_DIR.is_dir(), reason=f"needs {SNAPSHOT_DIR} (a 4.0.0-SNAPSHOT broker's log dir)"
)
def test_the_snapshot_brokers_log_dir_proves_4_0_and_starts_4_0_only():
    v = read_kafka_versions(SNAPSHOT_DIR)
    assert str(v.low) == "4.0"
    assert {e.source.name for e in v.evidence} >= {
        "METADATA_VERSION",
        "DIRECTORY_ID",
        "CLEAN_SHUTDOWN",
        "TRANSACTION_STATE_VALUE",
    }
    r = run("doctor", SNAPSHOT_DIR, "--kafka-version", "4.0", "--format", "json")
    assert not [f for f in json.loads(r.stdout)["findings"] if f["check"] == "metadata.version"]
    r = run("doctor", SNAPSHOT_DIR, "--kafka-version", "3.9", "--format", "json")
    assert r.exit_code == 8
    assert any(
        "No MetadataVersion with feature level 24. Valid feature levels are from 1 to 21."
        in f["broker"]
        for f in json.loads(r.stdout)["findings"]
    )
