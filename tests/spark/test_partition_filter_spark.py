"""--topic/--partition with --engine spark: the log dirs and partitions are chosen on the driver,
so Spark's tasks get what the local run gets, and the output is the local run's."""

from __future__ import annotations

import json
import re
import shutil

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_verify_crc_retain_and_compact_on_spark_act_on_the_filtered_partitions(spark, tmp_path):
    timing = re.compile(r'"elapsed_s": [0-9.e-]+')
    runs = {
        e: invoke("verify-crc", EXAMPLES, "--topic", "*-lz4", "--format", "json", "--engine", e)
        for e in ("local", "spark")
    }
    assert runs["spark"].exit_code == 0
    assert timing.sub("", runs["spark"].stdout) == timing.sub("", runs["local"].stdout)
    assert json.loads(runs["spark"].stdout)["files"] == 2

    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    for command in ("retain", "compact"):
        out = {
            e: invoke(
                command,
                d,
                "--topic",
                "txn",
                "--topic",
                "compacted",
                "--dry-run",
                "--format",
                "json",
                "--assume-kafka-defaults",
                "--now",
                "1795460048823",
                "--engine",
                e,
            )
            for e in ("local", "spark")
        }
        assert out["spark"].exit_code == out["local"].exit_code in (0, 1), out[
            "spark"
        ].output  # 1: changes pending
        run = re.compile(r'"run_id": "[0-9a-f]+", "time": "[^"]+", ')  # each run's own
        assert run.sub("", out["spark"].stdout) == run.sub("", out["local"].stdout)
        assert "codec-" not in out["spark"].stdout and "compacted-0" in out["spark"].stdout
