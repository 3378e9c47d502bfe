"""Log dirs for the clean-shutdown tests: a partition of given segments and the .kafka_cleanshutdown
marker as Kafka 3.7+ writes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.paths import EXAMPLES

NOW = 1795460000000

MARKER_37 = b'{"version":0,"brokerEpoch":42}'  # what 3.7+ writes (KIP-966)


def logdir(tmp_path: Path, marker: bytes = MARKER_37) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / ".kafka_cleanshutdown").write_bytes(marker)
    return d


def seg(d: Path, part: str, base: int, suffix: str) -> Path:
    return d / part / f"{base:020d}{suffix}"
