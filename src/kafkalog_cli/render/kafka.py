"""kafka-dump-log's exact text (kafka.tools.DumpLogSegments, Kafka 3.3.1), quirks included.

The dumper writes to a binary stream as it goes, like the Java tool, so when the input turns out
to be broken mid-file the output up to that point is the same as Kafka's; the caller then prints
one error line where Kafka would die with a stack trace. Reports Kafka prints on stderr after all
files (index mismatches, time-index errors, non-consecutive offsets) are collected here and
written by `finish()`, newest first where Kafka prepends to a Scala List.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config.versions import KafkaVersion
from kafkalog_cli.errors import InputError, KafkalogError, KafkaToolError, UsageError, one_line
from kafkalog_cli.formats.byte_loops import batch_text, text_of_batches
from kafkalog_cli.formats.control import (
    ControlRecordType,
    EndTransactionMarker,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    decode_control,
)
from kafkalog_cli.formats.jutf8 import java_utf8
from kafkalog_cli.formats.records import Record, RecordBatch, iter_batches
from kafkalog_cli.ops.verify_index import (
    DEFAULT_MAX_MESSAGE_SIZE,
    IndexMismatch,
    NonConsecutiveOffsets,
    OffsetNotFound,
    OutOfOrderTimestamp,
    TimestampMismatch,
    check_offset_index,
    check_time_index,
    start_offset_of,
)
from kafkalog_cli.render.parallel import (
    PARALLEL_MIN_BYTES,
    RELEASE_BYTES,
    RUN_BYTES,
    Sink,
    output_fd,
    ranges_of,
    render_ranges,
)
from kafkalog_cli.storage.live_files import release_pages
from kafkalog_cli.storage.segment import Segment, map_file, read_file
from kafkalog_cli.storage.selection import Filters, found_lines, selected_batches, start_position

INT_MAX = 2**31 - 1


# ------------------------------------------------------------------ value decoders (--*-decoder-class)
def _string_decoder(b: bytes) -> str:
    return java_utf8(b)


def _integer_decoder(b: bytes) -> str:
    if len(b) < 4:
        raise KafkaToolError("java.nio.BufferUnderflowException (IntegerDecoder needs 4 bytes)")
    return str(struct.unpack_from(">i", b)[0])


def _long_decoder(b: bytes) -> str:
    if len(b) < 8:
        raise KafkaToolError("java.nio.BufferUnderflowException (LongDecoder needs 8 bytes)")
    return str(struct.unpack_from(">q", b)[0])


def _default_decoder(b: bytes) -> str:
    # Java prints a byte[] as "[B@<identity hash>", which is meaningless and differs per run; we
    # print the same shape with a hash of the content so a run is reproducible.
    import zlib

    return f"[B@{zlib.crc32(b):x}"


DECODERS: dict[str, Callable[[bytes], str]] = {
    "StringDecoder": _string_decoder,
    "IntegerDecoder": _integer_decoder,
    "LongDecoder": _long_decoder,
    "DefaultDecoder": _default_decoder,
}


def decoder_for(class_name: str) -> Callable[[bytes], str]:
    """Kafka's decoder classes, by simple or full name (kafka.serializer.* as in 3.3.1, or
    org.apache.kafka.tools.api.* as in 4.x)."""
    simple = class_name.rsplit(".", 1)[-1]
    if simple not in DECODERS:
        raise InputError(
            f"unknown decoder class {class_name!r}; choose one of " + ", ".join(sorted(DECODERS))
        )
    return DECODERS[simple]


# ------------------------------------------------------------------ message parsers (--*-decoder)
MessageParser = Callable[[Record], tuple[str | None, str | None]]


def decoder_parser(key_decoder, value_decoder) -> MessageParser:
    def parse(r: Record):
        key = key_decoder(r.key) if r.key is not None else None
        value = value_decoder(r.value) if r.value is not None else None
        return key, value

    # the record fast path renders StringDecoder keys and values itself
    parse.string_decoders = key_decoder is _string_decoder and value_decoder is _string_decoder  # type: ignore[attr-defined]
    return parse


# kafka-dump-log's text, by the release that prints it (--kafka-version; 3.3.1's by default). The
# releases differ in the decoders only, each difference a rule in config.versions (their sources
# there and in docs/kafka-4-parity.md):
# - --offsets-decoder: 3.3.1's GroupMetadataManager text (3.3, 3.4.0); from 3.4.1/3.5 a key of an
#   unknown version prints `unknown::version=N` and values read up to the flexible version 4
#   (DUMP_LOG_UNKNOWN_COORDINATOR_KEY); from 3.8 CoordinatorRecordSerde's JSON of the consumer group
#   records, types 0-8 (DUMP_LOG_OFFSETS_AS_JSON); 4.0 reads types 0-16 (DUMP_LOG_GROUP_RECORDS_4_0);
#   from 4.1 every record type through CoordinatorRecordMessageParser (DUMP_LOG_COORDINATOR_SERDE_JSON);
#   from 4.0 a value of an unknown version is skipped (DUMP_LOG_COORDINATOR_VALUE_VERSION).
# - --transaction-log-decoder: 3.3.1's TransactionLog text; from 3.4.1/3.5 unknown keys and value
#   version 1 as for offsets; 4.0 also dies on an unknown clientTransactionVersion
#   (DUMP_LOG_TRANSACTION_VERSION_LEVEL); from 4.1 the coordinator serde's JSON.
# - --cluster-metadata-decoder: the metadata records each release knows (DUMP_LOG_METADATA_RECORDS).
# - --remote-log-metadata-decoder: from 3.9 (before, kafkalog prints the newest text); 3.9's
#   RemoteLogSegmentMetadata has no txnIdxEmpty (DUMP_LOG_TXN_IDX_EMPTY, 4.0).
# - --share-group-state-decoder: from 4.0, whose text is its own (DUMP_LOG_SHARE_GROUP_STATE_DECODER);
#   before it and from 4.1, the newest.
# - LeaderChange control records decoded from 4.1 (DUMP_LOG_LEADER_CHANGE).
# A 3.4 is 3.4.1: 3.4.0 has 3.3.1's coordinator readers, and dies where 3.4.1 prints
# `unknown::version=N` (records a 3.4 broker never writes; on its own logs the two print the same).
KAFKA_331, KAFKA_39, KAFKA_41, KAFKA_42 = (
    KafkaVersion(3, 3),
    KafkaVersion(3, 9),
    KafkaVersion(4, 1),
    KafkaVersion(4, 2),
)
# the release whose source each --kafka-version's text was read from
DUMP_LOG_TEXTS = {
    KAFKA_331: "3.3.1",
    KafkaVersion(3, 4): "3.4.1",
    KafkaVersion(3, 5): "3.5.0",
    KafkaVersion(3, 6): "3.6.0",
    KafkaVersion(3, 7): "3.7.0",
    KafkaVersion(3, 8): "3.8.0",
    KAFKA_39: "3.9.0-rc3",
    KafkaVersion(4, 0): "4.0.0",
    KAFKA_41: "4.1",
    KAFKA_42: "4.2",
}


def _metadata_text(kafka: KafkaVersion) -> str:
    from kafkalog_cli.config.versions import dump_log_metadata_records

    rule = dump_log_metadata_records(kafka)
    text = "3.3.1" if rule is None else str(rule.since)
    return {"3.8": "3.9", "4.0": "4.2"}.get(text, text)  # --metadata-decoder-version's names


# cluster_metadata_parser's key (METADATA_SCHEMAS_BY_RELEASE) for each version's text
METADATA_TEXTS = {v: _metadata_text(v) for v in DUMP_LOG_TEXTS}


def dump_log_text(version: str | None, fmt: str = "text") -> KafkaVersion:
    """--kafka-version for dump-log: the release whose kafka-dump-log it prints. --format json
    takes every version kafkalog knows; --format text a usage error for one whose text kafkalog
    does not model."""
    from kafkalog_cli.config.versions import stated_version

    if version is None:
        return KAFKA_331
    v = stated_version(version)
    if v not in DUMP_LOG_TEXTS and fmt == "text":
        raise UsageError(
            f"--kafka-version {version}: dump-log prints kafka-dump-log's text of Kafka "
            + ", ".join(f"{k} ({t})" for k, t in DUMP_LOG_TEXTS.items())
            + "; --format json takes every version"
        )
    return v


def offsets_parser(kafka: KafkaVersion = KAFKA_331) -> MessageParser:
    from kafkalog_cli.config.versions import (
        DUMP_LOG_COORDINATOR_SERDE_JSON,
        DUMP_LOG_COORDINATOR_VALUE_VERSION,
        DUMP_LOG_GROUP_RECORDS_4_0,
        DUMP_LOG_OFFSETS_AS_JSON,
        DUMP_LOG_UNKNOWN_COORDINATOR_KEY,
    )
    from kafkalog_cli.formats.internal.consumer_offsets import (
        format_offsets_record,
        format_offsets_record_34,
    )
    from kafkalog_cli.formats.internal.coordinator import Coordinator, format_coordinator_record

    if DUMP_LOG_OFFSETS_AS_JSON.applies(kafka):
        if DUMP_LOG_COORDINATOR_SERDE_JSON.applies(kafka):
            group = Coordinator.GROUP
        elif DUMP_LOG_GROUP_RECORDS_4_0.applies(kafka):
            group = Coordinator.GROUP_40
        else:
            group = Coordinator.GROUP_39
        check = DUMP_LOG_COORDINATOR_VALUE_VERSION.applies(kafka)
        return lambda r: format_coordinator_record(group, r.key, r.value, r.offset, check)
    if DUMP_LOG_UNKNOWN_COORDINATOR_KEY.applies(kafka):
        return lambda r: format_offsets_record_34(r.key, r.value, r.offset)
    return lambda r: format_offsets_record(r.key, r.value, r.offset)


def transaction_log_parser(kafka: KafkaVersion = KAFKA_331) -> MessageParser:
    from kafkalog_cli.config.versions import (
        DUMP_LOG_COORDINATOR_SERDE_JSON,
        DUMP_LOG_COORDINATOR_VALUE_VERSION,
        DUMP_LOG_TRANSACTION_VERSION_LEVEL,
        DUMP_LOG_UNKNOWN_COORDINATOR_KEY,
    )
    from kafkalog_cli.formats.internal.transaction_state import (
        format_transaction_record,
        format_transaction_record_39,
    )

    if DUMP_LOG_COORDINATOR_SERDE_JSON.applies(kafka):
        from kafkalog_cli.formats.internal.coordinator import Coordinator, format_coordinator_record

        check = DUMP_LOG_COORDINATOR_VALUE_VERSION.applies(kafka)
        return lambda r: format_coordinator_record(
            Coordinator.TRANSACTION, r.key, r.value, r.offset, check
        )
    if DUMP_LOG_UNKNOWN_COORDINATOR_KEY.applies(kafka):
        # TransactionVersion TV_0 to TV_2, the levels 4.0 knows
        levels = range(3) if DUMP_LOG_TRANSACTION_VERSION_LEVEL.applies(kafka) else None
        return lambda r: format_transaction_record_39(r.key, r.value, r.offset, levels)
    return lambda r: format_transaction_record(r.key, r.value, r.offset)


def share_group_state_parser(kafka: KafkaVersion | None = None) -> MessageParser:
    """The decoder came with 4.0, whose text is its own (Coordinator.SHARE_40); before it (3.3.1
    by default) and from 4.1, 4.2's."""
    from kafkalog_cli.config.versions import (
        DUMP_LOG_COORDINATOR_SERDE_JSON,
        DUMP_LOG_COORDINATOR_VALUE_VERSION,
        DUMP_LOG_SHARE_GROUP_STATE_DECODER,
    )
    from kafkalog_cli.formats.internal.coordinator import Coordinator, format_coordinator_record

    kafka = kafka or KAFKA_331
    share = (
        Coordinator.SHARE_40
        if DUMP_LOG_SHARE_GROUP_STATE_DECODER.applies(kafka)
        and not DUMP_LOG_COORDINATOR_SERDE_JSON.applies(kafka)
        else Coordinator.SHARE
    )
    check = DUMP_LOG_COORDINATOR_VALUE_VERSION.applies(kafka)
    return lambda r: format_coordinator_record(share, r.key, r.value, r.offset, check)


