"""Acceptance: `doctor`'s verdicts on issue 31's false all-clears, judged by a real broker's
start-up on the same log dir: a `node.id` Kafka refuses, two log dirs whose cluster.id differs
(and doctor's fix), a log dir of a uid with no passwd entry holding one root-owned segment (the
broker run as that bare uid), and bit rot in a closed segment (the broker starts; a consumer
checking CRCs is refused at the rotted batch).

Runs when KAFKA_HOME points at a Kafka distribution and KAFKA_PY at a Python with kafka-python
(tools/kafka-broker builds both); skipped otherwise. The broker listens on free ports of
127.0.0.1 and is stopped by its own PID."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ..broker_start import broker_verdict, needs_broker
from ..kafka_broker import broker_run
from ..ops.test_doctor_all_clear import MOVED, findings, owned_by, rot, split, unused_uid
from .test_doctor_cli import copy, doctor, props, write_props

pytestmark = needs_broker


@pytest.fixture
def base():
    """A directory every uid may traverse (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="kafkalog-doctor-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("value, broker_says", [
    ("2147483648", 'Failed to parse node.id property as an int: For input string: "2147483648"'),
    ("99999999999999999999", 'Failed to parse node.id property as an int: For input string: "99999999999999999999"'),
    ("1 ", 'Failed to parse node.id property as an int: For input string: "1 "'),   # Properties keeps the blank
    ("-1", "InconsistentNodeIdException: Configured node.id `1` doesn't match stored node.id `-1'"),
])
def test_a_node_id_doctor_refuses_the_broker_refuses_too(tmp_path, value, broker_says):
    d = copy(tmp_path)
    write_props(d, {**props(d), "node.id": value})
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    assert [f for f in findings(r, "meta.properties") if f["severity"] == "error" and "node.id" in f["problem"]]
    # server.properties says node.id=1 (an int): only meta.properties' value is wrong
    v = broker_verdict([d], tmp_path / "work", node_id=1)
    assert not v.started, v.log[-3000:]
    assert v.lines(broker_says) and v.lines("Exiting Kafka due to fatal exception"), v.log[-3000:]


def test_a_cluster_id_mismatch_doctors_fix_starts_the_broker_with_every_partition(tmp_path):
    """Two log dirs whose cluster.id differs, the data dir's partitions in this cluster's metadata
    log: the broker refuses both; after the one edit doctor names it loads all five from there."""
    a, b = split(tmp_path, ["b"])
    right = props(a)["cluster.id"]
    write_props(b, {**props(b), "cluster.id": "AAAAAAAAAAAAAAAAAAAAAA"})
    r = doctor(a, b, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = [f for f in findings(r, "meta.properties") if "not the same" in f["problem"]]
    assert f"set cluster.id={right} in {b / 'meta.properties'}" in f["fix"], f["fix"]
    v = broker_verdict([a, b], tmp_path / "refused")
    assert not v.started and v.lines("BrokerMetadata is not consistent across log.dirs"), v.log[-3000:]
    write_props(b, {**props(b), "cluster.id": right})       # the fix, as doctor words it
    assert doctor(a, b).exit_code == 0
    v = broker_verdict([a, b], tmp_path / "fixed")
    assert v.started, v.log[-3000:]
    loaded = {line.split("Completed load of Log(dir=")[1].split(",")[0]
              for line in v.lines("Completed load of Log(dir=") if f"completed in {b})" in line}
    assert loaded == {str(b / p) for p in MOVED}, loaded


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run as a bare uid")
@pytest.mark.parametrize("root_segment", [True, False], ids=["a root segment", "all the uid's"])
def test_a_bare_uids_log_dir_doctor_and_the_broker_run_as_that_uid_agree(base, root_segment):
    """The container case: the log dir is uid 4242's (no passwd entry), one segment root's 0644;
    the broker run as that uid cannot open it read-write, so it loses its only log dir. Without
    the root segment the same broker, as the same uid, starts: the uid alone is no obstacle."""
    uid = unused_uid()
    d = base / "logdir"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "logdir", d)
    owned_by(d, uid)
    bad = d / "multi-segment-0" / "00000000000000000000.log"
    if root_segment:
        os.chown(bad, 0, 0)
        bad.chmod(0o644)
    for args in (["--user", str(uid)], []):          # given, and inferred from the log dir's owner
        r = doctor(d, *args, "--format", "json")
        assert r.exit_code == (8 if root_segment else 0), (args, r.output)
        if root_segment:
            (f,) = findings(r, "access")
            assert str(bad) in f["path"] and f"uid {uid}" in f["problem"]
    v = broker_verdict([d], base / "work", uid=uid)
    assert v.started == (not root_segment), v.log[-3000:]
    denied = [line for line in v.lines("AccessDeniedException") if str(bad) in line]
    assert bool(denied) == root_segment, v.log[-3000:]
    if root_segment:
        assert v.lines(f"Error while loading log dir {d}"), v.log[-3000:]
        assert v.lines(f"Shutdown broker because all log dirs in {d} have failed"), v.log[-3000:]


# A consumer of multi-segment-0 from offset 0 with CRC checks on (the default): the offsets it got
# and the error poll() raised, if any.
CONSUME_CHECKED = r"""
import json, sys, time
from kafka import KafkaConsumer, TopicPartition
tp = TopicPartition("multi-segment", 0)
c = KafkaConsumer(bootstrap_servers=sys.argv[1], enable_auto_commit=False, check_crcs=True,
                  auto_offset_reset="earliest")
c.assign([tp])
c.seek(tp, 0)
got, error, deadline = [], None, time.monotonic() + 60
while time.monotonic() < deadline and error is None and (not got or got[-1] < 599):
    try:
        for records in c.poll(timeout_ms=1000).values():
            got += [m.offset for m in records]
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
c.close()
print(json.dumps({"offsets": got, "error": error}))
"""


def test_bit_rot_the_broker_serves_until_a_consumer_checks_the_crc(tmp_path):
    d = copy(tmp_path)
    seg = rot(d)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 1, r.output
    (f,) = findings(r, "crc")
    assert f["severity"] == "warning" and str(seg) in f["path"] and "offsets 100..124" in f["problem"]
    work = tmp_path / "work"
    work.mkdir()
    served = broker_run(d, work, CONSUME_CHECKED)         # asserts "Kafka Server started"
    out = served["output"]
    assert out["offsets"] == list(range(100)), out
    assert out["error"] and "CorruptRecord" in out["error"] and "offset 100" in out["error"], out
    assert not [line for line in served["log"].splitlines() if "Shutdown broker" in line or "Halting" in line]
