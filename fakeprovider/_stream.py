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

import bisect
import collections
import dataclasses
import functools
import heapq
import itertools
import operator
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

from ._judges import ClientJudge, Found, Unjudgeable, _describe, _Job, found_as_is, violation
from ._report import (
    Summary,
    coverage_section,
    coverage_warnings,
    job_key,
    metrics_line,
    render_indexed,
    summarise_metrics,
)
from ._rules import _REJECT, EPSILON, Violation, _answer_of, webhook_ack
from ._runs import _RUN_STARTS
from .entries import Entry, EntryLike
from .invariants import INVARIANTS, Report
from .journal import Journal, RunFile, paused_gc
from .limits import Limits, limits_for
from .scenario import TERMINAL_STATUSES

__all__ = [
    "StreamReport",
    "Unordered",
    "check_run",
    "check_stream",
    "check_streams",
    "in_run_order",
    "in_seq_order",
    "in_seq_order_batches",
    "render_streamed",
]

#: How many entries ``in_seq_order`` holds back waiting for a missing seq before it gives up
#: waiting (and, should that seq come after all, raises ``Unordered``).
WINDOW = 4096


class Unordered(Unjudgeable):
    """The entries are too far out of seq order to be judged as they stream by."""


_Entry = TypeVar("_Entry", bound=EntryLike)


def in_seq_order(entries: Iterable[_Entry], window: int = WINDOW) -> Iterator[_Entry]:
    """``entries`` in ``order_entries``'s order, holding back at most about ``window`` of them.

    Within a process's part of the file (from its run header numbered 0), an entry is let
    through once every seq below it has been, or once ``window`` entries wait. Raises
    ``Unordered`` when an entry comes after one with a higher seq was let through, or when the
    file's first run header numbered 0 comes after other entries (``order_entries`` then
    sorts the file as one part or several, which only its end tells).
    """
    return itertools.chain.from_iterable(in_seq_order_batches(([e] for e in entries), window))


_SEQ = operator.attrgetter("seq")


def in_seq_order_batches(
    batches: Iterable[list[_Entry]], window: int = WINDOW, *, after: int = -1
) -> Iterator[list[_Entry]]:
    """``in_seq_order`` of the entries of ``batches`` (lists, as ``journal.iter_record_batches``
    reads them), given in lists: the same entries in the same order, ``Unordered`` raised after
    the same entries. A list whose seqs follow on from the last let through, one by one, while
    nothing waits (a file in seq order: nearly every list) is given as it is, checked in C
    (its seqs against a ``range``); any other list is put in order entry by entry.
    ``after``: the seq before the first expected (a run read from its start in a server's
    file, ``Journal.run_batches``: its first seq less one)."""
    heap: list[tuple[int, int, _Entry]] = []
    last = after  # the last seq let through in this part
    headers = 0
    position = 0  # of the next entry in the file
    for batch in batches:
        size = len(batch)
        # seqs are >= 0, so with last >= 0 no entry of such a list is a seq 0 (a new part)
        if (
            not heap
            and last >= 0
            and list(map(_SEQ, batch)) == list(range(last + 1, last + 1 + size))
        ):
            if size:
                last += size
                position += size
                yield batch
            continue
        out: list[_Entry] = []
        try:
            for e in batch:
                seq = e.seq
                if seq == 0 and e.run is not None:
                    if position:
                        if not headers:
                            raise Unordered("a run header numbered 0 after other entries")
                        while heap:
                            out.append(heapq.heappop(heap)[2])
                        last = -1
                    headers += 1
                if seq < last:
                    raise Unordered(f"seq {seq} after seq {last}")
                if seq <= last + 1 and not heap:  # next in order (the usual case): through
                    last = seq
                    out.append(e)
                else:
                    heapq.heappush(heap, (seq, position, e))
                    while heap and (heap[0][0] <= last + 1 or len(heap) > window):
                        last, _, let_through = heapq.heappop(heap)
                        out.append(let_through)
                position += 1
        except Unordered:
            if out:
                yield out  # what was let through before it, as entry by entry
            raise
        if out:
            yield out
    if heap:
        yield [heapq.heappop(heap)[2] for _ in range(len(heap))]


