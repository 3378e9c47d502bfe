"""Acceptance: a real Kafka 3.3.1 broker loads what `erase` left and serves every other record
unchanged (offset, timestamp and its type, key, value, headers) and none of the erased ones, to a
read_uncommitted and a read_committed consumer; an idempotent producer started before the erase
resumes after it without a sequence error.

The broker writes the partitions itself: every codec (snappy with LogAppendTime), committed and
aborted transactions, a transaction left open whose first batch holds only the erased key (the
last stable offset must stay), an idempotent producer whose last batch holds only the erased key,
a compacted topic (erased with --tombstone), an offset range across batches and segments (one
segment left without a record), the erased key as a partition's very last record (the log end
offset must stay). ListOffsets by timestamp is asked for every record's timestamp and the erased
ones' (the rebuilt time indexes and lowered max timestamps at work). Magic 0 and 1: a 3.3.1 KRaft
broker writes only v2 whatever message.format.version says (LogConfig.
shouldIgnoreMessageFormatVersion from inter.broker.protocol 3.0-IV1, and KRaft's metadata.version
is past that: topic fmt-v1 shows it), so the
v0/v1 partitions are kafka-clients 3.3.1's segments from the corpus (tests/fixtures/corpus/legacy),
planted into topics the broker created and recovered by it before the erase.

For the restart after the erase the idempotent and the open transaction's producers' snapshots
go and the shutdown is made unclean, so the broker rebuilds their state from the erased segments
(UnifiedLog.rebuildProducerState reads the log when no snapshot is there): a producer's last
batch erased without RETAIN_EMPTY would then fail the producer's next append with
OutOfOrderSequence. The snapshots and .txnindex files erase leaves are compared byte for byte.

Runs when KAFKA_HOME and KAFKA_PY are set (tools/kafka-broker builds both); skipped otherwise.
One broker at a time, on free ports of 127.0.0.1, stopped by its own PID."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.broker_node import BrokerNode
from tests.helpers.erase_records import (
    CLIENT,
    T0,
    VICTIM,
    erased,
    expected,
    first_at_or_after,
    groups,
    rows,
)
from tests.helpers.kafka_broker import needs_broker
from tests.helpers.paths import CORPUS

pytestmark = [needs_broker, pytest.mark.slow]

SEGMENT_BYTES = "2048"

# an idempotent producer that lives across the broker's stop, the erase and the next start:
# phase 1, a "ready" line, then it waits for the go file and sends phase 2 record by record
IDEMPOTENT = r"""
import json, os, sys, time
from kafka import KafkaProducer
server, req = sys.argv[1], json.loads(sys.argv[2])
p = KafkaProducer(bootstrap_servers=server, enable_idempotence=True, acks="all", linger_ms=1000,
                  batch_size=1 << 20, retries=5, max_in_flight_requests_per_connection=1)
def send(row):
    key, value, headers, ts = row
    return p.send(req["topic"], key=key.encode(), value=value.encode(),
                  headers=[(h, v.encode()) for h, v in headers], partition=0, timestamp_ms=ts)
for group in req["phase1"]:
    fs = [send(row) for row in group]
    p.flush()
    for f in fs:
        f.get(timeout=60)
print(json.dumps({"ready": True}), flush=True)
while not os.path.exists(req["go"]):
    time.sleep(0.2)
offsets, error = [], None
try:
    for row in req["phase2"]:
        offsets.append(send(row).get(timeout=120).offset)
except Exception as e:
    error = f"{type(e).__name__}: {e}"
