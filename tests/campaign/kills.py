"""The kill -9 driver: every command that changes log dirs, run on a copy with work to do and
killed at a seeded instant, then run again; the result must equal an uninterrupted run on another
copy (invariant 7), and restoring every quarantine folder the two runs left must give back the
bytes (invariant 8).

The instant is either a step (kafkalog's KAFKALOG_FAULT_AFTER=N: the process dies as by SIGKILL
after its Nth file-system step, N drawn from the uninterrupted run's step count, exact on replay)
or a time (a real SIGKILL of the process group after a delay drawn from the uninterrupted run's
duration; the same delay on replay, not always the same step).

To add a command: one KillTarget in TARGETS."""

from __future__ import annotations

import enum
import json
import random
import shutil
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import runner, workspace
from .cases import replay_args, restore_all, tree_state
from .commands import NOW_MS, RESTORE_CODES, WRITER, documented_codes
from .oracle import Invariant, Verdict, check_run, same_data, unchanged
from .sources import label, sources
from .workspace import Workspace


class Instant(enum.Enum):
    STEP = "step"
    TIME = "time"


def _parts(ws: Workspace) -> list[Path]:
    return sorted(
        p
        for p in ws.logdir.iterdir()
        if p.is_dir() and not p.is_symlink() and p.name.rpartition("-")[2].isdigit()
    )


def _segments(part: Path) -> list[Path]:
    return sorted(part.glob("*.log"))


