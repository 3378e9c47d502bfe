"""`kafkalog get-offsets`: kafka-get-offsets' lines, JSON, the --time forms, bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers import bad_inputs as B
from tests.helpers.bad_inputs import LOG_CASES, run
from tests.helpers.file_states import checkpoint
from tests.helpers.paths import CORPUS, EXAMPLES

TS = CORPUS / "broker" / "formats" / "ts-nonmonotonic" / "before"
PARTITIONS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())


def invoke(*args):
    return CliRunner().invoke(cli, ["get-offsets", *map(str, args)])


def lines(r) -> dict[str, int]:
    out = {}
    for line in r.stdout.splitlines():
        topic, partition, offset = line.rsplit(":", 2)
        out[f"{topic}-{partition}"] = int(offset)
    return out


def test_latest_is_the_high_watermark_of_the_checkpoint_and_earliest_the_log_start():
    r = invoke(EXAMPLES)
    assert r.exit_code == 0, r.output
    hws = checkpoint(EXAMPLES, "replication-offset-checkpoint")
    got = lines(r)
    assert list(got) == PARTITIONS  # kafka-get-offsets' order: topic, then partition
    assert {k: v for k, v in got.items() if k in hws} == hws
    # __cluster_metadata has no entry there: its log end offset, and a note says so
    assert got["__cluster_metadata-0"] == 227
    assert r.stderr.splitlines() == [
        "kafkalog: note: __cluster_metadata-0: no high watermark in "
        "replication-offset-checkpoint: the log end offset stands in for it"
    ]
    r = invoke(EXAMPLES, "--time", "earliest", "--exclude-internal-topics")
    assert r.exit_code == 0 and r.stderr == ""
    assert lines(r) == {p: 0 for p in PARTITIONS if not p.startswith("__")}


@pytest.mark.parametrize("spelling", ["-2", "earliest"])
def test_kafka_get_offsets_numbers_are_taken(spelling):
    assert lines(invoke(EXAMPLES / "codec-none-0", "--time", spelling)) == {"codec-none-0": 0}


def test_max_timestamp_and_a_time_in_ms_or_iso_8601():
    assert lines(invoke(EXAMPLES / "codec-none-0", "--time", "max-timestamp")) == {
        "codec-none-0": 59
    }
    assert lines(invoke(EXAMPLES / "codec-none-0", "--time", "-3")) == {"codec-none-0": 59}
    by_ms = invoke(EXAMPLES / "codec-none-0", "--time", "1700000000030")
    by_iso = invoke(EXAMPLES / "codec-none-0", "--time", "2023-11-14T22:13:20.030Z")
    naive = invoke(EXAMPLES / "codec-none-0", "--time", "2023-11-14T22:13:20.030")
    offset = invoke(EXAMPLES / "codec-none-0", "--time", "2023-11-14T23:13:20.030+01:00")
    assert lines(by_ms) == lines(by_iso) == lines(naive) == lines(offset) == {"codec-none-0": 30}


def test_no_offset_prints_no_line_as_kafka_get_offsets_and_json_says_why():
    r = invoke(EXAMPLES, "--topic", "codec-*", "--time", "1900000000000")
    assert r.exit_code == 0 and r.stdout == ""
    assert (
        len(r.stderr.splitlines()) == 5
        and "no offset: no segment has a largest timestamp >= 1900000000000" in r.stderr
    )
    r = invoke(EXAMPLES / "codec-gzip-0", "--time", "1900000000000", "--format", "json")
    (obj,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert (
        obj["offset"] is None
        and obj["timestamp"] is None
        and obj["reason"].startswith("no segment")
    )
    assert obj["time"] == "1900000000000" and obj["isolation_level"] == "read_uncommitted"


def test_json_names_the_sources():
    r = invoke(TS, "--time", "max-timestamp", "--format", "json")
    assert r.exit_code == 0, r.output
    objs = {o["topic"]: o for o in map(json.loads, r.stdout.splitlines())}
    assert set(objs) == {"ts-jumble", "ts-jumble-zstd"}
    o = objs["ts-jumble"]
    assert (
        o["time"] == "max-timestamp"
        and o["last_fetchable_offset"] == 1200
        and o["high_watermark_known"]
    )
    assert o["last_fetchable_source"] == "high watermark (replication-offset-checkpoint)"
    assert o["timestamp"] > 0 and 0 <= o["offset"] < 1200
    r = invoke(TS, "--isolation-level", "none", "--format", "json", "--topic", "ts-jumble")
    (o,) = map(json.loads, r.stdout.splitlines())
    assert (o["offset"], o["source"], o["isolation_level"]) == (1200, "log end offset", "none")


@pytest.mark.parametrize("bad", ["yesterday", "-7", "2024-13-01"])
def test_a_time_that_is_not_a_time_is_a_usage_error(bad):
    r = invoke(EXAMPLES, "--time", bad)
    assert r.exit_code == 2 and "--time" in r.stderr and r.stdout == ""


def test_paths_and_filters_that_match_nothing(tmp_path):
    r = invoke(tmp_path / "nope")
    assert r.exit_code == 4
    assert r.stderr.strip().splitlines() == [
        f"kafkalog: {tmp_path / 'nope'}: not a directory (give a log dir or a partition dir)"
    ]
    r = invoke(EXAMPLES, "--partition", "7")
    assert r.exit_code == 4 and "no partition dir matches --partition 7" in r.stderr


@pytest.mark.parametrize("case", LOG_CASES)
def test_bad_segments_never_give_a_traceback(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    for time in ("latest", "max-timestamp", "1700000000001"):
        r = run("get-offsets", log.parent, "--time", time)
        assert r.exit_code in (0, 3), r.output
        errors = [x for x in r.stderr.splitlines() if "note:" not in x]
        if r.exit_code == 3 or errors:  # an error, or the warning of a damaged active segment
            (line,) = errors
            assert line.startswith(
                (f"kafkalog: {log}: byte ", f"kafkalog: warning: {log}: byte ")
            ), line


def test_a_damaged_tail_is_answered_as_the_brokers_recovery_leaves_it_with_a_warning(corpus_copy):
    # recover/tail-garbage: 100 bytes that are not a batch after rec-none's last batch. The broker
    # truncates them on load and answers 799 (its after/ time index ends at offset 799).
    log_dir = corpus_copy / "broker" / "recover" / "tail-garbage" / "before"
    r = invoke(log_dir, "--time", "max-timestamp", "--topic", "rec-none")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["rec-none:0:799"]
    assert [x for x in r.stderr.splitlines() if "note:" not in x] == [
        f"kafkalog: warning: {log_dir}/rec-none-0/00000000000000000725.log: byte 6169: "
        "Found record size -254896888 smaller than minimum record overhead (14)"
    ]


def test_a_future_dir_is_not_answered_from_and_log_dirs_are_merged_in_order(tmp_path):
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(EXAMPLES, a)
    b.mkdir()
    shutil.copy(EXAMPLES / "replication-offset-checkpoint", b)
    (a / "codec-none-0").rename(b / "codec-none-0")
    shutil.copytree(
        EXAMPLES / "codec-gzip-0", b / "codec-gzip-0.0123456789abcdef0123456789abcdef-future"
    )
    r = invoke(a, b, "--topic", "codec-*")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "codec-gzip:0:60",
        "codec-lz4:0:60",
        "codec-none:0:60",
        "codec-snappy:0:60",
        "codec-zstd:0:60",
    ]
    assert "-future" in r.stderr and "not read" in r.stderr
