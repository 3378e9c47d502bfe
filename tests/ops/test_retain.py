"""ops.retain against what a Kafka 3.3.1 broker did (corpus broker/retain/time and /size), and
Kafka's guards on small synthetic logs (built by tests/helpers/retention.py)."""

import os
from pathlib import Path

import pytest

from kafkalog_cli.config import ConfigResolver, cluster_metadata_configs
from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine
from kafkalog_cli.storage.segment import Segment, last_index_entry
from tests.helpers.paths import BROKER as FIXTURES
from tests.helpers.retention import (
    DAY,
    NEW,
    NOW,
    OLD,
    TIME_ENTRY,
    copy_case,
    kept_offsets,
    make_log_dir,
    params,
    partition_files,
    plan_for,
    res_with,
    resolver,
    run,
)


# ------------------------------------------------------------------ acceptance: the broker's results
@pytest.mark.parametrize("case", ["time", "size"])
def test_same_segments_and_checkpoint_as_the_broker(case, tmp_path):
    d = copy_case(case, tmp_path)
    kept_before = kept_offsets(d)
    report = run(d, params(case)["now_ms"], resolver(case, d), quarantine=tmp_path / "q")
    after = FIXTURES / f"retain-{case}" / "after"
    want = {
        k: v for k, v in partition_files(after).items() if not k.endswith("leader-epoch-checkpoint")
    }
    got = {k: v for k, v in partition_files(d).items() if not k.endswith("leader-epoch-checkpoint")}
    assert sorted(got) == sorted(want)
    assert got == want
    assert (d / "log-start-offset-checkpoint").read_bytes() == (
        after / "log-start-offset-checkpoint"
    ).read_bytes()
    # nothing that the broker kept was lost, and what went is in the quarantine
    assert kept_offsets(after) <= kept_offsets(d) <= kept_before
    assert report["quarantine"] and any(Path(report["quarantine"]).rglob("*.log"))


def test_time_case_log_start_offsets_and_epochs(tmp_path):
    d = copy_case("time", tmp_path)
    p = plan_for(d, params("time")["now_ms"], resolver("time", d))
    parts = p.partitions
    assert (
        parts["ret-time-0"]["old_log_start_offset"],
        parts["ret-time-0"]["new_log_start_offset"],
    ) == (0, 944)
    assert [s["base_offset"] for s in parts["ret-time-0"]["segments"]] == [0, 192, 384, 576, 760]
    assert [s["base_offset"] for s in parts["ret-time-blocker-0"]["segments"]] == [0]
    assert parts["ret-time-blocker-0"]["new_log_start_offset"] == 192
    assert parts["__cluster_metadata-0"]["status"] == "skipped"
    apply(p, FsOps(d, Quarantine(None, "retain")))
    # LeaderEpochFileCache.truncateFromStart: the broker's after/ has "0 944" too (plus the epoch
    # its restart added at the log end offset, "3 1200", which is not retention's doing)
    assert (d / "ret-time-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 944\n"
    assert (d / "ret-time-blocker-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 192\n"
    assert (
        "0 944\n" in (FIXTURES / "retain-time/after/ret-time-0/leader-epoch-checkpoint").read_text()
    )


def test_time_case_clock_range_from_params(tmp_path):
    d = copy_case("time", tmp_path)
    lo, hi = params("time")["now_ms_valid_range"]

    def start_at(now):
        return plan_for(d, now, resolver("time", d)).partitions["ret-time-0"][
            "new_log_start_offset"
        ]

    assert start_at(lo) == start_at(hi) == 944
    assert start_at(lo - 1) == 760  # segment 760 is exactly retention.ms old: not breached
    assert start_at(hi + 1) == 1136  # segment 944 is breached too


def test_size_case_without_the_server_properties_refuses(tmp_path):
    # the broker ran with log.retention.hours=-1: Kafka's 7-day default would delete every segment
    d = copy_case("size", tmp_path)
    res = ConfigResolver(cluster_metadata=cluster_metadata_configs(d))
    p = plan_for(d, params("size")["now_ms"], res)
    s = p.partitions["ret-size-0"]
    assert s["status"] == "refused" and s["segments_deleted"] == 0 and p.empty
    assert [(u["name"], u["how_to_state"][0]) for u in s["refused"]] == [
        ("cleanup.policy", "--server-properties FILE"),
        ("retention.ms", "--server-properties FILE"),
    ]
    assert (
        s["configs"]["retention.bytes"]["known"]
        and s["configs"]["retention.bytes"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    )
    assert p.refusals == [s["refusal"]] and s["refusal"].startswith(
        "ret-size-0: cleanup.policy, retention.ms are unknown"
    )


def test_size_case_with_assume_kafka_defaults_uses_kafkas_seven_days(tmp_path):
    # said explicitly: Kafka's default retention.ms (7 days) expires every segment of 2023, all go
    d = copy_case("size", tmp_path)
    res = ConfigResolver(cluster_metadata=cluster_metadata_configs(d), assume_kafka_defaults=True)
    s = plan_for(d, params("size")["now_ms"], res).partitions["ret-size-0"]
    assert s["rolled"] and s["new_log_start_offset"] == 1100
    assert {x["reason"] for x in s["segments"]} == {"retention.bytes", "retention.ms"}
    assert (
        s["configs"]["retention.ms"]["assumed"]
        and "(assumed)" in s["configs"]["retention.ms"]["origin"]
    )


# ------------------------------------------------------------------ Kafka's guards
def test_high_watermark_stops_deletion(tmp_path):
    d = make_log_dir(
        tmp_path / "l", {"t-0": [[OLD] * 3, [OLD] * 3, [OLD] * 3, [NEW]]}, hw={"t-0": 7}
    )
    run(d, NOW, res_with())
    # segment 3 ends at 6 (<= hw 7): deletable; segment 6's upper bound 9 > 7: it stays
    assert sorted(f.name for f in (d / "t-0").glob("*.log")) == [
        "00000000000000000006.log",
        "00000000000000000009.log",
    ]


def test_no_high_watermark_deletes_nothing_by_time(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [OLD], [NEW]]}, hw={"t-0": None})
    p = plan_for(d, NOW, res_with())
    assert p.empty and "no high watermark" in p.partitions["t-0"]["detail"]


def test_stops_at_the_first_segment_that_must_stay(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [NEW], [OLD], [NEW]]})
    s = plan_for(d, NOW, res_with()).partitions["t-0"]
    assert [x["base_offset"] for x in s["segments"]] == [0]


