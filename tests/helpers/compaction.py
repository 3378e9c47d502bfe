"""What the compact tests share: the compact-* broker cases with their mtimes restored, a compact
run, the arguments the broker ran with, and builders and readers of generated partitions."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.records import SimpleRecord, iter_batches
from kafkalog_cli.formats.txnindex import AbortedTxn, encode_txn_index
from kafkalog_cli.ops import compact
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.partition import Partition
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.paths import BROKER as FIXTURES


def restore(case: str, snapshot: str, dst: Path) -> Path:
    """Copy `compact-<case>/<snapshot>` to dst with the broker's mtimes (git keeps none)."""
    src = FIXTURES / f"compact-{case}"
    shutil.copytree(src / snapshot, dst)
    for line in (src / f"{snapshot}.MANIFEST.txt").read_text().splitlines():
        parts = line.split()
        if parts[0] == "d" or not (dst / parts[3]).exists():
            continue
        s, ns = parts[1].split(".")
        t = int(s) * 10**9 + int(ns)
        os.utime(dst / parts[3], ns=(t, t))
    return dst


def params(case: str) -> dict:
    return json.loads((FIXTURES / f"compact-{case}" / "PARAMS.json").read_text())


def resolver_for(case: str) -> ConfigResolver:
    p = params(case)
    return ConfigResolver(
        topic_overrides={
            name.rsplit("-", 1)[0]: {k: str(v) for k, v in part["configs"].items()}
            for name, part in p["partitions"].items()
        }
    )


def run(log_dir: Path, parts: list[str], now_ms: int, resolver: ConfigResolver, **kw) -> dict:
    opts = compact.CompactOptions(now_ms=now_ms, resolver=resolver, **kw)
    cp = compact.plan(log_dir, [log_dir / p for p in parts], opts)
    return compact.apply(cp, FsOps(log_dir, Quarantine(log_dir.parent / "q", "compact")), opts)


def records_of(part_dir: Path) -> list[tuple]:
    """Every batch's identity and every record, in log order."""
    out = []
    for log in sorted(part_dir.glob("*.log")):
        data = log.read_bytes()
        for b in iter_batches(data):
            out.append(
                (
                    "batch",
                    b.base_offset,
                    b.last_offset,
                    b.producer_id,
                    b.producer_epoch,
                    b.base_sequence,
                    b.attributes,
                    b.partition_leader_epoch,
                )
            )
            for r in b.records():
                out.append(
                    (
                        r.offset,
                        r.timestamp,
                        r.key,
                        r.value,
                        tuple((h.key, h.value) for h in r.headers),
                    )
                )
    return out


HOUR, DAY = 3_600_000, 86_400_000
NOW = 1_800_000_000_000
T = NOW - HOUR  # when the records were written


def recs(*pairs, ts=T):
    return [
        SimpleRecord(None if k is None else k.encode(), None if v is None else v.encode(), ts)
        for k, v in pairs
    ]


def write_segment(
    part: Path,
    base: int,
    batches: list[bytes],
    mtime_ms: int | None = None,
    aborted: list[AbortedTxn] = (),
) -> None:
    part.mkdir(parents=True, exist_ok=True)
    log = part / f"{base:020d}.log"
    log.write_bytes(b"".join(batches))
    if aborted:
        (part / f"{base:020d}.txnindex").write_bytes(encode_txn_index(aborted))
    if mtime_ms is not None:
        for f in part.glob(f"{base:020d}.*"):
            os.utime(f, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def replicated_to_the_end(part: Path, overwrite: bool = False) -> None:
    """A replication-offset-checkpoint with the partition's log end offset (`overwrite` False:
    unless the test wrote one): without it the broker loads the high watermark at the log start
    offset, and nothing is cleanable."""
    path = part.parent / names.REPLICATION_CHECKPOINT
    if overwrite or not path.exists():
        topic, _, partition = part.name.rpartition("-")
        path.write_bytes(
            ckpt.encode_offsets({(topic, int(partition)): Partition.open(part).log_end_offset})
        )


def consumer_view(part: Path) -> list[tuple]:
    """(offset, key, value) of every record a consumer from the start receives (control batches
    are not delivered)."""
    out = []
    for log in sorted(part.glob("*.log")):
        for b in iter_batches(log.read_bytes()):
            if not b.is_control:
                out += [
                    (r.offset, r.key and r.key.decode(), r.value and r.value.decode())
                    for r in b.records()
                ]
    return out


def batches(part: Path) -> list[tuple]:
    """(base offset, last offset, producer id, epoch, base sequence, record count, control type or
    None, delete horizon) of every batch in the log."""
    out = []
    for log in sorted(part.glob("*.log")):
        for b in iter_batches(log.read_bytes()):
            ctype = b.control_type() if b.is_control else None
            out.append(
                (
                    b.base_offset,
                    b.last_offset,
                    b.producer_id,
                    b.producer_epoch,
                    b.base_sequence,
                    len(b.records()),
                    None if ctype is None else ctype.name,
                    b.delete_horizon_ms,
                )
            )
    return out


# what the broker of the compact-keyed-overwrites case ran with
CFG = [
    "--topic-config",
    "cmp-none:cleanup.policy=compact",
    "--topic-config",
    "cmp-none:segment.bytes=16384",
    "--topic-config",
    "cmp-none:index.interval.bytes=512",
    "--topic-config",
    "cmp-none:min.cleanable.dirty.ratio=0.01",
    # the rest of what the broker ran with (PARAMS.json): compact refuses to guess them
    "--topic-config",
    "cmp-none:delete.retention.ms=86400000",
    "--topic-config",
    "cmp-none:min.compaction.lag.ms=0",
]


DIRTY = ["--now", "1795248446186"] + [
    a
    for t in ("cmp-none", "cmp-lz4")
    for kv in (
        "cleanup.policy=compact",
        "segment.bytes=16384",
        "index.interval.bytes=512",
        "min.cleanable.dirty.ratio=0.01",
        "delete.retention.ms=86400000",
        "min.compaction.lag.ms=0",
    )
    for a in ("--topic-config", f"{t}:{kv}")
]
