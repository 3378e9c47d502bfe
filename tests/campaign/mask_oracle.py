"""Invariant 10, --mask's promise (docs/schemas.md "Masking fields"): a masked field's clear
value appears in no output (stdout, stderr, the files written); everything else is what the
same command writes without --mask; a key or value that does not decode has its bytes withheld,
its reason the same; the exit code is the same, or 2 for a field no schema read has.

Each check runs the same command once more without --mask (read-only, on the same copy) and
compares the two outputs record by record. The key is fixed, so a string's mask is known:
HMAC-SHA256 of its UTF-8 (other values' masks are checked as 64 hex digits)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from pathlib import Path

from . import runner, schema_oracle
from .oracle import Invariant, Verdict

# a field of each topic of the schemas fixture, through records, nullable records and arrays:
# orders (Avro), customers (Avro, a referenced record), readings (JSON Schema), events (Protobuf)
FIELDS = (
    "note",
    "shipping.city",
    "uid",
    "name",
    "home.street",
    "sensor",
    "tags",
    "page",
    "lines.sku",
)
KEY = b"the campaign's mask key"
_KEY_FILE = "mask.key"  # in W/out
WITHHELD = "(its bytes withheld: --mask)"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_SIDES = ("key", "value")


def options(ws) -> list[str]:
    """--mask of every field, and the key file (written by `write_key`)."""
    out = [x for f in FIELDS for x in ("--mask", f)]
    return [*out, "--mask-key-file", str(ws.out / _KEY_FILE)]


def write_key(ws, rng, target) -> str:
    """The command's `prepare`: the key file, in W/out (where a run may write)."""
    (ws.out / _KEY_FILE).write_bytes(KEY + b"\n")
    return f"--mask {' '.join(FIELDS)}"


