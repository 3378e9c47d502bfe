"""`.ci/typecheck`: the not-yet list of pyproject.toml's mypy configuration only shrinks. The
mypy runs themselves are CI's (`.ci/run`); these check the script's judgement and the list's
entries, without mypy."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _typecheck():
    loader = importlib.machinery.SourceFileLoader("ci_typecheck", str(ROOT / ".ci" / "typecheck"))
    spec = importlib.util.spec_from_loader("ci_typecheck", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_a_clean_renamed_or_patterned_entry_fails_the_check():
    problems = _typecheck().list_problems(
        ["kafkalog_cli.a", "kafkalog_cli.clean", "kafkalog_cli.gone", "kafkalog_cli.render.*"],
        {"kafkalog_cli.a", "kafkalog_cli.elsewhere"},
        lambda m: m != "kafkalog_cli.gone",
    )
    assert problems == [
        "kafkalog_cli.clean: clean now, take it off the not-yet list in pyproject.toml",
        (
            "kafkalog_cli.gone: on the not-yet list but no such module (renamed or removed: its entry goes, "
            "or follows it if it still has errors)"
        ),
        "kafkalog_cli.render.*: the not-yet list names modules, not patterns",
    ]


def test_every_entry_of_the_not_yet_list_is_a_module_of_the_source():
    tc = _typecheck()
    _, not_yet = tc.config_without_not_yet(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    )
    assert not_yet == sorted(set(not_yet))
    assert [m for m in not_yet if not tc.module_exists(m)] == []


def test_the_second_run_keeps_the_configuration_but_the_not_yet_list():
    tc = _typecheck()
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    text, not_yet = tc.config_without_not_yet(mypy)
    without = tomllib.loads(text)["tool"]["mypy"]
    assert not_yet and {k: v for k, v in without.items() if k != "overrides"} == {
        k: v for k, v in mypy.items() if k != "overrides"
    }
    assert without["overrides"] == [
        block for block in mypy["overrides"] if not block.get("ignore_errors")
    ]


def test_errors_are_counted_by_module():
    by_module, other = _typecheck().errors_by_module(
        [
            "src/kafkalog_cli/ops/roll.py:3: error: Incompatible types  [assignment]",
            'src/kafkalog_cli/ops/roll.py:9: note: Right operand is of type "int | None"',
            'src/kafkalog_cli/formats/__init__.py:1:5: error: Name "x" is not defined  [name-defined]',
            "pyproject.toml: error: bad config",
            "Found 2 errors in 2 files (checked 128 source files)",
        ]
    )
    assert {m: len(lines) for m, lines in by_module.items()} == {
        "kafkalog_cli.ops.roll": 1,
        "kafkalog_cli.formats": 1,
    }
    assert other == ["pyproject.toml: error: bad config"]
