"""The campaign's deterministic sample (tests/campaign/README.md): fixed read-only and kill cases
on examples/logdir, zero failures per invariant; and the oracle's own tests, one per invariant,
each showing a fake command that breaks that promise is caught."""

from __future__ import annotations

import random
import sys

import pytest

from tests.campaign import cases, kills, runner, workspace
from tests.campaign.commands import READER, WRITER, Command, Mode
from tests.campaign.oracle import Invariant, Verdict
from tests.campaign.report import tally
from tests.campaign.sources import EXAMPLES
from tests.helpers import paths

# 70 read-only cases: every mutation kind once at least (the kinds go in turn), commands drawn by the
# seed; 10 kills: each command that changes log dirs once, each at a step (KAFKALOG_FAULT_AFTER:
# exact, where a kill at a time lands differently each run). Fixed: the same cases every run.
SEED = 31
READ_CASES = [cases.read_case_id(SEED, n) for n in range(70)]
KILL_CASES = [kills.kill_case_id(SEED, n, step_only=True) for n in range(len(kills.TARGETS))]


# a run of examples/logdir takes under a second; 10 s is a hang even on a loaded machine
SAMPLE_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("campaign")
    saved, runner.TIMEOUT_S = runner.TIMEOUT_S, SAMPLE_TIMEOUT_S
    try:
        verdicts = [cases.run_read_case(c, None, tmp) for c in READ_CASES]
        verdicts += [kills.run_kill_case(c, None, tmp) for c in KILL_CASES]
    finally:
        runner.TIMEOUT_S = saved
    return tally(verdicts)


def test_sample_covers_every_kind_and_command():
    planned = [cases.plan(c, None) for c in READ_CASES]
    from tests.campaign.mutations import kinds

    assert {k for _, k, _ in planned} == set(kinds())
    assert len(kinds()) >= 25
    assert {t.name for t in kills.TARGETS} >= {
        "recover",
        "recover --repair",
        "recover --salvage",
        "retain",
        "compact",
        "delete-records",
        "roll",
        "move-partition",
        "quarantine restore",
        "quarantine prune",
        "erase",
    }


@pytest.mark.parametrize("inv", list(Invariant), ids=lambda i: i.name)
def test_sample_has_no_failure(sample, inv):
    failed = [f for f in sample.failures if f.invariant is inv]
    if inv is Invariant.KILL_CONVERGES:
        assert sample.checked[inv] == len(KILL_CASES)
    else:
        assert sample.checked[inv] > 0
    assert not failed, "\n".join(
        f"{f.case_id} `{f.command}` on {f.mutation}: {f.symptom}" for f in failed
    )


# -- the oracle catches each kind of violation ---------------------------------------------------

FAKE = [sys.executable, str(paths.REPO / "tests" / "campaign" / "fake_command.py")]


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(runner, "PROGRAM", FAKE)
    monkeypatch.setattr(runner, "TIMEOUT_S", 3.0)

    def breaking(what: str) -> None:
        monkeypatch.setenv("FAKE_BREAKS", what)

    return breaking


def _read_only(tmp_path, mode=Mode.READ_ONLY, codes=READER) -> Verdict:
    ws, m, args = cases.build(
        "r0-0", tmp_path / "w", EXAMPLES, cases.mutations.Kind.NONE, cases.Second.NONE
    )
    cmd = Command(
        "fake",
        lambda a: ["fake", str(a.ws.logdir)],
        mode,
        codes,
        dry_run=lambda a: ["fake", "--dry-run", str(a.ws.logdir)],
    )
    v = Verdict("r0-0", cmd.name, str(m))
    (cases._mutating if mode is Mode.MUTATING else cases._read_only)(v, ws, m, args, cmd)
    return v


def _failed(v: Verdict) -> set[Invariant]:
    return {f.invariant for f in v.failures}


def test_oracle_passes_a_command_that_keeps_every_promise(fake, tmp_path):
    fake("nothing")
    assert _failed(_read_only(tmp_path)) == set()
    assert _failed(_read_only(tmp_path / "m", Mode.MUTATING, WRITER)) == set()


@pytest.mark.parametrize(
    "breaks,caught",
    [
        ("outside", Invariant.NOTHING_OUTSIDE),
        ("parent", Invariant.NOTHING_OUTSIDE),
        ("hang", Invariant.NO_HANG),
        ("traceback", Invariant.NO_PYTHON_ERROR),
        ("bare-stderr", Invariant.NO_PYTHON_ERROR),
        ("exit-code", Invariant.EXIT_CODE),
        ("touch", Invariant.READ_ONLY),
    ],
)
def test_oracle_catches_a_read_only_violation(fake, tmp_path, breaks, caught):
    fake(breaks)
    assert caught in _failed(_read_only(tmp_path))


@pytest.mark.parametrize(
    "breaks,caught",
    [
        ("every-run", Invariant.SECOND_RUN),
        ("lose-bytes", Invariant.RESTORE),
    ],
)
def test_oracle_catches_a_mutating_violation(fake, tmp_path, breaks, caught):
    fake(breaks)
    assert caught in _failed(_read_only(tmp_path, Mode.MUTATING, WRITER))


def test_oracle_catches_a_kill_that_does_not_converge(fake, tmp_path):
    fake("no-converge")
    target = kills.KillTarget(
        "fake",
        lambda ws, rng: "nothing",
        lambda ws: ["fake", str(ws.logdir)],
        WRITER,
        restore_check=False,
    )
    v = Verdict("k0-0", "fake", "")
    kills._kill_case(v, "k0-0", EXAMPLES, target, kills.Instant.STEP, tmp_path / "k")
    assert Invariant.KILL_CONVERGES in _failed(v)


