"""`kafkalog repair`: damaged batches put back from another copy of the partition.

Followers append the leader's batches as they are (ReplicaFetcherThread.processPartitionData ->
UnifiedLog.appendAsFollower, no re-validation), so wherever one leader epoch wrote an offset
range, every copy holds the same batches for it until a cleaner rewrites them. For each damaged
range of this replica's segments (a batch failing its CRC, a broken chain of size fields, a
zeroed or garbled stretch), found by the one batch check (formats.framing.check_batches), the
plan looks for a run of the donor's batches that

- starts after this replica's last good offset before the damage and tiles the damaged bytes
  exactly (same length, same position: the `.index` and `.timeindex` entries stay right),
- is followed, in the donor, by the batch this replica holds right after the damage (same base
  offset, a sound batch here), or ends where the segment ends,
- matches what is left of the damaged batch's own header (its base offset; all its bytes but the
  base offset where only the offset is wrong),
- is sound in the donor, and was written under the same leader epoch in both copies: both
  leader-epoch caches (as compare-replicas loads them) give one epoch for every offset of each
  batch, equal to the batch's partition leader epoch. Without epochs in either copy (message
  format v0/v1) only offsets below both copies' high watermarks are taken: committed offsets,
  which replication makes the same on every in-sync copy.

On a compacted topic each broker's cleaner rewrites its own copy, so positions are never
trusted: batches are matched by offsets and by the damaged bytes' length and neighbours; a donor
cleaned differently does not tile the damage and the range is reported lost, with why.

The spliced segment is written as `<segment>.log.cleaned` and swapped in by Kafka's replace
protocol (LocalLog.replaceSegments, through fsops), the old `.log` going to the quarantine. A
rerun finishes an interrupted swap first, then finds nothing damaged: a second run changes
nothing. Bytes past this replica's own log end (a follower's missing tail) are never taken.
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kafkalog_cli.config import ConfigResolver, log_dir_node_id
from kafkalog_cli.errors import CorruptRecordError, KafkalogError
from kafkalog_cli.formats.checkpoints import (
    EpochEntry,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
)
from kafkalog_cli.formats.framing import (
    LOG_OVERHEAD,
    RECORD_OVERHEAD_V0,
    all_zero,
    check_batches,
)
from kafkalog_cli.ops.compare_replicas import EpochSource, Replica, loaded_epochs, open_replica
from kafkalog_cli.ops.plan import Action, ActionKind, Finding, Plan
from kafkalog_cli.ops.retain import leftover_actions
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.live_files import map_file, unmap
from kafkalog_cli.storage.logdir import LogDir
from kafkalog_cli.storage.names import offset_from_name, parse_partition_dir
from kafkalog_cli.storage.partition import Partition

_HEADER = struct.Struct(">qiib")  # base offset, size, partition leader epoch | legacy CRC, magic
_HEADER_LEN = _HEADER.size  # 17
_LOD = struct.Struct(">i")  # v2 lastOffsetDelta, at byte 23
_NO_END = (1 << 63) - 1


@dataclass
class RepairOptions:
    donors: tuple[Path, ...] = ()  # --from: partition dirs, or log dirs holding the partition
    leader_tail: bool = False  # --leader-tail: up to the donor's high watermark, past this copy's
    resolver: ConfigResolver | None = None


@dataclass
class LostRange(Finding):
    """A damaged range no copy could restore: left as it is (the run exits 1)."""

    kept_problem: ClassVar[bool] = True


@dataclass(frozen=True)
class Batch:
    """One batch of a chain, as its header and the one batch check see it."""

    file: Path
    position: int
    size: int  # with the 12-byte log overhead
    base: int  # v0/v1: the wrapper's offset (the last inner one)
    last: int
    magic: int
    epoch: int  # v2's partition leader epoch; -1 for v0/v1
    sound: bool  # check_batches found nothing
    problem: str | None = None


def batch_at(
    buf, pos: int, end: int, file: Path, prev: int | None, check: bool = True
) -> Batch | None:
    """The batch at `pos` of `buf[:end]` if its size field frames one inside `end` with a known
    magic (sound or not: check_batches says; not `check`ed: taken for sound until Donor.verdict),
    else None. `prev`: the last offset before it."""
    if pos + _HEADER_LEN > end:
        return None
    base, size, ple, magic = _HEADER.unpack_from(buf, pos)
    total = size + LOG_OVERHEAD
    if size < RECORD_OVERHEAD_V0 or pos + total > end or magic not in (0, 1, 2):
        return None
    last = base + _LOD.unpack_from(buf, pos + 23)[0] if magic == 2 and total >= 27 else base
    if not check:
        return Batch(file, pos, total, base, last, magic, ple if magic == 2 else -1, True)
    found = check_batches(
        buf, pos, pos + total, file=str(file), tail=False, prev_offset=prev
    ).findings
    return Batch(
        file,
        pos,
        total,
        base,
        last,
        magic,
        ple if magic == 2 else -1,
        not found,
        found[0].message if found else None,
    )


@dataclass
class Donor:
    """Another copy of the partition: its epochs and high watermark (compare-replicas' Replica)
    and its batches in offset order, each checked."""

    replica: Replica
    batches: list[Batch] = field(default_factory=list)
    lasts: list[int] = field(default_factory=list)
    buffers: dict[Path, Any] = field(default_factory=dict)  # mmaps, or b"" for an empty file

    @classmethod
    def open(cls, path: Path) -> Donor:
        tiered = sorted(tiered_segments(path))
        replica = tiered_replica(path, tiered) if tiered else open_replica(path)
        d = cls(replica)
        logs = [(start, f) for start, f in tiered] or [
            (s.base_offset, s.log_path) for s in replica.partition.segments
        ]
        for base, log in logs:
            buf = map_file(log)
            d.buffers[log] = buf
            pos, end, prev = 0, len(buf), None
            while True:
                b = batch_at(
                    buf, pos, end, log, prev, check=False
                )  # each checked when it is offered
                if b is None:
                    if pos < end and not all_zero(
                        buf, pos, end
                    ):  # the rest unreadable: no batch to give
                        nxt = (prev if prev is not None else base - 1) + 1
                        d.batches.append(
                            Batch(
                                log,
                                pos,
                                end - pos,
                                nxt,
                                nxt,
                                -1,
                                -1,
                                False,
                                "its chain of batches breaks there",
                            )
                        )
                    break
                d.batches.append(b)
                pos += b.size
                prev = b.last
        d.lasts = [b.last for b in d.batches]
        return d

    @property
    def label(self) -> str:
        broker = f" (broker {self.replica.broker_id})" if self.replica.broker_id is not None else ""
        return f"{self.replica.path}{broker}"

    def after(self, offset: int) -> int:
        """The index of the first batch whose last offset is above `offset`."""
        return bisect.bisect_right(self.lasts, offset)

    def verdict(self, b: Batch) -> str | None:
        """Why the donor's batch `b` is not sound (check_batches, as verify-crc checks it), or None."""
        if not b.sound:
            return b.problem
        found = check_batches(
            self.buffers[b.file], b.position, b.position + b.size, file=str(b.file), tail=False
        ).findings
        return found[0].message if found else None

    def bytes_of(self, b: Batch) -> bytes:
        return bytes(self.buffers[b.file][b.position : b.position + b.size])

    def close(self) -> None:
        for buf in self.buffers.values():
            unmap(buf)


# LocalTieredStorage's files (RemoteLogSegmentFileset): <topic>-<partition>-<topic id>/<start offset>-<segment id>.log,
# beside it the segment's .leader_epoch_checkpoint
_TIERED_LOG = re.compile(r"(\d+)-([A-Za-z0-9_-]{22})\.log")
_TIERED_EPOCHS = ".leader_epoch_checkpoint"


def tiered_segments(path: Path) -> list[tuple[int, Path]]:
    """The uploaded segments of a LocalTieredStorage partition dir, by start offset (none: not one)."""
    out = []
    for f in Path(path).iterdir() if Path(path).is_dir() else ():
        m = _TIERED_LOG.fullmatch(f.name)
        if m and f.is_file():
            out.append((int(m[1]), f))
    return out


def tiered_replica(path: Path, segments: list[tuple[int, Path]]) -> Replica:
    """Uploaded segments as a copy of the partition: the epochs of every segment's leader-epoch
    file (each holds the cache as it was when its segment was uploaded), the high watermark past
    the last uploaded batch (a leader uploads only segments below it), the topic id from the dir's name."""
    entries: dict[int, int] = {}
    for _, log in segments:
        f = log.with_name(log.name[: -len(names.LOG_SUFFIX)] + _TIERED_EPOCHS)
        raw = files.read_bytes_if_exists(f)
        for e in parse_leader_epoch_checkpoint(raw, path=str(f)) if raw is not None else ():
            entries[e.epoch] = min(e.start_offset, entries.get(e.epoch, e.start_offset))
    epochs = [EpochEntry(epoch, start) for epoch, start in sorted(entries.items())]
    name, _, topic_id = Path(path).name.rpartition("-")
    tp = parse_partition_dir(name)
    part = Partition(Path(path), tp)
    return Replica(
        str(path),
        part,
        None,
        segments[0][0],
        -1,
        None,
        epochs,
        EpochSource.CHECKPOINT if epochs else EpochSource.NONE,
        topic_id or None,
    )


def own_history(part_dir: Path) -> Replica:
    """This copy as compare-replicas sees it, but with its epochs and high watermark as its
    checkpoints hold them: not cut at the log end its damage makes a walk find (the broker's load
    truncates them there), so damage in the active segment is judged against what the copy had
    written. Opened with no segment too: a killed run may have left its `.log` as a `.swap`."""
    tp = parse_partition_dir(part_dir.name)
    roots = LogDir(part_dir.parent).checkpoints(strict=False)
    part = Partition.open(part_dir, roots.for_partition(tp) if tp is not None else None, tp)
    lso = part.checkpoints.log_start_offset or (
        part.segments[0].base_offset if part.segments else 0
    )
    try:
        epochs, source = loaded_epochs(part, lso, _NO_END, [])
    except CorruptRecordError:  # no checkpoint, and damaged batches to take the epochs from
        epochs, source = [], EpochSource.NONE
    meta = files.read_bytes_if_exists(part.path(names.PARTITION_METADATA))
    return Replica(
        str(part_dir),
        part,
        log_dir_node_id(part_dir.parent),
        lso,
        -1,
        part.checkpoints.high_watermark,
        epochs,
        source,
        parse_partition_metadata(meta, path=str(part.path(names.PARTITION_METADATA))).topic_id
        if meta is not None
        else None,
    )


class Donors:
    """The copies given for one partition, opened when a damaged range first needs them (a sound
    partition reads none of them); a copy that cannot be read, or of another topic id, is noted
    and left out."""

    def __init__(self, p: Plan, name: str, local: Replica, dirs: list[Path], summary: dict):
        self.p, self.name, self.local, self.dirs, self.summary = p, name, local, dirs, summary
        self.opened: list[Donor] | None = None

    def __iter__(self):
        if self.opened is None:
            self.opened = []
            for d in self.dirs:
                try:
                    donor = Donor.open(d)
                except KafkalogError as e:
                    self.p.note(self.name, f"copy {d} not used: {e.message}", d)
                    continue
                theirs, ours = donor.replica.topic_id, self.local.topic_id
                if ours and theirs and ours != theirs:
                    self.p.note(
                        self.name,
                        f"copy {d} not used: topic id {theirs}, here {ours} (another topic of "
                        f"the same name)",
                        d,
                    )
                    donor.close()
                    continue
                self.opened.append(donor)
                self.summary["donors"].append(donor.label)
        return iter(self.opened)

    def close(self) -> None:
        for donor in self.opened or []:
            donor.close()


def epoch_at(epochs: list[EpochEntry], offset: int) -> int | None:
    """The epoch a leader-epoch cache gives `offset`: its last entry starting at or below it."""
    found = None
    for e in epochs:
        if e.start_offset > offset:
            break
        found = e.epoch
    return found


def same_epoch(local: Replica, donor: Replica, b: Batch, first: int) -> str | None:
    """None when both copies' epoch histories say one epoch wrote `first`..`b.last`, the batch's
    own (v2); else why not."""
    none = (local.epoch_source is EpochSource.NONE, donor.epoch_source is EpochSource.NONE)
    if all(none):
        hws = [r.high_watermark for r in (local, donor)]
        known = [h for h in hws if h is not None]
        if len(known) < 2 or b.last >= min(known):
            return (
                f"offsets {first}..{b.last}: neither copy has leader epochs (message format v0/v1) and they "
                f"are not below both copies' high watermarks ({hws[0]}, {hws[1]})"
            )
        return None
    if any(none):
        return f"offsets {first}..{b.last}: only one copy has a leader-epoch history; epochs cannot be compared"
    epochs = {
        epoch_at(local.epochs, first),
        epoch_at(local.epochs, b.last),
        epoch_at(donor.epochs, first),
        epoch_at(donor.epochs, b.last),
    }
    if None in epochs or len(epochs) != 1:
        return (
            f"offsets {first}..{b.last}: the copies' leader epochs differ (here {epoch_at(local.epochs, first)}"
            f"..{epoch_at(local.epochs, b.last)}, in the donor {epoch_at(donor.epochs, first)}.."
            f"{epoch_at(donor.epochs, b.last)})"
        )
    (epoch,) = epochs
    if b.magic == 2 and b.epoch >= 0 and b.epoch != epoch:
        return f"offsets {first}..{b.last}: the donor's batch says leader epoch {b.epoch}, its history {epoch}"
    return None


@dataclass
class Splice:
    """Donor batches that tile a damaged range of this replica's segment."""

    position: int
    data: bytes
    first: int
    last: int
    donor: str
    past_own: bool = False  # offsets past this copy's own high watermark (--leader-tail)


def match(
    buf,
    pos: int,
    end: int,
    file: Path,
    prev: int,
    next_base: int | None,
    local: Replica,
    donor: Donor,
) -> tuple[Splice | None, str]:
    """The donor's batches for the damaged bytes from `pos` (after offset `prev`) of a segment of
    `end` bytes whose next segment starts at `next_base` (None: the last segment), or why none fit."""
    i = donor.after(prev)
    if i == len(donor.batches):
        return None, f"{donor.label} holds no batch after offset {prev}"
    first_batch = donor.batches[i]
    if first_batch.magic == 2 and first_batch.base <= prev:
        return None, (
            f"{donor.label}'s batch {first_batch.base}..{first_batch.last} straddles offset {prev} "
            f"(batched or cleaned differently)"
        )
    size = 0
    for j in range(i, len(donor.batches)):
        b = donor.batches[j]
        first = b.base if b.magic == 2 else (prev + 1 if j == i else donor.batches[j - 1].last + 1)
        problem = donor.verdict(b)
        if problem:
            return (
                None,
                f"{donor.label}'s batch at offsets {first}..{b.last} is damaged too ({problem})",
            )
        if next_base is not None and b.last >= next_base:
            if j == i:
                return None, (
                    f"{donor.label} holds no batch between offsets {prev + 1} and {next_base - 1} (its "
                    f"cleaner removed them, or it never held them)"
                )
            return (
                None,
                f"{donor.label}'s batches from offset {first_batch.base} do not tile the damaged bytes",
            )
        why = same_epoch(local, donor.replica, b, first)
        if why:
            return None, why
        size += b.size
        if pos + size > end:
            return None, (
                f"{donor.label}'s batches for offsets {first_batch.base}..{b.last} take {size} bytes, "
                f"{end - pos} are here (cleaned or batched differently, or torn)"
            )
        nxt = donor.batches[j + 1] if j + 1 < len(donor.batches) else None
        if pos + size == end:
            fits = next_base is None or nxt is None or nxt.base >= next_base
        else:
            after = batch_at(buf, pos + size, end, file, b.last)
            fits = after is not None and after.sound and nxt is not None and after.base == nxt.base
        if not fits:
            continue
        data = b"".join(donor.bytes_of(x) for x in donor.batches[i : j + 1])
        why = _disagrees(buf, pos, end, file, donor.batches[i : j + 1], data, prev)
        if why:
            return None, f"{donor.label}: {why}"
        start = first_batch.base if first_batch.magic == 2 else prev + 1
        return Splice(pos, data, start, b.last, donor.label), ""
    return (
        None,
        f"{donor.label} ends at offset {donor.batches[-1].last}: nothing there resumes this segment's chain",
    )


def _disagrees(
    buf, pos: int, end: int, file: Path, taken: list[Batch], data: bytes, prev: int
) -> str | None:
    """What is left of the damaged bytes must agree with the donor's batches put over them: a
    batch here that is sound but for its base offset (which no CRC covers) must be the donor's
    byte for byte from its size field on; the first damaged batch's base offset, where its magic
    is readable and the offset plausible, must be the donor's."""
    at = 0
    compared = []
    for t in taken:
        here = batch_at(buf, pos + at, end, file, None)
        compared.append(here is not None and here.sound and here.size == t.size)
        if (
            compared[-1]
            and bytes(buf[pos + at + 8 : pos + at + t.size]) != data[at + 8 : at + t.size]
        ):
            return (
                f"the sound bytes at byte {pos + at} differ from the donor's batch {t.base}..{t.last} "
                f"(another batch, not a copy)"
            )
        at += t.size
    first = taken[0]
    if not compared[0] and pos + _HEADER_LEN <= end:
        base, _, _, magic = _HEADER.unpack_from(buf, pos)
        if magic == first.magic == 2 and prev < base <= taken[-1].last and base != first.base:
            return f"the damaged batch's header says base offset {base}, the donor's batch {first.base}"
    return None


def _tail(
    buf,
    pos: int,
    end: int,
    prev: int,
    local: Replica,
    donors: Donors | list[Donor],
    leader_tail: bool = False,
) -> tuple[Splice | None, str]:
    """The last segment from `pos` (zeros, a torn or damaged last batch, or its end): the donor's
    batches after `prev` and below this copy's own high watermark (offsets it held, and every
    in-sync copy with it), where what is here is zeros or those very bytes. Past it nothing is
    taken, what this copy never acknowledged not being its history; with `leader_tail`, up to the
    donor's high watermark (a follower's tail as it would fetch it from the leader), under the
    leader epoch this copy last knew, and said so."""
    own = local.high_watermark
    why = ""
    for donor in donors:
        hw = max(own or 0, donor.replica.high_watermark or 0) if leader_tail else own
        if hw is None or hw <= prev + 1:
            why = why or (
                f"offsets from {prev + 1} are past this copy's high watermark ({own}): its missing tail, "
                f"which the broker's recovery truncates (`kafkalog recover`) and replication fetches "
                f"again; not taken from a donor (--leader-tail takes it up to the donor's high watermark)"
            )
            continue
        i = donor.after(prev)
        taken: list[Batch] = []
        stop: Batch | None = None  # the donor's first batch not taken
        for j in range(i, len(donor.batches)):
            b = donor.batches[j]
            first = (
                b.base if b.magic == 2 else (prev + 1 if j == i else donor.batches[j - 1].last + 1)
            )
            if b.last >= hw or (j == i and b.magic == 2 and b.base <= prev):
                stop = b
                break
            problem = donor.verdict(b)
            why = (
                f"{donor.label}'s batch at offsets {first}..{b.last} is damaged too ({problem})"
                if problem
                else same_epoch(local, donor.replica, b, first) or ""
            )
            if why:
                break
            taken.append(b)
        if why:
            continue
        # they reach the high watermark: up to it, or to a gap the donor's cleaner left there
        if not taken or (taken[-1].last != hw - 1 and not (stop is not None and stop.base >= hw)):
            why = f"{donor.label} has no batches that end at the high watermark {hw}"
            continue
        data = b"".join(donor.bytes_of(x) for x in taken)
        here = bytes(buf[pos:end])
        n = min(len(here), len(data))
        if (
            any(x != y and x != 0 for x, y in zip(here[:n], data[:n]))
            or here[n:].count(0) != len(here) - n
        ):
            why = f"the bytes here are neither zeros nor {donor.label}'s batches for offsets {prev + 1}..{hw - 1}"
            continue
        start = taken[0].base if taken[0].magic == 2 else prev + 1
        return Splice(
            pos,
            data,
            start,
            taken[-1].last,
            donor.label,
            past_own=own is None or taken[-1].last >= own,
        ), ""
    return None, why or "no copy given holds this partition"


def repair_segment(
    p: Plan,
    summary: dict,
    log: Path,
    read_from: Path,
    base: int,
    next_base: int | None,
    local: Replica,
    donors: Donors | list[Donor],
    name: str,
    leader_tail: bool = False,
) -> None:
    """Plan the repair of one segment: its damaged ranges spliced from the donors, the rest noted lost."""
    buf = map_file(read_from)
    try:
        end = len(buf)
        if (next_base is not None or not leader_tail) and not check_batches(
            buf, 0, end, file=str(log), tail=True
        ).findings:
            return
        pieces: list = []
        kept_from = 0

        def restored(splice: Splice) -> None:
            summary["restored"].append(
                {
                    "offsets": [splice.first, splice.last],
                    "file": str(log),
                    "position": splice.position,
                    "bytes": len(splice.data),
                    "from": splice.donor,
                    "past_own_high_watermark": splice.past_own,
                }
            )
            past = (
                f"; past this copy's own high watermark {local.high_watermark}: the leader's tail, taken by "
                f"--leader-tail"
                if splice.past_own
                else ""
            )
            p.note(
                name,
                f"offsets {splice.first}..{splice.last} ({len(splice.data)} bytes at byte "
                f"{splice.position}) restored from {splice.donor}{past}",
                log,
                splice.position,
            )

        pos, prev = 0, base - 1
        before: tuple[int, int] | None = (
            None  # the last sound batch's position, the offset before it
        )
        while pos < end:
            b = batch_at(buf, pos, end, log, prev)
            if b is not None and b.sound:
                before = (pos, prev)
                pos, prev = pos + b.size, b.last
                continue
            reasons = []
            splice = None
            # a base offset raised by bit rot (no CRC covers it) passes for sound; the batch after
            # it then breaks the order of offsets: the two are matched together from the first
            starts = [(pos, prev)] + (
                [before]
                if before is not None
                and b is not None
                and b.sound is False
                and "offsets" in (b.problem or "")
                else []
            )
            for at, after_offset in starts:
                for donor in donors:
                    splice, why = match(buf, at, end, log, after_offset, next_base, local, donor)
                    if splice is not None:
                        break
                    if at == pos:
                        reasons.append(why)
                if splice is not None:
                    pos = at
                    break
            if splice is None and next_base is None:
                # the last segment's end: zeros (preallocated, or zeroed) or a torn or damaged last
                # batch, given back only below this copy's own high watermark
                splice, why = _tail(buf, pos, end, prev, local, donors, leader_tail)
                if splice is None and all_zero(buf, pos, end):
                    break  # the active segment's preallocated tail, and nothing of its history lost
                reasons.append(why)
            before = None
            if splice is not None:
                pieces += [(kept_from, pos), splice.data]
                kept_from = min(pos + len(splice.data), end)
                restored(splice)
                pos, prev = kept_from, splice.last
                if pos < end and all_zero(buf, pos, end):
                    break
                continue
            what = b.problem if b is not None else "the chain of batches breaks here"
            upto = (
                f"..{b.last}"
                if b is not None and b.last > prev
                else f"..{next_base - 1}"
                if next_base is not None
                else " to the log end"
            )
            why = "; ".join(r for r in reasons if r) or "no copy given holds this partition"
            summary["lost"].append(
                {
                    "offsets": [
                        prev + 1,
                        b.last
                        if b is not None and b.last > prev
                        else next_base - 1
                        if next_base is not None
                        else None,
                    ],
                    "file": str(log),
                    "position": pos,
                    "problem": what,
                    "why": why,
                }
            )
            p.findings.append(
                LostRange(
                    name, f"offsets {prev + 1}{upto} not restored ({what}): {why}", str(log), pos
                )
            )
            after = (
                batch_at(buf, pos + b.size, end, log, b.last)
                if b is not None and pos + b.size < end
                else None
            )
            if b is not None and (pos + b.size == end or (after is not None and after.sound)):
                pos, prev = pos + b.size, max(prev, b.last)  # framed: the chain goes on after it
                continue
            break
        if leader_tail and next_base is None and pos >= end and not summary["lost"]:
            # a sound end: the follower's missing tail, appended up to the leader's high watermark
            splice, _ = _tail(buf, end, end, prev, local, donors, leader_tail)
            if splice is not None:
                pieces += [(kept_from, end), splice.data]
                kept_from = end
                restored(splice)
        if pieces:
            pieces.append((kept_from, end))
            ranges = [x for x in pieces if isinstance(x, bytes) or x[1] > x[0]]
            offsets = [r["offsets"] for r in summary["restored"] if r["file"] == str(log)]
            p.add(
                Action(
                    ActionKind.REWRITE_SEGMENT,
                    log,
                    f"repair: offsets "
                    f"{', '.join(f'{a}..{z}' for a, z in offsets)} spliced in from another copy",
                    name,
                    ranges=ranges,
                    source=read_from,
                    keep_mtime=True,
                )
            )
    finally:
        unmap(buf)


def _donor_dirs(partition_dir: Path, donors: tuple[Path, ...]) -> list[Path]:
    """The copies of `partition_dir`'s partition among --from: a partition dir of the same topic
    and partition, or a log dir holding a dir of that name."""
    tp = parse_partition_dir(partition_dir.name)
    out = []
    for d in donors:
        d = Path(d)
        if d.resolve() == partition_dir.resolve():
            continue
        if (
            parse_partition_dir(d.name) == tp
            and (d / "").is_dir()
            and any(d.glob("*" + names.LOG_SUFFIX))
        ):
            out.append(d)
        elif (d / partition_dir.name).is_dir():
            out.append(d / partition_dir.name)
        elif d.name.rpartition("-")[0] == partition_dir.name and tiered_segments(d):
            out.append(d)  # LocalTieredStorage's <topic>-<partition>-<topic id>
        elif d.is_dir():
            out += [
                t
                for t in sorted(d.iterdir())
                if t.name.rpartition("-")[0] == partition_dir.name and tiered_segments(t)
            ]
    return out


def finish_interrupted(p: Plan, part_dir: Path, name: str) -> dict[int, Path]:
    """A killed run's leftovers, finished as its replace protocol would have: `.cleaned` files
    deleted, each `.swap` renamed over the file it replaces (which goes to the quarantine).
    Returns where each segment's bytes are until then (its `.log.swap`)."""
    part = Partition.open(part_dir)
    p.actions += leftover_actions(part)
    reading: dict[int, Path] = {}
    swaps = [f for f in part.temp_files if f.endswith(names.SWAP_SUFFIX)]
    for f in part.temp_files:
        if f.endswith(names.CLEANED_SUFFIX):
            p.add(
                Action(
                    ActionKind.DELETE, part.path(f), "an interrupted repair's .cleaned file", name
                )
            )
    for f in swaps:
        replaced = part.path(f[: -len(names.SWAP_SUFFIX)])
        if replaced.exists():
            p.add(
                Action(
                    ActionKind.DELETE,
                    replaced,
                    "replaced by its .swap (an interrupted repair)",
                    name,
                )
            )
    for f in swaps:
        final = f[: -len(names.SWAP_SUFFIX)]
        p.add(
            Action(
                ActionKind.RENAME,
                part.path(f),
                "completes an interrupted swap",
                name,
                target=part.path(final),
            )
        )
        base = offset_from_name(final)
        if final.endswith(names.LOG_SUFFIX) and base is not None:
            reading[base] = part.path(f)
    return reading


def plan(log_dir: Path, partition_dirs: list[Path], options: RepairOptions) -> Plan:
    """The repair of each partition dir from the copies in `options.donors`."""
    p = Plan("repair", Path(log_dir))
    for part_dir in partition_dirs:
        part_dir = Path(part_dir)
        name = part_dir.name
        summary: dict = {
            "partition": name,
            "status": "sound",
            "donors": [],
            "restored": [],
            "lost": [],
        }
        p.partitions[name] = summary
        reading = finish_interrupted(p, part_dir, name)
        dirs = _donor_dirs(part_dir, options.donors)
        local = own_history(part_dir)
        donors = Donors(p, name, local, dirs, summary)
        try:
            named = [
                offset_from_name(f.name) for f in sorted(part_dir.glob("*" + names.LOG_SUFFIX))
            ]
            bases = sorted({b for b in named if b is not None} | set(reading))
            for i, base in enumerate(bases):
                log = names.segment_file(part_dir, base, names.LOG_SUFFIX)
                repair_segment(
                    p,
                    summary,
                    log,
                    reading.get(base, log),
                    base,
                    bases[i + 1] if i + 1 < len(bases) else None,
                    local,
                    donors,
                    name,
                    options.leader_tail,
                )
        finally:
            donors.close()
        summary["status"] = (
            "lost"
            if summary["lost"] and not summary["restored"]
            else "partly repaired"
            if summary["lost"]
            else "repaired"
            if summary["restored"]
            else "sound"
        )
        if not dirs and summary["lost"]:
            p.note(name, "no copy of this partition among --from")
    return p
