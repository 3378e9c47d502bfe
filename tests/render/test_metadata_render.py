"""render.metadata: the tree's drawing and what each part of the image shows."""

from __future__ import annotations

from kafkalog_cli.formats.internal.metadata_image import (
    BrokerRegistration,
    Endpoint,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from kafkalog_cli.ops.metadata_image import MetadataImageRead
from kafkalog_cli.render.metadata import draw, tree


def test_draw_is_trees_layout():
    assert draw([("a", [("b", []), ("c", [("d", [])])]), ("e", [])]) == [
        "├── a",
        "│   ├── b",
        "│   └── c",
        "│       └── d",
        "└── e",
    ]


def test_tree_shows_elr_directories_and_leaves_out_empty_sections():
    img = MetadataImage(features={"metadata.version": 29})
    img.brokers[1] = BrokerRegistration(
        1, 5, "inc", [Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT")], {}, None, False, False
    )
    t = img.topics["t"] = TopicImage("t", "tid")
    t.partitions[0] = PartitionRegistration(
        [1, 2], [1], [], [], 1, LeaderRecoveryState.RECOVERING, 3, 4, ["dir-a", "dir-b"], [2], [2]
    )
    img.configs[("topic", "t")] = {"retention.ms": "1"}
    img.scram_users["SCRAM-SHA-256"] = {"bob", "alice"}
    read = MetadataImageRead(
        "/x/__cluster_metadata-0",
        img,
        "00000000000000000100-0000000002.checkpoint",
        None,
        None,
        120,
        None,
        None,
    )
    lines = tree(read)
    assert lines[0] == (
        "metadata image of /x/__cluster_metadata-0: snapshot 00000000000000000100-0000000002.checkpoint, "
        "then the log, up to offset 119"
    )
    assert "├── metadata.version 4.2-IV1 (level 29)" in lines
    assert (
        "│       └── partition 0  leader 1  leader epoch 3  partition epoch 4  replicas [1,2]  isr [1]  elr [2]  "
        "last known elr [2]  leader recovery RECOVERING"
    ) in lines
    assert "│           └── directories dir-a, dir-b" in lines
    assert lines[-2:] == ["└── scram users (names only)", "    └── SCRAM-SHA-256: alice, bob"]
    assert not any(
        line.endswith(("acls (0)", "client quotas", "controllers (0)")) for line in lines
    )
