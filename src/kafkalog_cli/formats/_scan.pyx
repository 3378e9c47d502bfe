# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The record scanners, compiled: the twin of formats/_scan_py.py (the same public names in the
same order; formats/byte_loops.py picks one), equal to it byte for byte where both answer
(tests/formats/test_core.py holds them so, and tests/formats/test_scan.py the pure one to the
reference decoder). Each function takes the arguments and gives the results of its namesake
there. Anything this does not handle (numbers past 64 bits, a layout of another shape) raises
`Declined`, as the pure scanners do for anything the reference decoder must judge: the caller
decodes that batch with the reference decoder, so the output is the same either way.

No Python object is made per record on the common path: a batch's records are walked into a C
array (every size checked as records.py checks it), then written as text straight into one
buffer, which becomes the one str or bytes the pure function returns.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.ref cimport PyObject, Py_XDECREF
from libc.stdint cimport int64_t, uint64_t, int32_t, uint8_t, uint32_t, int16_t, uint16_t, INT64_MAX, INT64_MIN
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ
from libc.string cimport memcpy, memchr, memcmp, strlen

from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.records import Header, Record
from kafkalog_cli.formats.v2_region import Declined, headers_at, records_region

cdef int64_t INT32_MAX = 2147483647
cdef int64_t NO_SEQUENCE = -1
cdef int RECORD_BATCH_OVERHEAD = 61


# ------------------------------------------------------------------ an output buffer
# A bytes object written in place and cut to its length at the end (out_bytes), so the text is
# never copied into a new object.
cdef extern from "Python.h":
    PyObject* new_bytes "PyBytes_FromStringAndSize"(const char* s, Py_ssize_t n) except NULL
    char* bytes_data "PyBytes_AS_STRING"(PyObject* b)
    int _PyBytes_Resize(PyObject** b, Py_ssize_t n) except -1


cdef struct Out:
    PyObject* obj
    char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef inline void out_clear(Out* o) noexcept:
    o.obj = NULL
    o.p = NULL
    o.n = o.cap = 0


cdef int out_init(Out* o, Py_ssize_t cap) except -1:
    o.obj = new_bytes(NULL, cap)
    o.p = bytes_data(o.obj)
    o.n = 0
    o.cap = cap
    return 0


