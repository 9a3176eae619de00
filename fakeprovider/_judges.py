"""The client invariants judged as one client's entries of a run stream by (pure).

``_rules`` states each invariant as a function of a client's whole list of entries; here each
is a judge that is fed the same entries one at a time, in the same (seq) order, and keeps only
what the rule still needs: per job, per credential, per Retry-After scope or per request body,
a few entries or numbers that do not grow with the number of entries of a job (a job read a
million times costs what a job read twice does), plus the violations found. ``close`` returns
the violations in the order the rule function yields them, so ``check`` gives the same report
whichever way it judges. ``tests/test_judges.py`` holds the two equal on generated journals.

What each keeps, beyond its violations, is in its docstring. Where a later entry can change a
verdict (a webhook, which the journal lists after the requests, a list answer naming a job
the client only asks about later, a submit seen after reads of its job), the judge keeps the
candidates and decides at ``close``.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ._rules import (
    _DATE_FORMS,
    CLIENT_RULES,
    EPSILON,
    SUCCESS_STATUSES,
    Violation,
    _answer,
    _got,
    _headers_at,
    _ok,
    _retrieval,
    _scope,
    _scope_key,
    _scope_kind,
    _unsuccessful,
    describe,
    fmt_time,
    told,
)
from .journal import Entry
from .scenario import TERMINAL_STATUSES

if TYPE_CHECKING:
    from .limits import Limits

__all__ = ["JUDGES", "BoundedStatusRate", "ClientJudge", "Judge", "Unjudgeable"]

#: The run's webhook deliveries by job id (what ``_judge`` hands every client at ``close``).
Hooks = Mapping[str, Sequence[Entry]]


def _seen(e: Entry) -> float:
    at = e.completed_at
    return math.inf if at is None else at


class Judge:
    """One rule over one client's entries: ``add`` each in order, then ``close`` once."""

    __slots__ = ()

    def add(self, e: Entry) -> None:
        raise NotImplementedError

    def close(self, hooks: Hooks) -> list[Violation]:
        raise NotImplementedError


class _ShownJudge(Judge):
    """A rule that, as ``_rules._with_listed`` does, also counts each job a list answer showed
    as an entry of that job (with the status shown), for the jobs the client knows: ``add``
    calls ``shown(e, job, status)`` for the entry itself and for each job of a list answer,
    and ``close`` keeps only the known jobs (those of an entry's own ``job_id``)."""

    __slots__ = ("known",)

    def __init__(self) -> None:
        self.known: set[str] = set()

    def add(self, e: Entry) -> None:
        if e.job_id is not None:
            self.known.add(e.job_id)
        listed = e.listed
        if listed and e.kind == "list":
            for job_id, status in listed:
                self.shown(e, job_id, status)
        else:
            self.shown(e, e.job_id, e.job_status)

    def shown(self, e: Entry, job_id: str | None, status: str | None) -> None:
        raise NotImplementedError


# -- no_overlap -------------------------------------------------------------------------------


class NoOverlap(Judge):
    """Per job, the earlier status reads that could still be pending at a later read: a stack
    of suffix maxima of their response starts (one entry when responses start in order)."""

    __slots__ = ("jobs",)

    def __init__(self, limits: Limits) -> None:
        # job -> (stack of -start, stack of reads, violations)
        self.jobs: dict[str, tuple[list[float], list[Entry], list[Violation]]] = {}

    def add(self, e: Entry) -> None:
        job_id = e.job_id
        if e.kind != "status" or job_id is None:
            return
        state = self.jobs.get(job_id)
        if state is None:
            self.jobs[job_id] = state = ([], [], [])
        negated, reads, found = state
        above = bisect.bisect_left(negated, -e.received_at)
        if above:
            prev = reads[above - 1]
            found.append(
                Violation(
                    "no_overlap",
                    job_id,
                    (prev.seq, e.seq),
                    f"status read #{e.seq} for job {job_id} arrived at"
                    f" {fmt_time(e.received_at)} while read #{prev.seq} (received"
                    f" {fmt_time(prev.received_at)}) had not started its response",
                    e.client,
                )
            )
        value = _headers_at(e) - EPSILON
        while negated and -negated[-1] <= value:
            negated.pop()
            reads.pop()
        negated.append(-value)
        reads.append(e)

    def close(self, hooks: Hooks) -> list[Violation]:
        return [v for _, _, found in self.jobs.values() for v in found]


