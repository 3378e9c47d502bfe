"""dump-log's JSON Lines with keys and values decoded by their schemas (ops/schema_decode.py).

The JSON renderer writes its lines through `SchemaJsonWriter`, asked for base64 payloads; each
record line has its key and value decoded where a schema wrote them, as `key`/`value` JSON
values beside `key_schema`/`value_schema` ({id, subject, version, type}). What is not decoded
keeps the payload encoding asked for, with `value_schema: {id, error}`, and a warning naming the
file and offset goes to stderr: no record is dropped."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import uuid

import orjson

from kafkalog_cli.ops.schema_decode import Decoded, SchemaDecoder, Undecoded, run_decoder
from kafkalog_cli.ops.schema_mask import WITHHELD
from kafkalog_cli.render.jsonl import dumps, payload_encoder

_RECORD = b'{"kind": "record"'


def json_value(v, enc):
    """A decoded value as JSON-native values: bytes as the payload encoding (Avro's JSON
    encoding when utf8: one character per byte), decimals as exact text, times as ISO-8601."""
    if isinstance(v, dict):
        return {str(k): json_value(x, enc) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x, enc) for x in v]
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return enc(bytes(v))
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return str(v)


def _avro_bytes(b: bytes) -> str:
    return b.decode("latin-1")


class SchemaJsonWriter:
    """A binary stream for the JSON renderer that decodes record lines on their way to `out`."""

    def __init__(self, out, err, decoder: SchemaDecoder, payload_encoding: str):
        self.out, self.err, self.decoder = out, err, decoder
        self.enc = payload_encoder(payload_encoding)
        self.bytes_enc = _avro_bytes if payload_encoding == "utf8" else self.enc
        self._rest = b""
        self.undecoded = 0

    def write(self, data) -> int:
        data = bytes(data)
        chunk = self._rest + data
        lines = chunk.split(b"\n")
        self._rest = lines.pop()
        self.out.write(b"".join(self._line(x) + b"\n" for x in lines))
        return len(data)

    def flush(self) -> None:
        if self._rest:
            self.out.write(self._line(self._rest))
            self._rest = b""
        self.out.flush()

    def _line(self, line: bytes) -> bytes:
        if not line.startswith(_RECORD):
            return line
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:  # a file name that is not UTF-8 (its surrogates kept)
            obj = json.loads(line.decode("utf-8", "surrogatepass"))
        for field, got in decode_record(obj, self.decoder, self.enc, self.bytes_enc):
            self.undecoded += 1
            self.err.write(
                f"kafkalog: {obj.get('file')}: offset {obj.get('offset')}: {field} "
                f"{kept_as(self.decoder)}: "
                f"{got.reason}\n".encode("utf-8", "backslashreplace")
            )
        return dumps(obj).encode("utf-8", "surrogatepass")


def kept_as(decoder: SchemaDecoder) -> str:
    """What became of a key or value that did not decode, as the notes on stderr say it."""
    return f"not decoded, {WITHHELD}" if decoder.mask is not None else "kept as bytes"


def decode_record(obj: dict, decoder: SchemaDecoder, enc, bytes_enc) -> list[tuple[str, Undecoded]]:
    """A record object whose key, value and header values are base64 (record_object's, or a line
    of them), in place: key and value decoded where a schema wrote them, with `key_schema`/
    `value_schema` after the rest; what is not decoded, and the header values, in `enc`. The one
    decoding of dump-log --format json and export --to jsonl. -> the fields kept as bytes, and why."""
    if obj.get("is_control"):
        _reencoded(obj, enc)
        return []
    headers = [
        (h["key"], None if h["value"] is None else base64.b64decode(h["value"]))
        for h in obj.get("headers", ())
    ]
    kept: list[tuple[str, Undecoded]] = []
    for field, is_key in (("key", True), ("value", False)):
        if field not in obj:
            continue
        raw = obj[field]
        data = None if raw is None else base64.b64decode(raw)
        got = decoder.decode(obj.get("topic") or "", is_key, data, headers)
        if isinstance(got, Decoded):
            obj[field] = json_value(got.value, bytes_enc)
            obj[f"{field}_schema"] = got.schema_object()
            continue
        obj[field] = enc(data)
        if isinstance(got, Undecoded):
            obj[f"{field}_schema"] = got.schema_object()
            if decoder.mask is not None:
                # masking: bytes that did not decode could hold what is masked; they are withheld
                obj[field] = None
                obj[f"{field}_schema"]["error"] += f" ({WITHHELD})"
            kept.append((field, got))
    if "headers" in obj:
        obj["headers"] = [{"key": k, "value": enc(v)} for k, v in headers]
    return kept


def _reencoded(obj: dict, enc) -> None:
    for field in ("key", "value"):
        if obj.get(field) is not None:
            obj[field] = enc(base64.b64decode(obj[field]))
    if "headers" in obj:
        obj["headers"] = [
            {
                "key": h["key"],
                "value": None if h["value"] is None else enc(base64.b64decode(h["value"])),
            }
            for h in obj["headers"]
        ]


class JsonDecoding:
    """export --to jsonl's decoding of record objects (`record`, on objects whose payloads are in
    `raw`: base64), with the run's schemas (a commands.schema_options.SchemaSpec): one decoder a
    process (schema_decode.run_decoder)."""

    raw = staticmethod(lambda b: None if b is None else base64.b64encode(b).decode("ascii"))

    def __init__(self, spec, payload_encoding: str):
        self.decoder = run_decoder(spec)
        self.enc = payload_encoder(payload_encoding)
        self.bytes_enc = _avro_bytes if payload_encoding == "utf8" else self.enc

    def record(self, obj: dict) -> list[tuple[str, Undecoded]]:
        return decode_record(obj, self.decoder, self.enc, self.bytes_enc)

    @property
    def kept_as(self) -> str:
        return kept_as(self.decoder)
