"""ops.erase: the rewrite of each kind of batch (v2 of every codec, transactional with its
markers, an idempotent producer's last batch, v0/v1 wrappers, control batches, LOG_APPEND_TIME),
the indexes rebuilt, the producer snapshots and .txnindex kept valid, the selection's rules and
the SHA-256 the report gives each erased record."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest

from kafkalog_cli.errors import CorruptRecordError, ExitCode, KafkalogError
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.indexes import parse_time_index
from kafkalog_cli.formats.producer_state import parse_producer_snapshot
from kafkalog_cli.formats.records import (
    Header,
    SimpleRecord,
    TimestampType,
    build_legacy_batch,
    build_v2_batch,
    iter_batches,
)
from kafkalog_cli.formats.varint import write_varint
from kafkalog_cli.ops import erase
from kafkalog_cli.ops.producer_rebuild import rebuild_producer_state
from kafkalog_cli.ops.verify_index import check_offset_index, check_time_index
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.partition import Partition
from tests.helpers.compaction import records_of, write_segment
from tests.helpers.paths import EXAMPLES
from tests.helpers.segments import control_batch

T0 = 1_700_000_000_000
CODECS = list(Compression)


def _recs(n: int, first: int = 0, ts_of=None) -> list[SimpleRecord]:
    return [
        SimpleRecord(
            b"k%03d" % (first + i),
            b"value-%d" % (first + i),
            ts_of(first + i) if ts_of else T0 + first + i,
            (Header("h", b"%d" % ((first + i) % 3)),) if i % 2 == 0 else (),
        )
        for i in range(n)
    ]


def _log_dir(tmp_path: Path, topic: str = "t") -> tuple[Path, Path]:
    d = tmp_path / "logs"
    part = d / f"{topic}-0"
    part.mkdir(parents=True)
    return d, part


def _erase(log_dir: Path, part: Path, dry_run: bool = False, **kw) -> tuple:
    topic = part.name.rpartition("-")[0]
    opts = erase.EraseOptions(
        topic=topic,
        selection=erase.Selection(**{k: v for k, v in kw.items() if k not in _FLAGS}),
        **{k: v for k, v in kw.items() if k in _FLAGS},
    )
    if dry_run:
        return erase.plan(log_dir, [part], opts), None
    return erase.run(log_dir, [part], opts, FsOps(log_dir))


_FLAGS = ("tombstone", "local_only", "overwrite")


def _records(part: Path) -> list[tuple]:
    return [r for r in records_of(part) if r[0] != "batch"]


def _batches(part: Path) -> list:
    return [b for log in sorted(part.glob("*.log")) for b in iter_batches(log.read_bytes())]


def _indexes_check(part: Path) -> None:
    """Every .index entry points at a batch ending at its offset, every .timeindex entry at the
    batch whose max timestamp it holds (kafka-dump-log's checks)."""
    for idx in part.glob("*.index"):
        c = check_offset_index(idx)
        assert c.error is None and not c.mismatches, idx
    for tix in part.glob("*.timeindex"):
        c = check_time_index(tix)
        assert c.error is None and not c.out_of_order
        # a segment left without a record: its one entry, (0, its base offset), names no batch
        if tix.with_suffix(".log").stat().st_size == 0:
            assert [(e.timestamp, e.offset) for e in c.entries] == [
                (0, c.not_found[0].index_offset)
            ]
        else:
            assert not c.not_found
        # kafka-dump-log takes an empty batch's max timestamp from its records (-1); the index
        # has the batch header's, as Kafka's cleaner appends a RETAIN_EMPTY batch
        assert all(m.log_timestamp == -1 for m in c.mismatches), c.mismatches


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_v2_of_every_codec_loses_only_the_selected_records(tmp_path, codec):
    log_dir, part = _log_dir(tmp_path)
    write_segment(
        part,
        0,
        [
            build_v2_batch(_recs(10), 0, compression=codec, partition_leader_epoch=3),
            build_v2_batch(_recs(10, 10), 10, compression=codec, partition_leader_epoch=4),
            build_v2_batch(_recs(10, 20), 20, compression=codec, partition_leader_epoch=4),
        ],
    )
    before_recs, before = _records(part), _batches(part)
    p, report = _erase(log_dir, part, keys=(b"k003", b"k017"))
    assert p.partitions["t-0"]["erased_offsets"] == [[3, 3], [17, 17]]
    assert [r for r in _records(part)] == [r for r in before_recs if r[0] not in (3, 17)]
    after = _batches(part)
    ident = lambda b: (  # noqa: E731
        b.base_offset,
        b.last_offset,
        b.producer_id,
        b.producer_epoch,
        b.base_sequence,
        b.partition_leader_epoch,
        b.compression_id,
        b.attributes,
    )
    assert [ident(b) for b in after] == [ident(b) for b in before]
    assert [b.records_count for b in after] == [9, 9, 10]
    assert all(b.is_valid() for b in after)
    assert bytes(after[2].data) == bytes(before[2].data)  # no match: written as it was
    _indexes_check(part)
    assert report["quarantine"] is None
    assert not (tmp_path / ".kafkalog-quarantine").exists()  # no copy kept


def test_erasing_a_batchs_max_timestamp_lowers_it_and_the_time_index(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    late = {4: T0 + 9_000}  # record 4 holds the first batch's max timestamp
    write_segment(
        part,
        0,
        [
            build_v2_batch(_recs(5, 0, lambda i: late.get(i, T0 + i)), 0),
            build_v2_batch(_recs(5, 5, lambda i: T0 + 10_000 + i), 5),
        ],
    )
    _erase(log_dir, part, keys=(b"k004",))
    first = _batches(part)[0]
    assert first.max_timestamp == T0 + 3 and first.last_offset == 4
    _indexes_check(part)
    tix = parse_time_index((part / "00000000000000000000.timeindex").read_bytes(), 0)
    assert [(e.timestamp, e.offset) for e in tix][-1] == (T0 + 10_009, 9)


def test_log_append_time_batches_keep_their_timestamp(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(
        part,
        0,
        [
            build_v2_batch(
                _recs(6),
                0,
                compression=Compression.LZ4,
                timestamp_type=TimestampType.LOG_APPEND_TIME,
                log_append_time=T0 + 500,
            )
        ],
    )
    before = _records(part)
    _erase(log_dir, part, offsets=((2, 3),))
    (b,) = _batches(part)
    assert b.timestamp_type is TimestampType.LOG_APPEND_TIME and b.max_timestamp == T0 + 500
    assert _records(part) == [r for r in before if r[0] not in (2, 3)]


def test_transactions_keep_their_markers_and_txnindex(tmp_path):
    """Control batches are never touched, and the .txnindex is kept as it is (offsets do not move)."""
    from kafkalog_cli.formats.txnindex import AbortedTxn

    log_dir, part = _log_dir(tmp_path)
    txn = dict(producer_id=42, producer_epoch=1, is_transactional=True)
    write_segment(
        part,
        0,
        [
            build_v2_batch(_recs(4), 0, base_sequence=0, **txn),
            control_batch(4, commit=True),
            build_v2_batch(_recs(4, 5), 5, base_sequence=4, **txn),
            control_batch(9, commit=False),
            build_v2_batch(_recs(2, 10), 10),
        ],
        aborted=[AbortedTxn(0, 42, 5, 9, 10)],
    )
    txnindex = (part / "00000000000000000000.txnindex").read_bytes()
    before = _batches(part)
    _erase(log_dir, part, keys=(b"k001", b"k006"))
    after = _batches(part)
    assert [bytes(b.data) for b in after if b.is_control] == [
        bytes(b.data) for b in before if b.is_control
    ]
    assert (part / "00000000000000000000.txnindex").read_bytes() == txnindex
    assert [(b.base_offset, b.last_offset, b.base_sequence) for b in after] == [
        (b.base_offset, b.last_offset, b.base_sequence) for b in before
    ]
    assert all(b.is_transactional for b in after[:4])


def test_an_idempotent_producers_last_batch_is_kept_empty_the_others_go(tmp_path):
    """BatchRetention.RETAIN_EMPTY: the producer's last batch keeps its header (sequence, offsets)."""
    log_dir, part = _log_dir(tmp_path)
    pid = dict(producer_id=7, producer_epoch=2)
    write_segment(
        part,
        0,
        [
            build_v2_batch(_recs(3), 0, base_sequence=0, **pid),
            build_v2_batch(_recs(3, 3), 3, base_sequence=3, **pid),
            build_v2_batch(_recs(3, 6), 6),  # no producer
        ],
    )
    _erase(log_dir, part, key_prefixes=(b"k00",), offsets=((0, 5),))
    kept = [
        (b.base_offset, b.last_offset, b.records_count, b.base_sequence) for b in _batches(part)
    ]
    assert kept == [(3, 5, 0, 3), (6, 8, 3, -1)]
    assert Partition.open(part).log_end_offset == 9


def test_the_logs_last_batch_is_kept_empty_so_the_log_end_offset_stays(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(3), 0), build_v2_batch(_recs(2, 3), 3)])
    _erase(log_dir, part, offsets=((3, 4),))
    assert [(b.base_offset, b.last_offset, b.records_count) for b in _batches(part)] == [
        (0, 2, 3),
        (3, 4, 0),
    ]
    assert Partition.open(part).log_end_offset == 5


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY])
def test_v0_v1_messages_and_wrappers(tmp_path, magic, codec):
    log_dir, part = _log_dir(tmp_path)
    recs = [SimpleRecord(r.key, r.value, r.timestamp, (), r.offset) for r in _recs(8)]
    if codec is Compression.NONE:
        batches = [build_legacy_batch([r], i, magic=magic) for i, r in enumerate(recs)]
    else:
        batches = [
            build_legacy_batch(recs[:3], 0, magic=magic, compression=codec),
            build_legacy_batch(recs[3:6], 3, magic=magic, compression=codec),
            build_legacy_batch(recs[6:], 6, magic=magic, compression=codec),
        ]
    write_segment(part, 0, batches)
    before = _records(part)
    p, _ = _erase(log_dir, part, keys=(b"k002", b"k005"))
    assert p.partitions["t-0"]["records_erased"] == 2
    assert _records(part) == [r for r in before if r[0] not in (2, 5)]
    untouched = (  # the messages and wrappers without an erased record: as they were
        [m for i, m in enumerate(batches) if i not in (2, 5)]
        if codec is Compression.NONE
        else batches[2:]
    )
    assert [bytes(b.data) for b in _batches(part)][-len(untouched) :] == untouched
    after = _batches(part)
    assert {b.magic for b in after} == {magic} and all(b.is_valid() for b in after)
    assert {b.compression_id for b in after} == {int(codec)}
    _indexes_check(part)


