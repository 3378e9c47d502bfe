"""The record scanners, pure: the twin of formats/_scan.pyx (the same public names in the same
order; formats/byte_loops.py picks one). Each is the reference decoder (records.py:
`RecordBatch.records()`, `iter_batches`) cut down to what one hot loop needs, over bytes:

- record text: `batch_text`, the record lines of dump-log --deep-iteration / --print-data-log
  decoded straight into kafka-dump-log's text (no Record objects); `text_of_batches`, the lines
  (batch line, then its records') of a run of v2 data batches;
- record JSON: `batch_json`, the record lines of dump-log --format json, in the layout
  render/jsonl.py hands over (`JsonLayout`); `lines_of_batches`, the same for a run of batches;
- records checks: `v2_records_ok`, verify-crc --deep's walk over a v2 batch's records;
- record columns: `scan_columns`, the records of a batch as columns (`RecordColumns`), for the
  Arrow rows of the Spark data source and export; `columns_of_batches`, a run of batches;
- search: `search_v2`, the records of a batch that pass dump-log's search;
- Arrow buffers: `gather_spans`, `take_fixed_width`.

Varints of one and two bytes are decoded inline (a Python call costs more than the rest of a
record); longer ones go through varint.py. On anything unusual a record scanner raises
`Declined` (or lets a decoder's error through) and its caller decodes the batch with the
reference decoder, whose error names the file and byte position as Kafka's reader would; a run
over batches stops before a batch it does not take and its caller's loop writes that one. The
property tests in tests/formats/test_scan.py hold every scanner equal to the reference, and
tests/formats/test_core.py the compiled twin equal to this one.

The record-text scanner writes Kafka's text itself rather than handing values to render/: a
tuple per record and a second loop over them to format it measured about 8% slower on dump-log's
hottest loop (100-record batches), more than the 5% its benchmark allows. The JSON and column
scanners go the other way: their loop only cuts records into columns, and each column becomes
JSON text or an Arrow array in a few calls per batch (JSON escaping and Arrow arrays cost a call
per value otherwise).
"""

from __future__ import annotations

import operator
import struct
from array import array
from itertools import accumulate
from struct import pack
from typing import TYPE_CHECKING

from kafkalog_cli.formats.compression import decompress
from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.json_layout import (
    DEL,
    HEADERS_SLOT,
    KEYS_WHOLE,
    SEQUENCE_SLOT,
    VALUES_WHOLE,
    JsonLayout,
)
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.record_columns import RecordColumns
from kafkalog_cli.formats.record_search import RecordSearch
from kafkalog_cli.formats.records import (
    INT32_MAX,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    Record,
    RecordBatch,
    increment_sequence,
)
from kafkalog_cli.formats.v2_region import Declined, header_pairs, headers_at, records_region
from kafkalog_cli.formats.varint import ZIGZAG, ZIGZAG2, read_varint, read_varlong

if TYPE_CHECKING:
    from typing import Any, Literal


def batch_text(
    batch: RecordBatch, last: int, pairs: list, metadata: bool, data_log: bool
) -> tuple[str, int]:
    """The record lines of a v2 non-control batch, decoded straight into text (no Record
    objects), exactly as `KafkaDumper._records` writes them with the StringDecoder parser.

    `pairs` receives the non-consecutive (previous, offset) pairs in file order. Raises on
    anything the general path must judge (Declined for sizes that do not add up, IndexError for
    a short buffer, the decoders' errors for a bad varint or payload): the caller then renders
    the batch through the general path, which reports it as Kafka does."""
    count = batch.records_count
    if count < 0:
        raise Declined("negative count")
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
    lines: list[str] = []
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
        if data[pos] == 0:  # no headers
            pos += 1
            hkeys = None
        else:
            hkeys, pos = _header_keys(data, pos, end)
        if pos - body != length or pos > end:
            raise Declined("record size")
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
                        append(
                            f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail} payload: {v}\n"
                        )
                else:
                    try:
                        k = key.decode()
                    except UnicodeDecodeError:
                        k = jutf8(key)
                    if value is None:
                        append(
                            f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail} key: {k}\n"
                        )
                    else:
                        try:
                            v = value.decode()
                        except UnicodeDecodeError:
                            v = jutf8(value)
                        append(
                            f"{head}{off}{mid}{ts} keySize: {ks} valueSize: {vs}{tail} key: {k} payload: {v}\n"
                        )
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
        raise Declined("bytes remain")
    return "".join(lines), last


