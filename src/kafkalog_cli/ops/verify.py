"""verify-crc: every batch's CRC, size and offsets, over mmap'd segments, without decoding records
(unless `deep`). Big inputs are cut into byte ranges that start on batch boundaries and are
checked in worker processes; the ranges are merged back in file order, so the offset checks
across ranges, segments and files are the same as in one sequential pass.

The library entry points are `verify_partition(dir)` (what the Spark jobs call per partition)
and `verify_groups(groups)` (what `kafkalog verify-crc` runs). Both return picklable reports.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafkalog_cli.errors import InputError
from kafkalog_cli.formats.framing import (
    CRC,
    OFFSETS,
    WALKED_BYTES,
    Finding,
    batch_cuts,
    check_batches,
)
from kafkalog_cli.storage.live_files import populate_pages, release_pages

# problem kinds: those about bytes are formats.framing's (CRC, SIZE, OFFSETS, ...; here OFFSETS also
# covers offsets across ranges, segments and files)
NAME = "file_name"  # not a 20-digit offset: the segment's base offset is unknown
UNREADABLE = "unreadable"  # the file could not be opened or read


@dataclass
class Problem(Finding):
    """A finding of formats.framing's batch check, or one about a whole file or partition."""

    def line(self) -> str:
        where = f"{self.file}: byte {self.position}" if self.position is not None else self.file
        extra = []
        if self.base_offset is not None:
            extra.append(
                f"offsets {self.base_offset}..{self.last_offset}"
                if self.last_offset is not None
                else f"offset {self.base_offset}"
            )
        if self.stored_crc is not None:
            extra.append(f"stored crc {self.stored_crc}")
        if self.computed_crc is not None:
            extra.append(f"computed crc {self.computed_crc}")
        return f"{where}: {self.message}" + (f" ({', '.join(extra)})" if extra else "")

    def to_dict(self) -> dict:
        d = asdict(self)
        return {"kind": "problem", "problem": d.pop("kind"), **d}


@dataclass
class FileReport:
    file: str
    base_offset: int | None  # from the file name
    size: int = 0
    batches: int = 0
    bytes: int = 0  # bytes of complete batches checked
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
        return any(not f.readable for f in self.files) or any(
            p.kind == UNREADABLE for p in self.problems
        )

    def to_dict(self) -> dict:
        return {
            "kind": "partition",
            "directory": self.directory,
            "files": len(self.files),
            "batches": self.batches,
            "bytes": self.bytes,
            "problems": len(self.problems),
            "elapsed_s": round(self.elapsed, 6),
        }


# ------------------------------------------------------------------ one byte range of one file
@dataclass
class _Chunk:
    file: str
    start: int
    end: int  # a batch boundary, or the file's length for the last chunk
    last: bool  # the last chunk of its file: it reports the tail
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
    error: str | None = None  # the file could not be read


def _run_chunk(c: _Chunk) -> _ChunkResult:
    from kafkalog_cli.storage.paths_given import is_remote
    from kafkalog_cli.storage.segment import map_file, unmap

    if is_remote(c.file):
        return _run_remote(c)
    try:
        buf = map_file(c.file)
    except InputError as e:
        return _ChunkResult(error=e.message)
    except OSError as e:
        return _ChunkResult(error=e.strerror or str(e))
    try:
        end = len(buf) if c.last else c.end
        populate_pages(buf, c.start, min(end, c.start + WALKED_BYTES))

        def walked(a: int, b: int) -> None:  # the stretch read goes, the next one comes in
            release_pages(buf, a, b)
            populate_pages(buf, b, min(end, b + WALKED_BYTES))

        w = check_batches(buf, c.start, end, file=c.file, tail=c.last, deep=c.deep, walked=walked)
        return _ChunkResult(
            w.batches,
            w.bytes,
            w.first_offset,
            w.last_offset,
            [Problem(**asdict(f)) for f in w.findings],
            len(buf),
            w.first_position,
        )
    finally:
        unmap(buf)


