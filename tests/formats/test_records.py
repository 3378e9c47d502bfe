"""formats.records against Kafka's own reader (legacy/*/expected.json), public test vectors,
Kafka's own builder (byte-identical uncompressed batches), and hypothesis round trips."""

from __future__ import annotations

import json
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import CorruptRecordError, InvalidRecordError
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    Header,
    SimpleRecord,
    TimestampType,
    build_legacy_batch,
    build_v2_batch,
    empty_v2_batch,
    iter_batches,
    valid_end,
)
from tests.helpers.paths import CORPUS, FIXTURES

LEGACY = sorted(p for p in (CORPUS / "legacy").iterdir() if (p / "expected.json").exists())
VECTORS = json.loads((FIXTURES / "vectors" / "vectors.json").read_text())


def _batches_of(case):
    exp = json.loads((case / "expected.json").read_text())
    for f in exp["files"]:
        buf = (case / f["file"]).read_bytes()
        yield f, buf, list(iter_batches(buf))


@pytest.mark.parametrize("case", LEGACY, ids=[c.name for c in LEGACY])
def test_every_field_matches_kafkas_own_reader(case):
    for f, buf, batches in _batches_of(case):
        assert len(batches) == f["batchCount"]
        assert len(buf) - valid_end(buf) == f["trailingBytes"]
        for b, eb in zip(batches, f["batches"]):
            got = {
                "position": b.position,
                "sizeInBytes": b.size,
                "magic": b.magic,
                "isValid": b.is_valid(),
                "crc": b.crc,
                "compression": b.compression.kafka_name,
                "timestampType": b.timestamp_type.kafka_name,
                "maxTimestamp": b.max_timestamp,
                "baseOffset": b.base_offset,
                "lastOffset": b.last_offset,
                "nextOffset": b.next_offset,
                "countOrNull": b.records_count,
                "producerId": b.producer_id,
                "producerEpoch": b.producer_epoch,
                "baseSequence": b.base_sequence,
                "lastSequence": b.last_sequence,
                "partitionLeaderEpoch": b.partition_leader_epoch,
                "isTransactional": b.is_transactional,
                "isControlBatch": b.is_control,
            }
            assert got == {k: eb[k] for k in got}
            records = b.records()
            assert len(records) == len(eb["records"])
            for r, er in zip(records, eb["records"]):
                assert (r.offset, r.timestamp, r.key_size, r.value_size, r.sequence) == (
                    er["offset"],
                    er["timestamp"],
                    er["keySize"],
                    er["valueSize"],
                    er["sequence"],
                )
                if er.get("keyB64") is not None:
                    import base64

                    assert r.key == base64.b64decode(er["keyB64"])
                if er.get("valueB64") is not None:
                    import base64

                    assert r.value == base64.b64decode(er["valueB64"])
                if b.magic < 2:
                    assert r.crc == er["crc"] and r.valid == er["isValid"]


_DECODED = re.compile(r"(\w+)=(\S+)")


@pytest.mark.parametrize(
    "vec",
    [v for v in VECTORS if v["hex"] and v["decoded"] and v["decoded"][0].startswith("magic=")],
    ids=lambda v: v["title"][:60],
)
def test_public_vectors_decode_as_their_sources_say(vec):
    buf = bytes.fromhex(vec["hex"])
    batches = list(iter_batches(buf))
    assert len(batches) == len(vec["decoded"])
    total = 0
    for b, line in zip(batches, vec["decoded"]):
        want = dict(_DECODED.findall(line))
        assert b.magic == int(want["magic"])
        if b.magic >= 2 or b.compression == Compression.NONE:
            # Compressed legacy wrappers: these sources number inner messages their own way;
            # Kafka's (absolute for v0, relative to the wrapper for v1) is checked by the goldens.
            assert b.base_offset == int(want["base"])
        assert b.compression.kafka_name == want["codec"]
        assert b.is_valid() == (want["crc_ok"] == "True")
        if "count" in want:
            assert b.records_count == int(want["count"])
            assert b.producer_id == int(want["pid"]) and b.base_sequence == int(want["seq"])
            assert b.max_timestamp == int(want["maxTs"])
        if "quirk" in vec["title"]:
            with pytest.raises(InvalidRecordError):  # kafka-dump-log fails on it too
                b.records()
            return
        total += len(b.records())
    if vec["records"] is not None:
        assert total == vec["records"]


