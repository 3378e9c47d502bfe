"""kill -9 during `kafkalog erase` while a rewritten segment's `.swap` is in place, then the same
command again: the rerun must end where an uninterrupted run ends (README: a run killed at any
instant converges), producer snapshots included, since erase keeps them as they are.

The rerun finishes the swap as Kafka's LogLoader does (LogLoader.load's second pass deletes
every file, not a `.swap`, whose offset prefix is in [min swap offset, max swap next offset)),
but for the producer snapshot at the rewritten segment's base offset, which an uninterrupted
erase keeps, like UnifiedLog.replaceSegments for a segment replaced by one of the same base
offset (ops.recover.finish_interrupted_rewrites, keep_base_snapshots)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from kafkalog_cli.storage.fsops import FAULT_ENV
from tests.helpers.paths import EXAMPLES, SRC

ARGV = ["erase", "--topic", "multi-segment", "--offsets", "310-320"]
SNAPSHOT = "multi-segment-0/00000000000000000300.snapshot"  # the active segment's base


def erase(d, fault_after: int | None = None) -> int:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(FAULT_ENV, None)
    if fault_after is not None:
        env[FAULT_ENV] = str(fault_after)
    return subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", ARGV[0], str(d), *ARGV[1:]],
        env=env,
        capture_output=True,
    ).returncode


def copy(tmp_path, name):
    d = tmp_path / name
    shutil.copytree(EXAMPLES, d)
    (d / ".lock").unlink(missing_ok=True)
    return d


@pytest.mark.slow
def test_a_rerun_after_a_kill_mid_swap_keeps_the_producer_snapshot(tmp_path):
    whole = copy(tmp_path, "whole")
    assert erase(whole) == 0
    assert (whole / SNAPSHOT).read_bytes() == (EXAMPLES / SNAPSHOT).read_bytes()
    lost = []
    for n in range(1, 60):
        d = copy(tmp_path, f"killed{n}")
        rc = erase(d, n)  # 137: the injected fault, as SIGKILL after step n
        if rc == 0:  # the run had fewer steps: every instant was tried
            break
        assert rc == 137, n
        swapped = bool(list(d.glob("multi-segment-0/*.swap")))
        assert erase(d) == 0, n
        if not (d / SNAPSHOT).exists():
            lost.append((n, swapped))
        shutil.rmtree(d)
    assert n > 10
    assert lost == []
