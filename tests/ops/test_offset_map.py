"""ops.offset_map: Kafka's capacity and key counting, in both layouts."""

from __future__ import annotations

import pytest

from kafkalog_cli.ops.offset_map import MapFull, OffsetMap


def test_capacity_is_kafkas():
    assert OffsetMap().capacity == 5033164  # 128 MiB / 24 * 0.9, as the broker logs it
    assert OffsetMap(240).capacity == 9


def test_last_offset_wins_and_a_repeated_key_counts_once():
    m = OffsetMap(240)
    m.put_all([b"a", b"b", b"a"], [1, 2, 3])
    assert (m.get(b"a"), m.get(b"b"), m.get(b"zz"), m.size) == (3, 2, -1, 2)


def test_full_map_refuses_every_key_and_ends_at_the_last_put():
    # buildOffsetMapForSegment checks map.size < maxDesiredMapSize before every put, known keys too
    m = OffsetMap(240)
    assert m.put_all([bytes([i]) for i in range(12)], list(range(12))) == 9
    assert m.latest_offset == 8  # SkimpyOffsetMap.put sets lastOffset
    for key in (b"\x00", b"new"):
        with pytest.raises(MapFull):
            m.put(key, 100)
    assert m.get(b"\x00") == 0 and m.latest_offset == 8


def test_moves_to_kafkas_slot_layout_past_the_budget():
    m = OffsetMap(24 * 1000)  # 24000 bytes: the dict outgrows it after ~190 keys
    for i in range(600):
        m.put(b"key-%04d" % i, i)
    assert m.compact_layout and m.size == 600
    m.put(b"key-0001", 1000)
    assert m.get(b"key-0001") == 1000 and m.get(b"key-0599") == 599 and m.get(b"nope") == -1
    assert sorted(m.offsets())[-1] == 1000 and len(list(m.offsets())) == 600
