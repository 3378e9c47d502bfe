"""Shared by the compact tests: the corpus fixtures with their mtimes restored, and a compact run."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops import compact
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine

FIXTURES = Path(__file__).parent.parent / "fixtures" / "broker"


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
    return ConfigResolver(topic_overrides={
        name.rsplit("-", 1)[0]: {k: str(v) for k, v in part["configs"].items()}
        for name, part in p["partitions"].items()})


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
            out.append(("batch", b.base_offset, b.last_offset, b.producer_id, b.producer_epoch, b.base_sequence,
                        b.attributes, b.partition_leader_epoch))
            for r in b.records():
                out.append((r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers)))
    return out
