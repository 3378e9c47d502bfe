"""A real Kafka broker (KRaft, one node, 127.0.0.1 only) on a log dir, for the differential tests.

KAFKA_HOME names a Kafka distribution: 3.3.1, 3.9.0-rc3 or 4.0.0-SNAPSHOT (trunk 1eb76443)
(tools/kafka-broker builds them; which
one it is comes from its jars, tests/helpers/kafka_dist.py, and every campaign summary says it), KAFKA_PY a
python with kafka-python (the client runs there, see client.py). Each broker gets two free ports
of its own and its own work dir, so several can run at once on the machine; it is stopped by its
PID (SIGTERM: a clean shutdown), never by kafka-server-stop.sh, which stops every broker.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.kafka_dist import kafka_dist

KAFKA_HOME = os.environ.get("KAFKA_HOME", "")
KAFKA_PY = os.environ.get("KAFKA_PY", sys.executable)
CLIENT = Path(__file__).with_name("client.py")
STARTED = "Kafka Server started"
RECOVERING = re.compile(r"Recovering unflushed segment (\d+)")
LOADED = re.compile(r"Completed load of Log\(dir=[^,]*/([^/,]+), .*?logEndOffset=(\d+)\)")
# The controller of a combined node logs these while its quorum forms: not about any log
CONTROLLER_STARTUP = re.compile(
    r"\[Controller \d+\] \w+: unable to start processing because of "
    r"(TimeoutException|NotControllerException)"
)
# A tiered (3.6+) broker's remote log manager runs its first copy task before the topic-based
# remote log metadata manager has read __remote_log_metadata; it logs this ERROR, with
# "IllegalStateException: This instance is in invalid state, initialized: false" on the next line,
# and retries: not about any log
RLM_NOT_READY = "Error occurred while copying log segments of partition"
BIND_FAILED = "java.net.BindException: Address already in use"


def available() -> bool:
    return (
        bool(KAFKA_HOME)
        and os.access(os.path.join(KAFKA_HOME, "bin", "kafka-server-start.sh"), os.X_OK)
        and kafka_dist(KAFKA_HOME) is not None
    )


def version_label() -> str:
    """Which Kafka the campaign runs against, e.g. "Kafka 3.9.0-rc3 (3.9.0, commit dd5272687e8adf9e) at ..."."""
    d = kafka_dist(KAFKA_HOME) if KAFKA_HOME else None
    return d.label if d else "none"


def free_ports(n: int) -> list[int]:
    """Ports the kernel has just handed out (bound together, so distinct), released for the broker."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def read_properties(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def tiered_supported() -> bool:
    """KAFKA_HOME is a 3.6+ broker with Kafka's LocalTieredStorage beside it (rsm/, as
    tools/kafka-broker/build-all-3.9.sh lays it out)."""
    d = kafka_dist(KAFKA_HOME) if KAFKA_HOME else None
    return bool(
        d and d.at_least(3, 6) and list(Path(KAFKA_HOME, "rsm").glob("kafka-storage-*-test.jar"))
    )


def tiered_config(remote: Path, metadata_partitions: int = 50) -> dict[str, str]:
    """Broker properties for tiered storage through LocalTieredStorage, its uploads under
    `remote`/kafka-tiered-storage. Every broker started on a dir with remote.storage.enable
    topics needs them (a 3.9 broker refuses such topics with the storage system off) and the
    same `remote` (the uploads the dir's __remote_log_metadata names)."""
    jars = sorted(str(j) for j in Path(KAFKA_HOME, "rsm").glob("*.jar"))
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        "remote.log.storage.manager.class.path": ":".join(jars),
        "rsm.config.dir": str(remote),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": str(metadata_partitions),
        "remote.log.manager.task.interval.ms": "1000",
    }


# The broker's settings for every run: no time retention, no cleaner unless asked, deletes of
# segments the loader drops done within a second (so they are gone before the clean stop)
BASE_CONFIG = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "log.retention.hours": "-1",
    "log.retention.check.interval.ms": "300000",
    "log.cleaner.enable": "false",
    "log.segment.delete.delay.ms": "500",
    "num.recovery.threads.per.data.dir": "1",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}


class BrokerDidNotStart(RuntimeError):
    def __init__(self, data: Path, log: str):
        self.log = log
        lines = log.splitlines()
        fatal = [ln for ln in lines if "Exception" in ln and str(data) in ln] or [
            ln for ln in lines if " ERROR " in ln and not CONTROLLER_STARTUP.search(ln)
        ]
        self.reason = fatal[-1] if fatal else log[-500:]
        super().__init__(f"broker did not start on {data}: {self.reason}")

    def partition(self, data: Path) -> str | None:
        """The partition dir the fatal error names (a log the loader could not load)."""
        for ln in reversed(self.log.splitlines()):
            if "Exception" in ln and f"{data}/" in ln:
                name = ln.split(f"{data}/", 1)[1].split("/", 1)[0]
                if (data / name).is_dir():
                    return name
        return None


