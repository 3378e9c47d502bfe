"""python -m tests.campaign --seed S --read-only N --kills K [--corpus DIR] [--jobs 2]
python -m tests.campaign --replay CASE [--corpus DIR] [--keep]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import runner
from .cases import read_case_id, run_read_case
from .kills import kill_case_id, run_kill_case
from .report import Tally


def run_case(case_id: str, corpus: str | None, tmp: str, keep: bool = False):
    c = Path(corpus) if corpus else None
    if case_id.startswith("k"):
        return run_kill_case(case_id, c, Path(tmp), keep)
    return run_read_case(case_id, c, Path(tmp), keep)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.campaign",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--read-only",
        type=int,
        default=100,
        metavar="N",
        help="read-only cases (mutated copy, one command)",
    )
    ap.add_argument("--kills", type=int, default=20, metavar="K", help="kill -9 cases")
    ap.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="also mutate the log dirs of this corpus (broker/, wild/)",
    )
    ap.add_argument(
        "--jobs", type=int, default=1, help="cases run in parallel (at most 2 on a shared machine)"
    )
    ap.add_argument(
        "--replay", metavar="CASE", action="append", help="run only this case id (repeatable)"
    )
    ap.add_argument(
        "--target",
        metavar="NAME",
        help="kill cases of this target only (kills.TARGETS: e.g. erase), --kills of them",
    )
    ap.add_argument("--keep", action="store_true", help="with --replay: keep the case's workspace")
    ap.add_argument(
        "--tmp", type=Path, default=None, help="where workspaces go [default: a new temp dir]"
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=runner.TIMEOUT_S,
        help="seconds a run may take before it counts as a hang [default: %(default)s]",
    )
    ap.add_argument("--show", type=int, default=200, help="failures listed in the table")
    a = ap.parse_args(argv)
    corpus = str(a.corpus) if a.corpus else None
    if a.corpus is not None and not a.corpus.is_dir():
        print(f"campaign: no corpus at {a.corpus}", file=sys.stderr)
        return 2
    kill_ns = range(a.kills)
    if a.target is not None:
        from .kills import TARGETS

        names = [t.name for t in TARGETS]
        if a.target not in names:
            print(f"campaign: no kill target {a.target!r} (one of {names})", file=sys.stderr)
            return 2
        # cases go round the targets in order: this target's are every len(TARGETS)th
        kill_ns = range(names.index(a.target), a.kills * len(names), len(names))
    ids = a.replay or (
        [read_case_id(a.seed, n) for n in range(a.read_only)]
        + [kill_case_id(a.seed, n) for n in kill_ns]
    )
    tmp = a.tmp or Path(tempfile.mkdtemp(prefix="kafkalog-campaign-"))
    tmp.mkdir(parents=True, exist_ok=True)
    keep = bool(a.keep and a.replay)
    _set_timeout(a.timeout)
    print(f"kafkalog under test: {runner.package_root()}/kafkalog_cli ({_version()})", flush=True)
    tally, started = Tally(), time.monotonic()
    if a.jobs > 1:
        with ProcessPoolExecutor(a.jobs, initializer=_set_timeout, initargs=(a.timeout,)) as pool:
            for v in pool.map(
                run_case, ids, [corpus] * len(ids), [str(tmp)] * len(ids), chunksize=1
            ):
                tally.add(v)
                _progress(v, tally, len(ids))
    else:
        for cid in ids:
            v = run_case(cid, corpus, str(tmp), keep)
            tally.add(v)
            _progress(v, tally, len(ids))
    wall = time.monotonic() - started
    print(tally.table(wall, a.show))
    if keep:
        print(f"workspaces kept under {tmp}")
    elif a.tmp is None:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if tally.failures else 0


def _version() -> str:
    import subprocess

    out = subprocess.run(
        [*runner.kafkalog(["--version"])],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": runner.package_root()},
    )
    return out.stdout.strip()


def _set_timeout(seconds: float) -> None:
    runner.TIMEOUT_S = seconds


def _progress(v, tally: Tally, total: int) -> None:
    mark = "F" if v.failures else "."
    print(
        f"{tally.cases}/{total} {v.case_id} {mark} {v.command} | {v.mutation[:120]} ({v.seconds:.1f} s)",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
