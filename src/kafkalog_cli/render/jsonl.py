"""JSON Lines: one object per line, snake_case, `kind` first. The kinds and their fields are
declared in render/schema.py (README's table is made from it); the Spark data source yields the
same values.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import orjson

from kafkalog_cli.errors import KafkalogError, one_line
from kafkalog_cli.formats.byte_loops import batch_json, lines_of_batches
from kafkalog_cli.formats.control import EndTransactionMarker, decode_control
from kafkalog_cli.formats.internal.raft import add_control_body
from kafkalog_cli.formats.json_layout import (
    DEL,
    HEADERS_SLOT,
    KEYS_WHOLE,
    SEQUENCE_SLOT,
    VALUES_WHOLE,
    JsonLayout,
)
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.records import NO_SEQUENCE, Record, RecordBatch, iter_batches
from kafkalog_cli.render.kafka import INT_MAX
from kafkalog_cli.render.parallel import (
    PARALLEL_MIN_BYTES,
    RELEASE_BYTES,
    RUN_BYTES,
    Sink,
    output_fd,
    ranges_of,
    render_ranges,
    write_all,
)
from kafkalog_cli.render.schema import (
    BATCH,
    CONTROL_RECORD,
    FILE,
    LEGACY,
    LOCATED,
    RECORD,
    TRAILING_BYTES,
    UNKNOWN_FILE,
)
from kafkalog_cli.storage.live_files import release_pages
from kafkalog_cli.storage.names import offset_from_name
from kafkalog_cli.storage.segment import Segment, map_file
from kafkalog_cli.storage.selection import Filters, found_lines, selected_batches, start_position


def _json_default(o):
    # decoded internal records may hold raw bytes (SCRAM salts, group assignments)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode("ascii")
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=_json_default).encode


def payload_text(encoding: str) -> Callable[[bytes], str]:
    """A key, value or header value as JSON text: `utf8` (Java's decoding, as kafka-dump-log
    prints it), `hex` or `base64`."""
    if encoding == "hex":
        return bytes.hex
    if encoding == "base64":
        return lambda b: binascii.b2a_base64(b, newline=False).decode("ascii")
    return java_utf8


def payload_encoder(encoding: str) -> Callable[[bytes | None], str | None]:
    text = payload_text(encoding)
    return lambda b: None if b is None else text(b)


def iso_time(ms: int) -> str | None:
    """Epoch milliseconds as ISO-8601 UTC text with milliseconds (2024-05-01T12:00:00.123Z); None
    for a negative one (-1: no timestamp, as legacy v0 records have) or one past year 9999."""
    from datetime import datetime, timedelta, timezone

    if ms < 0:
        return None
    try:
        t = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    except OverflowError:
        return None
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def header_object(key: str, value: str | None) -> dict:
    return {"key": key, "value": value}


def batch_object(b: RecordBatch, file: str) -> dict:
    valid = b.is_valid()
    obj = BATCH.template()
    obj.update(
        file=file,
        base_offset=b.base_offset,
        last_offset=b.last_offset,
        count=b.records_count,
        position=b.position,
        size=b.size,
        magic=b.magic,
        codec=b.compression.kafka_name,
        crc=b.crc,
        computed_crc=b.crc if valid else b.compute_crc(),  # a valid batch's CRC is its own
        is_valid=valid,
        timestamp_type=b.timestamp_type.kafka_name,
        base_timestamp=b.base_timestamp,
        max_timestamp=b.max_timestamp,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
        last_sequence=b.last_sequence,
        partition_leader_epoch=b.partition_leader_epoch,
        is_transactional=b.is_transactional,
        is_control=b.is_control,
        delete_horizon_ms=b.delete_horizon_ms,
    )
    return obj


# The batch values batch_line fills per batch, in the schema's order (v2 batches: count is never null)
_BATCH_SLOTS = (
    "base_offset",
    "last_offset",
    "count",
    "position",
    "size",
    "crc",
    "computed_crc",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "last_sequence",
    "partition_leader_epoch",
    "delete_horizon_ms",
)
_BATCH_LINES: dict[tuple, bytes] = {}


def batch_format(b: RecordBatch, file: str, valid: bool) -> bytes:
    """The %-format of batch_line, kept per file and per the batch's non-numeric values."""
    key = (file, b.attributes, valid, b.delete_horizon_ms is None)
    fmt = _BATCH_LINES.get(key)
    if fmt is None:
        if len(_BATCH_LINES) > 4096:
            _BATCH_LINES.clear()
        obj = batch_object(b, file)
        for name in _BATCH_SLOTS:
            if obj[name] is not None:
                obj[name] = _mark(name)
        fmt = _BATCH_LINES[key] = _slotted(
            dumps(obj), [(name, "%d", False) for name in _BATCH_SLOTS if obj[name] is not None]
        )
    return fmt


