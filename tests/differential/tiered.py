"""Tiered log dirs written by a real broker (3.6+, with Kafka's LocalTieredStorage beside it:
broker.tiered_supported()), and what such a dir serves.

`generate_tiered(work, seed)` makes one, as the broker leaves it after a clean stop:
- t-time:  remote.storage.enable=true, local.retention.ms=1000: closed segments uploaded, then
           deleted locally (a roll by retention leaves one local segment, often empty);
- t-bytes: remote.storage.enable=true, local.retention.bytes=49152: closed segments uploaded,
           the oldest deleted locally, recent uploaded ones still local, the active one not uploaded;
- t-plain: the same producing without tiering (segment.bytes 16384 everywhere).
Its `data` is the log dir, `remote` LocalTieredStorage's root (rsm.config.dir). Every broker started
on a copy needs `broker.tiered_config(<copy of remote>)` (`TieredDir.copy` makes both).

`tiered_segments(remote, name)` lists a partition's uploaded segments with `kafkalog dump-log` (on
copies named <base>.log), so that a load check can compare what the broker serves from the log
start offset (remote first) with what a consumer receives from dump-log of remote + local
(loadcheck.consumed).
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tests.differential.broker import Broker, tiered_config
from tests.differential.generate import _batches

SEGMENT = {
    "segment.bytes": "16384",
    "index.interval.bytes": "512",
    "file.delete.delay.ms": "500",
    "retention.ms": "-1",
}
TIERED_TOPICS = {
    "t-time": {**SEGMENT, "remote.storage.enable": "true", "local.retention.ms": "1000"},
    "t-bytes": {
        **SEGMENT,
        "remote.storage.enable": "true",
        "local.retention.ms": "-2",
        "local.retention.bytes": "49152",
    },
    "t-plain": dict(SEGMENT),
}
# __remote_log_metadata with one partition keeps the generated dirs small; the metadata of every
# tiered partition is then in __remote_log_metadata-0
METADATA_PARTITIONS = 1
BROKER = {"log.retention.check.interval.ms": "1000", "log.segment.delete.delay.ms": "500"}
# TopicBasedRemoteLogMetadataManager's ConsumerTask, once it has read the metadata of the broker's
# tiered partitions
RLMM_READY = "assigned user-partitions mapped to the"


@dataclass
class TieredDir:
    data: Path
    remote: Path

    def copy(self, dst: Path) -> TieredDir:
        """A copy of both (the log dir as tests/differential/cases.copy_dir makes it)."""
        from tests.differential.cases import copy_dir

        dst.mkdir(parents=True, exist_ok=True)
        data = copy_dir(self.data, dst / "data")
        remote = dst / "remote"
        shutil.copytree(self.remote, remote, symlinks=True)
        return TieredDir(data, remote)

    def config(self) -> dict[str, str]:
        return {**BROKER, **tiered_config(self.remote, METADATA_PARTITIONS)}


def local_bases(part: Path) -> list[int]:
    return sorted(
        int(f.name[:20])
        for f in part.iterdir()
        if f.name.endswith(".log") and f.name[:20].isdigit()
    )


def remote_dir(remote: Path, name: str) -> Path | None:
    """LocalTieredStorage's dir of partition `name` ("<topic>-<p>"): <topic>-<p>-<topic id>."""
    root = remote / "kafka-tiered-storage"
    if not root.is_dir():
        return None
    # a topic id is 22 characters of URL-safe base64, '-' and '_' included
    found = [
        d
        for d in root.iterdir()
        if d.is_dir() and d.name.startswith(name + "-") and len(d.name) == len(name) + 23
    ]
    return found[0] if found else None


def remote_bases(remote: Path, name: str) -> list[int]:
    d = remote_dir(remote, name)
    return sorted(int(f.name[:20]) for f in d.iterdir() if f.name.endswith(".log")) if d else []


def _tiered_done(t: TieredDir) -> bool:
    for name in ("t-time-0", "t-bytes-0"):
        loc, rem = local_bases(t.data / name), remote_bases(t.remote, name)
        if not rem or not loc or loc[0] == 0:
            return False
        if name == "t-time-0" and len(loc) != 1:
            return False
        if name == "t-bytes-0" and set(loc[:-1]) - set(rem):  # a closed local segment not uploaded
            return False
    return True


