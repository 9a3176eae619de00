"""A journal checked as it streams by, in memory that does not grow with its entries (pure).

``check_stream`` gives the ``Report`` that ``invariants.check`` gives for the same entries
(violations, metrics, coverage and warnings equal, field for field and in the same order),
but takes the entries one at a time, in file order, and keeps only per-run, per-client and
per-job state: the rules' judges (``_judges``), the counts and per-job facts the metrics,
coverage and warnings need, and the webhook deliveries (a few per job). The report holds no
entries; ``render_streamed`` draws the text report's timelines from a second pass that keeps
only the entries those timelines show.

Entries are judged in ``order_entries``'s order: ``in_seq_order`` restores it with a bounded
buffer (a file is written in the order answers complete, close to seq order). When the file's
order cannot be restored within the buffer, it raises ``Unordered`` and the caller judges the
journal in memory instead, so the verdict never depends on the buffer.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ._judges import ClientJudge, Found, Unjudgeable, found_as_is, violation
from ._report import job_key, render_indexed, summarise_coverage, summarise_metrics
from ._rules import Violation, _answer, describe, told, was_sent, webhook_ack
from ._runs import _RUN_STARTS
from .entries import EntryLike
from .invariants import INVARIANTS
from .limits import Limits
from .scenario import TERMINAL_STATUSES

__all__ = ["StreamReport", "Unordered", "check_stream", "in_seq_order", "render_streamed"]

#: How many entries ``in_seq_order`` holds back waiting for a missing seq before it gives up
#: waiting (and, should that seq come after all, raises ``Unordered``).
WINDOW = 4096


class Unordered(Unjudgeable):
    """The entries are too far out of seq order to be judged as they stream by."""


def in_seq_order(entries: Iterable[EntryLike], window: int = WINDOW) -> Iterator[EntryLike]:
    """``entries`` in ``order_entries``'s order, holding back at most about ``window`` of them.

    Within a process's part of the file (from its run header numbered 0), an entry is let
    through once every seq below it has been, or once ``window`` entries wait. Raises
    ``Unordered`` when an entry comes after one with a higher seq was let through, or when the
    file's first run header numbered 0 comes after other entries (``order_entries`` then
    sorts the file as one part or several, which only its end tells).
    """
    heap: list[tuple[int, int, EntryLike]] = []
    last = -1  # the last seq let through in this part
    headers = 0
    for position, e in enumerate(entries):
        seq = e.seq
        if seq == 0 and e.run is not None:
            if position:
                if not headers:
                    raise Unordered("a run header numbered 0 after other entries")
                while heap:
                    yield heapq.heappop(heap)[2]
                last = -1
            headers += 1
        if seq < last:
            raise Unordered(f"seq {seq} after seq {last}")
        if seq <= last + 1 and not heap:  # next in order (the usual case): through at once
            last = seq
            yield e
            continue
        heapq.heappush(heap, (seq, position, e))
        while heap and (heap[0][0] <= last + 1 or len(heap) > window):
            last, _, out = heapq.heappop(heap)
            yield out
    while heap:
        yield heapq.heappop(heap)[2]


@dataclasses.dataclass(frozen=True)
class StreamReport:
    """What ``check_stream`` found, as ``Report`` has it, plus what the CLI needs from the
    entries: each run's header and whether any client request was seen."""

    #: Every violation, or with ``check_stream``'s ``shown``, the first that many.
    violations: tuple[Violation, ...]
    metrics: dict[str, Any]
    coverage: dict[str, Any]
    warnings: tuple[str, ...]
    limits: Limits
    headers: tuple[dict[str, Any] | None, ...]
    tested: bool
    #: How many violations there are, and how many of each rule (most first, as
    #: ``Report.rule_counts``), whether or not ``violations`` holds them all.
    total: int = 0
    counts: tuple[tuple[str, int], ...] = ()