@dataclasses.dataclass(frozen=True)
class StreamReport:
    """What ``check_stream`` found, as ``Report`` has it, plus what the CLI needs from the
    entries: each run's header and whether any client request was seen. The metrics, coverage
    and warnings are made from the counts when first read (a text report reads only
    ``summary`` and ``warnings``: no dict per client for a journal of many clients)."""

    #: Every violation, or with ``check_stream``'s ``shown``, the first that many.
    violations: tuple[Violation, ...]
    limits: Limits
    headers: tuple[dict[str, Any] | None, ...]
    tested: bool
    #: How many violations there are, and how many of each rule (most first, as
    #: ``Report.rule_counts``), whether or not ``violations`` holds them all.
    total: int = 0
    counts: tuple[tuple[str, int], ...] = ()
    #: For each of ``violations``, the seq past which its run holds nothing its timeline shows
    #: (empty: not known; the timelines pass then reads on until it sees three more).
    ends: tuple[int, ...] = dataclasses.field(default=(), repr=False, compare=False)
    #: The counts the metrics, coverage and warnings are made of, and how many runs.
    totals: _Totals = dataclasses.field(
        default_factory=lambda: _Totals(None, 0), repr=False, compare=False
    )
    runs: int = dataclasses.field(default=0, repr=False, compare=False)
    #: With ``check_stream``'s ``hold``, the last run's state (its clients' judges included).
    held: tuple[_Run, ...] = dataclasses.field(default=(), repr=False, compare=False)

    @functools.cached_property
    def metrics(self) -> dict[str, Any]:
        return _metrics(self.totals, self.runs)

    @functools.cached_property
    def coverage(self) -> dict[str, Any]:
        totals = self.totals
        return coverage_section(
            self.limits,
            observed=totals.observed,
            codes=totals.codes,
            forms=totals.forms,
            faults=totals.faults,
            dropped=totals.dropped,
            webhook_sent=totals.sent,
        )

    @functools.cached_property
    def warnings(self) -> tuple[str, ...]:
        totals = self.totals
        return tuple(
            coverage_warnings(
                self.limits,
                requests=totals.requests,
                observed=totals.observed,
                reached=totals.reached,
                codes=totals.codes,
                forms=totals.forms,
                dropped=totals.dropped,
                webhook_sent=totals.sent,
                gave_up=totals.gave_up,
            )
        )

    def as_report(self) -> Report:
        """What was found, as ``invariants.check``'s ``Report`` (without entries)."""
        return Report(
            violations=self.violations,
            metrics=self.metrics,
            coverage=self.coverage,
            warnings=self.warnings,
            limits=limits_for(base=self.limits, overrides={}),
        )

    @functools.cached_property
    def summary(self) -> Summary:
        """What the text report prints of ``metrics``, made without them."""
        totals = self.totals
        reads, completions = totals.status_reads, totals.completions
        delays = _delays(totals, self.runs)
        return Summary(
            totals.requests,
            len(totals.per_client),
            metrics_line(
                round(reads / completions, 3) if completions else None,
                round(sum(delays.values()) / len(delays), 6) if delays else None,
                max(delays.values()) if delays else None,
                totals.retries,
                totals.rate_limit_hits,
                totals.deliveries,
            ),
        )


class _Run:
    """One run's state."""

    __slots__ = (
        "clients",
        "hooks_of",
        "job_maps",
        "limits",
        "notified",
        "notified_status",
        "number",
        "status_changes",
        "status_end",
        "terminal_at",
        "true_by_job",
        "violations",
    )

    def __init__(self, number: int, limits: Limits) -> None:
        self.number = number
        self.limits = limits
        # each client's judge, by its first request (which counts what the metrics, coverage
        # and warnings need too)
        self.clients: dict[str, ClientJudge] = {}
        # the webhooks that told (``told``) by job, each as when it came and its event: all
        # the judges read of the deliveries (``_judges.Hooks``; a job's one as a tuple of it)
        self.hooks_of: dict[str, Sequence[tuple[float, str | None]]] = {}
        self.violations: list[Violation] = []
        # the seq of the last status read: past it, nothing more comes that a timeline of a
        # client's status reads shows (``render_streamed``); a job's is the greatest of its
        # ``_Job.end`` among the clients (each client's jobs, kept here as its judge closes:
        # ``_job_ends``), not a dict of every job's written at each entry
        self.status_end = -1
        self.job_maps: list[dict[str, _Job]] = []
        self.terminal_at: dict[str, float] = {}
        self.status_changes: dict[str, tuple[dict[float, str], list[float]]] = {}
        self.true_by_job: dict[str, set[str]] = {}
        self.notified: set[str] = set()  # jobs a genuine webhook told had ended (metrics)
        self.notified_status: set[str | None] = set()  # by the entry's status (warnings)

    def release(self) -> None:
        """Let go of what the run's close read: its judges, violations and per-job dicts."""
        self.clients = {}
        self.job_maps = []
        self.violations = []
        self.status_changes = {}
        self.hooks_of = {}
        self.terminal_at = {}
        self.true_by_job = {}
        self.notified = set()
        self.notified_status = set()


class _Totals:
    """What the metrics and coverage count over every run, and the violations kept."""

    def __init__(
        self, shown: int | None, keep_gone: int, timelines: bool = False, hold: bool = False
    ) -> None:
        self.shown = shown  # how many violations to make (None: all)
        # whether a run's state (its judges, the per-job dicts) is held once it is closed,
        # rather than each judge let go as its client closes and each dict as its run does
        self.hold = hold
        self.keep_gone = keep_gone
        self.timelines = timelines  # whether to note ``ends``
        self.violations: list[Violation] = []
        # for each of ``violations``, the seq past which its run holds nothing its timeline
        # shows (its last seq, or the last request about its job or status read, if later)
        self.ends: list[int] = []
        self.counts: Counter[str] = Counter()  # per rule, in the order they first come
        # per client, by its first request: requests, status reads, completions, retries,
        # rate-limit hits (``_metrics`` makes them the report's dicts), and the statuses its
        # answers showed and those its jobs went through (``observed``, ``reached``): one
        # frozenset for every client that saw the same (``sets``); one dict, not three
        self.per_client: dict[str, _Counted] = {}
        self.delays: list[tuple[str, str, int, float]] = []
        self.time_in_status: list[tuple[str, int, dict[str, float]]] = []
        self.acknowledged = 0
        self.deliveries = 0
        self.by_event: Counter[str] = Counter()
        self.terminal_jobs = 0
        self.notified = 0
        self.sets: dict[frozenset[str], frozenset[str]] = {}
        self.strings: dict[str, str] = {}  # one of each webhook event kept (``_Run.hooks_of``)
        self.codes: dict[int, int] = {}
        self.forms: dict[str, int] = {}
        self.faults: dict[str, int] = {}
        self.dropped = 0
        self.requests = 0
        # the sums over ``per_client`` of status reads, completions, retries and rate-limit
        # hits (what the text report prints of them)
        self.status_reads = 0
        self.completions = 0
        self.retries = 0
        self.rate_limit_hits = 0
        self.sent = False
        self.gave_up: list[str] = []

    @property
    def observed(self) -> dict[str, frozenset[str]]:
        """Per client, by its first request, the statuses its answers showed."""
        return {name: counted[5] for name, counted in self.per_client.items()}

    @property
    def reached(self) -> dict[str, frozenset[str]]:
        """Per client, by its first request, the statuses its jobs went through."""
        return {name: counted[6] for name, counted in self.per_client.items()}

    def union(self, old: frozenset[str], new: AbstractSet[str]) -> frozenset[str]:
        """``old | new``, as the one frozenset of those statuses every client shares."""
        both = old | new
        return self.sets.setdefault(both, both)


