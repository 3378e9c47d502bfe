"""Crash safety of a batched delete (FsOps.delete_segment_files, what retain's run of segment
deletes becomes): killed after any step inside a batch (while the files are linked into the
quarantine, after the manifest's one append, part way through the unlinks), the log dir is one
that `kafkalog recover` loads and nothing is lost; `kafkalog quarantine restore` gives back the log
dir byte for byte; a rerun of retain finishes the job."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FAULT_ENV, FsOps, InjectedFault
from kafkalog_cli.storage.quarantine import EntryKind, QuarantineFolder, default_quarantine_root
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.file_states import partition_hashes as partition_files
from tests.helpers.retention import DAY, NEW, NOW, OLD, make_log_dir, plan_for, res_with

RETAIN = [
    "retain",
    "--now",
    str(NOW),
    "--config",
    "cleanup.policy=delete",
    "--config",
    f"retention.ms={7 * DAY}",
]
SEGMENT = re.compile(r"\d{20}\.log(\.\d+)?$")


def fresh(root: Path) -> Path:
    """Two partitions whose old segments expire: two runs of deletes, one in each partition dir
    (the leader-epoch-checkpoint written between them)."""
    return make_log_dir(
        root / "logs",
        {"t-0": [[OLD], [OLD, OLD], [OLD], [OLD], [NEW, NEW]], "u-0": [[OLD], [OLD], [NEW]]},
    )


def tree(d: Path) -> dict[str, str]:
    """Every file of the log dir (the .lock left out): relative name -> sha256."""
    return {
        str(f.relative_to(d)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(d.rglob("*"))
        if f.is_file() and f.name != ".lock"
    }


def batches(files) -> set[tuple[str, int, int]]:
    """(partition, base offset, last offset) of every record batch of the given segment files
    (in the log dir or kept in the quarantine: both under their partition dir's name)."""
    return {
        (f.parent.name, b.base_offset, b.last_offset)
        for f in files
        for b in iter_batches(f.read_bytes())
    }


def kafkalog(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def retain(d: Path, fault_after: int | None = None) -> FsOps:
    fsops = FsOps(d, Quarantine(default_quarantine_root(d), "retain"), fault_after=fault_after)
    try:
        apply(plan_for(d, NOW, res_with()), fsops)
    except InjectedFault:
        pass
    return fsops


def batch_ranges(journal: list[str]) -> list[range]:
    """The steps (1-based) of each batched delete of a run: its links into the quarantine, the
    quarantine dirs' fsyncs, the manifest's append, the unlinks and the fsyncs of the dirs they left."""
    kinds = [j.split()[0] for j in journal]
    out = []
    for a, kind in enumerate(kinds):
        if kind == "append" and kinds[a + 1 : a + 2] == ["unlink"]:
            start = a
            while kinds[start - 1] == "fsync":
                start -= 1
            while kinds[start - 1] == "link":
                start -= 1
            end = a + 1
            while kinds[end : end + 1] == ["unlink"]:
                end += 1
            while kinds[end : end + 1] == ["fsync"]:
                end += 1
            out.append(range(start + 1, end + 1))
    return out


def batch_steps(journal: list[str]) -> list[int]:
    return [n for r in batch_ranges(journal) for n in r]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    d = fresh(root)
    before, records = tree(d), batches(d.glob("*/*.log"))
    fsops = retain(d)
    kept = batches(d.glob("*/*.log"))
    assert 0 < len(kept) < len(records)
    return before, tree(d), fsops.journal, records, kept


def test_a_batch_is_linked_journalled_once_then_unlinked_in_order(reference):
    journal = reference[2]
    ranges = batch_ranges(journal)
    assert len(ranges) == 2  # t-0's deletes, then u-0's (its leader-epoch-checkpoint between)
    for r in ranges:
        kinds = [journal[n - 1].split()[0] for n in r]
        links, unlinks = kinds.count("link"), kinds.count("unlink")
        assert links == unlinks > 5
        # every link, one fsync of the quarantine dir, one append of all the entries, every unlink
        # in the plan's order, one fsync of the partition dir: 3 syncs for the batch, not 3 a file
        assert kinds == ["link"] * links + ["fsync", "append"] + ["unlink"] * unlinks + ["fsync"]
        linked = [journal[n - 1].split()[1] for n in r if journal[n - 1].startswith("link")]
        unlinked = [journal[n - 1].split()[1] for n in r if journal[n - 1].startswith("unlink")]
        assert linked == unlinked
        logs = [Path(p).name for p in unlinked if p.endswith(".log")]
        assert logs == sorted(logs), "the oldest segment first"


@pytest.mark.slow
def test_killed_inside_a_batch_restore_gives_back_the_log_dir(reference, tmp_path):
    before, _, journal, _, _ = reference
    for n in batch_steps(journal):
        d = fresh(tmp_path / f"k{n}")
        assert tree(d) == before
        retain(d, fault_after=n)
        (folder,) = json.loads(kafkalog("quarantine", "list", "--format", "json", d).output)
        r = kafkalog("quarantine", "restore", folder["folder"])
        assert r.exit_code == 0, f"killed after step {n} ({journal[n - 1]}): {r.output}"
        assert tree(d) == before, f"killed after step {n} ({journal[n - 1]})"


@pytest.mark.slow
def test_killed_inside_a_batch_recover_loads_it_nothing_is_lost_and_retain_finishes(
    reference, tmp_path
):
    before, _, journal, records, kept = reference
    ref = fresh(tmp_path / "ref")  # what recover then retain make of the log dir uninterrupted
    assert (
        kafkalog("recover", "--now", NOW, ref).exit_code == 0
        and kafkalog(*RETAIN, ref).exit_code == 0
    )
    want = partition_files(ref, tree(ref))  # the partitions' files (recover owns the root's)
    for n in batch_steps(journal):
        d = fresh(tmp_path / f"k{n}")
        retain(d, fault_after=n)
        at = f"killed after step {n} ({journal[n - 1]})"
        r = kafkalog("recover", "--now", NOW, d)
        assert r.exit_code == 0, f"{at}: {r.output}"
        # every record is in the log dir or kept in the quarantine, each kept file exactly as it was
        q = default_quarantine_root(d)
        for path in sorted(q.iterdir()):
            folder = QuarantineFolder.open(path)
            for e in folder.entries:
                if e.kind is EntryKind.REMOVED and e.stored:
                    stored = folder.stored_path(e)
                    assert hashlib.sha256(stored.read_bytes()).hexdigest() == e.sha256, at
                    if folder.op == "retain":
                        assert e.sha256 == before[str(Path(e.source).relative_to(d))], at
        in_log_dir = batches(d.glob("*/*.log"))
        in_quarantine = batches(f for f in q.rglob("*") if SEGMENT.match(f.name))
        assert in_log_dir | in_quarantine == records, at
        assert kept <= in_log_dir, at
        r = kafkalog(*RETAIN, d)
        assert r.exit_code == 0, f"{at}: {r.output}"
        assert partition_files(d, tree(d)) == want, at


def test_killed_for_real_after_the_manifest_before_the_unlinks_restore_is_exact(
    reference, tmp_path
):
    """The installed command dies (exit 137, as after SIGKILL) right after a batch's entries are
    written: its files are still in the log dir, and restore accepts that."""
    before, _, journal, _, _ = reference
    n = next(
        i
        for i, j in enumerate(journal, 1)
        if j.startswith("append") and j.endswith("manifest.jsonl")
    )
    d = fresh(tmp_path)
    env = {**os.environ, FAULT_ENV: str(n), "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", *RETAIN, str(d)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 137, p.stderr
    assert tree(d) == before  # nothing unlinked yet
    (folder,) = json.loads(kafkalog("quarantine", "list", "--format", "json", d).output)
    assert folder["entries"] > 10
    r = kafkalog("quarantine", "restore", "--dry-run", folder["folder"])
    *steps, summary = r.output.splitlines()[1:]
    assert summary.startswith(
        f"quarantine restore --dry-run: 1 quarantine folder, {folder['entries']} changes pending"
    )
    assert r.exit_code == 0 and len(steps) == folder["entries"], r.output
    assert all(
        s.startswith("  - leave ") and s.endswith(": already as before retain") for s in steps
    ), r.output
    r = kafkalog("quarantine", "restore", folder["folder"])
    assert r.exit_code == 0, r.output
    assert tree(d) == before
