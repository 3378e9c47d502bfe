"""`kafkalog schemas LOGDIR...`: the Schema Registry's subjects, versions and ids, offline."""

from __future__ import annotations

import json
import sys

import click

from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.commands.options import InputPath, format_option


@click.command(
    "schemas",
    short_help="The Schema Registry's subjects, versions and ids, from _schemas.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, type=InputPath())
@click.option(
    "--schemas",
    "schemas",
    multiple=True,
    metavar="SOURCE",
    help="Also a _schemas partition dir, or a dir shaped as the registry's REST answers "
    "(subjects/SUBJECT/versions/N[.json]); may be repeated.",
)
@click.option(
    "--schema",
    "schema",
    multiple=True,
    metavar="TOPIC[:key|:value]=FILE",
    help="A .avsc, .proto or JSON Schema (.json) file bound to a topic's values (or keys), listed as "
    "TOPIC-value (TOPIC-key) version 1 without an id; may be repeated.",
)
@click.option(
    "--deleted",
    is_flag=True,
    help="Also the soft-deleted versions (as ?deleted=true asks the registry).",
)
@click.option(
    "--subject",
    "subjects",
    multiple=True,
    metavar="SUBJECT",
    help="Only this subject; may be repeated.",
)
@click.option(
    "--show-schema", is_flag=True, help="--format text: print each version's schema text under it."
)
@format_option(
    "text: a table of subject, version, id, type and references. json: one line per version, "
    "GET /subjects/SUBJECT/versions/N's answer with `deleted`."
)
@one_line_errors
def schemas(paths, schemas, schema, deleted, subjects, show_schema, fmt):
    """List the subjects, versions and ids of the Schema Registry whose `_schemas` topic is in
    the log dirs given (PATHS: log dirs or the `_schemas-0` partition dir), as the registry would
    answer GET /subjects and GET /subjects/SUBJECT/versions: the topic's records replayed in
    offset order (SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, CONTEXT, NOOP; a null
    value deletes a version for good). Subjects of other contexts read `:.ctx:name`.

    \b
    A _schemas record the registry itself skips (a key or value that is not its JSON, an
    unknown keytype or schemaType, an id that names another schema already) is skipped with a
    warning naming its segment and offset, as the registry's reader logs it and goes on.

    \b
    Exit codes: 0 done (a note on stderr when no schema was found); 1 a _schemas record was
    skipped; 2 usage; 3 a REST-shaped dir's file that is not the registry's JSON; 4 a path
    missing or unreadable, or neither a log dir nor a _schemas partition dir.

    \b
    Examples:
      kafkalog schemas /var/lib/kafka/data
      kafkalog schemas /var/lib/kafka/data --deleted --format json | jq -r .subject
      kafkalog schemas --schemas ./registry-export --subject orders-value --show-schema
    """
    from kafkalog_cli.commands.schema_options import warn_skipped
    from kafkalog_cli.errors import ExitCode, InputError
    from kafkalog_cli.ops.schema_registry import load_registry, schemas_partitions

    if not paths and not schemas and not schema:
        raise click.UsageError("give log dirs (PATHS), --schemas or --schema.")
    for p in paths:
        if not schemas_partitions([p]):
            raise InputError(
                "neither a log dir holding a _schemas partition nor a _schemas partition dir",
                path=p,
            )
    registry = load_registry(paths, schemas, schema, warn_skipped)
    names = [s for s in registry.subjects(deleted=deleted) if not subjects or s in subjects]
    versions = [v for s in names for v in registry.subject_versions(s, deleted=deleted)]
    out = sys.stdout
    if fmt == "json":
        for v in versions:
            out.write(json.dumps({**v.answer(), "deleted": v.deleted}, ensure_ascii=False) + "\n")
    else:
        rows = [("SUBJECT", "VERSION", "ID", "TYPE", "REFERENCES")]
        for v in versions:
            refs = ", ".join(f"{r.name} ({r.subject} v{r.version})" for r in v.references)
            rows.append(
                (
                    v.subject + (" (deleted)" if v.deleted else ""),
                    str(v.version),
                    "-" if v.id is None else str(v.id),
                    v.schema_type.value,
                    refs,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for n, r in enumerate(rows):
            out.write(
                ("  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:4])) + "  " + r[4]).rstrip()
                + "\n"
            )
            if n and show_schema:
                out.write("".join(f"    {line}\n" for line in versions[n - 1].schema.splitlines()))
    if not versions:
        click.echo(
            f"kafkalog: note: no schema in {', '.join(registry.sources) or 'the paths given'}",
            err=True,
        )
    if registry.skipped:
        click.get_current_context().exit(int(ExitCode.PROBLEMS))
