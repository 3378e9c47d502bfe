"""ops.transactions: producer states, open transactions, Kafka's last stable offset and
find-hanging, on small logs built batch by batch, and on the example log dir a Kafka 3.3.1 broker
wrote."""

from kafkalog_cli.formats.producer_state import ProducerSnapshotEntry, encode_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops import transactions as tx
from kafkalog_cli.storage.partition import Partition, PartitionCheckpoints
from tests.helpers.paths import EXAMPLES
from tests.helpers.transactions import MIN, NOW, T, data, marker, txn_state_record

DAY = 86_400_000


def partition(tmp_path, batches, hw=None, name="t-0", snapshot=None) -> Partition:
    d = tmp_path / name
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    if snapshot is not None:
        offset, entries = snapshot
        (d / f"{offset:020d}.snapshot").write_bytes(encode_producer_snapshot(entries))
    return Partition.open(d, PartitionCheckpoints(high_watermark=hw))


def test_open_transactions_and_the_last_stable_offset(tmp_path):
    p = partition(
        tmp_path,
        [
            data(0, 10),
            data(1, 11, ts=T + MIN),
            marker(2, 10),
            data(3, 12, txn=False),
            data(4, 13, ts=NOW - MIN),
        ],
        hw=5,
    )
    pt = tx.partition_transactions(p, NOW, DAY)
    assert (pt.log_start_offset, pt.last_stable_offset, pt.high_watermark, pt.log_end_offset) == (
        0,
        1,
        5,
        5,
    )
    assert [(t.producer.producer_id, t.start_offset, t.duration_min) for t in pt.open] == [
        (11, 1, 29),
        (13, 4, 1),
    ]
    assert [p.producer_id for p in pt.producers] == [10, 11, 12, 13]
    assert tx.producer_json(pt.producers[0]) == {
        "producer_id": 10,
        "producer_epoch": 0,
        "coordinator_epoch": 3,
        "last_sequence": 0,
        "last_timestamp": T,
        "current_transaction_start_offset": None,
    }


def test_a_marker_at_or_above_the_high_watermark_keeps_its_transaction_unstable(tmp_path):
    batches = [data(0, 10), marker(1, 10), data(2, 11, txn=False)]
    # UnifiedLog.lastStableOffset: the committed transaction is unreplicated until the HW passes its marker
    assert (
        tx.partition_transactions(
            partition(tmp_path / "a", batches, hw=1), NOW, DAY
        ).last_stable_offset
        == 0
    )
    assert (
        tx.partition_transactions(
            partition(tmp_path / "b", batches, hw=2), NOW, DAY
        ).last_stable_offset
        == 2
    )
    # the producer state is the log end offset's all the same: nothing is open there
    assert tx.partition_transactions(partition(tmp_path / "c", batches, hw=1), NOW, DAY).open == []


def test_without_a_high_watermark_the_log_end_offset_bounds_the_lso(tmp_path):
    pt = tx.partition_transactions(
        partition(tmp_path, [data(0, 10, txn=False), data(1, 11)]), NOW, DAY
    )
    assert (pt.high_watermark, pt.last_stable_offset, pt.stable_bound) == (
        None,
        1,
        "log_end_offset",
    )
    assert pt.to_dict()["stable_bound"] == "log_end_offset"


def test_expired_producers_go_unless_their_transaction_is_open(tmp_path):
    old = NOW - 2 * DAY
    p = partition(tmp_path, [data(0, 10, txn=False, ts=old), data(1, 11, ts=old)], hw=2)
    pt = tx.partition_transactions(p, NOW, DAY)
    assert [e.producer_id for e in pt.producers] == [11]  # isProducerExpired
    assert [t.start_offset for t in pt.open] == [1]


def test_the_state_comes_from_the_snapshot_and_the_log_after_it(tmp_path):
    # the snapshot at 2 says producer 20's transaction began at 1 (its batch is no longer replayed)
    entry = ProducerSnapshotEntry(20, 0, 0, 1, 0, T, 5, 1)
    p = partition(
        tmp_path, [data(0, 10, txn=False), data(1, 20), data(2, 21)], hw=3, snapshot=(2, [entry])
    )
    pt = tx.partition_transactions(p, NOW, DAY)
    assert [
        (t.producer.producer_id, t.start_offset, t.producer.coordinator_epoch) for t in pt.open
    ] == [(20, 1, 5), (21, 2, -1)]
    assert pt.last_stable_offset == 1


# ------------------------------------------------------------------ find-hanging


def test_find_hanging_as_kafka_filters_it(tmp_path):
    p = partition(
        tmp_path,
        [
            data(0, 10, ts=NOW - 20 * MIN),
            data(1, 11, ts=NOW - 20 * MIN),
            data(2, 12, ts=NOW - 20 * MIN),
            data(3, 13, ts=NOW - 15 * MIN),
            data(4, 14, ts=NOW - MIN),
        ],
        hw=5,
    )
    open_txns = tx.partition_transactions(p, NOW, DAY).open
    # without the coordinator's log: every transaction older than max-age (strictly: 15 min is not)
    hanging = tx.find_hanging(open_txns, 15 * MIN, None)
    assert [h.txn.producer.producer_id for h in hanging] == [10, 11, 12]
    assert hanging[0].to_dict()["coordinator_state"] is None
    # Ongoing with this partition: the coordinator will write the marker; CompleteCommit: it will not;
    # producer 12 has no transactional id at all
    state = partition(
        tmp_path,
        [
            build_v2_batch(
                [txn_state_record("a", 10, 1, [("t", [0, 1])]), txn_state_record("b", 11, 4, [])], 0
            )
        ],
        name="__transaction_state-0",
    )
    coordinator = tx.coordinator_transactions([state])
    hanging = tx.find_hanging(open_txns, 15 * MIN, coordinator)
    assert [
        (
            h.txn.producer.producer_id,
            h.to_dict()["transactional_id"],
            h.to_dict()["coordinator_state"],
        )
        for h in hanging
    ] == [(11, "b", "CompleteCommit"), (12, None, None)]
    assert hanging[0].to_dict()["kind"] == "hanging_transaction"


def test_a_tombstone_removes_a_transactional_id(tmp_path):
    gone = SimpleRecord(txn_state_record("a", 10, 1, []).key, None, T)
    state = partition(
        tmp_path,
        [build_v2_batch([txn_state_record("a", 10, 1, [("t", [0])]), gone], 0)],
        name="__transaction_state-0",
    )
    assert tx.coordinator_transactions([state]) == {}


def test_the_example_log_dir(tmp_path):
    """A Kafka 3.3.1 broker's txn-0: producer 1's transactions all ended (COMMIT, ABORT); the
    coordinator's log says CompleteCommit for oracle-txn-1."""
    parts = tx.read_partitions(EXAMPLES, [EXAMPLES / "txn-0", EXAMPLES / "__transaction_state-0"])
    pt = tx.partition_transactions(parts[0], 1795247600000, DAY)
    assert (pt.last_stable_offset, pt.high_watermark, pt.open) == (15, 15, [])
    assert [tx.producer_json(p) for p in pt.producers] == [
        {
            "producer_id": 1,
            "producer_epoch": 0,
            "coordinator_epoch": 0,
            "last_sequence": 11,
            "last_timestamp": 1795247596010,
            "current_transaction_start_offset": None,
        }
    ]
    coordinator = tx.coordinator_transactions(parts[1:])
    assert coordinator[1].transactional_id == "oracle-txn-1"
    assert coordinator[1].metadata.state.name == "CompleteCommit"
