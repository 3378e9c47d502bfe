"""`kafkalog get-offsets PATH --time ...`: options -> ops.list_offsets -> kafka-get-offsets' lines."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.common import note_left_out, one_line_errors, parse_time_option
from kafkalog_cli.commands.options import (
    InputPath,
    config_options,
    format_option,
    partition_filter_options,
)
from kafkalog_cli.errors import KafkalogError, exit_code_of

# what kafka-get-offsets --exclude-internal-topics leaves out (and the KRaft metadata log, which
# no client lists)
INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
)


def parse_time_spec(value: str):
    """--time: earliest, latest, max-timestamp, earliest-local, latest-tiered, earliest-pending-upload
    (or -2, -1, -3, -4, -5, -6, as kafka-get-offsets takes them), epoch milliseconds, or an
    ISO-8601 time (UTC unless it carries an offset)."""
    from kafkalog_cli.ops.list_offsets import SPEC_NAMES, OffsetSpec

    v = value.strip()
    if v in SPEC_NAMES:
        return OffsetSpec(SPEC_NAMES[v])
    ms = parse_time_option(v, "--time")
    if ms < 0 and ms not in SPEC_NAMES.values():
        raise click.BadParameter(
            f"{value!r}: a negative time other than -1 (latest), -2 (earliest), "
            f"-3 (max-timestamp), -4 (earliest-local), -5 (latest-tiered) or -6 (earliest-pending-upload)",
            param_hint="--time",
        )
    return OffsetSpec(ms)


@click.command(
    "get-offsets", short_help="The offsets a broker's ListOffsets would answer, offline."
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--time",
    "time_value",
    default="latest",
    show_default=True,
    metavar="earliest|latest|max-timestamp|earliest-local|latest-tiered|earliest-pending-upload|MS|ISO-8601",
    help="earliest: the log start offset (a tiered partition's includes its remote data). latest: "
    "the last fetchable offset (see --isolation-level). max-timestamp: the offset of the largest "
    "timestamp (3.8+: the record holding it). earliest-local (3.5+): the first local offset. "
    "latest-tiered (3.9+): the last offset uploaded to remote storage. earliest-pending-upload "
    "(4.2+, KIP-1023): the first offset not yet uploaded (needs --kafka-version 4.2 or later, or a "
    "log dir only 4.2 loads; before 4.2 exit 2). MS or "
    "ISO-8601 (UTC without an offset): the first offset whose timestamp is at or after it. "
    "-2, -1, -3, -4, -5 and -6 are earliest, latest, max-timestamp, earliest-local, latest-tiered and "
    "earliest-pending-upload, as kafka-get-offsets takes them.",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed", "none"]),
    default="read_uncommitted",
    show_default=True,
    help="What latest answers and what an offset must be below: read_uncommitted the high "
    "watermark (kafka-get-offsets), read_committed the last stable offset, none the log "
    "end offset (a follower's request).",
)
@click.option(
    "--exclude-internal-topics",
    is_flag=True,
    help="Leave out __consumer_offsets, __transaction_state and __cluster_metadata.",
)
@partition_filter_options
@config_options
@format_option(
    "text: kafka-get-offsets' `topic:partition:offset` lines. json: one object per partition, "
    "with where the offset comes from."
)
@one_line_errors
def get_offsets(paths, time_value, isolation_level, exclude_internal_topics, only, configs, fmt):
    """Print, for each partition, the offset a broker's ListOffsets would answer, from the files
    alone: the offline kafka-get-offsets (Kafka 3.3.1's Partition.fetchOffsetForTimestamp).

    \b
      earliest       the log start offset: max(log-start-offset-checkpoint, first segment base)
      latest         the high watermark: the replication-offset-checkpoint's entry, clamped into
                     [log start, log end] as the broker loads it. Without an entry the log end
                     offset stands in, with a note on stderr ("high_watermark_known": false in
                     JSON). --isolation-level read_committed: the last stable offset (the first
                     offset of the earliest open transaction, from the latest producer snapshot
                     and the batches after it); none: the log end offset.
      max-timestamp  the offset of the largest timestamp: the time indexes' last entries
                     (TimeIndex.lastEntry: the record's own offset in an uncompressed CreateTime
                     batch written live, else the batch's last offset), and for the active
                     segment's unindexed batches the last offset of the first batch holding it
      earliest-pending-upload  (-6, Kafka 4.2+) a remote-enabled partition's
                     max(highestOffsetInRemoteStorage + 1, log start offset); with nothing
                     uploaded the log start offset (no offset when the local log starts above
                     it); not remote-enabled: no offset (the broker answers -1)
      MS, ISO-8601   the first segment whose largest timestamp (else its .log mtime) is at or
                     after the time; in it, from the time index's entry below the time and the
                     offset index, the first record at or after it and the log start offset

    A damaged active segment is answered as the broker's recovery leaves it (up to its last
    valid batch), with a warning naming the file and byte on stderr; a log start offset above
    the segments' end is the empty log the broker starts there (a warning says so).

    As the broker, an answer other than earliest and latest counts only below the last fetchable
    offset; otherwise, or when no record is late enough, there is no offset: like
    kafka-get-offsets, no line is printed for the partition (a note on stderr says why; JSON has
    "offset": null and the "reason").

    Reads the live partition dirs, those the broker answers from; a -future, -delete or -stray
    dir gets a note on stderr.

    \b
    Exit codes: 0 done (also when a partition has no offset); 2 usage error (a --time that is
    not a time); 3 a file is damaged (its partition is left out, the reason on stderr, the
    others are printed); 4 bad path, a file that cannot be opened (permission denied, a FIFO in its
    place: its partition is left out likewise), or --topic/--partition match nothing.

    \b
    Examples:
      kafkalog get-offsets /var/lib/kafka/data --topic orders
      kafkalog get-offsets /var/lib/kafka/data/orders-3 --time 2024-05-01T12:00
      kafkalog get-offsets /var/lib/kafka/data --time earliest --format json
    """
    from kafkalog_cli.ops import describe as describe_ops
    from kafkalog_cli.ops import tiered
    from kafkalog_cli.ops.list_offsets import (
        EARLIEST_PENDING_UPLOAD_TIMESTAMP,
        EARLIEST_TIMESTAMP,
        IsolationLevel,
        list_offsets,
        require_earliest_pending_upload,
    )
    from kafkalog_cli.render.describe import offsets_line
    from kafkalog_cli.storage.names import REPLICATION_CHECKPOINT, PartitionDirKind

    spec = parse_time_spec(time_value)
    if spec.timestamp == EARLIEST_PENDING_UPLOAD_TIMESTAMP and configs.stated_version() is not None:
        from kafkalog_cli.config.versions import KafkaVersions

        require_earliest_pending_upload(
            KafkaVersions(stated=configs.stated_version())
        )  # before any file is read
    isolation = IsolationLevel(isolation_level)
    # the broker answers from the live log: a -future dir is a copy being made
    selection = describe_ops.select(paths, only, kinds=(PartitionDirKind.LIVE,))
    note = note_left_out("not read")
    for d, kind in selection.left_out:
        note(d, kind)
    failed: list[int] = []  # the exit codes of the partitions that failed, in order
    answers = []
    warn = lambda m: click.echo(f"kafkalog: warning: {m}", err=True)  # noqa: E731
    configs = configs.for_log_dirs(selection.groups)
    for log_dir, dirs in selection.groups.items():
        resolver = configs.resolver(log_dir)
        if spec.timestamp == EARLIEST_PENDING_UPLOAD_TIMESTAMP:
            require_earliest_pending_upload(resolver.versions)  # once per log dir: a usage error
        for part in describe_ops.partitions_of(log_dir, dirs):
            tp = part.topic_partition
            if exclude_internal_topics and tp is not None and tp.topic in INTERNAL_TOPICS:
                continue
            try:
                remote = None
                if tp is not None and part.segments:
                    remote = tiered.remote_log(part, resolver.for_topic(tp.topic), resolver)
                answers.append(list_offsets(part, spec, isolation, warn, resolver.versions, remote))
            except KafkalogError as e:
                click.echo(f"kafkalog: {e.line()}", err=True)
                failed.append(int(e.exit_code))
            finally:
                part.close()
    # kafka-get-offsets' order: by topic, then partition, whatever log dir holds them
    for answer in sorted(answers, key=lambda a: (a.topic, a.partition)):
        if fmt == "json":
            click.echo(json.dumps(answer.to_dict()))
            continue
        name = Path(answer.directory).name
        if (
            not answer.high_watermark_known
            and isolation is not IsolationLevel.NONE
            and spec.timestamp != EARLIEST_TIMESTAMP
        ):
            click.echo(
                f"kafkalog: note: {name}: no high watermark in {REPLICATION_CHECKPOINT}: "
                f"the log end offset stands in for it",
                err=True,
            )
        if answer.by_version:
            click.echo(
                f"kafkalog: note: {name}: {spec.name}: "
                + ", ".join(f"{v}: {o}" for v, o in answer.by_version.items())
                + " (the versions the log dir allows disagree; state it with --kafka-version)",
                err=True,
            )
        if answer.offset is None:
            click.echo(f"kafkalog: note: {name}: no offset: {answer.reason}", err=True)
            continue
        click.echo(offsets_line(answer))
    if failed:
        click.get_current_context().exit(exit_code_of(failed))
