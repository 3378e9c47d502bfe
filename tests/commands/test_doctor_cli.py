"""`kafkalog doctor`: one log dir per finding, each built the way it happens in the field; no false
alarm on the corpus's real broker log dirs; and, where a real 3.3.1 broker can be run, the same
verdict as the broker (it starts, or it does not)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.corpus import ENV as CORPUS_ENV
from tests.corpus import corpus_dir, corpus_path
from tests.helpers import paths
from tests.helpers.broker_start import broker_verdict, needs_broker
from tests.helpers.doctor import copy, doctor, props, write_props
from tests.helpers.field_damage import base_offset_overflow, torn_tail
from tests.helpers.fullfs import EXAMPLES, fill, tmpfs
from tests.helpers.locks import hold_lock


# ------------------------------------------------------------------ the field's cases
def missing_meta(t):  # a log dir restored from a backup of its partitions only
    d = copy(t)
    (d / "meta.properties").unlink()
    return [d], []


def empty_meta(t):  # the disk filled up while meta.properties was written
    d = copy(t)
    (d / "meta.properties").write_bytes(b"")
    return [d], []


def other_brokers_dir(t):  # log.dirs lists a dir of another broker
    a, b = copy(t, "a"), copy(t, "b")
    shutil.rmtree(b / "__cluster_metadata-0")
    write_props(b, {**props(b), "node.id": "2"})
    return [a, b], []


def node_id_mismatch(t):  # a server.properties copied from another broker
    d = copy(t)
    sp = t / "server.properties"
    sp.write_text(f"process.roles=broker,controller\nnode.id=3\nlog.dirs={d}\n")
    return [d], ["--server-properties", sp]


def duplicate_directory_id(t):  # a 3.7+ log dir copied to a new disk, both listed
    a, b = copy(t, "a"), copy(t, "b")
    shutil.rmtree(b / "__cluster_metadata-0")
    for d in (a, b):
        write_props(d, {**props(d), "directory.id": "Lf3cfkk5TJWmPeEP8nJEzw"})
    return [a, b], []


def metadata_in_a_data_dir(t):  # log.dirs reordered: the metadata log is no longer first
    a, b = copy(t, "a"), copy(t, "b")
    shutil.rmtree(a / "__cluster_metadata-0")
    return [a, b], []


def held_lock(t):  # the broker is still running (or hung in shutdown)
    d = copy(t)
    p = hold_lock(d / ".lock")
    return [d], [], p


def not_a_partition(t):  # mkfs's lost+found: log.dirs at a mount point
    d = copy(t)
    (d / "lost+found").mkdir()
    return [d], []


def damaged_recovery_checkpoint(t):  # a torn write of recovery-point-offset-checkpoint
    d = copy(t)
    f = d / "recovery-point-offset-checkpoint"
    f.write_bytes(f.read_bytes()[:30])
    return [d], []


def damaged_leader_epochs(t):  # a leader-epoch-checkpoint zero-filled by a crash
    d = copy(t)
    f = d / "multi-segment-0" / "leader-epoch-checkpoint"
    f.write_bytes(b"\0" * len(f.read_bytes()))
    return [d], []


def torn(t):  # kill -9 while appending: the active segment ends mid-batch
    return [torn_tail(copy(t))], []


def offset_overflow(t):  # a flipped bit in a base offset (not covered by the CRC)
    return [base_offset_overflow(copy(t))], []


def moving_and_deleting(t):  # a move to another log dir under way, a topic deletion, a note left
    a, b = copy(t, "a"), copy(t, "b")
    for p in b.iterdir():
        if p.is_dir():
            shutil.rmtree(p)
    shutil.copytree(a / "codec-none-0", b / "codec-none-0.2b8c0fbd1e5a4e0d9c5b6f1c2d3e4f50-future")
    a.joinpath("codec-gzip-0").rename(a / "codec-gzip-0.8f14e45fceea4e0d9c5b6f1c2d3e4f51-delete")
    (a / "notes.txt").write_text("migrated on Monday\n")
    return [a, b], []


def future_beside_current(t):  # a -future copy left beside its current replica
    d = copy(t)
    shutil.copytree(d / "codec-none-0", d / "codec-none-0.2b8c0fbd1e5a4e0d9c5b6f1c2d3e4f50-future")
    return [d], []


def stray_for_an_old_broker(t):  # a 3.7+ broker marked a partition stray, then 3.3.1 was started
    d = copy(t)
    shutil.copytree(d / "codec-lz4-0", d / "codec-lz4-0.c9f0f895fb984e0d9c5b6f1c2d3e4f52-stray")
    return [d], []


def stray_for_a_new_broker(t):  # the same, the log dir formatted by a 3.7+ broker (directory.id)
    d = copy(t)
    write_props(d, {**props(d), "directory.id": "Lf3cfkk5TJWmPeEP8nJEzw"})
    shutil.copytree(d / "codec-lz4-0", d / "codec-lz4-0.c9f0f895fb984e0d9c5b6f1c2d3e4f52-stray")
    return [d], []


CASES = {  # name: (build, exit code, check, what the finding says)
    "missing meta.properties": (missing_meta, 8, "meta.properties", "No `meta.properties` found"),
    "empty meta.properties": (empty_meta, 8, "meta.properties", "Failed to find required property"),
    "another broker's log dir": (
        other_brokers_dir,
        8,
        "meta.properties",
        "BrokerMetadata is not consistent",
    ),
    "node.id of server.properties": (
        node_id_mismatch,
        8,
        "meta.properties",
        "InconsistentNodeIdException",
    ),
    "duplicate directory.id": (duplicate_directory_id, 8, "meta.properties", "directory.id"),
    "metadata log in a data dir": (
        metadata_in_a_data_dir,
        8,
        "directory",
        "unexpected metadata location",
    ),
    "held .lock": (held_lock, 8, "lock", "Failed to acquire lock"),
    "lost+found": (not_a_partition, 8, "directory", "is not in the form of topic-partition"),
    "damaged recovery point": (damaged_recovery_checkpoint, 8, "checkpoint", "have failed"),
    "damaged leader epochs": (
        damaged_leader_epochs,
        8,
        "checkpoint",
        "Error while reading checkpoint file",
    ),
    "torn tail": (torn, 1, "segment", "truncates the log"),
    "offset overflow": (offset_overflow, 8, "segment", "the broker exits"),
    "-future, -delete, a note": (moving_and_deleting, 0, "directory", "future replica"),
    "a -future dir beside its current one": (
        future_beside_current,
        8,
        "directory",
        "DirectoryNotEmptyException",
    ),
    "a 3.7+ -stray dir, a 3.3 broker": (
        stray_for_an_old_broker,
        8,
        "directory",
        "a broker before 3.7 exits",
    ),
    "a 3.7+ -stray dir, a 3.7 broker": (stray_for_a_new_broker, 0, "directory", "left alone"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_log_dir_per_finding(tmp_path, name):
    build, code, check, says = CASES[name]
    built = build(tmp_path)
    dirs, extra = built[0], built[1]
    try:
        r = doctor(*dirs, *extra, "--format", "json")
        text = doctor(*dirs, *extra)
    finally:
        if len(built) > 2:
            built[2].kill()
            built[2].wait()
    assert r.exit_code == code, r.output
    report = json.loads(r.stdout)
    assert report["starts"] == (code != 8)
    found = [f for f in report["findings"] if f["check"] == check]
    assert found and any(says in f["broker"] or says in f["problem"] for f in found), report[
        "findings"
    ]
    assert all(f["fix"] and f["broker"] for f in report["findings"])
    assert text.exit_code == code and text.stdout.splitlines()[0].startswith("doctor: ")
    if code == 8:
        assert "will not start" in text.stdout and "ERROR" in text.stdout and "fix:" in text.stdout


def test_a_file_the_brokers_user_cannot_write(tmp_path):
    """kafkalog (or a script) run as root left a root-owned 0600 file in a log dir the broker's
    user owns: that log dir goes offline, so with it alone the broker does not start."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give files to another user")
    from tests.helpers.doctor import broker_user

    user = broker_user()
    d = copy(tmp_path)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(d)], check=True)
    bad = d / "txn-0" / "00000000000000000000.index"
    os.chown(bad, 0, 0)
    bad.chmod(0o600)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "access"]
    assert str(bad) in f["path"] and f"chown -R {user.pw_name}:" in f["fix"]
    assert doctor(d, "--user", "root").exit_code == 0


