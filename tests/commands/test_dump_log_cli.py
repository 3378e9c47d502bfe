"""dump-log beyond Kafka: JSON Lines, filters through the indexes, directories, errors."""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES


def lines(res):
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_json_batches_and_records_carry_the_documented_fields(runner):
    res = runner.invoke(
        cli, ["dump-log", str(EXAMPLES / "txn-0"), "--format", "json", "--deep-iteration"]
    )
    assert res.exit_code == 0, res.stderr
    objs = lines(res)
    assert objs[0] == {
        "kind": "file",
        "file": str(EXAMPLES / "txn-0" / "00000000000000000000.log"),
        "type": "log",
    }
    batch = next(o for o in objs if o["kind"] == "batch")
    assert list(batch)[:4] == ["kind", "file", "base_offset", "last_offset"]
    assert (
        batch["codec"] == "gzip"
        and batch["is_transactional"] is True
        and batch["crc"] == batch["computed_crc"]
    )
    record = next(o for o in objs if o["kind"] == "record")
    assert record == {
        "kind": "record",
        "topic": "txn",
        "partition": 0,
        "file": str(EXAMPLES / "txn-0" / "00000000000000000000.log"),
        "offset": 0,
        "timestamp": 1795247595747,
        "timestamp_type": "CreateTime",
        "key": "t-commit-0",
        "value": "txn-commit-0",
        "headers": [],
        "sequence": 0,
        "base_offset": 0,
        "producer_id": 1,
        "producer_epoch": 0,
        "is_transactional": True,
        "is_control": False,
    }
    markers = [o["control"] for o in objs if o["kind"] == "record" and o["is_control"]]
    assert {m["type"] for m in markers} == {"COMMIT", "ABORT"}


@pytest.mark.parametrize(
    "encoding,expected", [("utf8", "k003"), ("hex", "6b303033"), ("base64", "azAwMw==")]
)
def test_payload_encoding_applies_to_keys_values_and_headers(runner, encoding, expected):
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(EXAMPLES / "codec-zstd-0"),
            "--format",
            "json",
            "--print-data-log",
            "--key",
            "k003",
            "--payload-encoding",
            encoding,
        ],
    )
    recs = [o for o in lines(res) if o["kind"] == "record"]
    assert [r["key"] for r in recs] == [expected]


def test_from_offset_starts_at_the_batch_holding_it_in_the_right_segment(runner):
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(EXAMPLES / "multi-segment-0"),
            "--from-offset",
            "450",
            "--to-offset",
            "452",
            "--deep-iteration",
        ],
    )
    assert res.exit_code == 0
    out = res.stdout.splitlines()
    # the segments before the one holding 450 are not even opened
    assert out[0].endswith("00000000000000000300.log") and out[1] == "Log starting offset: 300"
    assert out[2].startswith("baseOffset: 450 lastOffset: 474")
    assert [line.split()[2] for line in out[3:]] == ["450", "451", "452"]


def test_time_filter_keeps_only_records_in_range(runner):
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(EXAMPLES / "multi-segment-0"),
            "--format",
            "json",
            "--from-time",
            "1700000100000",
            "--to-time",
            "1970-01-01T00:00:00Z",
            "--deep-iteration",
        ],
    )
    assert [o for o in lines(res) if o["kind"] == "record"] == []
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(EXAMPLES / "multi-segment-0"),
            "--format",
            "json",
            "--from-time",
            "2023-11-14T22:14:20Z",
            "--to-time",
            "1700000062000",
            "--deep-iteration",
        ],
    )
    recs = [o for o in lines(res) if o["kind"] == "record"]
    assert recs and all(1700000060000 <= r["timestamp"] <= 1700000062000 for r in recs)


def test_limit_counts_records_across_files(runner):
    res = runner.invoke(
        cli, ["dump-log", str(EXAMPLES), "--format", "json", "--deep-iteration", "--limit", "7"]
    )
    assert res.exit_code == 0
    assert len([o for o in lines(res) if o["kind"] == "record"]) == 7