# a v2 batch's header, Kafka's DefaultRecordBatch layout: base offset, size, partition leader
# epoch, magic, CRC, attributes, last offset delta, base and max timestamps, producer id and
# epoch, base sequence, record count
_V2_HEAD = struct.Struct(">qiibIhiqqqhii")
_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
_INT64_MAX = (1 << 63) - 1


def _data_batch(buf, pos: int, end: int) -> list[int] | None:
    """The header fields of the v2 data batch at buf[pos] (attributes as a signed byte), or None:
    the runs leave this batch to their caller's loop (legacy, control, short or incomplete
    batches, an unknown codec, a negative count, a last offset past 64 bits)."""
    if pos + 17 > end:
        return None
    size = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True)
    if (
        size < 14
        or pos > end - 12 - size
        or buf[pos + 16] != 2
        or size + 12 < RECORD_BATCH_OVERHEAD
    ):
        return None
    head = list(_V2_HEAD.unpack_from(buf, pos))
    attributes = head[5] & 0xFF
    if attributes >= 0x80:
        attributes -= 0x100
    head[5] = attributes
    if (
        attributes & 0x20
        or (attributes & 0x07) > 4
        or head[12] < 0
        or head[0] + head[6] > _INT64_MAX
    ):
        return None
    return head


def _last_sequence(base_seq: int, lod: int) -> int:
    """RecordBatch.last_sequence."""
    if base_seq == -1:
        return -1
    if base_seq > INT32_MAX - lod:
        return lod - (INT32_MAX - base_seq) - 1
    return base_seq + lod


def text_of_batches(
    buf,
    pos: int,
    end: int,
    last: int,
    pairs: list,
    metadata: bool,
    data_log: bool,
    limit: int,
    records: bool = True,
) -> tuple[bytes, int, int]:
    """kafka-dump-log's lines (batch line, then its record lines) of the v2 data batches from
    buf[pos:end), as render/kafka.py's loop writes them with the StringDecoder parser, until
    about `limit` bytes are written or a batch this does not render: legacy, control, short or
    incomplete batches, an unknown codec, records the record text scanner gives up on. ->
    (UTF-8 text, the position of that batch (or where the walk ended), the last record offset);
    `pairs` gets the non-consecutive (previous, offset) pairs in file order. The caller's own
    loop goes on from the position returned. Not `records`: the batch lines only (dump-log
    without --deep-iteration), the records neither walked nor decompressed."""
    end = min(end, len(buf))
    out: list[bytes] = []
    size = 0
    found: list = []
    mv = memoryview(buf)
    while pos + 17 < end and size < limit:
        head = _data_batch(buf, pos, end)
        if head is None:
            break
        base, total, ple, _, crc, attributes, lod, base_ts, max_ts, pid, epoch, base_seq, count = (
            head
        )
        total += 12
        text = b""
        if records:
            local: list = []
            try:
                lines, last_after = batch_text(
                    RecordBatch(buf, pos, total, 2), last, local, metadata, data_log
                )
            except Exception:  # the caller's loop: the reference decoder says what is wrong
                break
            text = lines.encode("utf-8", "surrogatepass")
            found += local
            last = last_after
        valid = crc32c(mv[pos + 21 : pos + total]) == crc
        horizon = f"OptionalLong[{base_ts}]" if attributes & 0x40 else "OptionalLong.empty"
        line = (
            f"baseOffset: {base} lastOffset: {base + lod} count: {count} baseSequence: {base_seq} "
            f"lastSequence: {_last_sequence(base_seq, lod)} producerId: {pid} producerEpoch: {epoch} "
            f"partitionLeaderEpoch: {ple} isTransactional: {'true' if attributes & 0x10 else 'false'} "
            f"isControl: false deleteHorizonMs: {horizon} position: {pos} "
            f"{'LogAppendTime' if attributes & 0x08 else 'CreateTime'}: {max_ts} size: {total} magic: 2 "
            f"compresscodec: {_CODEC_NAMES[attributes & 0x07]} crc: {crc} "
            f"isvalid: {'true' if valid else 'false'}\n"
        ).encode()
        out.append(line)
        out.append(text)
        size += len(line) + len(text)
        pos += total
    if found:
        pairs += found
    return b"".join(out), pos, last