# -- single_retrieval -------------------------------------------------------------------------


class _Retrievals:
    __slots__ = ("count", "extra", "fetched", "saw", "saw_status")

    def __init__(self) -> None:
        self.fetched: list[Entry] = []  # the first ones, as many as the limits look at
        self.count = 0
        self.extra: Entry | None = None  # the first retrieval past the allowed number
        self.saw: Entry | None = None  # the first entry that showed the job succeeded
        self.saw_status: str | None = None


class SingleRetrieval(_ShownJudge):
    """Per job: the first ``retrievals`` (or one) retrievals, the first one too many, and the
    first entry that showed the job succeeded."""

    __slots__ = ("allowed", "jobs", "keep", "limits")

    def __init__(self, limits: Limits) -> None:
        super().__init__()
        self.limits = limits
        self.allowed = 1 if limits.retrievals is None else limits.retrievals
        self.keep = max(self.allowed, limits.retrievals or 0)
        self.jobs: dict[str, _Retrievals] = {}

    def shown(self, e: Entry, job_id: str | None, status: str | None) -> None:
        if job_id is None:
            return
        state = self.jobs.get(job_id)
        if state is None:
            self.jobs[job_id] = state = _Retrievals()
        if state.saw is None and status in SUCCESS_STATUSES:
            state.saw, state.saw_status = e, status
        if not _retrieval(e):
            return
        state.count += 1
        if len(state.fetched) < self.keep:
            state.fetched.append(e)
        if state.extra is None and state.count == self.allowed + 1:
            state.extra = e

    def close(self, hooks: Hooks) -> list[Violation]:
        found: list[Violation] = []
        allowed, wanted = self.allowed, self.limits.retrievals
        for job_id, state in self.jobs.items():
            if job_id not in self.known:
                continue
            fetched, extra = state.fetched, state.extra
            if extra is not None:
                head = f"{describe(extra)} at {fmt_time(extra.received_at)} {_got(extra)}"
                if allowed == 0:
                    message = f"{head}, but no retrieval was expected"
                else:
                    first = fetched[0]
                    times = "once" if allowed == 1 else f"{allowed} times"
                    message = (
                        f"{head} again; #{first.seq} had already retrieved it"
                        f" at {fmt_time(first.received_at)} and it may be fetched {times}"
                    )
                seqs = (*(e.seq for e in fetched[:allowed]), extra.seq)
                found.append(Violation("single_retrieval", job_id, seqs, message, extra.client))
            elif wanted is not None and state.count < wanted and state.saw is not None:
                saw = state.saw
                found.append(
                    Violation(
                        "single_retrieval",
                        job_id,
                        (saw.seq, *(e.seq for e in fetched)),
                        f"job {job_id} was shown {state.saw_status!r} by #{saw.seq} at"
                        f" {fmt_time(_seen(saw))} but its content was retrieved"
                        f" {state.count} time(s); expected {wanted}",
                        saw.client,
                    )
                )
        return found


# -- no_premature_retrieval -------------------------------------------------------------------


class _Premature:
    __slots__ = ("candidates", "last_seq", "last_status", "pending", "pending_seq", "success")

    def __init__(self) -> None:
        self.success = math.inf  # the earliest an entry before the current seq showed success
        self.last_seq: int | None = None  # the last entry before the current seq with a status
        self.last_status: str | None = None
        self.pending: list[tuple[str | None, float]] = []  # the current seq's (status, seen)
        self.pending_seq = 0
        # the fetches premature by the entries, each received before all earlier ones
        self.candidates: list[tuple[float, Violation]] = []


