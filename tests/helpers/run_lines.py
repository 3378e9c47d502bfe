"""Reading the JSON Lines of the commands that change log dirs (render/change_report.py) as a test
reads them: every line, the lines of a kind, one log dir's report with its partitions, the totals."""

from __future__ import annotations

import json

ENVELOPE = ("run_id", "time", "command", "kind")


def lines(text: str) -> list[dict]:
    out = [json.loads(x) for x in text.splitlines() if x.strip()]
    assert out and all(list(o)[:4] == list(ENVELOPE) for o in out), text[:400]
    assert len({o["run_id"] for o in out}) == 1 or text.count('"kind": "totals"') > 1, (
        "one run id per run"
    )
    assert out[-1]["kind"] == "totals", "the totals line comes last"
    return out


def of_kind(text: str, kind: str) -> list[dict]:
    return [o for o in lines(text) if o["kind"] == kind]


def totals(text: str) -> dict:
    return lines(text)[-1]


def partitions(text: str) -> dict[str, dict]:
    return {o["partition"]: o for o in of_kind(text, "partition")}


def log_dir_report(text: str, index: int = 0) -> dict:
    """The `index`th log dir's line, with its partition lines put back as `partitions` (keyed by
    name; compact: a list), as the report held them before the lines."""
    all_lines = lines(text)
    log_dirs = [o for o in all_lines if o["kind"] == "log_dir"]
    report = dict(log_dirs[index])
    parts = [
        {
            k: v
            for k, v in o.items()
            if k not in ENVELOPE and k not in ("log_dir", "dry_run", "quarantine")
        }
        for o in all_lines
        if o["kind"] == "partition" and o["log_dir"] == report["log_dir"]
    ]
    report["partitions"] = (
        parts if report["command"] == "compact" else {p["partition"]: p for p in parts}
    )
    return report


def stable(text: str) -> list[dict]:
    """The lines without what differs between two runs of the same work: the run id, the times."""
    return [{k: v for k, v in o.items() if k not in ("run_id", "time")} for o in lines(text)]
