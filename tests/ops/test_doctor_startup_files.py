"""`doctor` on the files a broker reads as it starts beyond meta.properties and the segments,
each as Kafka reads it: partition.metadata (UnifiedLog.initializeTopicId), a partition in two log
dirs (LogManager.loadLog), a file named like a segment whose name is no offset
(LocalLog.offsetFromFileName), bootstrap.checkpoint (BootstrapDirectory.read), the metadata log's
quorum-state (QuorumState.initialize) and tiered storage's remote-log-index-cache. Each
incident of an on-call night: a power cut, a copy left behind, a file saved in the wrong place."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.doctor import MOVED, copy, doctor, findings, split

TOPIC_ID = "DKH2sRcDSTi2pwJiqct51A"  # multi-segment's, in examples/logdir's metadata log


def partition_metadata(d, data: bytes):
    f = d / "multi-segment-0" / "partition.metadata"
    f.write_bytes(data)
    return f


@pytest.mark.parametrize(
    "data",
    [
        b"",  # a power cut before the write reached the disk
        b"version: 0\n",  # the topic id line lost: NullPointerException
        b"version: 0\ntopic_id: not-a-uuid!",  # IllegalArgumentException from Uuid.fromString
    ],
    ids=["empty", "one line", "not a uuid"],
)
def test_a_partition_metadata_kafka_cannot_read_stops_the_broker(tmp_path, data):
    d = copy(tmp_path)
    f = partition_metadata(d, data)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert found["severity"] == "error" and "the broker exits" in found["broker"]
    # the fix writes the topic id the metadata log gives the topic, never removes the file
    assert f"printf 'version: 0\\ntopic_id: {TOPIC_ID}' > {f}" in found["fix"], found["fix"]
    f.write_bytes(f"version: 0\ntopic_id: {TOPIC_ID}".encode())  # the fix
    assert doctor(d).exit_code == 0


@pytest.mark.parametrize(
    "data",
    [
        b"\0" * 42,
        b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA",
        b"version: 1\ntopic_id: " + TOPIC_ID.encode(),
    ],
    ids=["zeros", "the zero uuid", "version 1"],
)
def test_a_partition_metadata_kafka_reads_as_an_io_error_takes_the_log_dir_offline(tmp_path, data):
    a, b = split(tmp_path, ["b"])
    f = b / MOVED[0] / "partition.metadata"
    f.write_bytes(data)
    r = doctor(a, b, "--format", "json")
    assert r.exit_code == 1, r.output  # a, the other log dir, still serves
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert found["severity"] == "warning" and "the log dir is offline" in found["broker"]
    r = doctor(b, "--format", "json")
    assert r.exit_code == 8, r.output  # the last log dir offline: the broker stops


def test_partition_metadata_version_1_is_read_from_3_7(tmp_path):
    d = copy(tmp_path)
    partition_metadata(d, b"version: 1\ntopic_id: " + TOPIC_ID.encode())
    assert doctor(d, "--kafka-version", "3.6").exit_code == 8
    assert doctor(d, "--kafka-version", "3.7").exit_code == 0


def test_a_partition_in_two_log_dirs_stops_the_broker(tmp_path):
    a, b = split(tmp_path, ["b"])
    shutil.copytree(b / MOVED[0], a / MOVED[0])  # a copy left behind by a move
    r = doctor(a, b, "--format", "json")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "directory") if "in 2 log dirs" in x["problem"]]
    assert found["path"] == f"{a / MOVED[0]}, {b / MOVED[0]}"
    assert "Duplicate log directories for multi-segment-0 are found in both" in found["broker"]
    assert f"kafkalog compare-replicas {a / MOVED[0]} {b / MOVED[0]}" in found["fix"]
    # a current replica and a future one of the same partition is a move in progress
    (a / MOVED[0]).rename(a / f"{MOVED[0]}.0123456789abcdef0123456789abcdef-future")
    assert not [x for x in findings(doctor(a, b, "--format", "json")) if "log dirs" in x["problem"]]


@pytest.mark.parametrize("name", ["dump.log", "00000000000000000000 (copy).index", "x.snapshot"])
def test_a_file_named_like_a_segment_whose_name_is_no_offset_stops_the_broker(tmp_path, name):
    d = copy(tmp_path)
    f = d / "multi-segment-0" / name
    f.write_text("what kafka-dump-log printed\n")
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (found,) = findings(r, "file")
    assert found["path"] == str(f) and "NumberFormatException" in found["broker"]
    assert found["fix"] == f"move it out of the partition dir: mv {f} {d.parent}/"
    shutil.move(f, d.parent)  # the fix
    assert doctor(d).exit_code == 0


def test_other_files_in_a_partition_dir_are_not_segments(tmp_path):
    d = copy(tmp_path)
    for name in ("00000000000000000000.log.bak", "notes.txt", "00000000000000000005.log.deleted"):
        (d / "multi-segment-0" / name).write_text("x")
    assert not findings(doctor(d, "--format", "json"), "file")


@pytest.mark.parametrize("data", [b"", b"\0" * 64], ids=["empty", "zeros"])
def test_a_damaged_bootstrap_checkpoint_stops_the_broker_and_moving_it_aside_is_the_fix(
    tmp_path, data
):
    d = copy(tmp_path)
    f = d / "bootstrap.checkpoint"
    f.write_bytes(data)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert "BootstrapDirectory.read" in found["broker"] and "the broker exits" in found["broker"]
    assert found["fix"].startswith(f"mv {f} {f}.damaged")
    f.rename(f"{f}.damaged")
    assert doctor(d).exit_code == 0


@pytest.mark.parametrize("data", [b"", b"\0" * 100, b'{"clusterId":"","leaderId":1'])
def test_a_damaged_quorum_state_stops_3_8_and_later(tmp_path, data):
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"
    f.write_bytes(data)
    r = doctor(d, "--format", "json", "--kafka-version", "3.9")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert "UncheckedIOException" in found["broker"] and found["fix"].startswith(f"mv {f} ")
    r = doctor(d, "--format", "json", "--kafka-version", "3.3")
    assert r.exit_code == 0, r.output  # 3.3 to 3.7 clear it themselves
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert found["severity"] == "note" and "Clearing local quorum state store" in found["broker"]
    r = doctor(d, "--format", "json")  # which release: not known, so no all-clear
    assert r.exit_code == 1 and json_verdict(r).startswith("not known whether a broker starts")
    f.rename(f"{f}.damaged")
    assert doctor(d, "--kafka-version", "3.9").exit_code == 0


def test_a_quorum_state_without_a_mandatory_field_stops_every_release(tmp_path):
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"
    f.write_text('{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":0}\n')
    for version in ("3.3", "3.9"):
        r = doctor(d, "--format", "json", "--kafka-version", version)
        assert r.exit_code == 8, r.output
        (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
        assert "unable to locate field 'appliedOffset'" in found["problem"]


def test_the_remote_index_cache_is_no_partition_from_3_5(tmp_path):
    d = copy(tmp_path)
    (d / "remote-log-index-cache").mkdir()
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8 and "--kafka-version" in findings(r, "directory")[0]["fix"]
    assert doctor(d, "--kafka-version", "3.4").exit_code == 8
    assert doctor(d, "--kafka-version", "3.5").exit_code == 0


def json_verdict(r) -> str:
    import json

    return json.loads(r.stdout)["verdict"]


def test_no_metadata_log_beside_partitions_is_a_warning_before_a_controller_starts(tmp_path):
    """A combined node whose metadata log is gone starts a new, empty one: every partition is
    stray, and 3.0 to 3.6 delete them all at start."""
    d = copy(tmp_path)
    shutil.rmtree(d / "__cluster_metadata-0")
    r = doctor(d, "--format", "json")
    assert r.exit_code == 1, r.output
    (found,) = findings(r, "assignment")
    assert (
        found["path"] == str(d / "__cluster_metadata-0") and "13 partition(s)" in found["problem"]
    )
    assert "delete every one at start" in found["broker"]
    assert found["fix"].startswith(f"restore __cluster_metadata-0 into {d}")


def test_a_partition_without_partition_metadata_is_stray_from_3_7(tmp_path):
    d = copy(tmp_path)
    (d / "multi-segment-0" / "partition.metadata").unlink()
    fix = f"printf 'version: 0\\ntopic_id: {TOPIC_ID}' > {d / 'multi-segment-0' / 'partition.metadata'}"
    for version, code, severity in (("3.6", 0, "note"), ("3.7", 1, "warning")):
        r = doctor(d, "--format", "json", "--kafka-version", version)
        assert r.exit_code == code, r.output
        (found,) = findings(r, "assignment")
        assert found["severity"] == severity and fix in found["fix"], found


def _server_properties(tmp_path, d, voters: str, roles: str = "broker,controller"):
    sp = tmp_path / "server.properties"
    sp.write_text(
        f"process.roles={roles}\nnode.id=1\nlog.dirs={d}\n"
        f"controller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\n"
    )
    return sp


def test_quorum_state_voters_other_than_the_configured_ones_stop_3_3_to_3_7(tmp_path):
    """A third controller added to controller.quorum.voters of a node whose quorum-state holds
    the old set: 3.3 to 3.7 throw at start (QuorumState.initialize), 3.8+ start."""
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"  # its voters: [1]
    sp = _server_properties(tmp_path, d, "1@localhost:9093,2@localhost:9094,3@localhost:9095")
    r = doctor("--server-properties", sp, "--format", "json", "--kafka-version", "3.3.1")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert found["severity"] == "error" and "its voters are [1]" in found["problem"]
    assert (
        "Configured voter set: [1, 2, 3] is different from the voter set read from the state file: [1]"
        in found["broker"]
    )
    assert f"mv {f} {f}.old" in found["fix"] and str(sp) in found["fix"]
    assert doctor("--server-properties", sp, "--kafka-version", "3.7").exit_code == 8
    assert doctor("--server-properties", sp, "--kafka-version", "3.8").exit_code == 0
    r = doctor("--server-properties", sp, "--format", "json")  # the release not known
    assert r.exit_code == 1 and json_verdict(r).startswith("not known whether a broker starts")
    f.rename(f"{f}.old")  # the fix: the node writes a new one
    assert doctor("--server-properties", sp, "--kafka-version", "3.3.1").exit_code == 0


def test_a_node_taken_out_of_a_quorum_stops_3_3_to_3_7_until_its_quorum_state_goes(tmp_path):
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"
    f.write_text(f.read_text().replace('[{"voterId":1}]', '[{"voterId":1},{"voterId":2}]'))
    sp = _server_properties(tmp_path, d, "1@localhost:9093")
    r = doctor("--server-properties", sp, "--format", "json", "--kafka-version", "3.6")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert "its voters are [1, 2]" in found["problem"]
    f.rename(f"{f}.old")
    assert doctor("--server-properties", sp, "--kafka-version", "3.6").exit_code == 0


def test_quorum_state_voters_as_configured_are_all_clear(tmp_path):
    d = copy(tmp_path)
    sp = _server_properties(tmp_path, d, "1@localhost:9093")
    for version in ("3.3.1", "3.7", "3.9"):
        r = doctor("--server-properties", sp, "--kafka-version", version)
        assert r.exit_code == 0, r.output


def test_a_vote_cast_by_a_node_no_longer_a_voter_stops_3_3_to_3_7(tmp_path):
    """A controller turned broker-only, its quorum-state still holding its vote."""
    d = copy(tmp_path)
    f = d / "__cluster_metadata-0" / "quorum-state"
    f.write_text(
        '{"clusterId":"","leaderId":-1,"leaderEpoch":2,"votedId":1,"appliedOffset":0,'
        '"currentVoters":[],"data_version":0}\n'
    )
    sp = _server_properties(tmp_path, d, "2@localhost:9094", roles="broker")
    r = doctor("--server-properties", sp, "--format", "json", "--kafka-version", "3.3.1")
    assert r.exit_code == 8, r.output
    (found,) = [x for x in findings(r, "checkpoint") if x["path"] == str(f)]
    assert "the local id 1 is not a voter" in found["broker"]
    assert doctor("--server-properties", sp, "--kafka-version", "3.8").exit_code == 0
