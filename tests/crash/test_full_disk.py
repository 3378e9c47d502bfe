"""A 100% full disk (issue 23): retain and delete-records free space first and write after, in an
order that loads at every instant, and report what `df` gains (freed_on_disk) and what the
quarantine holds (held_in_quarantine).

The order, for the partition whose every segment goes (retain's last-segment case): the new
empty active segment at the log end offset is created FIRST (its .index, .timeindex and .log are
empty: an inode each, no block), then the old segments are deleted oldest first, then what needs
blocks (the leader-epoch-checkpoint, the log dir's checkpoints). At every instant the segments are
a suffix of the old ones plus the empty one at the log end, so the broker's load (log start =
max(checkpoint, first segment's base)) never lands below the new log start with no segment, where
3.3.1's LogLoader would create a segment at the checkpoint's older offset and reuse offsets.
Writing log-start-offset-checkpoint before the last segment goes was the other way; it needs a
free block before anything is freed, which a 100% full disk does not have.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.ops import delete_records, recover, retain
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.ops.runner import ConfigSources
from kafkalog_cli.storage.fsops import FAULT_ENV, FsOps, InjectedFault
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.broker_cases import tree_state
from tests.helpers.broker_start import broker_verdict, needs_broker
from tests.helpers.fullfs import EXAMPLES, free_bytes, full_copy, tmpfs
from tests.helpers.run_lines import log_dir_report, totals

PART = "multi-segment-0"
NOW = 1795249186389
RETAIN = [
    "retain",
    "--assume-kafka-defaults",
    "--config",
    "retention.bytes=20000",
    "--topic",
    "multi-segment",
    "--now",
    str(NOW),
]
DELETE = ["delete-records", "--topic", "multi-segment", "--partition", "0", "--before", "300"]
CASES = {
    "retain": (RETAIN, 600, [600]),
    "delete-records": (DELETE, 300, [300]),
}  # args, new log start, bases left


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def fs(tmp_path):
    with tmpfs(tmp_path / "fs") as mounted:
        yield mounted


def bases(d: Path) -> list[int]:
    return sorted(int(f.name[:20]) for f in (d / PART).glob("*.log"))


def loaded_log_start(d: Path) -> int:
    """LogLoader's rule: max(log-start-offset-checkpoint's entry, first segment's base)."""
    lines = (d / "log-start-offset-checkpoint").read_text().splitlines()[2:]
    entry = next((int(x.split()[2]) for x in lines if x.split()[:2] == ["multi-segment", "0"]), 0)
    return max(entry, bases(d)[0])


