"""Session hygiene: the running interpreter, no network, no UI, no noise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.spark.helpers import FIXTURES

KAFKALOG = Path(sys.executable).with_name("kafkalog")


def test_session_settings(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.ui.showConsoleProgress") == "false"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert spark.sparkContext.uiWebUrl is None


def test_spark_export_from_the_shell_prints_only_its_summary(tmp_path):
    """A fresh JVM: none of its start-up chatter (log4j banner, native-hadoop warning) shows."""
    src = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before" / "txn-0"
    p = subprocess.run(
        [
            str(KAFKALOG),
            "export",
            str(src),
            str(tmp_path / "o.jsonl"),
            "--to",
            "jsonl",
            "--include-control",
            "--engine",
            "spark",
            "--master",
            "local[1]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert p.stdout == f"exported 15 records from 1 segments to {tmp_path / 'o.jsonl'}\n"
