"""A broker log dir (one entry of log.dirs): its partitions and its root checkpoint files."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalog_cli.errors import InputError
from kafkalog_cli.storage import names
from kafkalog_cli.storage.names import parse_partition_dir

if TYPE_CHECKING:  # imported lazily: verify-crc walks dirs without decoding records
    from kafkalog_cli.storage.partition import Partition

_ROOT_MARKERS = (
    names.META_PROPERTIES, names.RECOVERY_POINT_CHECKPOINT, names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_CHECKPOINT, names.CLEANER_CHECKPOINT, names.CLEAN_SHUTDOWN_FILE, names.LOCK_FILE,
)


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

    def partitions(self) -> list["Partition"]:
        from kafkalog_cli.storage.partition import Partition

        return [Partition.open(p) for p in self.partition_dirs()]

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
            out.extend(_files_of_partition(p, suffixes))
        elif p.is_dir():
            parts = LogDir(p).partition_dirs()
            if not parts and not is_log_dir(p):
                raise InputError("not a Kafka log dir or partition dir (no segments, no checkpoint files)", path=str(p))
            for d in parts:
                out.extend(_files_of_partition(d, suffixes))
        else:
            raise InputError("not a regular file or directory", path=str(p))
    return out


def _files_of_partition(d: Path, suffixes: tuple[str, ...]) -> list[Path]:
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
