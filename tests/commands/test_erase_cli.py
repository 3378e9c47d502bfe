"""`kafkalog erase`: every option, the refusals, the report, --dry-run, a rerun, several log
dirs, and the other copies it names, as a user runs it on the example log dir."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import iter_batches
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_lines import lines, of_kind, partitions, totals

GZIP = "codec-gzip-0"


def copy(tmp_path: Path, name: str = "logdir") -> Path:
    d = tmp_path / name
    shutil.copytree(EXAMPLES, d)
    (d / ".lock").unlink(missing_ok=True)
    return d


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def records(part: Path) -> list:
    return [
        r
        for log in sorted(part.glob("*.log"))
        for b in iter_batches(log.read_bytes())
        if not b.is_control
        for r in b.records()
    ]


def state(d: Path) -> dict:
    return {
        str(f.relative_to(d)): (f.read_bytes(), f.stat().st_mtime_ns)
        for f in sorted(d.rglob("*"))
        if f.is_file() and f.name != ".lock"
    }


def _hv(r, name):
    return [h.value for h in r.headers if h.key == name]


SELECTIONS = [
    (["--key", "k025"], lambda r: r.key == b"k025"),
    (["--key-hex", "6b303235", "--key", "k031"], lambda r: r.key in (b"k025", b"k031")),
    (["--key-prefix", "k02"], lambda r: r.key is not None and r.key.startswith(b"k02")),
    (["--key-prefix-hex", "6b3033"], lambda r: r.key is not None and r.key.startswith(b"k03")),
    (["--key-regex", "^k0[14]5$"], lambda r: r.key in (b"k015", b"k045")),
    (["--header", "h-idx"], lambda r: bool(_hv(r, "h-idx"))),
    (["--header", "h-idx=3", "--header", "h-idx=9"], lambda r: _hv(r, "h-idx") in ([b"3"], [b"9"])),
    (["--value-regex", "x{12}$"], lambda r: r.value is not None and r.value.endswith(b"x" * 12)),
    (["--offsets", "10-12", "--offsets", "40"], lambda r: 10 <= r.offset <= 12 or r.offset == 40),
    (  # different options AND'ed
        ["--key-prefix", "k0", "--header", "h-idx", "--offsets", "0-29"],
        lambda r: r.key is not None and r.offset <= 29 and bool(_hv(r, "h-idx")),
    ),
]


@pytest.mark.parametrize("args,want", SELECTIONS, ids=[" ".join(a) for a, _ in SELECTIONS])
def test_each_selection_option_erases_exactly_what_it_names(tmp_path, args, want):
    d = copy(tmp_path)
    part = d / GZIP
    before = records(part)
    expected = [r.offset for r in before if want(r)]
    assert expected, "the case selects something"
    dry = run("erase", d, "--topic", "codec-gzip", *args, "--dry-run", "--format", "json")
    assert dry.exit_code == 1, dry.output
    summary = partitions(dry.output)[GZIP]
    assert [r["offset"] for r in summary["erased_records"]] == expected
    r = run("erase", d, "--topic", "codec-gzip", *args)
    assert r.exit_code == 0, r.output
    assert f"{GZIP}: erased {len(expected)} record(s)" in r.output
    kept = records(part)
    assert [(x.offset, x.timestamp, x.key, x.value, x.headers) for x in kept] == [
        (x.offset, x.timestamp, x.key, x.value, x.headers)
        for x in before
        if x.offset not in expected
    ]
    assert run("verify-crc", part).exit_code == 0


def test_the_report_is_the_one_json_shape_with_a_sha256_per_record(tmp_path):
    d = copy(tmp_path)
    r = run("erase", d, "--topic", "codec-gzip", "--key", "k025", "--format", "json")
    assert r.exit_code == 0, r.output
    assert [o["kind"] for o in lines(r.output)] == ["partition", "log_dir", "totals"]
    s = partitions(r.output)[GZIP]
    assert s["status"] == "erased" and s["erased_offsets"] == [[25, 25]]
    assert re.fullmatch("[0-9a-f]{64}", s["erased_records"][0]["sha256"])
    assert s["segments_rewritten"] == [str(d / GZIP / "00000000000000000000.log")]
    assert s["quarantine"] is None and "not erased" in s["other_copies"]["replicas"]
    assert "gaps in the offsets" in s["consumers"]
    (log_dir,) = of_kind(r.output, "log_dir")
    assert log_dir["changed"][0]["action"] == "rewrite_segment"
    assert totals(r.output)["exit_code"] == 0 and totals(r.output)["quarantine"] == []
    assert not (tmp_path / ".kafkalog-quarantine").exists()  # erase keeps no copy
    # the report holds none of the erased data, not even the key asked for
    assert "k025" not in r.output and b"k025".hex() not in r.output
    assert s["selection"] == {"key_sha256": [hashlib.sha256(b"k025").hexdigest()]}


def test_dry_run_changes_nothing_and_a_rerun_changes_nothing(tmp_path):
    d = copy(tmp_path)
    before = state(d)
    r = run("erase", d, "--topic", "codec-gzip", "--key-prefix", "k02", "--dry-run")
    assert r.exit_code == 1 and "would erase 8 record(s) at offsets 21..26, 28..29" in r.output
    assert state(d) == before
    assert run("erase", d, "--topic", "codec-gzip", "--key-prefix", "k02").exit_code == 0
    after = state(d)
    assert after != before
    again = run("erase", d, "--topic", "codec-gzip", "--key-prefix", "k02")
    assert again.exit_code == 0 and "nothing matched" in again.output
    assert state(d) == after


def test_nothing_matched_is_exit_0_and_says_so(tmp_path):
    d = copy(tmp_path)
    before = state(d)
    r = run("erase", d, "--topic", "codec-gzip", "--key", "no-such-key")
    assert r.exit_code == 0 and f"{GZIP}: nothing matched: nothing erased" in r.output
    assert state(d) == before


def test_every_copy_given_is_erased_and_reported(tmp_path):
    a, b = copy(tmp_path, "broker1"), copy(tmp_path, "broker2")
    r = run("erase", a, b, "--topic", "codec-gzip", "--key", "k025", "--format", "json")
    assert r.exit_code == 0, r.output
    parts = of_kind(r.output, "partition")
    assert [(p["log_dir"], p["records_erased"]) for p in parts] == [(str(a), 1), (str(b), 1)]
    assert (a / GZIP / "00000000000000000000.log").read_bytes() == (
        b / GZIP / "00000000000000000000.log"
    ).read_bytes()


def test_partition_limits_it_to_the_partitions_named(tmp_path):
    d = copy(tmp_path)
    r = run("erase", d, "--topic", "codec-gzip", "--partition", "1", "--key", "k025")
    assert r.exit_code == 4, r.output  # no partition 1: as --partition everywhere


@pytest.mark.parametrize(
    "topic", ["__consumer_offsets", "__transaction_state", "__cluster_metadata"]
)
def test_internal_topics_are_refused(tmp_path, topic):
    d = copy(tmp_path)
    before = state(d)
    r = run("erase", d, "--topic", topic, "--offsets", "0-10")
    assert r.exit_code == 2
    assert r.stderr.startswith("kafkalog: refused: ") and len(r.stderr.splitlines()) == 1
    assert state(d) == before


@pytest.mark.parametrize(
    "args,why",
    [
        ([], "give at least one of"),
        (["--key-hex", "zz"], "not hex"),
        (["--offsets", "9-3"], "0 <= A <= B"),
        (["--key-regex", "("], "--key-regex"),
        (["--header", "=v"], "NAME=VALUE"),
    ],
)
def test_usage_errors(tmp_path, args, why):
    d = copy(tmp_path)
    r = run("erase", d, "--topic", "codec-gzip", *args)
    assert r.exit_code == 2 and why in r.output


def test_a_compacted_topic_says_consumers_are_not_told_unless_tombstone(tmp_path):
    d = copy(tmp_path)
    part = d / "compacted-0"
    (key,) = {r.key for r in records(part) if r.offset == 30}
    r = run(
        "erase", d, "--topic", "compacted", "--key-hex", key.hex(), "--dry-run", "--format", "json"
    )
    assert "are not told a key is gone" in partitions(r.output)["compacted-0"]["consumers"]
    r = run("erase", d, "--topic", "compacted", "--key-hex", key.hex(), "--tombstone")
    assert r.exit_code == 0, r.output
    last = max(x.offset for x in records(copy(tmp_path, "orig") / "compacted-0") if x.key == key)
    (tomb,) = [x for x in records(part) if x.key == key]
    assert (tomb.offset, tomb.value, tomb.headers) == (last, None, ())


def test_an_earlier_runs_quarantine_folder_holding_matches_is_named(tmp_path):
    d = copy(tmp_path)
    part = d / "multi-segment-0"
    assert run("delete-records", d, "--topic", "multi-segment", "--before", "300").exit_code == 0
    r = run("erase", d, "--topic", "multi-segment", "--key", "ms-0042", "--format", "json")
    assert r.exit_code == 0, r.output
    s = partitions(r.output)["multi-segment-0"]
    assert s["records_erased"] == 0  # the segment holding it is gone from the log dir...
    (held,) = s["other_copies"]["quarantine_folders"]  # ...but the quarantine holds it
    assert held["offsets"] == [[42, 42]]
    assert held["prune"].startswith(f"kafkalog quarantine prune {held['folder']}")
    assert run(*held["prune"].split()[1:]).exit_code == 0
    r = run("erase", d, "--topic", "multi-segment", "--key", "ms-0042", "--format", "json")
    assert partitions(r.output)["multi-segment-0"]["other_copies"]["quarantine_folders"] == []
    assert part.is_dir()


def test_a_kept_file_that_cannot_be_read_to_its_end_is_named_as_one_that_may_hold_them(tmp_path):
    d = copy(tmp_path)
    assert run("delete-records", d, "--topic", "multi-segment", "--before", "300").exit_code == 0
    (kept,) = (tmp_path / ".kafkalog-quarantine").rglob("00000000000000000000.log")
    os.truncate(kept, kept.stat().st_size - 7)  # the last batch torn
    r = run("erase", d, "--topic", "multi-segment", "--key", "ms-0042", "--format", "json")
    (held,) = partitions(r.output)["multi-segment-0"]["other_copies"]["quarantine_folders"]
    assert held["offsets"] == [[42, 42]]
    (why,) = held["not_searched"]
    assert why.startswith(f"{kept}: ")
    r = run("erase", d, "--topic", "multi-segment", "--key", "ms-0042")
    assert f"may still hold them (not searched): {kept}: " in r.output


def test_remote_segments_are_refused_without_local_only(tmp_path):
    from tests.ops.tiered_helpers import uploaded

    d = copy(tmp_path)
    uploaded(d, "multi-segment", 0, (0, 299))
    tiered = ["--topic-config", "multi-segment:remote.storage.enable=true"]
    before = state(d)
    r = run("erase", d, "--topic", "multi-segment", "--key", "ms-0442", *tiered)
    assert r.exit_code == 2, r.output
    assert "remote tier" in r.stderr and "--local-only" in r.stderr
    assert state(d) == before
    r = run(
        "erase", d, "--topic", "multi-segment", "--key", "ms-0442", *tiered, "--local-only",
        "--format", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    s = partitions(r.output)["multi-segment-0"]
    assert s["records_erased"] == 1 and "0..299" in s["other_copies"]["remote_tier"]


def test_overwrite_is_said_in_help_with_what_it_does_not_guarantee():
    r = run("erase", "--help")
    text = " ".join(r.output.split())
    for words in ("copy-on-write", "SSD", "snapshots", "NO copy", "quarantine", "time index"):
        assert words in text, words


def test_a_locked_log_dir_is_exit_5_and_unchanged(tmp_path):
    from tests.helpers.locks import hold_lock

    d = copy(tmp_path)
    before = state(d)
    holder = hold_lock(d / ".lock")
    try:
        r = run("erase", d, "--topic", "codec-gzip", "--key", "k025")
    finally:
        holder.kill()
        holder.wait()
    assert r.exit_code == 5, r.output
    assert state(d) == before


def test_a_locked_copy_is_skipped_and_the_others_are_erased(tmp_path):
    from tests.helpers.locks import hold_lock

    a, b = copy(tmp_path, "broker1"), copy(tmp_path, "broker2")
    before = state(a)
    holder = hold_lock(a / ".lock")
    try:
        r = run("erase", a, b, "--topic", "codec-gzip", "--key", "k025")
    finally:
        holder.kill()
        holder.wait()
    assert r.exit_code == 5, r.output
    assert r.stderr.startswith(f"kafkalog: {a}: skipped: ")
    assert state(a) == before and "codec-gzip-0: erased 1 record(s)" in r.output
    assert 25 not in [x.offset for x in records(b / GZIP)]


def test_report_appends_the_runs_lines(tmp_path):
    d = copy(tmp_path)
    report = tmp_path / "erase-report.jsonl"
    for _ in range(2):
        r = run("erase", d, "--topic", "codec-gzip", "--key", "k025", "--report", report)
        assert r.exit_code == 0, r.output
    runs = [json.loads(x) for x in report.read_text().splitlines()]
    assert [o["kind"] for o in runs] == ["partition", "log_dir", "totals"] * 2
    assert [o["records_erased"] for o in runs if o["kind"] == "partition"] == [1, 0]
