"""Click options shared by the commands, each defined once: --format and --jobs (every command
that has them), and those of the commands that change log dirs (recover, roll, retain, compact):
topic configs, quarantine, --dry-run, --now, --report. Running those commands and reporting their
runs is commands/change_run.py's.

Kept light: dump-log imports this, so the ops are imported only when a command runs."""

from __future__ import annotations

import functools
import time
from pathlib import Path

import click

# --format: the one vocabulary. text is what the command prints for people (for dump-log and
# dump-index, kafka-dump-log's exact text); json is for machines. The names the commands took
# before (kafka, human) still mean text, so no script breaks.
FORMATS = ("text", "json")
FORMAT_ALIASES = {"kafka": "text", "human": "text"}


class InputPath(click.Path):
    """click.Path for a path the command reads: a missing, unreadable or wrong-kind path is exit 4
    with one line naming it (README "Exit codes"), never click's usage error (exit 2). Readability
    is left to the command, which reads the path through storage.files, names what it cannot read
    and still processes the other paths."""

    def __init__(self, **kw):
        kw.setdefault("readable", False)
        super().__init__(**kw)

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            import os

            from kafkalog_cli.errors import InputError

            path = os.fsdecode(value)
            if not os.path.exists(path):
                why = (
                    "dangling symbolic link (its target does not exist)"
                    if os.path.islink(path)
                    else "no such file or directory"
                )
            elif os.path.isdir(path):
                why = "is a directory, not a file"
            elif not self.file_okay:
                why = "not a directory"
            else:
                why = "cannot be read"
            raise InputError(why, path=path) from None


class FormatChoice(click.Choice):
    """click.Choice over FORMATS that also takes FORMAT_ALIASES, as the name they stand for.
    --help, completion and errors name only FORMATS."""

    def __init__(self):
        super().__init__(FORMATS)

    def convert(self, value, param, ctx):
        return super().convert(FORMAT_ALIASES.get(value, value), param, ctx)


def format_option(help: str):
    return click.option(
        "--format", "fmt", type=FormatChoice(), default="text", show_default=True, help=help
    )


def jobs_option(help: str):
    return click.option(
        "--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="every core", help=help
    )


def _stack(*decorators):
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def _config_sources(f):
    """Hands the command one `configs` (an ops.runner.ConfigSources) for the five options."""

    @functools.wraps(f)
    def wrapper(
        *args,
        config_pairs,
        topic_config_items,
        server_properties,
        no_cluster_metadata,
        assume_kafka_defaults,
        kafka_version,
        remote_log_metadata,
        **kwargs,
    ):
        from kafkalog_cli.ops.runner import ConfigSources

        configs = ConfigSources(
            tuple(config_pairs),
            tuple(topic_config_items),
            server_properties,
            no_cluster_metadata,
            assume_kafka_defaults=assume_kafka_defaults,
            kafka_version=kafka_version,
            remote_log_metadata=tuple(remote_log_metadata),
        )
        return f(*args, configs=configs, **kwargs)

    return wrapper


def _kafka_version_help() -> str:
    from kafkalog_cli.config.versions import KNOWN_VERSIONS_TEXT, rules_summary

    return (
        "The Kafka version that will start on the log dir next ("
        + KNOWN_VERSIONS_TEXT
        + "; an older one "
        "follows 3.3's rules, a newer one is exit 2): decides the rules that changed between versions where "
        "the log dir does not (describe shows the range it allows). Older than what the dir proves: exit 2. "
        "What changes: " + rules_summary() + "."
    )


kafka_version_option = click.option(
    "--kafka-version", metavar="VERSION", help=_kafka_version_help()
)

config_options = _stack(
    click.option(
        "--config",
        "config_pairs",
        multiple=True,
        metavar="KEY=VALUE",
        help="A topic config (Kafka's name and unit, e.g. retention.ms=86400000) for every topic. "
        "Repeatable. An unknown name or a bad value is a usage error (exit 2).",
    ),
    click.option(
        "--topic-config",
        "topic_config_items",
        multiple=True,
        metavar="TOPIC:KEY=VALUE",
        help="A topic config for one topic; wins over --config. Repeatable. A topic with no "
        "partition in the paths given is a usage error (exit 2).",
    ),
    click.option(
        "--server-properties",
        type=InputPath(exists=True, dir_okay=False, path_type=Path),
        help="The broker's server.properties: its log.* settings are the defaults. A file with "
        "no broker setting, or a value Kafka would refuse, is a usage error (exit 2).",
    ),
    click.option(
        "--no-cluster-metadata",
        is_flag=True,
        help="Ignore the topic configs recorded in the log dir's __cluster_metadata.",
    ),
    click.option(
        "--assume-kafka-defaults",
        is_flag=True,
        help="The broker ran with Kafka's defaults: take them for every config that cannot be "
        "read (else retain and compact refuse to delete by it, exit 7).",
    ),
    kafka_version_option,
    click.option(
        "--remote-log-metadata",
        multiple=True,
        metavar="PATH",
        type=InputPath(exists=True, file_okay=False, path_type=Path),
        help="Where a tiered partition's upload state is: a __remote_log_metadata-N partition dir, or a "
        "log dir holding it (e.g. a copy from the broker that leads it). Repeatable. Else the log "
        "dir's own is read, and without one a deletion that depends on it is refused (exit 7).",
    ),
    _config_sources,
)

quarantine_options = _stack(
    click.option(
        "--quarantine",
        "quarantine_dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Where removed bytes and files go [default: <logdir>/../.kafkalog-quarantine/"
        "<logdir name>/<UTC time>-<command>/].",
    ),
    click.option("--no-quarantine", is_flag=True, help="Drop removed data instead of keeping it."),
)

