"""render/schema.py is the one declaration of the JSON Lines and Arrow fields: every object the
JSON renderers emit for the corpus has exactly its kind's keys in the schema's order, the table of
docs/json-lines.md is the schema's, and the Arrow columns are the JSON fields in the same order."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.records import RecordBatch, iter_batches
from kafkalog_cli.render import schema
from kafkalog_cli.render.jsonl import JsonDumper, batch_object
from tests.helpers.paths import CORPUS, READ
from tests.helpers.paths import REPO as ROOT

SUFFIXES = (".log", ".checkpoint", ".index", ".timeindex", ".txnindex", ".snapshot")
KINDS = {k.name: k for k in schema.KINDS}


def _holds(when: schema.When, obj: dict, batch: dict | None, decoder: bool) -> bool:
    if when.field is not None:
        return obj.get(when.field) in when.values and type(obj.get(when.field)) is type(
            when.values[0]
        )
    if when is schema.LEGACY:
        return batch["magic"] < 2
    if when is schema.DECODED:
        return decoder and not obj["is_control"]
    if when is schema.LOCATED:  # these objects are all dump-log's
        return True
    raise AssertionError(f"the test does not know the condition {when.says!r}")


def expected_keys(obj: dict, batch: dict | None, decoder: bool = False) -> list[str]:
    kind = KINDS[obj["kind"]]
    conditions = {f.only for f in kind.fields if f.only is not None}
    return list(kind.json_names(*[w for w in conditions if _holds(w, obj, batch, decoder)]))


def check_stream(objs: list[dict], decoder: bool = False) -> int:
    batch = None
    for obj in objs:
        assert list(obj) == expected_keys(obj, batch, decoder), obj
        if obj["kind"] == "batch":
            batch = obj
        for h in obj.get("headers") or ():
            assert tuple(h) == schema.HEADER.names
        if "control" in obj:
            assert tuple(obj["control"]) == schema.CONTROL.names[: len(obj["control"])]
    return len(objs)


def dump(path: Path, **options) -> list[dict]:
    """What `dump-log --format json` writes for one file, up to an error if the file is damaged."""
    out = io.BytesIO()
    try:
        JsonDumper(out, deep=True, **options).dump(str(path))
    except KafkalogError:
        pass
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_every_object_for_the_corpus_has_its_kinds_keys_in_schema_order():
    files = sorted(
        p for p in CORPUS.rglob("*") if p.suffix in SUFFIXES and "goldens" not in p.parts
    )
    assert len(files) > 100
    kinds = set()
    for f in files:
        objs = dump(f)
        check_stream(objs)
        kinds |= {o["kind"] for o in objs}
    # legacy and control records (their optional fields) and every file type were seen
    assert {"file", "batch", "record", "index_entry", "time_index_entry", "producer_state"} <= kinds


def test_legacy_control_and_decoded_records_add_their_fields(tmp_path):
    legacy = dump(CORPUS / "legacy" / "v1-gzip-create" / "00000000000000000000.log")
    assert any("crc" in o for o in legacy if o["kind"] == "record")
    check_stream(legacy)
    txn = dump(ROOT / "examples" / "logdir" / "txn-0" / "00000000000000000000.log")
    assert any("control" in o for o in txn)
    check_stream(txn)
    import lzma

    offsets = tmp_path / "00000000000000000000.log"
    offsets.write_bytes(
        lzma.decompress(
            (ROOT / "tests" / "fixtures" / "internal" / "Bheem6005-co-0-0.log.xz").read_bytes()
        )
    )
    decoded = dump(offsets, decoder="offsets")
    assert any("decoded" in o for o in decoded)
    check_stream(decoded, decoder=True)


def test_dump_index_objects_have_the_schemas_keys(tmp_path):
    part = shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")
    runner = CliRunner()
    objs = []
    for flags in ([], ["--verify-index-only"], ["--index-sanity-check"]):
        r = runner.invoke(cli, ["dump-index", str(part), "--format", "json", *flags])
        objs += [json.loads(line) for line in r.stdout.splitlines()]
    (part / "00000000000000000185.index").write_bytes(
        b"\0" * 12
    )  # not whole entries: fails the check
    r = runner.invoke(
        cli,
        [
            "dump-index",
            str(part / "00000000000000000185.index"),
            "--format",
            "json",
            "--index-sanity-check",
        ],
    )
    objs += [json.loads(line) for line in r.stdout.splitlines()]
    check_stream(objs)
    assert {
        "index_entry",
        "time_index_entry",
        "index_mismatch",
        "sanity_check",
        "trailing_bytes",
    } <= {o["kind"] for o in objs}
    assert {o["passed"] for o in objs if o["kind"] == "sanity_check"} == {True, False}


def test_every_index_check_has_its_fields():
    from kafkalog_cli.ops import verify_index as v
    from kafkalog_cli.render.index_json import mismatch_objects

    time_check = v.TimeIndexCheck(
        Path("t.timeindex"),
        not_found=[v.OffsetNotFound(5, None)],
        mismatches=[v.TimestampMismatch(10, 9)],
        out_of_order=[v.OutOfOrderTimestamp(8, 10)],
    )
    offset_check = v.OffsetIndexCheck(Path("t.index"), mismatches=[v.IndexMismatch(3, 4)])
    objs = mismatch_objects(time_check, "t.timeindex") + mismatch_objects(offset_check, "t.index")
    assert [o["check"] for o in objs] == [
        "offset_not_found",
        "timestamp",
        "timestamp_order",
        "offset",
    ]
    check_stream(objs)


def test_the_docs_table_is_the_schema():
    page = (ROOT / "docs" / "json-lines.md").read_text()
    rows = page[page.index("| kind | fields |") :].splitlines(keepends=True)
    table = "".join(rows[: next(i for i, r in enumerate(rows) if not r.startswith("|"))])
    assert table == schema.markdown_table()
    # and each row names exactly the JSON fields of its kind
    for row in table.splitlines()[2:]:
        kind, fields = row.strip("| ").split(" | ", 1)
        k = KINDS[kind.strip("`")]
        named = [f for f in k.fields if f.json and f"`{f.name}`" in fields]
        assert named == [f for f in k.fields if f.json]


def test_arrow_columns_are_the_json_fields_in_order():
    from kafkalog_cli.spark.arrow import BATCH_COLUMNS, RECORD_COLUMNS, ddl

    arrow_only = {"topic", "partition", "segment", "log_dir", "broker_id"}
    json_record = [
        n for n in schema.RECORD.json_names(schema.LEGACY, schema.CONTROL_RECORD) if n != "kind"
    ]
    assert [c[0] for c in RECORD_COLUMNS if c[0] not in arrow_only] == json_record
    json_batch = [n for n in schema.BATCH.json_names() if n not in ("kind", "file")]
    assert [c[0] for c in BATCH_COLUMNS if c[0] not in arrow_only] == json_batch
    assert [c[0] for c in RECORD_COLUMNS][:2] == ["topic", "partition"] and [
        c[0] for c in RECORD_COLUMNS
    ][-3:] == ["segment", "log_dir", "broker_id"]
    assert "`headers` array<struct<key: string, value: binary>>" in ddl(RECORD_COLUMNS)
    assert (
        "`control` struct<type: string, type_id: int, version: int, coordinator_epoch: int>"
        in ddl(RECORD_COLUMNS)
    )
    assert "`magic` tinyint" in ddl(BATCH_COLUMNS)


def test_an_unfilled_field_fails_when_encoded():
    from kafkalog_cli.render.jsonl import dumps

    with pytest.raises(TypeError):
        dumps(schema.INDEX_ENTRY.object(offset=1))


def test_batch_object_computes_a_valid_batchs_crc_once(monkeypatch):
    log = (ROOT / "examples" / "logdir" / "txn-0" / "00000000000000000000.log").read_bytes()
    batch = next(iter_batches(log))
    calls = []
    compute = RecordBatch.compute_crc
    monkeypatch.setattr(RecordBatch, "compute_crc", lambda self: calls.append(1) or compute(self))
    obj = batch_object(batch, "f")
    assert obj["is_valid"] and obj["crc"] == obj["computed_crc"] and len(calls) == 1
