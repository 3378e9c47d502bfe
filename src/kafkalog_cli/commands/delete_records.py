"""`kafkalog delete-records PATH... --offset-json FILE | --before OFFSET`: options ->
ops.delete_records -> one line per partition."""

from __future__ import annotations

from pathlib import Path

import click

from kafkalog_cli.commands.options import (
    RUN_FORMAT_HELP,
    InputPath,
    config_options,
    dry_run_option,
    follow_symlinks_option,
    format_option,
    partition_filter_options,
    quarantine_options,
    report_option,
)
from kafkalog_cli.errors import InputError
from kafkalog_cli.ops import delete_records as ops
from kafkalog_cli.ops.runner import Operation, Outcome
from kafkalog_cli.render import human
from kafkalog_cli.storage.names import TopicPartition, parse_partition_dir


@click.command(
    "delete-records",
    short_help="Raise log start offsets and delete the segments below, as kafka-delete-records.",
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--offset-json",
    "--offset-json-file",
    "offset_json",
    metavar="FILE",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    help='kafka-delete-records\' file: {"partitions": [{"topic": "t", "partition": 0, "offset": 42}], '
    '"version": 1}. Offset -1: the high watermark.',
)
@click.option(
    "--before",
    type=int,
    metavar="OFFSET",
    help="Delete the records below OFFSET in every partition given (-1: below the high watermark); "
    "internal topics are skipped.",
)
@partition_filter_options
@config_options
@quarantine_options
@follow_symlinks_option
@dry_run_option
@format_option(RUN_FORMAT_HELP)
@click.option(
    "--verbose", "-v", is_flag=True, help="Also print the plan (what was deleted and written)."
)
@report_option
def delete_records(
    paths,
    offset_json,
    before,
    only,
    configs,
    quarantine_dir,
    no_quarantine,
    follow_symlinks,
    dry_run,
    fmt,
    verbose,
    report_path,
):
    """Delete the records below an offset, as kafka-delete-records.sh does through a broker,
    offline: raise each partition's log start offset to the offset, then delete the segments
    wholly below it, as the broker's next retention check does.

    Follows Kafka 3.3.1 (Partition.deleteRecordsOnLeader, UnifiedLog.maybeIncrementLogStartOffset,
    deleteLogStartOffsetBreachedSegments): an offset above the high watermark (the
    replication-offset-checkpoint's, as the broker loads it) is OFFSET_OUT_OF_RANGE; without a
    high watermark the bound is the log end offset, and -1 is refused (it would be a guess). An
    offset at or below the log start offset does not move it (segments already wholly below it
    still go, as the broker's retention check deletes them). The segment holding the new log
    start offset stays (the active one always does): consumers start at the log start offset
    inside it. Internal topics (INVALID_TOPIC_EXCEPTION) and topics whose cleanup.policy has no
    delete (POLICY_VIOLATION, from the log dir's __cluster_metadata) are refused.

    Writes what the broker writes: log-start-offset-checkpoint, recovery-point-offset-checkpoint,
    the leader-epoch-checkpoint truncated from the start; deleted segments' producer snapshots go
    with them. The raised log start offsets are written first, so a broker that loads the dir
    after a kill at any instant starts at them; running the command again finishes the run.
    Takes each log dir's .lock (not with --dry-run).

    \b
    Exit codes: 0 done or nothing to do; 1 --dry-run: the plan would change something; 2 usage
    error, or a partition refused as Kafka refuses
    it (OFFSET_OUT_OF_RANGE, INVALID_TOPIC_EXCEPTION, POLICY_VIOLATION; the other partitions are
    done); 7 offset -1 with no high watermark known (refused as a guess); 5 a log dir was locked
    (a broker runs on it) and skipped; 3 corrupt input, 4 bad path, a partition of the offset
    JSON in none of the paths, or a partition linked out of the log dir (left unchanged, the others
    done: --follow-symlinks), 6 write failure. 2, 3, 4 and 6 win over 7, 7 over 5, and 5 over 1.
    """
    from kafkalog_cli.commands.change_run import report_run
    from kafkalog_cli.commands.common import partition_groups

    if (offset_json is None) == (before is None):
        raise click.UsageError("give exactly one of --offset-json FILE and --before OFFSET")
    offsets = {}
    if offset_json is not None:
        offsets = ops.parse_offset_json(_read(offset_json), str(offset_json))
        if only:
            offsets = {k: v for k, v in offsets.items() if only.matches(TopicPartition(*k))}
    groups = partition_groups(paths, only=only)
    if offset_json is not None:
        groups = _requested(groups, offsets, offset_json)
    named = frozenset(
        tp.topic for p in paths if (tp := parse_partition_dir(Path(p).name)) is not None
    )
    patterns = tuple(only.topics) if only else ()
    operation = Operation(
        "delete-records",
        ops.plan,
        ops.DeleteRecordsOptions(
            offsets=offsets, before=before, named_topics=named, topic_patterns=patterns
        ),
        configs,
    )
    report_run(
        operation,
        groups,
        lambda outcome: _text(outcome, verbose),
        fmt=fmt,
        report_path=report_path,
        keep_going=True,
        dry_run=dry_run,
        quarantine_dir=quarantine_dir,
        no_quarantine=no_quarantine,
        follow_symlinks=follow_symlinks,
    )


def _read(path: Path) -> bytes:
    """The offset JSON file's bytes; missing or unreadable is an InputError (exit 4)."""
    from kafkalog_cli.storage.files import read_bytes

    return read_bytes(path)


def _requested(groups: dict, offsets: dict, offset_json: Path) -> dict:
    """The partition dirs the offset JSON names; one it names that none of the paths holds is an
    error before anything changes (Kafka: UNKNOWN_TOPIC_OR_PARTITION)."""
    out: dict = {}
    found = set()
    for log_dir, dirs in groups.items():
        for d in dirs:
            tp = parse_partition_dir(d.name)
            if tp is not None and (tp.topic, tp.partition) in offsets:
                out.setdefault(log_dir, []).append(d)
                found.add((tp.topic, tp.partition))
    missing = [f"{t}-{p}" for t, p in offsets if (t, p) not in found]
    if missing:
        raise InputError(
            f"partition {', '.join(missing)} of the offset JSON is in none of the paths given",
            path=str(offset_json),
        )
    return out


def _text(outcome: Outcome, verbose: bool) -> list[str]:
    """The plan with --dry-run or -v, then a line per partition (its errors go to stderr)."""
    lines = [human.plan(outcome.plan)] if outcome.dry_run or verbose else []
    for summary in outcome.plan.partitions.values():
        if summary.get("status") in ("error", "refused"):
            continue
        line = human.retain_partition(summary, outcome.dry_run)
        if "low_watermark" in summary:
            line += f" (low_watermark: {summary['low_watermark']})"
        lines.append(line)
    if outcome.quarantine:
        lines.append(f"removed files kept in {outcome.quarantine}")
    return lines
