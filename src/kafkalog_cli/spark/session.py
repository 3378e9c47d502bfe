"""A SparkSession that behaves on a laptop: the running interpreter on both sides, no network, no UI,
no progress bars, warnings only, and one clear line when Java or pyspark is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from kafkalog_cli.errors import ExitCode, KafkalogError


class SparkUnavailableError(KafkalogError):
    """pyspark is not installed, or there is no Java to run it."""

    exit_code = ExitCode.INPUT


class SparkJobError(KafkalogError):
    """A Spark job failed outside kafkalog's code: an executor lost, kafkalog or a path missing there."""

    exit_code = ExitCode.INPUT


def first_line(e: BaseException) -> str:
    """The line of a Spark exception that says what went wrong: the Python worker's own
    exception if there is one (a KafkalogError keeps its path and byte position), else the first."""
    import re

    text = str(e)
    m = re.search(r"^kafkalog_cli\.errors\.\w+: (.+)$", text, re.M)
    if m:
        return m.group(1).strip()
    m = re.search(r"^(\w+(?:\.\w+)*(?:Error|Exception)): (.+)$", text, re.M)
    if m and "Traceback" in text:
        return f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2).strip()}"
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return type(e).__name__


def check_java() -> str:
    """The `java` Spark will run, or SparkUnavailableError saying how to get one."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        where = (
            f"JAVA_HOME={home} has no bin/java"
            if home
            else "no `java` on PATH and JAVA_HOME is not set"
        )
        raise SparkUnavailableError(f"--engine spark needs Java 17 or later: {where}")
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        raise SparkUnavailableError(
            f"--engine spark needs Java 17 or later: {java} -version failed ({e})"
        ) from None
    return java


def check_pyspark() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        raise SparkUnavailableError(
            f"--engine spark needs the spark extra ({e.name} is missing): pip install 'kafkalog-cli[spark]'"
        ) from None


_CONF: dict[str, str] = {}


def configure(conf: dict[str, str] | None) -> None:
    """Spark settings (a command's --conf) for the session get_session makes next."""
    _CONF.clear()
    _CONF.update(conf or {})


def is_local_master(master: str | None) -> bool:
    return master is None or master.startswith("local")


def get_session(master: str | None = None, app_name: str = "kafkalog", conf: dict | None = None):
    """The active SparkSession, or a new one on `master` (default local[*]) with kafkalog's
    data source registered."""
    check_pyspark()
    check_java()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        from kafkalog_cli.spark import register

        register(active)
        return active
    if is_local_master(master):
        # local workers must be this interpreter: another one would not have kafkalog
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    else:
        # on a cluster, an executor's Python is where PYSPARK_PYTHON (or the cluster) says
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    b = SparkSession.builder.appName(app_name).master(master or "local[*]")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    if is_local_master(master):
        settings["spark.driver.bindAddress"] = "127.0.0.1"
        settings["spark.driver.host"] = "127.0.0.1"
    settings.update(_CONF)
    settings.update(conf or {})
    for k, v in settings.items():
        b = b.config(k, v)
    try:
        spark = _quietly(b.getOrCreate)
    except Exception as e:  # the JVM did not start: say so in one line
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SparkUnavailableError(
            f"could not start Spark ({master or 'local[*]'}): {msg}"
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    if not is_local_master(master):
        _ship_package(spark)
    from kafkalog_cli.spark import register

    register(spark)
    return spark


def _quietly(fn):
    """Run `fn` with the JVM's start-up chatter (log4j's defaults banner, native-hadoop warnings)
    kept off the terminal; it goes to stderr only if the start fails."""
    import tempfile

    err = 2  # the JVM inherits the process's fd 2, whatever sys.stderr is
    try:
        saved = os.dup(err)
    except OSError:
        return fn()
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), err)
        try:
            return fn()
        except Exception:
            os.dup2(saved, err)
            raise
        finally:
            os.dup2(saved, err)
            os.close(saved)


def _ship_package(spark) -> None:
    """On a cluster, send this kafkalog to the executors (as --py-files would): a zip of the
    installed package, written under the driver's SparkFiles dir, which Spark deletes when it
    stops. The executors must have kafkalog's dependencies (pip install 'kafkalog-cli[spark]',
    or a packed environment: docs/spark.md)."""
    import tempfile
    import zipfile
    from pathlib import Path

    from pyspark import SparkFiles

    import kafkalog_cli

    root = Path(kafkalog_cli.__file__).parent
    where = Path(tempfile.mkdtemp(prefix="kafkalog-ship-", dir=SparkFiles.getRootDirectory()))
    name = where / "kafkalog_cli.zip"
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(root.rglob("*.py")) + [root / "py.typed"]:
            if p.exists():
                z.write(p, Path("kafkalog_cli") / p.relative_to(root))
    spark.sparkContext.addPyFile(str(name))
