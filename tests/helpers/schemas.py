"""What the schema tests check on a log dir made from confluent-kafka's serializers (made by
tests/fixtures/schemas/make_logdir.py): dump-log --decode-schemas against the inputs; and
make_logdir itself, loaded from the fixture dir."""

import json
import os
import struct
from pathlib import Path

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import (
    RecordBatch,
    SimpleRecord,
    TimestampType,
    build_v2_batch,
    iter_batches,
)

# the reader of orders-value is its latest version (2): version 1's records read with its default
ORDERS_V2_DEFAULT = {"channel": "web"}


def decoded_records(runner, log_dir, *more: str):
    """(exit code, stderr, {topic: [record objects]}) of dump-log --decode-schemas on the log dir."""
    res = runner.invoke(
        cli, ["dump-log", str(log_dir), "--format", "json", "--decode-schemas", *more]
    )
    out: dict = {}
    for line in res.stdout.splitlines():
        obj = json.loads(line)
        if obj["kind"] == "record":
            out.setdefault(obj["topic"], []).append(obj)
    return res.exit_code, res.stderr, out


def assert_decoded_as_given(decoded, inputs) -> None:
    """Every serialized value decodes to what its serializer was given; the one without a
    schema (an id hard-deleted) and the garbage are kept as bytes, named on stderr; exit 1."""
    code, err, topics = decoded
    assert code == 1, err
    for topic in ("customers", "events", "readings"):
        assert [r["value"] for r in topics[topic]] == inputs[topic], topic
        assert all(r["value_schema"]["subject"] == f"{topic}-value" for r in topics[topic])
    orders = topics["orders"]
    want = [None if i is None else {**ORDERS_V2_DEFAULT, **i} for i in inputs["orders"]]
    assert [r["value"] for r in orders[:-1]] == want[:-1]
    assert [r["value_schema"]["version"] for r in orders[:-1]] == [1, 1, 1, 2, 2, 2, 2]
    assert {r["value_schema"].get("reader_version", 2) for r in orders[:-1]} == {2}
    assert [r["key"] for r in orders[:6]] == [f"order-{i}" for i in range(6)]
    assert "guid" in orders[6]["value_schema"]  # the header framing
    garbage, legacy = orders[-1], topics["legacy"][0]
    assert (
        "error" in garbage["value_schema"]
        and garbage["value"] == "\x00" * 4 + chr(3) + "\ufffd" * 3
    )
    gone = "schema id 10 (legacy-value version 1) was deleted for good (a hard delete)"
    assert legacy["value_schema"] == {"id": 10, "error": gone}
    assert (
        f"orders-0/00000000000000000000.log: offset {garbage['offset']}: value kept as bytes: AVRO payload its "
        "schema (id 3) does not read: " in err
    )
    assert f"legacy-0/00000000000000000000.log: offset 0: value kept as bytes: {gone}\n" in err
    assert err.endswith("kafkalog: 2 keys or values were not decoded and are kept as bytes\n")
    events = topics["events"]
    assert [r["value_schema"]["message_indexes"] for r in events] == [[0], [0], [1], [1]]


def make_logdir():
    """tests/fixtures/schemas/make_logdir.py as a module (its plan(), schemas and PRODUCE script)."""
    import importlib.util

    from tests.helpers.paths import SCHEMAS

    spec = importlib.util.spec_from_file_location("make_logdir", SCHEMAS / "make_logdir.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replace_record(seg: Path, b: RecordBatch, i: int, *, key=..., value=..., headers=...) -> None:
    """Record i of batch b of segment `seg` written again with the key, value or headers given:
    the batch built again with its other fields kept (its CRC right), the segment's mtime kept
    and its offset index's later positions moved by the size change."""
    recs = [
        SimpleRecord(r.key, r.value, r.timestamp, r.headers, offset=r.offset) for r in b.records()
    ]
    r = recs[i]
    recs[i] = SimpleRecord(
        r.key if key is ... else key,
        r.value if value is ... else value,
        r.timestamp,
        r.headers if headers is ... else headers,
        offset=r.offset,
    )
    new = build_v2_batch(
        recs,
        b.base_offset,
        compression=b.compression,
        timestamp_type=b.timestamp_type,
        log_append_time=b.max_timestamp
        if b.timestamp_type is TimestampType.LOG_APPEND_TIME
        else None,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
        is_transactional=b.is_transactional,
        partition_leader_epoch=b.partition_leader_epoch,
        last_offset_delta=b.last_offset_delta,
        max_timestamp=b.max_timestamp,
    )
    data = seg.read_bytes()
    st = seg.stat()
    seg.write_bytes(data[: b.position] + new + data[b.position + b.size :])
    os.utime(seg, ns=(st.st_atime_ns, st.st_mtime_ns))
    index = seg.with_suffix(".index")
    delta = len(new) - b.size
    if delta and index.is_file() and not index.is_symlink():
        entries = bytearray(index.read_bytes())
        for k in range(0, len(entries) - len(entries) % 8, 8):
            rel, pos = struct.unpack_from(">ii", entries, k)
            if pos > b.position:
                struct.pack_into(">ii", entries, k, rel, pos + delta)
        index.write_bytes(bytes(entries))


def edit_schema(log_dir: Path, subject: str, version: int, **fields) -> None:
    """The `_schemas` SCHEMA record of `subject` version `version` in a copy of the fixture's log
    dir written again with `fields` changed in its value (the registry's JSON)."""
    seg = log_dir / "_schemas-0" / "00000000000000000000.log"
    for b in iter_batches(seg.read_bytes()):
        for i, r in enumerate(b.records()):
            if (
                r.key
                and r.value
                and json.loads(r.key)
                == {
                    "keytype": "SCHEMA",
                    "subject": subject,
                    "version": version,
                    "magic": 1,
                }
            ):
                replace_record(
                    seg, b, i, value=json.dumps({**json.loads(r.value), **fields}).encode()
                )
                return
    raise AssertionError(f"no SCHEMA record of {subject} version {version}")


def edit_value(log_dir: Path, partition: str, offset: int, value: bytes) -> None:
    """The value of the record at `offset` of a partition's first segment, in a copy of the
    fixture's log dir, replaced."""
    seg = log_dir / partition / "00000000000000000000.log"
    for b in iter_batches(seg.read_bytes()):
        for i, r in enumerate(b.records()):
            if r.offset == offset:
                replace_record(seg, b, i, value=value)
                return
    raise AssertionError(f"no offset {offset} in {partition}")


def edit_schemas_record(log_dir: Path, offset: int, *, key=..., value=...) -> None:
    """The key or value (bytes, or None) of the `_schemas` record at `offset`, in a copy of the
    fixture's log dir, replaced."""
    seg = log_dir / "_schemas-0" / "00000000000000000000.log"
    for b in iter_batches(seg.read_bytes()):
        for i, r in enumerate(b.records()):
            if r.offset == offset:
                replace_record(seg, b, i, key=key, value=value)
                return
    raise AssertionError(f"no offset {offset} in _schemas-0")
