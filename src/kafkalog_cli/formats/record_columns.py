"""Records cut into columns (`RecordColumns`), which the column scanners (`scan_columns`,
`columns_of_batches`) fill for the Arrow rows of the Spark data source and export."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field


@dataclass(slots=True)
class RecordColumns:
    """Records cut into columns, for Arrow arrays built a column at a time (spark/arrow.py): the
    numbers in machine arrays (Arrow takes their buffers as they are). Positions index the
    concatenation of `data`; a null key or value has an empty span."""

    rows: int = 0
    data: list = field(default_factory=list)  # bytes holding the payloads, in order
    size: int = 0  # their total length
    payload: int = 0  # bytes of keys, values, header keys and values (the same on every path)
    offsets: array = field(default_factory=lambda: array("q"))
    timestamps: array = field(default_factory=lambda: array("q"))
    sequences: array = field(default_factory=lambda: array("i"))
    spans: array = field(default_factory=lambda: array("i"))  # per record: key start, end,
    null_keys: list = field(default_factory=list)  # rows          value start, end
    null_values: list = field(default_factory=list)
    header_ends: array = field(default_factory=lambda: array("i"))  # per record: headers so far
    header_spans: array = field(default_factory=lambda: array("i"))  # per header: the same
    null_header_values: list = field(default_factory=list)  # headers, counted from the first

    def add_record(self, offset: int, timestamp: int, sequence: int, key, value, headers) -> None:
        """One record by its values (`headers`: (key bytes, value) pairs): the general path's."""
        row = self.rows
        self.offsets.append(offset)
        self.timestamps.append(timestamp)
        self.sequences.append(sequence)
        for payload, nulls in ((key, self.null_keys), (value, self.null_values)):
            self.spans.extend(self._put(payload))
            if payload is None:
                nulls.append(row)
        for hkey, hvalue in headers:
            if hvalue is None:
                self.null_header_values.append(len(self.header_spans) // 4)
            self.header_spans.extend(self._put(hkey) + self._put(hvalue))
        self.header_ends.append(len(self.header_spans) // 4)
        self.rows = row + 1

    def _put(self, payload) -> tuple[int, int]:
        start = self.size
        if payload:
            self.data.append(payload)
            self.size += len(payload)
            self.payload += len(payload)
        return start, self.size
