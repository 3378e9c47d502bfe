"""JSON objects for the non-log files: offset and time indexes, .txnindex, producer snapshots."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from kafkalog_cli.errors import InputError
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
            yield {"kind": "index_entry", "offset": e.offset, "position": e.position}
    elif suffix == ".timeindex":
        from kafkalog_cli.formats.indexes import parse_time_index

        for e in parse_time_index(read_file(path), _base(path)):
            yield {"kind": "time_index_entry", "timestamp": e.timestamp, "offset": e.offset}
    elif suffix == ".txnindex":
        from kafkalog_cli.formats.txnindex import parse_txn_index

        for t in parse_txn_index(read_file(path), path=str(path)):
            yield {"kind": "aborted_txn", "version": t.version, "producer_id": t.producer_id,
                   "first_offset": t.first_offset, "last_offset": t.last_offset,
                   "last_stable_offset": t.last_stable_offset}
    elif suffix == ".snapshot":
        from kafkalog_cli.formats.producer_state import parse_producer_snapshot

        from kafkalog_cli.errors import CorruptSnapshotError

        try:
            snap = parse_producer_snapshot(read_file(path), path=str(path))
        except CorruptSnapshotError as e:
            # kafka-dump-log prints the message and goes on (exit 0); so does JSON, as an object
            yield {"kind": "corrupt_snapshot", "file": str(path), "position": e.position, "error": e.message}
            return
        for e in snap.entries:
            yield {"kind": "producer_state", "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                   "coordinator_epoch": e.coordinator_epoch,
                   "current_txn_first_offset": e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None,
                   "last_sequence": e.last_sequence, "last_offset": e.last_offset,
                   "offset_delta": e.offset_delta, "timestamp": e.timestamp}
