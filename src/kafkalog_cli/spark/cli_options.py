"""`--engine local|spark` and `--master URL`, shared by export, verify-crc, retain and compact.
Importing this does not import pyspark."""
from __future__ import annotations

import click


def engine_options(f):
    f = click.option("--master", default=None, metavar="URL",
                     help="With --engine spark: the Spark master (default local[*]). On a cluster the "
                          "paths must be the same on every executor (shared storage).")(f)
    f = click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
                     help="local: this machine. spark: one Spark task per unit of work "
                          "(needs kafkalog-cli[spark] and Java 17).")(f)
    return f


def check_engine(engine: str, master: str | None) -> None:
    """--master without --engine spark is a usage error; --engine spark without pyspark or Java
    is one line and exit code 4."""
    if master is not None and engine != "spark":
        raise click.UsageError("--master needs --engine spark.")
    if engine == "spark":
        from kafkalog_cli.spark.session import check_java, check_pyspark

        check_pyspark()
        check_java()
