"""ListOffsets by timestamp over what `erase` left, judged offline with Kafka 3.3.1's own lookup
(no broker needed; tests/commands/test_erase_broker.py asks a real one):

- UnifiedLog.fetchOffsetByTimestamp searches only the FIRST segment whose largestTimestamp
  reaches the target (`segmentsCopy.find(_.largestTimestamp >= targetTimestamp)`), and answers
  no offset when that segment holds no record at or after it;
- LogSegment.largestTimestamp is the time index's last entry (maxTimestampSoFar, loaded from
  timeIndex.lastEntry), or the .log file's mtime when the segment has no timestamp (an empty
  .timeindex).

So every closed segment must say a largest timestamp no later than its records' own, or the
lookup stops in it and misses the records after it. The answer must be the first offset whose
timestamp is at or after the target, as before the erase."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES

PART = "multi-segment-0"


def records_by_segment(part: Path) -> list[tuple[Path, list[tuple[int, int]]]]:
    """(segment, [(offset, timestamp)] of its data and control records), as dump-log reads them."""
    out = []
    for log in sorted(part.glob("*.log")):
        r = CliRunner().invoke(cli, ["dump-log", str(log), "--deep-iteration", "--format", "json"])
        assert r.exit_code == 0, r.output
        recs = [json.loads(x) for x in r.output.splitlines()]
        out.append((log, [(x["offset"], x["timestamp"]) for x in recs if x["kind"] == "record"]))
    return out


def largest_timestamp(log: Path) -> int:
    """LogSegment.largestTimestamp: the time index's last entry, else the file's mtime."""
    ti = log.with_suffix(".timeindex")
    data = ti.read_bytes() if ti.exists() else b""
    last = int.from_bytes(data[-12:-4], "big", signed=True) if len(data) >= 12 else -1
    return last if last >= 0 else int(log.stat().st_mtime * 1000)


def kafka_lookup(segments: list[tuple[Path, list[tuple[int, int]]]], t: int) -> int | None:
    """UnifiedLog.fetchOffsetByTimestamp's answer for timestamp t."""
    for log, recs in segments:
        if largest_timestamp(log) >= t:
            return next((o for o, ts in recs if ts >= t), None)
    return None


def wrong_answers(part: Path) -> dict[int, tuple[int | None, int | None]]:
    """{timestamp: (Kafka's answer, the first offset at or after it)} where they differ."""
    segments = records_by_segment(part)
    recs = [r for _, rs in segments for r in rs]
    out = {}
    for t in sorted({ts for _, ts in recs}):
        want = min((o for o, ts in recs if ts >= t), default=None)
        got = kafka_lookup(segments, t)
        if got != want:
            out[t] = (got, want)
    return out


def test_list_offsets_by_timestamp_after_a_whole_segment_is_erased(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "d")
    part = tmp_path / "d" / PART
    (first, recs), *_ = records_by_segment(part)
    assert wrong_answers(part) == {}  # Kafka's lookup answers right before the erase
    r = CliRunner().invoke(
        cli,
        ["erase", str(tmp_path / "d"), "--topic", "multi-segment", "--offsets", "0-299"],
    )
    assert r.exit_code == 0, r.output
    assert [o for o, _ in recs] == list(range(300))  # the whole first segment went
    assert wrong_answers(part) == {}


def test_list_offsets_by_timestamp_after_part_of_a_segment_is_erased(tmp_path):
    """The first segment keeps one record: its time index says that record's timestamp."""
    shutil.copytree(EXAMPLES, tmp_path / "d")
    part = tmp_path / "d" / PART
    r = CliRunner().invoke(
        cli,
        ["erase", str(tmp_path / "d"), "--topic", "multi-segment", "--offsets", "1-299"],
    )
    assert r.exit_code == 0, r.output
    assert wrong_answers(part) == {}
    assert [o for o, _ in records_by_segment(part)[0][1]] == [0]