def _run_remote(c: _Chunk) -> _ChunkResult:
    """A remote file checked range by range (ranged reads of about storage.remote.CHUNK bytes,
    each ending at a batch boundary), as one pass over the file: each range is put at its place
    in a sparse anonymous map of the file's size, so every position and every "bytes to the end"
    is the file's, and the offsets check goes on from one range to the next."""
    from kafkalog_cli.storage.remote import remote_file
    from kafkalog_cli.storage.segment import unmap

    try:
        seg = remote_file(c.file)
        res = _ChunkResult(size=seg.size)
        if seg.size == 0:
            return res
        buf = mmap.mmap(-1, seg.size)
        try:
            for start, data, last in seg.ranges():
                stop = start + len(data)
                buf[start:stop] = data
                w = check_batches(
                    buf,
                    start,
                    seg.size if last else stop,
                    file=c.file,
                    tail=last,
                    deep=c.deep,
                    prev_offset=res.last_offset,
                )
                release_pages(buf, start, stop)
                res.batches += w.batches
                res.bytes += w.bytes
                res.problems += [Problem(**asdict(f)) for f in w.findings]
                if res.first_offset is None:
                    res.first_offset, res.first_position = w.first_offset, w.first_position
                if w.last_offset is not None:
                    res.last_offset = w.last_offset
        finally:
            unmap(buf)
        return res
    except InputError as e:
        return _ChunkResult(error=e.message)
    except OSError as e:  # no address space for the file's map
        return _ChunkResult(error=e.strerror or str(e))