def test_a_v0_v1_last_message_cannot_be_emptied(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    recs = [SimpleRecord(r.key, r.value, r.timestamp) for r in _recs(3)]
    write_segment(part, 0, [build_legacy_batch(recs, 0, magic=1, compression=Compression.GZIP)])
    before = (part / "00000000000000000000.log").read_bytes()
    p, _ = _erase(log_dir, part, offsets=((0, 2),))
    s = p.partitions["t-0"]
    assert s["exit_code"] == 2 and "lower the log end offset" in s["detail"]
    assert (part / "00000000000000000000.log").read_bytes() == before


def test_tombstone_keeps_the_keys_last_erased_record_as_a_tombstone(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    recs = _recs(6)
    recs[4] = SimpleRecord(b"k001", b"again", T0 + 44, (Header("x", b"y"),))
    write_segment(part, 0, [build_v2_batch(recs, 0, compression=Compression.ZSTD)])
    p, _ = _erase(log_dir, part, keys=(b"k001",), tombstone=True)
    got = _records(part)
    assert [r[0] for r in got] == [0, 2, 3, 4, 5]
    assert got[3] == (4, T0 + 44, b"k001", None, ())  # same offset, timestamp and key
    s = p.partitions["t-0"]
    assert s["tombstones"] == 1 and s["records_erased"] == 2
    assert [r.get("tombstone", False) for r in s["erased_records"]] == [False, True]


def test_values_of_one_test_are_ored_the_tests_anded():
    sel = erase.Selection(keys=(b"a", b"b"), headers=((b"h", None),), offsets=((0, 10), (20, 20)))
    hs = [(b"h", b"1")]
    assert sel.matches(5, b"a", b"v", hs) and sel.matches(20, b"b", None, hs)
    assert not sel.matches(15, b"a", b"v", hs)  # offsets
    assert not sel.matches(5, b"c", b"v", hs)  # key
    assert not sel.matches(5, b"a", b"v", [(b"g", b"1")])  # header
    assert not sel.matches(5, None, b"v", hs)  # a null key passes no key test
    v = erase.Selection(value_regexes=(re.compile(b"^sec"),), headers=((b"h", b"2"),))
    assert v.matches(0, None, b"secret", [(b"h", b"2")])
    assert not v.matches(0, None, b"secret", [(b"h", b"1")])
    assert not v.matches(0, None, None, [(b"h", b"2")])


def test_the_sha256_is_of_the_records_key_value_and_headers_as_stored(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(3), 0, compression=Compression.GZIP)])
    p, _ = _erase(log_dir, part, dry_run=True, keys=(b"k002",))
    want = hashlib.sha256(
        write_varint(4)
        + b"k002"
        + write_varint(7)
        + b"value-2"
        + write_varint(1)
        + write_varint(1)
        + b"h"
        + write_varint(1)
        + b"2"
    ).hexdigest()
    assert p.partitions["t-0"]["erased_records"] == [{"offset": 2, "sha256": want}]
    legacy = erase.record_sha256_legacy(b"k", None)
    assert legacy == hashlib.sha256(write_varint(1) + b"k" + write_varint(-1) + b"\x00").hexdigest()


