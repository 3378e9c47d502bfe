"""The registry replayed from `_schemas` records as the registry's store replays them, and the
resolution rules of each format (ops/schema_registry.py, ops/schema_decode.py)."""

import json

import pytest

from kafkalog_cli.ops.schema_decode import Decoded, SchemaDecoder, SchemaMismatchError, Undecoded
from kafkalog_cli.ops.schema_mask import FieldMask
from kafkalog_cli.ops.schema_registry import Registry, SchemaRegistryError, load_registry


def _schema(subject, version, sid, schema, **more):
    return (
        {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1},
        {
            "subject": subject,
            "version": version,
            "id": sid,
            "schema": schema,
            "deleted": False,
            **more,
        },
    )


def _replay(*records) -> Registry:
    reg = Registry()
    for k, v in records:
        reg.apply(k, v, "test")
    return reg


def test_delete_subject_soft_deletes_up_to_its_version_and_clear_subject_drops_them():
    a = '"string"'
    reg = _replay(
        _schema("s", 1, 1, a),
        _schema("s", 2, 2, '"long"'),
        _schema("s", 3, 3, '"int"'),
        ({"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0}, {"subject": "s", "version": 2}),
    )
    assert [v.version for v in reg.subject_versions("s")] == [3]
    assert [v.version for v in reg.subject_versions("s", deleted=True)] == [1, 2, 3]
    assert reg.by_id(1)[0].deleted  # a soft-deleted id still answers
    reg.apply({"keytype": "CLEAR_SUBJECT", "subject": "s", "magic": 0}, {"subject": "s"}, "test")
    assert [v.version for v in reg.subject_versions("s", deleted=True)] == [3]


def test_a_tombstone_deletes_a_version_for_good_and_the_id_is_remembered_as_gone():
    reg = _replay(
        _schema("s", 1, 7, '"string"'),
        ({"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}, None),
    )
    assert reg.subjects(deleted=True) == [] and reg.by_id(7) == []
    assert (reg.gone(7).subject, reg.gone(7).version) == ("s", 1)


def test_ids_are_per_context_and_configs_keep_the_last_value():
    reg = _replay(
        _schema(":.staging:s", 1, 1, '"int"'),
        _schema("s", 1, 1, '"string"'),
        ({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "FULL"}),
        ({"keytype": "CONFIG", "subject": None, "magic": 0}, None),
    )
    assert [v.subject for v in reg.by_id(1)] == ["s"]
    assert [v.subject for v in reg.by_id(1, ".staging")] == [":.staging:s"]
    assert reg.configs == {}


def test_a_key_of_unknown_keytype_is_refused_with_a_sentence():
    with pytest.raises(
        SchemaRegistryError, match='^its key\'s keytype "WHAT" is none the registry'
    ):
        _replay(({"keytype": "WHAT", "magic": 0}, {}))


def _key(keytype, subject=None, **more):
    return {"keytype": keytype, "subject": subject, "magic": 0, **more}


def test_delete_subject_reads_its_value_as_the_registry_does():
    """KafkaStoreMessageHandler.handleDeleteSubject: the value's subject and version; a value
    without a version deletes nothing (the registry's loop fails on it), a tombstone neither."""
    reg = _replay(_schema("s", 1, 1, '"int"'), _schema("s", 2, 2, '"long"'))
    reg.apply(_key("DELETE_SUBJECT", "s"), None, "test")
    with pytest.raises(SchemaRegistryError, match="DELETE_SUBJECT value without a subject and"):
        reg.apply(_key("DELETE_SUBJECT", "s"), {"subject": "s"}, "test")
    assert [v.version for v in reg.subject_versions("s")] == [1, 2]
    reg.apply(_key("DELETE_SUBJECT"), {"subject": "s", "version": 1}, "test")
    assert [v.version for v in reg.subject_versions("s")] == [2]


def test_magic_0_and_1_keys_are_one_key():
    """SchemaRegistryKey.compareTo orders by keytype, subject and version: an old registry's
    magic 0 key and a newer one's magic 1 name the same version."""
    old = ({**_schema("s", 1, 1, '"int"')[0], "magic": 0}, _schema("s", 1, 1, '"int"')[1])
    reg = _replay(old, _schema("s", 1, 1, '"int"', deleted=True))
    assert [(v.version, v.deleted) for v in reg.subject_versions("s", deleted=True)] == [(1, True)]
    reg.apply({**old[0], "magic": 1}, None, "test")
    assert reg.subjects(deleted=True) == []


def test_tombstones_noop_and_assoc_change_what_the_registry_changes():
    reg = _replay(
        _schema("s", 1, 1, '"int"'),
        (_key("CONFIG", "s"), {"compatibilityLevel": "NONE"}),
        (_key("MODE", "s"), {"mode": "READONLY"}),
    )
    for k in (_key("CLEAR_SUBJECT", "s"), _key("CONTEXT"), {"keytype": "NOOP"}):
        reg.apply(k, None, "test")
    reg.apply({"keytype": "ASSOC", "subject": "s"}, {"topic": "t"}, "test")
    reg.apply({"keytype": "NOOP", "magic": 0}, {"whatever": 1}, "test")
    assert [v.version for v in reg.subject_versions("s")] == [1]
    reg.apply(_key("CONFIG", "s"), None, "test")
    reg.apply(_key("MODE", "s"), None, "test")
    assert reg.configs == {} and reg.modes == {}


def test_clear_subject_of_a_context_clears_its_subjects_soft_deleted_versions():
    reg = _replay(
        _schema(":.c:a", 1, 1, '"int"', deleted=True),
        _schema(":.c:b", 1, 2, '"long"', deleted=True),
        _schema(":.c:b", 2, 3, '"string"'),
        _schema("a", 1, 1, '"int"', deleted=True),
    )
    reg.apply(_key("CLEAR_SUBJECT", ":.c:"), {"subject": ":.c:"}, "test")
    assert reg.subjects(deleted=True) == [":.c:b", "a"]
    assert [v.version for v in reg.subject_versions(":.c:b", deleted=True)] == [2]


def test_a_rest_dir_with_url_encoded_subjects(tmp_path):
    d = tmp_path / "subjects" / "a%2Fb-value" / "versions"
    d.mkdir(parents=True)
    (d / "1").write_text(json.dumps({"id": 4, "schema": '"string"'}))
    reg = load_registry(sources=[str(tmp_path)])
    assert [(v.subject, v.version, v.id) for v in reg.subject_versions("a/b-value")] == [
        ("a/b-value", 1, 4)
    ]


# -- resolution, on bytes the protobuf runtime and fastavro write

PROTO_V1 = 'syntax = "proto3";\npackage t;\nmessage M { string name = 1; int32 n = 2; }\n'
PROTO_V2_OK = (
    'syntax = "proto3";\npackage t;\nmessage M { string name = 1; int64 n = 2; bool extra = 3; }\n'
)
PROTO_V2_BAD = 'syntax = "proto3";\npackage t;\nmessage M { string name = 1; string n = 2; }\n'


def _proto_bytes(reg, v1):
    dec = SchemaDecoder(reg)
    pb = dec.parsed(v1)
    msg = pb.message_class(pb.message((0,)))(name="x", n=-3)
    return b"\x00" + (1).to_bytes(4, "big") + b"\x00" + msg.SerializeToString()


@pytest.mark.parametrize("v2, ok", [(PROTO_V2_OK, True), (PROTO_V2_BAD, False)])
def test_protobuf_resolves_by_field_number_and_wire_type(v2, ok):
    pytest.importorskip("grpc_tools")
    reg = _replay(
        _schema("t-value", 1, 1, PROTO_V1, schemaType="PROTOBUF"),
        _schema("t-value", 2, 2, v2, schemaType="PROTOBUF"),
    )
    data = _proto_bytes(reg, reg.version("t-value", 1))
    dec = SchemaDecoder(reg)
    if ok:
        got = dec.decode("t", False, data)
        assert (
            isinstance(got, Decoded)
            and got.value == {"name": "x", "n": "-3"}
            and got.reader.version == 2
        )
    else:
        with pytest.raises(
            SchemaMismatchError,
            match=r"schema id 1 \(t-value version 1\) does not resolve to the "
            r"reader schema id 2 \(t-value version 2\): t.M field 2 \(n\)",
        ):
            dec.decode("t", False, data)
    assert isinstance(SchemaDecoder(reg, reader_version=1).decode("t", False, data), Decoded)


def test_json_schema_reader_validation_and_undecodable_bytes():
    v1 = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    v2 = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})
    reg = _replay(
        _schema("j-value", 1, 1, v1, schemaType="JSON"),
        _schema("j-value", 2, 2, v2, schemaType="JSON"),
    )
    data = b"\x00\x00\x00\x00\x01" + b'{"a": 5}'
    with pytest.raises(
        SchemaMismatchError, match="schema id 1 .* reader schema id 2 .*not valid for the reader"
    ):
        SchemaDecoder(reg).decode("j", False, data)
    got = SchemaDecoder(reg, reader_version=1).decode("j", False, b"\x00\x00\x00\x00\x01{not json")
    assert isinstance(got, Undecoded) and got.schema_id == 1 and "does not read" in got.reason
    assert (
        SchemaDecoder(reg)
        .decode("j", False, b"\x02abc")
        .reason.startswith("not in the schema registry's wire format")
    )


def test_avro_promotes_and_fills_defaults_to_the_reader():
    fastavro = pytest.importorskip("fastavro")
    import io

    w = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    r = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": "string", "default": "d"}],
    }
    reg = _replay(_schema("r-value", 1, 1, json.dumps(w)), _schema("r-value", 2, 2, json.dumps(r)))
    bio = io.BytesIO()
    fastavro.schemaless_writer(bio, fastavro.parse_schema(w), {"n": 9})
    got = SchemaDecoder(reg).decode("r", False, b"\x00\x00\x00\x00\x01" + bio.getvalue())
    assert got.value == {"n": 9, "s": "d"} and (got.writer.id, got.reader.id) == (1, 2)


@pytest.mark.parametrize("sid", [2**31, 2**63, -(2**31) - 1, True, "3", 1.0])
def test_an_id_that_is_not_a_java_int_is_no_id(runner, tmp_path, sid):
    """The registry's ids are Java ints (SchemaValue's Integer id): a SCHEMA value whose id is
    none (a number past 32 bits, a boolean, text) lists with no id, and nothing framed reaches
    it (a framed id past 2^31 - 1 would not fit value_schema_id's int32)."""
    import shutil

    from kafkalog_cli.cli import cli
    from tests.helpers.paths import SCHEMAS
    from tests.helpers.schemas import edit_schema

    log_dir = tmp_path / "logdir"
    shutil.copytree(SCHEMAS / "logdir", log_dir)
    edit_schema(log_dir, "customers-value", 1, id=sid)
    res = runner.invoke(
        cli, ["schemas", "--format", "json", "--subject", "customers-value", str(log_dir)]
    )
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["id"] for x in res.stdout.splitlines()] == [None]


