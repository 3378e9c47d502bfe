"""Protobuf-style zigzag varints, as Kafka's ByteUtils reads and writes them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FunctionType
from typing import Any

from kafkalog_cli.errors import InvalidRecordError

# Zigzag values of the one- and two-byte varints, for hand-inlined hot loops (a list index is
# cheaper than the shifts): ZIGZAG[b] for a one-byte varint b < 0x80, ZIGZAG[b + (c << 7)] for a
# two-byte one b >= 0x80, c < 0x80. The two ranges of indexes do not overlap.
ZIGZAG = [(i >> 1) ^ -(i & 1) for i in range(0x80)] + [(r >> 1) ^ -(r & 1) for r in range(1 << 14)]
# The same two-byte values as rows, ZIGZAG2[c][b] == ZIGZAG[b + (c << 7)]: no arithmetic, so no
# int objects made (a shift is not one of the interpreter's specialised operations, and every
# int above 256 is a new object to allocate and free).
ZIGZAG2 = [[0] * 0x80 + ZIGZAG[0x80 + (c << 7) : 0x100 + (c << 7)] for c in range(0x80)]


# each reader's own globals (_zigzag_reader), declared for the type checker only
MAX_SHIFT: int
MASK: int
TOO_LONG: str


def _read_zigzag(buf, pos: int) -> tuple[int, int]:
    """The one body of read_varint and read_varlong (ByteUtils.readVarint / readVarlong), which
    differ only in MAX_SHIFT, MASK and TOO_LONG. Each is this code run over its own globals (see
    _zigzag_reader): the limits stay plain lookups on the rare long path, and the one-byte path
    costs what a hand-written function's does (a closure would copy its cells on every call)."""
    b = buf[pos]
    if b < 0x80:  # the common one-byte case, kept branch-light
        return (b >> 1) ^ -(b & 1), pos + 1
    c = buf[pos + 1]
    if c < 0x80:  # two bytes: most record lengths and value sizes
        return ZIGZAG[b + (c << 7)], pos + 2
    raw = (b & 0x7F) | ((c & 0x7F) << 7)
    shift = 14
    pos += 2
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > MAX_SHIFT:  # noqa: F821 (a global of each reader, not of this module)
            raise InvalidRecordError(TOO_LONG, position=pos)  # noqa: F821
    raw &= MASK  # noqa: F821
    return (raw >> 1) ^ -(raw & 1), pos


def _zigzag_reader(
    name: str, max_bytes: int, bits: int, too_long: str
) -> Callable[[Any, int], tuple[int, int]]:
    if sys.version_info >= (3, 11):
        code = _read_zigzag.__code__.replace(co_name=name, co_qualname=name)
    else:  # no co_qualname before 3.11
        code = _read_zigzag.__code__.replace(co_name=name)
    limits = {"MAX_SHIFT": 7 * (max_bytes - 1), "MASK": (1 << bits) - 1, "TOO_LONG": too_long}
    read = FunctionType(code, {**globals(), **limits}, name)
    read.__doc__ = (
        f"Zigzag {name[5:]} (at most {max_bytes} bytes) at `pos` -> (value, next position)."
    )
    return read


read_varint = _zigzag_reader(
    "read_varint", 5, 32, "Varint is too long, the most significant bit in the 5th byte is set"
)
read_varlong = _zigzag_reader(
    "read_varlong", 10, 64, "Varlong is too long, most significant bit in the 10th byte is set"
)


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
            raise InvalidRecordError(
                "Varint is too long, the most significant bit in the 5th byte is set", position=pos
            )


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