def test_only_segments_with_matches_are_rewritten(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(5), 0)], mtime_ms=T0)
    write_segment(part, 5, [build_v2_batch(_recs(5, 5), 5)], mtime_ms=T0 + 1000)
    untouched = os.stat(part / "00000000000000000000.log")
    p, _ = _erase(log_dir, part, keys=(b"k007",))
    assert os.stat(part / "00000000000000000000.log").st_ino == untouched.st_ino
    assert p.partitions["t-0"]["segments_rewritten"] == [str(part / "00000000000000000005.log")]
    assert os.stat(part / "00000000000000000005.log").st_mtime_ns == (T0 + 1000) * 1_000_000


def test_dry_run_changes_nothing_and_a_rerun_finds_nothing(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(5), 0, compression=Compression.SNAPPY)])
    before = {f.name: f.read_bytes() for f in part.iterdir()}
    p, _ = _erase(log_dir, part, dry_run=True, keys=(b"k001",))
    assert p.pending and {f.name: f.read_bytes() for f in part.iterdir()} == before
    _erase(log_dir, part, keys=(b"k001",))
    after = {f.name: f.read_bytes() for f in part.iterdir()}
    p, _ = _erase(log_dir, part, keys=(b"k001",))
    assert p.partitions["t-0"]["status"] == "nothing matched" and not p.actions
    assert {f.name: f.read_bytes() for f in part.iterdir()} == after


