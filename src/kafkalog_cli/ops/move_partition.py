"""`move-partition`: move a partition from one log dir of a stopped broker to another (JBOD), so
that a kill at any step leaves log dirs the broker starts on and nothing is lost.

What the broker allows, from Kafka 3.3.1's LogManager.loadLogs/loadLog:
- every subdirectory of a log dir must parse as a partition's name, else the broker does not
  start (UnifiedLog.parseTopicPartitionName throws): a copy cannot be staged inside the log dir
  under a name of its own;
- two live dirs of one partition, in any log dirs, stop it too ("Duplicate log directories");
- `<topic>-<partition>.<uuid>-future` is a future replica being moved into that log dir: loaded
  beside the current one, and on start (ReplicaManager.applyDelta -> maybeAddLogDirFetchers) a
  ReplicaAlterLogDirsThread catches it up from the current log and replaces the current log with
  it (replaceCurrentWithFutureLog: the future dir renamed live, the old one renamed
  `.<uuid>-delete`, which the broker deletes after file.delete.delay.ms).

So the copy is staged as the broker's own future dir in the destination: at every instant of the
copy (whole files only: each is written to `<name>.kafkalog-tmp`, fsynced and renamed, partition
files before each segment's .log) the destination holds a future replica that the broker loads
and, started there, completes itself; it needs no other place on the destination's file system
(the parent of a mount point is another one). The steps:

1. the future dir, its files copied and fsynced (mode, owner, group and mtime of the source's);
2. the destination's recovery-point, log-start-offset, replication-offset and cleaner-offset
   checkpoints get the partition's entries from the source's (a stale entry there, KAFKA-8362,
   is replaced or removed); entries are keyed by topic-partition, so they hold for the future dir;
3. the future dir renamed live; 4. the source renamed `<topic>-<partition>.<uuid>-delete`;
5. the source's checkpoints lose the partition's entries.

Between 3 and 4 both copies are live, for one rename: a kill exactly there leaves the broker
refusing to start ("Duplicate log directories"), with both copies whole and identical, and this
command run again finishes the move. The other order would leave a future dir without a current
log, which the broker starts on by creating an empty current log and truncating the future one
to it: data lost. So that one instant is the price of never losing data. The source is never
deleted by this command: the `-delete` dir is the broker's own convention, deleted by the broker
on its next start (until then it can be renamed back); checkpoints it overwrites are kept in the
quarantine.
"""

from __future__ import annotations

import enum
import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.errors import CheckpointError, InputError, UsageError, WriteError
from kafkalog_cli.formats.checkpoints import parse_properties
from kafkalog_cli.ops.plan import Action, ActionKind, Plan
from kafkalog_cli.ops.plan import apply as apply_plan
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.files import check_readable
from kafkalog_cli.storage.fsops import TMP_SUFFIX, FsOps
from kafkalog_cli.storage.logdir import DirKind, OffsetCheckpoint, RootCheckpoints, dir_kind
from kafkalog_cli.storage.names import PartitionDirKind, TopicPartition, parse_partition_dir_name
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.quarantine import PRUNING_SUFFIX

CHECKPOINTS = (
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_CHECKPOINT,
    names.CLEANER_CHECKPOINT,
)
_META_FILES = (names.PARTITION_METADATA, names.LEADER_EPOCH_CHECKPOINT)
_COPIED_SUFFIXES = (*names.SEGMENT_SUFFIXES, names.SNAPSHOT_SUFFIX)


class MoveState(str, enum.Enum):
    """Where a (possibly interrupted) move stands, found from the two log dirs."""

    FRESH = "move"  # the partition is live in the source only
    RESUME = "resume"  # ... and a future dir of ours is in the destination
    SWITCHING = "finish: both copies live"  # killed between the two renames
    MOVED = "moved"  # live in the destination only


