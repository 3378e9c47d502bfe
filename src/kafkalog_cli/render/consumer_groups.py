"""consumer-groups' text: kafka-consumer-groups.sh --describe's three tables (Kafka 3.3.1
ConsumerGroupCommand.printOffsets, printMembers --verbose, printStates), from ops.consumer_groups
values. Each table starts with an empty line, as Kafka's does; column widths are Kafka's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalog_cli.ops.consumer_groups import MISSING, GroupState

if TYPE_CHECKING:
    from kafkalog_cli.ops.consumer_groups import Group, OffsetRow


def _v(value) -> str:
    return MISSING if value is None else str(value)


def state_note(g: Group) -> str | None:
    """What Kafka prints on stderr before a group's table (shouldPrintMemberState)."""
    if g.state is GroupState.EMPTY:
        return f"\nConsumer group '{g.group_id}' has no active members."
    if g.state in (GroupState.ASSIGNING, GroupState.RECONCILING):
        return f"\nWarning: Consumer group '{g.group_id}' is rebalancing."
    return None


def offsets_table(rows: list[OffsetRow]) -> str:
    """printOffsets: the header and one line per row (no trailing newline)."""
    g_len = max([15, *(len(r.group) for r in rows)])
    t_len = max([15, *(len(_v(r.topic)) for r in rows)])
    c_len = max([15, *(len(r.consumer_id) for r in rows)])
    h_len = max([15, *(len(r.host) for r in rows)])

    def line(*cells) -> str:
        g, t, p, cur, leo, lag, cid, host, client = cells
        return (
            f"{g:<{g_len}} {t:<{t_len}} {p:<10} {cur:<15} {leo:<15} {lag:<15} "
            f"{cid:<{c_len}} {host:<{h_len}} {client}"
        )

    out = [
        "",
        line(
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ),
    ]
    for r in rows:
        out.append(
            line(
                r.group,
                _v(r.topic),
                _v(r.partition),
                _v(r.commit.offset if r.commit else None),
                _v(r.log_end.offset if r.log_end else None),
                _v(r.lag),
                r.consumer_id,
                r.host,
                r.client_id,
            )
        )
    return "\n".join(out)


def members_table(g: Group) -> str:
    """printMembers with --verbose: one line per member, its assignment by topic."""
    members = [m for _, m in sorted(g.members.items())]
    g_len = max(15, len(g.group_id))
    c_len = max([15, *(len(m.member_id) for m in members)])
    i_len = max([17, *(len(m.group_instance_id or "") for m in members)])
    h_len = max([15, *(len(m.client_host) for m in members)])
    cl_len = max([15, *(len(m.client_id) for m in members)])
    with_instance = any(m.group_instance_id for m in members)

    def line(group, cid, instance, host, client, parts, assignment) -> str:
        mid = f"{instance:<{i_len}} " if with_instance else ""
        return f"{group:<{g_len}} {cid:<{c_len}} {mid}{host:<{h_len}} {client:<{cl_len}} {parts:<15} {assignment}"

    out = [
        "",
        line(
            "GROUP",
            "CONSUMER-ID",
            "GROUP-INSTANCE-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS",
            "ASSIGNMENT",
        ),
    ]
    for m in members:
        by_topic: dict[str, list[int]] = {}
        for t, p in m.assignment:
            by_topic.setdefault(t, []).append(p)
        assignment = ", ".join(
            sorted(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in by_topic.items())
        )
        out.append(
            line(
                g.group_id,
                m.member_id,
                m.group_instance_id or "",
                m.client_host,
                m.client_id,
                str(len(m.assignment)),
                assignment or MISSING,
            )
        )
    return "\n".join(out)


def state_table(g: Group) -> str:
    """printStates; the coordinator is the __consumer_offsets partition the group was read from
    (no broker answers offline)."""
    coordinator = (
        f"__consumer_offsets-{g.coordinator_partition}"
        if g.coordinator_partition is not None
        else MISSING
    )
    width = max(25, len(coordinator))
    head = f"{'GROUP':<{width}} {'COORDINATOR (ID)':<25} {'ASSIGNMENT-STRATEGY':<20} {'STATE':<15} #MEMBERS"
    row = f"{g.group_id:<{width}} {coordinator:<25} {g.assignor():<20} {g.state.value:<15} {len(g.members)}"
    return "\n".join(["", head, row])
