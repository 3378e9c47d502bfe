"""Log dirs written by the broker itself, made once per run: every codec, broker-side
recompression, LogAppendTime, idempotent and transactional producers, a compacted topic the
cleaner has cleaned, multi-segment topics; timestamps out of order inside batches, so that the
in-session offset of the max timestamp (first record holding it) differs from the batch's last
offset.

`generate(work, seed)` returns a Generated with:
- live:   a copy taken while the broker ran (no .kafka_cleanshutdown, preallocated indexes);
- rolled: the broker's dir after it rolled every g-* topic in that same session (alter
          segment.ms=1, append one record), produced more, and shut down cleanly;
- clean:  = rolled, a cleanly shut down dir;
- rolled_again: `clean` after a restarted broker rolled every g-* topic again.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.differential.broker import Broker

SEGMENT_MS = "604800000"
TOPICS = {
    "g-none": ({}, {}),
    "g-gzip": ({}, {"compression_type": "gzip"}),
    "g-snappy": ({}, {"compression_type": "snappy"}),
    "g-lz4": ({}, {"compression_type": "lz4"}),
    "g-zstd": ({}, {"compression_type": "zstd"}),
    "g-broker-zstd": ({"compression.type": "zstd"}, {}),
    "g-logappend": ({"message.timestamp.type": "LogAppendTime"}, {}),
    "g-idem": ({}, {"enable_idempotence": True}),
    "g-idem-zstd": ({}, {"enable_idempotence": True, "compression_type": "zstd"}),
    "g-txn": ({}, {"transactional_id": "diff-txn", "enable_idempotence": True}),
    "g-compact": (
        {
            "cleanup.policy": "compact",
            "segment.bytes": "4096",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "86400000",
        },
        {},
    ),
    "g-multi": ({"segment.bytes": "2048", "index.interval.bytes": "128"}, {}),
}
COMMON = {"segment.bytes": "16384", "index.interval.bytes": "512", "segment.ms": SEGMENT_MS}


def topic_configs(name: str) -> dict[str, str]:
    return {**COMMON, **TOPICS[name][0]}


@dataclass
class Generated:
    live: Path
    rolled: Path
    rolled_again: Path
    clean: Path
    live_leo: dict[str, int]  # topic-0 -> log end offset when `live` was copied
    clean_leo: dict[str, int]


def _value(rng: random.Random) -> str:
    n = rng.choice([0, 1, 10, 40, 120, 300])
    alphabet = (
        "abcdefghijklmnopqrstuvwxyz0123456789"
        if rng.random() < 0.8
        else "".join(map(chr, range(256)))
    )
    return "".join(rng.choice(alphabet) for _ in range(n))


def _batches(
    rng: random.Random, topic: str, n_batches: int, t0: int, key_space: int | None = None
) -> list[dict]:
    out = []
    t = t0
    for i in range(n_batches):
        size = rng.choice([1, 2, 3, 5, 8])
        # out of order inside the batch: the max sits in the middle, sometimes twice
        ts = [t + rng.randrange(0, 50) for _ in range(size)]
        if size >= 3:
            m = max(ts) + 7
            ts[size // 2] = m
            if rng.random() < 0.5:
                ts[-2] = m
        t += 60
        recs = []
        for j in range(size):
            if key_space:
                k = f"key-{rng.randrange(key_space)}"
                v = None if rng.random() < 0.1 else _value(rng)
            else:
                k = None if rng.random() < 0.15 else f"{topic}-{i}-{j}"
                v = _value(rng)
            hs = [["h", _value(rng)[:10]]] if rng.random() < 0.2 else []
            recs.append([k, v, ts[j], hs])
        txn = None
        if topic == "g-txn":
            txn = "abort" if rng.random() < 0.3 else "commit"
        out.append({"records": recs, "txn": txn})
    return out


def _produce(b: Broker, rng: random.Random, t0: int, n_batches: int) -> None:
    jobs = []
    for name, (_, producer) in TOPICS.items():
        k = 12 if name == "g-compact" else None
        nb = n_batches * (3 if name in ("g-compact", "g-multi") else 1)
        jobs.append(
            {"topic": name, "producer": producer, "batches": _batches(rng, name, nb, t0, k)}
        )
    b.client({"op": "produce", "jobs": jobs})


def _roll_all(b: Broker) -> None:
    """The broker's roll of each g-* topic: segment.ms=1, then one record stamped now (after every
    timestamp produced) makes LogSegment.shouldRoll true on that append."""
    for name in TOPICS:
        b.client({"op": "alter", "topic": name, "configs": {"segment.ms": "1"}})
    time.sleep(1.0)  # the config reaches the log (a metadata update)
    b.client(
        {
            "op": "produce",
            "jobs": [
                {
                    "topic": n,
                    "producer": {},
                    "batches": [{"records": [["roll", "trigger", None, []]]}],
                }
                for n in TOPICS
            ],
        }
    )
    for name in TOPICS:
        b.client({"op": "alter", "topic": name, "configs": {"segment.ms": SEGMENT_MS}})
    time.sleep(1.0)


def leo(log_dir: Path, topic_partition: str) -> int:
    from kafkalog_cli.storage.names import offset_from_name
    from kafkalog_cli.storage.segment import Segment

    part = log_dir / topic_partition
    bases = sorted(
        o
        for f in part.iterdir()
        if f.name.endswith(".log") and (o := offset_from_name(f.name)) is not None
    )
    return Segment(part, bases[-1]).read_next_offset() if bases else 0


def _wait_cleaned(data: Path, topic: str, timeout: float = 30) -> None:
    f = data / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f.exists() and any(ln.startswith(topic + " ") for ln in f.read_text().splitlines()):
            time.sleep(1.0)
            return
        time.sleep(0.5)


def generate(work: Path, seed: int = 0) -> Generated:
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    data = work / "gen" / "data"
    b = Broker(
        data,
        work / "gen" / "broker",
        {"log.cleaner.enable": "true", "log.cleaner.backoff.ms": "500"},
    )
    b.format()
    b.start()
    try:
        b.client(
            {"op": "create", "topics": [{"name": n, "configs": topic_configs(n)} for n in TOPICS]}
        )
        t0 = int(time.time() * 1000) - 3_600_000
        _produce(b, rng, t0, 25)
        _wait_cleaned(data, "g-compact")
        _produce(b, rng, t0 + 1_800_000, 4)  # the active segments: appended in this session
        time.sleep(1.0)
        live = work / "live"
        subprocess.run(["cp", "-a", "--sparse=always", str(data), str(live)], check=True)
        (live / ".lock").unlink(missing_ok=True)
        live_leo = {f"{n}-0": leo(live, f"{n}-0") for n in TOPICS}
        _roll_all(b)
        _produce(b, rng, t0 + 2_400_000, 4)
    finally:
        run = b.stop()
    if not run.clean_stop:
        raise RuntimeError(f"generating broker did not shut down cleanly: {run.log[-2000:]}")
    clean = work / "clean"
    shutil.copytree(data, clean, symlinks=True)
    clean_leo = {f"{n}-0": leo(clean, f"{n}-0") for n in TOPICS}
    again = work / "rolled-again"
    shutil.copytree(clean, again, symlinks=True)
    b2 = Broker(again, work / "gen" / "broker2")
    b2.start()
    try:
        _roll_all(b2)
    finally:
        b2.stop()
    return Generated(
        live=live,
        rolled=data,
        rolled_again=again,
        clean=clean,
        live_leo=live_leo,
        clean_leo=clean_leo,
    )