class NoPrematureRetrieval(_ShownJudge):
    """Per job: the earliest success shown so far, the last status shown, and the content
    fetches that came before success was shown, each earlier than all before it (one when
    requests are received in order): a webhook (known at ``close``) may still excuse them."""

    __slots__ = ("jobs",)

    def __init__(self, limits: Limits) -> None:
        super().__init__()
        self.jobs: dict[str, _Premature] = {}

    def shown(self, e: Entry, job_id: str | None, status: str | None) -> None:
        if job_id is None:
            return
        state = self.jobs.get(job_id)
        if state is None:
            self.jobs[job_id] = state = _Premature()
        if state.pending and state.pending_seq != e.seq:
            for pending_status, seen in state.pending:
                if pending_status in SUCCESS_STATUSES and seen < state.success:
                    state.success = seen
                if pending_status is not None:
                    state.last_status, state.last_seq = pending_status, state.pending_seq
            state.pending = []
        state.pending.append((status, _seen(e)))
        state.pending_seq = e.seq
        if e.kind != "content" or state.success <= e.received_at + EPSILON:
            return
        candidates = state.candidates
        if candidates and candidates[-1][0] <= e.received_at:
            return  # excused whenever the earlier candidate is: never the one reported
        last = (
            f"the last status it had seen was {state.last_status!r} (#{state.last_seq})"
            if state.last_status is not None
            else "it had seen no status of the job"
        )
        candidates.append(
            (
                e.received_at,
                Violation(
                    "no_premature_retrieval",
                    job_id,
                    (*((state.last_seq,) if state.last_seq is not None else ()), e.seq),
                    f"content fetch #{e.seq} for job {job_id} at {fmt_time(e.received_at)}"
                    f" came before the client could have seen the job succeed; {last}",
                    e.client,
                ),
            )
        )

    def close(self, hooks: Hooks) -> list[Violation]:
        found: list[Violation] = []
        for job_id, state in self.jobs.items():
            if job_id not in self.known or not state.candidates:
                continue
            told_at = min(
                (
                    w.received_at
                    for w in hooks.get(job_id, ())
                    if told(w) and (w.event or "").removeprefix("job.") in SUCCESS_STATUSES
                ),
                default=math.inf,
            )
            for received_at, violation in state.candidates:
                if not told_at <= received_at:
                    found.append(violation)
                    break
        return found


# -- bounded_retries --------------------------------------------------------------------------


class BoundedRetries(Judge):
    """Per job and route (submits: per request body), the current run of failed attempts
    (at most ``max_retries`` + 1 of them) until the rule is broken there."""

    __slots__ = ("found", "groups", "limits")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # (kind, key) -> the consecutive failures so far; None once reported
        self.groups: dict[tuple[str, str], list[Entry] | None] = {}
        self.found: dict[tuple[str, str], Violation] = {}

    def add(self, e: Entry) -> None:
        key = e.request_digest if e.kind == "submit" else e.job_id
        if key is None:
            return
        group = (e.kind, key)
        failures = self.groups.get(group, [])
        if failures is None:
            return
        if len(failures) > self.limits.max_retries:
            self.found[group] = Violation(
                "bounded_retries",
                e.job_id if e.kind != "submit" else None,
                (*(f.seq for f in failures), e.seq),
                f"{describe(e)} at {fmt_time(e.received_at)} was retry"
                f" {len(failures)} after {len(failures)} consecutive failed attempts"
                f" (#{failures[0].seq} to #{failures[-1].seq}); max_retries is"
                f" {self.limits.max_retries}",
                e.client,
            )
            self.groups[group] = None
            return
        if _unsuccessful(e):
            failures.append(e)
            self.groups[group] = failures
        else:
            self.groups[group] = []

    def close(self, hooks: Hooks) -> list[Violation]:
        return [self.found[group] for group in self.groups if group in self.found]


# -- honours_retry_after ----------------------------------------------------------------------


