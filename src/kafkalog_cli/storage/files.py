"""The one way a file in a log dir is opened: never blocking, regular files only.

Opening a FIFO blocks until a peer opens its other end (for reading: a writer; for writing: a
reader), so a FIFO where Kafka expects a regular file would hang a command forever. Every open
here is non-blocking (O_NONBLOCK), the open file is checked with fstat (no race with a stat
before the open), anything but a regular file is refused with an InputError naming the path and
what is there, and O_NONBLOCK is cleared before the fd is used. A broker cannot read such a
file as a Kafka file either (its blocking open(2) waits on a FIFO; a directory fails), so none
of them is ever taken as an absent file. Missing and unreadable files are InputErrors naming
the path as well (exit 4, docs/safety.md "Exit codes")."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

from kafkalog_cli.errors import InputError

# O_NOCTTY: a terminal device in a file's place never becomes the controlling terminal
_OPEN_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class MissingFile(InputError):
    """Nothing at the path (ENOENT, ENOTDIR; a dangling symlink included)."""


def kind_of(mode: int) -> str | None:
    """What a file of this st_mode is, when it is not a regular file: "a directory", "a FIFO",
    "a socket", "a device"; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def not_regular_message(kind: str) -> str:
    """The one-line reason for a non-regular file in a regular file's place."""
    if kind == "a directory":
        return "is a directory, not a file"
    return f"not a regular file ({kind}); only regular files are read"


def os_error_message(path: Path | str, e: OSError) -> str:
    """An open's OSError as the reason printed beside the path."""
    if isinstance(e, FileNotFoundError):
        return (
            "dangling symbolic link (its target does not exist)"
            if os.path.islink(path)
            else "no such file"
        )
    if isinstance(e, PermissionError):
        return "permission denied"
    if isinstance(e, IsADirectoryError):
        return "is a directory, not a file"
    try:  # ENXIO: a socket, or a FIFO opened for writing with no reader
        kind = kind_of(os.stat(path).st_mode)
    except OSError:
        kind = None
    return not_regular_message(kind) if kind is not None else e.strerror or str(e)


def open_fd(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """os.open(path, flags) of a regular file, never blocking: an fd in blocking mode, or an
    InputError naming the path (missing, permission denied, a directory, a FIFO, a socket, a
    device). With O_CREAT a new file is created as os.open does; an existing one is checked."""
    try:
        fd = os.open(path, flags | _OPEN_FLAGS, mode)
    except OSError as e:
        missing = isinstance(e, (FileNotFoundError, NotADirectoryError))
        raise (MissingFile if missing else InputError)(
            os_error_message(path, e), path=str(path)
        ) from None
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise InputError(not_regular_message(kind), path=str(path))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_readable(path: Path | str) -> None:
    """An InputError when the file at `path` cannot be read (not a regular file, permission
    denied); nothing there passes. For a file about to be kept (linked or copied) before anything
    changes: opened without blocking and closed again."""
    try:
        os.close(open_fd(path))
    except MissingFile:
        pass


def open_file(path: Path | str, mode: str = "rb") -> BinaryIO:
    """A binary file object of a regular file ("rb", "r+b", "ab"), opened through open_fd."""
    flags = {"rb": os.O_RDONLY, "r+b": os.O_RDWR, "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT}[
        mode
    ]
    fd = open_fd(path, flags)
    try:
        return cast(BinaryIO, os.fdopen(fd, mode))  # a binary mode: the keys above
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def opened(path: Path | str, mode: str = "rb") -> Iterator[BinaryIO]:
    """`with opened(path) as f`: open_file, closed at the end."""
    f = open_file(path, mode)
    try:
        yield f
    finally:
        f.close()


def read_bytes(path: Path | str, limit: int | None = None) -> bytes:
    """A regular file's bytes (at most `limit` of them), or an InputError naming the path."""
    with opened(path) as f:
        try:
            return f.read() if limit is None else f.read(limit)
        except OSError as e:
            raise InputError(os_error_message(path, e), path=str(path)) from None


def read_bytes_if_exists(path: Path | str, limit: int | None = None) -> bytes | None:
    """read_bytes, or None when there is no file at `path` (a dangling symlink included, as
    open(2) finds none): the optional files of a log dir. Anything there that cannot be read
    (permission denied, a FIFO, a directory) is an InputError, never taken as absent."""
    try:
        return read_bytes(path, limit)
    except MissingFile:
        return None
