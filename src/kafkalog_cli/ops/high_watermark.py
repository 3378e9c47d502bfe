"""The high watermark a broker starts a partition with: the one rule retain and compact share.

Kafka 3.3.1, Partition.updateHighWatermark (on createLogIfNotExists): the
replication-offset-checkpoint's entry, or 0 when there is none ("No checkpointed highwatermark
is found for partition"); a missing file is no entry (LazyOffsetCheckpoints reads an
OffsetCheckpointFile, which creates the file empty). UnifiedLog.updateHighWatermark then clamps
it into [logStartOffset, logEndOffset]. So a partition without an entry starts with its high
watermark at its log start offset: nothing above it is replicated as far as the files show,
and neither retention nor the cleaner may go past it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkalog_cli.storage.partition import Partition


def high_watermark_at_load(
    checkpointed: int | None, log_start_offset: int, log_end_offset: int | None = None
) -> int:
    """The checkpoint's entry (None: no entry, or no file), clamped into [log start, log end].
    `log_end_offset` None: no upper clamp (for callers that only compare it with offsets at most
    the log end offset, where the clamp changes nothing)."""
    hw = max(checkpointed if checkpointed is not None else 0, log_start_offset)
    return hw if log_end_offset is None else min(hw, log_end_offset)


def checkpointed_high_watermark(part: Partition) -> int | None:
    """The high watermark the broker loads `part` with, as describe, get-offsets and transactions
    tell it: its replication-offset-checkpoint entry clamped into [log start, log end]
    (UnifiedLog.updateHighWatermark); None when it has no entry or no segment."""
    checkpointed, start, leo = (
        part.checkpoints.high_watermark,
        part.log_start_offset,
        part.log_end_offset,
    )
    if checkpointed is None or start is None or leo is None:  # start is None only where leo is
        return None
    return high_watermark_at_load(checkpointed, start, leo)