_EMPTY: frozenset[str] = frozenset()
#: What ``_Totals.per_client`` holds of a client: requests, status reads, completions,
#: retries, rate-limit hits, the statuses observed and those reached.
_Counted = tuple[int, int, int, int, int, frozenset[str], frozenset[str]]


def check_stream(
    entries: Iterable[EntryLike],
    limits_of: Callable[[dict[str, Any] | None], Limits],
    *,
    shown: int | None = None,
    keep_gone: int = 0,
    timelines: bool = True,
    hold: bool = False,
) -> StreamReport:
    """Judge ``entries`` (in ``order_entries``'s order: see ``in_seq_order``) as
    ``invariants.check`` does, each run by ``limits_of(its header)``; the report's ``limits``
    are the first run's (``limits_of(None)`` for a journal with no run). With ``shown``, the
    report's ``violations`` are only the first that many (all a text report details): the
    others are counted, and never written out nor kept past the end of their run.
    ``keep_gone``: how many status reads let go each client's ``status_rate`` judge keeps
    (0: ``_judges.KEEP_GONE``); past that, a read far back in time raises ``Unjudgeable``.
    ``timelines``: note where each job's requests end, for ``render_streamed`` to stop its
    pass there (the report's ``ends``; a job's last seq kept until its run's close).
    ``hold``: keep the last run's state, its clients' judges included, in the report (``held``)
    instead of letting it go as the run closes, for a process that ends once its report is out
    never to free it piece by piece (``fakeprovider check``: 250,000 clients' judges, or one
    judge of 500,000 jobs, take 5-10% of the check to free). Any other run's is let go as the
    next run begins, so that no more is held at once than without ``hold``."""
    totals = _Totals(shown, keep_gone, timelines, hold)
    runs: list[_Run] = []
    headers: list[dict[str, Any] | None] = []
    header: dict[str, Any] | None = None
    run: _Run | None = None
    tested = False
    name: str | None = None  # the client of the last request, and its judge's ``add``
    add: Callable[[EntryLike], None] | None = None
    new_judge = ClientJudge
    codes = totals.codes
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
            if hold and runs:
                runs[-1].release()  # only the last run is held
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
                judge = run.clients.get(name)
                if judge is None:
                    # (by position: no dict of keywords made for each client)
                    run.clients[name] = judge = new_judge(run.limits, True, keep_gone, codes)
                add = judge.add
            add(e)  # the rules, and the client's metrics and coverage
            if e.job_id is not None and e.true_status is not None:
                _truths(run, e)
            if kind == "status":
                run.status_end = e.seq
            continue
        if e.job_id and e.true_status:
            run.true_by_job.setdefault(e.job_id, set()).add(e.true_status)
        _status_facts(run, e)
    if run is not None:
        _close_run(run, totals)
    return StreamReport(
        violations=tuple(totals.violations),
        limits=runs[0].limits if runs else limits_of(None),
        headers=tuple(headers),
        tested=tested,
        total=sum(totals.counts.values()),
        counts=tuple(totals.counts.most_common()),
        ends=tuple(totals.ends) if timelines else (),
        totals=totals,
        runs=len(runs),
        held=tuple(runs[-1:]) if hold else (),
    )


def check_run(journal: Journal, limits: Limits) -> Report:
    """``invariants.check(journal.run_entries(), limits)``, the same report, for a server's
    current run: judged as it is read from the journal's file when ``memory`` made the
    journal forget part of the run (``Journal.run_batches``), so that what is held grows with
    the violations and clients, not with the entries; in memory otherwise, and for a file
    too far out of seq order to stream (a request held in flight while thousands of others
    were answered)."""
    from .invariants import check

    run = journal.run_batches()
    if run is not None:
        try:
            with paused_gc():
                found = check_streams(
                    lambda: in_run_order(run), lambda _header: limits, timelines=False
                )
            return found.as_report()
        except Unordered:  # too far out of seq order to stream: read whole
            pass
    return check(journal.run_entries(), limits)


def check_streams(
    entries: Callable[[], Iterable[EntryLike]],
    limits_of: Callable[[dict[str, Any] | None], Limits],
    **options: Any,
) -> StreamReport:
    """``check_stream(entries(), limits_of, **options)``; for a status read whose window
    reaches back past the reads each judge keeps (``Unjudgeable``), judged again from a fresh
    ``entries()`` keeping every read let go (numbers in arrays, 24 bytes a read) rather than
    every entry. Raises ``Unordered`` as ``check_stream`` does."""
    try:
        return check_stream(entries(), limits_of, **options)
    except Unordered:
        raise
    except Unjudgeable:
        return check_stream(entries(), limits_of, keep_gone=sys.maxsize, **options)


