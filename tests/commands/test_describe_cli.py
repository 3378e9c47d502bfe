"""`kafkalog describe`: the table as a script reads it, JSON Lines, the options, bad input."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.ops import describe as ops
from kafkalog_cli.render import describe as render
from tests.helpers import bad_inputs as B
from tests.helpers.bad_inputs import LOG_CASES, run
from tests.helpers.paths import EXAMPLES

PARTITIONS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())


def invoke(*args):
    return CliRunner().invoke(cli, ["describe", *map(str, args)])


def test_piped_text_is_a_header_then_one_tab_separated_row_per_partition():
    r = invoke(EXAMPLES)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    header, rows = (
        lines[0].split("\t"),
        [line.split("\t") for line in lines[1:] if not line.startswith("#")],
    )
    assert header == list(render.COLUMNS)
    assert [row[0] for row in rows] == PARTITIONS
    assert all(len(row) == len(header) for row in rows)
    col = {name: i for i, name in enumerate(header)}
    multi = next(row for row in rows if row[0] == "multi-segment-0")
    assert (multi[col["SEGMENTS"]], multi[col["LOG_END"]], multi[col["HW"]]) == ("2", "600", "600")
    assert multi[col["CODECS"]] == "snappy"
    txn = next(row for row in rows if row[0] == "txn-0")
    assert (txn[col["PRODUCERS"]], txn[col["OPEN_TXNS"]], txn[col["CODECS"]]) == (
        "1",
        "0",
        "gzip,none",
    )
    compacted = next(row for row in rows if row[0] == "compacted-0")
    assert compacted[col["CLEANER_CHECKPOINT"]] == "36" and compacted[col["DIRTY_RATIO"]] == "0.000"
    assert compacted[col["CLEANUP_POLICY"]] == "compact (cluster metadata)"
    # no --server-properties: the broker's retention default is unknown, never shown as a value
    assert compacted[col["RETENTION_MS"]] == "unknown (Kafka default)"
    facts = [line for line in lines if line.startswith("#")]
    assert facts[0].startswith(f"# log dir {EXAMPLES}: 14 partition(s); ")
    assert "quarantine 0 folder(s), 0 bytes" in facts[0]
    assert any("state them with --server-properties FILE" in line for line in facts[1:])


def test_configs_stated_on_the_command_line_are_shown_with_their_source():
    r = invoke(
        EXAMPLES / "codec-gzip-0",
        "--config",
        "retention.ms=3600000",
        "--topic-config",
        "codec-gzip:retention.bytes=1000",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    part = json.loads(r.stdout.splitlines()[0])
    assert part["configs"]["retention.ms"]["value"] == 3600000
    assert part["configs"]["retention.ms"]["origin"] == "--config"
    assert part["configs"]["retention.bytes"]["origin"] == "--topic-config"


def test_json_is_one_object_per_partition_then_the_log_dir():
    r = invoke(EXAMPLES, "--format", "json")
    assert r.exit_code == 0, r.output
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["kind"] for o in objs] == ["partition"] * len(PARTITIONS) + ["log_dir"]
    assert [o["partition_dir"] for o in objs[:-1]] == [str(EXAMPLES / p) for p in PARTITIONS]
    assert objs[-1]["partitions"] == len(PARTITIONS) and objs[-1]["clean_shutdown"] is True


def test_topic_and_partition_filters():
    r = invoke(EXAMPLES, "--topic", "codec-*", "--partition", "0", "--format", "json")
    assert r.exit_code == 0, r.output
    names = [json.loads(line)["topic"] for line in r.stdout.splitlines()[:-1]]
    assert names == ["codec-gzip", "codec-lz4", "codec-none", "codec-snappy", "codec-zstd"]
    r = invoke(EXAMPLES, "--topic", "nope")
    assert r.exit_code == 4 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        f"kafkalog: {EXAMPLES}: no partition dir matches --topic 'nope'"
    ]


def test_a_terminal_gets_a_rich_table_per_log_dir():
    from rich.console import Console

    items = list(ops.describe(ops.select([EXAMPLES])))
    out = io.StringIO()
    Console(file=out, width=400).print(render.rich_table(items[-1], items[:-1]))
    text = out.getvalue()
    assert f"log dir {EXAMPLES}: 14 partition(s)" in text
    for name in PARTITIONS:
        assert name in text
    assert "2023-11-14 22:13:20.059" in text  # codec-*'s max timestamp 1700000000059, in UTC


def test_a_left_out_partition_dir_gets_a_note(tmp_path):
    log_dir = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, log_dir)
    (log_dir / "codec-none-0").rename(
        log_dir / "codec-none-0.0123456789abcdef0123456789abcdef-delete"
    )
    r = invoke(log_dir, "--format", "json")
    assert r.exit_code == 0, r.output
    assert "kafkalog: note:" in r.stderr and "-delete" in r.stderr and "not read" in r.stderr
    last = json.loads(r.stdout.splitlines()[-1])
    assert last["left_out"][0]["kind"] == "delete"


def test_a_damaged_tail_exits_3_after_describing_everything(corpus_copy):
    log_dir = corpus_copy / "broker" / "recover" / "tail-garbage" / "before"
    r = invoke(log_dir)
    assert r.exit_code == 3
    rows = [line for line in r.stdout.splitlines()[1:] if not line.startswith("#")]
    assert len(rows) == len([p for p in log_dir.iterdir() if p.is_dir()])
    (line,) = r.stderr.strip().splitlines()
    assert (
        line.startswith("kafkalog: rec-none-0: ")
        and "00000000000000000725.log: byte 6169: " in line
    )


@pytest.mark.parametrize("case", LOG_CASES)
def test_bad_segments_never_give_a_traceback(tmp_path, case):
    log = getattr(B, case)(tmp_path)
    r = run("describe", log.parent)
    assert r.exit_code in (0, 3), r.output
    if r.exit_code == 3:
        assert all(
            line.startswith("kafkalog: topic-0: ") and B.LOG0 in line
            for line in r.stderr.splitlines()
        )


@pytest.mark.parametrize("make, code", [(B.missing, 4), (B.not_a_log_dir, 4)])
def test_bad_paths_are_one_line(tmp_path, make, code):
    path = make(tmp_path)
    r = run("describe", path)
    assert r.exit_code == code
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"kafkalog: {path}")
