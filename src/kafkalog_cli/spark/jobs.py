"""The per-partition (or per-log-dir) units that `--engine spark` runs as Spark tasks. Each calls
the library function its command calls with `--engine local`; nothing here decides anything."""

from __future__ import annotations


def verify_group(directory: str, files: list[str], deep: bool = False):
    """One group of `ops.verify.group_paths` (a partition dir and its .log files, or one file)
    verified in this process: ops.verify.verify_groups on that group alone."""
    from kafkalog_cli.ops.verify import verify_groups

    return verify_groups([(directory, files)], deep=deep, jobs=1)[0]


def verify_groups_spark(groups, *, deep: bool = False, master: str | None = None, spark=None):
    """ops.verify.verify_groups with one Spark task per group; the same PartitionReports, in order."""
    from kafkalog_cli.spark.engine import run_partitions

    return run_partitions(
        verify_group,
        [(d, list(f)) for d, f in groups],
        engine="spark",
        master=master,
        spark=spark,
        star=True,
        kwargs={"deep": deep},
    )


def run_log_dirs_spark(
    operation, groups, *, master: str | None = None, spark=None, errors: str = "raise", **run
):
    """ops.runner.run_log_dir (lock, plan, apply) with one Spark task per log dir of `groups`;
    the Outcomes, in order. `run` and `errors`: as run_log_dir's and run_partitions'."""
    from kafkalog_cli.ops.runner import run_log_dir
    from kafkalog_cli.spark.engine import run_partitions

    return run_partitions(
        run_log_dir,
        [(operation, d, list(p)) for d, p in groups.items()],
        engine="spark",
        master=master,
        spark=spark,
        star=True,
        kwargs=run,
        errors=errors,
    )