def test_a_batch_that_does_not_decode_is_corrupt_input(tmp_path):
    from tests.helpers.segments import corrupt_records

    log_dir, part = _log_dir(tmp_path)
    write_segment(
        part, 0, [corrupt_records(build_v2_batch(_recs(3), 0) + build_v2_batch(_recs(3, 3), 3))]
    )
    before = (part / "00000000000000000000.log").read_bytes()
    for selection in (dict(keys=(b"k004",)), dict(key_regexes=(re.compile(b"0$"),))):
        with pytest.raises(KafkalogError) as e:  # it may hold a record to erase
            _erase(log_dir, part, **selection)
        assert e.value.exit_code == ExitCode.CORRUPT
        assert e.value.path == str(part / "00000000000000000000.log")
        assert e.value.position == len(build_v2_batch(_recs(3), 0))  # the second batch
    assert (part / "00000000000000000000.log").read_bytes() == before
    # a batch whose bytes cannot hold the key (an exact key is a substring of its record) is
    # not decoded: it is copied as it is
    p, _ = _erase(log_dir, part, keys=(b"k001",))
    assert p.partitions["t-0"]["records_erased"] == 1


def test_a_crc_mismatch_in_a_batch_to_rewrite_is_corrupt_input(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    raw = bytearray(build_v2_batch(_recs(3), 0))
    raw[-1] ^= 0x01  # the last value byte: decodes, fails its CRC
    write_segment(part, 0, [bytes(raw)])
    before = (part / "00000000000000000000.log").read_bytes()
    with pytest.raises(CorruptRecordError, match="CRC"):
        _erase(log_dir, part, keys=(b"k000",))
    assert (part / "00000000000000000000.log").read_bytes() == before
    assert sorted(f.name for f in part.iterdir()) == ["00000000000000000000.log"]


def test_overwrite_zeroes_the_old_segment_before_its_unlink(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(5), 0)])
    log = part / "00000000000000000000.log"
    size = log.stat().st_size
    with open(log, "rb") as old:  # the old inode, as a process holding it open sees it
        _erase(log_dir, part, keys=(b"k001",), overwrite=True)
        old.seek(0)
        assert old.read() == bytes(size)
    assert [r[0] for r in _records(part)] == [0, 2, 3, 4]