def _header_keys(data: bytes, pos: int, end: int) -> tuple[str, int]:
    """A record's header keys as kafka-dump-log lists them, and where its headers end."""
    pairs, pos = header_pairs(data, pos, end)
    return ",".join([java_utf8(key) for key, _ in pairs]), pos


def batch_json(batch: RecordBatch, layout: JsonLayout) -> bytes:
    """The record lines of a v2 non-control batch as UTF-8 JSON text in `layout`, joined by
    newlines, decoded straight from the batch's bytes (no Record objects). Raises as
    `batch_text` does on anything the general path must judge.

    The loop only cuts the records into columns; the columns then become text in a few calls
    for the whole batch: without null payloads, every key and value escaped at once and laid
    into the lines by two %-passes (`_joined_lines`); otherwise the payloads through
    `layout.strings` and the lines through one %-format. A Python call per record and field
    would cost more than all the rest."""
    return _record_lines(batch, layout, layout.line, False)


def _record_lines(batch: RecordBatch, layout: JsonLayout, line_of, base_slot: bool) -> bytes:
    """batch_json's lines, each in the %-format line_of(batch, variant) gives; `base_slot`: that
    format's last slot is the batch's base offset (lines_of_batches' record formats)."""
    count = batch.records_count
    if count < 0:
        raise Declined("negative count")
    data, pos, end = records_region(batch)
    if type(data) is not bytes:
        data = bytes(memoryview(data)[pos:end])
        pos, end = 0, len(data)
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[Any] = []  # bytes, or None where null (knulls and vnulls count them)
    values: list[Any] = []
    headers: list[tuple[int, list[tuple[bytes, bytes | None]]]] = []
    oappend, tappend, kappend, vappend = (
        offsets.append,
        timestamps.append,
        keys.append,
        values.append,
    )
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
        if rec[p] == 0:  # no headers
            p += 1
        else:
            pairs, p = header_pairs(rec, p, len(rec))
            headers.append((i, pairs))
        if p != length:  # (a record cut short by the batch's end: pos passes end below)
            raise Declined("record size")
    if pos != end:
        raise Declined("bytes remain")
    if not count:
        return b""
    if batch.attributes & 0x08:  # LogAppendTime: every record has the batch's max timestamp
        timestamps = [batch.max_timestamp] * count
    seqs = _sequences(batch.base_sequence, base, offsets) if batch.base_sequence >= 0 else None
    variant = (KEYS_WHOLE if knulls else 0) | (VALUES_WHOLE if vnulls else 0)
    if headers:
        variant |= HEADERS_SLOT
    more = []  # the slots after the payloads and headers
    if seqs is not None:
        variant |= SEQUENCE_SLOT
        more.append(seqs)
    if base_slot:
        more.append([base] * count)
    line = line_of(batch, variant)
    if not line:
        raise Declined("no layout for this batch")
    if not (knulls or vnulls) and layout.escaped is not None:
        text = _joined_lines(line, keys, values, headers, [offsets, timestamps, *more], layout)
        if text is not None:
            return text
    columns: list[list]
    if knulls or vnulls:
        columns = [
            offsets,
            timestamps,
            _json_payloads(keys, knulls, layout),
            _json_payloads(values, vnulls, layout),
        ]
    else:  # both columns escaped in one go (a few calls per batch fewer)
        texts = layout.strings(keys + values)
        columns = [offsets, timestamps, texts[:count], texts[count:]]
    if headers:
        hcol = [layout.no_headers] * count
        for i, pairs in headers:
            hcol[i] = _headers_text(pairs, layout)
        columns.append(hcol)
    return b"\n".join([line] * count) % _row_major(columns + more, count)


