"""`kafkalog recover PATH...`: options -> ops.recover -> output."""

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
from kafkalog_cli.ops import recover as ops
from kafkalog_cli.ops.runner import Operation
from kafkalog_cli.render import human
from kafkalog_cli.storage.logdir import LOADED


@click.command("recover", short_help="Repair log dirs after a crash, as a broker does at startup.")
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--all",
    "all_segments",
    is_flag=True,
    help="Check every segment, whatever the recovery point and .kafka_cleanshutdown say.",
)
@click.option(
    "--salvage",
    is_flag=True,
    help="Skip only damaged bytes: resume at the next batch with a valid header and CRC "
    "whose offsets continue upward, instead of dropping the rest of the log.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Also rebuild what a broker would keep damaged: the indexes of segments it does not "
    "recover (zero-filled, out of order, pointing past the log, a missing time index) and "
    "the preallocated index a .log.swap without its .index.swap leaves.",
)
@click.option(
    "--no-crc-check",
    "check_crc",
    flag_value=False,
    default=True,
    help="Do not read the segments the broker does not recover for bit rot (a batch failing its "
    "CRC): recover then reads only what the broker's recovery reads, for a cron run over a "
    "large log dir; the plan says they were not checked (kafkalog verify-crc checks them).",
)
@partition_filter_options
@change_options
@report_option
def recover(
    paths,
    all_segments,
    salvage,
    repair,
    check_crc,
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
    """Recover log dirs or partition dirs as a broker does at startup, offline.

    Resolves leftover .deleted/.cleaned/.swap files, checks segments from the recovery point on
    batch by batch, truncates at the first invalid batch (later segments removed), rebuilds the
    indexes, rewrites the producer snapshot and updates the recovery point, byte for byte as
    Kafka 3.3.1's log loading does. Removed data goes to the quarantine. Takes the log dir's
    .lock (not with --dry-run).

    As the broker does, a segment without its offset index, or whose .txnindex fails Kafka's
    sanity check, is recovered whatever the recovery point and .kafka_cleanshutdown say; cut
    there, it keeps the later segments (the offsets cut are a gap, named). A log end offset below
    the log-start-offset-checkpoint's deletes every segment and starts the log empty at the log
    start offset. A .txnindex version the broker cannot read (it exits) is exit 3.

    Damage a broker keeps (the indexes of a segment it does not recover) is reported, one line
    per file, and left as the broker leaves it; --repair rebuilds it too. With --all every
    segment is recovered, so its indexes are rebuilt whatever --repair says. Bit rot (a batch
    failing its CRC in a segment the broker does not recover, which it serves as it is) is
    named in the plan and the report with who is hit and the fixes (compare-replicas for a
    healthy replica's bytes, or --all --salvage for that partition) and left as it is: exit 1.
    So every segment is read; --no-crc-check reads only what the broker's recovery reads.

    A partition dir whose topic name holds whitespace (e.g. `with space-1`) stops the run before
    anything changes, exit 4: a broker loads it but cannot write it to a checkpoint file it can
    read back. Move it out of the log dir first.

    A future replica's dir (`<topic>-<partition>.<uuid>-future`, a move between log dirs) is
    recovered as a broker loads it; a dir being deleted (`-delete`) or a KRaft stray (`-stray`)
    is left untouched, with a note on stderr. A segment that is not a regular file (a FIFO, a
    dangling symlink, a directory) stops its log dir, exit 4, before it changes: a broker would
    load the partition without it.

    \b
    Exit codes: 0 recovered, repairs included (--dry-run: nothing to do); 1 --dry-run: the
    plan would change something, or (with or without --dry-run) bit rot is left; 2 usage; 3 corrupt input that cannot be
    handled; 4 a path that is not a log dir or partition dir, a segment that is not a
    regular file, or a partition linked out of the log dir (left unchanged, the others done:
    --follow-symlinks); 5 the log dir is locked (a broker runs on it); 6 a change could not be
    written. Log dirs before the one that failed are recovered and reported. Precedence:
    kafkalog --help.
    """
    groups = partition_groups(paths, LOADED, only)
    for parts in groups.values():
        ops.check_partition_dirs(parts)  # before any log dir is changed
    opts = ops.RecoverOptions(
        all_segments=all_segments,
        salvage=salvage,
        repair=repair,
        now_ms=now_or_clock(now_ms),
        check_crc=check_crc,
    )
    operation = Operation("recover", ops.plan, opts, configs, judges_marker=False)
    report_run(
        operation,
        groups,
        human.plan_outcome,
        fmt=fmt,
        report_path=report_path,
        dry_run=dry_run,
        quarantine_dir=quarantine_dir,
        no_quarantine=no_quarantine,
        follow_symlinks=follow_symlinks,
    )
