"""Two log dirs of one broker for move-partition's tests: the example log dir (Kafka 3.3.1) as
the source, shut down cleanly, and a second dir with a stale cleaner entry for the partition
moved (KAFKA-8362: what a hand move leaves)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from kafkalog_cli.ops import move_partition as ops
from kafkalog_cli.ops import recover
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import LOADED, partition_dirs_for
from kafkalog_cli.storage.names import TopicPartition
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.paths import EXAMPLES

TP = TopicPartition("multi-segment", 0)


def two_log_dirs(root: Path) -> tuple[Path, Path]:
    src, dst = root / "disk1", root / "disk2"
    shutil.copytree(EXAMPLES, src)
    (src / ".kafka_cleanshutdown").write_bytes(b"")
    dst.mkdir()
    shutil.copy(src / "meta.properties", dst / "meta.properties")
    (dst / ".kafka_cleanshutdown").write_bytes(b"")
    shutil.copytree(src / "codec-gzip-0", dst / "codec-gzip-0")
    shutil.rmtree(src / "codec-gzip-0")
    (dst / "cleaner-offset-checkpoint").write_text("0\n1\nmulti-segment 0 999\n")
    (dst / "recovery-point-offset-checkpoint").write_text("0\n1\ncodec-gzip 0 60\n")
    return src, dst


def move(
    src: Path, dst: Path, quarantine: Path | None = None, fault_after: int | None = None, tp=TP
) -> dict:
    plan = ops.plan(src, dst, tp, future_id="f" * 32)
    keeper = Quarantine(quarantine, "move-partition", other_log_dirs=(src,))
    return ops.apply(plan, FsOps(dst, keeper, fault_after=fault_after))


_UUID = re.compile(r"\.[0-9a-f]{32}-(delete|future)")


def state(*dirs: Path) -> dict[str, bytes]:
    """Every file under the log dirs (the .lock aside), with the uuids of -delete and -future
    names replaced: what a run leaves, comparable between runs."""
    out = {}
    for d in dirs:
        for root, _, files in os.walk(d):
            for n in files:
                f = Path(root) / n
                if n != ".lock":
                    out[_UUID.sub(r".X-\1", str(f.relative_to(d.parent)))] = f.read_bytes()
    return out


def live_copies(tp, *dirs: Path) -> list[Path]:
    return [d / str(tp) for d in dirs if (d / str(tp)).is_dir()]


def recover_actions(d: Path) -> list:
    """What `kafkalog recover --dry-run d` would do (live and future logs, as a broker loads them)."""
    groups = partition_dirs_for([d], LOADED)
    out = []
    for ld, parts in groups.items():
        out += recover.plan(ld, parts, recover.RecoverOptions(now_ms=0)).actions
    return out
