"""`kafkalog erase LOGDIR... --topic T SELECTION`: options -> ops.erase -> output."""

from __future__ import annotations

import re
from pathlib import Path

import click

from kafkalog_cli.commands.options import (
    RUN_FORMAT_HELP,
    InputPath,
    config_options,
    dry_run_option,
    follow_symlinks_option,
    format_option,
    report_option,
)


def _hex(value: str, option: str) -> bytes:
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise click.UsageError(f"{option} {value!r}: not hex digits") from None


def _regex(value: str, option: str) -> re.Pattern[bytes]:
    try:
        return re.compile(value.encode("utf-8"))
    except re.error as e:
        raise click.UsageError(f"{option} {value!r}: {e}") from None


def _offsets(value: str) -> tuple[int, int]:
    first, dash, last = value.partition("-")
    try:
        a = int(first)
        b = int(last) if dash else a
    except ValueError:
        raise click.UsageError(f"--offsets {value!r}: give A-B or A (offsets)") from None
    if a < 0 or b < a:
        raise click.UsageError(f"--offsets {value!r}: give 0 <= A <= B")
    return a, b


def _header(value: str) -> tuple[bytes, bytes | None]:
    name, eq, v = value.partition("=")
    if not name:
        raise click.UsageError(f"--header {value!r}: give NAME=VALUE or NAME")
    return name.encode("utf-8"), (v.encode("utf-8") if eq else None)


