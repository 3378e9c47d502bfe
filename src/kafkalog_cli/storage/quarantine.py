"""The quarantine: what an operation took out of a log dir, kept beside it, and how to put it back.
Its entries, layout, listing and restore are here; storage/quarantine_writer.py writes it.

Layout. A broker treats every subdirectory of a log dir as a partition, so nothing may be added
inside it. Each run of recover, roll, retain or compact gets a folder `<root>/<UTC stamp>-<op>/`,
where root is `<logdir>/../.kafkalog-quarantine/<logdir name>/` (same file system: a whole file
moves by a hard link, no copy, no extra space) or what `--quarantine DIR` named. The folder holds
the kept files under their paths relative to the log dir, and `manifest.jsonl`.

The manifest is a journal (version 2): a header line, then one line per entry, appended and
fdatasynced, so an entry costs O(1) whatever the run's size; a batch of deletes (a run of
segments retain removes) appends all its lines in one write and one fdatasync. An entry's line is
written once what it keeps is complete and fsynced in the folder (a copy in progress is
`<name>.partial`), and BEFORE the log dir changes (write-ahead): after a kill at any instant every
change made to the log dir has its line, and a process's last lines may describe changes not made
yet (restore finds those files in place, the very files kept, and leaves them). A file the op
creates gets its line before it exists, and a second line with the same id once it is complete
(its size and sha256). A torn last line (a kill during the append) is ignored.

Entries (`kind`): `removed` (a whole file left the log dir), `cut` (bytes [start, end) cut from
the end of a file; all-zero bytes are only noted), `overwritten` (a file replaced by new
content), `created` (a file the op made: restore removes it), `renamed` (source -> target),
`extended` (grown with zeros from size to new_size) and `mtime`. Paths are absolute; `stored`
is relative to the folder; `size`/`sha256` describe what was kept (the old content),
`new_size`/`new_sha256` what the op left, so that restore can tell a later change from its own.

Restore undoes the entries newest first: the exact inverse of the run. It first plans the whole
undo against the log dir as it is now, simulating each step, and refuses (changing nothing)
when a file is not as the op left it. Each undone entry is recorded in `restore.jsonl` beside the
manifest, so a restore that was killed finishes when run again. Older quarantines (a
`manifest.json`, version 1) are listed and restored from their entries as far as they go.
"""

from __future__ import annotations

import datetime as _dt
import enum
import hashlib
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kafkalog_cli.errors import InputError, KafkalogError, UsageError
from kafkalog_cli.storage import files
from kafkalog_cli.storage.names import PRUNING_SUFFIX, STAGING_DIRNAME, TMP_SUFFIX, staging_dir

if TYPE_CHECKING:
    from kafkalog_cli.storage.fsops import FsOps

QUARANTINE_DIRNAME = ".kafkalog-quarantine"
JOURNAL = "manifest.jsonl"
LEGACY_MANIFEST = "manifest.json"
PROGRESS = "restore.jsonl"
VERSION = 2
_STAMP = "%Y%m%dT%H%M%S.%fZ"
_CHUNK = 1 << 20


