"""A broker log dir (one entry of log.dirs): its partitions and its root checkpoint files."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage import names
from kafkalog_cli.storage.names import (
    PartitionDir,
    PartitionDirKind,
    PartitionFilter,
    TopicPartition,
    parse_partition_dir,
    parse_partition_dir_name,
)

if TYPE_CHECKING:  # imported lazily: verify-crc walks dirs without decoding records
    from kafkalog_cli.storage.partition import Partition
    from kafkalog_cli.storage.segment import Segment

Offsets = dict[tuple[str, int], int]

_ROOT_MARKERS = (
    names.META_PROPERTIES,
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_CHECKPOINT,
    names.CLEANER_CHECKPOINT,
    names.CLEAN_SHUTDOWN_FILE,
    names.LOCK_FILE,
)
# files of a partition dir that are not named after an offset
_PARTITION_FILES = (names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA)
# the logs a broker loads (LogManager.loadLog): what the read commands and recover act on
LOADED = (PartitionDirKind.LIVE, PartitionDirKind.FUTURE)


@dataclass
class OffsetCheckpoint:
    """One root checkpoint file: {(topic, partition): offset} and the file's own entry order
    (kept when it is rewritten); `exists` tells a missing file from an empty one."""

    path: Path
    offsets: Offsets = field(default_factory=dict)
    order: list[tuple[str, int]] = field(default_factory=list)
    exists: bool = False

    @classmethod
    def read(cls, path: Path, strict: bool) -> OffsetCheckpoint:
        """Strictly, a damaged file raises CheckpointError; leniently it has no entry, as a
        broker starting afresh would take it."""
        from kafkalog_cli.storage import checkpoints  # here: verify-crc walks dirs without them

        if not path.exists():
            return cls(path)
        if strict:
            offsets, order = checkpoints.read_offsets_strict(path)
        else:
            offsets = checkpoints.read_offsets(path)
            order = list(offsets)
        return cls(path, offsets, order, True)

    def get(self, tp: TopicPartition) -> int | None:
        return self.offsets.get((tp.topic, tp.partition))


@dataclass
class RootCheckpoints:
    """The log dir's checkpoint files (LogManager's and the cleaner's), read once."""

    recovery_points: OffsetCheckpoint
    log_start_offsets: OffsetCheckpoint
    high_watermarks: OffsetCheckpoint
    cleaner_offsets: OffsetCheckpoint

    @classmethod
    def read(cls, log_dir: Path, strict: bool = True) -> RootCheckpoints:
        return cls(
            *(
                OffsetCheckpoint.read(log_dir / n, strict)
                for n in (
                    names.RECOVERY_POINT_CHECKPOINT,
                    names.LOG_START_OFFSET_CHECKPOINT,
                    names.REPLICATION_CHECKPOINT,
                    names.CLEANER_CHECKPOINT,
                )
            )
        )

    def for_partition(self, tp: TopicPartition):
        from kafkalog_cli.storage.partition import PartitionCheckpoints

        return PartitionCheckpoints(
            self.recovery_points.get(tp),
            self.log_start_offsets.get(tp),
            self.high_watermarks.get(tp),
            self.cleaner_offsets.get(tp),
        )


@dataclass(frozen=True)
class PartitionListing:
    """A log dir's partition dirs, each with its parsed name, in topic, partition and kind order
    (a live log before its future one)."""

    dirs: list[tuple[Path, PartitionDir]]

    def of(self, kinds=LOADED) -> list[Path]:
        return [p for p, parsed in self.dirs if parsed.kind in kinds]

    def other_than(self, kinds=LOADED) -> list[tuple[Path, PartitionDirKind]]:
        """The dirs a command leaves alone (it reports each one, never skips it silently)."""
        return [(p, parsed.kind) for p, parsed in self.dirs if parsed.kind not in kinds]


_KIND_ORDER = {k: i for i, k in enumerate(PartitionDirKind)}


