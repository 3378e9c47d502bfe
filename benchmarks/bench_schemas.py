"""Benchmark: Avro values decoded by kafkalog's schema decoder (ops/schema_decode.py: the
5-byte prefix read, the writer found by id, resolved to the subject's reader) beside
`fastavro.schemaless_reader` called in a loop over the same payloads after their prefix, the
least any decoder of Confluent's framing must do (one call per record). Both per CPU-second
(time.process_time), best of --repeat runs; the target is >= 80%.

    python benchmarks/bench_schemas.py [--records N] [--repeat N]

The payloads are the orders of tests/fixtures/schemas (records, decimals, enums, timestamps,
dates, uuids, arrays, maps, unions), serialized by fastavro as confluent-kafka's AvroSerializer
frames them."""
from __future__ import annotations

import argparse
import datetime
import decimal
import io
import json
import sys
import time
import uuid
from pathlib import Path

import fastavro

from kafkalog_cli.ops.schema_decode import Decoded, SchemaDecoder
from kafkalog_cli.ops.schema_registry import Registry, SchemaVersion

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "schemas"))
from make_logdir import ORDER_V2  # noqa: E402


def payloads(n: int, schema) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for i in range(n):
        bio = io.BytesIO()
        bio.write(b"\x00" + (7).to_bytes(4, "big"))
        fastavro.schemaless_writer(bio, parsed, {
            "id": i, "amount": decimal.Decimal(f"{i % 1000}.{i % 100:02d}"), "status": "PAID",
            "created": datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc), "day": datetime.date(2024, 5, 1),
            "uid": uuid.UUID(int=i), "tags": ["a", "b"], "attrs": {"k": i}, "note": None if i % 2 else "n",
            "shipping": {"city": "c", "weight": 1.5}, "channel": "web"})
        out.append(bio.getvalue())
    return out


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    data = payloads(a.records, ORDER_V2)
    reg = Registry()
    reg.add(SchemaVersion("orders-value", 1, 7, json.dumps(ORDER_V2)))
    parsed = fastavro.parse_schema(ORDER_V2)

    def reference():
        reader = fastavro.schemaless_reader
        BytesIO = io.BytesIO
        for d in data:
            reader(BytesIO(d[5:]), parsed, None)

    def ours():
        dec = SchemaDecoder(reg)
        decode = dec.decode
        for d in data:
            got = decode("orders", False, d)
        assert isinstance(got, Decoded)

    ref_s = min(cpu(reference) for _ in range(a.repeat))
    our_s = min(cpu(ours) for _ in range(a.repeat))
    print(f"records: {a.records}")
    print(f"fastavro.schemaless_reader loop: {a.records / ref_s:,.0f} records/CPU-s")
    print(f"kafkalog SchemaDecoder.decode:   {a.records / our_s:,.0f} records/CPU-s "
          f"({100 * ref_s / our_s:.0f}% of fastavro; target >= 80%)")


if __name__ == "__main__":
    main()
