"""The promises (docs/safety.md) as checks: each invariant is checked and tallied on its own, and a
failure carries what a person needs to replay it."""

from __future__ import annotations

import enum
import re
from collections import Counter
from dataclasses import dataclass, field

from . import tree
from .runner import Run
from .tree import Entry


class Invariant(enum.Enum):
    EXIT_CODE = ("1 documented exit code", "the exit code is one the command's --help documents")
    NO_PYTHON_ERROR = (
        "2 no Python error",
        "no traceback, internal error or Python exception text; "
        "a failure is one `kafkalog: ...` line",
    )
    NO_HANG = ("3 no hang", "each run ends within the timeout")
    NOTHING_OUTSIDE = (
        "4 nothing outside",
        "nothing outside the log dir and its quarantine changed",
    )
    READ_ONLY = (
        "5 read-only unchanged",
        "a read-only command (or --dry-run) changed nothing in the log dir",
    )
    SECOND_RUN = (
        "6 second run idle",
        "a second run changed nothing and its --dry-run plans nothing",
    )
    KILL_CONVERGES = (
        "7 kill converges",
        "a rerun after kill -9 ends where an uninterrupted run ends",
    )
    RESTORE = ("8 restore gives back", "quarantine restore of every folder gives back the bytes")
    KEPT_AS_BYTES = (
        "9 undecoded kept as bytes",
        "a key or value that does not decode is named with its offset and kept as its bytes",
    )
    MASKED = (
        "10 masked fields hidden",
        "with --mask, no masked field's clear value in any output, and the rest as without it",
    )

    def __init__(self, label: str, meaning: str):
        self.label = label
        self.meaning = meaning


@dataclass(frozen=True)
class Failure:
    invariant: Invariant
    case_id: str
    command: str
    mutation: str
    symptom: str
    replay: str


@dataclass
class Verdict:
    """What one case checked, and what failed."""

    case_id: str
    command: str
    mutation: str
    checked: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    replay_args: str = ""  # what a replay needs besides the case id (--corpus DIR)

    def check(self, inv: Invariant, ok: bool, symptom: str = "") -> bool:
        self.checked[inv] += 1
        if not ok:
            self.failures.append(
                Failure(
                    inv,
                    self.case_id,
                    self.command,
                    self.mutation,
                    symptom,
                    f"python -m tests.campaign --replay {self.case_id}{self.replay_args}",
                )
            )
        return ok


# Python's own error text: a traceback, our internal-error line, or an exception's repr
# (`ValueError: ...`, `click.exceptions.UsageError`) at the start of a line.
_PYTHON_ERROR = re.compile(
    r"Traceback \(most recent call last\)|internal error|"
    r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning)\b(?::|$)|"
    r"^Error: ",
    re.M,
)


def python_error(run: Run) -> str | None:
    """The first Python error text in a run's output, or None."""
    for stream, text in (("stderr", run.stderr), ("stdout", run.stdout)):
        m = _PYTHON_ERROR.search(text)
        if m:
            line = text[text.rfind("\n", 0, m.start()) + 1 :].split("\n", 1)[0]
            return f"{stream}: {line[:200]}"
    return None


# Exit codes that are failures (docs/safety.md "Exit codes": "a failure (2, 3, 4 or 6)") and those that
# refuse or skip with one line per partition or log dir on stderr (5, 7). 8 is doctor's verdict,
# with its findings on stdout.
_FAILURES = frozenset({2, 3, 4, 5, 6, 7})


def stray_stderr(run: Run) -> str | None:
    """A failed run's stderr must be `kafkalog: ...` lines (a failure, or a note/warning), each
    one line; anything else (a usage screen, a bare message, nothing at all) is named."""
    if run.rc not in _FAILURES:
        return None
    for line in run.stderr.splitlines():
        if line.strip() and not line.startswith("kafkalog: "):
            return f"stderr line not `kafkalog: ...`: {line[:160]}"
    if run.stderr.strip() == "":
        return f"exit {run.rc} with nothing on stderr"
    return None


