"""Disk space: what a file system has free, and what a run that removes data gives back.

The two figures every command that removes data reports (retain, delete-records, recover,
compact; per partition and in total), defined here once:

- `freed_on_disk`: the bytes `df` gains on the log dir's file system: the blocks (st_blocks, in
  512-byte units) of each removed file whose last link it was, and those a truncation gave back.
  A file kept in a quarantine on the same file system is a hard link: removing it from the log
  dir frees nothing, so with the default quarantine this is 0 until the quarantine is pruned.
- `held_in_quarantine`: the bytes (file sizes, and byte ranges cut) this run kept in its
  quarantine, which `kafkalog quarantine restore` puts back. 0 with --no-quarantine.

So --no-quarantine frees what it removes and holds nothing; the default quarantine (beside the
log dir) holds it and frees nothing; `--quarantine DIR` on another file system does both.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

FIELDS = ("freed_on_disk", "held_in_quarantine")


@dataclass
class Space:
    freed_on_disk: int = 0
    held_in_quarantine: int = 0

    def add(self, other: Space) -> Space:
        self.freed_on_disk += other.freed_on_disk
        self.held_in_quarantine += other.held_in_quarantine
        return self

    def to_dict(self) -> dict:
        return {"freed_on_disk": self.freed_on_disk, "held_in_quarantine": self.held_in_quarantine}


class QuarantinePlace(str, enum.Enum):
    """Where removed data goes, as it decides the two figures."""

    NONE = "none"  # --no-quarantine: freed, not held
    SAME_FILE_SYSTEM = "same"  # hard links: held, not freed
    OTHER_FILE_SYSTEM = "other"  # copied, then unlinked: freed and held

    @classmethod
    def of(cls, log_dir: Path, quarantine_root: Path | None) -> QuarantinePlace:
        if quarantine_root is None:
            return cls.NONE
        return (
            cls.SAME_FILE_SYSTEM
            if same_file_system(log_dir, quarantine_root)
            else cls.OTHER_FILE_SYSTEM
        )

    def space(self, size: int, allocated: int, last_link: bool = True) -> Space:
        """The two figures for removing one file of `size` bytes and `allocated` bytes of blocks."""
        freed = allocated if last_link and self is not QuarantinePlace.SAME_FILE_SYSTEM else 0
        return Space(freed, 0 if self is QuarantinePlace.NONE else size)


def allocated(st: os.stat_result) -> int:
    """The bytes of disk a file takes (what `du` counts and `df` gains when it goes)."""
    return st.st_blocks * 512


def freed_by_removing(tree: Path) -> int:
    """What `df` gains when the directory `tree` goes: the blocks of its directories and of each
    file whose last link it holds (a quarantine's hard link to a file still in a log dir frees
    nothing)."""
    total = 0
    for root, dirs, files in os.walk(tree):
        for name in [*dirs, *files]:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if st.st_nlink == 1 or name in dirs:
                total += allocated(st)
    try:
        total += allocated(os.lstat(tree))
    except OSError:
        pass
    return total


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (a quarantine not made yet)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def same_file_system(a: Path, b: Path) -> bool:
    return os.stat(_existing(a)).st_dev == os.stat(_existing(b)).st_dev


# Below this much free, a log dir's file system is full for retain and delete-records: they free
# space before they write a byte (storage.space.FreeSpace.full)
FULL_BELOW = 1 << 20


@dataclass(frozen=True)
class FreeSpace:
    """What the file system holding a path has free for us (root may use the reserved blocks)."""

    bytes: int
    inodes: int
    block_size: int

    @classmethod
    def of(cls, path: Path) -> FreeSpace:
        st = os.statvfs(_existing(path))
        root = os.geteuid() == 0
        blocks = st.f_bfree if root else st.f_bavail
        inodes = st.f_ffree if root else st.f_favail
        return cls(blocks * st.f_frsize, inodes, st.f_frsize or 4096)

    @property
    def full(self) -> bool:
        return self.bytes < FULL_BELOW

    def blocks_for(self, nbytes: int) -> int:
        """`nbytes` of file content rounded up to whole blocks."""
        return -(-nbytes // self.block_size) * self.block_size
