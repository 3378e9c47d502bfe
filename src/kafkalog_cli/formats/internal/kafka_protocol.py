"""Kafka's generated-message wire format, read the way Kafka 3.3.1's generated code reads it.

`Readable` mirrors org.apache.kafka.common.protocol.ByteBufferAccessor: the same reads, the same
Java int arithmetic (a varint can wrap to a negative int), and a failure wherever Java would
throw. `read_struct` interprets a `Struct` spec (our transcription of a message schema) exactly as
MessageDataGenerator's code does, including its quirk that version checks are only emitted where
a field's versions differ from the message's valid versions: a record newer than the schema is
read with the newest layout we know, which is why kafka-dump-log 3.3.1 decodes some 3.7+ records
and fails on others. `to_json` writes values as Jackson writes the JsonConverter nodes.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.varint import write_unsigned_varint

_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

_VARINT_TOO_LONG = (
    "java.lang.IllegalArgumentException: Varint is too long, the most significant bit in the 5th "
    "byte is set, converted value: {:x}"
)
_VARLONG_TOO_LONG = "java.lang.IllegalArgumentException: Varlong is too long"


class BufferUnderflowError(InvalidRecordError):
    """java.nio.BufferUnderflowException: a fixed-size read past the end. Kept apart because some
    Kafka callers (ConsumerProtocol) catch only this one."""


def to_int32(value: int) -> int:
    """Java int overflow."""
    return ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def to_int16(value: int) -> int:
    """Java (short) cast."""
    return ((value + 0x8000) & 0xFFFF) - 0x8000


def _fixed_size_reader(fmt: struct.Struct, java: str) -> Callable[[Readable], Any]:
    """The Readable method `java` (org.apache.kafka.common.protocol.Readable): one big-endian `fmt`."""
    size, unpack = fmt.size, fmt.unpack

    def read(self: Readable) -> Any:
        return unpack(self._take(size))[0]

    read.__doc__ = f"Readable.{java}: {size} bytes, big-endian."
    return read


class Readable:
    """A read cursor over bytes. `position` is relative to the start of `data`."""

    __slots__ = ("data", "position", "limit")

    def __init__(
        self, data: bytes | bytearray | memoryview, position: int = 0, limit: int | None = None
    ):
        self.data = bytes(data) if not isinstance(data, bytes) else data
        self.position = position
        self.limit = len(self.data) if limit is None else limit

    def remaining(self) -> int:
        return self.limit - self.position

    def _take(self, n: int) -> bytes:
        if n > self.limit - self.position:
            raise self._underflow()
        start = self.position
        self.position = start + n
        return self.data[start : self.position]

    # fixed-size reads
    def read_int8(self) -> int:
        b = self._take(1)[0]
        return b - 256 if b > 127 else b

    def read_bool(self) -> bool:
        return self.read_int8() != 0

    read_int16 = _fixed_size_reader(_I16, "readShort")
    read_uint16 = _fixed_size_reader(_U16, "readUnsignedShort")
    read_int32 = _fixed_size_reader(_I32, "readInt")
    read_uint32 = _fixed_size_reader(_U32, "readUnsignedInt")
    read_int64 = _fixed_size_reader(_I64, "readLong")
    read_float64 = _fixed_size_reader(_F64, "readDouble")

    def read_uuid(self) -> bytes:
        """16 raw bytes (most significant long first); see uuid_to_string."""
        return self._take(16)

    # varints (ByteUtils)
    def _read_varint_bits(self, max_shift: int, too_long: str) -> int:
        """The loop readUnsignedVarint and readVarlong share: the bits of a varint of at most
        `max_shift // 7 + 1` bytes, read a byte at a time as ByteBuffer.get() does. `too_long` is
        the IllegalArgumentException's text; a `{:x}` in it is the value read so far as an int."""
        data, pos, limit = self.data, self.position, self.limit
        value = 0
        shift = 0
        while pos < limit:
            b = data[pos]
            pos += 1
            if not b & 0x80:
                self.position = pos
                return value | (b << shift)
            value |= (b & 0x7F) << shift
            shift += 7
            if shift > max_shift:
                self.position = pos
                raise InvalidRecordError(too_long.format(value & 0xFFFFFFFF), position=pos)
        self.position = pos
        raise self._underflow()

    def _underflow(self) -> BufferUnderflowError:
        return BufferUnderflowError("java.nio.BufferUnderflowException", position=self.position)

    def read_unsigned_varint(self) -> int:
        """ByteUtils.readUnsignedVarint: at most 5 bytes, result wraps like a Java int."""
        return to_int32(self._read_varint_bits(28, _VARINT_TOO_LONG))

    def read_varint(self) -> int:
        raw = self.read_unsigned_varint() & 0xFFFFFFFF
        return to_int32((raw >> 1) ^ -(raw & 1))

    def read_varlong(self) -> int:
        raw = self._read_varint_bits(63, _VARLONG_TOO_LONG) & 0xFFFFFFFFFFFFFFFF
        return (raw >> 1) ^ -(raw & 1)

    # variable-length payloads
    def read_array(self, size: int) -> bytes:
        """ByteBufferAccessor.readArray."""
        remaining = self.remaining()
        if size > remaining:
            raise InvalidRecordError(
                f"java.lang.RuntimeException: Error reading byte array of {size} byte(s): "
                f"only {remaining} byte(s) available",
                position=self.position,
            )
        if size < 0:
            raise InvalidRecordError(
                f"java.lang.NegativeArraySizeException: {size}", position=self.position
            )
        return self._take(size)

    def read_string(self, length: int) -> str:
        # new String(bytes, UTF_8): malformed input becomes U+FFFD
        return self.read_array(length).decode("utf-8", "replace")

    def read_byte_buffer(self, length: int) -> bytes:
        """ByteBufferAccessor.readByteBuffer (zero-copy fields): slice().limit(length)."""
        if length > self.remaining() or length < 0:
            raise InvalidRecordError(
                f"java.lang.IllegalArgumentException: newLimit > capacity: "
                f"({length} > {self.remaining()})",
                position=self.position,
            )
        return self._take(length)


