"""`kafkalog compact PATH...`: options -> ops.compact -> output."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

from kafkalog_cli.commands.change_run import report_run
from kafkalog_cli.commands.common import jobs_or_cores, partition_groups
from kafkalog_cli.commands.options import (
    InputPath,
    change_options,
    jobs_option,
    now_or_clock,
    partition_filter_options,
    report_option,
)
from kafkalog_cli.ops import compact as ops
from kafkalog_cli.ops.offset_map import DEFAULT_DEDUPE_BUFFER, SLOT_SIZE
from kafkalog_cli.ops.runner import Operation
from kafkalog_cli.render import human
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


@click.command(
    "compact", short_help="Compact cleanup.policy=compact topics, as the log cleaner does."
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Clean every compacted partition with cleanable bytes, whatever its dirty ratio.",
)
@click.option(
    "--dedupe-buffer-size",
    default=str(DEFAULT_DEDUPE_BUFFER),
    callback=_bytes,
    show_default=True,
    metavar="BYTES",
    help="log.cleaner.dedupe.buffer.size: the offset map's memory (24 bytes a "
    "key, 90% usable). More keys than fit: several rounds.",
)
@jobs_option(
    "Partitions cleaned in parallel, in worker processes (0: one per core). A "
    "partition cleaned alone splits its offset map's build over them."
)
@partition_filter_options
@change_options
@report_option
@engine_options
def compact(
    paths,
    force,
    dedupe_buffer_size,
    jobs,
    only,
    configs,
    quarantine_dir,
    no_quarantine,
    follow_symlinks,
    dry_run,
    fmt,
    now_ms,
    report_path,
    engine,
    master,
):
    """Compact the partitions of topics with cleanup.policy=compact as Kafka's log cleaner does:
    keep the last record of each key, drop keyless records, tombstones past their delete horizon
    and aborted transactions' data. Takes the log dir's .lock (not with --dry-run).

    --dry-run prints, per partition, the dirty section, its dirty ratio, whether it would be
    cleaned, and an estimate from a simulated round: keys, bytes freed, messages kept.

    Never cleans on a guess: a partition whose cleanup.policy, min.cleanable.dirty.ratio,
    min.compaction.lag.ms, max.compaction.lag.ms, delete.retention.ms (or, for compact,delete,
    retention.ms and retention.bytes) cannot be read is not cleaned, and one line on stderr says
    which value is unknown and how to state it (--server-properties, --config, --topic-config,
    or --assume-kafka-defaults). --force drops the dirty ratio and max lag from that list. A
    partition without a replication-offset-checkpoint entry has its high watermark at its log
    start offset, as the broker loads it: nothing of it is cleanable.

    \b
    Exit codes: 0 done or nothing to do; 1 --dry-run: a partition would be cleaned; 7 a partition
    was not cleaned as a deciding config is
    unknown (everything else was done); 2 usage error, 3 corrupt input, 4 bad path or
    a partition linked out of the log dir (left unchanged, the others done: --follow-symlinks), 5
    the log dir is locked, 6 write failure. Precedence: kafkalog --help.
    """
    check_engine(engine, master)
    groups = partition_groups(
        paths, only=only
    )  # the cleaner works on current logs: -future/-delete/-stray noted
    # on Spark, each task (one per log dir) cleans its partitions one after the other
    opts = ops.CompactOptions(
        now_ms=now_or_clock(now_ms),
        force=force,
        dedupe_buffer_size=dedupe_buffer_size,
        jobs=1 if engine == "spark" else jobs_or_cores(jobs),
    )
    # ops.compact.run plans and cleans partition by partition, over --jobs workers under the lock
    operation = Operation("compact", partial(ops.plan, estimate=True), opts, configs, run=ops.run)
    report_run(
        operation,
        groups,
        human.compact_outcome,
        fmt=fmt,
        engine=engine,
        master=master,
        report_path=report_path,
        dry_run=dry_run,
        quarantine_dir=quarantine_dir,
        no_quarantine=no_quarantine,
        follow_symlinks=follow_symlinks,
    )