@dataclass
class MovePlan(Plan):
    """The Plan (its log_dir is the destination), and what a dry run shows besides."""

    source_log_dir: Path = Path()
    topic_partition: TopicPartition | None = None
    state: MoveState = MoveState.FRESH
    bytes_to_copy: int = 0
    free_bytes: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = super().to_dict()
        out.update(
            source_log_dir=str(self.source_log_dir),
            state=self.state.value,
            bytes_to_copy=self.bytes_to_copy,
            free_bytes=self.free_bytes,
            notes=self.notes,
        )
        return out


# ------------------------------------------------------------------ the two log dirs
def _log_dir(path: Path, role: str) -> Path:
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"the {role} log dir is not a directory", path=str(path))
    if dir_kind(path) is DirKind.PARTITION_DIR:
        raise UsageError(
            f"{path} is a partition dir; give the {role} log dir (the broker's log.dirs entry)"
        )
    return path


def _meta(log_dir: Path) -> dict[str, str] | None:
    f = log_dir / names.META_PROPERTIES
    raw = files.read_bytes_if_exists(f)
    return None if raw is None else parse_properties(raw, path=str(f))


def check_same_broker(src: Path, dst: Path, notes: list[str]) -> None:
    """Both log dirs must be one broker's: same cluster.id and node.id/broker.id where both say.
    A KRaft JBOD dir (meta.properties version 1 with directory.id, Kafka 3.7+) is noted: its
    partition's directory assignment in the metadata names the source's directory.id until the
    broker reports the move (see the man page)."""
    a, b = _meta(src), _meta(dst)
    if a is not None and b is None:
        raise UsageError(
            f"{dst} has no meta.properties while {src} has one: it is not a log dir of this broker "
            f"(format it with kafka-storage.sh, or add it to log.dirs and start the broker once)"
        )
    if a is None or b is None:
        return
    from kafkalog_cli.formats.meta_properties import MetaProperties

    ids = {
        d: MetaProperties.node_id_in(m, path=str(d / names.META_PROPERTIES))
        for d, m in ((src, a), (dst, b))
    }
    for key in ("cluster.id", "node.id", "broker.id"):
        same = (
            a.get(key) == b.get(key) if key == "cluster.id" else ids[src] == ids[dst]
        )  # node ids as ints
        if key in a and key in b and not same:
            raise UsageError(
                f"{src} and {dst} belong to different brokers ({key} {a[key]} and {b[key]} in "
                f"meta.properties): move-partition moves a partition between log dirs of one broker"
            )
    ida, idb = a.get("directory.id"), b.get("directory.id")
    if ida or idb:
        notes.append(
            f"KRaft JBOD (meta.properties directory.id: source {ida}, destination {idb}): the metadata "
            f"assigns this replica to directory {ida} until the broker, on start, finds it in {idb} and "
            f"reports it to the controller (AssignReplicasToDirs); start it with both dirs in log.dirs "
            f"and the controller quorum reachable, then check the partition's directory"
        )
        if ida and idb and ida == idb:
            raise UsageError(
                f"{src} and {dst} have the same directory.id {ida}: one is a copy of the other, "
                f"which a Kafka 3.7+ broker refuses to start on"
            )


def _partition_dirs(log_dir: Path, tp: TopicPartition) -> dict[PartitionDirKind, list[Path]]:
    out: dict[PartitionDirKind, list[Path]] = {}
    with os.scandir(log_dir) as it:
        for e in it:
            parsed = parse_partition_dir_name(e.name)
            if parsed is not None and parsed.topic_partition == tp and e.is_dir():
                out.setdefault(parsed.kind, []).append(Path(e.path))
    return out