def test_overwrite_leaves_a_file_with_other_links_and_says_so(tmp_path):
    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(5), 0)])
    log = part / "00000000000000000000.log"
    other = tmp_path / "backup.log"
    os.link(log, other)
    before = other.read_bytes()
    p, _ = _erase(log_dir, part, keys=(b"k001",), overwrite=True)
    assert other.read_bytes() == before
    assert any("not overwritten" in f.message for f in p.findings)
    (linked,) = p.partitions["t-0"]["other_copies"]["hard_links"]
    assert linked.startswith(f"{log}: 1 other name(s) link to its bytes")


def _rebuilt(part: Path) -> list:
    """kafkalog's own producer-state rebuild from the log alone (no snapshot)."""
    scratch = part.parent.parent / ("rebuild-" + part.name)
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(part, scratch, ignore=shutil.ignore_patterns("*.snapshot"))
    state = rebuild_producer_state(
        scratch, Partition.open(scratch).segments, None, now_ms=T0, expiration_ms=1 << 62
    )
    return sorted((e.to_snapshot() for e in state.entries.values()), key=lambda e: e.producer_id)


@pytest.mark.parametrize(
    "name,selection",
    [
        ("idempotent-lz4", dict(offsets=((12, 14), (25, 27)))),  # not the batches' max timestamps
        ("idempotent-lz4", dict(offsets=((20, 29),))),  # the producer's last batch emptied
        ("txn", dict(offsets=((0, 4),))),  # a committed transaction's data, its marker stays
        ("txn", dict(offsets=((6, 9), (11, 14)))),
    ],
)
def test_producer_snapshots_and_txnindex_stay_valid(tmp_path, name, selection):
    """The files are unchanged, and the producer state rebuilt from the new log equals them."""
    log_dir = tmp_path / "logs"
    shutil.copytree(EXAMPLES, log_dir)
    (log_dir / ".lock").unlink(missing_ok=True)
    part = log_dir / f"{name}-0"
    kept = {
        f.name: f.read_bytes() for f in part.glob("*") if f.suffix in (".snapshot", ".txnindex")
    }
    (snap,) = [n for n in kept if n.endswith(".snapshot")]
    want = sorted(parse_producer_snapshot(kept[snap]).entries, key=lambda e: e.producer_id)
    assert _rebuilt(part) == want  # the example's own snapshot, as kafkalog rebuilds it
    p, _ = _erase(log_dir, part, **selection)
    assert p.partitions[part.name]["records_erased"] > 0
    assert {f: (part / f).read_bytes() for f in kept} == kept
    assert _rebuilt(part) == want
    _indexes_check(part)


def test_an_open_transactions_first_batch_is_kept_empty(tmp_path):
    """Its first offset is the producer state's current transaction start (the last stable
    offset): kept header-only; the same producer's committed transaction's batch goes."""
    log_dir, part = _log_dir(tmp_path)
    txn = dict(producer_id=42, producer_epoch=1, is_transactional=True)
    write_segment(
        part,
        0,
        [
            build_v2_batch(_recs(2), 0, base_sequence=0, **txn),
            control_batch(2, commit=True),
            build_v2_batch(_recs(3, 3), 3, base_sequence=2, **txn),  # opens a transaction
            build_v2_batch(_recs(3, 6), 6, base_sequence=5, **txn),
            build_v2_batch(_recs(3, 9), 9),
        ],
    )
    before = _rebuilt(part)
    assert [e.current_txn_first_offset for e in before] == [3]
    _erase(log_dir, part, offsets=((0, 1), (3, 5)))
    assert [(b.base_offset, b.last_offset, b.records_count) for b in _batches(part)] == [
        (2, 2, 1),  # the marker
        (3, 5, 0),  # the open transaction's first batch, header-only
        (6, 8, 3),
        (9, 11, 3),
    ]
    assert _rebuilt(part) == before