class HonoursRetryAfter(Judge):
    """Per Retry-After scope, the answers with a Retry-After still waiting for the first later
    request in their scope sent after their headers arrived (a heap by that moment): those in
    flight, as it were."""

    __slots__ = ("count", "found", "kinds", "limits", "pending")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.count = 0
        self.kinds: list[str] = []  # the scope kinds of the sources so far
        # scope group -> heap of (headers at, index, source)
        self.pending: dict[tuple[object, ...], list[tuple[float, int, Entry]]] = {}
        self.found: list[tuple[int, Violation]] = []

    def add(self, e: Entry) -> None:
        index = self.count
        self.count = index + 1
        if self.pending:
            for kind in self.kinds:
                key = _scope_key(e, kind)
                if key is None:
                    continue
                heap = self.pending.get(key)
                if heap is None:
                    continue
                while heap and heap[0][0] <= e.received_at:
                    _, at, source = heapq.heappop(heap)
                    self._judge(at, source, e)
                if not heap:
                    del self.pending[key]
        record = e.retry_after
        if record is not None and record.not_before is not None:
            kind = _scope_kind(e, _scope(e, self.limits))
            if kind not in self.kinds:
                self.kinds.append(kind)
            key = _scope_key(e, kind)
            assert key is not None  # a source is in its own scope
            heapq.heappush(self.pending.setdefault(key, []), (_headers_at(e), index, e))

    def _judge(self, index: int, source: Entry, later: Entry) -> None:
        record = source.retry_after
        assert record is not None  # sources have one
        not_before = record.not_before
        assert not_before is not None  # sources have one
        slack = self.limits.date_slack if record.form in _DATE_FORMS else EPSILON
        if later.received_at < not_before - slack:
            scope = _scope(source, self.limits)
            early = not_before - later.received_at
            self.found.append(
                (
                    index,
                    Violation(
                        "honours_retry_after",
                        later.job_id if scope == "job" else source.job_id,
                        (source.seq, later.seq),
                        f"{describe(later)} at {fmt_time(later.received_at)} came"
                        f" {fmt_time(early)} before the Retry-After {record.raw!r} of"
                        f" #{source.seq} ({_answer(source)}, {scope} scope) allowed it at"
                        f" {fmt_time(not_before)}",
                        later.client,
                    ),
                )
            )

    def close(self, hooks: Hooks) -> list[Violation]:
        self.found.sort(key=lambda item: item[0])
        return [v for _, v in self.found]


# -- honours_poll_after -----------------------------------------------------------------------


class HonoursPollAfter(Judge):
    """Per job, the last submit or status read, and the polls that came too soon after it,
    each with the interval in which a webhook (known at ``close``) would have prompted it."""

    __slots__ = ("jobs", "limits")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # job -> [previous, [(answered at, received at, violation)]]
        self.jobs: dict[str, tuple[list[Entry], list[tuple[float, float, Violation]]]] = {}

    def add(self, e: Entry) -> None:
        job_id = e.job_id
        if job_id is None:
            return
        state = self.jobs.get(job_id)
        if state is None:
            self.jobs[job_id] = state = ([], [])
        kind = e.kind
        if kind != "submit" and kind != "status":
            return
        last, found = state
        if kind == "status" and last:
            previous = last[0]
            answered = _seen(previous)
            if (
                previous.poll_after is not None
                and _ok(previous)
                and previous.job_status not in TERMINAL_STATUSES
                and e.received_at >= answered
            ):
                gap = e.received_at - answered
                tolerance = self.limits.poll_tolerance
                if gap < previous.poll_after * (1 - tolerance) - EPSILON:
                    found.append(
                        (
                            answered,
                            e.received_at,
                            Violation(
                                "honours_poll_after",
                                job_id,
                                (previous.seq, e.seq),
                                f"status read #{e.seq} for job {job_id} at"
                                f" {fmt_time(e.received_at)} came {fmt_time(gap)} after"
                                f" #{previous.seq} answered, sooner than its poll hint of"
                                f" {fmt_time(previous.poll_after)} (less {tolerance:.0%}"
                                " tolerance)",
                                e.client,
                            ),
                        )
                    )
        if last:
            last[0] = e
        else:
            last.append(e)

    def close(self, hooks: Hooks) -> list[Violation]:
        out: list[Violation] = []
        for job_id, (_, found) in self.jobs.items():
            if not found:
                continue
            times = sorted(w.received_at for w in hooks.get(job_id, ()) if told(w))
            for answered, received, violation in found:
                after = bisect.bisect_left(times, answered)
                if not (after < len(times) and times[after] <= received):
                    out.append(violation)
        return out


