"""--mask: named fields of decoded keys and values replaced by a keyed hash, so a dump can be
shared without them and still joined on them.

A field is a dotted path into nested records (`customer.email`); arrays on the way (or at the
end) are gone through, each element masked. The mask of a value is HMAC-SHA256, keyed by the
run's key, of the value's text (a string's UTF-8, a bytes value's bytes, a number's, decimal's,
time's or UUID's text, a record's JSON: `_text`), written as 64 hex digits.
A null stays null. Equal values have equal masks under one key: within a run (a random key), or
across runs with the same --mask-key-file.

`FieldMask.decoded` is applied where decoded values are made (ops/schema_decode.py's
SchemaDecoder.decode), so every output of them (dump-log --format json, export --to jsonl and
--to parquet) is masked by the same call. `check_fields` refuses a field that no schema read
has, naming the subjects it looked in."""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import hmac
import json
import math
import uuid
from dataclasses import dataclass

from kafkalog_cli.errors import UsageError

# What stands for a key or value that did not decode while fields are masked: its bytes could
# hold what is masked, so they are withheld (dump-log's JSON and export's columns alike).
WITHHELD = "its bytes withheld: --mask"

Path = tuple[str, ...]


def parse_field(text: str) -> Path:
    """A --mask FIELD as its path; ValueError for an empty part (`a..b`, `.a`)."""
    parts = tuple(text.split("."))
    if not all(parts):
        raise ValueError(f"{text!r} is not a dotted path of field names (e.g. customer.email)")
    return parts


@dataclass(frozen=True)
class FieldMask:
    """The fields to mask (paths) and the HMAC key (picklable: export's workers take it)."""

    paths: tuple[Path, ...]
    key: bytes

    def digest(self, value) -> str:
        """The mask of one non-null value."""
        return hmac.new(self.key, _text(value), hashlib.sha256).hexdigest()

    def apply(self, value):
        """`value` (a decoded key or value as Python values) with every path masked; what a path
        does not reach is left as it is. Copies what it changes."""
        for path in self.paths:
            value = self._at(value, path)
        return value

    def _at(self, v, path: Path):
        if v is None:
            return None
        if isinstance(v, list):
            return [self._at(x, path) for x in v]
        if not path:
            return self.digest(v)
        if isinstance(v, dict) and path[0] in v:
            out = v.copy()
            out[path[0]] = self._at(v[path[0]], path[1:])
            return out
        return v

    def decoded(self, got):
        """A schema_decode.Decoded with its value masked (a Protobuf message first made its
        fields' values: MessageValues)."""
        from kafkalog_cli.ops.schema_decode import Decoded

        value = got.value
        if hasattr(value, "DESCRIPTOR") and not isinstance(value, dict):
            value = message_values(value)
        masked = self.apply(value)
        if isinstance(value, MessageValues) and not isinstance(masked, MessageValues):
            masked = MessageValues(masked, value.DESCRIPTOR)
        return Decoded(masked, got.writer, got.reader, got.ref)


def _text(v) -> bytes:
    """What a value's mask is the HMAC of: a bytes value's bytes; a scalar's text (a string as it
    is, a number or boolean as JSON writes it, a decimal, time or UUID as its text); a record's or
    array's JSON text (keys sorted, no spaces)."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    plain = _plain(v)
    if isinstance(plain, str):
        return plain.encode("utf-8", "surrogatepass")
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


def _plain(v):
    """`v` as JSON values (the JSON text of what is not a string or bytes)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, (decimal.Decimal, uuid.UUID)):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


class MessageValues(dict):
    """A Protobuf message as its fields' values (what a mask can replace), with its DESCRIPTOR."""

    def __init__(self, values: dict, descriptor):
        super().__init__(values)
        self.DESCRIPTOR = descriptor


def message_values(msg) -> MessageValues:
    """A Protobuf message as Python values: scalars as they are, enums by name, repeated fields as
    lists, maps as dicts, messages as MessageValues (None when not set), Timestamp as UTC time."""
    from kafkalog_cli.ops.schema_decode import is_repeated

    out: dict[str, object] = {}
    for f in msg.DESCRIPTOR.fields:
        value = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = {k: _field_value(vf, value[k]) for k in value}
        elif is_repeated(f):
            out[f.name] = [_field_value(f, x) for x in value]
        elif f.type in (10, 11) and not msg.HasField(f.name):
            out[f.name] = None
        else:
            out[f.name] = _field_value(f, value)
    return MessageValues(out, msg.DESCRIPTOR)


