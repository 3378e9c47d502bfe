"""verify-crc: every batch's CRC, size and offsets, over mmap'd segments, without decoding records
(unless `deep`). Big inputs are cut into byte ranges that start on batch boundaries and are
checked in worker processes; the ranges are merged back in file order, so the offset checks
across ranges, segments and files are the same as in one sequential pass.

The library entry points are `verify_partition(dir)` (what the Spark jobs call per partition)
and `verify_groups(groups)` (what `kafkalog verify-crc` runs). Both return picklable reports.
"""
from __future__ import annotations

import os
import struct
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from kafkalog_cli.errors import InputError, KafkalogError
from kafkalog_cli.formats.crc import crc32c

LOG_OVERHEAD = 12
MIN_SIZE = 14                 # Kafka's minimum size field for any entry
V2_OVERHEAD = 61
_HEAD = struct.Struct(">qiibIhi")          # offset, size, ple|legacy crc, magic, crc, attributes, lastOffsetDelta
_HEAD_LEN = _HEAD.size                     # 27
_PREFIX = struct.Struct(">qi")
_COUNT = struct.Struct(">i")

# problem kinds
CRC = "crc"                   # stored CRC != computed (v2 CRC-32C, legacy CRC-32 of the entry)
INNER_CRC = "inner_crc"       # --deep: a legacy inner message's CRC-32
SIZE = "size"                 # a size field below 14, or a v2 batch below 61 bytes
TRAILING = "trailing_bytes"   # an incomplete batch at the end of the file (its bytes are ignored)
MAGIC = "magic"               # a magic byte other than 0, 1, 2
OFFSETS = "offsets"           # offsets not increasing within or across batches, segments, files
RECORDS = "records"           # --deep: records that do not decode, or do not match the header
NAME = "file_name"            # not a 20-digit offset: the segment's base offset is unknown
UNREADABLE = "unreadable"     # the file could not be opened or read


@dataclass
class Problem:
    file: str
    position: int | None
    kind: str
    message: str
    base_offset: int | None = None
    last_offset: int | None = None
    stored_crc: int | None = None
    computed_crc: int | None = None

    def line(self) -> str:
        where = f"{self.file}: byte {self.position}" if self.position is not None else self.file
        extra = []
        if self.base_offset is not None:
            extra.append(f"offsets {self.base_offset}..{self.last_offset}" if self.last_offset is not None
                         else f"offset {self.base_offset}")
        if self.stored_crc is not None:
            extra.append(f"stored crc {self.stored_crc}")
        if self.computed_crc is not None:
            extra.append(f"computed crc {self.computed_crc}")
        return f"{where}: {self.message}" + (f" ({', '.join(extra)})" if extra else "")

    def to_json(self) -> dict:
        d = asdict(self)
        return {"kind": "problem", "problem": d.pop("kind"), **d}


@dataclass
class FileReport:
    file: str
    base_offset: int | None          # from the file name
    size: int = 0
    batches: int = 0
    bytes: int = 0                   # bytes of complete batches checked
    first_offset: int | None = None  # the first batch's first offset (wrapper offset for legacy)
    last_offset: int | None = None
    problems: list[Problem] = field(default_factory=list)
    readable: bool = True