def _unmasked_argv(argv: list[str]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--mask", "--mask-key-file"):
            skip = True
        else:
            out.append(a)
    return out


class _Mask:
    """Where a mask must be: the clear value it stands for."""

    def __init__(self, clear):
        self.clear = clear


def _masked(v, path: tuple[str, ...]):
    """A JSON value as --mask must write it (ops/schema_mask.FieldMask._at): arrays gone through,
    a null left null, the value at the path a _Mask."""
    if v is None:
        return None
    if isinstance(v, list):
        return [_masked(x, path) for x in v]
    if not path:
        return _Mask(v)
    if isinstance(v, dict) and path[0] in v:
        return {**v, path[0]: _masked(v[path[0]], path[1:])}
    return v


def expected(v, columnar: bool = False):
    """The value without --mask, as it must be with it. `columnar`: a Parquet value, where a
    Protobuf file of several messages is a struct of them by name (the one held set), each
    masked as a value."""
    if columnar and _is_messages(v):
        return {name: expected(m) for name, m in v.items()}
    for f in FIELDS:
        v = _masked(v, tuple(f.split(".")))
    return v


def _is_messages(v) -> bool:
    """export's struct of a Protobuf file's messages: message names (capitalized, as the
    fixture's), each a struct or null."""
    return (
        isinstance(v, dict)
        and bool(v)
        and all(k[:1].isupper() and (m is None or isinstance(m, dict)) for k, m in v.items())
    )


def _mismatch(got, want, where: str) -> str | None:
    """Where `got` (with --mask) differs from `want` (expected: the unmasked value, masked)."""
    if isinstance(want, _Mask):
        if not isinstance(got, str) or not _HEX64.fullmatch(got):
            return f"{where}: {str(got)[:40]!r} is no mask"
        if isinstance(want.clear, str):
            mac = hmac.new(KEY, want.clear.encode("utf-8", "surrogatepass"), hashlib.sha256)
            if got != mac.hexdigest():
                return f"{where}: the mask of {want.clear[:20]!r} is not its HMAC"
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            return f"{where}: fields {sorted(got) if isinstance(got, dict) else got!r:.80} vs {sorted(want)}"
        return next((p for k in want if (p := _mismatch(got[k], want[k], f"{where}.{k}"))), None)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{where}: {str(got)[:60]} vs a list of {len(want)}"
        return next(
            (p for i, w in enumerate(want) if (p := _mismatch(got[i], w, f"{where}[{i}]"))), None
        )
    if got == want:
        return None
    return f"{where}: {str(got)[:40]} with --mask, {str(want)[:40]} without"


def _leaves(v, clear: list, plain: list) -> None:
    """The strings of an expected value: those masked (`clear`) and the others (`plain`)."""
    if isinstance(v, _Mask):
        _leaves(v.clear, clear, clear)
    elif isinstance(v, dict):
        for k, x in v.items():
            plain.append(str(k))
            _leaves(x, clear, plain)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _leaves(x, clear, plain)
    elif isinstance(v, str):
        plain.append(v)


class _Leaks:
    """The clear values a masked output must not hold: the strings of 3 characters or more at
    masked paths that no unmasked string of the output holds too."""

    def __init__(self):
        self.clear: list[str] = []
        self.plain: list[str] = []

    def add(self, v) -> None:
        _leaves(v, self.clear, self.plain)

    def first_in(self, text: str) -> str | None:
        plain = "\n".join(self.plain)
        for c in sorted(set(self.clear)):
            if len(c) >= 3 and c not in plain and (c in text or json.dumps(c)[1:-1] in text):
                return c
        return None


def _compare_sides(
    got: dict, want: dict, where: str, leaks: _Leaks, schema_key=lambda side: f"{side}_schema"
) -> str | None:
    """One record (a JSON line) with --mask against the same without it."""
    for side in _SIDES:
        schema = want.get(schema_key(side))
        if schema is None:
            leaks.add(want.get(side))
            if got.get(side) != want.get(side):
                return f"{where}: {side} without a schema differs with --mask"
        elif "error" in schema:
            gerr = (got.get(schema_key(side)) or {}).get("error")
            if got.get(side) is not None or gerr != f"{schema['error']} {WITHHELD}":
                return f"{where}: {side} not decoded, but not withheld as said: {str(gerr)[:100]!r}"
        else:
            e = expected(want.get(side))
            leaks.add(e)
            problem = _mismatch(got.get(side), e, f"{where}: {side}")
            if problem is not None:
                return problem
    rest = lambda d: {k: x for k, x in d.items() if k not in _SIDES and not k.endswith("_schema")}  # noqa: E731
    if rest(got) != rest(want):
        return f"{where}: fields other than key and value differ with --mask"
    leaks.add(rest(want))
    return None


def _exit_problem(run: runner.Run, plain: runner.Run) -> tuple[bool, str | None]:
    """(whether the outputs are to be compared, a problem with the exit code)."""
    if run.rc == 2 and "--mask" in run.stderr and "no such field" in run.stderr:
        return False, None  # a mutation took the field out of every schema
    if run.rc != plain.rc:
        return False, f"exit {run.rc} with --mask, {plain.rc} without"
    return run.rc in (0, 1), None


def _plain_run(args, run: runner.Run, drop_caps: bool, out: Path | None = None) -> runner.Run:
    """The same command without --mask (into `out`, for an export)."""
    argv = _unmasked_argv(run.argv[next(i for i, a in enumerate(run.argv) if a in _READERS) :])
    if out is not None:
        argv = [*argv[:-1], str(out)]
    return runner.run(args.ws, argv, drop_caps=drop_caps)


_READERS = ("dump-log", "export")


def check_dump_log(v: Verdict, args, run: runner.Run, drop_caps: bool) -> None:
    if run.timed_out or run.killed:
        return
    plain = _plain_run(args, run, drop_caps)
    v.check(Invariant.MASKED, (p := _dump_log_problem(run, plain)) is None, p or "")


def _dump_log_problem(run: runner.Run, plain: runner.Run) -> str | None:
    compare, problem = _exit_problem(run, plain)
    if not compare:
        return problem
    got, want = schema_oracle._records(run.stdout), schema_oracle._records(plain.stdout)
    if got is None or want is None:
        return "stdout is not JSON Lines"
    # the lines about files and batches are the same, and say nothing masked
    others = [x for x in plain.stdout.splitlines() if '"kind": "record"' not in x]
    return _lines_problem(got, want, run.stdout + run.stderr, lambda r: r.get("file"), others)


def _lines_problem(got, want, text: str, segment, others=()) -> str | None:
    ids = lambda rs: [(segment(r), r.get("offset")) for r in rs]  # noqa: E731
    if ids(got) != ids(want):
        return f"{len(got)} records with --mask, {len(want)} without"
    leaks = _Leaks()
    leaks.plain.extend(others)
    for g, w in zip(got, want):
        problem = _compare_sides(g, w, f"{segment(w)}: offset {w.get('offset')}", leaks)
        if problem is not None:
            return problem
    leak = leaks.first_in(text)
    return None if leak is None else f"the clear value {leak!r} is in the output"


def check_export_jsonl(v: Verdict, args, run: runner.Run, drop_caps: bool) -> None:
    if run.timed_out or run.killed:
        return
    out = Path(run.argv[-1])
    plain = _plain_run(args, run, drop_caps, out.with_name(out.name + "-plain"))
    problem = _export_jsonl_problem(run, plain, out, out.with_name(out.name + "-plain"))
    v.check(Invariant.MASKED, problem is None, problem or "")


def _export_jsonl_problem(run, plain, out: Path, plain_out: Path) -> str | None:
    compare, problem = _exit_problem(run, plain)
    if not compare:
        return problem
    got, want = schema_oracle._lines(out), schema_oracle._lines(plain_out)
    if got is None or want is None:
        return "an export wrote no JSON Lines"
    text = out.read_text(errors="replace") + run.stdout + run.stderr
    return _lines_problem(got, want, text, lambda r: r.get("segment"))


def check_export(v: Verdict, args, run: runner.Run, drop_caps: bool) -> None:
    if run.timed_out or run.killed:
        return
    out = Path(run.argv[-1])
    plain_out = out.with_name(out.name + "-plain")
    plain = _plain_run(args, run, drop_caps, plain_out)
    problem = _export_problem(run, plain, out, plain_out)
    v.check(Invariant.MASKED, problem is None, problem or "")


def _export_problem(run, plain, out: Path, plain_out: Path) -> str | None:
    compare, problem = _exit_problem(run, plain)
    if not compare:
        return problem
    got, want = schema_oracle._parquet_rows(out), schema_oracle._parquet_rows(plain_out)
    if got is None or want is None:
        return "an export wrote no Parquet dir"
    if sorted(got) != sorted(want):
        return f"partitions {sorted(got)} with --mask, {sorted(want)} without"
    leaks, text = _Leaks(), [run.stdout, run.stderr]
    for tp in sorted(got):
        g, w = got[tp], want[tp]
        if [r["offset"] for r in g] != [r["offset"] for r in w]:
            return f"{'/'.join(tp)}: {len(g)} rows with --mask, {len(w)} without"
        for gr, wr in zip(g, w):
            where = f"{'/'.join(tp)} offset {wr['offset']}"
            problem = _row_problem(gr, wr, where, leaks)
            if problem is not None:
                return problem
            _leaves(gr, text, text)
    leak = leaks.first_in("\n".join(text))
    return None if leak is None else f"the clear value {leak!r} is in the output"


def _row_problem(got: dict, want: dict, where: str, leaks: _Leaks) -> str | None:
    """A Parquet row: `<side>_error` says what became of each side; the masked column is a
    string (an array of them) in place of the unmasked one."""
    for side in _SIDES:
        if f"{side}_error" not in want:  # a topic without a schema: its bytes as they are
            if got.get(side) != want.get(side):
                return f"{where}: {side} without a schema differs with --mask"
            continue
        error = want[f"{side}_error"]
        if error is not None:
            if (
                got[side] is not None
                or got[f"{side}_bytes"] is not None
                or got[f"{side}_error"] != f"{error} {WITHHELD}"
            ):
                return f"{where}: {side} not decoded, but not withheld as said"
        else:
            e = expected(want[side], columnar=True)
            leaks.add(e)
            problem = _mismatch(got[side], e, f"{where}: {side}")
            if problem is not None:
                return problem
    rest = lambda d: {  # noqa: E731
        k: x
        for k, x in d.items()
        if k not in _SIDES and not k.endswith(("_error", "_bytes")) or k.endswith("_id")
    }
    if rest(got) != rest(want):
        return f"{where}: columns other than key and value differ with --mask"
    leaks.add({k: x for k, x in rest(want).items() if isinstance(x, str)})
    return None
