"""kafka-dump-log 3.3.1's own output on real files, reproduced byte for byte (stdout), with the
same success or failure; where Kafka died with a stack trace we print one line instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import CORPUS

GOLDENS = CORPUS / "goldens"
CASES = sorted(
    (a.parent.relative_to(GOLDENS), a.name[: -len(".args")]) for a in GOLDENS.rglob("*.args")
)


def test_the_fixture_set_covers_every_kind_of_file_and_flag():
    suffixes = {Path(str(rel)).suffix for rel, _ in CASES}
    variants = {v for _, v in CASES}
    assert {
        ".log",
        ".index",
        ".timeindex",
        ".snapshot",
        ".txnindex",
        ".checkpoint",
        ".swap",
        ".cleaned",
    } <= suffixes
    assert {
        "plain",
        "deep-iteration",
        "print-data-log",
        "print-data-log+skip-record-metadata",
        "verify-index-only",
        "index-sanity-check",
        "offsets-decoder",
        "transaction-log-decoder",
        "cluster-metadata-decoder",
    } <= variants
    assert any(v.startswith("max-bytes") for v in variants) and any(
        v.startswith("max-message-size") for v in variants
    )
    assert len(CASES) > 300


@pytest.mark.parametrize("rel,variant", CASES, ids=[f"{r}[{v}]" for r, v in CASES])
def test_golden(rel, variant, corpus_copy, runner, monkeypatch):
    g = GOLDENS / rel
    flags = [line for line in (g / f"{variant}.args").read_text().splitlines() if line.strip()]
    root = str(corpus_copy).encode()
    want_out = (g / f"{variant}.stdout").read_bytes().replace(b"{ROOT}", root)
    want_err = (g / f"{variant}.stderr").read_bytes().replace(b"{ROOT}", root)
    want_rc = int((g / f"{variant}.rc").read_text().strip() or 0)
    monkeypatch.chdir(corpus_copy)
    res = runner.invoke(cli, ["dump-log", "--files", str(rel), *flags])
    assert res.stdout_bytes == want_out
    if want_rc == 0:
        assert res.exit_code == 0, res.stderr
        assert res.stderr_bytes == want_err
    else:
        assert res.exit_code != 0
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kafkalog: "), res.stderr
        assert "Traceback" not in res.stderr
