"""Issue 26's acceptance: the seven incidents of an on-call night, each on a copy of
examples/logdir, solved with the installed `kafkalog` and only the commands README.md shows
(its "Which command do I want?" table and Quick start), checking what the operator checks."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.helpers.e2e import _exe
from tests.helpers.paths import EXAMPLES
from tests.helpers.paths import REPO as ROOT

README = (ROOT / "README.md").read_text()
pytestmark = pytest.mark.e2e


def kafkalog(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_exe(), *map(str, args)], capture_output=True, text=True, timeout=120, **kw
    )


def readme_shows(command: str) -> None:
    """The incident is solved with a command the README shows (placeholders as it writes them)."""
    assert command in README, f"README.md does not show `{command}`"


def copy(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name / "data"
    shutil.copytree(EXAMPLES, d)
    return d


def du(path: Path) -> int:
    return int(
        subprocess.run(
            ["du", "-sB1", str(path)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )


def server_properties(tmp_path: Path, log_dir: Path) -> Path:
    """The broker's settings: Kafka's defaults, a week's retention."""
    f = tmp_path / "server.properties"
    f.write_text(
        f"process.roles=broker,controller\nnode.id=1\nlog.dirs={log_dir}\nlog.retention.hours=168\n"
    )
    return f


def records(log_dir: Path, *args) -> list[dict]:
    p = kafkalog("dump-log", log_dir, "--format", "json", "--deep-iteration", *args)
    assert p.returncode == 0, p.stderr
    return [o for o in map(json.loads, p.stdout.splitlines()) if o.get("kind") == "record"]


def test_1_a_power_cut(tmp_path):
    """A flipped byte in one segment, a torn last batch in another, no clean-shutdown marker:
    verify-crc names both, recover removes them, verify-crc finds nothing left."""
    d = copy(tmp_path, "power-cut")
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    seg = d / "codec-none-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    last = sorted((d / "multi-segment-0").glob("*.log"))[-1]
    os.truncate(last, last.stat().st_size - 30)

    readme_shows("kafkalog verify-crc PATH")
    p = kafkalog("verify-crc", d)
    assert p.returncode == 1
    assert f"{seg}: byte " in p.stdout and "CRC-32C mismatch" in p.stdout
    assert f"{last}: byte " in p.stdout and "not a complete batch" in p.stdout

    readme_shows("kafkalog recover LOGDIR [--dry-run]")
    p = kafkalog("recover", "--dry-run", d)
    assert p.returncode == 1  # changes pending
    assert "offsets 20..39 are damaged" in p.stdout and "--salvage keeps those" in p.stdout
    p = kafkalog("recover", d)
    assert p.returncode == 0, p.stderr
    summary = p.stdout.splitlines()[-1]
    assert (
        summary.startswith("recover: 1 log dir, 14 partitions, ")
        and " held in the quarantine " in summary
    )
    p = kafkalog("verify-crc", d)
    assert p.returncode == 0 and " 0 problems " in p.stdout  # the damage is gone
    folder = Path(summary.rsplit(" ", 1)[1])
    p = kafkalog("quarantine", "list", d)  # and kept, to be restored
    assert p.returncode == 0 and str(folder) in p.stdout and " recover " in p.stdout


def test_2_a_full_disk(tmp_path):
    """The broker stopped on a full disk: retain frees by the topics' retention, without writing
    first; the bytes it says it freed are the bytes `du` no longer counts."""
    d = copy(tmp_path, "full-disk")
    props = server_properties(tmp_path, d)
    readme_shows("kafkalog retain LOGDIR --no-quarantine --server-properties server.properties")
    before = du(d)
    p = kafkalog("retain", d, "--no-quarantine", "--server-properties", props, "--format", "json")
    assert p.returncode == 0, p.stderr
    totals = json.loads(p.stdout.splitlines()[-1])
    assert totals["kind"] == "totals" and totals["segments_deleted"] > 0
    assert totals["freed_on_disk"] == before - du(d) > 0
    assert totals["held_in_quarantine"] == 0 and totals["quarantine"] == []
    assert not (d / "multi-segment-0" / "00000000000000000000.log").exists()


