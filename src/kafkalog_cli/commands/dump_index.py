"""`kafkalog dump-index`: offset, time and transaction indexes and producer snapshots, as
kafka-dump-log prints them (the same KafkaDumper), or as JSON Lines."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors as _one_line_errors
from kafkalog_cli.commands.options import InputPath, format_option, partition_filter_options
from kafkalog_cli.errors import CorruptIndexError, ExitCode, InputError, KafkalogError, one_line
from kafkalog_cli.ops.verify_index import DEFAULT_MAX_MESSAGE_SIZE

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot")
_ENTRY_SIZE = {".index": 8, ".timeindex": 12, ".txnindex": 34}


@click.command(
    "dump-index",
    short_help="Dump or check .index, .timeindex, .txnindex and .snapshot files.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, required=True, type=InputPath())
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Check .index and .timeindex entries against the .log, and zero-filled slots after them. "
    "text: kafka-dump-log's output, kafkalog's problems on stderr; json: only the problems "
    "and notes, then a summary. Goes on past a damaged file.",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="Run Kafka's sanityCheck on .index and .timeindex files only (and report zero-filled slots).",
)
@click.option(
    "--max-message-size",
    type=int,
    default=DEFAULT_MAX_MESSAGE_SIZE,
    show_default=True,
    help="Largest batch expected when checking .index entries against the log.",
)
@format_option("text: kafka-dump-log's exact text. json: JSON Lines, one object per entry.")
@partition_filter_options
@_one_line_errors
def dump_index(paths, verify_index_only, index_sanity_check, max_message_size, fmt, only):
    """Dump .index, .timeindex, .txnindex and producer .snapshot files.

    PATHS are index files, partition dirs (all their index files, in offset order) or log dirs
    (every partition's). In the default --format text the output is kafka-dump-log 3.3.1's, byte for byte,
    including the mismatch and time-index reports it prints on stderr after all files.

    \b
    Exit codes: 0 done (mismatches and a corrupt producer snapshot are reported, as Kafka
    does, not failures); 1 an index with zero-filled slots that the broker keeps (a segment it
    does not recover on load; `kafkalog recover --repair` rebuilds it: those it rebuilds are
    notes); 2 usage; 3 corrupt input (a failed --index-sanity-check, an entry pointing at no
    batch of the .log; with --verify-index-only every other file is still checked); 4 missing,
    unreadable or unrecognised path, or an index without its .log: the other paths are still
    dumped first. The same in both formats.

    \b
    Examples:
      kafkalog dump-index /var/lib/kafka/data/orders-3/00000000000000000000.index
      kafkalog dump-index orders-3 --verify-index-only
      kafkalog dump-index orders-3 --format json | jq 'select(.kind == "index_mismatch")'
    """
    if verify_index_only and index_sanity_check:
        raise click.UsageError("--verify-index-only and --index-sanity-check exclude each other.")
    from kafkalog_cli.storage.logdir import FilterTally

    targets, bad = [], []
    tally = FilterTally(only)
    for raw in paths:  # a path that cannot be read does not stop the others
        try:
            targets.extend(expand_index_paths([raw], tally))
        except InputError as e:
            bad.append(e)
    tally.check(paths)
    health = _zero_filled(targets) if verify_index_only or index_sanity_check else {}
    if fmt == "json":
        failed = _dump_json(
            targets, verify_index_only, index_sanity_check, max_message_size, health
        )
    else:
        failed = _dump_kafka(targets, verify_index_only, index_sanity_check, max_message_size)
        for (
            z
        ) in health.values():  # notes only in json: stderr stays kafka-dump-log's where all is well
            if z.problem:
                click.echo(
                    f"kafkalog: {one_line(f'{z.path}: byte {z.position}: {z.message()}')}", err=True
                )
    if bad:
        for e in bad[:-1]:
            click.echo(f"kafkalog: {one_line(str(e))}", err=True)
        raise bad[-1]
    if failed:
        # one line per file: a .timeindex is checked against its .index and both against the .log
        first: dict[str, KafkalogError] = {}
        for e in failed:
            first.setdefault(str(e), e)
        failed = list(first.values())
        for e in failed[1:]:
            click.echo(f"kafkalog: {one_line(str(e))}", err=True)
        raise failed[0]
    if any(z.problem for z in health.values()):
        sys.exit(int(ExitCode.PROBLEMS))


def _zero_filled(targets) -> dict:
    """{index path: ops.index_health.ZeroFilledIndex} for the .index/.timeindex files given."""
    from kafkalog_cli.ops.index_health import zero_filled_in_dir

    wanted = {
        str(Path(t).absolute()): t for t in targets if Path(t).suffix in (".index", ".timeindex")
    }
    out = {}
    for d in sorted({Path(t).absolute().parent for t in wanted}):
        try:
            found = zero_filled_in_dir(d)
        except KafkalogError:
            continue  # the dump itself reports what does not read
        for z in found:
            if z.path in wanted:
                out[wanted[z.path]] = z
    return out


def expand_index_paths(paths, tally=None) -> list[str]:
    """Files as given (they must be index files); directories to their index files in order;
    `tally` (a storage.logdir.FilterTally): --topic/--partition, on directories and files alike."""
    from kafkalog_cli.commands.common import note_left_out
    from kafkalog_cli.storage.logdir import expand_paths

    out: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = [
                str(f)
                for f in expand_paths(
                    [raw], INDEX_SUFFIXES, on_left_out=note_left_out("not read"), tally=tally
                )
            ]
            out.extend(found)
            continue
        if not p.exists():
            raise InputError("no such file or directory", path=raw)
        if not p.is_file():
            raise InputError("not a regular file or directory", path=raw)
        if p.suffix not in INDEX_SUFFIXES:
            raise InputError(
                f"not an index file (dump-index reads {', '.join(INDEX_SUFFIXES)}; "
                "use dump-log for .log files)",
                path=raw,
            )
        if tally is None or tally.keep_path(raw):
            out.append(raw)
    return out


def _options(verify_index_only, index_sanity_check, max_message_size):
    from kafkalog_cli.render.kafka import DumpOptions

    return DumpOptions(
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
    )


def _check_log_beside(path: Path) -> None:
    from kafkalog_cli.storage.live_files import listed, was_listed

    log = path.with_name(path.name.split(".")[0] + ".log")
    if was_listed(path):  # a live broker may have moved or removed the segment since the listing
        listed([log])
        if not log.exists():
            return  # read where it went (its .deleted name), or as it stands without it
    if not log.exists():
        raise InputError(
            f"no {log.name} beside this index (its entries are checked against the log)",
            path=str(path),
            position=0,
        )


def _odd_size(path: Path) -> tuple[int, int] | None:
    """(position, size) of a trailing partial entry, which Kafka ignores."""
    size_of = _ENTRY_SIZE.get(path.suffix)
    if size_of is None:
        return None
    try:
        n = path.stat().st_size
    except OSError:
        return None
    rest = n % size_of
    return (n - rest, rest) if rest else None


def _dump_kafka(targets, verify_index_only, index_sanity_check, max_message_size) -> None:
    from kafkalog_cli.render.kafka import KafkaDumper

    dumper = KafkaDumper(
        sys.stdout.buffer,
        sys.stderr.buffer,
        _options(verify_index_only, index_sanity_check, max_message_size),
    )
    warnings = []
    failed: list[KafkalogError] = []
    for t in targets:
        path = Path(t)
        try:
            try:
                dumper.dump(t)  # prints "Dumping <path>" first, as Kafka does before it fails
            except InputError as e:
                if path.suffix in (".index", ".timeindex"):
                    _check_log_beside(path)
                raise e.located(path=str(path.absolute()))
            except KafkalogError as e:
                raise e.located(path=str(path.absolute()))
        except KafkalogError as e:
            if not verify_index_only:
                raise
            failed.append(e)  # reported at the end; every other file is still checked
            continue
        odd = _odd_size(path)
        if odd is not None:
            warnings.append(
                f"kafkalog: {t}: byte {odd[0]}: {odd[1]} trailing bytes are not a whole "
                f"{_ENTRY_SIZE[path.suffix]}-byte entry (ignored, as Kafka does)"
            )
    dumper.finish()
    for w in warnings:
        click.echo(w, err=True)
    return failed


def _dump_json(
    targets, verify_index_only, index_sanity_check, max_message_size, health
) -> list[KafkalogError]:
    from kafkalog_cli.ops.verify_index import sanity_check
    from kafkalog_cli.render.index_json import index_objects, sanity_object
    from kafkalog_cli.render.jsonl import dumps
    from kafkalog_cli.render.schema import FILE, TRAILING_BYTES

    out = sys.stdout
    failures: list[KafkalogError] = []

    def emit(obj):
        out.write(dumps(obj) + "\n")

    problems = notes = 0
    for t in targets:
        path = Path(t)
        suffix = path.suffix
        if not verify_index_only:
            emit(FILE.object(file=t, type=suffix[1:]))
        checked = suffix in (".index", ".timeindex")
        if t in health:
            emit(health[t].to_dict())
            problems += health[t].problem
            notes += not health[t].problem
        try:
            if checked and index_sanity_check:
                sanity_check(path)
                emit(sanity_object(t))
            elif checked and verify_index_only:
                # problems only: the mismatches, or the error that stops this file's check
                try:
                    _check_log_beside(path)
                    found = verify_objects(path, t, max_message_size)
                except KafkalogError as e:
                    e.located(path=t)
                    emit(
                        {
                            "kind": "problem",
                            "problem": "unreadable" if isinstance(e, InputError) else "corrupt",
                            "file": t,
                            "position": e.position,
                            "message": e.message,
                        }
                    )
                    failures.append(e)
                    problems += 1
                    continue
                for obj in found:
                    emit(obj)
                problems += len(found)
            elif checked:
                # the same checks against the .log as --format kafka, so the exit code agrees
                _check_log_beside(path)
                failed = None
                try:
                    mismatches = verify_objects(path, t, max_message_size)
                except KafkalogError as e:
                    failed, mismatches = e, []
                for obj in index_objects(path):
                    emit(obj)
                for obj in mismatches:
                    emit(obj)
                if failed is not None:
                    raise failed
            else:
                for obj in index_objects(path):
                    emit(obj)
        except CorruptIndexError as e:
            if not index_sanity_check:
                raise e.located(path=t)
            emit(sanity_object(t, e.located(path=t)))
            failures.append(e)
        except KafkalogError as e:
            raise e.located(path=t)
        odd = _odd_size(path)
        if odd is not None:
            emit(TRAILING_BYTES.object(file=t, position=odd[0], size=odd[1]))
    if verify_index_only:
        emit(
            {
                "kind": "summary",
                "files": len(targets),
                "problems": problems,
                "notes": notes,
                "ok": not problems,
            }
        )
    out.flush()
    if failures and not verify_index_only:
        raise failures[0]
    return failures


def verify_objects(
    path: Path, given: str, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> list[dict]:
    """Kafka's --verify-index-only checks of one .index or .timeindex, as JSON objects
    (`"kind": "index_mismatch"`), in the order of the index entries."""
    from kafkalog_cli.ops.verify_index import check_offset_index, check_time_index
    from kafkalog_cli.render.index_json import mismatch_objects

    check = (
        check_offset_index(path, max_message_size)
        if path.suffix == ".index"
        else check_time_index(path)
    )
    if check.error is not None:
        raise check.error
    return mismatch_objects(check, given)
