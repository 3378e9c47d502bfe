"""Record batches of message formats v0, v1 and v2: one batch model for all three
(LegacyRecord, AbstractLegacyRecordBatch, DefaultRecordBatch, DefaultRecord).

Reading is lazy and zero-copy: a `RecordBatch` is a view over a memoryview (usually of an mmap'd
segment). Its header fields are unpacked with one precompiled struct; records are decoded only
when `records()` is called. `iter_batches` walks a buffer with Kafka's FileLogInputStream rules.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kafkalog_cli.errors import CorruptRecordError, InvalidRecordError, KafkalogError
from kafkalog_cli.formats.compression import (
    Compression,
    codec_for,
    compress,
    compression_from_id,
    decompress,
)
from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.formats.crc import crc32, crc32c
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.sizes import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RECORD_OVERHEAD_V0
from kafkalog_cli.formats.varint import read_varint, read_varlong, write_varint, write_varlong

# ------------------------------------------------------------------ constants (Records, RecordBatch)
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V1 = 22
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 header
_PREFIX = struct.Struct(">qi")  # offset, size
_LEGACY_V0 = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_LEGACY_V1 = struct.Struct(">qiIbbq")  # ... timestamp
_I32 = struct.Struct(">i")

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


class TimestampType(enum.IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        return _TS_NAMES[self]


_TS_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap at Int.MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


# ------------------------------------------------------------------ records
@dataclass(slots=True, frozen=True)
class Header:
    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """One record, whatever its format. Legacy records also carry their own CRC and validity."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = NO_SEQUENCE
    attributes: int = 0
    magic: int = 2
    crc: int | None = None  # legacy only: the message's stored CRC-32
    valid: bool = True  # legacy only: the message's CRC matches
    key_size: int = -1  # as Kafka reports it: -1 for null
    value_size: int = -1

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


