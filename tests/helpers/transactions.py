"""Transactional partitions for the transactions tests: data batches, markers and
__transaction_state records, and a log dir holding them."""

from __future__ import annotations

import struct
from pathlib import Path

from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

NOW = 1_800_000_000_000
MIN = 60_000
T = NOW - 30 * MIN  # when the records were written


def data(offset, pid, txn=True, ts=T, seq=0, epoch=0):
    return build_v2_batch(
        [SimpleRecord(b"k", b"v", ts)],
        offset,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
    )


def marker(offset, pid, kind=ControlRecordType.COMMIT, ts=T, epoch=0, coordinator_epoch=3):
    r = SimpleRecord(struct.pack(">hh", 0, int(kind)), struct.pack(">hi", 0, coordinator_epoch), ts)
    return build_v2_batch(
        [r], offset, producer_id=pid, producer_epoch=epoch, is_transactional=True, is_control=True
    )


def txn_state_record(
    tid: str, pid: int, state: int, partitions: list[tuple[str, list[int]]]
) -> SimpleRecord:
    """TransactionLogKey/Value version 0, as the coordinator writes them."""

    def string(s):
        return struct.pack(">h", len(s.encode())) + s.encode()

    key = struct.pack(">h", 0) + string(tid)
    value = struct.pack(">hqhib", 0, pid, 0, 60000, state) + struct.pack(">i", len(partitions))
    for topic, ids in partitions:
        value += (
            string(topic)
            + struct.pack(">i", len(ids))
            + b"".join(struct.pack(">i", i) for i in ids)
        )
    value += struct.pack(">qq", T, T)
    return SimpleRecord(key, value, T)


def log_dir(tmp_path, with_state=False) -> Path:
    d = tmp_path / "logs"
    parts = {
        "t-0": [
            data(0, 10, ts=NOW - 20 * MIN),
            data(1, 11, txn=False, ts=NOW - MIN),
            marker(2, 10),
        ],
        "t-1": [data(0, 12, ts=NOW - 60 * MIN), data(1, 13, ts=NOW - 5 * MIN)],
    }
    if with_state:
        parts["__transaction_state-0"] = [
            build_v2_batch([txn_state_record("app", 13, 1, [("t", [1])])], 0)
        ]
    for name, batches in parts.items():
        (d / name).mkdir(parents=True)
        (d / name / "00000000000000000000.log").write_bytes(b"".join(batches))
    (d / "replication-offset-checkpoint").write_text("0\n2\nt 0 3\nt 1 2\n")
    return d


def txn_partition(log_dir: Path, snapshot: bytes | None = None) -> Path:
    """`t-0`: producer 7's transactional batch at offsets 0-2, after it a plain batch at 3-4,
    and no COMMIT yet: the transaction is open."""
    d = log_dir / "t-0"
    d.mkdir(parents=True)
    txn = build_v2_batch(
        [SimpleRecord(b"k", b"v", 1000 + i) for i in range(3)],
        0,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    plain = build_v2_batch([SimpleRecord(b"k", b"v", 2000 + i) for i in range(2)], 3)
    (d / "00000000000000000000.log").write_bytes(txn + plain)
    if snapshot is not None:
        (d / "00000000000000000005.snapshot").write_bytes(snapshot)
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\nt 0 5\n")
    return d


def v1_transaction_value() -> bytes:
    return struct.pack(">h", 1) + write_struct(
        MESSAGES["TransactionLogValue"],
        {
            "producerId": 13,
            "previousProducerId": 12,
            "producerEpoch": 1,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 4,
            "transactionPartitions": [{"topic": "t", "partitionIds": [1]}],
            "transactionLastUpdateTimestampMs": 5,
            "transactionStartTimestampMs": 4,
            "clientTransactionVersion": 2,
        },
        1,
    )
