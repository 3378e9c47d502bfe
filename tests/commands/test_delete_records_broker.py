"""Acceptance: a real Kafka 3.3.1 broker started on what `delete-records` left reports the log
start offset it set (ListOffsets earliest) and serves from it, the records dump-log shows; also
after a run killed midway. And the broker's own DeleteRecords leaves the same files (there is no
delete-records case in the shared corpus, so the broker makes one here).

Runs when KAFKA_HOME points at a Kafka distribution and KAFKA_PY at a Python with kafka-python
(tools/kafka-broker builds both); skipped otherwise. The broker listens on free ports of
127.0.0.1 and is stopped by its own PID."""

import json
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.kafka_broker import broker_run, needs_broker
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_lines import partitions

pytestmark = needs_broker

# what the consumer reports per partition: the earliest offset (ListOffsets), then every record
CONSUME = r"""
import json, sys
from kafka import KafkaConsumer, TopicPartition
server, parts = sys.argv[1], sys.argv[2:]
out = {}
for name in parts:
    topic, p = name.rsplit("-", 1)
    tp = TopicPartition(topic, int(p))
    c = KafkaConsumer(bootstrap_servers=server, enable_auto_commit=False, consumer_timeout_ms=5000,
                      auto_offset_reset="earliest", isolation_level="read_uncommitted")
    c.assign([tp])
    earliest = c.beginning_offsets([tp])[tp]
    c.seek_to_beginning(tp)
    records = [[m.offset, m.key.hex() if m.key is not None else None, m.value.hex() if m.value is not None else None]
               for m in c]
    out[name] = {"earliest": earliest, "records": records}
    c.close()
print(json.dumps(out))
"""


def dumped_records(runner, partition_dir: Path, from_offset: int) -> list:
    """What dump-log shows of a partition, from `from_offset` on, as the consumer reports it."""
    res = runner.invoke(
        cli,
        [
            "dump-log",
            str(partition_dir),
            "--format",
            "json",
            "--deep-iteration",
            "--print-data-log",
            "--payload-encoding",
            "hex",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.output.splitlines()]
    return [
        [r["offset"], r["key"], r["value"]]
        for r in lines
        if r["kind"] == "record" and not r["is_control"] and r["offset"] >= from_offset
    ]


def test_broker_serves_from_the_log_start_offset_set(tmp_path, runner):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    spec = tmp_path / "offsets.json"
    # inside the second segment (the first goes), inside the only segment of an idempotent
    # producer's log, and -1 (the high watermark: everything)
    spec.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "multi-segment", "partition": 0, "offset": 350},
                    {"topic": "idempotent-lz4", "partition": 0, "offset": 12},
                    {"topic": "codec-zstd", "partition": 0, "offset": -1},
                    {"topic": "txn", "partition": 0, "offset": 8},
                ],
            }
        )
    )  # inside a compressed transactional batch
    res = runner.invoke(
        cli,
        [
            "delete-records",
            str(d),
            "--offset-json",
            str(spec),
            "--format",
            "json",
            "--quarantine",
            str(tmp_path / "q"),
        ],
    )
    assert res.exit_code == 0, res.output
    starts = {name: s["new_log_start_offset"] for name, s in partitions(res.stdout).items()}
    assert starts == {
        "multi-segment-0": 350,
        "idempotent-lz4-0": 12,
        "codec-zstd-0": 60,
        "txn-0": 8,
    }
    assert not (d / "multi-segment-0" / "00000000000000000000.log").exists()
    want = {name: dumped_records(runner, d / name, start) for name, start in starts.items()}

    served = broker_run(d, tmp_path, CONSUME, *sorted(starts))

    assert served["errors"] == []
    for name, start in starts.items():
        got = served["output"][name]
        assert got["earliest"] == start, name
        assert got["records"] == want[name], name
        if want[name]:
            assert got["records"][0][0] == start, name
    assert want["codec-zstd-0"] == [] and want["multi-segment-0"][0][0] == 350


