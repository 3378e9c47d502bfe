"""The cleaner's offset map: key -> last offset, bounded as Kafka's SkimpyOffsetMap
(SkimpyOffsetMap.put, LogCleaner's Cleaner.buildOffsetMap).

Kafka's map is an open-addressing table of `MD5(key) 16 B | offset 8 B` slots in a buffer of
`log.cleaner.dedupe.buffer.size` bytes; a cleaning round stops before putting any keyed record
(a new key or a known one) once `size >= int(slots * 0.9)` (buildOffsetMapForSegment). What decides
the output is only *which keys fit*: MD5 collisions
aside, the map is an exact key -> last offset mapping. So:

- `capacity` and the count of distinct keys are exactly Kafka's (a key put twice counts once);
- while the keys fit in the memory budget, they live in a plain dict (a C hash table: ~20x
  faster than anything written in Python over a bytearray);
- when the dict's estimated footprint reaches the budget (the same number of bytes Kafka's
  buffer has), every key moves into `_SlotTable`, Kafka's own layout in one bytearray of
  `slots * 24` bytes, and the map continues there. Peak memory is therefore at most about twice
  the dedupe buffer (during the move), whatever the number or size of the keys.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence

SLOT_SIZE = 24  # MD5 16 B + offset int64
HASH_SIZE = 16
DEFAULT_DEDUPE_BUFFER = 128 * 1024 * 1024
DEFAULT_LOAD_FACTOR = 0.9
# CPython cost of one dict entry beyond the key's own bytes: the bytes object header (33, rounded),
# the int offset (32), and the dict's slot and index share (~48 at the worst load).
_DICT_ENTRY_OVERHEAD = 120

_Q = struct.Struct(">q")


class MapFull(Exception):
    """Raised by `put` once the map holds `capacity` keys, whatever the key (Kafka checks
    `map.size < maxDesiredMapSize` before every put): the round ends before this record."""


class _SlotTable:
    """SkimpyOffsetMap's layout: linear probing over `slots` slots of MD5 | offset in a bytearray.
    An all-zero digest marks a free slot (an MD5 of zero is as likely as any collision)."""

    __slots__ = ("slots", "buf", "size")

    def __init__(self, slots: int):
        self.slots = slots
        self.buf = bytearray(slots * SLOT_SIZE)
        self.size = 0

    def _find(self, digest: bytes) -> tuple[int, bool]:
        buf, slots = self.buf, self.slots
        i = int.from_bytes(digest[:4], "big") % slots
        while True:
            at = i * SLOT_SIZE
            stored = buf[at : at + HASH_SIZE]
            if stored == digest:
                return at, True
            if not any(stored):
                return at, False
            i += 1
            if i == slots:
                i = 0

    def put(self, digest: bytes, offset: int) -> bool:
        """True if the digest was new."""
        at, found = self._find(digest)
        if not found:
            self.buf[at : at + HASH_SIZE] = digest
            self.size += 1
        _Q.pack_into(self.buf, at + HASH_SIZE, offset)
        return not found

    def get(self, digest: bytes) -> int:
        at, found = self._find(digest)
        return _Q.unpack_from(self.buf, at + HASH_SIZE)[0] if found else -1

    def offsets(self) -> Iterable[int]:
        buf = self.buf
        for at in range(0, len(buf), SLOT_SIZE):
            if any(buf[at : at + HASH_SIZE]):
                yield _Q.unpack_from(buf, at + HASH_SIZE)[0]


class OffsetMap:
    """key -> last offset, with Kafka's capacity and `latestOffset`."""

    def __init__(
        self, memory: int = DEFAULT_DEDUPE_BUFFER, load_factor: float = DEFAULT_LOAD_FACTOR
    ):
        self.memory = memory
        self.slots = memory // SLOT_SIZE
        self.capacity = int(self.slots * load_factor)  # Kafka: (map.slots * loadFactor).toInt
        if not self.slots * load_factor > 1:  # Cleaner's require(...): else no round progresses
            raise ValueError(
                f"--dedupe-buffer-size {memory} holds no key (at least "
                f"{int(2 / load_factor) * SLOT_SIZE} bytes are needed)"
            )
        self.latest_offset = -1
        self._dict: dict[bytes, int] | None = {}
        self._dict_bytes = 0
        self._table: _SlotTable | None = None

    # -- size
    @property
    def size(self) -> int:
        return len(self._dict) if self._dict is not None else self._slots().size

    def __len__(self) -> int:
        return self.size

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    @property
    def compact_layout(self) -> bool:
        """True once the keys live in Kafka's slot layout (the dict outgrew the budget)."""
        return self._table is not None

    # -- writes
    def update_latest_offset(self, offset: int) -> None:
        """SkimpyOffsetMap.updateLatestOffset: set, not max (the cleaner calls it in order)."""
        self.latest_offset = offset

    def put(self, key: bytes, offset: int) -> None:
        """One keyed record; raises MapFull, before putting, once the map is full (even for a
        known key). As SkimpyOffsetMap.put, it sets `latest_offset`: a round that stops here
        ends after the last record put."""
        if self.size >= self.capacity:
            raise MapFull()
        self.latest_offset = offset
        d = self._dict
        if d is not None:
            if key not in d:
                self._dict_bytes += len(key) + _DICT_ENTRY_OVERHEAD
            d[key] = offset
            if self._dict_bytes > self.memory:
                self._to_table()
            return
        t = self._table
        assert t is not None  # the dict layout was left
        t.put(hashlib.md5(key).digest(), offset)

    def put_all(self, keys: Sequence[bytes], offsets: Sequence[int]) -> int:
        """Put records in order; returns how many were put (fewer than given once full)."""
        d = self._dict
        n = len(keys)
        if d is not None and len(d) + n <= self.capacity:
            before = len(d)
            d.update(zip(keys, offsets))  # later offsets win, as put in order
            if n:
                self.latest_offset = offsets[-1]
            added = len(d) - before
            if added:
                self._dict_bytes += added * (_DICT_ENTRY_OVERHEAD + sum(map(len, keys)) // n)
                if self._dict_bytes > self.memory:
                    self._to_table()
            return n
        for i in range(n):
            try:
                self.put(keys[i], offsets[i])
            except MapFull:
                return i
        return n

    def dict_for(self, n: int) -> dict[bytes, int] | None:
        """The dict itself when `n` more keys surely fit (dict layout, under capacity): the map
        pass then stores into it directly and reports with `added`."""
        d = self._dict
        return d if d is not None and len(d) + n <= self.capacity else None

    def added(self, new_keys: int, key_len: int) -> None:
        """After storing into `dict_for`'s dict: `new_keys` more keys of about `key_len` bytes."""
        if new_keys:
            self._dict_bytes += new_keys * (_DICT_ENTRY_OVERHEAD + key_len)
            if self._dict_bytes > self.memory:
                self._to_table()

    def merge(self, other: dict[bytes, int]) -> None:
        """Entries of a later section of the log (parallel map building): they win."""
        self.put_all(list(other), list(other.values()))

    def _to_table(self) -> None:
        assert self._dict is not None  # called in the dict layout only
        t = _SlotTable(self.slots)
        md5 = hashlib.md5
        for k, v in self._dict.items():
            t.put(md5(k).digest(), v)
        self._table, self._dict, self._dict_bytes = t, None, 0

    def _slots(self) -> _SlotTable:
        """The slot table, once the dict layout has been left (one of the two is always set)."""
        assert self._table is not None
        return self._table

    # -- reads
    def get(self, key: bytes) -> int:
        """The last offset put for `key`, or -1 (Kafka's absent value)."""
        d = self._dict
        if d is not None:
            return d.get(key, -1)
        t = self._table
        assert t is not None  # the dict layout was left
        return t.get(hashlib.md5(key).digest())

    def offsets(self) -> Iterable[int]:
        """Every stored offset: the records that survive in the dirty section."""
        return self._dict.values() if self._dict is not None else self._slots().offsets()

    def as_dict(self) -> dict[bytes, int] | None:
        """The dict itself while in dict layout (read-only use: fast lookups in hot loops)."""
        return self._dict
