"""`kafkalog dump-index`: offset, time and transaction indexes and producer snapshots, as
kafka-dump-log prints them (the same KafkaDumper), or as JSON Lines."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors as _one_line_errors
from kafkalog_cli.commands.options import format_option, partition_filter_options

from kafkalog_cli.errors import CorruptIndexError, InputError, KafkalogError, one_line
from kafkalog_cli.ops.verify_index import DEFAULT_MAX_MESSAGE_SIZE

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot")
_ENTRY_SIZE = {".index": 8, ".timeindex": 12, ".txnindex": 34}


@click.command("dump-index", short_help="Dump or check .index, .timeindex, .txnindex and .snapshot files.", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--verify-index-only", is_flag=True,
              help="Check .index and .timeindex entries against the .log; print only the problems.")
@click.option("--index-sanity-check", is_flag=True,
              help="Run Kafka's sanityCheck on .index and .timeindex files only.")
@click.option("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Largest batch expected when checking .index entries against the log.")
@format_option("text: kafka-dump-log's exact text. json: JSON Lines, one object per entry.")
@partition_filter_options
@_one_line_errors
def command(paths, verify_index_only, index_sanity_check, max_message_size, fmt, only):
    """Dump .index, .timeindex, .txnindex and producer .snapshot files.

    PATHS are index files, partition dirs (all their index files, in offset order) or log dirs
    (every partition's). In the default --format text the output is kafka-dump-log 3.3.1's, byte for byte,
    including the mismatch and time-index reports it prints on stderr after all files.

    \b
    Exit codes: 0 done (mismatches and a corrupt producer snapshot are reported, as Kafka
    does, not failures); 2 usage; 3 corrupt input (a failed --index-sanity-check, an entry
    pointing at no batch of the .log); 4 missing, unreadable or unrecognised path, or an index
    without its .log: the other paths are still dumped first. The same in both formats.

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
    for raw in paths:       # a path that cannot be read does not stop the others
        try:
            targets.extend(expand_index_paths([raw], tally))
        except InputError as e:
            bad.append(e)
    tally.check(paths)
    if fmt == "json":
        _dump_json(targets, verify_index_only, index_sanity_check, max_message_size)
    else:
        _dump_kafka(targets, verify_index_only, index_sanity_check, max_message_size)
    if bad:
        for e in bad[:-1]:
            click.echo(f"kafkalog: {one_line(str(e))}", err=True)
        raise bad[-1]


def expand_index_paths(paths, tally=None) -> list[str]:
    """Files as given (they must be index files); directories to their index files in order;
    `tally` (a storage.logdir.FilterTally): --topic/--partition, on directories and files alike."""
    from kafkalog_cli.commands.common import note_left_out
    from kafkalog_cli.storage.logdir import expand_paths

    out: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = [str(f) for f in expand_paths([raw], INDEX_SUFFIXES, on_left_out=note_left_out("not read"),
                                                  tally=tally)]
            out.extend(found)
            continue
        if not p.exists():
            raise InputError("no such file or directory", path=raw)
        if not p.is_file():
            raise InputError("not a regular file or directory", path=raw)
        if p.suffix not in INDEX_SUFFIXES:
            raise InputError(f"not an index file (dump-index reads {', '.join(INDEX_SUFFIXES)}; "
                             "use dump-log for .log files)", path=raw)
        if tally is None or tally.keep_path(raw):
            out.append(raw)
    return out


def _options(verify_index_only, index_sanity_check, max_message_size):
    from kafkalog_cli.render.kafka import DumpOptions

    return DumpOptions(verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
                       max_message_size=max_message_size)


def _check_log_beside(path: Path) -> None:
    from kafkalog_cli.storage.segment import listed, was_listed

    log = path.with_name(path.name.split(".")[0] + ".log")
    if was_listed(path):    # a live broker may have moved or removed the segment since the listing
        listed([log])
        if not log.exists():
            return          # read where it went (its .deleted name), or as it stands without it
    if not log.exists():
        raise InputError(f"no {log.name} beside this index (its entries are checked against the log)",
                         path=str(path), position=0)


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

    dumper = KafkaDumper(sys.stdout.buffer, sys.stderr.buffer,
                         _options(verify_index_only, index_sanity_check, max_message_size))
    warnings = []
    for t in targets:
        path = Path(t)
        try:
            dumper.dump(t)      # prints "Dumping <path>" first, as Kafka does before it fails
        except InputError as e:
            if path.suffix in (".index", ".timeindex"):
                _check_log_beside(path)
            raise e.located(path=str(path.absolute()))
        except KafkalogError as e:
            raise e.located(path=str(path.absolute()))
        odd = _odd_size(path)
        if odd is not None:
            warnings.append(f"kafkalog: {t}: byte {odd[0]}: {odd[1]} trailing bytes are not a whole "
                            f"{_ENTRY_SIZE[path.suffix]}-byte entry (ignored, as Kafka does)")
    dumper.finish()
    for w in warnings:
        click.echo(w, err=True)


def _dump_json(targets, verify_index_only, index_sanity_check, max_message_size) -> None:
    from kafkalog_cli.ops.verify_index import sanity_check
    from kafkalog_cli.render.index_json import index_objects, sanity_object
    from kafkalog_cli.render.jsonl import dumps
    from kafkalog_cli.render.schema import FILE, TRAILING_BYTES

    out = sys.stdout
    failures: list[KafkalogError] = []

    def emit(obj):
        out.write(dumps(obj) + "\n")

    for t in targets:
        path = Path(t)
        suffix = path.suffix
        emit(FILE.object(file=t, type=suffix[1:]))
        checked = suffix in (".index", ".timeindex")
        try:
            if checked and index_sanity_check:
                sanity_check(path)
                emit(sanity_object(t))
            elif checked and verify_index_only:
                _check_log_beside(path)
                for obj in verify_objects(path, t, max_message_size):
                    emit(obj)
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
    out.flush()
    if failures:
        raise failures[0]


def verify_objects(path: Path, given: str, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> list[dict]:
    """Kafka's --verify-index-only checks of one .index or .timeindex, as JSON objects
    (`"kind": "index_mismatch"`), in the order of the index entries."""
    from kafkalog_cli.ops.verify_index import check_offset_index, check_time_index
    from kafkalog_cli.render.index_json import mismatch_objects

    check = check_offset_index(path, max_message_size) if path.suffix == ".index" else check_time_index(path)
    if check.error is not None:
        raise check.error
    return mismatch_objects(check, given)
