"""Run the differential cases outside pytest (needs KAFKA_HOME and KAFKA_PY):

    python -m tests.differential recover --cases 200 --seed 1 [--work DIR] [--no-load-check] [--tiered]
    python -m tests.differential roll [--work DIR]
    python -m tests.differential commands [--work DIR] [--case recover/torn-tail ...]
    python -m tests.differential retain|delete-records|compact [--seed N] [--work DIR]   (3.6+, tiered)
    python -m tests.differential tiered-roll-recover [--seed N] [--work DIR]   (roll, recover --all, load check)
    python -m tests.differential producer-order [--work DIR]   (a snapshot with colliding producer ids)

Each batch/case prints one JSON line; the last line is the summary (cases run, cases with
differences, load-check problems). Exit 1 when anything differs."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.differential import broker
from tests.differential.cases import (
    COMMANDS,
    CORPUS,
    RECOVERED,
    command_chain,
    corpus_cases,
    recover_batch,
    roll_case,
)
from tests.differential.damage import DAMAGES
from tests.differential.generate import generate
from tests.helpers.paths import EXAMPLES


def _emit(obj) -> None:
    print(json.dumps(obj), flush=True)


def run_recover(
    work: Path,
    cases: int,
    seed: int,
    load_check: bool,
    repair: bool = False,
    tiered: bool = False,
    kinds: list[str] | None = None,
) -> dict:
    remote = None
    if tiered:  # deletions.py's base (seed 7: its uploads settle as tiered.py waits for)
        from tests.differential.deletions import generate_base

        t = generate_base(work / "tiered-base", 7)
        bases, remote = [t.data], t.remote
    else:
        gen = generate(work / "generated", seed)
        bases = [EXAMPLES, gen.clean, gen.live]
    summary = {
        "kind": "recover",
        "batches": 0,
        "cases": 0,
        "cases_differing": 0,
        "cases_beyond_kafka": 0,
        "cases_broker_refused": 0,
        "cases_broker_appended": 0,
        "other_differences": 0,
        "checkpoint_order_only": 0,
        "kafkalog_failures": 0,
        "load_check_problems": 0,
        "records_served": 0,
    }
    i = 0
    while summary["cases"] < cases:
        try:
            b = recover_batch(
                seed * 100000 + i,
                bases[i % len(bases)],
                work / f"batch-{i}",
                load_check,
                repair,
                remote,
                kinds,
            )
        except Exception as e:  # a batch the harness could not run (reported, not counted)
            _emit({"seed": seed * 100000 + i, "harness_error": repr(e)[:2000]})
            summary["harness_errors"] = summary.get("harness_errors", 0) + 1
            i += 1
            continue
        i += 1
        _emit(b)
        summary["batches"] += 1
        summary["cases"] += len(b["cases"])
        summary["cases_differing"] += sum(
            1 for c in b["cases"].values() if c["differences"] and "beyond_kafka" not in c
        )
        summary["cases_beyond_kafka"] += sum(1 for c in b["cases"].values() if "beyond_kafka" in c)
        summary["cases_broker_refused"] += sum(
            1 for c in b["cases"].values() if "broker_refused" in c
        )
        summary["cases_broker_appended"] += sum(
            1 for c in b["cases"].values() if "broker_appended" in c
        )
        summary["other_differences"] += len(b["other"])
        summary["checkpoint_order_only"] += bool(b.get("checkpoint_order_only"))
        summary["kafkalog_failures"] += b["kafkalog_rc"] not in RECOVERED
        summary["load_check_problems"] += len(b.get("load_check", []))
        summary["records_served"] += b.get("load_checked_records", 0)
    return summary


def run_roll(work: Path, seed: int) -> dict:
    from tests.differential.generate import TOPICS, leo

    gen = generate(work / "generated", seed)
    summary = {"kind": "roll", "cases": 0, "cases_differing": 0}
    for name, before, after in (
        ("live", gen.live, gen.rolled),
        ("clean", gen.clean, gen.rolled_again),
    ):
        leos = {f"{n}-0": leo(before, f"{n}-0") for n in TOPICS}
        r = roll_case(name, before, after, leos, work)
        _emit(r)
        for v in r["partitions"].values():
            if "skipped" not in v:
                summary["cases"] += 1
                summary["cases_differing"] += bool(v["differences"])
    return summary


def run_commands(work: Path, only: list[str], commands: tuple[str, ...] = COMMANDS) -> dict:
    summary = {
        "kind": "commands",
        "cases": 0,
        "commands_run": 0,
        "refused": 0,
        "load_check_problems": 0,
        "records_served": 0,
    }
    for case in corpus_cases():
        name = str(case.relative_to(CORPUS))
        if only and name not in only:
            continue
        r = command_chain(case, work / name.replace("/", "-"), commands)
        _emit(r)
        summary["cases"] += 1
        for res in r["commands"].values():
            summary["commands_run"] += 1
            summary["refused"] += "load_check" not in res
            summary["load_check_problems"] += len(res.get("load_check", []))
            summary["records_served"] += res.get("records", 0)
    return summary


DELETIONS = ("retain", "delete-records", "compact")


def run_deletions(work: Path, kind: str, seed: int, load_check: bool) -> dict:
    """deletions.py's campaign `kind`, every round, on the base of `seed` (generated once under
    `work`/base-<seed>, reused by the next campaign given the same --work)."""
    from tests.differential.deletions import ROUNDS, generate_base, run_campaign, unexplained
    from tests.differential.tiered import TieredDir

    where = work / f"base-{seed}"
    base = (
        TieredDir(where / "data", where / "remote")
        if (where / "data").is_dir()
        else generate_base(where, seed)
    )
    summary = {
        "kind": kind,
        "seed": seed,
        "rounds": 0,
        "cases": 0,
        "identical": 0,
        "refused_by_both": 0,
        "explained": {},
        "cases_differing": 0,
        "other_differences": 0,
        "kafkalog_failures": 0,
        "load_check_problems": 0,
        "records_served": 0,
    }
    for round_ in range(ROUNDS[kind]):
        n = len(list(work.glob(f"{kind}-*")))
        r = run_campaign(kind, base, work / f"{kind}-{n}", load_check, round_)
        _emit(r)
        cases, odd = r["cases"], unexplained(r)
        summary["rounds"] += 1
        summary["cases"] += len(cases)
        summary["identical"] += sum(
            1
            for n, c in cases.items()
            if n not in odd and "explained" not in c and "refused_by_both" not in c
        )
        summary["refused_by_both"] += sum(1 for c in cases.values() if "refused_by_both" in c)
        summary["explained"].update(
            {f"{round_}:{n}": c["explained"] for n, c in cases.items() if "explained" in c}
        )
        summary["cases_differing"] += sum(1 for n in odd if n != "other")
        summary["other_differences"] += len(odd.get("other", {}))
        summary["kafkalog_failures"] += sum(
            1
            for k, v in r["kafkalog"].items()
            if v["rc"] not in (0, None) and "refused_by_both" not in cases.get(k, {})
        )
        summary["load_check_problems"] += len(r.get("load_check", []))
        summary["records_served"] += sum(v["served"] for v in r.get("served", {}).values())
    return summary


def run_keeping(work: Path, seed: int) -> dict:
    """roll and recover --all on the base of `seed` (deletions.commands_keep_the_log)."""
    from tests.differential.deletions import commands_keep_the_log, generate_base
    from tests.differential.tiered import TieredDir

    where = work / f"base-{seed}"
    base = (
        TieredDir(where / "data", where / "remote")
        if (where / "data").is_dir()
        else generate_base(where, seed)
    )
    n = len(list(work.glob("tiered-roll-recover-*")))
    r = commands_keep_the_log(base, work / f"tiered-roll-recover-{n}")
    _emit(r)
    unclean = r.pop("recover-unclean")
    return {
        "kind": "tiered-roll-recover",
        "seed": seed,
        "commands": len(r),
        "load_check_problems": sum(len(v["load_check"]) for v in r.values()),
        "kafkalog_failures": sum(v["rc"] != 0 for v in r.values()) + (unclean["rc"] != 0),
        "records_served": sum(s["served"] for v in r.values() for s in v["served"].values()),
        "recover_unclean_partitions_recovered_by_the_broker": len(unclean["broker_recovered"]),
        "other_differences": len(unclean["differences"]),
        "recover_unclean": unclean["differences"],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.differential")
    ap.add_argument(
        "what",
        choices=[
            "recover",
            "roll",
            "commands",
            *DELETIONS,
            "tiered-roll-recover",
            "producer-order",
        ],
    )
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--no-load-check", action="store_true")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument(
        "--repair",
        action="store_true",
        help="recover: run `kafkalog recover --repair` "
        "(its repairs beyond Kafka are counted as beyond_kafka, not as differences)",
    )
    ap.add_argument(
        "--tiered",
        action="store_true",
        help="recover: damage a tiered dir (3.6+ with "
        "LocalTieredStorage), every broker on a copy of its remote tier too",
    )
    ap.add_argument(
        "--damage",
        action="append",
        default=[],
        choices=sorted(DAMAGES),
        help="recover: only these damage kinds (repeatable; default all, tests/differential/damage.py)",
    )
    ap.add_argument(
        "--command",
        action="append",
        default=[],
        choices=COMMANDS,
        help="commands: only these (repeatable; default all)",
    )
    a = ap.parse_args(argv)
    if not broker.available():
        print("KAFKA_HOME is not set to a Kafka distribution: nothing to run", file=sys.stderr)
        return 2
    work = a.work or Path(tempfile.mkdtemp(prefix="kafkalog-diff-"))
    work.mkdir(parents=True, exist_ok=True)
    _emit({"kafka": broker.version_label(), "work": str(work)})
    t0 = time.monotonic()
    if a.what == "recover":
        if a.tiered and not broker.tiered_supported():
            print(
                "KAFKA_HOME is not a 3.6+ Kafka with LocalTieredStorage (rsm/): nothing to run",
                file=sys.stderr,
            )
            return 2
        s = run_recover(
            work, a.cases, a.seed, not a.no_load_check, a.repair, a.tiered, a.damage or None
        )
    elif a.what == "roll":
        s = run_roll(work, a.seed)
    elif a.what == "producer-order":
        from tests.differential.producer_order import producer_order_case

        s = producer_order_case(work)
        s["kind"] = "producer-order"
        s["cases_differing"] = int(not s["identical"])
    elif a.what in (*DELETIONS, "tiered-roll-recover"):
        if not broker.tiered_supported():
            print(
                "KAFKA_HOME is not a 3.6+ Kafka with LocalTieredStorage (rsm/): nothing to run",
                file=sys.stderr,
            )
            return 2
        s = (
            run_deletions(work, a.what, a.seed, not a.no_load_check)
            if a.what in DELETIONS
            else run_keeping(work, a.seed)
        )
    else:
        s = run_commands(work, a.case, tuple(a.command) or COMMANDS)
    s["kafka"] = broker.version_label()
    s["seconds"] = round(time.monotonic() - t0)
    s["work"] = str(work)
    _emit(s)
    bad = (
        s.get("cases_differing", 0)
        + s.get("other_differences", 0)
        + s.get("load_check_problems", 0)
        + s.get("kafkalog_failures", 0)
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
