"""`kafkalog compare-replicas A B [C...]`: options -> ops.compare_replicas -> render."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.commands.options import InputPath, format_option


@click.command(
    "compare-replicas",
    short_help="Where copies of a partition from different brokers diverge, as a "
    "follower's truncation finds it.",
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--topic",
    default=None,
    metavar="TOPIC",
    help="With log dirs: the topic of the partition to compare.",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="With log dirs: the partition number.",
)
@click.option(
    "--leader",
    default=None,
    metavar="REPLICA",
    help="The replica to take as the leader: a broker id, a path as given, or its position (1..) "
    "[default: the highest leader epoch, then the longest log].",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help="List at most this many records of each replica beyond the divergence point (all are counted).",
)
@format_option("text: for people. json: one object.")
@one_line_errors
def compare_replicas(paths, topic, partition, leader, limit, fmt):
    """Compare copies of one partition taken from different brokers (partition dirs, or log dirs
    with --topic and --partition; or .tar, .tar.gz, .tgz, .zip archives of either) and tell where
    they diverge, as Kafka's replica fetcher finds it
    after a leader change: the follower asks the leader for the end offset of its latest leader
    epoch (OffsetsForLeaderEpoch) and truncates to it, again until both know the epoch. Epochs
    are each replica's leader-epoch-checkpoint as the broker loads it (its batches' epochs when
    the file is missing). Where a replica has no leader epochs (message format v0/v1) the copies
    are compared record by record, and the output says so.

    Prints each replica's log start and end offsets, high watermark and epochs; per follower the
    divergence point, the OffsetsForLeaderEpoch rounds, what it would truncate and its records
    from there (offset, timestamp, key, producer id and epoch, leader epoch, transactional
    state); and the leader's records from the divergence point, which the followers fetch.

    \b
    Exit codes: 0 the replicas agree up to the shortest one's end; 1 they diverge;
    2 usage (fewer than two copies, copies of different partitions or topics, a log dir without
    --topic/--partition); 3 corrupt input (a leader-epoch-checkpoint the broker would not load,
    a damaged batch); 4 a missing path or one with no partition dir or segment.
    """
    import tempfile

    from kafkalog_cli.errors import ExitCode
    from kafkalog_cli.ops import compare_replicas as ops
    from kafkalog_cli.render.replicas import comparison

    with tempfile.TemporaryDirectory(prefix="kafkalog-replicas-") as scratch:  # for archives
        replicas = [
            ops.open_replica(p, topic, partition, Path(scratch) / str(i))
            for i, p in enumerate(paths)
        ]
        result = ops.compare(replicas, leader=leader, limit=limit)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(comparison(result))
    if not result.agree:
        click.get_current_context().exit(int(ExitCode.PROBLEMS))
