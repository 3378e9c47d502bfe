"""`kafkalog erase`: chosen records removed from a partition's segments, in place, as Kafka's log
cleaner rewrites a batch (MemoryRecords.filterTo through ops.cleaner: one home for the rewrite).

A record is kept unless the selection matches it. Every other record keeps its offset, timestamp,
key, value and headers; a rewritten batch keeps its base offset, last offset delta, producer id
and epoch, base sequence, partition leader epoch, codec (recompressed) and attributes, so offsets
leave gaps as compaction leaves them. A batch left without records is removed, except where its
header carries state the broker needs (BatchRetention.RETAIN_EMPTY, kept header-only): a
producer's last data batch (the producer snapshot's last sequence and offset), the first batch
of a transaction still open at the log end (its first offset: the last stable offset), and the
log's last batch (the log end offset). Control batches are never touched; v0/v1 wrappers are
rebuilt with their codec. So the producer snapshots and `.txnindex` files stay valid: erase keeps
them as they are.

Two passes: `plan` reads every segment once (the records the selection matches, each with the
SHA-256 of its key, value and headers; every producer's last batch: `matched_batches`, which
decodes only the batches a byte search for the selection's keys cannot rule out), then `run`
rewrites only the
segments holding matches, each into `<base>.log.cleaned` with rebuilt `.index` and `.timeindex`
(ops.cleaner.CleanedSegment) and its `.txnindex` as it was, swapped in by Kafka's replace
protocol (LocalLog.replaceSegments: `.cleaned` -> `.swap`, old files unlinked, `.swap` -> final).
A kill at any instant leaves the old or the new segment; the rerun finishes the swap first, as
the broker's LogLoader does, then finds nothing left to erase. Erase keeps no copy of what it
removes: the one command whose removed data does not go to the quarantine.

The record's SHA-256 (the report's proof, without the data): over the record's bytes from its
key length on, as a v2 record stores them: varint key length (-1: null), key, varint value
length (-1: null), value, varint header count, then each header's varint key length, key,
varint value length, value (zigzag varints, as DefaultRecord.writeTo). A v0/v1 record is hashed
as the same encoding of its key and value with no header.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.errors import CorruptRecordError, KafkalogError
from kafkalog_cli.formats.byte_loops import find_bytes, pass_plain_batches
from kafkalog_cli.formats.record_spans import RecordSpan, scan_spans
from kafkalog_cli.formats.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    Record,
    RecordBatch,
)
from kafkalog_cli.formats.v2_region import Declined, header_pairs, records_region
from kafkalog_cli.formats.varint import read_varlong, write_varint
from kafkalog_cli.ops.cleaner import (
    CleanedSegment,
    FilterResult,
    mapped_batches,
    original_batch,
    retained_empty,
    write_legacy,
    write_retained,
)
from kafkalog_cli.ops.plan import Action, ActionKind, Plan, run_report
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.live_files import map_file, populate_pages, release_pages, unmap
from kafkalog_cli.storage.names import offset_from_name, parse_partition_dir
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.quarantine import find_folders
from kafkalog_cli.storage.segment import Segment

# Topic.isInternal's topics (3.9+: __share_group_state) and the KRaft metadata log: never erased
INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
)
_NULL = write_varint(-1)


@dataclass(frozen=True)
class Selection:
    """Which records go. Values of one test are OR'ed, the tests given AND'ed; a null key (or
    value) passes no key (value) test. `headers`: (name, value), value None: any value."""

    keys: tuple[bytes, ...] = ()
    key_prefixes: tuple[bytes, ...] = ()
    key_regexes: tuple[re.Pattern[bytes], ...] = ()
    headers: tuple[tuple[bytes, bytes | None], ...] = ()
    value_regexes: tuple[re.Pattern[bytes], ...] = ()
    offsets: tuple[tuple[int, int], ...] = ()  # inclusive ranges

    @property
    def empty(self) -> bool:
        return not any(
            (
                self.keys,
                self.key_prefixes,
                self.key_regexes,
                self.headers,
                self.value_regexes,
                self.offsets,
            )
        )

    @property
    def needs_tail(self) -> bool:
        """A test on values or headers: the record's bytes past its key are read."""
        return bool(self.headers or self.value_regexes)

    @property
    def literals(self) -> tuple[bytes, ...] | None:
        """Byte strings one of which lies, whole, among the bytes of every record the selection
        matches, as a v0, v1 or v2 record stores them: its exact keys, else its key prefixes,
        else its header names (of the tests given, the one whose shortest string is longest:
        the rarest in a search). None: no such test (regexes and offsets alone)."""
        groups = [g for g in (self.keys, self.key_prefixes, self.header_names) if g]
        if not groups:
            return None
        return max(groups, key=lambda g: min(map(len, g)))

    @property
    def header_names(self) -> tuple[bytes, ...]:
        return tuple(n for n, _ in self.headers)

    def may_hold(self, data, start: int, end: int) -> bool:
        """False when the records region cannot hold a match: an exact key, key prefix or header
        name given and none of them among its bytes (a substring search, no decoding)."""
        if not isinstance(data, (bytes, bytearray)):
            data, start, end = bytes(data[start:end]), 0, end - start
        for group in (self.keys, self.key_prefixes, self.header_names):
            if group and not any(data.find(v, start, end) >= 0 for v in group):
                return False
        return True

    def offset_range_may_match(self, first: int, last: int) -> bool:
        return not self.offsets or any(a <= last and first <= b for a, b in self.offsets)

    def matches(
        self,
        offset: int,
        key: bytes | None,
        value: bytes | None = None,
        headers: list[tuple[bytes, bytes | None]] | None = None,
    ) -> bool:
        if self.offsets and not any(a <= offset <= b for a, b in self.offsets):
            return False
        if self.keys or self.key_prefixes or self.key_regexes:
            if key is None:
                return False
            if self.keys and key not in self.keys:
                return False
            if self.key_prefixes and not any(key.startswith(p) for p in self.key_prefixes):
                return False
            if self.key_regexes and not any(r.search(key) for r in self.key_regexes):
                return False
        if self.value_regexes and (
            value is None or not any(r.search(value) for r in self.value_regexes)
        ):
            return False
        if self.headers:
            have = headers or []
            if not any(
                any(k == name and (want is None or v == want) for k, v in have)
                for name, want in self.headers
            ):
                return False
        return True

    def to_dict(self) -> dict:
        """The selection as the report states it: keys, key prefixes and header values as their
        SHA-256 (a report holds none of the data it erased); names, patterns and offsets as given."""

        def sha(v: bytes) -> str:
            return hashlib.sha256(v).hexdigest()

        out: dict = {}
        if self.keys:
            out["key_sha256"] = [sha(k) for k in self.keys]
        if self.key_prefixes:
            out["key_prefix_sha256"] = [sha(k) for k in self.key_prefixes]
        if self.key_regexes:
            out["key_regex"] = [r.pattern.decode("utf-8", "replace") for r in self.key_regexes]
        if self.headers:
            out["header"] = [
                {
                    "name": n.decode("utf-8", "replace"),
                    "value_sha256": None if v is None else sha(v),
                }
                for n, v in self.headers
            ]
        if self.value_regexes:
            out["value_regex"] = [r.pattern.decode("utf-8", "replace") for r in self.value_regexes]
        if self.offsets:
            out["offsets"] = [list(r) for r in self.offsets]
        return out


