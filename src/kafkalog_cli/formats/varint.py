"""Protobuf-style zigzag varints, as Kafka's ByteUtils reads and writes them."""
from __future__ import annotations

from kafkalog_cli.errors import InvalidRecordError


# Zigzag values of the one- and two-byte varints, for hand-inlined hot loops (a list index is
# cheaper than the shifts): ZIGZAG[b] for a one-byte varint b < 0x80, ZIGZAG[b + (c << 7)] for a
# two-byte one b >= 0x80, c < 0x80. The two ranges of indexes do not overlap.
ZIGZAG = ([(i >> 1) ^ -(i & 1) for i in range(0x80)]
          + [(r >> 1) ^ -(r & 1) for r in range(1 << 14)])


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zigzag varint (at most 5 bytes) at `pos` -> (value, next position)."""
    b = buf[pos]
    if b < 0x80:  # the common one-byte case, kept branch-light
        return (b >> 1) ^ -(b & 1), pos + 1
    raw = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise InvalidRecordError("Varint is too long, the most significant bit in the 5th byte is set", position=pos)
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Zigzag varlong (at most 10 bytes) at `pos` -> (value, next position)."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError("Varlong is too long, most significant bit in the 10th byte is set", position=pos)
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def read_unsigned_varint(buf, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise InvalidRecordError("Varint is too long, the most significant bit in the 5th byte is set", position=pos)


def _encode_unsigned(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def write_unsigned_varint(value: int) -> bytes:
    return _encode_unsigned(value)


def write_varint(value: int) -> bytes:
    return _encode_unsigned(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    return _encode_unsigned(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def size_of_varint(value: int) -> int:
    return len(write_varint(value))


def size_of_varlong(value: int) -> int:
    return len(write_varlong(value))
