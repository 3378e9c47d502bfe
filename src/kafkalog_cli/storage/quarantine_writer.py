"""Writing the quarantine: before a change removes or overwrites anything in a log dir, what it
takes is kept in the run's quarantine folder and its entry appended to the manifest
(storage/quarantine.py has the entries, the layout, the listing and restore).

A `Quarantine` names where a run's removed data goes; FsOps (storage/fsops.py, the only code that
changes files) asks it for a `QuarantineWriter` and calls that writer before each change. The
writer makes every change of its own through the same FsOps (its write gate, its counted steps,
its errors): a hard link on the same file system (no copy, no extra space), else a durable copy
through `<name>.partial`; entries are appended write-ahead, one write and one fdatasync a batch.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.errors import WriteError
from kafkalog_cli.storage.files import check_readable, open_file
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.names import PARTIAL_SUFFIX
from kafkalog_cli.storage.quarantine import JOURNAL, VERSION, EntryKind, QuarantineEntry, utc_stamp
from kafkalog_cli.storage.quarantine_registry import record
from kafkalog_cli.storage.space import same_file_system

__all__ = ["Quarantine", "QuarantineWriter"]

_CHUNK = 1 << 20


@dataclass
class Quarantine:
    """Where removed data goes. `root=None` means --no-quarantine: removed data is dropped."""

    root: Path | None
    op: str
    stamp: str = field(default_factory=utc_stamp)
    entries: list[QuarantineEntry] = field(default_factory=list)
    other_log_dirs: tuple[Path, ...] = ()  # more log dirs the op changes (move-partition's source)

    @property
    def folder(self) -> Path | None:
        return None if self.root is None else Path(self.root) / f"{self.stamp}-{self.op}"

    @property
    def journal(self) -> Path | None:
        return None if self.folder is None else self.folder / JOURNAL

    def writer(self, fsops: FsOps) -> QuarantineWriter:
        """What keeps `fsops`'s changes here (FsOps asks for it when it is made)."""
        return QuarantineWriter(fsops, self)

    def header(self, log_dir: Path) -> bytes:
        h = {
            "kafkalog_quarantine": VERSION,
            "op": self.op,
            "created": self.stamp,
            "log_dir": os.path.abspath(log_dir),
        }
        if self.other_log_dirs:
            h["log_dirs"] = [
                os.path.abspath(log_dir),
                *(os.path.abspath(d) for d in self.other_log_dirs),
            ]
        return (json.dumps(h, separators=(",", ":")) + "\n").encode()