class _Client:
    """One client's state in one run: its judge (which counts what the metrics, coverage and
    warnings need too), and where its counts go at the end of the run."""

    __slots__ = ("judge", "metrics", "observed")

    def __init__(
        self, limits: Limits, metrics: dict[str, Any], observed: set[str], keep_gone: int
    ) -> None:
        self.judge = ClientJudge(limits, bounded=True, keep_gone=keep_gone)
        self.metrics = metrics
        self.observed = observed


class _Run:
    """One run's state."""

    __slots__ = (
        "clients",
        "deliveries",
        "hooks_of",
        "limits",
        "notified",
        "notified_status",
        "number",
        "status_changes",
        "terminal_at",
        "true_by_job",
        "violations",
    )

    def __init__(self, number: int, limits: Limits) -> None:
        self.number = number
        self.limits = limits
        self.clients: dict[str, _Client] = {}
        self.hooks_of: dict[str, list[EntryLike]] = {}
        self.violations: list[Violation] = []
        self.terminal_at: dict[str, float] = {}
        self.status_changes: dict[str, tuple[dict[float, str], list[float]]] = {}
        self.true_by_job: dict[str, set[str]] = {}
        self.deliveries = 0
        self.notified: set[str] = set()  # jobs a genuine webhook told had ended (metrics)
        self.notified_status: set[str | None] = set()  # by the entry's status (warnings)


class _Totals:
    """What the metrics and coverage count over every run, and the violations kept."""

    def __init__(self, shown: int | None, keep_gone: int) -> None:
        self.shown = shown  # how many violations to make (None: all)
        self.keep_gone = keep_gone
        self.violations: list[Violation] = []
        self.counts: Counter[str] = Counter()  # per rule, in the order they first come
        self.per_client: dict[str, dict[str, Any]] = {}
        self.delays: list[tuple[str, str, int, float]] = []
        self.time_in_status: list[tuple[str, int, dict[str, float]]] = []
        self.acknowledged = 0
        self.deliveries = 0
        self.by_event: Counter[str] = Counter()
        self.terminal_jobs = 0
        self.notified = 0
        self.observed: dict[str, set[str]] = {}
        self.reached: dict[str, set[str]] = {}
        self.codes: Counter[int] = Counter()
        self.forms: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.dropped = 0
        self.requests = 0
        self.sent = False
        self.gave_up: list[str] = []


def check_stream(
    entries: Iterable[EntryLike],
    limits_of: Callable[[dict[str, Any] | None], Limits],
    *,
    shown: int | None = None,
    keep_gone: int = 0,
) -> StreamReport:
    """Judge ``entries`` (in ``order_entries``'s order: see ``in_seq_order``) as
    ``invariants.check`` does, each run by ``limits_of(its header)``; the report's ``limits``
    are the first run's (``limits_of(None)`` for a journal with no run). With ``shown``, the
    report's ``violations`` are only the first that many (all a text report details): the
    others are counted, and never written out nor kept past the end of their run.
    ``keep_gone``: how many status reads let go each client's ``status_rate`` judge keeps
    (0: ``_judges.KEEP_GONE``); past that, a read far back in time raises ``Unjudgeable``."""
    totals = _Totals(shown, keep_gone)
    runs: list[_Run] = []
    headers: list[dict[str, Any] | None] = []
    header: dict[str, Any] | None = None
    run: _Run | None = None
    tested = False
    name: str | None = None  # the client of the last request, and its judge's ``add``
    add: Callable[[EntryLike], None] | None = None
    for e in entries:
        kind = e.kind
        if kind == "admin":
            if e.run is not None or e.path in _RUN_STARTS:
                if run is not None:
                    _close_run(run, totals)
                    run = None
                    name = add = None
                    header = e.run
                elif e.run is not None:
                    header = e.run
            continue
        if run is None:
            run = _Run(len(runs), limits_of(header))
            runs.append(run)
            headers.append(header)
        if kind == "webhook":
            _webhook(run, e, totals)
            continue
        tested = True
        if kind != "unknown":
            if e.client != name or add is None:
                name = e.client
                add = _client(run, name, totals).judge.add
            add(e)  # the rules, and the client's metrics and coverage
            if e.true_status is not None and e.job_id is not None:
                _truths(run, e)
            continue
        if e.job_id and e.true_status:
            run.true_by_job.setdefault(e.job_id, set()).add(e.true_status)
        _status_facts(run, e)
    if run is not None:
        _close_run(run, totals)
    applied = runs[0].limits if runs else limits_of(None)
    count = len(runs)
    return StreamReport(
        violations=tuple(totals.violations),
        metrics=_metrics(totals, count),
        coverage=(found := _coverage(totals, applied))[0],
        warnings=tuple(found[1]),
        limits=applied,
        headers=tuple(headers),
        tested=tested,
        total=sum(totals.counts.values()),
        counts=tuple(totals.counts.most_common()),
    )