def lines_of_batches(
    buf,
    pos: int,
    end: int,
    layout: JsonLayout,
    batch_format,
    record_format,
    limit: int,
    records: bool = True,
) -> tuple[bytes, int]:
    """The JSON Lines of the v2 data batches from buf[pos:end) (each batch's line, then its
    records'), as render/jsonl.py's loop writes them with `layout`, until about `limit` bytes
    are written or a batch this does not write (as text_of_batches). The batch and record lines'
    %-formats come from render/jsonl.py: batch_format(attributes, valid, has_delete_horizon, buf,
    position, size) and record_format(variant, attributes, producer_id, producer_epoch), whose
    last slot is the batch's base offset; each is asked again only when its arguments (but buf,
    position and size) change from the batch before. -> (the lines, joined by newlines, without
    the last; the position of the batch it stops at). Not `records`: the batch lines only, the
    records neither walked nor decompressed."""
    end = min(end, len(buf))
    out: list[bytes] = []
    size = 0
    mv = memoryview(buf)
    bkey = rkey = None  # the arguments the formats in hand were made for
    bfmt = rfmt = b""

    def _record_format(variant: int, key: tuple) -> bytes:
        nonlocal rkey, rfmt
        if (variant, key) != rkey:
            rfmt = record_format(variant, *key)
            rkey = (variant, key)
        return rfmt

    while pos + 17 < end and size < limit:
        head = _data_batch(buf, pos, end)
        if head is None:
            break
        base, total, ple, _, crc, attributes, lod, base_ts, max_ts, pid, epoch, base_seq, count = (
            head
        )
        total += 12
        text = b""
        if records:
            key = (attributes, pid, epoch)
            try:
                text = _record_lines(
                    RecordBatch(buf, pos, total, 2),
                    layout,
                    lambda batch, variant, key=key: _record_format(variant, key),
                    True,
                )
            except Exception:  # the caller's loop: the reference decoder says what is wrong
                break
        computed = crc32c(mv[pos + 21 : pos + total])
        k = (attributes, computed == crc)
        if k != bkey:
            bfmt = batch_format(
                attributes, computed == crc, bool(attributes & 0x40), buf, pos, total
            )
            bkey = k
        values = (
            base,
            base + lod,
            count,
            pos,
            total,
            crc,
            computed,
            base_ts,
            max_ts,
            pid,
            epoch,
            base_seq,
            _last_sequence(base_seq, lod),
            ple,
            base_ts,
        )
        try:
            line = bfmt % values[: 15 if attributes & 0x40 else 14]
        except TypeError:  # not the batch line's slots
            break
        if out:
            out.append(b"\n")
        out.append(line)
        if text:
            out += (b"\n", text)
        size += len(line) + len(text)
        pos += total
    return b"".join(out), pos


def _row_major(columns: list[list], count: int) -> tuple:
    """The values of `columns` record by record, as a %-format takes them."""
    width = len(columns)
    fields = [None] * (width * count)
    for i, column in enumerate(columns):
        fields[i::width] = column
    return tuple(fields)


def _joined_lines(
    line: bytes,
    keys: list[bytes],
    values: list[bytes],
    headers: list[tuple[int, list]],
    columns: list[list],
    layout: JsonLayout,
) -> bytes | None:
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
        payloads = [b""] * (
            2 * count + 2
        )  # a slot before the first key and after the last value too
        payloads[1:-1:2] = keys
        payloads[2:-1:2] = values
        pieces = (head,) + (middle, tail + b"\n" + head) * (count - 1) + (middle, tail)
    # JSON text keeps DEL, % and b as they are, so the slots come through the escaping whole
    escape = layout.escaped
    if escape is None:
        return None
    fmt = escape(DEL.join(payloads).replace(b"%", b"%%%%").replace(DEL, b"%b"))
    if fmt is None:
        return None
    try:
        fmt %= pieces
    except TypeError:  # more slots than separators: a payload holds a DEL
        return None
    return fmt % _row_major(columns, count)


