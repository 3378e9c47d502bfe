"""`kafkalog metadata` through the CLI: against what Kafka 3.3.1's kafka-topics and kafka-configs
printed for the committed broker run (tests/fixtures/groups-broker-3.3.1), the tree, goldens of
the corpus' Kafka 3.7 and 4.2 metadata, and bad input."""

from __future__ import annotations

import json
import lzma
import re
import shutil

import pytest

from kafkalog_cli.cli import cli
from tests.helpers.paths import FIXTURES

from .metadata_checks import (
    image_before_controlled_shutdown,
    image_partitions,
    kafka_topic_ids,
    kafka_topics_partitions,
)

LOGDIR = FIXTURES / "groups-broker-3.3.1" / "logdir"
EXPECTED = json.loads((FIXTURES / "groups-broker-3.3.1" / "expected.json").read_text())
GOLDENS = FIXTURES / "groups-metadata-goldens"


def _json(runner, *args):
    r = runner.invoke(cli, ["metadata", *map(str, args), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_partitions_leaders_isr_and_topic_ids_are_what_kafka_topics_printed():
    before = image_before_controlled_shutdown(LOGDIR)
    assert image_partitions(before) == kafka_topics_partitions(EXPECTED["topics"]["stdout"])
    assert {t["name"]: t["id"] for t in before["topics"]} == kafka_topic_ids(
        EXPECTED["topics"]["stdout"]
    )


def test_topic_configs_are_what_kafka_configs_listed(runner):
    image = _json(runner, LOGDIR)
    configs = {t["name"]: t["configs"] for t in image["topics"]}
    for topic, answer in EXPECTED["configs"].items():
        assert configs[topic] == dict(re.findall(r"\b([a-z.]+)=(\S+) sensitive=", answer["stdout"]))
    assert "gone" not in configs


def test_the_end_of_the_log_is_the_broker_stopped(runner):
    image = _json(runner, LOGDIR)
    (broker,) = image["brokers"]
    assert broker["fenced"] and image["metadata_version"] == "3.3-IV3"
    assert {p["leader"] for t in image["topics"] for p in t["partitions"]} == {-1}
    assert image["producer_ids"]["next_producer_id"] == 1000


def test_the_tree(runner):
    r = runner.invoke(cli, ["metadata", str(LOGDIR)])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        f"metadata image of {LOGDIR / '__cluster_metadata-0'}: the log from its start"
    )
    assert "├── metadata.version 3.3-IV3 (level 7)" in lines
    assert any(
        re.fullmatch(r"│   └── orders  id \S+  3 partition\(s\)", line) for line in lines
    )  # the last topic
    assert "│       │   ├── cleanup.policy=delete" in lines
    assert (
        "│       └── partition 2  leader -1  leader epoch 2  partition epoch 2  replicas [1]  isr [1]"
        in lines
    )
    assert (
        lines[-1] == "└── producer ids: next block starts at 1000 (last given to broker 1, epoch 7)"
    )


@pytest.mark.parametrize(
    "files, golden",
    [
        (
            [
                "ItumelengMogase-cm-0-00000000000000021265-0000000006.checkpoint.xz",
                "ItumelengMogase-cm-0-00000000000000060500-0000000025.checkpoint.xz",
            ],
            "ItumelengMogase-metadata.txt",
        ),
        (["nomanazeem-cm-0-0.log.xz"], "nomanazeem-metadata.txt"),
    ],
)
def test_corpus_goldens(runner, tmp_path, files, golden):
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    for f in files:
        name = (
            f.split("-cm-0-", 1)[1].removesuffix(".xz").replace("0.log", "00000000000000000000.log")
        )
        (meta / (name if name.endswith((".log", ".checkpoint")) else name)).write_bytes(
            lzma.decompress((FIXTURES / "internal" / f).read_bytes())
        )
    r = runner.invoke(cli, ["metadata", str(tmp_path)])
    assert r.exit_code == 0, r.output
    got = r.stdout.replace(str(tmp_path), "<LOGDIR>")
    assert got == (GOLDENS / golden).read_text()


def test_damage_prints_the_image_up_to_it_and_one_line(runner, tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(LOGDIR, d)
    log = d / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.write_bytes(bytes(data))
    r = runner.invoke(cli, ["metadata", str(d)])
    assert r.exit_code == 3
    (line,) = r.stderr.splitlines()
    assert str(log) in line and re.search(r"byte \d+", line) and "read up to here" in line
    assert r.stdout.startswith("metadata image of")


def test_no_metadata_log_and_unreachable_offsets_are_exit_4(runner, tmp_path):
    shutil.copytree(LOGDIR / "orders-0", tmp_path / "orders-0")
    r = runner.invoke(cli, ["metadata", str(tmp_path)])
    assert r.exit_code == 4 and "ZooKeeper" in r.stderr and r.stderr.count("\n") == 1
    r = runner.invoke(cli, ["metadata", str(LOGDIR), "--at-offset", "999999"])
    assert r.exit_code == 4 and "no image as of offset 999999" in r.stderr
    r = runner.invoke(cli, ["metadata", str(tmp_path / "missing")])
    assert r.exit_code == 4


def test_the_metadata_partition_dir_itself_is_taken(runner):
    assert (
        _json(runner, LOGDIR / "__cluster_metadata-0")["topics"] == _json(runner, LOGDIR)["topics"]
    )
