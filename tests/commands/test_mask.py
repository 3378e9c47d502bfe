"""--mask FIELD and --mask-key-file (issue 35, item 3) in dump-log --format json and export (jsonl,
parquet), on the serializer-made log dir (tests/fixtures/schemas): Avro (nested, referenced,
nullable-union records, arrays, UUIDs), Protobuf (a message of several, repeated messages) and
JSON Schema values."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import SCHEMAS

LOGDIR = SCHEMAS / "logdir"
INPUTS = json.loads((SCHEMAS / "inputs.json").read_text())
KEY = b"vendor-share-2026"
FIELDS = ("shipping.city", "uid", "tags", "home.zip", "page", "lines.sku")


def mask(text: str, key: bytes = KEY) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


@pytest.fixture
def key_file(tmp_path):
    f = tmp_path / "mask.key"
    f.write_bytes(KEY + b"\n")  # as `echo` writes it: the newline is not the key's
    return f


def _masks(*fields):
    return [a for f in fields for a in ("--mask", f)]


def _dump(runner, *more):
    res = runner.invoke(
        cli, ["dump-log", str(LOGDIR), "--format", "json", "--decode-schemas", *map(str, more)]
    )
    by_topic: dict = {}
    for line in res.stdout.splitlines():
        o = json.loads(line)
        if o["kind"] == "record":
            by_topic.setdefault(o["topic"], []).append(o)
    return res, by_topic


def test_dump_log_masks_each_field_by_hmac_of_the_key_file(runner, key_file):
    res, got = _dump(runner, *_masks(*FIELDS), "--mask-key-file", key_file)
    assert res.exit_code == 1, res.output  # the garbage value, as without --mask
    _, plain = _dump(runner)
    orders = got["orders"][:7]
    for o, p, given in zip(orders, plain["orders"], INPUTS["orders"]):
        ship = given["shipping"]
        assert o["value"]["shipping"] == (
            None if ship is None else {"city": mask(ship["city"]), "weight": ship["weight"]}
        )
        assert o["value"]["uid"] == mask(given["uid"])
        assert o["value"]["tags"] == [mask(t) for t in given["tags"]]  # each element
        rest = {k: v for k, v in o["value"].items() if k not in ("shipping", "uid", "tags")}
        assert rest == {k: v for k, v in p["value"].items() if k not in ("shipping", "uid", "tags")}
        assert o["key"] == p["key"] and o["value_schema"] == p["value_schema"]
    customers = [o["value"]["home"] for o in got["customers"]]  # a referenced record's field
    assert customers == [
        {"street": c["home"]["street"], "zip": mask(c["home"]["zip"])} for c in INPUTS["customers"]
    ]
    clicks, purchases = got["events"][:2], got["events"][2:]  # Protobuf: two messages of a file
    assert [c["value"]["page"] for c in clicks] == [mask(e["page"]) for e in INPUTS["events"][:2]]
    assert [[ln["sku"] for ln in p["value"]["lines"]] for p in purchases] == [
        [mask(ln["sku"]) for ln in e["lines"]] for e in INPUTS["events"][2:]
    ]
    assert [r["value"]["tags"] for r in got["readings"]] == [  # JSON Schema
        [mask(t) for t in r.get("tags", [])] for r in INPUTS["readings"]
    ]
    assert "random key" not in res.stderr


def test_without_a_key_file_a_random_key_masks_equal_values_alike_in_the_run(runner):
    res, got = _dump(runner, "--topic", "orders", "--mask", "tags")
    again, other = _dump(runner, "--topic", "orders", "--mask", "tags")
    assert res.stderr.startswith(
        "kafkalog: note: --mask without --mask-key-file: the masks are keyed by a random key"
    )
    tags = [o["value"]["tags"] for o in got["orders"][:7]]
    t0 = {t[0] for t in tags if t}  # 't0' in several records: one mask
    assert len(t0) == 1 and len(next(iter(t0))) == 64
    assert t0 != {t[0] for t in (o["value"]["tags"] for o in other["orders"][:7]) if t}
    assert t0 != {mask("t0")}


def test_bytes_that_do_not_decode_are_withheld(runner, key_file):
    res, got = _dump(runner, "--topic", "orders", "--mask", "uid", "--mask-key-file", key_file)
    garbage = got["orders"][-1]
    assert garbage["value"] is None and garbage["value_schema"]["error"].endswith(
        "(its bytes withheld: --mask)"
    )
    assert (
        f"offset {garbage['offset']}: value not decoded, its bytes withheld: --mask: AVRO payload"
        in res.stderr
    )
    assert res.stderr.endswith(
        "kafkalog: 1 keys or values were not decoded (their bytes withheld: --mask)\n"
    )
    assert res.exit_code == 1


def test_export_jsonl_lines_are_dump_logs_masked_lines(runner, key_file, tmp_path):
    out = tmp_path / "x.jsonl"
    orders_fields = ("shipping.city", "uid", "tags")  # each must be in a schema of what is read
    args = [*_masks(*orders_fields), "--mask-key-file", str(key_file), "--topic", "orders"]
    res = runner.invoke(
        cli, ["export", str(LOGDIR), "--to", "jsonl", str(out), "--decode-schemas", *args]
    )
    assert res.exit_code == 0, res.output
    _, dumped = _dump(runner, *args)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [o["value"] for o in lines] == [o["value"] for o in dumped["orders"]]
    assert lines[1]["value"]["shipping"]["city"] == mask("city1")


def test_export_parquet_masked_columns_are_strings_equal_to_the_json_masks(
    runner, key_file, tmp_path
):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    out = tmp_path / "p"
    res = runner.invoke(
        cli,
        ["export", str(LOGDIR), "--to", "parquet", str(out), "--decode-schemas", "--jobs", "1"]
        + [a for t in ("orders", "customers", "events") for a in ("--topic", t)]
        + _masks(*FIELDS)
        + ["--mask-key-file", str(key_file)],
    )
    assert res.exit_code == 0, res.output

    def table(topic):
        return pq.read_table(next((out / f"topic={topic}").rglob("*.parquet")))

    orders = table("orders")
    t = orders.schema.field("value").type
    assert t.field("uid").type == pa.string()  # was arrow.uuid
    assert t.field("tags").type == pa.list_(pa.string())
    assert t.field("shipping").type.field("city").type == pa.string()
    values = orders.column("value").to_pylist()
    _, dumped = _dump(runner, *_masks(*FIELDS), "--mask-key-file", key_file)
    for v, d in zip(values[:7], dumped["orders"]):  # joins across outputs: the same masks
        assert (v["uid"], v["tags"], v["shipping"]) == (
            d["value"]["uid"],
            d["value"]["tags"],
            d["value"]["shipping"],
        )
    assert values[7] is None and orders.column("value_bytes").to_pylist()[7] is None
    assert orders.column("value_error").to_pylist()[7].endswith("(its bytes withheld: --mask)")
    events = table("events").column("value").to_pylist()
    assert [e["Click"]["page"] for e in events[:2]] == [
        mask(e["page"]) for e in INPUTS["events"][:2]
    ]
    purchase = events[3]["Purchase"]
    assert [ln["sku"] for ln in purchase["lines"]] == [mask("s0"), mask("s1")]
    assert purchase["order_id"] == "o-1" and purchase["kind"] == "STORE"
    assert [c["home"]["zip"] for c in table("customers").column("value").to_pylist()] == [
        mask(c["home"]["zip"]) for c in INPUTS["customers"]
    ]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--mask", "uid"], "--mask masks fields of decoded keys and values"),
        (["--decode-schemas", "--mask", "email"], "--mask email: no such field"),
        (["--decode-schemas", "--mask", "shipping.zip"], "subjects: orders-key, orders-value"),
        (["--decode-schemas", "--mask", "attrs.a0"], "--mask attrs.a0: no such field"),  # a map
        (["--decode-schemas", "--mask", "uid..x"], "is not a dotted path"),
        (["--decode-schemas", "--mask-key-file", "{key}"], "--mask-key-file needs --mask"),
        (["--decode-schemas", "--mask", "uid", "--mask-key-file", "{empty}"], "an empty key"),
    ],
)
def test_a_mask_that_cannot_apply_is_a_usage_error(runner, tmp_path, key_file, args, says):
    empty = tmp_path / "empty.key"
    empty.write_bytes(b"\n")
    args = [a.format(key=key_file, empty=empty) for a in args]
    for command in (
        ["dump-log", str(LOGDIR), "--format", "json"],
        ["export", str(LOGDIR), "--to", "jsonl", str(tmp_path / "x.jsonl")],
    ):
        res = runner.invoke(cli, [*command, "--topic", "orders", *args])
        assert res.exit_code == 2 and says in res.stderr, (command, res.output)
        assert not (tmp_path / "x.jsonl").exists()


def test_a_missing_key_file_is_exit_4_naming_it(runner, tmp_path):
    gone = tmp_path / "no.key"
    res = runner.invoke(
        cli,
        ["dump-log", str(LOGDIR), "--format", "json", "--decode-schemas", "--mask", "uid"]
        + ["--mask-key-file", str(gone)],
    )
    assert res.exit_code == 4 and res.stderr == f"kafkalog: {gone}: no such file or directory\n"
    assert res.stdout == ""
