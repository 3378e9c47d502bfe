"""A real Kafka broker for acceptance tests: started on a log dir on free ports of 127.0.0.1,
driven by a kafka-python script, stopped by its own PID. Needs KAFKA_HOME (a Kafka 3.x
distribution, e.g. built by ../shared/tools/kafka-broker) and KAFKA_PY (a Python with
kafka-python); tests using it are skipped without them (`needs_broker`)."""
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

KAFKA_HOME = os.environ.get("KAFKA_HOME")
KAFKA_PY = os.environ.get("KAFKA_PY")

needs_broker = pytest.mark.skipif(
    not (KAFKA_HOME and Path(KAFKA_HOME, "bin", "kafka-server-start.sh").exists() and KAFKA_PY),
    reason="needs KAFKA_HOME (a Kafka 3.x distribution) and KAFKA_PY (a Python with kafka-python)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_run(log_dir: Path, work: Path, script: str, *args: str, properties: dict | None = None,
               kafka_home: str | None = None) -> dict:
    """Start a one-node KRaft broker on `log_dir`, run the kafka-python `script` with the
    bootstrap server and `args` as arguments, stop the broker (SIGTERM: a clean shutdown).
    `properties`: more broker properties. Returns the script's JSON output, the broker's ERROR lines
    and its server.log. `kafka_home`: another Kafka distribution than KAFKA_HOME's."""
    home = kafka_home or KAFKA_HOME
    props = dict(line.split("=", 1) for line in (log_dir / "meta.properties").read_text().splitlines()
                 if "=" in line and not line.startswith("#"))
    node, port, ctl = props.get("node.id", "1"), _free_port(), _free_port()
    config = work / "server.properties"
    config.write_text(f"""process.roles=broker,controller
node.id={node}
controller.quorum.voters={node}@127.0.0.1:{ctl}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctl}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={log_dir}
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=-1
log.cleaner.enable=false
""" + "".join(f"{k}={v}\n" for k, v in (properties or {}).items()))
    logs = work / "logs"
    env = {**os.environ, "LOG_DIR": str(logs), "KAFKA_HEAP_OPTS": "-Xmx512m"}
    with open(work / "stdout", "wb") as out:
        broker = subprocess.Popen([str(Path(home, "bin", "kafka-server-start.sh")), str(config)], env=env,
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        server_log = logs / "server.log"
        deadline = time.monotonic() + 120
        while "Kafka Server started" not in (server_log.read_text(errors="replace") if server_log.exists() else ""):
            assert broker.poll() is None, (work / "stdout").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the broker did not start in 120 s"
            time.sleep(0.5)
        done = subprocess.run([KAFKA_PY, "-c", script, f"127.0.0.1:{port}", *args],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        text = server_log.read_text(errors="replace")
        return {"output": json.loads(done.stdout),
                "errors": [line for line in text.splitlines() if " ERROR " in line or "Corrupt" in line],
                "log": text}
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
    cfg.write_text(f"process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{ctl}\n"
                   f"controller.listener.names=CONTROLLER\n"
                   f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctl}\n"
                   f"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
                   f"log.dirs={log_dir}\n")
    env = {**os.environ, "LOG_DIR": str(work / "format-logs")}
    subprocess.run([f"{kafka_home or KAFKA_HOME}/bin/kafka-storage.sh", "format", "-t", "a2Fma2Fsb2ctY2tvcmRlcg",
                    "-c", str(cfg)], check=True, capture_output=True, env=env)