# -- stops_at_terminal ------------------------------------------------------------------------


class _Ended:
    __slots__ = ("at", "first", "found")

    def __init__(self) -> None:
        self.first: Entry | None = None  # the entry that first showed the client the job ended
        self.at = math.inf  # when that answer reached the client
        self.found: Violation | None = None  # the first status read after it


class StopsAtTerminal(Judge):
    """Per job, the entry that first showed the client the job ended (so far) and the first
    status read after it."""

    __slots__ = ("jobs",)

    def __init__(self, limits: Limits) -> None:
        self.jobs: dict[str, _Ended] = {}

    def add(self, e: Entry) -> None:
        job_id = e.job_id
        if job_id is None:
            return
        state = self.jobs.get(job_id)
        if state is None:
            self.jobs[job_id] = state = _Ended()
        first = state.first
        if e.job_status in TERMINAL_STATUSES and (first is None or _seen(e) < state.at):
            state.first, state.at, state.found = e, _seen(e), None
            return
        if (
            first is None
            or state.found is not None
            or e.kind != "status"
            or e.seq <= first.seq
            or e.received_at < state.at
        ):
            return
        state.found = Violation(
            "stops_at_terminal",
            job_id,
            (first.seq, e.seq),
            f"status read #{e.seq} for job {job_id} at {fmt_time(e.received_at)} came after"
            f" #{first.seq} had shown the job {first.job_status!r} at"
            f" {fmt_time(state.at)}",
            e.client,
        )

    def close(self, hooks: Hooks) -> list[Violation]:
        return [state.found for state in self.jobs.values() if state.found is not None]


# -- no_resubmission --------------------------------------------------------------------------