@click.command(
    "erase", short_help="Remove chosen records from every copy of a partition, in place."
)
@click.argument(
    "paths", nargs=-1, required=True, metavar="LOGDIR...", type=InputPath(path_type=Path)
)
@click.option("--topic", required=True, metavar="TOPIC", help="The topic (its exact name).")
@click.option(
    "--partition",
    "partition_numbers",
    multiple=True,
    type=click.IntRange(min=0),
    metavar="N",
    help="Only partition N of the topic. Repeatable [default: every partition found].",
)
@click.option("--key", "keys", multiple=True, metavar="K", help="Records whose key is K (UTF-8).")
@click.option(
    "--key-hex", "keys_hex", multiple=True, metavar="HEX", help="Records whose key is these bytes."
)
@click.option(
    "--key-prefix", "prefixes", multiple=True, metavar="P", help="Records whose key starts with P."
)
@click.option(
    "--key-prefix-hex",
    "prefixes_hex",
    multiple=True,
    metavar="HEX",
    help="Records whose key starts with these bytes.",
)
@click.option(
    "--key-regex",
    "key_regexes",
    multiple=True,
    metavar="R",
    help="Records whose key a regex finds a match in.",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Records with a header NAME of value VALUE (NAME alone: any value).",
)
@click.option(
    "--value-regex",
    "value_regexes",
    multiple=True,
    metavar="R",
    help="Records whose value a regex finds a match in.",
)
@click.option(
    "--offsets",
    "offset_ranges",
    multiple=True,
    metavar="A-B",
    help="Records at offsets A to B inclusive (A: one offset).",
)
@click.option(
    "--tombstone",
    is_flag=True,
    help="Compacted topics: each key's last erased record becomes a tombstone (same offset, timestamp and key; "
    "null value, no headers), so that state stores are told the key is gone; its other records are removed.",
)
@click.option(
    "--local-only",
    is_flag=True,
    help="A partition with segments in the remote tier: erase the local copies only (without it such a "
    "partition is refused, its remote segments named). The remote copies stay; the report names them.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Before unlinking each old segment file, overwrite its bytes in place with zeros and fsync. On a file "
    "system that writes in place (ext4, xfs) that overwrites the blocks the records were in; on a copy-on-write "
    "one (btrfs, zfs) the zeros go to new blocks and the old ones stay until reused; an SSD's wear levelling "
    "may keep the old cells; snapshots and backups keep their copies. A file with other hard links is not "
    "overwritten (said so).",
)
@config_options
@follow_symlinks_option
@dry_run_option
@format_option(RUN_FORMAT_HELP)
@report_option
def erase(
    paths,
    topic,
    partition_numbers,
    keys,
    keys_hex,
    prefixes,
    prefixes_hex,
    key_regexes,
    headers,
    value_regexes,
    offset_ranges,
    tombstone,
    local_only,
    overwrite,
    configs,
    follow_symlinks,
    dry_run,
    fmt,
    report_path,
):
    """Erase chosen records of TOPIC from every copy given: LOGDIR... are log dirs (or partition
    dirs), several of them the replicas on several brokers; every copy of the partition found is
    erased, each reported. Every other record keeps its offset, timestamp, key, value and
    headers. Takes each log dir's .lock (not with --dry-run).

    The selection: values of one option are OR'ed, different options AND'ed (--key a --key b
    --header h: key a or b, and a header h). A null key or value matches no key or value test.

    Affected batches are rewritten as Kafka's log cleaner rewrites them (MemoryRecords.filterTo):
    same base offset, last offset, producer id and epoch, base sequence, partition leader epoch;
    compressed batches recompressed with their codec; v0/v1 wrappers rebuilt. A batch left empty
    is removed, or kept as a header-only batch where the broker needs its header: a producer's
    last batch (as the cleaner's RETAIN_EMPTY), the first batch of a transaction still open, the
    log's last batch (the log end offset). Control batches, producer snapshots and .txnindex stay
    as they are. Only segments holding matches are rewritten; their .index and .timeindex are
    rebuilt. Erasing the record with a batch's max timestamp lowers the batch's max timestamp:
    the time index then points at the records left, and time-based retention (retention.ms)
    judges the segment by its new largest timestamp, so it may go sooner, never later. A segment
    left without a record keeps its name, its time index one entry (timestamp 0): ListOffsets by
    time passes it by, and time-based retention deletes it once it is the oldest segment.

    Consumers see gaps in the offsets, as compaction leaves them: a consumer positioned past the
    erased offsets is unaffected. On a compacted topic an erased record is not a tombstone: its
    consumers (state stores) are not told the key is gone, unless --tombstone.

    Erase keeps NO copy of what it removes: the one exception to "what a command removes goes
    to the quarantine". --dry-run shows what would go (offsets and a SHA-256 per record). Each
    segment is rewritten by Kafka's .cleaned -> .swap order: a kill at any instant leaves the old
    or the new segment, never neither, and the same command run again finishes it. After the
    unlink the file system may keep the old blocks until reused (see --overwrite). The report
    names every other copy erase can see that still holds matching records: older kafkalog
    quarantine folders (with the `kafkalog quarantine prune` that removes each), segments in the
    remote tier, and the replicas on log dirs not given.

    The SHA-256 of an erased record (the report's `erased_records`, proof without the data): of
    its bytes from the key length on as a v2 record stores them (varint key length, key, varint
    value length, value, varint header count, headers); a v0/v1 record as that encoding of its
    key and value with no header.

    Refused (exit 2): Kafka's internal topics (__consumer_offsets, __transaction_state,
    __share_group_state, __cluster_metadata).

    \b
    Exit codes: 0 erased, or nothing matched (said so); 1 --dry-run: something would be erased;
    2 usage, or refused (an internal topic, remote segments without --local-only, a v0/v1 last
    message wholly selected); 3 corrupt input in a segment it must read; 4 bad path, or a
    partition linked out of the log dir; 5 a log dir is locked (a broker runs on it): skipped,
    the other copies erased; 6 a change could not be written. Precedence: kafkalog --help.
    """
    from kafkalog_cli.commands.change_run import report_run
    from kafkalog_cli.commands.common import partition_groups
    from kafkalog_cli.ops import erase as ops
    from kafkalog_cli.ops.runner import Operation
    from kafkalog_cli.storage.names import PartitionFilter

    selection = ops.Selection(
        keys=tuple(k.encode("utf-8") for k in keys) + tuple(_hex(k, "--key-hex") for k in keys_hex),
        key_prefixes=tuple(p.encode("utf-8") for p in prefixes)
        + tuple(_hex(p, "--key-prefix-hex") for p in prefixes_hex),
        key_regexes=tuple(_regex(r, "--key-regex") for r in key_regexes),
        headers=tuple(_header(h) for h in headers),
        value_regexes=tuple(_regex(r, "--value-regex") for r in value_regexes),
        offsets=tuple(_offsets(o) for o in offset_ranges),
    )
    if selection.empty:
        raise click.UsageError(
            "give at least one of --key, --key-hex, --key-prefix, --key-prefix-hex, --key-regex, "
            "--header, --value-regex, --offsets"
        )
    if topic in ops.INTERNAL_TOPICS:
        click.echo(
            f"kafkalog: refused: {topic} is an internal topic of Kafka's: erase never changes it",
            err=True,
        )
        click.get_current_context().exit(2)
    only = PartitionFilter((_glob_escape(topic),), tuple(partition_numbers))
    groups = partition_groups(paths, only=only)
    opts = ops.EraseOptions(
        topic=topic,
        selection=selection,
        partitions=tuple(partition_numbers),
        tombstone=tombstone,
        local_only=local_only,
        overwrite=overwrite,
    )
    report_run(
        Operation("erase", ops.plan, opts, configs, run=ops.run),
        groups,
        _text,
        fmt=fmt,
        report_path=report_path,
        keep_going=True,  # a locked copy: a line on stderr, and the other copies erased
        dry_run=dry_run,
        no_quarantine=True,
        follow_symlinks=follow_symlinks,
    )


