"""The end of a partition's log as the broker loads it, told alike by describe, get-offsets and
transactions: a damaged active segment (read up to its last valid batch, as LogSegment.recover
truncates it, the damage reported), a log start offset above the log end (LogLoader deletes every
segment), and the high watermark clamped into [log start, log end]. The expected offsets are the
broker's own, from the corpus cases' after/ dirs (Kafka 3.3.1)."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import FIXTURES

TORN_HW = FIXTURES / "offsets" / "torn-tail-hw"  # rec-none-0's torn active segment 725, HW 800
BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"


def invoke(*args):
    return CliRunner().invoke(cli, [*map(str, args)])


def described(*args) -> tuple[dict, object]:
    r = invoke("describe", *args, "--format", "json")
    (row,) = [o for o in map(json.loads, r.stdout.splitlines()) if o["kind"] == "partition"]
    return row, r


def warnings(r) -> list[str]:
    return [x for x in r.stderr.splitlines() if "note:" not in x]


def test_a_torn_last_batch_ends_the_log_and_its_time_index_entry_is_not_the_max(corpus_copy):
    # recover/torn-tail: rec-lz4-idem's last batch (193..199, at byte 14857) is cut short, and
    # the last index entries point into it. The broker truncates it on load: LEO 193, and its
    # rebuilt time index ends (1700000019200, 192)
    log_dir = corpus_copy / "broker" / "recover" / "torn-tail" / "before"
    log = log_dir / "rec-lz4-idem-0" / "00000000000000000000.log"
    row, r = described(log_dir)
    assert r.exit_code == 3
    assert (row["log_end_offset"], row["max_timestamp"], row["max_timestamp_offset"]) == (
        193,
        1700000019200,
        192,
    )
    damage = (
        f"{log}: byte 14857: 281 bytes after the last complete batch are not a whole batch "
        f"(a broker's recovery truncates them, as `kafkalog recover` does)"
    )
    assert row["problems"] == [damage]
    r = invoke("get-offsets", log_dir, "--time", "max-timestamp")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["rec-lz4-idem:0:192"]
    assert warnings(r) == [f"kafkalog: warning: {damage}"]
    assert invoke("get-offsets", log_dir, "--time", "latest").stdout.splitlines() == [
        "rec-lz4-idem:0:193"
    ]


def test_garbage_after_the_last_batch_does_not_hide_the_active_segment(corpus_copy):
    # recover/tail-garbage: 100 bytes that are not a batch after rec-none's segment 725. Its
    # facts are still told (the broker truncates the bytes and answers 799 for max-timestamp)
    log_dir = corpus_copy / "broker" / "recover" / "tail-garbage" / "before"
    row, r = described(log_dir)
    assert r.exit_code == 3
    assert (row["log_end_offset"], row["max_timestamp_offset"]) == (800, 799)
    assert row["problems"] == [
        f"{log_dir}/rec-none-0/00000000000000000725.log: byte 6169: "
        "Found record size -254896888 smaller than minimum record overhead (14)"
    ]


def test_the_high_watermark_is_clamped_to_the_log_end_by_all_three(tmp_path):
    # recover/torn-tail's rec-none-0: the checkpoint says 800, the torn batch 794..799 goes
    shutil.copytree(TORN_HW, tmp_path / "ld")
    log_dir = tmp_path / "ld"
    row, r = described(log_dir)
    assert (row["log_end_offset"], row["high_watermark"], row["high_watermark_checkpoint"]) == (
        794,
        794,
        800,
    )
    assert invoke("describe", log_dir).stdout.splitlines()[1].split("\t")[4:6] == ["794", "794"]
    r = invoke("get-offsets", log_dir)
    assert r.exit_code == 0 and r.stdout.splitlines() == ["rec-none:0:794"]
    r = invoke("transactions", log_dir, "--format", "json", "--now", "0")
    (t,) = map(json.loads, r.stdout.splitlines())
    assert (t["log_end_offset"], t["high_watermark"], t["last_stable_offset"]) == (794, 794, 794)
    assert warnings(r) == [
        f"kafkalog: {log_dir}/rec-none-0/00000000000000000725.log: byte 5706: 231 bytes "
        "after the last complete batch are not a whole batch (a broker's recovery "
        "truncates them, as `kafkalog recover` does)"
    ]


def test_a_log_start_above_the_log_end_is_the_empty_log_the_broker_loads(tmp_path):
    # formats/basic's codec-none-0 ends at 60; LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd
    # deletes its segments and starts an empty one at 100
    log_dir = tmp_path / "ld"
    shutil.copytree(BASIC / "codec-none-0", log_dir / "codec-none-0")
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\ncodec-none 0 100\n")
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\ncodec-none 0 60\n")
    before = sorted(p.name for p in (log_dir / "codec-none-0").iterdir())
    row, r = described(log_dir)
    assert (row["log_start_offset"], row["log_end_offset"], row["high_watermark"]) == (
        100,
        100,
        100,
    )
    assert row["problems"] == [
        f"{log_dir}/codec-none-0: the log start offset 100 (log-start-offset-checkpoint) is above the segments' "
        f"log end offset 60: the broker deletes every segment on load and starts an empty log at 100"
    ]
    for time, line in (("earliest", "codec-none:0:100"), ("latest", "codec-none:0:100")):
        r = invoke("get-offsets", log_dir, "--time", time)
        assert r.exit_code == 0 and r.stdout.splitlines() == [line]
        assert warnings(r) == [f"kafkalog: warning: {row['problems'][0]}"]
    r = invoke("get-offsets", log_dir, "--time", "max-timestamp")
    assert r.exit_code == 0 and r.stdout == ""
    assert "no offset: the broker deletes every segment on load" in r.stderr
    r = invoke("transactions", log_dir, "--format", "json", "--now", "0")
    (t,) = map(json.loads, r.stdout.splitlines())
    assert (t["log_start_offset"], t["log_end_offset"], t["high_watermark"]) == (100, 100, 100)
    assert sorted(p.name for p in (log_dir / "codec-none-0").iterdir()) == before  # read-only
    # delete-records would remove data on an offset the segments do not reach: it refuses
    r = invoke("delete-records", log_dir, "--before", "100")
    assert r.exit_code == 3, r.output
    assert (
        "delete-records changes nothing until the log start offset checkpoint and the segments agree"
        in r.output
    )
    assert sorted(p.name for p in (log_dir / "codec-none-0").iterdir()) == before


def test_a_batch_failing_its_crc_ends_the_log_only_when_the_broker_recovers_it(tmp_path):
    # without .kafka_cleanshutdown LogSegment.recover checks every CRC and truncates at the first
    # that does not match; after a clean shutdown readNextOffset walks the headers unchecked
    from tests.helpers import bad_inputs as B

    log = B.bad_crc(tmp_path)
    r = invoke("get-offsets", log.parent.parent, "--time", "latest", "--isolation-level", "none")
    assert r.exit_code == 0 and r.stdout.splitlines() == ["topic:0:3"]
    assert warnings(r) == [
        f"kafkalog: warning: {log}: byte 109: the batch of 109 bytes fails its CRC check"
    ]
    (log.parent.parent / ".kafka_cleanshutdown").write_bytes(b"")
    r = invoke("get-offsets", log.parent.parent, "--time", "latest", "--isolation-level", "none")
    assert r.exit_code == 0 and r.stdout.splitlines() == ["topic:0:6"] and warnings(r) == []
