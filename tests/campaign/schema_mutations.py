"""The schema family of mutations: damage to the Schema Registry's `_schemas` records and to
records framed in Confluent's wire format, done on a copy of tests/fixtures/schemas/logdir (the
only source with both; cases.plan gives a schema kind that source).

A record is changed by building its batch again (tests/helpers/schemas.replace_record: the
batch's own fields kept, its CRC right, the offset index's positions after it moved), so only the
schema layer can notice."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from kafkalog_cli.formats.records import Header, RecordBatch, iter_batches
from tests.helpers.schemas import replace_record as _replace

from .mutations import Kind, Mutation, _rel, mutation
from .workspace import Workspace

SCHEMAS_PART = "_schemas-0"
# the data topics of the fixture and how their values are framed
AVRO_TOPICS = ("orders-0", "customers-0", "legacy-0")
PROTOBUF_TOPICS = ("events-0",)
JSON_TOPICS = ("readings-0",)


def _segments(ws: Workspace, parts: tuple[str, ...]) -> list[Path]:
    out = []
    for p in parts:
        d = ws.logdir / p
        if d.is_dir() and not d.is_symlink():
            out += sorted(f for f in d.glob("*.log") if f.is_file() and not f.is_symlink())
    return out


def _records(seg: Path) -> list[tuple[RecordBatch, int]]:
    """(batch, index of the record in it) of every record of a v2 segment's sound batches."""
    out = []
    for b in iter_batches(seg.read_bytes()):
        if b.magic < 2 or b.is_control or not b.is_valid():
            continue
        out += [(b, i) for i in range(len(b.records()))]
    return out


def _schema_records(ws: Workspace, keytype: str = "SCHEMA"):
    """(segment, batch, i, key object, value object) of _schemas records of this keytype with a
    JSON value."""
    out = []
    for seg in _segments(ws, (SCHEMAS_PART,)):
        for b, i in _records(seg):
            r = b.records()[i]
            try:
                k = json.loads(r.key or b"null")
                v = json.loads(r.value) if r.value is not None else None
            except ValueError:
                continue
            if isinstance(k, dict) and k.get("keytype") == keytype and isinstance(v, dict):
                out.append((seg, b, i, k, v))
    return out