class NoResubmission(Judge):
    """Per job, the earliest moment an answer (or a list) showed the client it ended and its
    last status read, both over the entries before the current seq; per request body, its
    last submit and the jobs it made that the client has not yet seen end, each with the first
    submit that made it and the first one under another Idempotency-Key or credential."""

    __slots__ = ("ended", "found", "last", "open_jobs", "pending", "pending_seq", "reads")

    def __init__(self, limits: Limits) -> None:
        self.ended: dict[str, float] = {}
        self.reads: dict[str, Entry] = {}
        self.pending: list[tuple[Entry, str, str | None]] = []  # the current seq's entries
        self.pending_seq = 0
        self.last: dict[str | None, Entry] = {}
        self.open_jobs: dict[str | None, dict[str, list[Entry]]] = {}
        self.found: list[Violation] = []

    def _flush(self) -> None:
        ended, reads = self.ended, self.reads
        for e, job_id, status in self.pending:
            if status in TERMINAL_STATUSES:
                seen = _seen(e)
                if seen < ended.get(job_id, math.inf) or job_id not in ended:
                    ended[job_id] = seen
            if e.kind == "status":
                reads[job_id] = e
        self.pending = []

    def add(self, e: Entry) -> None:
        if self.pending and self.pending_seq != e.seq:
            self._flush()
        self.pending_seq = e.seq
        listed = e.listed
        if listed and e.kind == "list":
            self.pending.extend((e, job_id, status) for job_id, status in listed)
        elif e.job_id is not None:
            self.pending.append((e, e.job_id, e.job_status))
        if e.kind != "submit":
            return
        digest = e.request_digest
        candidates = self.open_jobs.get(digest)
        if candidates is None:
            self.open_jobs[digest] = candidates = {}
        self._judge(e, self.last.get(digest), candidates)
        self.last[digest] = e
        if e.job_id is not None:
            makers = candidates.get(e.job_id)
            if makers is None:
                candidates[e.job_id] = [e]
            elif len(makers) == 1 and _key(makers[0]) != _key(e):
                makers.append(e)  # the first submit under another key: an origin for some

    def _judge(self, s: Entry, previous: Entry | None, candidates: dict[str, list[Entry]]) -> None:
        if previous is not None and previous.failed and previous.idempotency_key is not None:
            failed = previous
            if s.idempotency_key != failed.idempotency_key:
                self.found.append(
                    Violation(
                        "no_resubmission",
                        s.job_id,
                        (failed.seq, s.seq),
                        f"submit #{s.seq} at {fmt_time(s.received_at)} retried failed submit"
                        f" #{failed.seq} ({_answer(failed)}) without its Idempotency-Key"
                        f" {failed.idempotency_key!r}",
                        s.client,
                    )
                )
                return
        for job_id in list(candidates):
            if self.ended.get(job_id, math.inf) <= s.received_at:
                del candidates[job_id]  # the client had seen the job end
                continue
            if job_id == s.job_id:
                continue
            # a retry under the same Idempotency-Key cannot make a second job
            origin = next((p for p in candidates[job_id] if not _same_key(p, s)), None)
            if origin is None:
                continue
            read = self.reads.get(job_id)
            made = f"created job {s.job_id}" if s.job_id is not None else "was sent"
            if read is not None and read.failed:
                message = (
                    f"submit #{s.seq} at {fmt_time(s.received_at)} {made} for the same request"
                    f" as job {job_id} after status read #{read.seq} of that job failed"
                    f" ({_answer(read)}); a failed status read does not mean the job failed"
                )
                seqs: tuple[int, ...] = (origin.seq, read.seq, s.seq)
            else:
                message = (
                    f"submit #{s.seq} at {fmt_time(s.received_at)} {made} for the same request"
                    f" as job {job_id} (submit #{origin.seq}), which the client had not seen end"
                )
                seqs = (origin.seq, s.seq)
            self.found.append(Violation("no_resubmission", job_id, seqs, message, s.client))
            break

    def close(self, hooks: Hooks) -> list[Violation]:
        return self.found


def _key(e: Entry) -> tuple[str | None, str | None]:
    return (e.idempotency_key, e.credential)


def _same_key(earlier: Entry, later: Entry) -> bool:
    return later.idempotency_key is not None and _key(earlier) == _key(later)


# -- no_retry_on_auth_error -------------------------------------------------------------------


class NoRetryOnAuthError(Judge):
    """Per credential, the 401/403 answers still waiting for a later request with it sent
    after their headers arrived (a heap by that moment), until the earliest one is retried."""

    __slots__ = ("count", "pending", "retried")

    def __init__(self, limits: Limits) -> None:
        self.count = 0
        self.pending: dict[str | None, list[tuple[float, int, Entry]]] = {}
        # credential -> (index of the earliest refusal retried, it, the retry)
        self.retried: dict[str | None, tuple[int, Entry, Entry]] = {}

    def add(self, e: Entry) -> None:
        index = self.count
        self.count = index + 1
        credential = e.credential
        heap = self.pending.get(credential)
        if heap:
            best = self.retried.get(credential)
            while heap and heap[0][0] <= e.received_at:
                _, at, refused = heapq.heappop(heap)
                if best is None or at < best[0]:
                    best = (at, refused, e)
            if best is not None:
                self.retried[credential] = best
                # only refusals earlier than the one retried can still be the one reported
                kept = [item for item in heap if item[1] < best[0]]
                if len(kept) < len(heap):
                    heapq.heapify(kept)
                    self.pending[credential] = heap = kept
        if e.status_code in (401, 403) and credential not in self.retried:
            if heap is None:
                self.pending[credential] = heap = []
            heapq.heappush(heap, (_headers_at(e), index, e))

    def close(self, hooks: Hooks) -> list[Violation]:
        found: list[Violation] = []
        for _, refused, later in sorted(self.retried.values(), key=lambda item: item[0]):
            cred = (
                f"credential {refused.credential}"
                if refused.credential is not None
                else "no credentials"
            )
            found.append(
                Violation(
                    "no_retry_on_auth_error",
                    later.job_id,
                    (refused.seq, later.seq),
                    f"{describe(later)} at {fmt_time(later.received_at)} was sent with the same"
                    f" {cred} after {describe(refused)} was refused with"
                    f" {refused.status_code} at {fmt_time(_headers_at(refused))}",
                    later.client,
                )
            )
        return found


