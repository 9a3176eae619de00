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
import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._report import MAX_VIOLATIONS, coverage, metrics, render
from ._rules import (
    CLIENT_RULES,
    ClientEntries,
    Violation,
    honours_poll_after,
    no_premature_retrieval,
    webhook_ack,
)
from .durations import parse_duration
from .errors import InvariantViolation
from .journal import Entry, order_entries, paused_gc
from .scenario import Expect, Outcome, Scenario

__all__ = [
    "INVARIANTS",
    "Limits",
    "Report",
    "Violation",
    "assert_invariants",
    "check",
    "expected_outcome",
    "invariant_violation",
    "runs_with_headers",
    "split_runs",
]

#: Every invariant name, in the order of docs/invariants.md.
INVARIANTS: tuple[str, ...] = (*(name for name, _ in CLIENT_RULES), "webhook_ack")
_RUN_STARTS = frozenset({"/__admin/reset", "/__admin/scenario"})
RetryAfterScope = Literal["auto", "account", "job"]


@dataclass(frozen=True)
class Limits:
    """What the checker allows. Durations are seconds; every field has a documented default."""

    #: Consecutive failed attempts (5xx, 429, dropped) per job and route before giving up.
    max_retries: int = 5
    #: The client's deadline per job, from its submit; None: the deadline is not checked.
    deadline: float | None = None
    #: Grace after the deadline for a request already on its way.
    deadline_slack: float = 1.0
    #: Content fetches allowed (and, when set, required) per job the client saw succeed;
    #: None: at most one, none required.
    retrievals: int | None = None
    #: Fraction of the poll hint an ordinary poll may come early by.
    poll_tolerance: float = 0.1
    #: Status reads per second across all jobs of a client; None: not checked (opt-in).
    status_rate: float | None = None
    #: The sliding window status_rate is counted over.
    status_rate_window: float = 10.0
    #: How fast a webhook receiver must acknowledge a valid delivery.
    ack_limit: float = 5.0
    #: Which later requests a Retry-After binds: 'auto' (the account for 429, the job
    #: otherwise), 'account' (every request with the same credential) or 'job'.
    retry_after_scope: RetryAfterScope = "auto"
    #: Slack for Retry-After written as an HTTP-date (one-second resolution).
    date_slack: float = 1.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "retry_after_scope" or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"limit {f.name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"limit {f.name} must be a finite number, got {value!r}")
        for name in ("max_retries", "deadline_slack", "poll_tolerance", "ack_limit", "date_slack"):
            if getattr(self, name) < 0:
                raise ValueError(f"limit {name} must not be negative, got {getattr(self, name)!r}")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError(f"limit deadline must be positive, got {self.deadline!r}")
        if self.retrievals is not None and self.retrievals < 0:
            raise ValueError(f"limit retrievals must not be negative, got {self.retrievals!r}")
        if self.status_rate is not None and self.status_rate <= 0:
            raise ValueError(f"limit status_rate must be positive, got {self.status_rate!r}")
        if self.status_rate_window <= 0:
            raise ValueError(
                f"limit status_rate_window must be positive, got {self.status_rate_window!r}"
            )
        if not self.poll_tolerance <= 1:
            raise ValueError(
                f"limit poll_tolerance must be between 0 and 1, got {self.poll_tolerance!r}"
            )
        if self.retry_after_scope not in ("auto", "account", "job"):
            raise ValueError(
                "limit retry_after_scope must be 'auto', 'account' or 'job', got"
                f" {self.retry_after_scope!r}"
            )

    @classmethod
    def from_expect(cls, expect: Expect, *, time_scale: float = 1.0, **overrides: Any) -> Limits:
        """The limits a scenario's ``expect:`` sets, with ``overrides`` on top.

        ``time_scale`` is the factor the scenario was scaled by (``--time-scale``): durations in
        ``expect`` are already scaled, and it divides the status-rate budget and multiplies its
        window to match. The slacks are not scaled (they cover networks and HTTP-date seconds).
        """
        rate = expect.status_rate
        values: dict[str, Any] = {
            "max_retries": expect.max_retries,
            "deadline": expect.deadline,
            "retrievals": expect.retrievals,
            "poll_tolerance": expect.poll_tolerance,
            "status_rate": None if rate is None else rate / time_scale,
            "status_rate_window": cls.status_rate_window * time_scale,
            "ack_limit": expect.ack_limit,
        }
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_strings(cls, values: Mapping[str, str], base: Limits | None = None) -> Limits:
        """Limits from text (CLI options, query parameters): durations like '5m' or seconds.

        Raises ``ValueError`` naming the first bad or unknown limit.
        """
        known = {f.name: f for f in dataclasses.fields(cls)}
        changes: dict[str, Any] = {}
        for name, text in values.items():
            if name not in known:
                from ._suggest import did_you_mean

                hint = did_you_mean(name, known)
                raise ValueError(f"unknown limit {name!r}{hint}; known: {', '.join(known)}")
            changes[name] = _convert(name, text)
        return dataclasses.replace(base or cls(), **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_INTS = frozenset({"max_retries", "retrievals"})
_DURATIONS = frozenset(
    {"deadline", "deadline_slack", "status_rate_window", "ack_limit", "date_slack"}
)


def _convert(name: str, text: str) -> Any:
    value = text.strip()
    if value.lower() in ("none", "off", "") and name in ("deadline", "retrievals", "status_rate"):
        return None
    try:
        if name in _INTS:
            return int(value)
        if name in _DURATIONS:
            return parse_duration(value) if value[-1:].isalpha() else float(value)
        if name == "retry_after_scope":
            return value
        return float(value)
    except ValueError:
        kind = (
            "a whole number"
            if name in _INTS
            else "a duration like '90s'"
            if name in _DURATIONS
            else "a number"
        )
        raise ValueError(f"limit {name} must be {kind}, got {text!r}") from None


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


def split_runs(entries: Iterable[Entry]) -> list[list[Entry]]:
    """The journal's runs, in order: a run header, reset or scenario load (admin) entry starts
    a new one (entries ordered by ``order_entries``, so processes appending to one file stay
    apart).

    Admin entries themselves belong to no run; empty runs are dropped.
    """
    return [run for _, run in runs_with_headers(entries)]


def runs_with_headers(entries: Iterable[Entry]) -> list[tuple[dict[str, Any] | None, list[Entry]]]:
    """``split_runs`` with each run's header (the ``run`` of the last run header before its
    first entry; None for a journal written before run headers existed)."""
    runs: list[tuple[dict[str, Any] | None, list[Entry]]] = [(None, [])]
    for e in order_entries(entries):
        if e.kind == "admin":
            if e.is_header or e.path in _RUN_STARTS:
                header = e.run if e.is_header else None
                if runs[-1][1]:
                    runs.append((header, []))
                elif header is not None:
                    runs[-1] = (header, [])
            continue
        runs[-1][1].append(e)
    return [(header, run) for header, run in runs if run]


def _judge(run: list[Entry], limits: Limits, number: int) -> list[Violation]:
    found: list[Violation] = []
    webhooks = [e for e in run if e.kind == "webhook"]
    hooks_of: dict[str, list[Entry]] = {}
    for w in webhooks:
        if w.job_id is not None:
            hooks_of.setdefault(w.job_id, []).append(w)
    clients: dict[str, ClientEntries] = {}
    for e in run:
        if e.kind not in ("webhook", "unknown"):
            group = clients.get(e.client)
            if group is None:
                clients[e.client] = group = ClientEntries()
            group.append(e)
    for entries in clients.values():
        # only the webhooks about this client's jobs: each client costs what it touched
        jobs = {job for e in entries for job in _jobs_of(e)}
        mine = [w for job in jobs for w in hooks_of.get(job, ())]
        for name, rule in CLIENT_RULES:
            if name == "no_premature_retrieval":
                rule = functools.partial(no_premature_retrieval, webhooks=mine)
            elif name == "honours_poll_after":
                rule = functools.partial(honours_poll_after, webhooks=mine)
            found.extend(rule(entries, limits))
    found.extend(webhook_ack(webhooks, limits))
    order = {name: index for index, name in enumerate(INVARIANTS)}
    found.sort(key=lambda v: (v.seqs[-1], order[v.invariant]))
    return [dataclasses.replace(v, run=number) for v in found] if number else found


def _jobs_of(e: Entry) -> Iterable[str]:
    if e.job_id is not None:
        yield e.job_id
    if e.listed:
        yield from (job for job, _ in e.listed)


def check(
    journal: Iterable[Entry],
    limits: Limits | None = None,
    *,
    run_limits: Sequence[Limits] | None = None,
    **overrides: Any,
) -> Report:
    """Judge every run and client of ``journal`` against ``limits`` (+ keyword overrides).

    ``run_limits``: the limits of each run (as ``split_runs`` numbers them), when runs were
    played with different scenarios or time scales; runs past its end get ``limits``.
    """
    base = limits if limits is not None else Limits()
    applied = dataclasses.replace(base, **overrides) if overrides else base
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
        raise invariant_violation(report)
    return report


def invariant_violation(report: Report) -> InvariantViolation:
    """``InvariantViolation`` with the rendered report, and the report as ``.report``."""
    error = InvariantViolation(report.render())
    error.report = report
    return error


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