def remote_log_metadata_parser(kafka: KafkaVersion | None = None) -> MessageParser:
    """The decoder came with 3.9: before it (3.3.1 by default), 4.x's text; 3.9's has no
    txnIdxEmpty."""
    from kafkalog_cli.config.versions import (
        DUMP_LOG_REMOTE_LOG_METADATA_DECODER,
        DUMP_LOG_TXN_IDX_EMPTY,
    )
    from kafkalog_cli.formats.internal.remote_log_metadata import format_remote_log_metadata

    kafka = kafka or KAFKA_331
    txn_idx_empty = DUMP_LOG_TXN_IDX_EMPTY.applies(
        kafka
    ) or not DUMP_LOG_REMOTE_LOG_METADATA_DECODER.applies(kafka)
    return lambda r: (None, format_remote_log_metadata(r.value, r.offset, txn_idx_empty))  # no key


def cluster_metadata_parser(kafka_version: str = "3.3.1") -> MessageParser:
    """--cluster-metadata-decoder: the text of kafka-dump-log `kafka_version` (a METADATA_TEXTS
    value: 3.3.1, 3.4, 3.5, 3.6, 3.7, 3.9 or 4.2)."""
    from kafkalog_cli.formats.internal.cluster_metadata import (
        METADATA_SCHEMAS_BY_RELEASE,
        format_metadata_record,
    )

    schemas = METADATA_SCHEMAS_BY_RELEASE[kafka_version]

    def parse(r: Record):
        return None, format_metadata_record(r.value, offset=r.offset, schemas=schemas)

    return parse


