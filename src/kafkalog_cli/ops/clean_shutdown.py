"""`.kafka_cleanshutdown` after a change: kept only where a broker that skips recovery loads what
kafkalog left as kafkalog left it.

In every Kafka version the marker's one effect on the load is that LogLoader skips recovery of
the whole log dir (3.7+ also reads its `{"version":0,"brokerEpoch":N}`, KIP-966, for the
eligible leader replicas). Without recovery the broker takes, per partition:

- the log end from the active segment's last offset-index entry, walking batch sizes only
  (LogSegment.readNextOffset: Segment.unrecovered_tail); a size below 14 there stops the broker;
- every .index and .timeindex as it is (LogSegment.sanityCheck checks neither), and the active
  segment's largest timestamp from its time index's last entry (close() appends it at shutdown);
- producer state from the latest snapshot, replayed to the log end; with no snapshot at all it
  starts empty (UnifiedLog.rebuildProducerState: reloadFromCleanShutdown);
- the leader epochs from leader-epoch-checkpoint (recovery would add those of the batches of the
  segments it recovers).

After a mutating run, the partitions whose files it changed are checked for each of those
against what a recovery of the same files gives (what kafkalog means the broker to serve). When
one differs, the marker goes (through fsops: into the quarantine, `kafkalog quarantine restore`
puts it back) and the broker recovers the dir on its next start; otherwise the file is not touched,
so its 3.7+ content stays byte for byte. Damage in files the run did not change is left as it
was: the broker skipped it before the run and skips it after. Batches are walked by size, not
CRC: kafkalog writes no batch that fails its CRC, and one it left in place is recover's finding
(`recover --all` recovers it), not a reason to make the broker truncate behind the user's back.
Below the recovery point's segment a recovery reads nothing either, so only the segments from it
on are compared (producer snapshots: the whole partition).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops.plan import Action, ActionKind, Plan
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import LogDir
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment

WHOLE = None  # a partition whose files all count as changed (a cleaned or moved one)


@dataclass
class MarkerVerdict:
    """Why the marker went, partition by partition (empty: it stays)."""

    problems: dict[str, str]

    @property
    def keep(self) -> bool:
        return not self.problems

    def reason(self) -> str:
        return "; ".join(f"{name}: {why}" for name, why in self.problems.items())


def changed_partitions(log_dir: Path, paths) -> dict[str, set[str] | None]:
    """The partition dirs of `log_dir` that `paths` (files a run wrote, renamed or removed) are
    in, each with the names of its changed files (a partition dir itself: WHOLE). Compared by
    real path: the run may have named the log dir through a symlink."""
    real_log_dir = os.path.realpath(log_dir)
    out: dict[str, set[str] | None] = {}
    for p in paths:
        if p is None:
            continue
        p = Path(p)
        parent = os.path.realpath(p.parent)
        if os.path.dirname(parent) == real_log_dir:
            files = out.setdefault(os.path.basename(parent), set())
            if files is not WHOLE:
                files.add(p.name)
        elif parent == real_log_dir and p.is_dir():
            out[p.name] = WHOLE
    return out


def judge(log_dir: Path, changed: dict[str, set[str] | None]) -> MarkerVerdict:
    """What a broker skipping recovery would load differently from a recovery, in each partition
    of `changed` (as changed_partitions gives them) that is still there."""
    log_dir = Path(log_dir)
    roots = LogDir(log_dir).checkpoints(strict=False)
    problems: dict[str, str] = {}
    for name in sorted(changed):
        d = log_dir / name
        if not d.is_dir():
            continue
        part = Partition.open(d)
        if part.topic_partition is None:
            continue
        part.checkpoints = roots.for_partition(part.topic_partition)
        try:
            why = skipped_recovery_problem(part, changed[name])
        except KafkalogError as e:
            why = f"{e.message} ({e.path or d})"
        if why is not None:
            problems[name] = why
    return MarkerVerdict(problems)


def skipped_recovery_problem(part: Partition, files: set[str] | None) -> str | None:
    """The first thing a broker that loads `part` without recovering it gets wrong, or None.
    `files`: the names of the files the run changed (WHOLE: all of them)."""
    from kafkalog_cli.ops.recover import load_failure
    from kafkalog_cli.storage.index_checks import index_rebuild_reason

    if not part.segments:
        return None

    def changed(s: Segment, *suffixes: str) -> bool:
        return files is WHOLE or any(s.file(suf).name in files for suf in suffixes)

    # below the recovery point's segment a recovery reads nothing either: both loads agree there
    first_recovered = part.segments[
        part.segment_index_for(part.checkpoints.recovery_point or 0)
    ].base_offset
    active = part.segments[-1]
    if changed(active, names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX):
        entry = active.last_offset_index_entry()
        with active.mapped() as buf:
            failure = load_failure(buf, entry[1] if entry else 0)
        if failure is not None:
            return f"segment {active.base_offset}: {failure}"
        skipped, recovered = active.unrecovered_tail(entry), active.recovery_walk(0, validate=False)
        if recovered.damage is not None:
            return (
                f"segment {active.base_offset}: {recovered.damage.message} at byte {recovered.valid_size}: "
                f"kept by a load that skips recovery, truncated by a recovery"
            )
        if skipped.next_offset != recovered.next_offset:
            return (
                f"segment {active.base_offset}: a load that skips recovery ends the log at "
                f"{skipped.next_offset} (from the offset index's last entry), a recovery at {recovered.next_offset}"
            )
        last = active.last_time_index_entry()
        if recovered.max_timestamp >= 0 and (last is None or last[0] < recovered.max_timestamp):
            return (
                f"segment {active.base_offset}: the time index's last entry "
                f"({'none' if last is None else last[0]}) is below the segment's largest timestamp "
                f"{recovered.max_timestamp}: a load that skips recovery takes the smaller one"
            )
    for s in part.segments:
        if s.base_offset < first_recovered or not changed(
            s, names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX
        ):
            continue
        if s is not active:
            tail = s.recovery_walk(0, validate=False)
            if tail.damage is not None:
                return (
                    f"segment {s.base_offset}: {tail.damage.message} at byte {tail.valid_size}: kept by a "
                    f"load that skips recovery"
                )
        with s.mapped() as buf:
            nxt = (
                s.unrecovered_tail(s.last_offset_index_entry()).next_offset
                if s is active
                else s.recovery_walk(0, validate=False).next_offset
            )
            defect = index_rebuild_reason(
                buf, s.base_offset, _read(s.index_path), _read(s.time_index_path), nxt
            )
        if defect is not None and not (s is active and defect.no_final_time_entry):
            return (
                f"segment {s.base_offset}: {defect.why}: a load that skips recovery keeps the index as it is, "
                f"a recovery rebuilds it"
            )
    if not part.snapshots:
        start = part.log_start_offset or 0
        for s in part.segments:
            pid = _first_producer(s, start)
            if pid is not None:
                return (
                    f"no producer snapshot, and the batch at offset {pid[1]} has producer id {pid[0]}: a load "
                    f"that skips recovery starts with an empty producer state, a recovery rebuilds it"
                )
    epochs = ckpt.read_epochs(part.path(names.LEADER_EPOCH_CHECKPOINT))
    latest = epochs[-1][0] if epochs else -1
    for s in part.segments:
        if s.base_offset < first_recovered or not changed(s, names.LOG_SUFFIX):
            continue
        epoch = _largest_epoch(s)
        if epoch > latest:
            return (
                f"segment {s.base_offset}: batches of leader epoch {epoch}, beyond leader-epoch-checkpoint's "
                f"latest ({latest}): a recovery adds it, a load that skips recovery does not"
            )
    return None


class CleanShutdownMarker:
    """The marker of one log dir through a run that changes it.

    `set_aside`, right before the run's first change, renames it to `<marker>.kafkalog-tmp`: a run
    killed at any instant then leaves a log dir the broker recovers in full on its next start (it
    ignores files at a log dir's root), never one it loads half changed without looking. `settle`,
    after the run, puts it back byte for byte, or removes it into the quarantine (`quarantine
    restore` reverses both steps: the marker is back under its name). A marker set aside by a
    killed run is settled by the next run on that log dir (a dry run names it), judged over every
    partition, since what the killed run changed is not known."""

    def __init__(self, log_dir: Path):
        self.log_dir = Path(log_dir)
        self.path = self.log_dir / names.CLEAN_SHUTDOWN_FILE
        self.aside = self.log_dir / names.CLEAN_SHUTDOWN_ASIDE
        # set aside by a killed run, and no marker since (a broker that started would have written one)
        self.left_by_killed_run = self.aside.exists() and not self.path.exists()

    def set_aside(self, fsops: FsOps) -> None:
        """FsOps.before_change: a journaled rename (restore reverses it). Compact's workers each
        call it: the first renames, under the lock of the log dir's shared files."""
        with getattr(fsops, "shared", None) or contextlib.nullcontext():
            if not self.left_by_killed_run and self.path.exists():
                fsops.rename(self.path, self.aside)

    def note_dry_run(self, plan) -> None:
        """A dry run names a marker that a killed run set aside, and what the next run does."""
        if self.left_by_killed_run:
            (plan if isinstance(plan, Plan) else plan.notes).note(
                self.log_dir.name,
                f"{self.aside.name}: the clean-shutdown marker, set aside by a kafkalog run that was "
                f"killed; the next run puts it back if every partition loads without recovery as with it, else "
                f"removes it (until then the broker recovers the log dir on start)",
                self.aside,
            )

    def settle(self, plan, report: dict, fsops: FsOps, judge_changes: bool = True) -> str | None:
        """After the run: put back, or removed (through `fsops`, kept in the quarantine) when
        `judge` finds a partition of those the run changed (its plan's actions, or the partitions
        compact cleaned; every partition after a killed run) that a skipped recovery would load
        otherwise. Where it goes, the plan and the report say why (a finding, and the removal among
        what changed). Returns the line saying it was removed, or None. Without `judge_changes`
        (recover, whose plan is the marker's load) only a killed run's marker is judged."""
        current = self.aside if self.aside.exists() and not self.path.exists() else self.path
        if not current.exists():
            return None
        changed = (
            self._all_partitions()
            if self.left_by_killed_run
            else self._changed(plan, report)
            if judge_changes
            else {}
        )
        verdict = judge(self.log_dir, changed) if changed else MarkerVerdict({})
        if verdict.keep:
            if current == self.path:
                return None
            fsops.rename(current, self.path)
            if not self.left_by_killed_run:
                return None  # this run's own set-aside: nothing changed for the broker
            why = (
                f"put back {names.CLEAN_SHUTDOWN_FILE}, set aside by a kafkalog run that was killed: every "
                f"partition loads without recovery as a recovery loads it"
            )
            action = Action(ActionKind.RENAME, current, why, target=self.path)
        else:
            why = (
                f"removed {names.CLEAN_SHUTDOWN_FILE}, with which the broker skips recovery and would load the "
                f"log dir otherwise than kafkalog left it ({verdict.reason()}); without it the broker recovers "
                f"the log dir on its next start"
            )
            fsops.delete(current, why)
            action = Action(ActionKind.DELETE, self.path, why)
        notes = plan if isinstance(plan, Plan) else plan.notes
        notes.note(self.log_dir.name, why, self.path)
        report.setdefault("findings", []).append(notes.findings[-1].to_dict())
        if isinstance(report.get("changed"), list):
            report["changed"].append(action.to_dict())
        report["quarantine"] = report.get("quarantine") or (
            str(fsops.quarantine.folder)
            if fsops.quarantine is not None and fsops.quarantine.folder
            else None
        )
        # a removal is said on stderr too; a put-back only in the plan and report (cron stays quiet)
        return why if action.kind is ActionKind.DELETE else None

    def _changed(self, plan, report: dict) -> dict[str, set[str] | None]:
        if isinstance(plan, Plan):
            changed = changed_partitions(
                self.log_dir, [p for a in plan.actions for p in (a.path, a.target)]
            )
            for a in plan.actions:
                if a.kind is ActionKind.SPLIT_SEGMENT and a.path.parent.name in changed:
                    changed[a.path.parent.name] = WHOLE
            return changed
        return {
            e["partition"]: WHOLE
            for e in report.get("cleaned", ())
            if isinstance(e, dict) and "partition" in e
        }

    def _all_partitions(self) -> dict[str, set[str] | None]:
        return {d.name: WHOLE for d in LogDir(self.log_dir).partition_dirs()}


def _read(path: Path) -> bytes:
    """The file's bytes, b"" when there is none; unreadable is an InputError."""
    raw = files.read_bytes_if_exists(path)
    return b"" if raw is None else raw


def _first_producer(s: Segment, start: int) -> tuple[int, int] | None:
    """(producer id, base offset) of the first idempotent or transactional batch at or above `start`."""
    with s.mapped() as buf:
        for b in iter_batches(buf):
            if b.magic >= 2 and b.producer_id >= 0 and b.last_offset >= start:
                return b.producer_id, b.base_offset
    return None


def _largest_epoch(s: Segment) -> int:
    with s.mapped() as buf:
        return max(
            (b.partition_leader_epoch for b in iter_batches(buf) if b.magic >= 2), default=-1
        )
