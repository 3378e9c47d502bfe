"""man/: a page for kafkalog and for every command, naming every option the command takes."""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from kafkalog_cli.cli import COMMANDS, cli

MAN = Path(__file__).resolve().parent.parent / "man"


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
