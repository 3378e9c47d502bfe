"""`delete-records`: Kafka's DeleteRecords, offline (kafka-delete-records.sh).

What a Kafka 3.3.1 broker does with a DeleteRecords request, then with its next retention check:
1. ReplicaManager.deleteRecordsOnLocalLog refuses internal topics (InvalidTopicException; the list
   is Topic.isInternal's of the version that loads the dir next, config.versions: 3.9 adds
   __share_group_state; where the versions the dir allows disagree, the partition is refused as
   a guess, exit 7);
   Partition.deleteRecordsOnLeader refuses a topic whose cleanup.policy has no `delete`
   (PolicyViolationException), takes offset -1 for the high watermark and refuses any other
   negative offset (OffsetOutOfRangeException);
2. UnifiedLog.maybeIncrementLogStartOffset refuses an offset above the high watermark
   (OffsetOutOfRangeException) and raises the log start offset to it when it is higher (a lower
   one is a no-op): the recovery point follows, the leader epochs are truncated from the start,
   producer state forgets nothing on disk;
3. the log-start-offset pass of UnifiedLog.deleteOldSegments deletes the segments wholly below it
   (a segment goes when the next one starts at or below the log start offset, so the active
   segment always stays: no roll is ever needed), with their producer snapshots;
4. LogManager writes log-start-offset-checkpoint (only while the log start is above the first
   segment's base) and recovery-point-offset-checkpoint.

Steps 2-4 are ops.retain's log-start-offset machinery with the log start raised first
(retain.run_passes, deletion_actions, plan_log_start_changes): the same crash-safe order, so a
killed run is finished by running it again (or by retain, or by the broker itself). One step
comes before it: the raised log start offsets are written to log-start-offset-checkpoint before
any segment goes, so a broker loading the dir after a kill at any instant starts at them. On a
full disk (retain.full_disk) that write comes last instead: nothing can be written before
something is freed, and a kill midway leaves the log start at the first remaining segment's base
(between the old and the new one; a rerun finishes).

A tiered partition (ops.tiered) keeps its log start offset as checkpointed (it may be below the
first local segment): DeleteRecords raises it, the local log start offset follows, and a local
segment goes when it is uploaded or (3.7+) wholly below the new log start offset.

The high watermark is the replication-offset-checkpoint's entry, clamped into [log start, log end]
as the broker loads it. Without an entry, the offset is bounded by the log end offset instead
(summary `bound`), and -1 (the high watermark) is refused as a guess (exit 7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.config.versions import internal_topic
from kafkalog_cli.errors import ExitCode, UsageError
from kafkalog_cli.ops import retain, tiered
from kafkalog_cli.ops.high_watermark import high_watermark_at_load
from kafkalog_cli.ops.plan import Action, ActionKind, Plan, apply  # noqa: F401  (apply: the op's API)
from kafkalog_cli.storage import checkpoints as checkpoint_text
from kafkalog_cli.storage.fsops import TMP_SUFFIX
from kafkalog_cli.storage.logdir import OffsetCheckpoint
from kafkalog_cli.storage.names import LOG_SUFFIX, TopicPartition, parse_partition_dir
from kafkalog_cli.storage.partition import Partition

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
OFFSET_JSON_VERSION = 1  # DeleteRecordsCommand.EarliestVersion, the only one


@dataclass
class DeleteRecordsOptions:
    """`offsets` ({(topic, partition): offset}, --offset-json) or `before` (every partition)."""

    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    before: int | None = None
    resolver: ConfigResolver | None = (
        None  # None: the log dir's __cluster_metadata (cleanup.policy)
    )
    free_first: bool | None = (
        None  # None: when the log dir's file system is full (retain.full_disk)
    )
    # --before: the topics the request names (partition dirs given as paths, --topic patterns);
    # an internal topic among them is refused, the others a whole log dir holds are left out
    named_topics: frozenset[str] = frozenset()
    topic_patterns: tuple[str, ...] = ()

    def named(self, topic: str) -> bool:
        import fnmatch

        return topic in self.named_topics or any(
            fnmatch.fnmatchcase(topic, p) for p in self.topic_patterns
        )

    def requested(self, tp: TopicPartition) -> int | None:
        return (
            self.before if self.before is not None else self.offsets.get((tp.topic, tp.partition))
        )


@dataclass
class DeleteRecordsPlan(Plan):
    """The Plan, with one line per partition refused as a guess (-1 without a high watermark)."""

    refusals: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ --offset-json
def parse_offset_json(data: bytes, path: str) -> dict[tuple[str, int], int]:
    """DeleteRecordsCommand.parseOffsetJsonStringWithoutDedup and its duplicate check:
    {"partitions": [{"topic": T, "partition": P, "offset": O}, ...], "version": 1}. Anything
    else is a UsageError naming the file and the byte where it is wrong."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError("not UTF-8 text", path=path, position=e.start) from None
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(
            f"not valid JSON: {e.msg}", path=path, position=len(text[: e.pos].encode())
        ) from None
    root = _located(text, 0)[0]

    def fail(message: str, node: _Located) -> UsageError:
        return UsageError(message, path=path, position=len(text[: node.pos].encode()))

    if not isinstance(root.value, dict):
        raise fail("expected an object with a partitions field", root)
    version = root.value.get("version")
    if version is not None and (
        type(version.value) is not int or version.value != OFFSET_JSON_VERSION
    ):
        raise fail(
            f"not supported version field value {json.dumps(version.value)} (only 1)", version
        )
    partitions = root.value.get("partitions")
    if partitions is None:
        raise fail("missing partitions field", root)
    if not isinstance(partitions.value, list):
        raise fail("partitions must be an array", partitions)
    out: dict[tuple[str, int], int] = {}
    for entry in partitions.value:
        if not isinstance(entry.value, dict):
            raise fail("each partition must be an object with topic, partition and offset", entry)
        fields: dict[str, Any] = {}  # each checked against its kind below
        for name, kind in (("topic", str), ("partition", int), ("offset", int)):
            node = entry.value.get(name)
            if node is None:
                raise fail(f"missing {name} field", entry)
            if type(node.value) is not kind:
                raise fail(f"{name} must be {'a string' if kind is str else 'an integer'}", node)
            fields[name] = node.value
        key = (fields["topic"], fields["partition"])
        if key in out:
            raise fail(f"duplicate topic partition {key[0]}-{key[1]}", entry)
        if not 0 <= key[1] <= 0x7FFFFFFF:
            raise fail(f"partition {key[1]} is not a partition number", entry.value["partition"])
        out[key] = fields["offset"]
    return out