def test_a_full_disk_and_after_retain(tmp_path):
    with tmpfs(tmp_path / "fs") as fs:
        d = fs / "logdir"
        shutil.copytree(EXAMPLES, d)
        fill(fs)
        r = doctor(d, "--format", "json")
        assert r.exit_code == 8
        (f,) = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "space"]
        assert "No space left on device" in f["broker"] and "--no-quarantine" in f["fix"]
        CliRunner().invoke(
            cli,
            [
                "retain",
                str(d),
                "--assume-kafka-defaults",
                "--config",
                "retention.bytes=20000",
                "--topic",
                "multi-segment",
                "--no-quarantine",
            ],
        )
        assert doctor(d).exit_code == 1  # it starts; little room is left


def test_usage_and_bad_paths(tmp_path):
    assert doctor().exit_code == 2
    f = tmp_path / "file"
    f.write_text("x")
    r = doctor(f)
    assert r.exit_code == 4 and "not a directory" in r.stderr
    sp = tmp_path / "server.properties"
    d = copy(tmp_path)
    sp.write_text(f"process.roles=broker,controller\nnode.id=1\nlog.dirs={d}\n")
    assert doctor("--server-properties", sp).exit_code == 0  # the log dirs of server.properties


@pytest.mark.parametrize("given", ["mistyped", "-"])
def test_a_path_that_does_not_exist_is_no_all_clear(tmp_path, given):
    """A mistyped log dir is not a log dir a broker would create: nothing there was checked."""
    r = doctor(tmp_path / given if given != "-" else given)
    assert r.exit_code == 4, r.output
    assert "a broker starts" not in r.stdout
    assert r.stderr.strip().endswith("no such file or directory (give the broker's log dirs)")