@dataclass
class LogDir:
    path: Path

    @classmethod
    def open(cls, path: Path | str) -> LogDir:
        path = Path(path)
        if not path.is_dir():
            raise InputError("not a directory", path=str(path))
        return cls(path)

    def listing(self) -> PartitionListing:
        """Every partition dir (live, future, being deleted, stray), as LogManager.loadLogs
        lists them: the subdirectories whose name Kafka parses as a partition's."""
        dirs = []
        with os.scandir(self.path) as it:
            for e in it:
                parsed = parse_partition_dir_name(e.name)
                if parsed is not None and e.is_dir():
                    tp = parsed.topic_partition
                    dirs.append(
                        ((tp.topic, tp.partition, _KIND_ORDER[parsed.kind]), Path(e.path), parsed)
                    )
        dirs.sort(key=lambda t: t[0])
        return PartitionListing([(p, parsed) for _, p, parsed in dirs])

    def partition_dirs(self, kinds=LOADED) -> list[Path]:
        """Partition dirs of `kinds` (by default the logs a broker loads: live and future),
        sorted by topic then partition number."""
        return self.listing().of(kinds)

    def partitions(self, dirs: list[Path] | None = None, strict: bool = True) -> list[Partition]:
        """The partitions (all, or those of `dirs`), each with its root checkpoint entries."""
        from kafkalog_cli.storage.partition import Partition

        roots = self.checkpoints(strict)
        out = []
        for d in self.partition_dirs() if dirs is None else dirs:
            tp = parse_partition_dir(Path(d).name)
            out.append(Partition.open(d, roots.for_partition(tp) if tp is not None else None))
        return out

    def checkpoints(self, strict: bool = True) -> RootCheckpoints:
        return RootCheckpoints.read(self.path, strict)

    def file(self, name: str) -> Path:
        return self.path / name


# ------------------------------------------------------------------ what a path given is
class DirKind(Enum):
    LOG_DIR = "log dir"
    PARTITION_DIR = "partition dir"


NOT_KAFKA = (
    "not a Kafka log dir or partition dir (no partition dirs, no segments, no checkpoint files)"
)


def has_root_files(path: Path) -> bool:
    """A root checkpoint file, meta.properties, .lock or the clean-shutdown marker."""
    return any(os.path.exists(os.path.join(path, m)) for m in _ROOT_MARKERS)


def _is_partition_file(name: str) -> bool:
    return names.offset_from_name(name) is not None or name in _PARTITION_FILES


def _holds_partition_files(path: str) -> bool:
    try:
        with os.scandir(path) as it:
            return any(_is_partition_file(e.name) for e in it)
    except OSError:
        return False


def dir_kind(path: Path | str) -> DirKind | None:
    """The one rule every command goes by. A log dir: a dir with a root file of a log dir
    (meta.properties, a root checkpoint, ...) or with a partition dir holding Kafka's files,
    whatever its own name (`broker-0` is a common log dir name). Otherwise a partition dir: a
    dir holding Kafka's files (segments, indexes, snapshots, leader-epoch-checkpoint), or an
    empty one named `<topic>-<partition>` in a log dir. Anything else (`/etc`) is None."""
    path = Path(path)
    if has_root_files(path):
        return DirKind.LOG_DIR
    try:
        with os.scandir(path) as it:
            entries = [(e.name, e.path, e.is_dir()) for e in it]
    except NotADirectoryError:
        return None
    except OSError as e:
        raise InputError(e.strerror or str(e), path=str(path)) from None
    if any(_is_partition_file(name) for name, _, _ in entries):
        return DirKind.PARTITION_DIR
    if any(
        is_dir and parse_partition_dir_name(name) is not None and _holds_partition_files(p)
        for name, p, is_dir in entries
    ):
        return DirKind.LOG_DIR
    if parse_partition_dir_name(path.name) is not None and has_root_files(path.parent):
        return DirKind.PARTITION_DIR
    return None


def is_log_dir(path: Path) -> bool:
    return path.is_dir() and dir_kind(path) is DirKind.LOG_DIR


def is_partition_dir(path: Path) -> bool:
    return path.is_dir() and dir_kind(path) is DirKind.PARTITION_DIR


