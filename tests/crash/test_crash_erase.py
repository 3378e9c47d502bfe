"""kill -9 during `kafkalog erase`: at every file-system step of the run. Right after the kill
every segment is there, old or new (its `.log`, or the `.log.swap` that replaces it: never
neither), and the same command run again converges on the uninterrupted run's log dir (every
file's name and bytes, kept mtimes), the producer snapshots included: the rerun finishes a
`.swap` as LogLoader's swap pass does but keeps the snapshot at the rewritten segment's base
(ops.recover.finish_interrupted_rewrites, keep_base_snapshots). Erase keeps no quarantine, so
there is nothing to restore."""

from __future__ import annotations

import shutil

import pytest

from kafkalog_cli.storage.fsops import FAULT_ENV
from tests.crash.test_kill_converges import (
    EXAMPLES,
    Case,
    _argv,
    _kafkalog,
    differences,
    kept_mtimes,
    state,
    steps_of,
)


def _logdir(root):
    d = root / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / ".lock").unlink(missing_ok=True)
    return d


def two_segments(root):
    """Records erased from both segments of multi-segment-0."""
    return [_logdir(root)], ["erase", "--topic", "multi-segment", "--key-regex", "^ms-0(04|35)"]


def overwrite(root):
    """A compressed segment, its old bytes zeroed before the unlink."""
    return [_logdir(root)], ["erase", "--topic", "codec-gzip", "--key-prefix", "k02", "--overwrite"]


def transactional(root):
    """A transaction's records, with its markers and .txnindex."""
    return [_logdir(root)], ["erase", "--topic", "txn", "--offsets", "6-9"]


CASES = {"two segments": two_segments, "--overwrite": overwrite, "transactional": transactional}


def _bases(files: dict) -> dict[str, set[str]]:
    """Per partition dir, the segments (base offset names) that have a `.log` or a `.log.swap`."""
    out: dict[str, set[str]] = {}
    for k in files:
        parts = k.split("/")
        if len(parts) == 3 and (parts[2].endswith(".log") or parts[2].endswith(".log.swap")):
            out.setdefault(parts[1], set()).add(parts[2][:20])
    return out


def _rewritten(original: dict, want: dict) -> set[str]:
    """`<partition dir>/<base>` of the segments the uninterrupted run rewrote."""
    return {
        k.rsplit("/", 1)[0].split("/", 1)[1] + "/" + k.rsplit("/", 1)[1][:20]
        for k in original
        if k.endswith(".log") and k in want and want[k][0] != original[k][0]
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_killed_erase_converges_at_every_step(tmp_path, monkeypatch, name):
    case = Case(CASES[name], restorable=False)
    total, original, want = steps_of(case, tmp_path / "ref", monkeypatch)
    assert total > 2 and want != original
    segments = _bases(original)
    rewritten = _rewritten(original, want)
    assert rewritten
    # the uninterrupted run keeps every producer snapshot
    assert {k for k in original if k.endswith(".snapshot")} <= set(want)
    problems = []
    for n in range(1, total):
        dirs, args = case.setup(tmp_path / f"k{n}")
        mine = state(dirs)
        argv = _argv(dirs, args)
        killed = _kafkalog(argv, {FAULT_ENV: str(n)})
        if killed.returncode != 137:
            problems.append(
                f"not killed at step {n}: exit {killed.returncode} {killed.stderr[-300:]}"
            )
            continue
        left = _bases(state(dirs))
        problems += [
            f"killed at step {n}: {part} has no segment {base} (neither old nor new)"
            for part, bases in segments.items()
            for base in sorted(bases - left.get(part, set()))
        ]
        again = _kafkalog(argv)
        if again.returncode != 0:
            problems.append(
                f"killed at step {n}: the rerun exits {again.returncode}: {again.stderr[-300:]}"
            )
            continue
        problems += [
            f"killed at step {n}: {d}"
            for d in differences(
                state(dirs),
                want,
                kept_mtimes(original, want),
                mine,
            )
        ]
        shutil.rmtree(tmp_path / f"k{n}")
    assert not problems, f"{total} steps\n" + "\n".join(problems[:20])
