"""The only code that changes files. Every change is a short sequence of single file-system steps,
each counted by `FsOps.step()`: the choke point where tests inject a crash.

Crash safety (spec §13.8):
- new content goes to `<name>.kafkalog-tmp` in the same directory, is fsynced, renamed over the
  final name, and the directory is fsynced; a crash leaves either the old or the new file, plus at
  worst a stray tmp file that `kafkalog recover` removes (Kafka ignores unknown suffixes);
- what an operation removes (bytes cut from a segment, whole files) is first made durable in the
  quarantine, and only then removed from the log dir.

Quarantine. A broker treats every subdirectory of a log dir as a partition, so nothing may be added
inside it. The default is a sibling of the log dir, `<logdir>/../.kafkalog-quarantine/<logdir
name>/<UTC time>-<op>/`: it is on the same file system (so removing a whole file is one atomic
rename, no copy, no extra space), next to the data it came from, and outside every log dir.
`--quarantine DIR` chooses another place; `--no-quarantine` really drops. Each run's folder has a
`manifest.json`: for every entry what, from where, why, when, and the byte range for cut bytes.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from kafkalog_cli.errors import UsageError, WriteError
from kafkalog_cli.storage.names import CLEANED_SUFFIX, SWAP_SUFFIX

TMP_SUFFIX = ".kafkalog-tmp"
QUARANTINE_DIRNAME = ".kafkalog-quarantine"
FAULT_ENV = "KAFKALOG_FAULT_AFTER"   # subprocess tests: die (exit 137, like SIGKILL) after step N
_COPY_CHUNK = 1 << 20


class InjectedFault(BaseException):
    """Raised by the fault injector after step N. A BaseException, so no `except Exception` in
    the code under test can swallow it, just as nothing survives a SIGKILL."""


def default_quarantine_root(log_dir: Path) -> Path:
    # beside the real log dir (a symlinked one included): same file system, so a move is a rename
    log_dir = Path(os.path.realpath(log_dir))
    return log_dir.parent / QUARANTINE_DIRNAME / log_dir.name


def quarantine_root(log_dir: Path, chosen: Path | None, no_quarantine: bool) -> Path | None:
    """The quarantine root for `log_dir`: None with --no-quarantine, else --quarantine DIR or the
    default. Never inside the log dir: a broker takes every directory there for a partition."""
    if no_quarantine:
        return None
    if chosen is None:
        return default_quarantine_root(log_dir)
    real, real_dir = Path(os.path.realpath(chosen)), Path(os.path.realpath(log_dir))
    if real == real_dir or real_dir in real.parents:
        raise UsageError(f"--quarantine {chosen} is inside the log dir {log_dir}, where a broker would "
                         f"take it for a partition; choose a place outside it")
    return Path(chosen)


def utc_stamp(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S.%fZ")


@dataclass
class QuarantineEntry:
    what: str            # "file" or "bytes"
    source: str          # path it came from
    stored: str | None   # path in the quarantine (None with --no-quarantine or zero padding)
    reason: str
    when: str
    start: int | None = None     # byte range of the source, for cut bytes
    end: int | None = None


@dataclass
class Quarantine:
    """Where removed data goes. `root=None` means --no-quarantine: removed data is dropped."""

    root: Path | None
    op: str
    stamp: str = field(default_factory=utc_stamp)
    entries: list[QuarantineEntry] = field(default_factory=list)

    @property
    def folder(self) -> Path | None:
        return None if self.root is None else Path(self.root) / f"{self.stamp}-{self.op}"

    def manifest(self) -> dict:
        return {"version": 1, "op": self.op, "created": self.stamp,
                "entries": [asdict(e) for e in self.entries]}


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FsOps:
    """Carries out single file-system steps; counts them; turns OSError into WriteError."""

    def __init__(self, base_dir: Path, quarantine: Quarantine | None = None,
                 fault_after: int | None = None, on_step: Callable[[int, str], None] | None = None):
        self.base_dir = Path(base_dir)          # the log dir: quarantine paths are relative to it
        self.quarantine = quarantine
        if fault_after is None and os.environ.get(FAULT_ENV):
            fault_after = int(os.environ[FAULT_ENV])
            self._fault_exits = True
        else:
            self._fault_exits = False
        self.fault_after = fault_after
        self.on_step = on_step
        # tests: called before each system call with (kind, path); may raise OSError (EROFS...)
        self.before: Callable[[str, Path], None] | None = None
        self.steps = 0
        self.journal: list[str] = []

    # -- the choke point ---------------------------------------------------------------------
    def step(self, description: str) -> None:
        """Called right after every single file-system step has completed."""
        self.steps += 1
        self.journal.append(description)
        if self.on_step is not None:
            self.on_step(self.steps, description)
        if self.fault_after is not None and self.steps >= self.fault_after:
            if self._fault_exits:
                os._exit(137)
            raise InjectedFault(f"fault injected after step {self.steps}: {description}")

    def _pre(self, kind: str, path: Path) -> None:
        if self.before is not None:
            self.before(kind, Path(path))

    def _error(self, e: OSError, path: Path, doing: str) -> WriteError:
        reason = {errno.EROFS: "read-only file system", errno.ENOSPC: "no space left on device",
                  errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
                  errno.EDQUOT: "disk quota exceeded"}.get(e.errno, e.strerror or str(e))
        return WriteError(f"cannot {doing}: {reason}", path=str(getattr(e, "filename", None) or path))

    # -- primitives --------------------------------------------------------------------------
    def fsync_dir(self, directory: Path) -> None:
        try:
            self._pre("fsync", directory)
            _fsync_path(directory, directory=True)
        except OSError as e:
            raise self._error(e, directory, "fsync directory") from None
        self.step(f"fsync {directory}")

    def write_atomic(self, path: Path, data: bytes, mtime_ns: int | None = None,
                     preallocate: int | None = None) -> None:
        """tmp in the same dir, fsync, (mtime), rename over `path`, fsync the dir.
        `preallocate` extends the file with zeros to that length, as Kafka's index setLength."""
        path = Path(path)
        tmp = path.with_name(path.name + TMP_SUFFIX)
        try:
            self._pre("write", tmp)
            with open(tmp, "wb") as f:
                f.write(data)
                if preallocate is not None and preallocate > len(data):
                    f.truncate(preallocate)
                f.flush()
                os.fsync(f.fileno())
            if mtime_ns is not None:
                os.utime(tmp, ns=(mtime_ns, mtime_ns))
        except OSError as e:
            _unlink_quietly(tmp)
            raise self._error(e, path, "write") from None
        self.step(f"write {tmp}")
        try:
            self._pre("rename", path)
            os.replace(tmp, path)
        except OSError as e:
            _unlink_quietly(tmp)
            raise self._error(e, path, "rename") from None
        self.step(f"rename {tmp} -> {path}")
        self.fsync_dir(path.parent)

    @contextlib.contextmanager
    def create(self, path: Path) -> Iterator[BinaryIO]:
        """A new file written as a stream (a `.cleaned` segment): fsynced when the body ends, then
        one step. An error removes the partial file (nothing refers to it yet) and is a
        WriteError naming it; a crash (InjectedFault, SIGKILL) leaves it, as a crash would."""
        path = Path(path)
        try:
            self._pre("write", path)
            f = open(path, "wb")
        except OSError as e:
            raise self._error(e, path, "write") from None
        try:
            with f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except Exception as e:
            _unlink_quietly(path)
            if isinstance(e, OSError):
                raise self._error(e, Path(e.filename or path), "write") from None
            raise
        self.step(f"write {path}")

    def copy_ranges(self, src: Path, dst: Path, ranges: list[tuple[int, int]]) -> None:
        """`dst` created from the [start, end) byte ranges of `src`, in order (--salvage)."""
        with self.create(dst) as fo, open(src, "rb") as fi:
            for start, end in ranges:
                fi.seek(start)
                remaining = end - start
                while remaining:
                    chunk = fi.read(min(_COPY_CHUNK, remaining))
                    if not chunk:
                        break
                    fo.write(chunk)
                    remaining -= len(chunk)

    def replace_segments(self, cleaned: list[Path], old: list[tuple[Path, str]]) -> None:
        """LocalLog.replaceSegments: every new file `<name>.cleaned` -> `<name>.swap`, the old
        files out of the log dir (into the quarantine, where Kafka renames them `.deleted`), then
        every `.swap` -> `<name>`. A crash at any step is finished by LogLoader (the broker's and
        `kafkalog recover`'s): a `.swap` replaces the old files it covers, a `.cleaned` is dropped."""
        if cleaned:   # the new files' entries durable before anything is renamed
            self.fsync_dir(Path(cleaned[0]).parent)
        swaps = []
        for f in cleaned:
            f = Path(f)
            if not f.name.endswith(CLEANED_SUFFIX):
                raise ValueError(f"{f} is not a .cleaned file")
            swap = f.with_name(f.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
            self.rename(f, swap)
            swaps.append(swap)
        for path, reason in old:
            if os.path.lexists(path):
                self.delete(path, reason)
        for swap in swaps:
            self.rename(swap, swap.with_name(swap.name[: -len(SWAP_SUFFIX)]))

    def check_writable(self, directory: Path) -> None:
        """Fail before the first change when `directory` cannot take a new file (a read-only file
        system, no space, no permission): a probe file written, fsynced and removed."""
        probe = Path(directory) / (".kafkalog-probe" + TMP_SUFFIX)
        try:
            self._pre("write", probe)
            with open(probe, "wb") as f:
                f.write(b"\0")
                os.fsync(f.fileno())
            os.unlink(probe)
        except OSError as e:
            _unlink_quietly(probe)
            raise self._error(e, Path(directory), "write in") from None

    def rename(self, src: Path, dst: Path) -> None:
        """One atomic rename (Kafka's suffix protocol: .cleaned -> .swap -> final, -> .deleted)."""
        try:
            self._pre("rename", src)
            os.rename(src, dst)
        except OSError as e:
            raise self._error(e, Path(src), "rename") from None
        self.step(f"rename {src} -> {dst}")
        self.fsync_dir(Path(dst).parent)

    def set_mtime(self, path: Path, mtime_ns: int) -> None:
        try:
            os.utime(path, ns=(mtime_ns, mtime_ns))
        except OSError as e:
            raise self._error(e, Path(path), "set the time of") from None
        self.step(f"utime {path}")

    def truncate(self, path: Path, size: int, reason: str, keep_mtime: bool = False) -> None:
        """Cut `path` to `size` bytes; the cut bytes go to the quarantine first (all-zero padding,
        such as a preallocated index's, is only noted)."""
        path = Path(path)
        try:
            st = os.stat(path)
        except OSError as e:
            raise self._error(e, path, "stat") from None
        if st.st_size <= size:
            return
        self._quarantine_bytes(path, size, st.st_size, reason)
        try:
            self._pre("truncate", path)
            os.truncate(path, size)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            if keep_mtime:
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        except OSError as e:
            raise self._error(e, path, "truncate") from None
        self.step(f"truncate {path} to {size}")

    def extend(self, path: Path, size: int) -> None:
        """setLength to a larger size (zeros), e.g. an index resized for the active segment."""
        try:
            os.truncate(path, size)
        except OSError as e:
            raise self._error(e, Path(path), "extend") from None
        self.step(f"extend {path} to {size}")

    def delete(self, path: Path, reason: str) -> None:
        """Remove a file: moved into the quarantine (one rename on the same file system, else a
        durable copy first), or dropped with --no-quarantine."""
        path = Path(path)
        q = self.quarantine
        if q is None or q.folder is None:
            self._note(QuarantineEntry("file", str(path), None, reason, utc_stamp()))
            try:
                self._pre("unlink", path)
                os.unlink(path)
            except FileNotFoundError:
                return
            except OSError as e:
                raise self._error(e, path, "delete") from None
            self.step(f"unlink {path}")
            self.fsync_dir(path.parent)
            return
        target = self._quarantine_target(path)
        self._note(QuarantineEntry("file", str(path), str(target), reason, utc_stamp()))
        try:
            self._pre("rename", path)
            os.rename(path, target)
            self.step(f"rename {path} -> {target}")
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise self._error(e, path if e.errno == errno.ENOENT else target, "quarantine") from None
            self._copy_range(path, target, 0, None)
            try:
                os.unlink(path)
            except OSError as e2:
                raise self._error(e2, path, "delete") from None
            self.step(f"unlink {path}")
        self.fsync_dir(target.parent)
        self.fsync_dir(path.parent)

    # -- quarantine --------------------------------------------------------------------------
    def _quarantine_target(self, path: Path) -> Path:
        folder = self.quarantine.folder
        try:
            rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(self.base_dir))
        except ValueError:
            rel = Path(Path(path).parent.name) / Path(path).name
        target = folder / rel
        n = 1
        while target.exists():
            target = folder / rel.parent / f"{rel.name}.{n}"
            n += 1
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self._error(e, target.parent, "create the quarantine") from None
        return target

    def _quarantine_bytes(self, path: Path, start: int, end: int, reason: str) -> None:
        if _all_zero(path, start, end):
            self._note(QuarantineEntry("zeros", str(path), None, reason, utc_stamp(), start, end))
            return
        q = self.quarantine
        if q is None or q.folder is None:
            self._note(QuarantineEntry("bytes", str(path), None, reason, utc_stamp(), start, end))
            return
        target = self._quarantine_target(path.with_name(f"{path.name}.bytes-{start}-{end}"))
        self._note(QuarantineEntry("bytes", str(path), str(target), reason, utc_stamp(), start, end))
        self._copy_range(path, target, start, end)
        self.fsync_dir(target.parent)

    def _copy_range(self, src: Path, dst: Path, start: int, end: int | None) -> None:
        try:
            self._pre("copy", dst)
            with open(src, "rb") as fi, open(dst, "wb") as fo:
                fi.seek(start)
                remaining = None if end is None else end - start
                while remaining is None or remaining > 0:
                    chunk = fi.read(_COPY_CHUNK if remaining is None else min(_COPY_CHUNK, remaining))
                    if not chunk:
                        break
                    fo.write(chunk)
                    if remaining is not None:
                        remaining -= len(chunk)
                fo.flush()
                os.fsync(fo.fileno())
            shutil.copystat(src, dst)
        except OSError as e:
            _unlink_quietly(dst)
            raise self._error(e, dst, "write to the quarantine") from None
        self.step(f"copy {src}[{start}:{end}] -> {dst}")

    def prepare_quarantine(self) -> None:
        """Create the quarantine folder and its manifest now, so that an unwritable or full
        quarantine is found before the log dir is touched."""
        self._write_manifest()

    def _note(self, entry: QuarantineEntry) -> None:
        """Record the entry, and make the manifest durable before the data moves."""
        if self.quarantine is None:
            return
        self.quarantine.entries.append(entry)
        self._write_manifest()

    def _write_manifest(self) -> None:
        """The quarantine folder (created if need be) and its manifest, written atomically."""
        q = self.quarantine
        if q is None or q.folder is None:
            return
        try:
            self._pre("mkdir", q.folder)
            q.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self._error(e, q.folder, "create the quarantine") from None
        self.write_atomic(q.folder / "manifest.json",
                          (json.dumps(q.manifest(), indent=2) + "\n").encode())


def _all_zero(path: Path, start: int, end: int) -> bool:
    with open(path, "rb") as f:
        f.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = f.read(min(_COPY_CHUNK, remaining))
            if not chunk:
                return True
            if chunk.count(0) != len(chunk):
                return False
            remaining -= len(chunk)
    return True


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
