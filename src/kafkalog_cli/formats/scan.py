"""The hand-inlined fast scanners: pure over bytes, each the reference decoder (records.py:
`RecordBatch.records()`, `iter_batches`) cut down to what one hot loop needs.

- record text: `fast_v2_text`, the record lines of dump-log --deep-iteration / --print-data-log
  decoded straight into kafka-dump-log's text (no Record objects);
- record JSON: `fast_v2_json`, the record lines of dump-log --format json, in the layout
  render/jsonl.py hands over (`JsonLayout`);
- record columns: `scan_columns`, the records of many batches as columns (`RecordColumns`), for
  the Arrow rows of the Spark data source and export;
- keys: `scan_keys`, `scan_keys_into`, the cleaner's offset-map pass;
- spans: `scan_spans`, `record_starts`, `span_at`, the records a rewritten batch is made of;
- records checks: `deep_findings`, verify-crc --deep over one batch's records (`v2_records_ok`
  for a v2 batch), called by formats/framing.py's `check_batches`.

Varints of one and two bytes are decoded inline (a Python call costs more than the rest of a
record); longer ones go through varint.py. On anything unusual a record scanner raises
`Malformed` (or lets a decoder's error through) and its caller decodes the batch with the
reference decoder, whose error names the file and byte position as Kafka's reader would. The
property tests in tests/formats/test_scan.py hold every scanner equal to the reference.

The record-text scanner writes Kafka's text itself rather than handing values to render/: a
tuple per record and a second loop over them to format it measured about 8% slower on dump-log's
hottest loop (100-record batches), more than the 5% its benchmark allows. The JSON and column
scanners go the other way: their loop only cuts records into columns, and each column becomes
JSON text or an Arrow array in a few calls per batch (JSON escaping and Arrow arrays cost a call
per value otherwise).
"""
from __future__ import annotations

from array import array
from struct import pack
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.compression import decompress
from kafkalog_cli.formats.framing import INNER_CRC, OFFSETS, RECORDS, Finding
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.records import (
    INT32_MAX, NO_SEQUENCE, RECORD_BATCH_OVERHEAD, RecordBatch, increment_sequence,
)
# Multi-byte varints (the rare case; one and two bytes are inlined) read as varlongs in the key and
# span scanners: the widest Kafka accepts; a longer one is an InvalidRecordError, which callers
# treat as Malformed.
from kafkalog_cli.formats.varint import ZIGZAG, ZIGZAG2, read_varint, read_varlong


class Malformed(Exception):
    """A record scanner met what only the reference decoder may judge."""


# ------------------------------------------------------------------ records of a v2 batch
def records_region(batch: RecordBatch) -> tuple[bytes, int, int]:
    """The records of a v2 batch as (bytes, start, end): the batch's own buffer when
    uncompressed, else the decompressed stream."""
    p = batch.position
    start, end = p + RECORD_BATCH_OVERHEAD, p + batch.size
    codec = batch.compression_id
    if codec:
        data = decompress(codec, memoryview(batch.buf)[start:end], 2)
        return data, 0, len(data)
    return batch.buf, start, end


# ------------------------------------------------------------------ record text
def fast_v2_text(batch: RecordBatch, last: int, pairs: list, metadata: bool, data_log: bool) -> tuple[str, int]:
    """The record lines of a v2 non-control batch, decoded straight into text (no Record
    objects), exactly as `KafkaDumper._records` writes them with the StringDecoder parser.

    `pairs` receives the non-consecutive (previous, offset) pairs in file order. Raises on
    anything the general path must judge (Malformed for sizes that do not add up, IndexError for
    a short buffer, the decoders' errors for a bad varint or payload): the caller then renders
    the batch through the general path, which reports it as Kafka does."""
    count = batch.records_count
    if count < 0:
        raise Malformed("negative count")
    buf = batch.buf
    p0 = batch.position
    start = p0 + RECORD_BATCH_OVERHEAD
    stop = p0 + batch.size
    codec = batch.attributes & 0x07
    if codec:
        data = decompress(codec, memoryview(buf)[start:stop], 2)
    else:
        data = buf[start:stop]
    if type(data) is not bytes:
        data = bytes(data)
    end = len(data)
    base = batch.base_offset_field
    base_ts = batch.base_timestamp
    log_append = batch.max_timestamp if batch.attributes & 0x08 else None
    base_seq = batch.base_sequence
    label = batch.timestamp_type.kafka_name
    head = "| offset: "
    mid = f" {label}: "
    no_seq = f" sequence: {NO_SEQUENCE} headerKeys: []"
    kpre = " key: " if metadata else "| key: "
    lines = []
    append = lines.append
    rvarint = read_varint
    rvarlong = read_varlong
    jutf8 = java_utf8
    zz = ZIGZAG
    zz2 = ZIGZAG2
    pos = 0
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                length = zz2[c][b]
                pos += 2
            else:
                length, pos = rvarint(data, pos)
        body = pos
        b = data[pos + 1]
        if b < 0x80:
            td = zz[b]
            pos += 2
        else:
            c = data[pos + 2]
            if c < 0x80:
                td = zz2[c][b]
                pos += 3
            else:
                td, pos = rvarlong(data, pos + 1)
        b = data[pos]
        if b < 0x80:
            od = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                od = zz2[c][b]
                pos += 2
            else:
                od, pos = rvarint(data, pos)
        b = data[pos]
        if b < 0x80:
            ks = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                ks = zz2[c][b]
                pos += 2
            else:
                ks, pos = rvarint(data, pos)
        if ks >= 0:
            key = data[pos : pos + ks] if data_log else None  # only --print-data-log shows it
            pos += ks
        else:
            key = None
            ks = -1
        b = data[pos]
        if b < 0x80:
            vs = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                vs = zz2[c][b]
                pos += 2
            else:
                vs, pos = rvarint(data, pos)
        if vs >= 0:
            value = data[pos : pos + vs] if data_log else None
            pos += vs
        else:
            value = None
            vs = -1
        if data[pos] == 0:   # no headers
            pos += 1
            hkeys = None
        else:
            hkeys, pos = _header_keys(data, pos, end)
        if pos - body != length or pos > end:
            raise Malformed("record size")
        off = base + od
        if off != last + 1 and last != -1:
            pairs.append((last, off))
        last = off
        if metadata:
            if hkeys is None and base_seq < 0:
                tail = no_seq
            else:
                seq = increment_sequence(base_seq, od) if base_seq >= 0 else NO_SEQUENCE
                tail = f" sequence: {seq} headerKeys: [{hkeys or ''}]"
            ts = log_append if log_append is not None else base_ts + td
            if data_log:
                if key is None:
                    if value is None:
                        append(f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail}\n")
                    else:
                        try:
                            v = value.decode()
                        except UnicodeDecodeError:
                            v = jutf8(value)
                        append(f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail} payload: {v}\n")
                else:
                    try:
                        k = key.decode()
                    except UnicodeDecodeError:
                        k = jutf8(key)
                    if value is None:
                        append(f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail} key: {k}\n")
                    else:
                        try:
                            v = value.decode()
                        except UnicodeDecodeError:
                            v = jutf8(value)
                        append(f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail} key: {k} payload: {v}\n")
            else:
                append(f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail}\n")
        elif data_log:
            parts = []
            if key is not None:
                parts.append(kpre + jutf8(key))
            if value is not None:
                parts.append(" payload: " + jutf8(value))
            parts.append("\n")
            append("".join(parts))
        else:
            append("\n")
    if pos != end:
        raise Malformed("bytes remain")
    return "".join(lines), last


