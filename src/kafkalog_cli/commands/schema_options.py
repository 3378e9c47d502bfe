"""The Schema Registry options of the commands that read records (dump-log, export), each
defined once, and the decoding they turn on."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import click

from kafkalog_cli.errors import ExitCode

_SOURCE_HELP = (
    "Read schemas from SOURCE too: a log dir holding _schemas, a _schemas partition dir, or a dir "
    "shaped as the registry's REST answers (subjects/SUBJECT/versions/N[.json]); may be repeated. "
    "Turns decoding on."
)


def schema_options(f):
    """--decode-schemas, --schemas, --schema, --reader-version, --mask, --mask-key-file."""
    from kafkalog_cli.commands.options import InputPath

    f = click.option(
        "--mask-key-file",
        type=InputPath(exists=True, dir_okay=False),
        default=None,
        metavar="FILE",
        help="With --mask: the HMAC key, the file's bytes (a trailing newline left out), so "
        "masks match across runs [default: a random key for the run, said on stderr].",
    )(f)
    f = click.option(
        "--mask",
        "mask",
        multiple=True,
        metavar="FIELD",
        help="With decoding: the field of decoded keys and values at this dotted path "
        "(customer.email; arrays gone through) replaced by a keyed hash, HMAC-SHA256 in hex: "
        "equal values, equal masks. Repeatable. A field no schema read has is a usage error "
        "(exit 2); a key or value that does not decode is then written without its bytes.",
    )(f)
    f = click.option(
        "--reader-version",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="With decoding: read every subject's records with its version N, not its latest.",
    )(f)
    f = click.option(
        "--schema",
        "schema",
        multiple=True,
        metavar="TOPIC[:key|:value]=FILE",
        help="A .avsc, .proto or JSON Schema (.json) file that wrote the topic's values (or keys), "
        "framed with the 5-byte schema id; may be repeated. Turns decoding on.",
    )(f)
    f = click.option("--schemas", "schemas", multiple=True, metavar="SOURCE", help=_SOURCE_HELP)(f)
    f = click.option(
        "--decode-schemas",
        is_flag=True,
        help="Decode keys and values in Confluent's wire format (Avro, Protobuf, JSON Schema) with "
        "the schemas of the _schemas topic among the log dirs given (dump-log: --format json; export: "
        "--to parquet, typed columns, or --to jsonl, dump-log's lines).",
    )(f)
    return f


@dataclass(frozen=True)
class SchemaSpec:
    """The schemas of a run and the reader chosen: what export's tasks decode with (picklable)."""

    registry: object
    reader_version: int | None = None
    mask: object = None  # an ops.schema_mask.FieldMask: the fields masked


class SchemaDecoding:
    """A run's decoder, and what it reports at the end."""

    def __init__(self, decoder):
        self.decoder = decoder

    def writer(self, payload_encoding: str):
        from kafkalog_cli.render.schema_json import SchemaJsonWriter

        return SchemaJsonWriter(
            sys.stdout.buffer, sys.stderr.buffer, self.decoder, payload_encoding
        )

    def finish(self, out) -> None:
        """Flush; exit 1 when a key or value was kept as bytes (each was named on stderr), or a
        `_schemas` record was skipped."""
        out.flush()
        if self.decoder.registry.skipped and not out.undecoded:
            click.get_current_context().exit(int(ExitCode.PROBLEMS))
        if out.undecoded:
            kept = (
                "and are kept as bytes"
                if self.decoder.mask is None
                else "(their bytes withheld: --mask)"
            )
            click.echo(
                f"kafkalog: {out.undecoded} keys or values were not decoded {kept}", err=True
            )
            click.get_current_context().exit(int(ExitCode.PROBLEMS))


def warn_skipped(skip) -> None:
    """A `_schemas` record skipped (ops.schema_registry.SkippedRecord), as a warning line."""
    from kafkalog_cli.errors import one_line

    click.echo(f"kafkalog: warning: {one_line(skip.line())}", err=True)


def field_mask(mask, mask_key_file, decoding: bool):
    """The ops.schema_mask.FieldMask of --mask and --mask-key-file, or None without --mask; a
    usage error where it cannot apply. Without a key file the key is random, said on stderr."""
    if not mask:
        if mask_key_file is not None:
            raise click.UsageError("--mask-key-file needs --mask.")
        return None
    if not decoding:
        raise click.UsageError(
            "--mask masks fields of decoded keys and values: give --decode-schemas, --schemas "
            "or --schema (payloads without a schema have no fields to mask)."
        )
    from kafkalog_cli.ops.schema_mask import FieldMask, parse_field

    paths = []
    for text in mask:
        try:
            paths.append(parse_field(text))
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--mask") from None
    if mask_key_file is None:
        import secrets

        click.echo(
            "kafkalog: note: --mask without --mask-key-file: the masks are keyed by a random key "
            "of this run (equal values have equal masks in this output only)",
            err=True,
        )
        return FieldMask(tuple(paths), secrets.token_bytes(32))
    from kafkalog_cli.storage.files import read_bytes

    key = read_bytes(mask_key_file).rstrip(b"\r\n")
    if not key:
        raise click.BadParameter(f"{mask_key_file}: an empty key", param_hint="--mask-key-file")
    return FieldMask(tuple(paths), key)


def schema_decoding(
    paths,
    fmt: str,
    decode_schemas: bool,
    schemas,
    schema,
    reader_version,
    mask=(),
    mask_key_file=None,
    topics=(),
) -> SchemaDecoding | None:
    """The decoding the options ask for, or None; a usage error where it cannot apply. `topics`:
    those read, whose schemas --mask's fields must be in."""
    if not (decode_schemas or schemas or schema):
        field_mask(mask, mask_key_file, False)  # its usage errors
        if reader_version is not None:
            raise click.UsageError(
                "--reader-version needs --decode-schemas, --schemas or --schema."
            )
        return None
    if fmt != "json":
        raise click.UsageError(
            "--decode-schemas, --schemas and --schema decode for --format json only: "
            "--format text prints records as kafka-dump-log does."
        )
    from kafkalog_cli.ops.schema_decode import SchemaDecoder
    from kafkalog_cli.ops.schema_registry import load_registry

    masking = field_mask(mask, mask_key_file, True)
    registry = load_registry(paths if decode_schemas else (), schemas, schema, warn_skipped)
    decoder = SchemaDecoder(registry, reader_version, mask=masking)
    if masking is not None:
        from kafkalog_cli.ops.schema_mask import check_fields

        check_fields(decoder, topics, masking)
    return SchemaDecoding(decoder)


def schema_spec(
    paths, decode_schemas: bool, schemas, schema, reader_version, mask=(), mask_key_file=None
) -> SchemaSpec | None:
    """export's schemas, or None when no option asks for them (--mask's fields are checked
    against the schemas once the export knows its topics)."""
    masking = field_mask(mask, mask_key_file, bool(decode_schemas or schemas or schema))
    if not (decode_schemas or schemas or schema):
        if reader_version is not None:
            raise click.UsageError(
                "--reader-version needs --decode-schemas, --schemas or --schema."
            )
        return None
    from kafkalog_cli.ops.schema_registry import load_registry

    registry = load_registry(paths if decode_schemas else (), schemas, schema, warn_skipped)
    return SchemaSpec(registry, reader_version, masking)