def _dump(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# -- _schemas records --------------------------------------------------------------------------

# schema texts that do not parse, by schemaType (absent: AVRO)
_BAD_TEXT = {
    "AVRO": (
        '{"type": "record", "name": "X", "fields": [',
        '{"type": "recrod", "name": "X", "fields": []}',
        '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "shop.Nowhere"}]}',
        '{"type": "record", "name": "X", "fields": [{"name": "a"}]}',
        '{"type": "enum", "name": "E", "symbols": ["A", "A"]}',
        '{"type": "fixed", "name": "F", "size": -1}',
        '{"type": "bytes", "logicalType": "decimal", "precision": 0, "scale": 5}',
        '"nothing"',
        "[]",
        "",
        "\udcff",
        # texts that parse, of types Parquet cannot hold or decoders rarely meet
        '{"type": "record", "name": "X", "fields": [{"name": "f", "type": '
        '{"type": "fixed", "name": "F", "size": 1099511627776}}]}',
        '{"type": "record", "name": "X", "fields": [{"name": "f", "type": '
        '{"type": "fixed", "name": "F", "size": -3}}]}',
        '{"type": "bytes", "logicalType": "decimal", "precision": 1000, "scale": 2}',
        '{"type": "record", "name": "Nothing", "fields": []}',
        '{"type": "enum", "name": "E", "symbols": []}',
        '["null", "string", "int", {"type": "array", "items": "int"}]',
        '{"type": "map", "values": ["null", "int", "string"]}',
        '"null"',
    ),
    "PROTOBUF": (
        'syntax = "proto3";\nmessage {',
        'syntax = "proto9";\nmessage A { int32 a = 1; }',
        'syntax = "proto3";\nimport "nowhere/missing.proto";\nmessage A { shop.Missing a = 1; }',
        'syntax = "proto3";\nmessage A { int32 a = 0; }',
        'syntax = "proto3";\nmessage A { int32 a = 1; int32 b = 1; }',
        "",
        "\x00\xff",
    ),
    "JSON": (
        '{"type": "object", "properties": {',
        '{"type": "nonsense"}',
        '{"$ref": "#/definitions/missing"}',
        '{"$ref": "http://example.invalid/schema.json"}',
        "[1, 2",
        '{"type": "object", "required": 5}',
        "",
    ),
}


@mutation(Kind.SCHEMA_TEXT)
def _schema_text(rng, ws):
    found = _schema_records(ws)
    if not found:
        return None
    if rng.random() < 0.3:
        return rng.choice((_array_of_nothing, _deep_recursion))(rng, ws, found)
    seg, b, i, k, v = rng.choice(found)
    kind = v.get("schemaType", "AVRO")
    text = rng.choice(_BAD_TEXT.get(kind, _BAD_TEXT["AVRO"]))
    v["schema"] = text
    _replace(seg, b, i, value=json.dumps(v).encode("utf-8", "surrogateescape"))
    return Mutation(
        Kind.SCHEMA_TEXT,
        _rel(ws, seg),
        f"offset {b.base_offset + i} ({v.get('subject')} v{v.get('version')}, {kind}): "
        f"schema text {text[:60]!r}",
    )


def _array_of_nothing(rng, ws, found) -> Mutation | None:
    """A schema that parses, whose array items take no bytes, and a value of it whose 11-byte
    block count claims 2^62 of them (a decoder reading them one by one never ends)."""
    target = [f for f in found if f[4].get("subject") == "customers-value"]
    framed = _framed(ws, ("customers-0",))
    if not target or not framed:
        return None
    seg, b, i, k, v = target[0]
    v["schema"] = json.dumps({"type": "array", "items": rng.choice(("null", EMPTY_RECORD))})
    v["references"] = []
    _replace(seg, b, i, value=_dump(v))
    seg2, b2, i2, value = rng.choice(_framed(ws, ("customers-0",)))
    _replace(seg2, b2, i2, value=value[:5] + _varint(2**62) + b"\x00")
    return Mutation(
        Kind.SCHEMA_TEXT,
        _rel(ws, seg),
        f"customers-value: {v['schema']}; customers-0 offset {b2.base_offset + i2}: 2^62 items",
    )


EMPTY_RECORD = {"type": "record", "name": "Nothing", "fields": []}
NODE = {
    "type": "record",
    "name": "Node",
    "fields": [{"name": "name", "type": "string"}, {"name": "next", "type": ["null", "Node"]}],
}


def _deep_recursion(rng, ws, found) -> Mutation | None:
    """A recursive schema (a linked list) and a value of it nested tens of thousands deep: a
    reader that recurses on the C stack crashes."""
    target = [f for f in found if f[4].get("subject") == "customers-value"]
    framed = _framed(ws, ("customers-0",))
    if not target or not framed:
        return None
    seg, b, i, k, v = target[0]
    v["schema"] = json.dumps(NODE)
    v["references"] = []
    _replace(seg, b, i, value=_dump(v))
    depth = rng.choice((300, 20_000, 200_000))
    seg2, b2, i2, value = rng.choice(_framed(ws, ("customers-0",)))
    _replace(seg2, b2, i2, value=value[:5] + b"\x02a\x02" * depth + b"\x02z\x00")
    return Mutation(
        Kind.SCHEMA_TEXT,
        _rel(ws, seg),
        f"customers-value: a linked list; customers-0 offset {b2.base_offset + i2}: {depth} deep",
    )


@mutation(Kind.SCHEMA_REFERENCES)
def _schema_references(rng, ws):
    found = _schema_records(ws)
    if not found:
        return None
    seg, b, i, k, v = rng.choice(found)
    refs = list(v.get("references") or [])
    how = rng.choice(("missing subject", "missing version", "self", "cycle", "odd shape"))
    if how == "missing subject":
        refs.append({"name": "nowhere.proto", "subject": "no-such-subject", "version": 1})
    elif how == "missing version":
        subject = refs[0]["subject"] if refs else "shop.Address"
        refs = [{"name": subject, "subject": subject, "version": rng.choice((0, -1, 7, 2**31))}]
    elif how == "self":
        refs = [{"name": v.get("subject"), "subject": v.get("subject"), "version": v["version"]}]
    elif how == "cycle":
        # this subject refers to one that refers back to it (both records changed)
        others = [f for f in found if f[3].get("subject") != k.get("subject")]
        if others:
            seg2, b2, i2, k2, v2 = rng.choice(others)
            v2["references"] = [
                {"name": k.get("subject"), "subject": k.get("subject"), "version": k["version"]}
            ]
            _replace(seg2, b2, i2, value=_dump(v2))
            # the first record may have moved: find it again
            again = [f for f in _schema_records(ws) if f[3] == k]
            if not again:
                return None
            seg, b, i, k, v = again[-1]
            refs = [
                {"name": k2.get("subject"), "subject": k2.get("subject"), "version": k2["version"]}
            ]
    else:
        refs = rng.choice(
            ({"name": "x"}, [{"subject": None, "version": "1"}], [1, 2], "shop.Address", [{}])
        )
    v["references"] = refs
    _replace(seg, b, i, value=_dump(v))
    return Mutation(
        Kind.SCHEMA_REFERENCES,
        _rel(ws, seg),
        f"offset {b.base_offset + i} ({v.get('subject')} v{v.get('version')}): {how}: "
        f"references {json.dumps(refs)[:80]}",
    )


@mutation(Kind.SCHEMA_RECORD_JSON)
def _schema_record_json(rng, ws):
    """A _schemas record whose key or value is not the registry's JSON, or whose fields have
    types or values the registry never writes."""
    found = _schema_records(ws)
    if not found:
        return None
    seg, b, i, k, v = rng.choice(found)
    how = rng.choice(
        (
            "value not JSON",
            "value not UTF-8",
            "key not JSON",
            "key type unknown",
            "key without version",
            "id a string",
            "id negative",
            "id of another schema",
            "id huge",
            "version zero",
            "version a float",
            "schemaType unknown",
            "schema null",
            "schema missing",
            "value a list",
            "subject differs from the key's",
            "deleted not a bool",
        )
    )
    key, value = _dump(k), _dump(v)
    if how == "value not JSON":
        value = value[: len(value) // 2]
    elif how == "value not UTF-8":
        value = value[:20] + b"\xff\xfe\xc0" + value[20:]
    elif how == "key not JSON":
        key = key[: len(key) // 2]
    elif how == "key type unknown":
        key = _dump({**k, "keytype": "SCHEMAZ"})
    elif how == "key without version":
        key = _dump({x: y for x, y in k.items() if x != "version"})
    elif how == "value a list":
        value = _dump([v])
    else:
        edits = {
            "id a string": ("id", "one"),
            "id negative": ("id", -1),
            "id of another schema": ("id", rng.choice([f[4]["id"] for f in found])),
            "id huge": ("id", 2**63),
            "version zero": ("version", 0),
            "version a float": ("version", 1.5),
            "schemaType unknown": ("schemaType", "XML"),
            "schema null": ("schema", None),
            "subject differs from the key's": ("subject", "someone-else"),
            "deleted not a bool": ("deleted", "yes"),
        }
        if how == "schema missing":
            v.pop("schema", None)
        else:
            field, new = edits[how]
            v[field] = new
        value = _dump(v)
    _replace(seg, b, i, key=key, value=value)
    return Mutation(
        Kind.SCHEMA_RECORD_JSON,
        _rel(ws, seg),
        f"offset {b.base_offset + i} ({k.get('subject')} v{k.get('version')}): {how}",
    )


# -- framed payloads ----------------------------------------------------------------------------


def _framed(ws: Workspace, parts: tuple[str, ...]):
    """(segment, batch, i, value) of records whose value is framed (magic byte 0)."""
    out = []
    for seg in _segments(ws, parts):
        for b, i in _records(seg):
            value = b.records()[i].value
            if value is not None and len(value) >= 5 and value[0] == 0:
                out.append((seg, b, i, value))
    return out


def _where(ws, seg, b, i) -> str:
    return f"offset {b.base_offset + i}"


@mutation(Kind.PAYLOAD_MAGIC)
def _payload_magic(rng, ws):
    """A framed value's magic byte changed; or a header-framed value's header byte changed."""
    found = _framed(ws, AVRO_TOPICS + PROTOBUF_TOPICS + JSON_TOPICS)
    headed = [
        (seg, b, i)
        for seg in _segments(ws, AVRO_TOPICS)
        for b, i in _records(seg)
        if any(h.key.endswith("_schema_id") for h in b.records()[i].headers)
    ]
    if headed and rng.random() < 0.3:
        seg, b, i = rng.choice(headed)
        hs = b.records()[i].headers
        new = rng.choice((b"\x00", b"\x02", b"\xff", b"", b"\x01\x00"))
        headers = tuple(
            Header(h.key, new + (h.value or b"")[1:] if len(new) == 1 else new)
            if h.key.endswith("_schema_id")
            else h
            for h in hs
        )
        _replace(seg, b, i, headers=headers)
        return Mutation(
            Kind.PAYLOAD_MAGIC, _rel(ws, seg), f"{_where(ws, seg, b, i)}: schema id header {new!r}"
        )
    if not found:
        return None
    seg, b, i, value = rng.choice(found)
    magic = rng.choice((1, 2, 0x7F, 0xFF))
    _replace(seg, b, i, value=bytes([magic]) + value[1:])
    return Mutation(Kind.PAYLOAD_MAGIC, _rel(ws, seg), f"{_where(ws, seg, b, i)}: magic {magic}")


@mutation(Kind.PAYLOAD_UNKNOWN_ID)
def _payload_unknown_id(rng, ws):
    found = _framed(ws, AVRO_TOPICS + PROTOBUF_TOPICS + JSON_TOPICS)
    if not found:
        return None
    seg, b, i, value = rng.choice(found)
    # unknown ids, the hard-deleted one, and ids of another format than the topic's
    new_id = rng.choice((0, 12, 999, 2**31 - 1, 2**32 - 1, 10, 1, 6, 7, 8, 9, 11))
    _replace(seg, b, i, value=value[:1] + struct.pack(">I", new_id) + value[5:])
    return Mutation(
        Kind.PAYLOAD_UNKNOWN_ID, _rel(ws, seg), f"{_where(ws, seg, b, i)}: schema id {new_id}"
    )


@mutation(Kind.PAYLOAD_TRUNCATED)
def _payload_truncated(rng, ws):
    """A framed value cut short (inside the prefix, inside the payload), or with bytes flipped
    or added after it."""
    found = _framed(ws, AVRO_TOPICS + PROTOBUF_TOPICS + JSON_TOPICS)
    if not found:
        return None
    seg, b, i, value = rng.choice(found)
    how = rng.choice(("cut", "cut", "flip", "flip", "append"))
    if how == "cut":
        n = rng.randrange(0, len(value))
        new = value[:n]
        what = f"cut to {n} of {len(value)} bytes"
    elif how == "flip":
        data = bytearray(value)
        at = sorted(rng.randrange(5, len(data)) for _ in range(rng.choice((1, 2, 4))))
        for k in at:
            data[k] ^= rng.choice((0x01, 0x80, 0xFF, 0x40))
        new = bytes(data)
        what = f"payload bytes {at} changed"
    else:
        tail = rng.choice((b"\x00", b"\xff" * 9, b"\x02" * 3, bytes(range(256))))
        new = value + tail
        what = f"{len(tail)} bytes appended"
    _replace(seg, b, i, value=new)
    return Mutation(Kind.PAYLOAD_TRUNCATED, _rel(ws, seg), f"{_where(ws, seg, b, i)}: {what}")


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag, as the serializer writes the indexes
    out = bytearray()
    n &= (1 << 64) - 1
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@mutation(Kind.PAYLOAD_PROTOBUF_INDEXES)
def _payload_protobuf_indexes(rng, ws):
    """A Protobuf value's message indexes (after the 5-byte prefix) replaced."""
    found = _framed(ws, PROTOBUF_TOPICS)
    if not found:
        return None
    seg, b, i, value = rng.choice(found)
    # the indexes the serializer wrote: a count then the path, or the single 0 byte for [0]
    pos = 5
    count = value[pos]
    skip = 1 if count == 0 else 1 + (count >> 1)  # small values: one byte each
    body = value[pos + skip :]
    choices = {
        "index out of range": _varint(1) + _varint(7),
        "negative index": _varint(1) + _varint(-1),
        "negative count": _varint(-3),
        "huge count": _varint(2**31 - 1),
        "count past the bytes": _varint(40) + _varint(0),
        "nested past the file": _varint(3) + _varint(0) + _varint(0) + _varint(0),
        "varint without end": b"\xff" * 11,
        "nothing after the id": b"",
        "two messages deep": _varint(2) + _varint(1) + _varint(0),
    }
    how = rng.choice(sorted(choices))
    new = value[:pos] + choices[how] + (b"" if how == "nothing after the id" else body)
    _replace(seg, b, i, value=new)
    return Mutation(Kind.PAYLOAD_PROTOBUF_INDEXES, _rel(ws, seg), f"{_where(ws, seg, b, i)}: {how}")


# -- the _schemas segment itself -----------------------------------------------------------------


@mutation(Kind.SCHEMAS_FILE)
def _schemas_file(rng, ws):
    """The _schemas segment (or its partition dir) a FIFO, a directory, a dangling link, or a
    link out of the log dir (moved out and linked back)."""
    segs = _segments(ws, (SCHEMAS_PART,))
    part = ws.logdir / SCHEMAS_PART
    if not segs:
        return None
    seg = segs[0]
    how = rng.choice(("fifo", "directory", "dangling link", "link out", "partition linked out"))
    target = ws.outside / "parked" / f"{SCHEMAS_PART}__{seg.name}"
    if how == "partition linked out":
        target = ws.outside / "parked" / SCHEMAS_PART
        os.rename(part, target)
        os.symlink(target, part)
        return Mutation(Kind.SCHEMAS_FILE, SCHEMAS_PART, "moved out of the log dir, linked back")
    if how == "link out":
        os.rename(seg, target)
        os.symlink(target, seg)
    else:
        seg.unlink()
        if how == "fifo":
            os.mkfifo(seg)
        elif how == "directory":
            seg.mkdir()
        else:
            os.symlink(ws.outside / "parked" / "no-such-file", seg)
    return Mutation(Kind.SCHEMAS_FILE, _rel(ws, seg), how)
