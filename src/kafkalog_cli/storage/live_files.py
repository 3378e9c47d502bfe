"""The files a listing of a partition dir found, followed when a live broker moves them.

Read-only commands may run beside a live broker, whose retention and cleaner rename a segment's
files to `.deleted` (LocalLog.deleteSegmentFiles: renamed at once, deleted file.delete.delay.ms
later) or replace them (the cleaner's .cleaned -> .swap -> rename) between kafkalog's listing
of a partition dir and its opening a file. A file that a listing found and that is gone when
opened is followed to its `.deleted` name, or, gone altogether, read as empty: the log is read
as it stands, and `live_note` says so (a command sets it; by default it writes to stderr).
Every read of a listed file (map_file, read_file, read_listed) goes through `followed`.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage import files
from kafkalog_cli.storage.names import DELETED_SUFFIX

_LISTED: set[str] = set()


def listed(paths) -> None:
    """Files a listing of a partition dir found (storage.logdir, Partition.open)."""
    _LISTED.update(map(str, paths))


def _stderr_note(text: str) -> None:
    import sys

    from kafkalog_cli.errors import one_line

    sys.stderr.write(f"kafkalog: note: {one_line(text)}\n")


live_note: Callable[[str], None] = _stderr_note


class RemovedByBroker(InputError):
    """A listed file removed since the listing (no `.deleted` copy either)."""


def followed(path: Path | str) -> Path | str:
    """`path`, or where the broker moved it since it was listed (its `.deleted` name); raises
    RemovedByBroker if it is gone altogether. A path no listing found is left as it is (a
    missing file given by the user stays an error)."""
    if str(path) not in _LISTED or os.path.lexists(path):
        return path
    moved = Path(f"{path}{DELETED_SUFFIX}")
    if os.path.lexists(moved):
        live_note(
            f"{path}: renamed to {moved.name} by the broker while this command ran (retention or the "
            f"cleaner deletes it soon): read from there"
        )
        return moved
    live_note(
        f"{path}: removed by the broker while this command ran (retention or the cleaner): read as it "
        f"stands, without it"
    )
    raise RemovedByBroker("removed by the broker while this command ran", path=str(path))


def was_listed(path: Path | str) -> bool:
    return str(path) in _LISTED


def read_listed(path: Path | str) -> bytes | None:
    """read_file, or None for a listed file the broker has removed since (noted)."""
    try:
        with files.opened(followed(path)) as f:
            return f.read()
    except RemovedByBroker:
        return None


def map_file(path: Path | str):
    """The file's bytes without copying them: an mmap, or b'' for an empty file (mmap refuses 0)
    or for a listed file the broker has removed since (see `followed`)."""
    try:
        with files.opened(followed(path)) as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except RemovedByBroker:
        return b""


def unmap(buf) -> None:
    """Close an mmap from map_file (anything else is left alone). While a view of it is still
    held (a memoryview in an exception's traceback frames, a buffer handed out), closing raises
    BufferError: the map then goes when the last view does, as the collector releases it. The one
    place a segment's mapping is closed, so no reader's error turns into a BufferError."""
    if isinstance(buf, mmap.mmap):
        try:
            buf.close()
        except BufferError:
            pass


# madvise(2)'s MADV_POPULATE_READ (Linux 5.14; the mmap module names it from Python 3.13 on)
_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)


def populate_pages(buf, start: int, stop: int) -> None:
    """Map the pages of a range of a file's map that is about to be read, in one call: a fault
    per 16 pages cost verify-crc a tenth of its CPU. Where the kernel has no such call (before
    Linux 5.14, other systems), the pages come in as they are read."""
    global _POPULATE_READ
    if _POPULATE_READ is None or not isinstance(buf, mmap.mmap):
        return
    lo = start // mmap.PAGESIZE * mmap.PAGESIZE
    if stop > lo:
        try:
            buf.madvise(_POPULATE_READ, lo, stop - lo)
        except (OSError, ValueError, AttributeError):
            _POPULATE_READ = None


def release_pages(buf, start: int, stop: int) -> None:
    """Let the pages of a mapped range go from this process's memory once it is read (they stay
    in the page cache): a process walking a 1 GiB segment would otherwise hold all it touched
    (the kernel maps the pages around each one read). Anything but an mmap is left alone."""
    if isinstance(buf, mmap.mmap):
        lo = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
        hi = stop // mmap.PAGESIZE * mmap.PAGESIZE
        if hi > lo:
            buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def read_file(path: Path | str) -> bytes:
    """A small file's bytes (indexes, snapshots), with the same one-line errors as map_file."""
    try:
        with files.opened(followed(path)) as f:
            return f.read()
    except RemovedByBroker:
        return b""