p.close(timeout=30)
print(json.dumps({"offsets": offsets, "error": error}), flush=True)
"""


CODECS = {"gzip": {}, "snappy": {"message.timestamp.type": "LogAppendTime"}, "lz4": {}, "zstd": {}}


def produce_jobs() -> tuple[dict, list[dict]]:
    """Topics with their configs, and what the producers send (the idempotent one aside)."""
    topics: dict = {}
    jobs: list = []
    for codec, cfg in CODECS.items():
        name = f"c-{codec}"
        topics[name] = {"segment.bytes": SEGMENT_BYTES, **cfg}
        # gzip: the victim is also the partition's last record, alone in the last batch (the
        # log end offset: that batch must stay, header-only)
        n = 121 if codec == "gzip" else 120
        records = rows(name, n, {5, 22, 23, 61, 98, 120})
        jobs.append(
            {
                "topic": name,
                "codec": codec,
                "groups": groups(records[:120], 9) + groups(records[120:], 9),
            }
        )
    topics["c-none"] = {"segment.bytes": SEGMENT_BYTES}
    jobs.append({"topic": "c-none", "groups": groups(rows("c-none", 120, {40}), 7)})
    topics["txn"] = {"segment.bytes": SEGMENT_BYTES}
    txn = rows("txn", 80, {3, 14, 15, 47, 66})
    jobs.append(
        {
            "topic": "txn",
            "codec": "lz4",
            "txn": "erase-txn",
            "groups": [
                {"rows": txn[i : i + 10], "commit": i // 10 % 3 != 1} for i in range(0, 80, 10)
            ],
        }
    )
    topics["compacted"] = {"segment.bytes": SEGMENT_BYTES, "cleanup.policy": "compact"}
    comp = [
        [f"c{i % 12}" if i % 9 else VICTIM, f"v{i}-" + "y" * 40, [], T0 + i] for i in range(150)
    ]
    jobs.append({"topic": "compacted", "groups": groups(comp, 8)})
    topics["idem"] = {"segment.bytes": SEGMENT_BYTES}
    # last: its producer ends with a transaction open, whose first batch holds only the victim
    topics["txn-open"] = {"segment.bytes": SEGMENT_BYTES}
    tail = rows("txn-open", 40, {12, 30})
    jobs.append(
        {
            "topic": "txn-open",
            "txn": "erase-open",
            "groups": [
                {"rows": tail[:15], "commit": True},
                {"rows": tail[15:30], "commit": False},
                {"rows": [[VICTIM, "first", [], T0 + 50_000]], "commit": "more"},
                {"rows": tail[30:], "commit": "open"},
            ],
        }
    )
    for v in ("v0", "v1"):
        topics[f"legacy-{v}"] = {}
    # written by the broker with message.format.version 0.10.2: still v2 (not erased)
    topics["fmt-v1"] = {"message.format.version": "0.10.2"}
    jobs.insert(0, {"topic": "fmt-v1", "groups": groups(rows("fmt-v1", 6, set()), 3)})
    return topics, jobs


IDEM_PHASE1 = [rows("idem", 8, {2}, s) for s in range(0, 40, 8)] + [
    [[VICTIM, "idem-last", [["h", "last"]], T0 + 99_000]]
]
IDEM_PHASE2 = rows("idem", 10, set(), 100)

# what each topic's erase selects; the legacy ones are kafka-clients 3.3.1's segments
ERASES = {
    **{f"c-{c}": ["--key", VICTIM] for c in CODECS},
    "c-none": ["--offsets", "30-75"],
    "txn": ["--key", VICTIM],
    "txn-open": ["--key", VICTIM],
    "idem": ["--key", VICTIM],
    "compacted": ["--key", VICTIM, "--tombstone"],
    "legacy-v1": ["--key", "key-v1gzip-2"],
    "legacy-v0": ["--offsets", "6-8"],
}
LEGACY = {"legacy-v1": "v1-gzip-create", "legacy-v0": "v0-snappy"}


def control_records(part: Path) -> list[list]:
    """[offset, timestamp] of the partition's transaction markers, as dump-log reads them: the
    consumer skips them, ListOffsets by timestamp does not (their timestamp is the broker's
    clock at the marker's append)."""
    rc, out = run_cli("dump-log", str(part), "--deep-iteration", "--format", "json")
    assert rc == 0, out
    lines = [json.loads(x) for x in out.splitlines()]
    return [
        [r["offset"], r["timestamp"]] for r in lines if r["kind"] == "record" and r["is_control"]
    ]


def files_digest(part: Path, suffixes: tuple[str, ...]) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(part.iterdir())
        if p.suffix in suffixes
    }