# ------------------------------------------------------------------ the batch
class RecordBatch:
    """A batch at `position` in a buffer. v2 batches, legacy wrappers (compressed) and plain legacy
    messages all answer the same fields; legacy ones answer v2-only fields with Kafka's "none"."""

    __slots__ = (
        "buf",
        "position",
        "size",
        "magic",
        "base_offset_field",
        "attributes",
        "crc",
        "partition_leader_epoch",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
        "_legacy_inner",
        "_legacy_ts",
    )

    def __init__(self, buf, position: int, size: int, magic: int):
        self.buf = buf
        self.position = position
        self.size = size  # the whole batch, including the 12-byte offset and length
        self.magic = magic
        self._legacy_inner: list[Record] | None = None
        if magic >= 2:
            if size >= RECORD_BATCH_OVERHEAD:
                h = _V2.unpack_from(buf, position)
            else:  # too short to hold a header: read what is there, as Kafka's file batch does
                raw = bytes(buf[position : position + RECORD_BATCH_OVERHEAD])
                h = _V2.unpack(raw.ljust(RECORD_BATCH_OVERHEAD, b"\0"))
            (
                self.base_offset_field,
                _,
                self.partition_leader_epoch,
                _,
                self.crc,
                attrs,
                self.last_offset_delta,
                self.base_timestamp,
                self.max_timestamp,
                self.producer_id,
                self.producer_epoch,
                self.base_sequence,
                self.records_count,
            ) = h
            self.attributes = attrs & 0xFF  # Kafka reads the int16 and keeps its low byte
            if self.attributes >= 0x80:
                self.attributes -= 0x100
        else:
            if magic == 0 or size < RECORD_OVERHEAD_V1:
                off, _, crc, _, attrs = _LEGACY_V0.unpack_from(_pad(buf, position, 18), 0)
                ts = NO_TIMESTAMP
            else:
                off, _, crc, _, attrs, ts = _LEGACY_V1.unpack_from(_pad(buf, position, 26), 0)
            self.base_offset_field = off  # the wrapper's offset is the *last* offset
            self.crc = crc
            self.attributes = attrs
            self._legacy_ts = ts
            self.partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
            self.last_offset_delta = 0
            self.base_timestamp = ts
            self.max_timestamp = ts
            self.producer_id = NO_PRODUCER_ID
            self.producer_epoch = NO_PRODUCER_EPOCH
            self.base_sequence = NO_SEQUENCE
            self.records_count = None

    # -- identity
    @property
    def is_legacy(self) -> bool:
        return self.magic < 2

    @property
    def data(self) -> memoryview:
        """The batch's bytes, prefix included."""
        return memoryview(self.buf)[self.position : self.position + self.size]

    @property
    def base_offset(self) -> int:
        if self.magic >= 2:
            return self.base_offset_field
        if self.compression_id == 0:
            return self.base_offset_field
        inner = self._inner()
        return inner[0].offset if inner else self.base_offset_field

    @property
    def last_offset(self) -> int:
        if self.magic >= 2:
            return self.base_offset_field + self.last_offset_delta
        return self.base_offset_field

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    # -- attributes
    @property
    def compression_id(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def compression(self) -> Compression:
        return compression_from_id(self.compression_id)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & ATTR_TIMESTAMP_TYPE:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        if self.magic < 2 or self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    # -- validity
    def compute_crc(self) -> int:
        p = self.position
        if self.magic >= 2:
            return crc32c(memoryview(self.buf)[p + 21 : p + self.size])
        return crc32(memoryview(self.buf)[p + 16 : p + self.size])

    def is_valid(self) -> bool:
        if self.magic >= 2:
            return self.size >= RECORD_BATCH_OVERHEAD and self.crc == self.compute_crc()
        return self.size - LOG_OVERHEAD >= RECORD_OVERHEAD_V0 and self.crc == self.compute_crc()

    def ensure_valid(self) -> None:
        """Kafka's ensureValid: a CorruptRecordError with Kafka's own message."""
        if self.magic >= 2 and self.size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {self.size} is smaller than the minimum "
                f"allowed overhead {RECORD_BATCH_OVERHEAD})",
                position=self.position,
            )
        if self.magic < 2 and self.size - LOG_OVERHEAD < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                "Record is corrupt (crc could not be retrieved as the record is too small, "
                f"size = {self.size - LOG_OVERHEAD})",
                position=self.position,
            )
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})",
                position=self.position,
            )

    # -- records
    def records(self) -> list[Record]:
        """Decode every record. Raises InvalidRecordError/CompressionError with the batch position."""
        try:
            if self.magic >= 2:
                return _decode_v2(self)
            if self.compression_id == 0:
                return [_legacy_shallow_record(self)]
            return self._inner()
        except KafkalogError as e:
            raise e.located(position=self.position)
        except (IndexError, struct.error):
            raise InvalidRecordError(
                "Found invalid record structure (a record runs past the end of its batch)",
                position=self.position,
            ) from None

    def _inner(self) -> list[Record]:
        if self._legacy_inner is None:
            self._legacy_inner = _decode_legacy_wrapper(self)
        return self._legacy_inner

    def control_type(self) -> ControlRecordType | None:
        """The control record type of a control batch (from its first record's key)."""
        if not self.is_control:
            return None
        recs = self.records()
        if not recs:
            return None
        return ControlRecordType.parse(recs[0].key)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(magic={self.magic}, position={self.position}, size={self.size}, "
            f"offsets={self.base_offset_field}..{self.last_offset})"
        )


def _pad(buf, position: int, n: int) -> bytes:
    raw = bytes(buf[position : position + n])
    return raw if len(raw) == n else raw.ljust(n, b"\0")


