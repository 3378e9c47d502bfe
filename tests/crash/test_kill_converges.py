"""The kill -9 driver: every mutating command, run as its own process on a fresh log dir with work
to do, is killed at a seeded instant (after its Nth file-system step: KAFKALOG_FAULT_AFTER ends
the process with os._exit(137), as SIGKILL does, at the same point on any machine, loaded or
not); then the SAME command runs again, and:

- it exits 0 (a cron job's rerun never fails);
- the log dir(s) equal an uninterrupted run's on another copy: every file's name and bytes, and
  the mtime of every file whose mtime the uninterrupted run kept;
- restoring every quarantine folder left (newest first) gives back the original bytes.

A small deterministic sample runs in the suite (seed 31, KILLS_PER_COMMAND kills each). Set
KAFKALOG_KILLS=N (and KAFKALOG_KILL_SEED) for a longer run; each failure names the command, the
step it was killed at and what differed."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage.fsops import FAULT_ENV, FsOps
from kafkalog_cli.storage.quarantine import QUARANTINE_DIRNAME, find_folders
from tests.helpers.compaction import params as compact_params
from tests.helpers.compaction import restore as compact_fixture
from tests.helpers.paths import EXAMPLES
from tests.ops.move_helpers import TP, two_log_dirs

SEED = int(os.environ.get("KAFKALOG_KILL_SEED", "31"))
KILLS_PER_COMMAND = int(os.environ.get("KAFKALOG_KILLS", "2"))
MAX_DELAY = float(
    os.environ.get("KAFKALOG_KILL_MAX_DELAY", "0.2")
)  # seconds after the first change
NOW = 1795249186389
_UUID = re.compile(r"\.[0-9a-f]{32}-(delete|future)")


@dataclass
class Case:
    """A log dir (or two) with work for one command: `setup(root)` builds it under `root` and
    returns the log dirs to compare and the command's arguments."""

    setup: Callable[[Path], tuple[list[Path], list[str]]]
    restorable: bool = True  # its quarantine folders restore the original
    # the state compared (None: every file): compact's rerun regroups the segments the killed
    # run had cleaned already (Cleaner.groupSegmentsBySize), as a restarted broker's cleaner
    # does, so its partition dirs are compared by their records, offsets and batches
    compare: Callable[[dict, list[Path] | None], dict] | None = None


def _examples(root: Path) -> Path:
    d = root / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / ".lock").unlink(missing_ok=True)
    return d


def _unclean_torn(root: Path) -> Path:
    """No clean shutdown; a torn tail in multi-segment-0; a zeroed index in codec-gzip-0."""
    d = _examples(root)
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    log = sorted((d / "multi-segment-0").glob("*.log"))[-1]
    os.truncate(log, log.stat().st_size - 7)
    idx = sorted((d / "codec-gzip-0").glob("*.index"))[0]
    idx.write_bytes(bytes(idx.stat().st_size))
    return d


def recover_case(root):
    return [_unclean_torn(root)], ["recover", "--now", NOW]


def recover_repair_case(root):
    d = _examples(root)
    log = sorted((d / "multi-segment-0").glob("*.log"))[-1]
    os.truncate(log, log.stat().st_size - 7)
    return [d], ["recover", "--repair", "--now", NOW]


