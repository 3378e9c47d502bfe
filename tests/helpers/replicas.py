"""Replicas for the compare-replicas tests: a replica log dir written from (epoch, start offset,
records) runs, and an unclean leader election between two of them."""

from __future__ import annotations

import struct
from pathlib import Path

from kafkalog_cli.formats.control import ControlRecordType
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

T0 = 1_700_000_000_000


def write_replica(
    root: Path,
    broker: int | None,
    batches: list[dict],
    *,
    hw: int | None = None,
    checkpoint: bool = True,
    topic: str = "t",
    partition: int = 0,
    topic_id: str | None = None,
) -> Path:
    """A log dir `root` holding one partition dir with one segment of `batches`; each batch a dict
    with `epoch`, `keys` (one record each) and optionally `pid`, `txn`, `marker` (COMMIT/ABORT),
    `value`. Returns the partition dir."""
    root.mkdir(parents=True, exist_ok=True)
    if broker is not None:
        (root / "meta.properties").write_text(f"#\n#x\nnode.id={broker}\nversion=1\ncluster.id=c\n")
    d = root / f"{topic}-{partition}"
    d.mkdir()
    log, offset, epochs = b"", 0, []
    for b in batches:
        ple = b.get("epoch", -1)
        if ple >= 0 and (not epochs or ple > epochs[-1][0]):
            epochs.append((ple, offset))
        if "marker" in b:
            kind = ControlRecordType[b["marker"]]
            recs = [
                SimpleRecord(
                    struct.pack(">hh", 0, int(kind)), struct.pack(">hi", 0, 0), T0 + offset
                )
            ]
            log += build_v2_batch(
                recs,
                offset,
                producer_id=b["pid"],
                producer_epoch=0,
                is_transactional=True,
                is_control=True,
                partition_leader_epoch=ple,
            )
        else:
            recs = [
                SimpleRecord(k.encode(), b.get("value", k).encode(), T0 + offset + i)
                for i, k in enumerate(b["keys"])
            ]
            pid = b.get("pid", -1)
            log += build_v2_batch(
                recs,
                offset,
                producer_id=pid,
                producer_epoch=0 if pid >= 0 else -1,
                base_sequence=0 if pid >= 0 else -1,
                is_transactional=b.get("txn", False),
                partition_leader_epoch=ple,
            )
        offset += len(b["keys"]) if "keys" in b else 1
    (d / "00000000000000000000.log").write_bytes(log)
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000000.timeindex").write_bytes(b"")
    if checkpoint:
        (d / "leader-epoch-checkpoint").write_text(
            f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs)
        )
    if hw is not None:
        (root / "replication-offset-checkpoint").write_text(f"0\n1\n{topic} {partition} {hw}\n")
    if topic_id is not None:
        (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}")
    return d


def run(n: int, epoch: int, prefix: str = "k", start: int = 0) -> list[dict]:
    """n batches of one record each in `epoch`."""
    return [{"epoch": epoch, "keys": [f"{prefix}{start + i}"]} for i in range(n)]


def unclean_election(tmp_path: Path, **kw) -> tuple[Path, Path]:
    """Broker 1 led epochs 0 and 1 (150 records); broker 2 had only the first 80 when it became
    leader in epoch 2 by an unclean election, and took 40 more."""
    a = write_replica(tmp_path / "b1", 1, run(100, 0) + run(50, 1, start=100), hw=120, **kw)
    b = write_replica(tmp_path / "b2", 2, run(80, 0) + run(40, 2, "new", 80), hw=120, **kw)
    return a, b