def _crash_damage(ws: Workspace, rng: random.Random) -> str:
    """What a broker's crash leaves: no clean-shutdown marker, recovery points at 0, a torn or
    garbage tail on some active segments, a lost index."""
    (ws.logdir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    rp = ws.logdir / "recovery-point-offset-checkpoint"
    if rp.exists():
        rp.write_text("0\n0\n")
    done = []
    parts = [p for p in _parts(ws) if _segments(p)]
    for part in rng.sample(parts, min(3, len(parts))):
        seg = _segments(part)[-1]
        with open(seg, "ab") as f:
            f.write(bytes(rng.randrange(256) for _ in range(rng.randrange(5, 90))))
        done.append(f"{part.name}: tail garbage")
        idx = seg.with_suffix(".index")
        if idx.exists() and rng.random() < 0.5:
            idx.unlink()
            done.append(f"{part.name}: index deleted")
    return "; ".join(done) or "no partition"


def _bit_rot(ws: Workspace, rng: random.Random) -> str:
    """A crash plus one flipped byte in a batch of a closed segment (what --salvage skips)."""
    text = _crash_damage(ws, rng)
    closed = [s for p in _parts(ws) for s in _segments(p)[:-1] if s.stat().st_size > 200]
    seg = rng.choice(
        closed or [s for p in _parts(ws) for s in _segments(p) if s.stat().st_size > 200]
    )
    data = bytearray(seg.read_bytes())
    k = rng.randrange(70, len(data))
    data[k] ^= 0x5A
    seg.write_bytes(bytes(data))
    return f"{text}; {seg.parent.name}/{seg.name}: byte {k} flipped"


def _biggest(ws: Workspace) -> Path:
    return max(
        _parts(ws),
        key=lambda p: (len(_segments(p)), sum(s.stat().st_size for s in _segments(p)), p.name),
    )


def _tp(part: Path) -> tuple[str, str]:
    topic, _, n = part.name.rpartition("-")
    return topic, n


def _middle_offset(part: Path) -> int:
    """An offset to delete below: the last segment's base; in a log of one segment, a number
    in 1..999 drawn from its bytes (an offset inside a small log, or past its end: both are
    work for delete-records, the second a refusal the rerun must repeat)."""
    segs = _segments(part)
    if len(segs) > 1:
        return int(segs[-1].name[:20])
    data = segs[0].read_bytes() if segs else b""
    return (
        max(1, struct.unpack_from(">q", data, len(data) // 2 - len(data) // 2 % 8)[0] % 1000)
        if len(data) > 16
        else 1
    )


def _second_dir(ws: Workspace) -> None:
    ws.logdir2.mkdir(exist_ok=True)
    meta = ws.logdir / "meta.properties"
    if meta.is_file():
        (ws.logdir2 / "meta.properties").write_bytes(meta.read_bytes())


def _newest_folder(ws: Workspace) -> str:
    folders = sorted(f for f in ws.quarantine.iterdir() if f.is_dir())
    return str(folders[-1]) if folders else str(ws.quarantine / "none")


def _prepare_recover_run(ws: Workspace, rng: random.Random) -> str:
    """Damage, then an uninterrupted `recover --repair` and `retain`, so the quarantine holds folders."""
    text = _crash_damage(ws, rng)
    q = ["--quarantine", str(ws.quarantine)]
    runner.run(ws, ["recover", "--repair", "--now", NOW_MS, str(ws.logdir)] + q)
    runner.run(ws, ["retain", "--now", NOW_MS, "--assume-kafka-defaults", str(ws.logdir)] + q)
    return text + "; recover --repair and retain run"


@dataclass(frozen=True)
class KillTarget:
    name: str
    prepare: Callable[[Workspace, random.Random], str]  # gives the copy work to do
    argv: Callable[[Workspace], list[str]]
    fallback: frozenset[int]  # docs/safety.md's codes, where the command's --help lists none
    restore_check: bool = True  # restore gives back the prepared copy (not for restore/prune)
    loads: bool = False  # a broker still starts on the rerun's result, as `doctor` judges it

    @property
    def codes(self) -> frozenset[int]:
        return documented_codes(self.name) or self.fallback


def _q(ws: Workspace) -> list[str]:
    return ["--quarantine", str(ws.quarantine)]


def _repair_prepare(ws: Workspace, rng: random.Random) -> str:
    """The copy as it is becomes the donor (W/logdir2, another broker's copy), then bit rot in
    the copy repair runs on: one to three flipped bytes in batches of its segments."""
    shutil.copytree(ws.logdir, ws.logdir2, symlinks=True)
    segs = [s for p in _parts(ws) for s in _segments(p) if s.stat().st_size > 200]
    done = []
    for seg in rng.sample(segs, min(len(segs), rng.randint(1, 3))):
        data = bytearray(seg.read_bytes())
        k = rng.randrange(70, len(data))
        data[k] ^= 0x5A
        seg.write_bytes(bytes(data))
        done.append(f"{seg.parent.name}/{seg.name}: byte {k} flipped")
    return "; ".join(done) + f"; donor {ws.logdir2.name}" if done else "no segment"


def _erase_prepare(ws: Workspace, rng: random.Random) -> str:
    """A selection in a partition that is not Kafka's internal (erase refuses those): a key
    regex, one of its keys (the byte search and the walk past batches without it), or an
    offset range drawn from its segments' base offsets, on the copy and, every other case, on
    a replica of it (W/logdir2, another broker's log dir) given too; kept in W/tmp for argv
    (the same argv after the kill)."""
    parts = [p for p in _parts(ws) if not p.name.startswith("__") and _segments(p)]
    if not parts:
        return "no partition"
    part = max(parts, key=lambda p: (len(_segments(p)), p.name))
    if rng.random() < 0.5:
        shutil.copytree(ws.logdir, ws.logdir2, symlinks=True)
    bases = [int(s.name[:20]) for s in _segments(part) if s.name[:20].isdigit()] or [0]
    lo = rng.choice(bases) + rng.randrange(0, 30)
    selection = ["--offsets", f"{lo}-{lo + rng.randrange(0, 300)}"]
    draw = rng.random()
    if draw < 0.25:  # AND'ed: the range's records whose value has one of these bytes
        selection += ["--value-regex", "[aeiou0-4]"]
    elif draw < 0.5:  # keys anywhere in the partition (wild partitions may have none)
        selection = ["--key-regex", rng.choice(["[05]$", "^k0", "1", "[a-f]$"])]
    elif draw < 0.75 and (key := _a_key(part, rng)) is not None:
        selection = ["--key-hex", key.hex()]
    if "compact" in part.name and rng.random() < 0.5:
        selection.append("--tombstone")
    topic, n = _tp(part)
    argv = ["--topic", topic, "--partition", n, *selection]
    (ws.root / "tmp" / "erase-argv.json").write_text(json.dumps(argv))
    dirs = f" and {ws.logdir2.name}" if ws.logdir2.exists() else ""
    return f"{part.name}{dirs}: {' '.join(selection)}"


def _a_key(part: Path, rng: random.Random) -> bytes | None:
    """A key of a record in the first 4 MiB of one of the partition's segments, or None (no
    keyed record there, or bytes that do not decode: the mutated copy may be damaged)."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats.records import iter_batches

    segs = _segments(part)
    with open(rng.choice(segs), "rb") as f:
        data = f.read(4 << 20)
    keys: list[bytes] = []
    try:
        for b in iter_batches(data):
            keys += [r.key for r in b.records() if r.key is not None]
            if len(keys) >= 64:
                break
    except (KafkalogError, ValueError, IndexError, struct.error):
        pass
    return rng.choice(keys) if keys else None


def _erase_argv(ws: Workspace) -> list[str]:
    path = ws.root / "tmp" / "erase-argv.json"
    argv = json.loads(path.read_text()) if path.exists() else ["--topic", "none", "--offsets", "0"]
    dirs = [str(ws.logdir)] + ([str(ws.logdir2)] if ws.logdir2.exists() else [])
    return ["erase", *dirs, *argv]


def _move_prepare(ws: Workspace, rng: random.Random) -> str:
    _second_dir(ws)
    return f"destination {ws.logdir2.name}, partition {_biggest(ws).name}"


TARGETS: list[KillTarget] = [
    KillTarget(
        "recover",
        _crash_damage,
        lambda ws: ["recover", "--now", NOW_MS, str(ws.logdir)] + _q(ws),
        WRITER,
    ),
    KillTarget(
        "recover --repair",
        _crash_damage,
        lambda ws: ["recover", "--repair", "--now", NOW_MS, str(ws.logdir)] + _q(ws),
        WRITER,
    ),
    KillTarget(
        "recover --salvage",
        _bit_rot,
        lambda ws: ["recover", "--salvage", "--now", NOW_MS, str(ws.logdir)] + _q(ws),
        WRITER,
    ),
    KillTarget(
        "retain",
        lambda ws, rng: "retention.ms=7d (Kafka's default) at --now 2027",
        lambda ws: ["retain", "--now", NOW_MS, "--assume-kafka-defaults", str(ws.logdir)] + _q(ws),
        WRITER | {7},
    ),
    KillTarget(
        "compact",
        lambda ws, rng: "--force on every compacted partition",
        lambda ws: ["compact", "--force", "--now", NOW_MS, str(ws.logdir)] + _q(ws),
        WRITER | {7},
    ),
    KillTarget(
        "delete-records",
        lambda ws, rng: f"partition {_biggest(ws).name}",
        lambda ws: (
            [
                "delete-records",
                "--topic",
                _tp(_biggest(ws))[0],
                "--partition",
                _tp(_biggest(ws))[1],
                "--before",
                str(_middle_offset(_biggest(ws))),
                str(ws.logdir),
            ]
            + _q(ws)
        ),
        WRITER | {7},
    ),
    KillTarget(
        "roll",
        lambda ws, rng: "every partition",
        lambda ws: ["roll", "--now", NOW_MS, str(ws.logdir)] + _q(ws),
        WRITER,
    ),
    KillTarget(
        "move-partition",
        _move_prepare,
        lambda ws: (
            [
                "move-partition",
                "--topic",
                _tp(_biggest(ws))[0],
                "--partition",
                _tp(_biggest(ws))[1],
                str(ws.logdir),
                str(ws.logdir2),
            ]
            + _q(ws)
        ),
        WRITER,
    ),
    KillTarget(
        "repair",
        _repair_prepare,
        lambda ws: ["repair", str(ws.logdir), "--from", str(ws.logdir2)] + _q(ws),
        WRITER | {1},
    ),
    KillTarget(
        "quarantine restore",
        _prepare_recover_run,
        lambda ws: ["quarantine", "restore", _newest_folder(ws)],
        RESTORE_CODES,
        restore_check=False,
    ),
    KillTarget(
        "quarantine prune",
        _prepare_recover_run,
        lambda ws: ["quarantine", "prune", "--older-than", "0s", str(ws.quarantine)],
        RESTORE_CODES,
        restore_check=False,
    ),
    # last, so that the other targets' case ids keep their targets; erase keeps no copy of what
    # it removes (docs/safety.md), so there is no quarantine folder to restore
    KillTarget(
        "erase",
        _erase_prepare,
        _erase_argv,
        WRITER,
        restore_check=False,
        loads=True,
    ),
]

BY_NAME = {t.name: t for t in TARGETS}


def kill_case_id(seed: int, n: int, step_only: bool = False) -> str:
    """`k<seed>-<n>`; with a trailing `s` the kill is always at a step (exact on every run: what
    the test suite's sample uses, where a kill at a time could land differently each run)."""
    return f"k{seed}-{n}" + ("s" if step_only else "")


def plan(case_id: str, corpus: Path | None) -> tuple[Path, KillTarget, Instant]:
    """Kill cases go round the targets in order (every command gets its share), the source and
    the instant drawn from the case id."""
    step_only = case_id.endswith("s")
    n = int(case_id.rstrip("s").rsplit("-", 1)[1])
    rng = random.Random(f"{case_id}:plan")
    target = TARGETS[n % len(TARGETS)]
    srcs = sources(corpus)
    on_examples = rng.random() < 0.5  # drawn with or without a corpus (see cases.plan)
    source = srcs[0] if on_examples or len(srcs) == 1 else rng.choice(srcs[1:])
    instant = rng.choice(list(Instant))
    return source, target, Instant.STEP if step_only else instant


def _report_steps(ws: Workspace) -> int:
    """The file-system steps an uninterrupted run took, from its --report lines."""
    steps = 0
    path = ws.root / "tmp" / "report.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            steps += int(obj.get("fs_steps") or 0) if obj.get("kind") == "log_dir" else 0
    return steps


def _quarantine_view(ws: Workspace) -> list[str]:
    """Quarantine folders by op and content, their names' timestamps left out (a clock)."""
    out = []
    for f in sorted(ws.quarantine.iterdir()):
        op = f.name.split("-", 1)[1] if "-" in f.name else f.name
        out.append(op)
    return out


def run_kill_case(case_id: str, corpus: Path | None, tmp: Path, keep: bool = False) -> Verdict:
    source, target, instant = plan(case_id, corpus)
    started = time.monotonic()
    v = Verdict(
        case_id,
        target.name,
        f"{label(source)}: kill at a {instant.value}",
        replay_args=replay_args(source, corpus),
    )
    root = tmp / case_id
    try:
        _kill_case(v, case_id, source, target, instant, root)
    finally:
        v.seconds = time.monotonic() - started
        if not keep:
            workspace.remove(root)
    return v


def _copy(case_id: str, root: Path, source: Path, target: KillTarget) -> tuple[Workspace, str]:
    ws = workspace.make(root, source)
    what = target.prepare(ws, random.Random(f"{case_id}:prepare"))
    return ws, what


def _kill_case(
    v: Verdict, case_id: str, source: Path, target: KillTarget, instant: Instant, root: Path
) -> None:
    report = lambda ws: ["--report", str(ws.root / "tmp" / "report.jsonl")]  # noqa: E731
    # the uninterrupted run
    a, what = _copy(case_id, root / "a", source, target)
    v.mutation += f"; {what}"
    base_a, out_a = tree_state(a), a.outside_state()
    pre = _doctor(a) if target.loads else []
    ref = runner.run(a, target.argv(a) + report(a))
    check_run(v, ref, target.codes)
    v.check(
        Invariant.NOTHING_OUTSIDE,
        unchanged(out_a, a.outside_state()) is None,
        f"uninterrupted run: {unchanged(out_a, a.outside_state())}",
    )
    if ref.timed_out:
        return
    want, steps = tree_state(a), _report_steps(a)
    # the killed run, then the same command again
    b, _ = _copy(case_id, root / "b", source, target)
    base_b, out_b = tree_state(b), b.outside_state()
    rng = random.Random(f"{case_id}:instant")
    argv_b = target.argv(b) + report(b)
    if instant is Instant.STEP:
        # restore and prune report no step count: draw from a range that covers their runs here
        n = rng.randint(1, steps if steps > 0 else 40)
        v.mutation += f" (step {n} of {steps})"
        killed = runner.run(b, argv_b, fault_after=n)
    else:
        delay = rng.uniform(0.0, max(0.05, ref.seconds))
        v.mutation += f" ({delay:.3f} s of {ref.seconds:.3f} s)"
        killed = runner.run(b, argv_b, kill_after_s=delay)
    if not killed.killed:
        v.mutation += " [ended before the kill]"
        check_run(v, killed, target.codes)
    d = unchanged(out_b, b.outside_state(killed=killed.killed))
    v.check(Invariant.NOTHING_OUTSIDE, d is None, f"killed run: {d}")
    # the same argv: a target that aims at "the biggest partition" must not re-aim after the kill
    again = runner.run(b, argv_b)
    check_run(v, again, target.codes)
    d = unchanged(out_b, b.outside_state())
    v.check(Invariant.NOTHING_OUTSIDE, d is None, f"rerun: {d}")
    got = tree_state(b)
    diff = same_data(want, got, base=base_a)
    if diff is None and target.loads:
        post = _doctor(b)
        if not all(q == 8 or p != 8 for q, p in zip(pre, post)):
            diff = f"a broker would not start on the result: doctor exits {post} (before {pre})"
    if diff is None and target.name == "quarantine prune":
        qa, qb = _quarantine_view(a), _quarantine_view(b)
        diff = None if qa == qb else f"quarantine folders {qa} vs {qb}"
    v.check(
        Invariant.KILL_CONVERGES,
        diff is None and again.rc == ref.rc,
        f"rerun exit {again.rc} (uninterrupted {ref.rc}): {_last(again.stderr)}"
        if diff is None
        else f"rerun (exit {again.rc}) differs from the uninterrupted run: {diff}",
    )
    if target.restore_check:
        restore_all(v, b, base_b, out_b, drop_caps=False)
        restore_all(v, a, base_a, out_a, drop_caps=False)


def _doctor(ws: Workspace) -> list[int]:
    """`kafkalog doctor`'s exit code on each log dir on its own (8: a broker would not start;
    W/logdir2 is another broker's copy, not a second log dir of the same broker)."""
    dirs = [ws.logdir] + ([ws.logdir2] if ws.logdir2.exists() else [])
    return [runner.run(ws, ["doctor", str(d)]).rc for d in dirs]


def _last(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""
