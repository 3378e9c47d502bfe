"""ops.runner.run_log_dir: lock, plan, apply, report, for one log dir and any mutating op."""

from __future__ import annotations

import pickle
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from kafkalog_cli.errors import LockedError
from kafkalog_cli.ops import compact, recover, retain, roll
from kafkalog_cli.ops.runner import ConfigSources, Operation, Outcome, run_log_dir
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine import QuarantineFolder
from tests.helpers.broker_cases import copy_case, tree_state
from tests.helpers.compaction import FIXTURES as COMPACT_FIXTURES
from tests.helpers.compaction import records_of, restore
from tests.helpers.locks import hold_lock

COMPACT_NOW = 1795248446186
COMPACT_CFG = ConfigSources(
    topic_config_items=(
        "cmp-none:cleanup.policy=compact",
        "cmp-none:segment.bytes=16384",
        "cmp-none:index.interval.bytes=512",
        "cmp-none:min.cleanable.dirty.ratio=0.01",
        # the rest of what the broker ran with (PARAMS.json)
        "cmp-none:delete.retention.ms=86400000",
        "cmp-none:min.compaction.lag.ms=0",
    )
)
ROLL_NOW = 1795249186389


def _recover() -> Operation:
    return Operation("recover", recover.plan, recover.RecoverOptions(now_ms=1))


def _compact(jobs: int = 1) -> Operation:
    return Operation(
        "compact",
        partial(compact.plan, estimate=True),
        compact.CompactOptions(now_ms=COMPACT_NOW, jobs=jobs),
        COMPACT_CFG,
        run=compact.run,
    )


def _groups(d: Path) -> tuple[Path, list[Path]]:
    ((log_dir, parts),) = partition_dirs_for([d]).items()
    return log_dir, parts


def _locked_by_someone(log_dir: Path) -> bool:
    """Whether another process is refused the log dir's lock (this one's own lock never conflicts)."""
    code = (
        "import sys\nfrom kafkalog_cli.storage.lock import LogDirLock\n"
        "try:\n    LogDirLock(sys.argv[1]).acquire()\nexcept Exception:\n    print('held')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(log_dir)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "held"


LOCK_SEEN: list[bool] = []


def _roll_plan_noting_the_lock(log_dir, parts, opts):
    LOCK_SEEN.append(_locked_by_someone(log_dir))
    return roll.plan(log_dir, parts, opts)


def test_a_dry_run_plans_without_the_lock_and_changes_nothing(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    before = tree_state(d)
    p = hold_lock(d / ".lock")
    try:
        out = run_log_dir(_recover(), *_groups(d), dry_run=True)
    finally:
        p.kill()
        p.wait()
    assert out.dry_run and out.report is None and out.quarantine is None
    assert any(a.kind.value == "truncate" for a in out.plan.actions)
    # the plan, and what it would free and hold (storage.space): the default quarantine holds the cut
    assert out.to_dict() == {"dry_run": True, **out.plan.to_dict(), **out.space.to_dict()}
    assert out.space.held_in_quarantine > 0
    assert tree_state(d) == before


def test_a_locked_log_dir_is_refused_and_left_as_it_was(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    before = tree_state(d)
    p = hold_lock(d / ".lock")
    try:
        with pytest.raises(LockedError):
            run_log_dir(_recover(), *_groups(d))
    finally:
        p.kill()
        p.wait()
    assert tree_state(d) == before


def test_the_plan_is_made_under_the_lock_and_only_the_dry_run_without_it(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    op = Operation(
        "roll", _roll_plan_noting_the_lock, roll.RollOptions(if_needed=True, now_ms=ROLL_NOW)
    )
    LOCK_SEEN.clear()
    run_log_dir(op, *_groups(d), dry_run=True)
    run_log_dir(op, *_groups(d), no_quarantine=True)
    assert LOCK_SEEN == [False, True]
    assert not _locked_by_someone(d)  # released


def test_apply_reports_each_change_and_keeps_removed_data_in_a_quarantine_named_after_the_op(
    tmp_path,
):
    d = copy_case("recover-torn-tail", tmp_path)
    out = run_log_dir(_recover(), *_groups(d), quarantine_dir=tmp_path / "q")
    assert not out.dry_run and out.to_dict() is out.report
    assert out.report["changed"] == [a.to_dict() for a in out.plan.actions] != []
    assert out.report["partitions"]["rec-none-0"]["log_end_offset"] == 794
    folder = Path(out.quarantine)
    assert out.quarantine == out.report["quarantine"] and folder.parent == tmp_path / "q"
    assert folder.name.endswith("-recover") and QuarantineFolder.open(folder).op == "recover"


def test_nothing_due_changes_nothing_and_keeps_nothing(tmp_path):
    d = copy_case("recover-torn-tail", tmp_path)
    run_log_dir(_recover(), *_groups(d), no_quarantine=True)
    before = tree_state(d)
    out = run_log_dir(
        Operation("retain", retain.plan, retain.RetainOptions(now_ms=1)),
        *_groups(d),
        quarantine_dir=tmp_path / "q",
    )
    assert out.plan.empty and out.report["changed"] == [] and out.quarantine is None
    assert tree_state(d) == before and not (tmp_path / "q").exists()


def test_topic_configs_are_resolved_per_log_dir(tmp_path):
    d = copy_case("roll-time-roll", tmp_path)
    opts = roll.RollOptions(if_needed=True, now_ms=ROLL_NOW)

    def rolled(configs):
        return run_log_dir(
            Operation("roll", roll.plan, opts, configs),
            *_groups(d),
            dry_run=True,
        ).plan.partitions["roll-wallclock-0"]["rolled"]

    assert rolled(ConfigSources())
    assert not rolled(ConfigSources(config_pairs=("segment.ms=604800000",)))
    op = Operation("roll", roll.plan, opts, ConfigSources(topic_config_items=("x:segment.ms=1",)))
    assert op.options_for(d).resolver.topic_overrides == {"x": {"segment.ms": "1"}}
    assert op.options.resolver is None  # the Operation itself stays as it was given


def test_compact_plans_and_cleans_in_its_own_pass(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    parts = [log_dir / "cmp-none-0"]
    dry = run_log_dir(_compact(), log_dir, parts, dry_run=True)
    assert dry.plan.decisions[0].estimate["messages_written"] == 100
    out = run_log_dir(_compact(), log_dir, parts, quarantine_dir=tmp_path / "q")
    assert out.report["cleaned"][0]["messages_written"] == 100
    assert out.report["cleaned"][0]["cleaner_offset_checkpoint"] == 1867
    assert out.quarantine.endswith("-compact")
    assert records_of(parts[0]) == records_of(
        COMPACT_FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0"
    )


@pytest.mark.parametrize("make", [_recover, _compact], ids=["recover", "compact"])
def test_an_operation_and_its_outcome_survive_pickling_as_spark_sends_them(tmp_path, make):
    op = make()
    again = pickle.loads(pickle.dumps(op))
    assert again.name == op.name and again.options == op.options and again.configs == op.configs
    d = (
        copy_case("recover-torn-tail", tmp_path)
        if op.name == "recover"
        else restore("keyed-overwrites", "before", tmp_path / "logs")
    )
    out = run_log_dir(again, *_groups(d), dry_run=True)
    back = pickle.loads(pickle.dumps(out))
    assert (
        isinstance(back, Outcome)
        and back.to_dict() == out.to_dict() == run_log_dir(op, *_groups(d), dry_run=True).to_dict()
    )
