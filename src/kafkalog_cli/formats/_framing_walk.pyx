# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The walk over a chain of batches' framing, compiled: the twin of formats/_framing_walk_py.py
(the same public names in the same order; formats/byte_loops.py picks one).

`check_sound_batches` walks the v2 batches that need no finding (complete, at least their
header's size, CRC-32C right, last offset delta not negative, offsets increasing); framing.py's
check_batches hands it each run of batches and checks the batch it stops at itself, so the
findings, their order and the counts are the same on either core (tests/formats/test_core.py
holds the two equal over damaged chains). Small on purpose: verify-crc loads it at start, as it
loads framing.py. CRC-32C: the SSE4.2 instruction in C (_crc32c.h), three streams at once; the
`crc32c` package, called per batch, ran at a third of its long-buffer speed on batches of a few
KiB (verify-crc was 0.70x a raw pass, and is 1.2x now). `find_bytes`: the search for a byte
string over a whole mapped segment that lets erase's walk pass by the batches that cannot hold
the records it looks for (_find.h: memmem); `pass_plain_batches` walks those batches in C, a
Python object made only for a producer's state, not per batch."""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_READ
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport int64_t, uint64_t, int32_t, uint8_t, uint32_t, INT64_MAX

include "_bigendian.pxi"
include "_crc32c.pxi"

cdef extern from "_find.h":
    const uint8_t* kl_find(const uint8_t* hay, size_t n, const uint8_t* needle, size_t m) nogil


cdef struct Run:
    # check_sound_batches's walk: where it is and what it has seen
    Py_ssize_t pos, n, first_pos
    int64_t first, prev
    bint has_prev


cdef int walk_run(Run* r, const uint8_t* d, Py_ssize_t end, Py_ssize_t stop, bint has_deep, object buf, object deep,
                  object file, list findings) except -1 nogil:
    """check_sound_batches's loop; the GIL is taken only for `deep` and for the `crc32c` package (the CPU
    without the instruction), so with neither it runs without it. (The walk's state is in
    locals while it runs: the bytes read could alias *r.)"""
    cdef const uint8_t* h
    cdef int32_t size, lod
    cdef int64_t base, last, prev = r.prev, first = r.first
    cdef uint32_t stored, computed
    cdef Py_ssize_t total, pos = r.pos, n = r.n, first_pos = r.first_pos
    cdef bint has_prev = r.has_prev
    while pos + 27 <= end and pos <= stop:
        h = d + pos
        size = be32(h + 8)
        if size < 14 or h[16] != 2:
            break
        total = <Py_ssize_t>size + 12
        if pos + total > end or total < 61:
            break
        base = be64(h)
        lod = be32(h + 23)
        if lod < 0 or base > INT64_MAX - lod or (has_prev and base <= prev):
            break
        stored = <uint32_t>be32(h + 17)
        if HW_CRC32C:
            computed = kl_crc32c(0, h + 21, total - 21)
        else:
            with gil:
                computed = crc32c_at(h + 21, total - 21)
        if computed != stored:
            break
        last = base + lod
        if has_deep:
            with gil:
                deep(buf, pos, total, 2, file, base, last, findings)
        if n == 0:
            first = base
            first_pos = pos
        prev = last
        has_prev = True
        n += 1
        pos += total
    r.pos, r.n, r.first_pos, r.first, r.prev, r.has_prev = pos, n, first_pos, first, prev, has_prev
    return 0


def check_sound_batches(buf, Py_ssize_t pos, Py_ssize_t end, prev, Py_ssize_t stop, deep, file, list findings):
    """check_batches's loop over buf[pos:end) while each batch is a v2 batch that needs no
    finding of its own, until the walk passes `stop` (where check_batches tells of the stretch
    walked) -> (position of the batch it stops at, batches walked, first batch's base offset,
    its position, last offset of the last one); `prev` is the last offset before (None: none).
    `deep`: check_batches's records check of a batch (deep_findings), or None. Without
    `deep`, and with the CPU's CRC-32C instruction (CRC32C_IN_C), the walk lets the GIL go:
    verify-crc's jobs can be threads of one process."""
    cdef Py_buffer view
    cdef Run r
    r.pos, r.n, r.first_pos, r.first, r.prev = pos, 0, -1, 0, 0
    r.has_prev = prev is not None
    if r.has_prev:
        try:
            r.prev = prev
        except OverflowError:
            return pos, 0, None, None, prev
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if end > view.len:
            end = view.len
        if deep is None and HW_CRC32C:
            with nogil:
                walk_run(&r, <const uint8_t*>view.buf, end, stop, deep is not None, buf, deep, file, findings)
        else:
            walk_run(&r, <const uint8_t*>view.buf, end, stop, deep is not None, buf, deep, file, findings)
    finally:
        PyBuffer_Release(&view)
    if r.n == 0:
        return r.pos, 0, None, None, prev
    return r.pos, r.n, r.first, r.first_pos, r.prev


def batch_cuts(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t target, Py_ssize_t min_tail, walked=None,
               Py_ssize_t walked_bytes=64 << 20):
    """_framing_walk_py.batch_cuts, compiled (the size fields walked in C; `walked` told alike)."""
    cdef Py_buffer view
    cdef const uint8_t* d
    cdef Py_ssize_t pos = start, nxt = start + target, told = start
    cdef int32_t size
    cuts = [start]
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        d = <const uint8_t*>view.buf
        if end > view.len:
            raise ValueError("end is past the buffer")
        while pos + 17 < end:
            size = be32(d + pos + 8)
            if size < 14 or pos > end - 12 - size:
                break
            pos += <Py_ssize_t>size + 12
            if pos >= nxt and end - pos > min_tail:
                cuts.append(pos)
                nxt = pos + target
            if walked is not None and pos - told > walked_bytes:
                walked(told, pos)
                told = pos
    finally:
        PyBuffer_Release(&view)
    if walked is not None:
        walked(told, min(pos + 17, end))
    return cuts


def crc32c_of(data):
    """The CRC-32C of a bytes-like object through the walk's path (_crc32c.pxi; tests hold it equal to the
    package's)."""
    cdef const uint8_t[::1] v = data
    return crc32c_at(&v[0] if v.shape[0] else <const uint8_t*>b"", v.shape[0])


def find_bytes(buf, needle, Py_ssize_t start, Py_ssize_t end):
    """_framing_walk_py.find_bytes, compiled (_find.h), without the GIL: bytes.find's answer
    over any buffer, an mmap too."""
    cdef Py_buffer view, nv
    cdef const uint8_t* hit
    if start < 0:
        raise ValueError("start is before the buffer")
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(needle, &nv, PyBUF_SIMPLE)
        try:
            if end > view.len:
                end = view.len
            if start > end:
                return -1
            with nogil:
                hit = kl_find(<const uint8_t*>view.buf + start, <size_t>(end - start),
                              <const uint8_t*>nv.buf, <size_t>nv.len)
            return -1 if hit == NULL else <Py_ssize_t>(hit - <const uint8_t*>view.buf)
        finally:
            PyBuffer_Release(&nv)
    finally:
        PyBuffer_Release(&view)


def pass_plain_batches(buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t stop, dict last_data, dict open_txn):
    """_framing_walk_py.pass_plain_batches, compiled: the headers read in C; a producer's batch
    noted in the two dicts as there."""
    cdef Py_buffer view
    cdef const uint8_t* h
    cdef int32_t size, lod
    cdef int16_t attributes
    cdef int64_t base, pid, last = 0
    cdef Py_ssize_t total
    cdef bint passed = False
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if end > view.len:
            end = view.len
        if end > stop:
            end = stop
        while pos + 61 <= end:
            h = <const uint8_t*>view.buf + pos
            size = be32(h + 8)
            total = <Py_ssize_t>size + 12
            attributes = be16(h + 21)
            lod = be32(h + 23)
            base = be64(h)
            if (h[16] != 2 or total < 61 or pos + total > end or attributes & 0x07
                    or lod < 0 or base > INT64_MAX - lod):
                break
            last = base + lod
            passed = True
            pid = be64(h + 43)
            if pid >= 0:
                if attributes & 0x20:
                    open_txn.pop(pid, None)
                else:
                    last_data[pid] = last
                    if attributes & 0x10:
                        open_txn.setdefault(pid, last)
            pos += total
    finally:
        PyBuffer_Release(&view)
    return pos, (last if passed else None)
