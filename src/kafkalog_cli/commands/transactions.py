"""`kafkalog transactions PATH...`: options -> ops.transactions -> Kafka's tables or JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkalog_cli.commands.options import (
    InputPath,
    format_option,
    now_option,
    now_or_clock,
    partition_filter_options,
)
from kafkalog_cli.commands.quarantine import Duration
from kafkalog_cli.errors import ExitCode, KafkalogError
from kafkalog_cli.render.transactions import hanging_table, partition_tables


@click.command(
    "transactions",
    short_help="Producers, open transactions and last stable offsets; find hanging transactions.",
)
@click.argument("paths", nargs=-1, required=True, type=InputPath(path_type=Path))
@click.option(
    "--find-hanging",
    is_flag=True,
    help="Only the hanging transactions, as kafka-transactions.sh find-hanging (exit 1 when there are).",
)
@click.option(
    "--max-age",
    type=Duration(),
    default="15m",
    show_default=True,
    metavar="DURATION",
    help="With --find-hanging: an open transaction whose producer wrote nothing for longer than this is "
    "a candidate (find-hanging's --max-transaction-timeout). 30m, 2h, 1d12h.",
)
@click.option(
    "--producers", is_flag=True, help="Text: also list every active producer (describe-producers)."
)
@now_option
@click.option(
    "--server-properties",
    type=InputPath(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The broker's server.properties: its producer.id.expiration.ms decides which producers have "
    "expired (without it: __cluster_metadata's broker config, else Kafka's default, 1 day).",
)
@format_option(
    "text: Kafka's tables. json: one object per partition (with --find-hanging: per hanging "
    "transaction)."
)
@partition_filter_options
def transactions(paths, find_hanging, max_age, producers, now_ms, server_properties, fmt, only):
    """What a broker knows of each partition's producers and transactions, from the files: the
    producer state rebuilt from the latest producer snapshot and the log after it (without the
    producers expired at --now), the open transactions with their first offset and the time since
    their producer's last write, and the last stable offset (LSO): the first offset of the
    earliest transaction still open at the high watermark, else the high watermark, as
    UnifiedLog.lastStableOffset. The high watermark is the replication-offset-checkpoint's; with
    none, the log end offset stands in for it (json: stable_bound).

    --find-hanging is kafka-transactions.sh find-hanging, offline: an open transaction whose
    producer's last timestamp is more than --max-age before --now is a candidate. It hangs unless
    the transaction coordinator still expects to write its marker: the producer id has a
    transactional id in __transaction_state whose current transaction (Ongoing, PrepareCommit,
    PrepareAbort) includes the partition. Offline, the coordinator's state is known only from the
    __transaction_state partitions among the PATHs (all of them are needed: a transactional id
    lives in one); without any, every candidate is reported (coordinator_state null), as nothing
    tells a slow transaction from a hanging one. What the live coordinator would do next (abort on
    its transaction timeout) cannot be known from files. Each hanging transaction gets a
    `kafkalog: next:` line on stderr (json: abort_command) with kafka-transactions.sh's abort
    for it: `abort --topic T --partition P --start-offset N` (brokers 3.0 and later), or with
    --producer-id, --producer-epoch and --coordinator-epoch before 3.0.

    Producers expired at the clock (--now, else the system clock: no open transaction and idle
    longer than producer.id.expiration.ms, from --server-properties, __cluster_metadata or Kafka's
    default) are not shown, as the broker expires them; a `kafkalog: note:` line on stderr counts
    them (json: expired_producer_ids).

    Transactions version 2 (Kafka 4.0, KIP-890): a marker carries its data's producer epoch + 1
    and closes the transaction as any marker does (a broker's load takes a marker at any epoch);
    at epoch exhaustion the producer id rotates, and the old id stays a producer with no
    transaction until it expires. A transaction left open under an old id hangs; where
    __transaction_state records previousProducerId, the reason names its transactional id.

    \b
    Exit codes: 0 done (no hanging transaction with --find-hanging); 1 --find-hanging found
    hanging transactions; 2 usage error; 3 corrupt input: one line each (a damaged active
    segment is read up to the damage and shown; a partition that cannot be read at all is
    left out; 3 wins over 1); 4 bad path or no partition.
    """
    from kafkalog_cli.config import ConfigResolver, read_server_properties
    from kafkalog_cli.ops import transactions as ops
    from kafkalog_cli.storage.logdir import select_partition_dirs

    now = now_or_clock(now_ms)
    clock = (
        "--now"
        if now_ms is not None
        else "the system clock; --now MS reads the files as of another time"
    )
    broker = read_server_properties(server_properties) if server_properties is not None else None
    groups = select_partition_dirs(paths, only=only).groups
    results: list[tuple[Path, ops.PartitionTransactions]] = []
    failed = 0  # a partition that cannot be read does not hide the others
    for log_dir, dirs in groups.items():
        resolver = ConfigResolver.of_log_dir(log_dir, server_properties=broker)
        for partition in ops.read_partitions(log_dir, dirs):
            if (
                partition.topic_partition.topic == ops.KRAFT_METADATA_TOPIC
                or not partition.segments
            ):
                continue
            try:
                pt = ops.partition_transactions(
                    partition, now, ops.expiration_ms(resolver, partition.topic_partition.topic)
                )
            except KafkalogError as e:
                click.echo(f"kafkalog: {e.line()}", err=True)
                failed = failed or int(e.exit_code)
                continue
            for note in pt.notes:
                click.echo(f"kafkalog: warning: {note}", err=True)
            if pt.expired:
                expiration = resolver.for_topic(partition.topic_partition.topic).source(
                    "producer.id.expiration.ms"
                )
                click.echo(
                    f"kafkalog: note: {pt.name}: {len(pt.expired)} producer(s) in the files not shown "
                    f"(producer id {', '.join(str(p.producer_id) for p in pt.expired)}): expired at the clock "
                    f"used, {_iso(now)} ({clock}): no open transaction and no write for "
                    f"longer than {expiration}, as the broker expires them "
                    "(describe lists every producer in the files, "
                    f"without a clock)",
                    err=True,
                )
            if pt.damage is not None:
                click.echo(f"kafkalog: {pt.damage.line()}", err=True)
                failed = failed or int(pt.damage.exit_code)
            results.append((log_dir, pt))
    if find_hanging:
        coordinator = _coordinator(paths, ops)
        hanging = ops.find_hanging(
            (t for _, pt in results for t in pt.open), int(max_age * 1000), coordinator
        )
        if fmt == "json":
            for h in hanging:
                click.echo(json.dumps(h.to_dict()))
        else:
            click.echo(hanging_table(hanging), nl=False)
            for h in hanging:
                click.echo(_next_step(h), err=True)
        failed = failed or (int(ExitCode.PROBLEMS) if hanging else 0)
    elif fmt == "json":
        for log_dir, pt in results:
            click.echo(json.dumps({"kind": "partition", "log_dir": str(log_dir), **pt.to_dict()}))
    else:
        click.echo(partition_tables([pt for _, pt in results], producers), nl=False)
    if failed:
        click.get_current_context().exit(failed)


def _next_step(h) -> str:
    """What to do about a hanging transaction, with the broker running (kafkalog writes no marker)."""
    t = h.txn
    out = (
        f"kafkalog: next: {t.topic}-{t.partition}: the transaction from offset {t.start_offset} holds the last "
        f"stable offset (read_committed consumers stop there); with the broker running, abort it with "
        f"`{h.abort_command}` (brokers 3.0 and later; before 3.0: `{h.abort_command_before_3_0}`), "
        f"which makes the partition's leader write the ABORT marker"
    )
    if h.describe_command:
        out += f"; `{h.describe_command}` shows what the coordinator holds first"
    return out


def _iso(ms: int) -> str:
    from kafkalog_cli.render.jsonl import iso_time

    return iso_time(ms) or str(ms)


def _coordinator(paths, ops):
    """The coordinator's view from every __transaction_state partition among `paths` (whatever
    --topic says: it is where the transactions are decided), None when there is none."""
    from kafkalog_cli.storage.logdir import select_partition_dirs
    from kafkalog_cli.storage.names import PartitionFilter

    groups = select_partition_dirs(paths).groups
    state = [
        p
        for log_dir, dirs in groups.items()
        for p in ops.read_partitions(
            log_dir,
            [d for d in dirs if PartitionFilter((ops.TRANSACTION_STATE_TOPIC,)).matches_dir(d)],
        )
    ]
    return ops.coordinator_transactions(state) if state else None