# ------------------------------------------------------------------ no false alarm
CORPUS = corpus_path() if corpus_dir("broker") else None
BROKER_DIRS = (
    sorted(
        str(p.relative_to(CORPUS))
        for p in (CORPUS / "broker").glob("*/*/*")
        if p.name in ("before", "after", "after2")
    )
    if CORPUS
    else []
)
WILD_DIRS = (
    sorted(str(p.parent.relative_to(CORPUS)) for p in (CORPUS / "wild").rglob("meta.properties"))
    if CORPUS
    else []
)
DAMAGED = {
    "broker/recover/tail-garbage/before",
    "broker/recover/torn-tail/before",
}  # the broker truncates them
# a KRaft metadata log dir (bootstrap.checkpoint) committed without its __cluster_metadata-0: a
# lone controller would start an empty metadata log, every partition stray
NO_METADATA_LOG = {"wild/MashaKosher__Internship/kafka/data"}


@pytest.mark.skipif(
    CORPUS is None, reason=f"needs the corpus at {corpus_path()} (set {CORPUS_ENV})"
)
@pytest.mark.parametrize("rel", BROKER_DIRS + WILD_DIRS)
def test_no_false_alarm_on_log_dirs_a_broker_loaded(tmp_path, rel):
    d = tmp_path / "d"
    shutil.copytree(CORPUS / rel, d, symlinks=True)
    r = doctor(d, "--format", "json")
    findings = json.loads(r.stdout)["findings"]
    if rel in DAMAGED:
        assert r.exit_code == 1 and {f["check"] for f in findings} == {"segment"}, findings
    elif rel in NO_METADATA_LOG:
        warned = [f for f in findings if f["severity"] != "note"]
        assert r.exit_code == 1 and [f["check"] for f in warned] == ["assignment"], findings
    else:
        assert r.exit_code == 0 and not [f for f in findings if f["severity"] != "note"], findings


# ------------------------------------------------------------------ the real broker agrees
BROKER_CASES = [
    "missing meta.properties",
    "lost+found",
    "damaged recovery point",
    "damaged leader epochs",
    "torn tail",
    "offset overflow",
    "-future, -delete, a note",
    "a 3.7+ -stray dir, a 3.3 broker",
    "a -future dir beside its current one",
    "empty meta.properties",
    "another broker's log dir",
    "held .lock",
    "node.id of server.properties",
    "metadata log in a data dir",
    "duplicate directory.id",
]


