"""Transactions version 2 (KIP-890 part 2, Kafka 4.0): the coordinator bumps the producer epoch
at every commit or abort, so a transaction's data batches carry epoch E and its marker E + 1, and
the next transaction's data E + 1 from sequence 0; at epoch exhaustion (Short.MAX_VALUE - 1) the
marker goes under the old producer id at Short.MAX_VALUE and the producer continues under a new
id at epoch 0 (TransactionMetadata.prepareAbortOrCommit / prepareComplete).

A broker loading such a log (ProducerStateManager as LogLoader replays it, AppendOrigin.REPLICATION:
ProducerAppendInfo.appendEndTxnMarker's epoch check only warns) closes the transaction at the
E + 1 marker, takes the marker's epoch and drops the batch metadata of epoch E
(ProducerStateEntry.update -> maybeUpdateProducerEpoch). These tests hold `transactions`, the
producer snapshots recover writes and the consumer view to that, on logs built batch by batch."""

from __future__ import annotations

import struct

from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.formats.producer_state import ProducerSnapshotEntry, parse_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.formats.txnindex import AbortedTxn
from kafkalog_cli.ops import transactions as tx
from kafkalog_cli.ops.consumer_view import READ_COMMITTED, READ_UNCOMMITTED, consumer_view
from kafkalog_cli.ops.producer_rebuild import ProducerState, rebuild_producer_state
from kafkalog_cli.storage.partition import Partition, PartitionCheckpoints

NOW = 1_800_000_000_000
MIN = 60_000
DAY = 86_400_000
T = NOW - 30 * MIN
COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT
EXHAUSTED = 32766  # TransactionMetadata.isEpochExhausted: epoch >= Short.MaxValue - 1


def data(offset, pid, epoch, seq=0, n=1, ts=T, txn=True):
    recs = [SimpleRecord(b"k", b"v%d" % i, ts) for i in range(n)]
    return build_v2_batch(
        recs, offset, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn
    )


def marker(offset, pid, epoch, kind=COMMIT, ts=T, coordinator_epoch=3):
    r = SimpleRecord(struct.pack(">hh", 0, int(kind)), struct.pack(">hi", 0, coordinator_epoch), ts)
    return build_v2_batch(
        [r], offset, producer_id=pid, producer_epoch=epoch, is_transactional=True, is_control=True
    )


def partition(tmp_path, batches, hw=None, name="t-0") -> Partition:
    d = tmp_path / name
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    return Partition.open(d, PartitionCheckpoints(high_watermark=hw))


# producer 10 under TV2: commit (data epoch 0, marker 1), abort (data 1, marker 2), then a
# transaction still open at epoch 2; producer 20 is idle, its last transaction committed TV1-style
TV2_LOG = [
    data(0, 10, 0, seq=0, n=2),
    data(2, 10, 0, seq=2),
    marker(3, 10, 1),
    data(4, 10, 1, seq=0),
    marker(5, 10, 2, ABORT, coordinator_epoch=4),
    data(6, 20, 5, seq=7),
    marker(7, 20, 5),
    data(8, 10, 2, seq=0, n=2, ts=NOW - 20 * MIN),
]


def test_a_marker_one_epoch_up_closes_its_transaction(tmp_path):
    pt = tx.partition_transactions(partition(tmp_path, TV2_LOG, hw=10), NOW, DAY)
    assert [(t.producer.producer_id, t.producer.epoch, t.start_offset) for t in pt.open] == [
        (10, 2, 8)
    ]
    assert pt.last_stable_offset == 8
    assert [tx.producer_json(p) for p in pt.producers] == [
        {
            "producer_id": 10,
            "producer_epoch": 2,
            "coordinator_epoch": 4,
            "last_sequence": 1,
            "last_timestamp": NOW - 20 * MIN,
            "current_transaction_start_offset": 8,
        },
        {
            "producer_id": 20,
            "producer_epoch": 5,
            "coordinator_epoch": 3,
            "last_sequence": 7,
            "last_timestamp": T,
            "current_transaction_start_offset": None,
        },
    ]
    # the two completed transactions are not candidates: only the open one, older than 15 min
    hanging = tx.find_hanging(pt.open, 15 * MIN, None)
    assert [(h.txn.producer.producer_id, h.txn.start_offset) for h in hanging] == [(10, 8)]


def test_lso_while_the_tv2_marker_is_not_replicated(tmp_path):
    # the high watermark below the ABORT marker at 5: the transaction from 4 is still unstable
    pt = tx.partition_transactions(partition(tmp_path, TV2_LOG, hw=5), NOW, DAY)
    assert pt.last_stable_offset == 4