def _files(d: Path) -> list[Path]:
    """The files to copy, in an order where each prefix loads: partition.metadata and
    leader-epoch-checkpoint, the producer snapshots, then per segment its indexes before its
    .log (a .log without its indexes is rebuilt; indexes without their .log are orphans the
    loader deletes)."""
    out = []
    for n in _META_FILES:
        if (d / n).exists():
            out.append(d / n)
    snaps = []
    segs: dict[int, list[Path]] = {}  # a segment's files, by its base offset
    for f in d.iterdir():
        o = names.offset_from_name(f.name)
        if o is None or f.name[20:] not in _COPIED_SUFFIXES:
            continue  # .deleted and .cleaned files: the broker deletes them when it loads the log
        if f.name.endswith(names.SNAPSHOT_SUFFIX):
            snaps.append((o, f))
        else:
            segs.setdefault(o, []).append(f)
    out += [f for _, f in sorted(snaps)]
    for o in sorted(segs):
        out += sorted(segs[o], key=lambda f: (f.name.endswith(names.LOG_SUFFIX), f.name))
    return out


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
    except FileNotFoundError:
        return False
    return _sha256(a) == _sha256(b)


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with files.opened(p) as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def staging_root(log_dir: Path) -> Path | None:
    """Where a copy into `log_dir` is staged: `<log dir>/../.kafkalog-staging/<log dir name>/`,
    outside every log dir and on the log dir's file system (one rename moves it in); None when
    the log dir is a mount point (its parent is another file system)."""
    real = Path(os.path.realpath(log_dir))
    try:
        if os.stat(real).st_dev != os.stat(real.parent).st_dev:
            return None
    except OSError:
        return None
    return names.staging_dir(real)


def _glob(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in name)


def _is_prefix(copy: Path, source: Path) -> bool:
    """Every file of `copy` (but a partial tmp file) is the source's file of that name."""
    return all(
        f.name.endswith(TMP_SUFFIX) or _same_file(source / f.name, f) for f in copy.iterdir()
    )


def _check_prefix(future: Path, source: Path, p: MovePlan, name: str) -> None:
    if not _is_prefix(future, source):
        raise UsageError(
            f"{future} is a future replica that differs from the source: the broker began a move of "
            f"its own, or extended it; start the broker to let it finish, or remove that dir"
        )
    p.state = MoveState.RESUME
    p.note(name, f"resuming: the future dir {future.name} holds the copy or part of it", future)
    for f in future.iterdir():
        if f.name.endswith(TMP_SUFFIX):
            p.add(Action(ActionKind.DELETE, f, "a partial copy of a killed run", name))


def _refuse_unclean_source(src_dir: Path, dst: Path) -> None:
    """What the broker would change in the source on its next start must not travel as it is: a
    log dir's clean shutdown is per log dir, so a copy of an unrecovered log into a cleanly shut
    down destination would never be recovered. (Into a destination without the clean-shutdown
    file it is recovered there, from the recovery point that moves with it, as in the source.)"""
    part = Partition.open(src_dir)
    swaps = [n for n in part.temp_files if n.endswith(names.SWAP_SUFFIX)]
    if swaps:
        raise UsageError(
            f"{src_dir} holds .swap files of an interrupted segment replacement ({', '.join(swaps[:3])}), "
            f"which only the broker's load finishes: run `kafkalog recover` on its log dir first"
        )
    if (
        not (src_dir.parent / names.CLEAN_SHUTDOWN_FILE).exists()
        and (dst / names.CLEAN_SHUTDOWN_FILE).exists()
    ):
        raise UsageError(
            f"{src_dir.parent} was not shut down cleanly (no {names.CLEAN_SHUTDOWN_FILE}) and {dst} was: "
            f"the broker would load the copy without the recovery it needs; run `kafkalog recover "
            f"{src_dir.parent}` first, or start and stop the broker"
        )
    if not part.segments:
        raise InputError("no segment (.log) in the partition dir", path=str(src_dir))


