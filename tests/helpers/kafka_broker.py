"""A real Kafka broker for acceptance tests: started on a log dir on free ports of 127.0.0.1,
driven by a kafka-python script, stopped by its own PID. Needs KAFKA_HOME (a Kafka 3.x
distribution, e.g. 3.3.1 or 3.9.0-rc3 built by tools/kafka-broker) and KAFKA_PY (a Python with
kafka-python); tests using it are skipped without them (`needs_broker`). Which Kafka it is
(tests/helpers/kafka_dist.py) is in pytest's header and in every `broker_run` result ("kafka")."""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .kafka_dist import kafka_dist

KAFKA_HOME = os.environ.get("KAFKA_HOME")
KAFKA_PY = os.environ.get("KAFKA_PY")
DIST = kafka_dist(KAFKA_HOME) if KAFKA_HOME else None

needs_broker = pytest.mark.skipif(
    not (
        KAFKA_HOME
        and Path(KAFKA_HOME, "bin", "kafka-server-start.sh").exists()
        and DIST
        and KAFKA_PY
    ),
    reason="needs KAFKA_HOME (a Kafka 3.x distribution) and KAFKA_PY (a Python with kafka-python)",
)


def _label(home: str | None) -> str:
    d = kafka_dist(home) if home else None
    return d.label if d else str(home)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kraft_properties(
    node, port: int, ctl: int, log_dirs: str, properties: dict | None = None
) -> str:
    """server.properties of a one-node KRaft broker on 127.0.0.1 (broker and controller)."""
    return f"""process.roles=broker,controller
node.id={node}
controller.quorum.voters={node}@127.0.0.1:{ctl}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctl}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={log_dirs}
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=-1
log.cleaner.enable=false
""" + "".join(f"{k}={v}\n" for k, v in (properties or {}).items())


def broker_run(
    log_dir: Path,
    work: Path,
    script: str,
    *args: str,
    properties: dict | None = None,
    kafka_home: str | None = None,
) -> dict:
    """Start a one-node KRaft broker on `log_dir`, run the kafka-python `script` with the
    bootstrap server and `args` as arguments, stop the broker (SIGTERM: a clean shutdown).
    `properties`: more broker properties. `kafka_home`: another Kafka distribution than KAFKA_HOME's.
    Returns the script's JSON output, the broker's ERROR lines, its server.log and which Kafka it was
    ("kafka": e.g. "Kafka 3.9.0-rc3 (3.9.0, commit ...) at ...", tests/helpers/kafka_dist.py)."""
    home = kafka_home or KAFKA_HOME
    props = dict(
        line.split("=", 1)
        for line in (log_dir / "meta.properties").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    node, port, ctl = props.get("node.id", "1"), _free_port(), _free_port()
    config = work / "server.properties"
    config.write_text(kraft_properties(node, port, ctl, str(log_dir), properties))
    logs = work / "logs"
    env = {**os.environ, "LOG_DIR": str(logs), "KAFKA_HEAP_OPTS": "-Xmx512m"}
    with open(work / "stdout", "wb") as out:
        broker = subprocess.Popen(
            [str(Path(home, "bin", "kafka-server-start.sh")), str(config)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        server_log = logs / "server.log"
        deadline = time.monotonic() + 120
        while "Kafka Server started" not in (
            server_log.read_text(errors="replace") if server_log.exists() else ""
        ):
            assert broker.poll() is None, (work / "stdout").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the broker did not start in 120 s"
            time.sleep(0.5)
        done = subprocess.run(
            [KAFKA_PY, "-c", script, f"127.0.0.1:{port}", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        text = server_log.read_text(errors="replace")
        return {
            "output": json.loads(done.stdout),
            "errors": [
                line for line in text.splitlines() if " ERROR " in line or "Corrupt" in line
            ],
            "log": text,
            "kafka": _label(home),
        }
    finally:
        os.killpg(broker.pid, signal.SIGTERM)
        try:
            broker.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(broker.pid, signal.SIGKILL)
            broker.wait()


def format_log_dir(log_dir: Path, work: Path, kafka_home: str | None = None) -> None:
    """kafka-storage.sh format: a new one-node KRaft cluster (node 1) on `log_dir`."""
    ctl, port = _free_port(), _free_port()
    cfg = work / "format.properties"
    cfg.write_text(
        f"process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{ctl}\n"
        f"controller.listener.names=CONTROLLER\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctl}\n"
        f"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
        f"log.dirs={log_dir}\n"
    )
    env = {**os.environ, "LOG_DIR": str(work / "format-logs")}
    # the same flags on 3.3 and 3.9 with a static controller.quorum.voters (tests/helpers/kafka_dist.py)
    subprocess.run(
        kafka_dist(kafka_home or KAFKA_HOME).format_args("a2Fma2Fsb2ctY2tvcmRlcg", cfg),
        check=True,
        capture_output=True,
        env=env,
    )
