"""One local[2] SparkSession for the whole test session. Without pyspark (the spark extra) or
without Java the Spark tests are skipped, and the reason says which is missing (an error instead
where KAFKALOG_TESTS_NO_SKIP is set, as .ci/floors sets it)."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from tests.spark.helpers import BUCKET, archive_of

_MISSING = None
if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None:
    _MISSING = "pyspark/pyarrow not installed (pip install 'kafkalog-cli[spark]')"
elif not (
    shutil.which("java")
    or (
        os.environ.get("JAVA_HOME")
        and os.path.exists(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    )
):
    _MISSING = "no Java on PATH or in JAVA_HOME (Spark needs Java 17)"


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    if (
        _MISSING
        and os.environ.get("KAFKALOG_TESTS_NO_SKIP")
        and any(str(i.fspath).startswith(here) for i in items)
    ):
        # .ci/floors: a floors run that skipped the tests it is there for would pass having tested nothing
        raise pytest.UsageError(
            f"KAFKALOG_TESTS_NO_SKIP is set and the Spark tests would be skipped: {_MISSING}"
        )
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.spark)
            if _MISSING:
                item.add_marker(pytest.mark.skip(reason=f"Spark tests skipped: {_MISSING}"))


@pytest.fixture(scope="session")
def spark():
    from kafkalog_cli.spark.session import get_session

    session = get_session("local[2]", app_name="kafkalog-tests")
    yield session
    session.stop()


@pytest.fixture
def pushdown(spark):
    """`kafkalog` with filter pushdown for the test, whatever `register` chose for this Spark:
    for tests of the index-served reads, whose queries all push something (on pyspark 4.1-4.3
    a DataFrame's later query with nothing to push would reuse an earlier query's reader:
    tests/spark/test_pushdown_reuse.py). `register` restores the choice afterwards."""
    from pyspark.sql import datasource

    from kafkalog_cli.spark import register
    from kafkalog_cli.spark.datasource import KafkalogPushdownDataSource

    if not hasattr(datasource, "EqualTo"):
        pytest.skip("pyspark 4.0 has no filter pushdown for Python data sources")
    before = spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KafkalogPushdownDataSource)
    yield "kafkalog"
    spark.conf.set("spark.sql.python.filterPushdown.enabled", before)
    register(spark)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """(local archive, s3 URI of its copy, environment for subprocesses)."""
    skip = (
        pytest.fail if os.environ.get("KAFKALOG_TESTS_NO_SKIP") else pytest.skip
    )  # .ci/floors sets it
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as e:
        skip(f"moto[server] is not installed ({e.name})")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        server.start()
    except Exception as e:  # a port refused, a missing server dependency
        skip(f"moto's S3 server did not start: {e}")
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        from pyarrow import fs

        local = archive_of(tmp_path_factory.mktemp("s3src"))
        s3fs = fs.S3FileSystem(
            endpoint_override=f"{host}:{port}",
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        s3fs.create_dir(BUCKET)
        for p in sorted(local.rglob("*")):
            if p.is_file():
                with s3fs.open_output_stream(f"{BUCKET}/archive/{p.relative_to(local)}") as out:
                    out.write(p.read_bytes())
        yield local, f"s3a://{BUCKET}/archive", env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