def test_a_dry_run_after_a_killed_run_reads_the_segments_as_the_rerun_will(tmp_path):
    """The killed run's `.swap` is what the rerun finishes first: the dry run says so (exit 1:
    the finish is pending) and reads the rewritten segment from it."""
    from kafkalog_cli.storage.fsops import InjectedFault

    log_dir, part = _log_dir(tmp_path)
    write_segment(part, 0, [build_v2_batch(_recs(5), 0)])
    write_segment(part, 5, [build_v2_batch(_recs(5, 5), 5)])
    topic = erase.EraseOptions(topic="t", selection=erase.Selection(keys=(b"k001", b"k007")))
    for n in range(1, 60):
        shutil.rmtree(part)
        write_segment(part, 0, [build_v2_batch(_recs(5), 0)])
        write_segment(part, 5, [build_v2_batch(_recs(5, 5), 5)])
        with pytest.raises(InjectedFault):
            erase.run(log_dir, [part], topic, FsOps(log_dir, fault_after=n))
        if (part / "00000000000000000000.log.swap").exists() and not list(part.glob("*.cleaned")):
            break  # every .cleaned file renamed: the .swap is valid (LogLoader completes it)
    p = erase.plan(log_dir, [part], topic)
    assert p.pending and any("interrupted rewrite" in f.message for f in p.findings)
    assert p.partitions["t-0"]["erased_offsets"] == [[7, 7]]  # 1 is gone in the .swap
    p, _ = erase.run(log_dir, [part], topic, FsOps(log_dir))
    assert p.partitions["t-0"]["erased_offsets"] == [[7, 7]]
    assert [r[0] for r in _records(part)] == [0, 2, 3, 4, 5, 6, 8, 9]
    assert not list(part.glob("*.swap")) and not list(part.glob("*.cleaned"))


@pytest.mark.parametrize(
    "case", ["v0-gzip", "v0-snappy", "v1-gzip-create", "v1-lz4-create", "v1-gzip-logappend"]
)
def test_legacy_wrappers_without_an_erased_record_stay_as_they_were(tmp_path, case):
    """Only the wrapper holding the erased record is rebuilt: the others keep their bytes, as
    their producer's compressor wrote them."""
    from tests.helpers.paths import CORPUS

    log_dir, part = _log_dir(tmp_path)
    for f in (CORPUS / "legacy" / case).glob("*.log"):
        shutil.copy(f, part / f.name)
    before, records = _batches(part), _records(part)
    p, _ = _erase(log_dir, part, offsets=((1, 1),))
    assert p.partitions["t-0"]["records_erased"] == 1
    after = _batches(part)
    assert [bytes(b.data) for b in after[1:]] == [bytes(b.data) for b in before[1:]]
    assert _records(part) == [r for r in records if r[0] != 1]  # timestamps too
    assert (after[0].magic, after[0].compression_id, after[0].timestamp_type) == (
        before[0].magic,
        before[0].compression_id,
        before[0].timestamp_type,
    )


def test_a_segment_left_without_a_record_is_passed_by_list_offsets_by_time(tmp_path):
    """Its time index says EMPTIED_SEGMENT_TIMESTAMP: Kafka's fetchOffsetByTimestamp (as
    get-offsets applies it) finds the first record at or after a time in the next segment,
    where the file's mtime, taken for a segment with an empty time index, would stop it."""
    from click.testing import CliRunner

    from kafkalog_cli.cli import cli

    log_dir = tmp_path / "logs"
    shutil.copytree(EXAMPLES, log_dir)
    (log_dir / ".lock").unlink(missing_ok=True)
    part = log_dir / "multi-segment-0"
    first = part / "00000000000000000000.log"
    os.utime(first, ns=(4_000_000_000 * 10**9, 4_000_000_000 * 10**9))  # an mtime after all
    p, _ = _erase(log_dir, part, offsets=((0, 299),))
    assert first.stat().st_size == 0
    for t in ("1700000000000", "1700000300000", "1700000599000"):
        r = CliRunner().invoke(cli, ["get-offsets", str(part), "--time", t])
        assert r.exit_code == 0, r.output
        want = max(300, int(t) // 1000 - 1_700_000_000)  # a record a second from offset 0
        assert r.output.strip() == f"multi-segment:0:{want}", t
    assert (part / "00000000000000000000.timeindex").read_bytes() == bytes(12)
    _indexes_check(part)
