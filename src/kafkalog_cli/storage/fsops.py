"""The only code that changes files. Every change is a short sequence of single file-system steps,
each counted by `FsOps.step()`: the choke point where tests inject a crash.

Crash safety (as Kafka's CheckpointFile.write: tmp file, fsync, atomic rename, directory fsync):
- new content goes to `<name>.kafkalog-tmp` in the same directory, is fsynced, renamed over the
  final name, and the directory is fsynced; a crash leaves either the old or the new file, plus at
  worst a stray tmp file that `kafkalog recover` removes (Kafka ignores unknown suffixes);
- what an operation removes or overwrites (bytes cut from a segment, whole files, the old content
  of a file written anew) is first made durable in the quarantine, its entry appended to the
  quarantine's journal, and only then is the log dir changed.

Quarantine (storage/quarantine_writer.py writes it, called by FsOps before each change and making
its own changes through FsOps; storage/quarantine.py has the entries, the manifest and restore).
The default is a sibling of the log dir, `<logdir>/../.kafkalog-quarantine/<logdir name>/<UTC
time>-<op>/`: on the same file system, so a whole file is kept by one hard link (no copy, no extra
space) before it leaves the log dir, and outside every log dir. Across file systems (`--quarantine
DIR`) a file is copied to `<name>.partial`, fsynced and renamed. `--no-quarantine` really drops.
Every change the op makes has its entry, files it creates included, so that `kafkalog quarantine
restore` can undo the run exactly: each entry is one line appended (O(1)) to `manifest.jsonl`. A
run of deletes (`delete_segment_files`, as Kafka's LocalLog.deleteSegmentFiles takes a list) pays
its syncs once for the batch: one fsync per directory and one manifest write + fdatasync.

The write gate (`_gate`, storage/links.py's WriteBounds): every method passes each path it will
change through it before its first step and its quarantine entry, so nothing is ever created,
written, cut, appended, renamed, deleted, linked or made outside the log dir and its quarantine
(and the dirs an op adds: move-partition's source, restore's folder), judged on resolved paths:
never through a symbolic link out of them unless `follow_symlinks` (OutsideLogDirError, exit 4).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from kafkalog_cli.errors import WriteError
from kafkalog_cli.storage import ownership
from kafkalog_cli.storage.files import open_fd, open_file
from kafkalog_cli.storage.links import WriteBounds
from kafkalog_cli.storage.names import (
    CLEANED_SUFFIX,
    PARTIAL_SUFFIX,
    PRUNING_SUFFIX,
    SWAP_SUFFIX,
    TMP_SUFFIX,
    strip_temp_suffix,
)
from kafkalog_cli.storage.space import Space, allocated

__all__ = ["FAULT_ENV", "FsOps", "InjectedFault", "TMP_SUFFIX"]

FAULT_ENV = "KAFKALOG_FAULT_AFTER"  # subprocess tests: die (exit 137, like SIGKILL) after step N
_COPY_CHUNK = 1 << 20
_OURS = (
    TMP_SUFFIX,
    PARTIAL_SUFFIX,
    PRUNING_SUFFIX,
)  # our own files: never a reference for an owner
_PARALLEL_HASH_BYTES = 64 << 20  # below this, threads cost more than they save
_HASH_THREADS = max(2, min(4, os.cpu_count() or 1))
# the gate's kinds of change that write into what a path leads to (the rest add, remove or rename a name)
_CONTENT = frozenset({"write", "copy", "truncate", "extend", "utime"})
_ON_THE_WAY = frozenset(
    {"mkdir", "rmdir"}
)  # a directory on the way to a root may be made (and removed empty)
_PROBE = ".kafkalog-probe"  # check_writable's: judged by the directory it probes
# a hard link into the quarantine is not possible: copy instead
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


class Keeper(Protocol):
    """What FsOps asks of its quarantine's writer (storage.quarantine_writer.QuarantineWriter),
    which keeps what a change takes before FsOps makes the change. FsOps calls these only while
    `keeping`, but for `cut` and `dropped`, which also note what --no-quarantine drops."""

    @property
    def keeping(self) -> bool: ...
    def moves_by_copy(self) -> bool: ...
    def holds(self, directory: Path) -> Path: ...
    def prepare(self) -> None: ...
    def wrote(self, path: Path, facts: tuple[int, str]) -> None: ...
    def overwritten(
        self, path: Path, tmp: Path, data: bytes, preallocate: int | None
    ) -> tuple[int, str] | None: ...
    def creating(self, path: Path) -> object: ...
    def created(self, entry, path: Path) -> None: ...
    def dir_created(self, path: Path, copy_of: Path | None) -> None: ...
    def dirs_renamed(self, pairs: list[tuple[Path, Path]]) -> None: ...
    def renamed(self, src: Path, dst: Path) -> tuple[int, str]: ...
    def mtime_set(self, path: Path, mtime_ns: int) -> None: ...
    def extending(self, path: Path, size: int) -> None: ...
    def cut(self, path: Path, start: int, st: os.stat_result, reason: str) -> None: ...
    def remove_kept(self, batch: list[tuple[Path, str]]) -> None: ...
    def dropped(self, batch: list[tuple[Path, str]]) -> None: ...


class QuarantineLike(Protocol):
    """What FsOps asks of the quarantine it is given (storage.quarantine_writer.Quarantine)."""

    root: Path | None
    op: str
    stamp: str
    entries: list  # storage.quarantine.QuarantineEntry, which fsops does not import

    def __init__(self, root: Path | None, op: str, stamp: str) -> None: ...  # for_worker's copy
    @property
    def folder(self) -> Path | None: ...
    def writer(self, fsops: FsOps) -> Keeper: ...


class InjectedFault(BaseException):
    """Raised by the fault injector after step N. A BaseException, so no `except Exception` in
    the code under test can swallow it, just as nothing survives a SIGKILL."""


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FsOps:
    """Carries out single file-system steps; counts them; turns OSError into WriteError."""

    def __init__(
        self,
        base_dir: Path,
        quarantine: QuarantineLike | None = None,
        fault_after: int | None = None,
        on_step: Callable[[int, str], None] | None = None,
        *,
        follow_symlinks: bool = False,
    ):
        self.base_dir = Path(base_dir)  # the log dir: quarantine paths are relative to it
        self.quarantine = quarantine
        # the write gate: changes only under the log dir and the quarantine (an op that owns
        # another dir adds it: WriteBounds.including), never through a link out of them unless
        # `follow_symlinks`; None: kafkalog's own file where the user put it (--report FILE)
        roots = [self.base_dir] + (
            [quarantine.root] if quarantine is not None and quarantine.root else []
        )
        self.bounds: WriteBounds | None = WriteBounds(roots, follow_symlinks)
        if fault_after is None and os.environ.get(FAULT_ENV):
            fault_after = int(os.environ[FAULT_ENV])
            self._fault_exits = True
        else:
            self._fault_exits = False
        self.fault_after = fault_after
        self.on_step = on_step
        # tests: called before each system call with (kind, path); may raise OSError (EROFS...)
        self.before: Callable[[str, Path], None] | None = None
        # called once, by about_to_change, right before an operation's first change to the log dir
        self.before_change: Callable[[FsOps], None] | None = None
        self.steps = 0
        self.journal: list[str] = []  # the steps' descriptions
        # keeps what each change takes, before the change (None: no quarantine, nothing noted)
        self.keeper: Keeper | None = None if quarantine is None else quarantine.writer(self)
        # storage.space's two figures, by the directory of the files changed (a partition dir,
        # or the log dir for its checkpoints)
        self.space: dict[str, Space] = {}
        # a forked worker's lock around the log dir's shared files (for_worker); None: one process
        self.shared: contextlib.AbstractContextManager[object] | None = None

    @property
    def fault_exits(self) -> bool:
        """An injected fault (KAFKALOG_FAULT_AFTER) ends the process, as a SIGKILL would."""
        return self._fault_exits

    def for_worker(self, shared: contextlib.AbstractContextManager[object]) -> FsOps:
        """A forked worker's FsOps: the same log dir, quarantine folder (whose manifest.jsonl every
        worker appends whole lines to), fault injection and test hook, and its own step count.
        `shared`: the lock around the log dir's shared files (checkpoints)."""
        q = self.quarantine
        w = FsOps(
            self.base_dir,
            None if q is None else type(q)(q.root, q.op, q.stamp),
            fault_after=self.fault_after,
        )
        w._fault_exits = self._fault_exits
        w.bounds = self.bounds
        w.before = self.before
        w.before_change = self.before_change
        w.shared = shared
        return w

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

    def about_to_change(self) -> None:
        """An operation is about to make its first change: `before_change` runs (once per FsOps;
        a worker's may find it done by another)."""
        hook, self.before_change = self.before_change, None
        if hook is not None:
            hook(self)

    def _pre(self, kind: str, path: Path) -> None:
        """Before each system call that changes something: the gate, then the tests' hook."""
        self._gate(kind, path)
        if self.before is not None:
            self.before(kind, Path(path))

    def _gate(self, kind: str, *paths: Path) -> None:
        """The write gate every change passes, before any step or quarantine entry of it:
        OutsideLogDirError when a path would change something outside the log dir and its
        quarantine (storage.links.WriteBounds; `kind` as `_pre`'s)."""
        if self.bounds is None or kind == "fsync":
            return
        for path in map(Path, paths):
            if path.name.startswith(_PROBE):
                self.bounds.check(path.parent, content=True, on_the_way=True)
            else:
                self.bounds.check(path, content=kind in _CONTENT, on_the_way=kind in _ON_THE_WAY)

    def write_error(self, e: OSError, path: Path, doing: str) -> WriteError:
        reasons: dict[int | None, str] = {
            errno.EROFS: "read-only file system",
            errno.ENOSPC: "no space left on device",
            errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted",
            errno.EDQUOT: "disk quota exceeded",
        }
        reason = reasons.get(e.errno, e.strerror or str(e))
        return WriteError(
            f"cannot {doing}: {reason}", path=str(getattr(e, "filename", None) or path)
        )

    # -- space -------------------------------------------------------------------------------
    def account(self, path: Path, freed: int = 0, held: int = 0) -> None:
        key = os.path.dirname(os.path.abspath(path))
        self.space.setdefault(key, Space()).add(Space(freed, held))

    def space_total(self) -> Space:
        total = Space()
        for s in self.space.values():
            total.add(s)
        return total

    def _moves_by_copy(self) -> bool:
        """The quarantine is on another file system: a file leaves the log dir by a copy, so
        removing it frees its blocks there and then."""
        keeper = self._keeper()
        return keeper is not None and keeper.moves_by_copy()

    # -- primitives --------------------------------------------------------------------------
    def fsync_dir(self, directory: Path) -> None:
        try:
            self._pre("fsync", directory)
            _fsync_path(directory, directory=True)
        except OSError as e:
            raise self.write_error(e, directory, "fsync directory") from None
        self.step(f"fsync {directory}")

    def write_atomic(
        self,
        path: Path,
        data: bytes,
        mtime_ns: int | None = None,
        preallocate: int | None = None,
        like: os.stat_result | None = None,
    ) -> None:
        """tmp in the same dir, fsync, (mtime), rename over `path`, fsync the dir.
        `preallocate` extends the file with zeros to that length, as Kafka's index setLength.
        `like`: the new file takes this mode, and (as root) this owner and group.
        The file it replaces (unless identical) is kept in the quarantine first."""
        path = Path(path)
        tmp = path.with_name(path.name + TMP_SUFFIX)
        self._gate("write", tmp)
        self._gate("rename", path)
        keeper = self._keeper()
        new = keeper.overwritten(path, tmp, data, preallocate) if keeper is not None else None
        try:
            self._pre("write", tmp)
            with open(tmp, "wb") as f:
                ownership.adopt(f.fileno(), ownership.like(path, skip=_OURS))
                f.write(data)
                if preallocate is not None and preallocate > len(data):
                    f.truncate(preallocate)
                f.flush()
                os.fsync(f.fileno())
            if like is not None:
                take_owner_and_mode(tmp, like)
            if mtime_ns is not None:
                os.utime(tmp, ns=(mtime_ns, mtime_ns))
        except OSError as e:
            _unlink_quietly(tmp)
            raise self.write_error(e, path, "write") from None
        self.step(f"write {tmp}")
        self._tmp_into_place(tmp, path)
        if keeper is not None and new is not None:
            keeper.wrote(path, new)

    @contextlib.contextmanager
    def create(self, path: Path) -> Iterator[BinaryIO]:
        """A new file written as a stream (a `.cleaned` segment): fsynced when the body ends, then
        one step. An error removes the partial file (nothing refers to it yet) and is a
        WriteError naming it; a crash (InjectedFault, SIGKILL) leaves it, as a crash would.
        With a quarantine, its entry is written before the file (a kill leaves an entry for the
        partial file) and completed with its size and sha256 after."""
        path = Path(path)
        self._gate("write", path)
        keeper = self._keeper()
        entry = keeper.creating(path) if keeper is not None else None
        try:
            self._pre("write", path)
            final, _ = strip_temp_suffix(path.name)  # a .cleaned file takes the segment's owner
            reference = (
                ownership.like(path.with_name(final), skip=_OURS)
                if final != path.name
                else ownership.like(path, skip=_OURS)
            )
            f = open(path, "wb")
            ownership.adopt(f.fileno(), reference)
        except OSError as e:
            raise self.write_error(e, path, "write") from None
        try:
            with f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except Exception as e:
            _unlink_quietly(path)
            if isinstance(e, OSError):
                raise self.write_error(e, Path(e.filename or path), "write") from None
            raise
        self.step(f"write {path}")
        with contextlib.suppress(OSError):
            self.account(path, freed=-allocated(os.stat(path)))
        if keeper is not None and entry is not None:
            keeper.created(entry, path)

    def copy_ranges(self, src: Path, dst: Path, ranges: Sequence[tuple[int, int] | bytes]) -> None:
        """`dst` created from the [start, end) byte ranges of `src`, in order (--salvage); a
        `bytes` item is written as it is (repair's batches, spliced between ranges of `src`)."""
        with self.create(dst) as fo, open_file(src) as fi:
            for item in ranges:
                if isinstance(item, (bytes, bytearray)):
                    fo.write(item)
                    continue
                start, end = item
                fi.seek(start)
                _copy_stream(fi, fo, end - start)

    def replace_segments(
        self, cleaned: list[Path], old: list[tuple[Path, str]], overwrite: Sequence[Path] = ()
    ) -> list[str]:
        """LocalLog.replaceSegments: every new file `<name>.cleaned` -> `<name>.swap`, the old
        files out of the log dir (into the quarantine, where Kafka renames them `.deleted`), then
        every `.swap` -> `<name>`. A crash at any step is finished by LogLoader (the broker's and
        `kafkalog recover`'s): a `.swap` replaces the old files it covers, a `.cleaned` is dropped.
        `overwrite` (erase --overwrite, no quarantine): old files overwritten with zeros in place
        once every `.swap` covers them, before their unlink; returns why one was not."""
        if cleaned:  # the new files' entries durable before anything is renamed
            self.fsync_dir(Path(cleaned[0]).parent)
        swaps = []
        for f in cleaned:
            f = Path(f)
            if not f.name.endswith(CLEANED_SUFFIX):
                raise ValueError(f"{f} is not a .cleaned file")
            swap = f.with_name(f.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
            self.rename(f, swap)
            swaps.append(swap)
        skipped = [why for p in overwrite if os.path.lexists(p) and (why := self.zero_fill(p))]
        self.delete_segment_files([(path, reason) for path, reason in old if os.path.lexists(path)])
        for swap in swaps:
            self.rename(swap, swap.with_name(swap.name[: -len(SWAP_SUFFIX)]))
        return skipped

    def zero_fill(self, path: Path) -> str | None:
        """The file's bytes overwritten with zeros in place and fsynced (erase --overwrite): on a
        file system that writes in place (ext4, xfs), the blocks it held. Never with a quarantine
        (what it keeps would be zeroed too). A file with other names (hard links) is left: its
        bytes are theirs too; returns why."""
        path = Path(path)
        if self._keeper() is not None:
            raise ValueError("zero_fill with a quarantine")
        self._gate("write", path)
        try:
            st = os.lstat(path)
            if st.st_nlink > 1:
                return (
                    f"{path} not overwritten: {st.st_nlink - 1} other name(s) link to its bytes "
                    f"(a quarantine folder or a backup made by hard links), which keep them"
                )
            self._pre("write", path)
            with open_file(path, "r+b") as f:
                left = st.st_size
                zeros = bytes(_COPY_CHUNK)
                while left > 0:
                    left -= f.write(zeros[: min(left, _COPY_CHUNK)])
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise self.write_error(e, path, "overwrite") from None
        self.step(f"overwrite {path} with zeros")
        return None

    # -- whole files and directories (move-partition) --------------------------------------------
    def make_dir(
        self, path: Path, like: os.stat_result | None = None, copy_of: Path | None = None
    ) -> None:
        """A new directory (an existing one is an error: it was not ours), with `like`'s mode and,
        as root, its owner and group; its entry fsynced in the parent. With a quarantine its
        entry is written first; `copy_of`: the directory whose files it will hold copies of
        (restore removes it when it holds nothing else)."""
        path = Path(path)
        self._gate("mkdir", path)
        if (keeper := self._keeper()) is not None:
            keeper.dir_created(path, copy_of)
        if not path.parent.is_dir():
            self.make_dirs(path.parent)
        try:
            self._pre("mkdir", path)
            os.mkdir(path)
            if like is not None:
                take_owner_and_mode(path, like)
        except OSError as e:
            raise self.write_error(e, path, "create the directory") from None
        self.step(f"mkdir {path}")
        self.fsync_dir(path.parent)

    def copy_file(self, src: Path, dst: Path) -> None:
        """`src` copied to `dst` (a new file: nothing is overwritten, so nothing is quarantined):
        streamed to `<dst>.kafkalog-tmp`, fsynced, given the source's mode, modification time and
        (as root) owner and group, renamed to `dst`, the directory fsynced. A kill leaves `dst`
        whole or absent (and at worst the tmp file, which Kafka ignores and recover removes)."""
        src, dst = Path(src), Path(dst)
        tmp = dst.with_name(dst.name + TMP_SUFFIX)
        self._gate("rename", dst)
        try:
            st = os.stat(src)
            self._pre("copy", tmp)
            with open_file(src) as fi, open(tmp, "wb") as fo:
                _copy_stream(fi, fo, None)
                fo.flush()
                os.fsync(fo.fileno())
            take_owner_and_mode(tmp, st)
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        except OSError as e:
            _unlink_quietly(tmp)
            raise self.write_error(e, Path(getattr(e, "filename", None) or dst), "copy") from None
        self.step(f"copy {src} -> {tmp}")
        self._tmp_into_place(tmp, dst)

    def _tmp_into_place(self, tmp: Path, path: Path) -> None:
        """A complete, fsynced `tmp` renamed over `path`, the directory fsynced (a failed rename
        removes `tmp`: nothing refers to it)."""
        try:
            self._pre("rename", path)
            self._account_replacing(path, tmp)
            os.replace(tmp, path)
        except OSError as e:
            _unlink_quietly(tmp)
            raise self.write_error(e, path, "rename") from None
        self.step(f"rename {tmp} -> {path}")
        self.fsync_dir(path.parent)

    def rename_dir(self, src: Path, dst: Path) -> None:
        """`rename_dirs` of one."""
        self.rename_dirs([(src, dst)])

    def rename_dirs(self, pairs: list[tuple[Path, Path]]) -> None:
        """Directories renamed in order (Kafka's dir suffixes: `-future` -> live, live -> `-delete`;
        a staged copy into its log dir, on one file system), never over an existing one; both
        parents fsynced after each. With a quarantine every entry is written first, in one
        write, so that nothing comes between the renames (move-partition's two live copies last
        one rename)."""
        pairs = [(Path(src), Path(dst)) for src, dst in pairs]
        for src, dst in pairs:
            self._gate("rename", src, dst)
            if os.path.lexists(dst):
                raise WriteError("cannot rename a directory over an existing one", path=str(dst))
        if (keeper := self._keeper()) is not None:
            keeper.dirs_renamed(pairs)
        for src, dst in pairs:
            try:
                self._pre("rename", src)
                os.rename(src, dst)
            except OSError as e:
                raise self.write_error(e, src, "rename") from None
            self.step(f"rename {src} -> {dst}")
            self.fsync_dir(dst.parent)
            if src.parent != dst.parent:
                self.fsync_dir(src.parent)

    def remove_copy(self, path: Path) -> None:
        """A directory of copies removed (restore of move-partition: every file checked to be a
        copy first): its files unlinked, then the directory; a kill leaves part of them, which
        the rerun removes."""
        path = Path(path)
        try:
            for name in sorted(os.listdir(path), reverse=True):
                self._pre("unlink", path / name)
                os.unlink(path / name)
                self.step(f"unlink {path / name}")
            self._pre("rmdir", path)
            os.rmdir(path)
        except OSError as e:
            raise self.write_error(
                e, Path(getattr(e, "filename", None) or path), "remove"
            ) from None
        self.step(f"rmdir {path}")
        self.fsync_dir(path.parent)

    def remove_empty_dir(self, path: Path) -> None:
        """An empty directory of kafkalog's own removed (one rmdir; a directory that is not
        empty, or gone, is left as it is), its parent fsynced."""
        path = Path(path)
        try:
            self._pre("rmdir", path)
            os.rmdir(path)
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                return
            raise self.write_error(e, path, "remove the directory") from None
        self.step(f"rmdir {path}")
        self.fsync_dir(path.parent)

    def check_writable(self, directory: Path, needs_blocks: bool = True) -> None:
        """Fail before the first change when `directory` cannot take a new file (a read-only file
        system, no space, no permission): a probe file written, fsynced and removed.
        `needs_blocks` False: the change frees space before it writes any byte (a full disk's
        retain), so the probe is an empty file: an inode, no block.
        The probe has no name (O_TMPFILE), so a kill leaves nothing behind; where the file system
        has no unnamed files it gets a name of its own (`.kafkalog-probe-<random>.kafkalog-tmp`,
        never a leftover another plan is about to remove: recover removes it as any interrupted write)."""
        directory = Path(directory)
        probe = directory / (".kafkalog-probe" + TMP_SUFFIX)
        named = None
        try:
            self._pre("write", probe)
            try:
                fd = (
                    os.open(
                        directory, os.O_WRONLY | getattr(os, "O_TMPFILE", 0) | os.O_CLOEXEC, 0o600
                    )
                    if hasattr(os, "O_TMPFILE")
                    else None
                )
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTSUP):
                    raise
                fd = None
            if fd is None:
                named = directory / f".kafkalog-probe-{os.urandom(8).hex()}{TMP_SUFFIX}"
                fd = os.open(named, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                if needs_blocks:
                    os.write(fd, b"\0")
                os.fsync(fd)
            finally:
                os.close(fd)
            if named is not None:
                os.unlink(named)
        except OSError as e:
            if named is not None:
                _unlink_quietly(named)
            raise self.write_error(e, directory, "write in") from None

    def rename(self, src: Path, dst: Path) -> None:
        """One atomic rename (Kafka's suffix protocol: .cleaned -> .swap -> final, -> .deleted).
        A file it replaces is kept in the quarantine first."""
        src, dst = Path(src), Path(dst)
        self._gate("rename", src, dst)
        keeper = self._keeper()
        moved = keeper.renamed(src, dst) if keeper is not None else None
        try:
            self._pre("rename", src)
            if os.path.lexists(dst):
                st = os.lstat(dst)
                self.account(dst, freed=allocated(st) if st.st_nlink == 1 else 0)
            os.rename(src, dst)
        except OSError as e:
            raise self.write_error(e, Path(src), "rename") from None
        self.step(f"rename {src} -> {dst}")
        self.fsync_dir(Path(dst).parent)
        if keeper is not None and moved is not None:
            keeper.wrote(dst, moved)

    def set_mtime(self, path: Path, mtime_ns: int) -> None:
        self._gate("utime", path)
        if (keeper := self._keeper()) is not None:
            keeper.mtime_set(path, mtime_ns)
        try:
            os.utime(path, ns=(mtime_ns, mtime_ns))
        except OSError as e:
            raise self.write_error(e, Path(path), "set the time of") from None
        self.step(f"utime {path}")

    def truncate(self, path: Path, size: int, reason: str, keep_mtime: bool = False) -> None:
        """Cut `path` to `size` bytes; the cut bytes go to the quarantine first (all-zero padding,
        such as a preallocated index's, is only noted)."""
        path = Path(path)
        self._gate("truncate", path)
        st = self.stat(path, "stat")
        if st.st_size <= size:
            return
        if self.keeper is not None:
            self.keeper.cut(path, size, st, reason)
        try:
            self._pre("truncate", path)
            os.truncate(path, size)
            self.account(path, freed=allocated(st) - allocated(os.stat(path)))
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            if keep_mtime:
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        except OSError as e:
            raise self.write_error(e, path, "truncate") from None
        self.step(f"truncate {path} to {size}")

    def extend(self, path: Path, size: int) -> None:
        """setLength to a larger size (zeros), e.g. an index resized for the active segment."""
        self._gate("extend", path)
        if (keeper := self._keeper()) is not None:
            keeper.extending(path, size)
        try:
            os.truncate(path, size)
        except OSError as e:
            raise self.write_error(e, Path(path), "extend") from None
        self.step(f"extend {path} to {size}")

    def delete(self, path: Path, reason: str) -> None:
        """Remove one file: kept in the quarantine first (a hard link on the same file system, else
        a durable copy), its entry written, then unlinked; or dropped with --no-quarantine."""
        self.delete_segment_files([(path, reason)])

    def delete_segment_files(self, files: list[tuple[Path, str]]) -> None:
        """LocalLog.deleteSegmentFiles: a list of files (path, reason) removed as one batch, in
        the order given, at a fixed number of syncs whatever its length:
        1. each file kept in the quarantine (a hard link, else a copy via `<name>.partial`,
           hashed as it is copied), then the linked ones hashed (several at once when large);
        2. each quarantine directory fsynced once: every kept file durable;
        3. every entry appended to the manifest in one write and one fdatasync (write-ahead);
        4. the files unlinked in the order given, the oldest segment first as Kafka deletes them:
           a crash leaves a prefix of them removed, never a hole (one file system journals the
           unlinks in order);
        5. each directory they left fsynced once.
        A crash before 3. leaves the log dir as it was (and kept files without entries); after 3.,
        restore finds the files not unlinked yet in place and skips them. --no-quarantine: only
        4. and 5. (a file already gone is no error)."""
        batch, seen = [], set()
        for path, reason in files:
            if _key(path) not in seen:
                seen.add(_key(path))
                batch.append((Path(path), reason))
        self._gate("unlink", *(path for path, _ in batch))
        if (keeper := self._keeper()) is not None:
            keeper.remove_kept(batch)
            return
        if self.keeper is not None:
            self.keeper.dropped(batch)
        self.unlink_all([path for path, _ in batch], missing_ok=True)

    def _account_replacing(self, path: Path, new: Path) -> None:
        """The space figures of `new` renamed over `path`: the new file's blocks taken, the old
        one's given back when this was its last link (else the quarantine holds it)."""
        taken = 0
        try:
            taken = allocated(os.stat(new))
            old = os.lstat(path)
        except FileNotFoundError:
            old = None
        except OSError:
            return
        self.account(
            path, freed=-taken + (allocated(old) if old is not None and old.st_nlink == 1 else 0)
        )

    def unlink_all(self, paths: list[Path], missing_ok: bool) -> None:
        """Unlink in order, one step each, then fsync each directory once (also those already
        left when an unlink fails, so that what was done is durable when the error is shown)."""
        left: dict[Path, None] = {}
        try:
            for path in paths:
                try:
                    self._pre("unlink", path)
                    st = os.lstat(path)
                    os.unlink(path)
                except FileNotFoundError:
                    if missing_ok:
                        continue
                    raise
                if st.st_nlink == 1:  # its last link: df gains its blocks
                    self.account(path, freed=allocated(st))
                self.step(f"unlink {path}")
                left[path.parent] = None
        except OSError as e:
            for d in left:
                with contextlib.suppress(WriteError):  # the unlink's error is the one to show
                    self.fsync_dir(d)
            raise self.write_error(e, path, "delete") from None
        for d in left:
            self.fsync_dir(d)

    # -- restore and prune (storage/quarantine.py plans them) ------------------------------------
    def put_back(self, stored: Path, path: Path) -> None:
        """A kept file back at `path`, replacing what is there: `put_back_all` of one."""
        self.put_back_all([(stored, path)])

    def put_back_all(self, files: list[tuple[Path, Path]]) -> None:
        """Kept files (stored, path) back at their paths, in order, replacing what is there: each
        one rename out of the quarantine, or across file systems a copy to
        `<path>.kafkalog-tmp`, fsynced and renamed over it; then each directory fsynced once."""
        dirs: dict[Path, None] = {}
        try:
            for stored, path in files:
                stored, path = Path(stored), Path(path)
                self._gate("rename", path)
                try:
                    self._pre("rename", stored)
                    os.rename(stored, path)
                except OSError as e:
                    if e.errno != errno.EXDEV:
                        raise self.write_error(e, path, "put back") from None
                    self.copy_range(stored, path, 0, None, path.with_name(path.name + TMP_SUFFIX))
                else:
                    self.step(f"rename {stored} -> {path}")
                dirs[path.parent] = None
        except WriteError:
            for d in dirs:  # what was put back is durable when the error is shown
                with contextlib.suppress(WriteError):
                    self.fsync_dir(d)
            raise
        for d in dirs:
            self.fsync_dir(d)

    def append_bytes(self, path: Path, src: Path | None, length: int) -> None:
        """The first `length` bytes of `src` (zeros when None) appended to `path`, fsynced: the
        inverse of a cut."""
        path = Path(path)
        try:
            self._pre("write", path)
            with open_file(path, "r+b") as fo:
                end = fo.seek(0, os.SEEK_END)
                if src is None:
                    fo.truncate(end + length)
                else:
                    with open_file(src) as fi:
                        _copy_stream(fi, fo, length)
                fo.flush()
                os.fsync(fo.fileno())
        except OSError as e:
            raise self.write_error(e, path, "append to") from None
        self.step(f"append {length} bytes to {path}")

    def append_line(self, path: Path, line: bytes) -> None:
        """Records (whole lines) appended to a journal in one write and fdatasynced (O_APPEND:
        whole lines, even from several processes at once); a new journal's directory entry is
        fsynced too."""
        path = Path(path)
        new = not os.path.exists(path)
        try:
            self._pre("write", path)
            fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                if os.write(fd, line) != len(line):
                    raise OSError(errno.ENOSPC, "short write", str(path))
                os.fdatasync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise self.write_error(e, path, "write") from None
        self.step(f"append {path}")
        if new:
            self.fsync_dir(path.parent)

    def remove_tree(self, folder: Path) -> None:
        """A quarantine folder removed (prune): renamed aside first, so that a kill leaves either
        the whole folder or a `.<name>.kafkalog-pruning` that the next prune removes."""
        folder = Path(folder)
        aside = folder
        try:
            if not folder.name.endswith(PRUNING_SUFFIX):
                aside = folder.with_name(f".{folder.name}{PRUNING_SUFFIX}")
                self._pre("rename", folder)
                os.rename(folder, aside)
                self.step(f"rename {folder} -> {aside}")
            self._pre("rmtree", aside)
            shutil.rmtree(aside)
        except OSError as e:
            raise self.write_error(
                e, Path(getattr(e, "filename", None) or folder), "remove"
            ) from None
        self.step(f"rmtree {aside}")
        self.fsync_dir(folder.parent)

    # -- the quarantine's writer works through these -------------------------------------------
    def _keeper(self) -> Keeper | None:
        """The quarantine's writer when removed data is kept in a quarantine (not
        --no-quarantine, not without one), else None."""
        return self.keeper if self.keeper is not None and self.keeper.keeping else None

    def hard_link(self, path: Path, target: Path) -> bool:
        """`target` made a hard link to `path` (not fsynced in its directory), one step; False
        where the file system cannot link them (another one, no links: the caller copies)."""
        try:
            self._pre("link", target)
            os.link(path, target, follow_symlinks=False)
        except OSError as e:
            if e.errno not in _NO_LINK:
                raise self.write_error(
                    e, path if e.errno == errno.ENOENT else target, "quarantine"
                ) from None
            return False
        self.step(f"link {path} -> {target}")
        return True

    def create_journal(self, path: Path, header: bytes) -> bool:
        """A journal (the quarantine's manifest) created exclusively with its header line, fsynced,
        its directory fsynced; False when it exists (another process of the same run made it)."""
        try:
            self._pre("write", path)
            reference = ownership.like(path)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
            ownership.adopt(fd, reference)
        except FileExistsError:
            return False
        except OSError as e:
            raise self.write_error(e, path, "create the quarantine") from None
        try:
            os.write(fd, header)
            os.fsync(fd)
        except OSError as e:
            raise self.write_error(e, path, "write to the quarantine") from None
        finally:
            os.close(fd)
        self.step(f"write {path}")
        self.fsync_dir(path.parent)
        return True

    def make_dirs(self, directory: Path) -> None:
        """mkdir -p, each new directory's entry fsynced in its parent."""
        missing = []
        d = Path(directory)
        while not d.is_dir():
            missing.append(d)
            d = d.parent
        try:
            for d in reversed(missing):
                self._pre("mkdir", d)
                d.mkdir(exist_ok=True)
                ownership.adopt_dir(
                    d, self.base_dir if self.keeper is None else self.keeper.holds(d)
                )
                _fsync_path(d.parent, directory=True)
        except OSError as e:
            raise self.write_error(
                e, Path(getattr(e, "filename", None) or directory), "create the quarantine"
            ) from None

    def copy_range(
        self, src: Path, dst: Path, start: int, end: int | None, partial: Path | None = None
    ) -> tuple[int, str]:
        """[start, end) of `src` (to its end when None) copied to `partial` (`<dst>.partial`),
        fsynced, renamed to `dst`: (size, sha256) of the copy."""
        partial = partial or dst.with_name(dst.name + PARTIAL_SUFFIX)
        h = hashlib.sha256()
        self._gate("copy", partial)
        try:
            self._pre("copy", dst)
            with open_file(src) as fi, open(partial, "wb") as fo:
                ownership.adopt(fo.fileno(), os.stat(fi.fileno()))  # a kept file keeps its owner
                fi.seek(start)
                size = _copy_stream(fi, fo, None if end is None else end - start, h)
                fo.flush()
                os.fsync(fo.fileno())
            shutil.copystat(src, partial)
            os.rename(partial, dst)
        except OSError as e:
            _unlink_quietly(partial)
            raise self.write_error(e, dst, "write to the quarantine") from None
        self.step(f"copy {src}[{start}:{end}] -> {dst}")
        return size, h.hexdigest()

    def digest_all(self, files: list[tuple[Path, tuple[int, str] | None]]) -> list[tuple[int, str]]:
        """(size, sha256) of each (path, known facts or None): those not known read by a few
        threads at once when there is much to read (hashlib lets go of the GIL on large
        buffers), so that reading one file overlaps hashing another."""
        todo = [path for path, known in files if known is None]
        try:
            big = sum(os.stat(path).st_size for path in todo) >= _PARALLEL_HASH_BYTES
        except OSError:
            big = False
        if big:
            import concurrent.futures  # here: it brings logging, which a start needs not

            with concurrent.futures.ThreadPoolExecutor(min(_HASH_THREADS, len(todo))) as pool:
                hashed = iter(list(pool.map(self.digest, todo)))
        else:
            hashed = map(self.digest, todo)
        return [known or next(hashed) for _, known in files]

    def digest(self, path: Path) -> tuple[int, str]:
        try:
            return _hash_file(path)
        except OSError as e:
            raise self.write_error(e, Path(path), "read") from None

    def stat(self, path: Path, doing: str) -> os.stat_result:
        try:
            return os.stat(path)
        except OSError as e:
            raise self.write_error(e, Path(path), doing) from None

    def prepare_quarantine(self) -> None:
        """Create the quarantine folder and its manifest now, so that an unwritable or full
        quarantine is found before the log dir is touched."""
        if (keeper := self._keeper()) is not None:
            keeper.prepare()


def take_owner_and_mode(path: Path, like: os.stat_result) -> None:
    """`path` gets the permission bits of `like` and, when we run as root, its owner and group, so
    that a broker running as its own user can open what kafkalog wrote."""
    os.chmod(path, like.st_mode & 0o7777)
    if os.geteuid() == 0 and (os.stat(path).st_uid, os.stat(path).st_gid) != (
        like.st_uid,
        like.st_gid,
    ):
        os.chown(path, like.st_uid, like.st_gid)


def _key(path: Path) -> str:
    return os.path.abspath(path)


def _copy_stream(fi: BinaryIO, fo: BinaryIO, length: int | None, h=None) -> int:
    """Up to `length` bytes (all when None) from `fi` to `fo`: the bytes copied."""
    done = 0
    while length is None or done < length:
        chunk = fi.read(_COPY_CHUNK if length is None else min(_COPY_CHUNK, length - done))
        if not chunk:
            break
        fo.write(chunk)
        if h is not None:
            h.update(chunk)
        done += len(chunk)
    return done


def _hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open_file(path) as f:
        while chunk := f.read(_COPY_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def stage_copy(
    directory: Path, links: dict[str, Path], contents: dict[str, tuple[bytes, int | None]]
) -> Path:
    """A scratch copy of a partition dir outside every log dir, for planning (recover's overflow
    split): `directory` created with `links` (name -> file, hard-linked where the file system
    allows, else copied) and `contents` (name -> (bytes, mtime_ns or None)). Never inside a log
    dir: the broker takes every directory there for a partition."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, src in links.items():
        try:
            os.link(src, directory / name)
        except OSError:
            shutil.copy2(src, directory / name)
    for name, (data, mtime_ns) in contents.items():
        (directory / name).write_bytes(data)
        if mtime_ns is not None:
            os.utime(directory / name, ns=(mtime_ns, mtime_ns))
    return directory


ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


def unpack_archive(archive: Path, into: Path) -> Path:
    """An archive of a log dir or a partition dir (tar, tar.gz/bz2/xz, zip) unpacked into `into`,
    a scratch dir outside every log dir; -> the dir it holds (its one top-level directory, else
    `into`). Members that would land outside `into` (absolute paths, `..`, links) are refused."""
    import tarfile
    import zipfile

    from kafkalog_cli.errors import InputError

    archive, into = Path(archive), Path(into)
    into.mkdir(parents=True, exist_ok=True)
    try:
        if archive.name.endswith(".zip"):
            with open_file(archive) as f, zipfile.ZipFile(f) as z:
                for m in z.namelist():
                    if Path(m).is_absolute() or ".." in Path(m).parts:
                        raise InputError(
                            f"archive member {m!r} points outside the archive", path=str(archive)
                        )
                z.extractall(into)
        else:
            with open_file(archive) as f, tarfile.open(fileobj=f) as t:
                t.extractall(into, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as e:
        raise InputError(f"cannot unpack the archive: {e}", path=str(archive)) from None
    tops = [p for p in into.iterdir() if not p.name.startswith(".")]
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else into


@contextlib.contextmanager
def scratch_dir(files: dict[str, bytes], prefix: str = "kafkalog-") -> Iterator[Path]:
    """A private temporary directory, outside every log dir, holding `files` (relative name ->
    bytes) for a tool that reads only files (protoc); removed with what the tool wrote there."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        for name, data in files.items():
            path = (root / name).resolve()
            if root.resolve() not in path.parents:
                raise ValueError(f"{name!r} is not a name inside the scratch dir")
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        yield root
