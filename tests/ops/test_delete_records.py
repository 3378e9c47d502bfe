"""ops.delete_records: Kafka 3.3.1's DeleteRecords (Partition.deleteRecordsOnLeader,
UnifiedLog.maybeIncrementLogStartOffset) and the log-start-offset pass after it, on small logs
whose segments hold offsets 0-2, 3-5 and 6-8 (high watermark 9 unless stated)."""

import json

import pytest

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.errors import UsageError
from kafkalog_cli.ops import delete_records as dr
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.delete_records import logdir, plan_for, run
from tests.helpers.paths import FIXTURES


def files(d):
    return sorted(f.name for f in (d / "t-0").iterdir())


def test_inside_a_segment_raises_the_log_start_and_keeps_the_segment(tmp_path):
    d = logdir(tmp_path)
    p = plan_for(d, before=4)
    s = p.partitions["t-0"]
    assert (
        s["status"],
        s["old_log_start_offset"],
        s["new_log_start_offset"],
        s["low_watermark"],
    ) == ("deleted", 0, 4, 4)
    assert [x["base_offset"] for x in s["segments"]] == [0]
    apply(p, FsOps(d, Quarantine(None, "delete-records")))
    assert files(d)[:3] == [
        "00000000000000000003.index",
        "00000000000000000003.log",
        "00000000000000000003.snapshot",
    ]
    assert "00000000000000000000.log" not in files(d)
    # the log start is above the first segment's base: LogManager checkpoints it; the recovery
    # point follows it (updateLogStartOffset); the leader epochs start there (truncateFromStart)
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 4\n"
    assert (d / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 4\n"
    assert (d / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 4\n"


def test_at_a_segment_base_the_checkpoint_has_no_entry(tmp_path):
    d = logdir(tmp_path)
    p = plan_for(d, before=6)
    # the raised log start is made durable before any segment goes; the broker's own checkpoint
    # (no entry at a segment base) is written last
    writes = [
        (i, a.data) for i, a in enumerate(p.actions) if a.path.name == "log-start-offset-checkpoint"
    ]
    assert writes == [(0, b"0\n1\nt 0 6\n"), (len(p.actions) - 1, b"0\n0\n")]
    run(d, before=6)
    assert [f for f in files(d) if f.endswith(".log")] == ["00000000000000000006.log"]
    assert not any(f.endswith(".snapshot") and f < "00000000000000000006" for f in files(d))
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n0\n"


def test_the_active_segment_stays_even_when_everything_is_below_the_log_start(tmp_path):
    d = logdir(tmp_path)
    p = plan_for(d, before=-1)  # the high watermark, 9 = the log end offset
    s = p.partitions["t-0"]
    assert (s["offset"], s["new_log_start_offset"], s["segments_deleted"], s["rolled"]) == (
        9,
        9,
        2,
        False,
    )
    apply(p, FsOps(d, Quarantine(None, "delete-records")))
    assert [f for f in files(d) if f.endswith(".log")] == ["00000000000000000006.log"]
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 9\n"


def test_below_the_log_start_is_a_no_op(tmp_path):
    d = logdir(tmp_path, log_start={"t-0": 4})
    (d / "t-0" / "00000000000000000000.log").unlink()  # as a broker's retention left it
    for f in (d / "t-0").glob("00000000000000000000.*"):
        f.unlink()
    (d / "t-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 4\n")
    (d / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 9\n")
    p = plan_for(d, before=2)
    assert p.partitions["t-0"]["status"] == "nothing to do"
    assert p.partitions["t-0"]["new_log_start_offset"] == 4
    assert p.actions == []


def test_above_the_high_watermark_is_offset_out_of_range(tmp_path):
    d = logdir(tmp_path, hw={"t-0": 5})
    p = plan_for(d, before=6)
    s = p.partitions["t-0"]
    assert (s["status"], s["error"], s["exit_code"]) == ("error", "OFFSET_OUT_OF_RANGE", 2)
    assert s["detail"] == (
        "t-0: OFFSET_OUT_OF_RANGE: cannot increment the log start offset to 6 since it is "
        "larger than the high watermark 5"
    )
    assert p.actions == []
    ok = plan_for(d, before=5).partitions["t-0"]  # at the high watermark: fine
    assert ok["new_log_start_offset"] == 5


def test_without_a_high_watermark_the_bound_is_the_log_end_offset_and_minus_one_is_refused(
    tmp_path,
):
    d = logdir(tmp_path, hw={"t-0": None})
    s = plan_for(d, before=9).partitions["t-0"]
    assert (s["high_watermark"], s["new_log_start_offset"]) == (None, 9)
    assert s["bound"] == "log end offset (no high watermark in replication-offset-checkpoint)"
    over = plan_for(d, before=10).partitions["t-0"]
    assert over["detail"].endswith(
        "larger than the log end offset (no high watermark in replication-offset-checkpoint) 9"
    )
    p = plan_for(d, before=-1)
    assert p.partitions["t-0"]["status"] == "refused"
    assert p.refusals == [
        "t-0: offset -1 means the high watermark, and replication-offset-checkpoint has none "
        "for it; give the offset itself (at most the log end offset 9)"
    ]
    assert p.actions == []


def test_a_negative_offset_other_than_minus_one_is_out_of_range(tmp_path):
    s = plan_for(logdir(tmp_path), before=-2).partitions["t-0"]
    assert s["detail"] == "t-0: OFFSET_OUT_OF_RANGE: the offset -2 is not valid"


def test_offsets_per_partition_and_the_others_untouched(tmp_path):
    d = logdir(tmp_path, partitions=("t-0", "t-1", "u-0"))
    p = plan_for(d, offsets={("t", 1): 3, ("u", 0): 7})
    assert set(p.partitions) == {"t-1", "u-0"}
    assert (
        p.partitions["t-1"]["new_log_start_offset"],
        p.partitions["u-0"]["new_log_start_offset"],
    ) == (3, 7)
    assert not any(a.path.parent.name == "t-0" for a in p.actions)


def test_internal_topics_are_refused_when_named_and_skipped_with_before(tmp_path):
    d = logdir(tmp_path, partitions=("__consumer_offsets-0", "t-0"))
    named = plan_for(d, offsets={("__consumer_offsets", 0): 3}).partitions["__consumer_offsets-0"]
    assert (named["error"], named["exit_code"]) == ("INVALID_TOPIC_EXCEPTION", 2)
    every = plan_for(d, before=3).partitions
    assert every["__consumer_offsets-0"]["status"] == "skipped"
    assert every["t-0"]["new_log_start_offset"] == 3


def test_a_compact_topic_is_a_policy_violation_with_its_source(tmp_path):
    d = logdir(tmp_path)
    res = ConfigResolver(topic_overrides={"t": {"cleanup.policy": "compact"}})
    s = plan_for(d, resolver=res, before=3).partitions["t-0"]
    assert s["error"] == "POLICY_VIOLATION"
    assert "cleanup.policy=compact from --topic-config" in s["detail"]
    both = ConfigResolver(topic_overrides={"t": {"cleanup.policy": "compact,delete"}})
    assert plan_for(d, resolver=both, before=3).partitions["t-0"]["new_log_start_offset"] == 3


def test_a_rerun_changes_nothing(tmp_path):
    d = logdir(tmp_path)
    run(d, before=4)
    p = plan_for(d, before=4)
    assert p.actions == [] and p.partitions["t-0"]["status"] == "nothing to do"


# ------------------------------------------------------------------ --offset-json
def test_offset_json_as_kafka_reads_it():
    text = (
        b'{"partitions": [{"topic": "a", "partition": 0, "offset": 5}, '
        b'{"topic": "b", "partition": 2, "offset": -1}]}'
    )
    assert dr.parse_offset_json(text, "f") == {("a", 0): 5, ("b", 2): -1}
    assert dr.parse_offset_json(b'{"version": 1, "partitions": []}', "f") == {}


# each line: the file's bytes (hex; `text` is for reading), the message, the byte it names
BAD_OFFSET_JSON = [
    json.loads(x) for x in (FIXTURES / "offset-json" / "bad.jsonl").read_text().splitlines()
]


@pytest.mark.parametrize("case", BAD_OFFSET_JSON, ids=[c["message"] for c in BAD_OFFSET_JSON])
def test_bad_offset_json_names_the_byte(case):
    message, position = case["message"], case["position"]
    with pytest.raises(UsageError) as e:
        dr.parse_offset_json(bytes.fromhex(case["hex"]), "offsets.json")
    assert (e.value.message, e.value.path, e.value.position) == (message, "offsets.json", position)
    assert str(e.value) == f"offsets.json: byte {position}: {message}"


def test_the_report_says_what_changed(tmp_path):
    d = logdir(tmp_path)
    report = run(d, quarantine=tmp_path / "q", before=6)
    assert report["op"] == "delete-records"
    assert json.dumps(report)  # plain JSON
    assert {c["path"].rsplit("/", 1)[1] for c in report["changed"] if c["action"] == "delete"} >= {
        "00000000000000000000.log",
        "00000000000000000003.log",
    }
    assert report["quarantine"] and (tmp_path / "q").exists()
