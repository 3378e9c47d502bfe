"""`doctor` says "a broker starts" only when it checked: the broker's user by uid when it has no
passwd entry, `--user` as a uid or a name this host knows (else a warning that access was not
checked), meta.properties' values with Kafka's types and ranges, a cluster.id mismatch judged
from the metadata log's topic ids, and bit rot in closed segments the broker serves as it is."""

from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.doctor import (
    copy,
    doctor,
    findings,
    owned_by,
    props,
    rot,
    split,
    unused_uid,
    write_props,
)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files to another uid")


# ------------------------------------------------------------------ the broker's user
@needs_root
def test_a_uid_without_a_passwd_entry_is_judged_by_its_number(tmp_path):
    """The container case: the log dir is uid 4242's, no such user here, one segment root's 0644."""
    uid = unused_uid()
    d = copy(tmp_path)
    owned_by(d, uid)
    bad = d / "multi-segment-0" / "00000000000000000000.log"
    os.chown(bad, 0, 0)
    bad.chmod(0o644)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = findings(r, "access")
    assert str(bad) in f["path"]
    assert f"uid {uid}" in f["problem"] and "inferred from the owner of" in f["problem"]
    assert f"chown -R {uid}:{uid} {d}" in f["fix"]
    text = doctor(d)
    assert text.exit_code == 8 and "a broker starts" not in text.stdout


