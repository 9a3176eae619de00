"""The engine: the state machine that plays a scenario, deterministic and without I/O.

``Engine.handle(request, now)`` takes a ``Request`` and a clock reading and returns a ``Reply``
(the status and job to answer with, after what delay, or that the connection must drop) and
records a journal entry. Same scenario + seed + requests + clock readings = same replies and
journal. Adapters (the ASGI app, the in-process transport) complete the entry once the response
is sent. The engine holds state and decisions only: the words it answers with (refusals, a
job's message) are in ``messages``, the ``Retry-After`` writing and reading in ``http``, and how
a reply looks on the wire is the dialects'.
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import heapq
import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .http import read_retry_after, retry_after_header
from .jobstore import Job, JobStore, MemoryJobStore
from .journal import Entry, Journal, RetryAfterRecord
from .messages import (
    JobView,
    Refusal,
    Reply,
    Request,
    StateChange,
    credential_fingerprint,
    default_job_id,
    fast_change,
    fast_reply,
    fast_view,
    job_message,
    request_digest,
    scripted_error,
    video_bytes,
)
from .scenario import TERMINAL_STATUSES, Fault, JobError, JobSpec, Result, RetryAfter, Scenario

__all__ = ["Engine"]


#: Every request of a client carries the same credential, and a status shows one of a few
#: messages: each is worked out once, not per request.
_fingerprint = functools.lru_cache(maxsize=4096)(credential_fingerprint)
_job_message = functools.lru_cache(maxsize=256)(job_message)


def _carried(spec: JobSpec) -> tuple[tuple[str, int | None, float | None], ...]:
    """For each step of ``spec``'s timeline, the status, progress and poll hint in force there:
    each holds from the step that sets it until a later step changes it. Computed once per
    spec, so that showing a job costs the same at any step."""
    carried = []
    status: str | None = None
    progress: int | None = None
    hint: float | None = None
    for step in spec.timeline:
        status = step.status if step.status is not None else status
        progress = step.progress if step.progress is not None else progress
        hint = step.poll_after if step.poll_after is not None else hint
        if status is None:  # pragma: no cover - validated timelines start with a status
            raise AssertionError("validated timelines start with a status")
        carried.append((status, progress, hint))
    return tuple(carried)


#: What a view of a job shows at one step: status, progress, poll hint, estimated duration,
#: message, result, error and summary.
_Shown = tuple[
    str,
    int | None,
    float | None,
    float | None,
    str,
    Result | None,
    JobError | None,
    Mapping[str, Any] | None,
]


def _shown(
    spec: JobSpec, step: int, carried: tuple[str, int | None, float | None], cancelled: bool
) -> _Shown:
    """What a view of a job of ``spec`` shows at ``step`` (``carried`` is what holds there):
    status, progress, poll hint, estimated duration, message, result, error and summary.
    Depends on the step alone, so it is worked out once per spec and step."""
    status, progress, hint = carried
    if cancelled:
        status = "cancelled"
    if status == "succeeded":
        progress = 100
    terminal = status in TERMINAL_STATUSES
    poll_after = None if terminal else (hint if hint is not None else spec.poll_after)
    estimate = spec.estimated_duration if spec.estimated_duration is not None else spec.end_time
    return (
        status,
        progress,
        poll_after,
        estimate,
        spec.timeline[step].message or _job_message(status, poll_after),
        spec.result if status in _SUCCESS else None,
        spec.error if status == "failed" else None,
        spec.summary if status == "completed_with_errors" else None,
    )


#: ``Job.due`` of a job with no step on the heap, or whose step there was taken already.
_NEVER = -math.inf
#: ``Job.due`` of a job at the end of its timeline, started: nothing can move it any more.
_ENDED = math.inf
#: How far below a whole token a bucket may be and still count as refilled (float sums).
_TOKEN_SLACK = 1e-9
#: The statuses whose answer may carry the result itself.
_SUCCESS = frozenset({"succeeded", "completed_with_errors"})


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class _FaultState:
    matched: int = 0
    fired: int = 0


class Engine:
    """Plays ``scenario`` on the clock readings it is given.

    ``start`` is the clock reading at which the scenario starts (fault windows count from it);
    ``epoch`` the Unix time of clock reading 0 (for HTTP-dates); ``new_id`` makes job ids;
    ``store`` keeps the jobs (a fresh ``MemoryJobStore`` by default); ``on_change`` is called
    with every state change as it happens. ``changes`` keeps the last ``keep_changes`` state
    changes; with ``follow_changes`` a reader of ``changes_since`` (the webhook dispatcher)
    follows them from the first, and every change is kept until it has read it.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        start: float = 0.0,
        epoch: float = 0.0,
        journal: Journal | None = None,
        new_id: Callable[[int, int], str] = default_job_id,
        poll_hints: bool | Collection[str] = True,
        inline_result: Callable[[Request, JobView], bool] | None = None,
        queue_at_capacity: bool = False,
        store: JobStore | None = None,
        on_change: Callable[[StateChange], None] | None = None,
        keep_changes: int = 64,
        follow_changes: bool = False,
    ) -> None:
        if keep_changes < 0:
            raise ValueError(f"keep_changes must be 0 or more, got {keep_changes!r}")
        self.scenario = scenario
        self.start = start
        self.epoch = epoch
        self.journal = journal if journal is not None else Journal()
        self._new_id = new_id
        #: Which answers show poll hints on the wire: True for every answer about a job, False
        #: for none, else the request kinds whose answers carry one. The journal records a hint
        #: only where it was shown (a client cannot honour a hint it was never shown).
        self.poll_hints = poll_hints
        #: Whether an answer showing a job succeeded carries the result itself (a video inline
        #: in a status read): the journal marks such answers as retrievals.
        self.inline_result = inline_result
        #: What a submit over ``concurrency.max_active_jobs`` gets: a 429 (False), or accepted
        #: and held ``queued`` (``JobView.throttled``) until a slot frees, as Runway does.
        self.queue_at_capacity = queue_at_capacity
        self._waiting: dict[str | None, deque[str]] = {}
        self._jobs: JobStore = store if store is not None else MemoryJobStore()
        self._submits = 0
        self._unmatched_submits = 0
        self._faults = [_FaultState() for _ in scenario.faults]
        self._carried = [_carried(spec) for spec in scenario.jobs]
        #: Per spec and step, the job's status there (``Job.status`` without the walk back).
        self._statuses = [tuple(c[0] for c in carried) for carried in self._carried]
        #: Per spec and step, what a view shows there: (not cancelled, cancelled).
        self._shown = [
            [(_shown(spec, i, c, False), _shown(spec, i, c, True)) for i, c in enumerate(carried)]
            for spec, carried in zip(scenario.jobs, self._carried, strict=True)
        ]
        #: Per spec, what a job of it is at its creation when nothing moves it on there (what
        #: ``_create`` makes without ``_changed``, ``_advance`` and ``_schedule``): what its
        #: view shows, and its first timed step's offset (then ``Job.due`` is its creation plus
        #: that) or None and ``Job.due`` itself (+inf: a one-step timeline; -inf: polls move it
        #: on). None for a spec whose job moves on at once, or shows a result at once (an
        #: answer may carry it inline): ``_make`` creates those.
        self._fresh = [self._fresh_job(i) for i in range(len(scenario.jobs))]
        #: Whether a submit that no fault, credential check or rate limit touches creates its
        #: job in ``_create`` (no concurrency limit to count it against).
        self._creates = scenario.concurrency is None
        #: Per request kind, the faults whose route takes it (index, fault): most requests
        #: meet no fault at all, and skip the scan.
        self._faults_for: dict[str, tuple[tuple[int, Fault, frozenset[int] | None], ...]] = {}
        #: The specs a submit's body is matched against, in order, and the specs that take
        #: unmatched submits in turn.
        self._matchers = [(i, spec.match) for i, spec in enumerate(scenario.jobs) if spec.match]
        self._unmatched = [i for i, spec in enumerate(scenario.jobs) if spec.match is None] or [
            len(scenario.jobs) - 1
        ]
        #: The spec every submit takes when no spec matches bodies and one takes the rest.
        self._only_spec = (
            self._unmatched[0] if not self._matchers and len(self._unmatched) == 1 else None
        )
        self._buckets: dict[str, _Bucket] = {}
        self._token_uses: dict[str, int] = {}
        self._active: dict[str | None, set[str]] = {}
        self._ends: list[tuple[float, str]] = []  # heap of timed terminal instants (concurrency)
        self._due: list[tuple[float, int, str]] = []  # heap of each job's next timed step
        self._due_counter = 0
        webhooks = scenario.webhooks
        #: Whether a job without a ``callback_url`` is quiet: no webhook can ever be sent for it
        #: (the run has webhooks, and they name no ``url``). A quiet job's timed steps wait on
        #: a heap of their own (``_due_quiet``), which ``advance_all(sendable_only=True)`` and
        #: ``next_due(sendable_only=True)`` (the webhook dispatcher's) leave alone, and its
        #: changes are not kept for a reader of ``changes_since`` past the last
        #: ``keep_changes``: a stream of such submits neither wakes the dispatcher nor leaves
        #: it their changes to read and let go.
        self._quiet = webhooks is not None and webhooks.url is None
        self._due_quiet: list[tuple[float, int, str]] = []
        #: How many changes were made up to the last one of a job that is not quiet (with
        #: ``_quiet``), and the number of the first change ``_trim`` has not looked at yet.
        self._sendable_made = 0
        self._quiet_from = 0
        #: Set while ``advance_all`` collects the changes it makes: none is let go meanwhile.
        self._collecting = False
        #: Every job this engine created, by number, and the status each is kept under in
        #: ``_by_status`` (the numbers of the jobs in each status, in order of creation).
        self._by_number: list[Job] = []
        self._listed_as: list[str] = []
        self._by_status: dict[str, _Ordered] = {}
        #: How many of the latest state changes ``changes`` keeps at least (it keeps more for
        #: a reader of ``changes_since``): older ones are let go, so that memory does not grow
        #: with every change a long run makes.
        self.keep_changes = keep_changes
        #: The changes kept, oldest first (None: a quiet job's, let go; see ``changes_since``).
        self._changes: list[StateChange | None] = []
        self._changes_gone = 0  # how many changes were let go (the first kept one's number)
        #: The number of the first change someone still wants (``changes_since``'s reader, from
        #: the first change on with ``follow_changes``; an ``advance_all`` under way): it and
        #: every later one are kept.
        self._wanted: int | None = 0 if follow_changes else None
        self._trim_at = 2 * keep_changes + 64  # trimmed when this many are kept: amortised O(1)
        #: Called with every state change as it happens (None: nobody listens). The provider
        #: replaces it when observers come and go.
        self.on_change = on_change
        #: A webhook dispatcher going to sleep sets the clock reading it wakes at, and what
        #: wakes it: a timed step scheduled before then (a submit's, or one a status read made
        #: due without a state change) calls ``on_early`` once, at once.
        self.wake_at = -math.inf
        self.on_early: Callable[[], None] | None = None
        #: The request kinds that no credential check and no rate limit touches, and those of
        #: them that no fault's route takes either: a well-formed request of an open kind goes
        #: straight to its route.
        limit = scenario.rate_limit
        self._ungated = frozenset(
            kind
            for kind in ("submit", "status", "content", "cancel", "list")
            if scenario.auth is None
            and (limit is None or not ("any" in limit.routes or kind in limit.routes))
        )
        self._open = frozenset(
            kind
            for kind in self._ungated
            if not any(f.route == "any" or f.route == kind for f in scenario.faults)
        )

    # -- public ---------------------------------------------------------------------------

    @property
    def job_count(self) -> int:
        """How many jobs were accepted since the run started (O(1), unlike ``len(jobs)``)."""
        return len(self._jobs)

    @property
    def jobs(self) -> list[JobView]:
        return [self._view(job, job.since) for job in self._jobs]

    @property
    def changes(self) -> list[StateChange]:
        """The latest state changes, oldest first: at least the last ``keep_changes`` of them
        (every one, in a run that made no more), and every one a reader of ``changes_since``
        has not had yet but those of quiet jobs (see ``changes_since``)."""
        return [change for change in self._changes if change is not None]

    @property
    def change_count(self) -> int:
        """How many state changes this engine made (kept or let go)."""
        return self._changes_gone + len(self._changes)

    @property
    def sendable_count(self) -> int:
        """How many state changes this engine made up to the last one a webhook may be sent
        for: ``change_count``, but in a run whose webhooks name no ``url``, where a job without
        a ``callback_url`` can have none sent (a reader of ``changes_since`` that has had this
        many has had every change it can send a webhook for)."""
        return self._sendable_made if self._quiet else self._changes_gone + len(self._changes)

    @property
    def changes_let_go(self) -> int:
        """How many of the first state changes were let go (the number of the first kept)."""
        return self._changes_gone

    def changes_since(self, count: int) -> list[StateChange | None]:
        """The state changes from the ``count``-th on (0: the first this engine made).

        The changes from the ``count``-th on are kept until the next call, so that one reader
        following the changes (``count`` being how many it had: the webhook dispatcher) misses
        none however many are made in between, but for one thing: in a run whose webhooks name
        no ``url``, a change of a job without a ``callback_url`` (no webhook can be sent for
        it) older than the last ``keep_changes`` is None in the list, let go all the same. Raises
        ``ValueError`` for changes let go already.
        """
        gone = self._changes_gone
        made = gone + len(self._changes)
        if not 0 <= count <= made:
            raise ValueError(
                f"count must be between 0 and {made} (the changes made), got {count!r}"
            )
        if count < gone:
            raise ValueError(
                f"changes_since(count={count!r}) asks for state changes let go already: only"
                f" those from the {gone}-th on are kept; read them with changes_since from the"
                f" start, or keep more than keep_changes={self.keep_changes!r}."
            )
        self._wanted = count
        changes = self._changes[count - gone :]
        if len(self._changes) >= 2 * self.keep_changes + 64:
            self._trim()  # what was kept for this reader only may go now
        return changes

    def follow(self) -> None:
        """From now on keep every change not let go yet until a reader of ``changes_since``
        has read it (what ``follow_changes=True`` does from the first change)."""
        gone = self._changes_gone
        self._wanted = gone if self._wanted is None else min(self._wanted, gone)

    def handle(self, request: Request, now: float) -> Reply:
        """Decide the answer to ``request`` received at clock reading ``now``; journal it."""
        journal = self.journal
        seq = journal.next_seq()
        job_id = request.job_id
        job = self._jobs.get(job_id) if job_id else None
        kind = request.kind
        if request.problem is None and kind in self._ungated:
            # the usual requests, straight to their route: what ``_decide`` and ``_entry`` make
            # of them without their general cases (tests/test_engine_differential.py)
            if job is not None:
                if job.due <= now:  # (else its next step is timed and later: nothing moves)
                    self._advance(job, now)
                if kind == "status":
                    fault = None if kind in self._open else self._pick_fault(request, now, job)
                    if fault is None:
                        return self._read(seq, request, now, job)
                    reply = self._answer(seq, request, now, job, fault)
                    journal.append(self._entry(reply, now, job))
                    return reply
            elif kind == "submit" and kind in self._open:
                if self._creates and request.hold <= 0 and (now or math.copysign(1.0, now) > 0):
                    # (not at -0.0: a view at -0.0 is not one at now + 0.0, the reply's instant)
                    key = request.idempotency_key
                    if (
                        key is None
                        or self._jobs.by_idempotency_key(request.credential, key) is None
                    ):
                        return self._create(seq, request, now, key)
                reply, created = self._accept(seq, request, now, now + 0.0)
                journal.append(
                    self._entry(reply, now, None)
                    if created is None
                    else self._created_entry(reply, now, created)
                )
                return reply
        elif job is not None:
            self._advance(job, now)
        reply = self._decide(seq, request, now, job)
        journal.append(self._entry(reply, now, job))
        return reply

    def complete(
        self, reply: Reply, *, started: float, completed: float, status_code: int | None
    ) -> Entry | None:
        """Record that the answer to ``reply`` started at ``started`` and ended at ``completed``."""
        return self.journal.complete(
            reply.seq,
            response_started_at=started,
            completed_at=completed,
            status_code=None if reply.action != "respond" else status_code,
        )

    def advance_all(self, now: float, *, sendable_only: bool = False) -> list[StateChange]:
        """Move every job whose next timed step is due by ``now``; return the changes made.

        This is how state changes happen at their scripted time when no request arrives (the
        webhook dispatcher calls it). Costs O(log n) per step taken, nothing per idle job.
        ``sendable_only``: only the jobs a webhook may be sent for (every job, but in a run
        whose webhooks name no ``url``: then those with a ``callback_url``); the others move
        when a request looks at them, as they do in a run without webhooks.
        """
        first = self.change_count
        wanted = self._wanted
        self._wanted = first if wanted is None else min(wanted, first)  # none let go meanwhile
        self._collecting = True
        due, quiet = self._due, self._due_quiet
        if sendable_only:
            quiet = []
        try:
            while True:  # both heaps, in the order of one (their entries share a counter)
                if due and due[0][0] <= now and not (quiet and quiet[0] < due[0]):
                    _, _, job_id = heapq.heappop(due)
                elif quiet and quiet[0][0] <= now:
                    _, _, job_id = heapq.heappop(quiet)
                else:
                    break
                job = self._jobs[job_id]
                job.scheduled = False
                job.due = _NEVER
                self._advance(job, now)
            made = self._changes[first - self._changes_gone :]
        finally:
            self._wanted = wanted
            self._collecting = False
        if len(self._changes) >= 2 * self.keep_changes + 64:
            self._trim()  # what was held for this call may go now
        return made  # type: ignore[return-value]  # (none let go while collecting)

    def next_due(self, *, sendable_only: bool = False) -> float | None:
        """The earliest clock reading at which some job's timeline reaches a timed step
        (``sendable_only``: some job's a webhook may be sent for, as ``advance_all``)."""
        due = self._due[0][0] if self._due else None
        if sendable_only or not self._due_quiet:
            return due
        quiet = self._due_quiet[0][0]
        return quiet if due is None or quiet < due else due

    # -- decisions ------------------------------------------------------------------------

    def _read(self, seq: int, request: Request, now: float, job: Job) -> Reply:
        """A well-formed status read of ``job`` (brought up to ``now``) that no fault, credential
        check or rate limit touches: the reply ``_decide`` makes, journaled as ``_entry`` would
        journal it, without their general cases (tests/test_engine_differential.py)."""
        view = self._view(job, now)
        status, poll_after = view.status, view.poll_after
        if job.started is not None or job.cancelled:  # not throttled: a poll counts
            job.polls += 1
        if job.due <= now:
            self._advance(job, now)
        reply = fast_reply(seq, request, 200, now + 0.0, 0.0, "respond", view)
        hints = self.poll_hints
        inline = self.inline_result
        row: list[Any] = [  # the entry's field values in Entry's order (Journal.append_values)
            seq,
            "status",
            job.id,
            request.method,
            request.path,
            request.client,
            now,
            None,
            None,
            200,
            status,
            None,
            None,
            "cancelled" if job.cancelled else self._statuses[job.spec_index][job.step],
            job.since,
            poll_after
            if (hints if hints.__class__ is bool else "status" in hints)  # type: ignore[operator]
            else None,
            None,
            _fingerprint(request.credential),
            request.idempotency_key,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            True if status in _SUCCESS and inline is not None and inline(request, view) else None,
        ]
        journal = self.journal
        if journal.__class__ is Journal:
            with journal._lock:  # what ``journal.append_values(row)`` does, one call less
                journal._pending[seq] = row
        else:
            journal.append(Entry(*row))
        return reply

    def _decide(self, seq: int, request: Request, now: float, job: Job | None) -> Reply:
        if request.kind in self._open and request.problem is None:
            # no fault can take it and nothing gatekeeps it: what the general path decides
            return self._route(seq, request, now, now + 0.0, job)
        return self._answer(seq, request, now, job, self._pick_fault(request, now, job))

    def _answer(
        self, seq: int, request: Request, now: float, job: Job | None, fault: Fault | None
    ) -> Reply:
        """The reply to ``request``, ``fault`` being the fault that fired on it (if any)."""
        delay = fault.delay if fault else 0.0
        respond_at = now + delay
        if fault is not None and (fault.status is not None or fault.action == "reset"):
            return self._scripted(seq, request, fault, respond_at, delay)

        reply = self._gatekeep(seq, request, now, respond_at)
        if reply is None:
            reply = self._route(seq, request, now, respond_at, job)
        if fault is not None:
            headers = reply.headers + tuple(fault.headers.items())
            retry = fault.retry
            if retry is not None:
                headers += self._retry_after_headers(retry, respond_at)
            reply = _replace(
                reply, delay=reply.delay + delay, fault=fault, action=fault.action, headers=headers
            )
        return reply

    def _scripted(
        self, seq: int, request: Request, fault: Fault, respond_at: float, delay: float
    ) -> Reply:
        headers = tuple(fault.headers.items())
        if fault.retry is not None:
            headers += self._retry_after_headers(fault.retry, respond_at)
        status = fault.status or 0
        return Reply(
            seq=seq,
            request=request,
            status_code=status,
            respond_at=respond_at,
            delay=delay,
            action=fault.action,
            error=scripted_error(fault.name, status),
            headers=headers,
            fault=fault,
        )

    def _gatekeep(self, seq: int, request: Request, now: float, respond_at: float) -> Reply | None:
        """Malformed requests, auth and rate limits, in that order."""
        if request.problem is not None:
            problem = Refusal(request.problem_status, request.problem_code, request.problem)
            return self._refuse(seq, request, respond_at, problem)
        if request.kind == "unknown":
            refusal = Refusal.no_route(request.method, request.path)
            return self._refuse(seq, request, respond_at, refusal)
        auth = self.scenario.auth
        if auth is not None:
            token = request.credential
            if token is None:
                return self._refuse(seq, request, respond_at, Refusal.missing_credentials())
            if token not in auth.tokens:
                return self._refuse(seq, request, respond_at, Refusal.invalid_token())
            uses = self._token_uses.get(token, 0) + 1
            self._token_uses[token] = uses
            if auth.revoke_after is not None and uses > auth.revoke_after:
                return self._refuse(seq, request, respond_at, Refusal.token_revoked())
        limit = self.scenario.rate_limit
        if limit is not None and ("any" in limit.routes or request.kind in limit.routes):
            key = "global" if limit.scope == "global" else (request.credential or request.client)
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(limit.capacity), now)
            bucket.tokens = min(
                float(limit.capacity), bucket.tokens + (now - bucket.updated) / limit.refill_every
            )
            bucket.updated = now
            # refills add up in floats: ten tenths can fall short of a token by 1e-16, and a
            # 429 then promises the token for now (a Retry-After of 0) that never comes
            if bucket.tokens >= 1.0 - _TOKEN_SLACK:
                bucket.tokens = max(0.0, bucket.tokens - 1.0)
            else:
                wait = (1.0 - bucket.tokens) * limit.refill_every
                reply = self._refuse(seq, request, respond_at, Refusal.rate_limited())
                retry = RetryAfter(delay=wait, form=limit.retry_after_form)
                return _replace(reply, headers=self._retry_after_headers(retry, respond_at))
        return None

    def _route(
        self, seq: int, request: Request, now: float, respond_at: float, job: Job | None
    ) -> Reply:
        kind = request.kind
        if kind == "submit":
            return self._submit(seq, request, now, respond_at)
        if kind == "list":
            return self._list(seq, request, now, respond_at)
        if job is None:
            return self._refuse(seq, request, respond_at, Refusal.job_not_found(request.job_id))
        if kind == "status":
            view = self._view(job, now)
            if job.started is not None or job.cancelled:  # not throttled: a poll counts
                job.polls += 1
            self._advance(job, now)
            return fast_reply(seq, request, 200, respond_at, job=view)
        if kind == "content":
            view = self._view(job, now)
            status = self._status(job)
            if status in _SUCCESS:
                size = job.spec.result.size_bytes
                return Reply(
                    seq=seq,
                    request=request,
                    status_code=200,
                    respond_at=respond_at,
                    job=view,
                    content=video_bytes(job.id, size),
                )
            unready = (
                Refusal.no_content(job.id, status)
                if status in TERMINAL_STATUSES
                else Refusal.job_not_ready(job.id, status)
            )
            return _replace(self._refuse(seq, request, respond_at, unready), job=view)
        if kind == "cancel":
            refusal: Refusal | None = None
            status = self._status(job)
            if status in TERMINAL_STATUSES:
                refusal = Refusal.job_already_terminal(job.id, status)
            elif request.cancel_from is not None and status not in request.cancel_from:
                refusal = Refusal.job_not_cancellable(job.id, status, request.cancel_from)
            if refusal is not None:
                reply = self._refuse(seq, request, respond_at, refusal)
                return _replace(reply, job=self._view(job, now))
            job.cancelled = True
            self._changed(job, now)
            return Reply(
                seq=seq,
                request=request,
                status_code=200,
                respond_at=respond_at,
                job=self._view(job, now),
            )
        raise AssertionError(f"unhandled request kind {kind!r}")  # pragma: no cover

    def _submit(self, seq: int, request: Request, now: float, respond_at: float) -> Reply:
        return self._accept(seq, request, now, respond_at)[0]

    def _accept(
        self, seq: int, request: Request, now: float, respond_at: float
    ) -> tuple[Reply, Job | None]:
        """The reply to a submit, and the job it created (None when it created none)."""
        body = request.body or {}
        digest = request_digest(body)
        key = request.idempotency_key
        if key is not None:
            job = self._jobs.by_idempotency_key(request.credential, key)
            if job is not None:
                if job.digest != digest:
                    refusal = Refusal.idempotency_key_reused(key)
                    return self._refuse(seq, request, respond_at, refusal), None
                self._advance(job, now)
                return fast_reply(seq, request, 202, respond_at, job=self._view(job, now)), None
        concurrency = self.scenario.concurrency
        full = (
            concurrency is not None
            and self._active_count(request.credential, now) >= concurrency.max_active_jobs
        )
        if full and not self.queue_at_capacity:
            assert concurrency is not None
            refusal = Refusal.too_many_active_jobs(concurrency.max_active_jobs)
            reply = self._refuse(seq, request, respond_at, refusal)
            retry = concurrency.retry_after
            retry = retry if isinstance(retry, RetryAfter) else RetryAfter(delay=retry)
            return _replace(reply, headers=self._retry_after_headers(retry, respond_at)), None
        index = self._spec_for(body, consume=True)
        return self._make(seq, request, now, respond_at, body, digest, index, full)

    def _make(
        self,
        seq: int,
        request: Request,
        now: float,
        respond_at: float,
        body: Mapping[str, Any],
        digest: str,
        index: int,
        full: bool,
    ) -> tuple[Reply, Job]:
        """The reply to a submit that creates a job of spec ``index`` (throttled when ``full``),
        and the job."""
        key = request.idempotency_key
        concurrency = self.scenario.concurrency
        self._submits += 1
        job_id = self._new_id(self.scenario.seed, self._submits)
        job = Job(
            id=job_id,
            spec_index=index,
            spec=self.scenario.jobs[index],
            created_at=now,
            request=dict(body),
            digest=digest,
            credential=request.credential,
            callback_url=request.callback_url,
            since=now,
            started=None if full else now,
            number=len(self._by_number),
        )
        self._jobs.add(job, key)
        self._reindex(job, self._statuses[index][0])
        if full:
            self._waiting.setdefault(request.credential, deque()).append(job_id)
        created = self._changed(job, now)
        self._advance(job, now)
        if concurrency is not None and not full and self._status(job) not in TERMINAL_STATUSES:
            self._activate(job)
        held = self._held(job, now, request.hold)
        if held > 0:
            # nobody knows the job's id until this answer: running it to the end of the hold
            # now shows no one a state before its time
            self._advance(job, now + held)
        shown = now + held
        if (
            held
            or not now  # now + 0.0 is not -0.0: a view at -0.0 is not a view at 0.0
            or job.step
            or job.cancelled
            or job.since != now
            or (job.started is None) != full
        ):
            view = self._view(job, shown)
        else:  # the job is as its creation's state change showed it, at the same instant
            view = created
        reply = fast_reply(seq, request, 202, respond_at + held, job=view, delay=held, created=True)
        return reply, job

    def _create(self, seq: int, request: Request, now: float, key: str | None) -> Reply:
        """A well-formed submit that no fault, credential check, rate limit, concurrency limit,
        hold or earlier use of its idempotency ``key`` touches, journaled: the reply and entry
        ``_accept`` and ``_created_entry`` make, without their general cases when its job is
        as ``_fresh`` has it (tests/test_engine_differential.py): kept, indexed, announced and
        scheduled, its reply returned and its entry journaled, in one call."""
        body = request.body or {}
        digest = request_digest(body)
        index = self._only_spec
        if index is None:
            index = self._spec_for(body, consume=True)
        else:  # what ``_spec_for`` does when every submit takes the one spec
            self._unmatched_submits += 1
        fresh = self._fresh[index]
        if fresh is None:
            reply, made = self._make(seq, request, now, now + 0.0, body, digest, index, False)
            self.journal.append(self._created_entry(reply, now, made))
            return reply
        shown, offset, due = fresh
        if offset is not None:
            due = now + offset  # what ``_schedule`` puts on the heap
            if due <= now:
                reply, made = self._make(seq, request, now, now + 0.0, body, digest, index, False)
                self.journal.append(self._created_entry(reply, now, made))
                return reply
        self._submits += 1
        job_id = self._new_id(self.scenario.seed, self._submits)
        by_number = self._by_number
        number = len(by_number)
        credential = request.credential
        callback_url = request.callback_url
        copied = dict(body)
        scheduled = offset is not None
        job = Job(
            job_id,
            index,
            self.scenario.jobs[index],
            now,
            copied,
            digest,
            credential,
            callback_url,
            0,
            now,
            0,
            False,
            scheduled,
            now,
            number,
            due,
        )
        self._jobs.add(job, key)
        status, progress, poll_after, estimate, message, result, error, summary = shown
        by_number.append(job)  # what ``_reindex`` does for a job just created
        self._listed_as.append(status)
        ordered = self._by_status.get(status)
        if ordered is None:
            ordered = self._by_status[status] = _Ordered()
        blocks = ordered._blocks
        if blocks and number > ordered._highest[-1] and len(blocks[-1]) < 2 * _BLOCK:
            blocks[-1].append(number)  # what ``_Ordered.add`` does with the newest number
            ordered._highest[-1] = number
            ordered._size += 1
        else:
            ordered.add(number)
        view = fast_view(
            job_id,
            index,
            status,
            progress,
            now,
            now,
            now,
            poll_after,
            estimate,
            message,
            copied,
            result,
            error,
            summary,
            callback_url,
            False,
        )
        change = fast_change(job_id, status, now, view)  # what ``_changed`` announces
        changes = self._changes
        changes.append(change)
        quiet = self._quiet and callback_url is None
        if self._quiet and not quiet:
            self._sendable_made = self._changes_gone + len(changes)
        if len(changes) >= self._trim_at:
            self._trim()
        if self.on_change is not None:
            self.on_change(change)
        if scheduled:
            self._due_counter += 1
            if quiet:  # (what ``_schedule`` does)
                heapq.heappush(self._due_quiet, (due, self._due_counter, job_id))
            else:
                heapq.heappush(self._due, (due, self._due_counter, job_id))
                if due < self.wake_at:
                    self._early()
        hints = self.poll_hints
        row: list[Any] = [  # the entry's field values in Entry's order (Journal.append_values)
            seq,
            "submit",
            job_id,
            request.method,
            request.path,
            request.client,
            now,
            None,
            None,
            202,
            status,
            None,
            None,
            status,
            now,
            poll_after
            if (hints if hints.__class__ is bool else "submit" in hints)  # type: ignore[operator]
            else None,
            None,
            _fingerprint(credential),
            key,
            digest,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        ]
        journal = self.journal
        if journal.__class__ is Journal:
            # what ``journal.append_values(row)`` does, one call less: the list is kept, no
            # Entry made until one is read
            with journal._lock:
                journal._pending[seq] = row
        else:
            journal.append(Entry(*row))
        return fast_reply(
            seq, request, 202, now + 0.0, 0.0, "respond", view, (), None, None, (), None, True
        )

    def _fresh_job(self, index: int) -> tuple[_Shown, float | None, float] | None:
        """``_fresh`` of spec ``index``."""
        timeline = self.scenario.jobs[index].timeline
        shown = self._shown[index][0][0]
        if shown[0] in _SUCCESS:
            return None
        if len(timeline) == 1:
            return shown, None, _ENDED  # what ``_schedule`` sets: nothing moves it any more
        step = timeline[1]
        if step.after_polls is not None:
            return (shown, None, _NEVER) if step.after_polls > 0 else None
        offset = step.at or 0.0
        return (shown, offset, _NEVER) if offset > 0 else None

    def _list(self, seq: int, request: Request, now: float, respond_at: float) -> Reply:
        # Every job is brought up to ``now`` through the heap of timed steps (O(log n) per
        # step taken); only the jobs a filter must see, or the page shows, are then viewed.
        self.advance_all(now)
        select = request.select
        statuses = request.statuses
        size = len(self._jobs)
        offset, count = request.page if request.page is not None else (0, size)
        if statuses is not None and len(self._by_number) == size:
            # every job is in the index (the store holds no job this engine did not create):
            # only the jobs in those statuses are walked, or only the page's when nothing else
            # filters them
            kept = [self._by_status[s] for s in sorted(statuses) if s in self._by_status]
            numbers = _merged(kept, request.newest_first)
            by_number = self._by_number
            if select is None:
                total = sum(len(ordered) for ordered in kept)
                window = itertools.islice(numbers, offset, offset + count)
                shown = [self._view(by_number[n], now) for n in window]
                return self._listed(seq, request, respond_at, shown, total)
            jobs: Iterable[Job] = (by_number[n] for n in numbers)
            statuses = None  # every job walked is in one of them
        else:
            jobs = self._newest_first() if request.newest_first else self._jobs
        if select is None and statuses is None:
            page = itertools.islice(jobs, offset, offset + count)
            return self._listed(seq, request, respond_at, [self._view(j, now) for j in page], size)
        # a filter sees every job it may keep, but only the page's views are kept
        total = 0
        shown = []
        for job in jobs:
            view = self._view(job, now)
            if (statuses is None or view.status in statuses) and (select is None or select(view)):
                if offset <= total < offset + count:
                    shown.append(view)
                total += 1
        return self._listed(seq, request, respond_at, shown, total)

    @staticmethod
    def _listed(
        seq: int, request: Request, respond_at: float, shown: list[JobView], total: int
    ) -> Reply:
        return Reply(
            seq=seq,
            request=request,
            status_code=200,
            respond_at=respond_at,
            jobs=tuple(shown),
            total=total,
        )

    def _reindex(self, job: Job, status: str) -> None:
        """Keep ``job`` (just created, or created by this engine) under ``status``, its status
        from now on, in ``_by_status``."""
        number = job.number
        listed = self._listed_as
        if number == len(listed):  # a job just created
            self._by_number.append(job)
            listed.append(status)
        else:
            if listed[number] == status:
                return
            self._by_status[listed[number]].remove(number)
            listed[number] = status
        ordered = self._by_status.get(status)
        if ordered is None:
            ordered = self._by_status[status] = _Ordered()
        ordered.add(number)

    def _newest_first(self) -> Iterator[Job]:
        """Every job, newest first: straight from a store that iterates backwards (the
        ``MemoryJobStore`` does), else from a copy of its order."""
        newest: Callable[[], Iterator[Job]] | None = getattr(self._jobs, "__reversed__", None)
        return newest() if newest is not None else reversed(list(self._jobs))

    @staticmethod
    def _held(job: Job, now: float, hold: float) -> float:
        """How long a held submit waits: until the job's timeline ends, at most ``hold``."""
        if hold <= 0 or job.terminal:
            return 0.0
        if job.started is None:
            return hold  # throttled: when it will start is not known yet
        for step in job.spec.timeline[job.step + 1 :]:
            if step.after_polls is not None:
                break  # only polls move it on, and nobody can poll a job it has not seen
            if step.status in TERMINAL_STATUSES:
                return min(hold, max(0.0, job.start + (step.at or 0.0) - now))
        return hold

    # -- jobs -----------------------------------------------------------------------------

    def _spec_for(self, body: Mapping[str, Any], *, consume: bool) -> int:
        for index, match in self._matchers:
            if _matches(match, body):
                return index
        unmatched = self._unmatched
        position = min(self._unmatched_submits, len(unmatched) - 1)
        if consume:
            self._unmatched_submits += 1
        return unmatched[position]

    def _advance(self, job: Job, now: float) -> None:
        """Move ``job`` along its timeline up to ``now`` (amortised O(1))."""
        if job.due > now:
            return  # its next step is timed, on the heap, and later than now: nothing moves
        if job.cancelled:
            return
        if self._waits(job):
            self._process_ends(now)  # jobs that ended by now free their slots first
            if self._waits(job):
                return
        timeline = job.spec.timeline
        while job.step + 1 < len(timeline):
            step = timeline[job.step + 1]
            if step.after_polls is not None:
                if job.polls < step.after_polls:
                    break
                since = max(job.since, now)
            else:
                at = job.start + (step.at or 0.0)
                if at > now:
                    break
                since = max(job.since, at)
            before = self._status(job)
            job.step += 1
            job.due = _NEVER  # the heap's entry, if any, is for a step taken now
            job.since = since if step.status is not None and step.status != before else job.since
            if step.status is not None and step.status != before:
                self._changed(job, job.since)
        self._schedule(job)

    def _schedule(self, job: Job) -> None:
        """Put ``job``'s next timed step on the heap (at most one entry per job)."""
        if job.step + 1 >= len(job.spec.timeline):
            if job.started is not None:
                job.due = _ENDED  # nothing moves it any more (time, polls or a free slot)
            return
        if job.scheduled or job.cancelled:
            return
        if job.started is None:
            return  # throttled: scheduled once a slot frees
        step = job.spec.timeline[job.step + 1]
        if step.after_polls is not None:
            return  # a request moves it; ``_advance`` reschedules then
        self._due_counter += 1
        due = job.start + (step.at or 0.0)
        job.scheduled = True
        job.due = due
        if self._quiet and job.callback_url is None:  # no dispatcher waits for it
            heapq.heappush(self._due_quiet, (due, self._due_counter, job.id))
            return
        heapq.heappush(self._due, (due, self._due_counter, job.id))
        if due < self.wake_at:
            self._early()

    def _early(self) -> None:
        """A timed step is due before a sleeping dispatcher wakes: wake it (once)."""
        self.wake_at = -math.inf
        if self.on_early is not None:
            self.on_early()

    def _changed(self, job: Job, at: float) -> JobView:
        """Announce ``job``'s new status (entered at ``at``); return the view announced."""
        view = self._view(job, at)
        if job.number < len(self._by_number) and self._by_number[job.number] is job:
            self._reindex(job, view.status)  # (not a job another engine made, in a shared store)
        change = fast_change(job.id, view.status, at, view)
        changes = self._changes
        changes.append(change)
        if self._quiet and job.callback_url is not None:
            self._sendable_made = self._changes_gone + len(changes)
        if len(changes) >= self._trim_at:
            self._trim()
        if view.status in TERMINAL_STATUSES:
            active = self._active.get(job.credential)
            if active is not None:  # a job counts only against its own credential's limit
                active.discard(job.id)
        if self.on_change is not None:
            self.on_change(change)
        if self._waiting and self._status(job) in TERMINAL_STATUSES:
            self._promote(at)
        return view

    def _trim(self) -> None:
        """Let go of the oldest changes that are not among the last ``keep_changes`` and that
        no one still wants."""
        changes, gone = self._changes, self._changes_gone
        first = gone + len(changes) - self.keep_changes  # the first of the last keep_changes
        if self._wanted is not None:
            first = min(first, self._wanted)
        if first > gone:
            del changes[: first - gone]
            self._changes_gone = gone = first
        if self._quiet and self._wanted is not None and not self._collecting:
            # kept for the reader of ``changes_since`` alone: a quiet job's change goes now
            end = len(changes) - self.keep_changes
            begin = max(self._quiet_from - gone, 0)
            if begin < end:
                if self._sendable_made <= gone + begin:  # (every one of them is a quiet job's)
                    changes[begin:end] = [None] * (end - begin)
                else:
                    for index in range(begin, end):
                        change = changes[index]
                        if change is not None and (
                            change.job is None or change.job.callback_url is None
                        ):
                            changes[index] = None
                self._quiet_from = gone + end
        self._trim_at = len(changes) + self.keep_changes + 64

    def _waits(self, job: Job) -> bool:
        """Whether ``job`` is throttled: accepted, waiting for a slot, its timeline not begun."""
        return job.started is None and not job.cancelled

    def _activate(self, job: Job) -> None:
        """Count ``job`` against its credential's concurrency limit until it ends."""
        self._active.setdefault(job.credential, set()).add(job.id)
        end = job.spec.end_time
        if end is not None:
            heapq.heappush(self._ends, (job.start + end, job.id))

    def _promote(self, at: float) -> None:
        """Start the oldest throttled jobs of every credential with a free slot, at ``at``."""
        concurrency = self.scenario.concurrency
        assert concurrency is not None
        for credential, waiting in self._waiting.items():
            active = self._active.setdefault(credential, set())
            while waiting and len(active) < concurrency.max_active_jobs:
                job = self._jobs[waiting.popleft()]
                if job.cancelled:
                    continue
                job.started = at
                self._activate(job)
                self._schedule(job)

    def _process_ends(self, now: float) -> None:
        """Advance every active job whose timeline ends by ``now`` (freeing its slot)."""
        while self._ends and self._ends[0][0] <= now:
            _, job_id = heapq.heappop(self._ends)
            self._advance(self._jobs[job_id], now)

    def _active_count(self, credential: str | None, now: float) -> int:
        self._process_ends(now)
        active = self._active.get(credential, set())
        for job_id in [j for j in active if self._status(self._jobs[j]) in TERMINAL_STATUSES]:
            active.discard(job_id)
        return len(active)

    def _view(self, job: Job, now: float) -> JobView:
        """``job`` as an answer at ``now`` shows it."""
        shown = self._shown[job.spec_index][job.step][1 if job.cancelled else 0]
        status, progress, poll_after, estimate, message, result, error, summary = shown
        return fast_view(
            job.id,
            job.spec_index,
            status,
            progress,
            job.created_at,
            job.since,
            now,
            poll_after,
            estimate,
            message,
            job.request,
            result,
            error,
            summary,
            job.callback_url,
            job.started is None and not job.cancelled,
        )

    def _status(self, job: Job) -> str:
        """``job.status``, from the table of each spec's status per step."""
        return "cancelled" if job.cancelled else self._statuses[job.spec_index][job.step]

    # -- faults ---------------------------------------------------------------------------

    def _pick_fault(self, request: Request, now: float, job: Job | None) -> Fault | None:
        kind = request.kind
        faults = self._faults_for.get(kind)
        if faults is None:
            faults = self._faults_for[kind] = tuple(
                (index, fault, None if fault.nth is None else fault.nth_set)  # (made per call)
                for index, fault in enumerate(self.scenario.faults)
                if fault.route == "any" or fault.route == kind
            )
        if not faults:
            return None
        chosen: Fault | None = None
        elapsed = now - self.start
        for index, fault, nth in faults:
            if fault.job is not None:
                spec_index = (
                    job.spec_index
                    if job is not None
                    else (
                        self._spec_for(request.body or {}, consume=False)
                        if request.kind == "submit"
                        else None
                    )
                )
                if spec_index != fault.job:
                    continue
            if fault.start is not None and elapsed < fault.start:
                continue
            if fault.end is not None and elapsed >= fault.end:
                continue
            state = self._faults[index]
            state.matched += 1
            if chosen is not None:
                continue  # count the match, but the first firing fault wins
            if fault.times is not None and state.fired >= fault.times:
                continue
            if nth is not None and state.matched not in nth:
                continue
            if fault.every is not None and state.matched % fault.every:
                continue
            if fault.probability is not None:
                draw = random.Random(f"{self.scenario.seed}:{index}:{state.matched}").random()
                if draw >= fault.probability:
                    continue
            state.fired += 1
            chosen = fault
        return chosen

    def _retry_after_headers(
        self, retry: RetryAfter, respond_at: float
    ) -> tuple[tuple[str, str], ...]:
        if retry.raw is not None:
            return (("Retry-After", retry.raw),)
        return (retry_after_header(retry.wait, retry.form, sent_at=self.epoch + respond_at),)

    def _retry_after_record(
        self, headers: tuple[tuple[str, str], ...], respond_at: float
    ) -> RetryAfterRecord | None:
        """What a ``Retry-After`` among ``headers`` means, as clock seconds."""
        found = read_retry_after(headers, sent_at=respond_at, epoch=self.epoch)
        return None if found is None else RetryAfterRecord(*found)

    # -- helpers --------------------------------------------------------------------------

    def _refuse(self, seq: int, request: Request, respond_at: float, refusal: Refusal) -> Reply:
        return fast_reply(seq, request, refusal.status, respond_at, error=refusal.error)

    def _shows_hint(self, kind: str) -> bool:
        if isinstance(self.poll_hints, bool):
            return self.poll_hints
        return kind in self.poll_hints

    def _created_entry(self, reply: Reply, now: float, job: Job) -> Entry:
        """What ``_entry`` makes of ``reply``, a submit's 202 that created ``job`` (no fault
        touched it): a submit's usual entry, without the general cases."""
        request = reply.request
        view = reply.job
        assert view is not None
        status = view.status
        hints = self.poll_hints
        inline = self.inline_result
        return Entry(
            reply.seq,
            "submit",
            view.id,
            request.method,
            request.path,
            request.client,
            now,
            status_code=202,
            job_status=status,
            true_status=self._status(job),
            status_since=job.since,
            poll_after=view.poll_after
            if (hints if hints.__class__ is bool else "submit" in hints)  # type: ignore[operator]
            else None,
            inline_result=True
            if status in _SUCCESS and inline is not None and inline(request, view)
            else None,
            credential=_fingerprint(request.credential),
            idempotency_key=request.idempotency_key,
            request_digest=job.digest,
        )

    def _entry(self, reply: Reply, now: float, job: Job | None) -> Entry:
        """The journal entry of ``reply``; ``job`` is the job the request named, if any."""
        request = reply.request
        kind = request.kind
        view = reply.job
        responded = reply.action == "respond"
        fault = reply.fault
        scripted = fault is not None and fault.status is not None
        key = view.id if view is not None else (request.job_id or "")
        # the store gives the same record for an id every time: look up only another job
        true_job = job if job is not None and job.id == key else self._jobs.get(key)
        shown = view.status if view is not None and not scripted and responded else None
        status_code = reply.status_code
        error = reply.error
        return Entry(
            seq=reply.seq,
            kind=kind,
            job_id=view.id if view is not None else request.job_id,
            method=request.method,
            path=request.path,
            client=request.client,
            received_at=now,
            status_code=status_code if responded else None,
            job_status=shown,
            # a dropped answer's Retry-After never reached the client, so it binds nothing
            retry_after=self._retry_after_record(reply.headers, reply.respond_at)
            if reply.headers and responded
            else None,
            fault=fault.name if fault is not None else None,
            true_status=self._status(true_job) if true_job is not None else None,
            status_since=true_job.since if true_job is not None else None,
            poll_after=(
                view.poll_after
                if shown is not None and view is not None and self._shows_hint(kind)
                else None
            ),
            inline_result=True
            if shown in _SUCCESS
            and view is not None
            and 200 <= status_code < 300
            and self.inline_result is not None
            and self.inline_result(request, view)
            else None,
            error_code=error.code if error is not None else None,
            credential=_fingerprint(request.credential),
            idempotency_key=request.idempotency_key,
            # an accepted submit's job holds its body's digest already
            request_digest=(
                (
                    true_job.digest
                    if view is not None and true_job is not None
                    else request_digest(request.body)
                )
                if kind == "submit"
                else None
            ),
            dropped=reply.action if not responded else None,
            listed=tuple((v.id, v.status) for v in reply.jobs)
            if kind == "list" and status_code == 200 and responded and not scripted
            else None,
        )


