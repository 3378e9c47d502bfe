"""Retention test helpers: the retain-* broker cases (copied with their mtimes, their params and
server.properties) and synthetic log dirs of one-record batches at chosen timestamps."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

from kafkalog_cli.config import ConfigResolver, cluster_metadata_configs, read_properties
from kafkalog_cli.formats.indexes import IndexBuilder
from kafkalog_cli.formats.producer_state import encode_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.ops import retain
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.paths import BROKER as FIXTURES

DAY = 86_400_000

TIME_ENTRY = struct.Struct(">qi")  # a .timeindex slot: timestamp, relative offset


def copy_case(case: str, dest: Path) -> Path:
    """before/ of retain-<case>, writable, with the broker's mtimes (MANIFEST) and preallocated
    index lengths (PREALLOCATED.txt) restored: time retention falls back to the mtime."""
    src = FIXTURES / f"retain-{case}"
    d = dest / "logs"
    shutil.copytree(src / "before", d)
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    pre = src / "PREALLOCATED.txt"
    if pre.exists():
        for line in pre.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                length, rel = line.split()
                os.truncate(d / rel, int(length))
    for line in (src / "before.MANIFEST.txt").read_text().splitlines():
        fields = line.split(maxsplit=3)
        if fields[0] == "d" or not (d / fields[3]).exists():
            continue
        sec, _, frac = fields[1].partition(".")
        ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0"))
        os.utime(d / fields[3], ns=(ns, ns))
    return d


def params(case: str) -> dict:
    return json.loads((FIXTURES / f"retain-{case}" / "PARAMS.json").read_text())


def server_properties(case: str) -> Path:
    return FIXTURES / f"retain-{case}" / "config" / "server.properties"


def resolver(case: str, d: Path) -> ConfigResolver:
    """The broker's configs: its server.properties (log.retention.hours=-1) and the topic configs
    recorded in the log dir's own __cluster_metadata."""
    return ConfigResolver(
        server_properties=read_properties(server_properties(case)),
        cluster_metadata=cluster_metadata_configs(d),
    )


def plan_for(d: Path, now_ms: int, res: ConfigResolver | None = None):
    ((log_dir, parts),) = partition_dirs_for([d]).items()
    return retain.plan(log_dir, parts, retain.RetainOptions(now_ms=now_ms, resolver=res))


def run(d: Path, now_ms: int, res=None, quarantine: Path | None = None, fault_after=None) -> dict:
    p = plan_for(d, now_ms, res)
    return apply(p, FsOps(d, Quarantine(quarantine, "retain"), fault_after=fault_after))


def partition_files(d: Path) -> dict[str, bytes]:
    """Every file of every topic partition (the KRaft metadata log is the controller's)."""
    out = {}
    for part in sorted(
        p for p in d.iterdir() if p.is_dir() and not p.name.startswith("__cluster_metadata")
    ):
        for f in sorted(part.iterdir()):
            out[f"{part.name}/{f.name}"] = f.read_bytes()
    return out


def kept_offsets(d: Path) -> set:
    out = set()
    for log in d.glob("*/*.log"):
        if not log.parent.name.startswith("__"):
            out |= {
                (log.parent.name, b.base_offset, b.last_offset)
                for b in iter_batches(log.read_bytes())
            }
    return out


def write_segment(d: Path, base: int, timestamps: list[int], interval: int = 100) -> int:
    """One record per batch at offsets base.., indexes as the broker builds them; the next offset."""
    d.mkdir(parents=True, exist_ok=True)
    log, builder = bytearray(), IndexBuilder(base, interval)
    for i, ts in enumerate(timestamps):
        batch = build_v2_batch(
            [SimpleRecord(key=b"k", value=b"v" * 40, timestamp=ts)],
            base + i,
            partition_leader_epoch=0,
        )
        builder.on_batch(len(log), len(batch), base + i, ts)
        log += batch
    builder.finish()
    (d / f"{base:020d}.log").write_bytes(log)
    (d / f"{base:020d}.index").write_bytes(builder.offset_index_bytes())
    (d / f"{base:020d}.timeindex").write_bytes(builder.time_index_bytes())
    return base + len(timestamps)


def make_log_dir(
    root: Path,
    partitions: dict[str, list[list[int]]],
    hw: dict | None = None,
    log_start: dict | None = None,
) -> Path:
    """A log dir whose partitions have one segment per timestamp list; high watermarks default to
    the log end offset; a producer snapshot at every segment base but the first."""
    root.mkdir(parents=True, exist_ok=True)
    leo = {}
    for name, segments in partitions.items():
        d, base = root / name, 0
        for i, ts in enumerate(segments):
            if i:
                (d / f"{base:020d}.snapshot").write_bytes(_EMPTY_SNAPSHOT)
            base = write_segment(d, base, ts)
        (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
        leo[name] = base
    hw = {**leo, **(hw or {})}
    lines = [
        f"{n.rsplit('-', 1)[0]} {n.rsplit('-', 1)[1]} {o}" for n, o in hw.items() if o is not None
    ]
    (root / "replication-offset-checkpoint").write_text(
        f"0\n{len(lines)}\n" + "".join(x + "\n" for x in lines)
    )
    starts = [
        f"{n.rsplit('-', 1)[0]} {n.rsplit('-', 1)[1]} {o}" for n, o in (log_start or {}).items()
    ]
    (root / "log-start-offset-checkpoint").write_text(
        f"0\n{len(starts)}\n" + "".join(x + "\n" for x in starts)
    )
    (root / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    return root


_EMPTY_SNAPSHOT = encode_producer_snapshot([])

NOW = 1_800_000_000_000

OLD, NEW = NOW - 30 * DAY, NOW - DAY  # with retention.ms = 7 days: expired, not expired


def res_with(**topic_configs) -> ConfigResolver:
    # every value that decides a deletion stated (no broker config here: retain refuses to guess)
    return ConfigResolver(
        overrides={"cleanup.policy": "delete", "retention.ms": str(7 * DAY)},
        topic_overrides={t: c for t, c in topic_configs.items()},
    )