def test_empty_active_segment_is_kept_without_a_roll(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [OLD], []]})
    run(d, NOW, res_with())
    assert [f.name for f in (d / "t-0").glob("*.log")] == ["00000000000000000002.log"]
    assert not (d / "t-0" / "00000000000000000001.snapshot").exists()
    assert (d / "t-0" / "00000000000000000002.snapshot").exists()
    # the log is left empty at 2: (0, 2) is dropped as the broker's next load drops it
    assert (d / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n0\n"


def test_every_segment_expired_rolls_a_new_empty_segment_first(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD, OLD], [OLD]]})
    report = run(d, NOW, res_with())
    part = d / "t-0"
    assert sorted(f.name for f in part.iterdir()) == [
        "00000000000000000003.index",
        "00000000000000000003.log",
        "00000000000000000003.snapshot",
        "00000000000000000003.timeindex",
        "leader-epoch-checkpoint",
    ]
    assert (part / "00000000000000000003.log").stat().st_size == 0
    assert (
        part / "00000000000000000003.index"
    ).stat().st_size == 0  # as a clean shutdown leaves them
    assert (part / "00000000000000000003.timeindex").stat().st_size == 0
    # truncateFromStart(3) leaves (0, 3); the broker's next load drops it (LogLoader's
    # truncateFromEnd(log end offset 3)): written as that load leaves it
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    assert (
        report["partitions"]["t-0"]["rolled"]
        and report["partitions"]["t-0"]["new_log_start_offset"] == 3
    )
    # the recovery point follows the log start offset (UnifiedLog.updateLogStartOffset)
    assert (d / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 3\n"
    # and a second run has nothing left to do: the new segment is empty
    assert plan_for(d, NOW, res_with()).empty


def test_compact_topics_get_only_the_log_start_offset_rule(tmp_path):
    d = make_log_dir(
        tmp_path / "l", {"c-0": [[OLD], [OLD], [OLD, OLD], [OLD]]}, log_start={"c-0": 3}
    )
    run(d, NOW, res_with(c={"cleanup.policy": "compact"}))
    # segments 0 and 1 end below the log start offset 3; 2 holds it; time retention is not applied
    assert sorted(f.name for f in (d / "c-0").glob("*.log")) == [
        "00000000000000000002.log",
        "00000000000000000004.log",
    ]
    # the log start offset (3) is above the first segment's base (2): it stays listed
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n1\nc 0 3\n"


def test_log_start_entry_dropped_when_it_becomes_a_segment_base(tmp_path):
    d = make_log_dir(tmp_path / "l", {"c-0": [[NEW], [NEW], [NEW]]}, log_start={"c-0": 2})
    run(d, NOW, res_with())
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    assert [f.name for f in (d / "c-0").glob("*.log")] == ["00000000000000000002.log"]


def test_internal_topics_follow_their_own_configs(tmp_path):
    d = make_log_dir(
        tmp_path / "l", {"__consumer_offsets-0": [[OLD], [OLD], [NEW]], "t-0": [[OLD], [NEW]]}
    )
    # stated for t alone: --config's cleanup.policy would override the internal topic's too
    p = plan_for(
        d,
        NOW,
        ConfigResolver(
            topic_overrides={"t": {"cleanup.policy": "delete", "retention.ms": str(7 * DAY)}}
        ),
    )
    assert p.partitions["__consumer_offsets-0"]["status"] == "nothing to do"  # compact
    assert p.partitions["__consumer_offsets-0"]["cleanup_policy"] == "compact"
    assert p.partitions["t-0"]["segments_deleted"] == 1


def test_size_then_time_in_kafkas_order(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[NEW] * 2, [NEW] * 2, [OLD] * 2, [NEW] * 2]})
    seg = (d / "t-0" / "00000000000000000000.log").stat().st_size
    s = plan_for(d, NOW, res_with(t={"retention.bytes": str(3 * seg)})).partitions["t-0"]
    # size removes segment 0 only; time then stops at segment 2 (new): 4 with an old ts is not reached
    assert [(x["base_offset"], x["reason"]) for x in s["segments"]] == [(0, "retention.bytes")]


