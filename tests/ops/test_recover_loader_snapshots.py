"""The producer snapshots recover leaves are those LogLoader.load leaves, step by step (3.3.1
LogLoader.scala, 4.0 LogLoader.java): every segment it recovers gets a ProducerStateManager of its
own, rebuildProducerState up to its base first (truncateAndReload: the snapshots above that base
go; the log replayed from the latest one left, a snapshot at each of the last two segment bases on
the way and one at the base), then LogSegment.recover and a snapshot at its map end. The cases
are the differential campaign's against the 4.0.0-SNAPSHOT broker (tests/differential/README.md):
recover seed 15 batch 4 (g-multi-0) and seed 17 batch 1 (g-idem-0); seed 17 batch 0
(logappend-time-0) is the clean load whose older stray recover does not keep."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import encode_producer_snapshot, parse_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches

NOW = 1_800_000_000_000
T = NOW - 60_000
PART = "t-0"


def _batch(base: int, n: int, pid: int, seq: int = 0) -> bytes:
    return build_v2_batch(
        [SimpleRecord(b"k", b"v", T + base + i) for i in range(n)],
        base,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        partition_leader_epoch=0,
    )


def _time_index(last_offset: int, base: int) -> bytes:
    """The one entry LogSegment.recover (and a roll) leaves for a segment of small batches: its
    largest timestamp at the last offset."""
    return (T + last_offset).to_bytes(8, "big") + (last_offset - base).to_bytes(4, "big")


def _log_dir(
    tmp_path: Path,
    segments: dict[int, list[bytes]],
    snapshots: list[int],
    recovery_point: int,
    clean: bool = False,
) -> Path:
    """One partition with these segments (base -> batches), an empty snapshot at each offset of
    `snapshots` (what a broker that rolled and stopped leaves, minus the producers: every test
    here asserts which state a snapshot holds), and the recovery point."""
    root = tmp_path / "logdir"
    d = root / PART
    d.mkdir(parents=True)
    bases = sorted(segments)
    for i, b in enumerate(bases):
        raw = b"".join(segments[b])
        (d / f"{b:020d}.log").write_bytes(raw)
        (d / f"{b:020d}.index").write_bytes(b"")
        last = (bases[i + 1] if i + 1 < len(bases) else _end(segments)) - 1
        (d / f"{b:020d}.timeindex").write_bytes(_time_index(last, b))
    for off in snapshots:
        (d / f"{off:020d}.snapshot").write_bytes(_empty_snapshot())
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (root / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {recovery_point}\n")
    (root / "log-start-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    if clean:
        (root / ".kafka_cleanshutdown").write_text("")
    return root


def _end(segments: dict[int, list[bytes]]) -> int:
    last = max(segments)
    raw = b"".join(segments[last])
    return max(b.last_offset for b in iter_batches(raw)) + 1


def _empty_snapshot() -> bytes:
    return encode_producer_snapshot([])


def _recover(root: Path, *args: str) -> None:
    r = CliRunner().invoke(cli, ["recover", "--now", str(NOW), "--no-quarantine", *args, str(root)])
    assert r.exit_code in (0, 1), r.output
    assert "Traceback" not in r.output


def _snapshots(root: Path) -> dict[int, list[tuple[int, int]]]:
    """offset -> the (producer id, last offset) of each entry of the snapshot there."""
    return {
        int(f.name.split(".")[0]): sorted(
            (e.producer_id, e.last_offset) for e in parse_producer_snapshot(f.read_bytes()).entries
        )
        for f in sorted((root / PART).glob("*.snapshot"))
    }


def _multi(n: int = 6) -> dict[int, list[bytes]]:
    """Segments at 0, 10, .. each holding one batch of 10 records of its own producer 100 + i."""
    return {10 * i: [_batch(10 * i, 10, 100 + i)] for i in range(n)}


def _state_below(offset: int) -> list[tuple[int, int]]:
    return [(100 + i, 10 * i + 9) for i in range(offset // 10)]


def test_an_index_less_segment_then_the_active_one_leave_the_snapshots_the_loader_takes(tmp_path):
    """Seed 15 batch 4, g-multi-0: the middle segment's .index removed, no clean shutdown, the
    recovery point at the log end. loadSegmentFiles recovers segment 20 over the segments before
    it (truncateAndReload deletes the snapshots above 20; one at its end, 30); recoverLog recovers
    the active segment 50: its rebuild loads 30 and replays 30 and 40, snapshotting 40 (the
    second-to-last base) and 50; then one at the log end, 60. kafkalog used to delete 40."""
    root = _log_dir(tmp_path, _multi(), snapshots=[10, 20, 30, 40, 50, 60], recovery_point=60)
    (root / PART / f"{20:020d}.index").unlink()
    _recover(root)
    snaps = _snapshots(root)
    assert sorted(snaps) == [10, 20, 30, 40, 50, 60]
    # 10 and 20 are the files as they were (empty); the rest the state the loader wrote
    assert snaps[10] == snaps[20] == []
    assert snaps[30] == [(102, 29)]  # recovered from the snapshot at 20 (empty) + segment 20
    assert snaps[40] == [(102, 29), (103, 39)]
    assert snaps[50] == [(102, 29), (103, 39), (104, 49)]
    assert snaps[60] == [(102, 29), (103, 39), (104, 49), (105, 59)]
    _recover(root)  # a fixed point
    assert _snapshots(root) == snaps


def test_a_jumped_base_offset_snapshots_the_next_segment_base_from_its_own_replay(tmp_path):
    """Seed 17 batch 1, g-idem-0: segment 0's last batch has a flipped base offset (+2^24, outside
    the CRC), recovery point 0. Recovering segment 0 snapshots its map end (16777326); recovering
    segment 110 deletes it (above 110), finds no snapshot at or below 110 (the first rebuild
    deleted them all) and replays segment 0 whole, jumped batch included: a snapshot at 110, then
    one at the log end 120. kafkalog wrote none at 110."""
    jumped = bytearray(_batch(100, 10, 7, seq=100))
    jumped[0:8] = (100 + (1 << 24)).to_bytes(8, "big")
    segments = {
        0: [_batch(0, 50, 7, seq=0), _batch(50, 50, 8, seq=0), bytes(jumped)],
        110: [_batch(110, 10, 9)],
    }
    root = _log_dir(tmp_path, segments, snapshots=[110, 120], recovery_point=0)
    _recover(root)
    snaps = _snapshots(root)
    assert sorted(snaps) == [110, 120]
    assert snaps[110] == [(7, (1 << 24) + 109), (8, 99)]
    assert snaps[120] == [(7, (1 << 24) + 109), (8, 99), (9, 119)]
    _recover(root)
    assert _snapshots(root) == snaps


def test_a_clean_load_keeps_only_the_snapshot_at_the_log_end_of_two_strays(tmp_path):
    """Seed 17 batch 0, logappend-time-0: a clean shutdown, a flipped lastOffsetDelta in the
    active segment's last batch (no recovery: the log end moves to 1000009). The broker keeps the
    stray snapshot at 25 (removeStraySnapshots keeps the latest stray above the last base) and
    writes one at 1000009; its next load deletes 25 (1000009 is then the latest stray). recover
    writes what that second load leaves, so that a second recover changes nothing: 1000009 alone.
    The one difference from the broker's first load (tests/differential/README.md)."""
    last = bytearray(_batch(20, 5, 3))
    last[23:27] = (1000008 - 20).to_bytes(4, "big")  # lastOffsetDelta: ends at 1000008
    segments = {0: [_batch(0, 10, 1)], 10: [_batch(10, 10, 2), bytes(last)]}
    root = _log_dir(tmp_path, segments, snapshots=[10, 25], recovery_point=25, clean=True)
    _recover(root)
    snaps = _snapshots(root)
    assert sorted(snaps) == [10, 1000009]
    # loaded from the (empty) snapshot at 25, then the batches whose last offset reaches 25
    assert snaps[1000009] == [(3, 1000008)]
    _recover(root)
    assert _snapshots(root) == snaps