def _header_keys(data: bytes, pos: int, end: int) -> tuple[str, int]:
    """A record's header keys as kafka-dump-log lists them, and where its headers end."""
    pairs, pos = _header_pairs(data, pos, end)
    return ",".join([java_utf8(key) for key, _ in pairs]), pos


# ------------------------------------------------------------------ record JSON
# the flags of a record line's variant (JsonLayout.line)
KEYS_WHOLE, VALUES_WHOLE, HEADERS_SLOT, SEQUENCE_SLOT = 1, 2, 4, 8


class JsonLayout(NamedTuple):
    """How render/jsonl.py writes record lines, handed to `fast_v2_json` (which knows no JSON).

    A payload goes in a line as a JSON string or null. In a column (the keys, or the values, of
    a batch) without null the slot is inside the string's quotes, and `strings` fills it with
    the escaped texts of the whole column at once; otherwise the slot takes the whole value."""

    line: Callable[[RecordBatch, int], bytes]   # (batch, variant) -> %-format with offset %d,
    # timestamp %d, key %b, value %b, headers %b, sequence %d; the variant's flags say which
    # string slots take whole values, and whether there are slots for headers and sequences
    # (without, every record has none: the format holds them)
    string: bytes        # %-format of a JSON string around its escaped text
    null: bytes
    header: bytes        # %-format of one header: key %b (a JSON string), value: escaped text
    null_header: bytes   # ... whose value is null: key %b
    no_headers: bytes
    open: bytes          # a list of headers: open + sep.join(headers) + close
    sep: bytes
    close: bytes
    quote: Callable[[str], bytes]                   # a str as a JSON string
    strings: Callable[[list[bytes]], list[bytes]]   # payloads as escaped texts, in the payload encoding
    # UTF-8 text (payloads and ASCII between them) as the escaped text of a JSON string; None
    # when it is not valid UTF-8. None: the payload encoding has no such way (see _joined_lines)
    escaped: Callable[[bytes], bytes | None] | None = None
    # the payload encoding by name (utf8, hex, base64): the compiled core escapes these itself,
    # as `strings` and `escaped` do; None: it hands the batch to the pure fast_v2_json
    encoding: str | None = None


def fast_v2_json(batch: RecordBatch, layout: JsonLayout) -> bytes:
    """The record lines of a v2 non-control batch as UTF-8 JSON text in `layout`, joined by
    newlines, decoded straight from the batch's bytes (no Record objects). Raises as
    `fast_v2_text` does on anything the general path must judge.

    The loop only cuts the records into columns; the columns then become text in a few calls
    for the whole batch: without null payloads, every key and value escaped at once and laid
    into the lines by two %-passes (`_joined_lines`); otherwise the payloads through
    `layout.strings` and the lines through one %-format. A Python call per record and field
    would cost more than all the rest."""
    count = batch.records_count
    if count < 0:
        raise Malformed("negative count")
    data, pos, end = records_region(batch)
    if type(data) is not bytes:
        data = bytes(memoryview(data)[pos:end])
        pos, end = 0, len(data)
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    oappend, tappend, kappend, vappend = offsets.append, timestamps.append, keys.append, values.append
    base = batch.base_offset_field
    base_ts = batch.base_timestamp
    knulls = vnulls = 0
    rvarint = read_varint
    rvarlong = read_varlong
    zz = ZIGZAG
    zz2 = ZIGZAG2
    for i in range(count):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                length = zz2[c][b]
                pos += 2
            else:
                length, pos = rvarint(data, pos)
        # the record on its own: positions in it stay below 257 for most records, and such ints
        # are shared objects (positions in the batch would make a new int at every step)
        rec = data[pos : pos + length]
        pos += length
        b = rec[1]
        if b < 0x80:
            tappend(base_ts + zz[b])
            p = 2
        else:
            c = rec[2]
            if c < 0x80:
                tappend(base_ts + zz2[c][b])
                p = 3
            else:
                td, p = rvarlong(rec, 1)
                tappend(base_ts + td)
        b = rec[p]
        if b < 0x80:
            oappend(base + zz[b])
            p += 1
        else:
            c = rec[p + 1]
            if c < 0x80:
                oappend(base + zz2[c][b])
                p += 2
            else:
                od, p = rvarint(rec, p)
                oappend(base + od)
        b = rec[p]
        if b < 0x80:
            ks = zz[b]
            p += 1
        else:
            c = rec[p + 1]
            if c < 0x80:
                ks = zz2[c][b]
                p += 2
            else:
                ks, p = rvarint(rec, p)
        if ks >= 0:
            kappend(rec[p : p + ks])
            p += ks
        else:
            kappend(None)
            knulls += 1
        b = rec[p]
        if b < 0x80:
            vs = zz[b]
            p += 1
        else:
            c = rec[p + 1]
            if c < 0x80:
                vs = zz2[c][b]
                p += 2
            else:
                vs, p = rvarint(rec, p)
        if vs >= 0:
            vappend(rec[p : p + vs])
            p += vs
        else:
            vappend(None)
            vnulls += 1
        if rec[p] == 0:   # no headers
            p += 1
        else:
            pairs, p = _header_pairs(rec, p, len(rec))
            headers.append((i, pairs))
        if p != length:      # (a record cut short by the batch's end: pos passes end below)
            raise Malformed("record size")
    if pos != end:
        raise Malformed("bytes remain")
    if not count:
        return b""
    if batch.attributes & 0x08:      # LogAppendTime: every record has the batch's max timestamp
        timestamps = [batch.max_timestamp] * count
    seqs = _sequences(batch.base_sequence, base, offsets) if batch.base_sequence >= 0 else None
    variant = (KEYS_WHOLE if knulls else 0) | (VALUES_WHOLE if vnulls else 0)
    if headers:
        variant |= HEADERS_SLOT
    more = []          # the slots after the payloads and headers
    if seqs is not None:
        variant |= SEQUENCE_SLOT
        more.append(seqs)
    line = layout.line(batch, variant)
    if not line:
        raise Malformed("no layout for this batch")
    if not (knulls or vnulls) and layout.escaped is not None:
        text = _joined_lines(line, keys, values, headers, [offsets, timestamps, *more], layout)
        if text is not None:
            return text
    if knulls or vnulls:
        columns = [offsets, timestamps, _json_payloads(keys, knulls, layout), _json_payloads(values, vnulls, layout)]
    else:   # both columns escaped in one go (a few calls per batch fewer)
        texts = layout.strings(keys + values)
        columns = [offsets, timestamps, texts[:count], texts[count:]]
    if headers:
        hcol = [layout.no_headers] * count
        for i, pairs in headers:
            hcol[i] = _headers_text(pairs, layout)
        columns.append(hcol)
    return b"\n".join([line] * count) % _row_major(columns + more, count)


