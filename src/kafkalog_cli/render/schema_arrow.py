"""Decoded keys and values as typed Arrow columns (export --to parquet with schemas).

The column's type comes from the reader schema of the topic's subject (`<topic>-value`, or the
file bound to the topic), so every segment of a topic gets the same type:

- Avro: records as structs, arrays as lists, maps as maps, enums as strings, `[null, T]` as a
  nullable T, other unions as structs of `member0..n` (as Spark's from_avro), fixed as fixed-size
  binary; logical types as Arrow's: timestamp-millis/micros (UTC), local-timestamp-*, date,
  time-millis/micros, decimal (decimal128, or decimal256 past 38 digits), uuid (arrow.uuid);
- Protobuf: the message as a struct (a file of several top-level messages: a struct of them by
  name, the one a record holds set), enums as their names, maps as maps, repeated as lists,
  google.protobuf.Timestamp as a timestamp (UTC, ns);
- JSON Schema: objects with properties as structs, arrays as lists, integer/number/boolean/string
  as int64/float64/bool/string, anything else as its JSON text.

A key or value that does not decode is null in the typed column and kept, whole, in
`value_bytes` (`key_bytes`) with the reason in `value_error`; `value_schema_id` names the writer."""

from __future__ import annotations

import json

from kafkalog_cli.errors import reason_of
from kafkalog_cli.ops.schema_decode import (
    Decoded,
    SchemaDecoder,
    Undecoded,
    is_repeated,
    run_decoder,
)
from kafkalog_cli.ops.schema_mask import WITHHELD
from kafkalog_cli.ops.schema_registry import SchemaRegistryError, SchemaType, SchemaVersion


def column_schema(decoder: SchemaDecoder, topic: str, is_key: bool) -> SchemaVersion | None:
    """The reader schema whose type the topic's key or value column takes, or None (no schema:
    the column stays bytes)."""
    bound = decoder.registry.bound.get((topic, is_key))
    if bound is not None:
        return bound
    subject = decoder.topic_subject(topic, is_key)
    return decoder.reader_of(subject) if subject is not None else None


# -- Avro


def _avro_type(s, named: dict):
    import pyarrow as pa

    if isinstance(s, str):
        if s in named:
            return named[s]
        return _AVRO_PRIMITIVES()[s]
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) == 1:
            return _avro_type(branches[0], named)
        return pa.struct(
            [pa.field(f"member{i}", _avro_type(b, named)) for i, b in enumerate(branches)]
        )
    t = s.get("type")
    logical = s.get("logicalType")
    if logical == "decimal" and t in ("bytes", "fixed"):
        p, sc = int(s.get("precision", 38)), int(s.get("scale", 0))
        out = pa.decimal128(p, sc) if p <= 38 else pa.decimal256(p, sc)
    elif logical in _AVRO_LOGICAL() and t in ("int", "long", "string"):
        out = _AVRO_LOGICAL()[logical]
    elif t == "record" or t == "error":
        out = None
        name = _full_name(s)
        # a recursive record cannot be an Arrow type: its nested uses become JSON text
        named[name] = pa.string()
        out = pa.struct([pa.field(f["name"], _avro_type(f["type"], named)) for f in s["fields"]])
    elif t == "enum":
        out = pa.string()
    elif t == "array":
        out = pa.list_(_avro_type(s["items"], named))
    elif t == "map":
        out = pa.map_(pa.string(), _avro_type(s["values"], named))
    elif t == "fixed":
        out = pa.binary(int(s["size"]))
    else:
        out = _avro_type(t, named)
    if isinstance(s, dict) and t in ("record", "error", "enum", "fixed"):
        named[_full_name(s)] = out
        named.setdefault(s["name"], out)
    return out


def _avro_references(registry, v: SchemaVersion, named: dict, seen: set) -> None:
    """The Arrow types of the named types `v`'s references define, depth first."""
    for ref in v.references:
        target = registry.resolve(ref)
        if target is None or (target.subject, target.version) in seen:
            continue
        seen.add((target.subject, target.version))
        _avro_references(registry, target, named, seen)
        _avro_type(json.loads(target.schema), named)


def _full_name(s: dict) -> str:
    name = s["name"]
    return name if "." in name or not s.get("namespace") else f"{s['namespace']}.{name}"


def _AVRO_PRIMITIVES():
    import pyarrow as pa

    return {
        "null": pa.null(),
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bytes": pa.binary(),
        "string": pa.string(),
    }


