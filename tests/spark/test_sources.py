"""Issue 15, items 2 and 3 on local disks: archives (a dir of log dirs), globs, lists and file://
URIs for the data source and every --engine spark command; paths made absolute on the driver;
--conf reaching the session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.spark.helpers import FIXTURES

BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"


@pytest.fixture
def archive(tmp_path):
    """tmp/archive/{host-a/broker-0, host-b/broker-1}: two log dirs, two levels down, each
    with multi-segment-0 (the same topic-partition) and one partition of its own."""
    a = tmp_path / "archive"
    for host, broker, own in (("host-a", 0, "txn-0"), ("host-b", 1, "codec-none-0")):
        d = a / host / f"broker-{broker}"
        for p in ("multi-segment-0", own):
            shutil.copytree(BASIC / p, d / p)
        (d / "meta.properties").write_text(f"version=1\nnode.id={broker}\n")
    return a


def test_expand_sources(archive, tmp_path, monkeypatch):
    from kafkalog_cli.errors import InputError
    from kafkalog_cli.storage.paths_given import expand_sources

    brokers = [str(archive / "host-a" / "broker-0"), str(archive / "host-b" / "broker-1")]
    assert expand_sources([str(archive)]) == brokers
    assert expand_sources([f"file://{archive}/*/broker-*"]) == brokers
    monkeypatch.chdir(archive)
    assert expand_sources(["host-b/broker-1/txn-0", "host-a"]) == [
        f"{archive}/host-b/broker-1/txn-0",
        brokers[0],
    ]
    assert expand_sources(["s3a://b/k", "host-a"], absolute=False) == [
        "s3a://b/k",
        "host-a/broker-0",
    ]
    with pytest.raises(InputError) as e:
        expand_sources(["nope-*"])
    assert str(e.value) == "nope-*: no file or directory matches this pattern"


def test_data_source_reads_an_archive_a_glob_and_a_list(spark, archive):
    def load(paths):
        return spark.read.format("kafkalog").load(paths)

    whole = load(str(archive))
    got = {
        (r["log_dir"], r["broker_id"], r["topic"], r["cnt"])
        for r in whole.groupBy("log_dir", "broker_id", "topic")
        .count()
        .withColumnRenamed("count", "cnt")
        .collect()
    }
    a, b = str(archive / "host-a" / "broker-0"), str(archive / "host-b" / "broker-1")
    assert got == {
        (a, 0, "multi-segment", 600),
        (a, 0, "txn", 12),
        (b, 1, "multi-segment", 600),
        (b, 1, "codec-none", whole.filter("topic = 'codec-none'").count()),
    }
    assert load(f"file://{archive}/*/broker-*/multi-segment-0").count() == 1200
    assert (
        load([a + "/txn-0", f"file://{b}"]).count()
        == whole.filter(f"log_dir = '{b}' OR topic = 'txn'").count()
    )


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_export_of_an_archive_has_a_log_dir_level_for_shared_partitions(archive, tmp_path):
    import pyarrow.dataset as ds

    out = tmp_path / "out"
    r = run(
        "export",
        archive,
        out,
        "--to",
        "parquet",
        "--topic",
        "multi-*",
        "--compression",
        "zstd",
        "--row-group-size",
        "100",
    )
    assert r.exit_code == 0, r.output
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    a = str(archive / "host-a" / "broker-0").replace("/", "%2F")
    assert (
        files[0]
        == f"topic=multi-segment/partition=0/log_dir={a}/part-00000-00000000000000000000.parquet"
    )
    assert len(files) == 4
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(out / files[0]).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert meta.row_group(0).num_rows == 100 and meta.num_rows == 300
    table = ds.dataset(out, partitioning="hive").to_table()
    assert sorted(set(zip(table["log_dir"].to_pylist(), table["broker_id"].to_pylist()))) == [
        (str(archive / "host-a" / "broker-0"), 0),
        (str(archive / "host-b" / "broker-1"), 1),
    ]
    # one log dir per topic-partition: no log_dir level, log_dir is a column of the files
    out2 = tmp_path / "out2"
    assert (
        run("export", archive / "host-a", out2, "--to", "parquet", "--partition", "0").exit_code
        == 0
    )
    assert sorted(p.parent.name for p in out2.rglob("*.parquet")) == ["partition=0"] * 3
    assert "log_dir" in pq.ParquetFile(next(out2.rglob("*.parquet"))).schema_arrow.names


def test_verify_crc_on_spark_takes_relative_paths_archives_and_conf(spark, archive, monkeypatch):
    monkeypatch.chdir(archive.parent)
    r = run(
        "verify-crc",
        "archive",
        "--engine",
        "spark",
        "--format",
        "json",
        "--conf",
        "spark.app.name=x",
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.splitlines()[-1])
    assert (summary["files"], summary["problems"]) == (6, 0)
    r = run("verify-crc", "archive", "--conf", "spark.x=1")
    assert r.exit_code == 2 and "--conf needs --engine spark" in r.output
    r = run("verify-crc", "archive", "--engine", "spark", "--conf", "novalue")
    assert r.exit_code == 2 and "'novalue' is not KEY=VALUE" in r.output


def test_spark_commands_refuse_remote_uris_except_export(archive):
    r = run("retain", "s3a://bucket/kafka", "--engine", "spark", "--dry-run")
    assert r.exit_code == 2
    assert r.output.strip().endswith(
        ": a remote URI is read only by export, verify-crc and the kafkalog "
        "data source; this command needs a local or mounted path"
    )
    assert "s3a:/" in r.output


def testdriver_paths_are_absolute_for_the_executors(tmp_path, monkeypatch):
    from kafkalog_cli.ops.runner import ConfigSources
    from kafkalog_cli.spark.cli_options import driver_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "lg").mkdir()
    (tmp_path / "lg" / "meta.properties").write_text("node.id=1\n")
    got = driver_paths(
        {
            "paths": (Path("lg"),),
            "quarantine_dir": Path("q"),
            "configs": ConfigSources(server_properties=Path("server.properties")),
        },
        remote=False,
        spark=True,
    )
    assert got["paths"] == (tmp_path / "lg",)
    assert got["quarantine_dir"] == tmp_path / "q"
    assert got["configs"].server_properties == tmp_path / "server.properties"