# ------------------------------------------------------------------ the plan
def plan(
    source_log_dir: Path, dest_log_dir: Path, tp: TopicPartition, future_id: str | None = None
) -> MovePlan:
    """The move of `tp` from one log dir to the other, from wherever a killed run left it: done
    but for the source's checkpoints (MOVED), both copies live (SWITCHING), or the copy to make
    or finish, staged outside the destination or as its future dir, then the two renames."""
    src, dst = _log_dir(source_log_dir, "source"), _log_dir(dest_log_dir, "destination")
    _refuse_same_dir_or_metadata(src, dst, tp)
    name = str(tp)
    p = MovePlan("move-partition", dst, source_log_dir=src, topic_partition=tp)
    check_same_broker(src, dst, p.notes)
    s_dirs, d_dirs = _partition_dirs(src, tp), _partition_dirs(dst, tp)
    live_src = next(iter(s_dirs.get(PartitionDirKind.LIVE, [])), None)
    live_dst = next(iter(d_dirs.get(PartitionDirKind.LIVE, [])), None)
    futures = d_dirs.get(PartitionDirKind.FUTURE, [])
    _refuse_future_dirs(src, dst, tp, s_dirs, futures)
    roots = RootCheckpoints.read(src, strict=True), RootCheckpoints.read(dst, strict=True)
    if live_src is None:
        if live_dst is not None:
            return _plan_finish(p, tp, roots, live_dst)
        raise InputError(f"no partition dir of {tp} in the source log dir", path=str(src))
    _refuse_unclean_source(live_src, dst)
    files = _files_to_copy(p, live_src)
    if live_dst is not None:
        return _plan_switch(p, tp, roots, live_src, live_dst, files, futures)
    staged, target = _staging(p, live_src, futures, future_id)
    for f in files:
        if not (staged / f.name).exists():
            p.add(
                Action(
                    ActionKind.COPY_FILE,
                    staged / f.name,
                    "copied and fsynced",
                    name,
                    source=f,
                    size=f.stat().st_size,
                )
            )
            p.bytes_to_copy += f.stat().st_size
    # the entries first: a future dir appears with the recovery point, log start offset, high
    # watermark and cleaner offset it is loaded with (keyed by topic-partition, so they hold for it)
    _checkpoint_actions(p, *roots, tp, name, dst_only=True)
    if staged != target:
        p.add(
            Action(
                ActionKind.RENAME_DIR,
                staged,
                "the whole copy into the destination, as the broker's own "
                "future replica (which a broker started now would finish moving itself)",
                name,
                target=target,
            )
        )
    _note_space(p)
    p.add(
        Action(
            ActionKind.RENAME_DIR,
            target,
            "the copy becomes the partition's live dir",
            name,
            target=dst / name,
        )
    )
    _switch_source(p, live_src, name)
    _checkpoint_actions(p, *roots, tp, name, src_only=True)
    _remove_staging_once_empty(p, dst, name)
    p.partitions[name] = _summary(p, tp, live_src, dst / name)
    return p


def _refuse_same_dir_or_metadata(src: Path, dst: Path, tp: TopicPartition) -> None:
    """UsageError for a move into the log dir it comes from, or of the KRaft metadata log."""
    if os.path.realpath(src) == os.path.realpath(dst):
        raise UsageError(f"the source and the destination are the same log dir ({src})")
    if tp.topic == "__cluster_metadata":
        raise UsageError(
            "__cluster_metadata is the KRaft metadata log, which the raft layer keeps in "
            "metadata.log.dir (LogManager never loads it): to move it, move the dir and change that "
            "setting, not the partition"
        )


def _refuse_future_dirs(
    src: Path,
    dst: Path,
    tp: TopicPartition,
    s_dirs: dict[PartitionDirKind, list[Path]],
    futures: list[Path],
) -> None:
    """UsageError for a future replica in the source (a move into it under way) or more than one
    in the destination (the broker refuses to start on them)."""
    if s_dirs.get(PartitionDirKind.FUTURE):
        raise UsageError(
            f"{src} holds a future replica of {tp} ({s_dirs[PartitionDirKind.FUTURE][0].name}): a move "
            f"into it is under way; start the broker to let it finish, or remove that dir"
        )
    if len(futures) > 1:
        raise UsageError(
            f"{dst} holds {len(futures)} future dirs of {tp}; the broker refuses to start on that "
            f"(Duplicate log directories): remove all but one"
        )


