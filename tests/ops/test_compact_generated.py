"""ops.compact on generated logs: the code paths no broker case of the corpus covers. Each test
builds a partition with formats.records / formats.txnindex, cleans it, and checks what a
consumer reads (offsets, keys, values) and the files left, as Kafka's cleaner would leave them."""

from __future__ import annotations

import struct
from pathlib import Path

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.records import (
    ControlRecordType,
    SimpleRecord,
    build_legacy_batch,
    build_v2_batch,
    iter_batches,
)
from kafkalog_cli.formats.txnindex import AbortedTxn, parse_txn_index
from kafkalog_cli.ops import compact
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.compaction import (
    DAY,
    HOUR,
    NOW,
    T,
    batches,
    consumer_view,
    recs,
    replicated_to_the_end,
    write_segment,
)

RETENTION = DAY  # delete.retention.ms


# ------------------------------------------------------------------------------ building logs


def marker(offset: int, kind: ControlRecordType, pid: int, epoch: int = 0) -> bytes:
    """A transaction marker: a control batch of one record (key: version, type; value: version,
    coordinator epoch)."""
    r = SimpleRecord(struct.pack(">hh", 0, int(kind)), struct.pack(">hi", 0, 0), T)
    return build_v2_batch(
        [r], offset, producer_id=pid, producer_epoch=epoch, is_transactional=True, is_control=True
    )


def roll(part: Path, batches: list[bytes], mtime_ms: int | None = None) -> None:
    """Append `batches` to the (empty) active segment and open a new empty one after them."""
    base = max(int(p.stem) for p in part.glob("*.log"))
    write_segment(part, base, batches, mtime_ms)
    last = list(iter_batches(b"".join(batches)))[-1].last_offset
    write_segment(part, last + 1, [])


def resolver(**configs) -> ConfigResolver:
    # every value that decides what --force cleaning removes, stated (compact refuses to guess)
    base = {
        "cleanup.policy": "compact",
        "delete.retention.ms": str(RETENTION),
        "min.compaction.lag.ms": "0",
    }
    base.update({k.replace("_", "."): str(v) for k, v in configs.items()})
    return ConfigResolver(overrides=base)


def clean(part: Path, now: int, res: ConfigResolver, jobs: int = 1) -> dict:
    log_dir = part.parent
    replicated_to_the_end(part, overwrite=True)  # the data the test appended is replicated
    opts = compact.CompactOptions(now_ms=now, force=True, resolver=res, jobs=jobs)
    cp, report = compact.run(
        log_dir, [part], opts, FsOps(log_dir, Quarantine(log_dir.parent / "q", "compact"))
    )
    assert [d.selected for d in cp.decisions] == [True]
    return report


# ------------------------------------------------------------------------------ reading them back


def markers(part: Path) -> dict[int, tuple]:
    """offset -> (control type, delete horizon) of the transaction markers left."""
    return {b[0]: (b[6], b[7]) for b in batches(part) if b[6] is not None}


# ------------------------------------------------------------------------------ transactions
P, Q = 1000, 2000  # two transactional producers


def _transactional_log(tmp_path: Path) -> Path:
    part = tmp_path / "logs" / "txn-0"
    write_segment(
        part,
        0,
        [
            build_v2_batch(
                recs(("a", "a1"), ("b", "b1")),
                0,
                producer_id=P,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
            ),  # P's first transaction: aborted
            build_v2_batch(
                recs(("c", "c1")),
                2,
                producer_id=Q,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
            ),  # Q: committed, overwritten later
            marker(3, ControlRecordType.ABORT, P),
            marker(4, ControlRecordType.COMMIT, Q),
            build_v2_batch(
                recs(("a", "a2"), ("d", "d1")),
                5,
                producer_id=P,
                producer_epoch=0,
                base_sequence=2,
                is_transactional=True,
            ),  # P's second transaction: committed
            marker(7, ControlRecordType.COMMIT, P),
        ],
        aborted=[AbortedTxn(0, P, 0, 3, 2)],
    )  # LSO 2 when P aborted: Q's transaction was open
    write_segment(part, 8, [build_v2_batch(recs(("c", "c2"), ("e", "e1")), 8)])
    write_segment(
        part,
        10,
        [
            build_v2_batch(
                recs(("f", "f1")),
                10,
                producer_id=Q,
                producer_epoch=0,
                base_sequence=1,
                is_transactional=True,
            ),
            marker(11, ControlRecordType.COMMIT, Q),
        ],
    )
    write_segment(part, 12, [])  # the active segment
    return part