def plant_legacy(log_dir: Path) -> None:
    """kafka-clients 3.3.1's magic 0/1 segments in place of the empty ones the broker created;
    without a clean-shutdown marker the broker recovers them (indexes rebuilt) from recovery
    point 0."""
    for topic, case in LEGACY.items():
        part = log_dir / f"{topic}-0"
        for f in part.glob("00000000000000000000.*"):
            if f.suffix in (".log", ".index", ".timeindex"):
                f.unlink()
        for seg in sorted((CORPUS / "legacy" / case).glob("*.log")):
            shutil.copyfile(seg, part / seg.name)
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)


def magics(part: Path) -> set[int]:
    """The magic bytes of every batch in the partition's segments."""
    out = set()
    for seg in part.glob("*.log"):
        data, pos = seg.read_bytes(), 0
        while pos + 17 <= len(data):
            size = int.from_bytes(data[pos + 8 : pos + 12], "big")
            out.add(data[pos + 16])
            pos += 12 + size
    return out


def run_cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.output


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict:
    """The whole run, once (brokers are slow): produce, plant the legacy segments, consume,
    erase each topic, restart on the erased dir, resume the idempotent producer, consume again.
    What each step saw, for the tests below."""
    tmp_path = tmp_path_factory.mktemp("erase-broker")
    log_dir, work = tmp_path / "logdir", tmp_path / "work"
    node = BrokerNode(log_dir, work)
    topics, jobs = produce_jobs()
    go = tmp_path / "go"
    idem_out = tmp_path / "idem.out"
    idem = None
    try:
        node.start()
        node.client(CLIENT, {"op": "create", "topics": topics})
        node.client(CLIENT, {"op": "produce", "jobs": jobs})
        idem = node.spawn(
            IDEMPOTENT,
            {"topic": "idem", "phase1": IDEM_PHASE1, "phase2": IDEM_PHASE2, "go": str(go)},
            idem_out,
        )
        deadline = time.monotonic() + 120
        while b'"ready"' not in idem_out.read_bytes():
            assert idem.poll() is None and time.monotonic() < deadline, idem_out.read_text()
            time.sleep(0.5)
        node.stop()
        plant_legacy(log_dir)

        node.start()
        assert node.errors() == [], node.errors()
        before = node.client(CLIENT, {"op": "consume", "topics": sorted(ERASES)})
        (work / "before.json").write_text(json.dumps(before))  # for a failure's reader
        node.stop()

        assert magics(log_dir / "legacy-v0-0") == {0} and magics(log_dir / "legacy-v1-0") == {1}
        assert magics(log_dir / "c-gzip-0") == {2} and magics(log_dir / "fmt-v1-0") == {2}
        for topic in ERASES:
            ru = before[topic]["read_uncommitted"]
            assert ru["position"] >= ru["end"] and ru["records"], (topic, ru)
        markers = {t: control_records(log_dir / f"{t}-0") for t in ERASES}
        assert markers["txn"] and markers["txn-open"] and not markers["c-gzip"]
        kept = {t: files_digest(log_dir / f"{t}-0", (".snapshot", ".txnindex")) for t in ERASES}
        segments = {t: len(list((log_dir / f"{t}-0").glob("*.log"))) for t in ERASES}
        assert min(segments.values()) >= 2, segments
        logs = {
            t: files_digest(log_dir / f"{t}-0", (".log", ".index", ".timeindex")) for t in ERASES
        }

        reports = {}
        for topic, selection in ERASES.items():
            rc, out = run_cli(
                "erase", str(log_dir), "--topic", topic, *selection, "--format", "json"
            )
            assert rc == 0, (topic, out)
            (line,) = [x for x in map(json.loads, out.splitlines()) if x["kind"] == "partition"]
            reports[topic] = line
        for topic in ERASES:
            now = files_digest(log_dir / f"{topic}-0", (".snapshot", ".txnindex"))
            assert now == kept[topic], topic
        rc, out = run_cli("verify-crc", str(log_dir), "--deep")
        assert rc == 0, out
        rc, out = run_cli("dump-index", str(log_dir), "--verify-index-only", "--format", "json")
        assert rc == 0, out

        after_logs = {
            t: files_digest(log_dir / f"{t}-0", (".log", ".index", ".timeindex")) for t in ERASES
        }
        # the broker rebuilds the idempotent producer's state from the erased log itself
        # and the open transaction's (its first offset: the last stable offset)
        for snap in [*log_dir.glob("idem-0/*.snapshot"), *log_dir.glob("txn-open-0/*.snapshot")]:
            snap.unlink()
        (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
        node.start()
        go.touch()
        idem.wait(300)
        resumed = json.loads(idem_out.read_text().splitlines()[-1])
        times = {  # the erased records' timestamps too: the time index must not point at them
            t: [r[1] for r in before[t]["read_uncommitted"]["records"] if r[0] in gone and r[1]]
            for t, gone in (
                (t, erased(sel, before[t]["read_uncommitted"]["records"]))
                for t, sel in ERASES.items()
            )
        }
        after = node.client(CLIENT, {"op": "consume", "topics": sorted(ERASES), "times": times})
        (work / "after.json").write_text(json.dumps(after))
        errors = node.errors()
        node.stop()
    finally:
        node.stop()
        if idem is not None and idem.poll() is None:
            idem.kill()
            idem.wait()

    return {
        "before": before,
        "after": after,
        "reports": reports,
        "logs": logs,
        "after_logs": after_logs,
        "resumed": resumed,
        "errors": errors,
        "markers": markers,
    }


def test_the_broker_loads_the_erased_dir_without_an_error(served):
    assert served["errors"] == [], served["errors"]


def test_an_idempotent_producer_resumes_without_a_sequence_error(served):
    end = served["before"]["idem"]["read_uncommitted"]["end"]
    assert served["resumed"] == {"offsets": list(range(end, end + 10)), "error": None}


@pytest.mark.parametrize("topic", sorted(ERASES))
def test_the_report_names_the_erased_records_and_only_their_segments(served, topic):
    selection = ERASES[topic]
    gone = erased(selection, served["before"][topic]["read_uncommitted"]["records"])
    assert gone, topic
    report = served["reports"][topic]
    assert {r["offset"] for r in report["erased_records"]} == gone, report
    assert report["tombstones"] == (1 if "--tombstone" in selection else 0)
    # only the segments holding matches were rewritten, every file of the others as it was
    logs = served["logs"][topic]
    bases = sorted(int(name[:20]) for name in logs if name.endswith(".log"))
    hit = {max(b for b in bases if b <= o) for o in gone}
    assert {int(Path(p).name[:20]) for p in report["segments_rewritten"]} == hit
    for name, digest in logs.items():
        if int(name[:20]) not in hit:
            assert served["after_logs"][topic].get(name) == digest, name


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("topic", sorted(ERASES))
def test_consumers_get_every_other_record_unchanged(served, topic, iso):
    before, after = served["before"][topic], served["after"][topic]
    selection = ERASES[topic]
    gone = erased(selection, before["read_uncommitted"]["records"])
    was, now = before[iso], after[iso]
    records = now["records"]
    if topic == "idem":  # and the resumed producer's records after them
        records = [r for r in records if r[0] < was["end"]]
    assert records == expected(was["records"], gone, "--tombstone" in selection), sorted(gone)
    assert (now["start"], now["position"] >= now["end"]) == (was["start"], True)
    if topic != "idem":
        # the log end offset stays (read_committed: the last stable offset, an open
        # transaction's first offset)
        assert now["end"] == was["end"]
    if topic == "txn" and iso == "read_committed":  # the aborted records were in the log
        assert len(was["records"]) < len(before["read_uncommitted"]["records"])


@pytest.mark.parametrize("topic", sorted(ERASES))
def test_list_offsets_by_timestamp_finds_the_first_record_at_or_after(served, topic):
    """ListOffsets by timestamp answers the first offset whose timestamp is at or after it:
    before the erase (the oracle holds for these timestamps) and after, for every record's
    timestamp and the erased records' ones. c-none's erased range empties a whole segment."""
    for state in (served["before"], served["after"]):
        ru = sorted(state[topic]["read_uncommitted"]["records"] + served["markers"][topic])
        wrong = {
            t: got
            for t, got in state[topic]["times"].items()
            if got != first_at_or_after(ru, int(t))
        }
        assert wrong == {}, (state is served["after"], wrong)
    assert served["after"][topic]["times"] or topic == "legacy-v0"
