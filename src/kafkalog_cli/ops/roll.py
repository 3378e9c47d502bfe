"""`kafkalog roll`: Kafka's roll, offline (spec §7: LogSegment.shouldRoll, LocalLog.roll,
LogSegment.onBecomeInactiveSegment, UnifiedLog.roll).

For each partition whose active segment is not empty (and, with `--if-needed`, where Kafka's own
conditions hold at `--now`):
1. the active segment gets its final time-index entry (max timestamp so far, its batch's last
   offset), and its indexes are trimmed to their entries; a preallocated `.log` is trimmed;
2. a producer snapshot at the new base (= log end offset);
3. the new segment's `.index` and `.timeindex`, empty as a broker's clean shutdown leaves them
   (trimmed to their entries), then its empty `.log` last: until the `.log` exists the new files
   are orphans that recover (and a broker) delete, so a crash leaves the old state. Not
   preallocated: a broker takes a pre-existing index for valid and full (AbstractIndex sets the
   position to its end), so 10 MiB of zeros behind .kafka_cleanshutdown would be 1310720 entries;
   it resizes the active segment's indexes to segment.index.bytes itself when it loads the log.
"""
from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import ConfigResolver, cluster_metadata_configs, TopicConfig
from kafkalog_cli.errors import InputError, KafkalogError
from kafkalog_cli.formats.indexes import (OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE, TimeIndexEntry,
                                          encode_time_index, parse_offset_index, parse_time_index)
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.ops.plan import Action, ActionKind, Plan
from kafkalog_cli.ops.producer_rebuild import rebuild_producer_state
from kafkalog_cli.ops.recover import _map, _read
from kafkalog_cli.storage import names
from kafkalog_cli.storage.names import offset_from_name, parse_partition_dir, segment_file
from kafkalog_cli.storage.segment import Segment

INT32_MAX = 0x7FFFFFFF


@dataclass
class RollOptions:
    if_needed: bool = False
    now_ms: int = 0
    resolver: ConfigResolver | None = None   # None: Kafka defaults + the log dir's __cluster_metadata


@dataclass
class ActiveSegment:
    base: int
    size: int                  # bytes of complete batches
    file_size: int
    next_offset: int
    first_batch_max_ts: int | None
    max_ts: int                # maxTimestampSoFar and its offset, over every batch
    offset_of_max_ts: int
    index_entries: int
    time_entries: list[TimeIndexEntry]
    mtime_ms: int


