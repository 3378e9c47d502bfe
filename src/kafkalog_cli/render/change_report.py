"""The one JSON shape of the commands that change log dirs (recover, roll, retain, compact,
delete-records, move-partition, quarantine restore and prune), for `--format json` and
`--report FILE`, and the one line of text that sums a run up.

JSON Lines. Every line is an object whose first four fields are the same:

    run_id   one id per run (32 hex digits), on each of its lines: a cron job's runs, appended
             to one --report file, are told apart by it
    time     when the line was made, ISO 8601 UTC (2026-11-27T10:15:00.123456Z)
    command  the command (`quarantine prune` for a subcommand)
    kind     partition | log_dir | folder | totals

then the kind's own fields:

    partition  log_dir, dry_run, partition, the op's summary of the partition (its own fields,
               storage.space's freed_on_disk and held_in_quarantine included) and quarantine
               (the run's folder, where this partition's removed data went; else null)
    log_dir    log_dir, dry_run, status (done, dry run, locked, error), then what the op reports
               of the log dir beside its partitions: findings, actions (a dry run) or changed,
               freed_on_disk, held_in_quarantine, quarantine, fs_steps. A log dir that was
               locked or failed: detail and exit_code instead.
    folder     a quarantine folder restored or pruned: folder, log_dir, op, created (when its
               run started), and what was done
    totals     the last line: dry_run, log_dirs, failed (log dirs locked or stopped by an
               error), folders (restored or pruned), partitions, changes, segments_deleted,
               freed_on_disk and held_in_quarantine (storage.space: what `du` and `df` see),
               quarantine (the folders this run wrote), exit_code, and `unknown`: for each
               figure that is null, why it is not known.

A dry run's figures are what the run would free and hold. dump-log, dump-index and the other
read-only commands keep their own schemas."""

from __future__ import annotations

import datetime as _dt
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.storage.space import FIELDS

ENVELOPE = ("run_id", "time", "command", "kind")
KINDS = ("partition", "log_dir", "folder", "totals")


def iso_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class RunLines:
    """One run's lines, as they are made, and its totals."""

    command: str
    dry_run: bool = False
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    lines: list[dict] = field(default_factory=list)
    log_dirs: int = 0
    failed: int = 0
    folders: int = 0
    partitions: int = 0
    changes: int = 0
    segments_deleted: int = 0
    figures: dict = field(default_factory=lambda: {f: 0 for f in FIELDS})
    unknown: dict = field(default_factory=dict)
    quarantines: list[str] = field(default_factory=list)

    def line(self, kind: str, **fields) -> dict:
        assert not set(ENVELOPE) & set(fields), (
            f"a {kind} field takes an envelope's name: {set(ENVELOPE) & set(fields)}"
        )
        out = {
            "run_id": self.run_id,
            "time": iso_now(),
            "command": self.command,
            "kind": kind,
            **fields,
        }
        self.lines.append(out)
        return out

    # -- what the lines add up to ------------------------------------------------------------
    def count(self, report: dict, where: str) -> None:
        """A log dir's (or a folder's) storage.space figures into the totals; a figure it does
        not have is unknown, for the reason `where` gives."""
        for f in FIELDS:
            value = report.get(f)
            if value is None:
                self.unknown.setdefault(f, where)
            elif self.figures.get(f) is not None:
                self.figures[f] += value
        q = report.get("quarantine")
        if q and q not in self.quarantines:
            self.quarantines.append(q)

    def outcome(self, outcome) -> list[dict]:
        """The lines of one log dir's ops.runner.Outcome: a line per partition, then the log dir's."""
        report = dict(outcome.to_dict())
        report.pop("dry_run", None)
        log_dir = report.pop("log_dir", str(outcome.plan.log_dir))
        report.pop("op", None)
        partitions = report.pop("partitions", {})
        items = (
            partitions.items()
            if isinstance(partitions, dict)
            else ((p.get("partition"), p) for p in partitions)
        )
        made = []
        for name, summary in items:
            if not isinstance(summary, dict):
                continue
            self.partitions += 1
            self.segments_deleted += int(summary.get("segments_deleted") or 0)
            quarantine = outcome.quarantine if summary.get("held_in_quarantine") else None
            fields = {"log_dir": log_dir, "dry_run": outcome.dry_run, "partition": name, **summary}
            if fields["partition"] != name:  # a summary whose `partition` is the number
                fields.update(partition=name, partition_id=fields["partition"])
            made.append(self.line("partition", **fields, quarantine=quarantine))
        for link in getattr(outcome, "left", ()):  # left unchanged: a link out of the log dir
            self.partitions += 1
            made.append(
                self.line(
                    "partition",
                    log_dir=log_dir,
                    dry_run=outcome.dry_run,
                    **link.to_dict(),
                    quarantine=None,
                )
            )
        self.log_dirs += 1
        self.changes += _changes(report, partitions)
        self.count(
            report,
            f"{log_dir}: a dry run of {self.command} does not estimate it"
            if outcome.dry_run
            else f"{log_dir}: {self.command} does not measure it",
        )
        made.append(
            self.line(
                "log_dir",
                log_dir=log_dir,
                dry_run=outcome.dry_run,
                status="dry run" if outcome.dry_run else "done",
                **report,
            )
        )
        return made

    def folder(self, row: dict, unknown_why: str) -> dict:
        """A quarantine folder restored or pruned (`row`: its fields, with the figures it has;
        its `time`, when the folder's run started, becomes `created`)."""
        row = {("created" if k == "time" else k): v for k, v in row.items()}
        self.folders += 1
        # restore: the entries undone (a dry run: its steps); prune: the folder removed
        self.changes += (
            int(row["undone"]) if "undone" in row else len(row["steps"]) if "steps" in row else 1
        )
        self.count(row, unknown_why)
        return self.line("folder", dry_run=self.dry_run, **row)

    def failure(self, log_dir: Path, error, locked: bool) -> dict:
        """A log dir that was locked (skipped, nothing changed) or stopped by an error (what it
        changed before is in its quarantine's manifest, not in these figures)."""
        self.log_dirs += 1
        self.failed += 1
        if not locked:
            for f in FIELDS:
                self.unknown.setdefault(
                    f,
                    f"{log_dir} stopped with exit {int(error.exit_code)} ({error}); what it "
                    f"changed before that is in its quarantine's manifest",
                )
        return self.line(
            "log_dir",
            log_dir=str(log_dir),
            dry_run=self.dry_run,
            status="locked" if locked else "error",
            detail=str(error),
            exit_code=int(error.exit_code),
        )

    def totals(self, exit_code: int) -> dict:
        figures = {f: None if f in self.unknown else self.figures[f] for f in FIELDS}
        return self.line(
            "totals",
            dry_run=self.dry_run,
            log_dirs=self.log_dirs,
            failed=self.failed,
            folders=self.folders,
            partitions=self.partitions,
            changes=self.changes,
            segments_deleted=self.segments_deleted,
            **figures,
            quarantine=list(self.quarantines),
            exit_code=exit_code,
            unknown={f: why for f, why in self.unknown.items()},
        )


