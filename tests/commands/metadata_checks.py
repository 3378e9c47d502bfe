"""What the metadata tests compare: kafka-topics --describe's partitions, and the image a broker
served just before its controlled shutdown (from `kafkalog metadata --at-offset`)."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from kafkalog_cli.cli import cli


def kafka_topics_partitions(text: str) -> dict[tuple[str, int], tuple[int, list[int], list[int]]]:
    """kafka-topics --describe's partition lines: (topic, partition) -> (leader, replicas, isr)."""
    out = {}
    for m in re.finditer(
        r"Topic: (\S+)\s+Partition: (\d+)\s+Leader: (-?\d+|none)\s+Replicas: (\S*)\s+Isr: (\S*)",
        text,
    ):
        out[(m[1], int(m[2]))] = (
            int(m[3]) if m[3] != "none" else -1,
            [int(x) for x in m[4].split(",") if x],
            [int(x) for x in m[5].split(",") if x],
        )
    return out


def kafka_topic_ids(text: str) -> dict[str, str]:
    return dict(re.findall(r"Topic: (\S+)\s+TopicId: (\S+)", text))


def image(log_dir, at_offset: int | None = None) -> dict:
    args = ["metadata", str(log_dir), "--format", "json"] + (
        ["--at-offset", str(at_offset)] if at_offset is not None else []
    )
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def image_partitions(img: dict) -> dict[tuple[str, int], tuple[int, list[int], list[int]]]:
    return {
        (t["name"], p["partition"]): (p["leader"], p["replicas"], p["isr"])
        for t in img["topics"]
        for p in t["partitions"]
    }


def image_before_controlled_shutdown(log_dir) -> dict:
    """The image just before the one broker entered controlled shutdown (what it served while
    it ran): the last offset whose image has it not in controlled shutdown, found by bisection."""
    lo, hi = 0, image(log_dir)["last_offset"]
    while lo < hi:
        mid = (lo + hi) // 2
        if image(log_dir, mid)["brokers"][0]["in_controlled_shutdown"]:
            hi = mid
        else:
            lo = mid + 1
    return image(log_dir, lo - 1)
