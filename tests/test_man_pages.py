"""man/: a page for kafkalog and for every command, naming every option the command takes."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from kafkalog_cli.cli import COMMANDS, cli
from tests.helpers.exit_codes import EXIT_CODES
from tests.helpers.paths import MAN


def _man_text(page: Path) -> str:
    # roff escapes: "\-" is a hyphen, "\f?" switches fonts
    return re.sub(r"\\f[A-Z]", "", page.read_text()).replace("\\-", "-")


def test_the_main_page_lists_every_command():
    text = _man_text(MAN / "kafkalog.1")
    for name in COMMANDS:
        assert name in text, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_a_command_is_in_its_man_page(name):
    page = MAN / f"kafkalog-{name}.1"
    assert page.exists(), f"no man page for {name}"
    text = _man_text(page)
    assert f".TH KAFKALOG-{name.upper()} 1" in text
    cmd = cli.get_command(click.Context(cli), name)
    for param in cmd.params:
        if isinstance(param, click.Option) and "--help" not in param.opts:
            assert any(o in text for o in param.opts), f"{name}: {param.opts} not in {page.name}"


# retain's and compact's --help and man pages are being rewritten with issue 11's refusals (their
# new exit code among them): strict, so the marks must go once they state their codes
def _codes_in(section: str) -> set[int]:
    return {int(c) for c in re.findall(r"(?<![\w.=-])(\d)(?![\w.-])", section)}


def test_every_command_has_its_exit_codes_listed():
    assert set(EXIT_CODES) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(EXIT_CODES))
def test_help_states_the_exit_codes(name):
    from click.testing import CliRunner

    text = CliRunner().invoke(cli, [name, "--help"]).output
    assert "Exit codes" in text, name
    section = text[text.index("Exit codes") :].split("\n\n")[0]
    assert _codes_in(section) >= set(EXIT_CODES[name]), section


@pytest.mark.parametrize("name", sorted(EXIT_CODES))
def test_man_page_states_the_exit_codes(name):
    text = _man_text(MAN / f"kafkalog-{name}.1")
    assert ".SH EXIT STATUS" in text, name
    section = text[text.index(".SH EXIT STATUS") :].split("\n.SH ")[0]
    assert _codes_in(section) >= set(EXIT_CODES[name]), section