def in_run_order(run: RunFile) -> Iterator[Entry]:
    """The entries of ``run`` in seq order (``in_seq_order_batches``); raises ``Unordered``
    for a file too far out of order (a request answered after ``WINDOW`` later ones)."""
    return itertools.chain.from_iterable(
        in_seq_order_batches(run.batches(), WINDOW, after=run.first - 1)
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
    job_id, event, code = e.job_id, e.event, e.status_code
    delivery, error = e.delivery, e.error_code
    # ``was_sent`` and ``told`` of a webhook entry, without their calls
    sent = delivery != "missing" and e.attempt != 0 and error != "host_not_allowed"
    heard = sent and delivery not in _REJECT and error != "connection_error"
    if heard and job_id is not None:
        told_as = (
            e.received_at,
            event if event is None else totals.strings.setdefault(event, event),
        )
        hooks = run.hooks_of.get(job_id)
        if hooks is None:  # (a job's one delivery as a tuple of it: a list from two on)
            run.hooks_of[job_id] = (told_as,)
        elif type(hooks) is list:
            hooks.append(told_as)
        else:
            run.hooks_of[job_id] = [*hooks, told_as]
    if job_id and e.true_status:
        run.true_by_job.setdefault(job_id, set()).add(e.true_status)
    if e.status_since is not None:
        _status_facts(run, e)
    acknowledged = code is not None and 200 <= code < 300
    if not (  # what ``webhook_ack`` lets pass without a look: a 2xx to a valid send, in time
        acknowledged
        and delivery not in _REJECT
        and (
            (completed := e.completed_at) is None  # ``latency`` None
            or not completed - e.received_at > run.limits.ack_limit + EPSILON
        )
    ):
        run.violations.extend(webhook_ack((e,), run.limits))
    if sent:
        totals.sent = True
        totals.deliveries += 1
        if acknowledged:
            totals.acknowledged += 1
        totals.by_event[event or "unknown"] += 1
        if heard and job_id and (event or "").removeprefix("job.") in TERMINAL_STATUSES:
            run.notified.add(job_id)
    if heard and e.job_status in TERMINAL_STATUSES:
        run.notified_status.add(job_id)


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
    found: Iterable[Found] = itertools.chain(
        _closed_clients(run, totals),
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
        chosen = _first(found, wanted, tally, low)
        for rule in sorted((r for r, n in enumerate(tally) if n), key=lambda r: (low[r], r)):
            counts[INVARIANTS[rule]] += tally[rule]
    made = [violation(f) for f in chosen]
    if number:
        kept.extend(dataclasses.replace(v, run=number) for v in made)
    else:
        kept.extend(made)
    if totals.timelines and made:
        status_end = run.status_end
        ends = _job_ends(run.job_maps, {v.job_id for v in made if v.job_id is not None})
        for v in made:
            end = status_end if v.job_id is None else ends.get(v.job_id, -1)
            totals.ends.append(max(end, max(v.seqs, default=end)))
    for job_id, (points, last_seen) in run.status_changes.items():
        ordered = sorted(points.items())
        spent: dict[str, float] = {}
        for index, (since, status) in enumerate(ordered):
            if status in TERMINAL_STATUSES:
                break
            until = ordered[index + 1][0] if index + 1 < len(ordered) else last_seen[0]
            spent[status] = round(spent.get(status, 0.0) + max(0.0, until - since), 6)
        totals.time_in_status.append((job_id, number, spent))
    totals.terminal_jobs += len(run.terminal_at)
    totals.notified += len(run.notified & run.terminal_at.keys())
    if not totals.hold:  # let go now (else with the report: ``hold``)
        run.release()


def _job_ends(maps: list[dict[str, _Job]], wanted: AbstractSet[str]) -> dict[str, int]:
    """The seq of the last request about each job of ``wanted`` (any client's: the greatest
    ``_Job.end`` among ``maps``, each client's jobs; a run's entries come in seq order); a job
    no client's entry named is left out. Looks each client's jobs over, or ``wanted`` up in
    them, whichever is fewer."""
    ends: dict[str, int] = {}
    for jobs in maps:
        if len(jobs) < len(wanted):
            found: Iterable[tuple[str, _Job]] = (
                (job_id, job) for job_id, job in jobs.items() if job_id in wanted
            )
        else:
            found = ((job_id, jobs[job_id]) for job_id in wanted if job_id in jobs)
        for job_id, job in found:
            if job.end >= 0 and job.end > ends.get(job_id, -1):
                ends[job_id] = job.end
    return ends


def _closed_clients(run: _Run, totals: _Totals) -> Iterator[Found]:
    """What each client's judge found, client by client (in the order of their first
    requests); once a client's are taken, its counts go to ``totals`` and its judge is let
    go (the run's ``clients`` is left empty), or with ``hold`` kept.

    A judge that cannot have found anything (``_quiet``: most of a run of many clients) is
    not asked (``iter_found`` would make a generator to yield nothing), nor are the jobs of a
    judge none of whose entries failed looked over for the gave-up warning (only a failed
    read is a job's ``last``: ``any_failed``)."""
    hooks = run.hooks_of
    clients = run.clients
    hold = totals.hold
    if not hold:
        run.clients = {}
    number = run.number
    terminal_at = run.terminal_at
    true_by_job = run.true_by_job
    per_client = totals.per_client
    forms, faults = totals.forms, totals.faults
    delays = totals.delays
    union = totals.union
    maps = run.job_maps if totals.timelines else None  # (``_job_ends``)
    requests = status_reads = completions = retried = rate_limit_hits = dropped = 0
    for name, judge in clients.items() if hold else _popped(clients):
        if not _quiet(judge):
            yield from judge.iter_found(hooks)
        if maps is not None:
            maps.append(judge.jobs)
        count = judge.count
        reads, done = judge.status_reads, judge.seen_count
        retries, hits = judge.retries, judge.rate_limit_hits
        requests += count
        status_reads += reads
        completions += done
        retried += retries
        rate_limit_hits += hits
        if judge.forms:
            for form, n in judge.forms.items():
                forms[form] = forms.get(form, 0) + n
        if judge.faults:
            for fault, n in judge.faults.items():
                faults[fault] = faults.get(fault, 0) + n
        dropped += judge.dropped
        if terminal_at and done:
            for job in judge.seen_jobs:
                job_id = job.job_id
                if job_id in terminal_at:
                    at = job.seen_at
                    assert at is not None  # seen_jobs have seen_at
                    delays.append(
                        (name, job_id, number, round(max(0.0, at - terminal_at[job_id]), 6))
                    )
        # (the judge's ``observed`` is one frozenset every judge that saw those shares)
        observed = judge.observed
        counted = per_client.get(name)
        if counted is None:
            reached = _EMPTY
        else:  # (a client of an earlier run)
            seen, reached = counted[5], counted[6]
            observed = seen if observed <= seen else union(seen, observed)
        if true_by_job:
            for job in judge.entry_jobs:
                if job.job_id:
                    found = true_by_job.get(job.job_id)
                    if found and not found <= reached:
                        reached = union(reached, found)
        if counted is None:
            per_client[name] = (count, reads, done, retries, hits, observed, reached)
        else:
            per_client[name] = (
                counted[0] + count,
                counted[1] + reads,
                counted[2] + done,
                counted[3] + retries,
                counted[4] + hits,
                observed,
                reached,
            )
        if judge.any_failed:
            gave_up = [
                job
                for job in judge.jobs.values()
                if job.last is not None and job.own and not job.ended
            ]
            if gave_up:
                gave_up.sort(key=_RANK)
                _gave_up(name, gave_up, run, totals)
    totals.requests += requests
    totals.status_reads += status_reads
    totals.completions += completions
    totals.retries += retried
    totals.rate_limit_hits += rate_limit_hits
    totals.dropped += dropped


def _popped(clients: dict[str, ClientJudge]) -> Iterator[tuple[str, ClientJudge]]:
    """Each of ``clients`` with its judge, taken out of the dict as it is given (the judge
    let go once its caller is done with it)."""
    pop = clients.pop
    for name in list(clients):
        yield name, pop(name)


def _quiet(judge: ClientJudge) -> bool:
    """Whether ``judge.iter_found`` yields nothing, known without asking it: no job holds
    anything found (``found_jobs``), no count of retrievals is wanted, and no rule's
    violations are kept per client (``br_found``, ``ra_found``, ``rs_found``, ``au_retried``)
    nor a ``status_rate`` judge made."""
    return not (
        judge.found_jobs
        or judge.wanted is not None
        or judge.br_found
        or judge.ra_found
        or judge.rs_found
        or judge.au_retried
        or judge.rates is not None
    )


def _gave_up(name: str, gave_up: list[_Job], run: _Run, totals: _Totals) -> None:
    """The warnings for the jobs ``name`` gave up on after a failed read (``gave_up``, in
    their rank) that no webhook told had ended."""
    for job in gave_up:
        job_id = job.job_id
        if job_id in run.notified_status:
            continue
        last = job.last
        assert last is not None  # as filtered
        seq, kind, _, code, dropped, true_status = last[:6]
        status = f" while the job was {true_status!r}" if true_status else ""
        totals.gave_up.append(
            f"the client {name!r} never asked about job {job_id} again after"
            f" {_describe(kind, seq, job_id)} got {_answer_of(code, dropped)}{status}: a failed"
            " read is not a failed job; unless the client ran out of retries or time, it should"
            " have retried"
        )


def _first(found: Iterable[Found], wanted: int, tally: list[int], low: list[int]) -> list[Found]:
    """The first ``wanted`` of ``found`` by last seq, then rule (``_ORDER``), earlier ones
    first among equals: ``heapq.nsmallest(wanted, found, key=_ORDER)``, in one loop that
    also counts each rule's (``tally``) and notes its lowest last seq (``low``). Holds at
    most ``wanted`` of them, in a heap whose top is the last of those kept (each as its key
    and arrival negated, so that the heap's least is the greatest)."""
    heap: list[tuple[int, int, int, Found]] = []
    if wanted <= 0:  # counted only
        for f in found:
            rule = f[1]
            n = tally[rule]
            if not n or f[0] < low[rule]:
                low[rule] = f[0]
            tally[rule] = n + 1
        return []
    arrival = 0
    top_seq = top_rule = 0  # the key of the last kept (once ``wanted`` are)
    for f in found:
        seq, rule = f[0], f[1]
        n = tally[rule]
        if not n or seq < low[rule]:
            low[rule] = seq
        tally[rule] = n + 1
        arrival -= 1
        if len(heap) < wanted:
            heapq.heappush(heap, (-seq, -rule, arrival, f))
        elif seq < top_seq or (seq == top_seq and rule < top_rule):
            heapq.heapreplace(heap, (-seq, -rule, arrival, f))
        else:
            continue
        if len(heap) == wanted:
            top_seq, top_rule = -heap[0][0], -heap[0][1]
    heap.sort(reverse=True)
    return [item[3] for item in heap]


_WEBHOOK_ACK = INVARIANTS.index("webhook_ack")
_RANK = operator.attrgetter("last_rank")


#: A violation found's place in the report: its last seq, then its rule.
_ORDER: Callable[[Found], tuple[int, int]] = operator.itemgetter(0, 1)


def _delays(totals: _Totals, runs: int) -> dict[str, float]:
    return {
        f"{client} {job_key(job_id, number, runs)}": delay
        for client, job_id, number, delay in totals.delays
    }


def _metrics(totals: _Totals, runs: int) -> dict[str, Any]:
    delays = _delays(totals, runs)
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
    per_client = {
        name: {
            "requests": requests,
            "status_reads": status_reads,
            "completions": completions,
            "retries": retries,
            "rate_limit_hits": rate_limit_hits,
        }
        for name, (
            requests,
            status_reads,
            completions,
            retries,
            rate_limit_hits,
            _,
            _,
        ) in totals.per_client.items()
    }
    return summarise_metrics(runs, per_client, delays, time_in_status, webhooks)


def render_streamed(
    report: StreamReport,
    entries: Callable[[], Iterable[EntryLike]],
    max_violations: int | None = None,
    *,
    batches: Callable[[], Iterable[list[EntryLike]]] | None = None,
) -> str:
    """``Report.render``'s text for a streamed report: the timelines come from one more pass
    over ``entries()`` (in ``order_entries``'s order) that keeps, for each violation shown,
    only the entries its timeline shows (``_Window``).

    ``batches``: the same entries in lists (``in_seq_order_batches``'s), read instead of
    ``entries()``: a list of consecutive seqs that every window still open takes nothing from
    but what a few numbers say (``_Windows.bulk``) is taken at once, not entry by entry."""
    violations = report.violations
    shown = violations if not max_violations else violations[:max_violations]
    windows: dict[int, _Windows] = {}
    ends: Iterable[int | None] = report.ends or itertools.repeat(None)
    for v, end in zip(shown, ends, strict=False):  # (ends: one for every violation)
        windows.setdefault(v.run, _Windows()).want(v, end)
    if windows:
        _walk(windows, (entries(),) if batches is None else batches())
        for found in windows.values():
            found.finish()
    empty = _Windows()
    return render_indexed(
        violations,
        len(report.headers),
        lambda number: windows.get(number, empty),
        report.summary,
        report.warnings,
        max_violations,
        counted=(report.total, list(report.counts)),
    )


#: The fewest entries a list must hold to be offered to ``_Windows.bulk``.
_BULK = 16
_KIND_OF = operator.attrgetter("kind")


def _walk(windows: dict[int, _Windows], batches: Iterable[Iterable[EntryLike]]) -> None:
    """Feed ``windows`` the non-admin entries of ``batches`` (in order), each to its run's,
    numbering runs as ``split_runs`` does, until every window is complete."""
    live = sum(found.live for found in windows.values())
    current = 0  # the run the last entry was of
    started = False  # whether the current run has an entry
    last = -1  # the seq of the last entry fed, -1 after an admin one (or none yet)
    for batch in batches:
        # a list of consecutive seqs right after the last one fed, with no admin entry: all
        # of the current run's, offered whole (a file in seq order: nearly every list)
        if (
            last >= 0
            and type(batch) is list
            and len(batch) >= _BULK
            and batch[0].seq == last + 1
            and batch[-1].seq == last + len(batch)
            and "admin" not in list(map(_KIND_OF, batch))
        ):
            found = windows.get(current)
            if found is None or not found.live or found.bulk(batch):
                last += len(batch)
                continue
        for e in batch:
            if e.kind == "admin":
                if started and (e.run is not None or e.path in _RUN_STARTS):
                    current += 1
                    started = False
                last = -1
                continue
            if not started:
                started = True
                # the runs before are over: so are their windows
                ended = windows.get(current - 1)
                if ended is not None:
                    live -= ended.end_all()
                if not live:
                    return
            last = e.seq
            found = windows.get(current)
            if found is not None and found.live:
                live -= found.add(e)
                if not live:
                    return  # every window is complete: the rest of the journal shows nothing


_CONTEXT = 3  # as _report's: entries shown before and after the offending ones
_MAX_LINES = 14
_HALF = _MAX_LINES // 2  # as _report's: the first and last of the own entries shown past that
# ``_Windows.bulk`` takes a list at once only where at most this many groups wait for windows
_WAITING = 4
# a window of more seqs than this is not indexed by each (``_Windows.by_seq``): a status_rate
# violation can name every read of a window, hundreds of thousands
_WIDE = 64


class _Window:
    """``_RunIndex.window`` for one violation, worked out as the run streams by.

    The related entries (the client's entries about the job, or its status reads for a
    violation of no job, and the violation's own entries) come in seq order, those of one seq
    the group's first; kept are the last ``_CONTEXT`` before the violation's first seq, those
    up to its last (while they could be shown), ``_CONTEXT`` after, and of its own entries the
    first ``_MAX_LINES`` and the last ``_HALF`` (all its timeline can show, ``elided``).

    A window is fed from the first related entry at or past its first seq on (``begin``):
    what came before that is its group's (``_Group``), the same for every window of the group.
    """

    def __init__(self, v: Violation, group: _Group) -> None:
        self.group = group
        self.client = v.client
        self.job_id = v.job_id
        self.seqs = frozenset(v.seqs)
        self.low_seq = min(v.seqs)
        self.high_seq = max(v.seqs)
        self.begun = False
        # the last of ``seqs`` whose first entry has been seen (entries come in seq order)
        self.named: int | None = None
        self.before: collections.deque[EntryLike] = collections.deque(maxlen=_CONTEXT)
        self.skipped = 0  # related entries before the first seq, not kept
        self.middle: list[EntryLike] = []
        self.middle_count = 0
        self.after: list[EntryLike] = []
        self.more_after = False  # once True, nothing later changes the window
        self.complete = False  # let go of by ``_Windows``
        self.mine: list[EntryLike] = []  # its own entries: the first _MAX_LINES,
        self.mine_last: collections.deque[EntryLike] = collections.deque(maxlen=_HALF)  # the last
        self.mine_count = 0  # and how many
        self.seq: int | None = None  # the seq of the entries held in group and extras
        self.in_group: list[EntryLike] = []
        self.extras: list[EntryLike] = []
        self.result: tuple[Sequence[EntryLike], bool, bool, int] = ([], False, False, 0)
        self.own: list[int] | None = None  # ``seqs`` sorted, once ``counted`` needs them

    def begin(self) -> None:
        """Take the related entries before the first seq from the group: every one that came
        so far (the caller begins the window before any related entry at or past it)."""
        group = self.group
        self.before.extend(group.recent)
        self.skipped = group.count - len(group.recent)
        self.begun = True

    def add(self, e: EntryLike, in_group: bool) -> None:
        seq = e.seq
        if seq != self.seq:
            self._flush()
            self.seq = seq
        named = seq != self.named and seq in self.seqs
        if named:
            self.named = seq
        if in_group:
            self.in_group.append(e)
        elif named:
            self.extras.append(e)

    def passes(self, top: int) -> bool:
        """Whether what this window (not complete) takes from entries of seqs past the last
        one fed up to ``top`` comes to numbers ``_Windows.bulk`` works out: it begins past
        them, or it has more than ``_MAX_LINES`` of its own entries (so it shows only its
        first and last ones, ``elided``) and ends past them."""
        if not self.begun:
            return self.low_seq > top
        return self.mine_count > _MAX_LINES and self.high_seq > top

    def counted(self, batch: list[EntryLike], first: int) -> None:
        """Take the entries of ``batch`` (consecutive seqs from ``first``) as ``add`` would,
        one by one, for a window that ``passes`` them: how many of its own they are, and the
        last ``_HALF`` of those."""
        own = self.own
        if own is None:
            self.own = own = sorted(self.seqs)
        low = bisect.bisect_left(own, first)
        high = bisect.bisect_left(own, first + len(batch), low)
        if low == high:
            return
        self._flush()
        self.seq = None
        self.named = own[high - 1]
        self.middle_count += high - low
        self.mine_count += high - low
        self.mine_last.extend(batch[seq - first] for seq in own[max(low, high - _HALF) : high])

    def _flush(self) -> None:
        seq = self.seq
        if seq is None:
            return
        for e in (*self.in_group, *self.extras):
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
            for e in (*self.in_group, *self.extras):
                self.mine_count += 1
                if len(self.mine) < _MAX_LINES:
                    self.mine.append(e)
                else:
                    self.mine_last.append(e)
        self.in_group, self.extras = [], []

    def finish(self) -> None:
        self._flush()
        self.seq = None
        if self.named is None:
            return
        before, after = self.skipped > 0, self.more_after
        if len(self.before) + self.middle_count + len(self.after) > _MAX_LINES:
            if self.mine_count <= _MAX_LINES:
                self.result = (self.mine, before, after, 0)
            else:  # as ``elided`` prints every one of them
                last = [*self.mine, *self.mine_last][-_HALF:]
                left_out = self.mine_count - 2 * _HALF
                self.result = ([*self.mine[:_HALF], *last], before, after, left_out)
        else:
            self.result = ([*self.before, *self.middle, *self.after], before, after, 0)


class _Group:
    """The related entries of one (client, job) (job None: the client's status reads) as far
    as the windows of its violations need them: the last ``_CONTEXT`` and how many came, for
    the windows not begun (``pending``, by first seq, the latest first), and the windows
    begun and not complete (``active``)."""

    __slots__ = ("active", "count", "done", "pending", "recent")

    def __init__(self) -> None:
        self.recent: collections.deque[EntryLike] = collections.deque(maxlen=_CONTEXT)
        self.count = 0
        # (a window begun by an entry of another group stays here, skipped when reached)
        self.pending: list[_Window] = []
        self.active: list[_Window] = []
        self.done = 0  # complete windows still in ``active`` (dropped when half are)


def _LOW_SEQ(window: _Window) -> int:
    return window.low_seq


class _Windows:
    """The windows of a run's violations shown, fed the run's entries in order. A window is
    fed only from its first seq on (before that its group keeps what it needs) and let go
    once complete (``_Window.more_after``: nothing later can change it), so each entry costs
    what the windows open at its seq cost, not every window of its group."""

    def __init__(self) -> None:
        self.windows: dict[Violation, _Window] = {}
        self.by_group: dict[tuple[str, str | None], _Group] = {}
        self.by_seq: dict[int, list[_Window]] = {}  # the windows of few seqs, by each of them
        self.wide: list[_Window] = []  # the others, each looked at by its range of seqs
        self.live = 0  # the windows not yet complete
        self.ready = False  # whether ``pending`` are sorted
        self.blocker: _Window | None = None  # the last window that kept ``bulk`` from a list
        self.crowded_until = 0  # below this seq too many groups wait for ``bulk``
        # (end, order, window): the windows by the seq past which nothing they show comes
        self.ends: list[tuple[int, int, _Window]] = []

    def want(self, v: Violation, end: int | None = None) -> None:
        """Draw the window of ``v``; ``end``: the seq past which the run holds nothing it
        shows, if known (it is complete once an entry past that comes)."""
        if v in self.windows:
            return
        group = self.by_group.get((v.client, v.job_id))
        if group is None:
            self.by_group[(v.client, v.job_id)] = group = _Group()
        window = _Window(v, group)
        self.windows[v] = window
        self.live += 1
        group.pending.append(window)
        if len(window.seqs) > _WIDE:
            self.wide.append(window)
        else:
            for seq in window.seqs:
                self.by_seq.setdefault(seq, []).append(window)
        if end is not None:
            heapq.heappush(self.ends, (end, len(self.windows), window))

    def add(self, e: EntryLike) -> int:
        """Feed ``e`` to the windows it belongs to; how many of them it completed."""
        if not self.ready:
            for group in self.by_group.values():
                group.pending.sort(key=_LOW_SEQ, reverse=True)
            self.ready = True
        done = 0
        ends = self.ends
        if ends and ends[0][0] < e.seq:  # nothing these windows show comes from here on
            while ends and ends[0][0] < e.seq:
                window = heapq.heappop(ends)[2]
                if not window.complete:
                    window.complete = True
                    window.group.done += 1
                    done += 1
        fed = self._feed(e)
        for window in fed:
            if window.more_after and not window.complete:
                window.complete = True
                window.group.done += 1
                done += 1
        self.live -= done
        return done

    def _feed(self, e: EntryLike) -> list[_Window]:
        fed: list[_Window] = []
        if e.kind != "webhook" and e.kind != "unknown":
            if e.job_id is not None:
                group = self.by_group.get((e.client, e.job_id))
                if group is not None:
                    _feed_group(group, e, fed)
            if e.kind == "status":
                group = self.by_group.get((e.client, None))
                if group is not None:
                    _feed_group(group, e, fed)
        seq = e.seq
        for window in self.by_seq.get(seq, ()):
            if window not in fed and not window.complete:
                _feed_named(window, e, fed)
        for window in self.wide:
            if (
                window.low_seq <= seq <= window.high_seq
                and seq in window.seqs
                and window not in fed
                and not window.complete
            ):
                _feed_named(window, e, fed)
        return fed

    def bulk(self, batch: list[EntryLike]) -> bool:
        """Feed the entries of ``batch`` (consecutive seqs, the first right after the last
        entry fed, no admin entry) at once, if what they change comes to a few numbers; else
        False, nothing fed. So it is where every window not complete either has not begun and
        begins past ``batch`` (what its group takes from it is its last ``_CONTEXT`` related
        entries and their count; when few groups wait so), or has begun and counts its own
        entries past its first ``_MAX_LINES`` (what it takes is how many of them ``batch``
        holds and the last ``_HALF``, found by seq), and ends past ``batch``."""
        if not self.ready:
            return False
        first, top = batch[0].seq, batch[-1].seq
        if first < self.crowded_until:
            return False
        ends = self.ends
        while ends and ends[0][2].complete:
            heapq.heappop(ends)
        if ends and ends[0][0] < top:
            return False
        blocker = self.blocker
        if blocker is not None and not blocker.complete and not blocker.passes(top):
            return False
        waiting: dict[tuple[str, str | None], _Group] = {}
        counting: list[_Window] = []
        for window in self.windows.values():
            if window.complete:
                continue
            if not window.passes(top):
                self.blocker = window
                return False
            if window.begun:
                counting.append(window)
            else:
                waiting[(window.client, window.job_id)] = window.group
        self.blocker = None
        if len(waiting) > _WAITING:
            self.crowded_until = min(
                w.low_seq for w in self.windows.values() if not w.begun and not w.complete
            )
            return False
        for (client, job_id), group in waiting.items():
            if job_id is None:
                related = [e for e in batch if e.client == client and e.kind == "status"]
            else:
                related = [
                    e
                    for e in batch
                    if e.job_id == job_id
                    and e.client == client
                    and e.kind != "webhook"
                    and e.kind != "unknown"
                ]
            if related:
                group.recent.extend(related[-_CONTEXT:])
                group.count += len(related)
        for window in counting:
            window.counted(batch, first)
        return True

    def end_all(self) -> int:
        """Complete every window (its run is over); how many were not complete."""
        done = 0
        for window in self.windows.values():
            if not window.complete:
                window.complete = True
                done += 1
        self.live -= done
        return done

    def finish(self) -> None:
        for window in self.windows.values():
            window.finish()

    def timeline(self, v: Violation) -> tuple[Sequence[EntryLike], bool, bool, int]:
        """What the timeline of ``v`` prints (``_RunIndex.timeline``)."""
        found = self.windows.get(v)
        return ([], False, False, 0) if found is None else found.result


def _feed_named(window: _Window, e: EntryLike, fed: list[_Window]) -> None:
    """Feed ``e``, one of the entries ``window``'s violation names, not of its group."""
    if not window.begun:
        window.begin()
        window.group.active.append(window)
    window.add(e, False)
    fed.append(window)


def _feed_group(group: _Group, e: EntryLike, fed: list[_Window]) -> None:
    """Feed ``e``, related to ``group``, to its windows begun (beginning those whose first
    seq it reaches), then count it among the group's entries."""
    pending = group.pending
    if pending and pending[-1].low_seq <= e.seq:
        seq = e.seq
        while pending and pending[-1].low_seq <= seq:
            window = pending.pop()
            if not window.begun:
                window.begin()
                group.active.append(window)
    active = group.active
    if group.done and group.done * 2 >= len(active):
        group.active = active = [window for window in active if not window.complete]
        group.done = 0
    for window in active:
        if not window.complete:
            window.add(e, True)
            fed.append(window)
    group.recent.append(e)
    group.count += 1
