"""`kafkalog retain PATH...`: options -> ops.retain -> one line per partition (or none).

Made for cron: quiet unless -v, exit 0 whenever nothing failed (also when nothing was due), a
locked log dir skipped with its own exit code (5) while the others are still retained."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import click

from kafkalog_cli.commands.options import (change_options, echo_diagnostics, now_or_clock, partition_filter_options,
                                           report_option, run_log_dirs, write_report)
from kafkalog_cli.errors import ExitCode, KafkalogError, LockedError, exit_code_of
from kafkalog_cli.ops import retain as ops
from kafkalog_cli.ops.runner import Operation, Outcome
from kafkalog_cli.render import human
from kafkalog_cli.spark.cli_options import check_engine, engine_options


@click.command("retain", short_help="Delete segments past retention.ms or retention.bytes.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@partition_filter_options
@change_options
@click.option("--verbose", "-v", is_flag=True, help="Say what was done for every partition.")
@report_option
@engine_options
def command(paths, only, configs, quarantine_dir, no_quarantine, dry_run, fmt, now_ms, verbose, report_path, engine, master):
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
    a successful run prints nothing unless -v (what was deleted is in the quarantine's manifest).

    \b
    Exit codes: 0 done or nothing to do; 1 --dry-run: the plan would change something; 7 a deletion by time or size was refused, as a
    deciding config is unknown (everything else was done); 5 a log dir was locked (a broker runs
    on it) and skipped; 2 usage error, 3 corrupt input, 4 bad path, 6 write failure (these win
    over 7, 7 over 5, and 5 over 1).
    """
    from kafkalog_cli.commands.common import partition_groups

    check_engine(engine, master)
    groups = partition_groups(paths, only=only)   # retention works on current logs: -future/-delete/-stray noted
    operation = Operation("retain", ops.plan, ops.RetainOptions(now_ms=now_or_clock(now_ms)), configs)
    report_partitions(operation, groups, fmt=fmt, report_path=report_path,
                      text_lines=lambda outcome: human.retain_outcome(outcome, verbose), engine=engine,
                      master=master, dry_run=dry_run, quarantine_dir=quarantine_dir, no_quarantine=no_quarantine)


def report_partitions(operation: Operation, groups: dict, *, fmt: str, report_path: Path | None,
                      text_lines: Callable[[Outcome], list[str]], **run) -> None:
    """retain and delete-records: run each log dir (a locked or failing one does not stop the
    others; Spark: one task per log dir), print `text_lines` or one JSON object per partition,
    a line on stderr per refusal and per partition error, write --report, and exit with the
    worst code (errors.exit_code_of; a dry run that would change something is 1)."""
    codes: list[int] = []
    reports: list[dict] = []
    for log_dir, outcome in run_log_dirs(operation, groups, errors="return", **run):
        if isinstance(outcome, KafkalogError):
            e = outcome
            codes.append(int(e.exit_code))
            status = "locked" if isinstance(e, LockedError) else "error"
            click.echo(f"kafkalog: {log_dir}: skipped: {e}" if status == "locked" else f"kafkalog: {e}", err=True)
            failed = {"log_dir": str(log_dir), "status": status, "detail": str(e), "exit_code": int(e.exit_code)}
            reports.append(failed)
            if fmt == "json":
                click.echo(json.dumps(failed))
            continue
        reports.append(outcome.to_json())
        if echo_diagnostics(outcome):
            codes.append(int(ExitCode.CONFIG_UNKNOWN))
        if outcome.pending:
            codes.append(int(ExitCode.PROBLEMS))
        for summary in outcome.plan.partitions.values():
            if summary.get("status") == "error":
                codes.append(summary["exit_code"])
                click.echo(f"kafkalog: {summary['detail']}", err=True)
        _report(outcome, fmt, text_lines)
    write_report(report_path, reports)
    if exit_code_of(codes):
        click.get_current_context().exit(exit_code_of(codes))


def _report(outcome: Outcome, fmt: str, text_lines: Callable[[Outcome], list[str]]) -> None:
    if fmt == "json":
        for summary in outcome.plan.partitions.values():
            click.echo(json.dumps({"log_dir": str(outcome.plan.log_dir), **summary, "dry_run": outcome.dry_run,
                                   "quarantine": outcome.quarantine if summary.get("segments_deleted") else None}))
        return
    for line in text_lines(outcome):
        click.echo(line)
