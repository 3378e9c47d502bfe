"""dump-log's search (issue 13, item 6): --key, --key-hex, --key-prefix, --key-prefix-hex,
--key-regex and --grep, in both formats, with --limit and the other filters; the fast scanner's
output is the general path's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import RECORD_BATCH_OVERHEAD
from kafkalog_cli.storage import selection
from tests.helpers.paths import EXAMPLES

NONE = EXAMPLES / "codec-none-0"  # keys k000.. (every 7th null), values value-<n>-x.. (some null)
LOG = "00000000000000000000.log"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def records(output: str) -> list[dict]:
    return [o for o in map(json.loads, output.splitlines()) if o["kind"] == "record"]


def offsets(*args) -> list[int]:
    r = invoke("dump-log", *args, "--format", "json")
    assert r.exit_code == 0, r.output
    return [o["offset"] for o in records(r.stdout)]


def test_key_hex_is_key_in_both_formats_and_text_is_kafkas_lines_of_the_match():
    for fmt in ("json", "text"):
        by_text = invoke("dump-log", NONE, "--key", "k003", "--print-data-log", "--format", fmt)
        by_hex = invoke(
            "dump-log", NONE, "--key-hex", b"k003".hex(), "--print-data-log", "--format", fmt
        )
        assert by_text.exit_code == by_hex.exit_code == 0
        assert by_text.stdout == by_hex.stdout
    lines = by_hex.stdout.splitlines()
    assert lines[:2] == [f"Dumping {NONE}/{LOG}", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 19 count: 20 ")
    assert lines[3:] == [
        "| offset: 3 CreateTime: 1700000000003 keySize: 4 valueSize: 11 sequence: -1 "
        "headerKeys: [h-idx,h-empty] key: k003 payload: value-3-xxx"
    ]
    objs = [
        json.loads(line)
        for line in invoke(
            "dump-log", NONE, "--key-hex", "6B303033", "--format", "json"
        ).stdout.splitlines()
    ]
    assert [o["kind"] for o in objs] == ["file", "batch", "record"]
    assert (objs[2]["offset"], objs[2]["key"], objs[2]["headers"]) == (
        3,
        "k003",
        [{"key": "h-idx", "value": "3"}, {"key": "h-empty", "value": ""}],
    )


def test_a_null_key_passes_no_key_test_and_a_null_value_no_grep():
    everything = records(invoke("dump-log", NONE, "--deep-iteration", "--format", "json").stdout)
    keyed = [r["offset"] for r in everything if r["key"] is not None]
    valued = [r["offset"] for r in everything if r["value"] is not None]
    assert len(keyed) < len(everything) and len(valued) < len(everything)
    assert offsets(NONE, "--key-prefix", "") == keyed
    assert offsets(NONE, "--key-regex", "") == keyed
    assert offsets(NONE, "--grep", "") == valued
    assert offsets(NONE, "--key-prefix", "k00") == [0, 1, 2, 3, 4, 5, 7, 8, 9]
    assert offsets(NONE, "--key-prefix-hex", b"k00".hex()) == [0, 1, 2, 3, 4, 5, 7, 8, 9]


def test_regexes_on_keys_and_values_combine_with_each_other_and_the_other_filters():
    assert offsets(NONE, "--key-regex", "^k0[0-9]5$") == [5, 15, 25, 35, 45]  # 55's key is null
    assert offsets(NONE, "--key-regex", "5$", "--grep", "x{3}") == [5, 25, 35, 45]
    assert offsets(NONE, "--key-regex", "5$", "--from-offset", "20", "--to-offset", "50") == [
        25,
        35,
        45,
    ]
    assert offsets(NONE, "--grep", r"\x2dx{12}$", "--limit", "2") == [12, 25]
    # bytes: \xNN stands for any byte, literal text for its UTF-8
    assert offsets(NONE, "--grep", r"\x76alue-4\x2d") == [4]


def test_limit_counts_matching_records_across_files_in_text(tmp_path):
    r = invoke(
        "dump-log",
        NONE,
        EXAMPLES / "codec-gzip-0",
        "--grep",
        "x{12}",
        "--limit",
        "4",
        "--print-data-log",
    )
    assert r.exit_code == 0, r.output
    shown = [line.split()[2] for line in r.stdout.splitlines() if line.startswith("| offset:")]
    assert len(shown) == 4
    assert "Dumping" in r.stdout and "Non-consecutive" not in r.stdout + r.stderr


def test_no_match_is_exit_0_with_the_files_and_no_batch():
    r = invoke("dump-log", NONE, "--grep", "no such value")
    assert r.exit_code == 0 and r.stdout == f"Dumping {NONE}/{LOG}\nLog starting offset: 0\n"


def test_search_with_topic_over_a_log_dir():
    r = invoke("dump-log", EXAMPLES, "--topic", "codec-*", "--key", "k042", "--format", "json")
    assert r.exit_code == 0, r.output
    # issue 26 (9): each record line names its topic, partition and file, not only the batch line
    found = [
        (o["topic"], o["partition"], Path(o["file"]).parent.name, o["offset"])
        for o in records(r.stdout)
    ]
    assert found == [
        (f"codec-{c}", 0, f"codec-{c}-0", 42) for c in ("gzip", "lz4", "none", "snappy", "zstd")
    ]
    files = [
        json.loads(line)["file"]
        for line in r.stdout.splitlines()
        if json.loads(line)["kind"] == "file"
    ]
    assert [Path(f).parent.name for f in files] == [
        "codec-gzip-0",
        "codec-lz4-0",
        "codec-none-0",
        "codec-snappy-0",
        "codec-zstd-0",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--key", "a", "--key-hex", "61"], "--key and --key-hex exclude each other."),
        (
            ["--key-prefix", "a", "--key-prefix-hex", "61"],
            "--key-prefix and --key-prefix-hex exclude each other.",
        ),
        (["--key-hex", "6g"], "Invalid value for '--key-hex': '6g' is not hex bytes (e.g. 00ff10)"),
        (
            ["--grep", "("],
            "Invalid value for '--grep': '(' is not a regular expression: missing ), unterminated "
            "subpattern at position 0",
        ),
        (
            ["--key-regex", "[a"],
            "Invalid value for '--key-regex': '[a' is not a regular expression: unterminated "
            "character set at position 0",
        ),
    ],
)
def test_usage_errors_are_exit_2(args, message):
    r = invoke("dump-log", NONE, *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.splitlines()[-1] == f"Error: {message}"


SEARCHES = [
    ["--key", "k001"],
    ["--key-prefix", "k01"],
    ["--key-regex", "^k.[13]"],
    ["--grep", "x{5}$"],
    ["--grep", "^value-1"],
    ["--key-regex", "3", "--grep", "xx"],
    ["--key-hex", "00"],
    ["--key-prefix", ""],
    ["--grep", "x", "--limit", "7"],
    ["--key-regex", "0", "--from-time", "1700000000010", "--to-time", "1700000000050"],
]


SHOWN = [
    ["--print-data-log"],
    ["--deep-iteration"],
    ["--print-data-log", "--skip-record-metadata"],
    ["--print-data-log", "--payload-encoding", "hex"],
    ["--key-decoder-class", "IntegerDecoder"],
]


@pytest.mark.parametrize("search", SEARCHES, ids=" ".join)
@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("shown", SHOWN, ids=" ".join)
def test_the_fast_search_prints_what_the_general_path_prints(search, fmt, shown, monkeypatch):
    if fmt == "text" and "--payload-encoding" in shown:
        return  # json only
    args = ["dump-log", EXAMPLES, "--format", fmt, *shown, *search]
    cut = []  # batches whose lines were cut out of the record fast path's
    real_found_lines = selection.found_lines

    def spy(*a):
        found = real_found_lines(*a)
        cut.append(found is not None)
        return found

    monkeypatch.setattr("kafkalog_cli.render.jsonl.found_lines", spy)
    monkeypatch.setattr("kafkalog_cli.render.kafka.found_lines", spy)
    fast = invoke(*args)
    monkeypatch.setattr(
        selection, "found_records", lambda b, s: None
    )  # every batch through records()
    general = invoke(*args)
    assert fast.exit_code == general.exit_code == 0, fast.output
    assert fast.stdout == general.stdout and fast.stderr == general.stderr
    assert "offset" in fast.stdout
    if search == ["--key-prefix", ""]:  # every keyed record: the lines are cut out of the batch's
        assert (True in cut) == (fmt == "json" or "IntegerDecoder" not in shown), cut
    if search == ["--key", "k001"]:  # one record a batch: rendered alone
        assert True not in cut


def test_a_damaged_batch_is_reported_as_without_a_search(tmp_path):
    d = tmp_path / "codec-none-0"
    shutil.copytree(NONE, d)
    log = bytearray((d / LOG).read_bytes())
    log[RECORD_BATCH_OVERHEAD] = 0x7E  # the first record's length: 63, more than it holds
    (d / LOG).write_bytes(bytes(log))
    plain = invoke("dump-log", d / LOG, "--deep-iteration")
    searched = invoke("dump-log", d / LOG, "--grep", "no such value")
    assert plain.exit_code == searched.exit_code == 3
    assert (
        searched.stderr
        == plain.stderr
        == (
            f"kafkalog: {d / LOG}: byte 0: Invalid record size: expected to read 63 bytes in record payload, "
            "but instead read 35\n"
        )
    )
    assert searched.stdout == f"Dumping {d / LOG}\nLog starting offset: 0\n"
