"""JSON objects for the non-log files: offset and time indexes, .txnindex, producer snapshots, and
the index checks of ops/verify_index.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kafkalog_cli.errors import CorruptIndexError, CorruptSnapshotError, InputError
from kafkalog_cli.ops.verify_index import OffsetIndexCheck, TimeIndexCheck
from kafkalog_cli.render.schema import (
    ABORTED_TXN,
    CORRUPT_SNAPSHOT,
    FAILED,
    INDEX_ENTRY,
    INDEX_MISMATCH,
    LOG_TIMESTAMP,
    OFFSET_CHECK,
    ORDER,
    PRODUCER_STATE,
    SANITY_CHECK,
    TIME_INDEX_ENTRY,
    TIMESTAMP_CHECK,
)
from kafkalog_cli.storage.names import offset_from_name
from kafkalog_cli.storage.segment import read_file


def _base(path: Path) -> int:
    base = offset_from_name(path.name)
    if base is None:
        raise InputError("file name is not a 20-digit offset", path=str(path))
    return base


def index_objects(path: Path) -> Iterator[dict]:
    suffix = path.suffix
    if suffix == ".index":
        from kafkalog_cli.formats.indexes import parse_offset_index

        for e in parse_offset_index(read_file(path), _base(path)):
            yield INDEX_ENTRY.object(offset=e.offset, position=e.position)
    elif suffix == ".timeindex":
        from kafkalog_cli.formats.indexes import parse_time_index

        for e in parse_time_index(read_file(path), _base(path)):
            yield TIME_INDEX_ENTRY.object(timestamp=e.timestamp, offset=e.offset)
    elif suffix == ".txnindex":
        from kafkalog_cli.formats.txnindex import parse_txn_index

        for t in parse_txn_index(read_file(path), path=str(path)):
            yield ABORTED_TXN.object(
                version=t.version,
                producer_id=t.producer_id,
                first_offset=t.first_offset,
                last_offset=t.last_offset,
                last_stable_offset=t.last_stable_offset,
            )
    elif suffix == ".snapshot":
        from kafkalog_cli.formats.producer_state import parse_producer_snapshot

        try:
            snap = parse_producer_snapshot(read_file(path), path=str(path))
        except CorruptSnapshotError as e:
            # kafka-dump-log prints the message and goes on (exit 0); so does JSON, as an object
            yield CORRUPT_SNAPSHOT.object(file=str(path), position=e.position, error=e.message)
            return
        for e in snap.entries:
            yield PRODUCER_STATE.object(
                producer_id=e.producer_id,
                producer_epoch=e.producer_epoch,
                coordinator_epoch=e.coordinator_epoch,
                current_txn_first_offset=e.current_txn_first_offset
                if e.current_txn_first_offset >= 0
                else None,
                last_sequence=e.last_sequence,
                last_offset=e.last_offset,
                offset_delta=e.offset_delta,
                timestamp=e.timestamp,
            )


def mismatch_objects(check: OffsetIndexCheck | TimeIndexCheck, file: str) -> list[dict]:
    """An index check's findings, in the order of the index entries within each kind of check
    (Kafka's text gives offset mismatches newest first; JSON gives them in file order)."""
    if isinstance(check, OffsetIndexCheck):
        return [
            INDEX_MISMATCH.object(
                OFFSET_CHECK,
                file=file,
                check="offset",
                index_offset=m.index_offset,
                log_offset=m.log_offset,
            )
            for m in check.mismatches
        ]
    return (
        [
            INDEX_MISMATCH.object(
                OFFSET_CHECK,
                file=file,
                check="offset_not_found",
                index_offset=n.index_offset,
                log_offset=n.log_offset,
            )
            for n in check.not_found
        ]
        + [
            INDEX_MISMATCH.object(
                TIMESTAMP_CHECK,
                LOG_TIMESTAMP,
                file=file,
                check="timestamp",
                index_timestamp=m.index_timestamp,
                log_timestamp=m.log_timestamp,
            )
            for m in check.mismatches
        ]
        + [
            INDEX_MISMATCH.object(
                TIMESTAMP_CHECK,
                ORDER,
                file=file,
                check="timestamp_order",
                index_timestamp=o.index_timestamp,
                previous_timestamp=o.previous_timestamp,
            )
            for o in check.out_of_order
        ]
    )


def sanity_object(file: str, error: CorruptIndexError | None = None) -> dict:
    if error is None:
        return SANITY_CHECK.object(file=file, passed=True)
    return SANITY_CHECK.object(
        FAILED, file=file, passed=False, position=error.position, error=error.message
    )
