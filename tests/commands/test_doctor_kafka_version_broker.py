"""doctor --kafka-version 4.0 against the 4.0.0-SNAPSHOT broker (trunk 1eb76443, tools/kafka-broker):
the start-up rules it shares with released 4.x (MetaPropertiesEnsemble.verify: a reserved
directory.id stops it; a version 0 meta.properties with broker.id is read in KRaft). The
snapshot still has ZooKeeper mode and reads metadata.version from 3.0-IV1, so those rules are
not checked here (docs/kafka-4-parity.md). Runs when KAFKA_HOME is a 4.x build; skipped otherwise."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.broker_start import broker_verdict
from tests.helpers.kafka_broker import DIST, KAFKA_HOME

from .test_doctor_cli import copy, props, write_props

pytestmark = pytest.mark.skipif(
    not (KAFKA_HOME and DIST and DIST.version_tuple[:1] == (4,)),
    reason="needs KAFKA_HOME at a Kafka 4.x build (tools/kafka-broker: 4.0.0-SNAPSHOT)",
)


@pytest.fixture
def base():
    d = Path(tempfile.mkdtemp(prefix="kafkalog-doctor4-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def doctor_errors(d: Path) -> list[str]:
    r = CliRunner().invoke(cli, ["doctor", str(d), "--kafka-version", "4.0", "--format", "json"])
    return [f["broker"] for f in json.loads(r.stdout)["findings"] if f["severity"] == "error"]


def test_a_reserved_directory_id_stops_the_4_0_broker_as_doctor_says(base):
    d = copy(base)
    write_props(d, {**props(d), "directory.id": "AAAAAAAAAAAAAAAAAAAAAQ"})
    (said,) = doctor_errors(d)
    assert "Invalid resrved directory ID AAAAAAAAAAAAAAAAAAAAAQ" in said
    verdict = broker_verdict([d], base / "work", timeout=90, settle=2)
    assert not verdict.started
    assert verdict.lines("Invalid resrved directory ID AAAAAAAAAAAAAAAAAAAAAQ"), verdict.log[-3000:]


def test_a_v0_meta_properties_in_kraft_starts_the_4_0_broker_as_doctor_says(base):
    d = copy(base)
    write_props(d, {"version": "0", "broker.id": "1", "cluster.id": props(d)["cluster.id"]})
    assert doctor_errors(d) == []
    verdict = broker_verdict([d], base / "work", timeout=120, settle=3)
    assert verdict.started, verdict.log[-3000:]
