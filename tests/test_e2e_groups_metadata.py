"""The installed `kafkalog consumer-groups` and `kafkalog metadata`, run as a user runs them, on
the committed Kafka 3.3.1 broker run."""

from __future__ import annotations

import json

import pytest

from tests.helpers.e2e import kafkalog
from tests.helpers.paths import FIXTURES

LOGDIR = FIXTURES / "groups-broker-3.3.1" / "logdir"
EXPECTED = json.loads((LOGDIR.parent / "expected.json").read_text())
pytestmark = pytest.mark.e2e


def test_consumer_groups_prints_kafkas_lines_and_pipes_to_a_json_parser():
    p = kafkalog("consumer-groups", str(LOGDIR))
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.decode().splitlines()) == sorted(
        EXPECTED["groups"]["stdout"].splitlines()
    )
    p = kafkalog("consumer-groups", str(LOGDIR), "--group", "manual", "--format", "json")
    (group,) = map(json.loads, p.stdout.decode().splitlines())
    assert group["group"] == "manual" and len(group["offsets"]) == 3


def test_metadata_and_listed_in_help():
    p = kafkalog("metadata", str(LOGDIR), "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["metadata_version"] == "3.3-IV3"
    listing = kafkalog("--help").stdout.decode()
    assert "consumer-groups" in listing and "\n  metadata " in listing
    p = kafkalog("metadata", str(LOGDIR / "orders-0"))
    assert p.returncode == 4 and p.stderr.decode().count("\n") == 1 and b"Traceback" not in p.stderr
