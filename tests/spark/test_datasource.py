"""The `kafkalog` data source against `kafkalog dump-log --format json` on real Kafka files
(tests/fixtures/corpus: copies of the corpus; the whole corpus too where KAFKALOG_CORPUS finds it)."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from kafkalog_cli.storage.names import parse_partition_dir
from tests.corpus import corpus_path, needs_corpus
from tests.spark.helpers import (
    FIXTURES,
    actual_batch,
    actual_record,
    dump_json,
    expected_batch,
    expected_record,
    rows,
    segment_files,
)

BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"
MULTI = BASIC / "multi-segment-0"
SHARED_CORPUS = corpus_path()


def check_against_dump_log(spark, files: list[Path]) -> int:
    """Read all `files` in one DataFrame per level and compare each file's rows with its JSON
    dump; a file dump-log fails on must fail the DataFrame read with the same message."""
    good, bad = [], []
    expected_records, expected_batches = {}, {}
    for f in files:
        rc, objs, err = dump_json(f, deep=True)
        if rc != 0:
            bad.append((f, err.strip()))
            continue
        good.append(f)
        expected_records[str(f)] = [expected_record(o) for o in objs if o["kind"] == "record"]
        expected_batches[str(f)] = [expected_batch(o) for o in objs if o["kind"] == "batch"]
    got_records, got_batches = defaultdict(list), defaultdict(list)
    paths = [str(f) for f in good]
    # the raw view: every record of the files, as dump-log prints them
    for r in rows(spark.read.format("kafkalog").option("includeControl", "true").load(paths)):
        tp = (
            parse_partition_dir(Path(r["segment"]).parent.name)
            if r["segment"].endswith(".log")
            else None
        )
        assert (r["topic"], r["partition"]) == ((tp.topic, tp.partition) if tp else (None, None))
        got_records[r["segment"]].append(actual_record(r))
    for r in rows(spark.read.format("kafkalog").option("level", "batch").load(paths)):
        got_batches[r["segment"]].append(actual_batch(r))
    for f in good:
        assert got_records.get(str(f), []) == expected_records[str(f)], f
        assert got_batches.get(str(f), []) == expected_batches[str(f)], f
    for f, err in bad:
        with pytest.raises(Exception) as e:
            rows(spark.read.format("kafkalog").option("includeControl", "true").load(str(f)))
        message = err.removeprefix("kafkalog: ")
        assert message in str(e.value), (f, err)
    return len(good)


def test_every_fixture_file_holds_what_dump_log_json_prints(spark):
    files = segment_files(FIXTURES / "corpus")
    assert len(files) > 60
    assert check_against_dump_log(spark, files) > 60


@pytest.mark.slow
@needs_corpus()
def test_every_corpus_file_holds_what_dump_log_json_prints(spark):
    files = segment_files(SHARED_CORPUS)
    assert len(files) > 390
    assert check_against_dump_log(spark, files) > 350


def test_log_dir_partition_dir_and_segment_give_the_same_rows(spark):
    def read(p):
        return spark.read.format("kafkalog").load(str(p))

    whole = read(BASIC)
    topics = {r["topic"] for r in rows(whole.select("topic").distinct())}
    assert {
        "codec-gzip",
        "txn",
        "multi-segment",
        "__consumer_offsets",
        "__cluster_metadata",
    } <= topics
    part = rows(read(MULTI).orderBy("offset"))
    assert [r["offset"] for r in part] == list(range(len(part)))
    assert len(part) == 600
    seg = rows(read(MULTI / "00000000000000000300.log").orderBy("offset"))
    assert seg == part[300:]
    assert rows(whole.filter("topic = 'multi-segment'").orderBy("offset")) == part


def test_payload_options_leave_columns_out(spark):
    df = (
        spark.read.format("kafkalog")
        .option("includePayload", "false")
        .option("includeHeaders", "false")
        .load(str(MULTI))
    )
    assert "key" not in df.columns and "value" not in df.columns and "headers" not in df.columns
    assert df.count() == 600
    full = spark.read.format("kafkalog").load(str(MULTI))
    assert rows(df.orderBy("offset")) == rows(
        full.drop("key", "value", "headers").orderBy("offset")
    )


def test_bad_level_is_one_clear_error(spark):
    with pytest.raises(Exception) as e:
        spark.read.format("kafkalog").option("level", "message").load(str(MULTI)).count()
    assert "level must be 'record' or 'batch', not 'message'" in str(e.value)


def test_missing_path_names_it(spark, tmp_path):
    with pytest.raises(Exception) as e:
        spark.read.format("kafkalog").load(str(tmp_path / "nope")).count()
    assert f"{tmp_path / 'nope'}: no such file or directory" in str(e.value)


@pytest.mark.parametrize(
    "where",
    [
        "offset >= 350 AND offset < 360",
        "offset = 299",
        "offset IN (5, 305, 599, 1000)",
        "offset > 598",
        "timestamp >= timestamp_millis(1700000400000) AND timestamp <= timestamp_millis(1700000410000)",
        "timestamp < timestamp_millis(1700000003000)",
        "topic = 'multi-segment' AND partition = 0 AND offset <= 2",
        "topic IN ('txn', 'codec-zstd') AND offset < 3",
        "partition = 1",
        "offset > 10 AND offset < 5",
        "topic <> 'multi-segment' AND partition <> 1 AND offset < 2",
    ],
)
def test_pushed_filters_give_what_spark_would(spark, pushdown, where):
    pushed = rows(
        spark.read.format(pushdown).load(str(BASIC)).filter(where).orderBy("topic", "offset")
    )
    # the source without pushdown, Spark applying the filter, is the reference
    want = rows(
        spark.read.format("kafkalog").load(str(BASIC)).filter(where).orderBy("topic", "offset")
    )
    assert [(r["topic"], r["offset"]) for r in pushed] == [(r["topic"], r["offset"]) for r in want]


def _corrupt_first_batch(segment: Path) -> None:
    """A batch size below 14: reading this segment from its first byte fails."""
    with open(segment, "r+b") as f:
        f.seek(8)
        f.write((3).to_bytes(4, "big"))


def test_offset_and_time_filters_start_reads_through_the_indexes(spark, pushdown, tmp_path):
    part = tmp_path / "multi-segment-0"
    shutil.copytree(MULTI, part)
    _corrupt_first_batch(part / "00000000000000000000.log")
    _corrupt_first_batch(part / "00000000000000000300.log")
    df = spark.read.format(pushdown).load(str(part))
    with pytest.raises(Exception) as e:
        df.count()
    assert "Found record size 3 smaller than minimum record overhead" in str(e.value)
    # the broken batches are never read: the segment at 0 is skipped, the one at 300 entered
    # through its offset index (first entry: 349 or so) and its time index
    assert [
        r["offset"] for r in rows(df.filter("offset >= 400 AND offset < 403").orderBy("offset"))
    ] == [400, 401, 402]
    got = rows(
        df.filter(
            "timestamp >= timestamp_millis(1700000500000) AND timestamp < timestamp_millis(1700000502000)"
        ).orderBy("offset")
    )
    assert [r["offset"] for r in got] == [500, 501]


def test_topic_filter_never_opens_other_topics(spark, pushdown, tmp_path):
    shutil.copytree(BASIC / "codec-none-0", tmp_path / "codec-none-0")
    shutil.copytree(MULTI, tmp_path / "multi-segment-0")
    _corrupt_first_batch(tmp_path / "codec-none-0" / "00000000000000000000.log")

    def df():
        return spark.read.format(pushdown).load(str(tmp_path))

    assert df().filter("topic = 'multi-segment'").count() == 600
    assert df().filter("topic <> 'codec-none'").count() == 600
    assert df().filter("topic NOT IN ('codec-none', 'x')").count() == 600
    assert spark.read.format(pushdown).option("topic", "multi-*").load(str(tmp_path)).count() == 600
    with pytest.raises(Exception) as e:
        df().filter("topic LIKE 'multi%'").count()  # not pushed: every segment is read
    assert "codec-none-0/00000000000000000000.log: byte 0: Found record size 3" in str(e.value)


def test_segments_are_bin_packed_by_size(spark):
    from kafkalog_cli.spark.arrow import bin_pack
    from kafkalog_cli.storage.logdir import segments_of

    refs = segments_of([str(BASIC)])
    bins = bin_pack(refs, 4)
    assert len(bins) == 4
    loads = sorted(sum(r.size for r in b) for b in bins)
    assert loads[-1] - loads[0] <= max(r.size for r in refs)
    assert sorted(r.path for b in bins for r in b) == sorted(r.path for r in refs)
    df = spark.read.format("kafkalog").option("minPartitions", "3").load(str(BASIC))
    assert df.rdd.getNumPartitions() == 3