def _simple(records):
    return [SimpleRecord(r.key, r.value, r.timestamp, r.headers, r.offset) for r in records]


@pytest.mark.parametrize("case", ["v2-headers", "v2-no-timestamp", "v2-txn", "v2-empty-batch"])
def test_uncompressed_v2_batches_are_byte_identical_to_kafkas_builder(case):
    checked = 0
    for _, buf, batches in _batches_of(CORPUS / "legacy" / case):
        for b in batches:
            if b.compression != Compression.NONE:
                continue
            recs = b.records()
            if not recs:
                built = empty_v2_batch(
                    b.base_offset,
                    b.last_offset_delta,
                    max_timestamp=b.max_timestamp,
                    producer_id=b.producer_id,
                    producer_epoch=b.producer_epoch,
                    base_sequence=b.base_sequence,
                    is_transactional=b.is_transactional,
                    is_control=b.is_control,
                    partition_leader_epoch=b.partition_leader_epoch,
                )
            else:
                built = build_v2_batch(
                    _simple(recs)
                    if b.timestamp_type == TimestampType.CREATE_TIME
                    else [
                        SimpleRecord(r.key, r.value, b.base_timestamp + 0, r.headers, r.offset)
                        for r in recs
                    ],
                    b.base_offset,
                    timestamp_type=b.timestamp_type,
                    log_append_time=b.max_timestamp,
                    producer_id=b.producer_id,
                    producer_epoch=b.producer_epoch,
                    base_sequence=b.base_sequence,
                    is_transactional=b.is_transactional,
                    is_control=b.is_control,
                    partition_leader_epoch=b.partition_leader_epoch,
                    last_offset_delta=b.last_offset_delta,
                    max_timestamp=b.max_timestamp,
                )
            assert built == bytes(b.data)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize(
    "case,magic,ts_type",
    [
        ("v0-none", 0, TimestampType.CREATE_TIME),
        ("v1-none-create", 1, TimestampType.CREATE_TIME),
        ("v1-none-logappend", 1, TimestampType.LOG_APPEND_TIME),
    ],
)
def test_uncompressed_legacy_messages_are_byte_identical_to_kafkas_builder(case, magic, ts_type):
    for _, buf, batches in _batches_of(CORPUS / "legacy" / case):
        for b in batches:
            (r,) = b.records()
            built = build_legacy_batch(
                [SimpleRecord(r.key, r.value, r.timestamp, (), r.offset)],
                r.offset,
                magic=magic,
                timestamp_type=ts_type,
                log_append_time=b.max_timestamp,
            )
            assert built == bytes(b.data)


def test_an_incomplete_trailing_batch_ends_iteration_silently():
    batch = build_v2_batch([SimpleRecord(b"k", b"v", 1000)], 0)
    buf = batch + batch[:30]
    assert [b.position for b in iter_batches(buf)] == [0]
    assert valid_end(buf) == len(batch)


def test_seventeen_bytes_or_fewer_left_are_not_a_batch():
    batch = build_v2_batch([SimpleRecord(b"k", b"v", 1000)], 0)
    assert len(list(iter_batches(batch + b"\0" * 17))) == 1


def test_a_size_below_14_is_corrupt_and_names_the_position():
    batch = build_v2_batch([SimpleRecord(b"k", b"v", 1000)], 0)
    bad = batch + struct.pack(">qi", 1, 13) + b"\0" * 20
    with pytest.raises(CorruptRecordError) as e:
        list(iter_batches(bad))
    assert e.value.position == len(batch)
    assert "smaller than minimum record overhead (14)" in str(e.value)


def test_a_v2_batch_below_61_bytes_fails_validation():
    raw = bytearray(struct.pack(">qiib", 0, 30, 0, 2) + b"\0" * 30)
    (b,) = iter_batches(bytes(raw))
    assert not b.is_valid()
    with pytest.raises(CorruptRecordError, match="smaller than the minimum allowed overhead 61"):
        b.ensure_valid()


def test_a_flipped_bit_fails_the_crc_with_both_values():
    raw = bytearray(build_v2_batch([SimpleRecord(b"k", b"value", 1000)], 0))
    raw[-2] ^= 0x10
    (b,) = iter_batches(bytes(raw))
    with pytest.raises(CorruptRecordError, match=r"stored crc = \d+, computed crc = \d+"):
        b.ensure_valid()