def _changes(report: dict, partitions) -> int:
    """The changes a log dir's report lists: done, or pending in a dry run (compact: the
    partitions cleaned, or selected to be)."""
    for key in ("changed", "actions", "cleaned"):
        if isinstance(report.get(key), list):
            return len(report[key])
    return (
        sum(1 for p in partitions if isinstance(p, dict) and p.get("selected"))
        if isinstance(partitions, list)
        else 0
    )


# ------------------------------------------------------------------------------ the text line
def size(n: int) -> str:
    """1536 -> 1.5 KiB; below 1 KiB in bytes."""
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
    return f"{n} B"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary(totals: dict) -> str:
    """The totals line for people: `retain: 1 log dir, 3 partitions, 2 segments deleted, 1.2 MiB
    freed on disk, 1.2 MiB held in the quarantine /q/…`."""
    dry = totals["dry_run"]
    head = f"{totals['command']}{' --dry-run' if dry else ''}"
    parts = [
        _n(totals["log_dirs"], "log dir")
        + (f" ({totals['failed']} locked or failed)" if totals["failed"] else "")
    ]
    if totals["folders"]:
        parts = [_n(totals["folders"], "quarantine folder")]
    if totals["partitions"]:
        parts.append(_n(totals["partitions"], "partition"))
    parts.append(_n(totals["changes"], "change") + (" pending" if dry else ""))
    if totals["segments_deleted"]:
        parts.append(
            f"{_n(totals['segments_deleted'], 'segment')} {'to delete' if dry else 'deleted'}"
        )
    freed, held = totals["freed_on_disk"], totals["held_in_quarantine"]
    if freed is None:
        parts.append("freed on disk unknown")
    elif freed >= 0:
        parts.append(f"{size(freed)} {'to free' if dry else 'freed'} on disk")
    else:
        parts.append(f"{size(-freed)} {'to take' if dry else 'taken'} on disk")
    where = f" {', '.join(totals['quarantine'])}" if totals["quarantine"] else ""
    parts.append(
        "held in the quarantine unknown"
        if held is None
        else f"{size(held)} {'to hold' if dry else 'held'} in the quarantine{where}"
    )
    return f"{head}: {', '.join(parts)}"
