"""The log dirs the campaign mutates: examples/logdir always, and with --corpus every log dir
of the corpus's broker/ and wild/ folders (read-only: only ever copied)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers.paths import EXAMPLES, SCHEMAS

# records framed by confluent-kafka's serializers and the _schemas topic of their schemas: the
# source of every schema mutation (cases.plan), and of the schema commands half the time
SCHEMAS_LOGDIR = SCHEMAS / "logdir"

_ROOT_FILES = (
    "meta.properties",
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
)


def sources(corpus: Path | None) -> list[Path]:
    """Sorted, so a case id picks the same source on every machine with the same corpus."""
    found = [EXAMPLES]
    if corpus is not None:
        for top in ("broker", "wild"):
            for dirpath, dirnames, filenames in os.walk(Path(corpus) / top):
                dirnames.sort()
                if any(f in filenames for f in _ROOT_FILES):
                    found.append(Path(dirpath))
                    dirnames[:] = []
    return found


def label(source: Path) -> str:
    """A short name for tables: the path below the corpus (or examples/logdir)."""
    parts = source.parts
    for top in ("broker", "wild"):
        if top in parts:
            return "/".join(parts[parts.index(top) :])
    return "schemas/logdir" if source == SCHEMAS_LOGDIR else "examples/logdir"


def in_repo(source: Path) -> bool:
    """A source of the repository (replayed without --corpus)."""
    return source in (EXAMPLES, SCHEMAS_LOGDIR)
