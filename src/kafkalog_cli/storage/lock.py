"""The log dir's `.lock`, taken as a broker takes it (LogManager.lockLogDirs, FileLock.tryLock).

The JVM's FileChannel.tryLock() is POSIX `fcntl(F_SETLK, F_WRLCK, 0, 0)`, so we use
`fcntl.lockf(LOCK_EX | LOCK_NB)`. Not `flock`: on Linux flock locks and fcntl locks do not see
each other, and a broker would run beside us."""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from pathlib import Path

from kafkalog_cli.errors import InputError, KafkalogError, LockedError, WriteError
from kafkalog_cli.storage import files, ownership
from kafkalog_cli.storage.links import WriteBounds
from kafkalog_cli.storage.names import LOCK_FILE

# struct flock on Linux (x86_64, aarch64): short l_type, short l_whence, off_t l_start,
# off_t l_len, pid_t l_pid (+ padding)
_FLOCK = struct.Struct("hhqqi4x")


def holder_pid(fd: int) -> int | None:
    """The pid holding a conflicting lock on `fd` (fcntl F_GETLK), or None if nobody does."""
    probe = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        got = fcntl.fcntl(fd, fcntl.F_GETLK, probe)
    except OSError:
        return None
    l_type, _, _, _, pid = _FLOCK.unpack(got)
    return None if l_type == fcntl.F_UNLCK else pid


def lock_holder(log_dir: Path) -> int | None:
    """The pid that holds `log_dir`'s .lock (a broker, another kafkalog), or None; takes no lock
    (what a dry run tells its user before a real run would stop on it)."""
    try:
        fd = files.open_fd(os.path.join(log_dir, LOCK_FILE), os.O_RDWR)
    except KafkalogError:
        return None
    try:
        return holder_pid(fd)
    finally:
        os.close(fd)


class LogDirLock:
    """Context manager: holds `<logdir>/.lock` exclusively until exit.

    Like the broker we create the file when it is missing (it is empty). `wait`: block until
    the holder lets go (kafkalog's own state dir, held for a moment), instead of LockedError.
    A `.lock` that is a link out of the log dir is not opened (it would be created there) unless
    `follow_symlinks`: the write gate's rule (storage.links), judged before the open."""

    def __init__(self, log_dir: Path, wait: bool = False, follow_symlinks: bool = False):
        self.log_dir = Path(log_dir)
        self.wait = wait
        self.follow_symlinks = follow_symlinks
        self.path = self.log_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> LogDirLock:
        if not self.log_dir.is_dir():
            raise InputError("not a directory", path=str(self.log_dir))
        WriteBounds([self.log_dir], self.follow_symlinks).check(self.path, content=True)
        try:
            reference = None if self.path.exists() else ownership.like(self.path)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if reference is not None:  # as root: the broker's user must open it too
                ownership.adopt(fd, reference)
        except OSError as e:
            if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                # A read-only or foreign dir: we could not change anything in it anyway.
                raise WriteError(
                    f"cannot open the lock file: {(e.strerror or str(e)).lower()}",
                    path=str(self.path),
                ) from None
            raise
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX if self.wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                os.close(fd)
                raise
            pid = holder_pid(fd)
            os.close(fd)
            who = f"process {pid}" if pid else "another process"
            raise LockedError(
                f"in use by {who} (a broker or another kafkalog holds the lock)",
                path=str(self.path),
            ) from None
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> LogDirLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