@dataclass
class _Located:
    value: object  # a scalar, or dict/list of _Located
    pos: int  # character index in the text


_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, not in typeshed


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _located(text: str, i: int) -> tuple[_Located, int]:
    """A JSON value already known to be valid (json.loads took it), with the position of every
    object and array member, so a wrong field is reported at its byte."""
    i = _skip_ws(text, i)
    if text[i] == "{":
        members: dict[str, _Located] = {}
        j = _skip_ws(text, i + 1)
        while text[j] != "}":
            key, j = _SCAN(text, j)
            members[key], j = _located(text, _skip_ws(text, j) + 1)  # past the ':'
            j = _skip_ws(text, j)
            j = _skip_ws(text, j + 1) if text[j] == "," else j
        return _Located(members, i), j + 1
    if text[i] == "[":
        items: list[_Located] = []
        j = _skip_ws(text, i + 1)
        while text[j] != "]":
            item, j = _located(text, j)
            items.append(item)
            j = _skip_ws(text, j)
            j = _skip_ws(text, j + 1) if text[j] == "," else j
        return _Located(items, i), j + 1
    value, j = _SCAN(text, i)
    return _Located(value, i), j


# ------------------------------------------------------------------ the plan
def plan(
    log_dir: Path, partition_dirs: list[Path], opts: DeleteRecordsOptions
) -> DeleteRecordsPlan:
    """DeleteRecords for the requested partitions of `partition_dirs` (the others are left out of
    the plan), then the log-start-offset retention pass and LogManager's checkpoints."""
    log_dir = Path(log_dir)
    p = DeleteRecordsPlan("delete-records", log_dir)
    resolver = opts.resolver or ConfigResolver.of_log_dir(log_dir)

    def plan_one(partition: Partition) -> tuple[dict, retain.Retention | None, list[Action]]:
        summary, result, actions = _plan_partition(partition, opts, resolver)
        if summary.get("refusal"):
            p.refusals.append(summary["refusal"])
        if summary["status"] == "error":
            p.note(partition.name, summary["message"])
        return summary, result, actions

    wanted = [
        d
        for d in partition_dirs
        if (tp := parse_partition_dir(d.name)) is not None and opts.requested(tp) is not None
    ]
    free_first = retain.full_disk(p, opts.free_first)
    roots = retain.plan_log_start_changes(p, log_dir, wanted, plan_one)
    if not free_first:
        _log_starts_first(p, roots.log_start_offsets)
    return p