def test_a_log_dir_expands_to_every_partitions_logs(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES)])
    dumped = [line.split()[1] for line in res.stdout.splitlines() if line.startswith("Dumping ")]
    assert any("multi-segment-0/00000000000000000300.log" in d for d in dumped)
    assert len(dumped) >= 16


def test_offsets_decoder_in_json_gives_structured_records(runner):
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(EXAMPLES / "__consumer_offsets-0"),
            "--format",
            "json",
            "--offsets-decoder",
        ],
    )
    decoded = [o["decoded"] for o in lines(res) if o["kind"] == "record"]
    assert decoded[0]["type"] == "group_metadata" and decoded[0]["key"]["group"] == "oracle-group"


def test_missing_file_is_one_line_and_exit_4(runner, tmp_path):
    missing = tmp_path / "00000000000000000000.log"
    res = runner.invoke(cli, ["dump-log", str(missing)])
    assert res.exit_code == 4
    assert res.stderr.strip().splitlines() == [f"kafkalog: {missing}: no such file"]


def test_a_log_not_named_by_an_offset_fails_as_kafka_does(runner, tmp_path):
    f = tmp_path / "nope.log"
    f.write_bytes(b"")
    res = runner.invoke(cli, ["dump-log", str(f)])
    assert res.exit_code == 3 and res.stdout == f"Dumping {f}\n"
    assert "does not start with an offset" in res.stderr


def test_no_paths_is_a_usage_error(runner):
    res = runner.invoke(cli, ["dump-log"])
    assert res.exit_code == 2 and "Missing required argument" in res.stderr


def test_a_corrupt_size_prints_what_kafka_printed_then_one_line(runner, tmp_path):
    src = (EXAMPLES / "codec-none-0" / "00000000000000000000.log").read_bytes()
    bad = tmp_path / "00000000000000000000.log"
    bad.write_bytes(src + b"\x00" * 8 + b"\xff\xff\xff\x00" + b"\x00" * 10)
    res = runner.invoke(cli, ["dump-log", str(bad)])
    assert res.exit_code == 3
    assert res.stdout.count("isvalid: true") == res.stdout.count("baseOffset:") >= 1
    assert "invalid bytes" not in res.stdout
    assert res.stderr.strip() == (
        f"kafkalog: {bad}: byte {len(src)}: Found record size -256 smaller than "
        "minimum record overhead (14)"
    )


def test_integer_decoder_and_unknown_decoder(runner, tmp_path):
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(
        build_v2_batch(
            [SimpleRecord(b"\x00\x00\x00\x2a", b"\x00\x00\x00\x00\x00\x00\x00\x07", 5)], 0
        )
    )
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(f),
            "--key-decoder-class",
            "org.apache.kafka.tools.api.IntegerDecoder",
            "--value-decoder-class",
            "kafka.serializer.LongDecoder",
        ],
    )
    assert res.stdout.splitlines()[-1].endswith("key: 42 payload: 7")
    res = runner.invoke(cli, ["dump-log", str(f), "--key-decoder-class", "com.example.Nope"])
    assert res.exit_code == 2 and "unknown decoder class" in res.stderr


# ------------------------------------------------------------------ untrusted indexes, paths, options


@pytest.fixture
def multi(tmp_path):
    d = tmp_path / "multi-segment-0"
    shutil.copytree(EXAMPLES / "multi-segment-0", d)
    return d


def _offsets(res):
    return [o["offset"] for o in lines(res) if o["kind"] == "record"]


def test_an_index_entry_pointing_mid_batch_is_not_trusted(runner, multi):
    idx = multi / "00000000000000000300.index"
    raw = bytearray(idx.read_bytes())
    raw[0:8] = struct.pack(">ii", 49, 100)
    idx.write_bytes(bytes(raw))
    res = runner.invoke(cli, ["dump-log", str(multi), "--from-offset", "360"])
    assert res.exit_code == 0
    assert any(
        line.startswith("baseOffset: 350 lastOffset: 374") for line in res.stdout.splitlines()
    )
    assert "00000000000000000300.index" in res.stderr and "scanning" in res.stderr
    res = runner.invoke(
        cli,
        ["dump-log", str(multi), "--from-offset", "360", "--format", "json", "--deep-iteration"],
    )
    assert _offsets(res)[0] == 360 and _offsets(res)[-1] == 599


