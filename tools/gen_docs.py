#!/usr/bin/env python3
"""Write the generated blocks of docs/*.md and man/*.1 from their one source in the code.

    python tools/gen_docs.py            # rewrite every generated block in place
    python tools/gen_docs.py --check    # change nothing; exit 1 naming each stale block

A generated block sits between two marker lines, in Markdown

    <!-- generated: NAME (tools/gen_docs.py) -->
    ...
    <!-- end generated: NAME -->

and in roff (man pages) `.\\" generated: NAME (tools/gen_docs.py)` ... `.\\" end generated: NAME`.
Everything outside the markers is written by hand and kept as it is. The blocks:

- `exit-codes`: errors.EXIT_CODE_TABLE and EXIT_CODE_PRECEDENCE, with the commands whose --help
  lists each code (docs/safety.md, kafkalog(1));
- `json-lines-schema`: render/schema.py's table (docs/json-lines.md);
- `public-api`: the names `kafkalog_cli` exports, with their docstrings (docs/library.md);
- `version-rules`: config/versions.py's rules, and the modules that ask each (docs/design.md,
  docs/configs-and-versions.md);
- `options: COMMAND`: the command's usage and options as its --help prints them, from the click
  command itself (docs/commands.md);
- `options` in a man page: the same, in roff (kafkalog(1): the global options).

tests/test_docs.py regenerates every block and fails on any difference, so a copy never goes
stale: change the code (an option's help=, the exit-code table, the schema), then run this.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kafkalog_cli.cli import COMMANDS, cli  # noqa: E402  (src/ first, as the tests run it)
from kafkalog_cli.errors import EXIT_CODE_PRECEDENCE, EXIT_CODE_TABLE  # noqa: E402
from kafkalog_cli.render import schema  # noqa: E402

DOCS = ROOT / "docs"
MAN = ROOT / "man"

MD_BEGIN = "<!-- generated: {name} (tools/gen_docs.py) -->"
MD_END = "<!-- end generated: {name} -->"
ROFF_BEGIN = '.\\" generated: {name} (tools/gen_docs.py)'
ROFF_END = '.\\" end generated: {name}'
BLOCK = re.compile(
    r"^(?P<begin>(?:<!-- |\.\\\" )generated: (?P<name>[^(\n]+?) \(tools/gen_docs\.py\)(?: -->)?)\n"
    r"(?P<body>.*?)"
    r"^(?P<end>(?:<!-- |\.\\\" )end generated: (?P=name)(?: -->)?)$",
    re.M | re.S,
)

# a digit standing alone (not part of "3.9", "--max-age=1", "0x1f"): tests/test_man_pages.py's rule
_CODE = re.compile(r"(?<![\w.=-])(\d)(?![\w.-])")


# ------------------------------------------------------------------ the sources
def command(name: str) -> click.Command:
    """The click command `kafkalog NAME`, as --help finds it."""
    cmd = cli.get_command(click.Context(cli), name)
    if cmd is None:
        raise SystemExit(f"gen_docs: no command {name}")
    return cmd


def _subcommands(name: str) -> list[tuple[str, click.Command]]:
    """(full name, command) of `kafkalog NAME` and, for a group, of each of its subcommands."""
    cmd = command(name)
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd, info_name=name)
        return [(f"{name} {sub}", cmd.get_command(ctx, sub)) for sub in cmd.list_commands(ctx)]
    return [(name, cmd)]


def context(full_name: str, cmd: click.Command) -> click.Context:
    """The context `kafkalog FULL_NAME` runs in: the group's settings (-h, --help) inherited."""
    ctx = click.Context(cli, info_name="kafkalog", terminal_width=80, **cli.context_settings)
    names = full_name.split()
    for i, name in enumerate(names):
        node = cmd if i == len(names) - 1 else command(name)
        ctx = click.Context(node, info_name=name, parent=ctx)
    return ctx


