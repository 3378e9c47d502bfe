"""`kafkalog doctor LOGDIR...`: options -> ops.doctor -> a verdict, findings and fixes."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.options import InputPath, format_option
from kafkalog_cli.errors import ExitCode, InputError, UsageError


@click.command(
    "doctor", short_help="Will a broker start on these log dirs? If not, why, and the fix."
)
@click.argument("paths", nargs=-1, type=InputPath(path_type=Path))
@click.option(
    "--server-properties",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    help="The broker's server.properties: its node.id, process.roles, log.dirs (the log dirs to check "
    "when none is given) and metadata.log.dir are checked against the log dirs.",
)
@click.option(
    "--user",
    metavar="UID|NAME",
    help="The broker's user: a uid (a container's, no passwd entry needed) or a name this host's "
    "passwd knows [default: the owner of each log dir, by uid]. A name this host does not know: "
    "a warning that access could not be checked (exit 1).",
)
@click.option(
    "--kafka-version",
    metavar="VERSION",
    help="Also check the start-up of this Kafka release (3.3 to 4.2) [default: 3.3.1's checks only]. 3.7+: "
    "a reserved directory.id stops the broker (MetaPropertiesEnsemble.verify), one missing is written "
    "anew. 4.0+: KRaft only (server.properties without process.roles, or ZooKeeper-era log dirs: "
    "version 0 meta.properties and no metadata log, are refused; a version 0 meta.properties with "
    "broker.id in a KRaft dir is read), a metadata.version (bootstrap.checkpoint, metadata log) "
    "from 3.3-IV3 to the release's newest (MetadataVersion.fromFeatureLevel), and the settings 4.0 "
    "removed (zookeeper.*, log.message.format.version, log.message.timestamp.difference.max.ms) "
    "are ignored. Any version: a metadata.version newer than the release knows stops it. Also: "
    "3.5+ passes over remote-log-index-cache, 3.7+ reads partition.metadata above version 0 and keeps "
    "a partition the metadata does not assign here (renamed -stray; 3.0 to 3.6 delete it), 3.8+ exits "
    "on a quorum-state it cannot read (3.3 to 3.7 clear it), and 3.3 to 3.7 exit on quorum-state voters other "
    "than server.properties' controller.quorum.voters.",
)
@format_option("text: the verdict and one block per finding. json: one object for scripts.")
def doctor(paths, server_properties, user, kafka_version, fmt):
    """Say whether a Kafka broker would start on these log dirs and, if not, why and the exact
    fix. Changes nothing and takes no lock (a held .lock is a finding).

    Follows Kafka 3.3.1's start-up: meta.properties in every log dir, read with Kafka's types
    (node.id a Java int, no blank around it; directory.id a Uuid): missing, damaged, disagreeing
    across log dirs or with server.properties' node.id, a directory.id in two log dirs; where
    cluster.id differs, which meta.properties is wrong, judged from the partitions' topic ids
    against the metadata log's topics (it says so when that does not decide it); the KRaft
    metadata log's place, a held .lock, files the broker's user cannot read or write (judged by
    uid and gid: a uid without a passwd entry too) and read-only mounts, free space and inodes
    for what the broker writes as it starts, damaged checkpoint files, segments that stop the
    load or are truncated by it (recover's own plan, with the broker's words), bit rot (a batch
    failing its CRC in a segment the broker does not recover: it serves it, and consumers and
    followers fail on it; every segment's CRCs are read, as verify-crc reads them), directories
    that are not partitions, -delete/-future/-stray dirs and unknown files, a partition in two log
    dirs, files named like segments whose name is no offset, partition.metadata,
    bootstrap.checkpoint and quorum-state as Kafka reads them (its voters against
    controller.quorum.voters), partitions the metadata does not
    assign here (deleted at start before 3.7) and a metadata log gone. Each finding has a
    severity (error: the broker will not start;
    warning: it starts, but loses or drops something, or a log dir goes offline; note: it copes),
    what the broker does, and the fix (a kafkalog command where one exists). With --kafka-version
    it also follows that release's start-up: 3.7's directory.id rules, 4.0's KRaft-only start and
    metadata.version floor (3.3-IV3), each release's newest metadata.version.

    \b
    Exit codes: 0 a broker starts, nothing to say; 1 it starts, with warnings, or a check
    could not be made (not known whether it starts); 8 it will not start; 2 usage (no log dir
    given or in --server-properties); 4 a path given that does not exist or is a file, not a log dir, or a file or dir
    kafkalog itself cannot read (permission denied to this process: the findings are still
    printed, each such path on stderr; what it holds was not checked). Precedence: kafkalog --help.
    """
    from kafkalog_cli.ops import doctor as ops
    from kafkalog_cli.render import human

    config = ops.BrokerConfig.read(server_properties)
    dirs = [Path(p) for p in paths] or [Path(d) for d in config.log_dirs]
    if not dirs:
        raise UsageError("give the log dirs, or --server-properties with log.dirs")
    for d in dirs:
        if paths and not d.exists():  # a mistyped path: its broker would start on nothing
            raise InputError("no such file or directory (give the broker's log dirs)", path=str(d))
        if d.exists() and not d.is_dir():
            raise InputError("not a directory (give the broker's log dirs)", path=str(d))
    from kafkalog_cli.config.versions import stated_version

    diag = ops.diagnose(dirs, config, user, stated_version(kafka_version))
    if fmt == "json":
        click.echo(json.dumps(diag.to_dict(), indent=2))
    else:
        click.echo(human.doctor(diag))
    for e in diag.unread:  # not checked: never an all-clear
        click.echo(f"kafkalog: {e.line()}", err=True)
    if diag.unread:
        click.get_current_context().exit(int(ExitCode.INPUT))
    if not diag.starts:
        click.get_current_context().exit(int(ExitCode.BROKER_WONT_START))
    if any(f.severity.value == "warning" for f in diag.findings):
        click.get_current_context().exit(int(ExitCode.PROBLEMS))