def _glob_escape(topic: str) -> str:
    import glob

    return glob.escape(topic)


_RANGES_SHOWN = 20  # offset ranges on a text line; --format json has them all


def _text(outcome) -> list[str]:
    """A line per partition: what went (or would), the consumers' view, the other copies that
    still hold matching records (also where nothing here matched)."""
    p = outcome.plan
    lines = []
    verb = "would erase" if outcome.dry_run else "erased"
    for s in p.partitions.values():
        name = s["partition"]
        if s.get("status") == "error":
            continue
        n = s.get("records_erased", 0)
        if n:
            shown = s["erased_offsets"][:_RANGES_SHOWN]
            ranges = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in shown)
            if len(s["erased_offsets"]) > _RANGES_SHOWN:
                more = len(s["erased_offsets"]) - _RANGES_SHOWN
                ranges += f" and {more} more ranges (--format json)"
            tomb = f" ({s['tombstones']} as tombstones)" if s.get("tombstones") else ""
            lines.append(
                f"{name}: {verb} {n} record(s){tomb} at offsets {ranges}; "
                f"{len(s['segments_rewritten'])} segment(s) "
                f"{'to rewrite' if outcome.dry_run else 'rewritten'}; no copy kept"
            )
            lines.append(f"  consumers: {s['consumers']}")
        else:
            lines.append(f"{name}: nothing matched: nothing erased")
        lines += _other_copies_lines(s["other_copies"], erased=bool(n))
    for f in p.findings:
        lines.append(f"  note: {f.partition}: {f.message}")
    return lines


def _other_copies_lines(other: dict, erased: bool) -> list[str]:
    lines = []
    for q in other["quarantine_folders"]:
        if q["offsets"]:
            lines.append(
                f"  still held: quarantine folder {q['folder']} (offsets "
                f"{', '.join(f'{a}..{b}' for a, b in q['offsets'])}): {q['prune']}"
            )
        for why in q.get("not_searched", ()):
            lines.append(f"  may still hold them (not searched): {why}: {q['prune']}")
    if other["remote_tier"]:
        lines.append(f"  still held: remote tier: {other['remote_tier']}")
    for line in other["hard_links"]:
        lines.append(f"  still held: {line}")
    if erased:
        lines.append(f"  {other['replicas']}")
    return lines
