"""What the benchmark scripts share: the kafka-python yardstick, timed runs of the installed
command with their peak memory, and the machine's load beside each figure (the machine is shared
and noisy: compare ratios within one run, never absolute times across runs)."""

from __future__ import annotations

import compileall
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

KAFKA_PYTHON_MISSING = (
    "kafka-python is not installed (pip install kafka-python): its reference is skipped"
)


def kafkalog_command() -> list[str]:
    """The installed command, or this interpreter running the package (PYTHONPATH decides which
    source it runs). The package's bytecode is compiled first, as `pip install` does: an editable
    checkout under PYTHONDONTWRITEBYTECODE would otherwise compile every module at each start, a
    cost no installed copy pays."""
    import kafkalog_cli

    compileall.compile_dir(str(Path(kafkalog_cli.__file__).parent), quiet=1)
    if os.environ.get("PYTHONPATH"):
        return [sys.executable, "-m", "kafkalog_cli"]
    # the command of this interpreter's install first: one found on PATH (a pyenv shim, another
    # venv) may be another copy of kafkalog, on another core
    beside = Path(sys.executable).with_name("kafkalog")
    return [str(beside) if beside.exists() else (shutil.which("kafkalog") or "kafkalog")]


def run(argv: list[str]) -> tuple[float, float, float]:
    """(seconds, peak resident set in MiB of the largest process: the command or one of its
    workers, CPU seconds of the command and its workers) of one run with stdout to /dev/null;
    exit codes 0 and 1 pass. The peaks are read from /proc (VmHWM) while it runs: the kernel's
    ru_maxrss of a child also counts the memory of the process it was forked from."""
    with PeakMemory(interval=0.05) as mem, open(os.devnull, "wb") as null:
        cpu = _children_cpu()
        t = time.perf_counter()
        p = subprocess.run(argv, stdout=null, stderr=subprocess.PIPE)
        el = time.perf_counter() - t
        cpu = _children_cpu() - cpu
    if p.returncode not in (0, 1):
        raise SystemExit(
            f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-500:]}"
        )
    return el, mem.peak_mib, cpu


