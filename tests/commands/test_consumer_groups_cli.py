"""`kafkalog consumer-groups` through the CLI: against what Kafka 3.3.1's kafka-consumer-groups
printed for the committed broker run (tests/fixtures/groups-broker-3.3.1), the other tables,
JSON, --group, and bad input."""

from __future__ import annotations

import json
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.helpers import paths
from tests.helpers.paths import FIXTURES

FIXTURE = FIXTURES / "groups-broker-3.3.1"
LOGDIR = FIXTURE / "logdir"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


def _sorted_lines(text: str) -> list[str]:
    return sorted(line.rstrip() for line in text.splitlines())


def test_the_offsets_table_is_what_kafka_consumer_groups_printed(runner):
    r = runner.invoke(cli, ["consumer-groups", str(LOGDIR)])
    assert r.exit_code == 0, r.output
    # the same lines (Kafka's rows of one group come out of a hash map: compared as sets)
    assert _sorted_lines(r.stdout) == _sorted_lines(EXPECTED["groups"]["stdout"])
    assert r.stderr == EXPECTED["groups"]["stderr"]  # "has no active members", as Kafka says it


def test_group_reads_its_partition_only(runner, tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(LOGDIR, d)
    # "manual" is in __consumer_offsets-3 of 5: the others may be unreadable, they are not read
    for n in (0, 1, 2, 4):
        for log in (d / f"__consumer_offsets-{n}").glob("*.log"):
            log.write_bytes(b"\xff" * 100)
    r = runner.invoke(cli, ["consumer-groups", str(d), "--group", "manual"])
    assert r.exit_code == 0, r.output
    kafka = [line for line in EXPECTED["groups"]["stdout"].split("\n\n") if "\nmanual " in line][0]
    assert _sorted_lines(r.stdout) == _sorted_lines(kafka)
    assert "guess" not in r.stderr
    r = runner.invoke(
        cli, ["consumer-groups", str(d), "--group", "txn-group"]
    )  # in __consumer_offsets-4
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and "byte 0" in r.stderr


def test_without_the_metadata_log_the_partition_count_is_a_guess_said_so(runner, tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(
        LOGDIR, d, ignore=shutil.ignore_patterns("__cluster_metadata-0", "__consumer_offsets-4")
    )
    # the highest dir present is __consumer_offsets-3: 4 partitions guessed, so "manual" is looked
    # for in __consumer_offsets-2 (it is in 3 of 5), and the note says the count was a guess
    r = runner.invoke(cli, ["consumer-groups", str(d), "--group", "manual"])
    assert (
        r.exit_code == 4
        and "a guess" in r.stderr
        and "__consumer_offsets-2 of 4 partitions" in r.stderr
    )
    r = runner.invoke(
        cli, ["consumer-groups", str(d), "--group", "manual", "--offsets-partitions", "5"]
    )
    assert r.exit_code == 0 and "guess" not in r.stderr and "\nmanual " in r.stdout
    r = runner.invoke(
        cli, ["consumer-groups", str(d), "--group", "manual", "--offsets-partitions", "50"]
    )
    assert (
        r.exit_code == 4
        and "__consumer_offsets-38" in r.stderr
        and "not in the paths given" in r.stderr
    )


def test_json_has_each_commit_and_group_state(runner):
    r = runner.invoke(cli, ["consumer-groups", str(LOGDIR), "--format", "json"])
    assert r.exit_code == 0, r.output
    groups = {g["group"]: g for g in map(json.loads, r.stdout.splitlines())}
    assert set(groups) == {"readers", "manual", "txn-group"}
    manual = {(o["topic"], o["partition"]): o for o in groups["manual"]["offsets"]}
    assert manual[("orders", 0)]["metadata"] == "second" and manual[("orders", 0)]["lag"] == 8
    assert groups["readers"]["protocol"] is None and groups["readers"]["state"] == "Empty"
    assert groups["txn-group"]["offsets"][0]["producer_id"] >= 0


def test_state_and_members_tables(runner):
    r = runner.invoke(cli, ["consumer-groups", str(LOGDIR), "--state", "--group", "readers"])
    assert r.exit_code == 0
    head, row = r.stdout.strip("\n").splitlines()
    assert head.split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "ASSIGNMENT-STRATEGY",
        "STATE",
        "#MEMBERS",
    ]
    assert row.split() == ["readers", "__consumer_offsets-3", "Empty", "0"]
    r = runner.invoke(cli, ["consumer-groups", str(LOGDIR), "--members"])
    assert r.exit_code == 0 and r.stdout == ""  # no group has members: Kafka prints no table


def test_an_unknown_group_and_paths_without_offsets_are_exit_4(runner, tmp_path):
    r = runner.invoke(cli, ["consumer-groups", str(LOGDIR), "--group", "nobody"])
    assert r.exit_code == 4 and "does not exist" in r.stderr
    shutil.copytree(LOGDIR / "orders-0", tmp_path / "orders-0")
    r = runner.invoke(cli, ["consumer-groups", str(tmp_path)])
    assert r.exit_code == 4 and "no __consumer_offsets partition" in r.stderr
    r = runner.invoke(cli, ["consumer-groups", str(tmp_path / "missing")])
    assert r.exit_code == 4 and "Traceback" not in r.output


def test_a_damaged_record_is_one_line_with_file_and_position(runner, tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(LOGDIR, d)
    log = d / "__consumer_offsets-3" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[100] ^= 0xFF
    log.write_bytes(bytes(data))
    r = runner.invoke(cli, ["consumer-groups", str(d)])
    assert r.exit_code == 3
    (line,) = r.stderr.splitlines()
    assert str(log) in line and "byte 0" in line and "Traceback" not in r.output


@pytest.mark.parametrize(
    "path, golden",
    [
        ("examples/logdir", "examples-consumer-groups.txt"),
    ],
)
def test_golden_text(runner, path, golden):
    root = paths.REPO
    r = runner.invoke(cli, ["consumer-groups", str(root / path)])
    assert r.exit_code == 0
    assert r.stdout == (FIXTURE.parent / "groups-metadata-goldens" / golden).read_text()


def test_several_brokers_log_dirs_read_the_longest_copy(runner, tmp_path):
    one, two = tmp_path / "broker-1", tmp_path / "broker-2"
    shutil.copytree(LOGDIR, one)
    shutil.copytree(LOGDIR, two)
    (two / "__consumer_offsets-3" / "00000000000000000000.log").write_bytes(b"")  # a replica behind
    (two / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    r = runner.invoke(cli, ["consumer-groups", str(two), str(one)])
    assert r.exit_code == 0, r.output
    assert _sorted_lines(r.stdout) == _sorted_lines(EXPECTED["groups"]["stdout"])
    assert f"reading {one / '__consumer_offsets-3'}" in r.stderr


KIP848 = FIXTURE.parent / "groups-broker-3.9-kip848"


def _rows(text: str) -> set[tuple]:
    return {
        tuple(line.split())
        for line in text.splitlines()
        if len(line.split()) >= 6 and line.split()[0] != "GROUP" and line.split()[2].isdigit()
    }


def test_kip_848_groups_of_a_real_3_9_broker_give_its_rows(runner):
    expected = json.loads((KIP848 / "expected.json").read_text())
    r = runner.invoke(cli, ["consumer-groups", str(KIP848 / "logdir")])
    assert r.exit_code == 0, r.output
    assert _rows(r.stdout) == _rows(expected["groups"]["stdout"])
    r = runner.invoke(
        cli, ["consumer-groups", str(KIP848 / "logdir"), "--format", "json", "--group", "g848-live"]
    )
    (live,) = map(json.loads, r.stdout.splitlines())
    (member,) = live["members"]
    assert (live["type"], live["state"], member["state"], member["client_id"]) == (
        "consumer",
        "Stable",
        "STABLE",
        "g848-live-client",
    )
    assert [(a["topic"], a["partition"]) for a in member["assignment"]] == [
        ("events", 0),
        ("events", 1),
    ]
    assert member["member_epoch"] == live["target_assignment_epoch"] == live["group_epoch"]