@dataclass
class EraseOptions:
    topic: str
    selection: Selection
    partitions: tuple[int, ...] = ()
    tombstone: bool = False  # the key's last erased record becomes a tombstone
    local_only: bool = False  # segments uploaded to the remote tier: erase the local copies only
    overwrite: bool = False  # the old .log overwritten with zeros in place before its unlink
    resolver: ConfigResolver | None = None


# ------------------------------------------------------------------------------ one record's bytes
def _skip_varint(data, p: int) -> int:
    while data[p] & 0x80:
        p += 1
    return p + 1


def _tail(data, sp: RecordSpan, full: bool):
    """(where the key length starts, value, headers) of a v2 record; value and headers only
    when `full`."""
    p = _skip_varint(data, sp.rest_start)  # offsetDelta
    tail = p
    if not full:
        return tail, None, None
    kl, p = read_varlong(data, p)
    p += max(kl, 0)
    vl, p = read_varlong(data, p)
    value = bytes(data[p : p + vl]) if vl >= 0 else None
    p += max(vl, 0)
    headers, _ = header_pairs(data, p, sp.end)
    return tail, value, headers


def record_sha256_v2(data, tail: int, end: int) -> str:
    return hashlib.sha256(data[tail:end]).hexdigest()


def record_sha256_legacy(key: bytes | None, value: bytes | None) -> str:
    """The v2 encoding of a v0/v1 record's key and value, no header (module docstring)."""
    h = hashlib.sha256()
    for part in (key, value):
        if part is None:
            h.update(_NULL)
        else:
            h.update(write_varint(len(part)))
            h.update(part)
    h.update(write_varint(0))
    return h.hexdigest()