def help_text(full_name: str, cmd: click.Command) -> str:
    """What `kafkalog FULL_NAME --help` prints."""
    return cmd.get_help(context(full_name, cmd))


def exit_codes_in_help(name: str) -> set[int]:
    """The codes the "Exit codes" paragraph of the command's --help (and its subcommands') lists."""
    codes: set[int] = set()
    for full_name, cmd in [
        (name, command(name)),
        *(_subcommands(name) if isinstance(command(name), click.Group) else []),
    ]:
        text = help_text(full_name, cmd)
        if "Exit codes" in text:
            section = text[text.index("Exit codes") :].split("\n\n")[0]
            codes |= {int(c) for c in _CODE.findall(section)}
    return codes


def option_records(cmd: click.Command, full_name: str | None = None) -> list[tuple[str, str]]:
    """(the option's names and metavar, its help) for each option, exactly as --help lists them."""
    ctx = (
        context(full_name, cmd)
        if full_name
        else click.Context(cli, info_name="kafkalog", **cli.context_settings)
    )
    out = []
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option):
            continue  # click 8.5+ also gives arguments a help record; this lists options
        record = param.get_help_record(ctx)
        if record is not None:
            out.append(record)
    return out


def usage(full_name: str, cmd: click.Command) -> str:
    """`kafkalog NAME [OPTIONS] PATHS...`, as --help's first line has it."""
    return " ".join(["kafkalog", full_name, *cmd.collect_usage_pieces(context(full_name, cmd))])


# ------------------------------------------------------------------ Markdown
def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def md_exit_codes() -> str:
    """The exit-code table with the commands that return each code, then the precedence."""
    by_code: dict[int, list[str]] = {}
    for name in sorted(COMMANDS):
        for code in exit_codes_in_help(name):
            by_code.setdefault(code, []).append(name)
    rows = ["| code | meaning | returned by (each command's --help) |", "|---|---|---|"]
    for code, meaning in EXIT_CODE_TABLE:
        names = by_code.get(int(code), [])
        who = "every command" if len(names) == len(COMMANDS) else ", ".join(f"`{n}`" for n in names)
        rows.append(f"| {int(code)} | {_md_cell(meaning)} | {who} |")
    return (
        "\n".join(rows)
        + f"\n\n**Precedence**, when one run meets several: {EXIT_CODE_PRECEDENCE}.\n"
    )


def md_options(name: str) -> str:
    """The usage line(s) and the options of `kafkalog NAME`, as --help prints them."""
    parts = []
    for full_name, cmd in _subcommands(name):
        parts.append(f"`{usage(full_name, cmd)}`\n")
        records = option_records(cmd, full_name)
        if records:
            parts.append(
                "| option | what it does |\n|---|---|\n"
                + "".join(f"| `{_md_cell(opts)}` | {_md_cell(text)} |\n" for opts, text in records)
            )
    return "\n".join(parts)


def md_public_api() -> str:
    """The names `kafkalog_cli` exports (its _EXPORTS), each with its module and docstring's first line."""
    import importlib

    import kafkalog_cli

    rows = ["| name | what | its docstring |", "|---|---|---|"]
    for name, module in kafkalog_cli._EXPORTS.items():
        obj = getattr(importlib.import_module(module), name)
        doc = (obj.__doc__ or "").strip().split("\n\n")[0]
        if doc.startswith(f"{name}(") or doc == "An enumeration.":  # made by dataclass or enum
            doc = ""
        kind = "class" if isinstance(obj, type) else "function"
        rows.append(f"| `{name}` | {kind} in `{module}` | {_md_cell(doc)} |")
    return "\n".join(rows) + "\n"


