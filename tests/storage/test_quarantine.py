"""The quarantine's manifest (a journal) and restore: every kind of entry undone exactly, newest
first; a kill of the run or of the restore at any step; conflicts refused with nothing changed."""

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from kafkalog_cli.errors import ExitCode, KafkalogError
from kafkalog_cli.storage import quarantine as q
from kafkalog_cli.storage.fsops import FsOps, InjectedFault
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.file_states import bytes_and_mtimes as state

T0 = 1_700_000_000_000_000_000


def make_log_dir(root: Path) -> Path:
    d = root / "logs"
    p = d / "t-0"
    p.mkdir(parents=True)
    files = {
        d / "recovery-point-offset-checkpoint": b"0\n1\nt 0 0\n",
        p / "00000000000000000000.log": b"A" * 100 + b"torn",
        p / "00000000000000000000.index": b"\1" * 8 + bytes(32),
        p / "00000000000000000000.timeindex": b"\2" * 12,
        p / "00000000000000000050.log": b"B" * 50,
        p / "00000000000000000050.log.swap": b"S" * 20,
        p / "00000000000000000100.log": b"C" * 10,
        p / "00000000000000000100.log.swap": b"D" * 10,
        p / "00000000000000000050.snapshot.kafkalog-tmp": b"stray",
        p / "leader-epoch-checkpoint": b"0\n1\n0 0\n",
        p / "00000000000000000200.log": b"E" * 30,
        p / "00000000000000000200.index": b"\4" * 8,
        d / "cleaner-offset-checkpoint": b"0\n1\nt 0 200\n",
    }
    for i, (f, data) in enumerate(files.items()):
        f.write_bytes(data)
        os.utime(f, ns=(T0 + i, T0 + i))
    return d


def run_op(ops: FsOps, d: Path) -> None:
    """One of every change fsops makes."""
    p = d / "t-0"
    log, idx = p / "00000000000000000000.log", p / "00000000000000000000.index"
    ops.prepare_quarantine()
    ops.truncate(log, 100, "torn tail")  # cut
    ops.truncate(idx, 8, "preallocated zeros")  # cut, all zeros
    ops.write_atomic(p / "00000000000000000000.timeindex", b"\3" * 12)  # overwritten
    ops.delete(p / "00000000000000000050.log", "after the torn tail")  # removed
    ops.delete_segment_files(
        [
            (p / "00000000000000000200.log", "a batch"),
            (p / "00000000000000000200.index", "a batch"),
            (d / "cleaner-offset-checkpoint", "a batch of two dirs"),
        ]
    )  # removed, one batch
    ops.rename(p / "00000000000000000050.log.swap", p / "00000000000000000050.log")  # renamed
    ops.rename(
        p / "00000000000000000100.log.swap", p / "00000000000000000100.log"
    )  # renamed over a file
    ops.copy_ranges(log, p / "00000000000000000000.log.cleaned", [(0, 50)])  # created
    ops.replace_segments(
        [p / "00000000000000000000.log.cleaned"], [(log, "cleaned")]
    )  # renamed, removed
    ops.extend(idx, 80)  # extended
    ops.set_mtime(p / "leader-epoch-checkpoint", T0 + 99)  # mtime
    ops.write_atomic(
        p / "00000000000000000050.snapshot", b"snap"
    )  # created (the stray tmp kept first)
    ops.write_atomic(
        d / "recovery-point-offset-checkpoint", b"0\n1\nt 0 50\n", mtime_ns=T0 + 7
    )  # overwritten
    ops.make_dir(d / "t-1.x-future", copy_of=p)  # dir_created: copies of t-0's files
    ops.copy_file(p / "leader-epoch-checkpoint", d / "t-1.x-future" / "leader-epoch-checkpoint")
    ops.rename_dirs([(d / "t-1.x-future", d / "t-1")])  # dir_renamed


