"""`kafkalog quarantine list|restore|prune`: options -> storage.quarantine -> output."""
from __future__ import annotations

import json
import re
from pathlib import Path

import click

from kafkalog_cli.commands.common import one_line_errors
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage import quarantine as q
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.lock import LogDirLock

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


paths_argument = click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True, help="Output format.")
dry_run_option = click.option("--dry-run", "-n", is_flag=True, help="Print what would be done and change nothing.")


@click.group("quarantine", short_help="List, restore or prune what the commands that change log dirs kept.")
def command() -> None:
    """What recover, roll, retain, compact and delete-records removed or overwrote, kept beside each log dir in
    <logdir>/../.kafkalog-quarantine/<logdir name>/<UTC time>-<command>/ (or where --quarantine
    DIR put it): list the folders, restore one exactly, or prune old ones.

    \b
    Exit codes:
      0  done
      2  usage error
      3  restore refused: the log dir changed since the run in a way that conflicts,
         or the kept data or the manifest is damaged (nothing was changed)
      4  not a quarantine folder, log dir or quarantine dir
      5  the log dir is locked by a running broker or another kafkalog
      6  a change could not be written
    """


def _folders(paths) -> list[q.QuarantineFolder]:
    return [q.QuarantineFolder.open(f) for p in (paths or [Path(".")]) for f in q.find_folders(p)]


@command.command("list")
@paths_argument
@format_option
@one_line_errors
def list_command(paths, fmt):
    """The quarantine folders of PATHS (log dirs, quarantine dirs or folders; default: the current
    directory), oldest first: op, time, entries, bytes kept and whether restored."""
    rows = [f.to_json() for f in _folders(paths)]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no quarantine folders")
        return
    table = [("TIME", "OP", "ENTRIES", "BYTES", "STATUS", "FOLDER")]
    table += [(r["time"][:19] + "Z", r["op"], str(r["entries"]), str(r["bytes"]), r["status"], r["folder"])
              for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        click.echo("  ".join(c.rjust(w) if i in (2, 3) else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
                   + "  " + row[5])


@command.command("restore")
@click.argument("folder", type=click.Path(path_type=Path))
@dry_run_option
@format_option
@one_line_errors
def restore_command(folder, dry_run, fmt):
    """Put back everything the run of FOLDER removed or overwrote, and remove what it created,
    newest first: the log dir as it was before the run, byte for byte. Takes the log dir's .lock
    (not with --dry-run). Refuses, changing nothing, when the log dir changed since in a way that
    conflicts (a file to put back exists with other content, a file is not the length the run
    left it at) or when a kept file's sha256 differs from the manifest's. A restore that was
    killed finishes when run again."""
    f = q.QuarantineFolder.open(folder)
    if dry_run:
        plan = q.plan_restore(f)
        _show(plan, fmt, None)
        _refuse(plan)
        return
    with LogDirLock(f.restore_target()):
        f = q.QuarantineFolder.open(folder)     # as it is under the lock
        plan = q.plan_restore(f)
        _refuse(plan)
        undone = q.restore(plan, FsOps(f.log_dir))
    _show(plan, fmt, undone)


def _show(plan: q.RestorePlan, fmt: str, undone: int | None) -> None:
    if fmt == "json":
        click.echo(json.dumps({"dry_run": undone is None, **plan.to_json(),
                               **({} if undone is None else {"undone": undone})}, indent=2))
    elif undone is None:
        click.echo(plan.render())
    elif undone or plan.steps:
        click.echo(f"restored {plan.log_dir} from {plan.folder.path}: {undone} change(s) of {plan.folder.op} undone")
    else:
        click.echo(f"nothing to restore: {plan.folder.path} was restored already")


def _refuse(plan: q.RestorePlan) -> None:
    if not plan.conflicts:
        return
    first, more = plan.conflicts[0], len(plan.conflicts) - 1
    also = f" (and {more} more: --dry-run lists them)" if more else ""
    raise KafkalogError(f"{first.message}; refusing to restore {plan.folder.path}, nothing changed{also}",
                        path=first.path)


@command.command("prune")
@paths_argument
@click.option("--older-than", required=True, type=Duration(), metavar="DURATION",
              help="Remove the folders of runs that started longer ago than this: 7d, 12h, 30m, 1d12h (s m h d w).")
@dry_run_option
@one_line_errors
def prune_command(paths, older_than, dry_run):
    """Remove the quarantine folders of PATHS (log dirs, quarantine dirs or folders; default: the
    current directory) whose run started more than DURATION ago. What they kept is gone for
    good: the space comes back."""
    folders = _folders(paths)
    old = q.older_than(folders, older_than)
    leftovers = [p for root in sorted({f.path.parent for f in folders}) for p in q.pruning_leftovers(root)]
    for f in old:
        click.echo(f"{'would remove' if dry_run else 'removed'} {f.path} ({f.op}, {len(f.entries)} entries, "
                   f"{f.bytes} bytes)")
        if not dry_run:
            FsOps(f.path.parent).remove_tree(f.path)
    for p in leftovers:
        click.echo(f"{'would remove' if dry_run else 'removed'} {p} (left by an interrupted prune)")
        if not dry_run:
            FsOps(p.parent).remove_tree(p)
    if not old and not leftovers:
        click.echo("nothing to prune")