def utc_stamp(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime(_STAMP)


def parse_stamp(stamp: str) -> _dt.datetime | None:
    try:
        return _dt.datetime.strptime(stamp, _STAMP).replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def default_quarantine_root(log_dir: Path) -> Path:
    # beside the real log dir (a symlinked one included): same file system, so a move is a link
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
        raise UsageError(
            f"--quarantine {chosen} is inside the log dir {log_dir}, where a broker would "
            f"take it for a partition; choose a place outside it"
        )
    return Path(chosen)


class EntryKind(str, enum.Enum):
    REMOVED = "removed"  # a whole file left the log dir; `stored` holds it
    CUT = "cut"  # bytes [start, end) cut off the end of a file; `stored` holds them
    OVERWRITTEN = "overwritten"  # a file replaced by new content; `stored` holds the old one
    CREATED = "created"  # a file the op made (restore removes it)
    RENAMED = "renamed"  # source renamed to target (an old target is `stored`)
    EXTENDED = "extended"  # a file grown with zeros from size to new_size
    MTIME = "mtime"  # a file's modification time set
    DIR_CREATED = (
        "dir_created"  # a directory the op made (move-partition's copy; `copy_of` its original)
    )
    DIR_RENAMED = "dir_renamed"  # a directory renamed, source -> target (Kafka's -future, -delete)


@dataclass
class QuarantineEntry:
    kind: EntryKind
    source: str  # absolute path in the log dir
    reason: str = ""
    when: str = ""
    id: str = ""  # unique in the folder; a later line with the same id completes it
    log_dir: str | None = None  # absolute
    stored: str | None = None  # the kept copy, relative to the folder
    size: int | None = None  # bytes kept (the old content); extended: the old file size
    sha256: str | None = None  # of what was kept
    new_size: int | None = None  # what the op left at source (renamed: at target)
    new_sha256: str | None = (
        None  # of the new content but a zero padding of new_zeros bytes at its end
    )
    new_zeros: int | None = None  # an index's preallocation: counted, not hashed
    start: int | None = None  # cut: the byte range of the source
    end: int | None = None
    zeros: bool = False  # cut: all-zero bytes (a preallocated index's tail), not stored
    target: str | None = None  # renamed: the new name
    tmp: str | None = None  # the temporary file the op writes first (write_atomic)
    mtime_ns: int | None = None  # the file's mtime before the op changed it
    new_mtime_ns: int | None = None
    copy_of: str | None = None  # dir_created: the directory whose files it holds copies of

    def to_dict(self) -> dict:
        out: dict = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None or v is False or (v == "" and f.name not in ("kind", "source")):
                continue
            out[f.name] = v.value if isinstance(v, EntryKind) else v
        return out

    def line(self) -> bytes:
        return (json.dumps(self.to_dict(), separators=(",", ":")) + "\n").encode()

    @classmethod
    def from_json(cls, d: dict) -> QuarantineEntry:
        known = {f.name for f in fields(cls)}
        e = cls(**{k: v for k, v in d.items() if k in known})
        e.kind = EntryKind(e.kind)
        return e


# ----------------------------------------------------------------------------- reading folders


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, record) of a journal; a torn last line (no newline: a kill during the
    append) is left out, a damaged line before it is an error."""
    data = files.read_bytes(path)
    lines = data.split(b"\n")
    lines.pop()  # b"" after the last newline, or a torn line
    for n, raw in enumerate(lines, 1):
        try:
            rec = json.loads(raw)
        except ValueError:
            rec = None
        if not isinstance(rec, dict):
            raise KafkalogError(
                f"line {n} is not a JSON object: the manifest is damaged", path=str(path)
            )
        yield n, rec


@dataclass
class RestoreProgress:
    started: bool = False
    complete: bool = False
    undone: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, path: Path) -> RestoreProgress:
        p = cls()
        if not path.exists():
            return p
        for _, rec in _json_lines(path):
            p.started = True
            if "undone" in rec:
                p.undone.add(str(rec["undone"]))
            if "complete" in rec:
                p.complete = True
        return p


@dataclass
class QuarantineFolder:
    """One run's folder as found on disk."""

    path: Path
    op: str
    created: str
    log_dir: Path | None
    entries: list[QuarantineEntry]
    version: int
    progress: RestoreProgress
    other_log_dirs: list[Path] = field(default_factory=list)  # the manifest's other log dirs

    @property
    def log_dirs(self) -> list[Path]:
        """Every log dir the run changed: the one it ran on, then the others (move-partition's source)."""
        return [d for d in [self.log_dir, *self.other_log_dirs] if d is not None]

    @property
    def restore_roots(self) -> list[Path]:
        """Where a restore of this folder may change files (the write gate's roots): its log dirs,
        and for a run over several (move-partition) the staging dirs beside them."""
        moved = self.log_dirs if self.other_log_dirs else []
        return [*self.log_dirs, *(staging_dir(d).parent for d in moved)]

    @classmethod
    def open(cls, path: Path | str) -> QuarantineFolder:
        path = Path(path)
        if (path / JOURNAL).is_file():
            return cls._open_journal(path)
        if (path / LEGACY_MANIFEST).is_file():
            return cls._open_legacy(path)
        if _killed_before_manifest(path):
            stamp, op = _split_name(path.name)
            return cls(
                path,
                op,
                stamp,
                _legacy_log_dir(path, []),
                [],
                VERSION,
                RestoreProgress.read(path / PROGRESS),
            )
        if not path.exists():
            raise InputError("no such file or directory", path=str(path))
        raise InputError(
            f"not a quarantine folder (no {JOURNAL} or {LEGACY_MANIFEST})", path=str(path)
        )

    @classmethod
    def _open_journal(cls, path: Path) -> QuarantineFolder:
        header: dict = {}
        by_id: dict[str, QuarantineEntry] = {}  # an id keeps its first place, its last line's facts
        for n, rec in _json_lines(path / JOURNAL):
            if "kafkalog_quarantine" in rec:
                header = rec
                continue
            try:
                e = QuarantineEntry.from_json(rec)
            except (TypeError, ValueError):
                raise KafkalogError(
                    f"line {n} is not a quarantine entry: the manifest is damaged",
                    path=str(path / JOURNAL),
                ) from None
            by_id[e.id] = e
        entries = list(by_id.values())
        stamp, op = _split_name(path.name)
        log_dir = header.get("log_dir") or next((e.log_dir for e in entries if e.log_dir), None)
        others = [
            Path(d) for d in header.get("log_dirs", []) if isinstance(d, str) and d != log_dir
        ]
        return cls(
            path,
            header.get("op", op),
            header.get("created", stamp),
            Path(log_dir) if log_dir else None,
            entries,
            int(header.get("kafkalog_quarantine", VERSION)),
            RestoreProgress.read(path / PROGRESS),
            others,
        )

    @classmethod
    def _open_legacy(cls, path: Path) -> QuarantineFolder:
        try:
            m = json.loads(files.read_bytes(path / LEGACY_MANIFEST))
            raw = m["entries"]
        except (ValueError, KeyError, TypeError):
            raise KafkalogError(
                "not a kafkalog manifest: the manifest is damaged", path=str(path / LEGACY_MANIFEST)
            ) from None
        entries = [_legacy_entry(i, d, path) for i, d in enumerate(raw)]
        stamp, op = _split_name(path.name)
        return cls(
            path,
            m.get("op", op),
            m.get("created", stamp),
            _legacy_log_dir(path, entries),
            entries,
            int(m.get("version", 1)),
            RestoreProgress.read(path / PROGRESS),
        )

    @property
    def created_at(self) -> _dt.datetime | None:
        return parse_stamp(self.created)

    @property
    def bytes(self) -> int:
        total = 0
        for e in self.entries:
            if e.stored is None:
                continue
            if e.size is None:  # version 1 recorded no sizes
                try:
                    total += (self.path / e.stored).stat().st_size
                except OSError:
                    pass
            else:
                total += e.size
        return total

    @property
    def status(self) -> str:
        if self.progress.complete:
            return "restored"
        return "partly restored" if self.progress.started else "kept"

    def restore_target(self) -> Path:
        """The log dir a restore writes to."""
        if self.log_dir is None:
            raise KafkalogError(
                "the manifest does not say which log dir it came from", path=str(self.path)
            )
        return self.log_dir

    def stored_path(self, e: QuarantineEntry) -> Path:
        return self.path / _needed(e, e.stored, "stored")

    def to_dict(self) -> dict:
        at = self.created_at
        return {
            "folder": str(self.path),
            "op": self.op,
            "time": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if at else self.created,
            "log_dir": str(self.log_dir) if self.log_dir else None,
            "entries": len(self.entries),
            "bytes": self.bytes,
            "status": self.status,
            "manifest_version": self.version,
        }


