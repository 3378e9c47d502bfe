"""`kafkalog roll PATH...`: options -> ops.roll -> output."""

from __future__ import annotations

from pathlib import Path

import click

from kafkalog_cli.commands.change_run import report_run
from kafkalog_cli.commands.common import partition_groups
from kafkalog_cli.commands.options import (
    InputPath,
    change_options,
    now_or_clock,
    partition_filter_options,
    report_option,
)
from kafkalog_cli.ops import roll as ops
from kafkalog_cli.ops.runner import Operation
from kafkalog_cli.render import human


@click.command(
    "roll", short_help="Close each active segment and open a new one, as a broker rolls."
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--if-needed",
    is_flag=True,
    help="Roll only where Kafka's conditions hold at --now: segment.bytes, segment.ms "
    "(from the first batch's timestamp), a full index, or offset overflow.",
)
@partition_filter_options
@change_options
@report_option
def roll(
    paths,
    if_needed,
    only,
    configs,
    quarantine_dir,
    no_quarantine,
    follow_symlinks,
    dry_run,
    fmt,
    now_ms,
    report_path,
):
    """Close the active segment of each partition and open a new one at the log end offset, as a
    broker's roll does. Takes the log dir's .lock (not with --dry-run).

    The closed segment gets its final time-index entry and its indexes trimmed; a producer
    snapshot is written at the new base; the new segment's .index, .timeindex and .log are
    created empty, as a broker's clean shutdown leaves them. __cluster_metadata is never rolled.
    Only live partition dirs are rolled: a -future, -delete or -stray dir is left untouched,
    with a note on stderr.

    \b
    Exit codes: 0 rolled or nothing to roll; 1 --dry-run: something would be rolled; 2 usage; 3
    corrupt input; 4 bad path, or
    a partition linked out of the log dir (left unchanged, the others done: --follow-symlinks); 5
    the log dir is locked (a broker runs on it); 6 a change could not be written.
    Precedence: kafkalog --help.
    """
    groups = partition_groups(paths, only=only)
    opts = ops.RollOptions(if_needed=if_needed, now_ms=now_or_clock(now_ms))
    report_run(
        Operation("roll", ops.plan, opts, configs),
        groups,
        human.plan_outcome,
        fmt=fmt,
        report_path=report_path,
        dry_run=dry_run,
        quarantine_dir=quarantine_dir,
        no_quarantine=no_quarantine,
        follow_symlinks=follow_symlinks,
    )
