"""Tiered topics (remote.storage.enable=true) through the command line: retain deletes only what
a 3.9 broker's UnifiedLog.deleteOldSegments would (an uploaded local segment, never the active
one, by local.retention.*), keeps the log start offset and the leader epochs the remote tier
needs, and refuses where the upload state or the Kafka version is unknown."""

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.internal.remote_log_metadata import metadata_partition, murmur2
from tests.helpers.run_lines import partitions

from ..ops.tiered_helpers import copy_example, topic_id_of, uploaded

ISSUE_22 = [
    "--assume-kafka-defaults",
    "--topic",
    "multi-segment",
    "--topic-config",
    "multi-segment:remote.storage.enable=true",
    "--topic-config",
    "multi-segment:local.retention.bytes=1000",
    "--topic-config",
    "multi-segment:retention.bytes=5000",
]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def files(d):
    return sorted(p.name for p in (d / "multi-segment-0").iterdir())


def test_murmur2_is_kafkas():
    # UtilsTest.testMurmur2 (clients, 3.9.0-rc3)
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"abc": 479470107,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    }
    assert {k: murmur2(k) for k in cases} == cases


def test_issue_22_reproduction_plans_no_deletion(tmp_path):
    d = copy_example(tmp_path)
    before = files(d)
    r = run("retain", "--dry-run", *ISSUE_22, d)
    assert r.exit_code == 7, r.output + r.stderr
    assert "delete" not in r.output
    assert "tiered storage (remote.storage.enable=true) is Kafka 3.6+" in r.stderr
    assert "--kafka-version" in r.stderr
    r = run("retain", "--kafka-version", "3.9", *ISSUE_22, d)  # applied, not a dry run
    assert r.exit_code == 7, r.output + r.stderr
    n = metadata_partition(topic_id_of(d / "multi-segment-0"), 0)
    assert (
        f"segment 0: upload state unknown: this log dir has no __remote_log_metadata-{n}"
    ) in r.stderr
    assert "to proceed" in r.stderr
    assert files(d) == before


def test_uploaded_segment_goes_active_one_stays_log_start_kept(tmp_path):
    d = copy_example(tmp_path)
    uploaded(d, "multi-segment", 0, (0, 299))
    epochs = (d / "multi-segment-0" / "leader-epoch-checkpoint").read_bytes()
    starts = (d / "log-start-offset-checkpoint").read_bytes()
    r = run("retain", "--kafka-version", "3.9", "--now", 1 << 50, *ISSUE_22, "--format", "json", d)
    assert r.exit_code == 0, r.output + r.stderr
    part = partitions(r.stdout)["multi-segment-0"]
    left = files(d)
    assert "00000000000000000000.log" not in left  # uploaded (0..299): by local.retention.bytes
    assert "00000000000000000300.log" in left  # not uploaded: kept
    assert "00000000000000000600.log" in left  # 3.7+ rolls the breaching active segment
    assert (d / "multi-segment-0" / "leader-epoch-checkpoint").read_bytes() == epochs
    assert (d / "log-start-offset-checkpoint").read_bytes() == starts
    assert "upload" in json.dumps(part)


def test_version_before_tiered_storage_applies_plain_rules(tmp_path):
    d = copy_example(tmp_path)
    r = run("retain", "--dry-run", "--kafka-version", "3.5", *ISSUE_22, d)
    assert r.exit_code == 1, r.output + r.stderr  # a dry run with changes pending
    assert "retention size 5000 breach" in r.output


def test_nothing_uploaded_deletes_nothing(tmp_path):
    d = copy_example(tmp_path)
    uploaded(d, "multi-segment", 0)  # the partition exists, no segment of ours finished
    r = run("retain", "--dry-run", "--kafka-version", "3.9", "--now", 1 << 50, *ISSUE_22, d)
    assert r.exit_code == 0, r.output + r.stderr
    assert "delete /" not in r.output


