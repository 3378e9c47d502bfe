"""JSON Lines: one object per line, snake_case, `kind` first. The kinds and their fields are
declared in render/schema.py (README's table is made from it); the Spark data source yields the
same values.
"""
from __future__ import annotations

import base64
import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from kafkalog_cli.errors import KafkalogError, one_line
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.control import EndTransactionMarker, decode_control
from kafkalog_cli.formats.records import Record, RecordBatch
from kafkalog_cli.render.kafka import INT_MAX
from kafkalog_cli.render.schema import BATCH, CONTROL_RECORD, FILE, LEGACY, RECORD, TRAILING_BYTES, UNKNOWN_FILE
from kafkalog_cli.storage.names import offset_from_name
from kafkalog_cli.storage.segment import Segment, map_file
from kafkalog_cli.storage.selection import Filters, selected_batches, start_position


def _json_default(o):
    # decoded internal records may hold raw bytes (SCRAM salts, group assignments)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode("ascii")
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=_json_default).encode


def payload_encoder(encoding: str) -> Callable[[bytes | None], str | None]:
    if encoding == "hex":
        return lambda b: None if b is None else b.hex()
    if encoding == "base64":
        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    return lambda b: None if b is None else java_utf8(b)


def batch_object(b: RecordBatch, file: str) -> dict:
    valid = b.is_valid()
    obj = BATCH.template()
    obj.update(
        file=file, base_offset=b.base_offset, last_offset=b.last_offset, count=b.records_count,
        position=b.position, size=b.size, magic=b.magic, codec=b.compression.kafka_name, crc=b.crc,
        computed_crc=b.crc if valid else b.compute_crc(),   # a valid batch's CRC is its own
        is_valid=valid, timestamp_type=b.timestamp_type.kafka_name, base_timestamp=b.base_timestamp,
        max_timestamp=b.max_timestamp, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence, last_sequence=b.last_sequence,
        partition_leader_epoch=b.partition_leader_epoch, is_transactional=b.is_transactional,
        is_control=b.is_control, delete_horizon_ms=b.delete_horizon_ms)
    return obj


def record_template(b: RecordBatch) -> dict:
    """A record object of batch `b` with the batch's values in place: `record_object` copies it
    for each record, so they are computed once per batch."""
    only = (LEGACY,) if b.magic < 2 else ()
    if b.is_control:
        only += (CONTROL_RECORD,)
    return RECORD.object(*only, timestamp_type=b.timestamp_type.kafka_name, base_offset=b.base_offset,
                         producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                         is_transactional=b.is_transactional, is_control=b.is_control)


def record_object(r: Record, b: RecordBatch, enc, template: dict | None = None) -> dict:
    obj = (record_template(b) if template is None else template).copy()
    obj["offset"] = r.offset
    obj["timestamp"] = r.timestamp
    obj["key"] = enc(r.key)
    obj["value"] = enc(r.value)
    obj["headers"] = [{"key": h.key, "value": enc(h.value)} for h in r.headers]
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


def _structured_decoder(name: str):
    if name == "offsets":
        from kafkalog_cli.formats.internal.consumer_offsets import decode_offsets_record

        return lambda r: decode_offsets_record(r.key, r.value)
    if name == "transactions":
        from kafkalog_cli.formats.internal.transaction_state import decode_transaction_record

        return lambda r: decode_transaction_record(r.key, r.value)
    if name == "metadata":
        from kafkalog_cli.formats.internal.cluster_metadata import decode_metadata_record

        def dec(r: Record):
            m = decode_metadata_record(r.value)
            return asdict(m) if hasattr(m, "__dataclass_fields__") else m
        return dec
    return None


def _note(s: str) -> None:
    import sys

    sys.stderr.write(f"kafkalog: note: {one_line(s)}\n")


class JsonDumper:
    def __init__(self, out, *, deep: bool, payload_encoding: str = "utf8", decoder: str | None = None,
                 max_bytes: int = INT_MAX, filters: Filters | None = None):
        self.out = out
        self.deep = deep or (filters is not None and filters.needs_records) or decoder is not None
        self.enc = payload_encoder(payload_encoding)
        self.decode = _structured_decoder(decoder) if decoder else None
        self.max_bytes = max_bytes
        self.filters = filters
        self._lines: list[str] = []

    def _emit(self, obj: dict) -> None:
        self._lines.append(dumps(obj))
        if len(self._lines) >= 1024:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self.out.write(("\n".join(self._lines) + "\n").encode("utf-8", "surrogatepass"))
            self._lines.clear()

    def dump(self, given: str) -> None:
        path = Path(given)
        suffix = path.name[path.name.rfind("."):] if "." in path.name else ""
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
        valid = pos
        try:
            for b, records in selected_batches(buf, pos, end, f, self.deep):
                valid = b.position + b.size
                if self.deep and records is None:
                    records = b.records()
                self._emit(batch_object(b, given))
                if records is None:
                    continue
                template = record_template(b)
                for r in records if f is None else f.shown(records):
                    obj = record_object(r, b, self.enc, template)
                    if self.decode is not None and not b.is_control:
                        try:
                            obj["decoded"] = self.decode(r)
                        except KafkalogError as e:
                            raise e.in_record(r.offset, b.position) from None
                    self._emit(obj)
        except KafkalogError as e:
            raise e.located(path=given)
        if end > valid and f is None and self.max_bytes == INT_MAX:
            self._emit(TRAILING_BYTES.object(file=given, position=valid, size=end - valid))


def dump_json(targets, out, *, deep: bool, payload_encoding: str, decoder: str | None = None,
              max_bytes: int = INT_MAX, filters: Filters | None = None) -> None:
    d = JsonDumper(out, deep=deep, payload_encoding=payload_encoding, decoder=decoder, max_bytes=max_bytes,
                   filters=filters)
    for t in targets:
        if filters is not None and filters.spent:
            break
        d.dump(t)