def _split_name(name: str) -> tuple[str, str]:
    stamp, _, op = name.partition("-")
    return stamp, op


def _legacy_entry(i: int, d: dict, folder: Path) -> QuarantineEntry:
    """A version 1 entry ({what: file|bytes|zeros, source, stored, reason, when, start, end})."""
    what = d.get("what")
    stored = d.get("stored")
    if stored is not None:
        stored = os.path.relpath(stored, folder) if os.path.isabs(stored) else stored
    kind = EntryKind.REMOVED if what == "file" else EntryKind.CUT
    e = QuarantineEntry(
        kind,
        os.path.abspath(d["source"]),
        d.get("reason", ""),
        d.get("when", ""),
        id=str(i),
        stored=stored,
        start=d.get("start"),
        end=d.get("end"),
        zeros=what == "zeros",
    )
    if kind is EntryKind.CUT and e.start is not None and e.end is not None:
        e.size = e.end - e.start
    return e


def _legacy_log_dir(folder: Path, entries: list[QuarantineEntry]) -> Path | None:
    """Version 1 did not record the log dir: the default layout names it, else the directory
    above the partition dirs the entries came from."""
    if folder.parent.parent.name == QUARANTINE_DIRNAME:
        return folder.parent.parent.parent / folder.parent.name
    parents = {os.path.dirname(os.path.dirname(e.source)) for e in entries}
    return Path(os.path.commonpath(list(parents))) if parents else None


def is_folder(path: Path) -> bool:
    return (
        (path / JOURNAL).is_file()
        or (path / LEGACY_MANIFEST).is_file()
        or _killed_before_manifest(path)
    )


def _killed_before_manifest(path: Path) -> bool:
    """A run's folder (`<UTC stamp>-<op>`) without its manifest: the run was killed between
    making the folder and writing the manifest's header, before its first change (every entry is
    written ahead of the change it describes). A folder of no entries: nothing to restore."""
    stamp, op = _split_name(path.name)
    return (
        bool(op)
        and parse_stamp(stamp) is not None
        and path.is_dir()
        and not (path / JOURNAL).exists()
        and not (path / LEGACY_MANIFEST).exists()
    )


def find_folders(path: Path | str) -> list[Path]:
    """The quarantine folders `path` stands for, oldest first: a folder itself; a log dir's
    default quarantine and every folder the registry (storage.quarantine_registry) holds for it,
    wherever --quarantine put it; or a quarantine dir (what --quarantine named,
    `.kafkalog-quarantine` or one of its log dir folders) searched two levels down."""
    from kafkalog_cli.storage import quarantine_registry
    from kafkalog_cli.storage.logdir import is_log_dir

    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path=str(path))
    if not path.is_dir():
        raise InputError("not a directory (give a log dir or a quarantine dir)", path=str(path))
    if is_folder(path):
        return [path]
    if is_log_dir(path):
        root = default_quarantine_root(path)
        found = _folders_under(root, 1) if root.is_dir() else []
        found += [
            f for f in quarantine_registry.folders_of(path) if is_folder(f) and f not in found
        ]
        return sorted(found, key=_oldest_first)
    return _folders_under(path, 2)


def gone_folders(path: Path | str) -> list[Path]:
    """The folders the registry holds for the log dir `path` that are no longer there (removed
    by hand, or their disk unmounted): `quarantine list` shows them as gone."""
    from kafkalog_cli.storage import quarantine_registry
    from kafkalog_cli.storage.logdir import is_log_dir

    path = Path(path)
    if not path.is_dir() or is_folder(path) or not is_log_dir(path):
        return []
    return [f for f in quarantine_registry.folders_of(path) if not is_folder(f)]