def test_aborted_transactions_go_markers_stay_while_their_batches_do_then_expire(tmp_path):
    part = _transactional_log(tmp_path)
    res = resolver()
    committed = [(5, "a", "a2"), (6, "d", "d1"), (8, "c", "c2"), (9, "e", "e1"), (10, "f", "f1")]

    # pass 1: the aborted batch (found through the .txnindex) is removed: even a read_uncommitted
    # consumer no longer sees a1/b1; the map ignored it too, so a2 is a's value
    rep = clean(part, NOW, res)
    assert consumer_view(part) == committed
    assert rep["cleaned"][0]["cleaner_offset_checkpoint"] == 12
    # every marker stays, unstamped: each one's transaction had batches in this pass
    assert markers(part) == {
        3: ("ABORT", None),
        4: ("COMMIT", None),
        7: ("COMMIT", None),
        11: ("COMMIT", None),
    }
    # the retained ABORT marker's entry is re-appended to the cleaned segment's .txnindex
    assert sorted(p.name for p in part.glob("*.txnindex")) == ["00000000000000000000.txnindex"]
    assert parse_txn_index((part / "00000000000000000000.txnindex").read_bytes()) == [
        AbortedTxn(0, P, 0, 3, 2)
    ]
    assert sorted(p.name for p in part.glob("*.log")) == [
        "00000000000000000000.log",
        "00000000000000000012.log",
    ]

    # pass 2 (new data rolled): the markers of transactions with no batch left (P's aborted one,
    # Q's first commit) become discardable: kept once more, stamped with a delete horizon
    now2 = NOW + 1000
    roll(part, [build_v2_batch(recs(("g", "g1")), 12)])
    clean(part, now2, res)
    horizon = now2 + RETENTION
    assert markers(part) == {
        3: ("ABORT", horizon),
        4: ("COMMIT", horizon),
        7: ("COMMIT", None),
        11: ("COMMIT", None),
    }
    assert not list(part.glob("*.txnindex"))  # the ABORT marker's entry is not carried on
    assert consumer_view(part) == committed + [(12, "g", "g1")]

    # pass 3, just before the horizon: nothing changes
    roll(part, [build_v2_batch(recs(("h", "h1")), 13)])
    clean(part, horizon - 1, res)
    assert markers(part) == {
        3: ("ABORT", horizon),
        4: ("COMMIT", horizon),
        7: ("COMMIT", None),
        11: ("COMMIT", None),
    }

    # pass 4, at the horizon: they are removed; the markers whose batches remain stay
    roll(part, [build_v2_batch(recs(("i", "i1")), 14)])
    clean(part, horizon, res)
    assert markers(part) == {7: ("COMMIT", None), 11: ("COMMIT", None)}
    assert consumer_view(part) == committed + [(12, "g", "g1"), (13, "h", "h1"), (14, "i", "i1")]