def test_remote_storage_system_disabled_in_server_properties(tmp_path):
    d = copy_example(tmp_path)
    props = tmp_path / "server.properties"
    props.write_text("log.retention.hours=168\nremote.log.storage.system.enable=false\n")
    r = run(
        "retain",
        "--dry-run",
        "--kafka-version",
        "3.9",
        "--server-properties",
        props,
        *ISSUE_22[1:],
        d,
    )
    assert r.exit_code == 1, r.output + r.stderr  # a dry run with changes pending
    assert "retention size 5000 breach" in r.output


def test_compact_refuses_a_tiered_partition(tmp_path):
    d = copy_example(tmp_path)
    r = run(
        "compact",
        "--dry-run",
        "--assume-kafka-defaults",
        "--topic",
        "compacted",
        "--topic-config",
        "compacted:remote.storage.enable=true",
        d,
    )
    assert r.exit_code == 2, r.output + r.stderr
    assert "Remote log storage is unsupported for the compacted topics" in r.stderr


def test_remote_storage_on_a_compacted_topic_is_a_usage_error():
    r = run(
        "retain",
        "--dry-run",
        "--config",
        "cleanup.policy=compact",
        "--config",
        "remote.storage.enable=true",
        "examples/logdir",
    )
    assert r.exit_code == 2
    assert "Remote log storage is unsupported for the compacted topics" in r.stderr + r.output


def _tiered_below_local(d):
    """multi-segment-0 as a tiered partition whose local segments start at 300: segment 0 went
    after its upload, the log start offset (checkpoint) stays 100, below the first local segment."""
    for suffix in (".log", ".index", ".timeindex"):
        (d / "multi-segment-0" / f"00000000000000000000{suffix}").unlink()
    (d / "log-start-offset-checkpoint").write_text("0\n1\nmulti-segment 0 100\n")
    uploaded(d, "multi-segment", 0, (0, 299))


TIERED = [
    "--topic",
    "multi-segment",
    "--topic-config",
    "multi-segment:remote.storage.enable=true",
    "--kafka-version",
    "3.9",
]


def test_describe_and_get_offsets_answer_as_the_broker_on_a_tiered_partition(tmp_path):
    d = copy_example(tmp_path)
    _tiered_below_local(d)
    r = run("describe", d, *TIERED, "--format", "json")
    part = [json.loads(x) for x in r.stdout.splitlines() if '"kind": "partition"' in x][0]
    assert (part["log_start_offset"], part["local_log_start_offset"]) == (100, 300)
    assert part["remote_log"]["upload"]["highest_offset_in_remote_storage"] == 299

    def offset(time):
        r = run("get-offsets", d, *TIERED, "--time", time)
        assert r.exit_code == 0, r.output
        return r.stdout.strip()

    assert offset("earliest") == "multi-segment:0:100"  # remote data included
    assert offset("earliest-local") == "multi-segment:0:300"
    assert offset("latest-tiered") == "multi-segment:0:299"
    # the same dir without remote.storage.enable: the plain load rule, max(checkpoint, first base)
    r = run("get-offsets", d, "--topic", "multi-segment", "--time", "earliest")
    assert r.stdout.strip() == "multi-segment:0:300"


def test_delete_records_on_a_tiered_partition_raises_the_checkpointed_start(tmp_path):
    d = copy_example(tmp_path)
    _tiered_below_local(d)
    (tmp_path / "o.json").write_text(
        '{"partitions": [{"topic": "multi-segment", "partition": 0, "offset": 200}]}'
    )
    r = run("delete-records", "--offset-json", tmp_path / "o.json", *TIERED, d)
    assert r.exit_code == 0, r.output
    # Kafka: 100 -> 200 over remote data (the broker's remote tier then deletes it); no local segment goes
    assert "log start offset 100 -> 200" in r.output
    assert "multi-segment 0 200" in (d / "log-start-offset-checkpoint").read_text()
    assert "00000000000000000300.log" in files(d)


