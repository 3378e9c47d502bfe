"""Lock, plan, apply, report: what every mutating op does to one log dir, in one function.

    outcome = run_log_dir(Operation("roll", roll.plan, roll.RollOptions(now_ms=now)), log_dir, parts)

The commands call `run_log_dir` in this process, one log dir after another; `--engine spark`
runs it as one Spark task per log dir (spark/jobs.py). So an Operation is a plain value: the
op's module-level entry points and its options, picklable. It returns values and prints
nothing: render/human.py and the commands turn an Outcome into text or JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.config import (
    ClusterMetadata,
    ConfigResolver,
    KafkaVersion,
    MetadataState,
    parse_key_values,
    parse_topic_key_values,
    read_cluster_metadata,
    read_server_properties,
    versions_of,
)
from kafkalog_cli.ops.clean_shutdown import CleanShutdownMarker
from kafkalog_cli.ops.plan import ActionKind, Plan, apply, estimate_space
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.links import LinkOut, split_links_out
from kafkalog_cli.storage.lock import LogDirLock, lock_holder
from kafkalog_cli.storage.names import parse_partition_dir
from kafkalog_cli.storage.quarantine import quarantine_root
from kafkalog_cli.storage.quarantine_writer import Quarantine
from kafkalog_cli.storage.space import QuarantinePlace, Space


@dataclass(frozen=True)
class ConfigSources:
    """The topic configs a run was given (--config, --topic-config, --server-properties,
    --no-cluster-metadata, --assume-kafka-defaults). Resolved per log dir, where its __cluster_metadata is read: under
    the log dir's lock, on the machine that runs it."""

    config_pairs: tuple[str, ...] = ()
    topic_config_items: tuple[str, ...] = ()
    server_properties: Path | None = None
    no_cluster_metadata: bool = False
    topics: frozenset[str] | None = (
        None  # of every log dir the run processes: --topic-config's check
    )
    assume_kafka_defaults: bool = False
    kafka_version: str | None = None  # --kafka-version: the version that will load the dir next
    remote_log_metadata: tuple[Path, ...] = ()  # --remote-log-metadata
    log_dirs: tuple[Path, ...] = ()  # every log dir the run processes: where a metadata log is

    def for_log_dirs(self, groups: Mapping[Path, Iterable[Path]]) -> ConfigSources:
        """These sources with `topics` those of every partition dir of `groups`, checked: a bad
        --config, --topic-config (also a topic with no partition there) or --server-properties
        is a usage error before any log dir is touched."""
        topics = frozenset(
            tp.topic
            for parts in groups.values()
            for d in parts
            if (tp := parse_partition_dir(Path(d).name)) is not None
        )
        sources = dataclasses.replace(self, topics=topics, log_dirs=tuple(groups))
        parse_key_values(sources.config_pairs, "--config")
        parse_topic_key_values(sources.topic_config_items, sources.topics)
        if sources.server_properties is not None:
            read_server_properties(sources.server_properties)
        sources.stated_version()
        return sources

    def topic_overrides_topics(self) -> list[str]:
        return list(parse_topic_key_values(self.topic_config_items))

    def stated_version(self) -> KafkaVersion | None:
        from kafkalog_cli.config.versions import stated_version

        return stated_version(self.kafka_version) if self.kafka_version else None

    def resolver(self, log_dir: Path) -> ConfigResolver:
        """The resolver for one log dir; its `warning` is the one line to print when the log
        dir's __cluster_metadata is damaged."""
        if self.no_cluster_metadata:
            metadata = ClusterMetadata(MetadataState.IGNORED)
        else:
            # metadata.log.dir may be another of the log dirs given (JBOD)
            metadata = read_cluster_metadata(log_dir, self.log_dirs)
        resolver = ConfigResolver(
            kafka_versions=versions_of(log_dir, metadata, self.stated_version()),
            server_properties=read_server_properties(self.server_properties)
            if self.server_properties
            else None,
            cluster_metadata=metadata,
            overrides=parse_key_values(self.config_pairs, "--config"),
            topic_overrides=parse_topic_key_values(self.topic_config_items, self.topics),
            assume_kafka_defaults=self.assume_kafka_defaults,
            remote_log_metadata=tuple(self.remote_log_metadata),
        )
        resolver.check_version_bounds()
        resolver.check_retention_bounds(
            self.topics if self.topics is not None else self.topic_overrides_topics()
        )
        return resolver


@dataclass(frozen=True)
class Operation:
    """A mutating op as a picklable value. `plan` and `run` are module-level functions of ops/.

    plan(log_dir, partition_dirs, options) -> the plan (--dry-run, and before apply).
    run(log_dir, partition_dirs, options, fsops) -> (plan, report), for an op that plans and
    applies partition by partition in one pass (compact, over its --jobs workers); without it
    the plan is carried out by ops.plan.apply."""

    name: str  # the op, as the quarantine folder is named after it
    plan: Callable[..., Any]
    options: Any  # the op's options; `resolver` is filled in per log dir
    configs: ConfigSources = field(default_factory=ConfigSources)
    run: Callable[..., tuple[Any, dict]] | None = None
    # False for an op whose plan already is the load .kafka_cleanshutdown gives (recover plans the
    # broker's load without recovery under it): its changes never make the marker go, or the next
    # run, planning a recovery, would undo them (only a marker a killed run set aside is judged)
    judges_marker: bool = True

    def options_for(self, log_dir: Path) -> Any:
        return dataclasses.replace(self.options, resolver=self.configs.resolver(log_dir))