# ------------------------------------------------------------------ iteration
def iter_batches(buf, start: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
    """Walk batches as FileLogInputStream does.

    Stops silently when 17 bytes or fewer remain or the next batch is incomplete (those are the
    "invalid bytes at the end"); raises CorruptRecordError for a size below 14."""
    if end is None:
        end = len(buf)
    if start < 0:  # a position from damaged file data (formats.indexes.read_start clamps entries')
        raise CorruptRecordError(
            f"position {start} is before the first byte of the log", position=0
        )
    pos = start
    unpack = _PREFIX.unpack_from
    while pos + HEADER_SIZE_UP_TO_MAGIC < end:
        _, size = unpack(buf, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
                position=pos,
            )
        if pos > end - LOG_OVERHEAD - size:
            return
        magic = buf[pos + 16]
        if magic >= 0x80:
            magic -= 0x100
        total = size + LOG_OVERHEAD
        yield RecordBatch(buf, pos, total, magic)
        pos += total


def valid_end(buf, start: int = 0, end: int | None = None) -> int:
    """Where `iter_batches` stops: the end of the last complete batch."""
    pos = start
    for b in iter_batches(buf, start, end):
        pos = b.position + b.size
    return pos


# ------------------------------------------------------------------ v2 decoding
def _decode_v2(batch: RecordBatch) -> list[Record]:
    buf = batch.buf
    count = batch.records_count
    if count < 0:
        raise InvalidRecordError(
            f"Found invalid record count {count} in magic v{batch.magic} batch"
        )
    start = batch.position + RECORD_BATCH_OVERHEAD
    end = batch.position + batch.size
    codec = batch.compression_id
    if codec:
        data = decompress(codec, memoryview(buf)[start:end], batch.magic)
        pos, end = 0, len(data)
    else:
        data = buf
        pos = start
    base_offset = batch.base_offset_field
    base_ts = batch.base_timestamp
    base_seq = batch.base_sequence
    log_append = batch.max_timestamp if batch.attributes & ATTR_TIMESTAMP_TYPE else None
    out: list[Record] = []
    append = out.append
    for _ in range(count):
        if pos >= end:
            raise InvalidRecordError(
                f"Found invalid record structure: batch declares {count} records, only {len(out)} present"
            )
        length, pos = read_varint(data, pos)
        body_start = pos
        if end - pos < length:
            raise InvalidRecordError(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {end - pos} remaining bytes."
            )
        attributes = data[pos]
        ts_delta, pos = read_varlong(data, pos + 1)
        off_delta, pos = read_varint(data, pos)
        ksize, pos = read_varint(data, pos)
        key = bytes(data[pos : pos + ksize]) if ksize >= 0 else None
        if ksize > 0:
            pos += ksize
        vsize, pos = read_varint(data, pos)
        value = bytes(data[pos : pos + vsize]) if vsize >= 0 else None
        if vsize > 0:
            pos += vsize
        nh, pos = read_varint(data, pos)
        if nh < 0:
            raise InvalidRecordError(f"Found invalid number of record headers {nh}")
        if nh:
            if nh > end - pos:
                raise InvalidRecordError(
                    f"Found invalid number of record headers. The number of headers ({nh}) "
                    f"exceeds the remaining bytes ({end - pos})."
                )
            parsed: list[Header] = []
            for _h in range(nh):
                hk, pos = read_varint(data, pos)
                if hk < 0:
                    raise InvalidRecordError(f"Invalid negative header key size {hk}")
                hkey = java_utf8(bytes(data[pos : pos + hk]))
                pos += hk
                hv, pos = read_varint(data, pos)
                if hv >= 0:
                    hval = bytes(data[pos : pos + hv])
                    pos += hv
                else:
                    hval = None
                parsed.append(Header(hkey, hval))
            headers: tuple[Header, ...] = tuple(parsed)
        else:
            headers = ()
        if pos - body_start != length:
            raise InvalidRecordError(
                f"Invalid record size: expected to read {length} bytes in record payload, but "
                f"instead read {pos - body_start}"
            )
        if pos > end:
            raise InvalidRecordError("Found invalid record structure (record runs past the batch)")
        append(
            Record(
                base_offset + off_delta,
                log_append if log_append is not None else base_ts + ts_delta,
                key,
                value,
                headers,
                increment_sequence(base_seq, off_delta) if base_seq >= 0 else NO_SEQUENCE,
                attributes,
                2,
                None,
                True,
                -1 if key is None else ksize,
                -1 if value is None else vsize,
            )
        )
    if pos < end:
        if codec:
            raise InvalidRecordError(
                "Incorrect declared batch size, there are still bytes remaining in the compressed stream"
            )
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return out


# ------------------------------------------------------------------ legacy decoding
def _parse_legacy_message(buf, pos: int, end: int, offset: int, magic_hint: int | None = None):
    """Parse `message` bytes [pos, end) of one legacy entry; returns the fields."""
    crc, magic, attrs = struct.unpack_from(">Ibb", buf, pos)
    p = pos + 6
    ts = NO_TIMESTAMP
    if magic > 0:
        (ts,) = struct.unpack_from(">q", buf, p)
        p += 8
    ksize, key, p = _legacy_bytes(buf, p, end, "key")
    vsize, value, p = _legacy_bytes(buf, p, end, "value")
    valid = crc == crc32(memoryview(buf)[pos + 4 : end])
    return crc, magic, attrs, ts, ksize, key, vsize, value, valid


def _legacy_bytes(buf, p: int, end: int, what: str) -> tuple[int, bytes | None, int]:
    """A legacy message's int32-sized key or value at `p`: (size, bytes or None, next position)."""
    (size,) = _I32.unpack_from(buf, p)
    p += 4
    if size < 0:
        return size, None, p
    if p + size > end:
        raise InvalidRecordError(f"Found invalid record structure ({what} runs past the message)")
    return size, bytes(buf[p : p + size]), p + size


def _legacy_shallow_record(batch: RecordBatch) -> Record:
    p = batch.position
    crc, magic, attrs, ts, ksize, key, vsize, value, valid = _parse_legacy_message(
        batch.buf, p + LOG_OVERHEAD, p + batch.size, batch.base_offset_field
    )
    return Record(
        batch.base_offset_field,
        ts,
        key,
        value,
        (),
        NO_SEQUENCE,
        attrs,
        magic,
        crc,
        valid,
        ksize,
        vsize,
    )


def _decode_legacy_wrapper(batch: RecordBatch) -> list[Record]:
    """AbstractLegacyRecordBatch.DeepRecordsIterator."""
    p = batch.position
    wrapper = _parse_legacy_message(
        batch.buf, p + LOG_OVERHEAD, p + batch.size, batch.base_offset_field
    )
    value = wrapper[7]
    if value is None:
        raise InvalidRecordError("Found invalid compressed record set with null value")
    codec = codec_for(batch.compression_id)
    if batch.magic < codec.min_magic:
        raise InvalidRecordError(
            f"Compression type {codec.compression.kafka_name} is not supported for magic {batch.magic}"
        )
    data = decompress(codec.compression, value, batch.magic)
    inner = []
    pos, end = 0, len(data)
    while end - pos >= LOG_OVERHEAD:
        off, size = _PREFIX.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})"
            )
        if pos + LOG_OVERHEAD + size > end:
            break  # a truncated inner entry ends the stream (EOFException in Kafka)
        fields = _parse_legacy_message(data, pos + LOG_OVERHEAD, pos + LOG_OVERHEAD + size, off)
        if fields[2] & ATTR_COMPRESSION_MASK:
            raise InvalidRecordError("Inner messages must not be compressed")
        inner.append((off, fields))
        pos += LOG_OVERHEAD + size
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records")
    wrapper_offset = batch.base_offset_field
    if batch.magic > 0:
        last_relative = inner[-1][0]
        if wrapper_offset == 0:
            base = 0  # some librdkafka versions wrote wrapper offset 0
        elif wrapper_offset < last_relative:
            raise InvalidRecordError(
                f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                f"'{wrapper_offset}' is less than the last inner message offset '{last_relative}' "
                "and it is not zero."
            )
        else:
            base = wrapper_offset - last_relative
    else:
        base = 0
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    out = []
    for off, (crc, magic, attrs, ts, ksize, key, vsize, value, valid) in inner:
        if log_append:
            ts = batch._legacy_ts
        out.append(
            Record(
                base + off, ts, key, value, (), NO_SEQUENCE, attrs, magic, crc, valid, ksize, vsize
            )
        )
    return out


