"""Invariant 9, the decoding's own promise (docs/schemas.md "Nothing is dropped"): a key or value
that does not decode is kept as it is printed without decoding, named on stderr with its file and
offset (dump-log, exit 1), or kept whole in `<side>_bytes` with its reason in `<side>_error`
(export --to parquet); and decoding drops or adds no record.

Each check runs the same command once more without --decode-schemas (read-only, on the same
copy) and compares the two outputs record by record."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import runner
from .oracle import Invariant, Verdict

_SIDES = ("key", "value")


def _records(stdout: str) -> list[dict] | None:
    out = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        if isinstance(obj, dict) and obj.get("kind") == "record":
            out.append(obj)
    return out


def _plain_argv(argv: list[str], instead: tuple[str, ...] = ()) -> list[str]:
    """The argv without --decode-schemas (`instead` in its place)."""
    i = argv.index("--decode-schemas")
    return [*argv[:i], *instead, *argv[i + 1 :]]


def check_dump_log(v: Verdict, args, run: runner.Run, drop_caps: bool) -> None:
    """dump-log --format json --decode-schemas against dump-log --format json on the same
    path: the same records in the same order; a side without a schema, or with an error, exactly
    as printed without decoding, and each error named `kafkalog: FILE: offset N: SIDE kept as
    bytes: ...` with exit 1. One check per run."""
    if run.timed_out or run.killed:
        return
    argv = run.argv[run.argv.index("dump-log") :]
    # --decode-schemas implies --deep-iteration and prints values: so does --print-data-log
    plain = runner.run(args.ws, _plain_argv(argv, ("--print-data-log",)), drop_caps=drop_caps)
    problem = _dump_log_problem(run, plain)
    v.check(Invariant.KEPT_AS_BYTES, problem is None, problem or "")


def _dump_log_problem(run: runner.Run, plain: runner.Run) -> str | None:
    if run.rc not in (0, 1):
        # a failure: the same failure as without decoding, or the schemas' own: 2 (versions
        # that resolve to no one reader), 3 (a _schemas segment that does not read: a record
        # that is not the registry's JSON is skipped, with a warning)
        last = run.stderr.strip().rsplit("\n", 1)[-1]
        if run.rc in (plain.rc, 2) or (run.rc == 3 and "_schemas" in last):
            return None
        return f"exit {run.rc} with --decode-schemas, {plain.rc} without"
    got, want = _records(run.stdout), _records(plain.stdout)
    if got is None or want is None:
        return "stdout is not JSON Lines"
    ids = lambda rs: [(r.get("file"), r.get("offset")) for r in rs]  # noqa: E731
    if ids(got) != ids(want):
        first = next((a, b) for a, b in zip([*ids(got), None], [*ids(want), None]) if a != b)
        return (
            f"{len(got)} records with --decode-schemas, {len(want)} without "
            f"(first difference: {first})"
        )
    kept = 0
    for d, p in zip(got, want):
        where = f"{d.get('file')}: offset {d.get('offset')}"
        for side in _SIDES:
            schema = d.get(f"{side}_schema")
            if (schema is None or "error" in schema) and d.get(side) != p.get(side):
                return (
                    f"{where}: {side} not decoded but printed otherwise than without decoding: "
                    f"{str(d.get(side))[:60]!r} vs {str(p.get(side))[:60]!r}"
                )
            if schema is not None and "error" in schema:
                kept += 1
                line = (
                    f"kafkalog: {d.get('file')}: offset {d.get('offset')}: {side} kept as bytes: "
                )
                if line not in run.stderr:
                    return (
                        f"{where}: {side} kept as bytes ({str(schema['error'])[:80]}) is not "
                        "named on stderr"
                    )
        rest = {k: x for k, x in d.items() if k not in _SIDES and not k.endswith("_schema")}
        if rest != {k: x for k, x in p.items() if k not in _SIDES}:
            return f"{where}: fields other than key and value differ from the plain output"
    if kept and run.rc != 1:
        return f"exit {run.rc} with {kept} keys or values kept as bytes"
    skipped = SKIPPED in run.stderr  # a _schemas record the registry would skip: exit 1 too
    if skipped and run.rc != 1:
        return f"exit {run.rc} with a _schemas record skipped"
    if not kept and not skipped and run.rc != plain.rc:
        return f"exit {run.rc} with nothing kept as bytes, {plain.rc} without --decode-schemas"
    return None


# the warning of a _schemas record skipped (ops.schema_registry.SkippedRecord.line)
SKIPPED = "record skipped, as the Schema Registry skips it: "


def _parquet_rows(out: Path) -> dict[tuple[str, str], list[dict]] | None:
    """(topic=..., partition=...) -> rows of every Parquet file under an export's OUT."""
    import pyarrow.parquet as pq

    rows: dict[tuple[str, str], list[dict]] = {}
    if not out.is_dir():
        return None
    for dirpath, _, files in sorted(os.walk(out)):
        for f in sorted(files):
            if not f.endswith(".parquet"):
                continue
            parts = Path(dirpath).relative_to(out).parts
            key = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
            table = pq.ParquetFile(Path(dirpath) / f).read()
            rows.setdefault(key, []).extend(table.cast(_as_numbers(table.schema)).to_pylist())
    return rows