def gone_row(folder: Path, log_dir: Path) -> dict:
    """`quarantine list`'s row for a registered folder that is gone: what its name says."""
    stamp, op = _split_name(folder.name)
    at = parse_stamp(stamp)
    return {
        "folder": str(folder),
        "op": op,
        "time": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if at else stamp,
        "log_dir": os.path.realpath(log_dir),
        "entries": None,
        "bytes": None,
        "status": "gone",
        "manifest_version": None,
    }


def _oldest_first(p: Path) -> tuple[str, str]:
    return _split_name(p.name)[0], str(p)


def _folders_under(root: Path, depth: int) -> list[Path]:
    found = []
    for d in sorted(root.iterdir()):
        if not d.is_dir() or d.name.startswith("."):
            continue
        if is_folder(d):
            found.append(d)
        elif depth > 1:
            found.extend(_folders_under(d, depth - 1))
    return sorted(found, key=_oldest_first)


def quarantine_roots(path: Path | str) -> list[Path]:
    """The directories that hold the quarantine folders `path` stands for (as find_folders reads
    it), whether or not any folder is left in them: where a killed prune's leftovers are."""
    from kafkalog_cli.storage import quarantine_registry
    from kafkalog_cli.storage.logdir import is_log_dir

    path = Path(path)
    if not path.is_dir():
        return []
    if is_folder(path):
        return [path.parent]
    if is_log_dir(path):
        roots = [default_quarantine_root(path)] + [
            f.parent for f in quarantine_registry.folders_of(path)
        ]
    else:
        roots = [path] + [
            d
            for d in sorted(path.iterdir())
            if d.is_dir() and not d.name.startswith(".") and not is_folder(d)
        ]
    out: list[Path] = []
    for r in roots:
        if r.is_dir() and r not in out:
            out.append(r)
    return out


def pruning_leftovers(root: Path) -> list[Path]:
    """Folders a killed prune had renamed aside but not yet removed."""
    return sorted(p for p in root.glob(".*" + PRUNING_SUFFIX) if p.is_dir())


def older_than(
    folders: list[QuarantineFolder], seconds: float, now: _dt.datetime | None = None
) -> list[QuarantineFolder]:
    """The folders whose run started more than `seconds` before `now`."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    limit = now - _dt.timedelta(seconds=seconds)
    return [f for f in folders if f.created_at is not None and f.created_at < limit]


# ----------------------------------------------------------------------------- restore: the plan


class RestoreAction(str, enum.Enum):
    UNDO = "undo"  # carry out the inverse of the entry
    SKIP = "skip"  # the log dir is already as it was before the entry
    FINISH = "finish"  # the rest of an undo a killed restore began


@dataclass
class RestoreStep:
    entry: QuarantineEntry
    action: RestoreAction
    remove_tmp: bool = False

    def describe(self, folder: QuarantineFolder) -> str:
        e, a = self.entry, self.action
        pre = f"remove {e.tmp} (an interrupted write); " if self.remove_tmp else ""
        if a is RestoreAction.SKIP:
            return pre + f"leave {e.source}: already as before {folder.op}"
        k = e.kind
        if k is EntryKind.REMOVED:
            what = f"put back {e.source}" + (f" ({e.size} bytes)" if e.size is not None else "")
            return pre + f"{what} from {e.stored}"
        if k is EntryKind.CUT:
            src = "zero bytes" if e.zeros else f"bytes from {e.stored}"
            again = (
                f"cut {e.source} back to {e.start} bytes, then "
                if a is RestoreAction.FINISH
                else ""
            )
            start, end = _needed(e, e.start, "start"), _needed(e, e.end, "end")
            return pre + f"{again}append {end - start} {src} to {e.source} at byte {start}"
        if k is EntryKind.OVERWRITTEN:
            return pre + f"put back the old {e.source} ({e.size} bytes) from {e.stored}"
        if k is EntryKind.CREATED:
            return pre + f"remove {e.source} ({folder.op} created it)"
        if k is EntryKind.RENAMED:
            back = "" if a is RestoreAction.FINISH else f"rename {e.target} back to {e.source}"
            old = f"put back the old {e.target} from {e.stored}" if e.stored else ""
            return pre + "; ".join(x for x in (back, old) if x)
        if k is EntryKind.EXTENDED:
            return pre + f"cut {e.source} back to {e.size} bytes"
        if k is EntryKind.DIR_RENAMED:
            return pre + f"rename the directory {e.target} back to {e.source}"
        if k is EntryKind.DIR_CREATED:
            return pre + f"remove {e.source} ({folder.op} made it: copies of {e.copy_of})"
        return pre + f"set the modification time of {e.source} back"

    def to_dict(self) -> dict:
        return {
            "action": self.action.value,
            "kind": self.entry.kind.value,
            "source": self.entry.source,
            **({"target": self.entry.target} if self.entry.target else {}),
            **({"stored": self.entry.stored} if self.entry.stored else {}),
            **({"remove_tmp": self.entry.tmp} if self.remove_tmp else {}),
        }


@dataclass
class Conflict:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class RestorePlan:
    folder: QuarantineFolder
    steps: list[RestoreStep]
    conflicts: list[Conflict]

    @property
    def log_dir(self) -> Path | None:
        return self.folder.log_dir

    def render(self) -> str:
        f = self.folder
        head = (
            f"restore {f.path} ({f.op} of {f.to_dict()['time']}, log dir {f.log_dir}): "
            f"{len(self.steps)} of {len(f.entries)} entries to undo, newest first"
        )
        lines = [head]
        lines += [f"  ! {c}" for c in self.conflicts]
        lines += [f"  - {s.describe(f)}" for s in self.steps]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "folder": str(self.folder.path),
            "op": self.folder.op,
            "log_dir": str(self.folder.log_dir),
            "entries": len(self.folder.entries),
            "status": self.folder.status,
            "conflicts": [{"path": c.path, "message": c.message} for c in self.conflicts],
            "steps": [s.to_dict() for s in self.steps],
        }


class _Refused(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.conflict = Conflict(path, message)


_T = TypeVar("_T")


def _needed(e: QuarantineEntry, value: _T | None, name: str) -> _T:
    """A fact an entry of its kind has (`value`, the field `name`): a manifest line without it is
    refused, not guessed at. Planning checks each entry's facts, so carrying out finds them."""
    if value is None:
        raise _Refused(
            e.source, f"the manifest's {e.kind.value} entry has no {name}: the manifest is damaged"
        )
    return value


