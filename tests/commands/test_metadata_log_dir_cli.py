"""Two log dirs of one broker after a JBOD move: the metadata log (metadata.log.dir) is in disk1,
multi-segment-0 and compacted-0 were moved to disk2. Given together, the topic configs of disk2's
partitions come from disk1's __cluster_metadata-0 (multi-segment's index.interval.bytes=512,
compacted's cleanup.policy=compact), for every command that resolves them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES

INDEX = "multi-segment-0/00000000000000000000.index"


def jbod(tmp_path: Path, cluster_id: str | None = None) -> tuple[Path, Path]:
    disk1, disk2 = tmp_path / "disk1" / "kafka", tmp_path / "disk2" / "kafka"
    shutil.copytree(EXAMPLES, disk1)
    disk2.mkdir(parents=True)
    for part in ("multi-segment-0", "compacted-0"):
        (disk1 / part).rename(disk2 / part)
    meta = (disk1 / "meta.properties").read_text()
    if cluster_id is not None:
        meta = "\n".join(
            f"cluster.id={cluster_id}" if ln.startswith("cluster.id=") else ln
            for ln in meta.splitlines()
        )
    (disk2 / "meta.properties").write_text(meta)
    # a kill -9: recovered from 0, the segment's index lost
    (disk2 / "recovery-point-offset-checkpoint").write_text(
        "0\n2\nmulti-segment 0 0\ncompacted 0 37\n"
    )
    (disk2 / INDEX).unlink()
    return disk1, disk2


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    return r


@pytest.mark.parametrize("order", ["disk1 first", "disk2 first"])
def test_recover_rebuilds_with_the_topic_s_index_interval_from_the_other_log_dir(order, tmp_path):
    disk1, disk2 = jbod(tmp_path)
    dirs = [disk1, disk2] if order == "disk1 first" else [disk2, disk1]
    dry = invoke("recover", "--dry-run", *dirs)
    # index.interval.bytes=512: the 88 bytes the broker wrote, not the 8 of Kafka's default 4096
    assert f"rebuild index {disk2 / INDEX} (88 bytes)" in dry.stdout, dry.stdout
    assert invoke("recover", *dirs).exit_code == 0
    assert (disk2 / INDEX).read_bytes() == (EXAMPLES / INDEX).read_bytes()


def test_describe_reads_the_configs_from_the_other_log_dir(tmp_path):
    disk1, disk2 = jbod(tmp_path)
    r = invoke("describe", disk1, disk2)
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("compacted-0"))
    assert "compact (cluster metadata)" in row, row


def test_another_cluster_s_metadata_log_is_not_used(tmp_path):
    disk1, disk2 = jbod(tmp_path, cluster_id="AnotherCluster00000000")
    dry = invoke("recover", "--dry-run", disk1, disk2)
    assert f"rebuild index {disk2 / INDEX} (8 bytes)" in dry.stdout, dry.stdout
    row = next(
        ln
        for ln in invoke("describe", disk1, disk2).stdout.splitlines()
        if ln.startswith("compacted-0")
    )
    assert "compact (cluster metadata)" not in row


@pytest.mark.parametrize(
    "damage, code, severity",
    [
        ("not utf-8", 8, "ERROR"),  # the broker refuses its broker.id
        (
            "fifo",
            1,
            "WARNING",
        ),  # the broker cannot read it: that log dir goes offline, the other starts
    ],
)
def test_a_damaged_meta_properties_beside_is_doctors_finding_not_a_failure(
    tmp_path, damage, code, severity
):
    disk1, disk2 = jbod(tmp_path)
    meta = disk2 / "meta.properties"
    if damage == "fifo":
        meta.unlink()
        os.mkfifo(meta)
    else:
        meta.write_bytes(b"version=0\nbroker.id=\xff\xfe1\n")
    r = invoke("doctor", disk1, disk2)
    assert r.exit_code == code, r.output
    assert f"{severity:<8}{meta}" in r.stdout, r.stdout


def test_a_node_id_kafka_refuses_in_the_other_log_dir_does_not_stop_the_choice(tmp_path):
    disk1, disk2 = jbod(tmp_path)
    meta = (disk2 / "meta.properties").read_text().splitlines()
    (disk2 / "meta.properties").write_text(
        "\n".join("node.id=abc" if ln.startswith("node.id=") else ln for ln in meta) + "\n"
    )
    dry = invoke("recover", "--dry-run", disk1, disk2)
    assert dry.exit_code == 1, dry.stderr
    assert f"rebuild index {disk2 / INDEX} (88 bytes)" in dry.stdout, dry.stdout


def test_a_fifo_for_the_other_log_dir_s_meta_properties_is_named_not_waited_on(tmp_path):
    disk1, disk2 = jbod(tmp_path)
    (disk1 / "meta.properties").unlink()
    os.mkfifo(disk1 / "meta.properties")
    r = subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", "recover", "--dry-run", str(disk2), str(disk1)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 4, r.stderr
    assert f"kafkalog: {disk1 / 'meta.properties'}: not a regular file (a FIFO)" in r.stderr, (
        r.stderr
    )
