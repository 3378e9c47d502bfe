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
    """--decode-schemas, --schemas, --schema, --reader-version."""
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
        """Flush; exit 1 when a key or value was kept as bytes (each was named on stderr)."""
        out.flush()
        if out.undecoded:
            click.echo(
                f"kafkalog: {out.undecoded} keys or values were not decoded and are kept as bytes",
                err=True,
            )
            click.get_current_context().exit(int(ExitCode.PROBLEMS))


def schema_decoding(
    paths, fmt: str, decode_schemas: bool, schemas, schema, reader_version
) -> SchemaDecoding | None:
    """The decoding the options ask for, or None; a usage error where it cannot apply."""
    if not (decode_schemas or schemas or schema):
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

    registry = load_registry(paths if decode_schemas else (), schemas, schema)
    return SchemaDecoding(SchemaDecoder(registry, reader_version))


def schema_spec(paths, decode_schemas: bool, schemas, schema, reader_version) -> SchemaSpec | None:
    """export's schemas (--to parquet), or None when no option asks for them."""
    if not (decode_schemas or schemas or schema):
        if reader_version is not None:
            raise click.UsageError(
                "--reader-version needs --decode-schemas, --schemas or --schema."
            )
        return None
    from kafkalog_cli.ops.schema_registry import load_registry

    return SchemaSpec(
        load_registry(paths if decode_schemas else (), schemas, schema), reader_version
    )