def _AVRO_LOGICAL():
    import pyarrow as pa

    return {
        "timestamp-millis": pa.timestamp("ms", tz="UTC"),
        "timestamp-micros": pa.timestamp("us", tz="UTC"),
        "local-timestamp-millis": pa.timestamp("ms"),
        "local-timestamp-micros": pa.timestamp("us"),
        "date": pa.date32(),
        "time-millis": pa.time32("ms"),
        "time-micros": pa.time64("us"),
        "uuid": pa.uuid(),
    }


class _NotColumnar(Exception):
    """A schema or a value the columnar path does not take: the values go the per-value way."""


# the logical types fastavro converts, by (Avro type, logicalType), with the Arrow type of the
# value as written (what fastavro returns with the logical type left out)
_PLAIN_LOGICAL = {
    ("long", "timestamp-millis"): "int64",
    ("long", "timestamp-micros"): "int64",
    ("long", "local-timestamp-millis"): "int64",
    ("long", "local-timestamp-micros"): "int64",
    ("int", "date"): "int32",
    ("int", "time-millis"): "int32",
    ("long", "time-micros"): "int64",
    ("string", "uuid"): "string",
}


def _avro_plain_type(s, named: dict, short: dict):
    """`_avro_type` of the same schema for the values as written (fastavro without logical
    types: timestamps, dates and times as ints, decimals as bytes, UUIDs as strings), each
    node as `_avro_type` makes it; `_NotColumnar` where a value needs converting one by one
    (unions of several types, recursive records) or the schema is out of the ordinary.
    `short`: each short name of a named type and the full name it was given for."""
    import pyarrow as pa

    if isinstance(s, str):
        if s in named:
            if named[s] is None:  # its own record, still being made: JSON text
                raise _NotColumnar(s)
            return named[s]
        if s not in _AVRO_PRIMITIVES():
            raise _NotColumnar(s)
        return _AVRO_PRIMITIVES()[s]
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) != 1:
            raise _NotColumnar("union")
        return _avro_plain_type(branches[0], named, short)
    if not isinstance(s, dict):
        raise _NotColumnar(repr(s))
    t = s.get("type")
    logical = s.get("logicalType")
    if logical is not None:  # only those fastavro and `_avro_type` both know
        if logical == "decimal" and t in ("bytes", "fixed"):
            p, sc = s.get("precision"), s.get("scale", 0)
            if not (type(p) is int and type(sc) is int and 1 <= p <= 38 and 0 <= sc <= p):
                raise _NotColumnar("decimal")  # fastavro's reading of it, or a decimal128
            out = pa.binary() if t == "bytes" else pa.binary(int(s["size"]))
        elif isinstance(t, str) and (t, logical) in _PLAIN_LOGICAL:
            out = getattr(pa, _PLAIN_LOGICAL[t, logical])()
        else:
            raise _NotColumnar(f"{t} {logical}")
    elif t == "record" or t == "error":
        named[_full_name(s)] = None
        out = pa.struct(
            [pa.field(f["name"], _avro_plain_type(f["type"], named, short)) for f in s["fields"]]
        )
    elif t == "enum":
        out = pa.string()
    elif t == "array":
        out = pa.list_(_avro_plain_type(s["items"], named, short))
    elif t == "map":
        out = pa.map_(pa.string(), _avro_plain_type(s["values"], named, short))
    elif t == "fixed":
        out = pa.binary(int(s["size"]))
    elif isinstance(t, (str, list, dict)):
        out = _avro_plain_type(t, named, short)
    else:
        raise _NotColumnar(repr(t))
    if t in ("record", "error", "enum", "fixed"):
        full = _full_name(s)
        if short.setdefault(s["name"], full) != full:  # one name, two types: which one is meant
            raise _NotColumnar(s["name"])
        named[full] = out
        named.setdefault(s["name"], out)
    return out


def _avro_plain_references(registry, v: SchemaVersion, named: dict, short: dict, seen: set):
    """`_avro_references` for `_avro_plain_type`."""
    for ref in v.references:
        target = registry.resolve(ref)
        if target is None or (target.subject, target.version) in seen:
            continue
        seen.add((target.subject, target.version))
        _avro_plain_references(registry, target, named, short, seen)
        _avro_plain_type(json.loads(target.schema), named, short)


_TIME_BOUNDS: dict = {}