def batch_line(b: RecordBatch, file: str) -> bytes:
    """batch_object(b, file) of a v2 batch as UTF-8 JSON text, through a %-format kept per file and
    per the batch's non-numeric values (the per-batch dict and its encoding cost as much as the
    batch's records take to scan). Same bytes as dumps(batch_object(b, file))."""
    valid = b.is_valid()
    horizon = b.delete_horizon_ms
    fmt = batch_format(b, file, valid)
    base = b.base_offset_field
    values = (
        base,
        base + b.last_offset_delta,
        b.records_count,
        b.position,
        b.size,
        b.crc,
        b.crc if valid else b.compute_crc(),
        b.base_timestamp,
        b.max_timestamp,
        b.producer_id,
        b.producer_epoch,
        b.base_sequence,
        b.last_sequence,
        b.partition_leader_epoch,
    )
    return fmt % (values if horizon is None else values + (horizon,))


def record_template(b: RecordBatch) -> dict:
    """A record object of batch `b` with the batch's values in place: `record_object` copies it
    for each record, so they are computed once per batch."""
    only = (LEGACY,) if b.magic < 2 else ()
    if b.is_control:
        only += (CONTROL_RECORD,)
    return RECORD.object(
        *only,
        timestamp_type=b.timestamp_type.kafka_name,
        base_offset=b.base_offset,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        is_transactional=b.is_transactional,
        is_control=b.is_control,
    )


def record_object(r: Record, b: RecordBatch, enc, template: dict | None = None) -> dict:
    obj = (record_template(b) if template is None else template).copy()
    obj["offset"] = r.offset
    obj["timestamp"] = r.timestamp
    obj["key"] = enc(r.key)
    obj["value"] = enc(r.value)
    obj["headers"] = [header_object(h.key, enc(h.value)) for h in r.headers]
    obj["sequence"] = r.sequence
    if b.magic < 2:
        obj["crc"] = r.crc
        obj["is_valid"] = r.valid
    if b.is_control:
        obj["control"] = control_object(r)
    return obj


def control_object(r: Record) -> dict:
    c = decode_control(r.key, r.value)
    out: dict = {"type": c.type.name, "type_id": c.type_id}
    if isinstance(c.value, EndTransactionMarker):
        out["version"], out["coordinator_epoch"] = c.value.version, c.value.coordinator_epoch
    return out


# ------------------------------------------------------------------ the record fast path's layout
# The values batch_json fills per record, in the schema's order: (name, slot, string: the slot
# goes inside the string's quotes, unless the variant has the flag that the column holds a null)
_FIELDS = (
    ("offset", "%d", False, 0),
    ("timestamp", "%d", False, 0),
    ("key", "%b", True, KEYS_WHOLE),
    ("value", "%b", True, VALUES_WHOLE),
    ("headers", "%b", False, 0),
    ("sequence", "%d", False, 0),
)
_BASE = "base_offset"  # the one batch value of a record line that changes every batch


def _mark(name: str) -> str:
    return f"@kafkalog:{name}@"


def _slotted(text: str, slots) -> bytes:
    """JSON text with the values _mark(name) replaced by %-format slots, in this order: the
    whole JSON string, or with `inside` only what is between its quotes (b"" if they are not
    all there in that order)."""
    text = text.replace("%", "%%")
    at = 0
    for name, slot, inside in slots:
        mark = _mark(name) if inside else dumps(_mark(name))
        i = text.find(mark, at)
        if i < 0:
            return b""
        text = text[:i] + slot + text[i + len(mark) :]
        at = i + len(slot)
    return text.encode("utf-8", "surrogatepass")


def _record_layout(encoding: str) -> JsonLayout:
    """The layout of record lines, for batch_json."""
    one = dumps(header_object(_mark("key"), _mark("value")))
    opened, sep, closed = dumps([header_object(_mark("key"), _mark("value"))] * 2).split(one)
    return JsonLayout(
        line=record_line,
        string=_slotted(dumps(_mark("text")), (("text", "%b", True),)),
        null=dumps(None).encode(),
        header=_slotted(one, (("key", "%b", False), ("value", "%b", True))),
        null_header=_slotted(dumps(header_object(_mark("key"), None)), (("key", "%b", False),)),
        no_headers=dumps([]).encode(),
        open=opened.encode(),
        sep=sep.encode(),
        close=closed.encode(),
        quote=orjson.dumps,
        strings=_STRINGS[encoding],
        escaped=_utf8_escaped if encoding == "utf8" else None,
        encoding=encoding,
    )


