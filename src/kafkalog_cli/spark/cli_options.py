"""`--engine local|spark`, `--master URL` and `--conf KEY=VALUE`, shared by export, verify-crc,
retain and compact. Importing this does not import pyspark.

With --engine spark, the command's PATHS are what storage.paths_given.expand_sources makes of them
before the command sees them: globs and archives (a dir of log dirs) expanded, `file://` taken
off, every path absolute (an executor resolves a relative path in its own work dir), and so
are --quarantine and --server-properties. Only the commands that merely read (export,
verify-crc, the data source) take remote URIs (`s3a://`, `hdfs://`, `gs://`)."""

from __future__ import annotations

import dataclasses
import functools

import click


def _conf_pair(ctx, param, values):
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{v!r} is not KEY=VALUE (e.g. spark.executor.memory=4g)")
        out[key.strip()] = value
    return out


def engine_options(f=None, *, remote: bool = False):
    """The options, and the path handling above. `remote`: the command reads remote URIs (and
    expands its PATHS with either engine)."""
    if f is None:
        return functools.partial(engine_options, remote=remote)

    @functools.wraps(f)
    def wrapper(*args, engine, master, spark_conf, **kwargs):
        check_engine(engine, master, spark_conf)
        if engine == "spark" or remote:
            kwargs = driver_paths(kwargs, remote, spark=engine == "spark")
        if engine == "spark":
            from kafkalog_cli.spark.session import configure

            configure(spark_conf)
        return f(*args, engine=engine, master=master, **kwargs)

    wrapper = click.option(
        "--conf",
        "spark_conf",
        multiple=True,
        metavar="KEY=VALUE",
        callback=_conf_pair,
        help="With --engine spark: a Spark setting (spark.executor.memory=4g, "
        "spark.executorEnv.AWS_ENDPOINT_URL=...). Repeatable.",
    )(wrapper)
    wrapper = click.option(
        "--master",
        default=None,
        metavar="URL",
        help="With --engine spark: the Spark master (default local[*]). On a cluster the "
        "paths must be the same on every executor (shared storage); relative "
        "ones are made absolute here.",
    )(wrapper)
    wrapper = click.option(
        "--engine",
        type=click.Choice(["local", "spark"]),
        default="local",
        show_default=True,
        help="local: this machine. spark: one Spark task per unit of work "
        "(needs kafkalog-cli[spark] and Java 17).",
    )(wrapper)
    return wrapper


def driver_paths(kwargs: dict, remote: bool, spark: bool) -> dict:
    """The command's paths as the executors must see them (see the module's doc)."""
    from kafkalog_cli.errors import UsageError
    from kafkalog_cli.storage.paths_given import absolute, expand_sources, is_remote

    kwargs = dict(kwargs)
    paths = kwargs.get("paths")
    if paths is not None:
        expanded = expand_sources(paths, absolute=spark)
        if not remote:
            for p in expanded:
                if is_remote(p):
                    raise UsageError(
                        "a remote URI is read only by export, verify-crc and the kafkalog data source; "
                        "this command needs a local or mounted path",
                        path=p,
                    )
        path_type = type(paths[0]) if paths else str
        kwargs["paths"] = tuple(path_type(p) if not is_remote(p) else p for p in expanded)
    if not spark:
        return kwargs
    for name in ("quarantine_dir", "report_path"):
        if kwargs.get(name) is not None:
            kwargs[name] = absolute(kwargs[name])
    configs = kwargs.get("configs")
    if configs is not None and getattr(configs, "server_properties", None) is not None:
        kwargs["configs"] = dataclasses.replace(
            configs, server_properties=absolute(configs.server_properties)
        )
    return kwargs


def check_engine(engine: str, master: str | None, conf: dict | None = None) -> None:
    """--master or --conf without --engine spark is a usage error; --engine spark without pyspark
    or Java is one line and exit code 4."""
    if master is not None and engine != "spark":
        raise click.UsageError("--master needs --engine spark.")
    if conf and engine != "spark":
        raise click.UsageError("--conf needs --engine spark.")
    if engine == "spark":
        from kafkalog_cli.spark.session import check_java, check_pyspark

        check_pyspark()
        check_java()