def _as_numbers(schema):
    """`schema` with every timestamp and date (nested ones too) as its integer: a batch
    timestamp of 2^62 ms is a Kafka timestamp, but past Python's datetime (year 9999)."""
    import pyarrow as pa

    def plain(t):
        if pa.types.is_timestamp(t) or pa.types.is_date64(t):
            return pa.int64()
        if pa.types.is_date32(t):
            return pa.int32()
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(plain(f.type)) for f in t])
        if pa.types.is_map(t):
            return pa.map_(plain(t.key_type), plain(t.item_type))
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            make = pa.list_ if pa.types.is_list(t) else pa.large_list
            return make(t.value_field.with_type(plain(t.value_type)))
        return t

    return pa.schema([f.with_type(plain(f.type)) for f in schema])


def check_export(v: Verdict, args, run: runner.Run, drop_caps: bool) -> None:
    """export --to parquet --decode-schemas against the plain export of the same log dir: the
    same rows; a row whose side has an error is null there and holds the plain export's bytes
    in `<side>_bytes`. One check per run."""
    if run.timed_out or run.killed or run.rc != 0:
        return
    argv = run.argv[run.argv.index("export") :]
    typed_out = Path(argv[-1])
    plain_out = typed_out.with_name(typed_out.name + "-plain")
    plain = runner.run(args.ws, _plain_argv(argv[:-1]) + [str(plain_out)], drop_caps=drop_caps)
    problem = _export_problem(plain, typed_out, plain_out)
    v.check(Invariant.KEPT_AS_BYTES, problem is None, problem or "")


def _export_problem(plain: runner.Run, typed_out: Path, plain_out: Path) -> str | None:
    if plain.rc != 0:
        return f"export exits 0 with --decode-schemas, {plain.rc} without: {plain.stderr[-160:]}"
    got, want = _parquet_rows(typed_out), _parquet_rows(plain_out)
    if got is None or want is None:
        return "an export wrote no Parquet dir"
    if sorted(got) != sorted(want):
        return f"partitions {sorted(got)} with --decode-schemas, {sorted(want)} without"
    for tp in sorted(got):
        g, w = got[tp], want[tp]
        if [r["offset"] for r in g] != [r["offset"] for r in w]:
            return f"{'/'.join(tp)}: {len(g)} rows with --decode-schemas, {len(w)} without"
        for r, p in zip(g, w):
            for side in _SIDES:
                if f"{side}_error" not in r:
                    ok = r.get(side) == p.get(side)
                    what = "no schema column but not the plain bytes"
                elif r[f"{side}_error"] is not None:
                    ok = r[side] is None and r[f"{side}_bytes"] == p.get(side)
                    what = f"error {r[f'{side}_error'][:80]!r} without the plain bytes"
                else:
                    ok = r[side] is not None or p.get(side) is None
                    what = "neither decoded nor an error"
                if not ok:
                    return f"{'/'.join(tp)} offset {r['offset']}: {side}: {what}"
    return None


def check_export_jsonl(v: Verdict, args, run: runner.Run, drop_caps: bool) -> None:
    """export --to jsonl --decode-schemas against the plain export: the same lines; a side
    without a schema, or with an error, exactly as exported without decoding, each error named
    `kafkalog: note: SEGMENT: offset N: SIDE kept as bytes: ...` (the first 100 of a segment).
    One check per run."""
    if run.timed_out or run.killed or run.rc != 0:
        return
    argv = run.argv[run.argv.index("export") :]
    typed_out = Path(argv[-1])
    plain_out = typed_out.with_name(typed_out.name + "-plain")
    plain = runner.run(args.ws, _plain_argv(argv[:-1]) + [str(plain_out)], drop_caps=drop_caps)
    problem = _export_jsonl_problem(run, plain, typed_out, plain_out)
    v.check(Invariant.KEPT_AS_BYTES, problem is None, problem or "")


def _lines(path: Path) -> list[dict] | None:
    try:
        return [json.loads(x) for x in path.read_text().splitlines()]
    except (OSError, ValueError):
        return None


def _export_jsonl_problem(run, plain, typed_out: Path, plain_out: Path) -> str | None:
    if plain.rc != 0:
        return f"export exits 0 with --decode-schemas, {plain.rc} without: {plain.stderr[-160:]}"
    got, want = _lines(typed_out), _lines(plain_out)
    if got is None or want is None:
        return "an export wrote no JSON Lines"
    ids = lambda rs: [(r.get("segment"), r.get("offset")) for r in rs]  # noqa: E731
    if ids(got) != ids(want):
        return f"{len(got)} lines with --decode-schemas, {len(want)} without"
    noted: dict = {}
    for d, p in zip(got, want):
        where = f"{d.get('segment')}: offset {d.get('offset')}"
        for side in _SIDES:
            schema = d.get(f"{side}_schema")
            if (schema is None or "error" in schema) and d.get(side) != p.get(side):
                return f"{where}: {side} not decoded but exported otherwise than without decoding"
            if schema is not None and "error" in schema:
                n = noted[d.get("segment")] = noted.get(d.get("segment"), 0) + 1
                line = f"kafkalog: note: {where}: {side} kept as bytes: "
                if n <= 100 and line not in run.stderr:
                    return f"{where}: {side} kept as bytes is not named on stderr"
    return None
