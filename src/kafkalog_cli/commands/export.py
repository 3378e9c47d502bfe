"""`kafkalog export`: records to Parquet (partitioned by topic/partition) or JSON Lines, over a
process pool or Spark."""

from __future__ import annotations

import json

import click

from kafkalog_cli.commands.options import (
    format_option,
    jobs_option,
    partition_filter_options,
    record_filter_options,
)
from kafkalog_cli.commands.schema_options import schema_options, schema_spec
from kafkalog_cli.spark.cli_options import engine_options


@click.command(
    "export",
    short_help="Export records to Parquet or JSON Lines, locally or on Spark.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, required=True)
@click.argument("out", type=click.Path())
@click.option(
    "--to",
    "to",
    type=click.Choice(["parquet", "jsonl"]),
    required=True,
    help="parquet: a directory OUT/topic=T/partition=P/*.parquet. "
    "jsonl: one JSON Lines file OUT, or standard output when OUT is -.",
)
@engine_options(remote=True)
@jobs_option("With --engine local: worker processes (0: one per core).")
@partition_filter_options
@click.option(
    "--payload-encoding",
    type=click.Choice(["utf8", "hex", "base64"]),
    default="utf8",
    show_default=True,
    help="jsonl: how keys, values and header values are written; utf8 is dump-log --format json's "
    "default too (lossy for binary payloads: invalid UTF-8 becomes U+FFFD, as kafka-dump-log "
    "prints it); hex and base64 keep the exact bytes.",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
    help="As a consumer's isolation.level: read_uncommitted returns the records up to the high "
    "watermark; read_committed also leaves out aborted transactions' records and stops at the "
    "last stable offset. Control records (transaction markers) are never returned.",
)
@click.option(
    "--include-control",
    is_flag=True,
    help="The raw view: every record of the files, control records and aborted ones included, and "
    "past the high watermark: the records dump-log --format json --deep-iteration prints.",
)
@click.option("--from-offset", type=int, default=None, help="Only records at or after this offset.")
@click.option("--to-offset", type=int, default=None, help="Only records at or before this offset.")
@click.option(
    "--from-time",
    default=None,
    metavar="MS|ISO-8601",
    help="Only records stamped at or after this (epoch ms, or ISO-8601: UTC without an offset).",
)
@click.option(
    "--to-time", default=None, metavar="MS|ISO-8601", help="Only records stamped at or before this."
)
@record_filter_options
@click.option("--no-payload", is_flag=True, help="Leave out keys and values.")
@click.option("--no-headers", is_flag=True, help="Leave out record headers.")
@click.option(
    "--compression",
    type=click.Choice(["snappy", "zstd", "gzip", "lz4", "brotli", "none"]),
    default="snappy",
    show_default=True,
    help="parquet: the codec of every column.",
)
@click.option(
    "--row-group-size",
    "row_group_rows",
    type=click.IntRange(min=1),
    default=1 << 20,
    show_default=True,
    metavar="ROWS",
    help="parquet: at most this many records a row group (a row group also ends once it holds about 64 MiB).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace OUT if it exists and is an earlier export (a topic=* directory tree, or a "
    "non-Kafka file for jsonl). OUT may never be inside an input, nor hold one.",
)
@schema_options
@format_option("How the summary is printed.")
def export(
    paths,
    out,
    to,
    engine,
    master,
    jobs,
    only,
    payload_encoding,
    isolation_level,
    include_control,
    from_offset,
    to_offset,
    from_time,
    to_time,
    record_filters,
    no_payload,
    no_headers,
    compression,
    row_group_rows,
    overwrite,
    fmt,
    decode_schemas=False,
    schemas=(),
    schema=(),
    reader_version=None,
    mask=(),
    mask_key_file=None,
):
    """Export the records of PATHS (log dirs, partition dirs or segment files) to OUT.

    PATHS may also be globs ('/backup/*/broker-*'), archives (a dir of brokers' log dirs),
    file:// URIs and remote URIs (s3a://, s3://, hdfs://, gs://), read through pyarrow.fs with
    ranged reads. Columns log_dir and broker_id (meta.properties' node.id or broker.id) say
    whose copy a row is; when a topic-partition is in several log dirs, the Parquet tree has
    a log_dir=<dir> level under partition=<n>.

    The records are those a Kafka consumer of each partition is returned, from its log start
    offset: no control records (transaction markers), nothing at or above the high watermark
    (the log dir's replication-offset-checkpoint; without an entry, the log end offset stands
    in, with a note on stderr); with --isolation-level read_committed no record of an aborted
    transaction either, and nothing from the last stable offset on, as `transactions` shows it.
    --include-control is the raw view: every record in the files. --from-offset, --to-offset,
    --from-time and --to-time keep the records within them (bounds included); --header,
    --producer-id and --leader-epoch keep those dump-log's same options show.

    The columns are those of the `kafkalog` Spark data source and of `dump-log --format json`:
    offset, timestamp, timestamp_type, key, value, headers, sequence, base_offset, producer_id,
    producer_epoch, is_transactional, is_control (crc and is_valid for legacy records, control
    for transaction markers) and segment; in Parquet, topic and partition are the directories.
    timestamp is an Arrow/Parquet timestamp (milliseconds, UTC); in JSON Lines, epoch ms.
    With --decode-schemas (or --schemas, --schema), Parquet's key and value columns of a topic
    with a schema are typed by its reader schema (records as structs, unions, arrays, maps, enums,
    timestamps, dates, decimals, UUIDs), followed by value_schema_id, value_bytes and value_error:
    what does not decode is kept there, as bytes (docs/schemas.md). --to jsonl writes the lines of
    dump-log --format json --decode-schemas (key and value as JSON, key_schema and value_schema),
    each key or value kept as bytes named in a note on stderr.
    The output is the same, byte for byte, with either engine. OUT is written beside itself and
    renamed into place when complete. A log dir's -delete and -stray partition dirs are not
    exported (a note on stderr); -future ones are, as the logs a broker loads.

    \b
    Exit codes: 0 exported; 2 usage; 3 a corrupt segment (nothing is written); 4 a path that is
    missing or not a log dir, partition dir or segment, OUT existing without --overwrite, or
    pyspark, pyarrow or Java missing; 6 the output could not be written.

    \b
    Examples:
      kafkalog export /var/lib/kafka/data --to parquet /data/kafka-parquet
      kafkalog export orders-3 --to jsonl orders-3.jsonl --payload-encoding base64
      kafkalog export orders-3 --to jsonl - | jq .value
      kafkalog export /var/lib/kafka/data --topic orders --isolation-level read_committed \\
          --from-time 2024-05-01 --to-time 2024-05-08 --to parquet last-week
      kafkalog export /shared/kafka --to parquet /shared/out --engine spark --master spark://m:7077
      kafkalog export 's3a://backups/kafka/*' --topic 'orders-*' --to parquet out --compression zstd
    """
    _check_pyarrow()
    from kafkalog_cli.commands.common import note_left_out
    from kafkalog_cli.spark.export import ExportOptions, export
    from kafkalog_cli.storage.logdir import left_out_of
    from kafkalog_cli.storage.selection import Filters

    note = note_left_out("not exported")
    for d, kind in left_out_of(paths):
        note(d, kind)

    from kafkalog_cli.commands.common import parse_time_option

    from_ms, to_ms = (
        parse_time_option(from_time, "--from-time"),
        parse_time_option(to_time, "--to-time"),
    )
    for lo, hi, names in (
        (from_offset, to_offset, "--from-offset {} is after --to-offset {}"),
        (from_ms, to_ms, "--from-time {} is after --to-time {}"),
    ):
        if lo is not None and hi is not None and lo > hi:
            raise click.UsageError(names.format(lo, hi) + ": nothing can match.")
    if include_control and isolation_level == "read_committed":
        raise click.UsageError(
            "--include-control is the raw view (read_uncommitted, every record); "
            "it excludes --isolation-level read_committed."
        )
    spec = schema_spec(paths, decode_schemas, schemas, schema, reader_version, mask, mask_key_file)
    opts = ExportOptions(
        to=to,
        payload_encoding=payload_encoding,
        include_payload=not no_payload,
        include_headers=not no_headers,
        compression=compression,
        row_group_rows=row_group_rows,
        isolation_level=isolation_level,
        include_control=include_control,
        from_offset=from_offset,
        to_offset=to_offset,
        from_time=from_ms,
        to_time=to_ms,
        schemas=spec,
        filters=Filters.given(**record_filters),
    )
    summary = export(
        list(paths),
        out,
        opts,
        engine=engine,
        master=master,
        jobs=jobs,
        overwrite=overwrite,
        only=only,
        on_note=lambda text: click.echo(f"kafkalog: note: {text}", err=True),
    )
    to_stderr = out == "-"  # stdout carries the records
    if fmt == "json":
        click.echo(json.dumps({"engine": engine, **summary}, indent=2), err=to_stderr)
    else:
        from kafkalog_cli.render.human import export_summary

        click.echo(export_summary(summary, to_stdout=to_stderr), err=to_stderr)


def _check_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        from kafkalog_cli.spark.session import SparkUnavailableError

        raise SparkUnavailableError(
            "export needs pyarrow: pip install 'kafkalog-cli[spark]'"
        ) from None