def _time_bounds() -> dict:
    """The ints fastavro turns into a datetime, date or time (the rest fail, or read otherwise),
    by Arrow type (a timestamp's by its unit): [low, high]."""
    import datetime

    import pyarrow as pa

    if _TIME_BOUNDS:
        return _TIME_BOUNDS

    epoch = datetime.datetime(1970, 1, 1)
    us = datetime.timedelta(microseconds=1)
    lo_us, hi_us = (datetime.datetime.min - epoch) // us, (datetime.datetime.max - epoch) // us
    days = datetime.date(1970, 1, 1).toordinal()
    _TIME_BOUNDS.update(
        {
            "us": (lo_us, hi_us),
            "ms": (-(-lo_us // 1000), hi_us // 1000),
            pa.date32(): (1 - days, datetime.date.max.toordinal() - days),
            pa.time32("ms"): (0, 86_400_000 - 1),
            pa.time64("us"): (0, 86_400_000_000 - 1),
        }
    )
    return _TIME_BOUNDS


_UUID_TEXT = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def _columnar(arr, t):
    """`arr`, built as `_avro_plain_type` from the values as written, as the storage type `t`:
    each logical type converted column by column, as equal to what pa.array makes of fastavro's
    datetimes, Decimals and UUIDs; `_NotColumnar` for a value fastavro would not convert as the
    column does (out of its range: fastavro fails, or reads it otherwise)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pt = arr.type
    if pt == t:
        return arr
    if arr.offset:
        raise _NotColumnar("offset")
    validity = arr.buffers()[0]
    if pa.types.is_struct(pt) and pa.types.is_struct(t) and pt.num_fields == t.num_fields:
        children = []
        for i in range(t.num_fields):
            if pt.field(i).name != t.field(i).name:
                raise _NotColumnar(t.field(i).name)
            children.append(_columnar(arr.field(i), t.field(i).type))
        return pa.Array.from_buffers(t, len(arr), [validity], arr.null_count, children=children)
    if pa.types.is_list(pt) and pa.types.is_list(t):
        values = _columnar(arr.values, t.value_type)
        return pa.Array.from_buffers(
            t, len(arr), arr.buffers()[:2], arr.null_count, children=[values]
        )
    if pa.types.is_map(pt) and pa.types.is_map(t):
        entries = _columnar(arr.values, pa.struct([t.key_field, t.item_field]))
        return pa.Array.from_buffers(
            t, len(arr), arr.buffers()[:2], arr.null_count, children=[entries]
        )
    if pa.types.is_timestamp(t) or pa.types.is_date32(t) or pa.types.is_time(t):
        bounds = _time_bounds()
        lo, hi = bounds[t.unit] if pa.types.is_timestamp(t) else bounds[t]
        got = pc.min_max(arr)
        if got["min"].is_valid and (got["min"].as_py() < lo or got["max"].as_py() > hi):
            raise _NotColumnar(str(t))
        return arr.cast(t)
    if pa.types.is_decimal128(t) and (pa.types.is_binary(pt) or pa.types.is_fixed_size_binary(pt)):
        limit = 10**t.precision
        zero = bytes(16)
        out = []
        for b in arr.to_pylist():
            if b is None:
                out.append(zero)
                continue
            unscaled = int.from_bytes(b, "big", signed=True)
            if not -limit < unscaled < limit:  # fastavro rounds it to the precision
                raise _NotColumnar(str(t))
            out.append(unscaled.to_bytes(16, "little", signed=True))
        return pa.Array.from_buffers(
            t, len(arr), [validity, pa.py_buffer(b"".join(out))], arr.null_count
        )
    if pa.types.is_string(pt) and t == pa.binary(16):  # a uuid: as uuid.UUID(text).bytes
        if (
            arr.null_count < len(arr)
            and not pc.all(pc.match_substring_regex(arr, _UUID_TEXT)).as_py()
        ):
            raise _NotColumnar("uuid")  # not in the 8-4-4-4-12 form: uuid.UUID decides
        text = pc.replace_substring(arr, "-", "").fill_null("0" * 32)
        data = bytes.fromhex("".join(text.to_pylist()))
        return pa.Array.from_buffers(t, len(arr), [validity, pa.py_buffer(data)], arr.null_count)
    raise _NotColumnar(f"{pt} as {t}")


def _to_arrow_value(v, t):
    """A decoded value (or one `converter` made) as pyarrow builds `t` from it: UUIDs as their
    16 bytes, union members placed, recursive records as JSON text."""
    import uuid

    import pyarrow as pa

    if v is None:
        return None
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        if isinstance(v, bytes) and len(v) == 16:  # converted
            return v
        return (v if isinstance(v, uuid.UUID) else uuid.UUID(str(v))).bytes
    if pa.types.is_struct(t):
        if (
            t.num_fields
            and t.field(0).name == "member0"
            and not isinstance(v, dict)
            or (
                t.num_fields
                and t.field(0).name == "member0"
                and isinstance(v, dict)
                and set(v) - {f.name for f in t}
            )
        ):
            return _union_member(v, t)
        if not isinstance(v, dict):
            return None
        return {f.name: _to_arrow_value(v.get(f.name), f.type) for f in t}
    if pa.types.is_list(t):
        return [_to_arrow_value(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        pairs = v if isinstance(v, list) else v.items()  # a list: converted
        return [(k, _to_arrow_value(x, t.item_type)) for k, x in pairs]
    if pa.types.is_string(t) and not isinstance(v, str):
        return json.dumps(v, default=str)
    return v


def converter(t):
    """A function making a decoded value buildable as `t` by pa.array, compiled once per type;
    None where the value is buildable as it is (most of a record: dicts, lists, decimals,
    datetimes). What it does not foresee falls back to `_to_arrow_value`."""
    import uuid

    import pyarrow as pa

    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        UUID = uuid.UUID
        return lambda v: (
            None if v is None else (v.bytes if isinstance(v, UUID) else UUID(str(v)).bytes)
        )
    if pa.types.is_struct(t):
        if t.num_fields and t.field(0).name == "member0":
            return lambda v: None if v is None else _union_member(v, t)
        convs = [(f.name, c) for f in t if (c := converter(f.type)) is not None]
        if not convs:
            return None

        def struct(v):
            if v is None or not isinstance(v, dict):
                return None
            out = dict(v)
            for name, c in convs:
                out[name] = c(v.get(name))
            return out

        return struct
    if pa.types.is_list(t):
        c = converter(t.value_type)
        return None if c is None else (lambda v: None if v is None else [c(x) for x in v])
    if pa.types.is_map(t):
        c = converter(t.item_type)
        return (
            None
            if c is None
            else (lambda v: None if v is None else [(k, c(x)) for k, x in v.items()])
        )
    return None


def _union_member(v, t):
    """A non-null union's value as the struct of its members: the first member whose Arrow type
    takes the Python value is set."""
    import pyarrow as pa

    out = {f.name: None for f in t}
    for f in t:
        ft = f.type
        ok = (
            (pa.types.is_boolean(ft) and isinstance(v, bool))
            or (pa.types.is_integer(ft) and isinstance(v, int) and not isinstance(v, bool))
            or (pa.types.is_floating(ft) and isinstance(v, float))
            or (pa.types.is_string(ft) and isinstance(v, str))
            or (
                (pa.types.is_binary(ft) or pa.types.is_fixed_size_binary(ft))
                and isinstance(v, bytes)
            )
            or (pa.types.is_struct(ft) and isinstance(v, dict))
            or (pa.types.is_map(ft) and isinstance(v, dict))
            or (pa.types.is_list(ft) and isinstance(v, list))
        )
        if ok:
            out[f.name] = _to_arrow_value(v, ft)
            return out
    return out


# -- Protobuf

_PB_SCALARS = None


def _pb_scalar(t: int):
    import pyarrow as pa

    global _PB_SCALARS
    if _PB_SCALARS is None:
        _PB_SCALARS = {
            1: pa.float64(),
            2: pa.float32(),
            3: pa.int64(),
            4: pa.uint64(),
            5: pa.int32(),
            6: pa.uint64(),
            7: pa.uint32(),
            8: pa.bool_(),
            9: pa.string(),
            12: pa.binary(),
            13: pa.uint32(),
            14: pa.string(),
            15: pa.int32(),
            16: pa.int64(),
            17: pa.int32(),
            18: pa.int64(),
        }
    return _PB_SCALARS[t]


def _pb_message_type(desc, seen: tuple = ()):
    import pyarrow as pa

    if desc.full_name == "google.protobuf.Timestamp":
        return pa.timestamp("ns", tz="UTC")
    if desc.full_name in seen:
        return pa.string()
    fields = []
    for f in desc.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            t = pa.map_(
                _pb_field_type(k, seen + (desc.full_name,)),
                _pb_field_type(v, seen + (desc.full_name,)),
            )
        else:
            t = _pb_field_type(f, seen + (desc.full_name,))
            if is_repeated(f):
                t = pa.list_(t)
        fields.append(pa.field(f.name, t))
    return pa.struct(fields)


def _pb_field_type(f, seen):
    return _pb_message_type(f.message_type, seen) if f.type in (10, 11) else _pb_scalar(f.type)


def _pb_value(msg, t):
    """A protobuf message as the Python value of its Arrow type `t`."""
    import datetime

    import pyarrow as pa

    if msg.DESCRIPTOR.full_name == "google.protobuf.Timestamp":
        return datetime.datetime.fromtimestamp(0, datetime.timezone.utc) + datetime.timedelta(
            seconds=msg.seconds, microseconds=msg.nanos // 1000
        )
    if pa.types.is_string(t):
        from google.protobuf import json_format

        return json.dumps(json_format.MessageToDict(msg, preserving_proto_field_name=True))
    out = {}
    for f in msg.DESCRIPTOR.fields:
        ft = t.field(f.name).type
        value = getattr(msg, f.name)
        if pa.types.is_map(ft):
            out[f.name] = [
                (k, _pb_one(f.message_type.fields_by_name["value"], value[k], ft.item_type))
                for k in value
            ]
        elif is_repeated(f):
            out[f.name] = [_pb_one(f, x, ft.value_type) for x in value]
        elif f.type in (10, 11) and not msg.HasField(f.name):
            out[f.name] = None
        else:
            out[f.name] = _pb_one(f, value, ft)
    return out


def _pb_values(v, t):
    """A decoded Protobuf value as the Python value of `t`: a message, or (masked) its values."""
    return _to_arrow_value(v, t) if isinstance(v, dict) else _pb_value(v, t)


def _pb_one(f, value, t):
    if f.type in (10, 11):
        return _pb_value(value, t)
    if f.type == 14:
        ev = f.enum_type.values_by_number.get(value)
        return ev.name if ev is not None else str(value)
    return value


# -- JSON Schema


def _json_type(s: dict, depth: int = 0):
    import pyarrow as pa

    t = s.get("type") if isinstance(s, dict) else None
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        t = rest[0] if len(rest) == 1 else None
    if t == "object" and isinstance(s.get("properties"), dict) and depth < 32:
        return pa.struct(
            [pa.field(k, _json_type(v, depth + 1)) for k, v in s["properties"].items()]
        )
    if t == "array" and isinstance(s.get("items"), dict) and depth < 32:
        return pa.list_(_json_type(s["items"], depth + 1))
    scalars = {
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
        "string": pa.string(),
    }
    return scalars.get(t, pa.string()) if isinstance(t, str) else pa.string()


def _json_value(v, t):
    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_struct(t):
        return (
            {f.name: _json_value(v.get(f.name), f.type) for f in t} if isinstance(v, dict) else None
        )
    if pa.types.is_list(t):
        return [_json_value(x, t.value_type) for x in v] if isinstance(v, list) else None
    if pa.types.is_string(t):
        return v if isinstance(v, str) else json.dumps(v)
    if pa.types.is_floating(t):
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if pa.types.is_integer(t):
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if pa.types.is_boolean(t):
        return v if isinstance(v, bool) else None
    return v


# -- columns


def masked_type(t, mask):
    """`t` with the fields `mask` (an ops.schema_mask.FieldMask, or None) masks as strings: the
    masks are text whatever the field held (an array's elements each)."""
    if mask is None:
        return t
    for path in mask.paths:
        t = _masked_at(t, path)
    return t


def _masked_at(t, path):
    import pyarrow as pa

    if pa.types.is_list(t):
        return pa.list_(_masked_at(t.value_type, path))
    if not path:
        return pa.string()
    if not pa.types.is_struct(t):
        return t
    names = [f.name for f in t]
    if path[0] in names:
        return pa.struct(
            [
                pa.field(f.name, _masked_at(f.type, path[1:]), f.nullable)
                if f.name == path[0]
                else f
                for f in t
            ]
        )
    if names and names[0] == "member0":  # a union's members: the records among them
        return pa.struct([pa.field(f.name, _masked_at(f.type, path), f.nullable) for f in t])
    return t


def storage_type(t):
    """`t` with its extension types (arrow.uuid) as their storage: what pa.array builds nested
    values into, cast to `t` after."""
    import pyarrow as pa

    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, storage_type(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(storage_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(storage_type(t.key_type), storage_type(t.item_type))
    return t


class TypedColumn:
    """The Arrow type of a topic's key or value column and the conversion of decoded values to it."""

    def __init__(self, decoder: SchemaDecoder, reader: SchemaVersion):
        import pyarrow as pa

        self.reader = reader
        self.kind = reader.schema_type
        if self.kind is SchemaType.AVRO:
            named: dict = {}
            _avro_references(decoder.registry, reader, named, set())
            self.type = masked_type(_avro_type(json.loads(reader.schema), named), decoder.mask)
            fast = converter(self.type)
            self.convert = (lambda d: d.value) if fast is None else (lambda d: fast(d.value))
            try:  # the type of the values as written, when the column is built column-wise
                plain_named: dict = {}
                short: dict = {}
                _avro_plain_references(decoder.registry, reader, plain_named, short, set())
                self.plain = _avro_plain_type(json.loads(reader.schema), plain_named, short)
            except Exception:  # _NotColumnar, or what an odd schema raises: value by value
                self.plain = None
        elif self.kind is SchemaType.PROTOBUF:
            pb = decoder.parsed(reader)
            tops = list(pb.file.message_types_by_name.values())
            self.messages = {m.full_name: m.name for m in tops}
            if len(tops) == 1:
                self.type = masked_type(_pb_message_type(tops[0]), decoder.mask)
                self.convert = lambda d: (
                    _pb_values(d.value, self.type)
                    if d.value.DESCRIPTOR.full_name == tops[0].full_name
                    else None
                )
            else:
                self.type = pa.struct(
                    [pa.field(m.name, masked_type(_pb_message_type(m), decoder.mask)) for m in tops]
                )

                def convert(d):
                    name = self.messages.get(d.value.DESCRIPTOR.full_name)
                    if name is None:
                        return None
                    out = {m.name: None for m in tops}
                    out[name] = _pb_values(d.value, self.type.field(name).type)
                    return out

                self.convert = convert
        else:
            self.type = masked_type(_json_type(json.loads(reader.schema)), decoder.mask)
            self.convert = lambda d: _json_value(d.value, self.type)
        self.storage = storage_type(self.type)
        if self.kind is not SchemaType.AVRO:
            self.plain = None
        # the 4 id bytes of a prefix-framed writer -> (its plain fastavro schema, its id), or
        # None: its values go value by value
        self.plans: dict[bytes, tuple | None] = {}

    def plan(self, decoder: SchemaDecoder, first: Decoded) -> tuple | None:
        """How the next values of `first`'s writer are read column-wise: its schema is the
        column's (no resolution to another reader), read by fastavro without logical types
        (`SchemaDecoder.plain_avro`); None when they are not."""
        w = first.writer
        if (
            self.plain is None
            or first.reader is not w
            or w.schema_type is not SchemaType.AVRO
            or w.schema != self.reader.schema
            or w.references != self.reader.references
        ):
            return None
        parsed = decoder.plain_avro(w)
        return None if parsed is None else (parsed, w.id)


def _unfit(col: TypedColumn | UntypedColumn) -> str:
    """The error of a decoded value the column's type does not take (an UntypedColumn's: why
    it has none)."""
    return getattr(col, "why", None) or (
        f"not the column's type ({col.reader.subject} version {col.reader.version})"
    )


def _one(got, data, col: TypedColumn) -> tuple:
    """A key's or value's (typed value, schema id, error) from its decoding `got`."""
    value, sid, error = None, None, None
    if isinstance(got, Decoded):
        sid = got.writer.id
        value = col.convert(got)
        if value is None and got.value is not None:
            error = _unfit(col)
    elif isinstance(got, Undecoded):
        # a framed id past a Java int is no registry's (value_schema_id is an int32): the
        # error names it
        sid = got.schema_id if isinstance(got.schema_id, int) and got.schema_id < 2**31 else None
        error = got.reason
    elif data is not None:
        error = "not in the schema registry's wire format"
    return value, sid, error


def _avro_columns(raw: list, topic: str, is_key: bool, decoder, col: TypedColumn, headers):
    """The typed column of `raw` (keys or values) as `decode_table` builds it, Avro values of
    the column's own schema read by fastavro without logical types and built into Arrow
    column-wise (`_columnar`): (storage array, ids, kept, errors); None when a value is not
    taken so (the caller then builds the whole column value by value).

    A payload goes this way when `SchemaDecoder.decode` would read it with fastavro straight
    from its bytes (a prefix-framed id decoded before, no header naming a schema) and it reads
    whole; the rest goes through `decode` one by one, as before."""
    import io

    import pyarrow as pa
    from fastavro import schemaless_reader

    from kafkalog_cli.formats.schema_wire import header_ref

    n = len(raw)
    ids: list = [None] * n
    kept: list = [None] * n
    errors: list = [None] * n
    fast_rows: list[int] = []
    fast_values: list = []
    slow_rows: list[int] = []
    slow_values: list = []
    plans = col.plans
    BytesIO = io.BytesIO
    for i, data in enumerate(raw):
        hs = headers[i] if headers is not None else ()
        framed = (
            data is not None
            and len(data) >= 5
            and data[0] == 0
            and (not hs or header_ref(hs, is_key) is None)
        )
        if framed:
            plan = plans.get(data[1:5])
            if plan is not None:
                bio = BytesIO(data)
                bio.seek(5)
                try:
                    value = schemaless_reader(bio, plan[0], None)
                except Exception:  # what does not read: the decoder says why
                    pass
                else:
                    if bio.tell() == len(data):
                        fast_rows.append(i)
                        fast_values.append(value)
                        ids[i] = plan[1]
                        continue
        got = decoder.decode(topic, is_key, data, hs)
        value, ids[i], error = _one(got, data, col)
        if error is not None:
            kept[i], errors[i] = data, error
        slow_rows.append(i)
        slow_values.append(value)
        if framed and isinstance(got, Decoded) and data[1:5] not in plans:
            first = decoder.prefix_framed_avro(topic, is_key, data[1:5])
            if first is not None:
                plans[data[1:5]] = col.plan(decoder, first)
    try:
        parts = []
        if fast_rows:
            fast = _columnar(pa.array(fast_values, type=col.plain), col.storage)
            if fast.type != col.storage:
                return None
            parts.append(fast)
        if slow_rows or not fast_rows:
            parts.append(pa.array(slow_values, type=col.storage))
    except (_NotColumnar, pa.ArrowException, TypeError, ValueError):
        return None
    if len(parts) == 1:
        return parts[0], ids, kept, errors
    at = [0] * n
    for j, i in enumerate(fast_rows + slow_rows):
        at[i] = j
    return pa.concat_arrays(parts).take(pa.array(at, type=pa.int64())), ids, kept, errors


def _one_by_one(raw: list, topic: str, is_key: bool, decoder, col: TypedColumn, headers):
    """The typed column of `raw` (keys or values), each decoded by the decoder and converted
    to the column's type: (storage array, ids, kept, errors)."""
    import pyarrow as pa

    values: list = []
    ids: list[int | None] = []
    kept: list[bytes | None] = []
    errors: list[str | None] = []
    for i, data in enumerate(raw):
        got = decoder.decode(topic, is_key, data, headers[i] if headers is not None else ())
        value, sid, error = _one(got, data, col)
        if error is not None and decoder.mask is not None:
            # bytes that did not decode could hold what is masked: they are withheld
            error, data = f"{error} ({WITHHELD})", None
        values.append(value)
        ids.append(sid)
        kept.append(data if error is not None else None)
        errors.append(error)
    unfit = (pa.ArrowException, TypeError, ValueError, AttributeError)
    try:
        built = pa.array(values, type=col.storage)
    except unfit:  # a shape the converter did not foresee
        try:
            built = pa.array([_to_arrow_value(v, col.type) for v in values], type=col.storage)
        except unfit:  # a value the column's type does not hold (a decimal past its precision)
            for i, v in enumerate(values):
                try:
                    values[i] = _to_arrow_value(v, col.type)
                    pa.array([values[i]], type=col.storage)
                except unfit:
                    values[i], kept[i], errors[i] = None, raw[i], _unfit(col)
                    if decoder.mask is not None:
                        kept[i], errors[i] = None, f"{errors[i]} ({WITHHELD})"
            built = pa.array(values, type=col.storage)
    return built, ids, kept, errors


# Avro columns of the column's own schema built column-wise (`_avro_columns`); off: value by
# value only (the tests compare both)
COLUMNAR = True


class _GcPaused:
    """The cyclic garbage collector paused (as it was, after): decoding a column makes
    millions of dicts and lists, none in a cycle, and each collection walks them all."""

    def __enter__(self):
        import gc

        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        import gc

        if self.was:
            gc.enable()


def _schema_id_headers(table, is_key: bool) -> list | None:
    """Per row of `table`, its headers as (key, value) pairs when one of them is the schema id
    header of keys (`is_key`) or values, else (): all that `SchemaDecoder.decode` reads of a
    record's headers. None when no row has one (found column-wise: most records have none)."""
    import pyarrow.compute as pc

    from kafkalog_cli.formats.schema_wire import KEY_SCHEMA_ID_HEADER, VALUE_SCHEMA_ID_HEADER

    if "headers" not in table.column_names or not table.num_rows:
        return None
    column = table.column("headers").combine_chunks()
    keys = column.flatten().field("key")
    if not len(keys):
        return None
    hit = pc.equal(keys, KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER)
    rows = pc.unique(pc.list_parent_indices(column).filter(hit)).to_pylist()
    if not rows:
        return None
    out: list = [()] * len(column)
    for i, hs in zip(rows, column.take(rows).to_pylist()):
        out[i] = [(h["key"], h["value"]) for h in hs]
    return out


class UntypedColumn:
    """The column of a reader schema that has no Parquet type (it does not parse, or its Arrow
    type is one Parquet cannot hold): nulls, every value kept in `<field>_bytes` with `why`."""

    def __init__(self, reader: SchemaVersion, why: str):
        import pyarrow as pa

        self.reader, self.why = reader, why
        self.type = self.storage = pa.null()
        self.convert = lambda d: None
        self.plain = None  # nothing read column-wise
        self.plans: dict = {}


def typed_column(decoder: SchemaDecoder, reader: SchemaVersion) -> TypedColumn | UntypedColumn:
    """The column a reader schema gives: its TypedColumn when the schema parses and Parquet can
    write its type (an empty table of it is written), else an UntypedColumn saying why."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        decoder.parsed(reader)
    except SchemaRegistryError as e:
        return UntypedColumn(reader, e.message)
    try:
        col = TypedColumn(decoder, reader)
        empty = pa.array([], type=col.storage).cast(col.type)  # as decode_table builds it
        pq.write_table(pa.table({"v": empty}), io.BytesIO())  # in memory: an OSError is the type's
    except (
        ValueError,
        TypeError,
        OverflowError,
        KeyError,
        RecursionError,
        OSError,
        pa.ArrowException,
    ) as e:
        return UntypedColumn(
            reader,
            f"{reader.subject} version {reader.version}: its type is none Parquet holds: "
            f"{reason_of(e)}",
        )
    return col


def decode_table(table, topic: str, decoder: SchemaDecoder, columns: dict, keep_headers: bool):
    """`table`'s key and value columns (binary) replaced by typed ones where the topic has a
    schema, with `<field>_schema_id`, `<field>_bytes` and `<field>_error` after each; `columns`
    caches each (topic, is_key)'s TypedColumn (or None)."""
    import pyarrow as pa

    names = table.column_names
    for field, is_key in (("key", True), ("value", False)):
        if field not in names:
            continue
        k = (topic, is_key)
        if k not in columns:
            reader = column_schema(decoder, topic, is_key)
            columns[k] = typed_column(decoder, reader) if reader is not None else None
        col = columns[k]
        if col is None:
            continue
        raw = table.column(field).to_pylist()
        headers = _schema_id_headers(table, is_key)
        with _GcPaused():
            done = None
            # a decoder that masks values (`mask`) does so in `decode`: every value goes there
            if col.plain is not None and COLUMNAR and decoder.mask is None:
                done = _avro_columns(raw, topic, is_key, decoder, col, headers)
            if done is not None:
                built, ids, kept, errors = done
            else:
                built, ids, kept, errors = _one_by_one(raw, topic, is_key, decoder, col, headers)
        at = table.column_names.index(field)
        table = table.set_column(at, pa.field(field, col.type), built.cast(col.type))
        table = table.add_column(
            at + 1, pa.field(f"{field}_schema_id", pa.int32()), pa.array(ids, type=pa.int32())
        )
        table = table.add_column(
            at + 2, pa.field(f"{field}_bytes", pa.binary()), pa.array(kept, type=pa.binary())
        )
        table = table.add_column(
            at + 3, pa.field(f"{field}_error", pa.string()), pa.array(errors, type=pa.string())
        )
    if not keep_headers and "headers" in table.column_names:
        table = table.drop_columns(["headers"])
    return table


class TypedTables:
    """One segment's row groups with typed keys and values: the decoder of the run's schemas
    (schema_decode.run_decoder: one a process, the most recently used kept)."""

    def __init__(self, spec, topic: str, keep_headers: bool):
        dec = run_decoder(spec, protobuf_messages=True)
        self.decoder, self.topic, self.keep_headers = dec, topic or "", keep_headers
        self.columns: dict = {}

    def table(self, table):
        return decode_table(table, self.topic, self.decoder, self.columns, self.keep_headers)

    def schema(self, schema):
        """The Parquet file's schema: `schema` with the typed columns laid in."""
        return self.table(schema.empty_table()).schema
