"""`kafkalog dump-log`: kafka-dump-log's flags and output, plus JSON Lines and filters."""

from __future__ import annotations

import os
import sys

import click

from kafkalog_cli.commands.common import jobs_or_cores, parse_time_option, read_options
from kafkalog_cli.commands.common import one_line_errors as _one_line_errors
from kafkalog_cli.commands.options import InputPath, partition_filter_options
from kafkalog_cli.commands.schema_options import schema_decoding, schema_options
from kafkalog_cli.config.versions import DUMP_LOG_LEADER_CHANGE, KafkaVersion
from kafkalog_cli.ops.verify_index import DEFAULT_MAX_MESSAGE_SIZE
from kafkalog_cli.render.kafka import (
    INT_MAX,
    METADATA_TEXTS,
    DumpOptions,
    KafkaDumper,
    cluster_metadata_parser,
    decoder_for,
    decoder_parser,
    dump_log_text,
    offsets_parser,
    remote_log_metadata_parser,
    share_group_state_parser,
    transaction_log_parser,
)
from kafkalog_cli.storage.selection import Filters, segments_in_range

_DEFAULT_DECODER = "kafka.serializer.StringDecoder"


@click.command(
    "dump-log",
    short_help="Print segments as kafka-dump-log does, or as JSON Lines.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, type=InputPath())
@click.option(
    "--files",
    "files",
    metavar="FILE[,FILE...]",
    multiple=True,
    help="Kafka's form: a comma-separated list of files to dump (may be repeated).",
)
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batch headers.")
@click.option(
    "--print-data-log", is_flag=True, help="Print keys and values too (implies --deep-iteration)."
)
@click.option(
    "--skip-record-metadata",
    is_flag=True,
    help="With --print-data-log: print only keys and values.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=0),
    default=INT_MAX,
    show_default="2147483647",
    help="Read at most this many bytes of each .log file (not negative: kafka-dump-log dies on that).",
)
@click.option(
    "--max-message-size",
    type=int,
    default=DEFAULT_MAX_MESSAGE_SIZE,
    show_default=True,
    help="Largest batch expected when checking .index entries against the log.",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Index files: check entries against the log, print only problems.",
)
@click.option(
    "--index-sanity-check", is_flag=True, help="Index files: run Kafka's sanityCheck only."
)
@click.option(
    "--offsets-decoder",
    is_flag=True,
    help="Decode __consumer_offsets records (implies --print-data-log).",
)
@click.option(
    "--transaction-log-decoder",
    is_flag=True,
    help="Decode __transaction_state records (implies --print-data-log).",
)
@click.option(
    "--cluster-metadata-decoder",
    is_flag=True,
    help="Decode KRaft __cluster_metadata records (implies --print-data-log).",
)
@click.option(
    "--metadata-decoder-version",
    type=click.Choice(["3.3.1", "3.9", "4.2"]),
    default=None,
    show_default="3.3.1, or --kafka-version's",
    help="With --cluster-metadata-decoder, text as this kafka-dump-log prints it: 3.3.1's, byte for byte "
    "(its errors on record versions newer brokers write included), 3.9's (metadata.version up to "
    "3.9-IV0) or 4.2's (every record type and version up to metadata.version 4.2-IV1). JSON decodes "
    "with 4.2's schemas always.",
)
@click.option(
    "--kafka-version",
    metavar="VERSION",
    default=None,
    help="The output of this Kafka's kafka-dump-log, 3.3 (3.3.1, the default) to 4.2 (3.4 is 3.4.1). "
    "--format text: --offsets-decoder prints 3.3.1's text up to 3.7, where from 3.4.1 a key of an "
    "unknown version prints `unknown::version=N` and values of the flexible version read; from 3.8 "
    "CoordinatorRecordSerde's JSON (record types 0-8; 4.0: 0-16; 4.1 on: every type); "
    "--transaction-log-decoder 3.3.1's text, from 3.4.1 to 4.0 3.9's (version 1 values, "
    "`unknown::version=N`), from 4.1 the coordinator's JSON; from 4.0 a coordinator value of an "
    "unknown version is skipped (`Found an unknown record version`); --cluster-metadata-decoder the "
    "metadata records the release knows (3.3-IV3, 3.4-IV0, 3.5-IV2, 3.6-IV2, 3.7-IV4 with 3.7's "
    "`lastKnownELR`, 3.9-IV0 for 3.8 and 3.9, 4.2-IV1 from 4.0); --remote-log-metadata-decoder (a 3.9 "
    "option) without txnIdxEmpty in 3.9 only; --share-group-state-decoder (a 4.0 option) in 4.0's "
    'own form (the value as {"type":"V",...}, 4.0\'s schemas); LeaderChange control records decoded from 4.1 '
    "(` LeaderChange: {...}`). --format json: from 4.1 on a KRaft control record's `control` holds "
    "its decoded `body` (LeaderChange, KRaftVersion, KRaftVoters).",
)
@click.option(
    "--remote-log-metadata-decoder",
    is_flag=True,
    help="Decode tiered-storage __remote_log_metadata records (implies --print-data-log).",
)
@click.option(
    "--share-group-state-decoder",
    is_flag=True,
    help="Decode __share_group_state records (implies --print-data-log).",
)
@click.option(
    "--key-decoder-class",
    is_flag=False,
    flag_value=_DEFAULT_DECODER,
    default=None,
    metavar="[CLASS]",
    help="StringDecoder (default), IntegerDecoder, LongDecoder or DefaultDecoder (implies --print-data-log).",
)
@click.option(
    "--value-decoder-class",
    is_flag=False,
    flag_value=_DEFAULT_DECODER,
    default=None,
    metavar="[CLASS]",
    help="As --key-decoder-class, for values.",
)
@read_options
@click.option(
    "--timestamps",
    type=click.Choice(["ms", "iso"]),
    default="ms",
    show_default=True,
    help="--format json: timestamps (a record's, a batch's base and max) as epoch milliseconds, or as "
    "ISO-8601 UTC text with milliseconds (2024-05-01T12:00:00.123Z; null for -1, no timestamp). "
    "With --format text it is ignored, with a warning.",
)
@schema_options
@partition_filter_options
@_one_line_errors
def dump_log(
    paths,
    files,
    deep_iteration,
    print_data_log,
    skip_record_metadata,
    max_bytes,
    max_message_size,
    verify_index_only,
    index_sanity_check,
    offsets_decoder,
    transaction_log_decoder,
    cluster_metadata_decoder,
    metadata_decoder_version,
    kafka_version,
    remote_log_metadata_decoder,
    share_group_state_decoder,
    key_decoder_class,
    value_decoder_class,
    fmt,
    payload_encoding,
    from_offset,
    to_offset,
    from_time,
    to_time,
    key,
    key_hex,
    key_prefix,
    key_prefix_hex,
    key_regex,
    value_regex,
    record_filters,
    limit,
    jobs,
    timestamps,
    only,
    decode_schemas=False,
    schemas=(),
    schema=(),
    reader_version=None,
    mask=(),
    mask_key_file=None,
):
    """Dump segments, indexes and snapshots as kafka-dump-log does, or as JSON Lines.

    PATHS (or --files) are any Kafka files: .log, .index, .timeindex, .txnindex, producer
    .snapshot files and KRaft .checkpoint snapshots, chosen by suffix as Kafka does. A partition
    dir stands for its .log files in offset order; a log dir for those of every partition.

    In the default --format text the output is byte for byte what kafka-dump-log 3.3.1 prints;
    where Kafka would die with a stack trace, one line on stderr says why, with the file and
    byte position, and the exit code is non-zero. --format json stops at the same files, with the
    same line and exit code; its record lines name their topic, partition and file, and keys,
    values and header values are UTF-8 text by default (--payload-encoding, the same default as
    `export --to jsonl`).

    A log dir stands for the logs a broker loads: live and -future partition dirs; a -delete or
    -stray dir is not read (a note on stderr says so). A dir that is neither a log dir nor a
    partition dir is exit 4.

    Search: --key/--key-hex (exact), --key-prefix/--key-prefix-hex, --key-regex and --grep
    (Python regular expressions on the key's or value's bytes) show only the records that pass
    every one given (a null key or value passes none of its own), with each batch holding one;
    they imply --deep-iteration, and --limit counts the records found. --header/--header-hex (a
    record with that header; repeated: one of them) do too. --producer-id (and --producer-epoch)
    and --leader-epoch judge whole batches on their header: their records are not decoded, and
    without --deep-iteration only the batches are printed.

    Schemas: --decode-schemas (--format json) decodes keys and values in Confluent's wire format
    (Avro, Protobuf, JSON Schema) with the _schemas topic among the log dirs given, each subject's
    versions resolved to its latest (or --reader-version), as `key`/`value` JSON values beside
    `key_schema`/`value_schema`; what does not decode keeps its bytes. See docs/schemas.md.

    \b
    Exit codes: 0 done; 1 with --decode-schemas, --schemas or --schema: a key or value kept as
    bytes (named on stderr with its offset); 2 usage, or schema versions that do not resolve to
    one reader; 3 corrupt input where kafka-dump-log would die (a corrupt size
    field, a .log not named after an offset), after what it printed; 4 a missing or
    unreadable path, a FIFO, directory or dangling symlink in a file's place, a file name
    without a suffix, or a directory that is not a log dir or partition dir.

    \b
    Examples:
      kafkalog dump-log --files 00000000000000000000.log --print-data-log
      kafkalog dump-log /var/lib/kafka/data/orders-3 --format json --from-time 2024-05-01T00:00Z
      kafkalog dump-log orders-3 --format json --key user-42 --limit 10 | jq .value
      kafkalog dump-log /var/lib/kafka/data --format json --key user-42 --timestamps iso | jq '[.topic, .partition, .offset, .timestamp]'
      kafkalog dump-log /var/lib/kafka/data --topic 'orders-*' --grep '"status": ?"failed"' --print-data-log
    """  # noqa: E501 - the examples print line for line (\b)
    given = _paths_given(files, paths)
    _refuse_exclusive_options(
        verify_index_only, index_sanity_check, key, key_hex, key_prefix, key_prefix_hex
    )
    decoders = dict(
        offsets=offsets_decoder,
        transactions=transaction_log_decoder,
        metadata=cluster_metadata_decoder,
        remote_log_metadata=remote_log_metadata_decoder,
        share_group_state=share_group_state_decoder,
    )
    text = dump_log_text(kafka_version, fmt)
    leader_change = DUMP_LOG_LEADER_CHANGE.applies(text)
    parser = _record_parser(
        text,
        kafka_version,
        metadata_decoder_version,
        decoders,
        key_decoder_class,
        value_decoder_class,
    )
    data = (
        print_data_log
        or any(decoders.values())
        or key_decoder_class is not None
        or value_decoder_class is not None
    )
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise click.UsageError(
            f"--from-offset {from_offset} is after --to-offset {to_offset}: nothing can match."
        )
    _warn_json_only_options(fmt)
    from_ms, to_ms = (
        parse_time_option(from_time, "--from-time"),
        parse_time_option(to_time, "--to-time"),
    )
    if from_ms is not None and to_ms is not None and from_ms > to_ms:
        raise click.UsageError(
            f"--from-time {from_time} is after --to-time {to_time}: nothing can match."
        )
    targets = _targets(given, only, from_offset, to_offset)
    filters = Filters.given(
        from_offset=from_offset,
        to_offset=to_offset,
        from_time=from_ms,
        to_time=to_ms,
        key=key if key_hex is None else key_hex,
        limit=limit,
        key_prefix=key_prefix if key_prefix_hex is None else key_prefix_hex,
        key_regex=key_regex,
        value_regex=value_regex,
        **record_filters,
    )
    decoding = schema_decoding(
        given,
        fmt,
        decode_schemas,
        schemas,
        schema,
        reader_version,
        mask,
        mask_key_file,
        topics=_topics_of(targets),
    )
    if fmt == "json":
        from kafkalog_cli.render.jsonl import dump_json

        decoder = next((name for name, on in decoders.items() if on), None)
        out = sys.stdout.buffer if decoding is None else decoding.writer(payload_encoding)
        dump_json(
            map(_named_as_kafka_reads, targets),
            out,
            deep=deep_iteration or data or decoding is not None,
            payload_encoding=payload_encoding if decoding is None else "base64",
            decoder=decoder,
            max_bytes=max_bytes,
            filters=filters,
            jobs=jobs_or_cores(jobs) if decoding is None else 1,
            timestamps=timestamps,
            control_bodies=leader_change,
        )
        if decoding is not None:
            decoding.finish(out)
        return

    opts = DumpOptions(
        deep_iteration=deep_iteration or data,
        print_data_log=data,
        skip_record_metadata=skip_record_metadata,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        max_bytes=max_bytes,
        parser=parser,
        filters=filters,
        jobs=jobs_or_cores(jobs),
        leader_change=leader_change,
    )
    dumper = KafkaDumper(sys.stdout.buffer, sys.stderr.buffer, opts)
    for g in targets:
        if filters is not None and filters.spent:
            break
        dumper.dump(g)
    dumper.finish()


def _topics_of(targets: list[str]) -> set[str]:
    """The topics of the partition dirs the .log files are in."""
    from pathlib import Path

    from kafkalog_cli.storage.names import parse_partition_dir

    out = set()
    for t in targets:
        tp = parse_partition_dir(Path(t).parent.name) if t.endswith(".log") else None
        if tp is not None:
            out.add(tp.topic)
    return out


def _paths_given(files: tuple[str, ...], paths: tuple[str, ...]) -> list[str]:
    """--files (comma-separated, repeatable) then PATHS; a usage error when there are none."""
    given = [f for group in files for f in group.split(",") if f] + list(paths)
    if not given:
        raise click.UsageError('Missing required argument "[files]": give --files or PATHS.')
    return given


def _refuse_exclusive_options(
    verify_index_only, index_sanity_check, key, key_hex, key_prefix, key_prefix_hex
) -> None:
    """A usage error for two options given together that exclude each other."""
    if verify_index_only and index_sanity_check:
        raise click.UsageError("--verify-index-only and --index-sanity-check exclude each other.")
    for a, b, names in (
        (key, key_hex, "--key and --key-hex"),
        (key_prefix, key_prefix_hex, "--key-prefix and --key-prefix-hex"),
    ):
        if a is not None and b is not None:
            raise click.UsageError(f"{names} exclude each other.")


def _record_parser(
    text: KafkaVersion,
    kafka_version,
    metadata_decoder_version,
    decoders: dict[str, bool],
    key_decoder_class,
    value_decoder_class,
):
    """What prints a record's key and payload in --format text, as kafka-dump-log's flags pick
    it: an internal topic's decoder (`decoders`, the first one given), else the key and value
    decoder classes; as the kafka-dump-log `text` (of --kafka-version and --format) or of
    --metadata-decoder-version."""
    if metadata_decoder_version is None:
        metadata_decoder_version = METADATA_TEXTS.get(text, "4.2")
    elif (
        kafka_version is not None
        and text in METADATA_TEXTS
        and metadata_decoder_version != METADATA_TEXTS[text]
    ):
        raise click.UsageError(
            f"--metadata-decoder-version {metadata_decoder_version} and --kafka-version "
            f"{kafka_version} name two kafka-dump-logs: give one."
        )
    if decoders["offsets"]:
        return offsets_parser(text)
    if decoders["transactions"]:
        return transaction_log_parser(text)
    if decoders["metadata"]:
        return cluster_metadata_parser(metadata_decoder_version)
    if decoders["remote_log_metadata"]:
        return remote_log_metadata_parser(text)
    if decoders["share_group_state"]:
        return share_group_state_parser(text)
    from kafkalog_cli.errors import InputError

    classes = []
    for value, hint in (
        (key_decoder_class, "--key-decoder-class"),
        (value_decoder_class, "--value-decoder-class"),
    ):
        try:
            classes.append(decoder_for(value or _DEFAULT_DECODER))
        except InputError as e:
            raise click.BadParameter(e.message, param_hint=hint) from None
    return decoder_parser(*classes)


def _warn_json_only_options(fmt: str) -> None:
    """A warning on stderr for each option given that only --format json reads."""
    ctx = click.get_current_context()
    for name, option in (
        ("payload_encoding", "--payload-encoding"),
        ("timestamps", "--timestamps"),
    ):
        if fmt == "text" and ctx.get_parameter_source(name) not in (
            None,
            click.core.ParameterSource.DEFAULT,
        ):
            click.echo(
                f"kafkalog: warning: {option} applies to --format json only; "
                "--format text prints records as kafka-dump-log does",
                err=True,
            )


def _targets(given: list[str], only, from_offset: int | None, to_offset: int | None) -> list[str]:
    """The files to dump, in order. Directories expand to their .log files (those --topic and
    --partition keep, in the offset range); files keep the form they were given in, and one
    that cannot be read is kept whatever --topic says, for the dumper to report in its turn."""
    from kafkalog_cli.commands.common import note_left_out
    from kafkalog_cli.storage.logdir import FilterTally, expand_paths

    note = note_left_out("not read")
    targets: list[str] = []
    tally = FilterTally(only)
    for g in given:
        if os.path.isdir(g):
            found = expand_paths([g], on_left_out=note, tally=tally)
            targets.extend(str(p) for p in segments_in_range(found, from_offset, to_offset))
        elif os.path.exists(g) and not os.path.isfile(g):
            from kafkalog_cli.errors import InputError

            # a FIFO or a device would block or never end
            raise InputError("not a regular file or directory", path=g)
        elif not os.path.isfile(g) or tally.keep_path(g):
            targets.append(g)
    tally.check(given)
    return targets


def _named_as_kafka_reads(target: str) -> str:
    """--format json stops where --format text (kafka-dump-log) stops on a file's name, with the
    same line and exit code, after the files before it: a name without a suffix (exit 4), a .log
    whose name is not an offset or a .checkpoint not named as a KRaft snapshot (Kafka dies)."""
    import re
    from pathlib import Path

    from kafkalog_cli.errors import InputError, KafkaToolError
    from kafkalog_cli.ops.verify_index import start_offset_of
    from kafkalog_cli.storage.segment import not_regular_reason

    path = Path(target)
    name = path.name
    why = not_regular_reason(path)
    if "." not in name:
        raise InputError(
            why
            or "not a Kafka file: the name has no suffix, so kafka-dump-log cannot tell what it is",
            path=target,
        )
    if why is not None:
        return target  # reading it says why it cannot be read (exit 4), as in Kafka mode
    if name.endswith(".log"):
        start_offset_of(path)
    elif (
        name.endswith(".checkpoint")
        and name != "bootstrap.checkpoint"
        and not re.fullmatch(r"\d{20}-\d{10}\.checkpoint", name)
    ):
        raise KafkaToolError(
            "not a KRaft snapshot name (<20-digit offset>-<10-digit epoch>.checkpoint)", path=target
        )
    return target