class _Content:
    """What a file holds (or would hold once earlier steps are undone): pieces of files on disk
    (path, start, end) and runs of zeros (None, 0, n). Hashed only when a check needs it."""

    __slots__ = ("pieces", "size", "origin")

    def __init__(self, pieces=(), origin: str | None = None):
        self.pieces = tuple(p for p in pieces if p[2] > p[1])
        self.size = sum(e - s for _, s, e in self.pieces)
        self.origin = origin  # the disk file this content is, untouched

    @classmethod
    def zeros(cls, n: int) -> _Content:
        return cls([(None, 0, n)])

    def slice(self, start: int, end: int) -> _Content:
        out, pos = [], 0
        for path, s, e in self.pieces:
            lo, hi = max(start, pos), min(end, pos + e - s)
            if lo < hi:
                out.append((path, s + lo - pos, s + hi - pos))
            pos += e - s
        return _Content(out)

    def __add__(self, other: _Content) -> _Content:
        return _Content(self.pieces + other.pieces)

    def chunks(self) -> Iterator[bytes]:
        for path, s, e in self.pieces:
            if path is None:
                for off in range(0, e - s, _CHUNK):
                    yield bytes(min(_CHUNK, e - s - off))
                continue
            with files.opened(path) as f:
                f.seek(s)
                left = e - s
                while left:
                    b = f.read(min(_CHUNK, left))
                    if not b:
                        raise _Refused(path, f"shorter than {e} bytes while being read")
                    left -= len(b)
                    yield b


class _Simulation:
    """The log dir as the restore goes: files as on disk until a planned step changes them."""

    def __init__(self, folder: QuarantineFolder):
        self.folder = folder
        self.files: dict[str, _Content | None] = {}
        self._sha: dict[tuple, str] = {}
        self.dirs: dict[
            str, str | None
        ] = {}  # a directory's path -> where it is on disk now (None: gone)

    def real_dir(self, path: str) -> str | None:
        """Where the directory `path` is on disk once the planned steps are done (None: absent). A
        link to a directory is one (a partition dir linked out: the write gate decides on it)."""
        disk = self.on_disk(path)
        return disk if disk is not None and os.path.isdir(disk) else None

    def on_disk(self, path: str) -> str | None:
        """Where `path` is on disk now, for the directory renames planned so far (None: in a
        directory that will be gone)."""
        d = path
        while True:
            if d in self.dirs:
                real = self.dirs[d]
                return None if real is None else real + path[len(d) :]
            parent = os.path.dirname(d)
            if parent == d:
                return path
            d = parent

    def get(self, path: str) -> _Content | None:
        if path not in self.files:
            disk = self.on_disk(path)
            try:
                size = os.stat(disk).st_size if disk is not None else None
            except FileNotFoundError:
                size = None
            self.files[path] = None if size is None else _Content([(disk, 0, size)], origin=disk)
        return self.files[path]

    def set(self, path: str, content: _Content | None) -> None:
        if content is not None and self.real_dir(os.path.dirname(path)) is None:
            raise _Refused(path, "its directory is gone")
        self.files[path] = content

    def sha256(self, c: _Content) -> str:
        key = c.pieces
        if key not in self._sha:
            h = hashlib.sha256()
            for b in c.chunks():
                h.update(b)
            self._sha[key] = h.hexdigest()
        return self._sha[key]

    def matches(self, c: _Content | None, size: int | None, sha: str | None) -> bool:
        """`c` is the content recorded as (size, sha); unknown facts (version 1) never match."""
        if c is None or size is None or sha is None or c.size != size:
            return False
        return self.sha256(c) == sha

    def matches_new(self, c: _Content | None, e: QuarantineEntry) -> bool:
        """`c` is what the op left for `e` (new_size, new_sha256, then new_zeros zero bytes)."""
        if c is None or e.new_size is None or e.new_sha256 is None or c.size != e.new_size:
            return False
        body = c.size - (e.new_zeros or 0)
        return self.sha256(c.slice(0, body)) == e.new_sha256 and self.all_zero(
            c.slice(body, c.size)
        )

    def all_zero(self, c: _Content) -> bool:
        return all(b.count(0) == len(b) for b in c.chunks())

    def is_stored(self, c: _Content | None, e: QuarantineEntry) -> bool:
        """`c` is the very file kept for `e` (a hard link: the op stopped before its change)."""
        if c is None or c.origin is None or e.stored is None:
            return False
        try:
            return os.path.samefile(c.origin, self.folder.stored_path(e))
        except OSError:
            return False

    def stored(self, e: QuarantineEntry) -> _Content:
        """The kept copy of `e`, checked against the manifest's size and sha256."""
        p = self.folder.stored_path(e)
        try:
            size = os.stat(p).st_size
        except FileNotFoundError:
            raise _Refused(str(p), "the kept copy is missing from the quarantine") from None
        c = _Content([(str(p), 0, size)])
        if e.size is not None and size != e.size:
            raise _Refused(str(p), f"the kept copy is {size} bytes, the manifest says {e.size}")
        if e.sha256 is not None and self.sha256(c) != e.sha256:
            raise _Refused(
                str(p), "the kept copy is damaged: its sha256 differs from the manifest's"
            )
        return c


