"""What a kill -9 leaves must not stop the same command run again: the write probe's file, a
compact's `.cleaned`/`.swap` files, a quarantine folder killed before its manifest. Each test
puts the leftover a kill leaves (found by killing the real process) and runs the command a cron
job would run again, asserting what the user sees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.fsops import FAULT_ENV
from tests.helpers.compaction import FIXTURES, params, records_of, restore
from tests.helpers.paths import EXAMPLES

PROBE = ".kafkalog-probe.kafkalog-tmp"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_probe_left_by_a_kill_stops_no_command(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / PROBE).write_bytes(b"\0")
    (d / "multi-segment-0" / PROBE).write_bytes(b"")
    r = invoke("recover", d)
    assert r.exit_code == 0, r.output
    assert "cannot quarantine" not in r.output
    assert not (d / PROBE).exists() and not (d / "multi-segment-0" / PROBE).exists()
    (d / PROBE).write_bytes(b"")
    r = invoke(
        "retain",
        d,
        "--assume-kafka-defaults",
        "--config",
        "retention.ms=1",
        "--topic",
        "multi-segment",
    )
    assert r.exit_code == 0, r.output
    assert not (d / PROBE).exists()
    (d / PROBE).write_bytes(b"")
    r = invoke("delete-records", d, "--topic", "codec-none", "--before", "5")
    assert r.exit_code == 0, r.output
    assert not (d / PROBE).exists()


def test_no_probe_is_left_for_a_kill_to_leave(tmp_path, monkeypatch):
    """A kill while the probe is open (here: at its fsync) leaves nothing in the log dir: the
    probe has no name there."""
    from kafkalog_cli.storage import fsops

    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    listed = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        fsops.os, "fsync", lambda fd: (listed.append(sorted(os.listdir(d))), real_fsync(fd))[1]
    )
    fsops.FsOps(d).check_writable(d)
    assert listed and all(names == sorted(os.listdir(d)) for names in listed)
    assert not [n for n in os.listdir(d) if "probe" in n]


COMPACT = ["--now", params("tombstones")["now_ms"], "--assume-kafka-defaults"] + [
    x
    for k, v in params("tombstones")["partitions"]["cmp-tomb-0"]["configs"].items()
    for x in ("--config", f"{k}={v}")
]


def _compact(d: Path, env=None):
    return subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", "compact", str(d), *map(str, COMPACT)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _files(d: Path) -> dict[str, bytes]:
    return {
        str(f.relative_to(d)): f.read_bytes()
        for f in sorted(d.rglob("*"))
        if f.is_file() and f.name != ".lock"
    }


def test_compact_finishes_its_own_interrupted_rewrite(tmp_path):
    ref = restore("tombstones", "before", tmp_path / "ref")
    assert _compact(ref).returncode == 0
    want = _files(ref)
    assert records_of(ref / "cmp-tomb-0") == records_of(
        FIXTURES / "compact-tombstones" / "after" / "cmp-tomb-0"
    )
    for n in (5, 20, 130):  # a .index.cleaned; an .index.swap; a later segment's .cleaned
        d = restore("tombstones", "before", tmp_path / f"k{n}")
        assert _compact(d, {FAULT_ENV: str(n)}).returncode == 137
        assert any(f.name.endswith((".cleaned", ".swap")) for f in (d / "cmp-tomb-0").iterdir()), n
        again = _compact(d)
        assert again.returncode == 0, again.stderr
        assert "run `kafkalog recover` first" not in again.stderr
        if n < 130:
            assert _files(d) == want, f"after a kill at step {n}"
        else:
            # the first groups were swapped in already: the rerun's cleaner groups those cleaned,
            # smaller segments together (Cleaner.groupSegmentsBySize), as a restarted broker's
            # does; the records, offsets and checkpoints are the uninterrupted run's
            assert records_of(d / "cmp-tomb-0") == records_of(ref / "cmp-tomb-0"), n
            assert {k: v for k, v in _files(d).items() if "/" not in k} == {
                k: v for k, v in want.items() if "/" not in k
            }, n
        settled = _files(d)
        assert _compact(d).returncode == 0 and _files(d) == settled, (
            f"a second rerun changed the log (kill at {n})"
        )


def test_compact_dry_run_names_the_leftovers_it_would_finish(tmp_path):
    d = restore("tombstones", "before", tmp_path / "k")
    assert _compact(d, {FAULT_ENV: "20"}).returncode == 137
    r = invoke("compact", d, *COMPACT, "--dry-run")
    assert r.exit_code in (0, 1), r.output
    assert "interrupted" in r.output and ".swap" in r.output and "recover` first" not in r.output


def _empty_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A log dir and the quarantine folder a retain killed between its mkdir and its manifest leaves."""
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    folder = tmp_path / ".kafkalog-quarantine" / "logdir" / "20260101T000000.000000Z-retain"
    folder.mkdir(parents=True)
    return d, folder


def test_restore_of_a_folder_killed_before_its_manifest_is_a_clean_no_op(tmp_path):
    d, folder = _empty_folder(tmp_path)
    before = _files(d)
    r = invoke("quarantine", "restore", folder)
    assert r.exit_code == 0, r.output
    assert "nothing to restore" in r.output
    assert _files(d) == before
    r = invoke("quarantine", "restore", folder, "--dry-run")
    assert r.exit_code == 0, r.output


def test_list_and_prune_take_a_folder_killed_before_its_manifest(tmp_path):
    d, folder = _empty_folder(tmp_path)
    r = invoke("quarantine", "list", d, "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [(x["folder"], x["entries"], x["op"]) for x in rows] == [(str(folder), 0, "retain")]
    r = invoke("quarantine", "prune", d, "--older-than", "1s")
    assert r.exit_code == 0, r.output
    assert f"removed {folder}" in r.output and not folder.exists()


def test_prune_finishes_a_killed_prune_of_the_last_folder(tmp_path):
    """A prune killed after renaming the log dir's only folder aside: the rerun removes it."""
    d, folder = _empty_folder(tmp_path)
    aside = folder.with_name(f".{folder.name}.kafkalog-pruning")
    folder.rename(aside)
    (aside / "kept").write_bytes(b"x")
    r = invoke("quarantine", "prune", d, "--older-than", "1s")
    assert r.exit_code == 0, r.output
    assert f"removed {aside} (left by an interrupted prune)" in r.output
    assert not aside.exists()