#: How many numbers an ``_Ordered`` block holds before it is split in two.
_BLOCK = 512


class _Ordered:
    """Job numbers in ascending order, in blocks (a list of short sorted lists): adding or
    removing one costs O(log n + block), the first ``k`` from either end O(k).

    A job's numbers in one status are added mostly at the end (jobs are created in order), but
    a job can enter a status out of order (a long job finishes after a short one), so a plain
    list would move up to every number on each change.
    """

    __slots__ = ("_blocks", "_highest", "_size")

    def __init__(self) -> None:
        self._blocks: list[list[int]] = []
        self._highest: list[int] = []  # each block's last (highest) number
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, number: int) -> None:
        blocks, highest = self._blocks, self._highest
        self._size += 1
        if not blocks:
            blocks.append([number])
            highest.append(number)
            return
        if number > highest[-1] and len(blocks[-1]) < 2 * _BLOCK:
            blocks[-1].append(number)  # the usual case: a job newer than every one here
            highest[-1] = number
            return
        index = min(bisect.bisect_left(highest, number), len(blocks) - 1)
        block = blocks[index]
        bisect.insort(block, number)
        highest[index] = block[-1]
        if len(block) > 2 * _BLOCK:
            blocks[index : index + 1] = [block[:_BLOCK], block[_BLOCK:]]
            highest[index : index + 1] = [block[_BLOCK - 1], block[-1]]

    def remove(self, number: int) -> None:
        blocks, highest = self._blocks, self._highest
        index = bisect.bisect_left(highest, number)
        block = blocks[index]
        at = bisect.bisect_left(block, number)
        if at == len(block) or block[at] != number:  # pragma: no cover - kept in step
            raise AssertionError(f"job number {number} is not kept here")
        del block[at]
        self._size -= 1
        if block:
            highest[index] = block[-1]
        else:
            del blocks[index]
            del highest[index]

    def ascending(self) -> Iterator[int]:
        for block in self._blocks:
            yield from block

    def descending(self) -> Iterator[int]:
        for block in reversed(self._blocks):
            yield from reversed(block)


def _merged(kept: list[_Ordered], newest_first: bool) -> Iterator[int]:
    """The numbers in every one of ``kept``, in order (newest first, or oldest first)."""
    if len(kept) == 1:
        return kept[0].descending() if newest_first else kept[0].ascending()
    if newest_first:
        return heapq.merge(*(ordered.descending() for ordered in kept), reverse=True)
    return heapq.merge(*(ordered.ascending() for ordered in kept))


def _matches(pattern: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    for key, expected in pattern.items():
        if key not in body:
            return False
        actual = body[key]
        if isinstance(expected, str) and isinstance(actual, str):
            if not fnmatch.fnmatchcase(actual, expected):
                return False
        elif actual != expected:
            return False
    return True


def _replace(reply: Reply, **changes: Any) -> Reply:
    return replace(reply, **changes)