def _zigzag(n: int) -> bytes:
    n, out = (n << 1) ^ (n >> 63), bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes([*out, n])


EMPTY = {"type": "record", "name": "Empty", "fields": []}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": "null"},
        {
            "type": "record",
            "name": "R",
            "fields": [{"name": "a", "type": {"type": "array", "items": EMPTY}}],
        },
        {"type": "array", "items": {"type": "fixed", "name": "F", "size": 0}},
    ],
    ids=["array-of-null", "array-of-empty-records", "array-of-fixed-0"],
)
def test_an_avro_array_of_items_that_take_no_bytes_is_not_decoded(schema):
    """Items that take no bytes let a few bytes claim any number of them (the block count is a
    64-bit varint: 11 bytes make fastavro build a list of 2^62 items, a hang): such a schema does
    not parse for decoding, and what it wrote is kept as bytes."""
    pytest.importorskip("fastavro")
    reg = _replay(_schema("z-value", 1, 1, json.dumps(schema)))
    count = _zigzag(10**6)  # small enough that a decoder without the rule ends, and fails here
    got = SchemaDecoder(reg).decode("z", False, b"\x00\x00\x00\x00\x01" + count + b"\x00")
    assert isinstance(got, Undecoded), type(got)
    assert "items that take no bytes" in got.reason


