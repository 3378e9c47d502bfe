"""The repository's paths the tests read: one home, so that no test module computes its own from
`__file__`."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
MAN = REPO / "man"
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples" / "logdir"  # the example log dir the README's commands run on
FIXTURES = REPO / "tests" / "fixtures"
BROKER = FIXTURES / "broker"  # log dirs written by real brokers, one case a dir
CORPUS = FIXTURES / "corpus"  # the copied corpus and its goldens
INTERNAL = FIXTURES / "internal"  # Kafka's internal topics' segments
READ = FIXTURES / "read"
SMALL = FIXTURES / "small"