def test_aborted_batch_kept_empty_when_it_is_the_producers_last(tmp_path):
    """An aborted transaction whose batch is its producer's last: its records go, an empty batch
    keeps the producer's epoch and sequence; the ABORT marker stays (a batch of it remains)."""
    part = tmp_path / "logs" / "txn-0"
    write_segment(
        part,
        0,
        [
            build_v2_batch(recs(("a", "a1")), 0),
            build_v2_batch(
                recs(("a", "a2"), ("b", "b2")),
                1,
                producer_id=P,
                producer_epoch=3,
                base_sequence=9,
                is_transactional=True,
            ),
            marker(3, ControlRecordType.ABORT, P, epoch=3),
            build_v2_batch(recs(("z", "z1")), 4),
        ],
        aborted=[AbortedTxn(0, P, 1, 3, 4)],
    )
    write_segment(part, 5, [])
    clean(part, NOW, resolver())
    assert consumer_view(part) == [(0, "a", "a1"), (4, "z", "z1")]
    assert batches(part) == [
        (0, 0, -1, -1, -1, 1, None, None),
        (1, 2, P, 3, 9, 0, None, None),  # RETAIN_EMPTY
        (3, 3, P, 3, -1, 1, "ABORT", None),
        (4, 4, -1, -1, -1, 1, None, None),
    ]


# ------------------------------------------------------------------------------ RETAIN_EMPTY
def test_empty_batches_kept_for_active_producers_only(tmp_path):
    part = tmp_path / "logs" / "idem-0"
    R, S = 3000, 4000
    write_segment(
        part,
        0,
        [
            build_v2_batch(
                recs(("x", "x1"), ("y", "y1")), 0, producer_id=S, producer_epoch=0, base_sequence=0
            ),
            build_v2_batch(
                recs(("x", "x2"), ("y", "y2")), 2, producer_id=S, producer_epoch=0, base_sequence=2
            ),
            build_v2_batch(
                recs(("x", "x3"), ("y", "y3")), 4, producer_id=R, producer_epoch=2, base_sequence=7
            ),
            build_v2_batch(recs(("x", "x4"), ("y", "y4")), 6),
            build_v2_batch(recs((None, "no key")), 8),
        ],
    )
    write_segment(part, 9, [])
    for now in (NOW, NOW + 2 * RETENTION):  # the same after a second pass
        clean(part, now, resolver())
        (part.parent / names.CLEANER_CHECKPOINT).unlink()
        assert consumer_view(part) == [(6, "x", "x4"), (7, "y", "y4")]
        assert batches(part) == [
            # S's earlier batch is gone; its last one is kept empty: pid, epoch, sequence, offsets
            (2, 3, S, 0, 2, 0, None, None),
            (4, 5, R, 2, 7, 0, None, None),
            (6, 7, -1, -1, -1, 2, None, None),
            # the keyless batch at 8, last of the round, is dropped: Kafka 3.3 keeps no empty
            # batch but an active producer's last (the round's last only from 4.0, KAFKA-17076)
        ]


# ------------------------------------------------------------------------------ legacy formats
def test_legacy_batches_tombstones_follow_the_mtime_horizon(tmp_path):
    part = tmp_path / "logs" / "old-0"
    log_dir = part.parent
    write_segment(
        part,
        0,
        [
            build_legacy_batch(
                recs(("k1", "v1"), ("k2", None), ("k3", "v3"), ts=NOW - 10 * DAY), 0, magic=1
            )
        ],
        mtime_ms=NOW - 10 * DAY,
    )
    write_segment(
        part,
        3,
        [
            build_legacy_batch(
                recs(("k4", "v4"), ("k7", None), ("k8", "v8")),
                3,
                magic=0,
                compression=Compression.GZIP,
            )
        ],
        mtime_ms=NOW - 5 * DAY,
    )
    dirty = build_legacy_batch(
        recs(("k1", "v1b"), (None, "keyless"), ("k5", "v5"), ("k6", None), ts=NOW - HOUR),
        6,
        magic=1,
        compression=Compression.GZIP,
    )
    write_segment(part, 6, [dirty], mtime_ms=NOW - HOUR)
    write_segment(part, 10, [])
    (log_dir / names.CLEANER_CHECKPOINT).write_bytes(ckpt.encode_offsets({("old", 0): 6}))
    rep = clean(part, NOW, resolver())
    # the legacy horizon is the last clean segment's mtime (NOW-5d) minus delete.retention.ms:
    # k2's tombstone, in a segment last modified before it, goes; k7's (NOW-5d) and k6's stay;
    # k1's clean value is overwritten by the dirty one; the keyless record is dropped
    assert consumer_view(part) == [
        (2, "k3", "v3"),
        (3, "k4", "v4"),
        (4, "k7", None),
        (5, "k8", "v8"),
        (6, "k1", "v1b"),
        (8, "k5", "v5"),
        (9, "k6", None),
    ]
    assert rep["cleaned"][0]["rounds"][0]["invalid_messages"] == 1
    got = list(iter_batches((part / "00000000000000000000.log").read_bytes()))
    assert [(b.magic, b.compression, b.base_offset, b.last_offset) for b in got] == [
        (1, Compression.NONE, 2, 2),
        (0, Compression.GZIP, 3, 5),  # unchanged: copied byte for byte
        (1, Compression.GZIP, 6, 9),
    ]  # rebuilt with its codec, offsets kept
    assert bytes(got[1].data) == build_legacy_batch(
        recs(("k4", "v4"), ("k7", None), ("k8", "v8")), 3, magic=0, compression=Compression.GZIP
    )
    assert [r.timestamp for r in got[2].records()] == [NOW - HOUR] * 3
    # the cleaned segment keeps the mtime of the last source segment
    assert (part / "00000000000000000000.log").stat().st_mtime_ns // 1_000_000 == NOW - HOUR
    assert sorted(p.name for p in part.glob("*.log")) == [
        "00000000000000000000.log",
        "00000000000000000010.log",
    ]


