"""dump-log beyond Kafka: JSON Lines, filters through the indexes, directories, errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalog_cli.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "logdir"


def lines(res):
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_json_batches_and_records_carry_the_documented_fields(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "txn-0"), "--format", "json", "--deep-iteration"])
    assert res.exit_code == 0, res.stderr
    objs = lines(res)
    assert objs[0] == {"kind": "file", "file": str(EXAMPLES / "txn-0" / "00000000000000000000.log"), "type": "log"}
    batch = next(o for o in objs if o["kind"] == "batch")
    assert list(batch)[:4] == ["kind", "file", "base_offset", "last_offset"]
    assert batch["codec"] == "gzip" and batch["is_transactional"] is True and batch["crc"] == batch["computed_crc"]
    record = next(o for o in objs if o["kind"] == "record")
    assert record == {"kind": "record", "offset": 0, "timestamp": 1795247595747, "timestamp_type": "CreateTime",
                      "key": "t-commit-0", "value": "txn-commit-0", "headers": [], "sequence": 0, "base_offset": 0,
                      "producer_id": 1, "producer_epoch": 0, "is_transactional": True, "is_control": False}
    markers = [o["control"] for o in objs if o["kind"] == "record" and o["is_control"]]
    assert {m["type"] for m in markers} == {"COMMIT", "ABORT"}


@pytest.mark.parametrize("encoding,expected", [("utf8", "k003"), ("hex", "6b303033"), ("base64", "azAwMw==")])
def test_payload_encoding_applies_to_keys_values_and_headers(runner, encoding, expected):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "codec-zstd-0"), "--format", "json", "--print-data-log",
                              "--key", "k003", "--payload-encoding", encoding])
    recs = [o for o in lines(res) if o["kind"] == "record"]
    assert [r["key"] for r in recs] == [expected]


def test_from_offset_starts_at_the_batch_holding_it_in_the_right_segment(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "multi-segment-0"), "--from-offset", "450",
                              "--to-offset", "452", "--deep-iteration"])
    assert res.exit_code == 0
    out = res.stdout.splitlines()
    # the segments before the one holding 450 are not even opened
    assert out[0].endswith("00000000000000000300.log") and out[1] == "Log starting offset: 300"
    assert out[2].startswith("baseOffset: 450 lastOffset: 474")
    assert [line.split()[2] for line in out[3:]] == ["450", "451", "452"]


def test_time_filter_keeps_only_records_in_range(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "multi-segment-0"), "--format", "json",
                              "--from-time", "1700000100000", "--to-time", "1970-01-01T00:00:00Z", "--deep-iteration"])
    assert [o for o in lines(res) if o["kind"] == "record"] == []
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "multi-segment-0"), "--format", "json",
                              "--from-time", "2023-11-14T22:14:20Z", "--to-time", "1700000062000", "--deep-iteration"])
    recs = [o for o in lines(res) if o["kind"] == "record"]
    assert recs and all(1700000060000 <= r["timestamp"] <= 1700000062000 for r in recs)


def test_limit_counts_records_across_files(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES), "--format", "json", "--deep-iteration", "--limit", "7"])
    assert res.exit_code == 0
    assert len([o for o in lines(res) if o["kind"] == "record"]) == 7


def test_a_log_dir_expands_to_every_partitions_logs(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES)])
    dumped = [line.split()[1] for line in res.stdout.splitlines() if line.startswith("Dumping ")]
    assert any("multi-segment-0/00000000000000000300.log" in d for d in dumped)
    assert len(dumped) >= 16


def test_offsets_decoder_in_json_gives_structured_records(runner):
    res = runner.invoke(cli, ["dump-log", str(EXAMPLES / "__consumer_offsets-0"), "--format", "json",
                              "--offsets-decoder"])
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
    assert res.stderr.strip() == (f"kafkalog: {bad}: byte {len(src)}: Found record size -256 smaller than "
                                  "minimum record overhead (14)")


def test_integer_decoder_and_unknown_decoder(runner, tmp_path):
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(build_v2_batch([SimpleRecord(b"\x00\x00\x00\x2a", b"\x00\x00\x00\x00\x00\x00\x00\x07", 5)], 0))
    res = runner.invoke(cli, ["dump-log", str(f), "--key-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder",
                              "--value-decoder-class", "kafka.serializer.LongDecoder"])
    assert res.stdout.splitlines()[-1].endswith("key: 42 payload: 7")
    res = runner.invoke(cli, ["dump-log", str(f), "--key-decoder-class", "com.example.Nope"])
    assert res.exit_code == 4 and "unknown decoder class" in res.stderr
