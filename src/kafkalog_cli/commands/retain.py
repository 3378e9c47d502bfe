"""`kafkalog retain PATH...`: options -> ops.retain -> one line per partition (or none).

Made for cron: quiet off a terminal unless -v, exit 0 whenever nothing failed (also when nothing was due), a
locked log dir skipped with its own exit code (5) while the others are still retained."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafkalog_cli.commands.change_run import report_run
from kafkalog_cli.commands.options import (
    InputPath,
    change_options,
    now_or_clock,
    partition_filter_options,
    report_option,
)
from kafkalog_cli.ops import retain as ops
from kafkalog_cli.ops.runner import Operation
from kafkalog_cli.render import human
from kafkalog_cli.spark.cli_options import check_engine, engine_options


@click.command("retain", short_help="Delete segments past retention.ms or retention.bytes.")
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@partition_filter_options
@change_options
@click.option("--verbose", "-v", is_flag=True, help="Say what was done for every partition.")
@report_option
@engine_options
def retain(
    paths,
    only,
    configs,
    quarantine_dir,
    no_quarantine,
    follow_symlinks,
    dry_run,
    fmt,
    now_ms,
    verbose,
    report_path,
    engine,
    master,
):
    """Delete the segments a broker's retention would delete, offline.

    Follows Kafka's UnifiedLog.deleteOldSegments in its order: segments below the log start
    offset (every topic), then retention.bytes and retention.ms (topics whose cleanup.policy
    includes delete), oldest first, stopping at the first segment that must stay, and only below
    the high watermark (the replication-offset-checkpoint's; none: the log start offset, as the
    broker loads it). Then writes what the broker writes: log-start-offset-checkpoint, the
    leader-epoch-checkpoint truncated from the start, producer snapshots below the first segment
    removed. Topic configs come from the log dir's __cluster_metadata unless overridden.

    Never deletes on a guess: a partition whose cleanup.policy, retention.ms or retention.bytes
    cannot be read (no --server-properties, no readable topic config in __cluster_metadata, or
    damaged metadata) gets only the log-start-offset rule, and one line on stderr says which
    value is unknown and how to state it (--server-properties, --config, --topic-config, or
    --assume-kafka-defaults when the broker ran with Kafka's defaults).

    Takes each log dir's .lock (not with --dry-run); a locked log dir is skipped. Made for cron:
    a successful run prints one summary line on a terminal (segments deleted, bytes freed on disk
    and held in the quarantine, and where), and nothing under cron unless -v; --format json and
    --report FILE give the run's JSON Lines (kafkalog-retain(1)).

    \b
    Exit codes: 0 done or nothing to do; 1 --dry-run: the plan would change something; 7 a deletion
    by time or size was refused, as a
    deciding config is unknown (everything else was done); 5 a log dir was locked (a broker runs
    on it) and skipped; 2 usage error, 3 corrupt input, 4 bad path or a partition linked out of the
    log dir (left unchanged, the others done: --follow-symlinks), 6 write failure (these win
    over 7, 7 over 5, and 5 over 1).
    """
    from kafkalog_cli.commands.common import partition_groups

    check_engine(engine, master)
    groups = partition_groups(
        paths, only=only
    )  # retention works on current logs: -future/-delete/-stray noted
    operation = Operation(
        "retain", ops.plan, ops.RetainOptions(now_ms=now_or_clock(now_ms)), configs
    )
    # made for cron: a run without -v prints its summary line only on a terminal
    quiet = not (verbose or dry_run or sys.stdout.isatty())
    report_run(
        operation,
        groups,
        lambda outcome: human.retain_outcome(outcome, verbose),
        fmt=fmt,
        report_path=report_path,
        keep_going=True,
        quiet=quiet,
        engine=engine,
        master=master,
        dry_run=dry_run,
        quarantine_dir=quarantine_dir,
        no_quarantine=no_quarantine,
        follow_symlinks=follow_symlinks,
    )
