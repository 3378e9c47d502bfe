"""The `kafkalog` click group: global options, exit codes, and the lazily imported commands.

Commands are imported only when invoked, so `kafkalog dump-log` does not pay for the imports of
`compact` or Spark (start-up time counts in every benchmark and in every cron run)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import click

from kafkalog_cli import __version__
from kafkalog_cli.allocator import tune_for_streaming
from kafkalog_cli.errors import EXIT_CODE_PRECEDENCE, EXIT_CODE_TABLE, ExitCode, KafkalogError

# name -> "module:attribute" of a click.Command (each named after its command)
COMMANDS: dict[str, str] = {
    "dump-log": "kafkalog_cli.commands.dump_log:dump_log",
    "dump-index": "kafkalog_cli.commands.dump_index:dump_index",
    "verify-crc": "kafkalog_cli.commands.verify_crc:verify_crc",
    "recover": "kafkalog_cli.commands.recover:recover",
    "roll": "kafkalog_cli.commands.roll:roll",
    "retain": "kafkalog_cli.commands.retain:retain",
    "delete-records": "kafkalog_cli.commands.delete_records:delete_records",
    "repair": "kafkalog_cli.commands.repair:repair",
    "erase": "kafkalog_cli.commands.erase:erase",
    "transactions": "kafkalog_cli.commands.transactions:transactions",
    "compact": "kafkalog_cli.commands.compact:compact",
    "quarantine": "kafkalog_cli.commands.quarantine:quarantine",
    "export": "kafkalog_cli.commands.export:export",
    "describe": "kafkalog_cli.commands.describe:describe",
    "get-offsets": "kafkalog_cli.commands.get_offsets:get_offsets",
    "consumer-groups": "kafkalog_cli.commands.consumer_groups:consumer_groups",
    "metadata": "kafkalog_cli.commands.metadata:metadata",
    "compare-replicas": "kafkalog_cli.commands.compare_replicas:compare_replicas",
    "move-partition": "kafkalog_cli.commands.move_partition:move_partition",
    "completion": "kafkalog_cli.commands.completion:completion",
    "doctor": "kafkalog_cli.commands.doctor:doctor",
    "schemas": "kafkalog_cli.commands.schemas:schemas",
}


def _available() -> dict[str, str]:
    """Only the commands whose module is present (a partial install never lists a dead one)."""
    out = {}
    for name, target in COMMANDS.items():
        module = target.split(":")[0]
        if importlib.util.find_spec(module) is not None:
            out[name] = target
    return out


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(_available())

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as e:
            if e.name != module:  # a missing dependency is a real error, not a missing command
                raise
            return None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KafkalogError as e:
            fail(ctx, str(e), e.exit_code, e)
        except BrokenPipeError:
            # `kafkalog dump-log ... | head`: stop quietly, as cat does
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(ExitCode.OK)
        except KeyboardInterrupt:
            fail(ctx, "interrupted", ExitCode.INTERRUPTED, None)
        except OSError as e:
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            fail(ctx, f"{where}{e.strerror or e}", ExitCode.INPUT, e)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:  # a bug of ours: still one line, and --debug shows where
            fail(
                ctx,
                f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)",
                ExitCode.CORRUPT,
                e,
            )


def fail(ctx: click.Context, message: str, code: int, exc: BaseException | None) -> None:
    """One line on stderr and the documented exit code; the traceback only with --debug."""
    if exc is not None and ctx.find_root().params.get("debug"):
        import traceback

        traceback.print_exception(exc)
    click.echo(f"kafkalog: {message}", err=True)
    ctx.exit(int(code))


def _escape_unencodable_output() -> None:
    """File names whose bytes are not UTF-8 reach the text as lone surrogates (os.fsdecode), which
    a strict stdout or stderr refuses with UnicodeEncodeError: they are written escaped (\\udcff),
    as errors.one_line writes them, whatever line of whichever command prints them."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # not a TextIOWrapper, or closed
            pass


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    """`kafkalog --version`: the version, and which core runs the record paths (formats/byte_loops.py)."""
    if not value or ctx.resilient_parsing:
        return
    from kafkalog_cli.formats import byte_loops

    click.echo(f"kafkalog, version {__version__}, {byte_loops.describe()}")
    ctx.exit()


def _exit_codes_epilog() -> str:
    """The exit-code table (errors.EXIT_CODE_TABLE) and its precedence, as --help prints them."""
    import textwrap

    lines = ["\b", "Exit codes (every command; each command's --help says which it returns):"]
    for code, meaning in EXIT_CODE_TABLE:
        wrapped = textwrap.wrap(meaning, 72)
        lines.append(f"  {int(code)}  {wrapped[0]}")
        lines += [f"     {w}" for w in wrapped[1:]]
    lines += [
        "",
        "\b",
        "Precedence, when one run meets several:",
        *("  " + w for w in textwrap.wrap(EXIT_CODE_PRECEDENCE + ".", 74)),
    ]
    return "\n".join(lines)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_exit_codes_epilog(),
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which core (compiled or pure-Python) runs, and exit.",
)
@click.option("--debug", is_flag=True, help="Show a Python traceback when a command fails.")
def cli(debug: bool) -> None:
    """Read, verify, repair, retain and compact Apache Kafka's on-disk logs.

    Every command takes log dirs (a broker's log.dirs), partition dirs or single segment files.
    Commands that change files take the log dir's .lock first, so they refuse to run behind a
    live broker, and they move what they remove to a quarantine outside the log dir.

    """
    _escape_unencodable_output()
    tune_for_streaming()
