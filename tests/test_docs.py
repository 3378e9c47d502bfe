"""The docs hold what the code holds: every generated block of docs/*.md and man/*.1 is what
tools/gen_docs.py writes from the code now (exit codes, each command's options as --help prints
them, the JSON Lines schema, the public API), each page carries the blocks it promises, the
README stays a front page (12 KB at most) and every link between the pages leads somewhere."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import COMMANDS, cli
from tests.helpers.paths import REPO as ROOT

DOCS = ROOT / "docs"
MAN = ROOT / "man"
README = ROOT / "README.md"


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()


def _blocks(path: Path) -> list[str]:
    return [m["name"] for m in gen_docs.BLOCK.finditer(path.read_text())]


@pytest.mark.parametrize("page", gen_docs.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_generated_block_is_what_the_code_says_now(page):
    _, stale = gen_docs.regenerate(page, page.read_text())
    assert stale == [], f"{page.relative_to(ROOT)}: stale {stale}: run python tools/gen_docs.py"


def test_the_pages_carry_their_generated_blocks():
    assert "exit-codes" in _blocks(DOCS / "safety.md")
    assert "json-lines-schema" in _blocks(DOCS / "json-lines.md")
    assert "public-api" in _blocks(DOCS / "library.md")
    assert set(_blocks(DOCS / "commands.md")) >= {f"options: {name}" for name in COMMANDS}
    assert set(_blocks(MAN / "kafkalog.1")) >= {"exit-codes", "options"}
    for name in COMMANDS:
        assert "options" in _blocks(MAN / f"kafkalog-{name}.1"), name


def test_a_stale_block_is_found_and_rewritten():
    page = DOCS / "safety.md"
    text = page.read_text()
    stale = text.replace("| 5 | a log dir is locked", "| 5 | a log dir was locked", 1)
    assert stale != text
    fixed, changed = gen_docs.regenerate(page, stale)
    assert changed == ["exit-codes"] and fixed == text


def test_the_check_fails_on_a_stale_page(tmp_path, monkeypatch):
    page = tmp_path / "safety.md"
    page.write_text(
        (DOCS / "safety.md").read_text().replace("| 8 | doctor:", "| 8 | the doctor:", 1)
    )
    monkeypatch.setattr(gen_docs, "pages", lambda: [page])
    monkeypatch.setattr(gen_docs, "ROOT", tmp_path)
    assert gen_docs.main(["--check"]) == 1
    assert "the doctor" in page.read_text()  # --check changes nothing
    assert gen_docs.main([]) == 0 and gen_docs.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_options_in_the_docs_are_those_help_prints(name):
    """Each option line of `kafkalog NAME --help` names an option of the generated table."""
    text = CliRunner().invoke(cli, [name, "--help"], terminal_width=200).output
    listed = {
        line.split()[0].rstrip(",")
        for line in text.split("Options:", 1)[1].splitlines()
        if line.startswith("  -")
    }
    block = dict(
        (m["name"], m["body"]) for m in gen_docs.BLOCK.finditer((DOCS / "commands.md").read_text())
    )
    body = block[f"options: {name}"]
    for option in listed:
        assert f"`{option}" in body or f", {option}" in body, (
            f"{name}: {option} not in docs/commands.md"
        )


def test_the_readme_is_a_front_page():
    assert README.stat().st_size <= 12 * 1024, (
        f"README.md is {README.stat().st_size} bytes: move text to docs/"
    )


def _links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", path.read_text())


@pytest.mark.parametrize(
    "page",
    [README, ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_link_between_the_pages_leads_somewhere(page):
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        dest = (page.parent / target).resolve() if target else page
        assert dest.exists(), f"{page.name}: {link}"
        if anchor and dest.suffix == ".md":
            anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", dest.read_text(), re.M)}
            assert anchor in anchors, f"{page.name}: {link}: no heading #{anchor} in {dest.name}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_nothing_points_outside_the_repo_but_the_corpus():
    """`../shared` appears only where the corpus's documented fallback is stated."""
    allowed = {"tests/corpus.py", "tools/conformance", "CONTRIBUTING.md", "tests/test_docs.py"}
    for path in [
        README,
        ROOT / "CONTRIBUTING.md",
        *DOCS.glob("*.md"),
        *MAN.glob("*.1"),
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "tests").rglob("*.md"),
        *(ROOT / "tools").glob("*"),
    ]:
        if not path.is_file() or str(path.relative_to(ROOT)) in allowed:
            continue
        text = path.read_text(errors="replace")
        assert "../shared" not in text and "/work/shared" not in text, path.relative_to(ROOT)
