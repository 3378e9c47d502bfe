"""Crash safety of compact: kill apply after every file-system step, and partway through the
`.cleaned` files of a group; `recover` then a new compact must reach exactly what an uninterrupted
run (the broker's cleaner) wrote, and no record may be lost meanwhile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.ops import cleaner, compact, recover
from kafkalog_cli.ops.plan import apply as apply_plan
from kafkalog_cli.storage import names
from kafkalog_cli.storage.fsops import FsOps, InjectedFault
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.compaction import FIXTURES, params, records_of, resolver_for, restore

NOW = params("tombstones")["now_ms"]


def _compact(d, q, fault_after=None):
    opts = compact.CompactOptions(now_ms=NOW, resolver=resolver_for("tombstones"))
    cp = compact.plan(d, [d / "cmp-tomb-0"], opts)
    return compact.apply(cp, FsOps(d, Quarantine(q, "compact"), fault_after=fault_after), opts)


def _recover(d, q):
    ((ld, parts),) = partition_dirs_for([d]).items()
    apply_plan(
        recover.plan(ld, parts, recover.RecoverOptions(now_ms=NOW)),
        FsOps(ld, Quarantine(q, "recover")),
    )


def _final_values(d):
    return {r[2]: r[3] for r in records_of(d / "cmp-tomb-0") if r[0] != "batch"}


def test_kill_compact_after_every_step(tmp_path):
    ref = restore("tombstones", "before", tmp_path / "ref")
    total = _compact(ref, tmp_path / "q")["fs_steps"]
    want = records_of(FIXTURES / "compact-tombstones" / "after" / "cmp-tomb-0")
    assert records_of(ref / "cmp-tomb-0") == want and total > 20
    finals = _final_values(ref)
    for n in range(1, total, 3):
        d = restore("tombstones", "before", tmp_path / f"k{n}")
        with pytest.raises(InjectedFault):
            _compact(d, tmp_path / "q", fault_after=n)
        _recover(d, tmp_path / "q")
        assert _final_values(d) == finals, f"a key's final value changed after a kill at step {n}"
        _compact(d, tmp_path / "q")
        assert records_of(d / "cmp-tomb-0") == want, f"after a kill at step {n}"


# ------------------------------------------------------------------------------ partway through the .cleaned files
# A process kill, not a power cut: what was written stays in the page cache, so fsync can be skipped
# (a no-op here keeps these sweeps fast; the test above keeps the real calls).
MERGED = {"segment.bytes": str(1 << 20)}  # the five segments cleaned as one group: 0 <- 177 .. 705


def _resolver(extra: dict | None) -> ConfigResolver:
    res = resolver_for("tombstones")
    return ConfigResolver(
        topic_overrides={t: {**cfg, **(extra or {})} for t, cfg in res.topic_overrides.items()}
    )


def _run(d, q, extra, fault_after=None):
    opts = compact.CompactOptions(now_ms=NOW, resolver=_resolver(extra))
    cp = compact.plan(d, [d / "cmp-tomb-0"], opts)
    fsops = FsOps(d, Quarantine(q, "compact"), fault_after=fault_after)
    compact.apply(cp, fsops, opts)
    return fsops.journal


def _temp_files(d):
    return sorted(
        p.name for p in (d / "cmp-tomb-0").iterdir() if p.name.endswith(names.TEMP_SUFFIXES)
    )


def _converges(d, tmp_path, extra, want, finals, where):
    """`kafkalog recover` resolves what the kill left and loses no key's final value; compact run
    again then leaves exactly the records of an uninterrupted run."""
    _recover(d, tmp_path / "q")
    assert not _temp_files(d), where
    assert _final_values(d) == finals, f"a key's final value changed after a kill {where}"
    _run(d, tmp_path / "q", extra)
    assert records_of(d / "cmp-tomb-0") == want, f"after a kill {where}"


@pytest.fixture
def no_fsync(monkeypatch):
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.mark.parametrize("extra", [None, MERGED], ids=["broker-groups", "one-group"])
def test_kill_at_every_step_while_the_cleaned_files_are_created(tmp_path, no_fsync, extra):
    ref = restore("tombstones", "before", tmp_path / "ref")
    journal = _run(ref, tmp_path / "q", extra)
    want, finals = records_of(ref / "cmp-tomb-0"), _final_values(ref)
    # each group's files created in the partition dir and their mtimes set, before replaceSegments
    steps = [
        n
        for n, what in enumerate(journal, 1)
        if what.split()[0] in ("write", "utime")
        and Path(what.split()[1]).parent.name == "cmp-tomb-0"
    ]
    assert len(steps) == (6 if extra else 30)  # log, index, timeindex: written, then their mtimes
    for n in steps:
        d = restore("tombstones", "before", tmp_path / f"k{n}")
        with pytest.raises(InjectedFault):
            _run(d, tmp_path / "q", extra, fault_after=n)
        left = _temp_files(d)
        where = f"at step {n} ({journal[n - 1]}), which left {left}"
        _converges(d, tmp_path, extra, want, finals, where)
        assert left and all(f.endswith(names.CLEANED_SUFFIX) for f in left), where


@pytest.mark.parametrize("extra", [None, MERGED], ids=["broker-groups", "one-group"])
def test_kill_partway_through_writing_a_cleaned_log(tmp_path, no_fsync, monkeypatch, extra):
    """Killed in the middle of a group's .log.cleaned stream: half of one chunk written."""
    ref = restore("tombstones", "before", tmp_path / "ref")
    real_append = cleaner.CleanedSegment.append
    calls = 0

    def counting(self, data, *a):
        nonlocal calls
        calls += 1
        real_append(self, data, *a)

    monkeypatch.setattr(cleaner.CleanedSegment, "append", counting)
    _run(ref, tmp_path / "q", extra)
    want, finals = records_of(ref / "cmp-tomb-0"), _final_values(ref)
    assert calls >= 4  # segment 0 is emptied: nothing appended
    for k in range(calls):
        seen = 0

        def dying(self, data, *a, k=k):
            nonlocal seen
            if seen == k:
                self._f.write(data[: len(data) // 2])
                raise InjectedFault(f"killed in append {k}")
            seen += 1
            real_append(self, data, *a)

        monkeypatch.setattr(cleaner.CleanedSegment, "append", dying)
        d = restore("tombstones", "before", tmp_path / f"a{k}")
        with pytest.raises(InjectedFault):
            _run(d, tmp_path / "q", extra)
        monkeypatch.setattr(cleaner.CleanedSegment, "append", real_append)
        left = _temp_files(d)
        where = f"in append {k}, which left {left}"
        _converges(d, tmp_path, extra, want, finals, where)
        assert len(left) == 1 and left[0].endswith(names.LOG_SUFFIX + names.CLEANED_SUFFIX), where
