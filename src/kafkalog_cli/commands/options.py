"""Click option decorators shared by the commands, each defined once: --format and --jobs (every
command that has them), and those of the commands that change log dirs (recover, roll, retain,
compact): topic configs, quarantine, --dry-run, --now."""
from __future__ import annotations

import functools
import time
from pathlib import Path

import click

from kafkalog_cli.config import (ConfigResolver, cluster_metadata_configs, parse_key_values,
                                 parse_topic_key_values, read_properties)


# --format: the one vocabulary. text is what the command prints for people (for dump-log and
# dump-index, kafka-dump-log's exact text); json is for machines. The names the commands took
# before (kafka, human) still mean text, so no script breaks.
FORMATS = ("text", "json")
FORMAT_ALIASES = {"kafka": "text", "human": "text"}


class FormatChoice(click.Choice):
    """click.Choice over FORMATS that also takes FORMAT_ALIASES, as the name they stand for.
    --help, completion and errors name only FORMATS."""

    def __init__(self):
        super().__init__(FORMATS)

    def convert(self, value, param, ctx):
        return super().convert(FORMAT_ALIASES.get(value, value), param, ctx)


def format_option(help: str):
    return click.option("--format", "fmt", type=FormatChoice(), default="text", show_default=True, help=help)


def jobs_option(help: str):
    return click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="every core", help=help)


def _stack(*decorators):
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


config_options = _stack(
    click.option("--config", "config_pairs", multiple=True, metavar="KEY=VALUE",
                 help="A topic config (Kafka's name and unit, e.g. retention.ms=86400000) for every topic. "
                      "Repeatable. An unknown name or a bad value is a usage error (exit 2)."),
    click.option("--topic-config", "topic_config_items", multiple=True, metavar="TOPIC:KEY=VALUE",
                 help="A topic config for one topic; wins over --config. Repeatable."),
    click.option("--server-properties", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                 help="The broker's server.properties: its log.* settings are the defaults."),
    click.option("--no-cluster-metadata", is_flag=True,
                 help="Ignore the topic configs recorded in the log dir's __cluster_metadata."),
)

quarantine_options = _stack(
    click.option("--quarantine", "quarantine_dir", type=click.Path(file_okay=False, path_type=Path),
                 help="Where removed bytes and files go [default: <logdir>/../.kafkalog-quarantine/"
                      "<logdir name>/<UTC time>-<command>/]."),
    click.option("--no-quarantine", is_flag=True, help="Drop removed data instead of keeping it."),
)

dry_run_option = click.option("--dry-run", "-n", is_flag=True,
                              help="Print the plan and change nothing (takes no lock).")

now_option = click.option("--now", "now_ms", type=int, metavar="MS",
                          help="The clock, in epoch milliseconds [default: the system clock].")


def resolver_from_options(log_dir: Path | None, config_pairs=(), topic_config_items=(),
                          server_properties: Path | None = None,
                          no_cluster_metadata: bool = False) -> ConfigResolver:
    return ConfigResolver(
        server_properties=read_properties(server_properties) if server_properties else {},
        cluster_metadata={} if no_cluster_metadata or log_dir is None else cluster_metadata_configs(log_dir),
        overrides=parse_key_values(config_pairs, "--config"),
        topic_overrides=parse_topic_key_values(topic_config_items),
    )


def now_or_clock(now_ms: int | None) -> int:
    return now_ms if now_ms is not None else int(time.time() * 1000)