# -- deadline ---------------------------------------------------------------------------------


class _Deadline:
    __slots__ = ("found", "maxima", "start", "submitted")

    def __init__(self, start: Entry) -> None:
        self.start = start  # the job's first submit, or its first entry until one comes
        self.submitted = start.kind == "submit"
        # until the first submit: the entries received later than every one before them (the
        # first to come too late for any start is one of them)
        self.maxima: list[Entry] = []
        self.found: Violation | None = None


class Deadline(Judge):
    """Per job, its start (the first submit) and the first request past the deadline; for a
    job whose first entry is not its submit, also, until a submit comes, the entries received
    later than all before them (every entry, when the client never submits it)."""

    __slots__ = ("jobs", "limits")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.jobs: dict[str, _Deadline] = {}

    def add(self, e: Entry) -> None:
        job_id = e.job_id
        deadline = self.limits.deadline
        if job_id is None or deadline is None:
            return
        state = self.jobs.get(job_id)
        if state is None:
            self.jobs[job_id] = state = _Deadline(e)
        elif not state.submitted and e.kind == "submit":
            state.start, state.submitted, state.found = e, True, None
            limit = e.received_at + deadline + self.limits.deadline_slack
            late = next((m for m in state.maxima if m.received_at > limit + EPSILON), None)
            state.maxima = []
            if late is not None:
                state.found = self._violation(state.start, late)
        if not state.submitted:
            maxima = state.maxima
            if not maxima or e.received_at > maxima[-1].received_at:
                maxima.append(e)
        if state.found is None:
            start = state.start
            if e.received_at > start.received_at + deadline + self.limits.deadline_slack + EPSILON:
                state.found = self._violation(start, e)

    def _violation(self, start: Entry, e: Entry) -> Violation:
        deadline = self.limits.deadline
        assert deadline is not None  # only judged with one
        return Violation(
            "deadline",
            e.job_id,
            (start.seq, e.seq),
            f"{describe(e)} at {fmt_time(e.received_at)} came"
            f" {fmt_time(e.received_at - start.received_at - deadline)} after the"
            f" deadline of {fmt_time(deadline)} from #{start.seq} at"
            f" {fmt_time(start.received_at)} (slack {fmt_time(self.limits.deadline_slack)})",
            e.client,
        )

    def close(self, hooks: Hooks) -> list[Violation]:
        return [state.found for state in self.jobs.values() if state.found is not None]


# -- status_rate ------------------------------------------------------------------------------


class StatusRate(Judge):
    """The client's status reads, all of them (``check`` of a list of entries); nothing when
    no ``status_rate`` budget is set. ``BoundedStatusRate`` keeps fewer."""

    __slots__ = ("limits", "reads")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.reads: list[Entry] = []

    def add(self, e: Entry) -> None:
        if e.kind == "status" and self.limits.status_rate is not None:
            self.reads.append(e)

    def close(self, hooks: Hooks) -> list[Violation]:
        return list(_RULES["status_rate"](self.reads, self.limits))


class Unjudgeable(Exception):
    """A judge that keeps little cannot judge these entries exactly (their clock readings go
    back too far): judge the journal as a whole instead."""


