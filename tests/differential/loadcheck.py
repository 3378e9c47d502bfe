"""kafkalog as a user runs it (a subprocess of this python), and the check that a broker loads
what kafkalog wrote: started on the result after a clean shutdown, it recovers nothing, logs no
ERROR, and serves, from the log start offset kafkalog set, exactly the records a consumer receives
from the segments `kafkalog dump-log --format json` lists (`consumed`: by position, as the broker
serves them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.differential.broker import BrokerDidNotStart, run_broker
from tests.differential.compare import METADATA
from tests.helpers.paths import SRC


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str


def kafkalog(*args, cwd: Path | None = None) -> Result:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )
    return Result(r.returncode, r.stdout, r.stderr)


def now_ms() -> int:
    return int(time.time() * 1000)


def partition_dirs(log_dir: Path) -> list[Path]:
    """The topic partition dirs (not the metadata log, not a 3.6+ broker's remote-log-index-cache)."""
    return sorted(
        p
        for p in log_dir.iterdir()
        if p.is_dir()
        and "-" in p.name
        and p.name != METADATA
        and p.name.rsplit("-", 1)[1].isdigit()
    )


def _log_start(log_dir: Path, part: Path) -> int:
    from kafkalog_cli.storage.names import offset_from_name

    f = log_dir / "log-start-offset-checkpoint"
    if f.exists():
        t, p = part.name.rsplit("-", 1)
        for ln in f.read_text().splitlines()[2:]:
            if ln.split()[:2] == [t, p]:
                return int(ln.split()[2])
    bases = sorted(
        o
        for x in part.iterdir()
        if x.name.endswith(".log") and (o := offset_from_name(x.name)) is not None
    )
    return bases[0] if bases else 0


@dataclass
class Batch:
    """A batch as dump-log lists it: where it is, its last offset, its data records."""

    position: int
    size: int
    last_offset: int
    records: list[list] = field(
        default_factory=list
    )  # [offset, ts, key, value, headers], no control records


@dataclass
class Segment:
    base: int
    batches: list[Batch]
    index: list[tuple[int, int]] = field(
        default_factory=list
    )  # the .index's (offset, position) entries


def listing(part: Path) -> list[Segment]:
    """The segments of a partition dir as `kafkalog dump-log --format json` lists them, in order,
    each with the entries of its offset index (read as the broker maps it: every 8 bytes)."""
    r = kafkalog(
        "dump-log", part, "--format", "json", "--print-data-log", "--payload-encoding", "base64"
    )
    if r.rc != 0:
        raise RuntimeError(f"dump-log {part}: rc {r.rc}: {r.stderr}")
    from kafkalog_cli.storage.names import offset_from_name

    segments: dict[str, Segment] = {}
    for ln in r.stdout.splitlines():
        o = json.loads(ln)
        if o.get("kind") == "file":
            base = offset_from_name(Path(o["file"]).name)
            segments[o["file"]] = Segment(
                base, [], _index_entries(Path(o["file"]).with_suffix(".index"), base)
            )
        elif o.get("kind") == "batch":
            segments[o["file"]].batches.append(Batch(o["position"], o["size"], o["last_offset"]))
        elif o.get("kind") == "record" and not o.get("is_control"):
            segments[o["file"]].batches[-1].records.append(
                [
                    o["offset"],
                    o["timestamp"],
                    o["key"],
                    o["value"],
                    [[h["key"], h["value"]] for h in o["headers"]],
                ]
            )
    return sorted(segments.values(), key=lambda s: s.base)


def _index_entries(f: Path, base: int) -> list[tuple[int, int]]:
    import struct

    if not f.exists():
        return []
    b = f.read_bytes()
    return [(base + rel, pos) for rel, pos in struct.iter_unpack(">ii", b[: len(b) - len(b) % 8])]


def records_of(segments: list[Segment]) -> list[list]:
    return [r for s in segments for b in s.batches for r in b.records]


def listed_records(part: Path) -> list[list]:
    """The data records dump-log lists for a partition dir (control records are not served)."""
    return records_of(listing(part))


@dataclass
class LoadCheck:
    problems: list[str] = field(default_factory=list)
    partitions: int = 0
    records: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def broker_loads(log_dir: Path, work: Path) -> LoadCheck:
    """Start a broker on a copy of `log_dir` (marked cleanly shut down), consume every partition,
    stop; compare with dump-log of `log_dir` itself."""
    import shutil

    copy = work / "data"
    shutil.copytree(log_dir, copy, symlinks=True)
    (copy / ".kafka_cleanshutdown").touch()
    parts = partition_dirs(log_dir)
    check = LoadCheck(partitions=len(parts))
    want = {}
    for p in parts:
        try:
            want[p.name] = (listing(p), _log_start(log_dir, p))
        except RuntimeError as e:
            check.problems.append(str(e)[:400])
    try:
        run, got = run_broker(
            copy,
            work / "broker",
            lambda b: b.client({"op": "consume", "partitions": [p.name for p in parts]}),
        )
    except BrokerDidNotStart as e:
        check.problems.append(f"broker did not start: {e.reason[:400]}")
        return check
    except RuntimeError as e:  # the client could not consume (a corrupt batch served)
        check.problems.append(str(e)[-400:])
        return check
    recovered = [
        ln
        for ln in run.log.splitlines()
        if "Recovering unflushed segment" in ln and METADATA not in ln
    ]
    check.problems += [f"broker recovered: {ln[ln.find('partition=') :][:160]}" for ln in recovered]
    check.problems += [f"broker ERROR: {ln[:300]}" for ln in run.errors]
    loaded = run.loaded_log_end_offsets
    for name, (segments, start) in want.items():
        g = got.get(name)
        if g is not None and name in loaded and g["end"] > loaded[name]:
            # appended once loaded (a transaction coordinator completing a transaction): compare
            # what was there
            g = {
                **g,
                "end": loaded[name],
                "records": [x for x in g["records"] if x[0] < loaded[name]],
            }
        if g is None:
            check.problems.append(f"{name}: not consumed")
            continue
        check.problems += served_problems(name, g, segments, start)
        check.records += len(g["records"])
    return check


# kafka-python's max_partition_fetch_bytes (client.py takes the default): one fetch's bytes of a partition
MAX_PARTITION_FETCH_BYTES = 1048576


def consumed(segments: list[Segment], start: int, end: int) -> list[list]:
    """The records client.py's consume receives from a broker serving these segments: it fetches
    from `start` while its position is below `end` (the high watermark, the log end offset once a
    cleanly shut down dir is loaded).

    The broker serves by position, not by offset (Kafka 3.3.1 LocalLog.read, LogSegment.read and
    translateOffset, FileRecords.searchForOffsetWithSize): from the floor segment of the fetch
    offset on, the first batch at or after the offset index's entry for it whose last offset
    reaches the fetch offset, then the bytes after it to the segment's end, at most one fetch's
    worth (the first batch whole). kafka-python (PartitionRecords) drops the leading records below
    its fetch offset, keeps every record after them whatever its offset, and fetches next from the
    last batch's next offset. So a batch whose base offset jumps ahead (a flipped byte the CRC does
    not cover) is served where it lies, between lower offsets."""
    out: list[list] = []
    f = start
    while f < end:
        served = _fetch(segments, f)
        if not served:
            break
        recs = [r for b in served for r in b.records]
        i = next((k for k, r in enumerate(recs) if r[0] >= f), len(recs))
        out += recs[i:]
        nxt = served[-1].last_offset + 1
        if nxt <= f:  # the position would go back: the client would fetch the same bytes again
            break
        f = nxt
    return out


def _fetch(segments: list[Segment], offset: int) -> list[Batch]:
    floor = max((k for k, s in enumerate(segments) if s.base <= offset), default=0)
    for seg in segments[floor:]:
        at = max((pos for o, pos in seg.index if o <= offset), default=0)  # OffsetIndex.lookup
        first = next(
            (k for k, b in enumerate(seg.batches) if b.position >= at and b.last_offset >= offset),
            None,
        )
        if first is None:
            continue  # the next segment
        taken = [seg.batches[first]]
        for b in seg.batches[first + 1 :]:
            if b.position + b.size - taken[0].position > MAX_PARTITION_FETCH_BYTES:
                break
            taken.append(b)
        return taken
    return []


def served_problems(name: str, g: dict, segments: list[Segment], start: int) -> list[str]:
    """What is wrong with what the broker served of partition `name` (client.py's consume answer
    `g`: start, end, records) against what a consumer from kafkalog's log start offset receives
    from the segments dump-log lists (consumed)."""
    problems = []
    if g["start"] != start:
        problems.append(f"{name}: broker's log start offset {g['start']}, kafkalog set {start}")
    expected = consumed(segments, g["start"], g["end"])
    reached = {r[0] for r in expected}
    unreached = [r[0] for r in records_of(segments) if r[0] >= g["start"] and r[0] not in reached]
    if unreached:
        problems.append(
            f"{name}: dump-log lists {len(unreached)} records at or above the log start offset "
            f"a consumer does not reach before the broker's end offset {g['end']}: "
            f"{unreached[:5]}"
        )
    if g["records"] != expected:
        problems.append(
            f"{name}: served {len(g['records'])} records, a consumer of what dump-log lists "
            f"receives {len(expected)}" + _first_mismatch(g["records"], expected)
        )
    return problems


def _first_mismatch(a: list, b: list) -> str:
    for x, y in zip(a, b):
        if x != y:
            return f"; first difference: broker {x!r:.200} vs dump-log {y!r:.200}"
    return ""