def md_version_rules() -> str:
    """config/versions.py's VersionRules: since which Kafka, where Kafka has it, which of our
    modules ask it."""
    from kafkalog_cli.config import versions

    src = ROOT / "src" / "kafkalog_cli"
    rules = [
        (n, r)
        for n, r in vars(versions).items()
        if isinstance(r, versions.VersionRule) and n != "ALWAYS"
    ]
    rows = ["| rule | from Kafka | Kafka's source | asked in |", "|---|---|---|---|"]
    for name, rule in sorted(rules, key=lambda nr: (nr[1].since, nr[1].name)):
        users = sorted(
            str(f.relative_to(src))
            for f in src.rglob("*.py")
            if len(re.findall(rf"\b{name}\b", f.read_text())) > (f.name == "versions.py")
        )
        rows.append(
            f"| {_md_cell(rule.name)} | {rule.since} | {_md_cell(rule.where)} | "
            f"{', '.join(f'`{u}`' for u in users) or 'nowhere yet (declared only)'} |"
        )
    return "\n".join(rows) + "\n"


# ------------------------------------------------------------------ roff
def _roff(text: str) -> str:
    """Plain text as roff: backslashes and hyphens escaped, no line starting with a control char."""
    text = " ".join(text.split()).replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def roff_exit_codes() -> str:
    lines = []
    for code, meaning in EXIT_CODE_TABLE:
        lines += [".TP", f".B {int(code)}", _roff(meaning[:1].upper() + meaning[1:] + ".")]
    lines += [".PP", _roff(f"Precedence, when one run meets several: {EXIT_CODE_PRECEDENCE}.")]
    return "\n".join(lines) + "\n"


def _roff_records(records: list[tuple[str, str]]) -> list[str]:
    lines = []
    for opts, text in records:
        lines += [".TP", f"\\fB{_roff(opts)}\\fR", _roff(text)]
    return lines


def roff_options(name: str) -> str:
    """The OPTIONS of `kafkalog NAME` (each subcommand's under its own heading); of `kafkalog`
    itself for an empty NAME."""
    if not name:
        return "\n".join(_roff_records(option_records(cli))) + "\n"
    lines = []
    subcommands = _subcommands(name)
    for full_name, cmd in subcommands:
        if len(subcommands) > 1:
            lines += [f".SS {_roff('kafkalog ' + full_name)}"]
        lines += _roff_records(option_records(cmd, full_name))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the pages
def generators() -> dict[str, callable]:
    """Every block NAME there is, and the function that writes it."""
    out = {
        "exit-codes": md_exit_codes,
        "json-lines-schema": schema.markdown_table,
        "public-api": md_public_api,
        "version-rules": md_version_rules,
        "man: exit-codes": roff_exit_codes,
        "man: options: ": lambda: roff_options(""),
    }
    for name in COMMANDS:
        out[f"options: {name}"] = lambda n=name: md_options(n)
        out[f"man: options: {name}"] = lambda n=name: roff_options(n)
    return out


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md")) + sorted(MAN.glob("*.1"))


def _key(path: Path, name: str) -> str:
    """A man page's `options` block is its own command's (kafkalog.1's: the global options)."""
    if path.suffix == ".1" and name == "options":
        return f"man: options: {path.stem.removeprefix('kafkalog').removeprefix('-')}"
    return f"man: {name}" if path.suffix == ".1" else name


def regenerate(path: Path, text: str) -> tuple[str, list[str]]:
    """`text` with each generated block written anew, and the names of the blocks that changed."""
    gens, changed = generators(), []

    def fill(m: re.Match) -> str:
        key = _key(path, m["name"])
        if key not in gens:
            raise SystemExit(
                f"gen_docs: {path.relative_to(ROOT)}: unknown generated block {m['name']!r}"
            )
        body = gens[key]()
        if body != m["body"]:
            changed.append(m["name"])
        return f"{m['begin']}\n{body}{m['end']}"

    return BLOCK.sub(fill, text), changed


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in pages():
        text = path.read_text()
        new, changed = regenerate(path, text)
        for name in changed:
            stale.append(f"{path.relative_to(ROOT)}: {name}")
        if changed and not check:
            path.write_text(new)
    verb = "stale" if check else "rewritten"
    for s in stale:
        print(f"gen_docs: {verb}: {s}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
