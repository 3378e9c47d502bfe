"""`kafkalog consumer-groups LOGDIR...`: options -> ops.consumer_groups -> Kafka's tables or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.commands.options import InputPath, format_option
from kafkalog_cli.errors import InputError, one_line


@click.command(
    "consumer-groups",
    short_help="Consumer groups and their committed offsets, from __consumer_offsets.",
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--group",
    default=None,
    metavar="GROUP",
    help="Only this group: reads only the __consumer_offsets partition that holds it.",
)
@click.option(
    "--offsets-partitions",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="__consumer_offsets' partition count (offsets.topic.num.partitions), where no metadata log "
    "records it; otherwise it is guessed from the dirs present, and said so.",
)
@click.option(
    "--members", "view", flag_value="members", help="Kafka's --members --verbose table instead."
)
@click.option("--state", "view", flag_value="state", help="Kafka's --state table instead.")
@click.option(
    "--offsets",
    "view",
    flag_value="offsets",
    default=True,
    help="Kafka's --offsets table (the default).",
)
@format_option(
    "text: kafka-consumer-groups --describe's tables. "
    "json: one object per group (its state, members and offsets), then any pending transactional "
    "offset commits."
)
@one_line_errors
def consumer_groups(paths, group, offsets_partitions, view, fmt):
    """Consumer groups, offline: replay the __consumer_offsets partitions of log dirs (or
    partition dirs) as the group coordinator loads them, and print each group's committed
    offsets with the lag against the log end offsets found in the same paths, as
    `kafka-consumer-groups --describe --offsets` prints them.

    \b
    What is replayed:
      offset commits and their tombstones; transactional offset commits, applied at their
      producer's COMMIT marker and dropped at its ABORT (still open: listed as pending);
      classic group metadata (protocol, generation, leader, members, assignments);
      KIP-848 consumer groups (group epoch, target assignment epoch, members, current
      assignments); share and streams groups (epoch, members).

    \b
    Columns:
      CURRENT-OFFSET    the latest committed offset
      LOG-END-OFFSET    what ListOffsets(latest) answers for the partition in these paths:
                        its high watermark (replication-offset-checkpoint), else its log end
                        offset; '-' where no path holds the partition ('source' in JSON)
      LAG               LOG-END-OFFSET - CURRENT-OFFSET
      CONSUMER-ID, HOST, CLIENT-ID
                        the member the group's last recorded assignment gives the partition
    An Empty group (no members recorded) gets Kafka's 'has no active members' line on stderr.
    JSON adds each commit's metadata, leader epoch, commit and expire timestamps and its record
    offset in __consumer_offsets.

    \b
    --group G reads only __consumer_offsets-N, N = abs(G.hashCode()) % partitions (Kafka's
    partitionFor); the partition count comes from the metadata log (__cluster_metadata-0 in a
    log dir given), --offsets-partitions, or the highest __consumer_offsets-N present, a guess
    said on stderr.

    \b
    Exit codes: 0 done; 2 usage error; 3 a damaged __consumer_offsets record or batch (its file
    and byte position named); 4 bad path, no __consumer_offsets partition, or the group's
    partition or the group itself is not in the paths.

    \b
    Examples:
      kafkalog consumer-groups /var/lib/kafka/data
      kafkalog consumer-groups /var/lib/kafka/data --group orders-app
      kafkalog consumer-groups /data/broker-*/ --format json | jq '.offsets[] | select(.lag > 1000)'
    """
    from kafkalog_cli.ops.consumer_groups import describe_groups
    from kafkalog_cli.render import consumer_groups as render

    def note(line: str) -> None:
        click.echo(f"kafkalog: note: {one_line(line)}", err=True)

    report = describe_groups(list(paths), group, offsets_partitions, note)
    if group is not None and not report.groups:
        where = ", ".join(report.partitions_read)
        raise InputError(f"consumer group {group!r} does not exist in {where}", path=None)
    for g in report.groups:
        rows = report.rows[g.group_id]
        if fmt == "json":
            click.echo(
                json.dumps({"kind": "group", **g.to_dict(), "offsets": [r.to_dict() for r in rows]})
            )
            continue
        message = render.state_note(g)
        if message is not None:
            click.echo(message, err=True)
        if view == "state":
            click.echo(render.state_table(g))
        elif view == "members" and g.members:
            click.echo(render.members_table(g))
        elif view == "offsets" and rows:
            click.echo(render.offsets_table(rows))
    for pid, group_id, topic, partition, commit in report.pending:
        if fmt == "json":
            click.echo(
                json.dumps(
                    {
                        "kind": "pending_offset_commit",
                        "group": group_id,
                        "topic": topic,
                        "partition": partition,
                        **commit.to_dict(),
                    }
                )
            )
        else:
            note(
                f"group {group_id!r}: a transactional offset commit of {topic}-{partition} to {commit.offset} "
                f"(producer id {pid}, offset {commit.record_offset}) has no COMMIT or ABORT marker yet: not applied"
            )
