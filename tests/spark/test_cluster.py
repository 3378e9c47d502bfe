"""A Spark standalone cluster on 127.0.0.1 (a master and one worker, from pyspark's own
spark-class): export and verify-crc with relative paths give what --engine local gives. An
executor runs in the worker's work dir, so a path not made absolute on the driver fails there.
Marked `cluster`; skipped without Java (tests/spark/conftest.py) or when the cluster cannot start."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spark.helpers import FIXTURES

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"
KAFKALOG = Path(sys.executable).with_name("kafkalog")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 180) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if log.exists() and text in log.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.5)
    return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """spark://127.0.0.1:PORT, with one worker (1 core, 1 GiB) whose work dir is its own."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    root = tmp_path_factory.mktemp("cluster")
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(root / "local"),
        "PYSPARK_PYTHON": sys.executable,
    }
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        master_log = root / "master.log"
        master = subprocess.Popen(
            [
                str(spark_class),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(_free_port()),
            ],
            stdout=open(master_log, "w"),
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
        procs.append(master)
        if not _wait_for(master_log, "I have been elected leader", master):
            pytest.skip(f"the Spark master did not start: {master_log.read_text()[-500:]}")
        worker_log = root / "worker.log"
        (root / "work").mkdir()
        worker = subprocess.Popen(
            [
                str(spark_class),
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(root / "work"),
            ],
            stdout=open(worker_log, "w"),
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root / "work",
        )
        procs.append(worker)
        if not _wait_for(worker_log, "Successfully registered with master", worker):
            pytest.skip(f"the Spark worker did not register: {worker_log.read_text()[-500:]}")
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def kafkalog(cwd: Path, *args: str, tmp: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if tmp is not None:  # the driver's temporary files (and Spark's) go there, to be looked at
        tmp.mkdir(exist_ok=True)
        env.update(TMPDIR=str(tmp), SPARK_LOCAL_DIRS=str(tmp))
    return subprocess.run(
        [str(KAFKALOG), *args], cwd=cwd, capture_output=True, text=True, timeout=900, env=env
    )


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A dir holding `data` (three partitions of a log dir), the cwd of the runs below."""
    d = tmp_path_factory.mktemp("shared")
    for p in ("multi-segment-0", "txn-0", "codec-zstd-0"):
        shutil.copytree(BASIC / p, d / "data" / p)
    return d


def test_verify_crc_with_relative_paths_on_a_cluster(cluster, shared):
    local = kafkalog(shared, "verify-crc", "data", "--format", "json")
    on_cluster = kafkalog(
        shared,
        "verify-crc",
        "data",
        "--format",
        "json",
        "--engine",
        "spark",
        "--master",
        cluster,
        "--conf",
        "spark.executor.memory=512m",
    )
    assert local.returncode == on_cluster.returncode == 0, on_cluster.stderr

    def summary(p):
        return {
            k: v
            for k, v in __import__("json").loads(p.stdout.splitlines()[-1]).items()
            if k != "elapsed_s"
        }

    assert summary(on_cluster) == summary(local)
    assert summary(local)["files"] == 4


def test_export_with_relative_paths_on_a_cluster_is_the_local_export(cluster, shared, tmp_path):
    local = kafkalog(
        shared, "export", "data", str(tmp_path / "local"), "--to", "parquet", "--include-control"
    )
    assert local.returncode == 0, local.stderr
    out = f"out-{os.getpid()}"
    on_cluster = kafkalog(
        shared,
        "export",
        "data",
        out,
        "--to",
        "parquet",
        "--include-control",
        "--engine",
        "spark",
        "--master",
        cluster,
        "--conf",
        "spark.executor.memory=512m",
        tmp=tmp_path / "tmp",
    )
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert on_cluster.stdout == f"exported 675 records from 4 segments to {shared / out}\n"

    def tree(root: Path) -> dict:
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    assert tree(shared / out) == tree(tmp_path / "local")
    assert not list((tmp_path / "tmp").rglob("*.zip"))  # the shipped package is gone with Spark
    shutil.rmtree(shared / out)