@dataclass
class PartitionReport:
    """One partition dir (or one file given alone): its files in offset order and every problem."""

    directory: str
    files: list[FileReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def batches(self) -> int:
        return sum(f.batches for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def unreadable(self) -> bool:
        return any(not f.readable for f in self.files) or any(p.kind == UNREADABLE for p in self.problems)

    def to_json(self) -> dict:
        return {"kind": "partition", "directory": self.directory, "files": len(self.files),
                "batches": self.batches, "bytes": self.bytes, "problems": len(self.problems),
                "elapsed_s": round(self.elapsed, 6)}


# ------------------------------------------------------------------ one byte range of one file
@dataclass
class _Chunk:
    file: str
    start: int
    end: int            # a batch boundary, or the file's length for the last chunk
    last: bool          # the last chunk of its file: it reports the tail
    deep: bool


@dataclass
class _ChunkResult:
    batches: int = 0
    bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    problems: list[Problem] = field(default_factory=list)
    size: int = 0
    first_position: int | None = None
    error: str | None = None      # the file could not be read


def scan(buf, file: str, start: int, end: int, *, tail: bool = True, deep: bool = False) -> _ChunkResult:
    """Check every batch in buf[start:end). With `tail`, what follows the last complete batch is
    reported (an incomplete batch, a corrupt size); otherwise `end` must be a batch boundary."""
    res = _ChunkResult()
    problems = res.problems
    mv = memoryview(buf)
    head = _HEAD.unpack_from
    crc_c = crc32c
    crc_32 = zlib.crc32
    pos = start
    prev = None          # the last offset of the previous batch in this range
    first = None
    batches = 0
    limit = end - _HEAD_LEN
    while pos + 17 < end:
        if pos <= limit:
            base, size, ple, magic, stored, attrs, lod = head(buf, pos)
        else:  # near the end: fewer than 27 bytes left
            base, size = _PREFIX.unpack_from(buf, pos)
            magic = buf[pos + 16]
            if magic >= 0x80:
                magic -= 0x100
            ple = stored = attrs = lod = 0
            if size >= MIN_SIZE and pos + LOG_OVERHEAD + size <= end and magic < 2:
                ple = struct.unpack_from(">i", buf, pos + 12)[0]
        if size < MIN_SIZE:
            problems.append(Problem(file, pos, SIZE,
                                    f"corrupt size field {size} (smaller than the minimum record overhead "
                                    f"{MIN_SIZE}); the rest of the file, {end - pos} bytes, cannot be read"))
            break
        total = size + LOG_OVERHEAD
        if pos + total > end:
            break        # incomplete: reported below as trailing bytes
        if magic == 2:
            if total < V2_OVERHEAD:
                problems.append(Problem(file, pos, SIZE, f"v2 batch of {total} bytes is smaller than its "
                                        f"{V2_OVERHEAD}-byte header", base_offset=base))
                pos += total
                batches += 1
                continue
            computed = crc_c(mv[pos + 21 : pos + total])
            last = base + lod
            if computed != stored:
                problems.append(Problem(file, pos, CRC, "v2 batch CRC-32C mismatch", base, last, stored, computed))
            if lod < 0:
                problems.append(Problem(file, pos, OFFSETS, f"negative last offset delta {lod}", base, last))
            if deep:
                _deep_v2(buf, pos, total, file, base, last, problems)
        elif magic == 0 or magic == 1:
            stored = ple & 0xFFFFFFFF
            computed = crc_32(mv[pos + 16 : pos + total])
            last = base
            if computed != stored:
                problems.append(Problem(file, pos, CRC, f"magic {magic} message CRC-32 mismatch",
                                        base, last, stored, computed))
            if deep:
                _deep_legacy(buf, pos, total, magic, file, base, problems)
        else:
            problems.append(Problem(file, pos, MAGIC, f"unknown magic {magic}; the batch is skipped by its "
                                    f"size field ({total} bytes)", base_offset=base))
            pos += total
            batches += 1
            continue
        if prev is not None and base <= prev:
            problems.append(Problem(file, pos, OFFSETS, f"offsets do not increase: this batch starts at "
                                    f"{base}, the previous one ended at {prev}", base, last))
        if first is None:
            first = base
            res.first_position = pos
        prev = last
        batches += 1
        pos += total
    if tail and pos < end and not (problems and problems[-1].kind == SIZE and problems[-1].position == pos):
        msg = f"{end - pos} trailing bytes are not a complete batch"
        if pos + 12 <= end:
            _, size = _PREFIX.unpack_from(buf, pos)
            msg += f" (its size field says {size} bytes follow, {end - pos - 12} do)"
        problems.append(Problem(file, pos, TRAILING, msg))
    res.batches = batches
    res.bytes = pos - start
    res.first_offset = first
    res.last_offset = prev
    return res


def _deep_v2(buf, pos, total, file, base, last, problems) -> None:
    from kafkalog_cli.formats.records import RecordBatch

    b = RecordBatch(buf, pos, total, 2)
    try:
        recs = b.records()
    except KafkalogError as e:
        problems.append(Problem(file, pos, RECORDS, f"records do not decode: {e.message}", base, last))
        return
    except Exception as e:  # a decompressor's own error type
        problems.append(Problem(file, pos, RECORDS, f"records do not decode: {type(e).__name__}: {e}", base, last))
        return
    if len(recs) != b.records_count:
        problems.append(Problem(file, pos, RECORDS, f"header says {b.records_count} records, "
                                f"{len(recs)} decoded", base, last))
    prev = None
    for r in recs:
        if r.offset < base or r.offset > last or (prev is not None and r.offset <= prev):
            problems.append(Problem(file, pos, OFFSETS, f"record offset {r.offset} is outside the batch's range "
                                    f"or not increasing", base, last))
            break
        prev = r.offset


def _deep_legacy(buf, pos, total, magic, file, base, problems) -> None:
    from kafkalog_cli.formats.records import RecordBatch

    b = RecordBatch(buf, pos, total, magic)
    if b.compression_id == 0:
        return
    try:
        recs = b.records()
    except KafkalogError as e:
        problems.append(Problem(file, pos, RECORDS, f"compressed message set does not decode: {e.message}",
                                base, base))
        return
    except Exception as e:
        problems.append(Problem(file, pos, RECORDS, f"compressed message set does not decode: "
                                f"{type(e).__name__}: {e}", base, base))
        return
    prev = None
    for r in recs:
        if not r.valid:
            problems.append(Problem(file, pos, INNER_CRC, f"inner message at offset {r.offset} fails its "
                                    "CRC-32", r.offset, None, r.crc, None))
        if prev is not None and r.offset <= prev:
            problems.append(Problem(file, pos, OFFSETS, f"inner offsets do not increase ({prev} then {r.offset})",
                                    r.offset, None))
        prev = r.offset


def _run_chunk(c: _Chunk) -> _ChunkResult:
    from kafkalog_cli.storage.segment import map_file

    try:
        buf = map_file(c.file)
    except InputError as e:
        return _ChunkResult(error=e.message)
    except OSError as e:
        return _ChunkResult(error=e.strerror or str(e))
    try:
        end = len(buf) if c.last else c.end
        r = scan(buf, c.file, c.start, end, tail=c.last, deep=c.deep)
        r.size = len(buf)
        return r
    finally:
        if hasattr(buf, "close"):
            try:
                buf.close()
            except BufferError:   # a memoryview still refers to it; the GC closes it
                pass


def _split(file: str, target: int, deep: bool) -> list[_Chunk]:
    """Cut a file into ranges of about `target` bytes that start on batch boundaries (by walking
    the size fields only); a broken chain ends the splitting and the last range reports it."""
    try:
        size = os.path.getsize(file)
    except OSError:
        size = 0
    if size <= target * 3 // 2:
        return [_Chunk(file, 0, size, True, deep)]
    from kafkalog_cli.storage.segment import map_file

    try:
        buf = map_file(file)
    except (InputError, OSError):
        return [_Chunk(file, 0, size, True, deep)]
    cuts = [0]
    unpack = _COUNT.unpack_from
    pos, end, nxt = 0, len(buf), target
    while pos + 17 < end:
        s = unpack(buf, pos + 8)[0]
        if s < MIN_SIZE or pos + 12 + s > end:
            break
        pos += s + 12
        if pos >= nxt and end - pos > target // 2:
            cuts.append(pos)
            nxt = pos + target
    del buf
    chunks = [_Chunk(file, a, b, False, deep) for a, b in zip(cuts, cuts[1:])]
    chunks.append(_Chunk(file, cuts[-1], size, True, deep))
    return chunks


# ------------------------------------------------------------------ partitions and groups
def _file_base(path: str) -> int | None:
    from kafkalog_cli.storage.names import offset_from_name

    return offset_from_name(os.path.basename(path))


def _merge_file(file: str, results: list[_ChunkResult]) -> FileReport:
    rep = FileReport(file, _file_base(file))
    name = os.path.basename(file)
    if rep.base_offset is None and not name.endswith(".checkpoint"):
        rep.problems.append(Problem(file, None, NAME, "file name is not a 20-digit offset, so the segment's "
                                    "base offset cannot be checked"))
    for r in results:
        if r.error is not None:
            rep.readable = False
            rep.problems.append(Problem(file, None, UNREADABLE, r.error))
            return rep
        rep.size = max(rep.size, r.size)
        if r.first_offset is not None:
            if rep.last_offset is not None and r.first_offset <= rep.last_offset:
                rep.problems.append(Problem(file, r.first_position, OFFSETS, f"offsets do not increase: a batch starts at "
                                            f"{r.first_offset} after one that ended at {rep.last_offset}",
                                            r.first_offset))
            if rep.first_offset is None:
                rep.first_offset = r.first_offset
            rep.last_offset = r.last_offset
        rep.batches += r.batches
        rep.bytes += r.bytes
        rep.problems.extend(r.problems)
    if rep.base_offset is not None and rep.first_offset is not None and rep.first_offset < rep.base_offset:
        rep.problems.append(Problem(file, 0, OFFSETS, f"the first batch starts at offset {rep.first_offset}, "
                                    f"below the segment's base offset {rep.base_offset} (its file name)",
                                    rep.first_offset))
    return rep


def _merge_group(directory: str, files: list[FileReport]) -> PartitionReport:
    rep = PartitionReport(directory, files)
    prev: FileReport | None = None
    for f in files:
        rep.problems.extend(f.problems)
        if prev is not None and prev.last_offset is not None and f.first_offset is not None \
                and f.first_offset <= prev.last_offset:
            rep.problems.append(Problem(f.file, 0, OFFSETS, f"segment starts at offset {f.first_offset}, not after "
                                        f"the previous segment's last offset {prev.last_offset} "
                                        f"({os.path.basename(prev.file)})", f.first_offset))
        if f.last_offset is not None:
            prev = f
    return rep


def total_bytes(groups: list[tuple[str, list[str]]]) -> int:
    """The size of every readable file of `groups` (an unreadable one is reported elsewhere)."""
    total = 0
    for _, files in groups:
        for f in files:
            try:
                total += os.path.getsize(f)
            except OSError:
                pass
    return total


def plan_chunks(groups: list[tuple[str, list[str]]], *, jobs: int, deep: bool) -> list[list[list[_Chunk]]]:
    """groups -> files -> chunks. A file is split only when that helps to keep `jobs` busy."""
    total = total_bytes(groups)
    # about two ranges per worker: files that size or smaller are never split (no walk needed)
    target = max(8 << 20, -(-total // max(1, jobs * 2))) if jobs > 1 else 1 << 62
    return [[_split(f, target, deep) for f in files] for _, files in groups]


def verify_groups(groups: list[tuple[str, list[str]]], *, deep: bool = False, jobs: int = 1,
                  on_progress: Callable[[int], None] | None = None,
                  parallel_min_bytes: int = 32 << 20) -> list[PartitionReport]:
    """Verify each group (a partition dir and its .log files in offset order, or one file) and
    return one PartitionReport per group, in order. `jobs` > 1 uses worker processes when the
    input is at least `parallel_min_bytes`."""
    t0 = time.perf_counter()
    plan = plan_chunks(groups, jobs=jobs, deep=deep)
    flat = [c for files in plan for chunks in files for c in chunks]
    total = sum(c.end - c.start for c in flat)
    results: list[_ChunkResult]
    if jobs > 1 and len(flat) > 1 and total >= parallel_min_bytes:
        import multiprocessing as mp

        try:
            ctx = mp.get_context("fork")
        except ValueError:  # pragma: no cover - platforms without fork
            ctx = mp.get_context()
        results = []
        with ctx.Pool(min(jobs, len(flat))) as pool:
            for c, r in zip(flat, pool.imap(_run_chunk, flat, chunksize=1)):
                results.append(r)
                if on_progress:
                    on_progress(c.end - c.start)
    else:
        results = []
        for c in flat:
            results.append(_run_chunk(c))
            if on_progress:
                on_progress(c.end - c.start)
    it = iter(results)
    reports = []
    for (directory, files), file_chunks in zip(groups, plan):
        file_reports = [_merge_file(f, [next(it) for _ in chunks]) for f, chunks in zip(files, file_chunks)]
        reports.append(_merge_group(directory, file_reports))
    elapsed = time.perf_counter() - t0
    for r in reports:
        r.elapsed = elapsed
    return reports


def verify_partition(directory: str | Path, deep: bool = False) -> PartitionReport:
    """Verify one partition dir's .log segments in offset order, in this process (the Spark jobs
    call this once per partition, on their executors)."""
    from kafkalog_cli.storage.logdir import files_of_partition

    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a directory", path=str(d))
    files = [str(p) for p in files_of_partition(d, (".log",))]
    t0 = time.perf_counter()
    rep = verify_groups([(str(d), files)], deep=deep, jobs=1)[0]
    rep.elapsed = time.perf_counter() - t0
    return rep


def group_paths(paths: Iterable[str]) -> list[tuple[str, list[str]]]:
    """Command-line paths -> groups: a partition dir is one group; a log dir one group per
    partition; a file is a group of its own. The first path that cannot be verified (missing,
    not a segment, not a log or partition dir) raises its InputError."""
    groups, errors = group_paths_lenient(paths)
    if errors:
        raise errors[0][1]
    return groups


def is_segment_name(name: str) -> bool:
    """A name verify-crc reads as a segment: `*.log` (also with Kafka's .cleaned, .swap or
    .deleted suffix after it) or a KRaft `*.checkpoint` snapshot."""
    for s in (".cleaned", ".swap", ".deleted"):
        if name.endswith(s):
            name = name[: -len(s)]
            break
    return name.endswith(".log") or name.endswith(".checkpoint")


def group_paths_lenient(paths: Iterable[str]) -> tuple[list[tuple[str, list[str]]], list[tuple[int, InputError]]]:
    """As group_paths, but a path that cannot be verified does not stop the others: it comes
    back as (number of groups before it, its InputError), so it can be reported in order."""
    from kafkalog_cli.storage.logdir import LogDir, files_of_partition, is_log_dir, is_partition_dir
    from kafkalog_cli.storage.names import parse_partition_dir
    from kafkalog_cli.storage.segment import not_regular_reason

    groups: list[tuple[str, list[str]]] = []
    errors: list[tuple[int, InputError]] = []

    def bad(message: str, raw: str) -> None:
        errors.append((len(groups), InputError(message, path=raw)))

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            if is_partition_dir(p) or parse_partition_dir(p.name) is not None:
                groups.append((raw, [str(f) for f in files_of_partition(p, (".log",))]))
                continue
            parts = LogDir(p).partition_dirs()
            if not parts and not is_log_dir(p):
                bad("not a Kafka log dir or partition dir (no segments, no checkpoint files)", raw)
                continue
            for d in parts:
                groups.append((str(d), [str(f) for f in files_of_partition(d, (".log",))]))
            continue
        why = not_regular_reason(raw)
        if why == "no such file":
            bad("no such file or directory", raw)
        elif why is not None:
            bad(why, raw)
        elif p.suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
            bad(f"not a log segment ({p.suffix}); verify-crc checks .log files "
                "(use dump-index --verify-index-only for indexes)", raw)
        elif not is_segment_name(p.name):
            bad("not a Kafka log segment (verify-crc reads <offset>.log files, KRaft .checkpoint "
                "snapshots, partition dirs and log dirs)", raw)
        else:
            groups.append((raw, [raw]))
    return groups, errors


def unreadable_report(error: InputError) -> PartitionReport:
    """A report for a path that could not be verified at all: no files, one problem."""
    path = str(error.path)
    return PartitionReport(path, [], [Problem(path, error.position, UNREADABLE, error.message)])
