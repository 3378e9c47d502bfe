"""The order a Kafka 3.3.1 broker writes the entries of a root offset checkpoint in.

Each file is written from an in-memory map, in that map's iteration order, which is a function of
the key set, the map's table size and, only between keys that hash alike, of insertion order.
The broker runs Scala 2.13 collections on Java 17 (Kafka 3.3.1 releases ship scala-library
2.13.8, the broker built here 2.13.18: their HashMap and AnyRefMap iterate alike; checked against
2.13.18 by tests/broker_order):

- recovery-point-offset-checkpoint: LogManager.checkpointRecoveryOffsetsInDir maps the dir's
  logs (a mutable.AnyRefMap typed as collection.Map) with `.map`, which is MapOps.map:
  `mutable.HashMap.from(View.Map(...))`, a table sized from the known size;
- log-start-offset-checkpoint: the same logs through `.collect` (only logs whose start is above
  their first segment's base): `mutable.HashMap.from(View.Collect(...))`, no known size, so the
  table starts at 16 and doubles; it differs from the above only below 6 entries (16 buckets, not 8);
- replication-offset-checkpoint: ReplicaManager.checkpointHighWatermarks writes a
  mutable.AnyRefMap (open addressing) filled in the order of `allPartitions`, a
  ConcurrentHashMap. This one is not a function of the keys alone: where two partitions share a
  ConcurrentHashMap bin (ordered by when the broker created them) and also compete for an
  AnyRefMap slot, the order they were created in decides (2-8% of random key sets of 3 to 1000
  partitions). So an unchanged key set keeps the file's order, and a new one assumes creation in
  the file's order, then sorted;
- cleaner-offset-checkpoint: LogCleanerManager.updateCheckpoints reads the file into an
  immutable Map (`toMap`: Map1..Map4 keep insertion order, from 5 entries a CHAMP HashMap),
  filters it, removes and adds one entry, and writes that map. (maybeTruncateCheckpoint, when a
  follower truncates a compacted log below its cleaner offset, writes a mutable.HashMap instead;
  kafkalog never does what calls it.)

Where the emulation cannot know the order (keys whose hashCodes are equal, which Map1..Map4,
the AnyRefMap's probing and ConcurrentHashMap bins order by insertion), insertion order is taken
as the caller's: the existing file's order first, then the rest sorted.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Sequence

from kafkalog_cli.formats.internal.kafka_protocol import ScalaHashOrder, java_string_hash, to_int32

TopicPartition = tuple[str, int]


class CheckpointKind(enum.Enum):
    """The four root offset checkpoints, by file name."""

    RECOVERY_POINT = "recovery-point-offset-checkpoint"
    LOG_START_OFFSET = "log-start-offset-checkpoint"
    REPLICATION_OFFSET = "replication-offset-checkpoint"
    CLEANER_OFFSET = "cleaner-offset-checkpoint"

    @classmethod
    def of_file(cls, name: str) -> CheckpointKind | None:
        return next((k for k in cls if k.value == name), None)


def topic_partition_hash(tp: TopicPartition) -> int:
    """TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode, as a Java int."""
    topic, partition = tp
    return to_int32(31 * (31 + partition) + java_string_hash(topic))


def _u32(x: int) -> int:
    return x & 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# scala.collection.mutable.HashMap (through formats.internal's ScalaHashOrder)


def hash_map_order(keys: Sequence[TopicPartition], *, known_size: bool) -> list[TopicPartition]:
    """`mutable.HashMap.from(it)` for `keys` in iteration order: with a known size the table is
    sized for it up front (`.map`), without one it starts at 16 and doubles (`.collect`)."""
    table = ScalaHashOrder()
    if known_size and keys:
        table.length = table.threshold = 0  # HashMap(cap) with cap from the size ...
        table.size_hint(len(keys))  # ... which is what sizeHint computes too
    for k in keys:
        table.put(k, topic_partition_hash(k))
    return table.keys()


# ---------------------------------------------------------------------------------------------
# scala.collection.mutable.AnyRefMap

_INDEX_MASK = 0x3FFFFFFF


def _any_ref_hash(h: int) -> int:
    """AnyRefMap.hashOf: part of the MurmurHash3 finalizer; never 0."""
    u = _u32(h)
    i = _u32((u ^ (u >> 16)) * 0x85EBCA6B)
    j = (i ^ (i >> 13)) & 0x7FFFFFFF
    return 0x41081989 if j == 0 else j


def _initial_mask(n: int) -> int:
    """AnyRefMap's mask for an initial buffer of `n`: the power of two at or above it, less one,
    at least 7."""
    if n <= 1:
        return 0x7
    return (((1 << (n - 1).bit_length()) - 1) & _INDEX_MASK) | 0x7


def _probe(slots: list, h: int, mask: int) -> int:
    e, x = h & mask, 0
    while slots[e] is not None:
        x += 1
        e = (e + 2 * (x + 1) * x - 3) & mask
    return e


def any_ref_map_order(keys: Iterable[Hashable], hash_code, initial_buffer_size: int = 16) -> list:
    """`new AnyRefMap(initialBufferSize)` then `put` each key in turn (no removals): slot order."""
    mask = _initial_mask(initial_buffer_size)
    slots: list = [None] * (mask + 1)  # (hashOf, key)
    size = 0
    for k in dict.fromkeys(keys):
        h = _any_ref_hash(hash_code(k))
        slots[_probe(slots, h, mask)] = (h, k)
        size += 1
        if size > 0.5 * mask:  # imbalanced (no vacant slots here): repack()
            m = mask
            if size >= 0.5 * mask:
                m = ((m << 1) + 1) & _INDEX_MASK
            while m > 8 and 8 * size < m:
                m >>= 1
            old, mask = slots, m
            slots = [None] * (mask + 1)
            for entry in old:
                if entry is not None:
                    slots[_probe(slots, entry[0], mask)] = entry
    return [entry[1] for entry in slots if entry is not None]


# ---------------------------------------------------------------------------------------------
# java.util.concurrent.ConcurrentHashMap (Java 17), one thread


def concurrent_hash_map_order(keys: Iterable[Hashable], hash_code) -> list:
    """`new ConcurrentHashMap()` then `put` each key in turn: the order its iterators give
    (bins in index order, a bin's list in order). A resize splits each list bin, the moved nodes
    before the bin's last run in reverse (`transfer`); a bin of 9 on a table under 64 doubles the
    table instead (`treeifyBin` -> `tryPresize`), on a larger one becomes a tree bin, which adds
    new nodes at the front of its list and splits in order."""
    table: list[list] = [[] for _ in range(16)]
    trees: set[int] = set()
    size_ctl = 12
    count = 0
    for k in dict.fromkeys(keys):
        h = _u32(hash_code(k))
        h = (h ^ (h >> 16)) & 0x7FFFFFFF  # spread
        i = h & (len(table) - 1)
        b = table[i]
        bin_count = len(b)
        if i in trees:
            b.insert(0, (h, k))
        else:
            b.append((h, k))
            if (
                bin_count >= 8 and len(table) < 64
            ):  # treeifyBin on a small table: tryPresize(n << 1)
                size = len(table) << 1
                c = _table_size_for(size + (size >> 1) + 1)
                while c > size_ctl:
                    table, trees = _transfer(table, trees)
                    size_ctl = len(table) - (len(table) >> 2)
            elif bin_count >= 8:
                trees.add(i)
        count += 1
        while count >= size_ctl:  # addCount
            table, trees = _transfer(table, trees)
            size_ctl = len(table) - (len(table) >> 2)
    return [k for b in table for _, k in b]


def _table_size_for(c: int) -> int:
    n = 1
    while n < c:
        n <<= 1
    return n


def _transfer(table: list[list], trees: set[int]) -> tuple[list[list], set[int]]:
    n = len(table)
    nxt: list[list] = [[] for _ in range(2 * n)]
    new_trees: set[int] = set()
    for i, b in enumerate(table):
        if not b:
            continue
        if i in trees:  # TreeBin: both halves keep their order
            nxt[i] = [node for node in b if not node[0] & n]
            nxt[i + n] = [node for node in b if node[0] & n]
            new_trees.update(j for j in (i, i + n) if len(nxt[j]) > 6)  # UNTREEIFY_THRESHOLD
            continue
        last_run = 0  # index of the start of the tail run with one bit
        for j in range(1, len(b)):
            if (b[j][0] & n) != (b[j - 1][0] & n):
                last_run = j
        run_high = bool(b[last_run][0] & n)
        low: list = [] if run_high else list(b[last_run:])
        high: list = list(b[last_run:]) if run_high else []
        for node in b[:last_run]:  # prepended one by one: reversed
            (high if node[0] & n else low).insert(0, node)
        nxt[i], nxt[i + n] = low, high
    return nxt, new_trees


# ---------------------------------------------------------------------------------------------
# scala.collection.immutable.Map: Map1..Map4 and the CHAMP HashMap


def _champ_improve(h: int) -> int:
    """scala.collection.Hashing.improve."""
    h = _u32(h)
    h = _u32(h + _u32(~_u32(h << 9)))
    h ^= h >> 14
    h = _u32(h + _u32(h << 4))
    return h ^ (h >> 10)


def champ_order(keys: Sequence[Hashable], hash_code) -> list:
    """immutable.HashMap's iteration order: at each level (5 hash bits, lowest first) the keys
    alone in their branch, by branch, then each shared branch in turn, depth first; keys with an
    equal hash (a collision node) in insertion order."""
    return _champ(list(dict.fromkeys(keys)), {k: _champ_improve(hash_code(k)) for k in keys}, 0)


def _champ(keys: list, improved: dict, shift: int) -> list:
    if shift >= 32:
        return keys
    branches: dict[int, list] = {}
    for k in keys:
        branches.setdefault((improved[k] >> shift) & 0x1F, []).append(k)
    alone = [b[0] for _, b in sorted(branches.items()) if len(b) == 1]
    shared = [b for _, b in sorted(branches.items()) if len(b) > 1]
    return alone + [k for b in shared for k in _champ(b, improved, shift + 5)]


def immutable_map_order(
    existing: Sequence[Hashable], kept: set, added: Sequence[Hashable], hash_code
) -> list:
    """`existing.toMap.filter(kept) + added...`: Map1..Map4 keep insertion order (an update keeps
    a key's place), a map that ever held 5 keys is a HashMap for good."""
    read = list(dict.fromkeys(existing))
    if len(read) > 4:
        return champ_order(
            [k for k in read if k in kept] + [k for k in added if k not in read], hash_code
        )
    small = [k for k in read if k in kept]
    for k in added:
        if k in small:
            continue
        if len(small) == 4:
            return champ_order(small + [a for a in added if a not in small], hash_code)
        small.append(k)
    return small


# ---------------------------------------------------------------------------------------------


def broker_order(
    kind: CheckpointKind, keys: Iterable[TopicPartition], existing: Iterable[TopicPartition] = ()
) -> list[TopicPartition]:
    """The order the broker writes `keys` to a checkpoint of `kind` in. `existing` is the file's
    current order: what the cleaner checkpoint's rewrite starts from, and the insertion order
    assumed between keys the hashes cannot order."""
    keys = list(dict.fromkeys(keys))
    wanted = set(keys)
    before = [k for k in dict.fromkeys(existing) if k in wanted]
    inserted = before + sorted(wanted.difference(before))
    if kind is CheckpointKind.RECOVERY_POINT:
        return hash_map_order(inserted, known_size=True)
    if kind is CheckpointKind.LOG_START_OFFSET:
        return hash_map_order(inserted, known_size=False)
    if kind is CheckpointKind.REPLICATION_OFFSET:
        if len(before) == len(keys):
            # the same partitions: the broker refills both maps from the same ConcurrentHashMap,
            # so the order stays; the emulation alone can miss it (see below)
            return before
        partitions = concurrent_hash_map_order(inserted, topic_partition_hash)
        return any_ref_map_order(partitions, topic_partition_hash)
    return immutable_map_order(
        list(existing), wanted, sorted(wanted.difference(before)), topic_partition_hash
    )