def _plan_finish(
    p: MovePlan, tp: TopicPartition, roots: tuple[RootCheckpoints, RootCheckpoints], live_dst: Path
) -> MovePlan:
    """MOVED: the partition is live in the destination only; what is left is the source's
    checkpoint entries and the staging dir."""
    name = str(tp)
    p.state = MoveState.MOVED
    _checkpoint_actions(p, *roots, tp, name, finish_only=True)
    _remove_staging_once_empty(p, p.log_dir, name)
    p.partitions[name] = _summary(p, tp, None, live_dst)
    return p


def _files_to_copy(p: MovePlan, live_src: Path) -> list[Path]:
    """The source's files the copy takes, each checked readable (what cannot be copied stops the
    move before anything is staged); the others named in a note."""
    files = _files(live_src)
    for f in files:
        check_readable(f)
    left = sorted(f.name for f in live_src.iterdir() if f not in files)
    if left:
        p.notes.append(
            f"not copied: {', '.join(left[:5])}{' ...' if len(left) > 5 else ''} (files the broker deletes "
            f"when it loads the log: .deleted, .cleaned; kafkalog's interrupted writes)"
        )
    return files


def _plan_switch(
    p: MovePlan,
    tp: TopicPartition,
    roots: tuple[RootCheckpoints, RootCheckpoints],
    live_src: Path,
    live_dst: Path,
    files: list[Path],
    futures: list[Path],
) -> MovePlan:
    """SWITCHING: both log dirs hold a live copy. Identical ones are a move killed between its
    two renames, finished here; any other copy in the destination is refused (no merge)."""
    name = str(tp)
    theirs = sorted(f.name for f in live_dst.iterdir())
    if (
        futures
        or theirs != sorted(f.name for f in files)
        or not all(_same_file(f, live_dst / f.name) for f in files)
    ):
        raise UsageError(
            f"the destination holds {tp} already ({live_dst}): move-partition does not merge two "
            f"copies; the broker would refuse to start on both (Duplicate log directories)"
        )
    p.state = MoveState.SWITCHING
    p.note(
        name,
        "both log dirs hold identical live copies: a move was killed between its two renames; "
        "finishing it",
        live_dst,
    )
    _checkpoint_actions(p, *roots, tp, name, dst_only=True)
    _switch_source(p, live_src, name)
    _checkpoint_actions(p, *roots, tp, name, src_only=True)
    _remove_staging_once_empty(p, p.log_dir, name)
    p.partitions[name] = _summary(p, tp, live_src, live_dst)
    return p


