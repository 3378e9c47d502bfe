"""What the benchmark scripts share: the kafka-python yardstick, timed runs of the installed
command with their peak memory, and the machine's load beside each figure (the machine is shared
and noisy: compare ratios within one run, never absolute times across runs)."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

KAFKA_PYTHON_MISSING = "kafka-python is not installed (pip install kafka-python): its reference is skipped"

def kafkalog_command() -> list[str]:
    """The installed command, or this interpreter running the package (PYTHONPATH decides which
    source it runs)."""
    if os.environ.get("PYTHONPATH"):
        return [sys.executable, "-m", "kafkalog_cli"]
    return [shutil.which("kafkalog") or str(Path(sys.executable).with_name("kafkalog"))]


def run(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak resident set in MiB of the largest process: the command or one of its
    workers) of one run with stdout to /dev/null; exit codes 0 and 1 pass. The peaks are read
    from /proc (VmHWM) while it runs: the kernel's ru_maxrss of a child also counts the memory of
    the process it was forked from."""
    with PeakMemory(interval=0.05) as mem, open(os.devnull, "wb") as null:
        t = time.perf_counter()
        p = subprocess.run(argv, stdout=null, stderr=subprocess.PIPE)
        el = time.perf_counter() - t
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-500:]}")
    return el, mem.peak_mib


def best_run(argv: list[str], repeat: int = 3) -> tuple[float, float, str]:
    """The fastest of `repeat` runs: (seconds, the largest peak RSS seen, the load averages)."""
    times, peaks = [], []
    for _ in range(repeat):
        t, peak = run(argv)
        times.append(t)
        peaks.append(peak)
    return min(times), max(peaks), load()


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def kafka_python_rate(paths: list[Path], limit: int) -> float | None:
    """kafka-python's records/s decoding v2 batches (DefaultRecordBatch, pure Python), over up to
    `limit` bytes of `paths`, touching key, value, offset and headers as a consumer does; None
    when kafka-python is not installed."""
    try:
        from kafka.record.default_records import DefaultRecordBatch
    except ImportError:
        return None
    chunks = []
    left = limit
    for path in paths:
        with open(path, "rb") as f:
            chunks.append(f.read(left))
        left -= len(chunks[-1])
        if left <= 0:
            break
    t = time.perf_counter()
    n = 0
    for data in chunks:
        pos = 0
        mv = memoryview(data)
        while pos + 61 <= len(data):
            size = struct.unpack_from(">i", data, pos + 8)[0] + 12
            if pos + size > len(data):
                break
            for r in DefaultRecordBatch(bytes(mv[pos : pos + size])):
                r.key, r.value, r.offset, r.headers  # noqa: B018 - touch the fields, as a consumer does
                n += 1
            pos += size
    return n / (time.perf_counter() - t)


class PeakMemory:
    """Samples the resident set of this process's descendants (VmHWM, each process's own peak)
    while the body runs: for workers that are not reaped by us (process pools, Spark's Python
    workers under the JVM). `peak_mib` is the largest; `jvm_mib` that of java processes apart."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.peak_mib = 0.0
        self.jvm_mib = 0.0
        self._stop = threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for pid, name, hwm in _descendants(os.getpid()):
                if name == "java":
                    self.jvm_mib = max(self.jvm_mib, hwm)
                else:
                    self.peak_mib = max(self.peak_mib, hwm)


def _descendants(root: int):
    parents = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents[int(d)] = int(fields[1])
            except OSError:
                continue
    for pid in parents:
        p = pid
        while p in parents and p != root and p > 1:
            p = parents[p]
        if p == root and pid != root:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            hwm = int(fields.get("VmHWM", "0 kB").split()[0]) / 1024
            yield pid, fields.get("Name", "").strip(), hwm
