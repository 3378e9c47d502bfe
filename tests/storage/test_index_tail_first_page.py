"""last_index_entry's first-page shortcut finds the same last entry as a plain scan, whatever
the number of entries before the preallocated zeros (in, at the edge of, and past the first page)."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.storage.segment import last_index_entry

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


def _scan(data: bytes, entry: struct.Struct, rel_field: int):
    entries = [entry.unpack_from(data, i * entry.size) for i in range(len(data) // entry.size)]
    last = None
    for i, e in enumerate(entries):
        if i > 0 and e[rel_field] == 0:
            break
        last = e
    return None if last == (0, 0) else last


@pytest.mark.parametrize("entries", [0, 1, 2, 340, 341, 342, 511, 512, 513, 2000])
@pytest.mark.parametrize("kind", ["offset", "time"])
def test_same_entry_as_a_scan(tmp_path, entries, kind):
    entry, rel = (OFFSET_ENTRY, 0) if kind == "offset" else (TIME_ENTRY, 1)
    body = b"".join(
        entry.pack(*((i + 1, i * 100) if kind == "offset" else (1000 + i, i + 1)))
        for i in range(entries)
    )
    path = tmp_path / "00000000000000000000.index"
    data = body + bytes(entry.size * 5000)  # preallocated zeros after the entries
    path.write_bytes(data)
    assert last_index_entry(path, entry, rel) == _scan(data, entry, rel)
    if entries:
        assert last_index_entry(path, entry, rel) == entry.unpack_from(
            body, (entries - 1) * entry.size
        )
