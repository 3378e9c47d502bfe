"""`kafkalog compact PATH...`: options -> ops.compact -> output."""
from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.options import (config_options, dry_run_option, format_option, jobs_option, now_option,
                                           now_or_clock, quarantine_options, resolver_from_options)
from kafkalog_cli.commands.common import jobs_or_cores
from kafkalog_cli.ops import compact as ops
from kafkalog_cli.ops.offset_map import DEFAULT_DEDUPE_BUFFER, SLOT_SIZE
from kafkalog_cli.storage.fsops import FsOps, Quarantine, quarantine_root
from kafkalog_cli.storage.lock import LogDirLock
from kafkalog_cli.spark.cli_options import check_engine, engine_options

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _bytes(ctx, param, value: str) -> int:
    """134217728, 128m, 128MiB, 1g."""
    v = value.strip().lower().removesuffix("ib").removesuffix("b")
    mult = _UNITS.get(v[-1:], 1)
    try:
        n = int(v[:-1] if v[-1:] in _UNITS else v) * mult
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 134217728, 128m, 1g)") from None
    if n < 2 * SLOT_SIZE:
        raise click.BadParameter(f"{value!r} holds no key: at least {2 * SLOT_SIZE} bytes")
    return n


@click.command("compact", short_help="Compact cleanup.policy=compact topics, as the log cleaner does.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--force", is_flag=True,
              help="Clean every compacted partition with cleanable bytes, whatever its dirty ratio.")
@click.option("--dedupe-buffer-size", default=str(DEFAULT_DEDUPE_BUFFER), callback=_bytes, show_default=True,
              metavar="BYTES", help="log.cleaner.dedupe.buffer.size: the offset map's memory (24 bytes a "
                                    "key, 90% usable). More keys than fit: several rounds.")
@jobs_option("Partitions cleaned in parallel, in worker processes (0: one per core). A "
             "partition cleaned alone splits its offset map's build over them.")
@config_options
@quarantine_options
@dry_run_option
@format_option("Output format.")
@now_option
@engine_options
def command(paths, force, dedupe_buffer_size, jobs, config_pairs, topic_config_items, server_properties,
            no_cluster_metadata, quarantine_dir, no_quarantine, dry_run, fmt, now_ms, engine, master):
    """Compact the partitions of topics with cleanup.policy=compact as Kafka's log cleaner does:
    keep the last record of each key, drop keyless records, tombstones past their delete horizon
    and aborted transactions' data. Takes the log dir's .lock (not with --dry-run).

    --dry-run prints, per partition, the dirty section, its dirty ratio, whether it would be
    cleaned, and an estimate from a simulated round: keys, bytes freed, messages kept."""
    check_engine(engine, master)
    groups = ops.partition_dirs_for(paths)
    now = now_or_clock(now_ms)
    run_args = (now, force, dedupe_buffer_size, 1 if engine == "spark" else jobs_or_cores(jobs), config_pairs,
                topic_config_items, server_properties, no_cluster_metadata, quarantine_dir, no_quarantine, dry_run)
    if engine == "spark":  # one Spark task per log dir runs _run (lock, plan, apply) on an executor
        from kafkalog_cli.spark.engine import run_partitions

        ran = run_partitions(_run, list(groups.items()), engine="spark", master=master, args=run_args, star=True)
    reports = []
    for i, (log_dir, parts) in enumerate(groups.items()):
        cp, report = ran[i] if engine == "spark" else _run(log_dir, parts, *run_args)
        if dry_run:
            reports.append({"dry_run": True, **cp.to_json()})
            if fmt == "text":
                click.echo(cp.render())
            continue
        reports.append(report)
        if fmt == "text":
            click.echo(cp.render())
            for c in report["cleaned"]:
                click.echo(f"  cleaned {c['partition']}: {c['messages_read']} -> {c['messages_written']} messages, "
                           f"{c['bytes_freed']} bytes freed in {len(c['rounds'])} round(s); "
                           f"cleaner-offset-checkpoint {c['cleaner_offset_checkpoint']}")
            if report.get("quarantine"):
                click.echo(f"  replaced segments kept in {report['quarantine']}")
    if fmt == "json":
        click.echo(json.dumps(reports if len(reports) != 1 else reports[0], indent=2))


def _run(log_dir: Path, parts: list[Path], now: int, force, dedupe_buffer_size, jobs, config_pairs,
         topic_config_items, server_properties, no_cluster_metadata, quarantine_dir, no_quarantine, dry_run):
    """One log dir, as the loop above always did it: (plan, None) with --dry-run, else (plan,
    report) under the log dir's lock. Module level, so a Spark task can run it."""
    resolver = resolver_from_options(log_dir, config_pairs, topic_config_items, server_properties,
                                     no_cluster_metadata)
    opts = ops.CompactOptions(now_ms=now, force=force, dedupe_buffer_size=dedupe_buffer_size,
                              jobs=jobs, resolver=resolver)
    root = quarantine_root(log_dir, quarantine_dir, no_quarantine)
    if dry_run:
        return ops.plan(log_dir, parts, opts, estimate=True), None
    with LogDirLock(log_dir):
        # the workers of --jobs run under this lock: they never take it themselves
        return ops.run(log_dir, parts, opts, FsOps(log_dir, Quarantine(root, "compact")))
