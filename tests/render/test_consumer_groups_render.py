"""render.consumer_groups: Kafka 3.3.1 ConsumerGroupCommand's column widths and layout."""

from __future__ import annotations

from kafkalog_cli.ops.consumer_groups import (
    Group,
    GroupMember,
    GroupType,
    LogEnd,
    OffsetAndMetadata,
    offset_rows,
)
from kafkalog_cli.render.consumer_groups import (
    members_table,
    offsets_table,
    state_note,
    state_table,
)


def _group() -> Group:
    g = Group("a-group-with-a-long-name", GroupType.CLASSIC, 7, "consumer", "range", 3, "m1")
    g.members["m1"] = GroupMember(
        "m1", "client-1", "/10.1.2.3", assignment=[("orders", 1), ("orders", 0)]
    )
    g.offsets[("orders", 0)] = OffsetAndMetadata(5, None, "", 1, None, 10)
    g.offsets[("audit", 0)] = OffsetAndMetadata(2, None, "", 1, None, 11)
    g.has_metadata = True
    return g


def test_offsets_table_widths_and_missing_cells():
    g = _group()
    rows = offset_rows(g, {("orders", 0): LogEnd(9, "high watermark")})
    lines = offsets_table(rows).split("\n")
    assert lines[0] == ""  # Kafka's table starts with an empty line
    assert lines[1] == (
        "GROUP                    TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG      "
        "       CONSUMER-ID     HOST            CLIENT-ID"
    )
    # the member's partitions by number, then the committed partitions no member holds
    assert [line.split()[1:6] for line in lines[2:]] == [
        ["orders", "0", "5", "9", "4"],
        ["orders", "1", "-", "-", "-"],
        ["audit", "0", "2", "-", "-"],
    ]
    assert lines[2].endswith("m1              /10.1.2.3       client-1")
    assert lines[4].endswith("-               -               -")


def test_members_table_with_and_without_instance_ids():
    g = _group()
    lines = members_table(g).split("\n")
    assert lines[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
    ]
    assert lines[2].split() == [
        "a-group-with-a-long-name",
        "m1",
        "/10.1.2.3",
        "client-1",
        "2",
        "orders(0,1)",
    ]
    g.members["m1"].group_instance_id = "static-1"
    assert "GROUP-INSTANCE-ID" in members_table(g) and "static-1" in members_table(g)


def test_state_table_and_notes():
    g = _group()
    head, row = state_table(g).split("\n")[1:]
    assert row.split() == [
        "a-group-with-a-long-name",
        "__consumer_offsets-7",
        "range",
        "Stable",
        "1",
    ]
    assert head.index("COORDINATOR") == 26 == row.index("__consumer_offsets-7")
    assert state_note(g) is None
    g.members.clear()
    assert state_note(g) == "\nConsumer group 'a-group-with-a-long-name' has no active members."
