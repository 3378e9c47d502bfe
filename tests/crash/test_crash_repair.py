"""kill -9 during `kafkalog repair`: at every file-system step of the run, then the same command
again converges on the uninterrupted run's log dir (every file's name, bytes and kept mtime), and
the quarantine folders left restore the damaged original (tests/crash/test_kill_converges.py's
driver, every step rather than a sample: the run is short)."""

from __future__ import annotations

import shutil

from tests.crash.test_kill_converges import EXAMPLES, Case, kill_and_rerun, steps_of
from tests.helpers.repair import batches, damage


def repair_case(root):
    """Two damaged segments in two partitions, a donor beside them."""
    a, donor = root / "logdir", root / "donor"
    for d in (a, donor):
        shutil.copytree(EXAMPLES, d)
        (d / ".lock").unlink(missing_ok=True)
    damage(a / "multi-segment-0" / "00000000000000000000.log", "flip", 2593)
    log = a / "codec-gzip-0" / "00000000000000000000.log"
    damage(log, "garbage", batches(log)[1])
    return [a], ["repair", "--from", donor]


def test_a_killed_repair_converges_at_every_step(tmp_path, monkeypatch):
    case = Case(repair_case)
    total, original, want = steps_of(case, tmp_path / "ref", monkeypatch)
    assert total > 2 and want != original
    problems = []
    for n in range(1, total):
        problems += kill_and_rerun("repair", case, tmp_path / f"k{n}", n, want, original)
    assert not problems, f"{total} steps\n" + "\n".join(problems[:20])


def test_a_sigkill_inside_a_step_converges_too(tmp_path, monkeypatch):
    case = Case(repair_case)
    _, original, want = steps_of(case, tmp_path / "ref", monkeypatch)
    problems = []
    for delay in (0.0, 0.004, 0.02):
        problems += kill_and_rerun(
            "repair", case, tmp_path / f"s{delay}", 0, want, original, delay=delay
        )
    assert not problems, "\n".join(problems[:20])
