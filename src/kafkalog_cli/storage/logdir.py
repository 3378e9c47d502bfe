"""A broker log dir (one entry of log.dirs): its partitions and its root checkpoint files."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage import names
from kafkalog_cli.storage.names import TopicPartition, parse_partition_dir

if TYPE_CHECKING:  # imported lazily: verify-crc walks dirs without decoding records
    from kafkalog_cli.storage.partition import Partition
    from kafkalog_cli.storage.segment import Segment

Offsets = dict[tuple[str, int], int]

_ROOT_MARKERS = (
    names.META_PROPERTIES, names.RECOVERY_POINT_CHECKPOINT, names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_CHECKPOINT, names.CLEANER_CHECKPOINT, names.CLEAN_SHUTDOWN_FILE, names.LOCK_FILE,
)


@dataclass
class OffsetCheckpoint:
    """One root checkpoint file: {(topic, partition): offset} and the file's own entry order
    (kept when it is rewritten); `exists` tells a missing file from an empty one."""

    path: Path
    offsets: Offsets = field(default_factory=dict)
    order: list[tuple[str, int]] = field(default_factory=list)
    exists: bool = False

    @classmethod
    def read(cls, path: Path, strict: bool) -> "OffsetCheckpoint":
        """Strictly, a damaged file raises CheckpointError; leniently it has no entry, as a
        broker starting afresh would take it."""
        from kafkalog_cli.storage import checkpoints   # here: verify-crc walks dirs without them

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
    def read(cls, log_dir: Path, strict: bool = True) -> "RootCheckpoints":
        return cls(*(OffsetCheckpoint.read(log_dir / n, strict) for n in (
            names.RECOVERY_POINT_CHECKPOINT, names.LOG_START_OFFSET_CHECKPOINT,
            names.REPLICATION_CHECKPOINT, names.CLEANER_CHECKPOINT)))

    def for_partition(self, tp: TopicPartition):
        from kafkalog_cli.storage.partition import PartitionCheckpoints

        return PartitionCheckpoints(self.recovery_points.get(tp), self.log_start_offsets.get(tp),
                                    self.high_watermarks.get(tp), self.cleaner_offsets.get(tp))


@dataclass
class LogDir:
    path: Path

    @classmethod
    def open(cls, path: Path | str) -> "LogDir":
        path = Path(path)
        if not path.is_dir():
            raise InputError("not a directory", path=str(path))
        return cls(path)

    def partition_dirs(self) -> list[Path]:
        """Live partition directories, sorted by topic then partition number."""
        dirs = []
        for p in self.path.iterdir():
            if p.is_dir() and (tp := parse_partition_dir(p.name)) is not None:
                dirs.append((tp.topic, tp.partition, p))
        return [p for _, _, p in sorted(dirs)]

    def partitions(self, dirs: list[Path] | None = None, strict: bool = True) -> list["Partition"]:
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


def is_log_dir(path: Path) -> bool:
    """A log dir has a root checkpoint file or meta.properties (a partition dir has segments)."""
    return path.is_dir() and any((path / m).exists() for m in _ROOT_MARKERS)


def is_partition_dir(path: Path) -> bool:
    return path.is_dir() and any(p.suffix == names.LOG_SUFFIX for p in path.iterdir())


def expand_paths(paths, suffixes: tuple[str, ...] = (names.LOG_SUFFIX,)) -> list[Path]:
    """Files given directly are kept in order; a partition dir gives its files with `suffixes`
    in offset order; a log dir gives those of every partition. Anything else is an InputError."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            out.append(p)
        elif not p.exists():
            raise InputError("no such file or directory", path=str(p))
        elif is_partition_dir(p) or parse_partition_dir(p.name) is not None:
            out.extend(files_of_partition(p, suffixes))
        elif p.is_dir():
            parts = LogDir(p).partition_dirs()
            if not parts and not is_log_dir(p):
                raise InputError("not a Kafka log dir or partition dir (no segments, no checkpoint files)", path=str(p))
            for d in parts:
                out.extend(files_of_partition(d, suffixes))
        else:
            raise InputError("not a regular file or directory", path=str(p))
    return out


def files_of_partition(d: Path, suffixes: tuple[str, ...] = (names.LOG_SUFFIX,)) -> list[Path]:
    """A partition dir's files with `suffixes`, in offset order (then suffix order)."""
    files = []
    for f in d.iterdir():
        o = names.offset_from_name(f.name)
        if o is None:
            continue
        # a segment that is a dangling symlink, a directory or a FIFO is kept: whoever reads it
        # says it cannot be read, rather than the partition silently missing a segment
        for s in suffixes:
            if f.name == f"{o:020d}{s}":
                files.append((o, suffixes.index(s), f))
    return [f for _, _, f in sorted(files)]


def partition_dirs_for(paths) -> dict[Path, list[Path]]:
    """Group the given log dirs / partition dirs by log dir: what the commands that change a log
    dir act on (its lock, its root checkpoints)."""
    out: dict[Path, list[Path]] = {}
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            raise InputError("not a directory (give a log dir or a partition dir)", path=str(p))
        if parse_partition_dir(p.name) is not None and (any(p.glob("*.log")) or any(p.glob("*.log.swap"))
                                                        or is_log_dir(p.parent)):
            out.setdefault(p.parent, []).append(p)
        elif is_log_dir(p):
            dirs = sorted(d for d in p.iterdir() if d.is_dir() and parse_partition_dir(d.name) is not None)
            out.setdefault(p, []).extend(dirs)
        else:
            raise InputError("not a Kafka log dir or partition dir", path=str(p))
    return {k: sorted(set(v)) for k, v in out.items()}


def segments_of(paths) -> list["Segment"]:
    """A segment file (.log, or a KRaft .checkpoint), a partition dir or a log dir -> its
    segments, in topic, partition and offset order, with absolute paths and each one's next base
    offset in its partition. Missing or unrecognised paths are InputErrors."""
    from kafkalog_cli.storage.segment import Segment

    out: list[Segment] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            if not (p.name.endswith(names.LOG_SUFFIX) or p.name.endswith(names.CHECKPOINT_SUFFIX)):
                raise InputError("not a segment (.log) or KRaft snapshot (.checkpoint) file", path=str(p))
            files = [p]
        else:
            files = expand_paths([p])
        segs = [Segment.from_file(Path(os.path.abspath(f))) for f in files]
        for seg, nxt in zip(segs, segs[1:]):
            if nxt.directory == seg.directory and nxt.is_log:
                seg.next_base_offset = nxt.base_offset
        out += segs
    return out
