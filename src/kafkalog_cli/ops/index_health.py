"""Index damage that kafka-dump-log does not see: zero-filled slots after an index's entries.

Kafka's indexes are preallocated sparse files; a crash leaves the active segment's index (and any
the broker had open) with zero slots after the real entries, and kafka-dump-log stops reading at
the first of them, so its checks pass. Whether that matters depends on the next load: a segment
the broker recovers (no .kafka_cleanshutdown, from the recovery point's segment on) gets its
indexes rebuilt, so the zeros are only a note; in any other segment the broker keeps them as
they are (OffsetIndex counts every slot of the file: lookups and the largest timestamp go wrong)
and they are a problem, fixed by `kafkalog recover --repair`. The same rule as recover's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.storage import names
from kafkalog_cli.storage.index_checks import zero_slots
from kafkalog_cli.storage.logdir import LogDir
from kafkalog_cli.storage.partition import Partition

_ENTRY = {names.INDEX_SUFFIX: 8, names.TIME_INDEX_SUFFIX: 12}


@dataclass(frozen=True)
class ZeroFilledIndex:
    path: str
    position: int  # the first zero slot
    entries: int  # real entries before it
    zero_slots: int
    rebuilt_on_load: bool  # the broker recovers the segment on its next start

    @property
    def problem(self) -> bool:
        return not self.rebuilt_on_load

    def message(self) -> str:
        what = f"{self.zero_slots} zero-filled slot(s) after its {self.entries} entries"
        if self.rebuilt_on_load:
            return (
                f"{what}: the broker recovers this segment on its next start and rebuilds the index "
                f"(a crash leaves preallocated indexes so)"
            )
        return (
            f"{what}: the broker does not recover this segment on load (.kafka_cleanshutdown, or below the "
            f"recovery point) and keeps them, so its lookups in this index go wrong; "
            f"`kafkalog recover --repair` rebuilds it"
        )

    def to_dict(self) -> dict:
        return {
            "kind": "problem" if self.problem else "note",
            "problem": "index_zero_filled",
            "file": self.path,
            "position": self.position,
            "entries": self.entries,
            "zero_slots": self.zero_slots,
            "rebuilt_on_load": self.rebuilt_on_load,
            "message": self.message(),
        }


def recovered_on_load(part: Partition) -> set[int]:
    """The bases of the segments LogLoader recovers on the next start: none after a clean
    shutdown; else the segment holding the recovery point and every later one."""
    if os.path.exists(part.directory.parent / names.CLEAN_SHUTDOWN_FILE) or not part.segments:
        return set()
    rp = part.checkpoints.recovery_point or 0
    bases = part.base_offsets
    start = 0
    for i, b in enumerate(bases):
        if b <= rp:
            start = i
    return set(bases[start:])


def zero_filled_indexes(part: Partition) -> list[ZeroFilledIndex]:
    """Every .index and .timeindex of the partition with zero slots after its entries."""
    rebuilt = recovered_on_load(part)
    out = []
    for s in part.segments:
        for suffix, size in _ENTRY.items():
            path = s.file(suffix)
            try:
                length = os.path.getsize(path)
            except OSError:
                continue
            entries = len(s.mapped_index_entries(suffix))
            slots = zero_slots(length, entries, size)
            if slots > 0:
                out.append(
                    ZeroFilledIndex(
                        str(path), entries * size, entries, slots, s.base_offset in rebuilt
                    )
                )
    return out


def zero_filled_in_dir(directory: Path) -> list[ZeroFilledIndex]:
    """`zero_filled_indexes` of one partition dir, with its log dir's checkpoints (read leniently,
    as a broker starting afresh reads a damaged one): what verify-crc and dump-index report."""
    part = Partition.open(directory)
    if part.topic_partition is not None:
        part.checkpoints = (
            LogDir(Path(directory).parent)
            .checkpoints(strict=False)
            .for_partition(part.topic_partition)
        )
    return zero_filled_indexes(part)
