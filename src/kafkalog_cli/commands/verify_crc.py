"""`kafkalog verify-crc`: check every batch's CRC, sizes and offsets; report every problem."""

from __future__ import annotations

import json
import sys
import time

import click

from kafkalog_cli.commands.common import one_line_errors as _one_line_errors
from kafkalog_cli.commands.options import (
    InputPath,
    format_option,
    jobs_option,
    partition_filter_options,
)
from kafkalog_cli.errors import ExitCode
from kafkalog_cli.spark.cli_options import check_engine, engine_options

PROGRESS_MIN_BYTES = 64 << 20


@click.command(
    "verify-crc",
    short_help="Check every batch's CRC, sizes and offsets; exit 1 on problems.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, required=True, type=InputPath())
@click.option(
    "--deep",
    is_flag=True,
    help="Also decode records: legacy inner-message CRCs, record counts against the header, "
    "decompression failures, record offsets.",
)
@format_option(
    "text: one line per problem and a summary. json: one object per problem, then a summary object."
)
@jobs_option("Worker processes (0: one per core). Big files are split at batch boundaries.")
@partition_filter_options
@engine_options(remote=True)
@_one_line_errors
def verify_crc(paths, deep, fmt, jobs, only, engine, master):
    """Verify the CRC of every batch in segments, partition dirs or log dirs.

    PATHS may also be globs, `file://` paths and remote URIs (`s3a://`, `s3://`, `hdfs://`,
    `gs://`), read through pyarrow.fs by ranged reads; positions are the remote file's.

    Checks, per batch: the v2 CRC-32C; the legacy CRC-32 of each entry (and with --deep of every
    message inside a compressed wrapper); the size field (below 14, or a v2 batch below its
    61-byte header, is corrupt; an incomplete batch at the end is reported as trailing bytes);
    offsets increasing within and across batches, segment files and a partition's segments
    (a segment's first offset is at least its base offset). With --deep, records are decoded and
    counted against the header.

    Each problem is one line, `<file>: byte <position>: <what>` with the batch's offsets and its
    stored and computed CRC; then one summary line. After a corrupt size field the rest of that
    file cannot be read: it is reported and verification goes on with the next file.

    \b
    Exit codes: 0 every batch is sound; 1 problems were found; 2 usage; 4 a path is missing,
    is not a segment (.log or KRaft .checkpoint), a log dir or a partition dir, or a file could
    not be read (a dangling symlink, a directory or FIFO in a segment's place). Every other path
    is still verified and reported, with the summary; 4 wins over 1, since a run that could not
    read everything cannot vouch for it.

    \b
    Examples:
      kafkalog verify-crc /var/lib/kafka/data
      kafkalog verify-crc orders-3 --deep --jobs 4
      kafkalog verify-crc orders-3/00000000000000000000.log --format json | jq .position
      kafkalog verify-crc s3a://backups/kafka/broker-0 --engine spark
    """
    from kafkalog_cli.commands.common import jobs_or_cores
    from kafkalog_cli.ops.verify import (
        group_paths_lenient,
        total_bytes,
        unreadable_report,
        verify_groups,
    )
    from kafkalog_cli.storage.logdir import FilterTally

    check_engine(engine, master)
    t0 = time.perf_counter()
    from kafkalog_cli.commands.common import note_left_out

    tally = FilterTally(only)
    groups, bad_paths = group_paths_lenient(paths, tally.notes(note_left_out("not read")))
    if only:  # chosen here, on the driver: the local workers and the Spark tasks get only these
        groups, bad_paths = _matching(groups, bad_paths, tally)
        tally.check(paths)
    total = total_bytes(groups)
    progress = None
    on_progress = None
    if sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES and engine == "local":
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        progress = Progress(
            "verify-crc",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        task = progress.add_task("verify", total=total)
        progress.start()
        on_progress = lambda n: progress.advance(task, n)  # noqa: E731
    try:
        if engine == "spark":
            from kafkalog_cli.spark.jobs import verify_groups_spark

            reports = verify_groups_spark(groups, deep=deep, master=master)
        else:
            reports = verify_groups(
                groups, deep=deep, jobs=jobs_or_cores(jobs), on_progress=on_progress
            )
    finally:
        if progress is not None:
            progress.stop()
    # paths that could not be verified at all take their place among the others' reports
    for at, err in reversed(bad_paths):
        reports.insert(at, unreadable_report(err))
    elapsed = time.perf_counter() - t0
    files = sum(len(r.files) for r in reports)
    batches = sum(r.batches for r in reports)
    nbytes = sum(r.bytes for r in reports)
    problems = [p for r in reports for p in r.problems]
    unreadable = any(r.unreadable for r in reports)
    indexes = _zero_filled_indexes(groups)
    index_problems = [z for z in indexes if z.problem]
    out = sys.stdout
    from kafkalog_cli.commands.common import one_line
    from kafkalog_cli.ops.verify import UNREADABLE

    for p in problems:
        if p.kind == UNREADABLE:  # also on stderr: the run is incomplete
            click.echo(f"kafkalog: {one_line(p.line())}", err=True)
    if fmt == "json":
        for p in problems:
            out.write(json.dumps(p.to_dict()) + "\n")
        for z in indexes:
            out.write(json.dumps(z.to_dict()) + "\n")
        out.write(
            json.dumps(
                {
                    "kind": "summary",
                    "files": files,
                    "batches": batches,
                    "bytes": nbytes,
                    "problems": len(problems) + len(index_problems),
                    "notes": len(indexes) - len(index_problems),
                    "elapsed_s": round(elapsed, 3),
                    "ok": not problems and not index_problems,
                }
            )
            + "\n"
        )
    else:
        for p in problems:
            out.write(one_line(p.line()) + "\n")
        for z in index_problems:
            out.write(one_line(f"{z.path}: byte {z.position}: {z.message()}") + "\n")
        for z in indexes:
            if not z.problem:
                click.echo(
                    one_line(f"kafkalog: note: {z.path}: byte {z.position}: {z.message()}"),
                    err=True,
                )
        from kafkalog_cli.render.human import verify_summary

        out.write(
            verify_summary(files, batches, nbytes, len(problems) + len(index_problems), elapsed)
            + "\n"
        )
    out.flush()
    if unreadable:
        sys.exit(int(ExitCode.INPUT))
    if problems or index_problems:
        sys.exit(int(ExitCode.PROBLEMS))


def _zero_filled_indexes(groups) -> list:
    """The zero-filled index tails of the local partition dirs verified (ops.index_health): notes
    where the broker rebuilds them on load, problems where it keeps them."""
    from pathlib import Path

    from kafkalog_cli.ops.index_health import zero_filled_in_dir
    from kafkalog_cli.storage.paths_given import is_remote

    out = []
    for name, files in groups:
        d = Path(name)
        if is_remote(name) or not d.is_dir():
            continue
        try:
            out.extend(zero_filled_in_dir(d))
        except Exception:  # a partition the CRC walk reported on already
            continue
    return out


def _matching(groups, bad_paths, tally):
    """The groups (one per partition dir, or per file given) that --topic/--partition match, and
    the unreadable paths' places among them."""
    import posixpath
    from pathlib import Path

    from kafkalog_cli.storage.paths_given import is_remote

    kept, places = [], []
    for i, (name, files) in enumerate(groups):
        places.append(len(kept))
        if is_remote(
            name
        ):  # no is_dir() there: a group is a partition dir unless it is its one file
            keep = bool(
                tally.keep_dirs([Path(posixpath.dirname(name) if files == [name] else name)])
            )
        else:
            keep = tally.keep_path(name)
        if keep:
            kept.append((name, files))
    places.append(len(kept))
    return kept, [(places[at], err) for at, err in bad_paths]
