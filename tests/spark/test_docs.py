"""docs/spark.md prints the data source's schema as a StructType: it must be the one Spark gets."""

from __future__ import annotations

import pytest

from tests.helpers.paths import DOCS

DOC = DOCS / "spark.md"


def struct_type(level: str) -> str:
    from pyspark.sql.pandas.types import from_arrow_schema

    from kafkalog_cli.spark.arrow import arrow_schema, columns

    s = from_arrow_schema(arrow_schema(columns(level)))
    return "StructType([\n" + "".join(f"    {f!r},\n" for f in s.fields) + "])"


@pytest.mark.parametrize("level", ["record", "batch"])
def test_docs_show_the_schema_as_a_structtype(level):
    assert f"```python\n{struct_type(level)}\n```" in DOC.read_text()


def test_the_structtype_is_what_spark_reads(spark):
    from pyspark.sql.pandas.types import from_arrow_schema

    from kafkalog_cli.spark.arrow import arrow_schema, columns
    from tests.spark.helpers import FIXTURES

    df = spark.read.format("kafkalog").load(
        str(FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before")
    )
    assert df.schema == from_arrow_schema(arrow_schema(columns("record")))