@needs_root
def test_user_given_as_a_uid(tmp_path):
    uid = unused_uid()
    d = copy(tmp_path)
    owned_by(d, 0)
    r = doctor(d, "--user", str(uid), "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = findings(r, "access")
    assert f"uid {uid}" in f["problem"] and str(d) in f["path"]
    assert doctor(d, "--user", "0").exit_code == 0


def test_user_this_host_does_not_know_is_not_an_all_clear(tmp_path):
    d = copy(tmp_path)
    r = doctor(d, "--user", "kafkalog-no-such-user", "--format", "json")
    assert r.exit_code == 1, r.output
    (f,) = findings(r, "access")
    assert f["severity"] == "warning" and "could not be checked" in f["problem"]
    assert "kafkalog-no-such-user" in f["problem"]
    text = doctor(d, "--user", "kafkalog-no-such-user")
    assert (
        text.exit_code == 1
        and "doctor: a broker starts" not in text.stdout
        and "not known" in text.stdout
    )


# ------------------------------------------------------------------ meta.properties with Kafka's types
@pytest.mark.parametrize(
    "value, says",
    [
        ("2147483648", "Failed to parse node.id property as an int"),
        ("99999999999999999999", "Failed to parse node.id property as an int"),
        (
            "1 ",
            "Failed to parse node.id property as an int",
        ),  # Properties.load keeps trailing blanks
        ("-1", "negative"),
    ],
)
def test_node_id_outside_a_java_int_or_negative_stops_the_broker(tmp_path, value, says):
    d = copy(tmp_path)
    write_props(d, {**props(d), "node.id": value})
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    assert any(says in f["problem"] for f in findings(r, "meta.properties")), r.output
    assert not findings(r, "assignment"), r.output  # no node to judge assignments by: no notes


def test_a_meta_properties_properties_load_refuses_stops_the_broker(tmp_path):
    d = copy(tmp_path)
    with open(d / "meta.properties", "a") as f:
        f.write("=\\u12\n")  # Properties.load: "Malformed \\uxxxx encoding."
    r = doctor(d, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = findings(r, "meta.properties")
    assert (
        f["problem"] == 'damaged: "Malformed \\uxxxx encoding."'
        and "IllegalArgumentException" in f["broker"]
    )


def test_node_id_at_the_top_of_the_int_range_is_taken(tmp_path):
    d = copy(tmp_path)
    write_props(d, {**props(d), "node.id": "2147483647"})
    r = doctor(d, "--format", "json")
    # taken; but the metadata assigns every partition to node 1: warnings that they are strays
    assert r.exit_code == 1 and not findings(r, "meta.properties"), r.output
    assert {f["check"] for f in findings(r)} == {"assignment"}


def test_export_names_the_file_of_a_node_id_out_of_range(tmp_path):
    pytest.importorskip("pyarrow")
    d = copy(tmp_path)
    write_props(d, {**props(d), "node.id": "99999999999999999999"})
    r = CliRunner().invoke(cli, ["export", str(d), str(tmp_path / "out"), "--to", "parquet"])
    assert r.exit_code == 3, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    (line,) = [x for x in r.stderr.splitlines() if not x.startswith("kafkalog: note:")]
    assert line.startswith(f"kafkalog: {d / 'meta.properties'}") and "node.id" in line


# ------------------------------------------------------------------ cluster.id mismatch


def test_a_data_dir_with_the_wrong_cluster_id_is_named_with_the_value(tmp_path):
    a, b = split(tmp_path, ["b"])
    right = props(a)["cluster.id"]
    write_props(b, {**props(b), "cluster.id": "AAAAAAAAAAAAAAAAAAAAAA"})
    r = doctor(a, b, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = [f for f in findings(r, "meta.properties") if "not the same" in f["problem"]]
    assert f"{b / 'meta.properties'}" in f["fix"] and f"cluster.id={right}" in f["fix"]
    assert "keep only" not in f["fix"]
    assert "5 partition(s)" in f["problem"] or "5 partition(s)" in f["fix"]


def test_the_metadata_dir_with_the_wrong_cluster_id_is_named(tmp_path):
    a, b, c = split(tmp_path, ["b", "c"], data_dirs=2)
    right = props(b)["cluster.id"]
    write_props(a, {**props(a), "cluster.id": "AAAAAAAAAAAAAAAAAAAAAA"})
    r = doctor(a, b, c, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = [f for f in findings(r, "meta.properties") if "not the same" in f["problem"]]
    assert f"{a / 'meta.properties'}" in f["fix"] and f"cluster.id={right}" in f["fix"]
    assert f"{b / 'meta.properties'}" not in f["fix"]


def test_another_clusters_dir_is_the_one_to_leave_out(tmp_path):
    a, b = split(tmp_path, ["b"])
    write_props(b, {**props(b), "cluster.id": "AAAAAAAAAAAAAAAAAAAAAA"})
    for p in b.iterdir():
        if (p / "partition.metadata").exists():
            (p / "partition.metadata").write_text("version: 0\ntopic_id: 7ZbD8HZ2Qu-dmdk28ToMYw\n")
    r = doctor(a, b, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = [f for f in findings(r, "meta.properties") if "not the same" in f["problem"]]
    assert f"remove {b} from log.dirs" in f["fix"] and "cluster.id=" not in f["fix"]


def test_without_a_metadata_log_it_says_it_cannot_tell(tmp_path):
    a, b = split(tmp_path, ["b"])
    shutil.rmtree(a / "__cluster_metadata-0")
    write_props(b, {**props(b), "cluster.id": "AAAAAAAAAAAAAAAAAAAAAA"})
    r = doctor(a, b, "--format", "json")
    (f,) = [f for f in findings(r, "meta.properties") if "not the same" in f["problem"]]
    assert "cannot tell which" in f["fix"]


# ------------------------------------------------------------------ bit rot in a closed segment


def test_bit_rot_in_a_closed_segment_is_a_warning_naming_who_is_hit(tmp_path):
    d = copy(tmp_path)
    seg = rot(d)
    r = doctor(d, "--format", "json")
    assert r.exit_code == 1, r.output
    (f,) = findings(r, "crc")
    assert f["severity"] == "warning" and str(seg) in f["path"]
    assert "multi-segment-0" in f["problem"] and "offsets 100..124" in f["problem"]
    assert (
        "Record is corrupt" in f["broker"] and "Found invalid messages during fetch" in f["broker"]
    )
    assert "ISR" in f["broker"]
    assert "--salvage" in f["fix"] and "compare-replicas" in f["fix"]
    text = doctor(d)
    assert text.exit_code == 1 and "with warnings" in text.stdout


def test_recover_dry_run_names_bit_rot_it_keeps(tmp_path):
    d = copy(tmp_path)
    rot(d)
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    r = CliRunner().invoke(cli, ["recover", str(d), "--dry-run"])
    assert r.exit_code == 1, r.output
    assert "offsets 100..124" in r.output and "multi-segment-0" in r.output
    assert "--salvage" in r.output and "compare-replicas" in r.output
    j = CliRunner().invoke(cli, ["recover", str(d), "--dry-run", "--format", "json"])
    assert j.exit_code == 1 and "offsets 100..124" in j.output
    real = CliRunner().invoke(cli, ["recover", str(d)])
    assert real.exit_code == 1 and "offsets 100..124" in real.output
    assert {
        p: p.read_bytes() for p in before
    } == before  # kept: recover does not change it by default


def test_recover_without_the_crc_check_says_it_did_not_check(tmp_path):
    d = copy(tmp_path)
    rot(d)
    r = CliRunner().invoke(cli, ["recover", str(d), "--dry-run", "--no-crc-check"])
    assert r.exit_code == 0, r.output
    assert "offsets 100..124" not in r.output
    assert "were not checked (--no-crc-check)" in r.output


def test_a_server_properties_node_id_outside_an_int_is_an_error_finding(tmp_path):
    d = copy(tmp_path)
    sp = tmp_path / "server.properties"
    sp.write_text(f"process.roles=broker,controller\nnode.id=2147483648\nlog.dirs={d}\n")
    r = doctor("--server-properties", sp, "--format", "json")
    assert r.exit_code == 8, r.output
    (f,) = findings(r, "server.properties")
    assert (
        "Invalid value 2147483648 for configuration node.id" in f["problem"] and str(sp) in f["fix"]
    )


@needs_root
def test_the_owner_taken_as_the_brokers_user_is_said_to_be_inferred(tmp_path):
    from tests.helpers.doctor import broker_user

    user = broker_user()
    d = copy(tmp_path)
    owned_by(d, user.pw_uid)
    os.chown(d, user.pw_uid, user.pw_gid)
    bad = d / "txn-0" / "00000000000000000000.log"
    os.chown(bad, 0, 0)
    r = doctor(d, "--format", "json")
    (f,) = findings(r, "access")
    assert (
        f"{user.pw_name} (uid {user.pw_uid})" in f["problem"]
        and f"inferred from the owner of {d}" in f["problem"]
    )
    assert (
        "inferred"
        not in findings(doctor(d, "--user", user.pw_name, "--format", "json"), "access")[0][
            "problem"
        ]
    )
