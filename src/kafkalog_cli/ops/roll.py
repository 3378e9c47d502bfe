"""`kafkalog roll`: Kafka's roll, offline (LogSegment.shouldRoll, LocalLog.roll,
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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog_cli.config import ConfigResolver, TopicConfig
from kafkalog_cli.config.versions import TIME_INDEX_BATCH_LAST_OFFSET, KafkaVersions
from kafkalog_cli.errors import CorruptRecordError, InputError, KafkalogError
from kafkalog_cli.formats.indexes import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    TimeIndexEntry,
    encode_time_index,
)
from kafkalog_cli.ops.plan import Action, ActionKind, Plan
from kafkalog_cli.ops.producer_rebuild import rebuild_producer_state
from kafkalog_cli.storage import names
from kafkalog_cli.storage.names import parse_partition_dir, segment_file
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.segment import Segment, read_file

INT32_MAX = 0x7FFFFFFF


@dataclass
class RollOptions:
    if_needed: bool = False
    now_ms: int = 0
    resolver: ConfigResolver | None = (
        None  # None: Kafka defaults + the log dir's __cluster_metadata
    )


def _walk_active(seg: Segment) -> Segment.Walk:
    """The active segment's batches, which must all be sound: a damaged one is recover's job
    (corrupt input, exit 3)."""
    try:
        walk = seg.walk()
    except InputError:
        raise  # cannot be opened (permission denied, a FIFO): exit 4, not damage
    except KafkalogError as e:
        raise CorruptRecordError(
            f"corrupt active segment; run `kafkalog recover` first ({e.message})",
            path=str(seg.log_path),
            position=e.position,
        ) from None
    if not walk.zeros_after:
        raise CorruptRecordError(
            "bytes after the last complete batch; run `kafkalog recover` first",
            path=str(seg.log_path),
            position=walk.valid_size,
        )
    return walk


def should_roll(
    seg: Segment,
    walk: Segment.Walk,
    index_entries: int,
    time_entries: int,
    cfg: TopicConfig,
    now_ms: int,
) -> str | None:
    """LogSegment.shouldRoll for an append stamped `now_ms` (the reason, or None).

    Offline there is no incoming batch: it is taken to be one byte stamped `now`; the roll jitter
    is 0 (the broker's random draw is not recorded anywhere); a segment's creation time, used
    when its first batch has no timestamp, is its `.log` mtime."""
    size = walk.valid_size
    if size > cfg.segment_bytes - 1:
        return f"segment.bytes: size {size} >= {cfg.segment_bytes}"
    max_segment_ms = (
        min(cfg.max_compaction_lag_ms, cfg.segment_ms) if cfg.compact else cfg.segment_ms
    )
    if size > 0:
        first = seg.first_batch_timestamp()
        if first is not None and first >= 0:
            waited = now_ms - first
        else:
            waited = now_ms - seg.last_modified_ms
        if waited > max_segment_ms:
            return f"segment.ms: {waited} ms since the first batch > {max_segment_ms}"
    max_idx = cfg.segment_index_bytes // OFFSET_ENTRY_SIZE
    max_time = cfg.segment_index_bytes // TIME_ENTRY_SIZE
    if index_entries >= max_idx or time_entries >= max_time - 1:
        return "index full"
    if walk.next_offset - seg.base_offset > INT32_MAX:
        return "offset overflow: the next offset does not fit the segment's index"
    return None


def final_time_index_entry(
    walk: Segment.Walk, times: list, live: bool, batch_last_offset: bool = False
) -> TimeIndexEntry | None:
    """The entry onBecomeInactiveSegment appends: (maxTimestampSoFar, offsetOfMaxTimestampSoFar)
    when its timestamp is above the time index's last one, else none.

    A live dir (no .kafka_cleanshutdown: copied from a running broker, or after a crash) is closed
    as the running broker closes it: every batch above the last entry was appended in that
    session (a restart leaves the max so far in the time index, by close() or by recovery), so
    the offset is the one LogSegment.append tracked: the batch's last offset from Kafka 3.8 on
    (`batch_last_offset`, config.versions.TIME_INDEX_BATCH_LAST_OFFSET), before it the first
    record holding the max in an uncompressed CreateTime batch. After a clean shutdown the
    restarted broker takes the max so far from the time index's last entry
    (LogSegment.maxTimestampAndOffsetSoFar): there is nothing to append. (A follower appends
    without LogValidator and tracks the batch's last offset: offline a leader's and a follower's
    log dir cannot be told apart; the leader's rule is taken.)"""
    if not live or walk.max_timestamp < 0:
        return None
    if times and walk.max_timestamp <= times[-1].timestamp:
        return None
    offset = (
        walk.offset_of_max_timestamp if batch_last_offset else walk.appended_offset_of_max_timestamp
    )
    return TimeIndexEntry(walk.max_timestamp, offset)


def _batch_last_offset(p: Plan, name: str, walk: Segment.Walk, versions: KafkaVersions) -> bool:
    """TIME_INDEX_BATCH_LAST_OFFSET for the log dir. Where its versions disagree and none was
    stated, the lowest one decides (the broker that appended is at least what the dir proves, and
    a dir that proves 3.8 decides it): an index entry, not a deletion; the note gives both."""
    decision = versions.decide(TIME_INDEX_BATCH_LAST_OFFSET)
    if decision.applies is not None:  # decision.known
        return decision.applies
    applies = TIME_INDEX_BATCH_LAST_OFFSET.applies(versions.low)
    if walk.offset_of_max_timestamp != walk.appended_offset_of_max_timestamp:
        p.note(
            name,
            f"the closing time-index entry's offset depends on the Kafka version ({decision.by}): "
            f"{walk.offset_of_max_timestamp} from 3.8 on, {walk.appended_offset_of_max_timestamp} before; "
            f"took {versions.low}'s; state it with --kafka-version VERSION",
        )
    return applies


def plan(log_dir: Path, partition_dirs: list[Path], opts: RollOptions) -> Plan:
    p = Plan("roll", Path(log_dir))
    resolver = opts.resolver or ConfigResolver.of_log_dir(log_dir)
    for d in partition_dirs:
        tp = parse_partition_dir(d.name)
        assert tp is not None  # a live partition dir (partition_groups): its name parses
        if tp.topic == "__cluster_metadata":
            continue  # the KRaft metadata log rolls on its own terms (the raft layer)
        plan_partition(p, Partition.open(d), resolver.for_topic(tp.topic), opts)
    return p


def plan_partition(p: Plan, partition: Partition, cfg: TopicConfig, opts: RollOptions) -> None:
    """One partition's roll, added to `p` (retain rolls through here when every segment goes)."""
    name, d = partition.name, partition.directory
    seg = partition.active_segment
    if seg is None:
        p.note(name, "no segment")
        return
    walk = _walk_active(seg)
    offsets = seg.mapped_index_entries(names.INDEX_SUFFIX)
    times = seg.mapped_index_entries(names.TIME_INDEX_SUFFIX)
    base, new = seg.base_offset, walk.next_offset
    summary: dict[str, Any] = {"active_segment": base, "log_end_offset": new, "rolled": False}
    p.partitions[name] = summary
    if walk.valid_size == 0:
        p.note(name, f"active segment {base} is empty: nothing to roll")
        return
    reason = should_roll(seg, walk, len(offsets), len(times), cfg, opts.now_ms)
    if opts.if_needed and reason is None:
        summary["reason"] = "no roll condition holds"
        return
    summary.update(rolled=True, reason=reason or "requested", new_segment=new)
    # 1. onBecomeInactiveSegment: final time-index entry, trim indexes and log
    live = not (d.parent / names.CLEAN_SHUTDOWN_FILE).exists()
    last = live and _batch_last_offset(
        p, name, walk, opts.resolver.versions if opts.resolver else KafkaVersions()
    )
    final = final_time_index_entry(walk, times, live, batch_last_offset=last)
    if final is not None:
        times.append(final)
    tpath = seg.time_index_path
    tdata = encode_time_index(times, base)
    if (tpath.stat().st_size if tpath.exists() else 0) != len(tdata) or (
        tdata and read_file(tpath) != tdata
    ):
        p.add(
            Action(
                ActionKind.REBUILD_INDEX,
                tpath,
                "final time-index entry and trim (segment closed)",
                name,
                data=tdata,
            )
        )
    ipath, kept = seg.index_path, len(offsets) * OFFSET_ENTRY_SIZE
    if ipath.exists() and ipath.stat().st_size > kept:
        p.add(
            Action(
                ActionKind.TRUNCATE,
                ipath,
                "trim the offset index to its entries",
                name,
                at=kept,
                bytes_removed=ipath.stat().st_size - kept,
            )
        )
    if seg.size > walk.valid_size:
        p.add(
            Action(
                ActionKind.TRUNCATE,
                seg.log_path,
                "trim the preallocated log",
                name,
                at=walk.valid_size,
                bytes_removed=seg.size - walk.valid_size,
            )
        )
    # 2. producer snapshot at the new base
    state = rebuild_producer_state(
        d,
        partition.segments,
        new,
        now_ms=opts.now_ms,
        expiration_ms=cfg.producer_id_expiration_ms,
        ignored=lambda m, f: p.note(name, m, f),
        versions=opts.resolver.versions if opts.resolver else None,
    )
    snap = segment_file(d, new, names.SNAPSHOT_SUFFIX)
    data = state.snapshot_bytes()
    if not snap.exists() or read_file(snap) != data:
        p.add(
            Action(
                ActionKind.WRITE_SNAPSHOT,
                snap,
                "producer state at the new segment's base",
                name,
                data=data,
            )
        )
    # 3. the new segment: empty indexes (as at a clean shutdown), the .log last
    p.add(
        Action(
            ActionKind.CREATE_SEGMENT_FILE,
            segment_file(d, new, names.INDEX_SUFFIX),
            "new segment",
            name,
            data=b"",
        )
    )
    p.add(
        Action(
            ActionKind.CREATE_SEGMENT_FILE,
            segment_file(d, new, names.TIME_INDEX_SUFFIX),
            "new segment",
            name,
            data=b"",
        )
    )
    # not preallocated either (preallocate=true): the broker would read a zero-filled .log as data
    p.add(
        Action(
            ActionKind.CREATE_SEGMENT_FILE,
            segment_file(d, new, names.LOG_SUFFIX),
            f"new segment at the log end offset {new}",
            name,
            data=b"",
        )
    )