def _status_facts(run: _Run, e: EntryLike) -> None:
    """What ``_terminal_at`` and ``_time_in_status`` take from any entry of the run."""
    job_id, true_status, since = e.job_id, e.true_status, e.status_since
    if job_id is None or true_status is None or since is None:
        return
    if job_id and true_status in TERMINAL_STATUSES and job_id not in run.terminal_at:
        run.terminal_at[job_id] = since
    changes = run.status_changes.get(job_id)
    if changes is None:
        run.status_changes[job_id] = changes = ({}, [0.0])
    changes[0][since] = true_status
    last_seen = changes[1]
    last_seen[0] = max(last_seen[0], e.received_at)


def _webhook(run: _Run, e: EntryLike, totals: _Totals) -> None:
    job_id = e.job_id
    if job_id is not None:
        run.hooks_of.setdefault(job_id, []).append(e)
    if job_id and e.true_status:
        run.true_by_job.setdefault(job_id, set()).add(e.true_status)
    _status_facts(run, e)
    run.violations.extend(webhook_ack((e,), run.limits))
    if was_sent(e):
        totals.sent = True
        run.deliveries += 1
        totals.deliveries += 1
        if e.status_code is not None and 200 <= e.status_code < 300:
            totals.acknowledged += 1
        totals.by_event[e.event or "unknown"] += 1
        if job_id and told(e) and (e.event or "").removeprefix("job.") in TERMINAL_STATUSES:
            run.notified.add(job_id)
    if e.job_status in TERMINAL_STATUSES and told(e):
        run.notified_status.add(job_id)


def _client(run: _Run, name: str, totals: _Totals) -> _Client:
    """The run's state of client ``name``, made on its first request."""
    client = run.clients.get(name)
    if client is None:
        metrics = totals.per_client.setdefault(
            name,
            {
                "requests": 0,
                "status_reads": 0,
                "completions": 0,
                "retries": 0,
                "rate_limit_hits": 0,
            },
        )
        observed = totals.observed.setdefault(name, set())
        totals.reached.setdefault(name, set())
        run.clients[name] = client = _Client(run.limits, metrics, observed, totals.keep_gone)
    return client


def _truths(run: _Run, e: EntryLike) -> None:
    """What a request with a ``true_status`` and a job tells of the job (``_status_facts``)."""
    job_id, true_status = e.job_id, e.true_status
    assert job_id is not None  # as the caller tests
    assert true_status is not None
    if job_id and true_status:
        run.true_by_job.setdefault(job_id, set()).add(true_status)
    if e.status_since is not None:
        _status_facts(run, e)


