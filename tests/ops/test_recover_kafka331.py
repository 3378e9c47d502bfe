"""recover against Kafka 3.3.1 details not covered by the corpus: producer state and .txnindex
(ProducerAppendInfo), .swap handling (LogLoader.load), checkpoints in the log dir."""

import struct

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import parse_producer_snapshot
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, empty_v2_batch, iter_batches
from kafkalog_cli.formats.txnindex import parse_txn_index
from tests.helpers import paths
from tests.helpers.run_lines import log_dir_report

T = 1_700_000_000_000


def rec(k, v, off):
    return SimpleRecord(k.encode(), v.encode(), T, (), off)


def marker(off, pid, epoch, ctype, coordinator_epoch=5):
    """ABORT (0) or COMMIT (1) control batch."""
    return build_v2_batch(
        [
            SimpleRecord(
                struct.pack(">hh", 0, ctype), struct.pack(">hi", 0, coordinator_epoch), T, (), off
            )
        ],
        off,
        producer_id=pid,
        producer_epoch=epoch,
        is_transactional=True,
        is_control=True,
    )


def make_log_dir(root, segments, topic="t", partition=0):
    d = root / f"{topic}-{partition}"
    d.mkdir(parents=True)
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    for base, batches in segments:
        (d / f"{base:020d}.log").write_bytes(b"".join(batches))
        (d / f"{base:020d}.index").write_bytes(b"")
        (d / f"{base:020d}.timeindex").write_bytes(b"")
    return d


def recover(*args):
    r = CliRunner().invoke(
        cli, ["recover", "--no-quarantine", "--now", str(T + 10), *map(str, args)]
    )
    return r


def txn_entries(d, base=0):
    f = d / f"{base:020d}.txnindex"
    return (
        [(a.producer_id, a.first_offset, a.last_offset) for a in parse_txn_index(f.read_bytes())]
        if f.exists()
        else []
    )


# ------------------------------------------------------------------ ProducerAppendInfo
def test_abort_marker_without_transaction_data_gets_no_txnindex_entry(tmp_path):
    # pid 7 aborts a transaction none of whose data reached this partition
    d = make_log_dir(
        tmp_path,
        [
            (
                0,
                [
                    build_v2_batch([rec("a", "1", 0)], 0),
                    marker(1, 7, 0, 0),
                    build_v2_batch([rec("b", "2", 2)], 2),
                ],
            )
        ],
    )
    r = recover("--all", tmp_path)
    assert r.exit_code == 0, r.output
    assert txn_entries(d) == []