def _utf8_escaped(text: bytes) -> bytes | None:
    """UTF-8 text as the escaped text of a JSON string (orjson, as json escapes); None when it
    is not valid UTF-8 (Java's replacements are made a payload at a time)."""
    try:
        return orjson.dumps(text.decode())[1:-1]
    except UnicodeDecodeError:
        return None


# A column of payloads as the escaped texts of JSON strings, in a few calls for the whole column:
# the payloads are joined by DEL, escaped at once and split again. orjson escapes as json does
# with ensure_ascii=False (tests/render/test_jsonl_fast.py holds them equal over every code
# point), one character at a time, and it writes DEL as it is. DEL is rare in text; a payload
# holding one is found by the count, and takes the slow way.
def _utf8_strings(items: list[bytes]) -> list[bytes]:
    text = _utf8_escaped(DEL.join(items))  # valid UTF-8 as a whole iff each payload is
    if text is not None:
        texts = text.split(DEL)
        if len(texts) == len(items):
            return texts
    return [orjson.dumps(java_utf8(x))[1:-1] for x in items]  # Java's replacements, one at a time


_STRINGS = {
    "utf8": _utf8_strings,
    "hex": lambda items: list(map(binascii.hexlify, items)),
    "base64": lambda items: b"".join(map(binascii.b2a_base64, items))[:-1].split(b"\n"),
}


_LINES: dict[tuple, bytes] = {}
_BASE_MARK = dumps(_mark(_BASE)).encode()


def record_line(b: RecordBatch, variant: int) -> bytes:
    """The %-format of the record lines of v2 batch `b` for batch_json (see JsonLayout.line),
    made from record_template; b"" if the schema's order is not the one batch_json fills.
    Formats are kept per variant and per batch values but the base offset (the values
    record_template reads), which is filled in here."""
    key = (variant, b.magic, b.attributes & 0x38, b.producer_id, b.producer_epoch)
    fmt = _LINES.get(key)
    if fmt is None:
        fmt = _record_format(b, variant, key)
    return fmt.replace(_BASE_MARK, b"%d" % b.base_offset_field) if fmt else b""


def _record_format(b: RecordBatch, variant: int, key: tuple) -> bytes:
    """record_line's format, the base offset's mark still in it: made and kept under `key`."""
    if len(_LINES) > 4096:
        _LINES.clear()
    obj = record_template(b)
    obj[_BASE] = _mark(_BASE)
    for name, *_ in _FIELDS:
        obj[name] = _mark(name)
    if not variant & HEADERS_SLOT:
        obj["headers"] = []
    if not variant & SEQUENCE_SLOT:
        obj["sequence"] = NO_SEQUENCE
    fmt = _LINES[key] = _slotted(
        dumps(obj),
        [
            (name, slot, inside and not variant & whole)
            for name, slot, inside, whole in _FIELDS
            if name in obj and obj[name] == _mark(name)
        ],
    )
    return fmt


def _batch_of(attributes: int, producer_id: int, epoch: int, base: int) -> RecordBatch:
    """A v2 batch header of these values (for record_line's format, made once per variant)."""
    import struct

    head = struct.pack(
        ">qiibIhiqqqhii", base, 49, -1, 2, 0, attributes & 0xFF, 0, 0, 0, producer_id, epoch, -1, 0
    )
    return RecordBatch(head, 0, len(head), 2)


def _structured_decoder(name: str):
    if name == "offsets":
        from kafkalog_cli.formats.internal.consumer_offsets import decode_offsets_record

        return lambda r: decode_offsets_record(r.key, r.value)
    if name == "transactions":
        from kafkalog_cli.formats.internal.transaction_state import decode_transaction_record

        return lambda r: decode_transaction_record(r.key, r.value)
    if name == "share_group_state":
        from kafkalog_cli.formats.internal.coordinator import Coordinator, decode_coordinator_record

        return lambda r: decode_coordinator_record(Coordinator.SHARE, r.key, r.value)
    if name == "remote_log_metadata":
        from kafkalog_cli.formats.internal.remote_log_metadata import decode_remote_log_metadata

        return lambda r: decode_remote_log_metadata(r.value)
    if name == "metadata":
        from kafkalog_cli.formats.internal.cluster_metadata import decode_metadata_record

        def dec(r: Record):
            m = decode_metadata_record(r.value)
            return asdict(m) if hasattr(m, "__dataclass_fields__") else m

        return dec
    return None