def _log_starts_first(p: Plan, checkpoint: OffsetCheckpoint) -> None:
    """The raised log start offsets go to log-start-offset-checkpoint before any segment goes, so
    that no kill lets a broker load a log start below them (its load rule takes the larger of the
    checkpoint and the first segment's base). The broker's own checkpoint, written after the
    segments went (without entries at a segment base), is still written last when it differs."""
    raised = {
        (s["topic"], s["partition_id"]): s["new_log_start_offset"]
        for s in p.partitions.values()
        if s.get("new_log_start_offset", -1) > s.get("old_log_start_offset", -1)
    }
    if not raised:
        return
    data = checkpoint_text.encode_offsets(
        {**checkpoint.offsets, **raised}, order=checkpoint.order, kind=checkpoint.path.name
    )
    final = [
        a for a in p.actions if a.kind is ActionKind.UPDATE_CHECKPOINT and a.path == checkpoint.path
    ]
    if final and final[-1].data == data:
        p.actions.remove(final[-1])
    elif not any(a.kind is ActionKind.DELETE and a.path.suffix == LOG_SUFFIX for a in p.actions):
        return  # nothing to delete: the final write alone is as safe
    # after the log dir's leftovers of an interrupted write (ours among them) are gone
    first = next(
        (i for i, a in enumerate(p.actions) if not a.path.name.endswith(TMP_SUFFIX)), len(p.actions)
    )
    p.actions.insert(
        first,
        Action(
            ActionKind.UPDATE_CHECKPOINT,
            checkpoint.path,
            "raised log start offsets, before any segment is deleted",
            data=data,
        ),
    )
    if not final:  # the file ends as it began: its entries were at segment bases, and still are
        p.add(
            Action(
                ActionKind.UPDATE_CHECKPOINT,
                checkpoint.path,
                "log start offsets after segment deletion",
                data=checkpoint_text.encode_offsets(
                    checkpoint.offsets, order=checkpoint.order, kind=checkpoint.path.name
                ),
            )
        )