def test_broker_after_a_kill_midway_starts_at_the_log_start_offset_set(tmp_path, runner):
    """Killed once the first segment's .log is gone and before its indexes go: the broker loads
    the dir (deleting the orphans itself) and starts at the raised log start offset."""
    from kafkalog_cli.ops import delete_records
    from kafkalog_cli.ops.plan import apply
    from kafkalog_cli.storage.fsops import FsOps, InjectedFault
    from kafkalog_cli.storage.quarantine_writer import Quarantine

    def killed(d: Path, n: int) -> None:
        p = delete_records.plan(
            d, [d / "multi-segment-0"], delete_records.DeleteRecordsOptions(before=350)
        )
        with pytest.raises(InjectedFault):
            apply(p, FsOps(d, Quarantine(None, "delete-records"), fault_after=n))

    seg0 = Path("multi-segment-0") / "00000000000000000000"
    for n in range(1, 20):
        probe = tmp_path / f"probe{n}"
        shutil.copytree(EXAMPLES, probe)
        killed(probe, n)
        if not (probe / f"{seg0}.log").exists():
            break
    assert (probe / f"{seg0}.index").exists()
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    killed(d, n)
    served = broker_run(d, tmp_path, CONSUME, "multi-segment-0")
    assert served["errors"] == []
    got = served["output"]["multi-segment-0"]
    assert got["earliest"] == 350
    assert got["records"] == dumped_records(runner, d / "multi-segment-0", 350)


# the broker's own DeleteRecords (AdminClient), then its retention check deletes the segments
ADMIN_DELETE = r"""
import glob, json, os, sys, time
from kafka import KafkaAdminClient, TopicPartition
server, requests, gone = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
admin = KafkaAdminClient(bootstrap_servers=server)
admin.delete_records({TopicPartition(t, p): o for t, p, o in requests})
admin.close()
# the retention task first runs 30 s after start-up (LogManager.InitialTaskDelayMs), then every
# log.retention.check.interval.ms; file.delete.delay.ms=0 deletes the .deleted files at once
deadline = time.time() + 240
while (os.path.exists(gone) or glob.glob(os.path.join(os.path.dirname(gone), "*.deleted"))) and time.time() < deadline:
    time.sleep(0.5)
time.sleep(1)
deleted = not os.path.exists(gone)
left = glob.glob(os.path.join(os.path.dirname(gone), "*.deleted"))
print(json.dumps({"deleted": deleted, "left": left}))
"""


def test_same_files_as_the_brokers_own_delete_records(tmp_path, runner):
    """A broker deletes records through its AdminClient API on one copy, kafkalog on another:
    the same segments go and stay (byte for byte), the same log-start-offset-checkpoint entries
    and leader epochs from the start, no producer snapshot below the first segment. What the
    broker's restart and clean shutdown add (a snapshot at the log end offset, its new leader
    epoch, recovery points) is not delete-records' doing and is left out."""
    requests = [["multi-segment", 0, 350], ["idempotent-lz4", 0, 12], ["txn", 0, 8]]
    broker_dir, ours = tmp_path / "broker" / "logdir", tmp_path / "ours" / "logdir"
    shutil.copytree(EXAMPLES, broker_dir)
    shutil.copytree(EXAMPLES, ours)
    served = broker_run(
        broker_dir,
        tmp_path / "broker",
        ADMIN_DELETE,
        json.dumps(requests),
        str(broker_dir / "multi-segment-0" / "00000000000000000000.log"),
        properties={"log.retention.check.interval.ms": 1000, "file.delete.delay.ms": 0},
    )
    assert served["errors"] == [] and served["output"] == {"deleted": True, "left": []}
    spec = tmp_path / "offsets.json"
    spec.write_text(
        json.dumps(
            {"partitions": [{"topic": t, "partition": p, "offset": o} for t, p, o in requests]}
        )
    )
    res = runner.invoke(
        cli, ["delete-records", str(ours), "--offset-json", str(spec), "--no-quarantine"]
    )
    assert res.exit_code == 0, res.output

    def entries(d: Path) -> dict:
        lines = (d / "log-start-offset-checkpoint").read_text().splitlines()[2:]
        return {f"{t}-{p}": int(o) for t, p, o in (x.split() for x in lines)}

    names = [f"{t}-{p}" for t, p, _ in requests]
    assert (
        {n: entries(broker_dir).get(n) for n in names}
        == {n: entries(ours).get(n) for n in names}
        == {"multi-segment-0": 350, "idempotent-lz4-0": 12, "txn-0": 8}
    )
    for name in names:
        logs = {f.name: f.read_bytes() for f in (broker_dir / name).glob("*.log")}
        assert logs == {f.name: f.read_bytes() for f in (ours / name).glob("*.log")}, name
        first = min(int(n[:20]) for n in logs)
        for d in (broker_dir, ours):
            assert not [f for f in (d / name).glob("*.snapshot") if int(f.stem) < first], (d, name)
        # LeaderEpochFileCache.truncateFromStart: the first entry starts at the log start offset
        epochs = [
            (d / name / "leader-epoch-checkpoint").read_text().splitlines()[2]
            for d in (broker_dir, ours)
        ]
        assert epochs[0] == epochs[1], name
    assert not (broker_dir / "multi-segment-0" / "00000000000000000000.log").exists()
