"""`kafkalog verify-crc`: what a user sees, text and JSON, exit codes, --jobs, no decoration when piped."""

from __future__ import annotations

import json
import os as _os
import shutil
import shutil as _shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers import bad_inputs as B
from tests.helpers.paths import EXAMPLES as _EXAMPLES
from tests.helpers.paths import READ


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def test_clean_log_dir(tmp_path):
    for d in ("rec-none-0", "txn-0", "ts-jumble-0"):
        shutil.copytree(READ / d, tmp_path / "logs" / d)
    (tmp_path / "logs" / "meta.properties").write_text("version=1\n")
    r = invoke("verify-crc", tmp_path / "logs")
    assert r.exit_code == 0
    (line,) = r.stdout.splitlines()
    assert line.startswith("verify-crc: 4 files, ") and ", 0 problems in " in line
    # rec-none-0's active segment was copied from a crashed broker: its preallocated index is a
    # note (the broker rebuilds it on load), not a problem
    index = tmp_path / "logs" / "rec-none-0" / "00000000000000000363.index"
    assert r.stderr == (
        f"kafkalog: note: {index}: byte 8: 19 zero-filled slot(s) after its 1 entries: the broker "
        f"recovers this segment on its next start and rebuilds the index (a crash leaves "
        f"preallocated indexes so)\n"
    )


def test_a_zero_filled_index_the_broker_keeps_is_a_problem(tmp_path):
    # after a clean shutdown the broker recovers nothing: zeros after an index's entries stay, and
    # lookups in it go wrong. kafka-dump-log's checks stop at the first zero slot and pass
    for d in ("rec-none-0",):
        shutil.copytree(READ / d, tmp_path / "logs" / d)
    (tmp_path / "logs" / ".kafka_cleanshutdown").write_text("")
    index = tmp_path / "logs" / "rec-none-0" / "00000000000000000363.index"
    r = invoke("verify-crc", tmp_path / "logs")
    assert r.exit_code == 1
    assert r.stdout.splitlines()[0] == (
        f"{index}: byte 8: 19 zero-filled slot(s) after its 1 entries: the broker does not recover this segment on "
        f"load (.kafka_cleanshutdown, or below the recovery point) and keeps them, so its lookups in this index go "
        f"wrong; `kafkalog recover --repair` rebuilds it"
    )
    assert ", 1 problem in " in r.stdout.splitlines()[1]
    for cmd in (["dump-index", "--verify-index-only"], ["dump-index", "--index-sanity-check"]):
        r = invoke(*cmd, tmp_path / "logs")
        assert r.exit_code == 1, cmd
        assert f"kafkalog: {index}: byte 8: 19 zero-filled slot(s)" in r.stderr
    r = invoke("dump-index", "--verify-index-only", "--format", "json", tmp_path / "logs")
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(o["kind"], o.get("file")) for o in objs if o["kind"] == "problem"] == [
        ("problem", str(index))
    ]
    # and kafka-dump-log's own mismatch: the zero slot 0 read as an entry (363 at byte 0)
    assert [(o["kind"], o["index_offset"]) for o in objs if o["kind"] == "index_mismatch"] == [
        ("index_mismatch", 363)
    ]
    assert objs[-1] == {
        "kind": "summary",
        "files": len(list((tmp_path / "logs" / "rec-none-0").glob("*index")))
        + len(list((tmp_path / "logs" / "rec-none-0").glob("*.snapshot"))),
        "problems": 2,
        "notes": 0,
        "ok": False,
    }
    r = invoke("describe", "--format", "json", tmp_path / "logs")
    assert any(
        "19 zero-filled slot(s)" in p for p in json.loads(r.stdout.splitlines()[0])["problems"]
    )


def test_problems_then_summary_exit_1(tmp_path):
    log = B.bad_crc(tmp_path)
    r = invoke("verify-crc", log.parent)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        f"{log}: byte {len(B.good_batch())}: v2 batch CRC-32C mismatch (offsets 3..5, stored crc "
    )
    assert lines[1].startswith("verify-crc: 1 file, 2 batches, ") and ", 1 problem in " in lines[1]


