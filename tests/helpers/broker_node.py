"""One real Kafka node (KRaft broker and controller in one process) that keeps its ports across
restarts, so that a client process started before a stop reconnects after the start (an
idempotent producer that must resume with its producer id and sequences). Started and stopped by
its own PID (SIGTERM: a clean shutdown); skipped as kafka_broker.needs_broker skips."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from .kafka_broker import KAFKA_HOME, KAFKA_PY, _free_port, format_log_dir, kraft_properties

STARTED = "Kafka Server started"


class BrokerNode:
    """Node 1 on `log_dir` (formatted here when it has no meta.properties), its console, config
    and server.log under `work`. `properties`: more broker properties."""

    def __init__(self, log_dir: Path, work: Path, properties: dict | None = None):
        self.log_dir, self.work = log_dir, work
        work.mkdir(parents=True, exist_ok=True)
        if not (log_dir / "meta.properties").exists():
            log_dir.mkdir(parents=True, exist_ok=True)
            format_log_dir(log_dir, work)
        self.port, self.ctl = _free_port(), _free_port()
        self.properties = dict(properties or {})
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def server_log(self) -> Path:
        return self.work / f"logs-{self.starts}" / "server.log"

    def log(self) -> str:
        return self.server_log.read_text(errors="replace") if self.server_log.exists() else ""

    def errors(self) -> list[str]:
        """This start's ERROR lines and any line naming corruption."""
        return [line for line in self.log().splitlines() if " ERROR " in line or "Corrupt" in line]

    def start(self, timeout: float = 180) -> None:
        self.starts += 1
        config = self.work / "server.properties"
        config.write_text(
            kraft_properties(1, self.port, self.ctl, str(self.log_dir), self.properties)
        )
        env = {
            **os.environ,
            "LOG_DIR": str(self.server_log.parent),
            "KAFKA_HEAP_OPTS": "-Xmx512m",
        }
        with open(self.work / "stdout", "ab") as out:
            self.proc = subprocess.Popen(
                [str(Path(KAFKA_HOME or "", "bin", "kafka-server-start.sh")), str(config)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while STARTED not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                text = self.log()[-3000:] or (self.work / "stdout").read_text(errors="replace")
                self.stop()
                raise AssertionError(f"the broker did not start: {text[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def client(self, script: str, request: dict, timeout: float = 300) -> dict:
        """Run the kafka-python `script` with the bootstrap server and `request` (JSON) as its
        arguments; its stdout is one JSON document."""
        done = subprocess.run(
            [KAFKA_PY or "", "-c", script, self.bootstrap, json.dumps(request)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    def spawn(self, script: str, request: dict, out: Path) -> subprocess.Popen:
        """Start the kafka-python `script` in the background (it outlives stops and starts of
        the broker: same port); its stdout goes to `out`."""
        with open(out, "wb") as f:
            return subprocess.Popen(
                [KAFKA_PY or "", "-c", script, self.bootstrap, json.dumps(request)],
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
