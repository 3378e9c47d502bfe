"""Acceptance: `doctor`'s verdicts on false all-clears, judged by a real broker's
start-up on the same log dir: a `node.id` Kafka refuses, two log dirs whose cluster.id differs
(and doctor's fix), a log dir of a uid with no passwd entry holding one root-owned segment (the
broker run as that bare uid), and bit rot in a closed segment (the broker starts; a consumer
checking CRCs is refused at the rotted batch).

Runs when KAFKA_HOME points at a Kafka distribution and KAFKA_PY at a Python with kafka-python
(tools/kafka-broker builds both); skipped otherwise. The broker listens on free ports of
127.0.0.1 and is stopped by its own PID."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import time
from pathlib import Path

import pytest

from tests.helpers import paths
from tests.helpers.broker_start import broker_verdict, needs_broker
from tests.helpers.doctor import (
    MOVED,
    copy,
    doctor,
    findings,
    owned_by,
    props,
    rot,
    split,
    unused_uid,
    write_props,
)
from tests.helpers.kafka_broker import DIST, broker_run
from tests.helpers.kraft_cluster import Cluster, needs_cluster

pytestmark = needs_broker

# 3.7+ checks meta.properties with MetaPropertiesEnsemble, in its own words (kafka_dist)
ENSEMBLE = bool(DIST and DIST.meta_properties_ensemble)
NOT_AN_INT = "Unable to read node.id as a base-10 number."


@pytest.mark.parametrize(
    "value, broker_says",
    [
        (
            "2147483648",
            NOT_AN_INT
            if ENSEMBLE
            else 'Failed to parse node.id property as an int: For input string: "2147483648"',
        ),
        (
            "99999999999999999999",
            NOT_AN_INT
            if ENSEMBLE
            else 'Failed to parse node.id property as an int: For input string: "99999999999999999999"',
        ),
        (
            "1 ",
            NOT_AN_INT
            if ENSEMBLE
            else 'Failed to parse node.id property as an int: For input string: "1 "',
        ),  # Properties keeps the blank
        (
            "-1",
            "Stored node id -1 doesn't match previous node id 1 in"
            if ENSEMBLE
            else "InconsistentNodeIdException: Configured node.id `1` doesn't match stored node.id `-1'",
        ),
    ],
)
def test_a_node_id_doctor_refuses_the_broker_refuses_too(tmp_path, value, broker_says):
    d = copy(tmp_path)
    write_props(d, {**props(d), "node.id": value})
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    assert [
        f
        for f in findings(r, "meta.properties")
        if f["severity"] == "error" and "node.id" in f["problem"]
    ]
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
    says = (
        # the dirs in path order (a TreeMap): a's id is the one expected
        f"Invalid cluster.id in: {b / 'meta.properties'}. Expected {right}, but read AAAAAAAAAAAAAAAAAAAAAA"
        if ENSEMBLE
        else "BrokerMetadata is not consistent across log.dirs"
    )
    assert not v.started and v.lines(says), v.log[-3000:]
    write_props(b, {**props(b), "cluster.id": right})  # the fix, as doctor words it
    assert doctor(a, b).exit_code == 0
    v = broker_verdict([a, b], tmp_path / "fixed")
    assert v.started, v.log[-3000:]
    loaded = {
        line.split("Completed load of Log(dir=")[1].split(",")[0]
        for line in v.lines("Completed load of Log(dir=")
        if f"completed in {b})" in line
    }
    assert loaded == {str(b / p) for p in MOVED}, loaded


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root and setpriv to run as a bare uid",
)
@pytest.mark.parametrize("root_segment", [True, False], ids=["a root segment", "all the uid's"])
def test_a_bare_uids_log_dir_doctor_and_the_broker_run_as_that_uid_agree(base, root_segment):
    """The container case: the log dir is uid 4242's (no passwd entry), one segment root's 0644;
    the broker run as that uid cannot open it read-write, so it loses its only log dir. Without
    the root segment the same broker, as the same uid, starts: the uid alone is no obstacle."""
    uid = unused_uid()
    d = base / "logdir"
    shutil.copytree(paths.EXAMPLES, d)
    owned_by(d, uid)
    bad = d / "multi-segment-0" / "00000000000000000000.log"
    if root_segment:
        os.chown(bad, 0, 0)
        bad.chmod(0o644)
    for args in (["--user", str(uid)], []):  # given, and inferred from the log dir's owner
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


# Consumers of multi-segment-0 from offset 0 with CRC checks on (the default): kafka-python's
# offsets and poll()'s error, and what Kafka's console consumer printed and said.
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
# and Kafka's own Java consumer, the one whose words doctor quotes
import os, subprocess
java = subprocess.run([os.path.join(os.environ["KAFKA_HOME"], "bin", "kafka-console-consumer.sh"),
                       "--bootstrap-server", sys.argv[1], "--topic", "multi-segment", "--partition", "0",
                       "--offset", "0", "--max-messages", "600", "--timeout-ms", "20000"],
                      capture_output=True, text=True, timeout=120, env={**os.environ, "KAFKA_HEAP_OPTS": "-Xmx128m"})
print(json.dumps({"offsets": got, "error": error, "java_records": len(java.stdout.splitlines()),
                  "java_error": [x for x in java.stderr.splitlines() if "is invalid" in x]}))
"""