def _with_headers(
    head: bytes,
    middle: bytes,
    tail: bytes,
    keys: list[bytes],
    values: list[bytes],
    headers: list[tuple[int, list]],
    layout: JsonLayout,
) -> tuple[list, tuple] | None:
    """For _joined_lines, a batch with headers: the payloads in line order (each record's key,
    value, then its headers' keys and values; empty ones first and last), and the texts that go
    between them. None when the layout's header texts are not the shapes this cuts."""
    tail_cut = tail.split(b"%b")
    header, null_header = layout.header.split(b"%b"), layout.null_header.split(b"%b")
    if (
        len(tail_cut) != 2
        or len(header) != 3
        or len(null_header) != 2
        or header[0] != null_header[0]
    ):
        return None
    before, after = tail_cut  # around the headers' slot
    key_open = header[0] + b'"'  # {"key": "
    value_open = b'"' + header[1]  # ", "value": "
    value_close = header[2]  # "}
    null_value = b'"' + null_header[1]  # ", "value": null}
    newline_head = b"\n" + head
    # what goes before a record's first header key, between headers (after a value or a null),
    # and after its last header (to the next record's key)
    first_key = before + layout.open + key_open
    next_after_value, next_after_null = (
        value_close + layout.sep + key_open,
        null_value + layout.sep + key_open,
    )
    end_after_value = value_close + layout.close + after + newline_head
    end_after_null = null_value + layout.close + after + newline_head
    no_headers = before + layout.no_headers + after + newline_head
    of: list[list | None] = [None] * len(keys)  # each record's header pairs
    for i, pairs in headers:
        of[i] = pairs
    payloads: list[bytes] = [b""]
    pieces: list[bytes] = []
    pending = head
    for key, value, record_pairs in zip(keys, values, of):
        pieces += (pending, middle)
        payloads += (key, value)
        if not record_pairs:
            pending = no_headers
            continue
        pending = first_key
        for hkey, hvalue in record_pairs:
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
    if seqs and max(seqs) > INT32_MAX:  # sequences wrap to 0
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


def _headers_text(pairs: list[tuple[bytes, bytes | None]], layout: JsonLayout) -> bytes:
    """A record's list of headers as JSON text, header by header (keys as Java decodes them)."""
    items = []
    for key, value in pairs:
        k = layout.quote(java_utf8(key))
        items.append(
            layout.null_header % k
            if value is None
            else layout.header % (k, layout.strings([value])[0])
        )
    return layout.open + layout.sep.join(items) + layout.close


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
        b = data[pos + 1]  # after the attributes: timestampDelta
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
            if b & 1:  # a negative size: no key
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
        if data[pos] == 0:  # no headers
            pos += 1
        else:
            pos = _header_keys(data, pos, end)[1]
        if pos - body != length or pos > end:
            return False
    return pos == end and prev <= last_delta


def scan_columns(batch: RecordBatch, cols: RecordColumns) -> None:
    """Append the records of a v2 non-control batch to `cols`, cut from the batch's bytes (no
    Record objects): a few array appends per record, the rest per batch. Raises as
    `batch_text` does on anything the general path must judge, and then leaves `cols` as it
    was."""
    count = batch.records_count
    if count < 0:
        raise Declined("negative count")
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
    offsets: list[int] = []
    timestamps: list[int] = []
    spans: list[int] = []
    ends: list[int] = []
    hspans: list[int] = []
    null_keys, null_values, null_hvalues = [], [], []
    oappend, tappend, sextend, eappend, hextend = (
        offsets.append,
        timestamps.append,
        spans.extend,
        ends.append,
        hspans.extend,
    )
    nheaders = headers = len(cols.header_spans) // 4  # before this batch's; so far
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
        if b == 0:  # no headers
            pos += 1
        elif b == 2 and data[pos + 1] < 0x80 and not data[pos + 1] & 1:
            # one header with a key shorter than 64 bytes, the usual case, inline (a call costs
            # as much as the rest of the record); anything odd ends in Declined below
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
            raise Declined("record size")
    if pos != end:
        raise Declined("bytes remain")
    if batch.attributes & 0x08:  # LogAppendTime: every record has the batch's max timestamp
        timestamps = [batch.max_timestamp] * count
    if batch.base_sequence < 0:
        cols.sequences += array("i", [NO_SEQUENCE]) * count
    else:
        cols.sequences.frombytes(
            _packed("i", _sequences(batch.base_sequence, batch.base_offset_field, offsets))
        )
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