@dataclass
class BrokerRun:
    """What one run of the broker logged."""

    log: str = ""
    started: bool = False
    clean_stop: bool = False

    @property
    def recovered_segments(self) -> list[str]:
        return RECOVERING.findall(self.log)

    @property
    def loaded_log_end_offsets(self) -> dict[str, int]:
        """Each partition's log end offset when the loader was done with it ("Completed load of
        Log(...)"): what a broker appends afterwards (a transaction coordinator completing a
        transaction it finds prepared) is not recovery."""
        return {m.group(1): int(m.group(2)) for m in LOADED.finditer(self.log)}

    @property
    def errors(self) -> list[str]:
        lines = self.log.splitlines()
        return [
            ln
            for i, ln in enumerate(lines)
            if " ERROR " in ln
            and not CONTROLLER_STARTUP.search(ln)
            and not (
                RLM_NOT_READY in ln and i + 1 < len(lines) and "initialized: false" in lines[i + 1]
            )
        ]


@dataclass
class Broker:
    data: Path  # the log dir (meta.properties inside)
    work: Path  # config, logs
    config: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    port: int = 0

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def server_log(self) -> Path:
        return self.work / "logs" / "server.log"

    def write_config(self) -> Path:
        meta = (
            read_properties(self.data / "meta.properties")
            if (self.data / "meta.properties").exists()
            else {}
        )
        nid = meta.get("node.id", "1")
        self.port, cport = free_ports(2)
        cfg = {
            "process.roles": "broker,controller",
            "node.id": nid,
            "controller.quorum.voters": f"{nid}@127.0.0.1:{cport}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data),
            **BASE_CONFIG,
            **self.config,
        }
        self.work.mkdir(parents=True, exist_ok=True)
        path = self.work / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in cfg.items()))
        return path

    def format(self, release_version: str | None = None) -> None:
        """kafka-storage.sh format on an empty dir (a new cluster); `release_version` pins
        metadata.version (default: the broker's latest, 3.3-IV3 on 3.3.1, 3.9-IV0 on 3.9)."""
        props = self.write_config()
        cid = subprocess.run(
            [f"{KAFKA_HOME}/bin/kafka-storage.sh", "random-uuid"],
            capture_output=True,
            text=True,
            check=True,
            env=self._env(),
        ).stdout.strip()
        subprocess.run(
            kafka_dist(KAFKA_HOME).format_args(cid, props, release_version),
            capture_output=True,
            check=True,
            env=self._env(),
        )

    def _env(self) -> dict[str, str]:
        return {**os.environ, "LOG_DIR": str(self.work / "logs"), "KAFKA_HEAP_OPTS": "-Xmx512m"}

    def start(self, timeout: float = 180) -> None:
        """Start and wait for "Kafka Server started". Ports are free when picked but another process
        (another helper's broker) may take one before the broker binds it: a start that failed only
        to bind is retried on new ports."""
        for attempt in range(3):
            try:
                return self._start_once(timeout)
            except BrokerDidNotStart as e:
                if attempt == 2 or BIND_FAILED not in e.log:
                    raise

    def _start_once(self, timeout: float) -> None:
        props = self.write_config()
        if self.server_log.exists():
            self.server_log.unlink()
        self.proc = subprocess.Popen(
            [f"{KAFKA_HOME}/bin/kafka-server-start.sh", str(props)],
            stdout=open(self.work / "stdout", "ab"),
            stderr=subprocess.STDOUT,
            env=self._env(),
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server_log.exists() and STARTED in self.server_log.read_text(errors="replace"):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        log = self.server_log.read_text(errors="replace") if self.server_log.exists() else ""
        self.stop()
        raise BrokerDidNotStart(self.data, log)

    def wait_log(self, text: str, timeout: float = 60) -> bool:
        """Wait until server.log holds `text`; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server_log.exists() and text in self.server_log.read_text(errors="replace"):
                return True
            time.sleep(0.3)
        return False

    def wait_no_deleted(self, timeout: float = 30) -> None:
        """Segments the loader dropped are deleted asynchronously (log.segment.delete.delay.ms)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self.data.rglob("*.deleted")):
            time.sleep(0.3)

    def stop(self) -> BrokerRun:
        run = BrokerRun()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.server_log.exists():
            run.log = self.server_log.read_text(errors="replace")
        run.started = STARTED in run.log
        run.clean_stop = (self.data / ".kafka_cleanshutdown").exists()
        return run

    def client(self, request: dict, timeout: float = 300) -> dict:
        """Run one client.py request (produce, consume, alter configs) with kafka-python."""
        r = subprocess.run(
            [KAFKA_PY, str(CLIENT), self.bootstrap],
            input=json.dumps(request),
            text=True,
            capture_output=True,
            timeout=timeout,
        )
        if r.returncode != 0:
            raise RuntimeError(f"client {request.get('op')} failed: {r.stderr[-3000:]}")
        return json.loads(r.stdout)


def run_broker(
    data: Path, work: Path, actions=None, config: dict | None = None
) -> tuple[BrokerRun, object]:
    """Start a broker on `data`, wait for the loader's async deletes, run `actions(broker)`, stop
    cleanly. Returns the run's log and what actions returned."""
    b = Broker(data, work, dict(config or {}))
    b.start()
    try:
        b.wait_no_deleted()
        result = actions(b) if actions is not None else None
    finally:
        run = b.stop()
    return run, result
