"""Run a per-partition library function over many partitions: in this process, over a process pool
(engine="local"), or as Spark tasks (engine="spark").

    reports = run_partitions(verify_partition, dirs, engine="spark", master="spark://host:7077",
                             args=(options,))

`fn(partition_dir, *args, **kwargs)` must be a module-level function of an installed module, and its
arguments and result picklable. The reports come back in the order of `partition_dirs`, whatever
the engine. A KafkalogError raised for one partition is raised again here, the same class with the
same message, path and position, so a command's exit code does not depend on the engine.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from kafkalog_cli.allocator import tune_for_streaming
from kafkalog_cli.errors import KafkalogError

ENGINES = ("local", "spark")


def _call(fn, args, kwargs, star, item):
    """Run one partition; errors travel back as plain data (exceptions with extra fields do not
    survive pickling, and Spark would bury them in a Java stack trace)."""
    index, path = item
    tune_for_streaming()
    try:
        lead = tuple(path) if star else (path,)
        return index, ("ok", fn(*lead, *args, **kwargs))
    except KafkalogError as e:
        cls = type(e)
        return index, ("error", cls.__module__, cls.__qualname__, e.message, e.path, e.position)


def _rebuild(payload) -> KafkalogError:
    _, module, qualname, message, path, position = payload
    try:
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        err = cls.__new__(cls)
        KafkalogError.__init__(err, message, path, position)
    except Exception:  # a class we cannot rebuild still gives its one line
        err = KafkalogError(message, path, position)
    return err


def result(value):
    """A report from run_partitions(..., errors="return"): raise it again if it is an error."""
    if isinstance(value, KafkalogError):
        raise value
    return value


def run_partitions(
    fn: Callable[..., Any],
    partition_dirs: Sequence[Path | str],
    *,
    engine: str = "local",
    master: str | None = None,
    jobs: int = 0,
    args: tuple = (),
    kwargs: dict | None = None,
    spark=None,
    star: bool = False,
    errors: str = "raise",
    preload: Sequence[str] = (),
) -> list[Any]:
    """[fn(d, *args, **kwargs) for d in partition_dirs], in that order, run by `engine`. Items that
    are Paths are passed as str; any other picklable item is passed as it is.

    local: `jobs` worker processes (0: one per core; 1, or a single partition: in this process).
    spark: one Spark task per partition on `master` (default local[*]), or on `spark` if given.
    star: each item is a tuple of leading arguments, fn(*item, *args, **kwargs).
    errors: "raise" raises the first KafkalogError (in item order) once all are done; "return"
    puts the rebuilt error in that item's place (see `result`). preload: modules fn imports when
    it runs (pyarrow.parquet, for export), imported once by the local pool's fork server."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    items = [(i, str(d) if isinstance(d, Path) else d) for i, d in enumerate(partition_dirs)]
    call = partial(_call, fn, tuple(args), dict(kwargs or {}), star)
    if not items:
        return []
    if engine == "spark":
        if spark is None:
            from kafkalog_cli.spark.session import get_session

            spark = get_session(master)
        sc = spark.sparkContext
        try:
            results = sc.parallelize(items, numSlices=len(items)).map(call).collect()
        except (
            Exception
        ) as e:  # an executor lost, kafkalog missing there: one line, not a JVM trace
            from kafkalog_cli.spark.session import SparkJobError, first_line

            raise SparkJobError(f"Spark job failed: {first_line(e)}") from None
    else:
        workers = jobs if jobs > 0 else (os.cpu_count() or 1)
        workers = min(workers, len(items))
        if workers <= 1:
            results = [call(it) for it in items]
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            ctx = multiprocessing.get_context("forkserver" if hasattr(os, "fork") else "spawn")
            if ctx.get_start_method() == "forkserver":
                # the workers fork from a server that has imported fn's module and `preload`
                # (pyarrow, for export) once, instead of each importing them
                ctx.set_forkserver_preload([fn.__module__, *preload])
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                results = list(pool.map(call, items, chunksize=1))
    out: list[Any] = [None] * len(items)
    for index, payload in sorted(results, key=lambda r: r[0]):
        if payload[0] == "error":
            if errors == "raise":
                raise _rebuild(payload)
            out[index] = _rebuild(payload)
        else:
            out[index] = payload[1]
    return out