def columns_of_batches(
    buf,
    pos: int,
    end: int,
    cols: RecordColumns,
    batch_values: tuple,
    batch_of_row,
    lo: int,
    hi: int,
    transactional: bool,
    verify: bool,
    max_rows: int,
    max_bytes: int,
) -> int:
    """spark/arrow.py's selection and _RecordRows.add over a run of v2 data batches from
    buf[pos:end): each batch's records appended to the RecordColumns `cols` by scan_columns, its
    values to the six lists of `batch_values` (timestamp_type, base_offset, producer_id,
    producer_epoch, is_transactional, is_control) and its index in them to `batch_of_row` once a
    record. Batches are taken while cols holds fewer than max_rows rows and max_bytes bytes of
    payloads (its `payload`), up to the first the caller's loop must judge: a batch the runs
    leave (legacy, control, short, incomplete, ...), one with offsets outside [lo, hi), a
    transactional one unless `transactional`, one whose CRC fails when `verify`, one whose
    records scan_columns declines. -> the position of the batch it stopped at (or where the
    walk ended)."""
    end = min(end, len(buf))
    ts_types, bases, pids, epochs, txns, controls = batch_values
    mv = memoryview(buf)
    while pos + 17 < end and cols.rows < max_rows and cols.payload < max_bytes:
        head = _data_batch(buf, pos, end)
        if head is None:
            break
        base, total, _, _, crc, attributes, lod, _, _, pid, epoch, _, count = head
        total += 12
        if base < lo or base + lod >= hi or (attributes & 0x10 and not transactional):
            break
        if verify and crc32c(mv[pos + 21 : pos + total]) != crc:
            break
        start = cols.rows
        try:
            scan_columns(RecordBatch(buf, pos, total, 2), cols)
        except Exception:  # the caller's loop: records() says what is wrong, or decodes it
            break
        pos += total
        if not count:  # no row: no values (as _RecordRows.add)
            continue
        batch_of_row.extend(array("i", [len(bases)]) * (cols.rows - start))
        ts_types.append("LogAppendTime" if attributes & 0x08 else "CreateTime")
        bases.append(base)
        pids.append(pid)
        epochs.append(epoch)
        txns.append(bool(attributes & 0x10))
        controls.append(False)
    return pos


def _packed(code: str, items: list) -> bytes:
    """Ints as the machine array of type `code` holds them."""
    return pack(f"={len(items)}{code}", *items)


