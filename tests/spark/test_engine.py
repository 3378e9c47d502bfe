"""--engine spark gives what --engine local gives: the same reports, output and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import CorruptRecordError
from kafkalog_cli.spark.engine import result, run_partitions
from tests.helpers.run_lines import log_dir_report, stable
from tests.spark.helpers import FIXTURES

BROKER = FIXTURES / "corpus" / "broker"
GARBAGE = BROKER / "recover" / "tail-garbage" / "before"
BASIC = BROKER / "formats" / "basic" / "before"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _segment_count(path: str) -> int:
    from kafkalog_cli.storage.partition import Partition

    return len(Partition.open(path).segments)


def _fail_on(path: str, bad: str) -> str:
    if path.endswith(bad):
        raise CorruptRecordError("bad batch", path=path, position=42)
    return path


def test_run_partitions_same_results_in_order_for_both_engines(spark):
    dirs = sorted(p for p in BASIC.iterdir() if p.is_dir())
    local = run_partitions(_segment_count, dirs, engine="local", jobs=2)
    sparked = run_partitions(_segment_count, dirs, engine="spark", spark=spark)
    assert local == sparked == [_segment_count(str(d)) for d in dirs]
    assert sum(local) == 15


def test_run_partitions_errors_keep_class_message_and_location(spark):
    dirs = [str(d) for d in sorted(BASIC.iterdir()) if d.is_dir()]
    for engine in ("local", "spark"):
        with pytest.raises(CorruptRecordError) as e:
            run_partitions(_fail_on, dirs, engine=engine, jobs=2, spark=spark, args=("txn-0",))
        assert str(e.value) == f"{BASIC / 'txn-0'}: byte 42: bad batch"
        got = run_partitions(
            _fail_on, dirs, engine=engine, jobs=2, spark=spark, args=("txn-0",), errors="return"
        )
        assert isinstance(got[-1], CorruptRecordError) and got[:-1] == dirs[:-1]
        with pytest.raises(CorruptRecordError):
            result(got[-1])


def test_verify_group_unit_equals_the_local_run(spark):
    from kafkalog_cli.ops.verify import group_paths, verify_groups
    from kafkalog_cli.spark.jobs import verify_groups_spark

    groups = group_paths([str(GARBAGE), str(BASIC)])
    local = verify_groups(groups, jobs=1)
    sparked = verify_groups_spark(groups, spark=spark)

    def strip(reps):
        return [
            (r.directory, [(f.file, f.batches, f.bytes, f.problems) for f in r.files], r.problems)
            for r in reps
        ]

    assert strip(sparked) == strip(local)
    assert sum(len(r.problems) for r in local) == 1


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_verify_crc_output_and_exit_code_are_the_same(spark, fmt):
    runs = {
        e: invoke("verify-crc", "--format", fmt, "--engine", e, GARBAGE, BASIC)
        for e in ("local", "spark")
    }
    timing = re.compile(r'( in [0-9.]+ s \(.*\)| in [0-9.]+ s|"elapsed_s": [0-9.e-]+)')
    assert runs["local"].exit_code == runs["spark"].exit_code == 1
    assert timing.sub("", runs["local"].output) == timing.sub("", runs["spark"].output)
    assert (
        "00000000000000000725.log" in runs["spark"].output and "-254896888" in runs["spark"].output
    )


def test_verify_crc_clean_input_exits_0_on_spark(spark):
    r = invoke("verify-crc", "--engine", "spark", "--master", "local[2]", BASIC)
    assert r.exit_code == 0 and "0 problems" in r.output


def test_engine_usage_and_missing_java(tmp_path, monkeypatch):
    r = invoke("verify-crc", "--master", "local[2]", BASIC)
    assert r.exit_code == 2 and "--master needs --engine spark" in r.output
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    for cmd in ("verify-crc", "retain", "compact", "export"):
        r = invoke(
            cmd,
            "--engine",
            "spark",
            BASIC,
            *([tmp_path / "out", "--to", "jsonl"] if cmd == "export" else []),
        )
        assert r.exit_code == 4, (cmd, r.output)
        assert (
            r.output
            == f"kafkalog: --engine spark needs Java 17 or later: JAVA_HOME={tmp_path} has no bin/java\n"
        )


def _retain(case: str, d: Path, engine: str):
    from tests.helpers.retention import params, server_properties

    return invoke(
        "retain",
        "--now",
        params(case)["now_ms"],
        "--server-properties",
        server_properties(case),
        "-v",
        "--format",
        "json",
        "--engine",
        engine,
        d,
    )


@pytest.mark.parametrize("case", ["time", "size"])
def test_retain_spark_deletes_and_reports_what_local_does(spark, tmp_path, case):
    from tests.helpers.retention import copy_case, partition_files

    out = {}
    for engine in ("local", "spark"):
        d = copy_case(case, tmp_path / engine)
        r = _retain(case, d, engine)
        assert r.exit_code == 0, r.output
        text = r.stdout.replace(str(tmp_path / engine), "TMP")
        text = re.sub(r"/\d{8}T\d{6}\.\d+Z-retain", "/STAMP-retain", text)
        out[engine] = (
            stable(text),
            partition_files(d),
            (d / "log-start-offset-checkpoint").read_bytes(),
        )
    assert out["spark"] == out["local"]
    assert any(x.get("segments_deleted") for x in out["spark"][0])


def test_retain_spark_locked_log_dir_is_skipped_with_exit_5(spark, tmp_path):
    from kafkalog_cli.storage.lock import LogDirLock
    from tests.helpers.retention import copy_case

    d = copy_case("time", tmp_path)
    with LogDirLock(d):
        r = _retain("time", d, "spark")
    assert r.exit_code == 5
    assert "skipped" in r.stderr and "Traceback" not in r.output


def test_compact_spark_cleans_and_reports_what_local_does(spark, tmp_path):
    from tests.helpers.compaction import CFG, records_of, restore
    from tests.helpers.compaction import FIXTURES as CFIX

    out = {}
    for engine in ("local", "spark"):
        log_dir = restore("keyed-overwrites", "before", tmp_path / engine / "logs")
        r = invoke(
            "compact",
            log_dir / "cmp-none-0",
            "--now",
            "1795248446186",
            "--format",
            "json",
            "--engine",
            engine,
            *CFG,
        )
        assert r.exit_code == 0, r.output
        text = re.sub(
            r"/\d{8}T\d{6}\.\d+Z-compact",
            "/STAMP-compact",
            r.output.replace(str(tmp_path / engine), "TMP"),
        )
        rep = log_dir_report(text)
        for volatile in ("run_id", "time"):
            rep.pop(volatile)
        out[engine] = (rep, records_of(log_dir / "cmp-none-0"))

    def timing(rep):
        return json.loads(
            re.sub(
                r'"[a-z_]*(elapsed|seconds|_s|time)[a-z_]*": [0-9.e-]+',
                '"t": 0',
                json.dumps(rep),
            )
        )

    assert timing(out["spark"][0]) == timing(out["local"][0])
    assert (
        out["spark"][1]
        == out["local"][1]
        == records_of(CFIX / "compact-keyed-overwrites" / "after" / "cmp-none-0")
    )
    assert out["spark"][0]["cleaned"][0]["messages_written"] == 100


def test_compact_spark_locked_log_dir_is_exit_5(spark, tmp_path):
    from kafkalog_cli.storage.lock import LogDirLock
    from tests.helpers.compaction import CFG, restore

    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    with LogDirLock(log_dir):
        r = invoke(
            "compact", log_dir / "cmp-none-0", "--now", "1795248446186", "--engine", "spark", *CFG
        )
    assert r.exit_code == 5 and r.output.count("\n") == 1 and "Traceback" not in r.output


def test_run_log_dir_unit_equals_the_local_run(spark):
    from kafkalog_cli.ops import roll
    from kafkalog_cli.ops.runner import Operation, run_log_dir
    from kafkalog_cli.spark.jobs import run_log_dirs_spark
    from kafkalog_cli.storage.logdir import partition_dirs_for

    op = Operation("roll", roll.plan, roll.RollOptions(now_ms=1795249186389))
    groups = partition_dirs_for(
        [FIXTURES / "broker" / case / "before" for case in ("roll-time-roll", "retain-time")]
    )
    local = [run_log_dir(op, d, parts, dry_run=True).to_dict() for d, parts in groups.items()]
    sparked = [o.to_dict() for o in run_log_dirs_spark(op, groups, spark=spark, dry_run=True)]
    assert (
        sparked == local and len(local) == 2 and all(r["dry_run"] and r["actions"] for r in local)
    )
