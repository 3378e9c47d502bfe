"""Does a real Kafka broker start on these log dirs? Started as kafka_broker.broker_run starts it
(one KRaft node on free ports of 127.0.0.1, optionally as another user), watched until it says
"Kafka Server started" or gives up, then stopped by its own PID. Skipped without KAFKA_HOME."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .kafka_broker import KAFKA_HOME, _free_port, kraft_properties, needs_broker  # noqa: F401  (needs_broker: for the tests)

STARTED = "Kafka Server started"
# what 3.3.1 logs when it gives up on start-up (or takes down its last log dir right after)
GAVE_UP = (
    "Exiting Kafka",
    "shutting down",
    "Shutdown broker because all log dirs",
    "Halting",
    "Fatal error during",
    "FATAL",
)


@dataclass
class Verdict:
    started: bool
    log: str  # server.log and the console, for the assertion messages

    def lines(self, word: str) -> list[str]:
        return [line for line in self.log.splitlines() if word in line]


def broker_verdict(
    log_dirs: list[Path],
    work: Path,
    user: str | None = None,
    node_id: int | None = None,
    timeout: float = 120,
    settle: float = 8,
    extra: dict | None = None,
    uid: int | None = None,
) -> Verdict:
    """Start a broker on `log_dirs` (as `user` when given, or as the bare `uid`, which needs no
    passwd entry: the container case), and say whether it started and stayed up `settle` seconds
    (a log dir that fails on its first checkpoint write takes it down then)."""
    work.mkdir(parents=True, exist_ok=True)
    if node_id is None:
        node_id = 1
        for d in log_dirs:
            meta = Path(d) / "meta.properties"
            if meta.exists():
                for line in meta.read_text(errors="replace").splitlines():
                    if (
                        line.startswith(("node.id=", "broker.id="))
                        and line.split("=", 1)[1].strip().isdigit()
                    ):
                        node_id = int(line.split("=", 1)[1])
    port, ctl = _free_port(), _free_port()
    config = work / "server.properties"
    config.write_text(
        kraft_properties(node_id, port, ctl, ",".join(str(d) for d in log_dirs), extra)
    )
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    console = work / "stdout"
    cmd = [str(Path(KAFKA_HOME, "bin", "kafka-server-start.sh")), str(config)]
    if user is not None:
        subprocess.run(["chown", "-R", user, str(work)], check=True)
        cmd = [
            "runuser",
            "-u",
            user,
            "--",
            "env",
            f"LOG_DIR={logs}",
            "KAFKA_HEAP_OPTS=-Xmx512m",
            *cmd,
        ]
    elif uid is not None:
        subprocess.run(["chown", "-R", f"{uid}:{uid}", str(work)], check=True)
        cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
    env = {**os.environ, "LOG_DIR": str(logs), "KAFKA_HEAP_OPTS": "-Xmx512m"}
    with open(console, "wb") as out:
        broker = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def text() -> str:
        server = logs / "server.log"
        return (
            (server.read_text(errors="replace") if server.exists() else "")
            + "\n"
            + console.read_text(errors="replace")
        )

    try:
        deadline = time.monotonic() + timeout
        started_at = None
        while time.monotonic() < deadline:
            t = text()
            if broker.poll() is not None or any(w in t for w in GAVE_UP):
                return Verdict(False, t)
            if STARTED in t and started_at is None:
                started_at = time.monotonic()
            if started_at is not None and time.monotonic() - started_at >= settle:
                return Verdict(True, t)
            time.sleep(0.5)
        return Verdict(False, text() + "\n(no verdict in time)")
    finally:
        try:
            os.killpg(broker.pid, signal.SIGTERM)
            broker.wait(60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(broker.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            broker.wait()