def _row_major(columns: list[list], count: int) -> tuple:
    """The values of `columns` record by record, as a %-format takes them."""
    width = len(columns)
    fields = [None] * (width * count)
    for i, column in enumerate(columns):
        fields[i::width] = column
    return tuple(fields)


# The separator of payloads escaped together: the one character below U+0080 that JSON text
# keeps as it is (render/jsonl.py's escapers keep it too), and rare in payloads
DEL = b"\x7f"


def _joined_lines(line: bytes, keys: list[bytes], values: list[bytes], headers: list[tuple[int, list]],
                  columns: list[list], layout: JsonLayout) -> bytes | None:
    """The lines of a batch without null keys or values, all its payloads (header keys and
    values too) escaped in one call and never split apart again: "%b key %b value %b key ...
    value %b" (the payloads' own % doubled twice), escaped at once, is the %-format of the whole
    batch, filled in two passes. The first puts the text of `line` between a key and its value,
    between a value and the next payload, and around each header; the second fills the
    remaining slots (offset, timestamp, sequence) from `columns`. A DEL in a payload leaves a
    slot too many for the first pass: then, and when `layout.escaped` declines or `line` has no
    quoted key and value slots, None (the caller escapes payload by payload)."""
    cut = line.split(b'"%b"')
    if len(cut) != 3:
        return None
    count = len(keys)
    head, middle, tail = cut[0] + b'"', b'"' + cut[1] + b'"', b'"' + cut[2]
    if headers:
        made = _with_headers(head, middle, tail, keys, values, headers, layout)
        if made is None:
            return None
        payloads, pieces = made
    else:
        payloads = [b""] * (2 * count + 2)     # a slot before the first key and after the last value too
        payloads[1:-1:2] = keys
        payloads[2:-1:2] = values
        pieces = (head,) + (middle, tail + b"\n" + head) * (count - 1) + (middle, tail)
    # JSON text keeps DEL, % and b as they are, so the slots come through the escaping whole
    fmt = layout.escaped(DEL.join(payloads).replace(b"%", b"%%%%").replace(DEL, b"%b"))
    if fmt is None:
        return None
    try:
        fmt %= pieces
    except TypeError:   # more slots than separators: a payload holds a DEL
        return None
    return fmt % _row_major(columns, count)


def _with_headers(head: bytes, middle: bytes, tail: bytes, keys: list[bytes], values: list[bytes],
                  headers: list[tuple[int, list]], layout: JsonLayout) -> tuple[list, tuple] | None:
    """For _joined_lines, a batch with headers: the payloads in line order (each record's key,
    value, then its headers' keys and values; empty ones first and last), and the texts that go
    between them. None when the layout's header texts are not the shapes this cuts."""
    tail_cut = tail.split(b"%b")
    header, null_header = layout.header.split(b"%b"), layout.null_header.split(b"%b")
    if len(tail_cut) != 2 or len(header) != 3 or len(null_header) != 2 or header[0] != null_header[0]:
        return None
    before, after = tail_cut                    # around the headers' slot
    key_open = header[0] + b'"'                 # {"key": "
    value_open = b'"' + header[1]               # ", "value": "
    value_close = header[2]                     # "}
    null_value = b'"' + null_header[1]          # ", "value": null}
    newline_head = b"\n" + head
    # what goes before a record's first header key, between headers (after a value or a null),
    # and after its last header (to the next record's key)
    first_key = before + layout.open + key_open
    next_after_value, next_after_null = value_close + layout.sep + key_open, null_value + layout.sep + key_open
    end_after_value = value_close + layout.close + after + newline_head
    end_after_null = null_value + layout.close + after + newline_head
    no_headers = before + layout.no_headers + after + newline_head
    of = [None] * len(keys)
    for i, pairs in headers:
        of[i] = pairs
    payloads, pieces = [b""], []
    pending = head
    for key, value, pairs in zip(keys, values, of):
        pieces += (pending, middle)
        payloads += (key, value)
        if not pairs:
            pending = no_headers
            continue
        pending = first_key
        for hkey, hvalue in pairs:
            if hvalue is None:
                pieces.append(pending)
                payloads.append(hkey)
                pending = next_after_null
            else:
                pieces += (pending, value_open)
                payloads += (hkey, hvalue)
                pending = next_after_value
        pending = end_after_null if hvalue is None else end_after_value
    pieces.append(pending[: -len(newline_head)])
    payloads.append(b"")
    return payloads, tuple(pieces)