def read_active(d: Path, base: int) -> ActiveSegment:
    log = segment_file(d, base, names.LOG_SUFFIX)
    buf = _map(log)
    try:
        end, nxt, first_ts, max_ts, off_max = 0, base, None, -1, -1
        try:
            for b in iter_batches(buf):
                if first_ts is None:
                    first_ts = b.max_timestamp
                if b.max_timestamp > max_ts:
                    max_ts, off_max = b.max_timestamp, b.last_offset
                end = b.position + b.size
                nxt = b.last_offset + 1
        except KafkalogError as e:
            raise InputError(f"corrupt active segment; run `kafkalog recover` first ({e.message})",
                             path=str(log), position=e.position) from None
        tail = bytes(buf[end:]) if len(buf) > end else b""
        if tail.strip(b"\0"):
            raise InputError("bytes after the last complete batch; run `kafkalog recover` first",
                             path=str(log), position=end)
        idx = _index_entries(segment_file(d, base, names.INDEX_SUFFIX), parse_offset_index, base)
        tidx = _index_entries(segment_file(d, base, names.TIME_INDEX_SUFFIX), parse_time_index, base)
        return ActiveSegment(base, end, len(buf), nxt, first_ts, max_ts, off_max, len(idx), tidx,
                             log.stat().st_mtime_ns // 1_000_000)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _index_entries(path: Path, parse, base: int) -> list:
    """An index's entries through an mmap: parsing stops at the preallocated zeros, so a 10 MiB
    active index is not read whole."""
    if not path.exists():
        return []
    buf = _map(path)
    try:
        return parse(buf, base)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def should_roll(seg: ActiveSegment, cfg: TopicConfig, now_ms: int) -> str | None:
    """LogSegment.shouldRoll for an append stamped `now_ms` (the reason, or None).

    Offline there is no incoming batch: it is taken to be one byte stamped `now`; the roll jitter
    is 0 (the broker's random draw is not recorded anywhere); a segment's creation time, used
    when its first batch has no timestamp, is its `.log` mtime."""
    if seg.size > cfg.segment_bytes - 1:
        return f"segment.bytes: size {seg.size} >= {cfg.segment_bytes}"
    max_segment_ms = min(cfg.max_compaction_lag_ms, cfg.segment_ms) if cfg.compact else cfg.segment_ms
    if seg.size > 0:
        if seg.first_batch_max_ts is not None and seg.first_batch_max_ts >= 0:
            waited = now_ms - seg.first_batch_max_ts
        else:
            waited = now_ms - seg.mtime_ms
        if waited > max_segment_ms:
            return f"segment.ms: {waited} ms since the first batch > {max_segment_ms}"
    max_idx = cfg.segment_index_bytes // OFFSET_ENTRY_SIZE
    max_time = cfg.segment_index_bytes // TIME_ENTRY_SIZE
    if seg.index_entries >= max_idx or len(seg.time_entries) >= max_time - 1:
        return "index full"
    if seg.next_offset - seg.base > INT32_MAX:
        return "offset overflow: the next offset does not fit the segment's index"
    return None



def plan(log_dir: Path, partition_dirs: list[Path], opts: RollOptions) -> Plan:
    p = Plan("roll", Path(log_dir))
    if opts.resolver is None:
        opts = RollOptions(opts.if_needed, opts.now_ms, ConfigResolver(cluster_metadata=cluster_metadata_configs(log_dir)))
    for d in partition_dirs:
        tp = parse_partition_dir(d.name)
        if tp.topic == "__cluster_metadata":
            continue        # the KRaft metadata log rolls on its own terms (the raft layer)
        _plan_partition(p, d, opts.resolver.for_topic(tp.topic), opts)
    return p


def _plan_partition(p: Plan, d: Path, cfg: TopicConfig, opts: RollOptions) -> None:
    name = d.name
    bases = sorted(b for f in d.glob("*" + names.LOG_SUFFIX) if (b := offset_from_name(f.name)) is not None)
    if not bases:
        p.note(name, "no segment")
        return
    seg = read_active(d, bases[-1])
    summary = {"active_segment": seg.base, "log_end_offset": seg.next_offset, "rolled": False}
    p.partitions[name] = summary
    if seg.size == 0:
        p.note(name, f"active segment {seg.base} is empty: nothing to roll")
        return
    reason = should_roll(seg, cfg, opts.now_ms)
    if opts.if_needed and reason is None:
        summary["reason"] = "no roll condition holds"
        return
    summary.update(rolled=True, reason=reason or "requested", new_segment=seg.next_offset)
    base, new = seg.base, seg.next_offset
    # 1. onBecomeInactiveSegment: final time-index entry, trim indexes and log
    times = list(seg.time_entries)
    if seg.max_ts >= 0 and (not times or seg.max_ts > times[-1].timestamp):
        times.append(TimeIndexEntry(seg.max_ts, seg.offset_of_max_ts))
    tpath = segment_file(d, base, names.TIME_INDEX_SUFFIX)
    tdata = encode_time_index(times, base)
    if (tpath.stat().st_size if tpath.exists() else 0) != len(tdata) or _read(tpath) != tdata:
        p.add(Action(ActionKind.REBUILD_INDEX, tpath, "final time-index entry and trim (segment closed)",
                     name, data=tdata))
    ipath = segment_file(d, base, names.INDEX_SUFFIX)
    if ipath.exists() and ipath.stat().st_size > seg.index_entries * OFFSET_ENTRY_SIZE:
        p.add(Action(ActionKind.TRUNCATE, ipath, "trim the offset index to its entries", name,
                     at=seg.index_entries * OFFSET_ENTRY_SIZE,
                     bytes_removed=ipath.stat().st_size - seg.index_entries * OFFSET_ENTRY_SIZE))
    if seg.file_size > seg.size:
        log = segment_file(d, base, names.LOG_SUFFIX)
        p.add(Action(ActionKind.TRUNCATE, log, "trim the preallocated log", name, at=seg.size,
                     bytes_removed=seg.file_size - seg.size))
    # 2. producer snapshot at the new base
    state = rebuild_producer_state(d, [Segment(d, b) for b in bases], new, now_ms=opts.now_ms,
                                   expiration_ms=cfg.producer_id_expiration_ms,
                                   ignored=lambda m, f: p.note(name, m, f))
    snap = segment_file(d, new, names.SNAPSHOT_SUFFIX)
    data = state.snapshot_bytes()
    if _read(snap) != data or not snap.exists():
        p.add(Action(ActionKind.WRITE_SNAPSHOT, snap, "producer state at the new segment's base", name, data=data))
    # 3. the new segment: empty indexes (as at a clean shutdown), the .log last
    p.add(Action(ActionKind.CREATE_SEGMENT_FILE, segment_file(d, new, names.INDEX_SUFFIX), "new segment", name,
                 data=b""))
    p.add(Action(ActionKind.CREATE_SEGMENT_FILE, segment_file(d, new, names.TIME_INDEX_SUFFIX), "new segment",
                 name, data=b""))
    # not preallocated either (preallocate=true): the broker would read a zero-filled .log as data
    p.add(Action(ActionKind.CREATE_SEGMENT_FILE, segment_file(d, new, names.LOG_SUFFIX),
                 f"new segment at the log end offset {new}", name, data=b""))