def quarantined(tmp_path: Path, fault_after=None) -> tuple[Path, dict, q.QuarantineFolder]:
    d = make_log_dir(tmp_path)
    before = state(d)
    ops = FsOps(d, Quarantine(tmp_path / "q", "test", stamp="S"), fault_after=fault_after)
    try:
        run_op(ops, d)
    except InjectedFault:
        pass
    return d, before, q.QuarantineFolder.open(tmp_path / "q" / "S-test")


def restore(folder: q.QuarantineFolder, fault_after=None) -> q.RestorePlan:
    plan = q.plan_restore(folder)
    assert not plan.conflicts, plan.render()
    q.restore(plan, FsOps(folder.log_dir, fault_after=fault_after))
    return plan


def total_steps(tmp_path: Path) -> int:
    d = make_log_dir(tmp_path)
    ops = FsOps(d, Quarantine(tmp_path / "q", "test", stamp="S"))
    run_op(ops, d)
    return ops.steps


def test_every_kind_of_entry_is_undone_exactly_mtimes_included(tmp_path):
    d, before, folder = quarantined(tmp_path)
    assert state(d) != before
    assert {e.kind for e in folder.entries} == set(q.EntryKind)
    plan = restore(folder)
    assert [s.action for s in plan.steps] == [q.RestoreAction.UNDO] * len(plan.steps)
    assert state(d) == before
    again = q.QuarantineFolder.open(folder.path)
    assert again.status == "restored" and q.plan_restore(again).steps == []


def test_the_plan_is_newest_first_and_says_what_it_does(tmp_path):
    d, _, folder = quarantined(tmp_path)
    plan = q.plan_restore(folder)
    assert [s.entry.id for s in plan.steps] == [e.id for e in reversed(folder.entries)]
    text = plan.render()
    assert f"put back the old {d / 'recovery-point-offset-checkpoint'} (10 bytes)" in text
    assert f"remove {d / 't-0' / '00000000000000000050.snapshot'} (test created it)" in text
    assert (
        f"append 4 bytes from t-0/00000000000000000000.log.bytes-100-104 to {d / 't-0' / '00000000000000000000.log'}"
        in text
    )
    assert f"append 32 zero bytes to {d / 't-0' / '00000000000000000000.index'} at byte 8" in text
    assert f"rename the directory {d / 't-1'} back to {d / 't-1.x-future'}" in text
    assert f"remove {d / 't-1.x-future'} (test made it: copies of {d / 't-0'})" in text
    assert [s["kind"] for s in json.loads(json.dumps(plan.to_dict()))["steps"][:3]] == [
        "dir_renamed",
        "dir_created",
        "overwritten",
    ]


@pytest.mark.slow  # a kill at every step
def test_a_kill_at_any_step_of_the_run_then_restore_gives_back_the_log_dir(tmp_path):
    total = total_steps(tmp_path / "ref")
    assert total > 40
    for n in range(1, total):
        d, before, folder = quarantined(tmp_path / f"k{n}", fault_after=n)
        restore(folder)
        assert state(d) == before, f"killed after step {n} of {total}"


@pytest.mark.slow  # a kill at every step
def test_a_restore_killed_at_any_step_finishes_when_run_again(tmp_path):
    d, _, folder = quarantined(tmp_path / "ref")
    undo = FsOps(d)
    q.restore(q.plan_restore(folder), undo)
    for n in range(1, undo.steps):
        d, before, folder = quarantined(tmp_path / f"k{n}")
        with pytest.raises(InjectedFault):
            restore(folder, fault_after=n)
        again = q.QuarantineFolder.open(folder.path)
        assert again.status == "partly restored"
        restore(again)
        assert state(d) == before, f"restore killed after step {n}"


def test_a_partial_append_of_a_killed_restore_is_redone(tmp_path):
    d, before, folder = quarantined(tmp_path)
    log = d / "t-0" / "00000000000000000000.log"
    plan = q.plan_restore(folder)
    cut = next(
        s for s in plan.steps if s.entry.kind is q.EntryKind.CUT and s.entry.source == str(log)
    )
    undo = FsOps(d)
    undo.bounds = undo.bounds.including(
        folder.path
    )  # the test writes the restore's first line itself
    undo.append_line(folder.path / q.PROGRESS, b'{"restore":"S"}\n')
    for s in plan.steps[: plan.steps.index(cut)]:
        q.restore(q.RestorePlan(folder, [s], []), undo)  # each step recorded as done
    with open(log, "ab") as f:  # the kill came midway through the append
        f.write(b"to")
    again = q.plan_restore(q.QuarantineFolder.open(folder.path))
    assert (
        again.steps[0].entry.id == cut.entry.id and again.steps[0].action is q.RestoreAction.FINISH
    )
    q.restore(again, undo)
    assert state(d) == before


