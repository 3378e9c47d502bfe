"""export --to jsonl --decode-schemas (issue 35): the lines of dump-log --format json
--decode-schemas, where they come from as export's jsonl says it (topic, partition, segment,
log_dir, broker_id), on the serializer-made log dir (tests/fixtures/schemas)."""

from __future__ import annotations

import json

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import SCHEMAS

pytest.importorskip("pyarrow")

LOGDIR = SCHEMAS / "logdir"
TOPICS = ("orders", "customers", "events", "readings", "legacy")
# where a line comes from: dump-log's and export's own
DUMP_PLACE = ("kind", "topic", "partition", "file")
EXPORT_PLACE = ("topic", "partition", "segment", "log_dir", "broker_id")


def _dumped(runner, *more) -> list[list]:
    res = runner.invoke(
        cli, ["dump-log", str(LOGDIR), "--format", "json", "--decode-schemas", *more]
    )
    assert res.exit_code == 1, res.output  # two values kept as bytes
    objs = [json.loads(x) for x in res.stdout.splitlines()]
    return [
        [(k, v) for k, v in o.items() if k not in DUMP_PLACE]
        for o in objs
        if o["kind"] == "record" and o["topic"] in TOPICS
    ]


def _exported(runner, tmp_path, *more):
    out = tmp_path / f"x{len(list(tmp_path.iterdir()))}.jsonl"
    topics = [a for t in TOPICS for a in ("--topic", t)]
    res = runner.invoke(
        cli,
        ["export", str(LOGDIR), "--to", "jsonl", str(out), "--decode-schemas", "--jobs", "1"]
        + topics
        + ["--include-control", *more],
    )
    return res, [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []


@pytest.mark.parametrize("encoding", ["utf8", "hex"])
def test_the_lines_are_dump_logs_decoded_lines_with_exports_place(runner, tmp_path, encoding):
    res, lines = _exported(runner, tmp_path, "--payload-encoding", encoding)
    assert res.exit_code == 0, res.output
    want = sorted(_dumped(runner, "--payload-encoding", encoding), key=repr)
    got = [[(k, v) for k, v in o.items() if k not in EXPORT_PLACE] for o in lines]
    assert sorted(got, key=repr) == want
    assert len(got) == 18  # orders 8, customers 2, events 4, readings 3, legacy 1
    for o in lines:
        assert list(o)[:5] == list(EXPORT_PLACE)
        assert o["segment"].endswith(f"{o['topic']}-0/00000000000000000000.log")
    first = next(o for o in lines if o["topic"] == "orders")
    assert first["key"] == "order-0" and first["value"]["id"] == 1000
    assert first["value_schema"] == {
        "id": 1,
        "subject": "orders-value",
        "version": 1,
        "type": "AVRO",
        "reader_id": 3,
        "reader_version": 2,
    }


def test_what_does_not_decode_is_kept_and_named_on_stderr(runner, tmp_path):
    res, lines = _exported(runner, tmp_path)
    assert res.exit_code == 0, res.output
    legacy = next(o for o in lines if o["topic"] == "legacy")
    gone = "schema id 10 (legacy-value version 1) was deleted for good (a hard delete)"
    assert legacy["value_schema"] == {"id": 10, "error": gone}
    assert isinstance(legacy["value"], str)
    assert (
        f"kafkalog: note: {LOGDIR.absolute()}/legacy-0/00000000000000000000.log: offset 0: value "
        f"kept as bytes: {gone}\n" in res.stderr
    )
    assert res.stderr.count("kept as bytes") == 2


def test_the_schema_id_header_frames_the_value_without_headers_in_the_lines(runner, tmp_path):
    res, lines = _exported(runner, tmp_path, "--no-headers", "--header", "__value_schema_id")
    assert res.exit_code == 0, res.output
    (o,) = lines
    assert o["offset"] == 6 and "guid" in o["value_schema"] and o["value"]["id"] == 1006
    assert "headers" not in o


def test_to_stdout_too(runner):
    res = runner.invoke(
        cli,
        ["export", str(LOGDIR / "readings-0"), "--to", "jsonl", "-", "--schemas", str(LOGDIR)],
    )
    assert res.exit_code == 0, res.output
    values = [json.loads(x)["value"] for x in res.stdout.splitlines()]
    inputs = json.loads((SCHEMAS / "inputs.json").read_text())
    assert values == inputs["readings"]


def test_past_the_notes_a_segment_the_rest_are_counted(runner, tmp_path, monkeypatch):
    from kafkalog_cli.spark import export

    monkeypatch.setattr(export, "_NOTES_A_SEGMENT", 0)  # in this process: --jobs 1
    res, lines = _exported(runner, tmp_path)
    assert res.exit_code == 0, res.output
    assert "offset" not in res.stderr
    assert (
        f"kafkalog: note: {LOGDIR.absolute()}/legacy-0/00000000000000000000.log: 1 more keys or "
        "values kept as bytes\n" in res.stderr
    )
