"""Acceptance: records serialized by confluent-kafka's own Avro, Protobuf and JSON Schema
serializers (against its mock registry client), produced into a live Kafka 3.3.1 broker beside
the `_schemas` records the registry writes for those registrations, decode offline to what the
serializers were given.

Runs when KAFKA_HOME and KAFKA_PY are set (tests/helpers/kafka_broker.py) and confluent-kafka is
installed; skipped otherwise. With KAFKALOG_SAVE_BROKER_RUN=<dir> the log dir and the
serializers' inputs are saved there (how tests/fixtures/schemas/ was made: SOURCES.md)."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.kafka_broker import broker_run, format_log_dir, needs_broker
from tests.helpers.schemas import assert_decoded_as_given, decoded_records, make_logdir

pytestmark = needs_broker


def test_serializer_bytes_from_a_live_broker_decode_to_their_inputs(tmp_path, runner):
    pytest.importorskip("confluent_kafka")
    made_by = make_logdir()
    made = made_by.plan()
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(made))
    log_dir = tmp_path / "logdir"
    log_dir.mkdir()
    format_log_dir(log_dir, tmp_path)
    run = broker_run(log_dir, tmp_path, made_by.PRODUCE, str(plan_path))
    assert run["output"] == {"ok": True}
    inputs = json.loads(json.dumps(made["inputs"]))
    save = os.environ.get("KAFKALOG_SAVE_BROKER_RUN")
    if save:
        dest = Path(save)
        shutil.copytree(log_dir, dest / "logdir", dirs_exist_ok=True)
        (dest / "inputs.json").write_text(json.dumps(inputs, indent=1, sort_keys=True) + "\n")
    assert_decoded_as_given(decoded_records(runner, log_dir), inputs)
