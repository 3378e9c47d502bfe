"""Plans: what a mutating operation would change, before it changes anything.

`plan()` functions (ops/recover.py, ops/roll.py, ...) are pure: they read the log dir and return a
Plan. `apply(plan, fsops)` carries it out through fsops only, action by action, in the order
given: the op that built the plan is responsible for an order that is crash safe (Kafka's own
protocol: new files before renames, later segments deleted before a truncation, checkpoints last).
"""

from __future__ import annotations

import enum
import itertools
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.errors import WriteError
from kafkalog_cli.storage.fsops import TMP_SUFFIX, FsOps
from kafkalog_cli.storage.names import CLEAN_SHUTDOWN_ASIDE, CLEANED_SUFFIX
from kafkalog_cli.storage.space import FreeSpace, QuarantinePlace, Space, allocated


class ActionKind(str, enum.Enum):
    DELETE = "delete"  # a file leaves the log dir (into the quarantine)
    RENAME = "rename"  # Kafka's suffix protocol (.swap -> final, ...)
    TRUNCATE = "truncate"  # cut a file at a byte; the cut bytes are quarantined
    REBUILD_INDEX = "rebuild_index"  # .index / .timeindex / .txnindex written anew
    WRITE_SNAPSHOT = "write_snapshot"  # a producer snapshot
    UPDATE_CHECKPOINT = (
        "update_checkpoint"  # recovery-point-offset-checkpoint, leader-epoch-checkpoint
    )
    CREATE_SEGMENT_FILE = "create_segment"  # a new segment's .log / .index / .timeindex
    REWRITE_SEGMENT = (
        "rewrite_segment"  # --salvage: kept byte ranges copied to .cleaned, swapped in
    )
    MAKE_DIR = "make_dir"  # a new directory (move-partition's -future dir)
    COPY_FILE = "copy_file"  # a whole file copied to a new one (source -> path)
    RENAME_DIR = "rename_dir"  # Kafka's dir suffixes: -future -> live, live -> -delete
    REMOVE_DIR = "remove_dir"  # a stale staging dir of kafkalog's own, outside the log dir
    REMOVE_EMPTY_DIR = (
        "remove_empty_dir"  # kafkalog's own staging dir once empty (left when not empty)
    )
    SPLIT_SEGMENT = "split_segment"  # an overflowed segment split as the broker splits it


@dataclass
class Action:
    kind: ActionKind
    path: Path
    reason: str
    partition: str | None = None
    target: Path | None = None  # rename target
    at: int | None = None  # truncate: new size
    bytes_removed: int | None = None
    offsets_removed: tuple[int, int] | None = None  # first..last offset removed (inclusive)
    data: bytes | None = None  # new content (written atomically)
    preallocate: int | None = None  # extend the new file with zeros to this length
    keep_mtime: bool = False
    ranges: Sequence[tuple[int, int] | bytes] | None = (
        None  # rewrite_segment: kept (bytes: spliced)
    )
    source: Path | None = None  # rewrite_segment: the file the ranges are read from
    pieces: list | None = None  # split_segment: storage.overflow.SplitSegment, in file order
    size: int | None = None  # copy_file: the bytes copied

    def to_dict(self) -> dict:
        out: dict = {"action": self.kind.value, "path": str(self.path), "reason": self.reason}
        if self.partition:
            out["partition"] = self.partition
        if self.target is not None:
            out["target"] = str(self.target)
        if self.at is not None:
            out["at_byte"] = self.at
        if self.bytes_removed is not None:
            out["bytes_removed"] = self.bytes_removed
        if self.offsets_removed is not None:
            out["offsets_removed"] = list(self.offsets_removed)
        if self.data is not None:
            out["bytes"] = len(self.data) if self.preallocate is None else self.preallocate
        if self.size is not None:
            out["bytes"] = self.size
        if self.ranges is not None:
            out["kept_ranges"] = [list(r) for r in self.ranges if not isinstance(r, bytes)]
            if any(
                isinstance(r, bytes) for r in self.ranges
            ):  # repair: the batches put between them
                out["spliced_bytes"] = sum(len(r) for r in self.ranges if isinstance(r, bytes))
        if self.pieces is not None:
            out["split_into"] = [
                {"base_offset": s.base_offset, "bytes": s.size} for s in self.pieces
            ]
        return out


