"""The data source as a data engineer meets it: a job written for Spark's Kafka source, in a fresh
Python with a clean SparkSession, with only the format and the path changed (no `register`
call); and workers whose Python cannot import kafkalog_cli."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalog_cli
from tests.helpers.paths import SCHEMAS

pytestmark = pytest.mark.slow

SRC = Path(kafkalog_cli.__file__).resolve().parents[1]
LOG_DIR = str(SCHEMAS / "logdir")
WARNING = "kafkalog: warning: option kafka.bootstrap.servers ignored"

_SESSION = """
import json, sys, time
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[2]").appName("kafkalog-dropin")
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    .getOrCreate()
)
LOG = sys.argv[1]
"""

_JOB = (
    _SESSION
    + """
def kafka_job():  # written for format("kafka"): only the format and the path changed
    return (
        spark.read.format("kafkalog")
        .option("kafka.bootstrap.servers", "broker:9092")
        .option("subscribe", "orders")
        .option("startingOffsets", "earliest")
        .load(LOG)
    )

out = {"counts": [kafka_job().count() for _ in range(3)]}
out["filtered"] = kafka_job().filter("offset >= 3").count()
spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
out["filtered_with_pushdown_on"] = kafka_job().filter("offset >= 3").count()
df = spark.read.format("kafkalog").option("decodeSchemas", "true").option("topic", "readings")
out["sensors"] = [r.value.sensor for r in df.load(LOG).orderBy("offset").collect()]
out["driver_imported_kafkalog"] = "kafkalog_cli" in sys.modules
print(json.dumps(out))
"""
)

_NO_PACKAGE_ON_WORKERS = (
    _SESSION
    + """
started = time.monotonic()
try:
    spark.read.format("kafkalog").load(LOG + "/orders-0").count()
    out = {"error": None}
except Exception as e:
    out = {"error": str(e)}
out["seconds"] = time.monotonic() - started
print(json.dumps(out))
"""
)


def _run(tmp_path: Path, script: str, **env) -> subprocess.CompletedProcess:
    (tmp_path / "job.py").write_text(script)
    full = {
        **os.environ,
        "PYTHONPATH": str(SRC),  # as an installed kafkalog-cli: the driver and its workers
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "TMPDIR": str(tmp_path),
        **env,
    }
    return subprocess.run(
        [sys.executable, str(tmp_path / "job.py"), LOG_DIR],
        capture_output=True,
        text=True,
        timeout=600,
        env=full,
        cwd=tmp_path,
    )


def _answer(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def dropin(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("dropin"), _JOB)


def test_format_kafkalog_works_without_register(dropin):
    out = _answer(dropin)
    assert out["counts"] == [8, 8, 8]  # orders-0: 8 records up to the high watermark
    assert out["filtered"] == out["filtered_with_pushdown_on"] == 5
    assert out["sensors"] == ["s0", "s1", "s2"]
    assert out["driver_imported_kafkalog"] is False  # pyspark found the source by itself


def test_ignored_option_warning_is_printed_once_per_session(dropin):
    _answer(dropin)
    # five DataFrames, each planned and read in two Spark partitions or more: one line
    assert dropin.stderr.count(WARNING) == 1, dropin.stderr[-3000:]


def test_workers_without_kafkalog_fail_at_once_saying_what_to_ship(tmp_path):

    # the executors' Python (pyspark.worker) cannot import kafkalog_cli, however it is installed
    # (in site-packages or editable): a sitecustomize on its path refuses the import, as a
    # worker without the package does; the driver's planning has it
    blocker = tmp_path / "no-kafkalog"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoKafkalog:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('kafkalog_cli', 'pyspark_kafkalog'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _NoKafkalog())\n"
    )
    wrapper = tmp_path / "python-without-kafkalog"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in\n'
        f'  *" pyspark.worker "*) PYTHONPATH="{blocker}" exec "{sys.executable}" "$@" ;;\n'
        "esac\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    # a source pyspark found by itself runs in PYSPARK_DRIVER_PYTHON's Python on local[*]
    python = {"PYSPARK_PYTHON": str(wrapper), "PYSPARK_DRIVER_PYTHON": str(wrapper)}
    out = _answer(_run(tmp_path, _NO_PACKAGE_ON_WORKERS, **python))
    error = out["error"]
    assert error is not None
    assert "ImportError: kafkalog: this Spark worker's Python" in error, error[-3000:]
    assert "cannot import kafkalog_cli (No module named 'kafkalog_cli')" in error
    assert "--py-files" in error and "PYSPARK_PYTHON" in error
    # one task attempt, failing as it starts (a loaded machine takes tens of seconds for it)
    assert out["seconds"] < 90, out