def tombstone_body(offset_delta: int, key: bytes) -> bytes:
    """A v2 record's bytes from its offset delta on: the key, a null value, no header."""
    return write_varint(offset_delta) + write_varint(len(key)) + key + _NULL + write_varint(0)


# ------------------------------------------------------------------------------ the scan
@dataclass
class SegmentMatches:
    """What one segment loses: {offset: sha256} and the offsets that become tombstones."""

    segment: Segment
    erased: dict[int, str] = field(default_factory=dict)
    tombstones: dict[int, bytes] = field(default_factory=dict)  # offset -> key


@dataclass
class ProducerBatches:
    """The batches an empty rewrite must keep (module docstring), from every batch walked: each
    producer's last data batch, the first batch of its open transaction, and the log's last."""

    last_data: dict[int, int] = field(default_factory=dict)  # producer id -> last offset
    open_txn: dict[int, int] = field(default_factory=dict)  # producer id -> first batch's last
    last_batch: tuple[int, int, bool] | None = None  # (last offset, magic, every record erased)

    def note(self, b: RecordBatch, hits: list[Hit], count: int) -> None:
        """One batch walked, with the records erased of it and its record count (the same rule
        as formats.byte_loops.pass_plain_batches, which notes the batches it passes by)."""
        if b.magic >= 2 and b.producer_id >= 0:
            if b.is_control:
                self.open_txn.pop(b.producer_id, None)
            else:
                self.last_data[b.producer_id] = b.last_offset
                if b.is_transactional:
                    self.open_txn.setdefault(b.producer_id, b.last_offset)
        self.last_batch = (b.last_offset, b.magic, bool(hits) and len(hits) == count)

    def passed(self, last_offset: int) -> None:
        """A run of batches pass_plain_batches walked (noting their producers itself): v2, none
        with a record erased; the last one's last offset."""
        self.last_batch = (last_offset, 2, False)

    def retain_empty(self) -> set[int]:
        """The last offsets of the batches kept header-only if every record of them goes."""
        kept = set(self.last_data.values()) | set(self.open_txn.values())
        if self.last_batch is not None:
            kept.add(self.last_batch[0])
        return kept


@dataclass
class PartitionScan:
    matches: list[SegmentMatches] = field(default_factory=list)
    retain_empty: set[int] = field(default_factory=set)  # last offsets of batches kept empty
    last_batch: tuple[int, int, bool] | None = None  # (last offset, magic, every record erased)

    @property
    def erased(self) -> int:
        return sum(len(m.erased) for m in self.matches)


def _decode_error(b: RecordBatch, path: Path, pos: int) -> KafkalogError:
    try:
        b.records()
    except KafkalogError as e:
        return e.located(path=str(path), position=pos + b.position)
    return CorruptRecordError("invalid record structure", path=str(path), position=pos + b.position)


def scan_partition(segments: list[Segment], sel: Selection, tombstone: bool) -> PartitionScan:
    """Every segment read once: the records `sel` matches, and the batches an empty rewrite
    must keep (module docstring). A batch that does not decode is corrupt input (exit 3): erase
    cannot tell whether it holds a record to erase."""
    scan = PartitionScan()
    seen = ProducerBatches()
    last_of_key: dict[bytes, tuple[SegmentMatches, int]] = {}
    for seg in segments:
        m = SegmentMatches(seg)
        with seg.mapped() as buf:
            for _b, hits, _count in matched_batches(buf, seg.source_path, sel, seen):
                for offset, sha, key in hits:
                    m.erased[offset] = sha
                    if key is not None:
                        last_of_key[key] = (m, offset)
        if m.erased:
            scan.matches.append(m)
    if tombstone:
        for key, (m, offset) in last_of_key.items():
            m.tombstones[offset] = key
    scan.retain_empty = seen.retain_empty()
    scan.last_batch = seen.last_batch
    return scan


