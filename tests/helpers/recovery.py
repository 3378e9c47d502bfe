"""Recover runs and the damage the recover tests apply to examples/logdir: a torn transaction
under its marker, an active segment cut under a marker, a base offset overflow."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafkalog_cli.ops import recover
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.paths import EXAMPLES


def run(log_dir, tmp_path, **kw):
    groups = partition_dirs_for([log_dir])
    ((ld, parts),) = groups.items()
    p = recover.plan(ld, parts, recover.RecoverOptions(now_ms=1795248200000, **kw))
    report = apply(p, FsOps(ld, Quarantine(tmp_path / "q", "recover")))
    return p, report


OVERFLOW_BASE = 260584255782952  # 40 with byte 2 of its base offset flipped (xor 0xED)


def torn_txn(d: Path) -> str:
    """The transactional partition's last batch (its COMMIT marker at offset 14) cut short."""
    log = d / "txn-0" / f"{0:020d}.log"
    with open(log, "r+b") as f:
        f.truncate(600)
    return "txn-0"


def cut_active(d: Path) -> str:
    """The active segment truncated inside a batch, 7773 -> 5867 bytes: its offset index's last
    entry (offset 599, position 7101) now points past the file's end."""
    with open(d / "multi-segment-0" / f"{300:020d}.log", "r+b") as f:
        f.truncate(5867)
    return "multi-segment-0"


def overflow(d: Path) -> str:
    """A flipped byte in the last batch's base offset (not covered by the CRC), after a crash."""
    (d / ".kafka_cleanshutdown").unlink()
    log = d / "codec-none-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[1323 + 2] ^= 0xED
    log.write_bytes(bytes(data))
    return "codec-none-0"


CASES = {
    "torn-txn-under-marker": torn_txn,
    "active-cut-under-marker": cut_active,
    "offset-overflow": overflow,
}


def damaged(tmp_path: Path, case: str) -> tuple[Path, str]:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / ".lock").unlink()
    return d, CASES[case](d)
