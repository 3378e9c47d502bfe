"""`kafkalog retain PATH...`: options -> ops.retain -> one line per partition (or none).

Made for cron: quiet unless -v, exit 0 whenever nothing failed (also when nothing was due), a
locked log dir skipped with its own exit code (5) while the others are still retained."""
from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.options import (config_options, dry_run_option, format_option, now_option,
                                           now_or_clock, quarantine_options, resolver_from_options)
from kafkalog_cli.errors import ExitCode, KafkalogError, LockedError
from kafkalog_cli.spark.cli_options import check_engine, engine_options
from kafkalog_cli.ops import retain as ops
from kafkalog_cli.ops.plan import Plan, apply
from kafkalog_cli.storage.fsops import FsOps, Quarantine, quarantine_root
from kafkalog_cli.storage.lock import LogDirLock


@click.command("retain", short_help="Delete segments past retention.ms or retention.bytes.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@config_options
@quarantine_options
@dry_run_option
@format_option("Output format.")
@now_option
@click.option("--verbose", "-v", is_flag=True, help="Say what was done for every partition.")
@engine_options
def command(paths, config_pairs, topic_config_items, server_properties, no_cluster_metadata,
            quarantine_dir, no_quarantine, dry_run, fmt, now_ms, verbose, engine, master):
    """Delete the segments a broker's retention would delete, offline.

    Follows Kafka's UnifiedLog.deleteOldSegments in its order: segments below the log start
    offset (every topic), then retention.bytes and retention.ms (topics whose cleanup.policy
    includes delete), oldest first, stopping at the first segment that must stay, and only below
    the high watermark. Then writes what the broker writes: log-start-offset-checkpoint, the
    leader-epoch-checkpoint truncated from the start, producer snapshots below the first segment
    removed. Topic configs come from the log dir's __cluster_metadata unless overridden.

    Takes each log dir's .lock (not with --dry-run); a locked log dir is skipped. Made for cron:
    a successful run prints nothing unless -v (what was deleted is in the quarantine's manifest).

    \b
    Exit codes: 0 done or nothing to do; 5 a log dir was locked (a broker runs on it) and
    skipped; 3 corrupt input, 4 bad path, 6 write failure (these win over 5).
    """
    from kafkalog_cli.ops.recover import partition_dirs_for

    check_engine(engine, master)
    groups = partition_dirs_for(paths)
    now = now_or_clock(now_ms)
    run_args = (now, config_pairs, topic_config_items, server_properties, no_cluster_metadata, quarantine_dir,
                no_quarantine, dry_run)
    if engine == "spark":  # one Spark task per log dir runs _run (lock, plan, apply) on an executor
        from kafkalog_cli.spark.engine import result, run_partitions

        ran = run_partitions(_run, list(groups.items()), engine="spark", master=master, args=run_args, star=True,
                             errors="return")
    codes: list[int] = []
    for i, (log_dir, parts) in enumerate(groups.items()):
        try:
            plan, quarantine = result(ran[i]) if engine == "spark" else _run(log_dir, parts, *run_args)
        except KafkalogError as e:
            codes.append(int(e.exit_code))
            status = "locked" if isinstance(e, LockedError) else "error"
            click.echo(f"kafkalog: {log_dir}: skipped: {e}" if status == "locked" else f"kafkalog: {e}", err=True)
            if fmt == "json":
                click.echo(json.dumps({"log_dir": str(log_dir), "status": status, "detail": str(e),
                                       "exit_code": int(e.exit_code)}))
            continue
        for summary in plan.partitions.values():
            if summary.get("status") == "error":
                codes.append(summary["exit_code"])
                click.echo(f"kafkalog: {summary['detail']}", err=True)
        _report(plan, quarantine, fmt, dry_run, verbose)
    failures = [c for c in codes if c != ExitCode.LOCKED]
    if codes:
        click.get_current_context().exit(failures[0] if failures else int(ExitCode.LOCKED))


def _run(log_dir: Path, parts: list[Path], now: int, config_pairs, topic_config_items, server_properties,
         no_cluster_metadata, quarantine_dir, no_quarantine, dry_run) -> tuple[Plan, str | None]:
    def make_plan() -> Plan:
        resolver = resolver_from_options(log_dir, config_pairs, topic_config_items, server_properties,
                                         no_cluster_metadata)
        return ops.plan(log_dir, parts, ops.RetainOptions(now_ms=now, resolver=resolver))

    root = quarantine_root(log_dir, quarantine_dir, no_quarantine)
    if dry_run:
        return make_plan(), None
    with LogDirLock(log_dir):
        plan = make_plan()        # planned under the lock: nobody changes the log dir meanwhile
        if plan.empty:
            return plan, None
        report = apply(plan, FsOps(log_dir, Quarantine(root, "retain")))
    return plan, report.get("quarantine")


def _report(plan: Plan, quarantine: str | None, fmt: str, dry_run: bool, verbose: bool) -> None:
    if fmt == "json":
        for summary in plan.partitions.values():
            click.echo(json.dumps({"log_dir": str(plan.log_dir), **summary, "dry_run": dry_run,
                                   "quarantine": quarantine if summary.get("segments_deleted") else None}))
        return
    if dry_run:
        click.echo(plan.render())
    if dry_run or verbose:
        for summary in plan.partitions.values():
            if verbose or summary.get("segments_deleted"):
                click.echo(describe(summary, dry_run))
        if quarantine:
            click.echo(f"removed files kept in {quarantine}")


def describe(summary: dict, dry_run: bool = False) -> str:
    """One line per partition: what went, why, and the new log start offset."""
    name, status = summary["partition"], summary.get("status")
    if status != "deleted":
        return f"{name}: {summary.get('detail') or status}"
    by_reason: dict[str, list[int]] = {}
    for s in summary["segments"]:
        by_reason.setdefault(s["detail"], []).append(s["base_offset"])
    why = "; ".join(f"{', '.join(map(str, bases))}: {reason}" for reason, bases in by_reason.items())
    verb = "would delete" if dry_run else "deleted"
    line = (f"{name}: {verb} {summary['segments_deleted']} segment(s), {summary['bytes_freed']} bytes "
            f"({why}); log start offset {summary['old_log_start_offset']} -> {summary['new_log_start_offset']}")
    if summary.get("rolled"):
        line += f"; rolled a new empty segment at {summary['new_log_start_offset']} first"
    return line