def _plan_partition(
    partition: Partition, opts: DeleteRecordsOptions, resolver: ConfigResolver
) -> tuple[dict, retain.Retention | None, list[Action]]:
    name, tp = partition.name, partition.topic_partition
    assert tp is not None  # plan() passes partition dirs whose name parses,
    requested = opts.requested(tp)
    assert requested is not None  # and that have a requested offset
    summary = retain.partition_summary(name, tp, requested_offset=requested)

    def refuse(code: ExitCode, error: str, detail: str):
        summary.update(
            status="error",
            error=error,
            message=f"{error}: {detail}",
            detail=f"{name}: {error}: {detail}",
            exit_code=int(code),
        )
        return summary, None, []

    # ReplicaManager.deleteRecordsOnLocalLog: Topic.isInternal, whose list changed (3.9:
    # __share_group_state); the KRaft metadata log is no replica partition a client can name
    internal = internal_topic(tp.topic, resolver.versions)
    if (
        internal is not None and internal.applies is not False
    ) or tp.topic == retain.KRAFT_METADATA_TOPIC:
        if opts.before is not None and not opts.named(tp.topic):
            # a whole log dir was asked for: its internal topics are not part of the request
            summary.update(
                status="skipped", detail="internal topic: not part of a request for a whole log dir"
            )
            return summary, None, []
        if internal is not None and internal.applies is None:
            line = f"{name}: " + internal.refusal(
                f"whether {tp.topic} is internal (DeleteRecords refused)"
            )
            summary.update(status="refused", refusal=line, detail=line)
            return summary, None, []
        return refuse(
            ExitCode.REFUSED_BY_KAFKA,
            "INVALID_TOPIC_EXCEPTION",
            f"Cannot delete records of internal topic {tp.topic}",
        )
    cfg = resolver.for_topic(tp.topic)
    policy = cfg.source("cleanup.policy")
    summary["configs"] = cfg.provenance(("cleanup.policy",))
    if "delete" not in cfg.cleanup_policy:
        return refuse(
            ExitCode.REFUSED_BY_KAFKA,
            "POLICY_VIOLATION",
            f"records of partition {name} can not be deleted due to the configured policy ({policy})",
        )
    actions = retain.leftover_actions(partition)
    if not partition.segments:
        summary.update(status="skipped", detail="no segment")
        return summary, None, actions
    if partition.load_problem is not None:
        # the broker's load would delete every segment; deleting records on top of that state
        # would remove data on an offset the log itself does not reach
        return refuse(
            ExitCode.CORRUPT,
            "OFFSET_OUT_OF_RANGE",
            f"{partition.load_problem}; delete-records changes nothing until the log start offset "
            f"checkpoint and the segments agree",
        )
    log_start, leo = partition.log_start_offset, partition.log_end_offset
    assert log_start is not None and leo is not None  # None only without segments (above)
    checkpointed = partition.checkpoints.high_watermark
    hw = None if checkpointed is None else high_watermark_at_load(checkpointed, log_start, leo)
    summary.update(
        high_watermark=hw,
        log_end_offset=leo,
        bound="high watermark"
        if hw is not None
        else "log end offset (no high watermark in replication-offset-checkpoint)",
    )
    offset = requested
    if requested == HIGH_WATERMARK:
        if hw is None:
            line = (
                f"{name}: offset -1 means the high watermark, and replication-offset-checkpoint has none "
                f"for it; give the offset itself (at most the log end offset {leo})"
            )
            summary.update(status="refused", refusal=line, detail=line)
            return summary, None, actions
        offset = hw
    summary["offset"] = offset
    if offset < 0:
        return refuse(
            ExitCode.REFUSED_BY_KAFKA, "OFFSET_OUT_OF_RANGE", f"the offset {offset} is not valid"
        )
    bound = hw if hw is not None else leo
    if offset > bound:
        return refuse(
            ExitCode.REFUSED_BY_KAFKA,
            "OFFSET_OUT_OF_RANGE",
            f"cannot increment the log start offset to {offset} since it is larger than the "
            f"{summary['bound']} {bound}",
        )
    remote = tiered.remote_log(partition, cfg, resolver)
    if remote.maybe_tiered and remote.enabled is not False:
        # a remote-enabled log: the log start offset is the checkpoint's as is (it may be below
        # the first local segment: remote data), and DeleteRecords raises it over remote data too
        result = retain.run_tiered_passes(
            partition, cfg, 0, remote, by_config=False, raise_log_start_to=offset
        )
        log_start = result.old_log_start_offset
        summary["remote_log"] = remote.to_dict()
        summary["local_log_start_offset"] = result.local_log_start_offset
        if result.blocked is not None:
            line = f"{name}: {result.blocked}; {retain.UPLOAD_UNKNOWN_HOW}"
            summary.update(refusal=line)
    else:
        result = retain.run_passes(
            partition, cfg, now_ms=0, by_config=False, raise_log_start_to=offset
        )
    freed, tidy = retain.deletion_actions(partition, result, actions)
    start = result.new_log_start_offset
    summary.update(
        status="deleted" if result.deleted else "raised" if start > log_start else "nothing to do",
        old_log_start_offset=log_start,
        new_log_start_offset=start,
        low_watermark=start,
        segments_deleted=len(result.deleted),
        bytes_freed=freed,
        rolled=False,
        segments=[x.to_dict() for x in result.deleted],
    )
    if not result.deleted:
        summary["detail"] = (
            f"log start offset {log_start} -> {start}, inside segment "
            f"{result.first_segment_base}, which stays"
            if start > log_start
            else f"log start offset {log_start} is at or above {offset} already"
            + ("; finished an interrupted run" if tidy else "")
        )
    return summary, result, actions