@dataclass
class Finding:
    """Something the op saw and reports, whether or not it changes anything."""

    partition: str
    message: str
    path: str | None = None
    position: int | None = None

    def to_dict(self) -> dict:
        out: dict[str, str | int] = {"partition": self.partition, "message": self.message}
        if self.path:
            out["path"] = self.path
        if self.position is not None:
            out["position"] = self.position
        return out


@dataclass
class Plan:
    op: str
    log_dir: Path
    actions: list[Action] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    partitions: dict[str, dict] = field(default_factory=dict)  # per-partition summary

    def add(self, action: Action) -> Action:
        self.actions.append(action)
        return action

    def note(self, partition: str, message: str, path=None, position=None) -> None:
        self.findings.append(
            Finding(partition, message, None if path is None else str(path), position)
        )

    @property
    def empty(self) -> bool:
        return not self.actions

    @property
    def pending(self) -> bool:
        """Applying the plan would change something."""
        return bool(self.actions)

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "log_dir": str(self.log_dir),
            "partitions": self.partitions,
            "findings": [f.to_dict() for f in self.findings],
            "actions": [a.to_dict() for a in self.actions],
        }


def delete_interrupted_writes(p: Plan, log_dir: Path) -> None:
    """Our own `*.kafkalog-tmp` files at the log dir's root, left by a killed write: deleted first.
    The clean-shutdown marker a killed run set aside is not one (ops.clean_shutdown settles it)."""
    for tmp in sorted(Path(log_dir).glob("*" + TMP_SUFFIX)):
        if tmp.name != CLEAN_SHUTDOWN_ASIDE:
            p.add(Action(ActionKind.DELETE, tmp, "an interrupted kafkalog write"))


def bytes_before_freeing(actions: list[Action]) -> int:
    """The bytes of file content the actions write before the first one that frees space (a
    delete or a truncation): what the disk must have free for the plan to start. Empty files
    (a new segment's) take an inode and no block; deleting the leftovers of an interrupted write
    frees next to nothing."""
    need = 0
    for a in actions:
        if a.kind is ActionKind.TRUNCATE or (
            a.kind is ActionKind.DELETE and not a.path.name.endswith(TMP_SUFFIX)
        ):
            break
        if a.kind in (ActionKind.RENAME,):
            continue
        need += (
            max(len(a.data or b""), a.preallocate or 0)
            if a.kind is not ActionKind.REWRITE_SEGMENT
            else 1
        )
    return need


def takes_blocks(a: Action) -> bool:
    """The action writes file content (not an empty file, a rename, a delete or a cut)."""
    return a.kind in (ActionKind.REWRITE_SEGMENT,) or bool(a.data) or bool(a.preallocate)


def preflight(plan: Plan, fsops: FsOps) -> None:
    """Fail before the first change: each directory to change must take a file, the quarantine
    must be creatable and hold the bytes it will receive. A read-only file system or a full
    quarantine is then reported with the log dir as it was. A plan that frees space before it
    writes a byte (retain and delete-records on a full disk) needs no free block to start: its
    probe is an empty file."""
    needs_blocks = bytes_before_freeing(plan.actions) > 0
    for d in sorted({_existing(a.path.parent) for a in plan.actions}):
        # a directory that only loses files or has them renamed (move-partition's source) takes no block
        fills = any(
            takes_blocks(a) or a.kind in (ActionKind.COPY_FILE, ActionKind.MAKE_DIR)
            for a in plan.actions
            if _existing(a.path.parent) == d
        )
        fsops.check_writable(d, needs_blocks=needs_blocks and fills)
    q = fsops.quarantine
    if (
        q is not None
        and q.folder is not None
        and any(
            a.kind in (ActionKind.DELETE, ActionKind.TRUNCATE, ActionKind.REWRITE_SEGMENT)
            for a in plan.actions
        )
    ):
        try:
            fsops.prepare_quarantine()
        except WriteError as e:
            if "no space left" in e.message and not fsops._moves_by_copy():
                e.message += (
                    ": the quarantine is on the log dir's file system, where keeping a file frees "
                    "nothing; give --quarantine DIR on another file system, or --no-quarantine"
                )
            raise
        need = sum(a.bytes_removed or 0 for a in plan.actions if a.kind == ActionKind.TRUNCATE)
        try:
            free = shutil.disk_usage(q.folder).free
        except OSError:
            free = None
        if free is not None and need > free:
            raise WriteError(
                f"cannot write to the quarantine: no space left on device "
                f"({need} bytes needed, {free} free)",
                path=str(q.folder),
            )