def uuid_to_string(raw: bytes) -> str:
    """org.apache.kafka.common.Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


# ---------------------------------------------------------------------------------------------
# Schemas as data: our transcription of Kafka's message JSON (name, type, versions, nullable,
# tagged). Versions are (low, high) with high None for "N+"; None means "none".

Versions = tuple[int, int | None] | None
ALL: Versions = (0, None)
NONE: Versions = None


def versions(spec: str) -> Versions:
    """Parse Kafka's version notation: "none", "3", "0+", "1-3"."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), None)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def _intersect(a: Versions, b: Versions) -> Versions:
    if a is None or b is None:
        return None
    lo = max(a[0], b[0])
    his = [h for h in (a[1], b[1]) if h is not None]
    hi = min(his) if his else None
    if hi is not None and hi < lo:
        return None
    return (lo, hi)


def _contains(outer: Versions, inner: Versions) -> bool:
    if inner is None:
        return True
    if outer is None:
        return False
    return outer[0] <= inner[0] and (
        outer[1] is None or (inner[1] is not None and inner[1] <= outer[1])
    )


def member(field_versions: Versions, possible: Versions, version: int) -> bool:
    """VersionConditional at run time: the generated code only tests a bound where the field's
    range is narrower than the versions the message can have; elsewhere it is unconditional."""
    inter = _intersect(field_versions, possible)
    if inter is None:
        return False
    if _contains(field_versions, possible):
        return True
    assert field_versions is not None and possible is not None
    if field_versions[0] > possible[0] and version < field_versions[0]:
        return False
    if (
        field_versions[1] is not None
        and (possible[1] is None or field_versions[1] < possible[1])
        and version > field_versions[1]
    ):
        return False
    return True


