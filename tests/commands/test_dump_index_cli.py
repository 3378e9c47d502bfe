"""`kafkalog dump-index` against kafka-dump-log 3.3.1's own output (goldens copied into
tests/fixtures/read/goldens), its partition-dir expansion, and its JSON mode."""

from __future__ import annotations

import json
import os as _os
import shutil
import shutil as _shutil
import struct as _struct
from pathlib import Path

import pytest
import pytest as _pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES as _EX
from tests.helpers.paths import READ

GOLDENS = READ / "goldens"
CASES = sorted(
    (a.parent.relative_to(GOLDENS), a.name[: -len(".args")]) for a in GOLDENS.rglob("*.args")
)


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


@pytest.fixture
def corpus_like(tmp_path, monkeypatch):
    """Lay the fixtures out at their corpus paths and work from there, as the goldens were made."""

    def place(rel: Path) -> str:
        golden = GOLDENS / rel / "plain.stdout"
        corpus_path = golden.read_text().splitlines()[0].removeprefix("Dumping ")
        dest = tmp_path / corpus_path
        if not dest.parent.exists():
            shutil.copytree(READ / rel.parent, dest.parent)
        return corpus_path

    monkeypatch.chdir(tmp_path)
    place.root = tmp_path
    return place


@pytest.mark.parametrize("rel,variant", CASES, ids=[f"{r}[{v}]" for r, v in CASES])
def test_kafka_mode_is_kafka_dump_log(corpus_like, rel, variant):
    given = corpus_like(rel)
    base = GOLDENS / rel / variant
    flags = [x for x in Path(f"{base}.args").read_text().splitlines() if x.strip()]
    root = str(corpus_like.root)
    want_out = Path(f"{base}.stdout").read_text().replace("{ROOT}", root)
    want_err = Path(f"{base}.stderr").read_text().replace("{ROOT}", root)
    r = invoke("dump-index", given, *flags)
    assert r.exit_code == int(Path(f"{base}.rc").read_text().strip() or 0)
    assert r.stdout == want_out
    assert r.stderr == want_err


def test_mismatch_report_on_stderr(tmp_path):
    """The zeroed-index case: an entry that points at the wrong batch (Kafka's report, stderr)."""
    part = shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")
    idx = part / "00000000000000000363.index"
    r = invoke("dump-index", "--verify-index-only", idx)
    assert r.exit_code == 0
    assert r.stdout == f"Dumping {idx}\n"
    assert r.stderr == f"Mismatches in :{idx}\n  Index offset: 363, log offset: 369\n"


def test_partition_dir_is_its_index_files_in_offset_order(tmp_path):
    part = shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")
    r = invoke("dump-index", part)
    dumped = [
        ln.removeprefix("Dumping ") for ln in r.stdout.splitlines() if ln.startswith("Dumping ")
    ]
    assert [Path(p).name for p in dumped] == [
        "00000000000000000185.index",
        "00000000000000000185.timeindex",
        "00000000000000000185.snapshot",
        "00000000000000000363.index",
        "00000000000000000363.timeindex",
        "00000000000000000363.snapshot",
    ]
    single = invoke("dump-index", part / "00000000000000000185.index")
    assert r.stdout.startswith(single.stdout)
    assert "Mismatches in :" in r.stderr


def test_log_dir(tmp_path):
    shutil.copytree(READ / "txn-0", tmp_path / "logs" / "txn-0")
    (tmp_path / "logs" / "meta.properties").write_text("version=1\n")
    r = invoke("dump-index", tmp_path / "logs")
    assert r.exit_code == 0
    assert (
        "version: 0 producerId: 1 firstOffset: 6 lastOffset: 10 lastStableOffset: 11\n" in r.stdout
    )


def test_json_entries(tmp_path):
    part = shutil.copytree(READ / "txn-0", tmp_path / "txn-0")
    r = invoke(
        "dump-index",
        "--format",
        "json",
        part / "00000000000000000000.txnindex",
        part / "00000000000000000015.snapshot",
    )
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["kind"] for o in objs] == ["file", "aborted_txn", "file", "producer_state"]
    assert objs[1] == {
        "kind": "aborted_txn",
        "version": 0,
        "producer_id": 1,
        "first_offset": 6,
        "last_offset": 10,
        "last_stable_offset": 11,
    }
    assert objs[3]["producer_id"] == 1 and objs[3]["current_txn_first_offset"] is None