@needs_broker
@pytest.mark.parametrize("name", BROKER_CASES)
def test_the_verdict_agrees_with_a_real_broker(tmp_path, name):
    from tests.helpers.kafka_dist import kafka_dist

    dist = kafka_dist()
    if name == "duplicate directory.id" and not (dist and dist.at_least(3, 7)):
        pytest.skip(
            f"directory.id is Kafka 3.7+'s; KAFKA_HOME is {dist.label if dist else 'unknown'}"
        )
    build, code, _, _ = CASES[name]
    dirs, extra = build(tmp_path)[:2]
    r = doctor(*dirs, *extra)
    # the broker runs with the node.id of the server.properties doctor was given, if any
    sp = (
        Path(extra[extra.index("--server-properties") + 1])
        if "--server-properties" in extra
        else None
    )
    node = (
        next(
            (
                int(ln.split("=", 1)[1])
                for ln in sp.read_text().splitlines()
                if ln.startswith("node.id=")
            ),
            None,
        )
        if sp is not None
        else None
    )
    v = broker_verdict(dirs, tmp_path / "work", node_id=node)
    assert v.started == (r.exit_code != 8), (r.output, v.log[-3000:])


def test_shell_completion_offers_doctor_and_its_options():
    r = CliRunner().invoke(
        cli,
        [],
        env={
            "_KAFKALOG_COMPLETE": "bash_complete",
            "COMP_WORDS": "kafkalog doc",
            "COMP_CWORD": "1",
        },
        prog_name="kafkalog",
    )
    assert "doctor" in r.output
    r = CliRunner().invoke(
        cli,
        [],
        env={
            "_KAFKALOG_COMPLETE": "bash_complete",
            "COMP_WORDS": "kafkalog doctor --se",
            "COMP_CWORD": "2",
        },
        prog_name="kafkalog",
    )
    assert "--server-properties" in r.output


def test_a_partition_the_metadata_no_longer_assigns_here_is_deleted_before_3_7(tmp_path):
    # BrokerMetadataPublisher.findStrayPartitions (3.0 to 3.6) deletes it at start;
    # LogManager.isStrayKraftReplica (3.7+) renames it -stray: a topic id the metadata image does
    # not hold (a topic deleted while this broker was down), or replicas without this node
    import shutil

    from click.testing import CliRunner

    from kafkalog_cli.cli import cli

    d = tmp_path / "ld"
    shutil.copytree(paths.EXAMPLES, d)
    shutil.copytree(d / "codec-none-0", d / "gone-0")
    meta = d / "gone-0" / "partition.metadata"
    # a topic id, not the zero one (that is a damaged file: "Invalid topic ID")
    meta.write_text(meta.read_text().split("topic_id:")[0] + "topic_id: q2xKqN6zTnmuIrIvHOzq9Q\n")
    r = CliRunner().invoke(cli, ["doctor", "--format", "json", str(d)])
    assert r.exit_code == 1, r.output
    found = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "assignment"]
    assert [(f["severity"], f["path"]) for f in found] == [("warning", str(d / "gone-0"))]
    assert "topic id q2xKqN6zTnmuIrIvHOzq9Q is not in the metadata" in found[0]["problem"]
    assert "delete it at start" in found[0]["broker"]
    assert found[0]["fix"].startswith(
        f"to keep its data, move it out of the log dir before the broker starts: mv {d / 'gone-0'} {tmp_path}/"
    )
    r = CliRunner().invoke(cli, ["doctor", "--format", "json", "--kafka-version", "3.7", str(d)])
    assert r.exit_code == 0, r.output
    found = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "assignment"]
    assert found[0]["severity"] == "note" and "Found stray log dir" in found[0]["broker"]
    props = d / "meta.properties"
    props.write_text(props.read_text().replace("node.id=1", "node.id=2"))
    r = CliRunner().invoke(cli, ["doctor", str(d)])
    assert (
        "codec-none-0: not assigned to this broker by the metadata: its replicas are [1], without this broker "
        "(node 2)" in " ".join(r.output.split())
    )
