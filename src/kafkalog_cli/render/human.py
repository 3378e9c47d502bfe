"""The text people read: plans, outcomes and summaries of the commands that are not
kafka-dump-log's (render/kafka.py prints that). Every function takes the values ops return
(plans, reports, summaries) and returns text; nothing here decides anything."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalog_cli.errors import one_line

if TYPE_CHECKING:  # importing ops.compact (the cleaner) would slow every command's start
    from kafkalog_cli.ops.compact import CompactPlan
    from kafkalog_cli.ops.plan import Action, Finding, Plan
    from kafkalog_cli.ops.runner import Outcome


# ------------------------------------------------------------------------------ plans
def action(a: Action) -> str:
    from kafkalog_cli.ops.plan import ActionKind  # here, not at import: verify-crc starts faster

    k = a.kind
    if k == ActionKind.RENAME:
        what = f"rename {a.path} -> {a.target.name}"
    elif k == ActionKind.TRUNCATE:
        what = f"truncate {a.path} at byte {a.at} ({a.bytes_removed} bytes"
        if a.offsets_removed:
            what += f", offsets {a.offsets_removed[0]}..{a.offsets_removed[1]}"
        what += ")"
    elif k == ActionKind.COPY_FILE:
        what = f"copy {a.source} -> {a.path}"
    elif k == ActionKind.RENAME_DIR:
        what = (
            f"rename {a.path} -> {a.target.name if a.target.parent == a.path.parent else a.target}"
        )
    elif k == ActionKind.REWRITE_SEGMENT:
        spliced = [r for r in a.ranges or [] if isinstance(r, bytes)]
        what = (
            f"rewrite {a.path} with {sum(map(len, spliced))} bytes of batches spliced in"
            if spliced
            else f"rewrite {a.path} keeping {len(a.ranges or [])} byte ranges ({a.bytes_removed} bytes skipped)"
        )
    elif k == ActionKind.SPLIT_SEGMENT:
        what = f"split {a.path} into segments " + ", ".join(
            f"{s.base_offset} ({s.size} bytes)" for s in a.pieces or []
        )
    elif a.data is not None:
        n = len(a.data) if a.preallocate is None else a.preallocate
        what = f"{k.value.replace('_', ' ')} {a.path} ({n} bytes)"
    else:
        what = f"{k.value.replace('_', ' ')} {a.path}"
    return f"{what}: {a.reason}"


def finding(f: Finding) -> str:
    where = (
        f" ({f.path}" + (f" byte {f.position}" if f.position is not None else "") + ")"
        if f.path
        else ""
    )
    return f"  ! {f.partition}: {f.message}{where}"


def plan(p: Plan) -> str:
    lines = [f"{p.op} {p.log_dir}: {len(p.actions)} change(s)"]
    lines.extend(finding(f) for f in p.findings)
    lines.extend(f"  - {action(a)}" for a in p.actions)
    return "\n".join(lines)


def plan_outcome(o: Outcome) -> str:
    """recover and roll: the plan, or that there was nothing to do, and where removed data went."""
    p = o.plan
    if o.dry_run:
        return plan(p)
    lines = [plan(p) if p.actions or p.findings else f"{p.op} {p.log_dir}: nothing to do"]
    if o.quarantine:
        lines.append(f"  removed data kept in {o.quarantine}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ retain
def configs_line(configs: dict) -> str:
    """The values that decided a deletion, each with its source (ops' `configs`: config.TopicConfig.provenance)."""
    return "; ".join(
        f"{name}={_config_text(v['value'])} from {v['origin']}" for name, v in configs.items()
    )


def _config_text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def retain_partition(summary: dict, dry_run: bool = False) -> str:
    """One line per partition: what went, why, and the new log start offset; where segments
    went by time or size, a second, indented line with the configs that decided it."""
    name, status = summary["partition"], summary.get("status")
    if status != "deleted" and not (status == "refused" and summary.get("segments_deleted")):
        return f"{name}: {summary.get('detail') or status}"
    by_reason: dict[str, list[int]] = {}
    for s in summary["segments"]:
        by_reason.setdefault(s["detail"], []).append(s["base_offset"])
    why = "; ".join(
        f"{', '.join(map(str, bases))}: {reason}" for reason, bases in by_reason.items()
    )
    verb = "would delete" if dry_run else "deleted"
    line = (
        f"{name}: {verb} {summary['segments_deleted']} segment(s), {summary['bytes_freed']} bytes "
        f"({why}){space(summary, dry_run)}; log start offset {summary['old_log_start_offset']} -> "
        f"{summary['new_log_start_offset']}"
    )
    if summary.get("rolled"):
        # a tiered log rolls without moving its log start offset (the old active segment stays)
        line += f"; rolled a new empty segment at {summary.get('rolled_at', summary['new_log_start_offset'])} first"
    if status == "refused":
        line += f"\n  {summary['detail']}"
    elif summary.get("configs") and any(
        s["reason"] != "log-start-offset" for s in summary["segments"]
    ):
        line += f"\n  configs: {configs_line(summary['configs'])}"
    return line


def space(figures: dict, dry_run: bool = False) -> str:
    """storage.space's two figures, as `; N bytes freed on disk, M held in the quarantine`."""
    if "freed_on_disk" not in figures:
        return ""
    freed, held = figures["freed_on_disk"], figures["held_in_quarantine"]
    disk = (
        f"{freed} bytes {'to free' if dry_run else 'freed'} on disk"
        if freed >= 0
        else f"{-freed} bytes {'to take' if dry_run else 'taken'} on disk"
    )
    return f"; {disk}, {held} {'to hold' if dry_run else 'held'} in the quarantine"


def retain_outcome(o: Outcome, verbose: bool) -> list[str]:
    """Made for cron: nothing after a run without -v; the plan and a line per partition that
    loses segments with --dry-run; a line per partition with -v."""
    lines = []
    if o.dry_run:
        lines.append(plan(o.plan))
    if verbose and not o.dry_run:
        lines.extend(finding(f) for f in o.plan.findings)
    if o.dry_run or verbose:
        lines.extend(
            retain_partition(summary, o.dry_run)
            for summary in o.plan.partitions.values()
            if verbose or summary.get("segments_deleted")
        )
        if o.quarantine:
            lines.append(f"removed files kept in {o.quarantine}")
    return lines


# ------------------------------------------------------------------------------ compact
def compact_plan(cp: CompactPlan) -> str:
    lines = [
        f"compact {cp.log_dir} (now {cp.now_ms}): {len(cp.selected)} of "
        f"{len(cp.decisions)} compacted partition(s) to clean"
        + (f", {len(cp.refused)} refused (a deciding config is unknown)" if cp.refused else "")
    ]
    for f in cp.notes.findings:
        lines.append(f"  ! {f.partition}: {f.message}")
    for d in cp.decisions:
        lg = d.log
        mark = "clean" if d.selected else "skip "
        line = (
            f"  {mark} {lg.name}: dirty [{lg.first_dirty}, {lg.first_uncleanable}) "
            f"ratio {lg.ratio:.3f} ({lg.cleanable_bytes} of {lg.clean_bytes + lg.cleanable_bytes} bytes); "
            f"{d.reason}"
        )
        if lg.checkpoint_reset:
            line += (
                f"; cleaner-offset-checkpoint {lg.checkpoint} outside [{lg.log_start_offset}, "
                f"{lg.log_end_offset}]: reset to {lg.first_dirty}"
            )
        if d.estimate:
            e = d.estimate
            line += (
                f"; {e['keys']} keys, {e['bytes_freed']} bytes to free, "
                f"{e['messages_read']} -> {e['messages_written']} messages"
            )
            if e.get("rounds_needed", 1) > 1:
                line += f", round 1 ends at {e['end_offset']} (the keys exceed the offset map)"
        lines.append(line)
        if d.selected and d.deciding:
            lines.append(f"        configs: {lg.cfg.describe(d.deciding)}")
    for r in cp.refused:
        lines.append(f"  refuse {r.line}")
    return "\n".join(lines)


def compact_outcome(o: Outcome) -> str:
    """The plan, then what each cleaned partition became and where the replaced segments went."""
    lines = [compact_plan(o.plan)]
    if not o.dry_run:
        for c in o.report["cleaned"]:
            lines.append(
                f"  cleaned {c['partition']}: {c['messages_read']} -> {c['messages_written']} messages, "
                f"{c['bytes_freed']} bytes freed in {len(c['rounds'])} round(s); "
                f"cleaner-offset-checkpoint {c['cleaner_offset_checkpoint']}"
            )
        if o.quarantine:
            lines.append(f"  replaced segments kept in {o.quarantine}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ doctor
def doctor(diag) -> str:
    """The verdict, then one block per finding (most severe first): what, the broker, the fix."""
    counts = {}
    for f in diag.findings:
        counts[f.severity.value] = counts.get(f.severity.value, 0) + 1
    tally = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items())
    lines = [f"doctor: {diag.verdict}" + (f" ({tally})" if tally else "")]
    for f in diag.findings:  # one_line: a file name may hold control or undecodable bytes
        lines += [
            one_line(f"{f.severity.value.upper():8}{f.path}: {f.problem}"),
            one_line(f"        broker: {f.broker}"),
            one_line(f"        fix:    {f.fix}"),
        ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ summaries
def export_summary(summary: dict, to_stdout: bool) -> str:
    return (
        f"exported {summary['records']} records from {summary['segments']} segments to "
        f"{'standard output' if to_stdout else summary['out']}"
    )


def verify_summary(files: int, batches: int, nbytes: int, problems: int, elapsed: float) -> str:
    rate = f" ({nbytes / elapsed / 1e6:.0f} MB/s)" if elapsed > 0 and nbytes else ""
    return (
        f"verify-crc: {files} file{'s' if files != 1 else ''}, {batches} batches, {nbytes} bytes, "
        f"{problems} problem{'s' if problems != 1 else ''} in {elapsed:.2f} s{rate}"
    )


# ------------------------------------------------------------------------------ move-partition
def move_plan(p) -> str:
    """move-partition's plan: a run of file copies as one line (how many, how many bytes, from
    where to where), every other step as `plan` prints it."""
    from kafkalog_cli.ops.plan import ActionKind

    lines = [
        f"move-partition {p.topic_partition}: {p.source_log_dir} -> {p.log_dir} ({p.state.value}, "
        f"{len(p.actions)} step(s))"
    ]
    lines.extend(finding(f) for f in p.findings)
    copies: list = []

    def flush() -> None:
        if copies:
            size = sum(a.size or 0 for a in copies)
            lines.append(
                f"  - copy {len(copies)} file(s), {size} bytes, {copies[0].source.parent} -> "
                f"{copies[0].path.parent}: each fsynced, with the source's mode, mtime and owner"
            )
            copies.clear()

    for a in p.actions:
        if a.kind == ActionKind.COPY_FILE:
            copies.append(a)
            continue
        flush()
        lines.append(f"  - {action(a)}")
    flush()
    return "\n".join(lines)
