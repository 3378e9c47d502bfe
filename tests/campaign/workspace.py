"""One case's private directory: the mutated log dir, its quarantine, and a sentinel tree
outside them that nothing may touch.

    W/logdir      the copy the command runs on (and W/logdir2, a second one, where a command
                  takes two log dirs: move-partition's destination, compare-replicas' other copy)
    W/quarantine  --quarantine (created first, so the run adds no name to W itself)
    W/out         export's output
    W/outside     sentinel files, the targets of the symlinks a mutation plants, HOME
    W/state       KAFKALOG_STATE_DIR: the quarantine registry docs/safety.md documents, outside
                  every log dir by design
    W/tmp         TMPDIR: the process's own temporary files
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from .tree import Entry, snapshot

# The subtrees of W a run may change; everything else in W (W itself included) is "outside".
INSIDE = frozenset({"logdir", "logdir2", "quarantine", "out", "state", "tmp"})


@dataclass
class Workspace:
    root: Path

    @property
    def logdir(self) -> Path:
        return self.root / "logdir"

    @property
    def logdir2(self) -> Path:
        return self.root / "logdir2"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            HOME=str(self.outside / "home"),
            KAFKALOG_STATE_DIR=str(self.root / "state"),
            TMPDIR=str(self.root / "tmp"),
            PYTHONDONTWRITEBYTECODE="1",
            COLUMNS="120",
            LC_ALL="C.UTF-8",
        )
        for k in ("KAFKALOG_FAULT_AFTER", "XDG_STATE_HOME"):
            env.pop(k, None)
        return env

    def outside_state(self, killed: bool = False) -> dict[str, Entry]:
        """W and everything in it but the INSIDE subtrees, whose own entries change legitimately
        (their mtimes) and are compared by the other invariants. W's own mtime is left out:
        move-partition's documented staging dir (`<dst>/../.kafkalog-staging/`, kafkalog-move-partition(1))
        is made and removed in W during a run; a name left in W still shows. After a killed run
        (`killed`) kafkalog's own work files beside the log dir (the staging dir, a write probe:
        `.kafkalog-*`) may remain until the rerun, so they are left out; after the rerun they
        count again."""
        own = {n for n in os.listdir(self.root) if n.startswith(".kafkalog-")} if killed else set()
        snap = snapshot(self.root, skip=INSIDE | own)
        snap["."] = dataclasses.replace(snap["."], mtime_ns=0)
        return snap

    def inside_state(self) -> dict[str, Entry]:
        return snapshot(self.logdir)


def make(root: Path, source: Path, second: bool = False) -> Workspace:
    """A fresh workspace with a copy of `source` (symlinks kept as links, times kept)."""
    ws = Workspace(Path(root))
    ws.root.mkdir(parents=True)
    shutil.copytree(source, ws.logdir, symlinks=True)
    _extend_preallocated(source, ws.logdir)
    _writable(ws.logdir)
    if second:
        shutil.copytree(source, ws.logdir2, symlinks=True)
        _writable(ws.logdir2)
    for d in ("quarantine", "out", "state", "tmp", "outside/home", "outside/parked"):
        (ws.root / d).mkdir(parents=True)
    (ws.outside / "sentinel.txt").write_text("outside the log dir: nothing may change this\n")
    (ws.outside / "sentinel.log").write_bytes(bytes(range(256)) * 8)
    return ws


def _writable(root: Path) -> None:
    """The corpus is stored read-only (0444 files, 0555 dirs); a broker's log dir is its own and
    writable (umask 022), and a copy must not fail a write for the storage's reason."""
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, os.stat(dirpath).st_mode | stat.S_IWUSR)
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)


def _extend_preallocated(source: Path, copy: Path) -> None:
    """The corpus stores a broker's preallocated index files without their trailing zeros and
    lists their real lengths in PREALLOCATED.txt beside the snapshot: give them back."""
    listing = source.parent / "PREALLOCATED.txt"
    if not listing.is_file():
        return
    for line in listing.read_text().splitlines():
        parts = line.split(maxsplit=1)
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        length, rel = int(parts[0]), parts[1]
        prefix = source.name + "/"
        if rel.startswith(prefix):
            rel = rel[len(prefix) :]
        f = copy / rel
        if f.is_file() and f.stat().st_size < length <= 16 << 20:
            st = f.stat()
            os.truncate(f, length)
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def remove(root: Path) -> None:
    """Delete a workspace whatever a mutation left in it (mode 000 dirs, FIFOs, sockets)."""
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                os.chmod(p, stat.S_IRWXU)
    os.chmod(root, stat.S_IRWXU) if os.path.isdir(root) else None
    shutil.rmtree(root, ignore_errors=True)
