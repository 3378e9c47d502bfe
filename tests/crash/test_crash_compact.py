"""Crash safety of compact: kill apply after every file-system step; `recover` then a new
compact must reach exactly what the broker's cleaner wrote, and no record may be lost meanwhile."""
from __future__ import annotations

import pytest

from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.ops import compact, recover
from kafkalog_cli.ops.plan import apply as apply_plan
from kafkalog_cli.storage.fsops import FsOps, InjectedFault, Quarantine
from tests.ops.compact_helpers import FIXTURES, params, records_of, resolver_for, restore

NOW = params("tombstones")["now_ms"]


def _compact(d, q, fault_after=None):
    opts = compact.CompactOptions(now_ms=NOW, resolver=resolver_for("tombstones"))
    cp = compact.plan(d, [d / "cmp-tomb-0"], opts)
    return compact.apply(cp, FsOps(d, Quarantine(q, "compact"), fault_after=fault_after), opts)


def _recover(d, q):
    (ld, parts), = partition_dirs_for([d]).items()
    apply_plan(recover.plan(ld, parts, recover.RecoverOptions(now_ms=NOW)), FsOps(ld, Quarantine(q, "recover")))


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