Hit = tuple[int, str, "bytes | None"]  # offset, sha256, key


# how far the search runs ahead of the walk, and how often the walked pages of a map go: a scan
# of a 1 GiB segment holds two windows of it, not the whole
_WINDOW = 64 << 20


class _Occurrences:
    """Where the selection's literals occur in a mapped file, found by a search forward over the
    next _WINDOW bytes at a time (formats.byte_loops.find_bytes): over a file without them, a
    search per window at the C library's speed, instead of one per batch."""

    def __init__(self, buf, literals: tuple[bytes, ...]):
        self.buf, self.literals = buf, literals
        self.at = [-1] * len(literals)  # each one's first place found (-1: none up to `to`)
        self.to = [0] * len(literals)  # searched up to here (the places a match can start)
        self.none_before = 0  # none starts from the last `start` asked up to here

    def within(self, start: int, end: int) -> bool:
        """Whether one of the literals lies wholly within buf[start:end); `start` never goes
        back from one call to the next."""
        if end <= self.none_before:
            return False
        found = False
        size = len(self.buf)
        for i, lit in enumerate(self.literals):
            at = self.at[i]
            if at < start and self.to[i] < end:  # the next place not known: search on
                lo = max(self.to[i], start)
                stop = min(size, max(end, lo + _WINDOW))
                at = self.at[i] = find_bytes(self.buf, lit, lo, stop + len(lit) - 1)
                self.to[i] = stop if at == -1 else at + 1
            if start <= at and at + len(lit) <= end:
                found = True
        self.none_before = min(
            at if at >= start else to for at, to in zip(self.at, self.to, strict=True)
        )
        return found


def matched_batches(
    buf, path: Path, sel: Selection, seen: ProducerBatches | None = None
) -> Iterator[tuple[RecordBatch, list[Hit], int]]:
    """The batches of a mapped log file that may hold a record `sel` matches, each with the
    records matched in it and its record count (scan_batch); every batch walked, yielded or
    not, is noted in `seen`. An uncompressed batch (v2, or a v0/v1 message) holds its records'
    keys and header names among its own bytes: where the search for the selection's literals
    found none, the v2 batches are passed by in the compiled walk (pass_plain_batches) and the
    others yielded undecoded, their count unread (0). Compressed ones are decompressed and
    searched batch by batch; a selection without literals (regexes, offsets) decodes every
    batch its offsets allow."""
    seen = ProducerBatches() if seen is None else seen
    literals = sel.literals
    found = None if literals is None else _Occurrences(buf, literals)
    end = len(buf)
    populate_pages(buf, 0, _WINDOW)
    pos = walked = 0
    batches = mapped_batches(buf, path)
    while True:
        if pos - walked >= _WINDOW:  # the walked pages go, the next window comes in
            release_pages(buf, walked, pos)
            populate_pages(buf, pos, pos + _WINDOW)
            walked = pos
        if found is not None and found.none_before > pos:
            stop = min(found.none_before, walked + _WINDOW)
            passed, last = pass_plain_batches(buf, pos, end, stop, seen.last_data, seen.open_txn)
            if last is not None:
                seen.passed(last)
                pos = passed
                batches = mapped_batches(buf, path, pos)
                continue
        b = next(batches, None)
        if b is None:
            return
        pos = b.position + b.size
        if found is not None and not b.attributes & ATTR_COMPRESSION_MASK:
            if not found.within(b.position, pos):
                seen.note(b, [], 0)
                yield b, [], 0
                continue
        hits, count = scan_batch(b, sel, path, 0)
        seen.note(b, hits, count)
        yield b, hits, count