# ------------------------------------------------------------------------------ compact,delete
def test_compact_delete_runs_retention_after_cleaning(tmp_path):
    part = tmp_path / "logs" / "cd-0"
    log_dir = part.parent
    old = NOW - 10 * DAY
    write_segment(
        part, 0, [build_v2_batch(recs(("a", "a1"), ("b", "b1"), ts=old), 0)], mtime_ms=old
    )
    write_segment(
        part,
        2,
        [
            build_v2_batch(recs(("c", "c1"), ts=old), 2),
            build_v2_batch(recs(("a", "a2"), ts=old + DAY), 3),
        ],
        mtime_ms=old + DAY,
    )
    write_segment(part, 4, [build_v2_batch(recs(("d", "d1"), ("b", "b2")), 4)], mtime_ms=T)
    write_segment(part, 6, [])
    (log_dir / names.REPLICATION_CHECKPOINT).write_bytes(ckpt.encode_offsets({("cd", 0): 6}))
    seg_bytes = max(p.stat().st_size for p in part.glob("*.log"))
    res = resolver(cleanup_policy="compact,delete", retention_ms=7 * DAY, segment_bytes=seg_bytes)
    rep = clean(part, NOW, res)
    entry = rep["cleaned"][0]
    assert entry["cleaner_offset_checkpoint"] == 6
    # cleaned first (segment by segment: segment.bytes keeps them apart), then the two segments
    # older than retention.ms are deleted: what a consumer reads starts at 4
    assert consumer_view(part) == [(4, "d", "d1"), (5, "b", "b2")]
    assert sorted(p.name for p in part.glob("*.log")) == [
        "00000000000000000004.log",
        "00000000000000000006.log",
    ]
    # Kafka lists a log start offset only above the first segment's base; recovery points follow it
    assert ckpt.read_offsets(log_dir / names.LOG_START_OFFSET_CHECKPOINT) == {}
    assert ckpt.read_offsets(log_dir / names.RECOVERY_POINT_CHECKPOINT) == {("cd", 0): 4}
    assert isinstance(entry["retention"], list) and entry["retention"]
    # what was removed is in the quarantine: segment 0 as it was, then as cleaning left it (empty:
    # a1 and b1 were overwritten) when retention deleted it
    q = next((tmp_path / "q").glob("*-compact")) / "cd-0"
    first = [
        r.key
        for b in iter_batches((q / "00000000000000000000.log").read_bytes())
        for r in b.records()
    ]
    assert first == [b"a", b"b"]
    assert (q / "00000000000000000000.log.1").stat().st_size == 0
    assert (q / "00000000000000000002.log").exists()
