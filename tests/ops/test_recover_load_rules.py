"""Three things LogLoader.load does that a recovery from the recovery point does not explain
(3.3.1 and 3.9.0-rc3 core/src/main/scala/kafka/log/LogLoader.scala), each on a log dir made
here, through `recover` and `doctor`:

1. loadSegmentFiles recovers a segment without an offset index as it loads it (recoverSegment),
   with or without a clean shutdown; a cut there keeps the later segments (only recoverLog
   deletes them), which leaves a gap in the log.
2. LogSegment.sanityCheck runs TransactionIndex.sanityCheck on every segment with an offset
   index: an entry whose lastOffset is below the segment's base offset is a
   CorruptIndexException, and the segment is recovered the same way.
3. recoverLog's deleteSegmentsIfLogStartGreaterThanLogEnd: a log end offset below the
   checkpointed log start offset deletes every segment, the leader epochs and the producer
   snapshots, and the log starts empty at the log start offset."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import encode_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.formats.txnindex import AbortedTxn, encode_txn_index

NOW = 1_800_000_000_000
T = NOW - 60_000
PART = "t-0"


def _batch(base: int, n: int) -> bytes:
    return build_v2_batch(
        [SimpleRecord(b"k", b"v", T + base + i) for i in range(n)],
        base,
        partition_leader_epoch=0,
    )


def _flipped(raw: bytes) -> bytes:
    """The batch with a payload byte flipped: its CRC fails."""
    out = bytearray(raw)
    out[-3] ^= 0x55
    return bytes(out)


def _time_index(last_offset: int, base: int) -> bytes:
    return (T + last_offset).to_bytes(8, "big") + (last_offset - base).to_bytes(4, "big")


def _log_dir(
    tmp_path: Path,
    segments: dict[int, list[tuple[int, int]]],
    *,
    recovery_point: int,
    log_start: int = 0,
    clean: bool = False,
    snapshots: tuple[int, ...] = (),
) -> Path:
    """One partition: base -> its batches as (first offset, records), each segment with the
    indexes a broker leaves after a clean stop."""
    root = tmp_path / "logdir"
    d = root / PART
    d.mkdir(parents=True)
    for b, batches in segments.items():
        (d / f"{b:020d}.log").write_bytes(b"".join(_batch(o, n) for o, n in batches))
        (d / f"{b:020d}.index").write_bytes(b"")
        last = batches[-1][0] + batches[-1][1] - 1
        (d / f"{b:020d}.timeindex").write_bytes(_time_index(last, b))
    for off in snapshots:
        (d / f"{off:020d}.snapshot").write_bytes(encode_producer_snapshot([]))
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (root / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {recovery_point}\n")
    (root / "log-start-offset-checkpoint").write_text(f"0\n1\nt 0 {log_start}\n")
    if clean:
        (root / ".kafka_cleanshutdown").write_text("")
    return root


def _seg(root: Path, base: int, suffix: str = ".log") -> Path:
    return root / PART / f"{base:020d}{suffix}"


def _damage_last_batch(root: Path, base: int, first_len: int) -> None:
    """Flip a byte in the second batch of segment `base`, whose first batch is `first_len` bytes."""
    f = _seg(root, base)
    raw = f.read_bytes()
    f.write_bytes(raw[:first_len] + _flipped(raw[first_len:]))


def _recover(root: Path, *args: str) -> dict:
    """The run's report for the log dir (its findings, its actions)."""
    r = CliRunner().invoke(
        cli, ["recover", "--now", str(NOW), "--no-quarantine", "--format", "json", *args, str(root)]
    )
    assert "Traceback" not in r.output, r.output
    assert r.exit_code in (0, 1), r.output
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    return next(o for o in lines if o["kind"] == "log_dir")


def _doctor(root: Path) -> list[dict]:
    r = CliRunner().invoke(cli, ["doctor", "--format", "json", str(root)])
    assert "Traceback" not in r.output, r.output
    return [f for f in json.loads(r.stdout)["findings"] if f["check"] == "segment"]


def _files(root: Path) -> list[str]:
    return sorted(f.name for f in (root / PART).iterdir())


# ---------------------------------------------------------------- 1. no offset index, cut on load
def _three_segments(tmp_path: Path, **kw) -> Path:
    """Segments 0 (offsets 0..9), 10 (10..14, 15..19), 20 (20..29); segment 10 without its
    offset index and its second batch failing its CRC."""
    root = _log_dir(tmp_path, {0: [(0, 10)], 10: [(10, 5), (15, 5)], 20: [(20, 10)]}, **kw)
    _damage_last_batch(root, 10, len(_batch(10, 5)))
    _seg(root, 10, ".index").unlink()
    return root


