"""Export records to Parquet (partitioned by topic/partition) or JSON Lines, one segment per task.

The unit of work is a segment: `export_segment` writes one file per segment, named after its place
in the sorted input, so the local process pool and Spark tasks write the same files with the same
bytes. Everything is written under a temporary sibling of OUT that is renamed to OUT at the end:
OUT appears complete, or not at all.

    OUT/topic=<topic>/partition=<n>/part-<nnnnn>-<segment>.parquet      (--to parquet)
    OUT/topic=<topic>/partition=<n>/log_dir=<dir>/part-....parquet       (a topic-partition in
                                                                         several log dirs)
    OUT                                                                 (--to jsonl: one file)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from kafkalog_cli.errors import InputError, UsageError, WriteError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
FORMATS = ("parquet", "jsonl")
CODECS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none")
ROW_GROUP_ROWS = 1 << 20  # pyarrow's default row-group size
ROW_GROUP_BYTES = 64 << 20  # or this many bytes of Arrow data (a row group is held until written)
# Offsets, timestamps and sequences rise record by record: delta-encoded they take a few bits
# each, where a dictionary only costs (every value a new entry, until it falls back). Keys, values
# and headers get no statistics: min/max of payloads prune nothing (a partition's keys come in no
# order) and cost a compare a byte.
_DELTA = ("offset", "timestamp", "sequence")
_NOTES_A_SEGMENT = 100  # --to jsonl with schemas: keys or values kept as bytes named a segment
_NO_STATISTICS = ("key", "value", "headers")


@dataclass(frozen=True)
class ExportOptions:
    to: str = "parquet"
    payload_encoding: str = (
        "utf8"  # jsonl only: keys, values and header values (dump-log's default)
    )
    include_payload: bool = True
    include_headers: bool = True
    compression: str = "snappy"  # parquet: the codec of every column
    row_group_rows: int = ROW_GROUP_ROWS  # parquet: at most this many rows a row group
    by_log_dir: bool = False  # parquet: a log_dir=<dir> level under partition=<n>
    # what a consumer is returned (ops.consumer_view): no control records, nothing outside [log
    # start, high watermark), and read_committed: no aborted records, nothing from the LSO on.
    # include_control: every record of the files (dump-log --format json --deep-iteration's)
    isolation_level: str = "read_uncommitted"
    include_control: bool = False
    from_offset: int | None = None  # ranges: records with offsets and timestamps within them
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    schemas: object = None  # a commands.schema_options.SchemaSpec: decoded keys and values
    # --header, --producer-id, --leader-epoch: a storage.selection.Filters of those tests alone
    filters: object = None

    def pushdown(self):
        """The ranges as the reader's record filter (None: no range)."""
        from kafkalog_cli.spark.arrow import Pushdown

        p = Pushdown(tests=self.filters)
        for bounds, lo, hi in (
            (p.offset, self.from_offset, self.to_offset),
            (p.timestamp, self.from_time, self.to_time),
        ):
            if lo is not None:
                bounds.at_least(lo)
            if hi is not None:
                bounds.at_most(hi)
        return p if p.on_records else None


def _part_name(index: int, ref) -> str:
    stem = Path(ref.path).name.rsplit(".", 1)[0]
    return f"part-{index:05d}-{stem}"


def _hive(value) -> str:
    """A Hive partition value as Spark writes it: null as Hive's default, '/', ':', '%', '=' ...
    escaped."""
    return HIVE_NULL if value is None else quote(str(value), safe=" ")


def _partition_dir(root: Path, ref, by_log_dir: bool = False) -> Path:
    d = root / f"topic={_hive(ref.topic)}" / f"partition={_hive(ref.partition)}"
    if by_log_dir:
        from kafkalog_cli.spark.arrow import segment_log_dir

        d = d / f"log_dir={_hive(segment_log_dir(ref))}"
    return d


def shared_partitions(refs) -> bool:
    """Whether some topic-partition has segments in more than one log dir (several brokers'
    copies of it): the export then has a log_dir=<dir> level, so their offsets do not mix."""
    from kafkalog_cli.spark.arrow import segment_log_dir

    seen: dict = {}
    for r in refs:
        if r.topic is None:
            continue
        if seen.setdefault((r.topic, r.partition), segment_log_dir(r)) != segment_log_dir(r):
            return True
    return False


