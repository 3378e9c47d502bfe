"""`kafkalog move-partition SRC_LOGDIR DST_LOGDIR --topic T --partition N`: options ->
ops.move_partition under both log dirs' locks -> the plan or the report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.commands.options import (
    InputPath,
    dry_run_option,
    follow_symlinks_option,
    format_option,
    quarantine_options,
    report_option,
)
from kafkalog_cli.errors import ExitCode


@click.command(
    "move-partition", short_help="Move a partition to another log dir of a stopped broker (JBOD)."
)
@click.argument("source", type=InputPath(path_type=Path))
@click.argument("destination", type=InputPath(path_type=Path))
@click.option(
    "--topic", required=True, metavar="TOPIC", help="The partition's topic (a name, not a pattern)."
)
@click.option(
    "--partition",
    required=True,
    type=click.IntRange(min=0),
    metavar="N",
    help="The partition number.",
)
@quarantine_options
@follow_symlinks_option
@dry_run_option
@format_option(
    "text: the plan or what was done, and a summary line. json: the run's JSON Lines (the partition, "
    "the destination log dir, the totals)."
)
@report_option
@one_line_errors
def move_partition(
    source,
    destination,
    topic,
    partition,
    quarantine_dir,
    no_quarantine,
    follow_symlinks,
    dry_run,
    fmt,
    report_path,
):
    """Move the partition TOPIC-N from the log dir SOURCE to the log dir DESTINATION of the same
    stopped broker (JBOD: a full or failing disk), as Kafka's alter-log-dirs move would, offline.

    Takes both log dirs' .lock (not with --dry-run), checks the destination's free space, then:
    copies the partition, fsynced, into the destination as the broker's own future replica
    (<topic>-<partition>.<uuid>-future, which a broker started meanwhile completes itself); gives
    the destination's recovery-point, log-start-offset, replication-offset and cleaner-offset
    checkpoints the partition's entries from the source's; renames the copy live; renames the
    source <topic>-<partition>.<uuid>-delete (the broker deletes it on its next start); removes
    the source's entries. New files take the source's mode, mtime and (as root) owner and group;
    overwritten checkpoint files are kept in the quarantine, whose folder `kafkalog quarantine
    restore` undoes the move with. On a full source disk the source needs renames only (its
    checkpoints keep their entries, which the broker drops). A run killed at any step is finished
    by running it again; see kafkalog-move-partition(1) for what the broker does meanwhile, and
    for Kafka 3.7+ KRaft JBOD (directory.id).

    Refused: a destination that holds the partition (unless it is this command's own identical
    copy of a killed run), log dirs of different brokers, a source not shut down cleanly into a
    destination that was, or with a .swap file (run recover first).

    \b
    Exit codes: 0 moved, or nothing to do (moved already); 1 a dry run with the move pending;
    2 usage or refused (see above);
    3 a damaged checkpoint file; 4 a missing log dir or partition, or a source partition linked
    out of its log dir (--follow-symlinks moves it); 5 a log dir is locked (a
    broker runs on it); 6 not enough space in the destination, or a write failed.
    """
    from kafkalog_cli.commands.change_run import emit_lines, finish_run
    from kafkalog_cli.ops import move_partition as ops
    from kafkalog_cli.ops.clean_shutdown import CleanShutdownMarker
    from kafkalog_cli.ops.runner import Outcome
    from kafkalog_cli.render import human
    from kafkalog_cli.render.change_report import RunLines
    from kafkalog_cli.storage.fsops import FsOps
    from kafkalog_cli.storage.links import link_out
    from kafkalog_cli.storage.lock import LogDirLock
    from kafkalog_cli.storage.names import TopicPartition
    from kafkalog_cli.storage.quarantine import quarantine_root
    from kafkalog_cli.storage.quarantine_writer import Quarantine

    tp = TopicPartition(topic, partition)
    root = quarantine_root(destination, quarantine_dir, no_quarantine)
    linked = None if follow_symlinks else link_out(source, Path(source) / str(tp))
    if linked is not None:
        raise linked.error()  # its dir, or a file in it, links out of the log dir: left as it is
    if dry_run:
        plan = ops.plan(source, destination, tp)
        report = {"dry_run": True, **plan.to_dict()}
    else:
        first, second = sorted([source, destination], key=lambda p: str(Path(p).resolve()))
        with (
            LogDirLock(first, follow_symlinks=follow_symlinks),
            LogDirLock(second, follow_symlinks=follow_symlinks),
        ):
            plan = ops.plan(source, destination, tp)
            fsops = FsOps(
                destination,
                Quarantine(root, "move-partition", other_log_dirs=(Path(source),)),
                follow_symlinks=follow_symlinks,
            )
            clean_shutdown = CleanShutdownMarker(destination)
            fsops.before_change = clean_shutdown.set_aside
            report = ops.apply(plan, fsops)
            marker = clean_shutdown.settle(plan, report, fsops)
        if marker:
            click.echo(f"kafkalog: note: {marker}", err=True)
    lines = RunLines("move-partition", dry_run=dry_run)
    emit_lines(
        fmt, lines.outcome(Outcome(plan, None if dry_run else report, report.get("quarantine")))
    )
    if fmt == "text":
        click.echo(_text(plan, report, dry_run, human))
    code = int(ExitCode.PROBLEMS) if dry_run and plan.actions else 0  # the one exit-code table
    finish_run(lines, fmt, report_path, code)
    if code:
        sys.exit(code)


def _text(plan, report: dict, dry_run: bool, human) -> str:
    from kafkalog_cli.ops.move_partition import MoveState

    lines = (
        [human.move_plan(plan)]
        if plan.actions or plan.findings
        else [f"move-partition {plan.topic_partition}: nothing to do ({plan.state.value})"]
    )
    lines += [f"  note: {n}" for n in plan.notes]
    if not dry_run and plan.actions and plan.state is MoveState.MOVED:
        lines.append(
            f"{plan.topic_partition} was in {plan.log_dir} already; its stale entries left the source's "
            f"checkpoints"
        )
    elif not dry_run and plan.actions:
        lines.append(
            f"moved {plan.topic_partition} to {plan.log_dir} ({plan.bytes_to_copy} bytes copied); the "
            f"source's -delete dir is deleted by the broker on its next start"
        )
        if report.get("quarantine"):
            lines.append(f"  overwritten checkpoint files kept in {report['quarantine']}")
    return "\n".join(lines)
