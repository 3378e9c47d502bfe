"""What a user reads when a schema or a payload cannot be decoded: a sentence naming the file,
the offset and the subject, never a Python exception's name or repr (errors.reason_of)."""

import json
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import SCHEMAS
from tests.helpers.schemas import edit_schema, edit_value

# (how the fixture's copy is damaged, the partition and offset named, the line's end)
CASES = {
    "avro-schema-missing-attribute": (
        lambda d: edit_schema(d, "orders-key", 1, schema='{"type": "array"}'),
        "orders-0: offset 0: key",
        "orders-key version 1: not an Avro schema fastavro parses: no items where the schema "
        "needs one",
    ),
    "json-schema-not-json": (
        lambda d: edit_schema(d, "readings-value", 1, schema='{"type": '),
        "readings-0: offset 0: value",
        "readings-value version 1: its schema is not JSON (expecting value at character 9)",
    ),
    "proto-that-protoc-refuses": (
        lambda d: edit_schema(d, "events-value", 1, schema="message {"),
        "events-0: offset 0: value",
        "events-value version 1: protoc: line 1 column 9: Expected message name.",
    ),
    "avro-payload-truncated": (
        lambda d: None,  # the fixture's last orders value: 3 bytes of 0xff after the prefix
        "orders-0: offset 7: value",
        "AVRO payload its schema (id 3) does not read: the bytes end before the value does",
    ),
    "json-payload-not-json": (
        lambda d: edit_value(d, "readings-0", 0, b"\x00\x00\x00\x00\x09{"),
        "readings-0: offset 0: value",
        "JSON payload its schema (id 9) does not read: not JSON (expecting property name "
        "enclosed in double quotes at character 1)",
    ),
    "json-payload-not-utf8": (
        lambda d: edit_value(d, "readings-0", 0, b'\x00\x00\x00\x00\x09"\xff"'),
        "readings-0: offset 0: value",
        "JSON payload its schema (id 9) does not read: not UTF-8 text (byte 1)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_value_kept_as_bytes_says_why_in_words(runner, tmp_path, case):
    edit, where, why = CASES[case]
    log_dir = tmp_path / "logdir"
    shutil.copytree(SCHEMAS / "logdir", log_dir)
    edit(log_dir)
    topic = where.split("-0")[0]
    res = runner.invoke(
        cli, ["dump-log", str(log_dir), "--topic", topic, "--format", "json", "--decode-schemas"]
    )
    assert res.exit_code == 1, res.output
    part, offset, side = where.split(": ")
    line = f"kafkalog: {log_dir / part}/00000000000000000000.log: {offset}: {side} kept as bytes: {why}\n"
    assert line in res.stderr
    records = [json.loads(x) for x in res.stdout.splitlines()]
    got = next(r for r in records if r.get("offset") == int(offset.split()[1]))
    assert got[f"{side}_schema"]["error"] == why


def test_a_rest_dir_file_that_is_not_json_is_named_with_why(runner, tmp_path):
    d = tmp_path / "subjects" / "s-value" / "versions"
    d.mkdir(parents=True)
    (d / "1.json").write_text("{")
    res = runner.invoke(cli, ["schemas", "--schemas", str(tmp_path)])
    assert res.exit_code == 3, res.output
    assert res.stderr == (
        f"kafkalog: {d / '1.json'}: not JSON (expecting property name enclosed in double quotes "
        "at character 1)\n"
    )


@pytest.mark.parametrize("mask", [(), ("--mask", "sensor")])
def test_a_json_schema_violation_names_the_rule_never_the_value(runner, tmp_path, mask):
    """jsonschema's own message quotes the value; a masked field's clear value would leak
    through it, into stderr and `value_schema.error`."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(SCHEMAS / "logdir", log_dir)
    value = {"sensor": 12345678, "celsius": 1.0, "ok": True, "tags": []}
    edit_value(log_dir, "readings-0", 0, b"\x00\x00\x00\x00\x09" + json.dumps(value).encode())
    res = runner.invoke(
        cli,
        ["dump-log", str(log_dir), "--topic", "readings", "--format", "json", "--decode-schemas"]
        + list(mask),
    )
    assert res.exit_code == 1, res.output
    why = (
        "JSON payload its schema (id 9) does not read: not valid for its schema: $.sensor "
        "breaks the rule 'type': \"string\""
    )
    assert (
        f"offset 0: value {'not decoded, its bytes withheld: --mask' if mask else 'kept as bytes'}: {why}\n"
        in res.stderr
    )
    assert ("12345678" in res.stdout) is not bool(mask)  # as bytes without --mask only
    assert "12345678" not in res.stderr