def test_workspace_removal_handles_what_mutations_leave(tmp_path):
    ws = workspace.make(tmp_path / "w", EXAMPLES)
    for kind in (
        cases.mutations.Kind.PERM_DIR_000,
        cases.mutations.Kind.TYPE_FIFO,
        cases.mutations.Kind.TYPE_SOCKET,
    ):
        cases.mutations.apply(kind, random.Random(1), ws)
    workspace.remove(ws.root)
    assert not ws.root.exists()


def test_documented_codes_are_read_from_help(fake, monkeypatch, tmp_path):
    """The exit codes come from the command's own "Exit codes:" paragraph, in both of the forms
    the --help texts use (`; N what` and `, N what`)."""
    from tests.campaign import commands

    script = tmp_path / "help.py"
    script.write_text(
        "print('Usage: x\\n\\n  Exit codes: 0 done or nothing to do; 1 --dry-run: the plan would\\n"
        "  change; 7 refused; 2 usage error, 3 corrupt input, 4 bad path, 6 write failure.')\n"
    )
    monkeypatch.setattr(runner, "PROGRAM", [sys.executable, str(script)])
    commands.documented_codes.cache_clear()
    try:
        assert commands.documented_codes("retain --dry-run") == {0, 1, 2, 3, 4, 6, 7}
    finally:
        commands.documented_codes.cache_clear()


def test_oracle_9_catches_an_undecoded_value_not_named_or_changed():
    """Invariant 9 (schema_oracle): a value with an error must be the plain run's bytes and be
    named with its file and offset, exit 1."""
    import json

    from tests.campaign.schema_oracle import _dump_log_problem

    plain_rec = {"kind": "record", "file": "f.log", "offset": 7, "key": None, "value": "\u0000x"}
    err = {"id": 3, "error": "AVRO payload its schema (id 3) does not read"}
    named = "kafkalog: f.log: offset 7: value kept as bytes: AVRO payload ...\n"

    def run(rc, rec, stderr=""):
        return runner.Run(["kafkalog", "dump-log"], rc, json.dumps(rec) + "\n", stderr, 0.1)

    plain = run(0, plain_rec)
    good = {**plain_rec, "value_schema": err}
    assert _dump_log_problem(run(1, good, named), plain) is None
    assert "not named on stderr" in _dump_log_problem(run(1, good), plain)
    assert "printed otherwise" in _dump_log_problem(run(1, {**good, "value": "x"}, named), plain)
    assert "exit 0 with 1" in _dump_log_problem(run(0, good, named), plain)
    assert "records with --decode-schemas" in _dump_log_problem(
        run(0, {**good, "offset": 8}), plain
    )


def test_oracle_10_catches_a_clear_value_an_unmasked_field_or_bytes_not_withheld():
    """Invariant 10 (mask_oracle): the masked field is its HMAC, the rest as without --mask, a
    value that does not decode withheld; a clear value anywhere in the output is caught."""
    import hashlib
    import hmac
    import json

    from tests.campaign.mask_oracle import KEY, _dump_log_problem

    schema = {"id": 1, "subject": "orders-value", "version": 1, "type": "AVRO"}
    plain_rec = {
        "kind": "record",
        "file": "f.log",
        "offset": 7,
        "key": None,
        "value": {"note": "a secret note", "n": 3},
        "value_schema": schema,
    }
    mac = hmac.new(KEY, b"a secret note", hashlib.sha256).hexdigest()

    def run(rc, rec, stderr=""):
        return runner.Run(["kafkalog", "dump-log"], rc, json.dumps(rec) + "\n", stderr, 0.1)

    plain = run(0, plain_rec)
    good = {**plain_rec, "value": {"note": mac, "n": 3}}
    assert _dump_log_problem(run(0, good), plain) is None
    assert "is no mask" in _dump_log_problem(run(0, plain_rec), plain)
    assert "is not its HMAC" in _dump_log_problem(
        run(0, {**good, "value": {"note": "0" * 64, "n": 3}}), plain
    )
    assert "'a secret note' is in the output" in _dump_log_problem(
        run(0, good, "kafkalog: f.log: offset 7: it said 'a secret note'\n"), plain
    )
    assert "value.n: 4 with --mask, 3 without" in _dump_log_problem(
        run(0, {**good, "value": {"note": mac, "n": 4}}), plain
    )
    broken = {**plain_rec, "value": "\u0000x", "value_schema": {"id": 1, "error": "AVRO ..."}}
    withheld = {
        **broken,
        "value": None,
        "value_schema": {"id": 1, "error": "AVRO ... (its bytes withheld: --mask)"},
    }
    assert _dump_log_problem(run(1, withheld), run(1, broken)) is None
    assert "not withheld" in _dump_log_problem(run(1, broken), run(1, broken))
    assert "exit 0 with --mask, 1 without" in _dump_log_problem(run(0, withheld), run(1, broken))


def test_oracle_9_reads_a_timestamp_past_year_9999(tmp_path):
    """A batch timestamp Kafka keeps (a long) but Python's datetime cannot hold: the Parquet
    oracle compares it as the number it is, nested in a decoded value too."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.campaign.schema_oracle import _parquet_rows

    ms = 2**62
    part = tmp_path / "out" / "topic=t" / "partition=0"
    part.mkdir(parents=True)
    stamp = pa.timestamp("ms", tz="UTC")
    table = pa.table(
        {
            "offset": pa.array([0], pa.int64()),
            "timestamp": pa.array([ms], stamp),
            "value": pa.array([{"at": ms}], pa.struct([("at", stamp)])),
        }
    )
    pq.write_table(table, part / "part-0.parquet")
    rows = _parquet_rows(tmp_path / "out")
    assert rows == {
        ("topic=t", "partition=0"): [{"offset": 0, "timestamp": ms, "value": {"at": ms}}]
    }