def _conflict_cases():
    def longer(d, folder):
        with open(d / "t-0" / "00000000000000000000.log", "ab") as f:
            f.write(b"x")
        return d / "t-0" / "00000000000000000000.log"

    def created_changed(d, folder):
        (d / "t-0" / "00000000000000000050.snapshot").write_bytes(b"other")
        return d / "t-0" / "00000000000000000050.snapshot"

    def overwritten_changed(d, folder):
        (d / "recovery-point-offset-checkpoint").write_bytes(b"0\n1\nt 0 60\n")
        return d / "recovery-point-offset-checkpoint"

    def back_in_the_way(d, folder):
        (d / "t-0" / "00000000000000000050.snapshot.kafkalog-tmp").write_bytes(b"new")
        return d / "t-0" / "00000000000000000050.snapshot.kafkalog-tmp"

    def kept_copy_damaged(d, folder):
        kept = folder.path / "t-0" / "00000000000000000050.log"
        kept.write_bytes(b"b" * 50)
        return kept

    def kept_copy_missing(d, folder):
        kept = folder.path / "t-0" / "00000000000000000000.log.bytes-100-104"
        kept.unlink()
        return kept

    def extended_file_cut(d, folder):
        os.truncate(d / "t-0" / "00000000000000000000.index", 40)
        return d / "t-0" / "00000000000000000000.index"

    return [
        longer,
        created_changed,
        overwritten_changed,
        back_in_the_way,
        kept_copy_damaged,
        kept_copy_missing,
        extended_file_cut,
    ]


@pytest.mark.parametrize("change", _conflict_cases(), ids=lambda f: f.__name__)
def test_a_conflicting_change_is_refused_and_nothing_changes(tmp_path, change):
    d, _, folder = quarantined(tmp_path)
    where = change(d, folder)
    after, kept = state(d), state(folder.path)
    plan = q.plan_restore(folder)
    assert [c.path for c in plan.conflicts] == [str(where)], plan.render()
    with pytest.raises(ValueError):
        q.restore(plan, FsOps(d))
    assert state(d) == after and state(folder.path) == kept


def test_an_entry_outside_the_log_dir_is_refused(tmp_path):
    d, _, folder = quarantined(tmp_path)
    lines = (folder.path / q.JOURNAL).read_text().splitlines()
    e = json.loads(lines[1])
    e["source"] = str(tmp_path / "elsewhere")
    lines[1] = json.dumps(e)
    (folder.path / q.JOURNAL).write_text("\n".join(lines) + "\n")
    plan = q.plan_restore(q.QuarantineFolder.open(folder.path))
    assert plan.conflicts[0].path == str(tmp_path / "elsewhere")
    assert "outside the log dir" in plan.conflicts[0].message


@pytest.mark.parametrize(
    "kind, fact", [("cut", "end"), ("renamed", "target"), ("extended", "new_size")]
)
def test_an_entry_without_a_fact_its_kind_needs_is_refused(tmp_path, kind, fact):
    d, _, folder = quarantined(tmp_path)
    lines = (folder.path / q.JOURNAL).read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if json.loads(line).get("kind") == kind)
    e = json.loads(lines[n])
    del e[fact]
    lines[n] = json.dumps(e)
    (folder.path / q.JOURNAL).write_text("\n".join(lines) + "\n")
    plan = q.plan_restore(q.QuarantineFolder.open(folder.path))
    assert (plan.conflicts[0].path, plan.conflicts[0].message) == (
        e["source"],
        f"the manifest's {kind} entry has no {fact}: the manifest is damaged",
    )
    with pytest.raises(ValueError):
        q.restore(plan, FsOps(d))


