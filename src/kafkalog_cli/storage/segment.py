"""One segment: `<base>.log` (mmap'd) and its `.index`, `.timeindex` and `.txnindex` (LogSegment)."""
from __future__ import annotations

import mmap
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

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


def not_regular_reason(path: Path | str) -> str | None:
    """Why `path` cannot be read as a file (missing, a dangling symlink, a directory, a FIFO,
    a device or socket), or None for a regular file (or a symlink to one). Only stats: a FIFO
    is never opened, since opening one for reading blocks until a writer comes."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return "dangling symbolic link (its target does not exist)"
        return "no such file"
    except PermissionError:
        return "permission denied"
    except OSError as e:
        return e.strerror or str(e)
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return f"not a regular file ({kind}); only regular files are read" if kind.startswith("a ") else kind


class _opened:
    """open(path, 'rb') of a regular file, whose failures are InputErrors naming the path.
    Directories, FIFOs, devices and sockets are refused before anything is opened."""

    def __init__(self, path: Path | str):
        self.path = path

    def __enter__(self):
        why = not_regular_reason(self.path)
        if why is not None:
            raise InputError(why, path=str(self.path))
        try:
            self.f = open(self.path, "rb")
        except FileNotFoundError:
            raise InputError("no such file", path=str(self.path)) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a file", path=str(self.path)) from None
        except PermissionError:
            raise InputError("permission denied", path=str(self.path)) from None
        except OSError as e:
            raise InputError(e.strerror or str(e), path=str(self.path)) from None
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

    @classmethod
    def with_log(cls, directory: Path, base_offset: int, log) -> "Segment":
        """A segment over a .log its reader has already mapped (`map_file`), so the indexes are
        checked against the same bytes and the file is not mapped twice."""
        return cls(directory, base_offset, log)

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

    def position_for_offset(self, offset: int, warn: Callable[[str], None] | None = None) -> int:
        """Byte position of the first batch whose last offset is >= `offset` (OffsetIndex.lookup,
        then a forward scan), or the end of the log if there is none.

        The index is only a shortcut and is not trusted blindly: its entries must be in order and
        in range, and the entry used must point at the start of a sound batch that does not begin
        after the entry's offset. Otherwise the log is scanned from its first byte (and `warn`,
        if given, gets one line saying why), so a damaged index never hides records."""
        log = self.log
        start = 0
        entry = None
        why = None
        try:
            entries = self.offset_index()
        except Exception as e:  # noqa: BLE001 - any unreadable index only costs us the shortcut
            entries, why = [], f"cannot be read ({getattr(e, 'message', e)})"
        if why is None:
            why = _check_offset_entries(entries, self.base_offset, len(log))
        if why is None:
            lo, hi = 0, len(entries) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if entries[mid].offset <= offset:
                    entry = entries[mid]
                    lo = mid + 1
                else:
                    hi = mid - 1
            if entry is not None and entry.position > 0:
                why = _check_entry_batch(log, entry.position, entry.offset)
                if why is None:
                    start = entry.position
        if why is not None:
            if warn is not None:
                warn(f"{self.index_path}: {why}; scanning {self.log_path.name} from its first byte instead")
            start = 0
        for b in self.batches(start):
            if b.last_offset >= offset:
                return b.position
        return len(log)

    def position_for_timestamp(self, timestamp: int, warn: Callable[[str], None] | None = None) -> int:
        """Byte position of the first batch that may hold a record with timestamp >= `timestamp`:
        the time index gives a lower bound, then batches are scanned by their max timestamp.

        A time-index entry is used only if the entries are in order and in range and the batch
        holding the entry's offset has the entry's timestamp as its max timestamp; otherwise the
        log is scanned from its first byte (and `warn` says why)."""
        entry = None
        why = None
        try:
            entries = self.time_index()
        except Exception as e:  # noqa: BLE001
            entries, why = [], f"cannot be read ({getattr(e, 'message', e)})"
        if why is None:
            why = _check_time_entries(entries, self.base_offset)
        if why is None:
            for e in entries:
                if e.timestamp < timestamp:
                    entry = e
                else:
                    break
        start = 0
        if why is None and entry is not None:
            pos = self.position_for_offset(entry.offset, warn)
            b = next(self.batches(pos), None) if pos < len(self.log) else None
            if b is None or b.base_offset_field > entry.offset and b.magic >= 2:
                why = f"entry (timestamp {entry.timestamp}, offset {entry.offset}) names an offset that is not in the log"
            elif b.max_timestamp != entry.timestamp:
                why = (f"entry (timestamp {entry.timestamp}, offset {entry.offset}) does not match the log "
                       f"(the batch at byte {b.position} has max timestamp {b.max_timestamp})")
            else:
                start = pos
        if why is not None:
            if warn is not None:
                warn(f"{self.time_index_path}: {why}; scanning {self.log_path.name} from its first byte instead")
            start = 0
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
    """An index's bytes, or b'' when there is no such file (a FIFO is never opened)."""
    if not os.path.lexists(path):
        return b""
    return read_file(path)


