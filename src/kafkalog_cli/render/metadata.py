"""metadata's tree: an ops.metadata_image image as nested labels, drawn as `tree` draws
directories. Empty sections are left out; secrets never reach the image, so never this."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalog_cli.formats.internal.metadata_image import metadata_version_name

if TYPE_CHECKING:
    from kafkalog_cli.formats.internal.metadata_image import PartitionRegistration
    from kafkalog_cli.ops.metadata_image import MetadataImageRead

Node = tuple[str, list]  # (label, children)


def draw(nodes: list[Node], prefix: str = "") -> list[str]:
    out = []
    for i, (label, children) in enumerate(nodes):
        last = i == len(nodes) - 1
        out.append(f"{prefix}{'└── ' if last else '├── '}{label}")
        out.extend(draw(children, prefix + ("    " if last else "│   ")))
    return out


def _features(supported: dict[str, tuple[int, int]]) -> Node:
    return "features " + ", ".join(
        f"{n} {lo}-{hi}" for n, (lo, hi) in sorted(supported.items())
    ), []


def _ids(ids: list[int]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"


def _partition(p: int, r: PartitionRegistration) -> Node:
    parts = [
        f"partition {p}",
        f"leader {r.leader}",
        f"leader epoch {r.leader_epoch}",
        f"partition epoch {r.partition_epoch}",
        f"replicas {_ids(r.replicas)}",
        f"isr {_ids(r.isr)}",
    ]
    if r.elr or r.last_known_elr:
        parts += [f"elr {_ids(r.elr)}", f"last known elr {_ids(r.last_known_elr)}"]
    if r.adding_replicas or r.removing_replicas:
        parts += [f"adding {_ids(r.adding_replicas)}", f"removing {_ids(r.removing_replicas)}"]
    if r.leader_recovery_state.name != "RECOVERED":
        parts.append(f"leader recovery {r.leader_recovery_state.name}")
    children = [(f"directories {', '.join(r.directories)}", [])] if r.directories else []
    return "  ".join(parts), children


def provenance(read: MetadataImageRead) -> str:
    img = read.image
    last = img.last_offset if img.last_offset is not None else read.next_offset - 1
    start = (
        f"snapshot {read.snapshot}, then the log"
        if read.snapshot
        else "the log from its start (no snapshot)"
    )
    return f"metadata image of {read.directory}: {start}, up to offset {last}"


def tree(read: MetadataImageRead) -> list[str]:
    img = read.image
    nodes: list[Node] = []
    level = img.metadata_version
    nodes.append(
        (
            f"metadata.version {metadata_version_name(level) or 'unknown (no FeatureLevelRecord)'}"
            + (f" (level {level})" if level is not None else ""),
            [],
        )
    )
    others = [(f"{n} {v}", []) for n, v in sorted(img.features.items()) if n != "metadata.version"]
    if others:
        nodes.append(("features", others))
    if read.quorum_state is not None:
        q = read.quorum_state
        nodes.append(
            (
                f"quorum-state: leader {q.leader_id if q.leader_id is not None else 'none'}, epoch "
                f"{q.leader_epoch}"
                + (f", voters {_ids(q.voters)}" if q.voters is not None else ""),
                [],
            )
        )
    brokers = []
    for _, b in sorted(img.brokers.items()):
        flags = ["fenced" if b.fenced else "unfenced"] + (
            ["in controlled shutdown"] if b.in_controlled_shutdown else []
        )
        if b.is_migrating_zk_broker:
            flags.append("migrating ZooKeeper broker")
        children = [(f"endpoint {e}", []) for e in b.endpoints]
        children.append(_features(b.supported_features))
        if b.directories:
            children.append((f"directories {', '.join(b.directories)}", []))
        brokers.append(
            (
                f"broker {b.id}  epoch {b.epoch}  {', '.join(flags)}  rack {b.rack or '-'}  incarnation "
                f"{b.incarnation_id}",
                children,
            )
        )
    nodes.append((f"brokers ({len(brokers)})", brokers))
    if img.controllers:
        controllers = []
        for _, c in sorted(img.controllers.items()):
            children = [(f"endpoint {e}", []) for e in c.endpoints]
            children.append(_features(c.supported_features))
            controllers.append((f"controller {c.id}  incarnation {c.incarnation_id}", children))
        nodes.append((f"controllers ({len(controllers)})", controllers))
    topics = []
    for name, t in sorted(img.topics.items()):
        children: list[Node] = []
        configs = img.topic_configs(name)
        if configs:
            children.append(("configs", [(f"{k}={v}", []) for k, v in configs.items()]))
        children.extend(_partition(p, r) for p, r in sorted(t.partitions.items()))
        topics.append((f"{name}  id {t.id}  {len(t.partitions)} partition(s)", children))
    nodes.append((f"topics ({len(topics)})", topics))
    configs = [
        (
            f"{rt} {rn!r}" if rn else f"{rt} default",
            [(f"{k}={v}", []) for k, v in sorted(c.items())],
        )
        for (rt, rn), c in sorted(img.configs.items())
        if rt != "topic"
    ]
    if configs:
        nodes.append(("configs", configs))
    if img.client_quotas:
        quotas = []
        for entity, q in sorted(img.client_quotas.items(), key=lambda x: repr(x[0])):
            who = ", ".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity)
            quotas.append((who, [(f"{k}={v:g}", []) for k, v in sorted(q.items())]))
        nodes.append(("client quotas", quotas))
    if img.acls:
        nodes.append(
            (f"acls ({len(img.acls)})", [(str(a), []) for _, a in sorted(img.acls.items())])
        )
    scram = [(f"{m}: {', '.join(sorted(u))}", []) for m, u in sorted(img.scram_users.items()) if u]
    if scram:
        nodes.append(("scram users (names only)", scram))
    if img.delegation_tokens:
        nodes.append(
            (
                "delegation tokens",
                [(f"{t} owner {o}", []) for t, o in sorted(img.delegation_tokens.items())],
            )
        )
    if img.producer_ids is not None:
        p = img.producer_ids
        nodes.append(
            (
                f"producer ids: next block starts at {p.next_producer_id} (last given to broker {p.broker_id}, "
                f"epoch {p.broker_epoch})",
                [],
            )
        )
    if img.aborted_transactions:
        nodes.append(
            (
                "aborted metadata transactions (not applied)",
                [
                    (f"begin offset {b}, abort offset {a}" + (f": {r}" if r else ""), [])
                    for b, a, r in img.aborted_transactions
                ],
            )
        )
    if img.pending is not None:
        nodes.append(
            (
                f"open metadata transaction from offset {img.pending[0]}: {len(img.pending[1])} record(s) "
                f"held back, not applied",
                [],
            )
        )
    return [provenance(read), *draw(nodes)]
