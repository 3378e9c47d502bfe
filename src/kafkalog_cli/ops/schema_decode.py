"""Keys and values decoded with the schemas that wrote them, each resolved to one reader schema
per subject, by each format's own rules:

- Avro (fastavro): Avro's schema resolution from the writer's schema to the reader's;
- Protobuf (the protobuf runtime; .proto text compiled by grpcio-tools' protoc): the bytes
  parsed as the reader's message of the same full name, fields matched by number; a field
  number whose wire type changed is an incompatible mix;
- JSON Schema (jsonschema): the JSON parsed, then valid against the reader's schema.

The reader of a subject is its latest live version, or `reader_version`. Whatever cannot be
decoded (an unknown id, bytes not in the wire format, a payload its own schema does not read)
is a `Undecoded`: the caller keeps the bytes and reports the offset. A payload that its writer
reads but that does not resolve to the reader is a `SchemaMismatchError` naming both ids."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import ExitCode, KafkalogError, reason_of
from kafkalog_cli.formats.schema_wire import (
    SchemaRef,
    WireError,
    header_ref,
    read_header,
    read_prefix,
)
from kafkalog_cli.ops.schema_registry import (
    DEFAULT_CONTEXT,
    Registry,
    SchemaRegistryError,
    SchemaType,
    SchemaVersion,
)
from kafkalog_cli.storage.fsops import scratch_dir


class SchemaMismatchError(KafkalogError):
    """Writer and reader schemas of one subject that do not resolve (exit 2: name the reader
    with --reader-version, or read the partition's versions apart)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded key or value: the object, and the schemas that wrote and read it."""

    value: object
    writer: SchemaVersion
    reader: SchemaVersion
    ref: SchemaRef | None

    def schema_object(self) -> dict:
        """The `key_schema`/`value_schema` member of a JSON line."""
        out: dict[str, object] = {
            "id": self.writer.id,
            "subject": self.writer.subject,
            "version": self.writer.version,
            "type": self.writer.schema_type.value,
        }
        if self.ref is not None and self.ref.guid is not None:
            out["guid"] = str(self.ref.guid)
        if self.ref is not None and self.ref.message_indexes is not None:
            out["message_indexes"] = list(self.ref.message_indexes)
        if self.reader is not self.writer:
            out["reader_id"] = self.reader.id
            out["reader_version"] = self.reader.version
        return out


@dataclass(frozen=True, slots=True)
class Undecoded:
    """Why a key or value was kept as bytes."""

    reason: str
    schema_id: int | str | None = None

    def schema_object(self) -> dict:
        return {"id": self.schema_id, "error": self.reason}


# -- one parsed schema per format


class _Avro:
    def __init__(self, registry: Registry, v: SchemaVersion, plain: bool = False):
        """`plain`: the schema with its logical types (and its references') left out, so fastavro
        returns the values as written: ints, bytes and strings, not datetimes, Decimals, UUIDs."""
        import fastavro

        named: dict = {}
        _parse_avro_refs(registry, v, named, set(), plain)
        schema = json.loads(v.schema)
        try:
            self.parsed = fastavro.parse_schema(
                _without_logical_types(schema) if plain else schema, named_schemas=named
            )
        except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as e:
            raise SchemaRegistryError(
                f"{v.subject} version {v.version}: not an Avro schema fastavro parses: "
                f"{reason_of(e)}",
                path=v.source or None,
            ) from None
        empty = _array_of_nothing(self.parsed, named, set())
        if empty is not None:
            raise SchemaRegistryError(
                f"{v.subject} version {v.version}: an array of items that take no bytes "
                f"({empty}): a few bytes could claim any number of them, so it is not decoded",
                path=v.source or None,
            )
        self.recursive = _recursive(self.parsed, named, frozenset(), set())

    def decode(self, payload, reader: _Avro | None):
        if self.recursive and len(payload) > _SHALLOW:
            # a value of a recursive schema nests as deep as it has bytes, and fastavro's
            # compiled reader recurses on the C stack (a crash, not an error): its Python reader
            # stops at Python's recursion limit (RecursionError: kept as bytes)
            from fastavro._read_py import schemaless_reader
        else:
            from fastavro import schemaless_reader

        bio = io.BytesIO(payload)
        out = schemaless_reader(bio, self.parsed, None if reader is None else reader.parsed)
        if bio.tell() != len(payload):
            raise ValueError(f"{len(payload) - bio.tell()} bytes after the record")
        return out

    @staticmethod
    def resolution_error(e: Exception) -> bool:
        from fastavro.read import SchemaResolutionError

        return isinstance(e, SchemaResolutionError)


# a value this short nests at most this deep (a level takes a byte at least): within the C stack
# of any thread fastavro's compiled reader runs in
_SHALLOW = 256


def _recursive(s, named: dict, open_: frozenset, done: set) -> bool:
    """Whether a parsed Avro schema holds a named type within itself (a list, a tree)."""
    if isinstance(s, str):
        if s in open_:
            return True
        if s in named and s not in done:
            done.add(s)
            return _recursive(named[s], named, open_ | {s}, done)
        return False
    if isinstance(s, list):
        return any(_recursive(b, named, open_, done) for b in s)
    if not isinstance(s, dict):
        return False
    t = s.get("type")
    if t in ("record", "error"):
        name = s.get("name")
        inner = open_ | {name} if isinstance(name, str) else open_
        return any(_recursive(f.get("type"), named, inner, done) for f in s.get("fields", ()))
    if t == "array":
        return _recursive(s.get("items"), named, open_, done)
    if t == "map":
        return _recursive(s.get("values"), named, open_, done)
    return isinstance(t, (dict, list)) and _recursive(t, named, open_, done)


def _takes_no_bytes(s, named: dict, seen: frozenset = frozenset()) -> bool:
    """An Avro type whose values are encoded in zero bytes: null, a fixed of size 0, a record
    of such fields only (a union, a string or a count takes a byte at least)."""
    if isinstance(s, str):
        if s == "null":
            return True
        return s in named and s not in seen and _takes_no_bytes(named[s], named, seen | {s})
    if not isinstance(s, dict):
        return False
    t = s.get("type")
    if t in ("record", "error"):
        return all(_takes_no_bytes(f.get("type"), named, seen) for f in s.get("fields", ()))
    if t == "fixed":
        return s.get("size") == 0
    return (
        isinstance(t, (str, dict))
        and t not in ("array", "map", "enum")
        and (_takes_no_bytes(t, named, seen))
    )


def _array_of_nothing(s, named: dict, seen: set) -> str | None:
    """The first array in a parsed Avro schema whose items take no bytes (its items' type), or
    None: fastavro reads such an array's 64-bit block count item by item, with no byte to run
    out of."""
    if isinstance(s, str):
        if s in named and s not in seen:
            seen.add(s)
            return _array_of_nothing(named[s], named, seen)
        return None
    if isinstance(s, list):
        return next((x for b in s if (x := _array_of_nothing(b, named, seen)) is not None), None)
    if not isinstance(s, dict):
        return None
    t = s.get("type")
    if t == "array":
        items = s.get("items")
        if _takes_no_bytes(items, named):
            return json.dumps(items)[:60] if not isinstance(items, str) else items
        return _array_of_nothing(items, named, seen)
    if t == "map":
        return _array_of_nothing(s.get("values"), named, seen)
    if t in ("record", "error"):
        name = s.get("name")
        if isinstance(name, str):
            seen.add(name)
        fields = s.get("fields", ())
        return next(
            (x for f in fields if (x := _array_of_nothing(f.get("type"), named, seen)) is not None),
            None,
        )
    return _array_of_nothing(t, named, seen) if isinstance(t, (dict, list)) else None


def _without_logical_types(schema):
    """An Avro schema (parsed JSON) with every `logicalType` attribute taken out."""
    if isinstance(schema, list):
        return [_without_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _without_logical_types(x) for k, x in schema.items() if k != "logicalType"}
    return schema


def _parse_avro_refs(
    registry: Registry, v: SchemaVersion, named: dict, seen: set, plain: bool = False
) -> None:
    """The named types of `v`'s references, parsed into `named` before `v` is (depth first);
    `plain`: without their logical types."""
    import fastavro

    for ref in v.references:
        target = registry.resolve(ref)
        if target is None:
            raise SchemaRegistryError(
                f"{v.subject} version {v.version}: reference {ref.name} names "
                f"{ref.subject} version {ref.version}, which is not in the registry"
            )
        if (target.subject, target.version) in seen:
            continue
        seen.add((target.subject, target.version))
        _parse_avro_refs(registry, target, named, seen, plain)
        schema = json.loads(target.schema)
        fastavro.parse_schema(
            _without_logical_types(schema) if plain else schema, named_schemas=named
        )


# Protobuf's wire types by field type: a field number may change type only within one group
_WIRE_GROUPS = {
    **dict.fromkeys((5, 13, 3, 4, 8, 14), "varint"),  # int32 uint32 int64 uint64 bool enum
    **dict.fromkeys((17, 18), "zigzag"),  # sint32 sint64
    **dict.fromkeys((7, 15), "fixed32"),
    2: "fixed32",  # fixed32 sfixed32 float
    **dict.fromkeys((6, 16), "fixed64"),
    1: "fixed64",  # fixed64 sfixed64 double
    **dict.fromkeys((9, 12, 11), "length"),  # string bytes message
    10: "group",
}


class _Protobuf:
    def __init__(self, registry: Registry, v: SchemaVersion):
        from google.protobuf import descriptor_pb2, descriptor_pool

        fds = descriptor_pb2.FileDescriptorSet.FromString(_compile_proto(registry, v))
        self.pool = descriptor_pool.DescriptorPool()
        left = list(fds.file)
        while left:  # each file after those it imports
            added = {f.name for f in fds.file if f not in left}
            ready = [f for f in left if all(d in added for d in f.dependency)] or left[:1]
            for f in ready:
                self.pool.Add(f)
                left.remove(f)
        self.file = self.pool.FindFileByName(_MAIN_PROTO)
        self.classes: dict = {}

    def message(self, indexes):
        """The message the indexes name in the file (SchemaId's message_indexes)."""
        desc = None
        ordered = list(self.file.message_types_by_name.values())  # in the file's order
        for i in indexes:
            if i < 0 or i >= len(ordered):
                raise ValueError(f"message indexes {list(indexes)} name no message of the schema")
            desc = ordered[i]
            ordered = list(desc.nested_types)
        if desc is None:
            raise ValueError("empty message indexes")
        return desc

    def message_class(self, desc):
        cls = self.classes.get(desc.full_name)
        if cls is None:
            from google.protobuf import message_factory

            cls = self.classes[desc.full_name] = message_factory.GetMessageClass(desc)
        return cls

    def decode(self, payload, indexes, reader: _Protobuf | None, as_message: bool = False):
        """The payload as protobuf's JSON mapping (field names as in the .proto), or as the
        message itself."""
        from google.protobuf import json_format

        desc = self.message(indexes or (0,))
        if reader is not None:
            try:
                rdesc = reader.pool.FindMessageTypeByName(desc.full_name)
            except KeyError:
                raise _Incompatible(f"the reader has no message {desc.full_name}") from None
            _check_wire_types(desc, rdesc)
            desc = rdesc
            owner = reader
        else:
            owner = self
        msg = owner.message_class(desc).FromString(bytes(payload))
        return (
            msg if as_message else json_format.MessageToDict(msg, preserving_proto_field_name=True)
        )


class _Incompatible(Exception):
    """A writer that does not resolve to the reader, by the format's rules."""


def is_repeated(f) -> bool:
    """A protobuf field is repeated (protobuf 6+ names it is_repeated; older ones, its label)."""
    rep = getattr(f, "is_repeated", None)
    return rep if rep is not None else f.label == 3


def _check_wire_types(w, r, seen=None) -> None:
    """Protobuf's rule: a field number read by both schemas keeps its wire type."""
    seen = set() if seen is None else seen
    if (w.full_name, r.full_name) in seen:
        return
    seen.add((w.full_name, r.full_name))
    for f in w.fields:
        rf = r.fields_by_number.get(f.number)
        if rf is None:
            continue
        if _WIRE_GROUPS.get(f.type) != _WIRE_GROUPS.get(rf.type) or (
            f.type in (9, 12, 11) and is_repeated(f) != is_repeated(rf)
        ):
            raise _Incompatible(f"{w.full_name} field {f.number} ({f.name}) changed its type")
        if f.type == 11 and rf.type == 11:
            _check_wire_types(f.message_type, rf.message_type, seen)


_MAIN_PROTO = "__kafkalog_main__.proto"


def _serialized(text: str):
    """A FileDescriptorProto given base64-encoded, as confluent-kafka's serializer sends a
    schema (the registry's `format=serialized`); None for .proto text."""
    import base64
    import binascii

    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    if any(c.isspace() for c in text.strip()) or not text.strip():
        return None
    try:
        fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fd if fd.name or fd.message_type else None


def _compile_proto(registry: Registry, v: SchemaVersion) -> bytes:
    """`v`'s schema and its references (each under the import name it is referenced by) as a
    FileDescriptorSet: .proto text compiled by protoc (grpcio-tools), serialized descriptors
    taken as they are."""
    try:
        import grpc_tools
    except ImportError:  # pragma: no cover - the extra names it
        raise SchemaRegistryError(
            "decoding Protobuf needs grpcio-tools (pip install kafkalog-cli[schemas])"
        ) from None
    from google.protobuf import descriptor_pb2

    given = descriptor_pb2.FileDescriptorSet()
    texts: dict[str, str] = {}
    stack, seen = [(v, _MAIN_PROTO)], set()
    while stack:
        cur, name = stack.pop()
        fd = _serialized(cur.schema)
        if fd is not None:
            fd.name = name
            given.file.append(fd)
        else:
            texts[name] = cur.schema
        for ref in cur.references:
            target = registry.resolve(ref)
            if target is None:
                raise SchemaRegistryError(
                    f"{cur.subject} version {cur.version}: reference {ref.name} names "
                    f"{ref.subject} version {ref.version}, which is not in the registry"
                )
            if ref.name not in seen:
                seen.add(ref.name)
                stack.append((target, ref.name))
    if _MAIN_PROTO not in texts:
        return given.SerializeToString()
    files = {name: text.encode("utf-8") for name, text in texts.items()}
    if given.file:
        files["given.pb"] = given.SerializeToString()
    with scratch_dir(files, prefix="kafkalog-proto-") as root:
        tmp = str(root)
        out = os.path.join(tmp, "set.pb")
        args = [
            f"-I{tmp}",
            f"-I{os.path.join(os.path.dirname(grpc_tools.__file__), '_proto')}",
            f"--descriptor_set_out={out}",
            "--include_imports",
        ]
        if given.file:
            args.append(f"--descriptor_set_in={os.path.join(tmp, 'given.pb')}")
        # protoc prints its errors on the process's stderr: run it in a child to catch them
        code = "import sys; from grpc_tools import protoc; sys.exit(protoc.main(sys.argv[1:]))"
        done = subprocess.run(
            [sys.executable, "-c", code, "protoc", *args, _MAIN_PROTO],
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        if done.returncode != 0:
            why = _protoc_errors(done.stderr.replace(tmp + os.sep, ""))
            raise SchemaRegistryError(
                f"{v.subject} version {v.version}: protoc: {why}", path=v.source or None
            )
        with open(out, "rb") as f:
            return f.read()


# the lines protoc's logging library (absl) adds to its errors: its banner, and its own
# warnings (`W0000 00:00:1700000000.000000 123 parser.cc:659] No edition...`)
_ABSL_NOISE = re.compile(r"^(WARNING: All log messages before absl::|[IW]\d{4} \d\d:\d\d:)")


def _protoc_errors(stderr: str) -> str:
    """protoc's errors (`file.proto:1:9: Expected message name.`), one line."""
    lines = [x for x in stderr.splitlines() if x.strip() and not _ABSL_NOISE.match(x)]
    text = " ".join(" ".join(lines).split()) or "protoc failed"
    # the schema's own text is compiled under a name of ours: its place is a line and column
    return re.sub(rf"{re.escape(_MAIN_PROTO)}:(\d+):(\d+):", r"line \1 column \2:", text)


class _JsonSchema:
    def __init__(self, registry: Registry, v: SchemaVersion):
        import jsonschema
        import referencing
        import referencing.jsonschema

        try:
            schema = json.loads(v.schema)
        except ValueError as e:
            raise SchemaRegistryError(
                f"{v.subject} version {v.version}: its schema is {reason_of(e)}",
                path=v.source or None,
            ) from None
        resources = []
        stack, seen = [v], set()
        while stack:
            cur = stack.pop()
            for ref in cur.references:
                target = registry.resolve(ref)
                if target is None:
                    raise SchemaRegistryError(
                        f"{cur.subject} version {cur.version}: reference {ref.name} names "
                        f"{ref.subject} version {ref.version}, which is not in the registry"
                    )
                if ref.name not in seen:
                    seen.add(ref.name)
                    resources.append(
                        (
                            ref.name,
                            referencing.Resource.from_contents(
                                json.loads(target.schema),
                                default_specification=referencing.jsonschema.DRAFT7,
                            ),
                        )
                    )
                    stack.append(target)
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
        self.validator = cls(schema, registry=referencing.Registry().with_resources(resources))

    def decode(self, payload, reader: _JsonSchema | None):
        value = json.loads(bytes(payload))
        err = _first_error(self.validator, value)
        if err is not None:
            raise ValueError(f"not valid for its schema: {_broken_rule(err)}")
        if reader is not None:
            err = _first_error(reader.validator, value)
            if err is not None:
                raise _Incompatible(f"not valid for the reader's schema: {_broken_rule(err)}")
        return value


def _broken_rule(err) -> str:
    """Where a value breaks its JSON Schema and which rule, in the schema's words only: never
    the value's own content (jsonschema's message quotes it, and under --mask it may be what is
    masked)."""
    rule = json.dumps(err.validator_value, ensure_ascii=False)
    rule = rule if len(rule) <= 60 else rule[:57] + "..."
    return f"{err.json_path} breaks the rule {err.validator!r}: {rule}"


# A schema's `pattern` is input, and Python's regular expressions backtrack: `^(a+)+$` takes
# seconds on 26 characters and doubles with each one more. One value's validation is bounded.
VALIDATION_SECONDS = 2.0


class _ValidationTooSlow(Exception):
    pass


def _first_error(validator, value):
    """The first error of `value` against `validator`'s schema (None: valid); a ValueError when
    the validation runs past VALIDATION_SECONDS (the value is then kept as bytes, not guessed)."""
    with _bounded(VALIDATION_SECONDS):
        try:
            return next(iter(validator.iter_errors(value)), None)
        except _ValidationTooSlow:
            raise ValueError(
                f"its schema's validation ran past {VALIDATION_SECONDS:g} s (a pattern that "
                "backtracks): not checked"
            ) from None


@contextlib.contextmanager
def _bounded(seconds: float):
    """Raise _ValidationTooSlow in the block once `seconds` have passed (a timer signal, which
    Python's regular expression engine checks while it backtracks). Only the main thread gets
    signals: elsewhere the block runs unbounded."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expire(signum, frame):
        raise _ValidationTooSlow()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# the writers of the schema ids (and GUIDs) most recently met that a decoder keeps
IDS_KEPT = 4096

_PARSERS = {SchemaType.AVRO: _Avro, SchemaType.PROTOBUF: _Protobuf, SchemaType.JSON: _JsonSchema}


def _ident(ref: SchemaRef) -> int | str:
    """The id (or GUID) as a JSON line names it."""
    return ref.schema_id if ref.schema_id is not None else str(ref.guid)


class SchemaDecoder:
    """Decodes the keys and values of records with a Registry; one per run (it caches the parsed
    schemas and the reader of each subject)."""

    def __init__(
        self,
        registry: Registry,
        reader_version: int | None = None,
        protobuf_messages: bool = False,
        mask=None,
    ):
        """`protobuf_messages`: Protobuf values as messages (for Arrow), not their JSON mapping.
        `mask` (an ops.schema_mask.FieldMask): every value `decode` returns is masked by it."""
        self.registry = registry
        self.mask = mask
        if mask is not None:  # the one call every decoded value goes through
            self.decode = self._masked_decode  # type: ignore[method-assign]
        self.reader_version = reader_version
        self.protobuf_messages = protobuf_messages
        self._parsed: dict[int, object] = {}
        self._readers: dict[str, SchemaVersion] = {}
        # (id, GUID, topic subject) -> its writer: ids come from the bytes, so the IDS_KEPT most
        # recently met are kept (garbage would name a new one each record)
        self._ids: OrderedDict[tuple, SchemaVersion | None] = OrderedDict()
        self._topic_subjects: dict[tuple[str, bool], str | None] = {}
        # (topic, is_key, the 4 id bytes) -> the decoding of an Avro id met before, prefix-framed
        self._fast: dict[tuple, Callable[[Any], Decoded | None]] = {}
        self._fast_first: dict[tuple, Decoded] = {}  # the same keys -> the first such decoding
        self._plain: dict[int, object] = {}

    def parsed(self, v: SchemaVersion):
        """`v` parsed (compiled), once; a schema that does not parse fails each time it is asked."""
        p = self._parsed.get(id(v))
        if p is None:
            try:
                p = _PARSERS[v.schema_type](self.registry, v)
            except SchemaRegistryError as e:
                p = e
            except Exception as e:
                # schema text is input: whatever fastavro, protobuf or jsonschema raise on it (or
                # on a reference's) means it does not parse, never an internal error
                p = SchemaRegistryError(
                    f"{v.subject} version {v.version}: its {v.schema_type.value} schema, or a "
                    f"reference's, does not parse: {reason_of(e)}",
                    path=v.source or None,
                )
            self._parsed[id(v)] = p
        if isinstance(p, SchemaRegistryError):
            raise p
        return p

    def plain_avro(self, v: SchemaVersion):
        """The fastavro schema of the Avro schema `v` without its logical types (the values as
        written; see `_Avro`), parsed once; None when it does not parse so."""
        p = self._plain.get(id(v))
        if p is None:
            try:
                p = _Avro(self.registry, v, plain=True).parsed
            except Exception:  # whatever fastavro raises: the caller reads such values as it did
                p = False
            self._plain[id(v)] = p
        return p or None

    def prefix_framed_avro(self, topic: str, is_key: bool, id_bytes: bytes) -> Decoded | None:
        """The first decoding of the prefix-framed Avro schema id `id_bytes` (the 4 bytes after
        the zero byte) met in the topic's keys or values, once `decode` reads its next payloads
        with fastavro straight from the bytes (no header framing them); None until then."""
        return self._fast_first.get((topic, is_key, id_bytes))

    def reader_of(self, subject: str) -> SchemaVersion | None:
        """The reader schema of a subject: its latest live version, or the one chosen."""
        r = self._readers.get(subject)
        if r is None:
            if self.reader_version is None:
                r = self.registry.latest(subject)
            else:
                r = self.registry.version(subject, self.reader_version)
                if r is None:
                    raise SchemaMismatchError(
                        f"--reader-version {self.reader_version}: subject {subject} "
                        "has no such version"
                    )
            if r is not None:
                self._readers[subject] = r
        return r

    def topic_subject(self, topic: str, is_key: bool) -> str | None:
        """TopicNameStrategy's subject for the topic, when the registry has it."""
        k = (topic, is_key)
        if k not in self._topic_subjects:
            name = f"{topic}-{'key' if is_key else 'value'}"
            self._topic_subjects[k] = name if name in self.registry.versions else None
        return self._topic_subjects[k]

    def writer(self, ref: SchemaRef, topic_subject: str | None) -> SchemaVersion | None:
        k = (ref.schema_id, ref.guid, topic_subject)
        if k in self._ids:
            self._ids.move_to_end(k)
            return self._ids[k]
        if ref.guid is not None:
            found = self.registry.by_guid(ref.guid)
        elif ref.schema_id is not None:
            found = self.registry.by_id(ref.schema_id, DEFAULT_CONTEXT)
        else:
            found = []
        # the topic's own subject first, when the id is registered under several
        found.sort(key=lambda v: (v.subject != topic_subject, v.deleted))
        self._ids[k] = found[0] if found else None
        if len(self._ids) > IDS_KEPT:
            self._ids.popitem(last=False)
        return self._ids[k]

    def decode(self, topic: str, is_key: bool, data, headers=()) -> Decoded | Undecoded | None:
        """`data` (a key or value) decoded; None when nothing says it was written with a schema
        (no header, no file bound, no subject for the topic, and no known id framed)."""
        if (
            data is not None
            and len(data) >= 5
            and data[0] == 0
            and (not headers or header_ref(headers, is_key) is None)
        ):
            fast = self._fast.get((topic, is_key, data[1:5]))
            if fast is not None:
                got = fast(data)
                if got is not None:
                    return got
        return self._decode_slow(topic, is_key, data, headers)

    def _masked_decode(self, topic: str, is_key: bool, data, headers=()):
        got = SchemaDecoder.decode(self, topic, is_key, data, headers)
        return self.mask.decoded(got) if isinstance(got, Decoded) else got

    def _decode_slow(self, topic: str, is_key: bool, data, headers) -> Decoded | Undecoded | None:
        bound = self.registry.bound.get((topic, is_key))
        hdr = header_ref(headers, is_key) if headers else None
        subject = self.topic_subject(topic, is_key)
        if data is None:
            return None
        if bound is not None:
            return self._decode_bound(bound, data)
        try:
            protobuf = self._protobuf_hint(subject)
            if hdr is not None:
                ref = read_header(hdr, protobuf)
            else:
                ref = read_prefix(data, protobuf)
        except WireError as e:
            if hdr is None and subject is None:
                return None
            return Undecoded(f"not in the schema registry's wire format: {e} (byte {e.position})")
        writer = self.writer(ref, subject)
        if writer is None:
            gone = self.registry.gone(ref.schema_id) if ref.schema_id is not None else None
            if gone is not None:
                return Undecoded(
                    f"schema id {ref.label} ({gone.subject} version {gone.version}) was deleted for good "
                    "(a hard delete)",
                    _ident(ref),
                )
            if (
                hdr is None
                and subject is None
                and not self.registry.ever_had(f"{topic}-{'key' if is_key else 'value'}")
            ):
                return None
            return Undecoded(
                f"schema {'GUID' if ref.guid else 'id'} {ref.label} is not in the registry",
                _ident(ref),
            )
        if writer.schema_type is SchemaType.PROTOBUF and ref.message_indexes is None:
            # the id names a Protobuf schema only now: its message indexes must follow
            try:
                ref = read_header(hdr, True) if hdr is not None else read_prefix(data, True)
            except WireError as e:
                return Undecoded(
                    f"not in the schema registry's wire format: {e} (byte {e.position})",
                    _ident(ref),
                )
        reader = self.reader_of(writer.subject) or writer
        payload = memoryview(data)[ref.start :] if hdr is None else data
        got = self._decode(writer, reader, ref, payload)
        if (
            isinstance(got, Decoded)
            and hdr is None
            and ref.guid is None  # framed by an id (magic 0): its 4 bytes name the writer
            and writer.schema_type is SchemaType.AVRO
            and not self.parsed(writer).recursive  # the fast path knows no depth
        ):
            key = (topic, is_key, bytes(data[1:5]))
            self._fast[key] = self._avro_fast(got)
            self._fast_first[key] = got
        return got

    def _avro_fast(self, first: Decoded):
        """The decoding of the next prefix-framed Avro payloads of that id: fastavro straight on
        the bytes after the prefix; None (the general path) for whatever fails."""
        from fastavro import schemaless_reader

        writer, reader, ref = first.writer, first.reader, first.ref
        w = self.parsed(writer).parsed
        r = None if reader is writer else self.parsed(reader).parsed

        def fast(data, BytesIO=io.BytesIO):
            bio = BytesIO(data)
            bio.seek(5)
            try:
                value = schemaless_reader(bio, w, r)
            except Exception:
                return None
            if bio.tell() != len(data):
                return None
            return Decoded(value, writer, reader, ref)

        return fast

    def _protobuf_hint(self, subject: str | None) -> bool:
        latest = self.registry.latest(subject) if subject is not None else None
        return latest is not None and latest.schema_type is SchemaType.PROTOBUF

    def _decode_bound(self, bound: SchemaVersion, data):
        try:
            ref = read_prefix(data, bound.schema_type is SchemaType.PROTOBUF)
        except WireError as e:
            return Undecoded(f"not in the schema registry's wire format: {e} (byte {e.position})")
        return self._decode(bound, bound, ref, memoryview(data)[ref.start :])

    def _decode(self, writer: SchemaVersion, reader: SchemaVersion, ref: SchemaRef, payload):
        try:
            w = self.parsed(writer)
            r = (
                None
                if reader is writer
                or reader.schema == writer.schema
                and reader.references == writer.references
                else self.parsed(reader)
            )
        except SchemaRegistryError as e:
            return Undecoded(e.message, _ident(ref))
        try:
            if writer.schema_type is SchemaType.PROTOBUF:
                value = w.decode(payload, ref.message_indexes, r, self.protobuf_messages)
            else:
                value = w.decode(payload, r)
        except _Incompatible as e:
            raise self._mismatch(writer, reader, str(e)) from None
        except Exception as e:
            if (
                r is not None
                and writer.schema_type is SchemaType.AVRO
                and _Avro.resolution_error(e)
            ):
                raise self._mismatch(writer, reader, self._resolution_reason(e)) from None
            return Undecoded(
                f"{writer.schema_type.value} payload its schema (id {ref.label}) does not read: "
                f"{reason_of(e)}",
                _ident(ref),
            )
        return Decoded(value, writer, reader if r is not None else writer, ref)

    def _resolution_reason(self, e: Exception) -> str:
        # fastavro's text can quote the value it failed on (an enum symbol): under --mask that
        # value may be what is masked
        if self.mask is None:
            return str(e)
        return "fastavro's reason is withheld under --mask, as it can quote a value (run without --mask to see it)"

    @staticmethod
    def _mismatch(writer: SchemaVersion, reader: SchemaVersion, why: str) -> SchemaMismatchError:
        return SchemaMismatchError(
            f"schema id {writer.id} ({writer.subject} version {writer.version}) does not resolve to the reader "
            f"schema id {reader.id} ({reader.subject} version {reader.version}): {why}; choose another "
            "--reader-version"
        )


# The decoders of the runs' schema specs (commands.schema_options.SchemaSpec) a process decodes
# with: export's pool workers, and Python workers Spark reuses task after task, job after job,
# each task with its own copy of the spec. The DECODERS_KEPT most recently used are kept (a
# decoder holds every schema it parsed); an entry holds its spec, so an id a new object reuses
# finds nothing.
DECODERS_KEPT = 8
_RUN_DECODERS: OrderedDict[tuple[int, bool], tuple[object, SchemaDecoder]] = OrderedDict()


def run_decoder(spec, protobuf_messages: bool = False) -> SchemaDecoder:
    """The decoder of a run's schemas (`spec`: registry, reader_version, mask), one a process
    while it is among the DECODERS_KEPT most recently used."""
    key = (id(spec), protobuf_messages)
    hit = _RUN_DECODERS.get(key)
    if hit is not None and hit[0] is spec:
        _RUN_DECODERS.move_to_end(key)
        return hit[1]
    dec = SchemaDecoder(
        spec.registry,
        spec.reader_version,
        protobuf_messages=protobuf_messages,
        mask=getattr(spec, "mask", None),
    )
    _RUN_DECODERS[key] = (spec, dec)
    _RUN_DECODERS.move_to_end(key)
    while len(_RUN_DECODERS) > DECODERS_KEPT:
        _RUN_DECODERS.popitem(last=False)
    return dec
