"""describe's table and get-offsets' lines: text from ops.describe and ops.list_offsets values.

The table has one row per partition. Piped, it is tab-separated with one header line, for awk
and cut; the log dirs' own facts follow as lines starting with `#`. On a terminal it is a rich
table per log dir, its facts in the title."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkalog_cli.config import ConfigValue
    from kafkalog_cli.ops.describe import LogDirDescription, PartitionDescription
    from kafkalog_cli.ops.list_offsets import OffsetAnswer

COLUMNS = (
    "PARTITION",
    "SEGMENTS",
    "SIZE",
    "LOG_START",
    "LOG_END",
    "HW",
    "RECOVERY_POINT",
    "CLEANER_CHECKPOINT",
    "FIRST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "CODECS",
    "PRODUCERS",
    "OPEN_TXNS",
    "DIRTY_RATIO",
    "CLEANUP_POLICY",
    "RETENTION_MS",
    "RETENTION_BYTES",
)
NONE = "-"


def _n(v) -> str:
    return NONE if v is None else str(v)


def _ts(ms: int | None, iso: bool) -> str:
    if ms is None:
        return NONE
    if not iso:
        return str(ms)
    try:
        # UTC, with a space where a narrow column may wrap
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return str(ms)


def config_cell(v: ConfigValue | None) -> str:
    """`compact (cluster metadata)`; an unknown value is `unknown (...)`, never the guess."""
    if v is None:
        return NONE
    if not v.known and not v.assumed:
        return f"unknown ({v.source.value})"
    return f"{v.text} ({v.source.value}{', assumed' if v.assumed else ''})"


def row(d: PartitionDescription, iso: bool = False) -> list[str]:
    c = d.checkpoints
    p = d.producers
    txns = p.open_transactions if p else []
    open_txns = f"{len(txns)} (first {txns[0][0]})" if txns else "0"
    return [
        d.name,
        str(d.segments),
        str(d.size_bytes),
        _n(d.log_start_offset),
        _n(d.log_end_offset),
        _n(d.high_watermark),
        _n(c.recovery_point),
        _n(c.cleaner_offset),
        _ts(d.first_timestamp, iso),
        _ts(d.max_timestamp, iso),
        ",".join(d.codecs) or NONE,
        str(len(p.state.entries)) if p else NONE,
        open_txns,
        NONE if d.dirty_ratio is None else f"{d.dirty_ratio:.3f}",
        *(
            config_cell(d.configs.get(n))
            for n in ("cleanup.policy", "retention.ms", "retention.bytes")
        ),
    ]


def plain_header() -> str:
    return "\t".join(COLUMNS)


def plain_row(d: PartitionDescription) -> str:
    return "\t".join(row(d))


def log_dir_summary(ld: LogDirDescription) -> str:
    """One line of a log dir's own facts."""
    parts = [f"{ld.partitions} partition(s)", f"{ld.size_bytes} bytes"]
    parts.append("clean shutdown" if ld.clean_shutdown else "no .kafka_cleanshutdown")
    if ld.is_log_dir and not ld.checkpoint_files:
        parts.append("no checkpoint files")
    q = ld.quarantine
    if q is not None:
        parts.append(
            f"quarantine {q.folders} folder(s), {q.bytes} bytes, {q.not_restored} not restored ({q.root})"
        )
    if ld.left_out:
        parts.append(
            f"{len(ld.left_out)} partition dir(s) not read ({', '.join(k for _, k in ld.left_out)})"
        )
    what = "log dir" if ld.is_log_dir else "dir"
    return f"{what} {ld.path}: " + "; ".join(parts)


def kafka_version_lines(ld: LogDirDescription) -> list[str]:
    """The Kafka versions that may load the log dir next, and what bounds them."""
    v = ld.kafka_versions
    if v is None:
        return []
    if v.stated is not None:
        head = f"Kafka version: {v.stated} (--kafka-version); the log dir allows {v.range_text}"
    else:
        head = f"Kafka version: {v.range_text}"
    if not v.evidence:
        head += (
            " (nothing in the log dir bounds it: a ZooKeeper-era dir, or no metadata.version; "
            "state it with --kafka-version)"
        )
    return [head] + [
        f"  at least {e.at_least}: {e.source.value} {e.detail} ({e.path})" for e in v.evidence
    ]


def unknown_config_lines(descs: Iterable[PartitionDescription]) -> list[str]:
    """One line per reason a shown config is unknown, naming the configs and how to state them."""
    from kafkalog_cli.config import Unknown, how_to_state

    by_reason: dict[str, set[str]] = {}
    for d in descs:
        for name, v in d.configs.items():
            if not v.known and not v.assumed:
                by_reason.setdefault(v.unknown.value, set()).add(name)
    lines = []
    for reason, config_names in by_reason.items():
        flags = how_to_state("TOPIC", "NAME", Unknown(reason))
        lines.append(
            f"unknown {', '.join(sorted(config_names))}: {reason}; state them with {', '.join(flags)}"
        )
    return lines


def rich_table(ld: LogDirDescription, descs: list[PartitionDescription]):
    from rich.table import Table

    table = Table(title=log_dir_summary(ld), title_justify="left", show_lines=False)
    for i, name in enumerate(COLUMNS):
        table.add_column(
            name.replace("_", " ").lower(),
            justify="left" if i == 0 or i >= 10 else "right",
            no_wrap=i == 0,
            overflow="fold",
        )  # a partition's name stays whole
    for d in descs:
        table.add_row(*row(d, iso=True))
    return table


def offsets_line(a: OffsetAnswer) -> str:
    """kafka-get-offsets' line: `topic:partition:offset`."""
    return f"{a.topic}:{a.partition}:{a.offset}"