def _split(file: str, target: int, deep: bool) -> list[_Chunk]:
    """Cut a file into ranges of about `target` bytes that start on batch boundaries (by walking
    the size fields only); a broken chain ends the splitting and the last range reports it.
    A remote file is one chunk: it is read range by range where it is checked."""
    from kafkalog_cli.storage.paths_given import is_remote

    if is_remote(file):
        return [_Chunk(file, 0, 0, True, deep)]
    try:
        size = os.path.getsize(file)
    except OSError:
        size = 0
    if size <= target * 3 // 2:
        return [_Chunk(file, 0, size, True, deep)]
    from kafkalog_cli.storage.segment import map_file, unmap

    try:
        buf = map_file(file)
    except (InputError, OSError):
        return [_Chunk(file, 0, size, True, deep)]
    # the walk maps what it touches: its pages go as it goes
    cuts = batch_cuts(buf, 0, len(buf), target, target // 2, lambda a, b: release_pages(buf, a, b))
    unmap(buf)
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
        rep.problems.append(
            Problem(
                file,
                None,
                NAME,
                "file name is not a 20-digit offset, so the segment's "
                "base offset cannot be checked",
            )
        )
    for r in results:
        if r.error is not None:
            rep.readable = False
            rep.problems.append(Problem(file, None, UNREADABLE, r.error))
            return rep
        rep.size = max(rep.size, r.size)
        if r.first_offset is not None:
            if rep.last_offset is not None and r.first_offset <= rep.last_offset:
                rep.problems.append(
                    Problem(
                        file,
                        r.first_position,
                        OFFSETS,
                        f"offsets do not increase: a batch starts at "
                        f"{r.first_offset} after one that ended at {rep.last_offset}",
                        r.first_offset,
                    )
                )
            if rep.first_offset is None:
                rep.first_offset = r.first_offset
            rep.last_offset = r.last_offset
        rep.batches += r.batches
        rep.bytes += r.bytes
        rep.problems.extend(r.problems)
    if (
        rep.base_offset is not None
        and rep.first_offset is not None
        and rep.first_offset < rep.base_offset
    ):
        rep.problems.append(
            Problem(
                file,
                0,
                OFFSETS,
                f"the first batch starts at offset {rep.first_offset}, "
                f"below the segment's base offset {rep.base_offset} (its file name)",
                rep.first_offset,
            )
        )
    return rep


def _merge_group(directory: str, files: list[FileReport]) -> PartitionReport:
    rep = PartitionReport(directory, files)
    prev: FileReport | None = None
    for f in files:
        rep.problems.extend(f.problems)
        if (
            prev is not None
            and prev.last_offset is not None
            and f.first_offset is not None
            and f.first_offset <= prev.last_offset
        ):
            rep.problems.append(
                Problem(
                    f.file,
                    0,
                    OFFSETS,
                    f"segment starts at offset {f.first_offset}, not after "
                    f"the previous segment's last offset {prev.last_offset} "
                    f"({os.path.basename(prev.file)})",
                    f.first_offset,
                )
            )
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


def plan_chunks(
    groups: list[tuple[str, list[str]]], *, jobs: int, deep: bool
) -> list[list[list[_Chunk]]]:
    """groups -> files -> chunks. A file is split only when that helps to keep `jobs` busy (a
    chunk lets the pages it has checked go as it goes, so a big one holds no more memory)."""
    total = total_bytes(groups)
    # about two ranges per worker: files that size or smaller are never split (no walk needed)
    target = max(8 << 20, -(-total // max(1, jobs * 2))) if jobs > 1 else 1 << 62
    return [[_split(f, target, deep) for f in files] for _, files in groups]


def _fork_map(fn: Callable, items: list, jobs: int, done: Callable[[int], None] | None) -> list:
    """[fn(x) for x in items] in `jobs` processes: this one and jobs - 1 forked children, item i
    in process i % jobs (plan_chunks cuts items of about one size), each child's results
    pickled back through a pipe at its end; `done(i)` hears of each item finished. Not
    multiprocessing's pool: its import, its threads and its extra process cost more CPU than a
    whole --jobs 1 run saves on two cores (--jobs 2 must cost no more CPU than --jobs 1). A child
    leaves by os._exit: no interpreter teardown, no parent's buffers flushed twice."""
    import gc
    import pickle

    children: list[tuple[int, int | None]] = []  # (pid, read end of its pipe: None once read)
    gc.freeze()  # the objects of now stay out of the collector: a child's collection would
    try:  # touch (and so copy) every page of them
        for w in range(1, jobs):
            r, wr = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
                code = 0
                try:
                    os.close(r)
                    try:
                        data = pickle.dumps(("ok", [fn(x) for x in items[w::jobs]]))
                    except BaseException as e:  # the parent raises it
                        data = pickle.dumps(
                            ("error", RuntimeError(f"verify worker: {type(e).__name__}: {e}"))
                        )
                    with os.fdopen(wr, "wb") as f:
                        f.write(data)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            os.close(wr)
            children.append((pid, r))
        results: list = [None] * len(items)
        for i in range(0, len(items), jobs):
            results[i] = fn(items[i])
            if done:
                done(i)
        gc.unfreeze()
        for w, (pid, fd) in enumerate(children, 1):
            assert fd is not None  # made None below, once read
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            children[w - 1] = (pid, None)
            try:
                status, value = pickle.loads(data)
            except Exception:
                raise RuntimeError("a verify worker process ended without its results") from None
            if status != "ok":
                raise value
            results[w::jobs] = value
            if done:
                for i in range(w, len(items), jobs):
                    done(i)
        return results
    finally:
        gc.unfreeze()
        for pid, fd in children:
            if fd is not None:
                os.close(fd)
            os.waitpid(pid, 0)


def _thread_map(fn: Callable, items: list, jobs: int, done: Callable[[int], None] | None) -> list:
    """[fn(x) for x in items] in `jobs` threads of this process, item i in thread i % jobs, as
    _fork_map deals them: for the compiled walk, which lets the GIL go while it checks CRCs
    (walks_without_gil), threads cost no fork, no copied pages and no second exit, so --jobs 2
    costs the CPU of --jobs 1. `done(i)` hears of each item finished, in this thread: this
    thread's as they finish, the others' at the end (as _fork_map tells of its children's)."""
    import threading

    results: list = [None] * len(items)
    errors: list = []

    def work(w: int) -> None:
        try:
            for i in range(w, len(items), jobs):
                results[i] = fn(items[i])
                if w == 0 and done:
                    done(i)
        except BaseException as e:  # raised here, after the others end
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(1, jobs)]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    if done:
        for i in range(len(items)):
            if i % jobs:
                done(i)
    return results


def walks_without_gil() -> bool:
    """Whether check_batches's walk runs compiled and without the GIL (formats/_framing_walk, with
    the CPU's CRC-32C instruction), so that verify-crc's jobs can be threads."""
    from kafkalog_cli.formats import framing

    return framing.walks_without_gil()


def verify_groups(
    groups: list[tuple[str, list[str]]],
    *,
    deep: bool = False,
    jobs: int = 1,
    on_progress: Callable[[int], None] | None = None,
    parallel_min_bytes: int = 32 << 20,
) -> list[PartitionReport]:
    """Verify each group (a partition dir and its .log files in offset order, or one file) and
    return one PartitionReport per group, in order. `jobs` > 1 uses worker processes when the
    input is at least `parallel_min_bytes`."""
    t0 = time.perf_counter()
    plan = plan_chunks(groups, jobs=jobs, deep=deep)
    flat = [c for files in plan for chunks in files for c in chunks]
    total = sum(c.end - c.start for c in flat)
    results: list[_ChunkResult]
    from kafkalog_cli.storage.paths_given import is_remote

    # remote files are read here: pyarrow's S3 client must not cross a fork
    if (
        jobs > 1
        and len(flat) > 1
        and total >= parallel_min_bytes
        and not any(is_remote(c.file) for c in flat)
    ):
        tell = (lambda i: on_progress(flat[i].end - flat[i].start)) if on_progress else None
        from kafkalog_cli.storage.segment import map_file  # noqa: F401 - what _run_chunk imports, imported

        #                              once before the fork rather than once in every process after it
        if not deep and walks_without_gil():
            results = _thread_map(_run_chunk, flat, min(jobs, len(flat)), tell)
        elif hasattr(os, "fork"):
            results = _fork_map(_run_chunk, flat, min(jobs, len(flat)), tell)
        else:  # pragma: no cover - platforms without fork
            import multiprocessing as mp

            with mp.get_context().Pool(min(jobs, len(flat))) as pool:
                results = pool.map(_run_chunk, flat, chunksize=1)
    else:
        results = []
        for c in flat:
            results.append(_run_chunk(c))
            if on_progress:
                on_progress(c.end - c.start)
    it = iter(results)
    reports = []
    for (directory, files), file_chunks in zip(groups, plan):
        file_reports = [
            _merge_file(f, [next(it) for _ in chunks]) for f, chunks in zip(files, file_chunks)
        ]
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


@dataclass(frozen=True)
class BitRot:
    """A batch whose bytes no longer match its stored CRC, in a segment the broker loads without
    recovering it (below the recovery point, or under .kafka_cleanshutdown): it serves the batch as
    it is. What that does, to whom, and the fixes are said here, for doctor and recover alike."""

    partition_dir: str
    file: str
    position: int
    base_offset: int | None
    last_offset: int | None
    stored_crc: int | None
    computed_crc: int | None

    @property
    def partition(self) -> str:
        return os.path.basename(self.partition_dir)

    @property
    def offsets(self) -> str:
        if self.base_offset is None:
            return "offsets unknown"
        return (
            f"offsets {self.base_offset}..{self.last_offset}"
            if self.last_offset is not None
            else f"offset {self.base_offset}"
        )

    def what(self) -> str:
        return (
            f"bit rot in {self.partition}: the batch at byte {self.position} of {os.path.basename(self.file)} "
            f"({self.offsets}) fails its CRC (stored crc = {self.stored_crc}, computed crc = {self.computed_crc})"
        )

    def who_is_hit(self) -> str:
        """The broker's and its clients' words (Fetcher's CompletedFetch.maybeEnsureValid,
        AbstractFetcherThread.processFetchRequest, which logs the follower's own fetch offset;
        UnifiedLog.analyzeAndValidateRecords checks a whole fetch before appending any of it)."""
        at = self.base_offset if self.base_offset is not None else "?"
        return (
            f"the broker loads and serves it as it is (it checks CRCs only in the segments it recovers). "
            f'A consumer (check.crcs=true, the default) fails in poll(): "Record batch for partition '
            f'{self.partition} at offset {at} is invalid, cause: Record is corrupt"; if this replica is the '
            f'leader, a follower whose fetch reaches offset {at} logs "Found invalid messages during fetch '
            f'for partition {self.partition} offset F" (F its own fetch offset, at or below {at}), takes no '
            f"record of that fetch, stops advancing and drops out of the ISR (acks=all producers fail once the "
            f"ISR is below min.insync.replicas); if it is a follower, nothing shows until it leads"
        )

    def fixes(self, log_dir: str | Path) -> str:
        from kafkalog_cli.storage.names import parse_partition_dir_name

        parsed = parse_partition_dir_name(self.partition)
        only = (
            f" --topic {parsed.topic_partition.topic} --partition {parsed.topic_partition.partition}"
            if parsed is not None
            else ""
        )
        return (
            f"a healthy replica's bytes: kafkalog compare-replicas finds a replica whose copy of these offsets "
            f"is intact (copy its segment in with the broker stopped); else kafkalog recover {log_dir} --all "
            f"--salvage{only} drops the damaged batch ({self.offsets} lost for good) and keeps the batches "
            f"around it"
        )


def bit_rot(
    partition_dir: str | Path, cut: Callable[[str, int], bool] = lambda file, position: False
) -> list[BitRot]:
    """verify-crc's CRC check of a partition's segments: every batch whose CRC fails, but those
    `cut(file, position)` says a recovery removes (the broker does not keep them)."""
    rep = verify_partition(partition_dir)
    return [
        BitRot(
            str(partition_dir),
            p.file,
            p.position,
            p.base_offset,
            p.last_offset,
            p.stored_crc,
            p.computed_crc,
        )
        for p in rep.problems
        if p.kind == CRC and p.file and p.position is not None and not cut(p.file, p.position)
    ]


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


def group_paths_lenient(
    paths: Iterable[str], on_left_out=None
) -> tuple[list[tuple[str, list[str]]], list[tuple[int, InputError]]]:
    """As group_paths, but a path that cannot be verified does not stop the others: it comes
    back as (number of groups before it, its InputError), so it can be reported in order.
    Directories are classified by storage's one rule (storage.logdir.read_partition_dirs);
    `on_left_out(dir, kind)` hears of each partition dir of a log dir that is not read."""
    from kafkalog_cli.storage.logdir import files_of_partition, read_partition_dirs
    from kafkalog_cli.storage.paths_given import is_remote
    from kafkalog_cli.storage.segment import not_regular_reason

    groups: list[tuple[str, list[str]]] = []
    errors: list[tuple[int, InputError]] = []

    def bad(message: str, raw: str) -> None:
        errors.append((len(groups), InputError(message, path=raw)))

    for raw in paths:
        if is_remote(raw):
            try:
                groups.extend(remote_groups(raw))
            except InputError as e:
                errors.append((len(groups), e))
            continue
        p = Path(raw)
        if p.is_dir():
            try:
                dirs = read_partition_dirs(p, on_left_out)
            except InputError as e:
                errors.append((len(groups), e))
                continue
            for d in dirs:  # a partition dir given keeps the form it was given in
                groups.append(
                    (raw if d is p else str(d), [str(f) for f in files_of_partition(d, (".log",))])
                )
            continue
        why = not_regular_reason(raw)
        if why == "no such file":
            bad("no such file or directory", raw)
        elif why is not None:
            bad(why, raw)
        elif p.suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
            bad(
                f"not a log segment ({p.suffix}); verify-crc checks .log files "
                "(use dump-index --verify-index-only for indexes)",
                raw,
            )
        elif not is_segment_name(p.name):
            bad(
                "not a Kafka log segment (verify-crc reads <offset>.log files, KRaft .checkpoint "
                "snapshots, partition dirs and log dirs)",
                raw,
            )
        else:
            groups.append((raw, [raw]))
    return groups, errors


def remote_groups(uri: str) -> list[tuple[str, list[str]]]:
    """A remote URI's groups: one per partition dir of its segments (storage.remote's listing),
    or the one segment it names."""
    from kafkalog_cli.storage.remote import remote_segments

    segs = remote_segments(uri)
    if len(segs) == 1 and segs[0].uri == uri:
        return [(uri, [uri])]
    groups: dict[str, list[str]] = {}
    for s in segs:
        groups.setdefault(s.directory, []).append(s.uri)
    return list(groups.items())


def unreadable_report(error: InputError) -> PartitionReport:
    """A report for a path that could not be verified at all: no files, one problem."""
    path = str(error.path)
    return PartitionReport(path, [], [Problem(path, error.position, UNREADABLE, error.message)])
