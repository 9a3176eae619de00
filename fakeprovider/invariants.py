"""The invariant checker: journal + limits in, a report of named violations out (pure).

``check(journal, limits)`` splits the journal into runs (a ``/__admin/reset`` or
``/__admin/scenario`` entry starts a new run, and job ids repeat across runs), judges every run
and, within a run, every client (``X-Client-Id``) apart, and returns a ``Report`` with the
violations, the metrics and what the run exercised. ``assert_invariants`` raises
``InvariantViolation`` with the rendered report. The rules are in ``_rules`` and are defined
precisely in ``docs/invariants.md``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._judges import ClientJudge, hooks_of
from ._report import MAX_VIOLATIONS, coverage, metrics, render
from ._rules import CLIENT_RULES, Violation, webhook_ack
from ._runs import runs_with_headers, split_runs
from .durations import parse_duration
from .errors import InvariantViolation
from .journal import Entry, order_entries, paused_gc
from .limits import Limits, limits_for
from .scenario import Outcome, Scenario

__all__ = [
    "INVARIANTS",
    "Limits",
    "Report",
    "Violation",
    "assert_invariants",
    "check",
    "expected_outcome",
    "runs_with_headers",
    "split_runs",
]

#: Every invariant name, in the order of docs/invariants.md.
INVARIANTS: tuple[str, ...] = (*(name for name, _ in CLIENT_RULES), "webhook_ack")


@dataclass(frozen=True)
class Report:
    """What ``check`` found: violations, metrics, coverage and warnings."""

    violations: tuple[Violation, ...]
    metrics: dict[str, Any]
    coverage: dict[str, Any]
    warnings: tuple[str, ...]
    limits: Limits
    entries: tuple[Entry, ...] = field(default=(), repr=False)

    @property
    def ok(self) -> bool:
        return not self.violations

    def by_invariant(self, name: str) -> list[Violation]:
        return [v for v in self.violations if v.invariant == name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "violations": [v.to_dict() for v in self.violations],
            "metrics": self.metrics,
            "coverage": self.coverage,
            "warnings": list(self.warnings),
            "limits": self.limits.to_dict(),
        }

    def render(self, max_violations: int | None = MAX_VIOLATIONS) -> str:
        """The report as text: the count per rule, then each violation with the job's timeline
        around it (the first ``max_violations``; None or 0: every one)."""
        return render(self.violations, self.entries, self.metrics, self.warnings, max_violations)

    def rule_counts(self) -> dict[str, int]:
        """How many violations each broken rule has, most first."""
        return dict(Counter(v.invariant for v in self.violations).most_common())

    def summary(self) -> str:
        """One line: the broken rules with their counts, or that none was broken."""
        if self.ok:
            return "no invariant violations"
        rules = ", ".join(f"{name} x{n}" for name, n in self.rule_counts().items())
        return f"{len(self.violations)} invariant violation(s): {rules}"

    def __str__(self) -> str:
        return self.render()


def _judge(run: list[Entry], limits: Limits, number: int) -> list[Violation]:
    """The violations of one run: each client's entries fed to its judges as they come (see
    ``_judges``), then the webhook deliveries; ordered by the last entry each names."""
    webhooks: list[Entry] = []
    clients: dict[str, ClientJudge] = {}
    for e in run:
        kind = e.kind
        if kind == "webhook":
            webhooks.append(e)
        elif kind != "unknown":
            judge = clients.get(e.client)
            if judge is None:
                clients[e.client] = judge = ClientJudge(limits)
            judge.add(e)
    hooks = hooks_of(webhooks)
    found = [v for judge in clients.values() for v in judge.close(hooks)]
    found.extend(webhook_ack(webhooks, limits))
    order = {name: index for index, name in enumerate(INVARIANTS)}
    found.sort(key=lambda v: (v.seqs[-1], order[v.invariant]))
    return [dataclasses.replace(v, run=number) for v in found] if number else found


def check(
    journal: Iterable[Entry],
    limits: Limits | None = None,
    *,
    run_limits: Sequence[Limits] | None = None,
    **overrides: Any,
) -> Report:
    """Judge every run and client of ``journal`` against ``limits`` (+ keyword overrides, as
    ``limits_for`` takes them: ``deadline="2m"`` or seconds).

    ``run_limits``: the limits of each run (as ``split_runs`` numbers them), when runs were
    played with different scenarios or time scales; runs past its end get ``limits``.
    """
    applied = limits_for(base=limits, overrides=overrides)
    with paused_gc():
        entries = order_entries(journal)
        runs = split_runs(entries)
        per_run = list(run_limits or ())
        violations = [
            v
            for number, run in enumerate(runs)
            for v in _judge(run, per_run[number] if number < len(per_run) else applied, number)
        ]
        found_metrics = metrics(runs)
        found_coverage, warnings = coverage(runs, applied)
    return Report(
        violations=tuple(violations),
        metrics=found_metrics,
        coverage=found_coverage,
        warnings=tuple(warnings),
        limits=applied,
        entries=tuple(entries),
    )


def assert_invariants(
    journal: Iterable[Entry], limits: Limits | None = None, **overrides: Any
) -> Report:
    """``check``, raising ``InvariantViolation`` (an AssertionError) with the rendered report."""
    report = check(journal, limits, **overrides)
    if not report.ok:
        error = InvariantViolation(report.render())
        error.report = report
        raise error
    return report


def expected_outcome(scenario: Scenario, deadline: float | str | None = None) -> Outcome:
    """What a correct client should report for the scenario's first job.

    ``deadline`` (seconds or a duration like '2m'; default: the scenario's ``expect.deadline``)
    is the client's deadline from its submit. A job whose timeline ends after it is
    ``timed_out``; a job with no deadline, or a timeline driven by poll counts, ends in its
    final status. Faults and auth revocation are not modelled: this is the job's outcome.
    """
    if isinstance(deadline, str):
        deadline = parse_duration(deadline)
    if deadline is None:
        deadline = scenario.expect.deadline
    spec = scenario.jobs[0]
    end = spec.end_time
    if deadline is not None and end is not None and end > deadline:
        return "timed_out"
    final = spec.final_status
    if final in ("queued", "processing"):
        return "timed_out"
    return final  # type: ignore[return-value]