_MAGICS = (0, 1, 2)


def _check_offset_entries(entries, base_offset: int, log_size: int) -> str | None:
    """Why the offset index's entries cannot be trusted, or None: offsets must be at least the
    base offset and strictly increase, positions lie inside the log and do not decrease."""
    prev = None
    for i, e in enumerate(entries):
        if e.offset < base_offset:
            return f"byte {i * 8}: entry offset {e.offset} is below the segment's base offset {base_offset}"
        if not 0 <= e.position < max(log_size, 1):
            return f"byte {i * 8}: entry position {e.position} is outside the {log_size}-byte log"
        if prev is not None and (e.offset <= prev.offset or e.position < prev.position):
            return (f"byte {i * 8}: entry (offset {e.offset}, position {e.position}) is not after "
                    f"(offset {prev.offset}, position {prev.position})")
        prev = e
    return None


def _check_time_entries(entries, base_offset: int) -> str | None:
    prev = None
    for i, e in enumerate(entries):
        if e.offset < base_offset:
            return f"byte {i * 12}: entry offset {e.offset} is below the segment's base offset {base_offset}"
        if prev is not None and (e.timestamp < prev.timestamp or e.offset < prev.offset):
            return (f"byte {i * 12}: entry (timestamp {e.timestamp}, offset {e.offset}) is not after "
                    f"(timestamp {prev.timestamp}, offset {prev.offset})")
        prev = e
    return None


def _check_entry_batch(log, position: int, offset: int) -> str | None:
    """Why the batch an index entry points at cannot be where the entry's offset starts, or None:
    a size of at least 14 that fits in the file, a known magic, a valid CRC, and a first offset
    (for legacy entries, the wrapper's offset) not after the entry's offset."""
    from kafkalog_cli.formats.records import LOG_OVERHEAD, RecordBatch

    n = len(log)
    if position + 17 > n:
        return f"entry (offset {offset}, position {position}) points past the last batch header"
    size = int.from_bytes(log[position + 8 : position + 12], "big", signed=True)
    magic = log[position + 16]
    if size < 14 or position + LOG_OVERHEAD + size > n or magic not in _MAGICS:
        return (f"entry (offset {offset}, position {position}) does not point at the start of a batch "
                f"(size field {size}, magic {magic if magic < 128 else magic - 256})")
    b = RecordBatch(log, position, size + LOG_OVERHEAD, magic)
    first = b.base_offset_field if magic >= 2 else b.last_offset
    if first > offset:
        return (f"entry (offset {offset}, position {position}) points at a batch starting at offset "
                f"{first}, after the entry's")
    try:
        valid = b.is_valid()
    except Exception:  # noqa: BLE001
        valid = False
    if not valid:
        return f"entry (offset {offset}, position {position}) points at a batch whose CRC does not match"
    return None