def _staging(
    p: MovePlan, live_src: Path, futures: list[Path], future_id: str | None
) -> tuple[Path, Path]:
    """(staged, target): where the copy is made, and the future dir it becomes in the destination
    (the same dir when it is staged in place). A future dir of the partition there is resumed
    (this command's, or a move the broker began, when it holds nothing but the source's files);
    else the copy is staged in the destination's staging dir, resuming a copy a killed run
    staged there and removing stale ones, or, on a mount point, in place."""
    dst, tp, name = p.log_dir, p.topic_partition, str(p.topic_partition)
    future_name = f"{tp}.{future_id or uuid.uuid4().hex}-future"
    if futures:
        target = futures[0]
        _check_prefix(target, live_src, p, name)
        return target, target
    root = staging_root(dst)
    staged = None
    if root is None:
        target = staged = dst / future_name
        p.notes.append(
            f"{dst} is a mount point: the copy is staged in it as the future dir {future_name} "
            f"(a broker started on a partial copy completes it itself; run this command again)"
        )
    else:
        for old in sorted(root.glob(f"{_glob(str(tp))}.*-future")) if root.is_dir() else []:
            if staged is None and _is_prefix(old, live_src):
                staged = old
                p.state = MoveState.RESUME
                p.note(name, f"resuming the copy staged in {old}", old)
            else:
                p.add(
                    Action(ActionKind.REMOVE_DIR, old, "a stale staged copy of a killed run", name)
                )
        for old in (
            sorted(root.glob(f".{_glob(str(tp))}.*-future{PRUNING_SUFFIX}"))
            if root.is_dir()
            else []
        ):
            p.add(Action(ActionKind.REMOVE_DIR, old, "a stale staged copy, half removed", name))
        target = dst / (staged.name if staged is not None else future_name)
        if staged is None:
            staged = root / future_name
    if not staged.exists():
        p.add(
            Action(
                ActionKind.MAKE_DIR,
                staged,
                "the copy, staged outside the log dir on its file system "
                "(the broker stops on an unknown dir inside it)"
                if staged != target
                else "the copy, staged as the broker's own future replica",
                name,
                source=live_src,
            )
        )
    for f in staged.iterdir() if staged.exists() else []:
        if f.name.endswith(TMP_SUFFIX):
            p.add(Action(ActionKind.DELETE, f, "a partial copy of a killed run", name))
    return staged, target


def _note_space(p: MovePlan) -> None:
    """The destination's free bytes, and a note when the copy needs more."""
    try:
        p.free_bytes = shutil.disk_usage(p.log_dir).free
    except OSError:
        p.free_bytes = None
    if p.free_bytes is not None and p.bytes_to_copy > p.free_bytes:
        p.note(
            str(p.topic_partition),
            f"not enough space in the destination: {p.bytes_to_copy} bytes to copy, "
            f"{p.free_bytes} free",
            p.log_dir,
        )


def _remove_staging_once_empty(p: MovePlan, dst: Path, name: str) -> None:
    """The staging dir (and `.kafkalog-staging` above it) removed once the plan has emptied it:
    each one rmdir, so a kill leaves it empty, and the next run (of any state) removes it."""
    root = staging_root(dst)
    if root is None:
        return
    gone = {a.path for a in p.actions if a.kind in (ActionKind.RENAME_DIR, ActionKind.REMOVE_DIR)}
    made = any(a.kind is ActionKind.MAKE_DIR and a.path.parent == root for a in p.actions)
    left = {c for c in root.iterdir()} - gone if root.is_dir() else set()
    if left or not (made or root.is_dir()):
        return
    p.add(
        Action(
            ActionKind.REMOVE_EMPTY_DIR,
            root,
            "the staging dir, empty once the copy is in place",
            name,
        )
    )
    others = [c for c in root.parent.iterdir() if c != root] if root.parent.is_dir() else []
    if not others:
        p.add(
            Action(
                ActionKind.REMOVE_EMPTY_DIR, root.parent, f"{names.STAGING_DIRNAME}, empty", name
            )
        )


def _switch_source(p: MovePlan, live_src: Path, name: str) -> None:
    p.add(
        Action(
            ActionKind.RENAME_DIR,
            live_src,
            "the source, left for the broker to delete on its next start (its -delete convention)",
            name,
            target=live_src.with_name(f"{name}.{uuid.uuid4().hex}-delete"),
        )
    )