def _header_spans(
    data: bytes, pos: int, end: int, shift: int, spans: list, nulls: list, first: int
) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        nh = ZIGZAG[b]
        pos += 1
    else:
        nh, pos = read_varint(data, pos)
    if nh < 0 or nh > end - pos:
        raise Declined("header count")
    for _ in range(nh):
        b = data[pos]
        if b < 0x80:
            hk = ZIGZAG[b]
            pos += 1
        else:
            hk, pos = read_varint(data, pos)
        if hk < 0 or pos + hk > end:
            raise Declined("header key")
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
                raise Declined("header value")
            pos += hv
        else:
            nulls.append(first + len(spans) // 4)
        spans.append(k)
        spans.append(k + hk)
        spans.append(v)
        spans.append(pos + shift)
    return nh, pos


def search_v2(
    batch: RecordBatch, search: RecordSearch, indices: list[int] | None = None
) -> list[Record]:
    """The records of a v2 batch that pass `search`, as RecordBatch.records() decodes them; the
    others are walked (every size checked as the reference decoder checks it) but never built.
    `indices` receives each found record's place in the batch (0 for its first record).
    A batch the whole of whose bytes `rules_out` every match gives [] without a walk when its CRC
    holds (the broker validated its records when it appended it); a damaged one is walked, so
    its damage is found as the reference decoder finds it. Raises as `batch_text` does on
    anything the general path must judge."""
    if batch.records_count < 0:
        raise Declined("negative count")
    data, pos, end = records_region(batch)
    if type(data) is not bytes:  # an mmap: the records copied once, for find() and startswith()
        data, pos, end = bytes(memoryview(data)[pos:end]), 0, end - pos
    count = batch.records_count
    if search.rules_out(data, pos, end) and batch.is_valid():
        return []
    kexact, kprefix, kregex, vregex = (
        search.key,
        search.key_prefix,
        search.key_regex,
        search.value_regex,
    )
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
            length, pos = (
                (zz[b], pos + 1)
                if b < 0x80
                else (zz2[c][b], pos + 2)
                if c < 0x80
                else rvarint(data, pos)
            )
            body = pos
            b, c = data[pos + 1], data[pos + 2]
            td, pos = (
                (zz[b], pos + 2)
                if b < 0x80
                else (zz2[c][b], pos + 3)
                if c < 0x80
                else rvarlong(data, pos + 1)
            )
            b = data[pos]  # offset delta and key size: one byte, but rarely
            od, pos = (zz[b], pos + 1) if b < 0x80 else rvarint(data, pos)
            b = data[pos]
            ks, pos = (zz[b], pos + 1) if b < 0x80 else rvarint(data, pos)
            kpos = pos
            if ks >= 0:
                pos += ks
                hit = (
                    ks >= plen
                    and (kexact is None or ks == klen)
                    and (
                        (kexact is None or data.startswith(kexact, kpos))
                        and (kprefix is None or data.startswith(kprefix, kpos))
                        and (kregex is None or kregex.search(data[kpos:pos]) is not None)
                    )
                )
            else:
                hit = not keyed
            b, c = data[pos], data[pos + 1]
            vs, pos = (
                (zz[b], pos + 1)
                if b < 0x80
                else (zz2[c][b], pos + 2)
                if c < 0x80
                else rvarint(data, pos)
            )
            vpos = pos
            if vs >= 0:
                pos += vs
                if hit and vregex is not None:
                    hit = vregex.search(data[vpos:pos]) is not None
            elif vregex is not None:
                hit = False
            hpos = pos
            if data[pos] == 0:  # no headers
                pos += 1
            else:
                pos = _header_keys(data, pos, end)[1]
            if pos - body != length or pos > end:
                raise Declined("record size")
            if hit:
                out.append(
                    Record(
                        base + od,
                        log_append if log_append is not None else base_ts + td,
                        data[kpos : kpos + ks] if ks >= 0 else None,
                        data[vpos : vpos + vs] if vs >= 0 else None,
                        headers_at(data, hpos),
                        increment_sequence(base_seq, od) if base_seq >= 0 else NO_SEQUENCE,
                        data[body],
                        2,
                        None,
                        True,
                        -1 if ks < 0 else ks,
                        -1 if vs < 0 else vs,
                    )
                )
                if indices is not None:
                    indices.append(i)
    except IndexError:
        raise Declined("short record") from None
    if pos != end:
        raise Declined("bytes remain")
    return out


def gather_spans(
    whole, spans, first: int, n: int, utf8: bool = False
) -> tuple[bytes, bytes] | None:
    """The bytes of n spans (whole[spans[4 i + first]:spans[4 i + first + 1]] for each row i:
    RecordColumns' spans, four a row, with first 0 for keys, 2 for values) laid end to end ->
    (Arrow's int32 offsets buffer, data buffer) of a binary column of them. `utf8`: None unless
    every span is UTF-8 that Python's decoder takes (a string column's check). Its only caller
    (spark/arrow.py) has pyarrow, and with it numpy: the spans are gathered by pyarrow's `take`,
    in C (a Python step per row doubled the pure core's Spark read); without them, in Python."""
    size = len(whole)
    if n < 0 or first < 0 or first > 2 or 4 * n > len(spans):
        raise ValueError("spans out of range")
    if n >= _VECTOR_ROWS:
        try:
            return _gather_vectorised(whole, spans, first, n, utf8)
        except ImportError:
            pass
    starts = spans[first : 4 * n : 4]
    ends = spans[first + 1 : 4 * n : 4]
    if n and (min(starts) < 0 or max(ends) > size or any(map(operator.gt, starts, ends))):
        raise ValueError("span out of range")
    if sum(ends) - sum(starts) > INT32_MAX:
        raise ValueError("past 2 GiB")
    pieces = list(map(whole.__getitem__, map(slice, starts, ends)))
    if utf8:
        try:
            for piece in pieces:
                piece.decode("utf-8")
        except UnicodeDecodeError:
            return None
    offsets = array("i", [0])
    offsets.extend(accumulate(map(operator.sub, ends, starts)))
    return offsets.tobytes(), b"".join(pieces)


# below this many rows the Python gather costs less than numpy's and pyarrow's set-up
_VECTOR_ROWS = 64


def _gather_vectorised(whole, spans, first: int, n: int, utf8: bool) -> tuple[bytes, bytes] | None:
    """gather_spans (its arguments checked) by numpy and pyarrow's `take` over a binary array
    whose elements are the spans and the gaps between them, when the spans run forward through
    `whole` (RecordColumns' do); otherwise the bytes by slices."""
    import numpy as np
    import pyarrow as pa

    rows = np.frombuffer(memoryview(spans).cast("B")[: 16 * n], dtype=np.int32).reshape(n, 4)
    bounds = np.ascontiguousarray(rows[:, first : first + 2], dtype=np.int32)
    starts, ends = bounds[:, 0], bounds[:, 1]
    if starts.min() < 0 or ends.max() > len(whole) or (starts > ends).any():
        raise ValueError("span out of range")
    lengths = (ends - starts).astype(np.int64)
    total = int(lengths.sum())
    if total > INT32_MAX:
        raise ValueError("past 2 GiB")
    offsets = np.zeros(n + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(lengths)
    flat = bounds.reshape(-1)
    if (flat[1:] >= flat[:-1]).all():
        # element 2 i of the covering array is span i (its odd elements: the gaps between spans)
        covering = pa.Array.from_buffers(
            pa.binary(), 2 * n - 1, [None, pa.py_buffer(flat), pa.py_buffer(whole)]
        )
        taken = covering.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int32)))
        data = taken.buffers()[2]
        data = data.to_pybytes()[:total] if data is not None else b""
    else:
        view = memoryview(whole)
        data = b"".join(view[a:b] for a, b in bounds.tolist())
    if utf8:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        # the whole is UTF-8: each span is when none starts inside a character
        if (
            total
            and (
                np.frombuffer(data, dtype=np.uint8)[offsets[:-1][lengths > 0]] & 0xC0 == 0x80
            ).any()
        ):
            return None
    return offsets.tobytes(), data


_WIDTH_CODES: dict[int, Literal["b", "h", "i", "q"]] = {1: "b", 2: "h", 4: "i", 8: "q"}


def take_fixed_width(values, width: int, rows) -> bytes:
    """Fixed-width values (`width` bytes each, any buffer) one a row: the rows' indexes into
    them in `rows` (int32) -> the rows' values end to end: a batch's values for each of its
    records."""
    code = _WIDTH_CODES.get(width)
    if code is None:
        raise ValueError("width")
    v = memoryview(values).cast("B")
    v = v[: len(v) // width * width].cast(code)
    if len(rows) and (min(rows) < 0 or max(rows) >= len(v)):
        raise ValueError("row index out of range")
    if len(rows) >= _VECTOR_ROWS:
        try:  # numpy: its only caller (spark/arrow.py) has it, with pyarrow
            import numpy as np
        except ImportError:
            pass
        else:
            return np.frombuffer(v, dtype=code)[np.frombuffer(rows, dtype=np.int32)].tobytes()
    return array(code, map(v.__getitem__, rows)).tobytes()