cdef int out_grow(Out* o, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = o.cap * 2
    if cap < o.n + need:
        cap = o.n + need + 4096
    _PyBytes_Resize(&o.obj, cap)
    o.p = bytes_data(o.obj)
    o.cap = cap
    return 0


cdef object out_bytes(Out* o):
    """The text written, as bytes (the buffer itself, cut to length)."""
    _PyBytes_Resize(&o.obj, o.n)
    b = <object>o.obj
    Py_XDECREF(o.obj)
    out_clear(o)
    return b


cdef inline void out_free(Out* o) noexcept:
    Py_XDECREF(o.obj)
    out_clear(o)


cdef inline void copy_bytes(char* w, const char* s, Py_ssize_t k) noexcept:
    """memcpy, with the short pieces of a line (a format's literals, a key) copied eight bytes
    at a time inline: a call to memcpy per piece was a tenth of a JSON dump's CPU."""
    cdef Py_ssize_t i = 0
    if k > 128:
        memcpy(w, s, k)
    elif k >= 8:
        while i + 8 <= k:
            memcpy(w + i, s + i, 8)
            i += 8
        if i < k:
            memcpy(w + k - 8, s + k - 8, 8)
    else:
        while i < k:
            w[i] = s[i]
            i += 1


cdef inline int out_put(Out* o, const char* s, Py_ssize_t k) except -1:
    if o.n + k > o.cap:
        out_grow(o, k)
    copy_bytes(o.p + o.n, s, k)
    o.n += k
    return 0


cdef inline int out_lit(Out* o, const char* s) except -1:
    """A C string literal (its length folds to a constant once inlined)."""
    return out_put(o, s, strlen(s))


cdef inline int out_byte(Out* o, char c) except -1:
    if o.n + 1 > o.cap:
        out_grow(o, 1)
    o.p[o.n] = c
    o.n += 1
    return 0


cdef int _i
cdef char DIGITS[200]
for _i in range(100):
    DIGITS[2 * _i] = 48 + _i // 10
    DIGITS[2 * _i + 1] = 48 + _i % 10


cdef extern from *:
    """
    static inline int kl_bitlen64(unsigned long long v) {
    #if defined(__GNUC__) || defined(__clang__)
        return v ? 64 - __builtin_clzll(v) : 0;
    #else
        int n = 0;
        while (v) { n++; v >>= 1; }
        return n;
    #endif
    }
    """
    int kl_bitlen64(unsigned long long v) noexcept nogil


cdef uint64_t POW10[20]
POW10[0] = 1
for _i in range(1, 20):
    POW10[_i] = POW10[_i - 1] * 10


cdef inline int decimal_digits(uint64_t u) noexcept:
    """How many digits u has in decimal: from its bit length (log10 2 ~ 1233 / 4096), one
    comparison after (a division per digit was a quarter of a JSON line's cost)."""
    cdef int t = (kl_bitlen64(u | 1) * 1233) >> 12
    t += u >= POW10[t]
    return t if t else 1


cdef inline int out_int(Out* o, int64_t v) except -1:
    """v in decimal, as Python's str() and %d write it: its digits counted, then written in
    place from the last."""
    cdef uint64_t u, q
    cdef int k
    cdef char* w
    if o.n + 24 > o.cap:
        out_grow(o, 24)
    w = o.p + o.n
    if v < 0:
        u = <uint64_t>0 - <uint64_t>v
        w[0] = 45   # '-'
        w += 1
    else:
        u = <uint64_t>v
    k = decimal_digits(u)
    o.n = (w - o.p) + k
    w += k
    while u >= 100:
        q = u // 100
        w -= 2
        memcpy(w, DIGITS + 2 * (u - q * 100), 2)
        u = q
    if u >= 10:
        w -= 2
        memcpy(w, DIGITS + 2 * u, 2)
    else:
        w -= 1
        w[0] = <char>(48 + u)
    return 0


# ------------------------------------------------------------------ varints (ByteUtils)
cdef inline Py_ssize_t rd_zigzag(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, int64_t* out,
                                 bint long_) except -2:
    """read_varint (long_ false: at most 5 bytes, 32 bits) or read_varlong at d[pos], bounded by
    end -> the next position; -1 when the bytes run out or the varint is too long (the pure
    reader raises then, and its caller gives up)."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef int max_shift = 63 if long_ else 28
    cdef uint8_t b
    while True:
        if pos >= end:
            return -1
        b = d[pos]
        pos += 1
        raw |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > max_shift:
            return -1
    if not long_:
        raw = <uint32_t>raw
    out[0] = (<int64_t>(raw >> 1)) ^ (-(<int64_t>(raw & 1)))
    return pos


# ------------------------------------------------------------------ UTF-8 as Python decodes it
cdef inline bint utf8_valid(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Whether bytes.decode("utf-8") accepts s[:n] (no surrogates, no overlong forms, nothing
    past U+10FFFF), so Python's text of it is the bytes themselves."""
    cdef Py_ssize_t i = 0
    cdef uint8_t c, c2
    cdef uint64_t w
    while i < n:
        while i + 8 <= n:
            memcpy(&w, s + i, 8)
            if w & 0x8080808080808080ULL:
                break
            i += 8
        if i >= n:
            break
        c = s[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return False
        elif c < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif c < 0xF0:
            if i + 2 >= n:
                return False
            c2 = s[i + 1]
            if (c2 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
                return False
            if c == 0xE0 and c2 < 0xA0:
                return False
            if c == 0xED and c2 >= 0xA0:
                return False
            i += 3
        elif c < 0xF5:
            if i + 3 >= n:
                return False
            c2 = s[i + 1]
            if (c2 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80 or (s[i + 3] & 0xC0) != 0x80:
                return False
            if c == 0xF0 and c2 < 0x90:
                return False
            if c == 0xF4 and c2 >= 0x90:
                return False
            i += 4
        else:
            return False
    return True


cdef int put_text(Out* o, const uint8_t* s, Py_ssize_t n) except -1:
    """A key or value as kafka-dump-log's StringDecoder prints it (Java's UTF-8 decoding), as
    UTF-8 (surrogatepass, as the result is decoded)."""
    if utf8_valid(s, n):
        return out_put(o, <const char*>s, n)
    t = java_utf8(PyBytes_FromStringAndSize(<const char*>s, n)).encode("utf-8", "surrogatepass")
    return out_put(o, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t))


# JSON string escapes, as json.dumps(ensure_ascii=False) (and orjson) write them: 0 keeps the byte
cdef char ESC[256]
for _i in range(256):
    ESC[_i] = 0
for _i in range(0x20):
    ESC[_i] = b'u'
ESC[0x08] = b'b'
ESC[0x09] = b't'
ESC[0x0A] = b'n'
ESC[0x0C] = b'f'
ESC[0x0D] = b'r'
ESC[0x22] = b'"'
ESC[0x5C] = b'\\'
cdef const char* HEX = b"0123456789abcdef"
# each byte's text in a JSON string (ESCN[c] bytes of ESC8[c]): itself, or its escape
cdef uint64_t ESC8[256]
cdef uint8_t ESCN[256]
cdef char* _e
for _i in range(256):
    _e = <char*>&ESC8[_i]
    ESC8[_i] = 0
    if ESC[_i] == 0:
        _e[0] = <char>_i
        ESCN[_i] = 1
    elif ESC[_i] == b'u':
        memcpy(_e, b"\\u00", 4)
        _e[4] = HEX[_i >> 4]
        _e[5] = HEX[_i & 15]
        ESCN[_i] = 6
    else:
        _e[0] = b'\\'
        _e[1] = ESC[_i]
        ESCN[_i] = 2


cdef inline bint has_zero(uint64_t v) noexcept:
    """Whether a byte of v is 0 (exact as to whether any is)."""
    return ((v - 0x0101010101010101ULL) & ~v & 0x8080808080808080ULL) != 0


cdef inline bint has_below_space(uint64_t v) noexcept:
    """Whether a byte of v is below 0x20."""
    return ((v - 0x2020202020202020ULL) & ~v & 0x8080808080808080ULL) != 0


cdef int put_escaped(Out* o, const uint8_t* s, Py_ssize_t n) except -1:
    """UTF-8 as the escaped text of a JSON string -> 1 when every byte was ASCII (the text is
    valid UTF-8 then, with no look of its own), else 0."""
    cdef Py_ssize_t i, k
    cdef uint8_t c
    cdef uint64_t x, high = 0
    if o.n + 6 * n + 8 > o.cap:
        out_grow(o, 6 * n + 8)
    cdef char* w = o.p + o.n
    i = 0
    while i < n:
        if i + 8 <= n:
            # eight bytes at once when none is below 0x20, '"' or '\\' (UTF-8's high bytes pass)
            memcpy(&x, s + i, 8)
            high |= x
            if not (has_below_space(x) or has_zero(x ^ 0x2222222222222222ULL)
                    or has_zero(x ^ 0x5C5C5C5C5C5C5C5CULL)):
                memcpy(w, &x, 8)
                w += 8
                i += 8
                continue
            # a byte of the eight needs its escape: all eight through the table, without
            # looking at the next eight from each byte of these
            for k in range(i, i + 8):
                c = s[k]
                memcpy(w, &ESC8[c], 8)
                w += ESCN[c]
            i += 8
            continue
        c = s[i]
        high |= c
        i += 1
        memcpy(w, &ESC8[c], 8)      # the byte or its escape, without a branch (8 bytes of room kept)
        w += ESCN[c]
    o.n = w - o.p
    return (high & 0x8080808080808080ULL) == 0


cdef int put_json_utf8(Out* o, const uint8_t* s, Py_ssize_t n) except -1:
    """A payload as the escaped text of a JSON string in the utf8 encoding (Java's decoding):
    escaped at once, and looked at again only when it holds a byte past ASCII."""
    cdef Py_ssize_t mark = o.n
    if put_escaped(o, s, n) or utf8_valid(s, n):
        return 0
    o.n = mark          # not UTF-8: its text as Java decodes it instead
    t = java_utf8(PyBytes_FromStringAndSize(<const char*>s, n)).encode("utf-8")
    put_escaped(o, <const uint8_t*>PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t))
    return 0


cdef const char* B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


cdef int put_payload(Out* o, const uint8_t* s, Py_ssize_t n, int enc) except -1:
    """A payload's escaped text in the encoding: 0 utf8, 1 hex, 2 base64 (render/jsonl.py's)."""
    cdef Py_ssize_t i
    cdef uint32_t v
    cdef char* w
    if enc == 0:
        return put_json_utf8(o, s, n)
    if enc == 1:
        if o.n + 2 * n > o.cap:
            out_grow(o, 2 * n)
        w = o.p + o.n
        for i in range(n):
            w[2 * i] = HEX[s[i] >> 4]
            w[2 * i + 1] = HEX[s[i] & 15]
        o.n += 2 * n
        return 0
    if o.n + 4 * (n // 3 + 1) > o.cap:
        out_grow(o, 4 * (n // 3 + 1))
    w = o.p + o.n
    i = 0
    while i + 3 <= n:
        v = (<uint32_t>s[i] << 16) | (<uint32_t>s[i + 1] << 8) | s[i + 2]
        w[0] = B64[(v >> 18) & 63]
        w[1] = B64[(v >> 12) & 63]
        w[2] = B64[(v >> 6) & 63]
        w[3] = B64[v & 63]
        w += 4
        i += 3
    if n - i == 1:
        v = <uint32_t>s[i] << 16
        w[0] = B64[(v >> 18) & 63]
        w[1] = B64[(v >> 12) & 63]
        w[2] = b'='
        w[3] = b'='
        w += 4
    elif n - i == 2:
        v = (<uint32_t>s[i] << 16) | (<uint32_t>s[i + 1] << 8)
        w[0] = B64[(v >> 18) & 63]
        w[1] = B64[(v >> 12) & 63]
        w[2] = B64[(v >> 6) & 63]
        w[3] = b'='
        w += 4
    o.n = w - o.p
    return 0


# ------------------------------------------------------------------ the record walk
cdef struct Rec:
    int64_t od          # offset delta
    int64_t td          # timestamp delta
    Py_ssize_t key      # positions in the records' bytes
    Py_ssize_t value
    Py_ssize_t headers  # where the header count starts
    int64_t klen        # -1: null
    int64_t vlen
    int64_t nh          # headers
    uint8_t attributes  # the record's own attributes byte


cdef struct Region:
    Py_buffer view
    const uint8_t* d
    Py_ssize_t pos
    Py_ssize_t end
    bint held


cdef int region_open(Region* r, batch) except -1:
    data, start, end = records_region(batch)
    r.held = False
    PyObject_GetBuffer(data, &r.view, PyBUF_SIMPLE)
    r.held = True
    r.d = <const uint8_t*>r.view.buf
    r.pos = start
    r.end = end
    if r.end > r.view.len or r.pos < 0 or r.pos > r.end:
        raise Declined("records outside the buffer")
    return 0


cdef inline void region_close(Region* r) noexcept:
    if r.held:
        PyBuffer_Release(&r.view)
        r.held = False


cdef Py_ssize_t walk_headers(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, int64_t* nh) except -2:
    """_header_pairs's checks over a record's headers at pos -> where they end (-1: give up)."""
    cdef int64_t n, hk, hv, i
    pos = rd_zigzag(d, pos, end, &n, False)
    if pos < 0 or n < 0 or n > end - pos:
        return -1
    nh[0] = n
    for i in range(n):
        pos = rd_zigzag(d, pos, end, &hk, False)
        if pos < 0 or hk < 0 or pos + hk > end:
            return -1
        pos += hk
        pos = rd_zigzag(d, pos, end, &hv, False)
        if pos < 0:
            return -1
        if hv >= 0:
            if pos + hv > end:
                return -1
            pos += hv
    return pos


cdef inline Py_ssize_t rd_payload(const uint8_t* d, Py_ssize_t pos, Py_ssize_t rend, Py_ssize_t* at,
                                  int64_t* n) except -2:
    """A key or value at pos (its size, then its bytes): where its bytes are and their size (-1:
    null, for any negative size) -> the next position; -1 when it does not fit the record."""
    cdef int64_t v
    pos = rd_zigzag(d, pos, rend, &v, False)
    if pos < 0:
        return -1
    at[0] = pos
    if v < 0:
        n[0] = -1
        return pos
    if v > rend - pos:
        return -1
    n[0] = v
    return pos + v


cdef Rec* walk(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, int64_t count) except NULL:
    """The records of a v2 batch (d[pos:end)) into a new array (PyMem_Free it), every size
    checked; Declined on anything the pure scanners give up on (and on nothing they take)."""
    if count > (end - pos) // 7:    # a record takes 7 bytes at least
        raise Declined("more records than bytes")
    cdef Rec* recs = <Rec*>PyMem_Malloc(sizeof(Rec) * (count if count else 1))
    if recs == NULL:
        raise MemoryError()
    try:
        walk_into(d, pos, end, count, recs)
    except BaseException:
        PyMem_Free(recs)
        raise
    return recs


cdef int walk_into(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, Rec* recs) except -1:
    cdef Py_ssize_t i, body, rend
    cdef int64_t length
    cdef Rec* r
    cdef uint8_t b
    for i in range(count):
        r = recs + i
        if pos < end and d[pos] < 0x80:
            b = d[pos]
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            pos = rd_zigzag(d, pos, end, &length, False)
            if pos < 0:
                raise Declined("record length")
        if length < 0 or length > end - pos:
            raise Declined("record size")
        body = pos
        r.attributes = d[pos] if pos < end else 0
        rend = pos + length
        # attributes, then timestampDelta
        pos = rd_zigzag(d, pos + 1, rend, &r.td, True)
        if pos < 0:
            raise Declined("timestamp delta")
        if pos < rend and d[pos] < 0x80:
            b = d[pos]
            r.od = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            pos = rd_zigzag(d, pos, rend, &r.od, False)
            if pos < 0:
                raise Declined("offset delta")
        pos = rd_payload(d, pos, rend, &r.key, &r.klen)
        if pos < 0:
            raise Declined("key")
        pos = rd_payload(d, pos, rend, &r.value, &r.vlen)
        if pos < 0:
            raise Declined("value")
        r.headers = pos
        if pos >= rend:
            raise Declined("headers")
        if d[pos] == 0:
            pos += 1
            r.nh = 0
        else:
            pos = walk_headers(d, pos, rend, &r.nh)
            if pos < 0:
                raise Declined("headers")
        if pos != rend:
            raise Declined("record size")
    if pos != end:
        raise Declined("bytes remain")
    return 0


cdef struct Fields:
    # what the record scanners read of a batch's header
    int64_t count, base, base_ts, max_ts, base_seq
    bint log_append


cdef bint v2_fields(Fields* f, batch) except -1:
    """The batch's fields into f -> False for a legacy batch (its callers decline it); raises
    Declined for a negative record count, as the pure scanners do."""
    f.count = batch.records_count
    if f.count < 0:
        raise Declined("negative count")
    if batch.magic != 2:
        return False
    f.base = batch.base_offset_field
    f.base_ts = batch.base_timestamp
    f.log_append = batch.attributes & 0x08
    f.max_ts = batch.max_timestamp
    f.base_seq = batch.base_sequence
    return True


cdef inline bint add_ok(int64_t a, int64_t b) noexcept:
    if b > 0:
        return a <= INT64_MAX - b
    return a >= INT64_MIN - b


cdef inline int64_t sequence_of(int64_t base_seq, int64_t od) noexcept:
    """increment_sequence(base_seq, od), or NO_SEQUENCE without a producer sequence."""
    if base_seq < 0:
        return NO_SEQUENCE
    if base_seq > INT32_MAX - od:
        return od - (INT32_MAX - base_seq) - 1
    return base_seq + od


cdef bint numbers_fit(Rec* recs, Py_ssize_t count, int64_t base, int64_t base_ts) noexcept:
    """Whether every offset and timestamp of the batch fits 64 bits (else the batch is declined:
    the reference decoder, whose ints do not overflow, writes it)."""
    cdef Py_ssize_t i
    for i in range(count):
        if not add_ok(base, recs[i].od) or not add_ok(base_ts, recs[i].td):
            return False
    return True


cdef int put_header_keys(Out* o, const uint8_t* d, Py_ssize_t pos, int64_t nh) except -1:
    """A record's header keys as kafka-dump-log lists them: comma-separated, Java's decoding."""
    cdef int64_t i, hk, hv
    pos = rd_zigzag(d, pos, pos + 10, &hk, False)    # the count (walked already)
    for i in range(nh):
        if i:
            out_byte(o, b',')
        pos = rd_zigzag(d, pos, pos + 10, &hk, False)
        put_text(o, d + pos, hk)
        pos += hk
        pos = rd_zigzag(d, pos, pos + 10, &hv, False)
        if hv > 0:
            pos += hv
    return 0


# ------------------------------------------------------------------ record text
cdef int put_records_text(Out* o, const uint8_t* d, Rec* recs, Py_ssize_t count, int64_t base, int64_t base_ts,
                          bint log_append, int64_t max_ts, int64_t base_seq, int64_t* last, list found,
                          bint metadata, bint data_log) except -1:
    """The record lines of a walked batch, as KafkaDumper._records writes them with the
    StringDecoder parser; `found` gets the non-consecutive (previous, offset) pairs in file order."""
    cdef Py_ssize_t i
    cdef Rec* r
    cdef int64_t off, ts, clast = last[0]
    cdef const char* label = b" LogAppendTime: " if log_append else b" CreateTime: "
    cdef Py_ssize_t label_len = 16 if log_append else 13
    for i in range(count):
        r = recs + i
        off = base + r.od
        if clast != -1 and off != clast + 1:
            found.append((clast, off))
        clast = off
        if metadata:
            ts = max_ts if log_append else base_ts + r.td
            out_lit(o, b"| offset: ")
            out_int(o, off)
            out_put(o, label, label_len)
            out_int(o, ts)
            out_lit(o, b" keySize: ")
            out_int(o, r.klen)
            out_lit(o, b" valueSize: ")
            out_int(o, r.vlen)
            out_lit(o, b" sequence: ")
            out_int(o, sequence_of(base_seq, r.od))
            out_lit(o, b" headerKeys: [")
            if r.nh:
                put_header_keys(o, d, r.headers, r.nh)
            out_byte(o, b']')
            if data_log:
                if r.klen >= 0:
                    out_lit(o, b" key: ")
                    put_text(o, d + r.key, r.klen)
                if r.vlen >= 0:
                    out_lit(o, b" payload: ")
                    put_text(o, d + r.value, r.vlen)
        elif data_log:
            if r.klen >= 0:
                out_lit(o, b"| key: ")
                put_text(o, d + r.key, r.klen)
            if r.vlen >= 0:
                out_lit(o, b" payload: ")
                put_text(o, d + r.value, r.vlen)
        out_byte(o, b'\n')
    last[0] = clast
    return 0


def batch_text(batch, last, list pairs, bint metadata, bint data_log):
    """_scan_py.batch_text, compiled."""
    cdef Fields f
    if not v2_fields(&f, batch):
        raise Declined("numbers or a shape this does not take")
    cdef int64_t count = f.count, base = f.base, base_ts = f.base_ts, max_ts = f.max_ts, base_seq = f.base_seq
    cdef bint log_append = f.log_append
    cdef int64_t clast
    try:
        clast = last
    except OverflowError:
        raise Declined("numbers or a shape this does not take")
    if clast == INT64_MAX:
        raise Declined("numbers or a shape this does not take")
    cdef Region reg
    cdef Rec* recs = NULL
    cdef Out o
    out_clear(&o)
    found = []
    region_open(&reg, batch)
    try:
        recs = walk(reg.d, reg.pos, reg.end, count)
        if not numbers_fit(recs, count, base, base_ts):
            raise Declined("numbers or a shape this does not take")
        out_init(&o, count * (112 if metadata else 8) + (reg.end - reg.pos if data_log else 0) + 64)
        put_records_text(&o, reg.d, recs, count, base, base_ts, log_append, max_ts, base_seq, &clast, found,
                         metadata, data_log)
        text = PyUnicode_DecodeUTF8(o.p, o.n, "surrogatepass")
    finally:
        PyMem_Free(recs)
        out_free(&o)
        region_close(&reg)
    if found:
        pairs += found
    return text, clast


# ------------------------------------------------------------------ batches and records as text, a run at a time
include "_bigendian.pxi"
include "_crc32c.pxi"


cdef const char* CODEC_NAMES[5]
CODEC_NAMES[:] = [b"none", b"gzip", b"snappy", b"lz4", b"zstd"]

from kafkalog_cli.formats.compression import decompress as _decompress


cdef struct Head:
    # a v2 data batch's header, and its records walked
    Py_ssize_t total
    int attributes
    int64_t base, base_ts, max_ts, pid
    int32_t lod, base_seq, count, ple
    int16_t epoch
    uint32_t crc, computed
    const uint8_t* rd         # the records' bytes (the batch's, or `data` decompressed)
    Py_ssize_t rpos, rend     # where in rd
    Rec* recs                 # PyMem_Free it


cdef object open_batch(Head* b, buf, const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, bint records=True):
    """The v2 data batch at d[pos] read into b, its records walked (unless not `records`: its
    header only) and its CRC-32C computed -> what holds the records' bytes (keep it while b.rd is
    read), or False: the runs leave this batch to their caller's loop (legacy, control, short or
    incomplete batches, an unknown codec, records the scanners give up on, numbers past 64
    bits)."""
    cdef const uint8_t* h = d + pos
    cdef int32_t size = be32(h + 8)
    cdef int codec
    b.recs = NULL
    if size < 14 or pos > end - 12 - size or h[16] != 2 or size + 12 < RECORD_BATCH_OVERHEAD:
        return False
    b.total = size + 12
    b.attributes = be16(h + 21) & 0xFF
    if b.attributes >= 0x80:
        b.attributes -= 0x100
    codec = b.attributes & 0x07
    if b.attributes & 0x20 or codec > 4:
        return False
    b.base = be64(h)
    b.ple = be32(h + 12)
    b.crc = <uint32_t>be32(h + 17)
    b.lod = be32(h + 23)
    b.base_ts = be64(h + 27)
    b.max_ts = be64(h + 35)
    b.pid = be64(h + 43)
    b.epoch = be16(h + 51)
    b.base_seq = be32(h + 53)
    b.count = be32(h + 57)
    if b.count < 0 or not add_ok(b.base, b.lod):
        return False
    if not records:
        b.computed = crc32c_at(h + 21, b.total - 21)
        return buf
    data = buf
    if codec:
        try:
            data = _decompress(codec, PyMemoryView_FromMemory(<char*>(h + RECORD_BATCH_OVERHEAD),
                                                              b.total - RECORD_BATCH_OVERHEAD, PyBUF_READ), 2)
        except Exception:
            return False
        if type(data) is not bytes:
            data = bytes(data)
        b.rd = <const uint8_t*>PyBytes_AS_STRING(data)
        b.rpos, b.rend = 0, PyBytes_GET_SIZE(data)
    else:
        b.rd = h
        b.rpos, b.rend = RECORD_BATCH_OVERHEAD, b.total
    try:
        b.recs = walk(b.rd, b.rpos, b.rend, b.count)
    except Declined:
        return False
    if not numbers_fit(b.recs, b.count, b.base, b.base_ts):
        PyMem_Free(b.recs)
        b.recs = NULL
        return False
    b.computed = crc32c_at(h + 21, b.total - 21)
    return data


cdef inline int64_t last_sequence(Head* b) noexcept:
    """RecordBatch.last_sequence."""
    if b.base_seq == -1:
        return -1
    if b.base_seq > INT32_MAX - b.lod:
        return b.lod - (INT32_MAX - b.base_seq) - 1
    return b.base_seq + b.lod


def text_of_batches(buf, Py_ssize_t pos, Py_ssize_t end, last, list pairs, bint metadata, bint data_log,
                   Py_ssize_t limit, bint records=True):
    """kafka-dump-log's lines (batch line, then its record lines) of the v2 data batches from
    buf[pos:end), as render/kafka.py's loop writes them with the StringDecoder parser, until
    about `limit` bytes are written or a batch this does not render: legacy, control, short or
    incomplete batches, an unknown codec, records the record text scanner gives up on, numbers
    past 64 bits. -> (UTF-8 text, the position of that batch (or where the walk ended), the last
    record offset); `pairs` gets the non-consecutive (previous, offset) pairs in file order. The
    caller's own loop goes on from the position returned. Not `records`: the batch lines only
    (dump-log without --deep-iteration), the records neither walked nor decompressed."""
    cdef Py_buffer view
    cdef Out o
    cdef int64_t clast
    try:
        clast = last
    except OverflowError:
        return b"", pos, last
    if clast == INT64_MAX:
        return b"", pos, last
    cdef const uint8_t* d
    cdef Head b
    b.recs = NULL
    found = []
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    out_clear(&o)
    try:
        d = <const uint8_t*>view.buf
        if end > view.len:
            end = view.len
        out_init(&o, limit + (1 << 16))
        while pos + 17 < end and o.n < limit:
            held = open_batch(&b, buf, d, pos, end, records)
            if held is False:
                break
            # the batch line (render/kafka.py's batch_line)
            out_lit(&o, b"baseOffset: ")
            out_int(&o, b.base)
            out_lit(&o, b" lastOffset: ")
            out_int(&o, b.base + b.lod)
            out_lit(&o, b" count: ")
            out_int(&o, b.count)
            out_lit(&o, b" baseSequence: ")
            out_int(&o, b.base_seq)
            out_lit(&o, b" lastSequence: ")
            out_int(&o, last_sequence(&b))
            out_lit(&o, b" producerId: ")
            out_int(&o, b.pid)
            out_lit(&o, b" producerEpoch: ")
            out_int(&o, b.epoch)
            out_lit(&o, b" partitionLeaderEpoch: ")
            out_int(&o, b.ple)
            if b.attributes & 0x10:
                out_lit(&o, b" isTransactional: true")
            else:
                out_lit(&o, b" isTransactional: false")
            out_lit(&o, b" isControl: false deleteHorizonMs: ")
            if b.attributes & 0x40:
                out_lit(&o, b"OptionalLong[")
                out_int(&o, b.base_ts)
                out_byte(&o, b']')
            else:
                out_lit(&o, b"OptionalLong.empty")
            out_lit(&o, b" position: ")
            out_int(&o, pos)
            if b.attributes & 0x08:
                out_lit(&o, b" LogAppendTime: ")
            else:
                out_lit(&o, b" CreateTime: ")
            out_int(&o, b.max_ts)
            out_lit(&o, b" size: ")
            out_int(&o, b.total)
            out_lit(&o, b" magic: 2 compresscodec: ")
            out_lit(&o, CODEC_NAMES[b.attributes & 0x07])
            out_lit(&o, b" crc: ")
            out_int(&o, b.crc)
            if b.computed == b.crc:
                out_lit(&o, b" isvalid: true\n")
            else:
                out_lit(&o, b" isvalid: false\n")
            if records:
                put_records_text(&o, b.rd, b.recs, b.count, b.base, b.base_ts, b.attributes & 0x08, b.max_ts,
                                 b.base_seq, &clast, found, metadata, data_log)
            PyMem_Free(b.recs)
            b.recs = NULL
            pos += b.total
        text = out_bytes(&o)
    finally:
        PyMem_Free(b.recs)
        out_free(&o)
        PyBuffer_Release(&view)
    if found:
        pairs += found
    return text, pos, clast


# ------------------------------------------------------------------ record JSON
cdef enum:
    MAX_SLOTS = 16


cdef struct Format:
    # a %-format cut at its slots: literal i is lits[starts[i]:starts[i + 1]]
    char* lits
    Py_ssize_t starts[MAX_SLOTS + 2]
    char kinds[MAX_SLOTS]       # b'd' or b'b'
    int slots


cdef int format_parse(Format* f, bytes fmt) except -1:
    """Cut a %-format of %d, %b and %% (anything else: Declined) into literals and slots."""
    cdef const char* s = PyBytes_AS_STRING(fmt)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(fmt), i = 0, w = 0
    f.lits = <char*>PyMem_Malloc(n + 1)
    if f.lits == NULL:
        raise MemoryError()
    f.slots = 0
    f.starts[0] = 0
    while i < n:
        if s[i] != b'%':
            f.lits[w] = s[i]
            w += 1
            i += 1
            continue
        if i + 1 >= n:
            raise Declined("format")
        if s[i + 1] == b'%':
            f.lits[w] = b'%'
            w += 1
            i += 2
            continue
        if (s[i + 1] != b'd' and s[i + 1] != b'b') or f.slots == MAX_SLOTS:
            raise Declined("format")
        f.kinds[f.slots] = s[i + 1]
        f.slots += 1
        f.starts[f.slots] = w
        i += 2
    f.starts[f.slots + 1] = w
    return 0


cdef inline int format_lit(Out* o, Format* f, int i) except -1:
    return out_put(o, f.lits + f.starts[i], f.starts[i + 1] - f.starts[i])


cdef int put_headers_json(Out* o, const uint8_t* d, Py_ssize_t pos, int64_t nh, int enc, Format* header,
                          Format* null_header, bytes open_, bytes sep, bytes close) except -1:
    """_headers_text: a record's headers as a JSON list (keys as Java decodes them)."""
    cdef int64_t i, hk, hv
    cdef Py_ssize_t kpos
    out_put(o, PyBytes_AS_STRING(open_), PyBytes_GET_SIZE(open_))
    pos = rd_zigzag(d, pos, pos + 10, &hk, False)
    for i in range(nh):
        if i:
            out_put(o, PyBytes_AS_STRING(sep), PyBytes_GET_SIZE(sep))
        pos = rd_zigzag(d, pos, pos + 10, &hk, False)
        kpos = pos
        pos += hk
        pos = rd_zigzag(d, pos, pos + 10, &hv, False)
        if hv < 0:
            format_lit(o, null_header, 0)
            out_byte(o, b'"')
            put_json_utf8(o, d + kpos, hk)
            out_byte(o, b'"')
            format_lit(o, null_header, 1)
        else:
            format_lit(o, header, 0)
            out_byte(o, b'"')
            put_json_utf8(o, d + kpos, hk)
            out_byte(o, b'"')
            format_lit(o, header, 1)
            put_payload(o, d + pos, hv, enc)
            format_lit(o, header, 2)
            pos += hv
    out_put(o, PyBytes_AS_STRING(close), PyBytes_GET_SIZE(close))
    return 0


_ENCODINGS = {"utf8": 0, "hex": 1, "base64": 2}


cdef struct Shape:
    # a JsonLayout, cut up once: the texts around the payloads and the headers
    int enc
    Format string
    Format header
    Format null_header
    PyObject* null
    PyObject* no_headers
    PyObject* open
    PyObject* sep
    PyObject* close


cdef inline void shape_clear(Shape* sh) noexcept:
    sh.string.lits = sh.header.lits = sh.null_header.lits = NULL


cdef inline void shape_free(Shape* sh) noexcept:
    PyMem_Free(sh.string.lits)
    PyMem_Free(sh.header.lits)
    PyMem_Free(sh.null_header.lits)
    shape_clear(sh)


cdef bint shape_init(Shape* sh, layout) except -1:
    """Cut `layout` up (the layout object keeps the bytes alive); False when it is not of the
    shape this writes (the batch is declined then)."""
    enc_name = getattr(layout, "encoding", None)
    if enc_name not in _ENCODINGS:
        return False
    sh.enc = _ENCODINGS[enc_name]
    format_parse(&sh.string, layout.string)
    format_parse(&sh.header, layout.header)
    format_parse(&sh.null_header, layout.null_header)
    if sh.string.slots != 1 or sh.header.slots != 2 or sh.null_header.slots != 1:
        return False
    for part in (layout.null, layout.no_headers, layout.open, layout.sep, layout.close):
        if type(part) is not bytes:
            return False
    sh.null = <PyObject*>layout.null
    sh.no_headers = <PyObject*>layout.no_headers
    sh.open = <PyObject*>layout.open
    sh.sep = <PyObject*>layout.sep
    sh.close = <PyObject*>layout.close
    return True


cdef inline int out_obj(Out* o, PyObject* b) except -1:
    return out_put(o, bytes_data(b), PyBytes_GET_SIZE(<object>b))


cdef int variant_of(const uint8_t* d, Rec* recs, Py_ssize_t count, int64_t base_seq) noexcept:
    """The variant of the batch's record line (JsonLayout.line): which columns hold a null,
    whether any record has headers, whether there are sequences."""
    cdef Py_ssize_t i
    cdef int variant = 0
    for i in range(count):
        if recs[i].klen < 0:
            variant |= 1
        if recs[i].vlen < 0:
            variant |= 2
        if recs[i].nh or d[recs[i].headers] != 0:
            variant |= 4
    if base_seq >= 0:
        variant |= 8
    return variant


cdef bint line_fits(Format* line, int variant) noexcept:
    """Whether the record line's slots are the ones put_records_json fills."""
    cdef int expect = 4 + (1 if variant & 4 else 0) + (1 if variant & 8 else 0)
    return (line.slots == expect and line.kinds[0] == b'd' and line.kinds[1] == b'd' and line.kinds[2] == b'b'
            and line.kinds[3] == b'b' and (not variant & 4 or line.kinds[4] == b'b')
            and (not variant & 8 or line.kinds[expect - 1] == b'd'))


cdef int put_payload_slot(Out* o, Shape* sh, const uint8_t* d, Py_ssize_t at, int64_t n, bint whole) except -1:
    """A key or value: its escaped text (inside the line's quotes), or with `whole` (its column
    holds a null) a whole JSON value."""
    if not whole:
        return put_payload(o, d + at, n, sh.enc)
    if n < 0:
        return out_obj(o, sh.null)
    format_lit(o, &sh.string, 0)
    put_payload(o, d + at, n, sh.enc)
    return format_lit(o, &sh.string, 1)


cdef int put_records_json(Out* o, Shape* sh, Format* line, int variant, const uint8_t* d, Rec* recs,
                          Py_ssize_t count, int64_t base, int64_t base_ts, bint log_append, int64_t max_ts,
                          int64_t base_seq, bint base_slot=False) except -1:
    """The record lines of a walked batch, joined by newlines; `base_slot`: the line's last slot
    takes the batch's base offset (lines_of_batches's lines, kept from batch to batch)."""
    cdef Py_ssize_t i
    cdef int s
    cdef Rec* r
    for i in range(count):
        r = recs + i
        if i:
            out_byte(o, b'\n')
        format_lit(o, line, 0)
        out_int(o, base + r.od)
        format_lit(o, line, 1)
        out_int(o, max_ts if log_append else base_ts + r.td)
        format_lit(o, line, 2)
        put_payload_slot(o, sh, d, r.key, r.klen, variant & 1)
        format_lit(o, line, 3)
        put_payload_slot(o, sh, d, r.value, r.vlen, variant & 2)
        format_lit(o, line, 4)
        s = 4
        if variant & 4:
            if r.nh or d[r.headers] != 0:
                put_headers_json(o, d, r.headers, r.nh, sh.enc, &sh.header, &sh.null_header, <bytes>sh.open,
                                 <bytes>sh.sep, <bytes>sh.close)
            else:
                out_obj(o, sh.no_headers)
            s += 1
            format_lit(o, line, s)
        if variant & 8:
            out_int(o, sequence_of(base_seq, r.od))
            s += 1
            format_lit(o, line, s)
        if base_slot:
            out_int(o, base)
            s += 1
            format_lit(o, line, s)
    return 0


def batch_json(batch, layout):
    """_scan_py.batch_json, compiled."""
    cdef Fields f
    if not v2_fields(&f, batch):
        raise Declined("numbers or a shape this does not take")
    cdef int64_t count = f.count, base = f.base, base_ts = f.base_ts, max_ts = f.max_ts, base_seq = f.base_seq
    cdef bint log_append = f.log_append
    cdef Region reg
    cdef Rec* recs = NULL
    cdef Out o
    out_clear(&o)
    cdef Format line
    line.lits = NULL
    cdef Shape sh
    shape_clear(&sh)
    cdef int variant
    region_open(&reg, batch)
    try:
        recs = walk(reg.d, reg.pos, reg.end, count)
        if not count:
            return b""
        if not numbers_fit(recs, count, base, base_ts) or not shape_init(&sh, layout):
            raise Declined("numbers or a shape this does not take")
        variant = variant_of(reg.d, recs, count, base_seq)
        fmt = layout.line(batch, variant)
        if not fmt:
            raise Declined("no layout for this batch")
        format_parse(&line, fmt)
        if not line_fits(&line, variant):
            raise Declined("numbers or a shape this does not take")
        out_init(&o, count * (PyBytes_GET_SIZE(fmt) + 16) + 6 * (reg.end - reg.pos) + 64)
        put_records_json(&o, &sh, &line, variant, reg.d, recs, count, base, base_ts, log_append, max_ts, base_seq)
        return out_bytes(&o)
    finally:
        PyMem_Free(recs)
        out_free(&o)
        PyMem_Free(line.lits)
        shape_free(&sh)
        region_close(&reg)


def lines_of_batches(buf, Py_ssize_t pos, Py_ssize_t end, layout, batch_format, record_format, Py_ssize_t limit,
             bint records=True):
    """The JSON Lines of the v2 data batches from buf[pos:end) (each batch's line, then its
    records'), as render/jsonl.py's loop writes them with `layout`, until about `limit` bytes
    are written or a batch this does not write (as text_of_batches). The batch and record lines'
    %-formats come from render/jsonl.py: batch_format(attributes, valid, has_delete_horizon, buf,
    position, size) and record_format(variant, attributes, producer_id, producer_epoch), whose
    last slot is the batch's base offset; each is asked again only when its arguments (but
    buf, position and size) change from the batch before: a Python call and a format cut up
    per batch were a fifth of a deep dump's CPU. -> (the lines, joined by newlines, without the
    last; the position of the batch it stops at). Not `records`: the batch lines only, the
    records neither walked nor decompressed."""
    cdef Py_buffer view
    cdef Out o
    cdef Head b
    cdef Shape sh
    cdef Format bline, rline
    cdef const uint8_t* d
    cdef Py_ssize_t n = 0
    cdef int variant, k, expect
    cdef int64_t values[16]
    # the arguments the formats in bline and rline were made for (-1: none yet)
    cdef int bkey = -1, rvariant = -1, rattributes = 0, repoch = 0
    cdef int64_t rpid = 0
    b.recs = NULL
    shape_clear(&sh)
    bline.lits = rline.lits = NULL
    out_clear(&o)
    if not shape_init(&sh, layout):
        shape_free(&sh)
        return b"", pos
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        d = <const uint8_t*>view.buf
        if end > view.len:
            end = view.len
        out_init(&o, limit + (1 << 16))
        while pos + 17 < end and o.n < limit:
            held = open_batch(&b, buf, d, pos, end, records)
            if held is False:
                break
            k = (b.attributes & 0xFF) | (0x100 if b.computed == b.crc else 0)
            if k != bkey:
                fmt = batch_format(b.attributes, b.computed == b.crc, (b.attributes & 0x40) != 0, buf, pos, b.total)
                PyMem_Free(bline.lits)
                bline.lits = NULL
                bkey = -1
                try:
                    format_parse(&bline, fmt)
                except Declined:
                    break
                if bline.slots != (15 if b.attributes & 0x40 else 14):
                    break
                bkey = k
            variant = variant_of(b.rd, b.recs, b.count, b.base_seq) if records and b.count else 0
            if records and b.count and (variant != rvariant or b.attributes != rattributes or b.pid != rpid
                            or b.epoch != repoch):
                rfmt = record_format(variant, b.attributes, b.pid, b.epoch)
                PyMem_Free(rline.lits)
                rline.lits = NULL
                rvariant = -1
                if not rfmt:
                    break
                try:
                    format_parse(&rline, rfmt)
                except Declined:
                    break
                # the base offset's slot is the last: the record line's own slots before it
                expect = rline.slots - 1
                if expect < 0 or rline.kinds[expect] != b'd':
                    break
                rline.slots = expect
                if not line_fits(&rline, variant):
                    break
                rline.slots = expect + 1
                rvariant, rattributes, rpid, repoch = variant, b.attributes, b.pid, b.epoch
            # the batch line: render/jsonl.py's batch_line, its values in _BATCH_SLOTS's order
            values[0] = b.base
            values[1] = b.base + b.lod
            values[2] = b.count
            values[3] = pos
            values[4] = b.total
            values[5] = b.crc
            values[6] = b.computed
            values[7] = b.base_ts
            values[8] = b.max_ts
            values[9] = b.pid
            values[10] = b.epoch
            values[11] = b.base_seq
            values[12] = last_sequence(&b)
            values[13] = b.ple
            values[14] = b.base_ts
            if n:
                out_byte(&o, b'\n')
            for k in range(bline.slots):
                format_lit(&o, &bline, k)
                out_int(&o, values[k])
            format_lit(&o, &bline, bline.slots)
            if records and b.count:
                out_byte(&o, b'\n')
                put_records_json(&o, &sh, &rline, variant, b.rd, b.recs, b.count, b.base, b.base_ts,
                                 b.attributes & 0x08, b.max_ts, b.base_seq, True)
            PyMem_Free(b.recs)
            b.recs = NULL
            n += 1
            pos += b.total
        text = out_bytes(&o)
    finally:
        PyMem_Free(b.recs)
        PyMem_Free(bline.lits)
        PyMem_Free(rline.lits)
        out_free(&o)
        shape_free(&sh)
        PyBuffer_Release(&view)
    return text, pos


# ------------------------------------------------------------------ records checks (verify-crc --deep)
def v2_records_ok(batch):
    """_scan_py.v2_records_ok, compiled: the walk, and offsets increasing within the batch's range."""
    cdef int64_t count = batch.records_count
    if count < 0:
        return False
    cdef int64_t last_delta = batch.last_offset_delta
    cdef Region reg
    cdef Rec* recs = NULL
    cdef int64_t prev = -1
    cdef Py_ssize_t i
    region_open(&reg, batch)
    try:
        try:
            recs = walk(reg.d, reg.pos, reg.end, count)
        except Declined:
            return False
        for i in range(count):
            if recs[i].od <= prev:
                return False
            prev = recs[i].od
        return prev <= last_delta
    finally:
        PyMem_Free(recs)
        region_close(&reg)



# ------------------------------------------------------------------ record columns (Arrow)
cdef inline Py_ssize_t rd_small(const uint8_t* d, Py_ssize_t pos, int64_t* v) noexcept:
    """A varint the walk has checked already (its bytes are there) -> the next position."""
    return rd_zigzag(d, pos, pos + 10, v, False)


cdef enum:
    # Cols.out's buffers
    OFFSETS, TIMESTAMPS, SEQUENCES, SPANS, ENDS, HSPANS, DATA, BATCH_ROWS, N_COLS


cdef struct Cols:
    # what scan_columns and columns_of_batches append to a RecordColumns, before they do: its machine
    # values in growable buffers, with positions already those of the RecordColumns
    Out out[N_COLS]
    Py_ssize_t shift, row0, first     # the RecordColumns' size, rows and headers before
    Py_ssize_t rows, headers          # rows and headers added
    Py_ssize_t payload0, payload      # its payload bytes before, and those added


cdef void cols_clear(Cols* c) noexcept:
    cdef int i
    for i in range(N_COLS):
        out_clear(&c.out[i])


cdef int cols_open(Cols* c, cols) except -1:
    """c, empty, for appending to the RecordColumns `cols` (cols_clear it first: cols_free frees
    what this made if it fails half way)."""
    cdef int i
    c.shift = cols.size
    c.payload0 = cols.payload
    c.payload = 0
    c.row0 = cols.rows
    c.first = len(cols.header_spans) // 4
    c.rows = c.headers = 0
    for i in range(N_COLS):
        out_init(&c.out[i], 1024)
    return 0


cdef void cols_free(Cols* c) noexcept:
    cdef int i
    for i in range(N_COLS):
        out_free(&c.out[i])


cdef int out_reserve(Out* o, Py_ssize_t cap) except -1:
    """Room for cap bytes in all (one resize now rather than a doubling, and its copy, later)."""
    if cap > o.cap:
        _PyBytes_Resize(&o.obj, cap)
        o.p = bytes_data(o.obj)
        o.cap = cap
    return 0


cdef int cols_reserve(Cols* c, Py_ssize_t rows, Py_ssize_t data) except -1:
    """Room in c for about `rows` more rows holding `data` more bytes, as those so far."""
    cdef double per = <double>rows / c.rows
    out_reserve(&c.out[OFFSETS], c.out[OFFSETS].n + 8 * rows)
    out_reserve(&c.out[TIMESTAMPS], c.out[TIMESTAMPS].n + 8 * rows)
    out_reserve(&c.out[SEQUENCES], c.out[SEQUENCES].n + 4 * rows)
    out_reserve(&c.out[SPANS], c.out[SPANS].n + 16 * rows)
    out_reserve(&c.out[ENDS], c.out[ENDS].n + 4 * rows)
    out_reserve(&c.out[BATCH_ROWS], c.out[BATCH_ROWS].n + 4 * rows)
    out_reserve(&c.out[HSPANS], c.out[HSPANS].n + <Py_ssize_t>(c.out[HSPANS].n * per) + 64)
    out_reserve(&c.out[DATA], c.out[DATA].n + data)
    return 0


cdef inline char* out_room(Out* o, Py_ssize_t k) except NULL:
    """k bytes at the end of o, to write in place."""
    if o.n + k > o.cap:
        out_grow(o, k)
    o.n += k
    return o.p + o.n - k


cdef int cols_put(Cols* c, const uint8_t* rd, Py_ssize_t rpos, Py_ssize_t rend, Rec* recs, Py_ssize_t count,
                  int64_t base, int64_t base_ts, bint log_append, int64_t max_ts, int64_t base_seq,
                  list null_keys, list null_values, list null_hvalues) except -1:
    """A v2 batch's records (walked into recs, their bytes rd[rpos:rend)) appended to c -> 1, with
    nothing appended, when a position would pass 32 bits (Arrow's offsets)."""
    cdef Py_ssize_t n = rend - rpos, i, j, headers = 0, p, k0, row
    cdef int64_t hk = 0, hv = 0, nh = 0
    cdef Rec* r
    for i in range(count):
        headers += recs[i].nh
    k0 = c.shift + c.out[DATA].n     # where the records' bytes go in the RecordColumns' data
    if k0 + n > INT32_MAX or c.first + c.headers + headers > INT32_MAX or c.row0 + c.rows + count > INT32_MAX:
        return 1
    cdef int64_t* o64 = <int64_t*>out_room(&c.out[OFFSETS], 8 * count)
    cdef int64_t* t64 = <int64_t*>out_room(&c.out[TIMESTAMPS], 8 * count)
    cdef int32_t* s32 = <int32_t*>out_room(&c.out[SEQUENCES], 4 * count)
    cdef int32_t* sp = <int32_t*>out_room(&c.out[SPANS], 16 * count)
    cdef int32_t* e32 = <int32_t*>out_room(&c.out[ENDS], 4 * count)
    cdef int32_t* h32 = <int32_t*>out_room(&c.out[HSPANS], 16 * headers)
    memcpy(out_room(&c.out[DATA], n), rd + rpos, n)
    k0 -= rpos                  # a position in rd -> one in the RecordColumns' data
    row = c.row0 + c.rows
    headers = c.first + c.headers
    for i in range(count):
        r = recs + i
        o64[i] = base + r.od
        t64[i] = max_ts if log_append else base_ts + r.td
        s32[i] = <int32_t>sequence_of(base_seq, r.od)
        sp[4 * i] = <int32_t>(r.key + k0)
        sp[4 * i + 1] = <int32_t>(r.key + k0 + (r.klen if r.klen > 0 else 0))
        sp[4 * i + 2] = <int32_t>(r.value + k0)
        sp[4 * i + 3] = <int32_t>(r.value + k0 + (r.vlen if r.vlen > 0 else 0))
        if r.klen < 0:
            null_keys.append(row + i)
        else:
            c.payload += r.klen
        if r.vlen < 0:
            null_values.append(row + i)
        else:
            c.payload += r.vlen
        if r.nh:
            p = rd_small(rd, r.headers, &nh)
            for j in range(r.nh):
                p = rd_small(rd, p, &hk)
                h32[0] = <int32_t>(p + k0)
                h32[1] = <int32_t>(p + k0 + hk)
                c.payload += hk
                p = rd_small(rd, p + hk, &hv)
                h32[2] = <int32_t>(p + k0)
                if hv >= 0:
                    p += hv
                    c.payload += hv
                else:
                    null_hvalues.append(headers)
                h32[3] = <int32_t>(p + k0)
                h32 += 4
                headers += 1
        e32[i] = <int32_t>headers
    c.rows += count
    c.headers = headers - c.first
    return 0


cdef int cols_close(Cols* c, cols, list null_keys, list null_values, list null_hvalues) except -1:
    """What c holds appended to the RecordColumns `cols`."""
    if not c.rows:
        return 0
    cols.sequences.frombytes(out_bytes(&c.out[SEQUENCES]))
    cols.rows += c.rows
    cols.size += c.out[DATA].n
    cols.payload += c.payload
    cols.data.append(out_bytes(&c.out[DATA]))
    cols.offsets.frombytes(out_bytes(&c.out[OFFSETS]))
    cols.timestamps.frombytes(out_bytes(&c.out[TIMESTAMPS]))
    cols.spans.frombytes(out_bytes(&c.out[SPANS]))
    if null_keys:
        cols.null_keys += null_keys
    if null_values:
        cols.null_values += null_values
    cols.header_ends.frombytes(out_bytes(&c.out[ENDS]))
    cols.header_spans.frombytes(out_bytes(&c.out[HSPANS]))
    if null_hvalues:
        cols.null_header_values += null_hvalues
    return 0


def scan_columns(batch, cols):
    """_scan_py.scan_columns, compiled: the records of a v2 batch walked in C (every size checked as
    records.py checks it) and appended to `cols` as machine arrays a column at a time; raises
    Declined on anything the pure scanners give up on, or on numbers the arrays do not hold,
    and then leaves `cols` as it was."""
    cdef Fields f
    if not v2_fields(&f, batch):
        raise Declined("numbers or a shape this does not take")
    cdef Region reg
    cdef Rec* recs = NULL
    cdef Cols c
    null_keys, null_values, null_hvalues = [], [], []
    cols_clear(&c)
    reg.held = False
    try:
        cols_open(&c, cols)
        region_open(&reg, batch)
        recs = walk(reg.d, reg.pos, reg.end, f.count)
        if not numbers_fit(recs, f.count, f.base, f.base_ts):
            raise Declined("numbers past 64 bits")
        if cols_put(&c, reg.d, reg.pos, reg.end, recs, f.count, f.base, f.base_ts, f.log_append, f.max_ts,
                    f.base_seq, null_keys, null_values, null_hvalues):
            raise Declined("positions past 32 bits")
        cols_close(&c, cols, null_keys, null_values, null_hvalues)
    finally:
        PyMem_Free(recs)
        cols_free(&c)
        region_close(&reg)


def columns_of_batches(buf, Py_ssize_t pos, Py_ssize_t end, cols, tuple batch_values, batch_of_row, int64_t lo,
                int64_t hi, bint transactional, bint verify, Py_ssize_t max_rows, Py_ssize_t max_bytes):
    """spark/arrow.py's selection and _RecordRows.add over a run of v2 data batches from
    buf[pos:end), in C: each batch's records appended to the RecordColumns `cols` as scan_columns
    appends them, its values to the six lists of `batch_values` (timestamp_type, base_offset,
    producer_id, producer_epoch, is_transactional, is_control) and its index in them to
    `batch_of_row` once a record. Batches are taken while cols holds fewer than max_rows rows
    and max_bytes bytes of payloads (its `payload`), up to the first the caller's loop must judge: a batch open_batch leaves
    (legacy, control, short, incomplete, ...), one with offsets outside [lo, hi), a
    transactional one unless `transactional`, one whose CRC fails when `verify`. -> the
    position of the batch it stopped at (or where the walk ended)."""
    cdef Py_buffer view
    cdef Head b
    cdef Cols c
    cdef const uint8_t* d
    cdef Py_ssize_t bidx, i, first_batch
    cdef int32_t* w
    b.recs = NULL
    ts_types, bases, pids, epochs, txns, controls = batch_values
    null_keys, null_values, null_hvalues = [], [], []
    bidx = first_batch = len(bases)
    cols_clear(&c)
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        cols_open(&c, cols)
        d = <const uint8_t*>view.buf
        if end > view.len:
            end = view.len
        while pos + 17 < end and c.row0 + c.rows < max_rows and c.payload0 + c.payload < max_bytes:
            held = open_batch(&b, buf, d, pos, end)
            if held is False:
                break
            if (b.base < lo or b.base + b.lod >= hi or (b.attributes & 0x10 and not transactional)
                    or (verify and b.computed != b.crc)):
                break
            if cols_put(&c, b.rd, b.rpos, b.rend, b.recs, b.count, b.base, b.base_ts, b.attributes & 0x08, b.max_ts,
                        b.base_seq, null_keys, null_values, null_hvalues):
                break
            PyMem_Free(b.recs)
            b.recs = NULL
            pos += b.total
            if not b.count:     # no row: no values (as _RecordRows.add)
                continue
            w = <int32_t*>out_room(&c.out[BATCH_ROWS], 4 * b.count)
            for i in range(b.count):
                w[i] = <int32_t>bidx
            bidx += 1
            ts_types.append("LogAppendTime" if b.attributes & 0x08 else "CreateTime")
            bases.append(b.base)
            pids.append(b.pid)
            epochs.append(b.epoch)
            txns.append(True if b.attributes & 0x10 else False)
            controls.append(False)
            if bidx == first_batch + 1 and c.rows:    # room for the run's rows, told by its first batch's
                i = max_rows - c.row0 - c.rows
                if i > 0:
                    cols_reserve(&c, i, min(end - pos, <Py_ssize_t>(<double>c.out[DATA].n / c.rows * i * 1.05) + 4096))
        cols_close(&c, cols, null_keys, null_values, null_hvalues)
        if c.out[BATCH_ROWS].n:
            batch_of_row.frombytes(out_bytes(&c.out[BATCH_ROWS]))
    finally:
        PyMem_Free(b.recs)
        cols_free(&c)
        PyBuffer_Release(&view)
    return pos


# ------------------------------------------------------------------ record search
def search_v2(batch, search, indices=None):
    """_scan_py.search_v2, compiled: the records walked in C (every size checked as records.py
    checks it), the key tests in C and the regexes called on the payloads they test; Record
    objects only for the records found."""
    cdef Fields f
    if not v2_fields(&f, batch):
        raise Declined("numbers or a shape this does not take")
    cdef int64_t count = f.count, base = f.base, base_ts = f.base_ts, max_ts = f.max_ts, base_seq = f.base_seq
    cdef bint log_append = f.log_append
    cdef const uint8_t* d
    cdef const uint8_t* kx = NULL
    cdef const uint8_t* kp = NULL
    cdef Py_ssize_t klen = -1, plen = 0, i
    cdef bint hit, keyed
    cdef Rec* r
    cdef Rec* recs = NULL
    data, pos, end = records_region(batch)
    if type(data) is not bytes:     # an mmap: the records copied once, as the pure search does
        data = bytes(memoryview(data)[pos:end])
        pos, end = 0, PyBytes_GET_SIZE(data)
    if search.rules_out(data, pos, end) and batch.is_valid():
        return []
    kexact, kprefix, kregex, vregex = search.key, search.key_prefix, search.key_regex, search.value_regex
    keyed = kexact is not None or kprefix is not None or kregex is not None
    if kexact is not None:
        kx = <const uint8_t*>PyBytes_AS_STRING(kexact)
        klen = PyBytes_GET_SIZE(kexact)
    if kprefix is not None:
        kp = <const uint8_t*>PyBytes_AS_STRING(kprefix)
        plen = PyBytes_GET_SIZE(kprefix)
    if end - pos < 0 or end > PyBytes_GET_SIZE(data):
        raise Declined("records outside the buffer")
    d = <const uint8_t*>PyBytes_AS_STRING(data)
    out = []
    recs = walk(d, pos, end, count)
    try:
        if not numbers_fit(recs, count, base, base_ts):
            raise Declined("numbers or a shape this does not take")
        for i in range(count):
            r = recs + i
            if r.klen >= 0:
                hit = (r.klen >= plen and (kx == NULL or r.klen == klen)
                       and (kx == NULL or memcmp(d + r.key, kx, klen) == 0)
                       and (kp == NULL or memcmp(d + r.key, kp, plen) == 0))
                if hit and kregex is not None:
                    hit = kregex.search(PyBytes_FromStringAndSize(<const char*>(d + r.key), r.klen)) is not None
            else:
                hit = not keyed
            if r.vlen >= 0:
                if hit and vregex is not None:
                    hit = vregex.search(PyBytes_FromStringAndSize(<const char*>(d + r.value), r.vlen)) is not None
            elif vregex is not None:
                hit = False
            if hit:
                out.append(Record(
                    base + r.od, max_ts if log_append else base_ts + r.td,
                    PyBytes_FromStringAndSize(<const char*>(d + r.key), r.klen) if r.klen >= 0 else None,
                    PyBytes_FromStringAndSize(<const char*>(d + r.value), r.vlen) if r.vlen >= 0 else None,
                    headers_at(data, r.headers) if r.nh else (), sequence_of(base_seq, r.od), r.attributes, 2,
                    None, True, r.klen, r.vlen))
                if indices is not None:
                    indices.append(i)
    finally:
        PyMem_Free(recs)
    return out



def gather_spans(whole, spans, Py_ssize_t first, Py_ssize_t n, bint utf8=False):
    """The bytes of n spans (whole[spans[4 i + first]:spans[4 i + first + 1]] for each row i:
    RecordColumns' spans, four a row, with first 0 for keys, 2 for values) laid end to end ->
    (Arrow's int32 offsets buffer, data buffer) of a binary column of them, in one pass. `utf8`:
    None unless every span is UTF-8 that Python's decoder takes (a string column's check)."""
    cdef const int32_t[::1] sp = spans
    cdef const uint8_t[::1] src = whole
    cdef Py_ssize_t i, total = 0, a, b, size = src.shape[0]
    if n < 0 or first < 0 or first > 2 or 4 * n > sp.shape[0]:
        raise ValueError("spans out of range")
    for i in range(n):
        a = sp[4 * i + first]
        b = sp[4 * i + first + 1]
        if not 0 <= a <= b <= size:
            raise ValueError("span out of range")
        total += b - a
    if total > INT32_MAX:
        raise ValueError("past 2 GiB")
    offsets = PyBytes_FromStringAndSize(NULL, 4 * (n + 1))
    data = PyBytes_FromStringAndSize(NULL, total)
    cdef int32_t* off = <int32_t*>PyBytes_AS_STRING(offsets)
    cdef char* w = PyBytes_AS_STRING(data)
    cdef const char* s = <const char*>&src[0] if size else <const char*>b""
    total = 0
    off[0] = 0
    for i in range(n):
        a = sp[4 * i + first]
        b = sp[4 * i + first + 1]
        if utf8 and not utf8_valid(<const uint8_t*>(s + a), b - a):
            return None
        copy_bytes(w + total, s + a, b - a)
        total += b - a
        off[i + 1] = <int32_t>total
    return offsets, data


def take_fixed_width(values, Py_ssize_t width, rows):
    """Fixed-width values (`width` bytes each, any buffer) one a row: the rows' indexes into
    them in `rows` (int32) -> the rows' values end to end: a batch's values for each of its
    records."""
    cdef Py_buffer view
    cdef const int32_t[::1] r = rows
    cdef Py_ssize_t i, n = r.shape[0], k
    cdef const char* v
    if width not in (1, 2, 4, 8):
        raise ValueError("width")
    out = PyBytes_FromStringAndSize(NULL, n * width)
    cdef char* w = PyBytes_AS_STRING(out)
    PyObject_GetBuffer(values, &view, PyBUF_SIMPLE)
    try:
        v = <const char*>view.buf
        k = view.len // width
        for i in range(n):
            if not 0 <= r[i] < k:
                raise ValueError("row index out of range")
            memcpy(w + i * width, v + r[i] * width, width)
    finally:
        PyBuffer_Release(&view)
    return out