def test_abort_marker_after_transactional_data_is_indexed(tmp_path):
    data = build_v2_batch(
        [rec("a", "1", 0)],
        0,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    d = make_log_dir(tmp_path, [(0, [data, marker(1, 7, 0, 0), marker(2, 7, 0, 0)])])
    r = recover("--all", tmp_path)
    assert r.exit_code == 0, r.output
    # the second ABORT closes nothing: one entry only
    assert txn_entries(d) == [(7, 0, 1)]


def test_empty_control_batch_leaves_the_producer_untouched(tmp_path):
    # what the cleaner leaves of a marker whose transaction it removed: a control batch, no records,
    # here with a later producer epoch; Kafka 3.3.1 does not append it at all
    b0 = build_v2_batch([rec("a", "1", 0)], 0, producer_id=9, producer_epoch=4, base_sequence=0)
    e1 = empty_v2_batch(
        1,
        0,
        max_timestamp=T,
        producer_id=9,
        producer_epoch=5,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=0,
    )
    d = make_log_dir(tmp_path, [(0, [b0, e1, build_v2_batch([rec("b", "2", 2)], 2)])])
    r = recover("--all", tmp_path)
    assert r.exit_code == 0, r.output
    snap = d / f"{3:020d}.snapshot"
    (e,) = parse_producer_snapshot(snap.read_bytes()).entries
    assert (e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset) == (9, 4, 0, 0)


def test_empty_control_batch_of_an_unknown_producer_registers_an_empty_entry(tmp_path):
    # ProducerStateManager.update puts the (empty) entry of a producer it has not seen
    e0 = empty_v2_batch(
        0,
        0,
        max_timestamp=T,
        producer_id=11,
        producer_epoch=2,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=0,
    )
    d = make_log_dir(tmp_path, [(0, [e0, build_v2_batch([rec("b", "2", 1)], 1)])])
    r = recover("--all", tmp_path)
    assert r.exit_code == 0, r.output
    (e,) = parse_producer_snapshot((d / f"{2:020d}.snapshot").read_bytes()).entries
    assert (e.producer_id, e.producer_epoch, e.last_offset, e.timestamp) == (11, -1, -1, -1)


# ------------------------------------------------------------------ LogLoader.load: .swap files
def _swap_case(root, with_index_swap):
    """Segment 0 replaced by a cleaner's .swap (not yet renamed), segment 3 active; recovery point 3."""
    batches = [build_v2_batch([SimpleRecord(b"k%d" % i, b"v", T + i, (), i)], i) for i in range(3)]
    d = make_log_dir(
        root, [(0, [batches[0], batches[0]]), (3, [build_v2_batch([rec("z", "z", 3)], 3)])]
    )
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 3\n")
    (d / f"{0:020d}.log.swap").write_bytes(b"".join(batches))
    # an index a broker keeps (one entry per batch, denser than the 4096-byte interval would give)
    pos, index, timeindex = 0, b"", b""
    for i, b in enumerate(batches):
        index += struct.pack(">ii", i, pos)
        timeindex += struct.pack(">qi", T + i, i)
        pos += len(b)
    if with_index_swap:
        (d / f"{0:020d}.index.swap").write_bytes(index)
        (d / f"{0:020d}.timeindex.swap").write_bytes(timeindex)
    return d, index


def test_swapped_in_segment_below_the_recovery_point_is_not_recovered(tmp_path):
    d, index = _swap_case(tmp_path, with_index_swap=True)
    r = recover("--format", "json", tmp_path)
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.output)
    assert rep["partitions"]["t-0"]["recovered_segments"] == [3]
    assert not list(d.glob("*.swap"))
    assert (d / f"{0:020d}.index").read_bytes() == index  # kept as the broker keeps it
    assert [b.base_offset for b in iter_batches((d / f"{0:020d}.log").read_bytes())] == [0, 1, 2]


def test_swapped_in_segment_without_its_index_keeps_the_broker_s_preallocated_index(tmp_path):
    # LogLoader's swap pass opens the .swap segment; readNextOffset creates an .index.swap of
    # segment.index.bytes zeros, renamed with the .log.swap: the segment, below the recovery
    # point, is not recovered, and keeps that index; its time index is created empty
    d, _ = _swap_case(tmp_path, with_index_swap=False)
    r = recover("--format", "json", tmp_path)
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.output)
    assert rep["partitions"]["t-0"]["recovered_segments"] == [3]
    assert (d / f"{0:020d}.index").read_bytes() == bytes(10485760)
    assert (d / f"{0:020d}.timeindex").read_bytes() == b""
    kept = [f for f in rep["findings"] if f.get("left_as_broker_leaves")]
    assert [f["path"] for f in kept] == [str(d / f"{0:020d}.index")]
    assert "zero-filled" in kept[0]["message"] and "rerun with --repair" in kept[0]["message"]
    assert not list(d.glob("*.swap"))


def test_swapped_in_segment_without_its_index_is_recovered_with_repair(tmp_path):
    d, _ = _swap_case(tmp_path, with_index_swap=False)
    r = recover("--repair", "--format", "json", tmp_path)
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.output)
    assert rep["partitions"]["t-0"]["recovered_segments"] == [0, 3]
    assert (d / f"{0:020d}.index").read_bytes() == b""  # rebuilt: 3 small batches, no entry
    assert not list(d.glob("*.swap"))


