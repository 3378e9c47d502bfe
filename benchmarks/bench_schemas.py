"""Benchmark: Avro values decoded by kafkalog's schema decoder (ops/schema_decode.py: the
5-byte prefix read, the writer found by id, resolved to the subject's reader) beside
`fastavro.schemaless_reader` called in a loop over the same payloads after their prefix, the
least any decoder of Confluent's framing must do (one call per record). Both per CPU-second
(time.process_time), best of --repeat runs; the target is >= 80%.

    python benchmarks/bench_schemas.py [--records N] [--repeat N] [--export]

--export also times (per CPU-second) `export --to parquet` of a log dir holding those records: typed columns
(--decode-schemas) beside today's bytes columns (the target is at least half the rate), and the
typed columns built value by value (render/schema_arrow.COLUMNAR off: what the columnar path
saves). KAFKALOG_PURE_PYTHON=1 runs them on the pure-Python core.

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
from make_logdir import ORDER_V2


def payloads(n: int, schema) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for i in range(n):
        bio = io.BytesIO()
        bio.write(b"\x00" + (7).to_bytes(4, "big"))
        fastavro.schemaless_writer(
            bio,
            parsed,
            {
                "id": i,
                "amount": decimal.Decimal(f"{i % 1000}.{i % 100:02d}"),
                "status": "PAID",
                "created": datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc),
                "day": datetime.date(2024, 5, 1),
                "uid": uuid.UUID(int=i),
                "tags": ["a", "b"],
                "attrs": {"k": i},
                "note": None if i % 2 else "n",
                "shipping": {"city": "c", "weight": 1.5},
                "channel": "web",
            },
        )
        out.append(bio.getvalue())
    return out


def without_logical_types(schema):
    """An Avro schema with its logicalType attributes taken out: fastavro then returns the
    values as written (ints, bytes, strings), as the typed export reads them."""
    if isinstance(schema, list):
        return [without_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--workdir", default="/tmp/kafkalog-bench-schemas")
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
    if a.export:
        plain = fastavro.parse_schema(without_logical_types(ORDER_V2))

        def reference_plain():
            reader = fastavro.schemaless_reader
            BytesIO = io.BytesIO
            for d in data:
                reader(BytesIO(d[5:]), plain, None)

        plain_s = min(cpu(reference_plain) for _ in range(a.repeat))
        print(
            f"  the same, logical types left out:  {a.records / plain_s:,.0f} records/CPU-s "
            "(what the typed export reads with: its ceiling)"
        )
    print(
        f"kafkalog SchemaDecoder.decode:   {a.records / our_s:,.0f} records/CPU-s "
        f"({100 * ref_s / our_s:.0f}% of fastavro; target >= 80%)"
    )
    if a.export:
        export_rates(Path(a.workdir), data, a.repeat)


def logdir_of(root: Path, data: list[bytes]) -> Path:
    """A log dir with the payloads in `orders-0` and their schema in `_schemas-0`."""
    import shutil

    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    if root.exists():
        shutil.rmtree(root)
    (root / "orders-0").mkdir(parents=True)
    (root / "_schemas-0").mkdir()
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=bench\n")
    key = json.dumps(
        {"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}
    ).encode()
    value = json.dumps(
        {"subject": "orders-value", "version": 1, "id": 7, "schema": json.dumps(ORDER_V2)}
    ).encode()
    (root / "_schemas-0" / "00000000000000000000.log").write_bytes(
        build_v2_batch([SimpleRecord(key=key, value=value, timestamp=0)], 0)
    )
    with open(root / "orders-0" / "00000000000000000000.log", "wb") as f:
        for base in range(0, len(data), 500):
            f.write(
                build_v2_batch(
                    [
                        SimpleRecord(key=None, value=d, timestamp=1_700_000_000_000)
                        for d in data[base : base + 500]
                    ],
                    base,
                )
            )
    return root


def export_rates(work: Path, data: list[bytes], repeat: int) -> None:
    import shutil

    from kafkalog_cli.commands.schema_options import schema_spec
    from kafkalog_cli.spark.export import ExportOptions, export

    logdir = logdir_of(work / "logdir", data)
    part = [str(logdir / "orders-0")]

    def run(spec):
        out = work / "out"
        shutil.rmtree(out, ignore_errors=True)
        t = time.process_time()  # this process and its threads (jobs=1 runs in process)
        export(part, str(out), ExportOptions(to="parquet", schemas=spec), engine="local", jobs=1)
        return time.process_time() - t

    from kafkalog_cli.render import schema_arrow

    run(None)  # the first export imports the Parquet writer: not timed
    plain = min(run(None) for _ in range(repeat))
    spec = schema_spec([str(logdir)], True, (), (), None)
    run(spec)  # the first typed export imports what pa.array needs (pandas, 0.3 s): not timed
    typed = min(run(spec) for _ in range(repeat))
    schema_arrow.COLUMNAR = False
    try:
        one_by_one = min(run(spec) for _ in range(repeat))
    finally:
        schema_arrow.COLUMNAR = True
    n = len(data)
    print(f"export --to parquet, value bytes:         {n / plain:,.0f} records/CPU-s")
    print(
        f"export --to parquet --decode-schemas:     {n / typed:,.0f} records/CPU-s "
        f"({100 * plain / typed:.0f}% of the bytes export; target >= 50%)"
    )
    print(
        f"  the same, built value by value:         {n / one_by_one:,.0f} records/CPU-s "
        f"({100 * plain / one_by_one:.0f}%)"
    )


if __name__ == "__main__":
    main()