def _close_run(run: _Run, totals: _Totals) -> None:
    hooks = run.hooks_of
    found: Iterable[Found] = itertools.chain(
        itertools.chain.from_iterable(c.judge.iter_found(hooks) for c in run.clients.values()),
        # webhook_ack's, after the clients' as ``_judge`` has them
        (found_as_is(v, _WEBHOOK_ACK) for v in run.violations),
    )
    number = run.number
    kept, counts, shown = totals.violations, totals.counts, totals.shown
    # by the last entry each names, then the rule: as ``_judge`` sorts
    if shown is None:
        chosen = sorted(found, key=_ORDER)
        for f in chosen:
            counts[INVARIANTS[f[1]]] += 1
    else:
        # the first ``shown`` still wanted, without holding (nor writing) the others
        tally = [0] * len(INVARIANTS)
        low = [0] * len(INVARIANTS)  # each rule's first seq (where the sorted list meets it)
        wanted = shown - len(kept)
        tallied = _tallied(found, tally, low)
        if wanted > 0:
            chosen = heapq.nsmallest(wanted, tallied, key=_ORDER)
        else:
            chosen = []
            collections.deque(tallied, maxlen=0)  # counted only
        for rule in sorted((r for r, n in enumerate(tally) if n), key=lambda r: (low[r], r)):
            counts[INVARIANTS[rule]] += tally[rule]
    for f in chosen:
        v = violation(f)
        kept.append(dataclasses.replace(v, run=number) if number else v)
    run.violations = []
    for job_id, (points, last_seen) in run.status_changes.items():
        ordered = sorted(points.items())
        spent: dict[str, float] = {}
        for index, (since, status) in enumerate(ordered):
            if status in TERMINAL_STATUSES:
                break
            until = ordered[index + 1][0] if index + 1 < len(ordered) else last_seen[0]
            spent[status] = round(spent.get(status, 0.0) + max(0.0, until - since), 6)
        totals.time_in_status.append((job_id, number, spent))
    run.status_changes = {}
    totals.terminal_jobs += len(run.terminal_at)
    totals.notified += len(run.notified & run.terminal_at.keys())
    for name, client in run.clients.items():
        judge = client.judge
        metrics = client.metrics
        metrics["requests"] += judge.count
        metrics["status_reads"] += judge.status_reads
        metrics["retries"] += judge.retries
        metrics["rate_limit_hits"] += judge.rate_limit_hits
        metrics["completions"] += len(judge.seen_jobs)
        totals.requests += judge.count
        totals.codes.update(judge.codes)
        totals.forms.update(judge.forms)
        totals.faults.update(judge.faults)
        totals.dropped += judge.dropped
        client.observed.update(judge.observed)
        for job in judge.seen_jobs:
            job_id = job.job_id
            if job_id in run.terminal_at:
                at = job.seen_at
                assert at is not None  # seen_jobs have seen_at
                totals.delays.append(
                    (name, job_id, number, round(max(0.0, at - run.terminal_at[job_id]), 6))
                )
        reached = totals.reached[name]
        true_by_job = run.true_by_job
        if true_by_job:
            for job in judge.entry_jobs:
                if job.job_id:
                    reached.update(true_by_job.get(job.job_id, ()))
        gave_up = sorted(
            (
                job
                for job in judge.jobs.values()
                if job.last is not None and job.own and not job.ended
            ),
            key=_RANK,
        )
        for job in gave_up:
            job_id = job.job_id
            if job_id in run.notified_status:
                continue
            e = job.last
            assert e is not None  # as filtered
            status = f" while the job was {e.true_status!r}" if e.true_status else ""
            totals.gave_up.append(
                f"the client {name!r} never asked about job {job_id} again after"
                f" {describe(e)} got {_answer(e)}{status}: a failed read is not a failed job;"
                " unless the client ran out of retries or time, it should have retried"
            )
    run.clients = {}
    run.hooks_of = {}


def _tallied(found: Iterable[Found], tally: list[int], low: list[int]) -> Iterator[Found]:
    """``found`` as it comes, counting each rule's (``tally``) and its lowest last seq."""
    for f in found:
        rule = f[1]
        n = tally[rule]
        if not n or f[0] < low[rule]:
            low[rule] = f[0]
        tally[rule] = n + 1
        yield f


_WEBHOOK_ACK = INVARIANTS.index("webhook_ack")
_RANK = operator.attrgetter("last_rank")


def _ORDER(found: Found) -> tuple[int, int]:
    return (found[0], found[1])