def expand_paths(
    paths,
    suffixes: tuple[str, ...] = (names.LOG_SUFFIX,),
    on_left_out=None,
    only: PartitionFilter | None = None,
    tally: FilterTally | None = None,
) -> list[Path]:
    """Files given directly are kept in order; a partition dir gives its files with `suffixes`
    in offset order; a log dir gives those of every log a broker loads (live and future), and
    `on_left_out(dir, kind)` is called for each partition dir it leaves out (being deleted,
    stray). Anything else is an InputError.

    `only` (--topic/--partition) keeps what it matches (see FilterTally.keep_path): a partition
    dir by its name, a file given directly by its directory's; when it matches nothing at all,
    that is an InputError. A command that expands its paths one at a time passes its own
    `tally` instead, and checks it once every path is expanded."""
    own = tally is None
    if tally is None:
        tally = FilterTally(only)
    on_left_out = tally.notes(on_left_out)
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            if tally.keep_path(p):
                out.append(p)
        elif not p.exists():
            raise InputError("no such file or directory", path=str(p))
        elif not p.is_dir():
            raise InputError("not a regular file or directory", path=str(p))
        else:
            for d in tally.keep_dirs(read_partition_dirs(p, on_left_out)):
                out.extend(files_of_partition(d, suffixes))
    if own:
        tally.check(paths)
    return out


@dataclass
class FilterTally:
    """--topic/--partition (`only`, falsy for none) applied across all the paths of one command,
    which may read them one at a time (a path that cannot be read does not stop the others):
    what the filter was offered and what it kept, so that `check` tells a filter that matched
    nothing, once, after every path.

    The filter applies to every path: a partition dir (given, or found in a log dir) by its name,
    a file given directly by the name of the dir it is in. A name that is not a partition's
    (a copy of a segment in /tmp) cannot be told to be of the topic asked for: it never matches."""

    only: PartitionFilter | None = None
    offered: int = 0
    kept: int = 0

    def keep_dirs(self, dirs: list[Path]) -> list[Path]:
        kept = dirs if not self.only else [d for d in dirs if self.only.matches_dir(d)]
        self.offered += len(dirs)
        self.kept += len(kept)
        return kept

    def keep_path(self, path: Path | str) -> bool:
        """A partition dir, or a file (by its dir); no I/O beyond telling a dir from a file."""
        p = Path(path)
        return bool(self.keep_dirs([p if p.is_dir() else p.parent]))

    def notes(self, on_left_out):
        """`on_left_out` heard only of the partition dirs the filter matches: a dir left out that
        the operator did not ask about is not worth a note."""
        if not self.only or on_left_out is None:
            return on_left_out
        only = self.only
        return lambda d, kind: on_left_out(d, kind) if only.matches_dir(d) else None

    def check(self, paths) -> None:
        if self.only and self.offered and not self.kept:
            raise no_match(self.only, paths)


def no_match(only: PartitionFilter, paths) -> InputError:
    """The error when --topic/--partition match no partition dir of the paths given: a filter
    that selects nothing is a mistake to report, never an empty success."""
    where = ", ".join(str(p) for p in paths)
    return InputError(f"no partition dir matches {only.describe()}", path=where)


def read_partition_dirs(p: Path, on_left_out=None) -> list[Path]:
    """The partition dirs a read command reads for the dir `p`: itself if it is a partition dir
    (whatever its kind: it was named), else the loaded logs of the log dir (see expand_paths)."""
    kind = dir_kind(p)
    if kind is DirKind.PARTITION_DIR:
        return [p]
    if kind is None:
        raise InputError(NOT_KAFKA, path=str(p))
    listing = LogDir(p).listing()
    if on_left_out is not None:
        for d, k in listing.other_than(LOADED):
            on_left_out(d, k)
    return listing.of(LOADED)


def files_of_partition(d: Path, suffixes: tuple[str, ...] = (names.LOG_SUFFIX,)) -> list[Path]:
    """A partition dir's files with `suffixes`, in offset order (then suffix order)."""
    files = []
    for f in d.iterdir():
        names.unparsable_offset(d, f.name, suffixes)  # never taken for absent
        o = names.offset_from_name(f.name)
        if o is None:
            continue
        # a segment that is a dangling symlink, a directory or a FIFO is kept: whoever reads it
        # says it cannot be read, rather than the partition silently missing a segment
        for s in suffixes:
            if f.name == f"{o:020d}{s}":
                files.append((o, suffixes.index(s), f))
    out = [f for _, _, f in sorted(files)]
    from kafkalog_cli.storage import live_files

    live_files.listed(out)  # a live broker may rename or delete them before they are read
    return out


