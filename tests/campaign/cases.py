"""One read-only campaign case: a fresh copy of a source log dir, one mutation, one command, and
the oracle on what it did. A MUTATING command is followed up: a second run, its --dry-run, and
`quarantine restore` of every folder it left.

A case id `r<seed>-<n>` fixes everything (source, mutation, command, partition): the same id on
the same corpus gives the same case."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

from . import mutations, runner, workspace
from .commands import COMMANDS, RESTORE_CODES, Args, Command, Mode, Second, restore_argv
from .oracle import Invariant, Verdict, check_run, same_data, unchanged
from .sources import SCHEMAS_LOGDIR, in_repo, label, sources
from .tree import snapshot

# A mutating case costs four runs or more: pick one about a third as often as a read-only one.
_WEIGHT = {Mode.READ_ONLY: 1.0, Mode.DRY_RUN: 1.0, Mode.MUTATING: 0.35}


def read_case_id(seed: int, n: int) -> str:
    return f"r{seed}-{n}"


def plan(case_id: str, corpus: Path | None) -> tuple[Path, mutations.Kind, Command]:
    """The source, mutation and command a case id stands for."""
    rng = random.Random(f"{case_id}:plan")
    seed, n = (int(x) for x in case_id[1:].split("-"))
    srcs = sources(corpus)
    # examples/logdir is a third of the cases, the corpus's dirs share the rest; the draw is made
    # with or without a corpus, so a case on examples/logdir replays the same without one
    on_examples = rng.random() < 1 / 3
    source = srcs[0] if on_examples or len(srcs) == 1 else rng.choice(srcs[1:])
    # the kinds in turn (each as often as the others), from a seed's own starting point
    kinds = mutations.kinds()
    kind = kinds[(n + seed * 7) % len(kinds)]
    if kind.family is mutations.Family.SCHEMAS:
        # a schema mutation exists only on the schemas fixture, and only schema readers see it
        readers = [c for c in COMMANDS if c.schemas]
        return SCHEMAS_LOGDIR, kind, rng.choices(readers, [c.weight for c in readers])[0]
    command = rng.choices(COMMANDS, weights=[_WEIGHT[c.mode] * c.weight for c in COMMANDS])[0]
    if command.schemas and rng.random() < 0.5:
        source = SCHEMAS_LOGDIR
    return source, kind, command


def replay_args(source: Path, corpus: Path | None) -> str:
    """What a replay needs besides the case id: the corpus, for a case on one of its dirs."""
    return f" --corpus {corpus}" if corpus is not None and not in_repo(source) else ""


def tree_state(ws: workspace.Workspace) -> dict:
    """The log dir (and the second one, where the command has one), as one snapshot."""
    out = {f"logdir/{k}": v for k, v in snapshot(ws.logdir).items()}
    if os.path.lexists(ws.logdir2):
        out.update({f"logdir2/{k}": v for k, v in snapshot(ws.logdir2).items()})
    return out


def _aim(
    ws: workspace.Workspace, source: Path, m: mutations.Mutation, rng: random.Random
) -> tuple[str, int]:
    """The partition a command that takes one aims at: the damaged one, else any."""
    parts = sorted(
        p.name for p in source.iterdir() if p.is_dir() and p.name.rpartition("-")[2].isdigit()
    )
    first = m.target.split("/", 1)[0]
    name = first if first in parts else (rng.choice(parts) if parts else "none-0")
    topic, _, n = name.rpartition("-")
    return topic, int(n)


def build(
    case_id: str,
    root: Path,
    source: Path,
    kind: mutations.Kind,
    second: Second,
    prepare=None,
):
    """The workspace with its mutation done (and the command's own `prepare`, said in the
    mutation's detail); (ws, mutation, args)."""
    rng = random.Random(f"{case_id}:mutate")
    ws = workspace.make(root, source, second=second is Second.COPY)
    if second is Second.EMPTY:
        ws.logdir2.mkdir()
        if (source / "meta.properties").is_file():
            (ws.logdir2 / "meta.properties").write_bytes((source / "meta.properties").read_bytes())
    m = mutations.apply(kind, rng, ws)
    topic, part = _aim(ws, source, m, rng)
    if prepare is not None:
        done = prepare(ws, random.Random(f"{case_id}:prepare"), m.target)
        m = mutations.Mutation(m.kind, m.target, f"{m.detail}; {done}", m.drop_caps)
    return ws, m, Args(ws, topic, part)


def run_read_case(case_id: str, corpus: Path | None, tmp: Path, keep: bool = False) -> Verdict:
    source, kind, command = plan(case_id, corpus)
    root = tmp / case_id
    started = time.monotonic()
    ws, m, args = build(case_id, root, source, kind, command.second, command.prepare)
    v = Verdict(
        case_id, command.name, f"{label(source)}: {m}", replay_args=replay_args(source, corpus)
    )
    try:
        if command.mode is Mode.MUTATING:
            _mutating(v, ws, m, args, command)
        else:
            _read_only(v, ws, m, args, command)
    finally:
        v.seconds = time.monotonic() - started
        if not keep:
            workspace.remove(root)
    return v


def _outside_check(v: Verdict, ws, before, what: str, killed: bool = False) -> None:
    d = unchanged(before, ws.outside_state(killed=killed))
    v.check(Invariant.NOTHING_OUTSIDE, d is None, f"{what}: {d}")


def _read_only(v: Verdict, ws, m, args, command: Command) -> None:
    inside, outside = tree_state(ws), ws.outside_state()
    r = runner.run(ws, command.argv(args), drop_caps=m.drop_caps)
    check_run(v, r, command.codes)
    _outside_check(v, ws, outside, "after the run")
    d = unchanged(inside, tree_state(ws))
    v.check(Invariant.READ_ONLY, d is None, f"changed: {d}")
    if command.oracle is not None:
        command.oracle(v, args, r, m.drop_caps)


def _mutating(v: Verdict, ws, m, args, command: Command) -> None:
    s0, outside = tree_state(ws), ws.outside_state()
    first = runner.run(ws, command.argv(args), drop_caps=m.drop_caps)
    check_run(v, first, command.codes)
    _outside_check(v, ws, outside, "after the run")
    if first.timed_out:
        return
    s1 = tree_state(ws)
    again = runner.run(ws, command.argv(args), drop_caps=m.drop_caps)
    check_run(v, again, command.codes)
    _outside_check(v, ws, outside, "after the second run")
    # strict: a file rewritten with the same bytes still changed (its mtime is retention's
    # fallback timestamp and the cleaner's)
    d = same_data(s1, tree_state(ws), strict_mtime=True)
    v.check(
        Invariant.SECOND_RUN,
        d is None and (first.rc != 0 or again.rc == 0),
        f"second run (exit {again.rc}, first {first.rc}) changed: {d}"
        if d
        else f"second run exit {again.rc} after a first run's 0: {again.stderr.strip()[:160]}",
    )
    if first.rc == 0 and command.dry_run is not None:
        dry = runner.run(ws, command.dry_run(args), drop_caps=m.drop_caps)
        check_run(v, dry, command.codes | {1})
        v.check(
            Invariant.SECOND_RUN,
            dry.rc == 0,
            f"--dry-run after the run exits {dry.rc}: {(dry.stdout + dry.stderr).strip()[:200]}",
        )
    restore_all(v, ws, s0, outside, m.drop_caps)


def restore_all(v: Verdict, ws, s0: dict, outside: dict, drop_caps: bool) -> None:
    """Invariant 8: restoring every quarantine folder, newest first, gives back every name, byte,
    mode and file mtime of the log dir(s) as they were before the runs (docs/safety.md: "The log dir is
    then byte for byte what it was (modification times ... included)")."""
    folders = sorted((f for f in ws.quarantine.iterdir() if f.is_dir()), reverse=True)
    if not folders:
        return
    for folder in folders:
        r = runner.run(ws, restore_argv(folder), drop_caps=drop_caps)
        check_run(v, r, RESTORE_CODES)
        # a restore gives back the state before its own run: before a rerun that is the killed
        # run's, whose own work files beside the log dir (Workspace.outside_state) may be there;
        # the last one's is the state before every run, with nothing outside
        _outside_check(
            v, ws, outside, f"after restore of {folder.name}", killed=folder != folders[-1]
        )
        if not v.check(
            Invariant.RESTORE,
            r.rc == 0,
            f"restore {folder.name} exits {r.rc}: "
            f"{r.stderr.strip().splitlines()[-1][:200] if r.stderr.strip() else ''}",
        ):
            return
    d = same_data(s0, tree_state(ws), base=s0, strict_mtime=True)
    v.check(Invariant.RESTORE, d is None, f"after restoring {len(folders)} folder(s): {d}")
