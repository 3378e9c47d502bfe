"""The walk over a chain of batches' framing, pure: the twin of formats/_framing_walk.pyx (the
same public names in the same order; formats/byte_loops.py picks one).

- `check_sound_batches`: verify-crc's walk over the v2 batches that need no finding (complete,
  at least their header's size, CRC-32C right, last offset delta not negative, offsets
  increasing); formats/framing.py's check_batches hands it each run of batches and checks the
  batch it stops at itself;
- `batch_cuts`: batch boundaries about N bytes apart, by the size fields alone;
- `find_bytes`: where a byte string first occurs in a range of a buffer (a mapped segment);
- `pass_plain_batches`: erase's walk over the uncompressed v2 batches its search found nothing
  in, noting only what an empty rewrite must keep of them (each producer's last data batch, the
  first batch of its open transaction).
"""

from __future__ import annotations

import struct

from kafkalog_cli.formats.crc import crc32c

CRC32C_IN_C = False  # the compiled twin's: whether its walk computes CRC-32C without the GIL

# a v2 batch's head as far as the walk reads it: base offset, size, leader epoch, magic, CRC,
# attributes, last offset delta (Kafka's DefaultRecordBatch layout)
_HEAD = struct.Struct(">qiibIhi")
_SIZE = struct.Struct(">i")
# what pass_plain_batches reads of a v2 batch: base offset, size, magic, attributes, last offset
# delta at 0, 8, 16, 21, 23; producer id at 43
_PLAIN = struct.Struct(">qi4xb4xhi")
_PRODUCER_ID = struct.Struct(">q")
_ATTR_COMPRESSION, _ATTR_TRANSACTIONAL, _ATTR_CONTROL = 0x07, 0x10, 0x20
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


def pass_plain_batches(
    buf, pos: int, end: int, stop: int, last_data: dict, open_txn: dict
) -> tuple[int, int | None]:
    """Erase's walk over buf[pos:end) while each batch is a complete uncompressed v2 batch with
    its whole header that ends by `stop` (where its search knows no literal before) -> (position
    of the batch it stops at, last offset of the last batch passed or None). Each producer's
    batch passed (producer id >= 0) is noted as erase's scan notes it: a data batch's last
    offset in `last_data[pid]`, a transactional one's in `open_txn[pid]` unless one is there
    (its open transaction's first), a control batch ends that transaction. Anything else (a
    size below the header's, an offset past 2**63-1, a negative last offset delta) it leaves to
    the caller's walk, which knows its error or its rule."""
    end = min(end, len(buf), stop)
    head = _PLAIN.unpack_from
    producer = _PRODUCER_ID.unpack_from
    last = None
    while pos + 61 <= end:
        base, size, magic, attributes, lod = head(buf, pos)
        total = size + 12
        if (
            magic != 2
            or total < 61
            or pos + total > end
            or attributes & _ATTR_COMPRESSION
            or lod < 0
            or base > _INT64_MAX - lod
        ):
            break
        last = base + lod
        pid = producer(buf, pos + 43)[0]
        if pid >= 0:
            if attributes & _ATTR_CONTROL:
                open_txn.pop(pid, None)
            else:
                last_data[pid] = last
                if attributes & _ATTR_TRANSACTIONAL:
                    open_txn.setdefault(pid, last)
        pos += total
    return pos, last