def _sequences(base_sequence: int, base_offset: int, offsets: list) -> list[int]:
    """The records' sequences (increment_sequence by the offset delta), a list at once."""
    if base_sequence < 0:
        return [NO_SEQUENCE] * len(offsets)
    seqs = [base_sequence - base_offset + o for o in offsets]
    if seqs and max(seqs) > INT32_MAX:     # sequences wrap to 0
        seqs = [s - INT32_MAX - 1 if s > INT32_MAX else s for s in seqs]
    return seqs


def _json_payloads(items: list, nulls: int, layout: JsonLayout) -> list[bytes]:
    """What the slots of a column of payloads (bytes, or None for null) take: escaped texts, or
    whole JSON values when the column holds a null."""
    if not nulls:
        return layout.strings(items)
    if nulls == len(items):
        return [layout.null] * nulls
    texts = iter(layout.strings([x for x in items if x is not None]))
    null, string = layout.null, layout.string
    return [null if x is None else string % next(texts) for x in items]


def _header_pairs(data: bytes, pos: int, end: int) -> tuple[list[tuple[bytes, bytes | None]], int]:
    """A record's headers as (key bytes, value bytes or None) pairs, and where they end.
    One-byte varints inline, as in the record loops (tracing headers ride on every record)."""
    zz = ZIGZAG
    b = data[pos]
    if b < 0x80:
        nh = zz[b]
        pos += 1
    else:
        nh, pos = read_varint(data, pos)
    if nh < 0 or nh > end - pos:
        raise Malformed("header count")
    pairs = []
    for _ in range(nh):
        b = data[pos]
        if b < 0x80:
            hk = zz[b]
            pos += 1
        else:
            hk, pos = read_varint(data, pos)
        if hk < 0 or pos + hk > end:
            raise Malformed("header key")
        key = data[pos : pos + hk]
        pos += hk
        b = data[pos]
        if b < 0x80:
            hv = zz[b]
            pos += 1
        else:
            hv, pos = read_varint(data, pos)
        if hv >= 0:
            if pos + hv > end:
                raise Malformed("header value")
            pairs.append((key, data[pos : pos + hv]))
            pos += hv
        else:
            pairs.append((key, None))
    return pairs, pos


def _headers_text(pairs: list[tuple[bytes, bytes | None]], layout: JsonLayout) -> bytes:
    """A record's list of headers as JSON text, header by header (keys as Java decodes them)."""
    items = []
    for key, value in pairs:
        k = layout.quote(java_utf8(key))
        items.append(layout.null_header % k if value is None else layout.header % (k, layout.strings([value])[0]))
    return layout.open + layout.sep.join(items) + layout.close