def plan_restore(folder: QuarantineFolder) -> RestorePlan:
    """The undo of every entry not undone yet, newest first, checked against the log dir as it is:
    conflicts are listed, and a plan with conflicts must not be carried out."""
    pending = [e for e in reversed(folder.entries) if e.id not in folder.progress.undone]
    if pending:
        folder.restore_target()  # entries to undo: the manifest must say where they go
    sim = _Simulation(folder)
    steps, conflicts = [], []
    blocked: set[str] = set()  # paths of a refused entry: older entries there follow from it
    for e in pending:
        paths = {p for p in (e.source, e.target, e.tmp) if p is not None}
        if paths & blocked:
            blocked |= paths
            continue
        try:
            _check_inside(e, folder.log_dirs)
            steps.append(_DECIDE[e.kind](e, sim, folder))
        except _Refused as r:
            conflicts.append(r.conflict)
            blocked |= paths
    return RestorePlan(folder, steps, conflicts)


def _check_inside(e: QuarantineEntry, log_dirs: list[Path]) -> None:
    """Every path of an entry is in one of the manifest's log dirs, or in the staging dir of
    one (storage.names.staging_dir, where move-partition makes its copy)."""
    roots = [os.path.abspath(d) for d in log_dirs] + [str(staging_dir(d)) for d in log_dirs]
    for p in (e.source, e.target, e.tmp, e.copy_of):
        if p is not None and not any(
            os.path.commonpath([r, os.path.abspath(p)]) == r for r in roots
        ):
            where = " or ".join(str(d) for d in log_dirs)
            raise _Refused(p, f"outside the log dir {where}: the manifest is not to be trusted")


def _left_at(c: _Content | None) -> str:
    return "is missing" if c is None else f"is {c.size} bytes"


def _tmp(e: QuarantineEntry, sim: _Simulation, applied: bool, folder: QuarantineFolder) -> bool:
    """The op's temporary file: a kill before its rename left it (removed first); once the
    write was applied, a file there is a later change."""
    if e.tmp is None or sim.get(e.tmp) is None:
        return False
    if applied:
        raise _Refused(e.tmp, f"exists: a write after {folder.op} was interrupted")
    sim.files[e.tmp] = None
    return True


