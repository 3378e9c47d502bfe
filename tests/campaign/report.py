"""The campaign's table: per invariant, runs checked and failures; then each failure with its
case id, command, mutation, symptom and one-line reproduction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .oracle import Failure, Invariant, Verdict


class Tally:
    def __init__(self) -> None:
        self.checked: Counter = Counter()
        self.failed: Counter = Counter()
        self.failures: list[Failure] = []
        self.cases = 0
        self.seconds = 0.0

    def add(self, v: Verdict) -> None:
        self.cases += 1
        self.checked.update(v.checked)
        for f in v.failures:
            self.failed[f.invariant] += 1
            self.failures.append(f)

    def table(self, wall: float | None = None, limit: int | None = None) -> str:
        lines = [f"{'invariant':<26} {'checked':>8} {'failed':>7}"]
        for inv in Invariant:
            lines.append(f"{inv.label:<26} {self.checked[inv]:>8} {self.failed[inv]:>7}")
        lines.append(f"{self.cases} cases" + (f" in {wall:.0f} s" if wall is not None else ""))
        shown = self.failures if limit is None else self.failures[:limit]
        if shown:
            lines.append("")
            lines.append("failures:")
        for f in shown:
            lines.append(f"- [{f.invariant.label}] {f.case_id} `{f.command}` on {f.mutation}")
            lines.append(f"    {f.symptom}")
            lines.append(f"    replay: {f.replay}")
        if limit is not None and len(self.failures) > limit:
            lines.append(f"... {len(self.failures) - limit} more")
        return "\n".join(lines)


def tally(verdicts: Iterable[Verdict]) -> Tally:
    t = Tally()
    for v in verdicts:
        t.add(v)
    return t