@dataclass
class PartitionSelection:
    """What a command that changes log dirs acts on: {log dir: [partition dirs]}, and the
    partition dirs it leaves alone (dir, kind), to report."""

    groups: dict[Path, list[Path]] = field(default_factory=dict)
    left_out: list[tuple[Path, PartitionDirKind]] = field(default_factory=list)


def select_partition_dirs(
    paths, kinds=(PartitionDirKind.LIVE,), only: PartitionFilter | None = None
) -> PartitionSelection:
    """Group the given log dirs / partition dirs by log dir (the commands that change a log dir
    act on its lock, its root checkpoints): the partition dirs of `kinds`; the others, given or
    found in a log dir, are left out. A log dir without checkpoint files (an old broker's, a
    copy) is a log dir all the same.

    `only` (--topic/--partition) drops, without a note, the partition dirs it does not match,
    and the log dirs where it matches none: a command never takes the lock of, or writes to, a
    log dir the operator did not ask about. Matching no partition dir at all is an InputError."""
    if only:
        sel = select_partition_dirs(paths, kinds)
        groups = {
            k: kept
            for k, v in sel.groups.items()
            if (kept := [d for d in v if only.matches_dir(d)])
        }
        left_out = [(d, k) for d, k in sel.left_out if only.matches_dir(d)]
        if not groups and (
            any(sel.groups.values()) or sel.left_out
        ):  # a left-out dir is never acted on
            raise no_match(only, paths)
        return PartitionSelection(groups, left_out)
    sel = PartitionSelection()
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            raise InputError("not a directory (give a log dir or a partition dir)", path=str(p))
        kind = dir_kind(p)
        if kind is DirKind.PARTITION_DIR:
            parsed = parse_partition_dir_name(p.name)
            if parsed is None:
                raise InputError(
                    "a partition dir's name must be <topic>-<partition> (it names the "
                    "partition's entries in the log dir's checkpoint files)",
                    path=str(p),
                )
            if parsed.kind in kinds:
                sel.groups.setdefault(p.parent, []).append(p)
            else:
                sel.left_out.append((p, parsed.kind))
        elif kind is DirKind.LOG_DIR:
            listing = LogDir(p).listing()
            sel.groups.setdefault(p, []).extend(listing.of(kinds))
            sel.left_out.extend(listing.other_than(kinds))
        else:
            raise InputError(NOT_KAFKA, path=str(p))
    sel.groups = {k: sorted(set(v)) for k, v in sel.groups.items()}
    return sel


def partition_dirs_for(
    paths, kinds=(PartitionDirKind.LIVE,), only: PartitionFilter | None = None
) -> dict[Path, list[Path]]:
    """select_partition_dirs' groups: {log dir: [partition dirs of `kinds`]}."""
    return select_partition_dirs(paths, kinds, only).groups


def left_out_of(paths) -> list[tuple[Path, PartitionDirKind]]:
    """The partition dirs the read commands leave out of the log dirs among `paths` (being
    deleted, stray), for a command that reports them before it reads."""
    out = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and dir_kind(p) is DirKind.LOG_DIR:
            out.extend(LogDir(p).listing().other_than(LOADED))
    return out


def segments_of(paths, on_left_out=None, only: PartitionFilter | None = None) -> list[Segment]:
    """A segment file (.log, or a KRaft .checkpoint), a partition dir or a log dir -> its
    segments, in topic, partition and offset order, with absolute paths and each one's next base
    offset in its partition. Missing or unrecognised paths are InputErrors; `on_left_out` and
    `only` as in expand_paths."""
    from kafkalog_cli.storage.segment import Segment

    tally = FilterTally(only)
    out: list[Segment] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file() and not (
            p.name.endswith(names.LOG_SUFFIX) or p.name.endswith(names.CHECKPOINT_SUFFIX)
        ):
            raise InputError(
                "not a segment (.log) or KRaft snapshot (.checkpoint) file", path=str(p)
            )
        files = expand_paths([p], on_left_out=on_left_out, tally=tally)
        segs = [Segment.from_file(Path(os.path.abspath(f))) for f in files]
        for seg, f in zip(segs, files):
            seg.listed = seg.is_log and f != p  # found by listing a dir, not named by the user
        for seg, nxt in zip(segs, segs[1:]):
            if nxt.directory == seg.directory and nxt.is_log:
                seg.next_base_offset = nxt.base_offset
        out += segs
    tally.check(paths)
    return out
