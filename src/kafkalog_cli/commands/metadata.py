"""`kafkalog metadata LOGDIR`: options -> ops.metadata_image -> a tree or one JSON object."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.commands.options import InputPath, format_option
from kafkalog_cli.errors import one_line


@click.command(
    "metadata", short_help="The KRaft metadata image: newest snapshot plus the log after it."
)
@click.argument("path", type=InputPath(path_type=Path))
@click.option(
    "--at-offset",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="The image as of the metadata record at offset N (from the newest snapshot ending at or "
    "before it).",
)
@format_option("text: a tree. json: one object with every part of the image.")
@one_line_errors
def metadata(path, at_offset, fmt):
    """The KRaft metadata image of a log dir (or of its __cluster_metadata-0 dir), offline:
    the newest `<offset>-<epoch>.checkpoint` snapshot that reads whole, then the metadata log
    after it to its end (or to --at-offset N), replayed as the brokers' MetadataLoader does.

    \b
    What the image holds:
      metadata.version and the other finalized features
      brokers: id, epoch, endpoints, fenced, controlled shutdown, rack, supported features,
        log directories; controllers (Kafka 3.7+ registrations); quorum-state's leader and voters
      topics: id, configs, and per partition replicas, ISR, ELR and last known ELR, leader,
        leader and partition epochs, adding/removing replicas, directories
      broker and other configs, client quotas, ACLs, SCRAM user names (never their salts or
        keys), delegation token ids, the last producer id block
    Records of an aborted metadata transaction (KIP-868) are not applied; a transaction still
    open where reading stops is not applied either, and both are listed.

    \b
    Unlike kafka-metadata-shell, which reads one snapshot or one log, this combines the newest
    snapshot with the log after it, as a broker does on start, so it is the state as of the
    end of the metadata log even when the controller quorum is lost.

    \b
    Exit codes: 0 done; 2 usage error; 3 the metadata log is damaged (the image up to the
    damage is printed, the damage named on stderr by file and byte position); 4 bad path, a file of the metadata log
    that cannot be opened (permission denied, a FIFO: the image up to it is printed likewise), or
    no __cluster_metadata-0 (a ZooKeeper-era log dir).

    \b
    Examples:
      kafkalog metadata /var/lib/kafka/data
      kafkalog metadata /var/lib/kafka/data --format json | jq '.topics[] | {name, partitions: [.partitions[] | {partition, leader, isr}]}'
      kafkalog metadata /var/lib/kafka/data --at-offset 1200
    """  # noqa: E501 - the examples print line for line (\b)
    from kafkalog_cli.ops.metadata_image import read_metadata_image
    from kafkalog_cli.render import metadata as render

    read = read_metadata_image(path, at_offset)
    if read.skipped is not None and read.skipped is not read.damage:
        click.echo(
            f"kafkalog: warning: {one_line(str(read.skipped))}: a damaged snapshot, skipped",
            err=True,
        )
    for offset, error in read.image.undecoded_records:
        where = f"offset {offset}" if offset is not None else f"snapshot {read.snapshot}"
        click.echo(
            f"kafkalog: warning: {read.directory}: record at {where} does not decode, not applied: "
            f"{one_line(error)}",
            err=True,
        )
    if fmt == "json":
        click.echo(json.dumps(read.to_dict()))
    else:
        for line in render.tree(read):
            click.echo(line)
    if read.damage is not None:
        click.echo(
            f"kafkalog: {one_line(str(read.damage))}: the metadata log is read up to here", err=True
        )
        click.get_current_context().exit(read.damage.exit_code)
