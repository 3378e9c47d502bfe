"""dump-log's and export's --header/--header-hex, --producer-id/--producer-epoch and --leader-epoch
(issue 35, item 3), on real files: the corpus' v2-txn (producers 5000 epochs 2 and 3, 6000, and
batches without one) and v2-headers (null, empty, binary, duplicate and non-ASCII headers), the
example codec-none-0, and the serializer-made schemas log dir (a __value_schema_id header)."""

from __future__ import annotations

import json
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.corpus import corpus_dir, needs_corpus
from tests.helpers.paths import CORPUS, EXAMPLES, SCHEMAS

TXN = CORPUS / "legacy" / "v2-txn"
HEADERS = CORPUS / "legacy" / "v2-headers"
NONE = EXAMPLES / "codec-none-0"
LOG = "00000000000000000000.log"
PATIENTS_SCHEMAS = (
    "wild",
    "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions",
    "kafka-data",
    "_schemas-0",
)


def _lines(runner, *args):
    res = runner.invoke(cli, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return [json.loads(x) for x in res.stdout.splitlines()]


def _offsets(runner, *args) -> list[int]:
    return [
        o["offset"]
        for o in _lines(runner, "dump-log", *args, "--format", "json")
        if o["kind"] == "record"
    ]


def _batches(runner, *args) -> list[int]:
    objs = _lines(runner, "dump-log", *args, "--format", "json")
    return [o["base_offset"] for o in objs if o["kind"] == "batch"]


def _text_batches(runner, *args) -> list[int]:
    res = runner.invoke(cli, ["dump-log", *map(str, args)])
    assert res.exit_code == 0, res.output
    return [
        int(line.split()[1]) for line in res.stdout.splitlines() if line.startswith("baseOffset: ")
    ]


def _export_offsets(runner, tmp_path, *args) -> list[int]:
    out = tmp_path / f"x{len(list(tmp_path.iterdir()))}.jsonl"
    res = runner.invoke(cli, ["export", *map(str, args), "--to", "jsonl", str(out), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    return [json.loads(x)["offset"] for x in out.read_text().splitlines()]


# -- producer id and epoch, leader epoch: batch-level


def test_producer_id_and_epoch_show_that_producers_batches_in_both_formats(runner):
    for args in (("--producer-id", 5000, "--producer-epoch", 2),):
        assert _batches(runner, TXN, *args) == [0, 5, 6, 9]
        assert _text_batches(runner, TXN, *args) == [0, 5, 6, 9]
    assert _batches(runner, TXN, "--producer-id", 5000) == [0, 5, 6, 9, 13, 15]
    assert _batches(runner, TXN, "--producer-id", 5000, "--producer-epoch", 3) == [13, 15]
    assert _batches(runner, TXN, "--producer-id", 6000) == [10, 12]
    assert _batches(runner, TXN, "--producer-id", -1) == [3]  # written without a producer id
    assert _batches(runner, TXN, "--producer-id", 7) == []
    # batch-level: without --deep-iteration no record is printed; with it, all of each batch's
    assert _offsets(runner, TXN, "--producer-id", 6000) == []
    assert _offsets(runner, TXN, "--producer-id", 6000, "--deep-iteration") == [10, 11, 12]


def test_a_producer_filter_leaves_no_non_consecutive_offsets_report(runner):
    """The gaps between one producer's batches are the filter's, not the log's: kafka-dump-log's
    'Non-consecutive offsets' report is not made of them."""
    res = runner.invoke(cli, ["dump-log", str(TXN), "--producer-id", "5000", "--deep-iteration"])
    assert res.exit_code == 0, res.output
    assert [ln.split()[2] for ln in res.stdout.splitlines() if ln.startswith("| offset:")] == [
        "0", "1", "2", "5", "6", "7", "8", "9", "13", "14", "15"
    ]  # fmt: skip
    assert res.stderr == ""


def test_batches_of_other_producers_are_not_decoded(runner, tmp_path):
    """Batch-level filters judge the header: a batch of another producer whose records are damaged
    is skipped without a word; asked for, it is the corrupt-input error (exit 3)."""
    d = tmp_path / "v2-txn"
    shutil.copytree(TXN, d)
    (pid6000,) = [
        o for o in _lines(runner, "dump-log", d, "--format", "json") if o.get("base_offset") == 10
    ]
    data = bytearray((d / LOG).read_bytes())
    for i in range(pid6000["position"] + 61, pid6000["position"] + pid6000["size"]):
        data[i] ^= 0x5A  # its lz4 records: no longer a frame
    (d / LOG).write_bytes(bytes(data))
    assert _offsets(runner, d, "--producer-id", 5000, "--deep-iteration") == [
        0, 1, 2, 5, 6, 7, 8, 9, 13, 14, 15
    ]  # fmt: skip
    bad = runner.invoke(cli, ["dump-log", str(d), "--producer-id", "6000", "--deep-iteration"])
    assert bad.exit_code == 3 and f"byte {pid6000['position']}" in bad.stderr, bad.output


def test_producer_epoch_needs_producer_id(runner):
    res = runner.invoke(cli, ["dump-log", str(TXN), "--producer-epoch", "2"])
    assert res.exit_code == 2 and "--producer-epoch needs --producer-id" in res.stderr
    res = runner.invoke(cli, ["export", str(TXN), "--to", "jsonl", "-", "--producer-epoch", "2"])
    assert res.exit_code == 2 and "--producer-epoch needs --producer-id" in res.stderr


def test_leader_epoch_is_the_batches_partition_leader_epoch(runner):
    assert _batches(runner, TXN, "--leader-epoch", 5) == [0, 3, 5, 6, 9, 10, 12, 13, 15]
    assert _batches(runner, TXN, "--leader-epoch", 4) == []
    assert _text_batches(runner, TXN, "--leader-epoch", 4) == []


@needs_corpus(*PATIENTS_SCHEMAS)
def test_leader_epoch_picks_the_batches_a_leader_wrote_in_a_real_schemas_topic(runner):
    d = corpus_dir(*PATIENTS_SCHEMAS)
    assert _batches(runner, d, "--leader-epoch", 32) == [28, 29, 30, 31]
    assert _offsets(runner, d, "--leader-epoch", 20, "--deep-iteration") == [16, 17]
    assert _text_batches(runner, d, "--leader-epoch", 38) == [36, 37]


# -- headers: record-level


def test_header_key_value_key_alone_hex_and_or(runner):
    assert _offsets(runner, HEADERS, "--header", "dup=3") == [3, 8, 13, 18]
    assert _offsets(runner, HEADERS, "--header", "dup=") == []  # no dup header is empty
    assert _offsets(runner, HEADERS, "--header", "only-null") == [1, 6, 11, 16]
    assert _offsets(runner, HEADERS, "--header", "only-null", "--header", "dup=3") == [
        1, 3, 6, 8, 11, 13, 16, 18
    ]  # fmt: skip
    assert _offsets(runner, HEADERS, "--header-hex", "h03=8091a2b3c4d5e6f708192a3b4c5d6e7f") == [
        2, 7, 12, 17
    ]  # fmt: skip
    assert _offsets(runner, HEADERS, "--header", "h01=") == [2, 7, 12, 17]  # an empty value
    assert _offsets(runner, HEADERS, "--header", "ключ-ü-☃=unicode key") == [3, 8, 13, 18]
    # --limit counts the records found; header filters imply --deep-iteration in text too
    assert _offsets(runner, HEADERS, "--header", "dup=3", "--limit", "2") == [3, 8]
    res = runner.invoke(cli, ["dump-log", str(HEADERS), "--header", "after-big"])
    assert [ln.split()[2] for ln in res.stdout.splitlines() if ln.startswith("| offset:")] == [
        "4", "9", "14", "19"
    ]  # fmt: skip


def test_header_with_a_key_search_rejudges_what_the_search_found(runner):
    """The search finds most of the batch (its lines are cut from the batch's): the header test
    still decides."""
    want = [0, 3, 9]  # keys k00. (6 has a null key) with an h-empty header
    assert _offsets(runner, NONE, "--key-prefix", "k00", "--header", "h-empty") == want
    res = runner.invoke(
        cli,
        ["dump-log", str(NONE), "--key-prefix", "k00", "--header", "h-empty", "--print-data-log"],
    )
    assert [int(ln.split()[2]) for ln in res.stdout.splitlines() if ln.startswith("| ")] == want


def test_the_schema_id_header_finds_the_record_framed_by_it(runner):
    orders = SCHEMAS / "logdir" / "orders-0"
    assert _offsets(runner, orders, "--header", "__value_schema_id") == [6]
    objs = _lines(
        runner,
        "dump-log",
        SCHEMAS / "logdir",
        "--topic",
        "orders",
        "--header",
        "__value_schema_id",
        "--format",
        "json",
        "--decode-schemas",
    )
    (rec,) = [o for o in objs if o["kind"] == "record"]
    assert rec["offset"] == 6 and "guid" in rec["value_schema"] and rec["value"]["id"] == 1006


@pytest.mark.parametrize("bad", ["=x", "--header-hex=k=zz"])
def test_a_bad_header_filter_is_a_usage_error(runner, bad):
    args = ["--header", bad] if not bad.startswith("--") else [bad]
    res = runner.invoke(cli, ["dump-log", str(HEADERS), *args])
    assert res.exit_code == 2 and "Invalid value" in res.stderr, res.output


# -- export: the same selection


def test_export_selects_as_dump_log_does(runner, tmp_path):
    for args in (
        ("--producer-id", 5000),
        ("--producer-id", 5000, "--producer-epoch", 3),
        ("--leader-epoch", 5),
    ):
        want = _offsets(runner, TXN, *args, "--deep-iteration")
        assert _export_offsets(runner, tmp_path, TXN, "--include-control", *args) == want, args
    assert _export_offsets(runner, tmp_path, TXN, "--leader-epoch", 4) == []
    for args in (("--header", "dup=3", "--header", "only-null"), ("--header-hex", "h02=")):
        want = _offsets(runner, HEADERS, *args)
        assert _export_offsets(runner, tmp_path, HEADERS, "--include-control", *args) == want


def test_export_parquet_selects_by_header_and_producer(runner, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")

    def parquet(*args):
        out = tmp_path / f"p{len(list(tmp_path.iterdir()))}"
        res = runner.invoke(
            cli, ["export", *map(str, args), "--to", "parquet", str(out), "--jobs", "1"]
        )
        assert res.exit_code == 0, res.output
        return sorted(
            o for f in out.rglob("*.parquet") for o in pq.read_table(f).column("offset").to_pylist()
        )

    assert parquet(HEADERS, "--header", "dup=3", "--header", "only-null") == [
        1, 3, 6, 8, 11, 13, 16, 18
    ]  # fmt: skip
    assert parquet(TXN, "--include-control", "--producer-id", 6000) == [10, 11, 12]
    assert parquet(TXN, "--include-control", "--producer-id", 5000, "--producer-epoch", 3) == [
        13, 14, 15
    ]  # fmt: skip


@pytest.mark.parametrize(
    "path, args", [(TXN, ("--leader-epoch", "5")), (NONE, ("--producer-id", "-1"))]
)
def test_a_batch_filter_that_keeps_every_batch_prints_the_unfiltered_dump(runner, path, args):
    """The batches a batch-level filter shows are printed whole, as an unfiltered dump prints
    them (through the same fast paths), in both formats."""
    for flags in (
        ["--format", "json", "--deep-iteration"],
        ["--print-data-log"],
        ["--deep-iteration"],
    ):
        plain = runner.invoke(cli, ["dump-log", str(path), *flags])
        kept = runner.invoke(cli, ["dump-log", str(path), *flags, *args])
        assert plain.exit_code == kept.exit_code == 0, kept.output
        assert kept.stdout == plain.stdout and plain.stdout.count("offset") > 10
