"""Kafka's CleanedTransactionMetadata (LogCleaner.scala): which batches belong to aborted
transactions, and which transaction markers the cleaner may discard."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.formats.records import RecordBatch
from kafkalog_cli.formats.txnindex import AbortedTxn


class CleanedTransactionMetadata:
    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[
            int, list
        ] = {}  # pid -> [AbortedTxn, last observed batch offset]
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # min-heap by first offset
        self._seq = 0
        # where a retained ABORT marker's entry goes (the cleaned segment's .txnindex)
        self.cleaned_index: Callable[[AbortedTxn], None] | None = None

    def add_aborted_transactions(self, txns: Iterable[AbortedTxn]) -> None:
        for t in txns:
            self._seq += 1
            heapq.heappush(self._aborted, (t.first_offset, self._seq, t))

    def start_at(self, offset: int, txns: Iterable[AbortedTxn]) -> None:
        """State as if every batch before `offset` had been read (a parallel map worker that
        starts mid-log): aborted transactions open across `offset` are ongoing."""
        for t in txns:
            if t.first_offset < offset <= t.last_offset:
                self._ongoing_aborted.setdefault(t.producer_id, [t, None])
            elif t.first_offset >= offset:
                self.add_aborted_transactions([t])

    def _consume_up_to(self, offset: int) -> None:
        h = self._aborted
        while h and h[0][0] <= offset:
            t = heapq.heappop(h)[2]
            self._ongoing_aborted.setdefault(t.producer_id, [t, None])

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """True if the control batch can be discarded."""
        self._consume_up_to(batch.last_offset)
        recs = batch.records()
        if not recs:
            return True  # an empty control batch was already cleaned
        ctype = ControlRecordType.parse(recs[0].key)  # only the key: Kafka's cleaner reads no value
        pid = batch.producer_id
        if ctype == ControlRecordType.ABORT:
            meta = self._ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index(meta[0])
                return False  # retained until every batch of the transaction is gone
            return True
        if ctype == ControlRecordType.COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """True if the data batch belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if batch.is_transactional:
            meta = self._ongoing_aborted.get(batch.producer_id)
            if meta is not None:
                meta[1] = batch.last_offset
                return True
            self._ongoing_committed.add(batch.producer_id)
        return False
