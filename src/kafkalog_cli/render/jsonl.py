"""JSON Lines: one object per line, snake_case, `kind` first. The schema is in README.md and
kafkalog-dump-log(1); the Spark data source yields the same fields.

    {"kind": "file", "file": ..., "type": "log"|"index"|"timeindex"|"txnindex"|"snapshot"|"checkpoint"}
    {"kind": "batch", "file", "base_offset", "last_offset", "count", "position", "size", "magic",
     "codec", "crc", "computed_crc", "is_valid", "timestamp_type", "base_timestamp", "max_timestamp",
     "producer_id", "producer_epoch", "base_sequence", "last_sequence", "partition_leader_epoch",
     "is_transactional", "is_control", "delete_horizon_ms"}
    {"kind": "record", "offset", "timestamp", "timestamp_type", "key", "value",
     "headers": [{"key", "value"}], "sequence", "base_offset", "producer_id", "producer_epoch",
     "is_transactional", "is_control", ["control": {...}], ["decoded": {...}]}
    {"kind": "trailing_bytes", "file", "position", "size"}
    {"kind": "index_entry", "offset", "position"} / {"kind": "time_index_entry", "timestamp", "offset"}
    {"kind": "aborted_txn", ...} / {"kind": "producer_state", ...}
"""
from __future__ import annotations

import base64
import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from kafkalog_cli.errors import KafkalogError, one_line
from kafkalog_cli.formats.control import EndTransactionMarker, decode_control
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.records import Record, RecordBatch, iter_batches
from kafkalog_cli.render.kafka import INT_MAX, Filters, Verdict, start_position
from kafkalog_cli.storage.segment import map_file

def _json_default(o):
    # decoded internal records may hold raw bytes (SCRAM salts, group assignments)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode("ascii")
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=_json_default).encode


def payload_encoder(encoding: str) -> Callable[[bytes | None], str | None]:
    if encoding == "hex":
        return lambda b: None if b is None else b.hex()
    if encoding == "base64":
        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    return lambda b: None if b is None else java_utf8(b)


def batch_object(b: RecordBatch, file: str) -> dict:
    computed = b.compute_crc()
    return {
        "kind": "batch",
        "file": file,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "count": b.records_count,
        "position": b.position,
        "size": b.size,
        "magic": b.magic,
        "codec": b.compression.kafka_name,
        "crc": b.crc,
        "computed_crc": computed,
        "is_valid": b.is_valid(),
        "timestamp_type": b.timestamp_type.kafka_name,
        "base_timestamp": b.base_timestamp,
        "max_timestamp": b.max_timestamp,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": b.last_sequence,
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
    }


def record_object(r: Record, b: RecordBatch, enc) -> dict:
    obj = {
        "kind": "record",
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": b.timestamp_type.kafka_name,
        "key": enc(r.key),
        "value": enc(r.value),
        "headers": [{"key": h.key, "value": enc(h.value)} for h in r.headers],
        "sequence": r.sequence,
        "base_offset": b.base_offset,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
    }
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
        self._lines.append(_dumps(obj))
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
                self._emit({"kind": "file", "file": given, "type": suffix[1:]})
                self.dump_log(path, given)
            elif suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
                from kafkalog_cli.render.index_json import index_objects

                self._emit({"kind": "file", "file": given, "type": suffix[1:]})
                for obj in index_objects(path):
                    self._emit(obj)
            else:
                self._emit({"kind": "file", "file": given, "type": "unknown", "skipped": True})
        finally:
            self.flush()

    def dump_log(self, path: Path, given: str) -> None:
        buf = map_file(path)
        end = min(len(buf), self.max_bytes)
        f = self.filters
        pos = 0
        if f is not None and path.name.endswith(".log"):
            from kafkalog_cli.storage.names import offset_from_name

            base = offset_from_name(path.name)
            if base is not None:
                pos = start_position(path, base, f, _note)
        valid = pos
        try:
            for b in iter_batches(buf, pos, end):
                valid = b.position + b.size
                if f is not None:
                    verdict = f.judge_batch(b, self.deep)
                    if verdict is Verdict.STOP:
                        return
                    if verdict is Verdict.SKIP:
                        continue
                records = b.records() if self.deep else None
                if f is not None and f.needs_records and not f.holds_match(records):
                    continue
                self._emit(batch_object(b, given))
                if records is not None:
                    for r in records:
                        if f is not None:
                            verdict = f.take_record(r)
                            if verdict is Verdict.STOP:
                                return
                            if verdict is Verdict.SKIP:
                                continue
                        obj = record_object(r, b, self.enc)
                        if self.decode is not None and not b.is_control:
                            try:
                                obj["decoded"] = self.decode(r)
                            except KafkalogError as e:
                                from kafkalog_cli.render.kafka import _at_record

                                raise _at_record(e, b, r) from None
                        self._emit(obj)
        except KafkalogError as e:
            raise e.located(path=given)
        if end > valid and f is None and self.max_bytes == INT_MAX:
            self._emit({"kind": "trailing_bytes", "file": given, "position": valid, "size": end - valid})


def dump_json(targets, out, *, deep: bool, payload_encoding: str, parser=None, decoder: str | None = None,
              max_bytes: int = INT_MAX, from_offset=None, to_offset=None, from_time=None, to_time=None,
              key=None, limit=None) -> None:
    active = dict(from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time,
                  key=key.encode("utf-8") if key is not None else None, limit=limit)
    filters = Filters(**active) if any(v is not None for v in active.values()) else None
    d = JsonDumper(out, deep=deep, payload_encoding=payload_encoding, decoder=decoder, max_bytes=max_bytes,
                   filters=filters)
    for t in targets:
        if filters is not None and filters.limit is not None and filters.limit <= 0:
            break
        d.dump(t)
