"""Acceptance: doctor's verdicts on the files a broker reads as it starts beyond meta.properties
and the segments, judged by a real broker on the same log dirs, and doctor's fix, applied as it
words it, judged again: a damaged partition.metadata, one partition in two log dirs, a file
named like a segment whose name is no offset, a damaged bootstrap.checkpoint and quorum-state,
a partition the metadata does not assign here, and a metadata log gone.

Runs when KAFKA_HOME points at a Kafka distribution and KAFKA_PY at a Python with kafka-python
(tools/kafka-broker builds both); skipped otherwise. doctor is told the broker's release
(--kafka-version) where its start-up rules differ."""

from __future__ import annotations

import shutil

from tests.helpers.broker_start import broker_verdict, needs_broker
from tests.helpers.doctor import MOVED, copy, doctor, findings, split
from tests.helpers.kafka_broker import DIST

pytestmark = needs_broker

TOPIC_ID = "DKH2sRcDSTi2pwJiqct51A"  # multi-segment's, in examples/logdir's metadata log
FATAL_LOAD = "Encountered fatal fault: Error starting LogManager"


def release() -> str:
    major, minor = DIST.version_tuple[:2]
    return f"{major}.{minor}"


def once(lines: list[str]) -> list[str]:
    """Each line once: the verdict's log is server.log and the console, which repeat each other."""
    return list(dict.fromkeys(lines))


def loaded(v, partition_dir) -> list[str]:
    return once(v.lines(f"Completed load of Log(dir={partition_dir},"))


def test_an_empty_partition_metadata_stops_the_broker_and_doctors_fix_starts_it(tmp_path):
    d = copy(tmp_path)
    f = d / "multi-segment-0" / "partition.metadata"
    f.write_bytes(b"")  # a power cut between the file's creation and its write
    r = doctor(d, "--format", "json", "--kafka-version", release())
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    v = broker_verdict([d], tmp_path / "refused")
    assert not v.started and v.lines("NullPointerException") and v.lines(FATAL_LOAD), v.log[-3000:]
    fix = f"printf 'version: 0\\ntopic_id: {TOPIC_ID}' > {f}"
    assert fix in found["fix"], found["fix"]
    f.write_bytes(f"version: 0\ntopic_id: {TOPIC_ID}".encode())  # what the printf writes
    assert doctor(d, "--kafka-version", release()).exit_code == 0
    v = broker_verdict([d], tmp_path / "fixed")
    assert v.started, v.log[-3000:]
    (line,) = loaded(v, d / "multi-segment-0")
    assert f"topicId={TOPIC_ID}" in line and "logEndOffset=600" in line, line


def test_zeros_in_partition_metadata_take_the_last_log_dir_offline(tmp_path):
    d = copy(tmp_path)
    (d / "multi-segment-0" / "partition.metadata").write_bytes(b"\0" * 42)
    r = doctor(d, "--format", "json", "--kafka-version", release())
    assert r.exit_code == 8, r.output
    v = broker_verdict([d], tmp_path / "work")
    assert not v.started, v.log[-3000:]
    assert v.lines("Malformed line in checkpoint file") and v.lines(
        f"Shutdown broker because all log dirs in {d} have failed"
    ), v.log[-3000:]


def test_a_partition_in_two_log_dirs_stops_the_broker_and_moving_one_out_starts_it(tmp_path):
    a, b = split(tmp_path, ["b"])
    shutil.copytree(b / MOVED[0], a / MOVED[0])  # a copy left behind by a move
    r = doctor(a, b, "--format", "json")
    assert r.exit_code == 8, r.output
    v = broker_verdict([a, b], tmp_path / "refused")
    assert not v.started and v.lines(f"Duplicate log directories for {MOVED[0]}"), v.log[-3000:]
    assert v.lines(FATAL_LOAD), v.log[-3000:]
    kept = tmp_path / "kept"
    kept.mkdir()
    shutil.move(a / MOVED[0], kept)  # the fix: keep one, the other out of the log dirs
    assert doctor(a, b).exit_code == 0
    v = broker_verdict([a, b], tmp_path / "fixed")
    assert v.started and loaded(v, b / MOVED[0]), v.log[-3000:]


def test_a_dump_saved_as_a_log_file_in_a_partition_dir_stops_the_broker(tmp_path):
    d = copy(tmp_path)
    f = d / "multi-segment-0" / "dump.log"
    f.write_text("Dumping 00000000000000000000.log\n")
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (found,) = findings(r, "file")
    v = broker_verdict([d], tmp_path / "refused")
    assert not v.started and v.lines('NumberFormatException: For input string: "dump"'), v.log[
        -3000:
    ]
    assert found["fix"] == f"move it out of the partition dir: mv {f} {d.parent}/"
    shutil.move(f, d.parent)
    assert doctor(d).exit_code == 0
    assert broker_verdict([d], tmp_path / "fixed").started


