"""One --format vocabulary (text|json, with the former names kafka and human still taken) and one
--jobs option, across every command."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import COMMANDS, cli
from kafkalog_cli.commands.options import FormatChoice
from tests.helpers.paths import EXAMPLES


def _command(name: str) -> click.Command:
    return cli.get_command(click.Context(cli), name)


def _option(name: str, dest: str) -> click.Option | None:
    return next((p for p in _command(name).params if p.name == dest), None)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


WITH_FORMAT = [n for n in sorted(COMMANDS) if _option(n, "fmt") is not None]
WITH_JOBS = [n for n in sorted(COMMANDS) if _option(n, "jobs") is not None]


def test_the_commands_that_print_take_format_and_jobs():
    assert set(WITH_FORMAT) == {
        "dump-log",
        "dump-index",
        "verify-crc",
        "recover",
        "roll",
        "retain",
        "compact",
        "export",
        "describe",
        "get-offsets",
        "delete-records",
        "transactions",
        "consumer-groups",
        "metadata",
        "compare-replicas",
        "move-partition",
        "doctor",
        "schemas",
        "repair",
        "erase",
    }
    assert set(WITH_JOBS) == {"dump-log", "verify-crc", "compact", "export", "describe"}


@pytest.mark.parametrize("name", WITH_FORMAT)
def test_format_is_text_or_json_defaulting_to_text(name):
    opt = _option(name, "fmt")
    assert isinstance(opt.type, FormatChoice) and list(opt.type.choices) == ["text", "json"]
    assert opt.default == "text" and opt.opts == ["--format"]
    r = invoke(name, "--help")
    assert r.exit_code == 0 and "--format [text|json]" in r.output
    assert "kafka|" not in r.output and "human|" not in r.output


@pytest.mark.parametrize("name", WITH_JOBS)
def test_jobs_is_the_same_option_everywhere(name):
    opt = _option(name, "jobs")
    assert opt.opts == ["--jobs", "-j"]
    assert isinstance(opt.type, click.IntRange) and opt.type.min == 0 and opt.default == 0
    assert opt.show_default == "every core"


@pytest.mark.parametrize("name", WITH_FORMAT)
def test_an_unknown_format_names_only_the_vocabulary(name):
    r = invoke(name, "--format", "xml", EXAMPLES)
    assert r.exit_code == 2
    assert "'xml' is not one of 'text', 'json'." in r.output


@pytest.mark.parametrize("alias", ["kafka", "human"])
def test_the_former_names_print_text(alias):
    for args in (
        ["dump-log", EXAMPLES / "txn-0", "--deep-iteration"],
        ["dump-index", EXAMPLES / "multi-segment-0"],
        ["recover", "--dry-run", EXAMPLES],
        [
            "retain",
            "--dry-run",
            "--now",
            "1900000000000",
            "-v",
            "--assume-kafka-defaults",
            EXAMPLES,
        ],
    ):
        default = invoke(*args)
        assert default.exit_code == (1 if args[0] == "retain" else 0), (
            default.output
        )  # retain: changes pending
        assert invoke(*args, "--format", "text").output == default.output
        assert invoke(*args, "--format", alias).output == default.output
        assert invoke(*args, "--format", alias.upper()).exit_code == 2  # as case-sensitive as text