def _metrics(totals: _Totals, runs: int) -> dict[str, Any]:
    delays = {
        f"{client} {job_key(job_id, number, runs)}": delay
        for client, job_id, number, delay in totals.delays
    }
    time_in_status = {
        job_key(job_id, number, runs): spent for job_id, number, spent in totals.time_in_status
    }
    webhooks = {
        "deliveries": totals.deliveries,
        "acknowledged": totals.acknowledged,
        "by_event": dict(totals.by_event),
        "terminal_jobs": totals.terminal_jobs,
        "terminal_jobs_notified": totals.notified,
    }
    return summarise_metrics(runs, totals.per_client, delays, time_in_status, webhooks)


def _coverage(totals: _Totals, limits: Limits) -> tuple[dict[str, Any], list[str]]:
    return summarise_coverage(
        limits,
        requests=totals.requests,
        observed=totals.observed,
        reached=totals.reached,
        codes=totals.codes,
        forms=totals.forms,
        faults=totals.faults,
        dropped=totals.dropped,
        webhook_sent=bool(totals.sent),
        gave_up=totals.gave_up,
    )


def render_streamed(
    report: StreamReport,
    entries: Callable[[], Iterable[EntryLike]],
    max_violations: int | None = None,
) -> str:
    """``Report.render``'s text for a streamed report: the timelines come from one more pass
    over ``entries()`` (in ``order_entries``'s order) that keeps, for each violation shown,
    only the entries its timeline shows (``_Window``)."""
    violations = report.violations
    shown = violations if not max_violations else violations[:max_violations]
    windows: dict[int, _Windows] = {}
    for v in shown:
        windows.setdefault(v.run, _Windows()).want(v)
    if windows:
        live = sum(found.live for found in windows.values())
        for number, e in _numbered(entries()):
            found = windows.get(number)
            if found is not None and found.live:
                live -= found.add(e)
                if not live:
                    break  # every window is complete: the rest of the journal shows nothing
        for found in windows.values():
            found.finish()
    empty = _Windows()
    return render_indexed(
        violations,
        len(report.headers),
        lambda number: windows.get(number, empty),
        report.metrics,
        report.warnings,
        max_violations,
        counted=(report.total, list(report.counts)),
    )


_CONTEXT = 3  # as _report's: entries shown before and after the offending ones
_MAX_LINES = 14


class _Window:
    """``_RunIndex.window`` for one violation, worked out as the run streams by.

    The related entries (the client's entries about the job, or its status reads for a
    violation of no job, and the violation's own entries) come in seq order, those of one seq
    the group's first; kept are the last ``_CONTEXT`` before the violation's first seq, those
    up to its last (while they could be shown), ``_CONTEXT`` after, and its own entries.
    """

    def __init__(self, v: Violation) -> None:
        self.seqs = frozenset(v.seqs)
        self.low_seq = min(v.seqs)
        self.high_seq = max(v.seqs)
        self.named: set[int] = set()  # the seqs whose first entry has been seen
        self.before: collections.deque[EntryLike] = collections.deque(maxlen=_CONTEXT)
        self.skipped = 0  # related entries before the first seq, not kept
        self.middle: list[EntryLike] = []
        self.middle_count = 0
        self.after: list[EntryLike] = []
        self.more_after = False  # once True, nothing later changes the window
        self.complete = False  # let go of by ``_Windows``
        self.mine: list[EntryLike] = []
        self.seq: int | None = None  # the seq of the entries held in group and extras
        self.group: list[EntryLike] = []
        self.extras: list[EntryLike] = []
        self.result: tuple[list[EntryLike], bool, bool] = ([], False, False)

    def add(self, e: EntryLike, in_group: bool) -> None:
        seq = e.seq
        if seq != self.seq:
            self._flush()
            self.seq = seq
        named = seq in self.seqs and seq not in self.named
        if named:
            self.named.add(seq)
        if in_group:
            self.group.append(e)
        elif named:
            self.extras.append(e)

    def _flush(self) -> None:
        seq = self.seq
        if seq is None:
            return
        for e in (*self.group, *self.extras):
            if seq < self.low_seq:
                if len(self.before) == _CONTEXT:
                    self.skipped += 1
                self.before.append(e)
            elif seq <= self.high_seq:
                self.middle_count += 1
                if len(self.middle) <= _MAX_LINES:
                    self.middle.append(e)
            elif len(self.after) < _CONTEXT:
                self.after.append(e)
            else:
                self.more_after = True
        if seq in self.seqs:
            self.mine.extend(self.group)
            self.mine.extend(self.extras)
        self.group, self.extras = [], []

    def finish(self) -> None:
        self._flush()
        self.seq = None
        if not self.named:
            return
        before, after = self.skipped > 0, self.more_after
        if len(self.before) + self.middle_count + len(self.after) > _MAX_LINES:
            self.result = (self.mine, before, after)
        else:
            self.result = ([*self.before, *self.middle, *self.after], before, after)