# ------------------------------------------------------------------ log-dir checkpoints
def test_kraft_metadata_log_gets_no_recovery_point_entry(tmp_path):
    import shutil

    src = paths.EXAMPLES
    root = tmp_path / "logdir"
    shutil.copytree(src, root)
    before = (root / "recovery-point-offset-checkpoint").read_text()
    r = recover("--all", root)
    assert r.exit_code == 0, r.output
    after = (root / "recovery-point-offset-checkpoint").read_text()
    assert "__cluster_metadata" not in after
    assert after == before


# ------------------------------------------------------------------ leader-epoch-checkpoint
def _epochs_case(root, clean):
    b = [
        build_v2_batch([rec("k", "v", i)], i, partition_leader_epoch=e)
        for i, e in ((0, 0), (1, 0), (2, 3), (3, 3))
    ]
    d = make_log_dir(root, [(0, b[:3]), (3, b[3:])])
    for base in (0, 3):  # indexes a broker keeps: segment 0 is read, not scanned
        (d / f"{base:020d}.timeindex").write_bytes(struct.pack(">qi", T, 0))
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 3\n")
    if clean:
        (root / ".kafka_cleanshutdown").write_text("")
    (d / "leader-epoch-checkpoint").write_bytes(bytes(range(200, 230)))  # 30 bytes, not UTF-8
    return d


def test_corrupt_leader_epoch_checkpoint_is_reported_and_rebuilt(tmp_path):
    for clean in (False, True):  # segment 3 scanned / nothing scanned
        root = tmp_path / str(clean)
        d = _epochs_case(root, clean)
        r = recover(root)
        assert r.exit_code == 0, r.output
        assert (d / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 2\n"
        named = [ln for ln in r.output.splitlines() if "leader-epoch-checkpoint" in ln]
        assert len(named) >= 1 and any("Kafka would refuse it" in ln for ln in named), r.output
        r = recover(root)  # then nothing more to do
        assert r.exit_code == 0 and "refuse" not in r.output


# ------------------------------------------------------------------ producer snapshots
def test_snapshot_at_the_log_start_offset_is_not_loaded(tmp_path):
    # Kafka 3.3.1 truncateAndReload deletes snapshots at or below the log start offset before
    # loading: producer 42, only in the snapshot at 0, is not in the state recover writes
    from kafkalog_cli.formats.producer_state import ProducerSnapshotEntry, encode_producer_snapshot

    d = make_log_dir(tmp_path, [(0, [build_v2_batch([rec("a", "1", i)], i) for i in range(3)])])
    (d / f"{0:020d}.snapshot").write_bytes(
        encode_producer_snapshot([ProducerSnapshotEntry(42, 1, 4, 7, 0, T, -1, -1)])
    )
    r = recover("--all", tmp_path)
    assert r.exit_code == 0, r.output
    assert parse_producer_snapshot((d / f"{3:020d}.snapshot").read_bytes()).entries == []


def test_an_empty_swapped_in_segment_over_an_old_index_gets_the_broker_s_preallocated_index(
    tmp_path,
):
    # from the differential harness (seed 100007, __transaction_state-7: a copy of an empty
    # segment left as 0.log.swap after a clean shutdown). The .swap's offset range is empty, so
    # LogLoader deletes nothing, and renaming the .swap files puts the preallocated .index.swap
    # readNextOffset created over the old (empty) .index: the broker ends with 10 MiB of zeros
    d = make_log_dir(tmp_path, [(0, [])])
    (tmp_path / ".kafka_cleanshutdown").write_bytes(b"")
    (d / f"{0:020d}.index").write_bytes(b"")
    (d / f"{0:020d}.timeindex").write_bytes(b"")
    (d / f"{0:020d}.log.swap").write_bytes(b"")
    r = recover("--format", "json", tmp_path)
    assert r.exit_code == 0, r.output
    assert (d / f"{0:020d}.index").read_bytes() == bytes(10485760)
    assert (d / f"{0:020d}.timeindex").read_bytes() == b""
    assert not list(d.glob("*.swap"))
