"""dump-log --kafka-version 4.1 and later: kafka-dump-log 4.1+ decodes the KRaft LeaderChange
control record (KAFKA-19069: DumpLogSegments prints ` LeaderChange: ` and the record's
LeaderChangeMessageJsonConverter JSON where 3.3.1 to 4.0 print `controlType: LEADER_CHANGE(2)`);
the default text is unchanged; --format json's `control` holds the decoded `body` from 4.1 on.
Goldens: tests/fixtures/dump-log-4.1/ (written by this code from the files named, each checked
against Kafka 4.1's DumpLogSegments and LeaderChangeMessage.json by reading them)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import ExitCode
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.corpus import corpus_path

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = ROOT / "fixtures" / "dump-log-4.1"
# a Kafka 3.3.1 broker's metadata log (tests/fixtures/corpus/README.md): its first batch is a LeaderChange
BASIC = (
    ROOT
    / "fixtures"
    / "corpus"
    / "broker"
    / "formats"
    / "basic"
    / "before"
    / "__cluster_metadata-0"
    / "00000000000000000000.log"
)
WILD = corpus_path() / "wild"
needs_corpus = pytest.mark.skipif(not WILD.is_dir(), reason="needs the corpus's real 4.x log dirs")


def dump(*args):
    return CliRunner().invoke(cli, ["dump-log", *map(str, args)])


@pytest.mark.parametrize("version", ["4.1", "4.2"])
def test_leader_change_text_matches_golden_and_only_it_differs(version):
    new = dump("--files", BASIC, "--deep-iteration", "--kafka-version", version)
    assert new.exit_code == 0, new.stderr
    head = (GOLDENS / "basic-cluster-metadata.head.txt").read_text()
    assert (
        new.stdout.split("\n", 1)[1].startswith(head) and "LeaderChange: " in head
    )  # after `Dumping <path>`
    default = dump("--files", BASIC, "--deep-iteration")
    changed = [
        (a, b) for a, b in zip(default.stdout.splitlines(), new.stdout.splitlines()) if a != b
    ]
    assert changed == [
        (
            "| offset: 0 CreateTime: 1795247580799 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
            "controlType: LEADER_CHANGE(2)",
            "| offset: 0 CreateTime: 1795247580799 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
            'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}',
        )
    ]


@pytest.mark.parametrize("version", [None, "3.3", "3.9", "4.0"])
def test_before_4_1_the_text_is_unchanged(version):
    args = ["--files", BASIC, "--deep-iteration"] + (
        ["--kafka-version", version] if version else []
    )
    r = dump(*args)
    assert (
        r.exit_code == 0
        and " controlType: LEADER_CHANGE(2)\n" in r.stdout
        and "LeaderChange:" not in r.stdout
    )


def _control(version):
    args = ["--files", BASIC, "--deep-iteration", "--format", "json"] + (
        ["--kafka-version", version] if version else []
    )
    r = dump(*args)
    assert r.exit_code == 0, r.stderr
    return [
        o["control"]
        for o in map(json.loads, r.stdout.splitlines())
        if o.get("is_control") and o["kind"] == "record"
    ]


def test_json_control_gains_the_body_from_4_1():
    assert _control(None) == _control("4.0") == [{"type": "LEADER_CHANGE", "type_id": 2}]
    assert _control("4.1") == json.loads(
        (GOLDENS / "basic-cluster-metadata.control.json").read_text()
    )


def test_a_leader_change_that_does_not_read_stops_text_and_json_alike(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(
        build_v2_batch(
            [SimpleRecord(struct.pack(">hh", 0, 2), b"\0\0\0", 1_700_000_000_000)],
            0,
            is_control=True,
        )
    )
    old = dump("--files", path, "--deep-iteration")
    assert old.exit_code == 0 and old.stdout.endswith(
        "controlType: LEADER_CHANGE(2)\n"
    )  # 4.0 and before: not read
    text = dump("--files", path, "--deep-iteration", "--kafka-version", "4.1")
    as_json = dump(
        "--files", path, "--deep-iteration", "--kafka-version", "4.1", "--format", "json"
    )
    assert text.exit_code == as_json.exit_code == ExitCode.CORRUPT
    assert text.stderr == as_json.stderr and text.stderr.startswith(f"kafkalog: {path}")


@needs_corpus
@pytest.mark.parametrize(
    "case", ["nomanazeem__Kafka-java/kafka-logs", "ArthurArutunyan04__Backend_labs/kafka-data"]
)
def test_real_4x_metadata_logs_control_records(case):
    log = WILD / case / "__cluster_metadata-0" / "00000000000000000000.log"
    r = dump("--files", log, "--deep-iteration", "--kafka-version", "4.2")
    assert r.exit_code == 0, r.stderr
    control = [
        line
        for line in r.stdout.splitlines()
        if line.startswith("| ") and "{" in line and "payload" not in line
    ]
    golden = GOLDENS / (case.split("__")[0] + ".control.txt")
    assert control == golden.read_text().splitlines()