@dataclass(frozen=True)
class Field:
    """One field of a message schema. `type` is a primitive name ("int8", "int16", "uint16",
    "int32", "int64", "float64", "bool", "uuid", "string", "bytes"), "[]<primitive>", or
    "[]struct" / "struct" with `fields`. `name` is Kafka's camelCase JSON name."""

    name: str
    type: str
    versions: Versions = ALL
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: Any = None  # None: the type's own default (0, "", [], false, zero uuid)
    fields: tuple[Field, ...] = ()
    zero_copy: bool = False
    ignorable: bool = False

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:]


@dataclass(frozen=True)
class Struct:
    """A message (or a nested struct): its valid and flexible versions and its fields."""

    name: str
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Versioned:
    """A decoded record key or value: the int16 version it was written with comes first."""

    version: int


NULL = object()  # marker for a Field.default of "null"
ZERO_UUID = bytes(16)


def default_value(f: Field) -> Any:
    if f.default is NULL:
        return None
    if f.default is not None:
        return f.default
    t = f.type
    if f.is_array:
        return []
    if t == "struct":
        return {}  # a struct of its fields' defaults (read_struct and write_struct fill them in)
    return {"bool": False, "string": "", "bytes": b"", "uuid": ZERO_UUID, "float64": 0.0}.get(t, 0)


_PRIMITIVE_READERS = {
    "int8": Readable.read_int8,
    "bool": Readable.read_bool,
    "int16": Readable.read_int16,
    "uint16": Readable.read_uint16,
    "int32": Readable.read_int32,
    "uint32": Readable.read_uint32,
    "int64": Readable.read_int64,
    "float64": Readable.read_float64,
    "uuid": Readable.read_uuid,
}


def read_struct(
    r: Readable, spec: Struct, version: int, parent: Versions | None = None
) -> dict[str, Any]:
    """Read one struct the way its generated `read(Readable, short)` does. Returns field values
    keyed by camelCase name; uuids stay 16 raw bytes. Raises InvalidRecordError where Java throws."""
    possible = spec.valid if parent is None else _intersect(parent, spec.valid)
    flexible_possible = _intersect(spec.flexible, possible)
    flexible = member(spec.flexible, possible, version)
    out: dict[str, Any] = {}
    for f in spec.fields:
        mandatory = NONE if f.tagged is not None else f.versions
        if member(mandatory, possible, version):
            out[f.name] = _read_value(r, f, version, possible, flexible)
        else:
            out[f.name] = default_value(f)
    if flexible:
        by_tag = {f.tag: f for f in spec.fields if _intersect(f.versions, f.tagged) is not None}
        count = r.read_unsigned_varint()
        for _ in range(count):
            tag = r.read_unsigned_varint()
            size = r.read_unsigned_varint()
            tagged_field = by_tag.get(tag)
            if tagged_field is None:
                r.read_array(size)  # unknown tagged field: kept raw by Kafka, never printed
                continue
            if member(
                _intersect(tagged_field.versions, tagged_field.tagged), flexible_possible, version
            ):
                out[tagged_field.name] = _read_value(
                    r, tagged_field, version, possible, True, tagged=True
                )
            else:
                raise InvalidRecordError(
                    f"java.lang.RuntimeException: Tag {tag} is not valid for version {version}",
                    position=r.position,
                )
    return out


def _read_length(
    r: Readable,
    f: Field,
    flexible: bool,
    version: int,
    possible: Versions,
    name: str,
    nullable: Versions,
    is_string: bool,
    is_array: bool,
) -> int | None:
    if flexible:
        length = to_int32(r.read_unsigned_varint() - 1)
    elif is_string:
        length = r.read_int16()
    else:
        length = r.read_int32()
    if length < 0:
        if member(nullable, possible, version):
            return None
        raise InvalidRecordError(
            f"java.lang.RuntimeException: non-nullable field {name} was serialized as null",
            position=r.position,
        )
    if is_string and length > 0x7FFF:
        raise InvalidRecordError(
            f"java.lang.RuntimeException: string field {name} had invalid length {length}",
            position=r.position,
        )
    return length