class QuarantineWriter:
    """One FsOps's entries in its quarantine: what each change takes, kept there (or, with
    --no-quarantine, only noted in memory for the report) before the change is made."""

    def __init__(self, fs: FsOps, quarantine: Quarantine):
        self.fs = fs
        self.quarantine = quarantine
        self._written: dict[
            str, tuple[int, str]
        ] = {}  # (size, sha256) of what the op wrote, by path
        self._ids = itertools.count(1)
        self._manifest: Path | None = None  # the quarantine's manifest, once it exists
        self._by_copy: bool | None = None  # the quarantine is on another file system

    @property
    def keeping(self) -> bool:
        """Removed data is kept (not --no-quarantine)."""
        return self.quarantine.root is not None

    def wrote(self, path: Path, facts: tuple[int, str]) -> None:
        """The op left (size, sha256) at `path`: a later rename or delete of it need not read it."""
        self._written[_key(path)] = facts

    def moves_by_copy(self) -> bool:
        """The quarantine is on another file system: a file leaves the log dir by a copy, so
        removing it frees its blocks there and then."""
        if self._by_copy is None:
            root = self.quarantine.root
            self._by_copy = root is not None and not same_file_system(self.fs.base_dir, root)
        return self._by_copy

    # -- one method a kind of change, called by FsOps before it makes the change ------------------
    def creating(self, path: Path) -> QuarantineEntry:
        """A new file is about to be written at `path` (a file there is removed first): its entry,
        written now, is completed by `created` once the file is."""
        if os.path.lexists(path):
            self.fs.delete(path, "written over by a new file")
        entry = self._entry(EntryKind.CREATED, path, "")
        self._note(entry)
        return entry

    def created(self, entry: QuarantineEntry, path: Path) -> None:
        """`creating`'s file is complete: its size and sha256 on a second line with the same id."""
        entry.new_size, entry.new_sha256 = self.fs.digest(path)
        self._append_entry(entry)
        self._written[_key(path)] = (entry.new_size, entry.new_sha256)

    def dir_created(self, path: Path, copy_of: Path | None) -> None:
        self._note(
            self._entry(
                EntryKind.DIR_CREATED,
                path,
                "",
                copy_of=None if copy_of is None else os.path.abspath(copy_of),
            )
        )

    def dirs_renamed(self, pairs: list[tuple[Path, Path]]) -> None:
        self._note_all(
            [
                self._entry(EntryKind.DIR_RENAMED, src, "", target=os.path.abspath(dst))
                for src, dst in pairs
            ]
        )

    def mtime_set(self, path: Path, mtime_ns: int) -> None:
        """A file's time about to be set (not noted for a file the op wrote: restore removes it)."""
        if _key(path) not in self._written:
            st = self.fs.stat(path, "set the time of")
            self._note(
                self._entry(
                    EntryKind.MTIME, path, "", mtime_ns=st.st_mtime_ns, new_mtime_ns=mtime_ns
                )
            )

    def extending(self, path: Path, size: int) -> None:
        st = self.fs.stat(path, "extend")
        if st.st_size < size:
            self._written.pop(_key(path), None)
            self._note(
                self._entry(
                    EntryKind.EXTENDED,
                    path,
                    "",
                    size=st.st_size,
                    new_size=size,
                    mtime_ns=st.st_mtime_ns,
                )
            )

    def dropped(self, batch: list[tuple[Path, str]]) -> None:
        """--no-quarantine: the files about to be removed, noted for the report only."""
        self._note_all([self._entry(EntryKind.REMOVED, path, reason) for path, reason in batch])

    def remove_kept(self, batch: list[tuple[Path, str]]) -> None:
        """FsOps.delete_segment_files with a quarantine: each file kept, its entry written, then
        the files unlinked (steps 1 to 5 there). Across file systems each file is moved on its
        own, so that its space comes back at once."""
        for path, _ in batch:  # bytes it cannot read cannot be kept: refused before any change
            check_readable(path)
        if self.moves_by_copy():
            for path, reason in batch:
                self._move_by_copy(path, reason)
            return
        fs = self.fs
        kept = []
        kept_in: dict[Path, None] = {}  # the directories, in order
        for path, reason in batch:
            target, stored = self._quarantine_target(path)
            written = self._written.pop(
                _key(path), None
            )  # what this op wrote there: hashed already
            known = self._link_or_copy(path, target) or written
            kept.append((path, reason, target, stored, known))
            kept_in[target.parent] = None
        facts = fs.digest_all([(target, known) for _, _, target, _, known in kept])
        for d in kept_in:
            fs.fsync_dir(d)
        self._note_all(
            [
                self._entry(EntryKind.REMOVED, path, reason, stored=stored, size=size, sha256=sha)
                for (path, reason, _, stored, _), (size, sha) in zip(kept, facts)
            ]
        )
        for (path, *_), (size, _) in zip(kept, facts):
            fs.account(path, held=size)
        fs.unlink_all([path for path, _ in batch], missing_ok=False)

    def _move_by_copy(self, path: Path, reason: str) -> None:
        """One file into a quarantine on another file system, so that its space comes back at
        once (a full disk's retain frees segment by segment): copied to `<target>.partial`,
        fsynced, renamed; the copy read back and checked against what was read from the log
        dir; its entry written; then the file unlinked and its directory fsynced."""
        fs = self.fs
        target, stored = self._quarantine_target(path)
        written = self._written.pop(_key(path), None)
        size, sha = fs.copy_range(path, target, 0, None)
        fs.fsync_dir(target.parent)
        if fs.digest(target) != (size, sha) or (written is not None and written != (size, sha)):
            raise WriteError(
                "the copy in the quarantine does not read back as the file: nothing was removed",
                path=str(target),
            )
        self._note(
            self._entry(EntryKind.REMOVED, path, reason, stored=stored, size=size, sha256=sha)
        )
        fs.account(path, held=size)
        fs.unlink_all([path], missing_ok=False)

    # -- entries, and where and how a file is kept -----------------------------------------------
    def _entry(self, kind: EntryKind, path: Path, reason: str, **facts) -> QuarantineEntry:
        return QuarantineEntry(
            kind,
            os.path.abspath(path),
            reason,
            utc_stamp(),
            id=f"{os.getpid()}-{next(self._ids)}",
            log_dir=os.path.abspath(self.fs.base_dir),
            **facts,
        )

    def _quarantine_target(self, path: Path) -> tuple[Path, str]:
        """Where `path` is kept: its path relative to the log dir, inside the folder (`.1`, `.2`...
        when that name is taken), the directories made: (target, its name relative to the folder)."""
        source = os.path.abspath(path)
        base = os.path.abspath(self.fs.base_dir)
        if os.path.commonpath([source, base]) == base and source != base:
            rel = os.path.relpath(source, base)
        else:
            rel = os.path.join(os.path.basename(os.path.dirname(source)), os.path.basename(source))
        folder = str(self.quarantine.folder)
        name, n = rel, 1
        while os.path.lexists(os.path.join(folder, name)) or os.path.lexists(
            os.path.join(folder, name + PARTIAL_SUFFIX)
        ):
            name = f"{rel}.{n}"
            n += 1
        target = Path(folder, name)
        self.fs.make_dirs(target.parent)
        return target, name

    def holds(self, directory: Path) -> Path:
        """The log dir's directory whose files a quarantine directory holds (its owner and mode
        are the quarantine directory's): the partition dir for `<folder>/<partition>`, else the
        log dir."""
        q = self.quarantine
        if q is not None and q.folder is not None:
            try:
                rel = Path(directory).relative_to(q.folder)
            except ValueError:
                rel = None
            if rel is not None and rel.parts and (self.fs.base_dir / rel).is_dir():
                return self.fs.base_dir / rel
        return self.fs.base_dir

    def _keep_whole(
        self, path: Path, target: Path, known: tuple[int, str] | None
    ) -> tuple[int, str]:
        """`path` kept at `target`, durable: (size, sha256) of what is kept."""
        kept = self._link_or_copy(path, target) or known or self.fs.digest(target)
        self.fs.fsync_dir(target.parent)
        return kept

    def _link_or_copy(self, path: Path, target: Path) -> tuple[int, str] | None:
        """`path` kept at `target` by a hard link (None: not hashed yet), else by a copy through
        `<target>.partial`, fsynced: (size, sha256) of the copy. The directory is not fsynced."""
        if self.fs.hard_link(path, target):
            return None
        return self.fs.copy_range(path, target, 0, None)

    def cut(self, path: Path, start: int, st: os.stat_result, reason: str) -> None:
        """`path` (as `st`) is about to be cut to `start` bytes: the bytes past it kept (all-zero
        padding, such as a preallocated index's, only noted)."""
        end = st.st_size
        self._written.pop(_key(path), None)
        facts: dict[str, object] = dict(start=start, end=end, size=end - start)
        if not self.keeping:
            self._note(self._entry(EntryKind.CUT, path, reason, **facts))
            return
        zeros, sha = _scan(path, start, end)
        facts.update(sha256=sha, mtime_ns=st.st_mtime_ns)
        if zeros:
            self._note(self._entry(EntryKind.CUT, path, reason, zeros=True, **facts))
            return
        target, stored = self._quarantine_target(path.with_name(f"{path.name}.bytes-{start}-{end}"))
        _, facts["sha256"] = self.fs.copy_range(path, target, start, end)
        self.fs.fsync_dir(target.parent)
        self._note(self._entry(EntryKind.CUT, path, reason, stored=stored, **facts))
        self.fs.account(path, held=end - start)

    def overwritten(
        self, path: Path, tmp: Path, data: bytes, preallocate: int | None
    ) -> tuple[int, str] | None:
        """write_atomic's entry: the old file kept (unless identical), or the new file noted as
        created. The new content's sha256 covers `data`; its zero padding (an index's
        preallocation) is only counted, not hashed. Returns (size, sha256) of the new file when
        it has no padding (what a later rename or delete of it can reuse)."""
        zeros = max((preallocate or 0) - len(data), 0)
        size, sha = len(data) + zeros, hashlib.sha256(data).hexdigest()
        new = dict(new_size=size, new_sha256=sha, new_zeros=zeros or None, tmp=os.path.abspath(tmp))
        if os.path.lexists(tmp):
            self.fs.delete(tmp, "a leftover temporary file, written over")
        self._written.pop(_key(path), None)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._note(self._entry(EntryKind.CREATED, path, "", **new))
            return None if zeros else (size, sha)
        except OSError as e:
            raise self.fs.write_error(e, path, "stat") from None
        try:
            old_size, old_sha, same = _compare_file(path, data, size)
        except OSError as e:
            raise self.fs.write_error(e, path, "read") from None
        if same:  # the same bytes: only the file's time changes
            self._note(self._entry(EntryKind.MTIME, path, "", mtime_ns=st.st_mtime_ns))
        else:
            target, stored = self._quarantine_target(path)
            self._keep_whole(path, target, (old_size, old_sha))
            self._note(
                self._entry(
                    EntryKind.OVERWRITTEN,
                    path,
                    "",
                    stored=stored,
                    size=old_size,
                    sha256=old_sha,
                    **new,
                )
            )
            self.fs.account(path, held=old_size)
        return None if zeros else (size, sha)

    def renamed(self, src: Path, dst: Path) -> tuple[int, str]:
        """rename's entry (a target it replaces kept first): (size, sha256) of the moved file."""
        moved = self._written.pop(_key(src), None) or self.fs.digest(src)
        facts = {}
        if os.path.lexists(dst):
            target, stored = self._quarantine_target(dst)
            size, sha = self._keep_whole(dst, target, self._written.pop(_key(dst), None))
            facts = dict(stored=stored, size=size, sha256=sha)
            self.fs.account(dst, held=size)
        self._note(
            self._entry(
                EntryKind.RENAMED,
                src,
                "",
                target=os.path.abspath(dst),
                new_size=moved[0],
                new_sha256=moved[1],
                **facts,
            )
        )
        return moved

    def prepare(self) -> None:
        """Create the quarantine folder and its manifest now, so that an unwritable or full
        quarantine is found before the log dir is touched."""
        if self.keeping:
            self._open_manifest()

    def _note(self, entry: QuarantineEntry) -> None:
        self._note_all([entry])

    def _note_all(self, entries: list[QuarantineEntry]) -> None:
        """Record entries: in memory (for the report) and, with a quarantine folder, as lines of
        its manifest, one write and one fdatasync for all, before the changes they describe."""
        if not entries:
            return
        self.quarantine.entries.extend(entries)
        if self.keeping:
            self._append_entries(entries)

    def _append_entry(self, entry: QuarantineEntry) -> None:
        self._append_entries([entry])

    def _append_entries(self, entries: list[QuarantineEntry]) -> None:
        self.fs.append_line(self._open_manifest(), b"".join(e.line() for e in entries))

    def _open_manifest(self) -> Path:
        """The quarantine folder and its manifest's header line, once (another process of the same
        run may have written them: the manifest is created exclusively): the manifest."""
        if self._manifest is not None:
            return self._manifest
        q = self.quarantine
        folder, journal = q.folder, q.journal
        # entries are appended, and `prepare` opens the manifest, only while `keeping`: a folder
        assert folder is not None and journal is not None, "no manifest without a quarantine"
        self.fs.make_dirs(folder)
        if self.fs.create_journal(journal, q.header(self.fs.base_dir)):
            # found again by `quarantine list LOGDIR` wherever --quarantine put it
            record(self.fs.base_dir, folder)
        self._manifest = journal
        return journal


def _key(path: Path) -> str:
    return os.path.abspath(path)


def _compare_file(path: Path, data: bytes, size: int) -> tuple[int, str, bool]:
    """(size, sha256) of `path`, and whether it holds `data` then zeros up to `size`: one read."""
    h = hashlib.sha256()
    n, same = 0, True
    with open_file(path) as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            if same:
                want = data[n : n + len(chunk)]
                same = chunk.startswith(want) and chunk.count(0, len(want)) == len(chunk) - len(
                    want
                )
            n += len(chunk)
    return n, h.hexdigest(), same and n == size


def _scan(path: Path, start: int, end: int) -> tuple[bool, str]:
    """(all zero?, sha256) of [start, end) of `path`."""
    h = hashlib.sha256()
    zeros = True
    with open_file(path) as f:
        f.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = f.read(min(_CHUNK, remaining))
            if not chunk:
                break
            h.update(chunk)
            zeros = zeros and chunk.count(0) == len(chunk)
            remaining -= len(chunk)
    return zeros, h.hexdigest()