follow_symlinks_option = click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Also change a partition whose dir, or a file in it, is a symbolic link that leads out of the log dir, "
    "writing through the link as a broker does. Without it such a partition is left unchanged, one line on "
    "stderr says which and where the link leads (exit 4), and the others are done.",
)

dry_run_option = click.option(
    "--dry-run", "-n", is_flag=True, help="Print the plan and change nothing (takes no lock)."
)

now_option = click.option(
    "--now",
    "now_ms",
    type=int,
    metavar="MS",
    help="The clock, in epoch milliseconds [default: the system clock].",
)

report_option = click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also append the run's JSON Lines (as --format json prints them, a run id and "
    "time on each, totals last) to this file.",
)

# what every command that changes log dirs takes, in their --help order
RUN_FORMAT_HELP = (
    "text: the plan or what was done, then one summary line. json: the run's JSON Lines, a run id and "
    "time on each: a line per partition, per log dir, and the totals (kafkalog(1), REPORTS)."
)
change_options = _stack(
    config_options,
    quarantine_options,
    follow_symlinks_option,
    dry_run_option,
    format_option(RUN_FORMAT_HELP),
    now_option,
)


def now_or_clock(now_ms: int | None) -> int:
    return now_ms if now_ms is not None else int(time.time() * 1000)


def _partition_filter(f):
    """Hands the command one `only` (a storage.names.PartitionFilter; falsy when neither option
    was given) for --topic and --partition."""

    @functools.wraps(f)
    def wrapper(*args, topic_patterns, partition_numbers, **kwargs):
        from kafkalog_cli.storage.names import PartitionFilter

        return f(
            *args, only=PartitionFilter(tuple(topic_patterns), tuple(partition_numbers)), **kwargs
        )

    return wrapper


# --topic/--partition: on every command that takes log dirs, so an operator never lists
# partition dirs by hand
partition_filter_options = _stack(
    click.option(
        "--topic",
        "topic_patterns",
        multiple=True,
        metavar="PATTERN",
        help="Only the partitions of topics matching this glob (orders, 'orders-*'). Repeatable. "
        "Matching no partition is an error (exit 4).",
    ),
    click.option(
        "--partition",
        "partition_numbers",
        multiple=True,
        type=click.IntRange(min=0),
        metavar="N",
        help="Only partition N (of every topic, or of --topic's). Repeatable.",
    ),
    _partition_filter,
)


def _header_match(hex_value: bool):
    """--header K=V / --header-hex K=HEX as a formats.record_search.HeaderMatch (K alone: any
    value); the key is the text before the first '='."""

    def convert(ctx, param, values):
        from kafkalog_cli.formats.record_search import HeaderMatch

        out = []
        for given in values:
            key, eq, value = given.partition("=")
            if not key:
                raise click.BadParameter(f"{given!r} names no header key (K=V, or K alone)")
            if not eq:
                out.append(HeaderMatch(key))
            elif hex_value:
                try:
                    out.append(HeaderMatch(key, bytes.fromhex(value)))
                except ValueError:
                    raise click.BadParameter(
                        f"{given!r}: {value!r} is not hex bytes (e.g. K=00ff10)"
                    ) from None
            else:
                out.append(HeaderMatch(key, value.encode("utf-8", "surrogateescape")))
        return tuple(out)

    return convert


def _record_filters(f):
    """Hands the command one `record_filters` (the keyword arguments of storage.selection.Filters
    for --header, --header-hex, --producer-id, --producer-epoch and --leader-epoch)."""

    @functools.wraps(f)
    def wrapper(*args, header_text, header_hex, producer_id, producer_epoch, leader_epoch, **kw):
        if producer_epoch is not None and producer_id is None:
            raise click.UsageError(
                "--producer-epoch needs --producer-id: an epoch belongs to one producer."
            )
        record_filters = dict(
            headers=tuple(header_text) + tuple(header_hex),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            leader_epoch=leader_epoch,
        )
        return f(*args, record_filters=record_filters, **kw)

    return wrapper


# --header, --producer-id, --leader-epoch: dump-log's and export's, judged by storage.selection.Filters
record_filter_options = _stack(
    click.option(
        "--header",
        "header_text",
        multiple=True,
        metavar="K[=V]",
        callback=_header_match(False),
        help="Only records with a header K whose value is V (UTF-8; the key is the text before "
        "the first '='); K alone: any value. Repeatable: a record passes with one of them.",
    ),
    click.option(
        "--header-hex",
        "header_hex",
        multiple=True,
        metavar="K=HEX",
        callback=_header_match(True),
        help="As --header, the value in hex (K=00ff...). Repeatable, with --header too.",
    ),
    click.option(
        "--producer-id",
        type=click.IntRange(min=-1),
        default=None,
        metavar="N",
        help="Only the batches of producer id N (-1: those written without one, legacy "
        "batches too); judged on the batch header, without decoding records.",
    ),
    click.option(
        "--producer-epoch",
        type=click.IntRange(min=-1, max=32767),
        default=None,
        metavar="E",
        help="With --producer-id: only its batches of epoch E.",
    ),
    click.option(
        "--leader-epoch",
        type=click.IntRange(min=-1, max=2147483647),
        default=None,
        metavar="N",
        help="Only the batches whose partitionLeaderEpoch is N (-1: legacy batches); judged on "
        "the batch header, without decoding records.",
    ),
    _record_filters,
)