def _children_cpu() -> float:
    """CPU seconds of the reaped children (a command's own workers are reaped by it, so count)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def best_run(argv: list[str], repeat: int = 3) -> tuple[float, float, str]:
    """The fastest of `repeat` runs: (seconds, the largest peak RSS seen, the load averages)."""
    times, peaks = [], []
    for _ in range(repeat):
        t, peak, _ = run(argv)
        times.append(t)
        peaks.append(peak)
    return min(times), max(peaks), load()


@dataclass
class Versus:
    """A command beside kafka-python, each run right after a kafka-python run, so that both meet
    the same load: medians over the pairs."""

    seconds: float  # the command's wall-clock seconds
    wall: float  # its records/s over kafka-python's (one core), wall-clock
    cpu: float  # its records per CPU-second (all its processes) over kafka-python's: what
    #                    one free core gives; with n free cores, wall tends to n times this
    peak_mib: float  # the largest peak RSS of any of its processes, over the runs
    loads: str  # the 1-minute load average at each run
    cpu_s: float = 0.0  # the command's CPU seconds (all its processes), median
    aiokafka_cpu: float | None = None  # its records per CPU-second over aiokafka's C decoder's
    #                                     (same bytes, same load), median; None: not installed


def versus_kafka_python(
    argv: list[str], records: int, paths: list[Path], limit: int, repeat: int = 5
) -> Versus | None:
    """`argv` over `records` records beside kafka-python decoding up to `limit` bytes of
    `paths`, `repeat` times; None when kafka-python is not installed."""
    walls, cpus, secs, peaks, loads, cpu_s, aio = [], [], [], [], [], [], []
    for _ in range(repeat):
        kp = kafka_python_decode(paths, limit)
        if kp is None:
            return None
        n, kp_wall, kp_cpu = kp
        ak = aiokafka_decode(paths, 4 * limit)
        el, peak, cpu = run(argv)
        walls.append((records / el) / (n / kp_wall))
        cpus.append((records / cpu) / (n / kp_cpu))
        if ak is not None:
            aio.append((records / cpu) / (ak[0] / ak[2]))
        secs.append(el)
        cpu_s.append(cpu)
        peaks.append(peak)
        loads.append(f"{os.getloadavg()[0]:.1f}")
    med = statistics.median
    return Versus(
        med(secs),
        med(walls),
        med(cpus),
        max(peaks),
        "load " + " ".join(loads),
        med(cpu_s),
        med(aio) if aio else None,
    )


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def kafka_python_rate(paths: list[Path], limit: int) -> float | None:
    """kafka-python's records/s (wall-clock) over up to `limit` bytes of `paths`; None when
    kafka-python is not installed."""
    kp = kafka_python_decode(paths, limit)
    return kp[0] / kp[1] if kp else None


AIOKAFKA_MISSING = (
    "aiokafka's C extension is not installed (pip install aiokafka): the compiled-decoder "
    "reference is skipped"
)


def aiokafka_decode(paths: list[Path], limit: int) -> tuple[int, float, float] | None:
    """aiokafka's C decoder (aiokafka.record._crecords.DefaultRecordBatch, Cython) over the same
    bytes as kafka_python_decode, fields touched alike: (records, wall seconds, CPU seconds);
    None when aiokafka or its C extension is not installed."""
    try:
        from aiokafka.record._crecords import DefaultRecordBatch
    except ImportError:
        return None
    return _decode_with(DefaultRecordBatch, paths, limit)


def kafka_python_decode(paths: list[Path], limit: int) -> tuple[int, float, float] | None:
    """kafka-python decoding v2 batches (DefaultRecordBatch, pure Python, one core) over up to
    `limit` bytes of `paths`, touching key, value, offset and headers as a consumer does:
    (records, wall-clock seconds, CPU seconds); None when kafka-python is not installed."""
    try:
        from kafka.record.default_records import DefaultRecordBatch
    except ImportError:
        return None
    return _decode_with(DefaultRecordBatch, paths, limit)


def kafka_dump_log(args: list[str]) -> tuple[float, float] | None:
    """kafka-dump-log of $KAFKA_HOME (Kafka 3.3.1's, from tools/kafka-broker) with
    `args`, output to /dev/null: (wall seconds, CPU seconds of the JVM); None without KAFKA_HOME."""
    home = os.environ.get("KAFKA_HOME", "/opt/kafka-3.3.1")
    tool = Path(home) / "bin" / "kafka-dump-log.sh"
    if not tool.exists():
        return None
    el, _, cpu = run([str(tool), *args])
    return el, cpu


def _decode_with(DefaultRecordBatch, paths: list[Path], limit: int) -> tuple[int, float, float]:
    chunks = []
    left = limit
    for path in paths:
        with open(path, "rb") as f:
            chunks.append(f.read(left))
        left -= len(chunks[-1])
        if left <= 0:
            break
    t, c = time.perf_counter(), time.process_time()
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
    return n, time.perf_counter() - t, time.process_time() - c


class PeakMemory:
    """Samples the resident set of this process's descendants (VmHWM, each process's own peak)
    while the body runs: for workers that are not reaped by us (process pools, Spark's Python
    workers under the JVM). `peak_mib` is the largest; `jvm_mib` that of java processes apart;
    `cpu_s` the CPU seconds of the Python ones, as last seen (workers a forkserver reaps never
    reach our RUSAGE_CHILDREN; a sample every `interval` misses at most that much of each)."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.peak_mib = 0.0
        self.jvm_mib = 0.0
        self._cpu: dict[int, float] = {}
        self._jvm_cpu: dict[int, float] = {}
        self._before: dict[int, float] = {}  # CPU seconds of the processes there at the start
        self._stop = threading.Event()

    def __enter__(self):
        # workers that outlive a body (Spark's reused Python workers, the JVM) count from here
        self._before = {pid: cpu for pid, _, _, cpu in _descendants(os.getpid())}
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for pid, name, hwm, cpu in _descendants(os.getpid()):
                if name == "java":
                    self.jvm_mib = max(self.jvm_mib, hwm)
                    self._jvm_cpu[pid] = cpu - self._before.get(pid, 0.0)
                else:
                    self.peak_mib = max(self.peak_mib, hwm)
                    self._cpu[pid] = cpu - self._before.get(pid, 0.0)

    @property
    def cpu_s(self) -> float:
        return sum(self._cpu.values())

    @property
    def jvm_cpu_s(self) -> float:
        """CPU seconds of the java processes (Spark's JVM) while the body ran."""
        return sum(self._jvm_cpu.values())


def _descendants(root: int):
    parents, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents[int(d)] = int(fields[1])
                cpu[int(d)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
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
            yield pid, fields.get("Name", "").strip(), hwm, cpu[pid]