def test_the_snapshot_after_a_tv2_marker_is_the_4_0_brokers(tmp_path):
    """ProducerStateManager.update(appendInfo): the marker's higher epoch clears the batch metadata
    (lastSequence -1, lastOffset -1, offsetDelta 0 in the snapshot), the coordinator epoch and the
    timestamp are the marker's, currentTxnFirstOffset is cleared. A TV1 marker (same epoch) keeps
    the last data batch's metadata."""
    p = partition(tmp_path, TV2_LOG[:7] + [marker(7, 20, 5, ts=T + 5)], hw=8)
    state = rebuild_producer_state(p.directory, p.segments, None, now_ms=NOW, expiration_ms=DAY)
    entries = {e.producer_id: e for e in parse_producer_snapshot(state.snapshot_bytes()).entries}
    assert entries[10] == ProducerSnapshotEntry(10, 2, -1, -1, 0, T, 4, -1)
    assert entries[20] == ProducerSnapshotEntry(20, 5, 7, 6, 0, T + 5, 3, -1)
    assert state.ongoing == {}


def test_the_tv2_abort_marker_gets_its_txnindex_entry():
    state = ProducerState()
    got = [state.update(b) for b in iter_batches(b"".join(TV2_LOG[:5]))]
    # CompletedTxn(producerId, firstOffset 4, lastOffset 5, isAborted): LSO after it = 6
    assert got == [None, None, None, None, AbortedTxn(0, 10, 4, 5, 6)]


def test_an_abort_two_epochs_up_closes_its_transaction_too(tmp_path):
    """A 4.0 coordinator aborting at InitProducerId under TV2 bumps twice (KAFKA-19367, fixed in
    4.1): the ABORT is E + 2, and closes the transaction all the same."""
    log = [data(0, 10, 3), marker(1, 10, 5, ABORT), data(2, 10, 5, ts=NOW - 20 * MIN)]
    pt = tx.partition_transactions(partition(tmp_path, log, hw=3), NOW, DAY)
    assert [(t.producer.epoch, t.start_offset) for t in pt.open] == [(5, 2)]
    assert consumer_view(iter_batches(b"".join(log)), READ_COMMITTED, 3, None).aborted == {
        10: [(0, 1)]
    }


def test_producer_id_rotation_at_epoch_exhaustion(tmp_path):
    """The marker goes under the old id at Short.MAX_VALUE; the new id starts at epoch 0: two
    producers, the old one with no transaction (it expires as any idle producer)."""
    log = [
        data(0, 10, EXHAUSTED, seq=40),
        marker(1, 10, EXHAUSTED + 1),
        data(2, 11, 0, seq=0, ts=NOW - 20 * MIN),
    ]
    pt = tx.partition_transactions(partition(tmp_path, log, hw=3), NOW, DAY)
    assert [
        (e.producer_id, e.epoch, e.last_seq, e.current_txn_first_offset) for e in pt.producers
    ] == [(10, 32767, -1, -1), (11, 0, 0, 2)]
    assert [(t.producer.producer_id, t.start_offset) for t in pt.open] == [(11, 2)]
    assert pt.last_stable_offset == 2
    # a day later producer 10 has expired (isProducerExpired); 11's transaction keeps it
    later = tx.partition_transactions(partition(tmp_path / "b", log, hw=3), NOW + DAY, DAY)
    assert [e.producer_id for e in later.producers] == [11]
    assert [e.producer_id for e in later.expired] == [10]


def test_a_repeated_tv2_marker_changes_nothing(tmp_path):
    """A marker written again for a transaction already completed (same epoch, no transaction
    open: the coordinator's retry, ProducerAppendInfo.checkProducerEpoch) completes nothing: no
    txnindex entry, no open transaction, the LSO is not held."""
    log = [
        data(0, 10, 0),
        marker(1, 10, 1, ABORT),
        marker(2, 10, 1, ABORT),
        data(3, 12, 0, txn=False),
    ]
    state = ProducerState()
    assert [state.update(b) for b in iter_batches(b"".join(log))] == [
        None,
        AbortedTxn(0, 10, 0, 1, 2),
        None,
        None,
    ]
    pt = tx.partition_transactions(partition(tmp_path, log, hw=4), NOW, DAY)
    assert (pt.open, pt.last_stable_offset) == ([], 4)
    view = consumer_view(iter_batches(b"".join(log)), READ_COMMITTED, 4, None)
    assert [
        view.verdict(b.base_offset, b.last_offset, b.is_control, b.is_transactional, b.producer_id)
        for b in iter_batches(b"".join(log))
    ] == ["skip", "skip", "skip", "keep"]