def test_the_journal_ignores_a_torn_last_line_and_refuses_a_damaged_one(tmp_path):
    d, _, folder = quarantined(tmp_path)
    journal = folder.path / q.JOURNAL
    n = len(folder.entries)
    with open(journal, "ab") as f:
        f.write(b'{"kind":"removed","sou')  # a kill during the append
    assert len(q.QuarantineFolder.open(folder.path).entries) == n
    lines = journal.read_bytes().split(b"\n")
    lines[2] = b"garbage"
    journal.write_bytes(b"\n".join(lines))
    with pytest.raises(KafkalogError) as e:
        q.QuarantineFolder.open(folder.path)
    assert e.value.exit_code == ExitCode.CORRUPT and "line 3" in str(e.value)


def test_a_completion_line_completes_its_entry_in_place(tmp_path):
    d, _, folder = quarantined(tmp_path)
    created = [
        e for e in folder.entries if e.kind is q.EntryKind.CREATED and e.source.endswith(".cleaned")
    ]
    assert len(created) == 1 and created[0].new_sha256 is not None
    ids = [
        json.loads(line).get("id")
        for line in (folder.path / q.JOURNAL).read_text().splitlines()[1:]
    ]
    assert len(ids) == len(folder.entries) + 1  # one id on two lines
    assert [e.id for e in folder.entries] == list(dict.fromkeys(ids))


def test_a_version_1_manifest_is_listed_and_restored(tmp_path):
    d = make_log_dir(tmp_path)
    before = state(d)
    folder = tmp_path / ".kafkalog-quarantine" / "logs" / "20240101T000000.000000Z-retain"
    (folder / "t-0").mkdir(parents=True)
    log, idx = d / "t-0" / "00000000000000000050.log", d / "t-0" / "00000000000000000000.index"
    os.rename(log, folder / "t-0" / log.name)
    os.truncate(idx, 8)
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "version": 1,
                "op": "retain",
                "created": "20240101T000000.000000Z",
                "entries": [
                    {
                        "what": "file",
                        "source": str(log),
                        "stored": str(folder / "t-0" / log.name),
                        "reason": "r",
                        "when": "x",
                        "start": None,
                        "end": None,
                    },
                    {
                        "what": "zeros",
                        "source": str(idx),
                        "stored": None,
                        "reason": "r",
                        "when": "x",
                        "start": 8,
                        "end": 40,
                    },
                ],
            }
        )
    )
    (f,) = [q.QuarantineFolder.open(p) for p in q.find_folders(d)]
    assert (f.version, f.op, f.log_dir, len(f.entries), f.bytes) == (1, "retain", d, 2, 50)
    restore(f)
    assert {k: v[0] for k, v in state(d).items()} == {k: v[0] for k, v in before.items()}


def test_folders_are_found_from_a_log_dir_a_quarantine_dir_or_themselves(tmp_path):
    d = make_log_dir(tmp_path)
    for stamp in ("20240101T000000.000000Z", "20250101T000000.000000Z"):
        ops = FsOps(d, Quarantine(q.default_quarantine_root(d), "retain", stamp=stamp))
        ops.prepare_quarantine()
    root = tmp_path / ".kafkalog-quarantine"
    found = q.find_folders(d)
    assert [p.name for p in found] == [
        "20240101T000000.000000Z-retain",
        "20250101T000000.000000Z-retain",
    ]
    assert q.find_folders(root) == found == q.find_folders(root / "logs")
    assert q.find_folders(found[0]) == [found[0]]
    folders = [q.QuarantineFolder.open(p) for p in found]
    now = dt.datetime(2025, 1, 8, tzinfo=dt.timezone.utc)
    assert q.older_than(folders, 7 * 86400 - 1, now) == folders
    assert q.older_than(folders, 7 * 86400 + 1, now) == folders[:1]
    with pytest.raises(KafkalogError) as e:
        q.QuarantineFolder.open(d)
    assert e.value.exit_code == ExitCode.INPUT