def scan_batch(b: RecordBatch, sel: Selection, path: Path, pos: int) -> tuple[list[Hit], int]:
    """The records of one batch `sel` matches, and how many records it has (control batches:
    none). `pos`: where the batch's chunk starts in `path`, for the error's position."""
    if b.magic >= 2:
        if b.is_control or b.records_count == 0:
            return [], 0
        if not sel.offset_range_may_match(b.base_offset_field, b.last_offset):
            return [], b.records_count
        try:
            data, s, e = records_region(b)
        except KafkalogError as err:
            raise err.located(path=str(path), position=pos + b.position) from None
        if not sel.may_hold(data, s, e):
            return [], b.records_count
        hits: list[Hit] = []
        try:
            spans = scan_spans(data, s, e, b.records_count, b.base_offset_field, b.base_timestamp)
            for sp in spans:
                tail, value, headers = _tail(data, sp, sel.needs_tail)
                if sel.matches(sp.offset, sp.key, value, headers):
                    hits.append((sp.offset, record_sha256_v2(data, tail, sp.end), sp.key))
        except (Declined, IndexError, KafkalogError):
            raise _decode_error(b, path, pos) from None
        return hits, len(spans)
    try:
        recs = b.records()
    except KafkalogError as err:
        raise err.located(path=str(path), position=pos + b.position) from None
    hits = [
        (r.offset, record_sha256_legacy(r.key, r.value), r.key)
        for r in recs
        if sel.matches(r.offset, r.key, r.value, [])
    ]
    return hits, len(recs)


# ------------------------------------------------------------------------------ the rewrite
@dataclass
class _Rewrite:
    erased: dict[int, str]
    tombstones: dict[int, bytes]
    retain_empty: set[int]
    offsets: list[int]  # sorted erased offsets

    def touches(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.offsets, first)
        return i < len(self.offsets) and self.offsets[i] <= last


def _erase_batch(rw: _Rewrite, b: RecordBatch, res: FilterResult, path: Path, pos: int):
    """filterTo with erase's retention: the batch as it is unless it holds an erased record."""
    if b.magic >= 2 and (b.is_control or not rw.touches(b.base_offset_field, b.last_offset)):
        return original_batch(b, res)
    recs = b.records() if b.magic < 2 else []
    if b.magic < 2 and not any(r.offset in rw.erased for r in recs):
        return original_batch(b, res)
    if not b.is_valid():  # never give a damaged batch a new CRC
        raise CorruptRecordError(
            f"batch CRC mismatch in a batch holding records to erase (offsets "
            f"{b.base_offset}..{b.last_offset}); run `kafkalog repair` or `kafkalog recover` first",
            path=str(path),
            position=pos + b.position,
        )
    if b.magic < 2:
        kept: list[Record] = []
        for r in recs:
            if r.offset not in rw.erased:
                kept.append(r)
            elif r.offset in rw.tombstones:
                kept.append(dataclasses.replace(r, value=None))
        if not kept:
            return None
        return write_legacy(b, kept, len(recs), res, rewrite=True)
    try:
        data, s, e = records_region(b)
        spans = scan_spans(data, s, e, b.records_count, b.base_offset_field, b.base_timestamp)
    except (Declined, KafkalogError):
        raise _decode_error(b, path, pos) from None
    if b.attributes & ATTR_TIMESTAMP_TYPE:  # LOG_APPEND_TIME: every record's is the batch's
        for sp in spans:
            sp.timestamp = b.max_timestamp
    kept_spans = [sp for sp in spans if sp.offset not in rw.erased or sp.offset in rw.tombstones]
    if any(sp.offset in rw.tombstones for sp in kept_spans):
        # the tombstones' bytes appended to the region, their spans pointing there
        region = bytearray(data[s:e])
        base = b.base_offset_field
        for sp in kept_spans:
            if sp.offset in rw.tombstones:
                body = tombstone_body(sp.offset - base, rw.tombstones[sp.offset])
                start = len(region) + s
                region += body
                sp.rest_start, sp.end = start, start + len(body)
        data = bytes(data[:s]) + bytes(region) if s else bytes(region)
    if kept_spans:  # never the original batch (count -1): a record of it is erased
        return write_retained(b, kept_spans, data, -1, res)
    if b.last_offset in rw.retain_empty:
        return retained_empty(b, res)
    return None


