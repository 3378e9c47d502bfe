"""What every mutating command does with its plans: print them (--dry-run), or take the lock,
re-plan under it, apply through fsops, and report."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import click

from kafkalog_cli.ops.plan import Plan, apply
from kafkalog_cli.storage.fsops import FsOps, Quarantine, quarantine_root
from kafkalog_cli.storage.lock import LogDirLock


def run_plans(op: str, groups: dict[Path, list[Path]], make_plan: Callable[[Path, list[Path]], Plan], *,
              dry_run: bool, fmt: str, quarantine_dir: Path | None, no_quarantine: bool,
              report_path: Path | None = None) -> list[dict]:
    reports = []
    for log_dir, parts in groups.items():
        root = quarantine_root(log_dir, quarantine_dir, no_quarantine)
        if dry_run:
            plan = make_plan(log_dir, parts)
            reports.append({"dry_run": True, **plan.to_json()})
            if fmt == "text":
                click.echo(plan.render())
            continue
        with LogDirLock(log_dir):
            plan = make_plan(log_dir, parts)   # planned under the lock: nobody changes it meanwhile
            fsops = FsOps(log_dir, Quarantine(root, op))
            report = apply(plan, fsops)
        reports.append(report)
        if fmt == "text":
            click.echo(plan.render() if plan.actions or plan.findings else f"{op} {log_dir}: nothing to do")
            if report.get("quarantine"):
                click.echo(f"  removed data kept in {report['quarantine']}")
    if fmt == "json":
        click.echo(json.dumps(reports if len(reports) != 1 else reports[0], indent=2))
    if report_path is not None:
        report_path.write_text(json.dumps(reports, indent=2) + "\n")
    return reports
