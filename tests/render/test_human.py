"""render.human: the text of plans, outcomes and summaries, from values built here."""

from __future__ import annotations

from pathlib import Path

from kafkalog_cli.config import TopicConfig
from kafkalog_cli.ops.compact import CompactPlan, LogToClean, PartitionDecision
from kafkalog_cli.ops.plan import Action, ActionKind, Plan
from kafkalog_cli.ops.runner import Outcome
from kafkalog_cli.render import human

P = Path("/data/orders-3")


def test_each_kind_of_action():
    log = P / "00000000000000000000.log"
    assert (
        human.action(Action(ActionKind.RENAME, P / "0.log.swap", "swap done", target=log))
        == f"rename {P}/0.log.swap -> 00000000000000000000.log: swap done"
    )
    assert (
        human.action(
            Action(
                ActionKind.TRUNCATE,
                log,
                "torn tail",
                at=100,
                bytes_removed=20,
                offsets_removed=(7, 9),
            )
        )
        == f"truncate {log} at byte 100 (20 bytes, offsets 7..9): torn tail"
    )
    assert (
        human.action(Action(ActionKind.TRUNCATE, log, "zeros", at=100, bytes_removed=20))
        == f"truncate {log} at byte 100 (20 bytes): zeros"
    )
    assert (
        human.action(
            Action(
                ActionKind.REWRITE_SEGMENT,
                log,
                "salvage",
                ranges=[(0, 10), (30, 40)],
                bytes_removed=20,
            )
        )
        == f"rewrite {log} keeping 2 byte ranges (20 bytes skipped): salvage"
    )
    assert (
        human.action(Action(ActionKind.REBUILD_INDEX, P / "0.index", "stale", data=b"abc"))
        == f"rebuild index {P}/0.index (3 bytes): stale"
    )
    assert (
        human.action(
            Action(ActionKind.CREATE_SEGMENT_FILE, P / "9.index", "new", data=b"", preallocate=4096)
        )
        == f"create segment {P}/9.index (4096 bytes): new"
    )
    assert human.action(Action(ActionKind.DELETE, log, "expired")) == f"delete {log}: expired"


def _plan() -> Plan:
    p = Plan("recover", Path("/data"))
    p.note("orders-3", "torn batch", path=P / "0.log", position=4096)
    p.note("orders-3", "no snapshot", path=P)
    p.note("orders-4", "clean")
    p.add(Action(ActionKind.DELETE, P / "1.log", "past the truncation"))
    return p


def test_a_plan_lists_findings_then_actions():
    assert human.plan(_plan()) == (
        "recover /data: 1 change(s)\n"
        f"  ! orders-3: torn batch ({P}/0.log byte 4096)\n"
        f"  ! orders-3: no snapshot ({P})\n"
        "  ! orders-4: clean\n"
        f"  - delete {P}/1.log: past the truncation"
    )


def test_plan_outcomes():
    p = _plan()
    assert human.plan_outcome(Outcome(p)) == human.plan(p)
    assert (
        human.plan_outcome(Outcome(p, {"quarantine": "/q/x-recover"}, "/q/x-recover"))
        == human.plan(p) + "\n  removed data kept in /q/x-recover"
    )
    assert (
        human.plan_outcome(Outcome(Plan("roll", Path("/data")), {"quarantine": None}))
        == "roll /data: nothing to do"
    )


def _deleted(**extra) -> dict:
    return {
        "partition": "orders-3",
        "status": "deleted",
        "segments_deleted": 3,
        "bytes_freed": 300,
        "old_log_start_offset": 0,
        "new_log_start_offset": 30,
        "segments": [
            {"base_offset": 0, "detail": "too old"},
            {"base_offset": 10, "detail": "too big"},
            {"base_offset": 20, "detail": "too old"},
        ],
        **extra,
    }


def test_retain_partition_lines():
    assert (
        human.retain_partition(_deleted())
        == "orders-3: deleted 3 segment(s), 300 bytes (0, 20: too old; 10: too big); log start offset 0 -> 30"
    )
    assert human.retain_partition(_deleted(rolled=True), dry_run=True) == (
        "orders-3: would delete 3 segment(s), 300 bytes (0, 20: too old; 10: too big); log start offset 0 -> 30; "
        "rolled a new empty segment at 30 first"
    )
    # a tiered log rolls at its log end offset, its log start offset staying below the remote data
    assert human.retain_partition(
        _deleted(rolled=True, rolled_at=589, new_log_start_offset=0)
    ).endswith("log start offset 0 -> 0; rolled a new empty segment at 589 first")
    assert (
        human.retain_partition({"partition": "a-0", "status": "skipped", "detail": "internal"})
        == "a-0: internal"
    )
    assert (
        human.retain_partition({"partition": "a-0", "status": "nothing to do"})
        == "a-0: nothing to do"
    )