def _decode_control(r: Record) -> dict | None:
    """With a decoder, a KRaft control record's value too (transaction markers are all in `control`)."""
    from kafkalog_cli.formats.internal.raft import decode_control_value

    return decode_control_value(decode_control(r.key, r.value).type.name, r.value)


def _note(s: str) -> None:
    import sys

    sys.stderr.write(f"kafkalog: note: {one_line(s)}\n")


# Where a record line comes from: the writer lays a file's topic, partition and file in after
# "kind" (schema.LOCATED), by replacing the opening every record line has: the per-record
# templates and the fast paths never see them, and every path writes the same bytes. The
# opening cannot occur elsewhere in a line: inside a JSON string its quotes are escaped.
RECORD_OPEN = dumps({"kind": RECORD.name})[:-1] + ", "
_RECORD_OPEN = RECORD_OPEN.encode()


def record_prefix(given: str) -> str:
    """RECORD_OPEN with the topic, partition and file of `given` (a .log in a partition dir; null
    topic and partition elsewhere, as the Arrow rows have them), in the schema's order."""
    from kafkalog_cli.storage.names import parse_partition_dir

    path = Path(given)
    tp = parse_partition_dir(path.parent.name) if path.name.endswith(".log") else None
    values = {
        "topic": tp.topic if tp else None,
        "partition": tp.partition if tp else None,
        "file": given,
    }
    obj = {"kind": RECORD.name}
    obj.update((f.name, values[f.name]) for f in RECORD.fields if f.only is LOCATED)
    return dumps(obj)[:-1] + ", "