@dataclass
class Outcome:
    """One log dir's result: the plan, and unless it was a dry run the report of what changed
    (`quarantine`: where removed data was kept, if anywhere; `warning`: the one line about the
    log dir's damaged __cluster_metadata, printed by the command wherever this ran)."""

    plan: Any  # ops.plan.Plan, ops.retain.RetainPlan or ops.compact.CompactPlan
    report: dict | None = None  # None: a dry run, nothing changed
    quarantine: str | None = None
    warning: str | None = None
    space: Space | None = None  # a dry run's storage.space figures for the whole log dir
    lock_holder: int | None = None  # a dry run: the process holding the log dir's .lock, if any
    marker_removed: str | None = (
        None  # why the run removed .kafka_cleanshutdown (ops.clean_shutdown)
    )
    left: list[LinkOut] = field(
        default_factory=list
    )  # partitions left unchanged: a link out of the log dir

    @property
    def refusals(self) -> list[str]:
        """One line per partition whose deletion by config was refused (retain, compact)."""
        return list(getattr(self.plan, "refusals", ()))

    @property
    def kafka_refusals(self) -> list[str]:
        """One line per partition refused as Kafka itself refuses it (compact on a tiered topic)."""
        return list(getattr(self.plan, "kafka_refusals", ()))

    @property
    def dry_run(self) -> bool:
        return self.report is None

    @property
    def pending(self) -> bool:
        """A dry run whose plan would change something (the command exits 1)."""
        return self.dry_run and self.plan.pending

    def to_dict(self) -> dict:
        if self.report is not None:
            return self.report
        return {
            "dry_run": True,
            **self.plan.to_dict(),
            **(self.space.to_dict() if self.space else {}),
        }


def run_log_dir(
    operation: Operation,
    log_dir: Path,
    partition_dirs: list[Path],
    *,
    dry_run: bool = False,
    quarantine_dir: Path | None = None,
    no_quarantine: bool = False,
    follow_symlinks: bool = False,
) -> Outcome:
    """Plan `partition_dirs` of `log_dir` (a dry run takes no lock), or take the log dir's lock,
    plan under it (nobody changes the log dir meanwhile) and apply through fsops, removed data
    going to the quarantine. A partition dir that is, or holds, a symbolic link out of the log
    dir is left out of the plan (Outcome.left) unless `follow_symlinks` (storage.links); FsOps'
    gate refuses any change through one all the same. Module level, so a Spark task can run it."""
    log_dir = Path(log_dir)
    leave = (
        (lambda dirs: (list(dirs), []))
        if follow_symlinks
        else (lambda dirs: split_links_out(log_dir, dirs))
    )
    root = quarantine_root(log_dir, quarantine_dir, no_quarantine)
    place = QuarantinePlace.of(log_dir, root)
    if dry_run:
        partition_dirs, left = leave(partition_dirs)
        opts = operation.options_for(log_dir)
        plan = operation.plan(log_dir, partition_dirs, opts)
        CleanShutdownMarker(log_dir).note_dry_run(plan)
        space = None
        if isinstance(plan, Plan):
            _note_space_kept(plan, place, root)
            space = estimate_space(plan, place)
        return Outcome(
            plan,
            warning=opts.resolver.warning,
            space=space,
            lock_holder=lock_holder(log_dir),
            left=left,
        )
    with LogDirLock(log_dir, follow_symlinks=follow_symlinks):
        # --jobs workers of `run` work under this lock: they never take it themselves
        partition_dirs, left = leave(partition_dirs)
        opts = operation.options_for(log_dir)
        fsops = FsOps(log_dir, Quarantine(root, operation.name), follow_symlinks=follow_symlinks)
        marker = CleanShutdownMarker(log_dir)
        fsops.before_change = marker.set_aside
        if operation.run is not None:
            plan, report = operation.run(log_dir, partition_dirs, opts, fsops)
        else:
            plan = operation.plan(log_dir, partition_dirs, opts)
            _note_space_kept(plan, place, root)
            report = apply(plan, fsops)
        removed = marker.settle(plan, report, fsops, judge_changes=operation.judges_marker)
    return Outcome(
        plan,
        report,
        report.get("quarantine"),
        opts.resolver.warning,
        marker_removed=removed,
        left=left,
    )


FREES_SPACE = ("retain", "delete-records")  # the ops run to free space


def _note_space_kept(plan: Plan, place: QuarantinePlace, root: Path | None) -> None:
    """A plan that removes data, kept in a quarantine on the log dir's own file system, frees
    nothing on disk: the plan and the report say so, and how to free it."""
    if (
        plan.op in FREES_SPACE
        and place is QuarantinePlace.SAME_FILE_SYSTEM
        and any(a.kind in (ActionKind.DELETE, ActionKind.TRUNCATE) for a in plan.actions)
    ):
        plan.note(
            plan.log_dir.name,
            f"nothing is freed on disk: the quarantine {root} is on the log dir's file "
            f"system, where a removed file stays as a hard link (held_in_quarantine); to free the space, "
            f"`kafkalog quarantine prune` it later, or run with --quarantine DIR on another file system "
            f"or --no-quarantine",
        )
