"""Files the broker can open: run as root (sudo, in an incident), kafkalog gives every file it
creates or rewrites the owner, group and mode of the file it replaces, or else those of its
directory's files (a segment's .log first), or else the directory's own owner with its mode less
the execute bits. A broker running as its own user then opens them for writing as it opened the
old ones. Not root: files are made as the process makes them (its user, its umask), as before.

Only storage/fsops.py and storage/lock.py call this; it reads stats and changes nothing but the
owner and mode of a file they have just made."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kafkalog_cli.storage.names import LOG_SUFFIX


def as_root() -> bool:
    return os.geteuid() == 0


def _regular(path: Path) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def like(
    path: Path, replaces: Path | None = None, skip: tuple[str, ...] = ()
) -> os.stat_result | None:
    """The stat whose owner and mode a new `path` takes: the file it replaces (`replaces`, else
    `path` itself when it exists), else a file of its directory (a .log first, never one named in
    `skip`: our temporary files), else the directory (its mode less the execute bits)."""
    for candidate in (replaces, path):
        if candidate is not None and (st := _regular(Path(candidate))) is not None:
            return st
    directory = Path(path).parent
    try:
        # a segment first, then the broker's own files before hidden ones (.lock, ours)
        names = sorted(
            os.listdir(directory), key=lambda n: (not n.endswith(LOG_SUFFIX), n.startswith("."), n)
        )
    except OSError:
        return None
    for name in names:
        if name == Path(path).name or name.endswith(skip):
            continue
        st = _regular(directory / name)
        if st is not None:
            return st
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return os.stat_result((stat.S_IFREG | (stat.S_IMODE(st.st_mode) & 0o666),) + tuple(st)[1:])


def adopt(target: int | Path, reference: os.stat_result | None) -> None:
    """Give `target` (an open descriptor or a path) the owner, group and mode of `reference`,
    when running as root; a no-op otherwise or without a reference."""
    if reference is None or not as_root():
        return
    mode = stat.S_IMODE(reference.st_mode)
    if isinstance(target, int):
        os.fchown(target, reference.st_uid, reference.st_gid)
        os.fchmod(target, mode)
    else:
        os.chown(target, reference.st_uid, reference.st_gid, follow_symlinks=False)
        os.chmod(target, mode)


def adopt_dir(target: Path, reference: Path) -> None:
    """A directory kafkalog made (a quarantine folder) takes the owner, group and mode of the
    directory whose files it holds, when running as root."""
    if not as_root():
        return
    try:
        st = os.stat(reference)
    except OSError:
        return
    os.chown(target, st.st_uid, st.st_gid)
    os.chmod(target, stat.S_IMODE(st.st_mode))