def _read_value(
    r: Readable, f: Field, version: int, possible: Versions, flexible: bool, tagged: bool = False
) -> Any:
    t = f.type
    if t in _PRIMITIVE_READERS:
        return _PRIMITIVE_READERS[t](r)
    if t == "struct":
        # a nullable struct starts with a marker: an int8 (negative: null), or when tagged an
        # unsigned varint (0: null)
        if member(f.nullable, possible, version) and (
            r.read_unsigned_varint() <= 0 if tagged else r.read_int8() < 0
        ):
            return None
        return read_struct(
            r,
            Struct(f.name, f.versions, NONE if not flexible else ALL, f.fields),
            version,
            possible,
        )
    if t == "string":
        n = _read_length(r, f, flexible, version, possible, f.name, f.nullable, True, False)
        return None if n is None else r.read_string(n)
    if t == "bytes":
        n = _read_length(r, f, flexible, version, possible, f.name, f.nullable, False, False)
        if n is None:
            return None
        return r.read_byte_buffer(n) if f.zero_copy else r.read_array(n)
    if f.is_array:
        n = _read_length(r, f, flexible, version, possible, f.name, f.nullable, False, True)
        if n is None:
            return None
        if n > r.remaining():
            raise InvalidRecordError(
                f"java.lang.RuntimeException: Tried to allocate a collection of size {n}, "
                f"but there are only {r.remaining()} bytes remaining.",
                position=r.position,
            )
        el = f.element
        items: list[Any] = []
        if el == "struct":
            nested = Struct(f.name, f.versions, NONE if not flexible else ALL, f.fields)
            for _ in range(n):
                items.append(read_struct(r, nested, version, possible))
        elif el in ("string", "bytes"):
            for _ in range(n):
                m = _read_length(
                    r,
                    f,
                    flexible,
                    version,
                    possible,
                    f"{f.name} element",
                    NONE,
                    el == "string",
                    False,
                )
                assert m is not None
                items.append(r.read_string(m) if el == "string" else r.read_array(m))
        else:
            reader = _PRIMITIVE_READERS[el]
            for _ in range(n):
                items.append(reader(r))
        return items
    raise ValueError(f"unsupported field type {t}")


# ---------------------------------------------------------------------------------------------
# Writing: the generated `write(Writable, short)`, for building records (tests, fixtures)

_PRIMITIVE_WRITERS: dict[str, Callable[[Any], bytes]] = {
    "int8": lambda v: struct.pack(">b", v),
    "bool": lambda v: b"\x01" if v else b"\x00",
    "int16": _I16.pack,
    "uint16": _U16.pack,
    "int32": _I32.pack,
    "uint32": _U32.pack,
    "int64": _I64.pack,
    "float64": _F64.pack,
    "uuid": bytes,
}


def write_struct(
    spec: Struct, values: dict[str, Any], version: int, parent: Versions | None = None
) -> bytes:
    """The bytes `read_struct(spec, version)` reads back as `values` (fields missing from
    `values` take their defaults): mandatory fields in schema order, then in flexible versions
    the tagged fields that differ from their default, by tag."""
    possible = spec.valid if parent is None else _intersect(parent, spec.valid)
    flexible = member(spec.flexible, possible, version)
    out = bytearray()
    tagged: list[tuple[int, bytes]] = []
    for f in spec.fields:
        value = values.get(f.name, default_value(f))
        if f.tagged is not None:
            if (
                flexible
                and member(_intersect(f.versions, f.tagged), possible, version)
                and value != default_value(f)
            ):
                assert f.tag is not None
                tagged.append((f.tag, _write_value(f, value, version, possible, True, tagged=True)))
        elif member(f.versions, possible, version):
            out += _write_value(f, value, version, possible, flexible)
    if flexible:
        out += write_unsigned_varint(len(tagged))
        for tag, data in sorted(tagged):
            out += write_unsigned_varint(tag) + write_unsigned_varint(len(data)) + data
    return bytes(out)