def _removed(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    cur = sim.get(e.source)
    if cur is None:
        sim.set(e.source, sim.stored(e))
        return RestoreStep(e, RestoreAction.UNDO)
    if sim.is_stored(cur, e) or sim.matches(cur, e.size, e.sha256):
        return RestoreStep(e, RestoreAction.SKIP)
    raise _Refused(e.source, f"exists with other content than the file {folder.op} removed")


def _cut(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    start, end = _needed(e, e.start, "start"), _needed(e, e.end, "end")
    cur = sim.get(e.source)
    if (
        cur is not None
        and cur.size == end
        and (e.sha256 is None or sim.sha256(cur.slice(start, end)) == e.sha256)
    ):
        return RestoreStep(e, RestoreAction.SKIP)
    kept = _Content.zeros(end - start) if e.zeros else None
    if cur is not None and cur.size == start:
        sim.set(e.source, cur + (kept or sim.stored(e)))
        return RestoreStep(e, RestoreAction.UNDO)
    if cur is not None and folder.progress.started and start < cur.size < end:
        sim.set(e.source, cur.slice(0, start) + (kept or sim.stored(e)))
        return RestoreStep(e, RestoreAction.FINISH)
    raise _Refused(e.source, f"{_left_at(cur)}; {folder.op} left it at {start} bytes")


def _overwritten(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    cur = sim.get(e.source)
    if sim.matches_new(cur, e):
        _tmp(e, sim, True, folder)
        sim.set(e.source, sim.stored(e))
        return RestoreStep(e, RestoreAction.UNDO)
    if sim.is_stored(cur, e) or sim.matches(cur, e.size, e.sha256):
        return RestoreStep(e, RestoreAction.SKIP, _tmp(e, sim, False, folder))
    if cur is None:
        raise _Refused(e.source, f"is missing; {folder.op} left new content there")
    raise _Refused(e.source, f"changed since {folder.op} wrote it")


def _created(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    cur = sim.get(e.source)
    if cur is None:
        return RestoreStep(e, RestoreAction.SKIP, _tmp(e, sim, False, folder))
    if e.new_sha256 is None or sim.matches_new(cur, e):
        _tmp(e, sim, True, folder)
        sim.set(e.source, None)  # no sha256: a kill cut the op's own write short
        return RestoreStep(e, RestoreAction.UNDO)
    raise _Refused(e.source, f"changed since {folder.op} created it")


def _renamed(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    target = _needed(e, e.target, "target")
    src, dst = sim.get(e.source), sim.get(target)
    if src is None and sim.matches_new(dst, e):
        sim.set(e.source, dst)
        sim.set(target, sim.stored(e) if e.stored else None)
        return RestoreStep(e, RestoreAction.UNDO)
    if sim.matches_new(src, e):
        if dst is None and e.stored is None:
            return RestoreStep(e, RestoreAction.SKIP)
        if dst is None:  # a killed restore renamed it back but did not put the old target back
            sim.set(target, sim.stored(e))
            return RestoreStep(e, RestoreAction.FINISH)
        if e.stored is not None and (sim.is_stored(dst, e) or sim.matches(dst, e.size, e.sha256)):
            return RestoreStep(e, RestoreAction.SKIP)
        raise _Refused(target, f"exists with other content than before {folder.op}")
    if src is not None:
        raise _Refused(
            e.source, f"exists with other content than the file {folder.op} renamed to {e.target}"
        )
    raise _Refused(target, f"{_left_at(dst)}, not the file {folder.op} renamed from {e.source}")


def _extended(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    size, new_size = _needed(e, e.size, "size"), _needed(e, e.new_size, "new_size")
    cur = sim.get(e.source)
    if cur is not None and cur.size == new_size and sim.all_zero(cur.slice(size, new_size)):
        sim.set(e.source, cur.slice(0, size))
        return RestoreStep(e, RestoreAction.UNDO)
    if cur is not None and cur.size == size:
        return RestoreStep(e, RestoreAction.SKIP)
    raise _Refused(
        e.source,
        f"{_left_at(cur)}; {folder.op} left it at {new_size} bytes of which "
        f"the last {new_size - size} zeros",
    )


def _mtime(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    return RestoreStep(e, RestoreAction.SKIP if sim.get(e.source) is None else RestoreAction.UNDO)


def _dir_renamed(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    target = _needed(e, e.target, "target")
    src, dst = sim.real_dir(e.source), sim.real_dir(target)
    if dst is not None and src is None:
        sim.dirs[e.source], sim.dirs[target] = dst, None
        return RestoreStep(e, RestoreAction.UNDO)
    if src is not None and dst is None:
        return RestoreStep(e, RestoreAction.SKIP)
    if src is None and _chain_stopped_before(e, sim, folder):
        return RestoreStep(e, RestoreAction.SKIP)
    if src is None:
        raise _Refused(
            target, f"is missing, and so is {e.source}: not the directory {folder.op} renamed"
        )
    raise _Refused(e.source, f"exists beside {e.target}, which {folder.op} renamed it to")


def _chain_stopped_before(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> bool:
    """Whether a rename that left neither its source nor its target never ran: an op journals a
    rename before it makes it, so a kill can leave renames journaled in a chain (staging -> -future
    -> live) of which the first never happened. Then the directory still sits at the source of the
    chain's earliest rename, and every later link is not to be undone."""
    source = e.source
    for earlier in reversed(folder.entries[: folder.entries.index(e)]):
        if earlier.kind is EntryKind.DIR_RENAMED and earlier.target == source:
            if sim.real_dir(earlier.source) is not None:
                return True
            source = earlier.source
    return False


def _dir_created(e: QuarantineEntry, sim: _Simulation, folder: QuarantineFolder) -> RestoreStep:
    """The copy the op made is removed when it holds nothing but copies of `copy_of`'s files
    (byte for byte, as the log dir is once the newer entries are undone) and the op's partial
    copies: removing it loses nothing."""
    real = sim.real_dir(e.source)
    if real is None:
        return RestoreStep(e, RestoreAction.SKIP)
    original = sim.real_dir(e.copy_of) if e.copy_of else None
    for name in sorted(os.listdir(real)):
        if name.endswith(TMP_SUFFIX):
            continue
        mine = sim.get(os.path.join(e.source, name))
        theirs = (
            sim.get(os.path.join(e.copy_of, name)) if original is not None and e.copy_of else None
        )
        if (
            mine is None
            or theirs is None
            or mine.size != theirs.size
            or sim.sha256(mine) != sim.sha256(theirs)
        ):
            raise _Refused(
                os.path.join(e.source, name),
                f"is not a copy of {os.path.join(e.copy_of or '?', name)}: it changed since {folder.op} "
                f"copied it (a broker ran on it?)",
            )
    sim.dirs[e.source] = None
    return RestoreStep(e, RestoreAction.UNDO)


_DECIDE = {
    EntryKind.REMOVED: _removed,
    EntryKind.CUT: _cut,
    EntryKind.OVERWRITTEN: _overwritten,
    EntryKind.CREATED: _created,
    EntryKind.RENAMED: _renamed,
    EntryKind.EXTENDED: _extended,
    EntryKind.MTIME: _mtime,
    EntryKind.DIR_CREATED: _dir_created,
    EntryKind.DIR_RENAMED: _dir_renamed,
}


# ----------------------------------------------------------------------------- restore: carrying it out


def restore(plan: RestorePlan, fsops: FsOps) -> int:
    """Carry out a plan without conflicts through `fsops` (an FsOps without a quarantine: what the
    restore removes is what the op made, checked by sha256). Each entry's undo is recorded in
    restore.jsonl once done, so a rerun after a kill goes on from there. Returns the entries undone."""
    if plan.conflicts:
        raise ValueError("a restore plan with conflicts is not to be carried out")
    if fsops.quarantine is not None and fsops.quarantine.folder is not None:
        raise ValueError("restore writes through an FsOps without a quarantine")
    folder = plan.folder
    progress = folder.path / PROGRESS
    if (
        fsops.bounds is not None
    ):  # the restore's progress is written in the folder, kept files leave it
        fsops.bounds = fsops.bounds.including(folder.path, *folder.restore_roots)
    if not folder.progress.started:
        fsops.append_line(progress, _record({"restore": utc_stamp()}))
    for batched, group in itertools.groupby(plan.steps, key=_puts_back_a_removed_file):
        run = list(group)
        if (
            batched
        ):  # a batch of deletes undone as one: its syncs paid once, its records in one write
            fsops.put_back_all(
                [
                    (folder.stored_path(s.entry), Path(s.entry.source))
                    for s in run
                    if s.action is RestoreAction.UNDO
                ]
            )
            fsops.append_line(progress, b"".join(_record({"undone": s.entry.id}) for s in run))
            continue
        for step in run:
            _carry_out(step, folder, fsops)
            fsops.append_line(progress, _record({"undone": step.entry.id}))
    fsops.append_line(progress, _record({"complete": utc_stamp()}))
    return sum(1 for s in plan.steps if s.action is not RestoreAction.SKIP)


def _puts_back_a_removed_file(step: RestoreStep) -> bool:
    """A whole file put back (or found in place): a kill after its rename and before its record
    leaves it at its path, which the next plan finds as before the op and skips."""
    return step.entry.kind is EntryKind.REMOVED and not step.remove_tmp


def _record(d: dict) -> bytes:
    return (json.dumps(d, separators=(",", ":")) + "\n").encode()


def _carry_out(step: RestoreStep, folder: QuarantineFolder, fsops: FsOps) -> None:
    e, source = step.entry, Path(step.entry.source)
    if step.remove_tmp:
        fsops.delete(Path(_needed(e, e.tmp, "tmp")), "restore: an interrupted write")
    k = e.kind
    if step.action is RestoreAction.SKIP:
        pass
    elif k is EntryKind.REMOVED or k is EntryKind.OVERWRITTEN:
        fsops.put_back(folder.stored_path(e), source)
    elif k is EntryKind.CREATED:
        fsops.delete(source, f"restore: created by {folder.op}")
    elif k is EntryKind.RENAMED:
        target = Path(_needed(e, e.target, "target"))
        if step.action is RestoreAction.UNDO:
            fsops.rename(target, source)
        if e.stored is not None:
            fsops.put_back(folder.stored_path(e), target)
    elif k is EntryKind.CUT:
        start, end = _needed(e, e.start, "start"), _needed(e, e.end, "end")
        if step.action is RestoreAction.FINISH:
            fsops.truncate(source, start, "restore: an interrupted append")
        fsops.append_bytes(source, None if e.zeros else folder.stored_path(e), end - start)
    elif k is EntryKind.EXTENDED:
        fsops.truncate(source, _needed(e, e.size, "size"), f"restore: zeros {folder.op} added")
    elif k is EntryKind.DIR_RENAMED and step.action is RestoreAction.UNDO:
        if not source.parent.is_dir():  # the staging dir, removed once the copy was in place
            fsops.make_dir(source.parent)
        fsops.rename_dir(Path(_needed(e, e.target, "target")), source)
    elif k is EntryKind.DIR_CREATED and step.action is RestoreAction.UNDO:
        fsops.remove_copy(source)
        if source.parent.parent.name == STAGING_DIRNAME:
            fsops.remove_empty_dir(source.parent)
            fsops.remove_empty_dir(source.parent.parent)
    # the time too (retention reads a segment's mtime); also when skipped: a killed restore may
    # have put the bytes back but not yet the time
    if (
        e.mtime_ns is not None
        and k in (EntryKind.CUT, EntryKind.EXTENDED, EntryKind.MTIME)
        and source.exists()
    ):
        fsops.set_mtime(source, e.mtime_ns)