# LogSegment.largestTimestamp of a segment erase leaves without a record: its time index's one
# entry. Without it Kafka takes the file's mtime, and ListOffsets by timestamp
# (UnifiedLog.fetchOffsetByTimestamp: the first segment whose largest timestamp reaches the
# target) would stop in it and answer no offset for every later record.
EMPTIED_SEGMENT_TIMESTAMP = 0


class ErasedSegment(CleanedSegment):
    """The cleaner's `.cleaned` segment, as erase writes it: its `.txnindex` the old one's bytes
    (no offset moves, no control batch goes), and, left without a record, a time index whose one
    entry (EMPTIED_SEGMENT_TIMESTAMP, its base offset) makes ListOffsets by time pass it by."""

    def __init__(self, seg: Segment, index_interval_bytes: int, max_index_bytes: int):
        super().__init__(seg.directory, seg.base_offset, index_interval_bytes, max_index_bytes)
        self.txn_index = files.read_bytes_if_exists(seg.file(names.TXN_INDEX_SUFFIX))

    def index_files(self) -> list[tuple[str, bytes]]:
        out = []
        for suffix, data in super().index_files():
            if suffix == names.TIME_INDEX_SUFFIX and self.size == 0:
                data = _TIME_ENTRY.pack(EMPTIED_SEGMENT_TIMESTAMP, 0)
            out.append((suffix, data))
        if self.txn_index is not None:
            out.append((names.TXN_INDEX_SUFFIX, self.txn_index))
        return out


_TIME_ENTRY = struct.Struct(">qi")  # TimeIndex: timestamp, relative offset


def rewrite_segment(
    fsops: FsOps | None,
    m: SegmentMatches,
    scan: PartitionScan,
    index_interval_bytes: int,
    max_index_bytes: int,
) -> list[Path]:
    """The segment without its erased records as `.cleaned` files (log, rebuilt .index and
    .timeindex, its .txnindex as it was), the segment's mtime kept; without `fsops` only
    counted. Returns the files written."""
    seg = m.segment
    dest = ErasedSegment(seg, index_interval_bytes, max_index_bytes)
    rw = _Rewrite(m.erased, m.tombstones, scan.retain_empty, sorted(m.erased))

    def fill() -> None:
        from kafkalog_cli.ops.cleaner import filter_segment_into

        filter_segment_into(
            seg, dest, lambda b, res, path, pos: _erase_batch(rw, b, res, path, pos)
        )

    if fsops is None:
        fill()
        dest.finish()
        return []
    return dest.write(fsops, fill, seg.last_modified_ms * 1_000_000)


