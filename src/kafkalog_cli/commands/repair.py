"""`kafkalog repair PATH... --from COPY...`: options -> ops.repair -> output."""

from __future__ import annotations

from pathlib import Path

import click

from kafkalog_cli.commands.options import (
    RUN_FORMAT_HELP,
    InputPath,
    dry_run_option,
    follow_symlinks_option,
    format_option,
    partition_filter_options,
    quarantine_options,
    report_option,
)


@click.command("repair", short_help="Put damaged batches back from another copy of the partition.")
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--from",
    "donors",
    multiple=True,
    required=True,
    type=InputPath(path_type=Path),
    metavar="COPY",
    help="Another copy of the partition: its partition dir (another broker's, or a backup of one), a "
    "log dir holding a partition dir of the same name, or segments uploaded by LocalTieredStorage "
    "(its <topic>-<partition>-<topic id> dir, or the storage dir holding it). Repeatable: the "
    "copies are tried in order. Read only.",
)
@click.option(
    "--leader-tail",
    is_flag=True,
    help="Also take this copy's missing tail (its last segment's end, torn, zeroed or just short) from "
    "the donor up to the donor's high watermark, past this copy's own: a follower's tail as it would "
    "fetch it from the leader, under the leader epoch this copy last knew. Reported as such.",
)
@partition_filter_options
@quarantine_options
@follow_symlinks_option
@dry_run_option
@format_option(RUN_FORMAT_HELP)
@report_option
def repair(
    paths,
    donors,
    leader_tail,
    only,
    quarantine_dir,
    no_quarantine,
    follow_symlinks,
    dry_run,
    fmt,
    report_path,
):
    """Repair bit rot without losing a record: every batch of PATH's partitions that fails its
    CRC or its framing, and every zeroed or garbled range, is replaced by the batches another
    copy holds for the same offsets, spliced in at the same position (the indexes stay right).
    Takes the log dir's .lock (not with --dry-run).

    A donor's batches are taken only when they tile the damaged bytes exactly, are followed by
    the batch this copy holds after the damage, agree with what is left of the damaged header,
    are sound, and both copies' leader-epoch histories say one epoch wrote them (without epochs,
    message format v0/v1: only offsets below both copies' high watermarks). On a compacted topic
    batches are matched by offsets, never by position: a copy its cleaner rewrote differently
    does not fit, and the range is reported lost. A last segment's torn or zeroed end is
    restored up to this copy's own high watermark; past it (the copy's missing tail) nothing is
    taken (`kafkalog recover` truncates it as the broker does) unless --leader-tail says so.

    The old segment goes to the quarantine before the spliced one replaces it (Kafka's .cleaned
    -> .swap protocol); `kafkalog quarantine restore` gives it back. Each range restored, and
    each still lost with why, is reported (--format json: `restored` and `lost` per partition).
    A second run changes nothing.

    \b
    Exit codes: 0 repaired, or nothing damaged; 1 a damaged range left lost, or --dry-run: something would be
    repaired; 2 usage; 3 corrupt input (a checkpoint); 4 bad path, or a partition linked out of the log dir;
    5 the log dir is locked (a broker runs on it); 6 a change could not be written. Precedence: kafkalog --help.
    """
    from kafkalog_cli.commands.change_run import report_run
    from kafkalog_cli.commands.common import partition_groups
    from kafkalog_cli.ops import repair as ops
    from kafkalog_cli.ops.runner import Operation
    from kafkalog_cli.render import human

    groups = partition_groups(paths, only=only)
    opts = ops.RepairOptions(donors=tuple(donors), leader_tail=leader_tail)
    report_run(
        Operation("repair", ops.plan, opts),
        groups,
        human.plan_outcome,
        fmt=fmt,
        report_path=report_path,
        dry_run=dry_run,
        quarantine_dir=quarantine_dir,
        no_quarantine=no_quarantine,
        follow_symlinks=follow_symlinks,
    )