def _write_length(n: int | None, flexible: bool, is_string: bool) -> bytes:
    if flexible:
        return write_unsigned_varint(0 if n is None else n + 1)
    return (_I16 if is_string else _I32).pack(-1 if n is None else n)


def _write_value(
    f: Field, value: Any, version: int, possible: Versions, flexible: bool, tagged: bool = False
) -> bytes:
    t = f.type
    if t in _PRIMITIVE_WRITERS:
        return _PRIMITIVE_WRITERS[t](value)
    nested = Struct(f.name, f.versions, ALL if flexible else NONE, f.fields)
    if t == "struct":
        marker = b""
        if member(f.nullable, possible, version):
            if value is None:
                return write_unsigned_varint(0) if tagged else b"\xff"
            marker = write_unsigned_varint(1) if tagged else b"\x01"
        return marker + write_struct(nested, value, version, possible)
    if t in ("string", "bytes"):
        if value is None:
            return _write_length(None, flexible, t == "string")
        data = value.encode("utf-8") if t == "string" else bytes(value)
        return _write_length(len(data), flexible, t == "string") + data
    if value is None:
        return _write_length(None, flexible, False)
    out = bytearray(_write_length(len(value), flexible, False))
    el = f.element
    for item in value:
        if el == "struct":
            out += write_struct(nested, item, version, possible)
        elif el in ("string", "bytes"):
            data = item.encode("utf-8") if el == "string" else bytes(item)
            out += _write_length(len(data), flexible, el == "string") + data
        else:
            out += _PRIMITIVE_WRITERS[el](item)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# JSON as the generated JsonConverters + Jackson write it


def json_node(
    spec: Struct,
    values: dict[str, Any],
    version: int,
    parent: Versions | None = None,
    struct_tag_defaults: bool = False,
) -> dict[str, Any]:
    """The ObjectNode XJsonConverter.write(message, version) builds: fields in schema order, only
    those present at `version`, tagged fields only when not at their default. Values keep their
    Python types; uuids become strings, bytes stay bytes (Jackson writes them as base64).
    `struct_tag_defaults`: Kafka 3.9's generator, which takes a tagged struct's default to be the
    struct of its fields' defaults (`equals(new X())`) even where the schema says null, so a null
    one is written (`"classicMemberMetadata":null`); 4.x's omits it."""
    possible = spec.valid if parent is None else _intersect(parent, spec.valid)
    node: dict[str, Any] = {}
    for f in spec.fields:
        if not member(f.versions, possible, version):
            continue
        value = values[f.name]
        default = default_value(f)
        if struct_tag_defaults and f.type == "struct" and f.default is NULL:
            default = {sub.name: default_value(sub) for sub in f.fields}
        if f.tagged is not None and value == default:
            continue
        node[f.name] = _json_value(f, value, version, possible)
    return node


def _json_value(f: Field, value: Any, version: int, possible: Versions) -> Any:
    if value is None:
        return None
    t = f.type
    if t == "uuid":
        return uuid_to_string(value)
    if t == "struct":
        return json_node(Struct(f.name, f.versions, NONE, f.fields), value, version, possible)
    if f.is_array:
        el = f.element
        if el == "struct":
            nested = Struct(f.name, f.versions, NONE, f.fields)
            return [json_node(nested, v, version, possible) for v in value]
        if el == "uuid":
            return [uuid_to_string(v) for v in value]
        return list(value)
    return value


def java_double(d: float) -> str:
    """Double.toString."""
    if d == 0.0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign = "-" if d < 0 else ""
    a = abs(d)
    digits, exp = _shortest_digits(a)
    if 1e-3 <= a < 1e7:
        point = exp + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exp}"