def test_a_damaged_bootstrap_checkpoint_stops_the_broker_and_moving_it_aside_starts_it(tmp_path):
    d = copy(tmp_path)
    f = d / "bootstrap.checkpoint"
    f.write_bytes(b"\0" * 64)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    v = broker_verdict([d], tmp_path / "refused")
    assert not v.started and v.lines("CorruptRecordException"), v.log[-3000:]
    assert found["fix"].startswith(f"mv {f} {f}.damaged")
    f.rename(f"{f}.damaged")
    assert doctor(d).exit_code == 0
    v = broker_verdict([d], tmp_path / "fixed")
    assert v.started and loaded(v, d / "multi-segment-0"), v.log[-3000:]


def test_a_damaged_quorum_state_as_the_release_reads_it(tmp_path):
    """3.3 to 3.7 clear it and start; 3.8+ exit; moved aside, every release starts."""
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"
    f.write_bytes(b"")
    r = doctor(d, "--format", "json", "--kafka-version", release())
    exits = DIST.at_least(3, 8)
    assert r.exit_code == (8 if exits else 0), r.output
    v = broker_verdict([d], tmp_path / "damaged")
    assert v.started != exits, v.log[-3000:]
    assert v.lines("Error while reading the Quorum status from the file"), v.log[-3000:]
    f.rename(f"{f}.damaged")  # doctor's fix
    assert doctor(d, "--kafka-version", release()).exit_code == 0
    v = broker_verdict([d], tmp_path / "fixed")
    assert v.started and v.lines("smaller than last written epoch"), v.log[-3000:]


def test_a_partition_of_a_recreated_topic_is_deleted_before_3_7_and_the_fix_keeps_it(tmp_path):
    d = copy(tmp_path)
    stray = d / "multi-segment-0"
    meta = stray / "partition.metadata"
    meta.write_text("version: 0\ntopic_id: q2xKqN6zTnmuIrIvHOzq9Q")  # the topic's old id
    r = doctor(d, "--format", "json", "--kafka-version", release())
    (found,) = findings(r, "assignment")
    deletes = not DIST.at_least(3, 7)
    assert found["severity"] == ("warning" if deletes else "note"), found
    work = tmp_path / "copy"
    shutil.copytree(d, work / "d")
    v = broker_verdict([work / "d"], work / "broker")
    assert v.started and v.lines("Found stray log dir"), v.log[-3000:]
    left = sorted(p.name for p in (work / "d").iterdir() if p.name.startswith("multi-segment-0"))
    renamed = [n for n in left if n.endswith("-delete" if deletes else "-stray")]
    assert renamed, left
    # the fix: moved out before the broker starts, the data is kept whatever the release
    kept = tmp_path / "kept"
    kept.mkdir()
    shutil.move(stray, kept)
    v = broker_verdict([d], tmp_path / "fixed")
    assert v.started and (kept / "multi-segment-0" / "00000000000000000300.log").exists()


def test_no_metadata_log_a_lone_controller_takes_every_partition_for_stray(tmp_path):
    d = copy(tmp_path)
    shutil.rmtree(d / "__cluster_metadata-0")
    r = doctor(d, "--format", "json", "--kafka-version", release())
    assert r.exit_code == 1, r.output
    (found,) = findings(r, "assignment")
    assert "13 partition(s)" in found["problem"]
    v = broker_verdict([d], tmp_path / "work")
    assert v.started and len(once(v.lines("Found stray log dir"))) == 13, v.log[-3000:]
    suffix = "-stray" if DIST.at_least(3, 7) else "-delete"
    assert len([p for p in d.iterdir() if p.name.endswith(suffix)]) == 13


def test_quorum_state_voters_other_than_the_configured_ones_as_the_release_reads_them(tmp_path):
    """A node taken out of a two-voter quorum, now configured as the lone voter: 3.3 to 3.7
    exit (QuorumState.initialize compares the voters), 3.8+ start; doctor's fix (the file moved
    aside) starts every release."""
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"
    f.write_text(
        '{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2}],"data_version":0}\n'
    )
    sp = tmp_path / "server.properties"
    sp.write_text(
        f"process.roles=broker,controller\nnode.id=1\nlog.dirs={d}\n"
        "controller.quorum.voters=1@127.0.0.1:9093\n"
    )
    r = doctor("--server-properties", sp, "--format", "json", "--kafka-version", release())
    exits = not DIST.at_least(3, 8)
    assert r.exit_code == (8 if exits else 0), r.output
    v = broker_verdict([d], tmp_path / "voters")  # controller.quorum.voters=1@...: node 1 alone
    assert v.started != exits, v.log[-3000:]
    if exits:
        assert v.lines("is different from the voter set read from the state file"), v.log[-3000:]
        (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
        assert found["fix"].count(f"mv {f} {f}.old") == 1
    f.rename(f"{f}.old")  # doctor's fix
    assert doctor("--server-properties", sp, "--kafka-version", release()).exit_code == 0
    v = broker_verdict([d], tmp_path / "fixed")
    assert v.started, v.log[-3000:]
