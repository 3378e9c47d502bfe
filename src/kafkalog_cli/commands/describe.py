"""`kafkalog describe PATH...`: options -> ops.describe -> a table or JSON Lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kafkalog_cli.commands.common import jobs_or_cores, note_left_out, one_line_errors
from kafkalog_cli.commands.options import (
    InputPath,
    config_options,
    format_option,
    jobs_option,
    partition_filter_options,
)
from kafkalog_cli.errors import ExitCode, exit_code_of


@click.command("describe", short_help="Each partition's offsets, sizes, producers and configs.")
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@partition_filter_options
@config_options
@format_option(
    "text: a table (rich on a terminal; tab-separated with a header line when piped). "
    'json: one object per partition, then one per log dir, with a "kind" field.'
)
@jobs_option("Worker processes for a log dir of 1,000 partitions or more (0: one per core).")
@one_line_errors
def describe(paths, only, configs, fmt, jobs):
    """Describe each partition of log dirs and partition dirs, offline: the broker's
    `kafka-log-dirs --describe`, and more. Reads only listings, stats, index tails, the first
    batch header of each segment, the active segment's unindexed end, the root checkpoints and
    the latest producer snapshot. So its problems say nothing of the CRCs of closed segments'
    batches (bit rot): verify-crc, doctor or recover --dry-run read them.

    \b
    Per partition, and where each value comes from:
      segments, size    the .log files and their sizes (kafka-log-dirs' size)
      log start         max(log-start-offset-checkpoint, the first segment's base)
      log end           the active segment's last offset-index entry, then its batches after it
      hw, recovery point, cleaner checkpoint
                        the partition's entries in the log dir's replication-offset-checkpoint,
                        recovery-point-offset-checkpoint, cleaner-offset-checkpoint ('-': none)
      first timestamp   the max timestamp of the first batch of the first non-empty segment
      max timestamp     the largest time-index last entry (and the active segment's batches
                        after its last offset-index entry); the offset of it in JSON
      codecs            of the first batch of each segment (one header read) and of the
                        active segment's batches after its last offset-index entry: a sample
      producers, open txns
                        the latest producer snapshot in (log start, log end], then the batches
                        from its offset to the log end replayed (none after a clean shutdown,
                        whose snapshot is at the log end); no producer is expired
      dirty ratio       compacted topics: the cleaner's cleanable / (clean + cleanable) bytes,
                        from the cleaner checkpoint to the active segment or the last stable
                        offset; min.compaction.lag.ms is not applied (it needs a clock)
      cleanup.policy, retention.ms, retention.bytes
                        as retain and compact resolve them, each with its source; one that
                        cannot be read shows as unknown, with the flags that state it

    Per log dir: partitions, bytes, clean shutdown, and the quarantine beside it (folders,
    bytes kept, folders not restored); the Kafka versions that may load it ("Kafka version:
    4.0 or later", JSON kafka_versions) and each fact that bounds them, with its file:
    metadata.version (bootstrap.checkpoint, __cluster_metadata), meta.properties' directory.id
    (3.7+), .kafka_cleanshutdown's JSON (3.7+), a KRaftVersion or KRaftVoters control record
    (3.9+), a __transaction_state value of version 1, a __share_group_state record or a
    __consumer_offsets record type above 8 (4.0+). Only live and -future partition dirs are read; the
    others get a note on stderr.

    \b
    Exit codes: 0 done; 2 usage error; 3 a file could not be read whole (a damaged tail or
    snapshot: its partition's other facts are still printed, the reason on stderr); 4 bad path,
    a file that cannot be opened (permission denied, a FIFO or directory in its place: the other
    facts are still printed), or --topic/--partition match nothing.

    \b
    Examples:
      kafkalog describe /var/lib/kafka/data
      kafkalog describe /var/lib/kafka/data --topic 'orders*' | awk -F'\\t' 'NR > 1 && !/^#/ {print $1, $5}'
      kafkalog describe /var/lib/kafka/data --format json | jq 'select(.kind == "partition") | .open_transactions'
    """
    from kafkalog_cli.ops import describe as ops
    from kafkalog_cli.ops.describe import LogDirDescription
    from kafkalog_cli.render import describe as render

    selection = ops.select(paths, only)
    note = note_left_out("not read")
    for d, kind in selection.left_out:
        note(d, kind)
    configs = configs.for_log_dirs(selection.groups)
    rich = fmt == "text" and sys.stdout.isatty()
    problems: list[int] = []  # exit codes, in the order met
    partitions: list = []
    summaries: list[str] = []
    if fmt == "text" and not rich:
        click.echo(render.plain_header())
    for item in ops.describe(selection, configs.resolver, jobs_or_cores(jobs)):
        if not isinstance(item, LogDirDescription):
            for line in item.problems:
                click.echo(f"kafkalog: {item.name}: {line}", err=True)
            if item.problems:
                problems.extend(item.problem_codes or [ExitCode.CORRUPT])
            if fmt == "json":
                click.echo(json.dumps(item.to_dict()))
            elif rich:
                partitions.append(item)
            else:
                click.echo(render.plain_row(item))
                partitions.append(item)
            continue
        if item.config_warning:
            click.echo(f"kafkalog: warning: {item.config_warning}", err=True)
        if fmt == "json":
            click.echo(json.dumps(item.to_dict()))
            continue
        lines = [
            render.log_dir_summary(item),
            *render.kafka_version_lines(item),
            *render.unknown_config_lines(partitions),
        ]
        if rich:
            from rich.console import Console

            console = Console()
            console.print(render.rich_table(item, partitions))
            for line in lines[1:]:
                console.print(line, highlight=False, markup=False)
        else:
            summaries.extend(lines)
        partitions = []
    for line in summaries:
        click.echo(f"# {line}")
    if problems:
        click.get_current_context().exit(exit_code_of(problems))