def state(d: Path) -> dict[str, str]:
    return {
        str(f.relative_to(d)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(d.rglob("*"))
        if f.is_file()
        and f.name != ".lock"
        and not f.relative_to(d).parts[0].startswith("__cluster_metadata")
    }


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_full_disk_is_freed_and_the_result_loads(fs, tmp_path, command):
    args, start, left = CASES[command]
    d = full_copy(fs)
    report = tmp_path / "report.jsonl"
    r = invoke(*args, "--no-quarantine", "--report", report, d)
    assert r.exit_code == 0, r.output
    rep = log_dir_report(report.read_text())
    assert totals(report.read_text())["freed_on_disk"] == rep["freed_on_disk"]
    part = rep["partitions"][PART]
    # what df gains is what the report says, per partition and in total; nothing is held
    assert free_bytes(fs) == rep["freed_on_disk"] == part["freed_on_disk"] > 0
    assert rep["held_in_quarantine"] == part["held_in_quarantine"] == 0
    assert bases(d) == left and loaded_log_start(d) == start
    assert any("file system is full" in f["message"] for f in rep["findings"])
    # the result loads: recover has nothing to change...
    r = invoke("recover", "--dry-run", "--format", "json", "--no-quarantine", "--now", NOW, d)
    assert r.exit_code in (0, 1), r.output
    changes = [
        (a["action"], Path(a["path"]).name, a["reason"])
        for a in log_dir_report(r.stdout)["actions"]
    ]
    # ...but the producer snapshot at the new log start offset, which the broker keeps after its own
    # retention or DeleteRecords too and deletes at its next load (ProducerStateManager.truncateAndReload:
    # offset <= log start): kafkalog writes what the broker writes (tests/fixtures/broker)
    assert changes == [("delete", f"{start:020d}.snapshot", "at or below the log start offset")]


@pytest.mark.parametrize("command", sorted(CASES))
def test_the_default_quarantine_frees_nothing_and_says_how(fs, command):
    args, _, _ = CASES[command]
    d = full_copy(fs)
    before = tree_state(d)
    r = invoke(*args, d)
    assert r.exit_code == 6
    assert (
        "no space left on device" in r.stderr
        and "--quarantine DIR on another file system" in r.stderr
    )
    assert "--no-quarantine" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert tree_state(d) == before and free_bytes(fs) == 0


def test_a_dry_run_says_what_it_would_free_and_that_the_default_quarantine_frees_nothing(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    r = invoke(*RETAIN, "--dry-run", d)
    assert r.exit_code == 1
    assert "nothing is freed on disk: the quarantine" in r.stdout
    # the segments (15996 bytes) and the old leader-epoch-checkpoint stay as hard links; the new
    # checkpoint takes a block
    assert "bytes to take on disk, 16004 to hold in the quarantine" in r.stdout
    r = invoke(*RETAIN, "--dry-run", "--no-quarantine", "--format", "json", d)
    plan = log_dir_report(r.stdout)
    assert plan["held_in_quarantine"] == 0 and plan["freed_on_disk"] >= 15996
    r = invoke(*RETAIN, "-v", d)
    assert r.exit_code == 0 and "nothing is freed on disk" in r.stdout
    assert "bytes taken on disk, 16004 held in the quarantine" in r.stdout


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_quarantine_on_another_file_system_frees_as_it_goes_and_restores(fs, tmp_path, command):
    args, _, left = CASES[command]
    d = full_copy(fs)
    before = tree_state(d)
    q = tmp_path / "q"  # on the disk under the tmpfs: another file system
    report = tmp_path / "report.jsonl"
    r = invoke(*args, "--quarantine", q, "--report", report, d)
    assert r.exit_code == 0, r.output
    rep = log_dir_report(report.read_text())
    (folder,) = [m.parent for m in q.rglob("manifest.jsonl")]
    kept = sum(
        f.stat().st_size for f in folder.rglob("*") if f.is_file() and f.name != "manifest.jsonl"
    )
    assert (
        rep["held_in_quarantine"]
        == kept
        > sum(len(v) for k, v in before.items() if k.startswith(PART) and not (d / k).exists())
    )
    assert free_bytes(fs) == rep["freed_on_disk"] > 0 and bases(d) == left
    r = invoke("quarantine", "restore", folder)
    assert r.exit_code == 0, r.output
    assert tree_state(d) == before


def test_another_file_system_is_moved_file_by_file(tmp_path):
    """copy, fsync, verify, unlink: each file's space comes back before the next is copied."""
    d = tmp_path / "fs" / "logdir"
    shutil.copytree(EXAMPLES, d)
    p = _retain_plan(d, free_first=True)
    fsops = FsOps(d, Quarantine(tmp_path / "q", "retain"))
    fsops.keeper._by_copy = True  # as on another file system (tmp_path is one here)
    apply(p, fsops)
    steps = [s.split()[0:2] for s in fsops.journal if s.startswith(("copy", "unlink"))]
    gone = [a.path for a in p.actions if a.kind.value == "delete"]
    assert len(gone) >= 7
    for f in gone:
        copied = next(
            i
            for i, (what, src) in enumerate(steps)
            if what == "copy" and src.startswith(str(f) + "[")
        )
        assert steps[copied + 1] == ["unlink", str(f)], steps


# ------------------------------------------------------------------ crash safety of the order
def _retain_plan(d: Path, free_first: bool):
    ((ld, parts),) = partition_dirs_for([d]).items()
    parts = [x for x in parts if x.name == PART]
    sources = ConfigSources(("retention.bytes=20000",), assume_kafka_defaults=True)
    return retain.plan(
        ld,
        parts,
        retain.RetainOptions(now_ms=NOW, resolver=sources.resolver(ld), free_first=free_first),
    )


def _delete_plan(d: Path, free_first: bool):
    ((ld, parts),) = partition_dirs_for([d]).items()
    return delete_records.plan(
        ld,
        [x for x in parts if x.name == PART],
        delete_records.DeleteRecordsOptions(
            offsets={("multi-segment", 0): 300}, free_first=free_first
        ),
    )


PLANS = {"retain": _retain_plan, "delete-records": _delete_plan}


def assert_loads(d: Path, new_start: int) -> None:
    """What a broker (and recover) load: a log start between the old one and the new one, the log
    end offset unchanged, every record at or above the loaded start still there."""
    start = loaded_log_start(d)
    assert 0 <= start <= new_start
    ((ld, parts),) = partition_dirs_for([d]).items()
    p = recover.plan(ld, [x for x in parts if x.name == PART], recover.RecoverOptions(now_ms=NOW))
    assert p.partitions[PART]["log_end_offset"] == 600
    assert not [a for a in p.actions if a.kind.value == "truncate"]


@pytest.mark.parametrize("command", sorted(PLANS))
def test_kill_after_every_step_of_the_free_first_order_loads_and_a_rerun_finishes(
    tmp_path, command
):
    ref = tmp_path / "ref"
    shutil.copytree(EXAMPLES, ref)
    plan = PLANS[command]
    total = apply(plan(ref, True), FsOps(ref, Quarantine(None, command)))["fs_steps"]
    want = state(ref)
    new_start = CASES[command][1]
    assert total >= 5
    for n in range(1, total):
        d = tmp_path / f"k{n}"
        shutil.copytree(EXAMPLES, d)
        with pytest.raises(InjectedFault):
            apply(plan(d, True), FsOps(d, Quarantine(None, command), fault_after=n))
        assert_loads(d, new_start)
        apply(plan(d, True), FsOps(d, Quarantine(None, command)))
        assert state(d) == want, f"after a kill at step {n} of {total}"


@pytest.mark.parametrize("command", sorted(CASES))
def test_kill_9_at_every_step_on_a_full_disk_then_recover_loads_and_rerun_finishes(
    fs, tmp_path, command
):
    """The installed command, killed (exit 137, as after SIGKILL) after each step on a real full
    disk; `recover --dry-run` loads what it left, and the same command again finishes the run."""
    args, new_start, _ = CASES[command]
    exe = [str(Path(sys.executable).with_name("kafkalog")), *args, "--no-quarantine"]
    ref = tmp_path / "ref"
    shutil.copytree(EXAMPLES, ref)
    assert subprocess.run(exe + [str(ref)], capture_output=True).returncode == 0
    want = state(ref)
    steps = 1
    while True:
        d = full_copy(fs)
        killed = subprocess.run(
            exe + [str(d)],
            env={**os.environ, FAULT_ENV: str(steps)},
            capture_output=True,
            text=True,
        )
        if killed.returncode == 0:
            break  # past the last step: the run completed
        assert killed.returncode == 137, killed.stderr
        assert_loads(d, new_start)
        loaded = subprocess.run(
            [
                str(Path(sys.executable).with_name("kafkalog")),
                "recover",
                "--dry-run",
                "--now",
                str(NOW),
                str(d),
            ],
            capture_output=True,
            text=True,
        )
        assert loaded.returncode in (0, 1), loaded.stderr
        again = subprocess.run(exe + [str(d)], capture_output=True, text=True)
        assert again.returncode == 0, (steps, again.stderr)
        assert state(d) == want, f"after a kill at step {steps}"
        steps += 1
    assert steps >= 5


# ------------------------------------------------------------------ with the real broker
@needs_broker
def test_a_broker_that_fails_on_the_full_disk_starts_after_retain(fs, tmp_path):
    d = full_copy(fs)
    failed = broker_verdict([d], tmp_path / "first")
    assert not failed.started, failed.log[-3000:]
    assert failed.lines("Error while writing to checkpoint file") or failed.lines(
        "No space left on device"
    ), failed.log[-3000:]
    r = invoke(*RETAIN, "--no-quarantine", d)
    assert r.exit_code == 0, r.output
    assert free_bytes(fs) > 0
    started = broker_verdict([d], tmp_path / "second")
    assert started.started, started.log[-3000:]