def _shortest_digits(a: float) -> tuple[str, int]:
    """(significant digits, decimal exponent of the first digit), shortest round-trip digits.
    Java before 19 sometimes printed one digit more; those rare cases are not reproduced."""
    t = Decimal(repr(a)).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    assert isinstance(t.exponent, int)
    return digits, len(digits) - 1 + t.exponent


_ESC = {0x22: '\\"', 0x5C: "\\\\", 0x08: "\\b", 0x09: "\\t", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r"}


def json_string(s: str) -> str:
    """Jackson's string quoting: short escapes for " \\ \\b \\t \\f \\n \\r, \\u00XX (upper-case hex)
    for other control characters, everything else as is."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if o < 0x20 or o == 0x22 or o == 0x5C:
            out.append(_ESC.get(o) or f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def to_json(value: Any) -> str:
    """Compact JSON as Jackson's ObjectNode.toString / ObjectMapper.writeValueAsString write it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            # QUOTE_NON_NUMERIC_NUMBERS is on by default
            return (
                '"'
                + ("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
                + '"'
            )
        return java_double(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return '"' + base64.b64encode(bytes(value)).decode("ascii") + '"'
    if isinstance(value, dict):
        return "{" + ",".join(json_string(k) + ":" + to_json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


# ---------------------------------------------------------------------------------------------
# Java/Scala details the text formats depend on


def java_string_hash(s: str) -> int:
    """String.hashCode over UTF-16 code units."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def bigint_hex(data: bytes) -> str:
    """Scala `"%X".format(BigInt(1, bytes))`, as GroupMetadataManager.hex: leading zeros vanish;
    all-zero input gives "0", empty input gives ""."""
    if not data:
        return ""
    return f"{int.from_bytes(data, 'big'):X}"


class ScalaHashOrder:
    """Iteration order of Scala 2.13's mutable.HashMap / mutable.HashSet (Kafka 3.3.1 is built
    with Scala 2.13.8): buckets by `improvedHash & (length-1)`, inside a bucket by improved hash
    (signed), equal hashes in insertion order. Table length 16, doubled when `size + 1 >=
    0.75 * length` before an insert."""

    def __init__(self) -> None:
        self.length = 16
        self.threshold = 12
        self._entries: dict[Any, list[Any]] = {}  # key -> [improved hash, seq, value]
        self._seq = 0

    @staticmethod
    def improve(h: int) -> int:
        u = h & 0xFFFFFFFF
        return to_int32(u ^ (u >> 16))

    def _grow(self, newlen: int) -> None:
        self.length = newlen
        self.threshold = int(newlen * 0.75)

    def size_hint(self, size: int) -> None:
        """HashSet/HashMap.sizeHint, called by addAll with the added collection's size."""
        target = max(size + 1, 0)
        target = int(target / 0.75)
        target = min(_highest_one_bit(max(target - 1, 4)) * 2, 1 << 30)
        if target > self.length:
            self._grow(target)

    def put(self, key: Any, hash_code: int, value: Any = None, grow: bool = True) -> None:
        """put / add (grow=True), or addAll's addElem for an immutable HashSet (grow=False)."""
        if grow and len(self._entries) + 1 >= self.threshold:
            self._grow(self.length * 2)
        entry = self._entries.get(key)
        if entry is not None:
            entry[2] = value  # a map's put replaces the value and keeps the node's place
            return
        self._entries[key] = [self.improve(hash_code), self._seq, value]
        self._seq += 1

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Any) -> bool:
        return key in self._entries

    def keys(self) -> list[Any]:
        mask = self.length - 1
        return [
            k
            for k, _ in sorted(
                self._entries.items(), key=lambda kv: (kv[1][0] & mask, kv[1][0], kv[1][1])
            )
        ]

    def values(self) -> list[Any]:
        return [self._entries[k][2] for k in self.keys()]


def _highest_one_bit(i: int) -> int:
    return 1 << (i.bit_length() - 1) if i > 0 else 0