def _checkpoint_actions(
    p: MovePlan,
    src: RootCheckpoints,
    dst: RootCheckpoints,
    tp: TopicPartition,
    name: str,
    dst_only: bool = False,
    src_only: bool = False,
    finish_only: bool = False,
) -> None:
    """The destination's checkpoints get the source's entries for `tp` (or lose a stale one); the
    source's lose theirs. `finish_only`: the move is done but for the source's checkpoints."""
    key = (tp.topic, tp.partition)
    pairs = list(
        zip(
            CHECKPOINTS,
            (src.recovery_points, src.log_start_offsets, src.high_watermarks, src.cleaner_offsets),
            (dst.recovery_points, dst.log_start_offsets, dst.high_watermarks, dst.cleaner_offsets),
        )
    )
    if not src_only and not finish_only:
        for file, s, d in pairs:
            want = dict(d.offsets)
            if key in s.offsets:
                want[key] = s.offsets[key]
            else:
                want.pop(key, None)
            if want != d.offsets or (key in want and not d.exists):
                like = d.path if d.exists else (s.path if s.exists else None)
                what = (
                    f"{tp} {s.offsets[key]}"
                    if key in s.offsets
                    else f"no entry for {tp} (a stale one removed)"
                )
                p.add(
                    Action(
                        ActionKind.UPDATE_CHECKPOINT,
                        d.path,
                        f"{what}, from the source's {file}",
                        name,
                        data=_encode(want, d),
                        source=like,
                    )
                )
    if not dst_only:
        rewrites = [
            Action(
                ActionKind.UPDATE_CHECKPOINT,
                s.path,
                f"{tp} moved out of this log dir",
                name,
                data=_encode({k: v for k, v in s.offsets.items() if k != key}, s),
                source=s.path,
            )
            for file, s, _ in pairs
            if key in s.offsets
        ]
        if rewrites and not _room_for(rewrites, rewrites[0].path.parent):
            # LogManager writes each log dir's checkpoints from the logs in that dir alone
            # (checkpointRecoveryOffsetsInDir, checkpointLogStartOffsetsInDir over logsByDir;
            # ReplicaManager.checkpointHighWatermarks groups by the log's parent dir), so
            # the broker drops these entries itself at its first checkpoint; a full source (the
            # reason for the move) needs no new block from this command
            p.notes.append(
                f"the source's checkpoints keep their entries for {tp}: no space for new copies of "
                f"them in {rewrites[0].path.parent}; the broker drops them at its next checkpoint"
            )
            return
        for a in rewrites:
            p.add(a)


def _room_for(actions: list[Action], directory: Path) -> bool:
    """The file system of `directory` has the blocks the new files take (each written beside the
    file it replaces, which the quarantine may keep: counted all at once)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return True
    block = st.f_frsize or 4096
    need = sum(-(-len(a.data or b"") // block) * block for a in actions)
    return need <= st.f_bavail * block


def _encode(offsets: dict, c: OffsetCheckpoint) -> bytes:
    try:
        return ckpt.encode_offsets(
            offsets, order=[k for k in c.order if k in offsets], kind=c.path.name
        )
    except ValueError as e:
        raise CheckpointError(str(e), path=str(c.path)) from None


def _summary(p: MovePlan, tp: TopicPartition, live_src: Path | None, target: Path) -> dict:
    return {
        "topic": tp.topic,
        "partition": tp.partition,
        "state": p.state.value,
        "source": None if live_src is None else str(live_src),
        "destination": str(target),
        "bytes_to_copy": p.bytes_to_copy,
        "free_bytes": p.free_bytes,
    }


def apply(p: MovePlan, fsops: FsOps) -> dict:
    """Carry the plan out; the space is checked first (exit 6 before anything is written)."""
    if p.free_bytes is not None and p.bytes_to_copy > p.free_bytes:
        raise WriteError(
            f"no space left on device: {p.bytes_to_copy} bytes to copy, {p.free_bytes} free",
            path=str(p.log_dir),
        )
    if fsops.bounds is not None:  # the move changes the source and its staging dir too
        fsops.bounds = fsops.bounds.including(
            p.source_log_dir, *filter(None, [staging_root(p.log_dir)])
        )
    report = apply_plan(p, fsops)
    report.update(
        source_log_dir=str(p.source_log_dir),
        state=p.state.value,
        bytes_copied=p.bytes_to_copy,
        notes=p.notes,
    )
    return report