# ------------------------------------------------------------------ options and state
@dataclass
class DumpOptions:
    deep_iteration: bool = False
    print_data_log: bool = False
    skip_record_metadata: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT_MAX
    parser: MessageParser | None = None
    filters: Filters | None = None
    jobs: int = 1  # worker processes for big .log files (deep output only)
    leader_change: bool = False  # LeaderChange control records decoded (kafka-dump-log 4.1+)


@dataclass
class _Reports:
    """What Kafka prints on stderr after all files, by absolute path, in Kafka's order (index
    mismatches and non-consecutive offsets newest first: Kafka prepends them to a List)."""

    index_mismatches: dict[str, list[IndexMismatch]] = field(default_factory=dict)
    time_mismatches: dict[str, list[TimestampMismatch]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[OutOfOrderTimestamp]] = field(default_factory=dict)
    time_not_found: dict[str, list[OffsetNotFound]] = field(default_factory=dict)
    non_consecutive: dict[str, list[NonConsecutiveOffsets]] = field(default_factory=dict)


def _abs(path: Path) -> str:
    return str(path.absolute())


class KafkaDumper:
    def __init__(self, out, err, options: DumpOptions):
        self.out = out  # binary streams
        self.err = err
        self.o = options
        self.reports = _Reports()
        self._buf: list[str] = []
        self._fast = self._fast_ok()
        # the loop over runs of v2 data batches (formats/byte_loops.py): the record fast path's cases
        self._run = text_of_batches if self._fast else None
        # a search's records: their lines cut out of the batch's, when most of it is found
        self._fast_found = options.filters is not None and (
            not options.print_data_log or bool(getattr(options.parser, "string_decoders", False))
        )

    # -- output
    def _to_stdout(self, s: str) -> None:
        self._buf.append(s)
        if len(self._buf) > 512:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self.out.write("".join(self._buf).encode("utf-8", "replace"))
            self._buf.clear()

    def _note(self, s: str) -> None:
        """A note of ours on stderr (never on stdout, which stays Kafka's)."""
        self._line_to_stderr(f"kafkalog: note: {one_line(s)}")

    def _line_to_stderr(self, s: str) -> None:
        self.flush()
        self.err.write((s + "\n").encode("utf-8", "replace"))

    # -- dispatch (DumpLogSegments.main)
    def dump(self, given: str) -> None:
        path = Path(given)
        self._to_stdout(f"Dumping {_java_file_string(given)}\n")
        name = path.name
        dot = name.rfind(".")
        from kafkalog_cli.storage.segment import not_regular_reason

        why = not_regular_reason(path)
        if dot < 0:
            self.flush()
            raise InputError(
                why
                or "not a Kafka file: the name has no suffix (.log, .index, .timeindex, "
                ".txnindex, .snapshot, .checkpoint), so kafka-dump-log cannot tell what it is "
                "(it dies with StringIndexOutOfBoundsException)",
                path=given,
            )
        suffix = name[dot:]
        if why is not None and suffix in (
            ".log",
            ".checkpoint",
            ".index",
            ".timeindex",
            ".snapshot",
            ".txnindex",
        ):
            if suffix == ".log" and name.split(".")[0].isdigit():
                self._to_stdout(
                    f"Log starting offset: {int(name.split('.')[0])}\n"
                )  # Kafka prints it before opening
            self.flush()
            raise InputError(why, path=given)
        try:
            if suffix in (".log", ".checkpoint"):
                self.dump_log(path)
            elif suffix == ".index":
                self.dump_index(path)
            elif suffix == ".timeindex":
                self.dump_time_index(path)
            elif suffix == ".snapshot":
                self.dump_producer_snapshot(path)
            elif suffix == ".txnindex":
                self.dump_txn_index(path)
            else:
                # Kafka names the file by its absolute path here (the goldens show it)
                self._line_to_stderr(f"Ignoring unknown file {_abs(path)}")
        finally:
            self.flush()

    # -- .log and KRaft .checkpoint
    def dump_log(self, path: Path) -> None:
        name = path.name
        if name.endswith(".log"):
            self._to_stdout(f"Log starting offset: {start_offset_of(path)}\n")
        else:
            if name == "bootstrap.checkpoint":
                self._to_stdout("KRaft bootstrap snapshot\n")
            else:
                end_offset, epoch = _snapshot_id(path)
                self._to_stdout(f"Snapshot end offset: {end_offset}, epoch: {epoch}\n")
        buf = map_file(path)
        end = min(len(buf), self.o.max_bytes)
        f = self.o.filters
        deep = self.o.deep_iteration or self.o.print_data_log or (f is not None and f.needs_records)
        valid = 0
        if f is not None and name.endswith(".log"):
            valid = start_position(
                Segment.with_log(path.parent, start_offset_of(path), buf), f, self._note
            )
        last_offset = -1
        pairs: list[tuple[int, int]] = []
        try:
            if (
                deep
                and f is None
                and self.o.jobs > 1
                and end - valid >= PARALLEL_MIN_BYTES
                and output_fd(self.out) is not None
            ):
                # leaves `valid` where the sequential loop stops: what follows is an incomplete
                # batch or nothing, so the loop below reads no further batch
                valid, last_offset = self._dump_parallel(buf, valid, end, pairs) or (
                    valid,
                    last_offset,
                )
            released = valid
            if f is None and self._run is not None:
                valid, last_offset = self._runs(buf, valid, end, last_offset, pairs, deep)
            for batch, records in selected_batches(buf, valid, end, f, deep):
                self._to_stdout(batch_line(batch, batch.position))
                if deep:
                    last_offset = self._records(batch, last_offset, pairs, records)
                valid = batch.position + batch.size
                if valid - released > RELEASE_BYTES:
                    # pages already printed go, so a big file is not held mapped in memory
                    release_pages(buf, released, valid)
                    released = valid
        except KafkalogError as e:
            raise e.located(path=_abs(path))
        finally:
            if pairs:
                self.reports.non_consecutive[_abs(path)] = [
                    NonConsecutiveOffsets(*p) for p in pairs
                ]
        trailing = end - valid
        if trailing > 0 and self.o.max_bytes == INT_MAX and f is None:
            self._to_stdout(f"Found {trailing} invalid bytes at the end of {name}\n")

    def _runs(
        self, buf, pos: int, end: int, last_offset: int, pairs: list, deep: bool = True
    ) -> tuple[int, int]:
        """The sequential loop of an unfiltered dump: runs of v2 data batches written by
        text_of_batches (their records too when `deep`), each batch it
        leaves (legacy, control, damaged) written here as the loop in dump_log writes it. -> (end
        of the last complete batch, last record offset), where that loop then finds no batch."""
        o = self.o
        released = pos
        while True:
            local: list = []
            text, pos, last_offset = self._run(
                buf,
                pos,
                end,
                last_offset,
                local,
                not o.skip_record_metadata,
                o.print_data_log,
                RUN_BYTES,
                deep,
            )
            if text:
                self.flush()
                self.out.write(text)
            for pr in local:
                pairs.insert(0, pr)
            if pos - released > RELEASE_BYTES:
                release_pages(buf, released, pos)
                released = pos
            if len(text) >= RUN_BYTES:  # the run stopped at its size, not at a batch it leaves
                continue
            batch = next(iter_batches(buf, pos, end), None)
            if batch is None:
                return pos, last_offset
            self._to_stdout(batch_line(batch, batch.position))
            if deep:
                last_offset = self._records(batch, last_offset, pairs)
            pos = batch.position + batch.size

    def _range(
        self, buf, start: int, stop: int, last_offset: int, pairs: list
    ) -> tuple[int, int, int | None]:
        """Batch lines and records of buf[start:stop) (no filters) -> (end of the last complete
        batch, last record offset, first record offset or None)."""
        first = None
        pos = start
        for batch in iter_batches(buf, start, stop):
            self._to_stdout(batch_line(batch, pos))
            if first is None and (batch.magic < 2 or batch.records_count):
                recs = batch.records()
                if recs:
                    first = recs[0].offset
            last_offset = self._records(batch, last_offset, pairs)
            pos += batch.size
        return pos, last_offset, first

    def _dump_parallel(self, buf, valid: int, end: int, pairs: list) -> tuple[int, int] | None:
        """Render buf[valid:end) in worker processes (render/parallel.py). Returns (valid,
        last_offset) as the sequential loop would have left them; `pairs` gets the
        non-consecutive offsets, newest first. A range that fails is rendered here again, so the
        output and the error are the sequential ones."""
        ranges = ranges_of(buf, valid, end, self.o.jobs)
        if len(ranges) < 2:
            return None
        self.flush()
        self.out.flush()
        summaries, failed = render_ranges(
            buf,
            ranges,
            self.o.jobs,
            output_fd(self.out),
            lambda start, stop: self._render_range(buf, start, stop),
        )
        last, pos = -1, valid
        for pos, clast, first, cpairs in summaries:
            if first is not None:
                if last != -1 and first != last + 1:
                    pairs.insert(0, (last, first))
                for pr in reversed(cpairs):  # the worker's are newest first
                    pairs.insert(0, pr)
                last = clast
        if failed is None:
            return pos, last
        # the failing range again, here: its output up to the failure, then the error itself
        pos, last, _ = self._range(buf, ranges[failed][0], end, last, pairs)
        return pos, last

    def _render_range(self, buf, start: int, stop: int) -> tuple[list[bytes], tuple]:
        """In a worker: the bytes of one range, and what the merge needs of it."""
        out = Sink()
        self.out = out
        self._buf = []
        local: list = []
        pos, last, first = self._range(buf, start, stop, -1, local)
        self.flush()
        return out.parts, (pos, last, first, local)

    def _fast_ok(self) -> bool:
        """Whether the record fast path may render v2 batches: no filter, and no parser other
        than the default StringDecoder one (whose output it reproduces itself)."""
        o = self.o
        if o.filters is not None:
            return False
        return not o.print_data_log or bool(getattr(o.parser, "string_decoders", False))

    def _records(
        self, batch: RecordBatch, last_offset: int, pairs: list, records: list | None = None
    ) -> int:
        o = self.o
        if self._fast and batch.magic == 2 and not (batch.attributes & 0x20):
            local: list = []
            try:
                text, last = batch_text(
                    batch, last_offset, local, not o.skip_record_metadata, o.print_data_log
                )
            except Exception:  # anything unusual: the general path says what Kafka would
                pass
            else:
                self._to_stdout(text)
                for pr in local:
                    pairs.insert(0, pr)
                return last
        if (
            o.filters is not None
            and o.filters.whole_batches
            and self._fast_found
            and batch.magic == 2
            and not (batch.attributes & 0x20)
        ):
            try:  # a batch a batch-level filter shows: its lines as an unfiltered dump's
                text, last = batch_text(batch, -1, [], not o.skip_record_metadata, o.print_data_log)
            except Exception:  # anything unusual: the general path says what Kafka would
                pass
            else:
                self._to_stdout(text)
                return last
        if (
            records is not None
            and self._fast_found
            and batch.magic == 2
            and not (batch.attributes & 0x20)
        ):
            found = found_lines(
                batch,
                records,
                o.filters,
                lambda: batch_text(batch, -1, [], not o.skip_record_metadata, o.print_data_log)[
                    0
                ].split("\n")[:-1],
            )
            if found is not None:
                for r, line in found:
                    self._to_stdout(line + "\n")
                return found[-1][0].offset if found else last_offset
        label = batch.timestamp_type.kafka_name
        v2 = batch.magic >= 2
        control = batch.is_control
        legacy = batch.magic < 2
        f = o.filters
        if records is None:
            records = batch.records()
        for r in records if f is None else f.shown(records):
            # a record-level filter (a search, a time range) or a batch-level one (a producer, a
            # leader epoch) leaves gaps of its own: not the log's
            if (
                last_offset != -1
                and r.offset != last_offset + 1
                and (f is None or not (f.needs_records or f.judges_batches))
            ):
                pairs.insert(0, (last_offset, r.offset))
            last_offset = r.offset
            prefix = "| "
            if not o.skip_record_metadata:
                parts = [
                    f"{prefix}offset: {r.offset} {label}: {r.timestamp} keySize: {r.key_size} valueSize: {r.value_size}"
                ]
                prefix = " "
                if v2:
                    parts.append(
                        f" sequence: {r.sequence} headerKeys: [{','.join(h.key for h in r.headers)}]"
                    )
                if legacy:
                    parts.append(f" isValid: {'true' if r.valid else 'false'} crc: {r.crc}}}")
                self._to_stdout("".join(parts))
                if control:
                    self._to_stdout(control_text(r, o.leader_change))
            if o.print_data_log and not control:
                try:
                    key, payload = o.parser(r)
                except KafkalogError as e:
                    raise e.in_record(r.offset, batch.position) from None
                if key is not None:
                    self._to_stdout(f"{prefix}key: {key}")
                if payload is not None:
                    self._to_stdout(f" payload: {payload}")
            self._to_stdout("\n")
        return last_offset

    # -- .index and .timeindex
    def _index_listing(self, path: Path, entries, line: Callable[[object], str]) -> bool:
        """What both index dumps print first: with --index-sanity-check only that the index
        passed it (True: the dump ends there), else each entry unless --verify-index-only."""
        if self.o.index_sanity_check:
            self._to_stdout(f"{_java_file_string(str(path))} passed sanity check.\n")
            return True
        if not self.o.verify_index_only:
            for e in entries:
                self._to_stdout(line(e))
        return False

    def dump_index(self, path: Path) -> None:
        check = check_offset_index(
            path, self.o.max_message_size, sanity_only=self.o.index_sanity_check
        )
        if check.empty:
            self._to_stdout(f"{_java_file_string(str(path))} is empty.\n")
            return
        if self._index_listing(
            path, check.entries, lambda e: f"offset: {e.offset} position: {e.position}\n"
        ):
            return
        if check.mismatches:
            self.reports.index_mismatches[_abs(path)] = check.mismatches[::-1]
        if check.error is not None:
            raise check.error

    def dump_time_index(self, path: Path) -> None:
        check = check_time_index(path, sanity_only=self.o.index_sanity_check)
        if self._index_listing(
            path, check.entries, lambda e: f"timestamp: {e.timestamp} offset: {e.offset}\n"
        ):
            return
        key = _abs(path)
        for reports, found in (
            (self.reports.time_not_found, check.not_found),
            (self.reports.time_mismatches, check.mismatches),
            (self.reports.time_out_of_order, check.out_of_order),
        ):
            if found:
                reports.setdefault(key, []).extend(found)
        if check.error is not None:
            raise check.error

    # -- .snapshot (producer state)
    def dump_producer_snapshot(self, path: Path) -> None:
        from kafkalog_cli.formats.producer_state import parse_producer_snapshot

        try:
            snap = parse_producer_snapshot(read_file(path))
        except KafkalogError as e:
            if type(e).__name__ == "CorruptSnapshotError":
                self._line_to_stderr(e.message)
                return
            raise
        for e in snap.entries:
            txn = (
                "None" if e.current_txn_first_offset < 0 else f"Some({e.current_txn_first_offset})"
            )
            line = (
                f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {txn} "
                f"lastTimestamp: {e.timestamp} "
            )
            if e.last_offset >= 0:
                first_seq = _decrement_sequence(e.last_sequence, e.offset_delta)
                line += (
                    f"firstSequence: {first_seq} lastSequence: {e.last_sequence} "
                    f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
                )
            self._to_stdout(line + "\n")

    # -- .txnindex
    def dump_txn_index(self, path: Path) -> None:
        from kafkalog_cli.formats.txnindex import parse_txn_index

        for t in parse_txn_index(read_file(path)):
            self._to_stdout(
                f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}\n"
            )

    # -- after all files
    def finish(self) -> None:
        self.flush()
        r = self.reports
        # (reports by file, the heading, one line per report), in the order Kafka prints them
        sections = (
            (
                r.index_mismatches,
                "Mismatches in :{}",
                lambda m: f"  Index offset: {m.index_offset}, log offset: {m.log_offset}",
            ),
            (
                r.time_mismatches,
                "Found timestamp mismatch in :{}",
                lambda t: (
                    f"  Index timestamp: {t.index_timestamp}, log timestamp: {t.log_timestamp}"
                ),
            ),
            (
                r.time_out_of_order,
                "Found out of order timestamp in :{}",
                lambda o: (
                    f"  Index timestamp: {o.index_timestamp}, Previously indexed timestamp: {o.previous_timestamp}"
                ),
            ),
            (
                r.time_not_found,
                "The following indexed offsets are not found in the log.",
                lambda n: (
                    f"Indexed offset: {n.index_offset}, found log offset: "
                    f"{-1 if n.log_offset is None else n.log_offset}"
                ),
            ),
            (
                r.non_consecutive,
                "Non-consecutive offsets in {}",
                lambda p: f"  {p.previous} is followed by {p.offset}",
            ),
        )
        for reports, heading, line in sections:
            for name, found in reports.items():
                self._line_to_stderr(heading.format(name))
                for item in found:
                    self._line_to_stderr(line(item))


