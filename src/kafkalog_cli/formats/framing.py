"""The framing of a log: the chain of batches as their size fields, magic bytes, CRCs and offsets
lay it out, walked without decoding a record.

- `batch_cuts`: batch boundaries about N bytes apart, the ranges of dump-log's and verify-crc's
  workers;
- `check_batches`: verify-crc's walk over a chain of batches (sizes, CRCs, offsets), with `deep`
  also over each batch's records (formats/deep_findings.py, loaded only then).

The loops over the size fields and over the batches that need no finding are the framing walk
(formats/_framing_walk.pyx, or its pure twin; formats/byte_loops.py picks one).

This module is what `kafkalog verify-crc` loads at start: it imports neither the record decoder
(records.py) nor the codecs, which cost more start-up than a small file's whole check.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.formats import byte_loops
from kafkalog_cli.formats.batch_findings import (  # noqa: F401 (the kinds, read as framing.CRC ...)
    CRC,
    INNER_CRC,
    MAGIC,
    OFFSETS,
    RECORDS,
    SIZE,
    TRAILING,
    Finding,
)
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.sizes import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD_V0

# offset, size, ple|legacy crc, magic, crc, attributes, lastOffsetDelta
_HEAD = struct.Struct(">qiibIhi")
_HEAD_LEN = _HEAD.size  # 27
_PREFIX = struct.Struct(">qi")
_SIZE = struct.Struct(">i")
WALKED_BYTES = 64 << 20  # how often a walk tells of the stretch it has walked
# the record-level check of one batch (deep_findings.deep_findings): buf, position, size, magic,
# file, base offset, last offset, the findings it appends to
DeepCheck = Callable[[Any, int, int, int, "str | None", int, int, "list[Finding]"], None]


# ------------------------------------------------------------------ batch boundaries
def batch_cuts(
    buf,
    start: int,
    end: int,
    target: int,
    min_tail: int,
    walked: Callable[[int, int], None] | None = None,
) -> list[int]:
    """Batch boundaries about `target` bytes apart from `start` (the first), by walking the size
    fields as iter_batches does, none leaving less than `min_tail` bytes to `end`. Where the
    chain breaks, the walk stops: the range after the last cut meets the break. `walked(a, b)`
    hears of each stretch walked, about every 64 MiB (to let a mapping's pages go)."""
    return byte_loops.batch_cuts(buf, start, end, target, min_tail, walked, WALKED_BYTES)


# ------------------------------------------------------------------ batch checks (verify-crc)
def walks_without_gil() -> bool:
    """Whether check_batches without `deep` lets the GIL go while it walks (the compiled walk,
    with the CPU's CRC-32C instruction)."""
    return byte_loops.CRC32C_IN_C


@dataclass(slots=True)
class BatchCheck:
    """What `check_batches` saw in one byte range."""

    batches: int = 0
    bytes: int = 0  # of complete batches checked
    first_offset: int | None = None  # the first batch's first offset (wrapper offset for legacy)
    last_offset: int | None = None
    first_position: int | None = None
    findings: list[Finding] = field(default_factory=list)


def check_batches(
    buf,
    start: int,
    end: int,
    *,
    file: str | None = None,
    tail: bool = True,
    deep: bool = False,
    walked: Callable[[int, int], None] | None = None,
    prev_offset: int | None = None,
) -> BatchCheck:
    """Check every batch in buf[start:end) of `file` (which the findings name). With `tail`, what
    follows the last complete batch is reported (an incomplete batch, a corrupt size); otherwise
    `end` must be a batch boundary. `walked(a, b)` hears of each stretch checked, about every
    64 MiB, as in `batch_cuts`. `prev_offset`: the last offset of the batch before `start`, when
    one range continues another (the offsets check goes on as in one pass)."""
    deep_check: DeepCheck | None = None
    if deep:  # the record decoder, only now
        from kafkalog_cli.formats.deep_findings import deep_findings

        deep_check = deep_findings
    res = BatchCheck()
    findings = res.findings
    mv = memoryview(buf)
    pos = start
    prev = prev_offset  # the last offset of the previous batch
    first = None
    batches = 0
    told = start
    tell = start + WALKED_BYTES if walked is not None else end
    sound_batches = byte_loops.check_sound_batches
    while pos + 17 < end:
        # the batches from pos that need no finding, in one walk
        pos, n, sound_first, sound_first_position, prev = sound_batches(
            buf, pos, end, prev, tell, deep_check, file, findings
        )
        if n:
            batches += n
            if first is None:
                first, res.first_position = sound_first, sound_first_position
        else:
            # a batch with a finding: judged alone
            head = _BatchHead.at(buf, pos, end)
            if head.size < RECORD_OVERHEAD_V0:
                findings.append(_corrupt_size(file, pos, end, head.size))
                break
            if pos + head.total > end:
                break  # incomplete: reported below as trailing bytes
            last = _judge(buf, mv, pos, head, file, deep_check, findings)
            batches += 1
            if last is not None:
                if prev is not None and head.base <= prev:
                    findings.append(_offsets_back(file, pos, head.base, last, prev))
                if first is None:
                    first, res.first_position = head.base, pos
                prev = last
            pos += head.total
        if pos > tell and walked is not None:
            walked(told, pos)
            told, tell = pos, pos + WALKED_BYTES
    if (
        tail
        and pos < end
        and not (findings and findings[-1].kind == SIZE and findings[-1].position == pos)
    ):
        findings.append(_trailing(buf, pos, end, file))
    if walked is not None:
        walked(told, min(pos + 17, end))
    res.batches = batches
    res.bytes = pos - start
    res.first_offset = first
    res.last_offset = prev
    return res


@dataclass(frozen=True, slots=True)
class _BatchHead:
    """The fields of a batch's header that the check reads (legacy entries: `ple` holds the CRC)."""

    base: int
    size: int
    ple: int
    magic: int
    stored: int
    lod: int

    @property
    def total(self) -> int:
        return self.size + LOG_OVERHEAD

    @classmethod
    def at(cls, buf, pos: int, end: int) -> _BatchHead:
        if pos <= end - _HEAD_LEN:
            base, size, ple, magic, stored, _attributes, lod = _HEAD.unpack_from(buf, pos)
            return cls(base, size, ple, magic, stored, lod)
        # near the end: fewer than 27 bytes left
        base, size = _PREFIX.unpack_from(buf, pos)
        magic = buf[pos + 16]
        if magic >= 0x80:
            magic -= 0x100
        ple = 0
        if size >= RECORD_OVERHEAD_V0 and pos + LOG_OVERHEAD + size <= end and magic < 2:
            ple = struct.unpack_from(">i", buf, pos + 12)[0]
        return cls(base, size, ple, magic, 0, 0)


def _judge(
    buf, mv, pos: int, h: _BatchHead, file, deep_check, findings: list[Finding]
) -> int | None:
    """The findings of one whole batch at `pos`: its CRC, its offsets and, with `deep_check`, its
    records. Returns its last offset, or None for a batch skipped by its size field (too small
    for a v2 header, or an unknown magic)."""
    total = h.total
    if h.magic == 2:
        if total < RECORD_BATCH_OVERHEAD:
            findings.append(
                Finding(
                    file,
                    pos,
                    SIZE,
                    f"v2 batch of {total} bytes is smaller than its "
                    f"{RECORD_BATCH_OVERHEAD}-byte header",
                    base_offset=h.base,
                )
            )
            return None
        computed = crc32c(mv[pos + 21 : pos + total])
        last = h.base + h.lod
        if computed != h.stored:
            findings.append(
                Finding(
                    file, pos, CRC, "v2 batch CRC-32C mismatch", h.base, last, h.stored, computed
                )
            )
        if h.lod < 0:
            findings.append(
                Finding(file, pos, OFFSETS, f"negative last offset delta {h.lod}", h.base, last)
            )
    elif h.magic == 0 or h.magic == 1:
        stored = h.ple & 0xFFFFFFFF
        computed = zlib.crc32(mv[pos + 16 : pos + total])
        last = h.base
        if computed != stored:
            findings.append(
                Finding(
                    file,
                    pos,
                    CRC,
                    f"magic {h.magic} message CRC-32 mismatch",
                    h.base,
                    last,
                    stored,
                    computed,
                )
            )
    else:
        findings.append(
            Finding(
                file,
                pos,
                MAGIC,
                f"unknown magic {h.magic}; the batch is skipped by its size field ({total} bytes)",
                base_offset=h.base,
            )
        )
        return None
    if deep_check is not None:
        deep_check(buf, pos, total, h.magic, file, h.base, last, findings)
    return last


def _corrupt_size(file, pos: int, end: int, size: int) -> Finding:
    return Finding(
        file,
        pos,
        SIZE,
        f"corrupt size field {size} (smaller than the minimum record overhead "
        f"{RECORD_OVERHEAD_V0}); the rest of the file, {end - pos} bytes, cannot be read",
    )


def _offsets_back(file, pos: int, base: int, last: int, prev: int) -> Finding:
    return Finding(
        file,
        pos,
        OFFSETS,
        f"offsets do not increase: this batch starts at {base}, the previous one ended at {prev}",
        base,
        last,
    )


_ZEROS = bytes(1 << 20)


def first_nonzero(buf, start: int, end: int) -> int:
    """The position of the first byte in buf[start:end] that is not zero, or `end`: a
    preallocated .log's tail (log.preallocate, an unclean shutdown's) is read a MiB at a time,
    never copied whole nor looked at byte by byte."""
    for pos in range(start, end, len(_ZEROS)):
        chunk = bytes(buf[pos : min(pos + len(_ZEROS), end)])
        if chunk != _ZEROS[: len(chunk)]:
            return pos + len(chunk) - len(chunk.lstrip(b"\0"))
    return end


def all_zero(buf, start: int, end: int) -> bool:
    """Only zero bytes in buf[start:end]."""
    return first_nonzero(buf, start, end) == end


def _trailing(buf, pos: int, end: int, file) -> Finding:
    """What follows the last complete batch: an incomplete one."""
    msg = f"{end - pos} trailing bytes are not a complete batch"
    if pos + 12 <= end:
        _, size = _PREFIX.unpack_from(buf, pos)
        msg += f" (its size field says {size} bytes follow, {end - pos - 12} do)"
    return Finding(file, pos, TRAILING, msg)
