"""dump-log over a big .log in worker processes writes exactly what the sequential dump writes:
stdout bytes, the non-consecutive offsets report on stderr, the error (and the output before it)
when a batch in the second half is broken, and the invalid bytes at the end."""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, set_v2_crc
from kafkalog_cli.render import kafka, parallel
from kafkalog_cli.render.kafka import DumpOptions, KafkaDumper, decoder_for, decoder_parser

STRING = decoder_parser(decoder_for("StringDecoder"), decoder_for("StringDecoder"))
SIZE = 33 << 20  # just above PARALLEL_MIN_BYTES


def _big(tmp_path, *, tail: bytes = b"", damage=None) -> tuple[str, int]:
    """~33 MiB of 200-byte batches of 2 records; every 997th batch leaves a gap in the offsets.
    Returns the path and the batch size."""
    recs = [
        SimpleRecord(key=b"k%d" % i, value=b"value-%03d" % i * 8, timestamp=1_700_000_000_000 + i)
        for i in range(2)
    ]
    batch = bytearray(build_v2_batch(recs, 0))
    n = SIZE // len(batch) + 1
    out = bytearray(bytes(batch) * n)
    # gaps every 997th batch, and at the first batch of every worker range (the merge's seams)
    seams = {start for start, _ in parallel.ranges_of(out, 0, len(out), 2)}
    assert len(seams) > 4
    off = 0
    for i in range(n):
        if i % 997 == 0 or i * len(batch) in seams:
            off += 3
        struct.pack_into(">q", out, i * len(batch), off)
        off += 2
    if damage is not None:
        damage(out, len(batch))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(out) + tail)
    return str(path), len(batch)


def _dump(tmp_path, path: str, jobs: int, **flags) -> tuple[bytes, bytes, str | None]:
    o = DumpOptions(parser=STRING, jobs=jobs, **flags)
    outp, errp = tmp_path / f"out{jobs}", tmp_path / f"err{jobs}"
    error = None
    with open(outp, "wb") as out, open(errp, "wb") as err:
        d = KafkaDumper(out, err, o)
        try:
            d.dump(path)
            d.finish()
        except KafkalogError as e:
            d.flush()
            error = str(e)
    return outp.read_bytes(), errp.read_bytes(), error


def _same(tmp_path, path, **flags):
    seq = _dump(tmp_path, path, 1, **flags)
    par = _dump(tmp_path, path, 2, **flags)
    assert par[0] == seq[0]
    assert par[1:] == seq[1:]
    return seq


@pytest.fixture
def forks(monkeypatch):
    """Counts the worker ranges, to be sure the parallel path ran."""
    calls = []
    real = KafkaDumper._dump_parallel

    def spy(self, *a):
        calls.append(a[1:3])
        return real(self, *a)

    monkeypatch.setattr(KafkaDumper, "_dump_parallel", spy)
    return calls


def test_parallel_output_and_reports_are_the_sequential_ones(tmp_path, forks):
    path, _ = _big(
        tmp_path, tail=struct.pack(">qi", 10**9, 500) + b"\0" * 28
    )  # an incomplete batch at the end
    out, err, error = _same(tmp_path, path, deep_iteration=True, print_data_log=True)
    assert error is None and forks
    assert out.endswith(b"Found 40 invalid bytes at the end of 00000000000000000000.log\n")
    assert err.startswith(b"Non-consecutive offsets in") and err.count(b"is followed by") > 100


def test_a_broken_record_in_the_second_half(tmp_path, forks):
    def damage(out, blen):
        pos = (len(out) // blen * 3 // 4) * blen
        b = bytearray(out[pos : pos + blen])
        b[61] += 2  # the first record's length
        out[pos : pos + blen] = set_v2_crc(b)

    path, _ = _big(tmp_path, damage=damage)
    out, err, error = _same(tmp_path, path, deep_iteration=True)
    assert error is not None and "Invalid record size" in error and forks
    assert len(out) > 10 << 20


def test_a_corrupt_size_field_in_the_second_half(tmp_path, forks):
    def damage(out, blen):
        pos = (len(out) // blen * 2 // 3) * blen
        struct.pack_into(">i", out, pos + 8, 3)

    path, _ = _big(tmp_path, damage=damage)
    out, err, error = _same(tmp_path, path, deep_iteration=True)
    assert error is not None and "smaller than minimum record overhead" in error and forks


def test_small_files_stay_in_process(tmp_path, forks, monkeypatch):
    recs = [SimpleRecord(key=None, value=b"x", timestamp=1)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(build_v2_batch(recs, i) for i in range(1000)))
    _same(tmp_path, str(path), deep_iteration=True)
    assert not forks


def test_a_pipe_closed_early_is_quiet(tmp_path):
    path, _ = _big(tmp_path)
    p = subprocess.Popen(
        [sys.executable, "-m", "kafkalog_cli", "dump-log", "--print-data-log", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout.read(100000)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0
    assert err == b""


def test_min_size_constant():
    assert kafka.PARALLEL_MIN_BYTES <= SIZE


def _drain(fd: int, into: list) -> None:
    with open(fd, "rb") as r:
        into.append(r.read())


@pytest.mark.parametrize("short", [False, True])
def test_a_range_reaches_a_pipe_whole_and_in_order(monkeypatch, short):
    """Workers hand a range's parts to writev, IOV_MAX at a time, and finish a short write (a
    pipe, a signal) from where it stopped: the reader gets every byte in order."""
    import os
    import threading

    parts = [bytes([i % 251]) * (i % 7000) for i in range(3 * parallel._IOV_MAX + 5)]
    if short:
        real = os.writev
        monkeypatch.setattr(
            parallel.os, "writev", lambda fd, group: real(fd, [b"".join(group)[:3]])
        )
    r, w = os.pipe()
    got: list = []
    reader = threading.Thread(target=_drain, args=(r, got))
    reader.start()
    parallel.write_all(w, parts)
    os.close(w)
    reader.join()
    assert got == [b"".join(parts)]


def test_ranges_cover_the_file_at_batch_boundaries_and_end_finer():
    """Worker ranges run back to back from start to end, each from a batch boundary, about
    CHUNK_MAX_BYTES each but the last `jobs`-ranges' stretch, cut four times finer so that the
    workers finish together."""
    from kafkalog_cli.formats.records import iter_batches

    batch = build_v2_batch([SimpleRecord(key=b"k", value=b"v" * 1000, timestamp=1)], 0)
    data = batch * ((40 << 20) // len(batch))
    bounds = {b.position for b in iter_batches(data)}
    ranges = parallel.ranges_of(data, 0, len(data), 2)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert {a for a, _ in ranges} <= bounds
    sizes = [b - a for a, b in ranges]
    big, small = max(sizes), max(sizes[-4:])
    assert big <= parallel.CHUNK_MAX_BYTES + len(batch)
    assert small <= big // 4 + len(batch) and len([s for s in sizes if s < big // 2]) >= 5


@pytest.mark.parametrize("answer", [-1, 0, ValueError("unknown name")])
def test_an_unknown_iov_max_falls_back_to_posix_minimum(monkeypatch, answer):
    def sysconf(name):
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(parallel.os, "sysconf", sysconf)
    assert parallel._iov_max() == 16