def _existing(d: Path) -> Path:
    """`d`, or its nearest existing ancestor (a directory the plan creates is checked there)."""
    while not d.exists() and d.parent != d:
        d = d.parent
    return d


def apply(plan: Plan, fsops: FsOps) -> dict:
    """Carry out `plan` through `fsops`; return the JSON report of what changed. A run of
    consecutive deletes is one batch (FsOps.delete_segment_files, as LocalLog.deleteSegmentFiles
    takes a list): its syncs are paid once, not per file; the order is kept."""
    preflight(plan, fsops)
    if plan.actions:
        fsops.about_to_change()
    done = []
    batched = (ActionKind.DELETE, ActionKind.RENAME_DIR)
    for kind, group in itertools.groupby(
        plan.actions, key=lambda a: a.kind if a.kind in batched else None
    ):
        run = list(group)
        if kind is ActionKind.DELETE:
            fsops.delete_segment_files([(a.path, a.reason) for a in run])
            done += [a.to_dict() for a in run]
            continue
        if kind is ActionKind.RENAME_DIR:  # their entries in one write: nothing between the renames
            fsops.rename_dirs([(a.path, _target(a)) for a in run])
            done += [a.to_dict() for a in run]
            continue
        for a in run:
            _apply_one(a, fsops)
            done.append(a.to_dict())
    space_by_partition(plan.partitions, fsops.space)
    return run_report(
        plan.op,
        plan.log_dir,
        fsops,
        changed=done,
        findings=[f.to_dict() for f in plan.findings],
        partitions=plan.partitions,
    )


def space_by_partition(partitions: dict[str, dict], space: dict[str, Space]) -> None:
    """storage.space's two figures into each partition's summary (that of a partition whose
    files did not change: 0 and 0), by the name of the directory the changed files are in."""
    by_name: dict[str, Space] = {}
    for directory, figures in space.items():
        by_name.setdefault(Path(directory).name, Space()).add(figures)
    for name, summary in partitions.items():
        if isinstance(summary, dict):
            summary.update(by_name.get(name, Space()).to_dict())


def run_report(op: str, log_dir: Path, fsops: FsOps, **fields) -> dict:
    """The JSON report of a run that changed a log dir (every mutating op's): the op's own fields,
    in order, then storage.space's two figures for the whole run (checkpoints included), where
    the removed data was kept (None: nothing was, or --no-quarantine) and the file-system steps
    taken."""
    q = fsops.quarantine
    return {
        "op": op,
        "log_dir": str(log_dir),
        **fields,
        **fsops.space_total().to_dict(),
        "quarantine": str(q.folder)
        if q is not None and q.folder is not None and q.entries
        else None,
        "fs_steps": fsops.steps,
    }


