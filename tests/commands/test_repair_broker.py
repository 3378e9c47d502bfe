"""Acceptance: a real Kafka broker (3.3.1, 3.9.0-rc3) started on what `repair` left loads the log
dir and consumers read every record of each repaired partition exactly as the same broker serves
the donor copy (offset, timestamp and its type, key, value, headers; read_uncommitted and
read_committed, to the end offset; ListOffsets by every record's timestamp); `compare-replicas`
then says the copies agree.

Runs when KAFKA_HOME points at a Kafka distribution and KAFKA_PY at a Python with kafka-python
(tools/kafka-broker builds both); skipped otherwise. The broker listens on free ports of
127.0.0.1 and is stopped by its own PID."""

import json
import shutil

from kafkalog_cli.cli import cli
from tests.helpers.erase_records import CLIENT
from tests.helpers.kafka_broker import broker_run, needs_broker
from tests.helpers.paths import EXAMPLES
from tests.helpers.repair import batches, damage

pytestmark = needs_broker

# compressed (gzip, zstd, snappy), transactional, idempotent, compacted, two segments
DAMAGED = {
    "codec-gzip-0": "flip",
    "codec-zstd-0": "zero",
    "codec-snappy-0": "garbage",
    "txn-0": "size",
    "idempotent-lz4-0": "flip",
    "compacted-0": "zero",
    "multi-segment-0": "flip",
}

TOPICS = [name.rsplit("-", 1)[0] for name in DAMAGED]


def test_the_broker_serves_the_repaired_copy_as_it_serves_the_donor(tmp_path, runner):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(EXAMPLES, a)
    shutil.copytree(EXAMPLES, b)
    for name, how in DAMAGED.items():
        log = sorted((a / name).glob("*.log"))[0]
        cuts = batches(log)
        damage(log, how, cuts[len(cuts) // 2])
    res = runner.invoke(cli, ["repair", str(a), "--from", str(b), "--format", "json"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.output.splitlines()]
    repaired = {
        x["partition"] for x in lines if x["kind"] == "partition" and x["status"] == "repaired"
    }
    assert repaired == set(DAMAGED)

    (tmp_path / "wa").mkdir()
    (tmp_path / "wb").mkdir()
    consume = json.dumps({"op": "consume", "topics": sorted(TOPICS)})
    served = broker_run(a, tmp_path / "wa", CLIENT, consume)
    donor = broker_run(b, tmp_path / "wb", CLIENT, consume)
    assert served["errors"] == [] and donor["errors"] == []
    for topic in TOPICS:
        got, want = served["output"][topic], donor["output"][topic]
        assert got == want, topic
        for iso in ("read_uncommitted", "read_committed"):
            assert got[iso]["records"] and got[iso]["position"] >= got[iso]["end"], (topic, iso)
    assert len(served["output"]["multi-segment"]["read_uncommitted"]["records"]) == 600
    for name in DAMAGED:
        cmp = runner.invoke(
            cli, ["compare-replicas", str(a / name), str(b / name), "--format", "json"]
        )
        assert cmp.exit_code == 0 and json.loads(cmp.output)["agree"] is True, cmp.output
