"""One segment: `<base>.log` (mmap'd) and its `.index`, `.timeindex` and `.txnindex` (LogSegment)."""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from kafkalog_cli.errors import InputError
if TYPE_CHECKING:  # records are imported when batches are read, not to map a file
    from kafkalog_cli.formats.records import RecordBatch
from kafkalog_cli.storage.names import (
    INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, offset_from_name, segment_file,
)


def map_file(path: Path | str):
    """The file's bytes without copying them: an mmap, or b'' for an empty file (mmap refuses 0)."""
    with _opened(path) as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def read_file(path: Path | str) -> bytes:
    """A small file's bytes (indexes, snapshots), with the same one-line errors as map_file."""
    with _opened(path) as f:
        return f.read()


class _opened:
    """open(path, 'rb') whose failures are InputErrors naming the path."""

    def __init__(self, path: Path | str):
        self.path = path

    def __enter__(self):
        try:
            self.f = open(self.path, "rb")
        except FileNotFoundError:
            raise InputError("no such file", path=str(self.path)) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a file", path=str(self.path)) from None
        except PermissionError:
            raise InputError("permission denied", path=str(self.path)) from None
        return self.f

    def __exit__(self, *exc):
        self.f.close()


@dataclass
class Segment:
    directory: Path
    base_offset: int
    _log: object = field(default=None, repr=False)

    @classmethod
    def from_log_path(cls, path: Path | str) -> "Segment":
        path = Path(path)
        base = offset_from_name(path.name)
        if base is None:
            raise InputError("file name is not a 20-digit offset followed by .log", path=str(path))
        return cls(path.parent, base)

    # -- files
    @property
    def log_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, TIME_INDEX_SUFFIX)

    @property
    def txn_index_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, TXN_INDEX_SUFFIX)

    @property
    def log(self):
        if self._log is None:
            self._log = map_file(self.log_path)
        return self._log

    @property
    def size(self) -> int:
        return len(self.log) if self._log is not None else self.log_path.stat().st_size

    def close(self) -> None:
        if isinstance(self._log, mmap.mmap):
            self._log.close()
        self._log = None

    # -- batches
    def batches(self, start_position: int = 0, end_position: int | None = None) -> Iterator["RecordBatch"]:
        from kafkalog_cli.formats.records import iter_batches

        try:
            yield from iter_batches(self.log, start_position, end_position)
        except Exception as e:  # locate any format error in this file
            if hasattr(e, "located"):
                raise e.located(path=str(self.log_path))
            raise

    # -- indexes
    def offset_index(self):
        """The offset index's entries, without preallocated zero slots."""
        from kafkalog_cli.formats.indexes import parse_offset_index

        return parse_offset_index(_read_or_empty(self.index_path), self.base_offset)

    def time_index(self):
        from kafkalog_cli.formats.indexes import parse_time_index

        return parse_time_index(_read_or_empty(self.time_index_path), self.base_offset)

    def aborted_txns(self):
        from kafkalog_cli.formats.txnindex import parse_txn_index

        return parse_txn_index(_read_or_empty(self.txn_index_path))

    def position_for_offset(self, offset: int) -> int:
        """Byte position of the first batch whose last offset is >= `offset` (OffsetIndex.lookup,
        then a forward scan), or the end of the log if there is none."""
        start = 0
        try:
            entries = self.offset_index()
        except Exception:  # a damaged index only costs us the shortcut
            entries = []
        lo, hi = 0, len(entries) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if entries[mid].offset <= offset:
                start = entries[mid].position
                lo = mid + 1
            else:
                hi = mid - 1
        if start >= len(self.log):
            start = 0
        for b in self.batches(start):
            if b.last_offset >= offset:
                return b.position
        return len(self.log)

    def position_for_timestamp(self, timestamp: int) -> int:
        """Byte position of the first batch that may hold a record with timestamp >= `timestamp`:
        the time index gives a lower bound, then batches are scanned by their max timestamp."""
        start_offset = self.base_offset
        try:
            for e in self.time_index():
                if e.timestamp < timestamp:
                    start_offset = e.offset
                else:
                    break
        except Exception:
            pass
        start = self.position_for_offset(start_offset)
        for b in self.batches(start):
            if b.max_timestamp >= timestamp:
                return b.position
        return len(self.log)

    def largest_timestamp(self) -> int:
        """The segment's largest timestamp as retention sees it: the last time-index entry, else
        the .log's mtime (LogSegment.largestTimestamp)."""
        entries = self.time_index()
        if entries and entries[-1].timestamp >= 0:
            return entries[-1].timestamp
        return int(os.stat(self.log_path).st_mtime * 1000)


def _read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
