"""The full corpus of real broker files, found through one variable: KAFKALOG_CORPUS.

The repo carries copies of what the fast tests need (tests/fixtures); the full corpus (its
README.md says what is in it) is optional and lives outside the repo. Set KAFKALOG_CORPUS to its
folder; without it, a `shared/corpus` folder beside the checkout is taken (the documented
fallback, CONTRIBUTING.md). Tests that need it skip, naming the variable, when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.paths import REPO as ROOT

ENV = "KAFKALOG_CORPUS"
FALLBACK = ROOT.parent / "shared" / "corpus"


def corpus_path() -> Path:
    """The corpus folder as configured (KAFKALOG_CORPUS, else FALLBACK); it may not exist."""
    value = os.environ.get(ENV)
    return Path(value) if value else FALLBACK


def corpus_dir(*parts: str) -> Path | None:
    """`corpus_path() / parts` when that folder exists, else None."""
    d = corpus_path().joinpath(*parts)
    return d if d.is_dir() else None


def needs_corpus(*parts: str):
    """A skip marker for a test that needs `parts` of the corpus."""
    where = corpus_path().joinpath(*parts)
    return pytest.mark.skipif(not where.is_dir(), reason=f"needs the corpus at {where} (set {ENV})")