def test_retain_is_quiet_after_a_run_unless_verbose():
    p = Plan(
        "retain",
        Path("/data"),
        partitions={"orders-3": _deleted(), "a-0": {"partition": "a-0", "status": "nothing to do"}},
    )
    ran = Outcome(p, {"quarantine": "/q/x-retain"}, "/q/x-retain")
    assert human.retain_outcome(ran, verbose=False) == []
    assert human.retain_outcome(ran, verbose=True) == [
        human.retain_partition(_deleted()),
        "a-0: nothing to do",
        "removed files kept in /q/x-retain",
    ]
    assert human.retain_outcome(Outcome(p), verbose=False) == [
        human.plan(p),
        human.retain_partition(_deleted(), dry_run=True),
    ]


def _decision(selected: bool, reason: str, estimate=None, **log) -> PartitionDecision:
    fields = dict(
        name="t-0",
        directory=Path("/data/t-0"),
        topic="t",
        partition=0,
        cfg=TopicConfig(),
        segments=[],
        log_start_offset=0,
        log_end_offset=50,
        first_dirty=10,
        first_uncleanable=40,
        clean_bytes=100,
        cleanable_bytes=300,
        compaction_delay_ms=0,
        active_producers={},
    )
    fields.update(log)
    return PartitionDecision(LogToClean(**fields), selected, reason, estimate)


def _compact_plan() -> CompactPlan:
    notes = Plan("compact", Path("/data"))
    notes.note("data", "no replication-offset-checkpoint", path="/data/x")
    return CompactPlan(
        Path("/data"),
        1234,
        [
            _decision(
                True,
                "--force",
                {
                    "keys": 5,
                    "bytes_freed": 200,
                    "messages_read": 30,
                    "messages_written": 5,
                    "rounds_needed": 2,
                    "end_offset": 25,
                },
            ),
            _decision(False, "nothing cleanable", name="u-1", checkpoint_reset=True, checkpoint=99),
        ],
        notes,
    )


def test_a_compact_plan():
    assert human.compact_plan(_compact_plan()) == (
        "compact /data (now 1234): 1 of 2 compacted partition(s) to clean\n"
        "  ! data: no replication-offset-checkpoint\n"
        "  clean t-0: dirty [10, 40) ratio 0.750 (300 of 400 bytes); --force; 5 keys, 200 bytes to free, "
        "30 -> 5 messages, round 1 ends at 25 (the keys exceed the offset map)\n"
        "  skip  u-1: dirty [10, 40) ratio 0.750 (300 of 400 bytes); nothing cleanable; "
        "cleaner-offset-checkpoint 99 outside [0, 50]: reset to 10"
    )


def test_compact_outcomes():
    cp = _compact_plan()
    assert human.compact_outcome(Outcome(cp)) == human.compact_plan(cp)
    cleaned = {
        "partition": "t-0",
        "messages_read": 30,
        "messages_written": 5,
        "bytes_freed": 200,
        "rounds": [{}, {}],
        "cleaner_offset_checkpoint": 40,
    }
    assert human.compact_outcome(
        Outcome(cp, {"cleaned": [cleaned], "quarantine": "/q/c"}, "/q/c")
    ) == (
        human.compact_plan(cp) + "\n"
        "  cleaned t-0: 30 -> 5 messages, 200 bytes freed in 2 round(s); cleaner-offset-checkpoint 40\n"
        "  replaced segments kept in /q/c"
    )


def test_summaries():
    s = {"records": 10, "segments": 2, "out": "/x/out"}
    assert (
        human.export_summary(s, to_stdout=False) == "exported 10 records from 2 segments to /x/out"
    )
    assert (
        human.export_summary(s, to_stdout=True)
        == "exported 10 records from 2 segments to standard output"
    )
    assert (
        human.verify_summary(1, 3, 2_000_000, 1, 0.5)
        == "verify-crc: 1 file, 3 batches, 2000000 bytes, 1 problem in 0.50 s (4 MB/s)"
    )
    assert (
        human.verify_summary(2, 0, 0, 0, 0.0)
        == "verify-crc: 2 files, 0 batches, 0 bytes, 0 problems in 0.00 s"
    )