def test_garbage_in_a_compressed_payload_is_an_invalid_record_error():
    raw = bytearray(
        build_v2_batch([SimpleRecord(b"k", b"v" * 200, 1000)], 0, compression=Compression.GZIP)
    )
    raw[70:80] = b"\xff" * 10
    (b,) = iter_batches(bytes(raw))
    with pytest.raises(InvalidRecordError) as e:
        b.records()
    assert e.value.position == 0


def test_v1_wrapper_offsets_are_relative_and_v0_absolute():
    recs = [SimpleRecord(b"k%d" % i, b"v", 1000 + i) for i in range(3)]
    for magic in (0, 1):
        raw = build_legacy_batch(recs, 100, magic=magic, compression=Compression.GZIP)
        (b,) = iter_batches(raw)
        assert b.last_offset == 102 and b.base_offset == 100
        assert [r.offset for r in b.records()] == [100, 101, 102]


def test_v1_log_append_time_overrides_inner_timestamps():
    recs = [SimpleRecord(b"k", b"v", 5), SimpleRecord(b"k", b"v", 7)]
    raw = build_legacy_batch(
        recs,
        0,
        magic=1,
        compression=Compression.SNAPPY,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=99,
    )
    (b,) = iter_batches(raw)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in b.records()] == [99, 99]


def test_v1_log_append_time_without_a_time_keeps_the_records_newest():
    recs = [SimpleRecord(b"k", b"v", 5), SimpleRecord(b"k", b"v", 7)]
    raw = build_legacy_batch(
        recs,
        0,
        magic=1,
        compression=Compression.SNAPPY,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    (b,) = iter_batches(raw)
    assert (b.timestamp_type, b.max_timestamp) == (TimestampType.LOG_APPEND_TIME, 7)


# ------------------------------------------------------------------ hypothesis round trips
headers = st.lists(
    st.builds(Header, st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3
)
records = st.lists(
    st.builds(
        SimpleRecord,
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=60)),
        st.integers(0, 2**41),
        headers,
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=150, deadline=None)
@given(
    recs=records,
    base=st.integers(0, 2**40),
    codec=st.sampled_from(list(Compression)),
    pid=st.integers(-1, 2**40),
    seq=st.integers(-1, 2**31 - 1),
)
def test_v2_round_trip(recs, base, codec, pid, seq):
    raw = build_v2_batch(recs, base, compression=codec, producer_id=pid, base_sequence=seq)
    (b,) = iter_batches(raw)
    assert b.is_valid() and b.base_offset == base and b.last_offset == base + len(recs) - 1
    assert b.max_timestamp == max(r.timestamp for r in recs)
    got = b.records()
    assert [(r.key, r.value, r.timestamp, r.headers) for r in got] == [
        (r.key, r.value, r.timestamp, tuple(r.headers)) for r in recs
    ]
    assert [r.offset for r in got] == list(range(base, base + len(recs)))


@settings(max_examples=100, deadline=None)
@given(
    recs=records,
    base=st.integers(0, 2**40),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(
        [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
    ),
)
def test_legacy_round_trip(recs, base, magic, codec):
    raw = build_legacy_batch(recs, base, magic=magic, compression=codec)
    got = [r for b in iter_batches(raw) for r in b.records()]
    assert all(b.is_valid() for b in iter_batches(raw))
    assert [(r.offset, r.key, r.value) for r in got] == [
        (base + i, r.key, r.value) for i, r in enumerate(recs)
    ]
    if magic == 1:
        assert [r.timestamp for r in got] == [r.timestamp for r in recs]


def test_a_key_reaching_the_batch_end_is_said_in_words_not_pythons():
    """A key length that runs to the batch's last byte leaves no room for the value's length:
    one sentence about the record, never Python's "index out of range"."""
    rec = SimpleRecord(key=b"kkkk", value=None, timestamp=0, headers=())
    rec.offset = 0
    raw = bytearray(build_v2_batch([rec], 0))
    at = raw.index(b"\x08kkkk")  # the key's length, 4, zigzag
    raw[at] = 0x0C  # 6: the key would take the value's length and the header count too
    (batch,) = iter_batches(bytes(raw))
    with pytest.raises(InvalidRecordError) as err:
        batch.records()
    assert str(err.value) == (
        "byte 0: Found invalid record structure (a record runs past the end of its batch)"
    )