def export_segment(unit, staging: str, options: ExportOptions) -> dict:
    """Write one segment's records; returns {"segment", "records", "file"}. `unit` is
    (index in the export, storage Segment, its partition's ops.consumer_view.ConsumerView or None:
    every record)."""
    from kafkalog_cli.spark.arrow import arrow_schema, columns, read_segment, selected

    index, ref, view = unit
    pushdown = options.pushdown()
    root = Path(staging)
    cols = columns("record", options.include_payload, options.include_headers)
    if options.to == "parquet":
        import pyarrow.parquet as pq

        in_dirs = (
            ("topic", "partition", "log_dir") if options.by_log_dir else ("topic", "partition")
        )
        if options.schemas is not None and options.include_payload and not options.include_headers:
            cols = columns("record", True, True)  # the schema id may be in a header
        file_cols = [c for c in cols if c[0] not in in_dirs]
        schema = arrow_schema(file_cols)
        typed = None
        if options.schemas is not None and options.include_payload:
            from kafkalog_cli.render.schema_arrow import TypedTables

            typed = TypedTables(options.schemas, ref.topic, options.include_headers)
            schema = typed.schema(schema)
        d = _partition_dir(root, ref, options.by_log_dir)
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{_part_name(index, ref)}.parquet"
        n = 0
        try:
            with pq.ParquetWriter(
                path, schema, compression=options.compression, **_writer_options(schema)
            ) as w:
                for group in _row_groups(
                    read_segment(ref, file_cols, verify_crc=True, view=view, pushdown=pushdown),
                    options.row_group_rows,
                ):
                    if typed is not None:
                        group = typed.table(group)
                    w.write_table(group, row_group_size=options.row_group_rows)
                    n += group.num_rows
        except OSError as e:
            raise WriteError(e.strerror or str(e), path=str(path)) from None
        return {"segment": ref.path, "records": n, "file": str(path.relative_to(root))}
    # jsonl: the lines of `dump-log --format json` for records, with topic, partition and segment
    # (with schemas: of `dump-log --format json --decode-schemas`)
    from kafkalog_cli.render.jsonl import dumps, payload_encoder, record_object

    enc = payload_encoder(options.payload_encoding)
    decoding = None
    undecoded: list[str] = []
    skipped = 0  # notes past _NOTES_A_SEGMENT, counted
    if options.schemas is not None and options.include_payload:
        from kafkalog_cli.render.schema_json import JsonDecoding

        decoding = JsonDecoding(options.schemas, options.payload_encoding)
    path = root / f"{_part_name(index, ref)}.jsonl"
    n = 0
    from kafkalog_cli.spark.arrow import broker_id, segment_log_dir

    log_dir = segment_log_dir(ref)
    head = {
        "topic": ref.topic,
        "partition": ref.partition,
        "segment": ref.path,
        "log_dir": log_dir,
        "broker_id": broker_id(log_dir),
    }
    try:
        with open(path, "wb") as out:
            lines = []
            if (
                pushdown is not None
                and not pushdown.keeps_segment(ref)
                or (
                    view is not None
                    and not view.keeps_segment(ref.base_offset, ref.next_base_offset)
                )
            ):
                batches = ()
            else:
                # as a consumer with check.crcs: corrupt data never becomes rows
                batches = selected(ref, pushdown, view, verify_crc=True)
            for off, _, b, g in batches:
                try:
                    records = b.records()
                except Exception as e:
                    if hasattr(e, "located"):
                        if (
                            e.path is None and off and e.position is not None
                        ):  # a remote chunk's position
                            e.position += off
                        raise e.located(path=ref.path)
                    raise
                for r in records:
                    if g is not None and not g.keeps(r):
                        continue
                    obj = record_object(r, b, enc if decoding is None else decoding.raw)
                    del obj["kind"]
                    if not options.include_payload:
                        del obj["key"], obj["value"]
                    if decoding is not None:
                        obj = {**head, **obj}
                        for field, got in decoding.record(obj):
                            skipped += len(undecoded) >= _NOTES_A_SEGMENT
                            if len(undecoded) < _NOTES_A_SEGMENT:
                                undecoded.append(
                                    f"{ref.path}: offset {r.offset}: {field} "
                                    f"{decoding.kept_as}: {got.reason}"
                                )
                    if not options.include_headers:
                        del obj["headers"]
                    lines.append(dumps(obj if decoding is not None else {**head, **obj}))
                    n += 1
                if len(lines) >= 4096:
                    out.write(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
                    lines.clear()
            if lines:
                out.write(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
    except OSError as e:
        raise WriteError(e.strerror or str(e), path=str(path)) from None
    done = {"segment": ref.path, "records": n, "file": path.name}
    if decoding is not None:
        if skipped:
            undecoded.append(f"{ref.path}: {skipped} more keys or values {decoding.kept_as}")
        done["undecoded"] = undecoded
    return done


def _writer_options(schema) -> dict:
    """ParquetWriter's encodings and statistics for export's columns (see _DELTA)."""
    leaves = _parquet_columns(schema)
    return {
        "use_dictionary": [c for c in leaves if c.split(".")[0] not in _DELTA],
        "column_encoding": {c: "DELTA_BINARY_PACKED" for c in _DELTA if c in schema.names},
        "write_statistics": [c for c in leaves if c.split(".")[0] not in _NO_STATISTICS],
    }


def _parquet_columns(schema) -> list[str]:
    """The dotted paths of the schema's leaf columns, as ParquetWriter's options name them."""
    import pyarrow as pa

    def leaves(prefix: str, t) -> list[str]:
        if pa.types.is_struct(t):
            return [p for f in t for p in leaves(f"{prefix}.{f.name}", f.type)]
        if pa.types.is_list(t):
            return leaves(f"{prefix}.list.element", t.value_type)
        return [prefix]

    return [p for f in schema for p in leaves(f.name, f.type)]


def _row_groups(batches, rows: int):
    """Arrow record batches gathered into tables of whole row groups: at most `rows` rows and
    about ROW_GROUP_BYTES bytes each (one write a row group: each write makes its own)."""
    import pyarrow as pa

    held, held_rows, held_bytes = [], 0, 0
    for rb in batches:
        while rb.num_rows:
            take = min(rb.num_rows, rows - held_rows)
            part = rb if take == rb.num_rows else rb.slice(0, take)
            rb = rb.slice(take)
            held.append(part)
            held_rows += part.num_rows
            held_bytes += part.nbytes
            if held_rows >= rows or held_bytes >= ROW_GROUP_BYTES:
                yield pa.Table.from_batches(held)
                held, held_rows, held_bytes = [], 0, 0
    if held:
        yield pa.Table.from_batches(held)


_KAFKA_SUFFIXES = (
    ".log",
    ".index",
    ".timeindex",
    ".txnindex",
    ".snapshot",
    ".checkpoint",
    ".lock",
    ".deleted",
    ".cleaned",
    ".swap",
)


def _check_out(out: Path, paths) -> None:
    """OUT must be apart from every input: an export never writes into, over or around the data
    it reads (swapped arguments must not cost a log dir)."""
    from kafkalog_cli.storage.paths_given import is_remote, local_path

    real_out = Path(os.path.realpath(out))
    for p in paths:
        if is_remote(str(p)):
            continue
        p = local_path(str(p))
        real_in = Path(os.path.realpath(p))
        if real_out == real_in or real_in in real_out.parents or real_out in real_in.parents:
            raise UsageError(
                f"OUT overlaps the input {p}; export writes only outside what it reads",
                path=str(out),
            )


def _check_replaceable(out: Path, to: str) -> None:
    """--overwrite replaces only what an earlier export could have written: for parquet a
    directory of topic=* directories, for jsonl a regular file without a Kafka suffix."""
    if to == "parquet":
        ok = (
            out.is_dir()
            and not out.is_symlink()
            and all(e.is_dir() and e.name.startswith("topic=") for e in out.iterdir())
        )
        what = "a directory of topic=* directories (an earlier parquet export)"
    else:
        ok = out.is_file() and not out.is_symlink() and not out.name.endswith(_KAFKA_SUFFIXES)
        what = "a regular file that is not a Kafka file"
    if not ok:
        raise UsageError(
            f"--overwrite replaces only {what}; this is not one, so it is left alone", path=str(out)
        )


def export(
    paths,
    out: str | Path,
    options: ExportOptions,
    *,
    engine: str = "local",
    master: str | None = None,
    jobs: int = 0,
    overwrite: bool = False,
    spark=None,
    only=None,
    on_note=None,
) -> dict:
    """Export the segments under `paths` (local paths, globs, archives, remote URIs) to `out`;
    `only`: a storage.names.PartitionFilter; `on_note(text)`: what the export leaves out that the
    user should hear of. Returns {"segments", "records", "out", "files"}."""
    import dataclasses

    from kafkalog_cli.ops.consumer_view import (
        ISOLATION_LEVELS,
        READ_UNCOMMITTED,
        view_notes,
        views_for,
    )
    from kafkalog_cli.storage.remote import segments_of_sources

    if options.to not in FORMATS:
        raise InputError(f"--to must be one of {', '.join(FORMATS)}, not {options.to!r}")
    if options.compression not in CODECS:
        raise UsageError(
            f"--compression must be one of {', '.join(CODECS)}, not {options.compression!r}"
        )
    if options.row_group_rows < 1:
        raise UsageError(f"--row-group-size must be at least 1, not {options.row_group_rows}")
    to_stdout = str(out) == "-"
    if to_stdout and options.to != "jsonl":
        raise UsageError("OUT '-' (standard output) needs --to jsonl")
    if options.isolation_level not in ISOLATION_LEVELS:
        raise UsageError(
            f"--isolation-level must be one of {', '.join(ISOLATION_LEVELS)}, not {options.isolation_level!r}"
        )
    if options.include_control and options.isolation_level != READ_UNCOMMITTED:
        raise UsageError(
            "--include-control is the raw view (every record, read_uncommitted); it excludes "
            "--isolation-level read_committed"
        )
    refs = segments_of_sources(paths, only=only)
    spec = options.schemas
    if spec is not None and getattr(spec, "mask", None) is not None:
        from kafkalog_cli.ops.schema_decode import SchemaDecoder
        from kafkalog_cli.ops.schema_mask import check_fields

        check = SchemaDecoder(spec.registry, spec.reader_version, protobuf_messages=True)
        check_fields(check, {r.topic for r in refs if r.topic is not None}, spec.mask)
    if options.to == "parquet":
        options = dataclasses.replace(options, by_log_dir=shared_partitions(refs))
    views = {} if options.include_control else views_for(refs, options.isolation_level)
    units = [(i, r, views.get(str(r.directory))) for i, r in enumerate(refs)]
    view_notes(views, on_note)
    if to_stdout:
        return _export_to_stdout(units, options, engine, master, jobs, spark, on_note)
    out = Path(out).absolute()
    _check_out(out, paths)
    if out.exists() and not overwrite:
        raise InputError("already exists (pass --overwrite to replace it)", path=str(out))
    if out.exists() or out.is_symlink():
        _check_replaceable(out, options.to)
    if not out.parent.is_dir():
        raise InputError("no such directory", path=str(out.parent))
    staging = out.parent / f".{out.name}.kafkalog-export-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
    except OSError as e:
        raise WriteError(e.strerror or str(e), path=str(staging)) from None
    try:
        results = _write_parts(units, staging, options, engine, master, jobs, spark)
        if options.to == "jsonl":
            final = out.parent / f".{out.name}.kafkalog-export-{os.getpid()}.jsonl"
            with open(final, "wb") as dst:
                _concat_parts(results, staging, dst)
                os.fsync(dst.fileno())
            shutil.rmtree(staging)
            staging = final
        if out.exists():
            shutil.rmtree(out) if out.is_dir() and not out.is_symlink() else out.unlink()
        os.replace(staging, out)
    except BaseException:
        if staging.is_dir():
            shutil.rmtree(staging, ignore_errors=True)
        elif staging.exists():
            staging.unlink()
        raise
    _undecoded_notes(results, on_note)
    return {
        "out": str(out),
        "segments": len(refs),
        "records": sum(r["records"] for r in results),
        "files": [r["file"] for r in results] if options.to == "parquet" else [out.name],
    }


def _export_to_stdout(
    units, options: ExportOptions, engine, master, jobs, spark, on_note=None
) -> dict:
    """--to jsonl with OUT '-': the segments' files are written to a temporary directory (the
    workers run in parallel), then copied to standard output in order."""
    import sys
    import tempfile

    # Spark executors on other hosts need a shared directory: the current one, as for OUT
    staging = Path(
        tempfile.mkdtemp(prefix=".kafkalog-export-", dir=os.getcwd() if engine == "spark" else None)
    )
    try:
        results = _write_parts(units, staging, options, engine, master, jobs, spark)
        sys.stdout.flush()
        _concat_parts(results, staging, sys.stdout.buffer)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _undecoded_notes(results, on_note)
    return {
        "out": "-",
        "segments": len(units),
        "records": sum(r["records"] for r in results),
        "files": ["-"],
    }


def _undecoded_notes(results: list[dict], on_note) -> None:
    """A note for each key or value of a --to jsonl export kept as bytes (their lines say why)."""
    for r in results:
        for text in r.get("undecoded", ()):
            if on_note is not None:
                on_note(text)


def _write_parts(
    units, staging: Path, options: ExportOptions, engine, master, jobs, spark
) -> list[dict]:
    """One file per segment under `staging`, by the local pool or Spark; their results in order."""
    from kafkalog_cli.spark.engine import run_partitions

    return run_partitions(
        export_segment,
        units,
        engine=engine,
        master=master,
        jobs=jobs,
        args=(str(staging), options),
        spark=spark,
        preload=("kafkalog_cli.spark.arrow", "pyarrow.parquet") if options.to == "parquet" else (),
    )


def _concat_parts(results: list[dict], staging: Path, dst) -> None:
    """The per-segment JSON Lines files, in input order, into the binary stream `dst` (flushed)."""
    for r in results:
        with open(staging / r["file"], "rb") as src:
            shutil.copyfileobj(src, dst, 1 << 20)
    dst.flush()
