"""The walk over a chain of batches' framing, pure: the twin of formats/_framing_walk.pyx (the
same public names in the same order; formats/byte_loops.py picks one).

- `check_sound_batches`: verify-crc's walk over the v2 batches that need no finding (complete,
  at least their header's size, CRC-32C right, last offset delta not negative, offsets
  increasing); formats/framing.py's check_batches hands it each run of batches and checks the
  batch it stops at itself;
- `batch_cuts`: batch boundaries about N bytes apart, by the size fields alone;
- `find_bytes`: where a byte string first occurs in a range of a buffer (a mapped segment).
"""

from __future__ import annotations

import struct

from kafkalog_cli.formats.crc import crc32c

CRC32C_IN_C = False  # the compiled twin's: whether its walk computes CRC-32C without the GIL

# a v2 batch's head as far as the walk reads it: base offset, size, leader epoch, magic, CRC,
# attributes, last offset delta (Kafka's DefaultRecordBatch layout)
_HEAD = struct.Struct(">qiibIhi")
_SIZE = struct.Struct(">i")
_INT64_MAX = (1 << 63) - 1


def check_sound_batches(
    buf, pos: int, end: int, prev, stop: int, deep, file, findings: list
) -> tuple:
    """check_batches's loop over buf[pos:end) while each batch is a v2 batch that needs no
    finding of its own, until the walk passes `stop` (where check_batches tells of the stretch
    walked) -> (position of the batch it stops at, batches walked, first batch's base offset,
    its position, last offset of the last one); `prev` is the last offset before (None: none).
    `deep`: check_batches's records check of a batch (deep_findings), or None."""
    end = min(end, len(buf))
    mv = memoryview(buf)
    head = _HEAD.unpack_from
    n, first, first_pos, last = 0, None, None, prev
    while pos + 27 <= end and pos <= stop:
        base, size, _, magic, stored, _, lod = head(buf, pos)
        if size < 14 or magic != 2:
            break
        total = size + 12
        if pos + total > end or total < 61:
            break
        if lod < 0 or base > _INT64_MAX - lod or (last is not None and base <= last):
            break
        if crc32c(mv[pos + 21 : pos + total]) != stored:
            break
        if deep is not None:
            deep(buf, pos, total, 2, file, base, base + lod, findings)
        if n == 0:
            first, first_pos = base, pos
        last = base + lod
        n += 1
        pos += total
    if n == 0:
        return pos, 0, None, None, prev
    return pos, n, first, first_pos, last


def batch_cuts(
    buf, start: int, end: int, target: int, min_tail: int, walked=None, walked_bytes: int = 64 << 20
) -> list[int]:
    """Batch boundaries about `target` bytes apart from `start` (the first), by walking the size
    fields as iter_batches does, none leaving less than `min_tail` bytes to `end`. Where the
    chain breaks, the walk stops: the range after the last cut meets the break. `walked(a, b)`
    hears of each stretch walked, about every `walked_bytes` (to let a mapping's pages go)."""
    if end > len(buf):
        raise ValueError("end is past the buffer")
    cuts = [start]
    pos, nxt = start, start + target
    told = start
    unpack = _SIZE.unpack_from
    while pos + 17 < end:
        size = unpack(buf, pos + 8)[0]
        if size < 14 or pos > end - 12 - size:
            break
        pos += size + 12
        if pos >= nxt and end - pos > min_tail:
            cuts.append(pos)
            nxt = pos + target
        if walked is not None and pos - told > walked_bytes:
            walked(told, pos)
            told = pos
    if walked is not None:
        walked(told, min(pos + 17, end))
    return cuts


def crc32c_of(data) -> int:
    """The CRC-32C of a bytes-like object through the walk's path (the `crc32c` package here)."""
    return crc32c(data)


def find_bytes(buf, needle: bytes, start: int, end: int) -> int:
    """The first position p >= `start` at which `needle` lies wholly within buf[start:end), or
    -1: bytes.find's answer, over any buffer of bytes (an mmap too); `end` past the buffer is
    its end."""
    if start < 0:
        raise ValueError("start is before the buffer")
    end = min(end, len(buf))
    if start > end:
        return -1
    find = getattr(buf, "find", None)  # bytes, bytearray, mmap: searched in place
    if find is not None:
        return find(needle, start, end)
    at = bytes(memoryview(buf)[start:end]).find(needle)
    return -1 if at < 0 else start + at
