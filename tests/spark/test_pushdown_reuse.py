"""Issue 15, item 1: queries on one DataFrame (and one view of it) give the rows a plain scan
gives, whatever an earlier query pushed down. pyspark 4.1-4.3 keep a DataFrame's first
pushed-down reader for its later queries; `register` must not let that reach the answers."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.spark.helpers import FIXTURES

BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"
MULTI = BASIC / "multi-segment-0"

# (query on the DataFrame or the view `t`, what pandas says about the whole table)
SEQUENCE = [
    ("offset >= 500", lambda d: d.offset >= 500),
    (
        "offset >= 0 OR timestamp < timestamp_millis(0)",
        lambda d: (d.offset >= 0) | (d.timestamp < 0),
    ),
    ("sql: offset >= 590", lambda d: d.offset >= 590),
    ("sql:", None),
    ("", None),
    (
        "topic = 'multi-segment' AND offset < 5",
        lambda d: (d.topic == "multi-segment") & (d.offset < 5),
    ),
    ("topic LIKE 'multi%'", lambda d: d.topic.str.startswith("multi")),
    ("timestamp >= timestamp_millis(1700000400000)", lambda d: d.timestamp >= 1700000400000),
    ("sql: topic = 'txn'", lambda d: d.topic == "txn"),
    (
        "offset IN (1, 2, 3) OR partition = 7",
        lambda d: d.offset.isin([1, 2, 3]) | (d.partition == 7),
    ),
    ("sql:", None),
    ("offset = 299", lambda d: d.offset == 299),
    ("", None),
]


def _count(spark, df, query: str) -> int:
    if query.startswith("sql:"):
        where = query[4:].strip()
        sql = "select count(*) from t" + (f" where {where}" if where else "")
        return spark.sql(sql).collect()[0][0]
    return (df.filter(query) if query else df).count()


def test_the_issues_queries_on_one_dataframe_and_view(spark):
    df = spark.read.format("kafkalog").load(str(MULTI))
    assert df.filter("offset >= 500").count() == 100
    assert df.filter("offset >= 0 OR timestamp < timestamp_millis(0)").count() == 600
    df.createOrReplaceTempView("t")
    assert spark.sql("select count(*) from t where offset >= 590").collect()[0][0] == 10
    assert spark.sql("select count(*) from t").collect()[0][0] == 600
    assert df.count() == 600


def test_a_sequence_of_pushable_and_other_queries_matches_a_plain_scan(spark):
    whole = (
        spark.read.format("kafkalog")
        .option("includePayload", "false")
        .option("includeHeaders", "false")
    )
    plain = (
        whole.load(str(BASIC))
        .selectExpr("topic", "partition", "offset", "unix_millis(timestamp) AS timestamp")
        .toPandas()
    )
    df = whole.load(str(BASIC))
    df.createOrReplaceTempView("t")
    got, want = [], []
    for query, keep in SEQUENCE:
        got.append((query, _count(spark, df, query)))
        want.append((query, len(plain) if keep is None else int(keep(plain).sum())))
    assert got == want
    # and a second DataFrame of the same path, after all that
    assert spark.read.format("kafkalog").load(str(BASIC)).count() == len(plain)


def test_register_says_whether_it_pushes_down(spark):
    from kafkalog_cli.spark import register
    from kafkalog_cli.spark.datasource import pushdown_is_scan_scoped

    pushes = register(spark)
    assert pushes == pushdown_is_scan_scoped(spark)
    jvm = spark.sparkContext._jvm
    builder = jvm.java.lang.Class.forName(
        "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"
    )
    scan_scoped = "readInfo" in [f.getName() for f in builder.getDeclaredFields()]
    assert pushes == scan_scoped
    if not pushes:  # a Spark that would leak: pushdown stays as the user had it
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "false"


def test_the_drop_in_reads_the_same_answer_from_the_spark_jar(spark):
    """pyspark_kafkalog's source decides pushdown in a Python worker, which has no JVM to ask:
    it reads the fields of PythonScanBuilder from the Spark jar, which must be the JVM's."""
    import pyspark

    from kafkalog_cli.spark.datasource import (
        declared_fields,
        jar_scan_scoped,
        pushdown_is_scan_scoped,
    )

    jvm = spark.sparkContext._jvm
    python = "org.apache.spark.sql.execution.datasources.v2.python"
    for name in (f"{python}.PythonScanBuilder", f"{python}.PythonDataSourceV2"):
        fields = jvm.java.lang.Class.forName(name).getDeclaredFields()
        (jar,) = (Path(pyspark.__file__).parent / "jars").glob("spark-sql_*.jar")
        with zipfile.ZipFile(jar) as z:
            data = z.read(name.replace(".", "/") + ".class")
        assert declared_fields(data) == {f.getName() for f in fields}
    assert jar_scan_scoped() == pushdown_is_scan_scoped(spark)


@pytest.mark.parametrize(
    "topic, partition, want",
    [
        ("multi-segment", None, {"multi-segment"}),
        ("codec-*", None, {"codec-gzip", "codec-lz4", "codec-none", "codec-snappy", "codec-zstd"}),
        ("codec-g*, txn", "0", {"codec-gzip", "txn"}),
    ],
)
def test_topic_and_partition_options_choose_the_partitions(spark, topic, partition, want):
    r = spark.read.format("kafkalog").option("topic", topic)
    if partition is not None:
        r = r.option("partition", partition)
    df = r.load(str(BASIC))
    assert {row["topic"] for row in df.select("topic").distinct().collect()} == want


def test_topic_option_matching_nothing_is_an_error(spark):
    with pytest.raises(Exception) as e:
        spark.read.format("kafkalog").option("topic", "nope-*").load(str(BASIC)).count()
    assert "no partition dir matches --topic 'nope-*'" in str(e.value)
