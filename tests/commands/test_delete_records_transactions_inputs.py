"""delete-records and transactions on damaged segments (tests/helpers/bad_inputs) and on every log dir a
real broker wrote (tests/fixtures/broker): never a traceback, a documented exit code, one
`kafkalog:` line naming the file on failure, and on real log dirs Kafka's invariants."""

import json
import shutil

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers import bad_inputs as B
from tests.helpers.bad_inputs import LOG_CASES
from tests.helpers.paths import BROKER
from tests.helpers.run_lines import of_kind

LOG_DIRS = sorted(
    p for p in BROKER.glob("*/*") if p.is_dir() and p.name.startswith(("before", "after"))
)


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output and "internal error" not in r.stderr
    return r


@pytest.mark.parametrize("case", LOG_CASES)
def test_damaged_segments(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    for args in (
        ["transactions", log.parent, "--format", "json"],
        ["delete-records", log.parent, "--before", "1", "--dry-run"],
        ["delete-records", log.parent, "--before", "1", "--no-quarantine"],
    ):
        r = run(*args)
        assert r.exit_code in ((0, 1, 2, 3, 4) if "--dry-run" in args else (0, 2, 3, 4)), (
            args,
            r.exit_code,
            r.stderr,
        )
        if args[0] == "transactions" and case == "text":  # nothing in it is a batch
            assert r.exit_code == 3 and ": byte 0: " in r.stderr
        if r.exit_code in (3, 4):
            lines = r.stderr.strip().splitlines()
            assert (
                len(lines) == 1 and lines[0].startswith("kafkalog: ") and "topic-0" in lines[0]
            ), r.stderr


@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=[f"{p.parent.name}/{p.name}" for p in LOG_DIRS])
def test_every_broker_log_dir(tmp_path, log_dir):
    r = run("transactions", log_dir, "--format", "json")
    # 3: a damaged active segment (recover's cases), named with its byte, and shown up to it
    assert r.exit_code in (0, 3), r.stderr
    if r.exit_code:
        assert all(
            line.startswith(f"kafkalog: {log_dir}/") and ".log: byte " in line
            for line in r.stderr.splitlines()
            if not line.startswith("kafkalog: note: ")
        )  # expired producers are noted (issue 26, 10)
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert rows
    for x in rows:
        bound = x["high_watermark"] if x["high_watermark"] is not None else x["log_end_offset"]
        assert x["log_start_offset"] <= x["last_stable_offset"] <= bound <= x["log_end_offset"], x
    d = tmp_path / "logdir"
    shutil.copytree(log_dir, d)
    for f in d.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    r = run("delete-records", d, "--before", "-1", "--no-quarantine", "--format", "json")
    # 2: a compacted topic (POLICY_VIOLATION); 3: a damaged active segment (recover first);
    # 7: no high watermark for -1 to stand for
    assert r.exit_code in (0, 2, 3, 7), r.stderr
    for s in of_kind(r.stdout, "partition"):
        if s["status"] in ("deleted", "raised", "nothing to do"):
            assert s["new_log_start_offset"] == s["high_watermark"], s
        elif s["status"] == "refused":
            assert s["high_watermark"] is None, s
        elif s["status"] == "error" and s["exit_code"] == 3:
            assert f"kafkalog: {d / s['partition']}/" in r.stderr and ": byte " in r.stderr, s
        else:
            assert s["status"] == "skipped" or s.get("error") == "POLICY_VIOLATION", s