def test_json(tmp_path):
    log = B.cut_short(tmp_path)
    r = invoke("verify-crc", "--format", "json", log)
    assert r.exit_code == 1
    problem, summary = (json.loads(x) for x in r.stdout.splitlines())
    assert problem == {
        "kind": "problem",
        "problem": "trailing_bytes",
        "file": str(log),
        "position": len(B.good_batch()),
        "message": f"{len(B.good_batch()) - 10} trailing bytes are not a complete batch "
        f"(its size field says {len(B.good_batch()) - 12} bytes follow, "
        f"{len(B.good_batch()) - 22} do)",
        "base_offset": None,
        "last_offset": None,
        "stored_crc": None,
        "computed_crc": None,
    }
    assert summary["kind"] == "summary" and summary["problems"] == 1 and summary["batches"] == 1
    assert summary["ok"] is False


def test_continues_after_a_corrupt_size(tmp_path):
    a = B.text(tmp_path / "a")
    b = B.bad_crc(tmp_path / "b")
    r = invoke("verify-crc", a, b)
    files = [ln.split(":")[0] for ln in r.stdout.splitlines()[:-1]]
    assert files == [str(a), str(b)]
    assert r.stdout.splitlines()[-1].startswith("verify-crc: 2 files, ")


def test_deep_finds_what_the_crc_cannot(tmp_path):
    log = B.garbage_compressed(tmp_path)
    assert invoke("verify-crc", log).exit_code == 0  # the CRC is right
    r = invoke("verify-crc", "--deep", log)
    assert r.exit_code == 1
    assert r.stdout.startswith(f"{log}: byte 0: records do not decode: ")


def test_jobs_same_result(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"".join(B.good_batch(3 * i) for i in range(2000)))
    (d / "00000000000000006000.log").write_bytes(B.good_batch(5990))
    one = invoke("verify-crc", "--jobs", "1", "--format", "json", d)
    two = invoke("verify-crc", "--jobs", "2", "--format", "json", d)
    strip = lambda out: [o for o in map(json.loads, out.splitlines()) if o["kind"] == "problem"]  # noqa: E731
    assert strip(one.stdout) == strip(two.stdout) and len(strip(one.stdout)) == 2
    assert "below the segment's base offset 6000" in strip(one.stdout)[0]["message"]


def test_piped_output_has_no_decoration(tmp_path):
    """The installed command, stdout and stderr to pipes: plain lines only, no escape codes."""
    log = B.bad_crc(tmp_path)
    exe = Path(sys.executable).with_name("kafkalog")
    p = subprocess.run(
        [str(exe), "verify-crc", str(log)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 1
    assert "\x1b[" not in p.stdout + p.stderr and p.stderr == ""
    assert len(p.stdout.splitlines()) == 2


# ------------------------------------------------------------------ unreadable and non-segment paths


@pytest.mark.parametrize("kind", ["dangling", "directory", "fifo"])
def test_an_unreadable_segment_is_exit_4_not_skipped(runner, tmp_path, kind):
    d = tmp_path / "multi-segment-0"
    _shutil.copytree(_EXAMPLES / "multi-segment-0", d)
    log = d / "00000000000000000300.log"
    log.unlink()
    {
        "dangling": lambda: log.symlink_to(d / "nowhere"),
        "directory": log.mkdir,
        "fifo": lambda: _os.mkfifo(log),
    }[kind]()
    res = runner.invoke(cli, ["verify-crc", str(d)])
    assert res.exit_code == 4
    assert "00000000000000000300.log" in res.stderr and "0 problems" not in res.stdout


def test_a_missing_path_does_not_stop_the_others(runner):
    res = runner.invoke(cli, ["verify-crc", str(_EXAMPLES / "codec-gzip-0"), "nonexist"])
    assert res.exit_code == 4
    assert res.stdout.splitlines()[-1].startswith("verify-crc: 1 file, 3 batches")
    assert "nonexist: no such file or directory" in res.stderr


@pytest.mark.parametrize("path", ["/etc/passwd", str(_EXAMPLES / "meta.properties")])
def test_a_file_that_is_not_a_segment_is_exit_4(runner, path):
    res = runner.invoke(cli, ["verify-crc", path])
    assert res.exit_code == 4 and "not a Kafka log segment" in res.stderr
    assert "trailing bytes" not in res.stdout
