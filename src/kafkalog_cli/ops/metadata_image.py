"""The KRaft metadata image of a log dir, offline: the newest `*.checkpoint` snapshot of
`__cluster_metadata-0` that reads whole and the log after it (config.replay_metadata_log reads
the files), replayed into formats.internal.metadata_image's MetadataImage; with the
`quorum-state` file beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkalog_cli.config import METADATA_PARTITION_DIR, MetadataDamage, replay_metadata_log
from kafkalog_cli.errors import InputError
from kafkalog_cli.formats.internal.metadata_image import MetadataImage
from kafkalog_cli.storage import files


@dataclass
class QuorumState:
    """The `quorum-state` file a KRaft node keeps beside its metadata log (FileQuorumStateStore):
    the leader and epoch it last knew, and the voters (before KIP-853's VotersRecord)."""

    leader_id: int | None
    leader_epoch: int | None
    voted_id: int | None
    voters: list[int] | None

    @classmethod
    def read(cls, path: Path) -> QuorumState | None:
        import json

        raw = files.read_bytes_if_exists(path)  # there but unreadable: InputError
        try:
            data = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        voters = data.get("currentVoters")
        leader = data.get("leaderId", -1)
        return cls(
            None if leader in (-1, None) else leader,
            data.get("leaderEpoch"),
            None if data.get("votedId", -1) in (-1, None) else data.get("votedId"),
            None if voters is None else sorted(v["voterId"] for v in voters),
        )

    def to_dict(self) -> dict:
        return self.__dict__.copy()


@dataclass
class MetadataImageRead:
    """The image and where it came from."""

    directory: str
    image: MetadataImage
    snapshot: str | None  # the .checkpoint it started from (None: the log from its start)
    damage: MetadataDamage | None  # where reading stopped early
    skipped: MetadataDamage | None  # the first damaged snapshot passed over
    next_offset: int  # the offset after the last record read
    at_offset: int | None  # --at-offset
    quorum_state: QuorumState | None

    def to_dict(self) -> dict:
        img = self.image
        return {
            "metadata_dir": self.directory,
            "snapshot": self.snapshot,
            "at_offset": self.at_offset,
            "last_offset": img.last_offset if img.last_offset is not None else self.next_offset - 1,
            "damage": None if self.damage is None else str(self.damage),
            "skipped_snapshot": None if self.skipped is None else str(self.skipped),
            "open_transaction": None
            if img.pending is None
            else {"begin_offset": img.pending[0], "records_held_back": len(img.pending[1])},
            "aborted_transactions": [
                {"begin_offset": b, "abort_offset": a, "reason": r}
                for b, a, r in img.aborted_transactions
            ],
            "undecoded_records": [{"offset": o, "error": e} for o, e in img.undecoded_records],
            "quorum_state": None if self.quorum_state is None else self.quorum_state.to_dict(),
            **img.to_dict(),
        }


def metadata_dir(path: Path) -> Path:
    """`path` itself when it is a __cluster_metadata-0 dir, else its __cluster_metadata-0."""
    path = Path(path)
    if path.name == METADATA_PARTITION_DIR and path.is_dir():
        return path
    meta = path / METADATA_PARTITION_DIR
    if not path.is_dir():
        raise InputError("no such directory", path=str(path))
    if not meta.is_dir():
        raise InputError(
            f"no {METADATA_PARTITION_DIR} here: not a KRaft log dir (a ZooKeeper-era cluster keeps "
            f"its metadata in ZooKeeper)",
            path=str(path),
        )
    return meta


def read_metadata_image(path: Path, at_offset: int | None = None) -> MetadataImageRead:
    """The image of the log dir (or __cluster_metadata-0 dir) `path`, as of the end of its
    metadata log or of the record at `at_offset`."""
    meta = metadata_dir(path)
    read = replay_metadata_log(meta, MetadataImage, until=at_offset)
    if at_offset is not None and read.damage is None and read.next_offset <= at_offset:
        reached = f"offset {read.next_offset - 1}" if read.next_offset else "no offset"
        raise InputError(
            f"no image as of offset {at_offset}: the snapshots ending at or before it and the log after "
            f"them reach {reached} (a snapshot's log may have been deleted, or the log ends sooner)",
            path=str(meta),
        )
    return MetadataImageRead(
        str(meta),
        read.image,
        read.snapshot,
        read.damage,
        read.skipped,
        read.next_offset,
        at_offset,
        QuorumState.read(meta / "quorum-state"),
    )
