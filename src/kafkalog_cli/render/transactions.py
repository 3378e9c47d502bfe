"""`kafkalog transactions` as text: kafka-transactions.sh's tables (ToolsUtils.prettyPrintTable)."""

from __future__ import annotations

PARTITION_HEADERS = (
    "Partition",
    "LogStartOffset",
    "LastStableOffset",
    "HighWatermark",
    "LogEndOffset",
    "Producers",
    "OpenTransactions",
)
# TransactionsCommand's own headers: find-hanging's, and describe-producers' after the partition
TRANSACTION_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
PRODUCER_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)


def partition_tables(partitions, producers: bool) -> str:
    """The partitions' table, then the open transactions' and (`producers`) the producers'."""
    out = table(
        PARTITION_HEADERS,
        [
            [
                pt.name,
                pt.log_start_offset,
                pt.last_stable_offset,
                "none" if pt.high_watermark is None else pt.high_watermark,
                pt.log_end_offset,
                len(pt.producers),
                len(pt.open),
            ]
            for pt in partitions
        ],
    )
    open_txns = [t for pt in partitions for t in pt.open]
    if open_txns:
        out += "\n" + table(TRANSACTION_HEADERS, [_txn_row(t) for t in open_txns])
    if producers:
        out += "\n" + table(
            PRODUCER_HEADERS,
            [
                [
                    pt.topic,
                    pt.partition,
                    p.producer_id,
                    p.epoch,
                    p.coordinator_epoch,
                    p.last_seq,
                    p.timestamp,
                    "None" if p.current_txn_first_offset < 0 else p.current_txn_first_offset,
                ]
                for pt in partitions
                for p in pt.producers
            ],
        )
    return out


def hanging_table(hanging) -> str:
    """find-hanging's table."""
    return table(TRANSACTION_HEADERS, [_txn_row(h.txn) for h in hanging])


def _txn_row(t) -> list:
    p = t.producer
    return [
        t.topic,
        t.partition,
        p.producer_id,
        p.epoch,
        p.coordinator_epoch,
        t.start_offset,
        p.timestamp,
        t.duration_min,
    ]


def table(headers, rows) -> str:
    """ToolsUtils.prettyPrintTable: every column padded to its widest value, each followed by a tab."""
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "".join("".join(c.ljust(w) + "\t" for c, w in zip(row, widths)) + "\n" for row in cells)