# ------------------------------------------------------------------ record columns (Arrow)
@dataclass(slots=True)
class RecordColumns:
    """Records cut into columns, for Arrow arrays built a column at a time (spark/arrow.py): the
    numbers in machine arrays (Arrow takes their buffers as they are). Positions index the
    concatenation of `data`; a null key or value has an empty span."""

    rows: int = 0
    data: list = field(default_factory=list)          # bytes holding the payloads, in order
    size: int = 0                                      # their total length
    payload: int = 0    # bytes of keys, values, header keys and values (the same on every path)
    offsets: array = field(default_factory=lambda: array("q"))
    timestamps: array = field(default_factory=lambda: array("q"))
    sequences: array = field(default_factory=lambda: array("i"))
    spans: array = field(default_factory=lambda: array("i"))         # per record: key start, end,
    null_keys: list = field(default_factory=list)      # rows          value start, end
    null_values: list = field(default_factory=list)
    header_ends: array = field(default_factory=lambda: array("i"))   # per record: headers so far
    header_spans: array = field(default_factory=lambda: array("i"))  # per header: the same
    null_header_values: list = field(default_factory=list)   # headers, counted from the first

    def add_record(self, offset: int, timestamp: int, sequence: int, key, value, headers) -> None:
        """One record by its values (`headers`: (key bytes, value) pairs): the general path's."""
        row = self.rows
        self.offsets.append(offset)
        self.timestamps.append(timestamp)
        self.sequences.append(sequence)
        for payload, nulls in ((key, self.null_keys), (value, self.null_values)):
            self.spans.extend(self._put(payload))
            if payload is None:
                nulls.append(row)
        for hkey, hvalue in headers:
            if hvalue is None:
                self.null_header_values.append(len(self.header_spans) // 4)
            self.header_spans.extend(self._put(hkey) + self._put(hvalue))
        self.header_ends.append(len(self.header_spans) // 4)
        self.rows = row + 1

    def _put(self, payload) -> tuple[int, int]:
        start = self.size
        if payload:
            self.data.append(payload)
            self.size += len(payload)
            self.payload += len(payload)
        return start, self.size


def scan_columns(batch: RecordBatch, cols: RecordColumns) -> None:
    """Append the records of a v2 non-control batch to `cols`, cut from the batch's bytes (no
    Record objects): a few array appends per record, the rest per batch. Raises as
    `fast_v2_text` does on anything the general path must judge, and then leaves `cols` as it
    was."""
    count = batch.records_count
    if count < 0:
        raise Malformed("negative count")
    data, pos, end = records_region(batch)
    if pos or end != len(data) or type(data) is not bytes:
        data = bytes(memoryview(data)[pos:end])
        pos, end = 0, len(data)
    shift = cols.size
    row0 = cols.rows
    base = batch.base_offset_field
    base_ts = batch.base_timestamp
    # lists, not arrays, while scanning: an array converts each item through PyArg_Parse, which
    # costs more than struct's conversion of them all at the end
    offsets, timestamps, spans, ends, hspans = [], [], [], [], []
    null_keys, null_values, null_hvalues = [], [], []
    oappend, tappend, sextend, eappend, hextend = offsets.append, timestamps.append, spans.extend, ends.append, hspans.extend
    nheaders = headers = len(cols.header_spans) // 4      # before this batch's; so far
    rvarint = read_varint
    rvarlong = read_varlong
    zz = ZIGZAG
    zz2 = ZIGZAG2
    for i in range(count):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                length = zz2[c][b]
                pos += 2
            else:
                length, pos = rvarint(data, pos)
        body = pos
        b = data[pos + 1]
        if b < 0x80:
            tappend(base_ts + zz[b])
            pos += 2
        else:
            c = data[pos + 2]
            if c < 0x80:
                tappend(base_ts + zz2[c][b])
                pos += 3
            else:
                td, pos = rvarlong(data, pos + 1)
                tappend(base_ts + td)
        b = data[pos]
        if b < 0x80:
            oappend(base + zz[b])
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                oappend(base + zz2[c][b])
                pos += 2
            else:
                od, pos = rvarint(data, pos)
                oappend(base + od)
        b = data[pos]
        if b < 0x80:
            ks = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                ks = zz2[c][b]
                pos += 2
            else:
                ks, pos = rvarint(data, pos)
        key = pos
        if ks >= 0:
            pos += ks
        else:
            null_keys.append(row0 + i)
        key_end = pos
        b = data[pos]
        if b < 0x80:
            vs = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                vs = zz2[c][b]
                pos += 2
            else:
                vs, pos = rvarint(data, pos)
        value = pos
        if vs >= 0:
            pos += vs
        else:
            null_values.append(row0 + i)
        sextend((key + shift, key_end + shift, value + shift, pos + shift))
        b = data[pos]
        if b == 0:           # no headers
            pos += 1
        elif b == 2 and data[pos + 1] < 0x80 and not data[pos + 1] & 1:
            # one header with a key shorter than 64 bytes, the usual case, inline (a call costs
            # as much as the rest of the record); anything odd ends in Malformed below
            key = pos + 2
            key_end = pos = key + (data[pos + 1] >> 1)
            b = data[pos]
            if b < 0x80:
                hv = zz[b]
                pos += 1
            else:
                hv, pos = rvarint(data, pos)
            value = pos
            if hv >= 0:
                pos += hv
            else:
                null_hvalues.append(headers)
            hextend((key + shift, key_end + shift, value + shift, pos + shift))
            headers += 1
        else:
            n, pos = _header_spans(data, pos, end, shift, hspans, null_hvalues, nheaders)
            headers += n
        eappend(headers)
        if pos - body != length or pos > end:
            raise Malformed("record size")
    if pos != end:
        raise Malformed("bytes remain")
    if batch.attributes & 0x08:      # LogAppendTime: every record has the batch's max timestamp
        timestamps = [batch.max_timestamp] * count
    if batch.base_sequence < 0:
        cols.sequences += array("i", [NO_SEQUENCE]) * count
    else:
        cols.sequences.frombytes(_packed("i", _sequences(batch.base_sequence, batch.base_offset_field, offsets)))
    cols.rows += count
    cols.data.append(data)
    cols.size += len(data)
    cols.payload += (sum(spans[1::2]) - sum(spans[0::2])) + (sum(hspans[1::2]) - sum(hspans[0::2]))
    cols.offsets.frombytes(_packed("q", offsets))
    cols.timestamps.frombytes(_packed("q", timestamps))
    cols.spans.frombytes(_packed("i", spans))
    cols.null_keys += null_keys
    cols.null_values += null_values
    cols.header_ends.frombytes(_packed("i", ends))
    cols.header_spans.frombytes(_packed("i", hspans))
    cols.null_header_values += null_hvalues


def _packed(code: str, items: list) -> bytes:
    """Ints as the machine array of type `code` holds them."""
    return pack(f"={len(items)}{code}", *items)


def _header_spans(data: bytes, pos: int, end: int, shift: int, spans: list, nulls: list,
                  first: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        nh = ZIGZAG[b]
        pos += 1
    else:
        nh, pos = read_varint(data, pos)
    if nh < 0 or nh > end - pos:
        raise Malformed("header count")
    for _ in range(nh):
        b = data[pos]
        if b < 0x80:
            hk = ZIGZAG[b]
            pos += 1
        else:
            hk, pos = read_varint(data, pos)
        if hk < 0 or pos + hk > end:
            raise Malformed("header key")
        k = pos + shift
        pos += hk
        b = data[pos]
        if b < 0x80:
            hv = ZIGZAG[b]
            pos += 1
        else:
            hv, pos = read_varint(data, pos)
        v = pos + shift
        if hv >= 0:
            if pos + hv > end:
                raise Malformed("header value")
            pos += hv
        else:
            nulls.append(first + len(spans) // 4)
        spans.append(k)
        spans.append(k + hk)
        spans.append(v)
        spans.append(pos + shift)
    return nh, pos


# ------------------------------------------------------------------ keys and spans
def scan_keys(data, pos: int, end: int, count: int, base_offset: int, keys: list, offsets: list) -> None:
    """Append (key, offset) of every keyed record to `keys`/`offsets`. Varints of one and two
    bytes are decoded inline: a Python call costs more than the rest of a record."""
    kappend, oappend = keys.append, offsets.append
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                nxt = pos + 1 + ((b >> 1) ^ -(b & 1))
                p = pos + 2
            else:
                length, p = read_varlong(data, pos)
                nxt = p + length
                p += 1
            while data[p] > 0x7F:               # timestampDelta: skipped
                p += 1
            b = data[p + 1]                     # offsetDelta
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                b2 = data[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    od = (v >> 1) ^ -(v & 1)
                    p += 3
                else:
                    od, p = read_varlong(data, p + 1)
            b = data[p]                         # keyLength
            if b < 0x80:
                if not b & 1:                   # odd: a negative length, no key (keySize < 0)
                    kl = b >> 1
                    p += 1
                    if p + kl > nxt:
                        raise Malformed()
                    kappend(data[p:p + kl])
                    oappend(base_offset + od)
            else:
                kl, p = read_varlong(data, p)
                if kl >= 0:
                    if p + kl > nxt:
                        raise Malformed()
                    kappend(data[p:p + kl])
                    oappend(base_offset + od)
            pos = nxt
    except IndexError:
        raise Malformed() from None
    if pos != end:
        raise Malformed()


def scan_keys_into(data, pos: int, end: int, count: int, base_offset: int, d: dict,
                   start_offset: int) -> tuple[int, int]:
    """The map pass's loop when the offset map is a dict with room for `count` more keys:
    `d[key] = offset` for every keyed record at or after `start_offset`, in order (later offsets
    win, as SkimpyOffsetMap.put). Returns (records stored, length of the last key). The record
    length's varint, two bytes for records of 64 to 8191 bytes, is decoded inline as well."""
    kl = -1
    n = 0
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                nxt = pos + 1 + ((b >> 1) ^ -(b & 1))
                p = pos + 2
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    nxt = pos + 2 + ((v >> 1) ^ -(v & 1))
                    p = pos + 3
                else:
                    length, p = read_varlong(data, pos)
                    nxt = p + length
                    p += 1
            while data[p] > 0x7F:               # timestampDelta: skipped
                p += 1
            b = data[p + 1]                     # offsetDelta
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                b2 = data[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    od = (v >> 1) ^ -(v & 1)
                    p += 3
                else:
                    od, p = read_varlong(data, p + 1)
            b = data[p]                         # keyLength
            if b < 0x80:
                if not b & 1:                   # odd: a negative length, no key (keySize < 0)
                    kl = b >> 1
                    p += 1
                    if p + kl > nxt:
                        raise Malformed()
                    o = base_offset + od
                    if o >= start_offset:
                        d[data[p:p + kl]] = o
                        n += 1
            else:
                k, p = read_varlong(data, p)
                if k >= 0:
                    kl = k
                    if p + kl > nxt:
                        raise Malformed()
                    o = base_offset + od
                    if o >= start_offset:
                        d[data[p:p + kl]] = o
                        n += 1
            pos = nxt
    except IndexError:
        raise Malformed() from None
    if pos != end:
        raise Malformed()
    return n, kl


@dataclass(slots=True)
class RecordSpan:
    """One record of a v2 batch, enough to decide its fate and to copy it."""

    offset: int
    timestamp: int
    key: bytes | None
    has_value: bool
    rest_start: int      # start of offsetDelta: the bytes kept verbatim when rewriting
    end: int


def scan_spans(data, pos: int, end: int, count: int, base_offset: int, base_ts: int) -> list[RecordSpan]:
    out = []
    append = out.append
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                v = (b & 0x7F) | (data[pos + 1] << 7)
                length = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                length, pos = read_varlong(data, pos)
            nxt = pos + length
            b = data[pos + 1]
            if b < 0x80:
                ts = (b >> 1) ^ -(b & 1)
                p = pos + 2
            elif data[pos + 2] < 0x80:
                v = (b & 0x7F) | (data[pos + 2] << 7)
                ts = (v >> 1) ^ -(v & 1)
                p = pos + 3
            else:
                ts, p = read_varlong(data, pos + 1)
            rest = p
            b = data[p]
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                od, p = read_varlong(data, p)
            b = data[p]
            if b < 0x80:
                kl = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                kl, p = read_varlong(data, p)
            key = None
            if kl >= 0:
                key = bytes(data[p : p + kl])
                p += kl
            b = data[p]
            vl = (b >> 1) ^ -(b & 1) if b < 0x80 else read_varlong(data, p)[0]
            if p > nxt:
                raise Malformed()
            append(RecordSpan(base_offset + od, base_ts + ts, key, vl >= 0, rest, nxt))
            pos = nxt
    except IndexError:
        raise Malformed() from None
    if pos != end:
        raise Malformed()
    return out


def record_starts(data, pos: int, end: int, upto: int) -> list[int]:
    """Start positions of records 0..upto (only their length varints are read)."""
    out = []
    append = out.append
    try:
        for _ in range(upto + 1):
            append(pos)
            b = data[pos]
            if b < 0x80:
                pos += 1 + ((b >> 1) ^ -(b & 1))
            elif data[pos + 1] < 0x80:
                v = (b & 0x7F) | (data[pos + 1] << 7)
                pos += 2 + ((v >> 1) ^ -(v & 1))
            else:
                length, p = read_varlong(data, pos)
                pos = p + length
            if pos > end:
                raise Malformed()
    except IndexError:
        raise Malformed() from None
    return out


def span_at(data, pos: int, base_offset: int, base_ts: int) -> RecordSpan:
    """The one record starting at `pos`."""
    try:
        return scan_spans(data, pos, _record_end(data, pos), 1, base_offset, base_ts)[0]
    except IndexError:
        raise Malformed() from None


def _record_end(data, pos: int) -> int:
    b = data[pos]
    if b < 0x80:
        return pos + 1 + ((b >> 1) ^ -(b & 1))
    if data[pos + 1] < 0x80:
        v = (b & 0x7F) | (data[pos + 1] << 7)
        return pos + 2 + ((v >> 1) ^ -(v & 1))
    length, p = read_varlong(data, pos)
    return p + length


# ------------------------------------------------------------------ records checks (verify-crc --deep)
def deep_findings(buf, pos: int, total: int, magic: int, file: str | None, base: int, last: int,
                  findings: list[Finding]) -> None:
    """What is wrong with the records of the batch buf[pos:pos+total) (offsets base..last),
    appended to `findings`."""
    if magic == 2:
        _deep_v2(buf, pos, total, file, base, last, findings)
    else:
        _deep_legacy(buf, pos, total, magic, file, base, findings)


def _deep_v2(buf, pos, total, file, base, last, findings) -> None:
    b = RecordBatch(buf, pos, total, 2)
    try:
        if v2_records_ok(b):
            return
    except Exception:   # the reference decoder below says what is wrong
        pass
    try:
        recs = b.records()
    except KafkalogError as e:
        findings.append(Finding(file, pos, RECORDS, f"records do not decode: {e.message}", base, last))
        return
    except Exception as e:  # a decompressor's own error type
        findings.append(Finding(file, pos, RECORDS, f"records do not decode: {type(e).__name__}: {e}", base, last))
        return
    if len(recs) != b.records_count:
        findings.append(Finding(file, pos, RECORDS, f"header says {b.records_count} records, "
                                f"{len(recs)} decoded", base, last))
    prev = None
    for r in recs:
        if r.offset < base or r.offset > last or (prev is not None and r.offset <= prev):
            findings.append(Finding(file, pos, OFFSETS, f"record offset {r.offset} is outside the batch's range "
                                    f"or not increasing", base, last))
            break
        prev = r.offset


def v2_records_ok(batch: RecordBatch) -> bool:
    """Whether the records of a v2 batch decode, as `records()` would, with offsets increasing
    within the batch's range: verify-crc --deep's question, answered without Record objects.
    False (or a raised error) means: ask the reference decoder."""
    count = batch.records_count
    if count < 0:
        return False
    data, pos, end = records_region(batch)
    last_delta = batch.last_offset_delta
    prev = -1
    rvarint = read_varint
    rvarlong = read_varlong
    zz = ZIGZAG
    zz2 = ZIGZAG2
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                length = zz2[c][b]
                pos += 2
            else:
                length, pos = rvarint(data, pos)
        body = pos
        b = data[pos + 1]                     # after the attributes: timestampDelta
        if b < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            pos += 3
        else:
            pos = rvarlong(data, pos + 1)[1]
        b = data[pos]
        if b < 0x80:
            od = zz[b]
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                od = zz2[c][b]
                pos += 2
            else:
                od, pos = rvarint(data, pos)
        if od <= prev:
            return False
        prev = od
        b = data[pos]
        if b < 0x80:
            if b & 1:                         # a negative size: no key
                pos += 1
            else:
                pos += 1 + (b >> 1)
        else:
            c = data[pos + 1]
            if c < 0x80:
                ks = zz2[c][b]
                pos += 2
            else:
                ks, pos = rvarint(data, pos)
            if ks > 0:
                pos += ks
        b = data[pos]
        if b < 0x80:
            if b & 1:
                pos += 1
            else:
                pos += 1 + (b >> 1)
        else:
            c = data[pos + 1]
            if c < 0x80:
                vs = zz2[c][b]
                pos += 2
            else:
                vs, pos = rvarint(data, pos)
            if vs > 0:
                pos += vs
        if data[pos] == 0:                    # no headers
            pos += 1
        else:
            pos = _header_keys(data, pos, end)[1]
        if pos - body != length or pos > end:
            return False
    return pos == end and prev <= last_delta


def _deep_legacy(buf, pos, total, magic, file, base, findings) -> None:
    b = RecordBatch(buf, pos, total, magic)
    if b.compression_id == 0:
        return
    try:
        recs = b.records()
    except KafkalogError as e:
        findings.append(Finding(file, pos, RECORDS, f"compressed message set does not decode: {e.message}",
                                base, base))
        return
    except Exception as e:
        findings.append(Finding(file, pos, RECORDS, f"compressed message set does not decode: "
                                f"{type(e).__name__}: {e}", base, base))
        return
    prev = None
    for r in recs:
        if not r.valid:
            findings.append(Finding(file, pos, INNER_CRC, f"inner message at offset {r.offset} fails its "
                                    "CRC-32", r.offset, None, r.crc, None))
        if prev is not None and r.offset <= prev:
            findings.append(Finding(file, pos, OFFSETS, f"inner offsets do not increase ({prev} then {r.offset})",
                                    r.offset, None))
        prev = r.offset


# ------------------------------------------------------------------ record search
import re  # noqa: E402
from kafkalog_cli.formats.records import Header, Record  # noqa: E402  (what a search's matches are)

# Pattern text that makes a regex's match depend on what lies around the bytes it is given
# (anchors, word boundaries, lookarounds) or on how far a run may extend (possessive and atomic
# matching): such a regex may match a key or value alone and not the batch's bytes, so it cannot
# rule out a batch. Any occurrence counts, even escaped: being conservative only costs speed.
_CONTEXT_SENSITIVE = (b"^", b"$", b"\\b", b"\\B", b"\\A", b"\\Z", b"(?=", b"(?!", b"(?<", b"(?>",
                      b"*+", b"++", b"?+", b"}+")


def _context_free(pattern: "re.Pattern[bytes]") -> bool:
    return not any(t in pattern.pattern for t in _CONTEXT_SENSITIVE)


@dataclass(frozen=True)
class RecordSearch:
    """dump-log's search: the tests a record's key and value must all pass (a null key or value
    passes none of its own). `key`: exactly these bytes; `key_prefix`: starting with them;
    `key_regex`, `value_regex`: re.search finds a match in them."""

    key: bytes | None = None
    key_prefix: bytes | None = None
    key_regex: "re.Pattern[bytes] | None" = None
    value_regex: "re.Pattern[bytes] | None" = None

    def rules_out(self, data: bytes, pos: int, end: int) -> bool:
        """Whether no record in data[pos:end) can match, by a look at all the bytes at once (C
        speed): a record's key and value are somewhere in them, so a literal absent from the whole
        is absent from each, and so is a match of a context-free regex."""
        for literal in (self.key, self.key_prefix):
            if literal and data.find(literal, pos, end) < 0:
                return True
        for regex in (self.key_regex, self.value_regex):
            if regex is not None and _context_free(regex) and regex.search(data, pos, end) is None:
                return True
        return False


def search_v2(batch: RecordBatch, search: RecordSearch, indices: list[int] | None = None) -> list[Record]:
    """The records of a v2 batch that pass `search`, as RecordBatch.records() decodes them; the
    others are walked (every size checked as the reference decoder checks it) but never built.
    `indices` receives each found record's place in the batch (0 for its first record).
    A batch the whole of whose bytes `rules_out` every match gives [] without a walk when its CRC
    holds (the broker validated its records when it appended it); a damaged one is walked, so
    its damage is found as the reference decoder finds it. Raises as `fast_v2_text` does on
    anything the general path must judge."""
    if batch.records_count < 0:
        raise Malformed("negative count")
    data, pos, end = records_region(batch)
    if type(data) is not bytes:     # an mmap: the records copied once, for find() and startswith()
        data, pos, end = bytes(memoryview(data)[pos:end]), 0, end - pos
    count = batch.records_count
    if search.rules_out(data, pos, end) and batch.is_valid():
        return []
    kexact, kprefix, kregex, vregex = search.key, search.key_prefix, search.key_regex, search.value_regex
    keyed = kexact is not None or kprefix is not None or kregex is not None
    klen = -1 if kexact is None else len(kexact)
    plen = 0 if kprefix is None else len(kprefix)
    base = batch.base_offset_field
    base_ts = batch.base_timestamp
    log_append = batch.max_timestamp if batch.attributes & 0x08 else None
    base_seq = batch.base_sequence
    rvarint, rvarlong, zz, zz2 = read_varint, read_varlong, ZIGZAG, ZIGZAG2
    out = []
    try:
        for i in range(count):
            # varints of one and two bytes inline, one expression a field (c: the second byte):
            # record lengths, timestamp deltas and value sizes often take two
            b, c = data[pos], data[pos + 1]
            length, pos = ((zz[b], pos + 1) if b < 0x80 else (zz2[c][b], pos + 2) if c < 0x80
                           else rvarint(data, pos))
            body = pos
            b, c = data[pos + 1], data[pos + 2]
            td, pos = ((zz[b], pos + 2) if b < 0x80 else (zz2[c][b], pos + 3) if c < 0x80
                       else rvarlong(data, pos + 1))
            b = data[pos]                   # offset delta and key size: one byte, but rarely
            od, pos = (zz[b], pos + 1) if b < 0x80 else rvarint(data, pos)
            b = data[pos]
            ks, pos = (zz[b], pos + 1) if b < 0x80 else rvarint(data, pos)
            kpos = pos
            if ks >= 0:
                pos += ks
                hit = ks >= plen and (kexact is None or ks == klen) and (
                    (kexact is None or data.startswith(kexact, kpos))
                    and (kprefix is None or data.startswith(kprefix, kpos))
                    and (kregex is None or kregex.search(data[kpos:pos]) is not None))
            else:
                hit = not keyed
            b, c = data[pos], data[pos + 1]
            vs, pos = ((zz[b], pos + 1) if b < 0x80 else (zz2[c][b], pos + 2) if c < 0x80
                       else rvarint(data, pos))
            vpos = pos
            if vs >= 0:
                pos += vs
                if hit and vregex is not None:
                    hit = vregex.search(data[vpos:pos]) is not None
            elif vregex is not None:
                hit = False
            hpos = pos
            if data[pos] == 0:   # no headers
                pos += 1
            else:
                pos = _header_keys(data, pos, end)[1]
            if pos - body != length or pos > end:
                raise Malformed("record size")
            if hit:
                out.append(Record(
                    base + od, log_append if log_append is not None else base_ts + td,
                    data[kpos:kpos + ks] if ks >= 0 else None, data[vpos:vpos + vs] if vs >= 0 else None,
                    _headers_at(data, hpos), increment_sequence(base_seq, od) if base_seq >= 0 else NO_SEQUENCE,
                    data[body], 2, None, True, -1 if ks < 0 else ks, -1 if vs < 0 else vs))
                if indices is not None:
                    indices.append(i)
    except IndexError:
        raise Malformed("short record") from None
    if pos != end:
        raise Malformed("bytes remain")
    return out


def _headers_at(data: bytes, pos: int) -> tuple[Header, ...]:
    """The headers of a record already walked (their sizes hold), as the reference builds them."""
    pairs, _ = _header_pairs(data, pos, len(data))
    return tuple([Header(java_utf8(key), value) for key, value in pairs])


# ------------------------------------------------------------------ the compiled core
# formats/_cscan.pyx compiles the hot scanners above; formats/core.py says whether it is used (it
# is built, and KAFKALOG_PURE_PYTHON is not set). The pure ones stay here, in PURE: the
# reference the compiled ones are tested against, and what they hand anything unusual to.
COMPILED = ("fast_v2_text", "fast_v2_json", "v2_records_ok", "scan_columns", "search_v2")
PURE = {name: globals()[name] for name in COMPILED}
CORE = "pure"
# The compiled core's only function without a pure twin here: the whole loop of an unfiltered
# dump-log --deep-iteration over runs of v2 data batches, batch lines included (its pure twin is
# that loop, in render/kafka.py, which the tests compare it with). None on the pure core.
kafka_text_run = None
json_run = None     # the same for dump-log --format json: its pure twin is render/jsonl.py's loop
gather_spans = None  # a binary Arrow column's buffers from RecordColumns' spans: spark/arrow.py's take
columns_run = None   # spark/arrow.py's selection and _RecordRows.add over runs of v2 data batches
spread = None        # a batch's values one a record: spark/arrow.py's take

from kafkalog_cli.formats.core import compiled_scan  # noqa: E402  (after PURE, which _cscan reads)


def install_compiled() -> None:
    """Use the compiled scanners, when formats/core.py says so (see CORE)."""
    global fast_v2_text, fast_v2_json, v2_records_ok, scan_columns, search_v2, kafka_text_run, json_run, CORE
    global gather_spans, columns_run, spread
    compiled = compiled_scan()
    if compiled is None or not hasattr(compiled, "kafka_text_run"):   # none, or half-built: it calls again
        return
    fast_v2_text = compiled.fast_v2_text
    fast_v2_json = compiled.fast_v2_json
    v2_records_ok = compiled.v2_records_ok
    scan_columns = compiled.scan_columns
    search_v2 = compiled.search_v2
    kafka_text_run = compiled.kafka_text_run
    json_run = compiled.json_run
    gather_spans = compiled.gather_spans
    columns_run = compiled.columns_run
    spread = compiled.spread
    CORE = "compiled"


install_compiled()
