"""The quarantine registry: every quarantine folder kafkalog wrote, by the log dir it came from.

`--quarantine DIR` may put a run's folder anywhere, and nothing may be added inside a log dir (a
broker takes every directory there for a partition), so what `kafkalog quarantine list LOGDIR`
finds beyond the default place is recorded outside both: in `quarantines.json` of the state dir,
$KAFKALOG_STATE_DIR, else $XDG_STATE_HOME/kafkalog, else ~/.local/state/kafkalog.

    {"kafkalog_quarantine_registry": 1,
     "log_dirs": {"/real/path/of/logdir": {"cluster_id": "…", "directory_id": "…",
                                           "folders": ["/q/20261127T101500.000000Z-retain", …]}}}

Keyed by the log dir's real path; meta.properties' cluster.id and directory.id (where present)
find it again after the log dir was mounted elsewhere. Written whole (tmp, fsync, rename) under
the state dir's `.lock`, held while each run reads, changes and writes it, so that runs at once
add to it and lose nothing. The registry only helps to find folders: a state dir that cannot be
written is a warning on stderr, never the failure of the run whose data is kept all the same.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage import files
from kafkalog_cli.storage.names import META_PROPERTIES

STATE_ENV = "KAFKALOG_STATE_DIR"
REGISTRY = "quarantines.json"
VERSION = 1
_THREADS = threading.Lock()  # lockf excludes other processes only, not this one's threads


def state_dir() -> Path:
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(xdg) / "kafkalog"


@dataclass(frozen=True)
class LogDirKey:
    """What names a log dir in the registry: its real path, and its meta.properties ids."""

    path: str
    cluster_id: str | None = None
    directory_id: str | None = None

    @classmethod
    def of(cls, log_dir: Path) -> LogDirKey:
        from kafkalog_cli.formats.checkpoints import parse_properties
        from kafkalog_cli.formats.meta_properties import MetaProperties

        props: dict[str, str] = {}
        try:
            props = parse_properties(files.read_bytes(Path(log_dir, META_PROPERTIES)))
        except (KafkalogError, ValueError):
            # none (a copy, an old broker), damaged or unreadable: the key is the path alone (the
            # commands that read the log dir report the file themselves)
            pass
        try:
            directory_id = MetaProperties.directory_id_in(props)
        except KafkalogError:
            directory_id = None
        return cls(os.path.realpath(log_dir), props.get("cluster.id"), directory_id)

    def matches(self, path: str, entry: dict) -> bool:
        return path == self.path or (
            self.directory_id is not None
            and entry.get("directory_id") == self.directory_id
            and entry.get("cluster_id") == self.cluster_id
        )


def _read(path: Path) -> dict:
    """The registry, or an empty one (none yet; a damaged one is rebuilt from the runs to come)."""
    try:
        doc = json.loads(files.read_bytes(path))
    except (KafkalogError, ValueError):
        return {"kafkalog_quarantine_registry": VERSION, "log_dirs": {}}
    if not isinstance(doc, dict) or not isinstance(doc.get("log_dirs"), dict):
        return {"kafkalog_quarantine_registry": VERSION, "log_dirs": {}}
    return doc


def _change(change) -> str | None:
    """Read, change and write the registry under the state dir's lock; the warning line when the
    state dir cannot be written (else None)."""
    from kafkalog_cli.storage.fsops import FsOps
    from kafkalog_cli.storage.lock import LogDirLock

    d = state_dir()
    fsops = FsOps(d)
    fsops.fault_after = None  # a fault injected into a run's steps (tests) is not the registry's
    fsops.bounds = None  # kafkalog's own state dir (its parents made as needed): no log dir
    try:
        if not d.is_dir():
            try:
                fsops.make_dir(d)
            except KafkalogError:
                if not d.is_dir():  # another run made it meanwhile: fine
                    raise
        with _THREADS, LogDirLock(d, wait=True):
            doc = _read(d / REGISTRY)
            change(doc["log_dirs"])
            fsops.write_atomic(
                d / REGISTRY, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
            )
    except (OSError, KafkalogError) as e:
        why = e.message if isinstance(e, KafkalogError) else (e.strerror or str(e)).lower()
        return f"cannot record the quarantine in {d / REGISTRY} ({why}; set {STATE_ENV} to a writable dir)"
    return None


def record(log_dir: Path, folder: Path) -> None:
    """Add a run's quarantine folder to the registry. A failure is one warning line on stderr."""
    key = LogDirKey.of(log_dir)
    folder_s = os.path.abspath(folder)

    def add(log_dirs: dict) -> None:
        entry = log_dirs.setdefault(key.path, {"folders": []})
        entry.update(
            {
                k: v
                for k, v in (("cluster_id", key.cluster_id), ("directory_id", key.directory_id))
                if v
            }
        )
        if folder_s not in entry["folders"]:
            entry["folders"].append(folder_s)

    warning = _change(add)
    if warning:
        sys.stderr.write(f"kafkalog: warning: {warning}\n")


def forget(folders: list[Path]) -> str | None:
    """Drop folders that `quarantine prune` removed; the warning line, if the registry could not be written."""
    gone = {os.path.abspath(f) for f in folders}

    def drop(log_dirs: dict) -> None:
        for entry in log_dirs.values():
            entry["folders"] = [f for f in entry.get("folders", []) if f not in gone]

    if not state_dir().joinpath(REGISTRY).exists():
        return None
    return _change(drop)


def folders_of(log_dir: Path) -> list[Path]:
    """The folders recorded for `log_dir` (by its real path or its meta.properties ids), whether
    or not they still exist."""
    key = LogDirKey.of(log_dir)
    doc = _read(state_dir() / REGISTRY)
    out: list[Path] = []
    for path, entry in doc["log_dirs"].items():
        if isinstance(entry, dict) and key.matches(path, entry):
            out += [Path(f) for f in entry.get("folders", []) if isinstance(f, str)]
    return list(dict.fromkeys(out))