# ------------------------------------------------------------------ lines
def batch_line(b: RecordBatch, position: int) -> str:
    if b.magic >= 2:
        dh = b.delete_horizon_ms
        head = (
            f"baseOffset: {b.base_offset_field} lastOffset: {b.last_offset} count: {b.records_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
            f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
            f"deleteHorizonMs: {'OptionalLong.empty' if dh is None else f'OptionalLong[{dh}]'}"
        )
    else:
        head = f"offset: {b.last_offset}"
    return (
        f"{head} position: {position} {b.timestamp_type.kafka_name}: {b.max_timestamp} size: {b.size} "
        f"magic: {b.magic} compresscodec: {b.compression.kafka_name} crc: {b.crc} "
        f"isvalid: {_bool(b.is_valid())}\n"
    )


def control_text(r: Record, leader_change: bool = False) -> str:
    """What kafka-dump-log prints after a control record's metadata; `leader_change`: its body too,
    as 4.1+ prints it (formats.internal.raft)."""
    c = decode_control(r.key, r.value)
    v = c.value
    if isinstance(v, EndTransactionMarker):
        return f" endTxnMarker: {v.control_type.name} coordinatorEpoch: {v.coordinator_epoch}"
    if isinstance(v, SnapshotHeaderRecord):
        return f' SnapshotHeader {{"version":{v.version},"lastContainedLogTimestamp":{v.last_contained_log_timestamp}}}'
    if isinstance(v, SnapshotFooterRecord):
        return f' SnapshotFooter {{"version":{v.version}}}'
    if c.type in (ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS) or (
        leader_change and c.type == ControlRecordType.LEADER_CHANGE
    ):
        # 3.3.1 printed these as UNKNOWN; 4.2 decodes them
        from kafkalog_cli.formats.internal.raft import format_raft_control

        return format_raft_control(c.type.name, r.value)
    name = c.type.name if c.type == ControlRecordType.LEADER_CHANGE else "UNKNOWN"
    return f" controlType: {name}({c.type_id})"


def _bool(v: bool) -> str:
    return "true" if v else "false"


# ------------------------------------------------------------------ helpers
def _java_file_string(given: str) -> str:
    """java.io.File normalises a path: repeated and trailing separators go."""
    import re

    s = re.sub(r"/+", "/", given)
    return s[:-1] if len(s) > 1 and s.endswith("/") else s


def _snapshot_id(path: Path) -> tuple[int, int]:
    import re

    m = re.fullmatch(r"(\d{20})-(\d{10})\.checkpoint", path.name)
    if not m:
        raise KafkaToolError(
            "not a KRaft snapshot name (<20-digit offset>-<10-digit epoch>.checkpoint)",
            path=str(path),
        )
    return int(m.group(1)), int(m.group(2))


def _decrement_sequence(seq: int, dec: int) -> int:
    if seq < dec:
        return INT_MAX - (dec - seq) + 1
    return seq - dec