def recover_salvage_case(root):
    d = _examples(root)
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    log = sorted((d / "multi-segment-0").glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    mtime = log.stat().st_mtime_ns
    log.write_bytes(bytes(data))
    os.utime(log, ns=(mtime, mtime))
    return [d], ["recover", "--salvage", "--all", "--now", NOW]


def retain_case(root):
    return [_examples(root)], [
        "retain",
        "--assume-kafka-defaults",
        "--config",
        "retention.bytes=20000",
        "--topic",
        "multi-segment",
        "--now",
        NOW,
    ]


def delete_records_case(root):
    return [_examples(root)], [
        "delete-records",
        "--topic",
        "multi-segment",
        "--partition",
        "0",
        "--before",
        "300",
    ]


def roll_case(root):
    return [_examples(root)], [
        "roll",
        "--topic",
        "multi-segment",
        "--topic",
        "codec-*",
        "--now",
        NOW,
    ]


def compact_case(root):
    d = compact_fixture("tombstones", "before", root / "logdir")
    p = compact_params("tombstones")
    configs = [
        x
        for k, v in p["partitions"]["cmp-tomb-0"]["configs"].items()
        for x in ("--config", f"{k}={v}")
    ]
    return [d], ["compact", "--now", p["now_ms"], "--assume-kafka-defaults", *configs]


def move_case(root):
    src, dst = two_log_dirs(root)
    return [src, dst], [
        "move-partition",
        "--topic",
        TP.topic,
        "--partition",
        TP.partition,
        src,
        dst,
    ]


def _retained(root) -> tuple[Path, Path]:
    """A log dir after a retain run, and that run's quarantine folder."""
    dirs, args = retain_case(root)
    r = CliRunner().invoke(cli, [*map(str, args), str(dirs[0])])
    assert r.exit_code == 0, r.output
    (folder,) = find_folders(dirs[0])
    return dirs[0], folder


def restore_case(root):
    d, folder = _retained(root)
    return [d], ["quarantine", "restore", folder]


def restore_move_case(root):
    """A moved partition, and the move's folder to restore (the partition back in the source)."""
    dirs, args = move_case(root)
    r = CliRunner().invoke(cli, _argv(dirs, args))
    assert r.exit_code == 0, r.output
    (folder,) = find_folders(dirs[1])
    return dirs, ["quarantine", "restore", folder]


def prune_case(root):
    d, folder = _retained(root)
    return [d, folder.parent], ["quarantine", "prune", d, "--older-than", "0s"]


def by_records(st: dict, dirs: list[Path] | None) -> dict:
    """The files outside partition dirs as they are; each partition dir as its records."""
    out, logs = {}, {}
    for k, v in st.items():
        parts = Path(k).parts
        if len(parts) == 3 and parts[2].endswith(".log"):
            logs.setdefault(parts[1], []).append((parts[2], v[0]))
        elif len(parts) != 3:
            out[k] = v
    for part, files in logs.items():
        records = []
        for _, data in sorted(files):
            for b in iter_batches(data):
                records.append(
                    (
                        b.base_offset,
                        b.last_offset,
                        b.producer_id,
                        b.attributes,
                        tuple((r.offset, r.timestamp, r.key, r.value) for r in b.records()),
                    )
                )
        out[f"{part} (records)"] = (repr(records).encode(), 0)
    return out


CASES = {
    "recover": Case(recover_case),
    "recover --repair": Case(recover_repair_case),
    "recover --salvage": Case(recover_salvage_case),
    "retain": Case(retain_case),
    "delete-records": Case(delete_records_case),
    "roll": Case(roll_case),
    "compact": Case(compact_case, compare=by_records),
    "move-partition": Case(move_case),
    "quarantine restore": Case(restore_case, restorable=False),
    "quarantine restore (a move)": Case(restore_move_case, restorable=False),
    "quarantine prune": Case(prune_case, restorable=False),
}


def _argv(dirs: list[Path], args: list) -> list[str]:
    args = [str(a) for a in args]
    if args[0] in ("quarantine", "move-partition"):
        return args  # their paths are in their arguments
    return [*args, *map(str, dirs)]


def state(dirs: list[Path]) -> dict[str, tuple[bytes, int]]:
    """Every file (the .lock aside) under the log dirs, by its path from their parent (the uuids
    of -delete/-future names replaced): (bytes, mtime_ns). A directory is listed as a name too."""
    out = {}
    for d in dirs:
        if not d.exists():
            continue
        for where, subdirs, files in os.walk(d):
            for n in files + subdirs:
                f = Path(where) / n
                if n == ".lock":
                    continue
                key = _UUID.sub(r".X-\1", str(f.relative_to(d.parent)))
                out[key] = (f.read_bytes(), f.stat().st_mtime_ns) if f.is_file() else (b"<dir>", 0)
    return out


def differences(got: dict, want: dict, kept: set[str], mine: dict) -> list[str]:
    """What differs: names, bytes, and the mtime of each file in `kept` (those whose mtime the
    uninterrupted run kept) against this copy's own original (`mine`)."""
    out = [f"missing {k}" for k in sorted(want.keys() - got.keys())]
    out += [f"extra {k}" for k in sorted(got.keys() - want.keys())]
    for k in sorted(got.keys() & want.keys()):
        if got[k][0] != want[k][0]:
            out.append(f"bytes of {k}")
        elif k in kept and k in mine and got[k][1] != mine[k][1]:
            out.append(f"mtime of {k}")
    return out


def kept_mtimes(original: dict, want: dict) -> set[str]:
    return {k for k in original.keys() & want.keys() if original[k][1] == want[k][1]}


def steps_of(case: Case, root: Path, monkeypatch) -> tuple[int, dict, dict]:
    """An uninterrupted run in this process: the steps of its longest FsOps (KAFKALOG_FAULT_AFTER
    counts each FsOps's steps: the command's own, and the quarantine registry's few), the state
    before and after."""
    dirs, args = case.setup(root)
    before = state(dirs)
    real = FsOps.step
    steps: dict[int, int] = {}
    alive: list[FsOps] = []  # held, so that no two FsOps share an id() and a count

    def counting(self, description):
        if id(self) not in steps:
            alive.append(self)
        steps[id(self)] = steps.get(id(self), 0) + 1
        real(self, description)

    with monkeypatch.context() as m:
        m.setattr(FsOps, "step", counting)
        r = CliRunner().invoke(cli, _argv(dirs, args))
    assert r.exit_code == 0, r.output
    return max(steps.values(), default=0), before, state(dirs)


def _kafkalog(argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def quarantine_folders(dirs: list[Path]) -> list[Path]:
    """Every quarantine folder beside the log dirs, newest first."""
    out = []
    for d in dirs:
        root = d.parent / QUARANTINE_DIRNAME
        if root.is_dir():
            out += [f for f in find_folders(root) if f not in out]
    return sorted(out, key=lambda f: f.name, reverse=True)


def _sigkill_midway(argv: list[str], dirs: list[Path], delay: float) -> int:
    """Start the command, wait for its quarantine folder (its first change is next), sleep
    `delay` and SIGKILL it wherever it is (inside a step too); its exit status (-9: killed)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "kafkalog_cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while (
        p.poll() is None
        and time.monotonic() < deadline
        and not any((d.parent / QUARANTINE_DIRNAME).is_dir() for d in dirs)
    ):
        time.sleep(0.001)
    time.sleep(delay)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    return p.wait()


def kill_and_rerun(
    name: str,
    case: Case,
    root: Path,
    n: int,
    want: dict,
    original: dict,
    delay: float | None = None,
) -> list[str]:
    """Kill the command after step n (or, with `delay`, by SIGKILL that long after its first
    change begins), run it again; what differs from the uninterrupted run."""
    dirs, args = case.setup(root)
    mine = state(dirs)
    argv = _argv(dirs, args)
    at = f"step {n}" if delay is None else f"{delay * 1000:.1f} ms after its first change"
    if delay is None:
        killed = _kafkalog(argv, {FAULT_ENV: str(n)})
        if killed.returncode != 137:
            return [
                f"{name}: not killed at step {n} (exit {killed.returncode}: {killed.stderr.strip()[-300:]})"
            ]
    else:
        _sigkill_midway(argv, dirs, delay)  # it may have finished: then the rerun has nothing to do
    again = _kafkalog(argv)
    if again.returncode != 0:
        return [
            f"{name}: killed at {at}, the rerun exits {again.returncode}: {again.stderr.strip()[-300:]}"
        ]
    got = state(dirs)
    if case.compare is not None:
        got, want = case.compare(got, dirs), case.compare(want, None)
    problems = [
        f"{name}: killed at {at}: {d}"
        for d in differences(got, want, kept_mtimes(original, want), mine)
    ]
    if case.restorable and not problems:
        for folder in quarantine_folders(dirs):
            r = CliRunner().invoke(cli, ["quarantine", "restore", str(folder)])
            if r.exit_code != 0:
                return [
                    f"{name}: killed at {at}: restore of {folder.name} exits {r.exit_code}: {r.output.strip()}"
                ]
        problems += [
            f"{name}: killed at {at}, restored: {d}"
            for d in differences(state(dirs), mine, set(mine), mine)
        ]
    return problems


def kill_points(total: int, name: str) -> list[int]:
    """KILLS_PER_COMMAND seeded steps in [1, total - 1], spread over the run."""
    rng = random.Random(f"{SEED}:{name}")
    if total <= 1:
        return []
    k = min(KILLS_PER_COMMAND, total - 1)
    bounds = [1 + (total - 1) * i // k for i in range(k + 1)]
    return [rng.randrange(lo, max(hi, lo + 1)) for lo, hi in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_killed_run_converges_when_run_again(name, tmp_path, monkeypatch):
    case = CASES[name]
    total, original, want = steps_of(case, tmp_path / "ref", monkeypatch)
    assert total > 2, f"{name}: the fixture gives the command no work"
    assert want != original
    problems = []
    for n in kill_points(total, name):
        problems += kill_and_rerun(name, case, tmp_path / f"k{n}", n, want, original)
    assert not problems, f"{total} steps\n" + "\n".join(problems[:20])


SIGKILLED = (
    "recover",
    "recover --salvage",
    "retain",
    "compact",
    "delete-records",
    "roll",
    "move-partition",
)


@pytest.mark.parametrize("name", SIGKILLED)
def test_a_sigkill_inside_a_step_converges_too(name, tmp_path, monkeypatch):
    """A real SIGKILL at seeded delays after the run's first change begins: it lands inside a
    step (between a file's write and its fsync, a link and its manifest line...), which the step
    hook cannot reach; wherever it lands, the rerun converges and the folders restore."""
    case = CASES[name]
    _, original, want = steps_of(case, tmp_path / "ref", monkeypatch)
    rng = random.Random(f"{SEED}:sigkill:{name}")
    problems = []
    for i in range(max(1, KILLS_PER_COMMAND // 2)):
        delay = rng.uniform(0, MAX_DELAY)
        problems += kill_and_rerun(name, case, tmp_path / f"s{i}", 0, want, original, delay=delay)
    assert not problems, "\n".join(problems[:20])