def test_a_segment_without_index_cut_on_load_keeps_the_later_segments(tmp_path):
    root = _three_segments(tmp_path, recovery_point=30)
    _recover(root)
    assert _seg(root, 20).exists()
    assert _seg(root, 20, ".index").exists()
    assert _seg(root, 10).stat().st_size == len(_batch(10, 5))
    assert _seg(root, 10, ".index").exists()
    # the recovery point is the log end: segment 20's end, not the cut segment's
    assert (root / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 30\n"


def test_the_same_from_recovery_point_zero_and_after_a_clean_shutdown(tmp_path):
    """recoverLog recovers segment 10 again (nothing more to cut): the later segment stays; after
    a clean shutdown only loadSegmentFiles' recovery runs."""
    for i, kw in enumerate(({"recovery_point": 0}, {"recovery_point": 30, "clean": True})):
        root = _three_segments(tmp_path / str(i), **kw)
        _recover(root)
        assert _seg(root, 20).exists(), kw
        assert _seg(root, 10).stat().st_size == len(_batch(10, 5)), kw


def test_a_cut_from_the_recovery_point_still_deletes_the_later_segments(tmp_path):
    """recoverLog's own cut (segment 10 has its index here) deletes what follows, as before."""
    root = _log_dir(
        tmp_path, {0: [(0, 10)], 10: [(10, 5), (15, 5)], 20: [(20, 10)]}, recovery_point=10
    )
    _damage_last_batch(root, 10, len(_batch(10, 5)))
    _recover(root)
    assert not _seg(root, 20).exists()
    assert (root / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 15\n"


def test_the_gap_is_reported_by_recover_and_doctor(tmp_path):
    root = _three_segments(tmp_path, recovery_point=30)
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    found = _doctor(root)
    gap = [f for f in found if "offsets 15..19 are gone" in f["problem"]]
    assert len(gap) == 1 and gap[0]["severity"] == "warning", found
    assert "keeps the segments after it" in gap[0]["broker"]
    assert not [f for f in found if "later segment(s)" in f["problem"]], found
    out = _recover(root, "--dry-run")
    messages = " | ".join(f["message"] for f in out["findings"])
    assert "offsets 15..19 are gone from the middle of the log" in messages


def test_a_second_recover_changes_nothing(tmp_path):
    root = _three_segments(tmp_path, recovery_point=30)
    _recover(root)
    before = {f.name: f.read_bytes() for f in (root / PART).iterdir()}
    out = _recover(root)
    assert {f.name: f.read_bytes() for f in (root / PART).iterdir()} == before
    assert out.get("changed", []) == []


def test_offsets_out_of_order_in_a_segment_recovered_on_load_stop_the_broker(tmp_path):
    """Segment 10 without its .index holds batches at 10, 20 then 15 (each over 4096 bytes, so
    LogSegment.recover indexes 24, then 17: OffsetIndex.append throws InvalidOffsetException).
    recoverLog would empty the segment; loadSegmentFiles does not catch it: the log fails to
    load and the broker exits. recover refuses (exit 3) and changes nothing."""
    root = _log_dir(tmp_path, {0: [(0, 10)], 30: [(30, 10)]}, recovery_point=40)

    def big(base: int, n: int) -> bytes:
        return build_v2_batch(
            [SimpleRecord(b"k", bytes(1000), T + base + i) for i in range(n)],
            base,
            partition_leader_epoch=0,
        )

    _seg(root, 10).write_bytes(big(10, 5) + big(20, 5) + big(15, 3))
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    before = {f.name: f.read_bytes() for f in (root / PART).iterdir()}
    r = CliRunner().invoke(cli, ["recover", "--no-quarantine", str(root)])
    assert r.exit_code == 3, r.output
    assert "InvalidOffsetException from LogLoader.loadSegmentFiles" in r.stderr
    assert {f.name: f.read_bytes() for f in (root / PART).iterdir()} == before
    err = [f for f in _doctor(root) if f["severity"] == "error"]
    assert len(err) == 1 and "InvalidOffsetException" in err[0]["broker"], err


# ---------------------------------------------------------------- 2. a .txnindex failing its check
def _txn_index(root: Path, base: int, last_offsets: list[int]) -> None:
    _seg(root, base, ".txnindex").write_bytes(
        encode_txn_index(AbortedTxn(0, 7, o - 1, o, o + 1) for o in last_offsets)
    )


def test_a_txnindex_entry_below_the_base_recovers_the_segment_on_load(tmp_path):
    """After a clean shutdown nothing is recovered, but for the sanity check: segment 10's
    .txnindex holds an aborted transaction ending at 5, below its base (CorruptIndexException).
    The broker recovers segment 10 (its damaged second batch cut, segment 20 kept) and rebuilds
    the .txnindex from the segment: no aborted transaction there, an empty file."""
    root = _log_dir(
        tmp_path,
        {0: [(0, 10)], 10: [(10, 5), (15, 5)], 20: [(20, 10)]},
        recovery_point=30,
        clean=True,
    )
    _damage_last_batch(root, 10, len(_batch(10, 5)))
    _txn_index(root, 10, [5])
    out = _recover(root)
    assert _seg(root, 10, ".txnindex").read_bytes() == b""
    assert _seg(root, 10).stat().st_size == len(_batch(10, 5))
    assert _seg(root, 20).exists()
    messages = " | ".join(f["message"] for f in out["findings"])
    assert "segment 10: a corrupt transaction index at byte 0" in messages


def test_a_txnindex_that_passes_is_left_to_the_broker(tmp_path):
    """An entry at or above the base passes (a trailing partial entry is never read): after a
    clean shutdown nothing is recovered, the damaged batch is kept as the broker keeps it."""
    root = _log_dir(
        tmp_path,
        {0: [(0, 10)], 10: [(10, 5), (15, 5)], 20: [(20, 10)]},
        recovery_point=30,
        clean=True,
    )
    _damage_last_batch(root, 10, len(_batch(10, 5)))
    _txn_index(root, 10, [10])
    with open(_seg(root, 10, ".txnindex"), "ab") as f:
        f.write(bytes(33))
    size = _seg(root, 10).stat().st_size
    _recover(root, "--no-crc-check")
    assert _seg(root, 10).stat().st_size == size
    assert len(_seg(root, 10, ".txnindex").read_bytes()) == 34 + 33


def test_a_txnindex_version_the_broker_cannot_read_stops_it(tmp_path):
    """Version 1 in the first byte: TransactionIndex's iterator throws KafkaException, which
    loadSegmentFiles does not catch: the broker exits. recover refuses (exit 3) and changes
    nothing; doctor says the broker will not start."""
    root = _log_dir(tmp_path, {0: [(0, 10)], 10: [(10, 10)]}, recovery_point=20, clean=True)
    _txn_index(root, 10, [15])
    raw = bytearray(_seg(root, 10, ".txnindex").read_bytes())
    raw[0] = 1
    _seg(root, 10, ".txnindex").write_bytes(bytes(raw))
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    before = _files(root)
    r = CliRunner().invoke(cli, ["recover", "--no-quarantine", str(root)])
    assert r.exit_code == 3, r.output
    assert "Unexpected aborted transaction version 1" in r.stderr
    assert "a broker fails to load the log on it" in r.stderr
    assert _files(root) == before
    err = [f for f in _doctor(root) if f["severity"] == "error"]
    assert len(err) == 1 and "KafkaException" in err[0]["broker"], err


# ---------------------------------------------------------------- 3. log end below the log start
def test_a_log_end_below_the_log_start_restarts_the_log_empty_there(tmp_path):
    """log-start-offset-checkpoint 50, segments ending at 20: every segment, snapshot and leader
    epoch goes; an empty segment at 50; the recovery point 50. No snapshot is written (the rebuild
    ends where the emptied state's map ends)."""
    root = _log_dir(
        tmp_path,
        {0: [(0, 10)], 10: [(10, 10)]},
        recovery_point=10,
        log_start=50,
        snapshots=(10, 20),
    )
    _recover(root)
    assert _files(root) == [
        "00000000000000000050.index",
        "00000000000000000050.log",
        "00000000000000000050.timeindex",
        "leader-epoch-checkpoint",
    ]
    assert _seg(root, 50).read_bytes() == b""
    assert (root / PART / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    assert (root / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 50\n"


def test_after_a_clean_shutdown_too_and_a_second_run_changes_nothing(tmp_path):
    """With the marker nothing is recovered, and the log restarts all the same. The broker's
    load then writes an empty snapshot at 50 (rebuildProducerState's upgrade path: no snapshot
    and a clean shutdown) which its next load deletes (truncateAndReload: at or below the log
    start offset); recover leaves what that second load leaves, so that it is a fixed point."""
    root = _log_dir(
        tmp_path,
        {0: [(0, 10)], 10: [(10, 10)]},
        recovery_point=20,
        log_start=50,
        clean=True,
        snapshots=(10, 20),
    )
    _recover(root)
    assert [f for f in _files(root) if not f.startswith("leader")] == [
        "00000000000000000050.index",
        "00000000000000000050.log",
        "00000000000000000050.timeindex",
    ]
    again = _recover(root)
    assert again["changed"] == []


def test_doctor_says_the_broker_deletes_every_segment(tmp_path):
    root = _log_dir(tmp_path, {0: [(0, 10)], 10: [(10, 10)]}, recovery_point=10, log_start=50)
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    found = _doctor(root)
    assert len(found) == 1, found
    assert found[0]["severity"] == "warning"
    assert found[0]["problem"] == (
        "log end offset 20 is below the log start offset 50 (log-start-offset-checkpoint)"
    )
    assert "it deletes all 2 segment(s)" in found[0]["broker"]
    assert "starts the log empty at 50" in found[0]["broker"]


def test_a_log_start_entry_for_the_metadata_log_is_not_read(tmp_path):
    """KafkaMetadataLog loads __cluster_metadata-0 with log start offset 0: a log-start entry for
    it (which LogManager never writes) deletes nothing."""
    root = _log_dir(tmp_path, {0: [(0, 10)]}, recovery_point=10)
    meta = root / "__cluster_metadata-0"
    (root / PART).rename(meta)
    (root / "log-start-offset-checkpoint").write_text("0\n1\n__cluster_metadata 0 50\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    _recover(root)
    assert (meta / f"{0:020d}.log").stat().st_size == len(_batch(0, 10))
