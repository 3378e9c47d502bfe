"""The installed `kafkalog describe` and `kafkalog get-offsets`, run as a user runs them."""

from __future__ import annotations

import json

import pytest

from tests.helpers.e2e import kafkalog
from tests.helpers.paths import EXAMPLES

pytestmark = pytest.mark.e2e


def test_describe_pipes_into_awk_and_jq_shapes():
    p = kafkalog("describe", str(EXAMPLES))
    assert p.returncode == 0, p.stderr
    rows = [
        line.split("\t") for line in p.stdout.decode().splitlines()[1:] if not line.startswith("#")
    ]
    assert {r[0]: r[4] for r in rows}["multi-segment-0"] == "600"  # LOG_END
    p = kafkalog("describe", str(EXAMPLES), "--format", "json")
    kinds = [json.loads(line)["kind"] for line in p.stdout.decode().splitlines()]
    assert kinds.count("partition") == 14 and kinds[-1] == "log_dir"


def test_get_offsets_prints_kafka_get_offsets_lines():
    p = kafkalog("get-offsets", str(EXAMPLES), "--topic", "txn", "--time", "earliest")
    assert (p.returncode, p.stdout, p.stderr) == (0, b"txn:0:0\n", b"")
    p = kafkalog("get-offsets", str(EXAMPLES / "txn-0"))
    assert p.stdout == b"txn:0:15\n"


def test_bad_input_is_one_line_and_a_documented_code(tmp_path):
    p = kafkalog("describe", str(tmp_path / "missing"))
    assert p.returncode == 4 and len(p.stderr.decode().splitlines()) == 1
    p = kafkalog("get-offsets", str(EXAMPLES), "--time", "soon")
    assert p.returncode == 2 and b"Traceback" not in p.stderr