def estimate_space(plan: Plan, place: QuarantinePlace) -> Space:
    """A dry run's two figures (storage.space), per partition into its summary and in total:
    each file the plan deletes as `place` treats it, each truncation's cut bytes, less what
    the plan writes."""
    by_name: dict[str, Space] = {}
    total = Space()
    block = FreeSpace.of(plan.log_dir).block_size
    for a in plan.actions:
        figures = Space()
        if a.kind is ActionKind.DELETE:
            try:
                st = os.lstat(a.path)
            except OSError:
                continue
            figures = place.space(st.st_size, allocated(st), st.st_nlink == 1)
        elif a.kind is ActionKind.TRUNCATE and a.bytes_removed:
            figures = place.space(a.bytes_removed, a.bytes_removed)
        elif (
            a.data is not None
        ):  # a write: its blocks taken, those of the file it replaces given back
            try:
                st = os.lstat(a.path)
                old, held = (allocated(st) if st.st_nlink == 1 else 0), st.st_size
            except OSError:
                old, held = 0, 0
            new = -(-max(len(a.data), a.preallocate or 0) // block) * block
            figures = place.space(held, old)
            figures.freed_on_disk = (
                old if place is not QuarantinePlace.SAME_FILE_SYSTEM else 0
            ) - new
        by_name.setdefault(a.path.parent.name, Space()).add(figures)
        total.add(figures)
    for name, summary in plan.partitions.items():
        if isinstance(summary, dict):
            summary.update(by_name.get(name, Space()).to_dict())
    return total


def _target(a: Action) -> Path:
    """A rename's target (a RENAME or RENAME_DIR action always has one)."""
    assert a.target is not None, a
    return a.target


def _apply_one(a: Action, fsops: FsOps) -> None:
    k = a.kind
    if k == ActionKind.RENAME:
        fsops.rename(a.path, _target(a))
    elif k == ActionKind.TRUNCATE:
        assert a.at is not None, a  # a TRUNCATE action always has its size
        fsops.truncate(a.path, a.at, a.reason, keep_mtime=a.keep_mtime)
    elif k == ActionKind.REWRITE_SEGMENT:
        _rewrite_segment(a, fsops)
    elif k == ActionKind.MAKE_DIR:
        fsops.make_dir(
            a.path, like=a.source.stat() if a.source is not None else None, copy_of=a.source
        )
    elif k == ActionKind.COPY_FILE:
        assert a.source is not None, a  # a COPY_FILE action always has its source
        fsops.copy_file(a.source, a.path)
    elif k == ActionKind.RENAME_DIR:
        fsops.rename_dirs([(a.path, _target(a))])
    elif k == ActionKind.REMOVE_DIR:
        fsops.remove_tree(a.path)
    elif k == ActionKind.REMOVE_EMPTY_DIR:
        fsops.remove_empty_dir(a.path)
    elif k == ActionKind.SPLIT_SEGMENT:
        _split_segment(a, fsops)
    else:
        mtime = None
        if a.keep_mtime and a.path.exists():
            mtime = a.path.stat().st_mtime_ns
        like = a.source.stat() if a.source is not None and a.source.exists() else None
        fsops.write_atomic(
            a.path, a.data or b"", mtime_ns=mtime, preallocate=a.preallocate, like=like
        )


def _rewrite_segment(a: Action, fsops: FsOps) -> None:
    """--salvage: the kept byte ranges become `<log>.cleaned`, swapped in by Kafka's replace
    protocol (the old file into the quarantine). A crash at any point is resolved by LogLoader's
    leftover handling (ours and the broker's)."""
    src = a.source or a.path
    cleaned = a.path.with_name(a.path.name + CLEANED_SUFFIX)
    fsops.copy_ranges(src, cleaned, a.ranges or [])
    if a.keep_mtime:  # repair: the same batches as before the damage, the segment's age kept
        fsops.set_mtime(cleaned, src.stat().st_mtime_ns)
    fsops.replace_segments([cleaned], [(src, a.reason)])


def _split_segment(a: Action, fsops: FsOps) -> None:
    """LocalLog.splitOverflowedSegment: each new segment's .log (its byte range of the old one),
    .index and .timeindex written as `.cleaned`, with the old segment's mtime, then Kafka's replace
    protocol, newest segment first, replaces the old segment's files (into the quarantine)."""
    from kafkalog_cli.storage.names import (
        INDEX_SUFFIX,
        LOG_SUFFIX,
        TIME_INDEX_SUFFIX,
        TXN_INDEX_SUFFIX,
        segment_file,
    )

    old_log = a.path
    d = old_log.parent
    base = int(old_log.name[:20])
    mtime = old_log.stat().st_mtime_ns
    cleaned: list[list[Path]] = []
    for piece in a.pieces or []:
        files = [
            segment_file(d, piece.base_offset, suf + CLEANED_SUFFIX)
            for suf in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
        ]
        fsops.copy_ranges(old_log, files[0], [(piece.start, piece.end)])
        fsops.write_atomic(files[1], piece.index)
        fsops.write_atomic(files[2], piece.time_index)
        fsops.set_mtime(files[0], mtime)
        cleaned.append(files)
    order = [f for files in reversed(cleaned) for f in files]  # changeFileSuffixes, newest first
    old = [
        (segment_file(d, base, suf), a.reason)
        for suf in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
    ]
    fsops.replace_segments(order, old)
