"""Click option decorators shared by the commands that change log dirs (recover, roll, retain,
compact): topic configs, quarantine, --dry-run, --format, --now."""
from __future__ import annotations

import functools
import time
from pathlib import Path

import click

from kafkalog_cli.config import (ClusterMetadata, ConfigResolver, MetadataState, parse_key_values,
                                 parse_topic_key_values, read_cluster_metadata, read_server_properties)


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

format_option = click.option("--format", "fmt", type=click.Choice(["human", "json"]),
                             default="human", show_default=True, help="Output format.")

now_option = click.option("--now", "now_ms", type=int, metavar="MS",
                          help="The clock, in epoch milliseconds [default: the system clock].")


def resolver_from_options(log_dir: Path | None, config_pairs=(), topic_config_items=(),
                          server_properties: Path | None = None,
                          no_cluster_metadata: bool = False, *, topics=None,
                          assume_kafka_defaults: bool = False) -> ConfigResolver:
    """The resolver for one log dir. `topics`: those of every log dir the command processes (a
    --topic-config for another topic is a usage error); the resolver's `warning` is the one
    line to print when the log dir's __cluster_metadata is damaged."""
    if no_cluster_metadata or log_dir is None:
        metadata = ClusterMetadata(MetadataState.IGNORED if no_cluster_metadata else MetadataState.ABSENT)
    else:
        metadata = read_cluster_metadata(log_dir)
    return ConfigResolver(
        server_properties=read_server_properties(server_properties) if server_properties else None,
        cluster_metadata=metadata,
        overrides=parse_key_values(config_pairs, "--config"),
        topic_overrides=parse_topic_key_values(topic_config_items, topics),
        assume_kafka_defaults=assume_kafka_defaults,
    )


def now_or_clock(now_ms: int | None) -> int:
    return now_ms if now_ms is not None else int(time.time() * 1000)