class JsonDumper:
    def __init__(
        self,
        out,
        *,
        deep: bool,
        payload_encoding: str = "utf8",
        decoder: str | None = None,
        max_bytes: int = INT_MAX,
        filters: Filters | None = None,
        jobs: int = 1,
        timestamps: str = "ms",
        control_bodies: bool = False,
    ):
        self.out = out
        self.control_bodies = (
            control_bodies  # kafka-dump-log 4.1+: KRaft control records' bodies in `control`
        )
        self.iso = timestamps == "iso"
        self._prefix = RECORD_OPEN
        self._prefix_bytes = _RECORD_OPEN
        self.deep = deep or (filters is not None and filters.needs_records) or decoder is not None
        self.enc = payload_encoder(payload_encoding)
        self.decode = _structured_decoder(decoder) if decoder else None
        self.max_bytes = max_bytes
        self.filters = filters
        self.jobs = jobs
        # the record fast path: unfiltered, undecoded dumps (anything else needs Record objects)
        # (ISO timestamps: the general path, which writes them)
        self.layout = (
            _record_layout(payload_encoding)
            if filters is None and decoder is None and not self.iso
            else None
        )
        # a search's records: their lines cut out of the batch's, when most of it is found
        self.found_layout = (
            _record_layout(payload_encoding)
            if filters is not None and decoder is None and not self.iso
            else None
        )
        self._fd = output_fd(out)
        # the loop over runs of v2 data batches (formats/byte_loops.py)
        self._run = lines_of_batches if self.layout is not None else None
        self._in_run = False
        self._lines: list[str] = []  # objects not yet encoded
        self._parts: list[bytes] = []  # encoded lines not yet written
        self._size = 0

    def _emit(self, obj: dict) -> None:
        self._lines.append(dumps(obj))
        if len(self._lines) >= 1024:
            self.flush()

    def _emit_record(self, obj: dict) -> None:
        """A record object, with where it comes from laid in (see RECORD_OPEN)."""
        self._lines.append(dumps(obj).replace(RECORD_OPEN, self._prefix, 1))
        if len(self._lines) >= 1024:
            self.flush()

    def _located(self, lines: bytes) -> bytes:
        """Record lines of the fast paths, with where they come from laid in."""
        return lines.replace(_RECORD_OPEN, self._prefix_bytes)

    def _batch_text(self, b: RecordBatch, given: str) -> bytes:
        if not self.iso:
            return batch_line(b, given)
        return dumps(self._batch_obj(b, given)).encode("utf-8", "surrogatepass")

    def _batch_obj(self, b: RecordBatch, given: str) -> dict:
        obj = batch_object(b, given)
        if self.iso:
            obj["base_timestamp"], obj["max_timestamp"] = (
                iso_time(obj["base_timestamp"]),
                iso_time(obj["max_timestamp"]),
            )
        return obj

    def _emit_lines(self, lines: bytes, more: bytes = b"") -> None:
        """UTF-8 lines, without the last newline (and `more` such lines after them)."""
        if self._lines:
            self._encode()
        if more:
            self._parts += (lines, b"\n", more, b"\n")
            self._size += len(lines) + len(more)
        else:
            self._parts += (lines, b"\n")
            self._size += len(lines)
        if self._size >= 1 << 20:
            self.flush()

    def _encode(self) -> None:
        self._parts.append(("\n".join(self._lines) + "\n").encode("utf-8", "surrogatepass"))
        self._lines.clear()

    def flush(self) -> None:
        if self._lines:
            self._encode()
        if self._parts:
            if isinstance(self.out, Sink):
                self.out.writelines(self._parts)
            elif self._fd is not None:  # the parts as they are, by writev: a join copies them all
                self.out.flush()
                write_all(self._fd, self._parts)
            else:
                self.out.write(b"".join(self._parts))
            self._parts.clear()
            self._size = 0

    def dump(self, given: str) -> None:
        path = Path(given)
        suffix = path.name[path.name.rfind(".") :] if "." in path.name else ""
        self._prefix = record_prefix(given)
        self._prefix_bytes = self._prefix.encode("utf-8", "surrogatepass")
        try:
            if suffix in (".log", ".checkpoint"):
                self._emit(FILE.object(file=given, type=suffix[1:]))
                self.dump_log(path, given)
            elif suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
                from kafkalog_cli.render.index_json import index_objects

                self._emit(FILE.object(file=given, type=suffix[1:]))
                for obj in index_objects(path):
                    self._emit(obj)
            else:
                self._emit(FILE.object(UNKNOWN_FILE, file=given, type="unknown", skipped=True))
        finally:
            self.flush()

    def dump_log(self, path: Path, given: str) -> None:
        buf = map_file(path)
        end = min(len(buf), self.max_bytes)
        f = self.filters
        pos = 0
        if f is not None and path.name.endswith(".log"):
            base = offset_from_name(path.name)
            if base is not None:
                pos = start_position(Segment.with_log(path.parent, base, buf), f, _note)
        try:
            if self.deep and f is None and self.jobs > 1 and end - pos >= PARALLEL_MIN_BYTES:
                pos = self._dump_parallel(buf, pos, end, given)
            # after the workers, what is left is an incomplete batch or nothing
            valid = self._batches(buf, pos, end, given)
        except KafkalogError as e:
            raise e.located(path=given)
        if end > valid and f is None and self.max_bytes == INT_MAX:
            self._emit(TRAILING_BYTES.object(file=given, position=valid, size=end - valid))

    def _runs(self, buf, pos: int, end: int, given: str) -> int:
        """_batches of an unfiltered dump: runs of v2 data batches written by
        lines_of_batches (their records too when deep), each batch it leaves (legacy, control,
        damaged) written by _batches. -> the end of the last batch read."""
        released = pos
        # the record lines' opening with where they come from laid in (% doubled: the formats are
        # %-formats), put in each batch's format: the run's text needs no _located pass, which
        # cost a third of a deep dump's CPU (a copy of every byte written)
        opening = self._prefix_bytes.replace(b"%", b"%%")

        def batch_fmt(
            attributes: int, valid: bool, horizon: bool, buf, position: int, size: int
        ) -> bytes:
            fmt = _BATCH_LINES.get((given, attributes, valid, not horizon))
            return (
                fmt
                if fmt is not None
                else batch_format(RecordBatch(buf, position, size, 2), given, valid)
            )

        def record_fmt(variant: int, attributes: int, producer_id: int, epoch: int) -> bytes:
            # the base offset as the format's last slot (the schema puts base_offset after
            # every other slot's field): lines_of_batches keeps the format from batch to batch
            key = (variant, 2, attributes & 0x38, producer_id, epoch)
            fmt = _LINES.get(key)
            if fmt is None:  # made from a batch of those values (record_template reads no other)
                fmt = _record_format(_batch_of(attributes, producer_id, epoch, 0), variant, key)
            return fmt.replace(_BASE_MARK, b"%d").replace(_RECORD_OPEN, opening, 1) if fmt else b""

        while True:
            text, pos = self._run(
                buf, pos, end, self.layout, batch_fmt, record_fmt, RUN_BYTES, self.deep
            )
            if text:
                self._emit_lines(text)
            if pos - released > RELEASE_BYTES:
                release_pages(buf, released, pos)
                released = pos
            if len(text) >= RUN_BYTES:  # the run stopped at its size, not at a batch it leaves
                continue
            batch = next(iter_batches(buf, pos, end), None)
            if batch is None:
                return pos
            pos = self._batches(buf, pos, batch.position + batch.size, given)

    def _batches(self, buf, start: int, end: int, given: str) -> int:
        """The objects of the batches of buf[start:end) (and their records, when deep) -> the end
        of the last batch read."""
        f = self.filters
        if self.layout is not None and f is None and self._run is not None and not self._in_run:
            self._in_run = True
            try:
                return self._runs(buf, start, end, given)
            finally:
                self._in_run = False
        valid = released = start
        for b, records in selected_batches(buf, start, end, f, self.deep):
            valid = b.position + b.size
            if valid - released > RELEASE_BYTES:
                release_pages(buf, released, b.position)
                released = b.position
            if b.magic != 2:
                self._emit(self._batch_obj(b, given))
            else:
                self._emit_lines(self._batch_text(b, given))
            if not self.deep:
                continue
            if (
                f is not None
                and f.whole_batches
                and self.found_layout is not None
                and b.magic == 2
                and not b.attributes & 0x20
            ):
                try:  # a batch a batch-level filter shows: its lines as an unfiltered dump's
                    lines = batch_json(b, self.found_layout)
                except Exception:  # anything unusual: the general path says what is wrong
                    pass
                else:
                    if lines:
                        self._emit_lines(self._located(lines))
                    continue
            if (
                records is not None
                and self.found_layout is not None
                and b.magic == 2
                and not b.attributes & 0x20
            ):
                found = found_lines(
                    b, records, f, lambda b=b: batch_json(b, self.found_layout).split(b"\n")
                )
                if found is not None:
                    if found:
                        self._emit_lines(self._located(b"\n".join(line for _, line in found)))
                    continue
            if records is None:
                records = b.records()
            template = record_template(b)
            for r in records if f is None else f.shown(records):
                obj = record_object(r, b, self.enc, template)
                if self.control_bodies and b.is_control:
                    add_control_body(obj["control"], r.value)
                if self.iso:
                    obj["timestamp"] = iso_time(obj["timestamp"])
                if self.decode is not None:
                    try:
                        obj["decoded"] = _decode_control(r) if b.is_control else self.decode(r)
                    except KafkalogError as e:
                        raise e.in_record(r.offset, b.position) from None
                self._emit_record(obj)
        return valid

    def _dump_parallel(self, buf, start: int, end: int, given: str) -> int:
        """buf[start:end) rendered by worker processes (render/parallel.py) -> where the
        sequential loop goes on: the end of the last batch, or the start of a range that failed
        (rendered again here, so the output before the error and the error are the sequential
        ones)."""
        fd = output_fd(self.out)
        ranges = ranges_of(buf, start, end, self.jobs)
        if fd is None or len(ranges) < 2:
            return start
        self.flush()
        self.out.flush()
        ends, failed = render_ranges(
            buf, ranges, self.jobs, fd, lambda a, b: self._render_range(buf, a, b, given)
        )
        if failed is not None:
            return ranges[failed][0]
        return ends[-1]

    def _render_range(self, buf, start: int, stop: int, given: str) -> tuple[list[bytes], int]:
        """In a worker: the bytes of one range, and where its last batch ends."""
        self.out = Sink()
        self._fd = None
        self._lines, self._parts, self._size = [], [], 0
        valid = self._batches(buf, start, stop, given)
        self.flush()
        return self.out.parts, valid


def dump_json(
    targets,
    out,
    *,
    deep: bool,
    payload_encoding: str,
    decoder: str | None = None,
    max_bytes: int = INT_MAX,
    filters: Filters | None = None,
    jobs: int = 1,
    timestamps: str = "ms",
    control_bodies: bool = False,
) -> None:
    d = JsonDumper(
        out,
        deep=deep,
        payload_encoding=payload_encoding,
        decoder=decoder,
        max_bytes=max_bytes,
        filters=filters,
        jobs=jobs,
        timestamps=timestamps,
        control_bodies=control_bodies,
    )
    for t in targets:
        if filters is not None and filters.spent:
            break
        d.dump(t)