def test_mtime_is_the_fallback_timestamp(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[-1], [-1], [NEW]]})
    for base, when in ((0, OLD), (1, NEW)):
        os.utime(d / "t-0" / f"{base:020d}.log", ns=(when * 1_000_000,) * 2)
    s = plan_for(d, NOW, res_with()).partitions["t-0"]
    assert [(x["base_offset"], x["timestamp_from"]) for x in s["segments"]] == [(0, "mtime")]


def test_unindexed_tail_of_the_last_segment_counts(tmp_path):
    # an unclean shutdown can leave the active segment's newest batches out of its time index
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [OLD, OLD]]})
    active = d / "t-0" / "00000000000000000001.log"
    with open(active, "ab") as f:
        f.write(
            build_v2_batch(
                [SimpleRecord(key=b"k", value=b"v", timestamp=NEW)], 3, partition_leader_epoch=0
            )
        )
    (d / "replication-offset-checkpoint").write_text("0\n1\nt 0 4\n")
    s = plan_for(d, NOW, res_with()).partitions["t-0"]
    assert not s["rolled"] and [x["base_offset"] for x in s["segments"]] == [0]


def test_preallocated_index_tails_are_read_through_the_padding(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD + i for i in range(40)]]})
    tindex = d / "t-0" / "00000000000000000000.timeindex"
    entries = tindex.read_bytes()
    assert len(entries) >= 24
    os.truncate(tindex, 10485756)
    assert Segment(d / "t-0", 0).last_time_index_entry() == TIME_ENTRY.unpack(entries[-12:])
    zeros = tmp_path / "z.timeindex"
    zeros.write_bytes(bytes(120))
    assert last_index_entry(zeros, TIME_ENTRY, 1) is None


def test_a_bad_partition_is_reported_and_the_others_retained(tmp_path):
    d = make_log_dir(tmp_path / "l", {"a-0": [[OLD], [NEW]], "b-0": [[OLD], [NEW]]})
    (d / "a-0" / "leader-epoch-checkpoint").write_text("0\n1\nzero 0\n")
    p = plan_for(d, NOW, res_with())
    a = p.partitions["a-0"]
    assert a["status"] == "error" and a["exit_code"] == 3
    assert "a-0/leader-epoch-checkpoint" in a["detail"] and "byte 4" in a["detail"]
    assert p.partitions["b-0"]["segments_deleted"] == 1
    assert all(x.partition != "a-0" for x in p.actions)


def test_interrupted_run_leftovers_are_cleaned(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [NEW]]})
    (d / "t-0" / "00000000000000000000.log").unlink()  # a crash after the .log went
    (d / "t-0" / "leader-epoch-checkpoint.kafkalog-tmp").write_text("0\n")
    run(d, NOW, res_with())
    assert sorted(f.name for f in (d / "t-0").iterdir()) == [
        "00000000000000000001.index",
        "00000000000000000001.log",
        "00000000000000000001.snapshot",
        "00000000000000000001.timeindex",
        "leader-epoch-checkpoint",
    ]


def test_a_corrupt_active_segment_is_an_error_with_file_and_byte(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [OLD]]})
    active = d / "t-0" / "00000000000000000001.log"
    good = active.stat().st_size
    with open(active, "ab") as f:
        f.write(bytes(8) + (5).to_bytes(4, "big") + b"x" * 20)  # batch size 5 < 14
    s = plan_for(d, NOW, res_with()).partitions["t-0"]
    assert s["status"] == "error" and s["exit_code"] == 3
    assert s["detail"].startswith(f"{active}: byte {good}: ")


def test_a_damaged_logmanager_checkpoint_stops_the_log_dir_the_cleaners_does_not(tmp_path):
    d = make_log_dir(tmp_path / "l", {"t-0": [[OLD], [NEW]]})
    (d / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 zero\n")  # retention never reads it
    assert plan_for(d, NOW, res_with()).partitions["t-0"]["segments_deleted"] == 1
    (d / "log-start-offset-checkpoint").write_text("0\n1\nt 0 zero\n")
    with pytest.raises(CheckpointError) as e:
        plan_for(d, NOW, res_with())
    assert e.value.path == str(d / "log-start-offset-checkpoint")
