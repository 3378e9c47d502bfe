"""recover where a real Kafka 3.3.1 broker disagreed with it, in cases the differential harness
(tests/differential) found by damaging copies of examples/logdir: each test is one such case,
with what the broker did."""

import shutil
import struct
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_lines import log_dir_report

NOW = 1795460000000


def logdir(tmp_path: Path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    assert (d / ".kafka_cleanshutdown").exists()  # every case here is after a clean shutdown
    return d


def recover(d: Path, *extra: str, code: int = 0):
    r = CliRunner().invoke(cli, ["recover", "--no-quarantine", "--now", str(NOW), *extra, str(d)])
    assert r.exit_code == code, r.output
    return r


def seg(d: Path, part: str, base: int, suffix: str) -> Path:
    return d / part / f"{base:020d}{suffix}"


def flip(path: Path, at: int, mask: int) -> Path:
    """The damage the harness applied: one byte xor-ed."""
    data = bytearray(path.read_bytes())
    data[at] ^= mask
    path.write_bytes(bytes(data))
    return path


def test_zeros_after_the_active_segment_are_recovered_not_left_to_stop_the_broker(tmp_path):
    # seed 100000: 270 zero bytes appended to compacted-0's active segment after the shutdown. The
    # broker trusts .kafka_cleanshutdown and dies at start-up ("Found record size 0 smaller than
    # minimum record overhead", LogSegment.readNextOffset); recover used to trust it too
    d = logdir(tmp_path)
    log = seg(d, "compacted-0", 36, ".log")
    whole = log.read_bytes()
    log.write_bytes(whole + bytes(270))
    r = recover(d)
    assert log.read_bytes() == whole
    assert "a broker would fail to start" in r.output


def test_unreadable_active_segment_with_an_empty_time_index_is_recovered(tmp_path):
    # seed 100001: zeros appended to an empty active segment (its time index empty) made the index
    # check raise (exit 3, no file named); the broker dies on it at start-up. It is recovered like
    # any segment that does not read
    d = logdir(tmp_path)
    log = seg(d, "compacted-0", 36, ".log")
    log.write_bytes(bytes(287))
    seg(d, "compacted-0", 36, ".timeindex").write_bytes(b"")
    recover(d)
    assert log.stat().st_size == 0


def test_no_producer_snapshot_at_the_log_start_offset(tmp_path):
    # seed 100000: codec-lz4-0 lost its .index and its first batch's header is damaged: recovered,
    # the segment is emptied. The broker writes no snapshot at offset 0 (takeSnapshot only past the
    # last snapshot; truncateAndReload deletes those at or below the log start offset)
    d = logdir(tmp_path)
    seg(d, "codec-lz4-0", 0, ".index").unlink()
    log = flip(seg(d, "codec-lz4-0", 0, ".log"), 47, 0xFD)
    recover(d)
    assert log.stat().st_size == 0
    assert sorted(f.name for f in (d / "codec-lz4-0").glob("*.snapshot")) == []


def test_the_snapshot_at_the_log_end_is_kept_after_a_clean_shutdown(tmp_path):
    # seed 100000: a damaged producer id in a batch header of txn-0 (not checked after a clean
    # shutdown, by the broker or by recover). The broker loads its state from the snapshot at the
    # log end and leaves it as it is; recover rebuilt it from the batch headers, with the damaged
    # producer id as a second producer
    d = logdir(tmp_path)
    flip(seg(d, "txn-0", 0, ".log"), 392, 0xE6)
    snap = seg(d, "txn-0", 15, ".snapshot")
    before = snap.read_bytes()
    recover(d)
    assert snap.read_bytes() == before


def test_a_snapshot_at_the_base_of_the_first_recovered_segment(tmp_path):
    # seed 200001: after a crash, the recovery point at the last segment's base, whose snapshot is
    # gone. LogLoader.recoverSegment rebuilds the producer state up to that base and snapshots it
    # there before recovering the segment; recover wrote none
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    rp = d / "recovery-point-offset-checkpoint"
    rp.write_text(rp.read_text().replace("multi-segment 0 600", "multi-segment 0 300"))
    seg(d, "multi-segment-0", 300, ".snapshot").unlink()
    recover(d)
    assert sorted(f.name[:20] for f in (d / "multi-segment-0").glob("*.snapshot")) == [
        f"{300:020d}",
        f"{600:020d}",
    ]


def test_a_damaged_header_below_the_recovery_point_costs_no_valid_batch(tmp_path):
    # seed 300000: after a crash, a damaged lastOffsetDelta in a batch of multi-segment-0's first
    # segment, below the recovery point. The broker does not recover that segment and keeps all
    # 600 records. recover's own index check (the index entry no longer matches the header) made it
    # recover the segment: cut at the damaged batch, segment 300 deleted
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    flip(seg(d, "multi-segment-0", 0, ".log"), 649, 0xD8)
    before = {f.name: f.read_bytes() for f in (d / "multi-segment-0").iterdir()}
    r = recover(d, code=1)  # the batch fails its CRC: bit rot the broker serves, named and left
    assert {f.name: f.read_bytes() for f in (d / "multi-segment-0").iterdir()} == before
    assert (
        "bit rot in multi-segment-0" in r.output
        and "byte 626 of 00000000000000000000.log" in r.output
    )


def test_an_index_repair_beyond_kafka_never_drops_valid_batches(tmp_path):
    # the same segment with a zero-filled index as well (recover's own check rebuilds such an
    # index): recovering it would cut it at the damaged batch and delete segment 300, which the
    # broker keeps. It is kept as it is, and recover says why
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    flip(
        seg(d, "multi-segment-0", 0, ".log"), 700, 0x5A
    )  # a payload byte: the CRC no longer matches
    index = seg(d, "multi-segment-0", 0, ".index")
    index.write_bytes(bytes(index.stat().st_size))
    before = {f.name: f.read_bytes() for f in (d / "multi-segment-0").iterdir()}
    r = recover(d, "--repair", code=1)
    assert {f.name: f.read_bytes() for f in (d / "multi-segment-0").iterdir()} == before
    assert "would drop valid batches" in r.output and "a broker keeps it as it is" in r.output
    assert "bit rot in multi-segment-0" in r.output


def test_a_cleaned_segment_index_entry_past_its_batch_is_the_broker_s_own(tmp_path):
    # seed 600004: the log cleaner indexes a retained batch under the largest offset it read (here
    # 5 for a batch ending at 3, the next batch starting at 6); recover took it for a broken index
    # and rebuilt the broker's cleaned segment's indexes
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    d = logdir(tmp_path)
    part = d / "compacted-0"
    b1 = build_v2_batch(
        [SimpleRecord(b"k%d" % i, b"v", 1_700_000_000_000 + i, (), i) for i in range(2, 4)], 2
    )
    b2 = build_v2_batch([SimpleRecord(b"k6", b"v", 1_700_000_000_010, (), 6)], 6)
    for f in part.iterdir():
        if f.name[:20].isdigit():
            f.unlink()
    (part / f"{0:020d}.log").write_bytes(b1 + b2)
    (part / f"{0:020d}.index").write_bytes(struct.pack(">ii", 5, 0))
    (part / f"{0:020d}.timeindex").write_bytes(struct.pack(">qi", 1_700_000_000_010, 6))
    before = {f.name: f.read_bytes() for f in part.iterdir()}
    r = recover(d)
    assert "recovering it" not in r.output
    assert {f.name: f.read_bytes() for f in part.iterdir() if f.suffix != ".snapshot"} == {
        n: v for n, v in before.items() if not n.endswith(".snapshot")
    }


def test_a_segment_kept_as_it_is_gets_the_empty_time_index_the_broker_creates(tmp_path):
    # seed 400001: a damaged payload in a segment whose .timeindex is gone, after a clean shutdown:
    # recovering it would drop valid batches, so it is kept; the broker creates the missing time
    # index empty (LogSegment.sanityCheck), recover left it missing
    d = logdir(tmp_path)
    log = flip(seg(d, "codec-none-0", 0, ".log"), 100, 0x5A)
    seg(d, "codec-none-0", 0, ".timeindex").unlink()
    damaged = log.read_bytes()
    recover(d)
    assert log.read_bytes() == damaged
    assert seg(d, "codec-none-0", 0, ".timeindex").read_bytes() == b""


def test_a_damaged_base_offset_beyond_the_index_range_is_exit_3_naming_the_file(tmp_path):
    # seed 400004: a damaged base offset (not covered by the CRC) puts the first batch 2^40 offsets
    # past its segment's base; the broker fails to start (its split requires the segment's last
    # batch to overflow: "Split operation is only permitted for segments with overflow"). It is
    # corrupt input: exit 3, file and byte, and what stops the broker
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    rp = d / "recovery-point-offset-checkpoint"
    rp.write_text(rp.read_text().replace("multi-segment 0 600", "multi-segment 0 0"))
    log = flip(seg(d, "multi-segment-0", 300, ".log"), 2, 0xD9)
    r = CliRunner().invoke(cli, ["recover", "--no-quarantine", "--now", str(NOW), str(d)])
    assert r.exit_code == 3
    out = " ".join(r.output.split())
    assert (
        f"{log}: byte 0: a batch at byte 0 ends at offset 238594023227716, more than 2^31 - 1 above"
        in out
    )
    assert (
        "Split operation is only permitted for segments with overflow); the broker does not start"
        in out
    )


def test_a_snapshot_the_swap_replaces_is_taken_again_at_the_recovered_base(tmp_path):
    # seeds 600004, 600007: after a crash, a complete .swap of the last segment (300). LogLoader
    # deletes the files in the swap's offset range, 300.snapshot too, then recovers segment 300
    # and snapshots its base again (rebuildProducerState up to 300); recover counted the deleted
    # snapshot as still there and wrote none
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    part = d / "multi-segment-0"
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(seg(d, "multi-segment-0", 300, suffix), part / f"{300:020d}{suffix}.swap")
    recover(d)
    assert not list(part.glob("*.swap"))
    assert seg(d, "multi-segment-0", 300, ".snapshot").exists()


def test_no_snapshot_after_a_clean_shutdown_gives_empty_ones(tmp_path):
    # seeds 400000, 500006: txn-0's only snapshot gone, after a clean shutdown. The broker takes
    # the upgrade path of rebuildProducerState: empty snapshots at the last two segment bases and
    # the log end, without reading the log for producers (here: one, at 15)
    from kafkalog_cli.formats.producer_state import parse_producer_snapshot

    d = logdir(tmp_path)
    snap = seg(d, "txn-0", 15, ".snapshot")
    snap.unlink()
    recover(d)
    assert sorted(f.name for f in (d / "txn-0").glob("*.snapshot")) == [snap.name]
    assert parse_producer_snapshot(snap.read_bytes()).entries == []


def test_a_recovered_segment_after_a_cleaner_gap_gets_a_snapshot_at_its_base(tmp_path):
    # seed 500011: a cleaned segment ends at 3, the next starts at 5 (the cleaner removed 3..4), its
    # snapshot zero-filled; after a crash both are recovered. The broker deletes every snapshot
    # above the first recovered base, snapshots 3 (the first's end, later a stray) and 5 (the
    # second's base, recoverSegment's rebuild); recover kept the zero-filled 5.snapshot
    from kafkalog_cli.formats.producer_state import parse_producer_snapshot
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    d = tmp_path / "ld"
    part = d / "t-0"
    part.mkdir(parents=True)
    (d / "meta.properties").write_text("version=0\nbroker.id=0\n")
    recs = [
        build_v2_batch([SimpleRecord(b"k", b"v", 1_700_000_000_000 + i, (), i)], i)
        for i in (0, 1, 2, 5, 6)
    ]
    (part / f"{0:020d}.log").write_bytes(b"".join(recs[:3]))
    (part / f"{5:020d}.log").write_bytes(b"".join(recs[3:]))
    for base in (0, 5):
        (part / f"{base:020d}.index").write_bytes(b"")
        (part / f"{base:020d}.timeindex").write_bytes(b"")
    (part / f"{5:020d}.snapshot").write_bytes(bytes(10))
    recover(d)
    assert sorted(f.name[:20] for f in part.glob("*.snapshot")) == [f"{5:020d}", f"{7:020d}"]
    assert parse_producer_snapshot((part / f"{5:020d}.snapshot").read_bytes()).entries == []


# ------------------------------------------------------------------ damage a broker keeps: --repair only
def partition_bytes(part: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in part.iterdir()}


def test_a_zero_filled_time_index_below_the_recovery_point_is_kept_and_its_consequence_said(
    tmp_path,
):
    # after a crash, segment 0 of multi-segment-0 is below the recovery point: Kafka 3.3.1 does not
    # recover it and skips its index checks (LogSegment.sanityCheck), so its zero-filled time index
    # stays; its last slot reads as timestamp 0, which time retention takes for the segment's age
    d = logdir(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    tidx = seg(d, "multi-segment-0", 0, ".timeindex")
    tidx.write_bytes(bytes(tidx.stat().st_size))
    before = partition_bytes(d / "multi-segment-0")
    r = recover(d)
    assert partition_bytes(d / "multi-segment-0") == before
    line = next(ln for ln in r.output.splitlines() if str(tidx) in ln)
    assert "time index has zero-filled slots" in line and "a broker keeps it as it is" in line
    assert "timestamp 0" in line and "deletes the segment at once" in line
    assert "rerun with --repair to rebuild it" in line
    repaired = recover(d, "--repair")
    assert "recovering it" in repaired.output
    assert tidx.read_bytes() != before[tidx.name] and len(tidx.read_bytes()) % 12 == 0
    assert seg(d, "multi-segment-0", 0, ".log").read_bytes() == before[f"{0:020d}.log"]


def test_a_missing_time_index_is_created_empty_as_the_broker_does_and_rebuilt_with_repair(tmp_path):
    d = logdir(tmp_path)
    tidx = seg(d, "codec-none-0", 0, ".timeindex")
    want = tidx.read_bytes()
    tidx.unlink()
    r = CliRunner().invoke(
        cli, ["recover", "--no-quarantine", "--now", str(NOW), "--format", "json", str(d)]
    )
    assert r.exit_code == 0, r.output
    assert tidx.read_bytes() == b""
    report = log_dir_report(r.stdout)
    found = [f for f in report["findings"] if f.get("path") == str(tidx)]
    assert len(found) == 1 and found[0]["left_as_broker_leaves"] is True
    assert "a broker creates it empty" in found[0]["message"] and "mtime" in found[0]["message"]
    # the broker's load under the marker keeps that empty time index, as recover left it: the
    # marker stays, and a second recover finds nothing to do
    assert (d / ".kafka_cleanshutdown").exists()
    assert "kafka_cleanshutdown" not in r.stderr
    assert ": 0 change(s)" in recover(d).output
    tidx.unlink()
    recover(d, "--repair")
    assert tidx.read_bytes() == want


def test_a_torn_active_segment_after_a_clean_shutdown_is_left_for_the_broker_to_load(tmp_path):
    # the broker loads the active segment as it is after a clean shutdown (readNextOffset stops at
    # the torn batch) and appends after it; recover leaves the bytes, --repair cuts them
    d = logdir(tmp_path)
    log = seg(d, "codec-none-0", 0, ".log")
    whole = log.read_bytes()
    log.write_bytes(whole + whole[:40])
    seg(d, "codec-none-0", 0, ".timeindex").write_bytes(b"")
    before = partition_bytes(d / "codec-none-0")
    r = recover(d)
    assert partition_bytes(d / "codec-none-0") == before
    assert "rerun with --repair to rebuild it" in r.output
    recover(d, "--repair")
    assert log.read_bytes() == whole