class _Windows:
    """The windows of a run's violations shown, fed the run's entries in order; a window is
    let go once complete (``_Window.more_after``: nothing later can change it)."""

    def __init__(self) -> None:
        self.windows: dict[Violation, _Window] = {}
        self.by_group: dict[tuple[str, str | None], list[_Window]] = {}
        self.by_seq: dict[int, list[_Window]] = {}
        self.live = 0  # the windows not yet complete
        self.complete = 0  # complete windows still in ``by_group`` and ``by_seq``

    def want(self, v: Violation) -> None:
        if v in self.windows:
            return
        window = _Window(v)
        self.windows[v] = window
        self.live += 1
        self.by_group.setdefault((v.client, v.job_id), []).append(window)
        for seq in window.seqs:
            self.by_seq.setdefault(seq, []).append(window)

    def add(self, e: EntryLike) -> int:
        """Feed ``e`` to the windows it belongs to; how many of them it completed."""
        fed = self._feed(e)
        done = 0
        for window in fed:
            if window.more_after and not window.complete:
                window.complete = True
                done += 1
        if done:
            self.live -= done
            self.complete += done
            if self.complete * 2 > len(self.windows):
                self._let_go()
        return done

    def _let_go(self) -> None:
        """Drop the complete windows from the indexes (they are only read by ``window``)."""
        self.by_group = _incomplete(self.by_group)
        self.by_seq = _incomplete(self.by_seq)
        self.complete = 0

    def _feed(self, e: EntryLike) -> list[_Window]:
        fed: list[_Window] = []
        if e.kind != "webhook" and e.kind != "unknown":
            if e.job_id is not None:
                for window in self.by_group.get((e.client, e.job_id), ()):
                    window.add(e, True)
                    fed.append(window)
            if e.kind == "status":
                for window in self.by_group.get((e.client, None), ()):
                    window.add(e, True)
                    fed.append(window)
        for window in self.by_seq.get(e.seq, ()):
            if window not in fed:
                window.add(e, False)
                fed.append(window)
        return fed

    def finish(self) -> None:
        for window in self.windows.values():
            window.finish()

    def window(self, v: Violation) -> tuple[list[EntryLike], bool, bool]:
        found = self.windows.get(v)
        return ([], False, False) if found is None else found.result


_Key = TypeVar("_Key")


def _incomplete(index: dict[_Key, list[_Window]]) -> dict[_Key, list[_Window]]:
    out: dict[_Key, list[_Window]] = {}
    for key, windows in index.items():
        kept = [w for w in windows if not w.complete]
        if kept:
            out[key] = kept
    return out


_NUMBER = operator.itemgetter(0)


def _numbered(entries: Iterable[EntryLike]) -> Iterator[tuple[int, EntryLike]]:
    """The non-admin entries of ordered ``entries``, each with its run's number as
    ``split_runs`` counts runs."""
    number = 0
    started = False  # whether the current run has an entry
    for e in entries:
        if e.kind == "admin":
            if started and (e.run is not None or e.path in _RUN_STARTS):
                number += 1
                started = False
            continue
        started = True
        yield number, e