def _field_value(f, value):
    if f.type in (10, 11):
        if value.DESCRIPTOR.full_name == "google.protobuf.Timestamp":
            return datetime.datetime.fromtimestamp(0, datetime.timezone.utc) + datetime.timedelta(
                seconds=value.seconds, microseconds=value.nanos // 1000
            )
        return message_values(value)
    if f.type == 14:
        ev = f.enum_type.values_by_number.get(value)
        return ev.name if ev is not None else str(value)
    return value


# -- which schemas have a field


def check_fields(decoder, topics, mask: FieldMask) -> None:
    """A UsageError for a field that none of the reader schemas of the topics' keys and values
    has (every subject's, when the topics have none), naming the subjects looked in."""
    from kafkalog_cli.ops.schema_registry import SchemaRegistryError

    readers = []
    for topic in sorted(set(topics)):
        for is_key in (True, False):
            bound = decoder.registry.bound.get((topic, is_key))
            subject = decoder.topic_subject(topic, is_key)
            reader = bound or (decoder.reader_of(subject) if subject is not None else None)
            if reader is not None and reader not in readers:
                readers.append(reader)
    if not readers:
        readers = [v for s in sorted(decoder.registry.versions) if (v := _latest(decoder, s))]
    names = ", ".join(sorted({r.subject for r in readers})) or "none: no schema was read"
    for path in mask.paths:
        found = False
        for r in readers:
            try:
                found = _has(decoder, r, path)
            except SchemaRegistryError:
                found = False
            if found:
                break
        if not found:
            raise UsageError(
                f"--mask {'.'.join(path)}: no such field in the schemas of what is read "
                f"(subjects: {names})"
            )


def _latest(decoder, subject: str):
    try:
        return decoder.reader_of(subject)
    except Exception:  # a --reader-version the subject lacks: not one to look in
        return None


def _has(decoder, reader, path: Path) -> bool:
    from kafkalog_cli.ops.schema_registry import SchemaType

    if reader.schema_type is SchemaType.AVRO:
        parsed = decoder.parsed(reader).parsed
        return _avro_has(
            parsed, path, parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}
        )
    if reader.schema_type is SchemaType.PROTOBUF:
        pb = decoder.parsed(reader)
        return any(_proto_has(m, path) for m in pb.file.message_types_by_name.values())
    schema = json.loads(reader.schema)
    return _json_has(schema, path, schema, 0)


def _avro_has(s, path: Path, named: dict, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if isinstance(s, str):
        if s in named:
            return _avro_has(named[s], path, named, depth + 1)
        return not path
    if isinstance(s, list):
        return any(_avro_has(b, path, named, depth + 1) for b in s)
    if not isinstance(s, dict):
        return False
    t = s.get("type")
    if t == "array":
        return _avro_has(s.get("items"), path, named, depth + 1)
    if not path:
        return True
    if t in ("record", "error"):
        for f in s.get("fields", ()):
            if f.get("name") == path[0]:
                return _avro_has(f.get("type"), path[1:], named, depth + 1)
        return False
    if isinstance(t, (dict, list)) or (isinstance(t, str) and t in named):
        return _avro_has(t, path, named, depth + 1)
    return False


def _proto_has(desc, path: Path, depth: int = 0) -> bool:
    """Whether message `desc` has the path (repeated messages are gone through as messages)."""
    if not path:
        return True
    f = desc.fields_by_name.get(path[0])
    if f is None or depth > 64:
        return False
    rest = path[1:]
    if not rest:
        return True
    if f.message_type is None or f.message_type.GetOptions().map_entry:
        return False
    return _proto_has(f.message_type, rest, depth + 1)


def _json_has(s, path: Path, root, depth: int) -> bool:
    if not isinstance(s, dict) or depth > 64:
        return not path
    ref = s.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict) and _json_has(target, path, root, depth + 1):
            return True
    for key in ("allOf", "anyOf", "oneOf"):
        branches = s.get(key)
        if isinstance(branches, list) and any(
            _json_has(b, path, root, depth + 1) for b in branches
        ):
            return True
    items = s.get("items")
    if isinstance(items, dict) and _json_has(items, path, root, depth + 1):
        return True
    if not path:
        return True
    props = s.get("properties")
    if isinstance(props, dict) and path[0] in props:
        return _json_has(props[path[0]], path[1:], root, depth + 1)
    return False