def test_retain_keeps_the_checkpoint_entry_and_epochs_of_a_tiered_partition(tmp_path):
    d = copy_example(tmp_path)
    _tiered_below_local(d)
    epochs = (d / "multi-segment-0" / "leader-epoch-checkpoint").read_bytes()
    r = run("retain", "--now", 1 << 50, *TIERED, "--assume-kafka-defaults", d)
    assert r.exit_code == 0, r.output
    assert "multi-segment 0 100" in (d / "log-start-offset-checkpoint").read_text()
    assert (d / "multi-segment-0" / "leader-epoch-checkpoint").read_bytes() == epochs
    assert "00000000000000000300.log" in files(d)  # the active segment: never uploaded


def test_upload_state_from_another_brokers_copy(tmp_path):
    d = copy_example(tmp_path)
    other = tmp_path / "other-broker"
    other.mkdir()
    rlm = uploaded(d, "multi-segment", 0, (0, 299))
    rlm.rename(other / rlm.name)  # the leader of that partition is another broker
    r = run("retain", "--dry-run", "--kafka-version", "3.9", "--now", 1 << 50, *ISSUE_22, d)
    assert r.exit_code == 7 and "--remote-log-metadata PATH" in r.stderr
    r = run(
        "retain",
        "--dry-run",
        "--kafka-version",
        "3.9",
        "--now",
        1 << 50,
        *ISSUE_22,
        "--remote-log-metadata",
        other,
        d,
    )
    assert r.exit_code == 1, r.output + r.stderr  # a dry run with changes pending
    assert (
        "00000000000000000000.log: segment 0: local log retention size 1000 breach (uploaded)"
        in r.output
    )
    assert "00000000000000000300.log:" not in r.output


def test_3_6_keeps_a_segment_below_the_log_start_offset_until_uploaded(tmp_path):
    # a DeleteRecords left the log start offset at 350: segment 0 (0..299) is below it, not uploaded
    d = copy_example(tmp_path)
    (d / "log-start-offset-checkpoint").write_text("0\n1\nmulti-segment 0 350\n")
    uploaded(d, "multi-segment", 0)
    base = [
        "retain",
        "--dry-run",
        "--topic",
        "multi-segment",
        "--topic-config",
        "multi-segment:remote.storage.enable=true",
        "--topic-config",
        "multi-segment:retention.ms=-1",
        d,
    ]
    r = run(*base, "--kafka-version", "3.6")
    assert r.exit_code == 0 and "delete /" not in r.output
    r = run(*base, "--kafka-version", "3.7")
    assert r.exit_code == 1 and "segment 0: local log start offset 350 breach" in r.output


def test_remote_log_copy_disable_brings_back_the_plain_rules_from_3_9(tmp_path):
    d = copy_example(tmp_path)
    # with copying off, 3.9's LogConfig wants local.retention.bytes -2 or equal to retention.bytes
    args = [
        "retain",
        "--dry-run",
        *ISSUE_22,
        "--topic-config",
        "multi-segment:remote.log.copy.disable=true",
        "--topic-config",
        "multi-segment:local.retention.bytes=-2",
        d,
    ]
    r = run(*args, "--kafka-version", "3.9")
    assert (
        r.exit_code == 1 and "segment 0: retention size 5000 breach" in r.output
    )  # a dry run, changes pending
    r = run(
        *args[:-3], d, "--kafka-version", "3.9"
    )  # local.retention.bytes=1000: Kafka refuses the config
    assert (
        r.exit_code == 2
        and "the `local.retention.bytes` and `retention.bytes` must be set to the identical value"
        in r.stderr
    )
    r = run(
        *args, "--kafka-version", "3.8"
    )  # 3.8 has no remote.log.copy.disable: tiered, upload unknown
    assert r.exit_code == 7 and "upload state unknown" in r.stderr


