"""Symbolic links out of a log dir: the broker follows them, kafkalog writes nothing through one
unless told to (--follow-symlinks). The one rule, judged on resolved paths, for FsOps' write
gate (`WriteBounds`), the commands that leave such a partition out up front (`link_out`) and
doctor's note.

What the broker does with links (Kafka's source):
- LogManager.loadLogs lists a log dir with `dir.listFiles` filtered by `File.isDirectory`, which
  follows links: a partition dir that is a link to a dir elsewhere is loaded as any other, and
  UnifiedLog/LocalLog then open (FileRecords.openChannel: a RandomAccessFile "rw"), append to
  and truncate (FileRecords.truncateTo, LogSegment.truncateTo) its files through the link, as
  they do a segment file that is itself a link;
- LogManager.createAndValidateLogDirs tells log dirs apart by `getCanonicalPath`: a log dir
  reached through a link (/var/lib/kafka -> /data/kafka) is the dir it resolves to;
- renames (LocalLog.renameDir, LogSegment.changeFileSuffixes -> FileRecords.renameTo) go through
  Utils.atomicMoveWithFallback (Files.move), which moves a link itself, not what it leads to;
- Utils.delete walks a `-delete` dir with Files.walkFileTree without FOLLOW_LINKS: a partition
  dir that is a link loses the link, its target stays; but LocalLog.deleteSegmentFiles deletes
  the files in the dir the link leads to.

So a link out of the log dir is ordinary to a broker, and the read commands read through it as
the broker does. A mutating command leaves such a partition as it is (one line on stderr, exit
4) unless --follow-symlinks. "Inside" is judged against the log dir's resolved path, so a log dir
that is a link itself, and a link from one place in the log dir to another, are inside.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.errors import OutsideLogDirError

FOLLOW_HINT = "--follow-symlinks changes it"


def is_inside(path: str, root: str) -> bool:
    """`path` is `root` or under it (both absolute and normalised)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class LinkOut:
    """A partition dir a mutating command leaves unchanged: `link` (the dir itself, or one of its
    files) is a symbolic link that leads to `leads_to`, outside the log dir."""

    partition_dir: Path
    link: Path
    leads_to: str

    @property
    def what(self) -> str:
        """What is a link: "a symbolic link" (the dir itself) or "<file> is a symbolic link"."""
        return (
            "a symbolic link"
            if self.link == self.partition_dir
            else f"{self.link.name} is a symbolic link"
        )

    @property
    def why(self) -> str:
        return (
            f"{self.what} to {self.leads_to}, outside the log dir: left unchanged ({FOLLOW_HINT})"
        )

    def line(self) -> str:
        """The stderr line (without `kafkalog: `)."""
        return f"{self.partition_dir}: {self.why}"

    def error(self) -> OutsideLogDirError:
        """The error of a command that has nothing else to do (move-partition)."""
        return OutsideLogDirError(self.why, path=str(self.partition_dir))

    def to_dict(self) -> dict:
        """The partition's line in the run's JSON Lines."""
        return {
            "partition": self.partition_dir.name,
            "status": "left unchanged",
            "link": str(self.link),
            "leads_to": self.leads_to,
            "reason": self.why,
            "exit_code": int(OutsideLogDirError.exit_code),
        }


def link_out(log_dir: Path, partition_dir: Path) -> LinkOut | None:
    """The first link out of `log_dir` that `partition_dir` is or holds (its own entries), or
    None. An unreadable dir is None: whoever reads it says so."""
    root = os.path.realpath(log_dir)
    d = Path(partition_dir)
    real = os.path.realpath(d)
    if not is_inside(real, root):
        return LinkOut(d, d, real)
    try:
        with os.scandir(d) as it:
            links = sorted(e.path for e in it if e.is_symlink())
    except OSError:
        return None
    for p in links:
        target = os.path.realpath(p)
        if not is_inside(target, root):
            return LinkOut(d, Path(p), target)
    return None


def split_links_out(
    log_dir: Path, partition_dirs: Iterable[Path]
) -> tuple[list[Path], list[LinkOut]]:
    """(the partition dirs to change, those left as they are: a link out of the log dir)."""
    keep, left = [], []
    for d in partition_dirs:
        found = link_out(log_dir, d)
        if found is None:
            keep.append(d)
        else:
            left.append(found)
    return keep, left


def refuse_links_out(roots: Iterable[Path], paths: Iterable[str | Path | None]) -> None:
    """OutsideLogDirError for the first of `paths` (files a change writes into) that leads out of
    `roots` (the log dirs it may change): a check before the first change of an all-or-nothing run
    (quarantine restore)."""
    bounds = WriteBounds(roots)
    for p in paths:
        if p is not None:
            bounds.check(p, content=True)


class WriteBounds:
    """Where one FsOps may change files: under `roots` (the log dir, its quarantine, what else the
    op owns), judged on resolved paths, so never through a link that leads out of them. With
    `follow_symlinks` a path under a root as given is allowed too (through any link)."""

    def __init__(self, roots: Iterable[Path], follow_symlinks: bool = False):
        roots = [Path(r) for r in roots]
        self.follow_symlinks = follow_symlinks
        self.given = tuple(os.path.abspath(r) for r in roots)
        self.resolved = tuple(os.path.realpath(r) for r in roots)

    def including(self, *roots: Path) -> WriteBounds:
        """These bounds and `roots` (another dir the op owns: move-partition's source log dir)."""
        wider = WriteBounds((), self.follow_symlinks)
        wider.given = self.given + tuple(os.path.abspath(r) for r in roots)
        wider.resolved = self.resolved + tuple(os.path.realpath(r) for r in roots)
        return wider

    def check(self, path: Path | str, content: bool, on_the_way: bool = False) -> None:
        """Raise OutsideLogDirError unless a change at `path` stays inside. `content`: the change
        writes into what `path` leads to (a write, a cut, an append, a time), so the whole path
        is resolved; else it adds, removes or renames the name itself (a link is not followed),
        so only its directory is. `on_the_way`: a new directory, allowed also on the way to a
        root (the parents of a quarantine dir made as it is)."""
        p = os.path.abspath(path)
        given = any(is_inside(p, r) for r in self.given)
        if given and self.follow_symlinks:
            return
        head, name = os.path.split(p)
        real = os.path.realpath(p) if content else os.path.join(os.path.realpath(head), name)
        if any(is_inside(real, r) or (on_the_way and is_inside(r, real)) for r in self.resolved):
            return
        how = (
            (
                f"through a symbolic link to {real}, outside the log dir: not written (--follow-symlinks "
                f"writes through it)"
            )
            if given
            else f"outside the log dir ({real}): not written"
        )
        raise OutsideLogDirError(how, path=str(path))