# dump-log and dump-index print kafka-dump-log's own reports on stderr, byte for byte
# (`Mismatches in :...`, `Non-consecutive offsets in ...`, the time-index reports: the corpus's
# goldens), so their stderr is held to "no Python error" only.
_KAFKA_STDERR = ("dump-log", "dump-index")


def check_run(v: Verdict, run: Run, codes: frozenset[int]) -> None:
    """Invariants 1-3 of one finished run (not one we killed on purpose)."""
    if not v.check(
        Invariant.NO_HANG, not run.timed_out, f"no exit after {run.seconds:.0f} s: {run.shell()}"
    ):
        return
    v.check(
        Invariant.EXIT_CODE,
        run.rc in codes,
        f"exit {run.rc} (documented: {sorted(codes)}): {_last_line(run.stderr) or _last_line(run.stdout)}",
    )
    kafka_stderr = any(a in _KAFKA_STDERR for a in run.argv)  # after setpriv's own words too
    err = python_error(run) or (None if kafka_stderr else stray_stderr(run))
    v.check(Invariant.NO_PYTHON_ERROR, err is None, err or "")


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


# -- tree comparisons --------------------------------------------------------------------------

_UUID = re.compile(r"\.[0-9a-f]{32}-(delete|future)")


def data_view(
    snap: dict[str, Entry], base: dict[str, Entry] | None = None, strict_mtime: bool = False
) -> dict[str, tuple]:
    """A tree as its data: names, kinds, modes, sizes and bytes; the mtime of a file only where
    it is the mtime it had in `base` (a file the run wrote carries the run's own clock, which two
    runs cannot share). Left out, each for its reason:
    - `.lock`: taken with lockf; its existence and times are not data (the broker makes it too);
    - directory mtimes: a name created and removed again (a write probe, a temporary file) moves
      them without changing any content;
    - the uuid of `-delete`/`-future` dir names: random per run (Kafka's own names are too).
    strict_mtime keeps every file's mtime (what a restore promises)."""
    out = {}
    for rel, e in snap.items():
        if rel.rsplit("/", 1)[-1] == ".lock":
            continue
        keep_mtime = (
            e.kind == "file"
            and base is not None
            and base.get(rel) is not None
            and base[rel].mtime_ns == e.mtime_ns
        )
        mt = e.mtime_ns if keep_mtime or (strict_mtime and e.kind == "file") else None
        out[_UUID.sub(r".X-\1", rel)] = (e.kind, e.mode, e.size, e.digest, mt)
    return out


def same_data(
    a: dict[str, Entry],
    b: dict[str, Entry],
    base: dict[str, Entry] | None = None,
    strict_mtime: bool = False,
) -> str | None:
    """None when a and b hold the same data, else the first differences."""
    va, vb = data_view(a, base, strict_mtime), data_view(b, base, strict_mtime)
    if base is not None and not strict_mtime:
        # an mtime counts when it is the base's in either tree
        for k in va.keys() & vb.keys():
            if (va[k][4] is None) != (vb[k][4] is None):
                va[k] = va[k][:4] + (None,)
                vb[k] = vb[k][:4] + (None,)
    if va == vb:
        return None
    diffs = []
    for k in sorted(va.keys() | vb.keys()):
        x, y = va.get(k), vb.get(k)
        if x != y:
            diffs.append(f"{k}: {_short(x)} vs {_short(y)}")
        if len(diffs) == 3:
            break
    return "; ".join(diffs)


def _short(t) -> str:
    if t is None:
        return "absent"
    kind, mode, size, digest, mt = t
    return f"{kind} {oct(mode)} {size}B {digest[:8]}" + (" mtime" if mt else "")


def unchanged(before: dict[str, Entry], after: dict[str, Entry]) -> str | None:
    """Every field of every name (mtimes of dirs and files included): what a read-only command
    must leave."""
    if before == after:
        return None
    return ", ".join(tree.diff(before, after))
