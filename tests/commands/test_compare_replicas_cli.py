"""kafkalog compare-replicas on the command line: what a user sees, exit codes 0/1/2/3/4."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.replicas import run, unclean_election, write_replica


def invoke(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


def test_diverged_replicas_exit_1_and_show_the_truncated_records(tmp_path):
    a, b = unclean_election(tmp_path)
    r = invoke("compare-replicas", a, b, "--limit", "2")
    assert r.exit_code == 1, r.output
    out = r.output
    assert "leader broker 2 (the highest leader epoch (2))" in out
    assert "broker 1 diverges from broker 2 at offset 80" in out
    assert "epoch 1 -> leader answers epoch 0, end offset 80" in out
    assert (
        "a follower truncates broker 1 to offset 80: 70 records removed (offsets 80..149); 40 of them below "
        "its high watermark 120" in out
    )
    assert (
        'offset 80  2023-11-14T22:13:20.080Z  key "k80"  no producer id  leader epoch 0  not transactional'
        in out
    )
    assert "... 68 more (--limit)" in out
    assert 'key "new80"' in out and out.rstrip().endswith("the replicas diverge")


def test_json_and_log_dirs_with_topic_and_partition(tmp_path):
    unclean_election(tmp_path)
    r = invoke(
        "compare-replicas",
        tmp_path / "b1",
        tmp_path / "b2",
        "--topic",
        "t",
        "--partition",
        "0",
        "--format",
        "json",
    )
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert (doc["agree"], doc["method"], doc["leader"]) == (False, "leader-epoch", "broker 2")
    b1 = doc["replicas"][0]
    assert (b1["label"], b1["divergence_offset"], b1["truncate_to"], b1["truncated_records"]) == (
        "broker 1",
        80,
        80,
        70,
    )
    assert b1["records"][0] == {
        "offset": 80,
        "timestamp": 1700000000080,
        "key": "k80",
        "producer_id": -1,
        "producer_epoch": -1,
        "partition_leader_epoch": 0,
        "transaction": "none",
    }
    assert doc["replicas"][1]["records_from"] == 80


def test_agreeing_replicas_exit_0(tmp_path):
    a = write_replica(tmp_path / "b1", 1, run(5, 0))
    b = write_replica(tmp_path / "b2", 2, run(3, 0))
    r = invoke("compare-replicas", a, b)
    assert r.exit_code == 0 and "the replicas agree up to the shortest one's end" in r.output


def test_bad_input_is_one_line_and_its_exit_code(tmp_path):
    a, b = unclean_election(tmp_path)
    r = invoke("compare-replicas", a)
    assert r.exit_code == 2 and "at least two" in r.output
    r = invoke("compare-replicas", tmp_path / "b1", b)
    assert r.exit_code == 2 and "--topic and --partition" in r.output
    r = invoke("compare-replicas", a, tmp_path / "nope")
    assert r.exit_code == 4 and r.output.strip().endswith("no such file or directory")
    (a / "leader-epoch-checkpoint").write_text("0\n1\n0 x\n")
    r = invoke("compare-replicas", a, b)
    assert r.exit_code == 3
    assert (
        len(r.output.strip().splitlines()) == 1 and "leader-epoch-checkpoint: byte 4:" in r.output
    )


def test_archives_of_log_dirs_compare_as_the_dirs_do(tmp_path):
    # backups of two brokers' log dirs, as operators keep them: a .tar.gz and a .zip
    import shutil
    import tarfile

    unclean_election(tmp_path)
    with tarfile.open(tmp_path / "b1.tar.gz", "w:gz") as t:
        t.add(tmp_path / "b1", arcname="b1")
    shutil.make_archive(str(tmp_path / "b2"), "zip", tmp_path, "b2")
    dirs = invoke(
        "compare-replicas",
        tmp_path / "b1",
        tmp_path / "b2",
        "--topic",
        "t",
        "--partition",
        "0",
        "--format",
        "json",
    )
    arch = invoke(
        "compare-replicas",
        tmp_path / "b1.tar.gz",
        tmp_path / "b2.zip",
        "--topic",
        "t",
        "--partition",
        "0",
        "--format",
        "json",
    )
    assert arch.exit_code == dirs.exit_code == 1, arch.output
    a, d = json.loads(arch.output), json.loads(dirs.output)
    keys = ("label", "divergence_offset", "truncate_to", "truncated_records")
    assert [tuple(r.get(k) for k in keys) for r in a["replicas"]] == [
        tuple(r.get(k) for k in keys) for r in d["replicas"]
    ]
    assert a["replicas"][0]["truncated_records"] == 70
    (tmp_path / "bad.tar").write_bytes(b"not a tar")
    r = invoke(
        "compare-replicas",
        tmp_path / "bad.tar",
        tmp_path / "b2.zip",
        "--topic",
        "t",
        "--partition",
        "0",
    )
    assert (
        r.exit_code == 4
        and "cannot unpack the archive" in r.output
        and len(r.output.strip().splitlines()) == 1
    )
