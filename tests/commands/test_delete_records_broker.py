"""Acceptance: a real Kafka 3.3.1 broker started on what `delete-records` left reports the log
start offset it set (ListOffsets earliest) and serves from it, the records dump-log shows.

Runs when KAFKA_HOME points at a Kafka distribution and KAFKA_PY at a Python with kafka-python
(../shared/tools/kafka-broker builds both); skipped otherwise. The broker listens on free ports of
127.0.0.1 and is stopped by its own PID."""
import json
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.cli import cli

from ..kafka_broker import broker_run, needs_broker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "logdir"
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
    res = runner.invoke(cli, ["dump-log", str(partition_dir), "--format", "json", "--deep-iteration",
                              "--print-data-log", "--payload-encoding", "hex"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.output.splitlines()]
    return [[r["offset"], r["key"], r["value"]] for r in lines
            if r["kind"] == "record" and not r["is_control"] and r["offset"] >= from_offset]


def test_broker_serves_from_the_log_start_offset_set(tmp_path, runner):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    spec = tmp_path / "offsets.json"
    # inside the second segment (the first goes), inside the only segment of an idempotent
    # producer's log, and -1 (the high watermark: everything)
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "multi-segment", "partition": 0, "offset": 350},
        {"topic": "idempotent-lz4", "partition": 0, "offset": 12},
        {"topic": "codec-zstd", "partition": 0, "offset": -1},
        {"topic": "txn", "partition": 0, "offset": 8}]}))       # inside a compressed transactional batch
    res = runner.invoke(cli, ["delete-records", str(d), "--offset-json", str(spec), "--format", "json",
                              "--quarantine", str(tmp_path / "q")])
    assert res.exit_code == 0, res.output
    starts = {s["partition"]: s["new_log_start_offset"] for s in map(json.loads, res.output.splitlines())}
    assert starts == {"multi-segment-0": 350, "idempotent-lz4-0": 12, "codec-zstd-0": 60, "txn-0": 8}
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
    from kafkalog_cli.storage.fsops import FsOps, InjectedFault, Quarantine

    def killed(d: Path, n: int) -> None:
        p = delete_records.plan(d, [d / "multi-segment-0"], delete_records.DeleteRecordsOptions(before=350))
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