NODE = {
    "type": "record",
    "name": "Node",
    "fields": [{"name": "name", "type": "string"}, {"name": "next", "type": ["null", "Node"]}],
}


@pytest.mark.parametrize("depth,decoded", [(3, True), (200_000, False)])
def test_a_recursive_avro_value_nested_deep_is_kept_as_bytes(tmp_path, depth, decoded):
    """A recursive schema (a linked list) lets a value nest as deep as it has bytes: fastavro's
    compiled reader recurses on the C stack and a 400 KB value crashed the process (SIGSEGV, no
    message). A deep one is now kept as bytes, named with its offset (exit 1); a shallow one
    decodes."""
    import shutil
    import subprocess
    import sys

    from tests.helpers.paths import SCHEMAS
    from tests.helpers.schemas import edit_schema, edit_value

    pytest.importorskip("fastavro")
    log_dir = tmp_path / "logdir"
    shutil.copytree(SCHEMAS / "logdir", log_dir)
    edit_schema(log_dir, "customers-value", 1, schema=json.dumps(NODE), references=[])
    edit_value(
        log_dir, "customers-0", 0, b"\x00\x00\x00\x00\x05" + b"\x02a\x02" * depth + b"\x02z\x00"
    )
    res = subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", "dump-log", "--format", "json"]
        + ["--decode-schemas", "--topic", "customers", str(log_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the other customers record (offset 1) is framed for the old schema: kept as bytes, exit 1
    assert res.returncode == 1, (res.returncode, res.stderr[-300:])
    first = json.loads(
        next(x for x in res.stdout.splitlines() if '"offset": 0' in x and '"record"' in x)
    )
    if decoded:
        assert first["value"]["next"]["next"]["next"]["name"] == "z"
    else:
        assert res.returncode == 1, res.stderr
        assert (
            "offset 0: value kept as bytes: AVRO payload its schema (id 5) does not read: "
            in res.stderr
        )
        assert "error" in first["value_schema"]


def test_a_json_schema_pattern_that_backtracks_is_bounded_and_the_value_kept_as_bytes():
    """A schema's `pattern` is input; Python's regular expressions backtrack (`^(a+)+$` on 40
    characters would run for hours). One value's validation stops at VALIDATION_SECONDS and the
    value is kept as bytes with the reason; the next value decodes as before."""
    import time

    pytest.importorskip("jsonschema")
    from kafkalog_cli.ops import schema_decode

    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    reg = _replay(_schema("p-value", 1, 1, json.dumps(schema), schemaType="JSON"))
    dec = SchemaDecoder(reg)
    start = time.monotonic()
    slow = dec.decode(
        "p", False, b"\x00\x00\x00\x00\x01" + json.dumps({"s": "a" * 40 + "b"}).encode()
    )
    took = time.monotonic() - start
    assert isinstance(slow, Undecoded), type(slow)
    assert "validation ran past" in slow.reason and "not checked" in slow.reason
    assert took < schema_decode.VALIDATION_SECONDS + 5
    fine = dec.decode("p", False, b"\x00\x00\x00\x00\x01" + json.dumps({"s": "aaa"}).encode())
    assert not isinstance(fine, Undecoded) and fine.value == {"s": "aaa"}


def test_a_process_keeps_the_decoders_of_its_most_recent_specs_only():
    """A Spark worker reused task after task gets a spec copy per task: the decoders kept are
    the DECODERS_KEPT most recently used, each found again by its own spec only."""
    from kafkalog_cli.commands.schema_options import SchemaSpec
    from kafkalog_cli.ops import schema_decode

    specs = [
        SchemaSpec(_replay(_schema("s", 1, 1, '"int"')))
        for _ in range(3 * schema_decode.DECODERS_KEPT)
    ]
    first = schema_decode.run_decoder(specs[0])
    assert schema_decode.run_decoder(specs[0]) is first
    assert schema_decode.run_decoder(specs[0], protobuf_messages=True) is not first
    for s in specs:
        schema_decode.run_decoder(s)
    assert len(schema_decode._RUN_DECODERS) == schema_decode.DECODERS_KEPT
    assert schema_decode.run_decoder(specs[0]) is not first  # evicted: built again
    assert schema_decode.run_decoder(specs[-1]) is schema_decode.run_decoder(specs[-1])


def test_a_decoder_keeps_the_writers_of_the_ids_most_recently_met_only(monkeypatch):
    """Ids come from the bytes: garbage names a new one each record, which is not kept forever."""
    from kafkalog_cli.ops import schema_decode

    monkeypatch.setattr(schema_decode, "IDS_KEPT", 16)
    dec = SchemaDecoder(_replay(_schema("t-value", 1, 1, '"string"')))
    for sid in range(2, 200):
        got = dec.decode("t", False, b"\x00" + sid.to_bytes(4, "big") + b"\x02a")
        assert got == Undecoded(f"schema id {sid} is not in the registry", sid)
    assert len(dec._ids) == 16
    assert dec.decode("t", False, b"\x00\x00\x00\x00\x01\x02a").value == "a"


def _enum_registry():
    def enum(symbols):
        fields = [{"name": "colour", "type": {"type": "enum", "name": "C", "symbols": symbols}}]
        return json.dumps({"type": "record", "name": "R", "fields": fields})

    return _replay(
        _schema("e-value", 1, 1, enum(["RED", "SECRETGREEN"])),
        _schema("e-value", 2, 2, enum(["RED"])),
    )


def test_an_avro_mismatch_under_mask_does_not_quote_the_value():
    """fastavro's resolution error names the enum symbol it failed on: that is the record's value,
    and under --mask the masked field's value must appear nowhere."""
    pytest.importorskip("fastavro")
    reg = _enum_registry()
    data = b"\x00\x00\x00\x00\x01" + _zigzag(1)  # symbol 1 of the writer's enum
    with pytest.raises(SchemaMismatchError, match="SECRETGREEN"):
        SchemaDecoder(reg).decode("e", False, data)  # without --mask the reason is fastavro's
    masked = SchemaDecoder(reg, mask=FieldMask(paths=(("colour",),), key=b"k"))
    with pytest.raises(SchemaMismatchError) as err:
        masked.decode("e", False, data)
    assert "SECRETGREEN" not in str(err.value)
    assert "schema id 1 (e-value version 1) does not resolve to the reader schema id 2" in str(
        err.value
    )
    assert "withheld under --mask" in str(err.value)
