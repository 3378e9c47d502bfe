"""Render one big .log in forked worker processes, for both renderers (Kafka text and JSON Lines).

The file is cut into byte ranges at batch boundaries; each worker renders its ranges ahead, into
memory, and writes a range's bytes straight to the output's file descriptor when its turn comes,
so the output is in file order and the parent copies nothing. A range that fails in a worker is
not written: the caller renders it again itself, so the output before the error and the error are
those of the sequential dump.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from kafkalog_cli.formats.framing import batch_cuts
from kafkalog_cli.storage.live_files import release_pages

PARALLEL_MIN_BYTES = 32 << 20  # smaller .log files are rendered in this process
CHUNK_MIN_BYTES = 1 << 20
# A worker holds one range's output until its turn (JSON Lines is about 5x the input). Ranges of
# 4 MiB keep that output within the last-level cache's reach: a batch's JSON rendered into a heap
# of 16 MiB ranges' output cost 11% more CPU per record (1.58 against 1.41 us, in-process over
# bench_read.py's segment); 1 MiB ranges measured 2% worse than 4 MiB.
CHUNK_MAX_BYTES = 4 << 20
RELEASE_BYTES = 64 << 20  # a reader lets go of the mapped pages it has read about this often
RUN_BYTES = (
    1 << 20
)  # the text a run of batches (text_of_batches, lines_of_batches) writes before it returns

# render(start, stop) -> (the bytes of buf[start:stop) in output order, a picklable summary)
RangeRenderer = Callable[[int, int], tuple[Sequence[bytes], object]]


class Sink:
    """A binary stream that keeps what is written, for a renderer running in a worker."""

    def __init__(self):
        self.parts: list[bytes] = []

    def write(self, b: bytes) -> None:
        self.parts.append(b)

    def writelines(self, parts: list[bytes]) -> None:
        """Keeps `parts` as they are: the worker hands them to writev, so joining them first
        would only copy the whole output once more."""
        self.parts += parts

    def flush(self) -> None:
        pass


def output_fd(out) -> int | None:
    """The file descriptor workers write to, or None when `out` has none (BytesIO, CliRunner's
    streams): then the dump stays in this process."""
    try:
        return out.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def ranges_of(buf, start: int, end: int, jobs: int) -> list[tuple[int, int]]:
    """buf[start:end) as ranges for `jobs` workers: about eight per worker, each between
    CHUNK_MIN_BYTES and CHUNK_MAX_BYTES (so more for a big file); the last one runs to `end`.
    The walk lets the pages it touched go."""
    target = min(CHUNK_MAX_BYTES, max(CHUNK_MIN_BYTES, (end - start) // (jobs * 8)))
    c = batch_cuts(buf, start, end, target, target // 4, lambda a, b: release_pages(buf, a, b))
    # the last `jobs` ranges cut four times finer: the workers then finish closer together
    tail = len(c) - jobs
    if tail > 0:
        c[tail:] = batch_cuts(buf, c[tail], end, target // 4, target // 16)
    return list(zip(c, c[1:] + [end]))


def render_ranges(
    buf, ranges: list[tuple[int, int]], jobs: int, fd: int, render: RangeRenderer
) -> tuple[list, int | None]:
    """Render `ranges` of `buf` in `jobs` forked workers (range k in worker k % jobs), writing
    each range's bytes to `fd` in order. Returns the summaries of the ranges written, in order,
    and the index of the first range that failed (None when all were written); raises
    BrokenPipeError when the reader has gone."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    jobs = min(jobs, len(ranges))
    conns, procs = [], []
    summaries: list = []
    try:
        for w in range(jobs):
            parent, child = ctx.Pipe()
            p = ctx.Process(
                target=_worker, args=(child, buf, ranges[w::jobs], fd, render), daemon=True
            )
            p.start()
            child.close()
            conns.append(parent)
            procs.append(p)
        for k in range(len(ranges)):
            conn = conns[k % jobs]
            try:
                msg = conn.recv()
            except EOFError:
                msg = ("error",)
            if msg[0] != "ready":
                return summaries, k
            conn.send(True)
            msg = conn.recv()
            if msg[0] == "epipe":
                raise BrokenPipeError(32, "Broken pipe")
            summaries.append(msg[1])
        return summaries, None
    finally:
        for c in conns:
            c.close()
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()


def _worker(conn, buf, ranges, fd: int, render: RangeRenderer) -> None:
    for start, stop in ranges:
        try:
            parts, summary = render(start, stop)
        except BaseException:
            conn.send(("error",))
            return
        release_pages(buf, start, stop)
        conn.send(("ready",))
        if not conn.recv():
            return
        try:
            write_all(fd, parts)
        except BrokenPipeError:
            conn.send(("epipe",))
            return
        del parts
        conn.send(("done", summary))


def _iov_max() -> int:
    """How many buffers one writev takes (POSIX's minimum, 16, when the system will not say)."""
    try:
        n = os.sysconf("SC_IOV_MAX")
    except (AttributeError, ValueError, OSError):
        return 16
    return n if n > 0 else 16


_IOV_MAX = _iov_max()


def write_all(fd: int, parts: Sequence[bytes]) -> None:
    """`parts` to `fd`, in order, with writev (up to IOV_MAX parts a call): a range's output is
    many lines' worth of parts, and a join would copy all of it once more."""
    for i in range(0, len(parts), _IOV_MAX):
        group = parts[i : i + _IOV_MAX]
        written = os.writev(fd, group)
        if written < sum(map(len, group)):  # a short write (a pipe, a signal): the rest one by one
            with memoryview(b"".join(group)) as mv:
                mv = mv[written:]
                while mv:
                    mv = mv[os.write(fd, mv) :]
