"""Shell completion offers consumer-groups and metadata, and their options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _complete(words: str) -> list[str]:
    exe = Path(sys.executable).with_name("kafkalog")
    env = {
        **os.environ,
        "_KAFKALOG_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    done = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line]


@pytest.mark.e2e
def test_commands_and_options_complete():
    assert "consumer-groups" in _complete("kafkalog cons")
    assert "metadata" in _complete("kafkalog met")
    assert {"--group", "--offsets-partitions"} <= set(_complete("kafkalog consumer-groups --"))
    assert "--at-offset" in _complete("kafkalog metadata --")
