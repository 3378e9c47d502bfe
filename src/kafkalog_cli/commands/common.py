"""Options shared by the read commands (dump-log, dump-index, verify-crc) and their parsing."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import click

from kafkalog_cli.commands.options import format_option, jobs_option, record_filter_options
from kafkalog_cli.errors import InputError, one_line


def read_options(f):
    """--format, --payload-encoding, the offset/time filters, the search on keys and values,
    the header, producer and leader epoch filters, --limit and --jobs."""
    decorators = [
        format_option(
            "text: kafka-dump-log's exact text. json: JSON Lines, one object per batch or record."
        ),
        click.option(
            "--payload-encoding",
            type=click.Choice(["utf8", "hex", "base64"]),
            default="utf8",
            show_default=True,
            help="--format json only (with --format text it is ignored, with a warning): "
            "how keys, values and header values are written: utf8 (as "
            "kafka-dump-log decodes them; the default of export --to jsonl too), "
            "hex or base64 (exact bytes).",
        ),
        click.option(
            "--from-offset",
            type=int,
            default=None,
            help="Start at the batch holding this offset (found through the offset index).",
        ),
        click.option("--to-offset", type=int, default=None, help="Stop after this offset."),
        click.option(
            "--from-time",
            default=None,
            metavar="MS|ISO-8601",
            help="Start at the first batch with a timestamp at or after this (found through the time index). "
            "An ISO-8601 time without an offset (2024-05-01T12:00) is UTC.",
        ),
        click.option(
            "--to-time",
            default=None,
            metavar="MS|ISO-8601",
            help="Leave out records stamped after this (ISO-8601 without an offset: UTC).",
        ),
        click.option("--key", default=None, help="Only records whose key is exactly this (UTF-8)."),
        click.option(
            "--key-hex",
            default=None,
            metavar="HEX",
            callback=_hex,
            help="Only records whose key is exactly these bytes, in hex (00ff...).",
        ),
        click.option(
            "--key-prefix",
            default=None,
            metavar="TEXT",
            callback=lambda ctx, param, v: None if v is None else v.encode("utf-8"),
            help="Only records whose key starts with this (UTF-8).",
        ),
        click.option(
            "--key-prefix-hex",
            default=None,
            metavar="HEX",
            callback=_hex,
            help="Only records whose key starts with these bytes, in hex.",
        ),
        click.option(
            "--key-regex",
            default=None,
            metavar="REGEX",
            callback=_bytes_regex,
            help="Only records with a key in which this Python regular expression finds a match "
            "(on the key's bytes; anchor it with ^...$ for the whole key).",
        ),
        click.option(
            "--grep",
            "value_regex",
            default=None,
            metavar="REGEX",
            callback=_bytes_regex,
            help="Only records with a value in which this Python regular expression finds a match "
            "(on the value's bytes).",
        ),
        record_filter_options,
        click.option(
            "--limit",
            type=click.IntRange(min=0),
            default=None,
            help="Stop after this many records (batches, without --deep-iteration).",
        ),
        jobs_option("Worker processes for large inputs (0: one per core)."),
    ]
    for d in reversed(decorators):
        f = d(f)
    return f


def _hex(ctx, param, value: str | None) -> bytes | None:
    if value is None:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not hex bytes (e.g. 00ff10)") from None


def _bytes_regex(ctx, param, value: str | None):
    """A regex given as text, compiled over bytes: its literal characters stand for their UTF-8,
    and \\xNN escapes for single bytes."""
    if value is None:
        return None
    import re

    try:
        return re.compile(value.encode("utf-8", "surrogateescape"))
    except re.error as e:
        raise click.BadParameter(f"{value!r} is not a regular expression: {e}") from None


def parse_time_option(value: str | None, option: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it carries an offset)."""
    if value is None:
        return None
    v = value.strip()
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither epoch milliseconds nor ISO-8601", param_hint=option
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def jobs_or_cores(jobs: int) -> int:
    return jobs if jobs > 0 else (os.cpu_count() or 1)


def require_exists(path: str) -> None:
    if not os.path.exists(path):
        raise InputError("no such file or directory", path=path)


def one_line_errors(f):
    """Re-raise a KafkalogError with its path and message escaped by `one_line`, so the line
    the command prints stays one line whatever the file is called."""
    import functools

    from kafkalog_cli.errors import KafkalogError

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except KafkalogError as e:
            if e.path is not None:
                e.path = one_line(str(e.path))
            e.message = one_line(e.message)
            raise

    return wrapper


# what a broker does with the partition dirs a command leaves alone (LogManager.loadLog)
_LEFT_OUT = {
    "delete": "a partition dir being deleted (-delete: the broker deletes it, never serves it)",
    "stray": "a stray replica's dir (-stray: KRaft keeps it aside for an operator)",
    "future": "a future replica's dir (-future: being moved into this log dir)",
    "live": "a live partition dir",
    "not-utf8": (
        "a dir whose name is not UTF-8 (no Kafka topic has such a name: a broker loads it under one "
        "with U+FFFD and serves it to nobody)"
    ),
}


def note_left_out(did: str):
    """A callback for storage's listings: one `kafkalog: note:` line on stderr per partition dir
    the command leaves alone, saying what it is and that the command `did` nothing with it
    ("not read", "left untouched"): nothing is skipped silently."""

    def note(directory, kind) -> None:
        click.echo(
            f"kafkalog: note: {one_line(str(directory))}: {_LEFT_OUT[kind.value]}: {did}", err=True
        )

    return note


def partition_groups(paths, kinds=None, only=None) -> dict:
    """What a command that changes log dirs acts on, {log dir: [partition dirs]}: those of
    `kinds` (by default live ones only) that `only` (--topic/--partition) matches, with a note for
    every partition dir left untouched."""
    from kafkalog_cli.storage.logdir import PartitionDirKind, select_partition_dirs

    selection = select_partition_dirs(
        paths, (PartitionDirKind.LIVE,) if kinds is None else kinds, only=only
    )
    note = note_left_out("left untouched")
    for d, kind in selection.left_out:
        note(d, kind)
    return selection.groups
