"""Confluent's wire format for Schema Registry payloads, as confluent-kafka's serializers frame
them (confluent_kafka.schema_registry.common.serde.SchemaId).

Two framings: the schema id as a 5-byte prefix of the key or value (magic byte 0, then a
big-endian 4-byte id), or a record header `__key_schema_id` / `__value_schema_id` holding magic
byte 1 and a 16-byte GUID, the payload then carrying no prefix. A Protobuf payload adds its
message indexes after the id (in the prefix, or in the header value): a zigzag varint count
then that many zigzag varints, the path of the message in its .proto; `[0]`, the first message,
is written as the single byte 0x00. Pure: bytes in, values out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

MAGIC_ID = 0  # _MAGIC_BYTE_V0: a 4-byte schema id follows
MAGIC_GUID = 1  # _MAGIC_BYTE_V1: a 16-byte schema GUID follows
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
_MAX_INDEXES = 100_000  # SchemaId._read_index_array's bound


class WireError(ValueError):
    """Bytes that are not in Confluent's wire format; `position` is the byte it failed at."""

    def __init__(self, message: str, position: int):
        super().__init__(message)
        self.position = position


@dataclass(frozen=True, slots=True)
class SchemaRef:
    """Which schema wrote a payload: an id (prefix) or a GUID (header), the Protobuf message
    indexes when asked for, and where the payload itself starts in the bytes read."""

    schema_id: int | None
    guid: uuid.UUID | None
    message_indexes: tuple[int, ...] | None
    start: int

    @property
    def label(self) -> str:
        """The id or GUID as people name it."""
        return str(self.schema_id) if self.guid is None else str(self.guid)


def _zigzag_varint(data, pos: int) -> tuple[int, int]:
    """One zigzag varint at `pos`: (value, next position)."""
    value = shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise WireError("the message indexes end before their last varint", pos)
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        if shift > 63:
            raise WireError("a message index varint longer than 10 bytes", pos)


def message_indexes(data, pos: int) -> tuple[tuple[int, ...], int]:
    """The Protobuf message indexes at `pos` (SchemaId._read_index_array): (indexes, next position)."""
    count, pos = _zigzag_varint(data, pos)
    if count < 0 or count > _MAX_INDEXES:
        raise WireError(f"a message index count of {count}", pos)
    if count == 0:
        return (0,), pos
    out = []
    for _ in range(count):
        i, pos = _zigzag_varint(data, pos)
        out.append(i)
    return tuple(out), pos


def encode_message_indexes(indexes) -> bytes:
    """The bytes SchemaId._encode_varints writes for `indexes` ([0] as the single byte 0x00)."""
    indexes = list(indexes)
    if indexes == [0]:
        return b"\x00"
    out = bytearray()
    for v in [len(indexes), *indexes]:
        v = (v << 1) ^ (v >> 63)
        while v & ~0x7F:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def read_prefix(data, protobuf: bool = False) -> SchemaRef:
    """The schema id framed before a key or value: magic 0 and a 4-byte id (or magic 1 and a
    GUID), then the message indexes for Protobuf."""
    if len(data) < 1:
        raise WireError("empty: no magic byte", 0)
    magic = data[0]
    if magic == MAGIC_ID:
        if len(data) < 5:
            raise WireError("shorter than the 5-byte schema id prefix", len(data))
        sid, guid, pos = int.from_bytes(data[1:5], "big"), None, 5
    elif magic == MAGIC_GUID:
        if len(data) < 17:
            raise WireError("shorter than the 17-byte schema GUID prefix", len(data))
        sid, guid, pos = None, uuid.UUID(bytes=bytes(data[1:17])), 17
    else:
        raise WireError(f"magic byte {magic}, not 0 (a schema id) or 1 (a schema GUID)", 0)
    indexes = None
    if protobuf:
        indexes, pos = message_indexes(data, pos)
    return SchemaRef(sid, guid, indexes, pos)


def header_ref(headers, is_key: bool) -> bytes | None:
    """The value of the `__key_schema_id` or `__value_schema_id` header, the last one given
    (a header list may repeat a key); None when there is none."""
    name = KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER
    found = None
    for h in headers:
        if h[0] == name:
            found = h[1]
    return found


def read_header(value, protobuf: bool = False) -> SchemaRef:
    """A schema id header's value, framed as the prefix is; the payload itself then starts at
    byte 0 (`start` is 0)."""
    ref = read_prefix(value, protobuf)
    return SchemaRef(ref.schema_id, ref.guid, ref.message_indexes, 0)