def test_bit_rot_the_broker_serves_until_a_consumer_checks_the_crc(tmp_path):
    d = copy(tmp_path)
    seg = rot(d)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 1, r.output
    (f,) = findings(r, "crc")
    assert (
        f["severity"] == "warning" and str(seg) in f["path"] and "offsets 100..124" in f["problem"]
    )
    work = tmp_path / "work"
    work.mkdir()
    served = broker_run(d, work, CONSUME_CHECKED)  # asserts "Kafka Server started"
    out = served["output"]
    assert out["offsets"] == list(range(100)), out
    assert out["error"] and "CorruptRecord" in out["error"] and "offset 100" in out["error"], out
    assert out["java_records"] == 100 and out["java_error"], out
    assert (
        "Record batch for partition multi-segment-0 at offset 100 is invalid, cause: Record is corrupt"
        in out["java_error"][0]
    ), out
    assert not [
        line
        for line in served["log"].splitlines()
        if "Shutdown broker" in line or "Halting" in line
    ]


def rot_batch(segment: Path, index: int) -> int:
    """Flip the last byte of the value of the `index`-th batch's (one-record) last record; returns
    that batch's base offset."""
    buf = bytearray(segment.read_bytes())
    pos = 0
    for _ in range(index):
        pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    end = pos + 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    buf[end - 2] ^= 0x01  # the byte before the record's header count (0)
    segment.write_bytes(bytes(buf))
    return struct.unpack_from(">q", buf, pos)[0]


@needs_cluster
def test_bit_rot_on_the_leader_stops_a_follower_fetching_through_it(tmp_path):
    """The leader's closed segment has a rotted batch the follower has not fetched yet: every
    fetch fails whole (UnifiedLog.analyzeAndValidateRecords checks every batch before appending
    any); the follower logs "Found invalid messages during fetch" with its own fetch offset
    (AbstractFetcherThread: currentFetchState.fetchOffset), appends nothing, stays out of the ISR."""
    c = Cluster(tmp_path / "cluster", brokers=2, broker_config={"replica.lag.time.max.ms": "5000"})
    b1, b2 = c.brokers[1], c.brokers[2]
    try:
        c.start(c.controller)
        c.start(b1)
        c.start(b2)
        c.client(
            1,
            {
                "op": "create",
                "topics": [
                    {"name": "t", "assignment": {"0": [1, 2]}, "configs": {"segment.bytes": "1024"}}
                ],
            },
        )
        c.wait_for(1, "t", 0, lambda s: s["leader"] == 1 and s["isr"] == [1, 2])
        c.stop(b2)
        c.wait_for(1, "t", 0, lambda s: s["isr"] == [1])
        c.client(
            1,
            {
                "op": "produce",
                "topic": "t",
                "partition": 0,
                "acks": 1,
                "keys": [f"k{i}" for i in range(40)],
            },
        )
        c.stop(b1)
        part = b1.log_dirs[0] / "t-0"
        segments = sorted(part.glob("*.log"))
        assert len(segments) >= 3, segments
        rotted = rot_batch(segments[0], 4)
        r = doctor(b1.log_dirs[0], "--format", "json")
        assert r.exit_code == 1, r.output
        (f,) = findings(r, "crc")
        assert (
            f"offsets {rotted}..{rotted}" in f["problem"]
            and "Found invalid messages during fetch" in f["broker"]
        )
        c.start(b1)
        c.wait_for(1, "t", 0, lambda s: s["leader"] == 1)
        c.start(b2)
        deadline = time.monotonic() + 90
        while "Found invalid messages during fetch for partition t-0" not in b2.log():
            assert time.monotonic() < deadline, b2.log()[-3000:]
            time.sleep(0.5)
        said = sorted(
            {
                int(m)
                for m in re.findall(
                    r"Found invalid messages during fetch for partition t-0 offset (\d+)", b2.log()
                )
            }
        )
        cause = [line for line in b2.log().splitlines() if "CorruptRecordException" in line]
        time.sleep(6)  # longer than replica.lag.time.max.ms
        assert c.wait_for(1, "t", 0, lambda s: True)["isr"] == [1]
        # the follower logs its own fetch offset (it had nothing: 0), not the rotted batch's
        assert said == [0], said
        assert cause and "Record is corrupt" in cause[0], cause
        print(
            json.dumps(
                {
                    "rotted batch": rotted,
                    "follower said offsets": said,
                    "cause": cause[0][:300],
                    "doctor says": f["broker"],
                }
            )
        )
    finally:
        c.stop_all()
    # it appended nothing: a fetch is validated whole, so the batches before the rotted one stay out too
    assert sum(s.stat().st_size for s in (b2.log_dirs[0] / "t-0").glob("*.log")) == 0