class BoundedStatusRate(Judge):
    """The status reads received within two windows of the latest (the rule is reported once,
    at the first breach, so until then at most about twice the budget), sorted by when they
    were received. Raises ``Unjudgeable`` for a read whose window reaches back past the
    reads already let go (a clock reading more than a window older than the latest)."""

    __slots__ = ("allowed", "count", "done", "dropped", "limits", "times", "window")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.window = limits.status_rate_window
        rate = limits.status_rate
        self.allowed = 0 if rate is None else max(1, math.floor(rate * self.window + EPSILON))
        self.times: list[tuple[float, int, Entry]] = []  # (received at, arrival, read)
        self.count = 0
        self.dropped = -math.inf  # the latest reading among the reads let go
        self.done: Violation | None = None

    def add(self, e: Entry) -> None:
        if e.kind != "status" or self.limits.status_rate is None or self.done is not None:
            return
        index = self.count
        self.count = index + 1
        start = e.received_at - self.window
        if start < self.dropped:
            raise Unjudgeable(f"status read #{e.seq} reaches back past the reads let go")
        times = self.times
        item = (e.received_at, index, e)
        if not times or times[-1][0] <= e.received_at:
            times.append(item)
        else:
            bisect.insort(times, item, key=_FIRST)
        above = bisect.bisect_right(times, start, key=_FIRST)
        if len(times) - above > self.allowed:
            inside = sorted(times[above:], key=_SECOND)
            first = inside[0][2]
            self.done = Violation(
                "status_rate",
                None,
                tuple(r.seq for _, _, r in inside),
                f"status read #{e.seq} at {fmt_time(e.received_at)} was read {len(inside)}"
                f" within {fmt_time(self.window)} (since #{first.seq} at"
                f" {fmt_time(first.received_at)}); the budget of"
                f" {self.limits.status_rate:g} per second allows {self.allowed}",
                e.client,
            )
            self.times = []
            return
        # let go of the reads more than two windows older than this one
        keep = bisect.bisect_right(times, start - self.window, key=_FIRST)
        if keep > 64 and keep * 2 > len(times):
            self.dropped = max(self.dropped, times[keep - 1][0])
            del times[:keep]

    def close(self, hooks: Hooks) -> list[Violation]:
        return [] if self.done is None else [self.done]


def _FIRST(item: tuple[float, int, Entry]) -> float:
    return item[0]


def _SECOND(item: tuple[float, int, Entry]) -> int:
    return item[1]


_RULES = dict(CLIENT_RULES)

#: The judge of each per-client rule, in the order of ``CLIENT_RULES``.
JUDGES: tuple[tuple[str, Callable[[Limits], Judge]], ...] = (
    ("no_overlap", NoOverlap),
    ("single_retrieval", SingleRetrieval),
    ("no_premature_retrieval", NoPrematureRetrieval),
    ("bounded_retries", BoundedRetries),
    ("honours_retry_after", HonoursRetryAfter),
    ("honours_poll_after", HonoursPollAfter),
    ("stops_at_terminal", StopsAtTerminal),
    ("no_resubmission", NoResubmission),
    ("no_retry_on_auth_error", NoRetryOnAuthError),
    ("deadline", Deadline),
    ("status_rate", StatusRate),
)


class ClientJudge:
    """Every per-client rule over one client's entries of one run, fed in order; with
    ``bounded``, ``status_rate`` by ``BoundedStatusRate`` (which may raise ``Unjudgeable``)."""

    __slots__ = ("judges",)

    def __init__(self, limits: Limits, *, bounded: bool = False) -> None:
        self.judges = [make(limits) for _, make in JUDGES]
        if bounded:
            self.judges[-1] = BoundedStatusRate(limits)

    def add(self, e: Entry) -> None:
        for judge in self.judges:
            judge.add(e)

    def extend(self, entries: Iterable[Entry]) -> None:
        for e in entries:
            self.add(e)

    def close(self, hooks: Hooks) -> list[Violation]:
        """The violations, rule by rule, each rule's in the order its function yields them."""
        return [v for judge in self.judges for v in judge.close(hooks)]