def test_find_hanging_with_the_coordinator_in_prepare_commit_at_the_bumped_epoch(tmp_path):
    """TV2's PrepareCommit holds epoch E + 1 while the partition's data has E: the coordinator
    still writes the marker, so the transaction is not hanging (TransactionsCommand matches by
    producer id only)."""
    from tests.ops.test_transactions import txn_state_record

    log = [data(0, 10, 4, ts=NOW - 20 * MIN)]
    open_txns = tx.partition_transactions(partition(tmp_path, log, hw=1), NOW, DAY).open
    rec = txn_state_record("a", 10, 2, [("t", [0])])
    value = bytearray(rec.value)
    value[10:12] = struct.pack(">h", 5)  # producerEpoch E + 1
    state = partition(
        tmp_path,
        [build_v2_batch([SimpleRecord(rec.key, bytes(value), T)], 0)],
        name="__transaction_state-0",
    )
    assert tx.find_hanging(open_txns, 15 * MIN, tx.coordinator_transactions([state])) == []


def test_consumer_view_of_tv2_transactions():
    batches = lambda: iter_batches(b"".join(TV2_LOG))  # noqa: E731
    committed = consumer_view(batches(), READ_COMMITTED, 10, None)
    assert (committed.end, committed.last_stable_offset, committed.aborted) == (
        8,
        8,
        {10: [(4, 5)]},
    )
    verdicts = [
        (
            b.base_offset,
            committed.verdict(
                b.base_offset, b.last_offset, b.is_control, b.is_transactional, b.producer_id
            ),
        )
        for b in batches()
    ]
    assert verdicts == [
        (0, "keep"),
        (2, "keep"),
        (3, "skip"),
        (4, "skip"),
        (5, "skip"),
        (6, "keep"),
        (7, "skip"),
        (8, "stop"),
    ]
    uncommitted = consumer_view(batches(), READ_UNCOMMITTED, 10, None)
    assert (uncommitted.end, uncommitted.aborted) == (10, {})


def _txn_state_v1(tid: str, pid: int, epoch: int, state: int, partitions, **tagged) -> SimpleRecord:
    """TransactionLogKey 0 / TransactionLogValue 1, as a 4.0+ coordinator writes them."""
    from kafkalog_cli.formats.internal.kafka_protocol import write_struct
    from kafkalog_cli.formats.internal.schemas import MESSAGES

    key = struct.pack(">hh", 0, len(tid)) + tid.encode()
    value = struct.pack(">h", 1) + write_struct(
        MESSAGES["TransactionLogValue"],
        {
            "producerId": pid,
            "producerEpoch": epoch,
            "transactionTimeoutMs": 60000,
            "transactionStatus": state,
            "transactionPartitions": [{"topic": t, "partitionIds": ids} for t, ids in partitions],
            "transactionLastUpdateTimestampMs": T,
            "transactionStartTimestampMs": T,
            "clientTransactionVersion": 2,
            **tagged,
        },
        1,
    )
    return SimpleRecord(key, value, T)


def test_find_hanging_after_a_producer_id_rotation(tmp_path):
    """After the rotation the transactional id's value names the new id (TransactionMetadata
    .prepareComplete): a transaction open under it with the coordinator Ongoing is not hanging.
    One left open under the old id (its marker lost) is hanging, as kafka-transactions.sh finds no
    transactional id for it (ListTransactions filters on producerId); where the coordinator wrote
    previousProducerId (KAFKA-20310) the reason names the transactional id."""
    log = [data(0, 10, EXHAUSTED, ts=NOW - 20 * MIN), data(1, 11, 0, ts=NOW - 20 * MIN)]
    open_txns = tx.partition_transactions(partition(tmp_path, log, hw=2), NOW, DAY).open
    assert [t.producer.producer_id for t in open_txns] == [10, 11]

    def coordinator(name, **tagged):
        recs = [
            _txn_state_v1("a", 10, EXHAUSTED, 1, [("t", [0])]),
            _txn_state_v1("a", 11, 0, 1, [("t", [0])], **tagged),
        ]
        return tx.coordinator_transactions(
            [partition(tmp_path / name, [build_v2_batch(recs, 0)], name="__transaction_state-0")]
        )

    hanging = tx.find_hanging(
        open_txns, 15 * MIN, coordinator("a")
    )  # 4.0 to 4.2: no previousProducerId
    assert [(h.txn.producer.producer_id, h.coordinator, h.reason) for h in hanging] == [
        (10, None, "no transactional id has this producer id in __transaction_state")
    ]
    hanging = tx.find_hanging(open_txns, 15 * MIN, coordinator("b", previousProducerId=10))
    assert [
        (h.txn.producer.producer_id, h.to_dict()["transactional_id"], h.reason) for h in hanging
    ] == [
        (
            10,
            None,
            "the transactional id a moved on to producer id 11 (previousProducerId 10 in "
            "__transaction_state): no marker comes under this producer id",
        )
    ]