def generate_tiered(
    work: Path,
    seed: int = 0,
    n_batches: int = 150,
    timeout: float = 240,
    extra_topics: dict[str, dict] | None = None,
    extra_jobs=None,
) -> TieredDir:
    """The tiered dir; `extra_topics` (name -> configs) created beside TIERED_TOPICS and the
    client.py produce jobs `extra_jobs(rng)` returns produced with them."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    t = TieredDir(work / "data", work / "remote")
    t.remote.mkdir(parents=True, exist_ok=True)
    b = Broker(t.data, work / "broker", t.config())
    b.format()
    b.start()
    try:
        topics = {**TIERED_TOPICS, **(extra_topics or {})}
        b.client({"op": "create", "topics": [{"name": n, "configs": c} for n, c in topics.items()]})
        t0 = int(time.time() * 1000) - 3_600_000
        batches = _batches(rng, "t", n_batches, t0)
        b.client(
            {
                "op": "produce",
                "jobs": [{"topic": n, "producer": {}, "batches": batches} for n in TIERED_TOPICS]
                + (extra_jobs(rng) if extra_jobs else []),
            }
        )
        deadline = time.monotonic() + timeout
        while not _tiered_done(t):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"segments not tiered in {timeout} s: t-time local "
                    f"{local_bases(t.data / 't-time-0')} remote {remote_bases(t.remote, 't-time-0')}"
                )
            time.sleep(1.0)
        b.wait_no_deleted()
    finally:
        run = b.stop()
    if not run.clean_stop:
        raise RuntimeError(f"the tiered broker did not shut down cleanly: {run.log[-2000:]}")
    return t


def tiered_segments(remote: Path, name: str, work: Path) -> list:
    """Partition `name`'s uploaded segments as `kafkalog dump-log` lists them (loadcheck.listing),
    on copies of their .log and .index named <base>.log, <base>.index."""
    from tests.differential.loadcheck import listing

    d = remote_dir(remote, name)
    if d is None:
        return []
    part = work / name
    if part.exists():
        shutil.rmtree(part)
    part.mkdir(parents=True)
    for f in d.iterdir():
        if f.name.endswith((".log", ".index")):
            shutil.copyfile(f, part / f"{f.name[:20]}{f.suffix}")
    return listing(part)


def serves_from_log_start(t: TieredDir, work: Path, partitions: list[str]) -> dict:
    """A broker on a copy of `t` serves each partition from its log start offset through the
    remote tier: what it served against dump-log of the uploaded segments then the local ones
    (the local ones from the first offset no upload holds)."""
    from tests.differential.broker import run_broker
    from tests.differential.loadcheck import consumed, listing

    c = t.copy(work / "copy")

    def consume(b):
        # remote reads before the metadata manager has read __remote_log_metadata fail (an ERROR,
        # "Remote log metadata cache is not initialized", the client retries): wait for it
        b.wait_log(RLMM_READY)
        return b.client({"op": "consume", "partitions": partitions})

    run, got = run_broker(c.data, work / "broker", consume, c.config())
    from tests.differential.compare import METADATA

    recovered = [
        ln
        for ln in run.log.splitlines()
        if "Recovering unflushed segment" in ln and METADATA not in ln
    ]
    out = {"errors": run.errors, "recovered": recovered, "partitions": {}}
    for name in partitions:
        # below the local log start offset (the first local segment's base) the broker reads the
        # remote tier (RemoteLogManager.read: the uploaded segment holding the offset, from its
        # first batch reaching it), from it on the local log: one model of both (consumed)
        local = listing(t.data / name)
        local_start = local[0].base if local else None
        remote = [
            s
            for s in tiered_segments(t.remote, name, work / "remote-listing")
            if local_start is None or s.base < local_start
        ]
        g = got[name]
        want = consumed(remote + local, g["start"], g["end"])
        out["partitions"][name] = {
            "start": g["start"],
            "end": g["end"],
            "served": len(g["records"]),
            "listed": len(want),
            "same": g["records"] == want,
            "local_start": (local_bases(t.data / name) or [None])[0],
            "uploaded": remote_bases(t.remote, name),
        }
    return out
