"""`kafkalog roll PATH...`: options -> ops.roll -> output."""
from __future__ import annotations

from pathlib import Path

import click

from kafkalog_cli.commands.options import (config_options, dry_run_option, format_option, now_option,
                                           now_or_clock, quarantine_options, resolver_from_options)
from kafkalog_cli.commands.runner import run_plans
from kafkalog_cli.ops import roll as ops


@click.command("roll", short_help="Close each active segment and open a new one, as a broker rolls.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--if-needed", is_flag=True,
              help="Roll only where Kafka's conditions hold at --now: segment.bytes, segment.ms "
                   "(from the first batch's timestamp), a full index, or offset overflow.")
@config_options
@quarantine_options
@dry_run_option
@format_option("Output format.")
@now_option
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the JSON report to this file.")
def command(paths, if_needed, config_pairs, topic_config_items, server_properties, no_cluster_metadata,
            quarantine_dir, no_quarantine, dry_run, fmt, now_ms, report_path):
    """Close the active segment of each partition and open a new one at the log end offset, as a
    broker's roll does. Takes the log dir's .lock (not with --dry-run).

    The closed segment gets its final time-index entry and its indexes trimmed; a producer
    snapshot is written at the new base; the new segment's .index, .timeindex and .log are
    created empty, as a broker's clean shutdown leaves them. __cluster_metadata is never rolled.

    \b
    Exit codes: 0 rolled or nothing to roll; 2 usage; 3 corrupt input; 4 bad path;
    5 the log dir is locked (a broker runs on it); 6 a change could not be written.
    """
    groups = ops.partition_dirs_for(paths)
    now = now_or_clock(now_ms)

    def make_plan(log_dir, parts):
        resolver = resolver_from_options(log_dir, config_pairs, topic_config_items, server_properties,
                                         no_cluster_metadata)
        return ops.plan(log_dir, parts, ops.RollOptions(if_needed=if_needed, now_ms=now, resolver=resolver))

    run_plans("roll", groups, make_plan, dry_run=dry_run, fmt=fmt, quarantine_dir=quarantine_dir,
              no_quarantine=no_quarantine, report_path=report_path)