# ------------------------------------------------------------------------------ plan and run
def _ranges(offsets: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for o in offsets:
        if out and out[-1][1] + 1 == o:
            out[-1][1] = o
        else:
            out.append([o, o])
    return out


def plan(log_dir: Path, partition_dirs: list[Path], opts: EraseOptions) -> Plan:
    """What erase would remove from each partition dir (read only)."""
    return _run(Path(log_dir), partition_dirs, opts, None)[0]


def run(
    log_dir: Path, partition_dirs: list[Path], opts: EraseOptions, fsops: FsOps
) -> tuple[Plan, dict]:
    """Plan and erase, partition by partition, under the caller's lock."""
    p, changed = _run(Path(log_dir), partition_dirs, opts, fsops)
    report = run_report(
        "erase",
        p.log_dir,
        fsops,
        changed=changed,
        findings=[f.to_dict() for f in p.findings],
        partitions=p.partitions,
    )
    report["quarantine"] = None  # erase keeps no copy
    return p, report


def _run(log_dir: Path, partition_dirs: list[Path], opts: EraseOptions, fsops: FsOps | None):
    p = Plan("erase", log_dir)
    changed: list[dict] = []
    resolver = opts.resolver or ConfigResolver.of_log_dir(log_dir)
    folders = _quarantine_folders(log_dir)
    for d in map(Path, partition_dirs):
        tp = parse_partition_dir(d.name)
        if tp is None or tp.topic != opts.topic:
            continue
        name = d.name
        summary: dict = {"partition": name, "selection": opts.selection.to_dict()}
        p.partitions[name] = summary
        if tp.topic in INTERNAL_TOPICS:
            _refuse(summary, f"{name}: refused: {tp.topic} is an internal topic of Kafka's")
            continue
        part = Partition.open(d)
        if fsops is not None:
            if part.interrupted_rewrite:
                from kafkalog_cli.ops.compact import finish_interrupted_rewrite

                finish_interrupted_rewrite(d, fsops, p)
                part = Partition.open(d)
            segments = part.segments
        else:
            segments = _as_finished(part, p)
        cfg = resolver.for_topic(tp.topic)
        remote = _remote_copies(part, cfg, resolver)
        if remote and not opts.local_only:
            _refuse(
                summary,
                f"{name}: refused: {remote}; erase cannot reach the remote tier: give "
                f"--local-only to erase the local copies only",
            )
            continue
        scan = scan_partition(segments, opts.selection, opts.tombstone)
        last = scan.last_batch
        if last is not None and last[1] < 2 and last[2] and not opts.tombstone:
            _refuse(
                summary,
                f"{name}: refused: every record of the log's last message (offset {last[0]}, "
                f"message format v{last[1]}) is selected: removing it would lower the log end "
                f"offset, and a v0/v1 message cannot be kept empty",
            )
            continue
        erased = sorted(o for m in scan.matches for o in m.erased)
        tombstones = sorted(o for m in scan.matches for o in m.tombstones)
        summary.update(
            status=("erased" if fsops is not None else "to erase") if erased else "nothing matched",
            records_erased=len(erased),
            erased_offsets=_ranges(erased),
            erased_records=[
                {"offset": o, "sha256": h, **({"tombstone": True} if o in m.tombstones else {})}
                for m in scan.matches
                for o, h in sorted(m.erased.items())
            ],
            tombstones=len(tombstones),
            segments_rewritten=[str(m.segment.log_path) for m in scan.matches],
            consumers=_consumer_effect(cfg, opts.tombstone, bool(erased)),
            other_copies=_other_copies(
                folders,
                name,
                opts.selection,
                remote,
                [line for m in scan.matches for line in _hard_links(m)],
            ),
        )
        for m in scan.matches:
            why = (
                f"erase: {len(m.erased)} record(s) at offsets "
                f"{', '.join(f'{a}..{z}' if a != z else str(a) for a, z in _ranges(sorted(m.erased)))}"
                f" removed in place; no copy kept"
            )
            action = p.add(Action(ActionKind.REWRITE_SEGMENT, m.segment.log_path, why, name))
            if fsops is None:
                continue
            fsops.about_to_change()
            cleaned = rewrite_segment(
                fsops, m, scan, cfg.index_interval_bytes, cfg.segment_index_bytes
            )
            old = [
                (
                    m.segment.file(suffix),
                    "erase: replaced by its rewrite without the erased records",
                )
                for suffix in names.SEGMENT_SUFFIXES
            ]
            scrub = [m.segment.log_path] if opts.overwrite else []
            for why_not in fsops.replace_segments(cleaned, old, overwrite=scrub):
                p.note(name, why_not, m.segment.log_path)
            changed.append(action.to_dict())
    return p, changed


def _as_finished(part: Partition, p: Plan) -> list[Segment]:
    """A plan's view of the partition's segments: a killed run's `.swap` files as the real run
    will find them once it has finished them (LogLoader's swap pass, whose steps join the plan),
    each rewritten segment read from its `.log.swap`."""
    if not part.interrupted_rewrite:
        return part.segments
    from kafkalog_cli.ops import recover

    d = part.directory
    finish = Plan("erase", p.log_dir)
    if not recover.finish_interrupted_rewrites(finish, part):
        return part.segments
    p.actions += finish.actions
    p.note(
        d.name,
        "an interrupted rewrite is left: the run finishes it first as the broker's LogLoader "
        "does, and reads the segments as they are then",
        d,
    )
    swaps = {  # the valid ones, which the finish renames into place
        base: a.path
        for a in finish.actions
        if a.kind is ActionKind.RENAME
        and a.path.name.endswith(names.LOG_SUFFIX + names.SWAP_SUFFIX)
        and (base := offset_from_name(a.path.name)) is not None
    }
    gone = {a.path for a in finish.actions if a.kind is ActionKind.DELETE}
    bases = sorted({s.base_offset for s in part.segments if s.log_path not in gone} | set(swaps))
    return [Segment(d, b, read_from=swaps.get(b)) for b in bases]


def _refuse(summary: dict, line: str) -> None:
    summary.update(status="error", detail=line, exit_code=2)


def _remote_copies(part: Partition, cfg, resolver: ConfigResolver) -> str | None:
    """What the remote tier holds of the partition, in words, or None: nothing uploaded."""
    from kafkalog_cli.ops.tiered import remote_log

    try:
        rl = remote_log(part, cfg, resolver)
    except KafkalogError:
        return None
    if rl.enabled is False:
        return None
    up = rl.upload
    if up.known and up.segments == 0:
        return None
    if up.known:
        return (
            f"{up.segments} segment(s) of it are in the remote tier, offsets "
            f"{up.remote_log_start_offset}..{up.highest_offset_in_remote_storage} ({up.source})"
        )
    return f"it may have segments in the remote tier ({rl.why}); what was uploaded is unknown ({up.source})"


def _consumer_effect(cfg, tombstone: bool, erased: bool) -> str:
    gaps = (
        "consumers see gaps in the offsets, as compaction leaves them; a consumer positioned "
        "past the erased offsets is unaffected, one before them skips them"
    )
    if not erased:
        return "nothing erased"
    if cfg.compact and not tombstone:
        return (
            gaps + "; on this compacted topic consumers (state stores) are not told a key is gone: "
            "a store that read an erased record keeps it (--tombstone writes a tombstone in its place)"
        )
    if tombstone:
        return gaps + "; each key's last erased record is a tombstone, which state stores apply"
    return gaps


def _quarantine_folders(log_dir: Path) -> list[Path]:
    """Every quarantine folder of the log dir: its default quarantine, and those the registry
    holds for it wherever --quarantine put them."""
    try:
        return find_folders(log_dir)
    except KafkalogError:
        return []


def _other_copies(
    folders: list[Path], name: str, sel: Selection, remote: str | None, linked
) -> dict:
    """The copies erase does not change that may hold the erased bytes: earlier runs' quarantine
    folders that do (searched; a kept file that cannot be read is named as one that may), the
    remote tier, other hard links to the segments rewritten, the replicas on log dirs not given."""
    holding = []
    for folder in folders:
        offsets, unread = _search_folder(folder / name, sel)
        if offsets or unread:
            holding.append(
                {
                    "folder": str(folder),
                    "offsets": _ranges(sorted(offsets)),
                    **({"not_searched": unread} if unread else {}),
                    "prune": f"kafkalog quarantine prune {folder} --older-than 0s",
                }
            )
    return {
        "quarantine_folders": holding,
        "remote_tier": remote,
        "hard_links": linked,
        "replicas": f"replicas of {name} on log dirs not given (other brokers) are not erased: "
        f"run erase on each broker's log dirs holding it",
    }


def _search_folder(d: Path, sel: Selection) -> tuple[set[int], list[str]]:
    """Offsets of records `sel` matches in the segment bytes a quarantine folder kept of the
    partition (whole `.log` files and cut ranges of them), read chunk by chunk; and the kept
    files that could not be read to their end, with why (they may hold more)."""
    found: set[int] = set()
    unread: list[str] = []
    if not d.is_dir():
        return found, unread
    for f in sorted(d.iterdir()):
        if names.LOG_SUFFIX not in f.name:
            continue
        buf = None
        try:
            buf = map_file(f)
            for _b, hits, _n in matched_batches(buf, f, sel):
                found.update(o for o, _, _ in hits)
        except (KafkalogError, OSError) as e:
            unread.append(f"{f}: {getattr(e, 'message', None) or e}")
        finally:
            unmap(buf)
    return found, unread


def _hard_links(m: SegmentMatches) -> list[str]:
    """A rewritten segment's other names: unlinking it here leaves its bytes to them."""
    try:
        n = os.lstat(m.segment.source_path).st_nlink
    except OSError:
        return []
    if n <= 1:
        return []
    return [
        f"{m.segment.log_path}: {n - 1} other name(s) link to its bytes (a backup made by hard "
        f"links?): unlinking it here leaves them there"
    ]