def test_json_verify_index_only_mismatch_objects(tmp_path):
    part = shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")
    r = invoke(
        "dump-index", "--format", "json", "--verify-index-only", part / "00000000000000000363.index"
    )
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert objs[1] == {
        "kind": "index_mismatch",
        "file": str(part / "00000000000000000363.index"),
        "check": "offset",
        "index_offset": 363,
        "log_offset": 369,
    }
    assert r.stderr == ""


def test_json_time_index_checks(tmp_path):
    part = shutil.copytree(READ / "ts-jumble-0", tmp_path / "ts-jumble-0")
    r = invoke(
        "dump-index",
        "--format",
        "json",
        "--verify-index-only",
        part / "00000000000000000000.timeindex",
    )
    # problems only, then a summary
    *objs, summary = [json.loads(x) for x in r.stdout.splitlines()]
    assert summary == {
        "kind": "summary",
        "files": 1,
        "problems": len(objs),
        "notes": 0,
        "ok": False,
    }
    golden = (
        GOLDENS / "ts-jumble-0/00000000000000000000.timeindex/verify-index-only.stderr"
    ).read_text()
    not_found = [ln for ln in golden.splitlines() if ln.startswith("Indexed offset: ")]
    got = [
        f"Indexed offset: {o['index_offset']}, found log offset: {o['log_offset']}"
        for o in objs
        if o["check"] == "offset_not_found"
    ]
    assert got == not_found and got
    assert {o["kind"] for o in objs} == {"index_mismatch"}


def test_json_sanity_check(tmp_path):
    part = shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")
    r = invoke(
        "dump-index",
        "--format",
        "json",
        "--index-sanity-check",
        part / "00000000000000000185.index",
    )
    assert json.loads(r.stdout.splitlines()[1]) == {
        "kind": "sanity_check",
        "file": str(part / "00000000000000000185.index"),
        "passed": True,
    }
    bad = part / "00000000000000000185.index"
    bad.write_bytes(bad.read_bytes() + b"\x01")
    r = invoke("dump-index", "--format", "json", "--index-sanity-check", bad)
    assert r.exit_code == 3
    obj = json.loads(r.stdout.splitlines()[1])
    assert obj["passed"] is False and obj["position"] == bad.stat().st_size - 1
    assert r.stderr.startswith(f"kafkalog: {bad}: byte {bad.stat().st_size - 1}: Index file ")


def test_options_exclude_each_other(tmp_path):
    r = invoke("dump-index", "--verify-index-only", "--index-sanity-check", READ / "txn-0")
    assert r.exit_code == 2


def test_log_file_is_refused(tmp_path):
    r = invoke("dump-index", READ / "txn-0" / "00000000000000000000.log")
    assert r.exit_code == 4
    assert "use dump-log for .log files" in r.stderr


# ------------------------------------------------------------------ exit codes agree across formats


@_pytest.fixture
def _multi(tmp_path):
    d = tmp_path / "multi-segment-0"
    _shutil.copytree(_EX / "multi-segment-0", d)
    return d


@_pytest.mark.parametrize("fmt", ["kafka", "json"])
def test_a_damaged_index_is_exit_3_in_both_formats_naming_the_log(runner, _multi, fmt):
    idx = _multi / "00000000000000000300.index"
    raw = bytearray(idx.read_bytes())
    raw[0:8] = _struct.pack(">ii", 49, 100)
    idx.write_bytes(bytes(raw))
    res = runner.invoke(cli, ["dump-index", str(_multi), "--format", fmt])
    assert res.exit_code == 3
    assert "00000000000000000300.log: byte 100" in res.stderr


@_pytest.mark.parametrize("fmt", ["kafka", "json"])
def test_a_corrupt_snapshot_is_reported_and_exit_0_in_both_formats(runner, _multi, fmt):
    snap = _multi / "00000000000000000300.snapshot"
    snap.write_bytes(b"garbagegarbage")
    res = runner.invoke(cli, ["dump-index", str(snap), "--format", fmt])
    assert res.exit_code == 0
    assert "Snapshot failed" in (res.stderr if fmt == "kafka" else res.stdout)


def test_a_fifo_log_does_not_hang_dump_index(runner, _multi):
    log = _multi / "00000000000000000300.log"
    log.unlink()
    _os.mkfifo(log)
    res = runner.invoke(cli, ["dump-index", str(_multi / "00000000000000000300.index")])
    assert res.exit_code == 4 and "FIFO" in res.stderr


def test_a_missing_path_does_not_stop_the_others(runner):
    idx = _EX / "multi-segment-0" / "00000000000000000000.index"
    res = runner.invoke(cli, ["dump-index", "nonexist.index", str(idx)])
    assert res.exit_code == 4 and "nonexist.index" in res.stderr
    assert res.stdout.startswith(f"Dumping {idx}")
