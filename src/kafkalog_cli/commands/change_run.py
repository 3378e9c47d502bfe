"""The run of a command that changes log dirs (recover, roll, retain, compact, delete-records,
move-partition, quarantine restore and prune): ops.runner over each log dir, its lines printed
as each log dir is done (render.change_report's JSON Lines, or text for people), its warnings and
refusals on stderr, the totals, --report FILE, and the exit code of the whole run.

Kept light: the ops are imported only when a command runs."""

from __future__ import annotations

from pathlib import Path

import click


def run_log_dirs(
    operation,
    groups: dict[Path, list[Path]],
    *,
    engine: str = "local",
    master: str | None = None,
    errors: str = "raise",
    **run,
):
    """(log dir, ops.runner.Outcome) for each log dir of `groups`, in order: run here one after
    the other (each yielded once done, so its output comes before the next one starts), or as
    one Spark task each. `run`: run_log_dir's dry_run, quarantine_dir, no_quarantine.
    errors="return": a log dir's KafkalogError is yielded in place of its Outcome."""
    import dataclasses

    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops.runner import run_log_dir

    # the topics --topic-config may name, and every option's usage error, before any log dir
    operation = dataclasses.replace(operation, configs=operation.configs.for_log_dirs(groups))
    if engine == "spark":
        from kafkalog_cli.spark.jobs import run_log_dirs_spark

        yield from zip(
            groups, run_log_dirs_spark(operation, groups, master=master, errors=errors, **run)
        )
        return
    for log_dir, parts in groups.items():
        try:
            outcome = run_log_dir(operation, log_dir, parts, **run)
        except KafkalogError as e:
            if errors == "raise":
                raise
            outcome = e
        yield log_dir, outcome


def report_run(
    operation,
    groups: dict[Path, list[Path]],
    text,
    *,
    fmt: str,
    report_path: Path | None = None,
    keep_going: bool = False,
    quiet: bool = False,
    **run,
) -> None:
    """Every command that changes log dirs: run each log dir, print its lines (render.change_report:
    a line per partition, then the log dir's) once it is done, or `text(outcome)` for people,
    then the totals line, or its one-line summary (not when `quiet`: retain under cron); append
    the run's lines to --report FILE. A locked or failing log dir: with `keep_going` (retain,
    delete-records) a line on stderr and the next log dir, else the run stops there (recover,
    roll, compact) after its lines are out, as the error. Exits with the worst code
    (errors.exit_code_of): 2 a partition refused as Kafka refuses it, 7 a deletion refused as a
    guess, 1 a dry run that would change something, or damage the plan names and leaves (bit rot),
    4 a partition left unchanged as it links out of the log dir (storage.links)."""
    from kafkalog_cli.errors import ExitCode, KafkalogError, LockedError, exit_code_of, one_line
    from kafkalog_cli.render.change_report import RunLines

    lines = RunLines(operation.name, dry_run=bool(run.get("dry_run")))
    codes: list[int] = []
    stopped = None
    for log_dir, outcome in run_log_dirs(operation, groups, errors="return", **run):
        if isinstance(outcome, KafkalogError):
            locked = isinstance(outcome, LockedError)
            codes.append(int(outcome.exit_code))
            emit_lines(fmt, [lines.failure(log_dir, outcome, locked)])
            if not keep_going:
                stopped = outcome
                break
            click.echo(
                f"kafkalog: {log_dir}: skipped: {outcome}" if locked else f"kafkalog: {outcome}",
                err=True,
            )
            continue
        if echo_diagnostics(outcome):
            codes.append(int(ExitCode.CONFIG_UNKNOWN))
        for link in outcome.left:  # a partition dir linked out of the log dir: left unchanged
            click.echo(f"kafkalog: {one_line(link.line())}", err=True)
            codes.append(int(ExitCode.INPUT))
        for line in outcome.kafka_refusals:
            click.echo(f"kafkalog: {line}", err=True)
            codes.append(int(ExitCode.REFUSED_BY_KAFKA))
        if outcome.pending or any(
            getattr(f, "kept_problem", False) for f in getattr(outcome.plan, "findings", ())
        ):
            codes.append(
                int(ExitCode.PROBLEMS)
            )  # a change pending, or damage left as the broker keeps it
        for partition in _partition_summaries(outcome):
            if partition.get("status") == "error":
                codes.append(partition["exit_code"])
                click.echo(f"kafkalog: {partition['detail']}", err=True)
        made = lines.outcome(outcome)
        if fmt == "json":
            emit_lines(fmt, made)
        else:
            shown = text(outcome)
            for line in [shown] if isinstance(shown, str) else shown:
                click.echo(line)
    code = int(stopped.exit_code) if stopped is not None else exit_code_of(codes)
    # a run stopped by an error: its one line says it all to people (the JSON still sums it up)
    finish_run(lines, fmt, report_path, code, quiet=quiet or stopped is not None)
    if stopped is not None:
        raise stopped
    if code:
        click.get_current_context().exit(code)


def _partition_summaries(outcome) -> list[dict]:
    partitions = getattr(outcome.plan, "partitions", None)
    return (
        [s for s in partitions.values() if isinstance(s, dict)]
        if isinstance(partitions, dict)
        else []
    )


def emit_lines(fmt: str, made: list[dict]) -> None:
    """--format json: the lines, as they are made."""
    if fmt == "json":
        import json

        for line in made:
            click.echo(json.dumps(line))


def finish_run(
    lines, fmt: str, report_path: Path | None, exit_code: int, quiet: bool = False
) -> None:
    """The totals line (json), or its summary for people (text, unless `quiet`); then the run's
    lines appended to --report FILE."""
    from kafkalog_cli.render.change_report import summary

    totals = lines.totals(exit_code)
    if fmt == "json":
        emit_lines(fmt, [totals])
    elif not quiet:
        click.echo(summary(totals))
    append_report(report_path, lines.lines)


def append_report(report_path: Path | None, lines: list[dict]) -> None:
    """--report FILE: the run's lines appended in one write (O_APPEND: whole, not interleaved with
    another run's, as far as the OS allows) and fdatasynced, so an hourly cron job keeps one file."""
    if report_path is None:
        return
    import json

    from kafkalog_cli.storage.fsops import FsOps

    fsops = FsOps(report_path.parent)
    fsops.fault_after = None  # a fault injected into the run's steps (tests) is not the report's
    fsops.bounds = None  # the user's own file, wherever it or a link there leads: no log dir
    fsops.append_line(report_path, "".join(json.dumps(line) + "\n" for line in lines).encode())


def echo_diagnostics(outcome) -> bool:
    """An outcome's lines for stderr: its log dir's damaged-metadata warning, then one line per
    partition whose deletion by config was refused. True when something was refused."""
    if outcome.warning:
        click.echo(f"kafkalog: warning: {outcome.warning}", err=True)
    pid = getattr(outcome, "lock_holder", None)
    if pid is not None:
        click.echo(
            f"kafkalog: note: {outcome.plan.log_dir}/.lock is held by process {pid} (a broker running on "
            f"this log dir?): a real run would stop there with exit 5",
            err=True,
        )
    if getattr(outcome, "marker_removed", None):
        click.echo(f"kafkalog: note: {outcome.marker_removed}", err=True)
    for line in outcome.refusals:
        click.echo(f"kafkalog: {line}", err=True)
    return bool(outcome.refusals)