# ------------------------------------------------------------------ a real tiered log dir of Kafka 3.9.0-rc3
# (tools/kafka-broker/05-smoke-3.9.sh, LocalTieredStorage); see its README.txt
REAL = Path(os.environ.get("KAFKALOG_TIERED_EXAMPLE", "/opt/kafka-3.9.0-rc3-tiered-example"))
needs_real = pytest.mark.skipif(
    not (REAL / "data").is_dir(), reason=f"needs {REAL} (a Kafka 3.9.0-rc3 tiered log dir)"
)
TOPICS = ("tiered-0", "tiered-bytes-0", "tiered-lz4-0", "tiered-lz4-1")


@needs_real
def test_get_offsets_answers_what_the_3_9_broker_answered(tmp_path):
    d = tmp_path / "data"
    shutil.copytree(REAL / "data", d)
    # README.txt: kafka-get-offsets at the end of the run, before the stop
    want = {
        "-2": "tiered:0:0 tiered-bytes:0:0 tiered-lz4:0:0 tiered-lz4:1:0",
        "-4": "tiered:0:6000 tiered-bytes:0:3072 tiered-lz4:0:4000 tiered-lz4:1:4000",
        "-5": "tiered:0:5999 tiered-bytes:0:5119 tiered-lz4:0:3999 tiered-lz4:1:3999",
        "-1": "tiered:0:6000 tiered-bytes:0:6000 tiered-lz4:0:4000 tiered-lz4:1:4000",
    }
    for time, line in want.items():
        r = run("get-offsets", d, "--topic", "tiered*", "--time", time)
        assert r.exit_code == 0, r.output
        assert r.stdout.split() == line.split(), time
    r = run("describe", d, "--format", "json")
    log_dir = [json.loads(x) for x in r.stdout.splitlines() if '"kind": "log_dir"' in x][0]
    assert log_dir["kafka_versions"]["low"] == "3.9"


@needs_real
def test_retain_deletes_exactly_what_the_3_9_broker_deleted(tmp_path):
    """The broker's log dir with the local segments it deleted after their upload put back (from
    LocalTieredStorage's copies): retain deletes those and nothing else, and leaves the log start
    offset, its checkpoint and the leader epochs as the broker did."""
    d = tmp_path / "data"
    shutil.copytree(REAL / "data", d)
    after = {p: sorted(f.name for f in (d / p).iterdir()) for p in TOPICS}
    checkpoints = {
        n: (d / n).read_bytes()
        for n in ("log-start-offset-checkpoint", "replication-offset-checkpoint")
    }
    epochs = {p: (d / p / "leader-epoch-checkpoint").read_bytes() for p in TOPICS}
    restored = 0
    for remote in (REAL / "remote" / "kafka-tiered-storage").iterdir():
        part = next(p for p in TOPICS if remote.name.startswith(p + "-"))
        for f in remote.glob("*.log"):
            base = f.name.split("-", 1)[0]
            if (d / part / f"{base}.log").exists():
                continue  # uploaded and still local
            for suffix in (".log", ".index", ".timeindex"):
                shutil.copyfile(
                    remote / f.name.replace(".log", suffix), d / part / f"{base}{suffix}"
                )
            restored += 1
    assert restored == 9 + 3 + 7 + 7  # smoke.log: local_deleted
    r = run(
        "retain",
        "--now",
        1895767170151,
        "--server-properties",
        REAL / "server.properties",
        "--no-quarantine",
        "--topic",
        "tiered*",
        d,
    )
    assert r.exit_code == 0, r.output + r.stderr
    assert {p: sorted(f.name for f in (d / p).iterdir()) for p in TOPICS} == after
    assert {n: (d / n).read_bytes() for n in checkpoints} == checkpoints
    assert {p: (d / p / "leader-epoch-checkpoint").read_bytes() for p in TOPICS} == epochs