def test_a_garbage_time_index_does_not_hide_batches(runner, multi):
    want = _offsets(
        runner.invoke(
            cli,
            [
                "dump-log",
                str(multi),
                "--from-time",
                "1700000400000",
                "--format",
                "json",
                "--deep-iteration",
            ],
        )
    )
    assert want
    (multi / "00000000000000000300.timeindex").write_bytes(os.urandom(132))
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(multi),
            "--from-time",
            "1700000400000",
            "--format",
            "json",
            "--deep-iteration",
        ],
    )
    assert res.exit_code == 0 and _offsets(res) == want


def test_a_13_byte_garbage_index_falls_back_to_a_scan(runner, multi):
    (multi / "00000000000000000300.index").write_bytes(b"\x9f\xd2\x7a\x12\x80\x00\x00\x01garba")
    res = runner.invoke(cli, ["dump-log", str(multi), "--from-offset", "400"])
    assert res.exit_code == 0, res.stderr
    assert "internal error" not in res.stderr
    assert any(
        line.startswith("baseOffset: 400 lastOffset: 424") for line in res.stdout.splitlines()
    )


@pytest.mark.parametrize("kind", ["dangling", "directory", "fifo"])
def test_an_unreadable_segment_in_a_partition_is_exit_4(runner, multi, kind):
    log = multi / "00000000000000000300.log"
    log.unlink()
    if kind == "dangling":
        log.symlink_to(multi / "nowhere")
    elif kind == "directory":
        log.mkdir()
    else:
        os.mkfifo(log)
    res = runner.invoke(cli, ["dump-log", str(multi)])
    assert res.exit_code == 4
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and "00000000000000000300.log" in err[0]


@pytest.mark.parametrize("path", ["nonexist", "nonexist.log", "recovery-point-offset-checkpoint"])
def test_missing_or_suffixless_paths_are_exit_4(runner, tmp_path, path):
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    res = runner.invoke(cli, ["dump-log", str(tmp_path / path)])
    assert res.exit_code == 4, res.stderr
    assert res.stdout.startswith("Dumping ") and len(res.stderr.strip().splitlines()) == 1


def test_an_unknown_suffix_is_ignored_as_kafka_does(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "meta.properties")])
    assert res.exit_code == 0 and res.stderr.startswith("Ignoring unknown file")


def test_option_checks(runner):
    d = str(EXAMPLES / "codec-gzip-0")
    assert (
        runner.invoke(cli, ["dump-log", d, "--from-offset", "500", "--to-offset", "100"]).exit_code
        == 2
    )
    assert runner.invoke(cli, ["dump-log", d, "--max-bytes", "-1"]).exit_code == 2
    assert runner.invoke(cli, ["dump-log", d, "--key-decoder-class", "Foo"]).exit_code == 2
    res = runner.invoke(cli, ["dump-log", d, "--payload-encoding", "hex"])
    assert res.exit_code == 0 and "applies to --format json only" in res.stderr
    assert "ISO-8601 without an offset: UTC" in " ".join(
        runner.invoke(cli, ["dump-log", "--help"]).stdout.split()
    )


@pytest.mark.parametrize("fmt", ["kafka", "json"])
def test_a_decoder_error_names_the_batch_position_in_the_log(runner, fmt):
    res = runner.invoke(
        cli, ["dump-log", str(EXAMPLES / "codec-gzip-0"), "--offsets-decoder", "--format", fmt]
    )
    assert res.exit_code == 3
    # the records before it have keys of no record type Kafka knows (4.2 prints a line for each)
    assert "00000000000000000000.log: byte 0: record at offset 6: " in res.stderr


def test_a_newline_in_a_file_name_stays_on_one_line(runner, tmp_path):
    bad = tmp_path / "a\nb.log"
    res = runner.invoke(cli, ["dump-log", str(bad), "--format", "json"])
    assert res.exit_code == 4
    assert len(res.stderr.strip().splitlines()) == 1 and "a\\nb.log" in res.stderr
