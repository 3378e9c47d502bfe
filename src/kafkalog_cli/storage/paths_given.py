"""What the paths given to the data source and to `--engine spark` commands name: local paths
(plain, `file://` URIs, globs, an archive dir of log dirs) and remote URIs (`s3a://`, `hdfs://`,
`gs://`, ...), which storage.remote reads.

    expand_sources(["archive/", "file:///data/broker-*", "s3a://bucket/kafka"])
    -> ["/abs/archive/broker-0", "/abs/archive/broker-1", "/data/broker-0", "s3a://bucket/kafka"]
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from kafkalog_cli.errors import InputError

GLOB_CHARS = "*?["
ARCHIVE_DEPTH = 3  # an archive holds log dirs this many dirs down at most (archive/host/broker-0)


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/")


def scheme(path: str) -> str | None:
    """`s3a` of `s3a://bucket/key` (also of `s3a:/bucket/key`, what pathlib leaves of it); None
    for a plain path."""
    m = _SCHEME.match(str(path))
    return m.group(1).lower() if m else None


def is_remote(path: str) -> bool:
    """A URI read through pyarrow.fs: any scheme but file."""
    s = scheme(path)
    return s is not None and s != "file"


def local_path(path: str) -> str:
    """`file:///data/x` and `file:/data/x` -> `/data/x`; a plain path as it is."""
    p = str(path)
    if p.startswith("file://"):
        p = p[len("file://") :]
        return (
            "/" + p.lstrip("/") if p.startswith("/") else p
        )  # file://localhost/x is not supported
    if p.startswith("file:/"):
        return p[len("file:") :]
    return p


def has_glob(path: str) -> bool:
    return any(c in str(path) for c in GLOB_CHARS)


def expand_sources(paths, *, absolute: bool = True) -> list[str]:
    """Each path given, in order: remote URIs as they are; local ones without `file://`, a glob
    replaced by its matches (sorted; none is an InputError naming it), made absolute (so a
    Spark executor reads what the driver named, whatever its own working dir), and an archive
    (a dir that is not Kafka's, holding log dirs or partition dirs) replaced by what it holds."""
    out: list[str] = []
    for raw in paths:
        raw = str(raw)
        if is_remote(raw):
            out.append(raw)
            continue
        p = local_path(raw)
        if has_glob(p) and not os.path.lexists(p):
            matches = sorted(glob.glob(p))
            if not matches:
                raise InputError("no file or directory matches this pattern", path=raw)
        else:
            matches = [p]
        for m in matches:
            m = os.path.abspath(m) if absolute else m
            out.extend(archive_members(m) or [m])
    return out


def archive_members(path: str, depth: int = ARCHIVE_DEPTH) -> list[str]:
    """The log dirs and partition dirs inside `path` when `path` is a dir that is neither (an
    archive of brokers' log dirs), in name order; [] for anything else."""
    from kafkalog_cli.storage.logdir import dir_kind

    if depth <= 0 or not os.path.isdir(path) or dir_kind(path) is not None:
        return []
    found: list[str] = []
    try:
        entries = sorted(
            e.path for e in os.scandir(path) if e.is_dir() and not e.name.startswith(".")
        )
    except OSError as e:
        raise InputError(e.strerror or str(e), path=path) from None
    for sub in entries:
        if dir_kind(sub) is not None:
            found.append(sub)
        else:
            found.extend(archive_members(sub, depth - 1))
    return found


def absolute(path: Path | str | None):
    """`path` made absolute on the driver (None stays None; the type is kept)."""
    if path is None:
        return None
    return type(path)(os.path.abspath(path)) if isinstance(path, Path) else os.path.abspath(path)