# ------------------------------------------------------------------ writing (MemoryRecordsBuilder)
@dataclass(slots=True)
class SimpleRecord:
    """What a producer hands the builder: the input of a record, before offsets are assigned."""

    key: bytes | None
    value: bytes | None
    timestamp: int = NO_TIMESTAMP
    headers: Sequence[Header] = field(default_factory=tuple)
    offset: int | None = None  # absolute; None means the next one


def encode_v2_record(offset_delta: int, timestamp_delta: int, key, value, headers) -> bytes:
    """DefaultRecord.writeTo."""
    body = bytearray(b"\x00")
    body += write_varlong(timestamp_delta)
    body += write_varint(offset_delta)
    if key is None:
        body += write_varint(-1)
    else:
        body += write_varint(len(key))
        body += key
    if value is None:
        body += write_varint(-1)
    else:
        body += write_varint(len(value))
        body += value
    body += write_varint(len(headers))
    for h in headers:
        k = h.key.encode("utf-8")
        body += write_varint(len(k))
        body += k
        if h.value is None:
            body += write_varint(-1)
        else:
            body += write_varint(len(h.value))
            body += h.value
    return write_varint(len(body)) + bytes(body)


def build_v2_batch(
    records: Sequence[SimpleRecord],
    base_offset: int,
    *,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    delete_horizon_ms: int | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """A v2 batch as MemoryRecordsBuilder writes it. Records keep their own `offset` when given
    (the cleaner's filterTo keeps absolute offsets); `last_offset_delta` overrides the computed
    one (the cleaner keeps the original last offset)."""
    offsets = []
    nxt = base_offset
    for r in records:
        o = nxt if r.offset is None else r.offset
        offsets.append(o)
        nxt = o + 1
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    elif records:
        base_ts = records[0].timestamp
    else:
        base_ts = NO_TIMESTAMP
    if timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time is not None:
        max_ts = log_append_time
    elif max_timestamp is not None:
        max_ts = max_timestamp
    else:
        max_ts = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    body = b"".join(
        encode_v2_record(o - base_offset, r.timestamp - base_ts, r.key, r.value, r.headers)
        for o, r in zip(offsets, records)
    )
    body = compress(compression, body, 2)
    attrs = int(compression)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attrs |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attrs |= ATTR_TRANSACTIONAL
    if is_control:
        attrs |= ATTR_CONTROL
    if delete_horizon_ms is not None:
        attrs |= ATTR_DELETE_HORIZON
    if last_offset_delta is None:
        last_offset_delta = (offsets[-1] - base_offset) if offsets else 0
    raw = bytearray(
        _v2_header(
            base_offset,
            len(body),
            partition_leader_epoch,
            attrs,
            last_offset_delta,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    raw += body
    return set_v2_crc(raw)


def _v2_header(
    base_offset, body_len, ple, attrs, last_delta, base_ts, max_ts, pid, epoch, seq, count
) -> bytes:
    after_crc = struct.pack(">hiqqqhii", attrs, last_delta, base_ts, max_ts, pid, epoch, seq, count)
    length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + body_len
    return struct.pack(">qiib", base_offset, length, ple, 2) + struct.pack(">I", 0) + after_crc


def set_v2_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return bytes(batch)


def empty_v2_batch(
    base_offset: int,
    last_offset_delta: int,
    *,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool,
    is_control: bool,
    partition_leader_epoch: int,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader: what the cleaner leaves of a batch it must keep empty
    (its attributes keep the timestamp type, as writeHeader computes them)."""
    attrs = (ATTR_TRANSACTIONAL if is_transactional else 0) | (ATTR_CONTROL if is_control else 0)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attrs |= ATTR_TIMESTAMP_TYPE
    raw = bytearray(
        _v2_header(
            base_offset,
            0,
            partition_leader_epoch,
            attrs,
            last_offset_delta,
            NO_TIMESTAMP,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            0,
        )
    )
    return set_v2_crc(raw)


def encode_legacy_message(magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    """LegacyRecord.write: crc | magic | attributes | [timestamp] | key | value."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic > 0:
        body += struct.pack(">q", timestamp)
    body += _I32.pack(-1 if key is None else len(key))
    if key is not None:
        body += key
    body += _I32.pack(-1 if value is None else len(value))
    if value is not None:
        body += value
    return struct.pack(">I", crc32(body)) + bytes(body)


def build_legacy_batch(
    records: Sequence[SimpleRecord],
    base_offset: int,
    *,
    magic: int,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """Legacy entries as MemoryRecordsBuilder writes them: one entry per record when uncompressed,
    else one wrapper whose inner offsets are relative (v1) or absolute (v0)."""
    if magic not in (0, 1):
        raise ValueError("legacy batches have magic 0 or 1")
    min_magic = codec_for(compression).min_magic
    if magic < min_magic:
        raise InvalidRecordError(
            f"Compression type {compression.kafka_name} is only supported with magic {min_magic}"
        )
    lat = magic > 0 and timestamp_type == TimestampType.LOG_APPEND_TIME
    ts_attr = ATTR_TIMESTAMP_TYPE if lat else 0
    entries = []
    nxt = base_offset
    for r in records:
        o = nxt if r.offset is None else r.offset
        nxt = o + 1
        ts = log_append_time if lat and log_append_time is not None else r.timestamp
        entries.append((o, ts, r))
    if compression == Compression.NONE:
        out = bytearray()
        for o, ts, r in entries:
            msg = encode_legacy_message(magic, ts_attr, ts, r.key, r.value)
            out += _PREFIX.pack(o, len(msg)) + msg
        return bytes(out)
    inner = bytearray()
    first = entries[0][0]
    for o, ts, r in entries:
        # inner messages carry no timestamp-type bit; the wrapper's decides
        msg = encode_legacy_message(magic, 0, ts, r.key, r.value)
        inner += _PREFIX.pack(o - first if magic > 0 else o, len(msg)) + msg
    if lat and log_append_time is not None:  # as each entry's timestamp
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max((ts for _, ts, _ in entries), default=NO_TIMESTAMP)
    payload = compress(compression, bytes(inner), magic)
    msg = encode_legacy_message(magic, int(compression) | ts_attr, wrapper_ts, None, payload)
    return _PREFIX.pack(entries[-1][0], len(msg)) + msg
