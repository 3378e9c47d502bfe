"""`kafkalog quarantine list|restore|prune`: options -> storage.quarantine -> output."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import click

from kafkalog_cli.commands.change_run import emit_lines, finish_run
from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.commands.options import InputPath, report_option
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.render.change_report import RunLines
from kafkalog_cli.storage import quarantine as q
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.links import refuse_links_out
from kafkalog_cli.storage.lock import LogDirLock
from kafkalog_cli.storage.quarantine_registry import forget
from kafkalog_cli.storage.space import freed_by_removing

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


class Duration(click.ParamType):
    """7d, 12h, 90m, 1d12h: seconds."""

    name = "duration"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip().lower()
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            self.fail(f"{value!r} is not a duration such as 7d, 12h, 30m or 1d12h", param, ctx)
        return sum(float(n) * _UNITS[u] for n, u in parts)


paths_argument = click.argument("paths", nargs=-1, type=InputPath(path_type=Path))
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
dry_run_option = click.option(
    "--dry-run", "-n", is_flag=True, help="Print what would be done and change nothing."
)


@click.group(
    "quarantine", short_help="List, restore or prune what the commands that change log dirs kept."
)
def quarantine() -> None:
    """What recover, roll, retain, compact, delete-records and move-partition removed or overwrote,
    kept beside each log dir in
    <logdir>/../.kafkalog-quarantine/<logdir name>/<UTC time>-<command>/ (or where --quarantine
    DIR put it): list the folders, restore one exactly, or prune old ones.

    \b
    Exit codes:
      0  done
      2  usage error
      3  restore refused: the log dir changed since the run in a way that conflicts,
         or the kept data or the manifest is damaged (nothing was changed)
      4  not a quarantine folder, log dir or quarantine dir; or a restore through a
         symbolic link out of the log dir (without --follow-symlinks: nothing changed)
      5  the log dir is locked by a running broker or another kafkalog
      6  a change could not be written
    """


def _folders(paths) -> list[q.QuarantineFolder]:
    return [q.QuarantineFolder.open(f) for p in (paths or [Path(".")]) for f in q.find_folders(p)]


@quarantine.command("list")
@paths_argument
@format_option
@one_line_errors
def list_command(paths, fmt):
    """The quarantine folders of PATHS (log dirs, quarantine dirs or folders; default: the current
    directory), oldest first: op, time, entries, bytes kept and whether restored. For a log dir:
    its default quarantine and every folder a run recorded for it in the registry
    ($KAFKALOG_STATE_DIR/quarantines.json), wherever --quarantine put it; a recorded folder that
    no longer exists is listed as gone."""
    rows = [f.to_dict() for f in _folders(paths)]
    rows += [q.gone_row(g, Path(p)) for p in paths or [Path(".")] for g in q.gone_folders(p)]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no quarantine folders")
        return
    table = [("TIME", "OP", "ENTRIES", "BYTES", "STATUS", "FOLDER")]
    table += [
        (
            r["time"][:19] + "Z",
            r["op"],
            _cell(r["entries"]),
            _cell(r["bytes"]),
            r["status"],
            r["folder"],
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        click.echo(
            "  ".join(
                c.rjust(w) if i in (2, 3) else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths))
            )
            + "  "
            + row[5]
        )


def _cell(n: int | None) -> str:
    return "-" if n is None else str(n)


@quarantine.command("restore")
@click.argument("folder", type=InputPath(path_type=Path))
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Also restore files in a partition dir that is, or holds, a symbolic link out of the log dir "
    "(a run with --follow-symlinks changed it), writing through the link. Without it such a restore "
    "is refused, exit 4, nothing changed.",
)
@dry_run_option
@format_option
@report_option
@one_line_errors
def restore_command(folder, follow_symlinks, dry_run, fmt, report_path):
    """Put back everything the run of FOLDER removed or overwrote, and remove what it created,
    newest first: the log dir as it was before the run, byte for byte. Takes the log dir's .lock
    (not with --dry-run). Refuses, changing nothing, when the log dir changed since in a way that
    conflicts (a file to put back exists with other content, a file is not the length the run
    left it at) or when a kept file's sha256 differs from the manifest's. A restore that was
    killed finishes when run again. It never writes through a symbolic link out of the log dir
    unless --follow-symlinks (exit 4, nothing changed)."""
    f = q.QuarantineFolder.open(folder)
    if not f.entries:  # a run killed before its first entry: nothing was changed
        _show(q.plan_restore(f), fmt, None if dry_run else 0, report_path)
        return
    if dry_run:
        plan = q.plan_restore(f)
        _show(plan, fmt, None, report_path)
        _refuse(plan, follow_symlinks)
        return
    f.restore_target()
    with contextlib.ExitStack() as locks:
        for log_dir in sorted(
            f.log_dirs, key=lambda d: str(Path(d).resolve())
        ):  # move-partition's: both
            locks.enter_context(LogDirLock(log_dir, follow_symlinks=follow_symlinks))
        f = q.QuarantineFolder.open(folder)  # as it is under the lock
        plan = q.plan_restore(f)
        _refuse(plan, follow_symlinks)
        undone = q.restore(plan, FsOps(f.log_dir, follow_symlinks=follow_symlinks))
    _show(plan, fmt, undone, report_path)


def _show(plan: q.RestorePlan, fmt: str, undone: int | None, report_path: Path | None) -> None:
    lines = RunLines("quarantine restore", dry_run=undone is None)
    folder = lines.folder(
        {
            **plan.to_dict(),
            **({} if undone is None else {"undone": undone}),
            "held_in_quarantine": 0,
        },
        f"{plan.folder.path}: restore puts the kept data back and does not measure the "
        f"blocks it takes on disk",
    )
    emit_lines(fmt, [folder])
    if fmt == "text":
        if undone is None:
            click.echo(plan.render())
        elif undone or plan.steps:
            click.echo(
                f"restored {plan.log_dir} from {plan.folder.path}: {undone} change(s) of {plan.folder.op} undone"
            )
        elif not plan.folder.entries:
            click.echo(
                f"nothing to restore: {plan.folder.path} holds no entry (its run was stopped before "
                f"its first change)"
            )
        else:
            click.echo(f"nothing to restore: {plan.folder.path} was restored already")
    finish_run(lines, fmt, report_path, int(KafkalogError.exit_code) if plan.conflicts else 0)


def _refuse(plan: q.RestorePlan, follow_symlinks: bool = False) -> None:
    if not plan.conflicts:
        if (
            not follow_symlinks
        ):  # all or nothing: a link out of the log dir is refused before any change
            refuse_links_out(
                plan.folder.restore_roots,
                (p for s in plan.steps for p in (s.entry.source, s.entry.target, s.entry.tmp)),
            )
        return
    first, more = plan.conflicts[0], len(plan.conflicts) - 1
    also = f" (and {more} more: --dry-run lists them)" if more else ""
    raise KafkalogError(
        f"{first.message}; refusing to restore {plan.folder.path}, nothing changed{also}",
        path=first.path,
    )


@quarantine.command("prune")
@paths_argument
@click.option(
    "--older-than",
    required=True,
    type=Duration(),
    metavar="DURATION",
    help="Remove the folders of runs that started longer ago than this: 7d, 12h, 30m, 1d12h (s m h d w).",
)
@dry_run_option
@format_option
@report_option
@one_line_errors
def prune_command(paths, older_than, dry_run, fmt, report_path):
    """Remove the quarantine folders of PATHS (log dirs, quarantine dirs or folders; default: the
    current directory) whose run started more than DURATION ago: for a log dir, those the
    registry holds for it too. What they kept is gone for good: the space comes back (the
    freed_on_disk of the summary: the blocks of the files whose last link they were)."""
    folders = _folders(paths)
    old = q.older_than(folders, older_than)
    roots = {f.path.parent for f in folders} | {
        r for p in (paths or [Path(".")]) for r in q.quarantine_roots(p)
    }
    leftovers = [p for root in sorted(roots) for p in q.pruning_leftovers(root)]
    lines = RunLines("quarantine prune", dry_run=dry_run)
    for path, row, what in [
        (f.path, f.to_dict(), f"{f.op}, {len(f.entries)} entries, {f.bytes} bytes") for f in old
    ] + [(p, {"folder": str(p)}, "left by an interrupted prune") for p in leftovers]:
        line = lines.folder(
            {**row, "freed_on_disk": freed_by_removing(path), "held_in_quarantine": 0}, ""
        )
        if not dry_run:
            FsOps(path.parent).remove_tree(path)
        emit_lines(fmt, [line])
        if fmt == "text":
            click.echo(f"{'would remove' if dry_run else 'removed'} {path} ({what})")
    if not dry_run and old:
        warning = forget([f.path for f in old])
        if warning:
            click.echo(f"kafkalog: warning: {warning}", err=True)
    if fmt == "text" and not old and not leftovers:
        click.echo("nothing to prune")
    finish_run(lines, fmt, report_path, 0, quiet=not (old or leftovers))