def test_3_a_vanished_key(tmp_path):
    """Where did key k003 go? Every record found names its topic and partition."""
    d = copy(tmp_path, "key")
    readme_shows(
        "kafkalog dump-log examples/logdir/codec-zstd-0 --format json --print-data-log --key k003 | jq .value"
    )
    p = kafkalog("dump-log", d, "--format", "json", "--print-data-log", "--key", "k003")
    assert p.returncode == 0, p.stderr
    found = [o for o in map(json.loads, p.stdout.splitlines()) if o.get("kind") == "record"]
    assert found and all(o["key"] == "k003" for o in found)
    where = {(o["topic"], o["partition"]) for o in found}
    assert ("codec-zstd", 0) in where and len(where) == len(found)  # each copy told apart
    assert all(isinstance(o["value"], str) for o in found)  # `| jq .value` shows the text


def test_4_a_groups_lag(tmp_path):
    """How far behind is oracle-group, with the brokers down?"""
    d = copy(tmp_path, "lag")
    readme_shows("kafkalog consumer-groups LOGDIR... [--group G]")
    p = kafkalog("consumer-groups", d, "--group", "oracle-group")
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith("oracle-group ")]
    assert rows == [["oracle-group", "codec-none", "0", "60", "60", "0", "-", "-", "-"]]


def test_5_a_stuck_transaction(tmp_path):
    """A producer began a transaction two hours ago and never ended it: the last stable offset
    is stuck; --find-hanging names it (exit 1)."""
    d = copy(tmp_path, "stuck")
    two_hours_ago = int(
        (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=2)).timestamp() * 1000
    )
    batch = build_v2_batch(
        [SimpleRecord(key=b"k", value=b"never committed", timestamp=two_hours_ago)],
        15,
        producer_id=4242,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    with open(d / "txn-0" / "00000000000000000000.log", "ab") as f:
        f.write(batch)
    hw = d / "replication-offset-checkpoint"
    hw.write_text(hw.read_text().replace("txn 0 15\n", "txn 0 16\n"))
    readme_shows("kafkalog transactions LOGDIR [--find-hanging --max-age 1h]")
    p = kafkalog("transactions", d, "--find-hanging", "--max-age", "1h")
    assert p.returncode == 1, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()[1:]]
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [("txn", "0", "4242", "15")]


def test_6_last_weeks_data_to_parquet(tmp_path):
    """The txn topic's last week as a read_committed consumer reads it: no transaction markers,
    no aborted record."""
    pq = pytest.importorskip("pyarrow.parquet")
    d = copy(tmp_path, "parquet")
    raw = records(d, "--topic", "txn")
    newest = max(o["timestamp"] for o in raw)
    since = dt.datetime.fromtimestamp(newest / 1000 - 7 * 86400, dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    readme_shows(
        "kafkalog export LOGDIR --to parquet OUT --from-time ISO --isolation-level read_committed"
    )
    out = tmp_path / "last-week"
    p = kafkalog(
        "export",
        d,
        "--topic",
        "txn",
        "--to",
        "parquet",
        out,
        "--from-time",
        since,
        "--isolation-level",
        "read_committed",
    )
    assert p.returncode == 0, p.stderr
    rows = pq.read_table(out).to_pylist()
    assert sorted(r["offset"] for r in rows) == [
        0,
        1,
        2,
        3,
        4,
        11,
        12,
        13,
    ]  # 5, 10, 14 markers; 6..9 aborted
    committed = {o["offset"]: o["value"] for o in raw if o["offset"] in (0, 1, 2, 3, 4, 11, 12, 13)}
    assert {r["offset"]: r["value"] for r in rows} == {k: v.encode() for k, v in committed.items()}


def test_7_a_cron_job(tmp_path):
    """Hourly retention under cron: quiet on success, one report file that every run appends
    to, each run told apart by its id and time, with its totals."""
    d = copy(tmp_path, "cron")
    props = server_properties(tmp_path, d)
    report = tmp_path / "kafkalog-retain.jsonl"
    readme_shows(
        "kafkalog retain LOGDIR --no-quarantine --server-properties server.properties --report FILE"
    )
    before = du(d)
    for _ in range(2):
        p = kafkalog(
            "retain", d, "--no-quarantine", "--server-properties", props, "--report", report
        )
        assert (p.returncode, p.stdout, p.stderr) == (0, "", "")  # cron mails nothing
    runs: dict[str, list[dict]] = {}
    for line in map(json.loads, report.read_text().splitlines()):
        runs.setdefault(line["run_id"], []).append(line)
    first, second = runs.values()
    assert [o["kind"] for o in first][-1] == [o["kind"] for o in second][-1] == "totals"
    assert first[-1]["time"] < second[0]["time"]
    assert first[-1]["freed_on_disk"] == before - du(d) > 0
    assert second[-1]["freed_on_disk"] == 0 and second[-1]["segments_deleted"] == 0
