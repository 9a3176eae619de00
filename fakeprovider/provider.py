"""A fake provider, independent of transport: scenario + clock + dialect + engine + journal.

The Starlette app and the in-process httpx transport both drive a ``FakeProvider``: they turn
what they received into an ``HttpRequest``, call ``receive``, wait ``reply.delay``, send the
``HttpResponse`` (plus a ``Date`` header from ``reply.respond_at``) and call ``sent``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import json
import logging
import math
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

from .clock import Clock, RealClock
from .dialects import Dialect, get_dialect
from .engine import Engine
from .http import (
    NO_BODY,
    HttpRequest,
    HttpResponse,
    all_safe_header_values,
    error_response,
    format_http_date,
    safe_header_value,
    wire_problem,
)
from .journal import Entry, Journal, JournalSink
from .messages import (
    ApiError,
    Reply,
    Request,
    StateChange,
    credential_fingerprint,
    default_job_id,
    request_digest,
)
from .scenario import Scenario, load_scenario
from .settings import RunSettings

__all__ = ["FakeProvider"]

#: Where a failure of the fake itself is logged, with its traceback (stderr unless configured).
logger = logging.getLogger("fakeprovider.server")

INTERNAL_ERROR_MESSAGE = "fakeprovider failed; this is a bug, please report it."


class LogOnce:
    """Logs each cause of failure once (with its traceback), not once per request: a broken
    scenario answers every request the same way and would flood the log."""

    def __init__(self, limit: int = 256) -> None:
        self._seen: set[tuple[str, ...]] = set()
        self._limit = limit
        self._lock = threading.Lock()

    def first(self, *cause: str) -> bool:
        """True the first time ``cause`` is seen (and for every cause past ``limit`` of them)."""
        with self._lock:
            if cause in self._seen:
                return False
            if len(self._seen) < self._limit:
                self._seen.add(cause)
            return True

    def exception(self, where: str, exc: BaseException, message: str, *args: object) -> None:
        if self.first(where, type(exc).__name__, str(exc)):
            logger.error(
                message + " (logged once for this cause)",
                *args,
                exc_info=exc,
            )


def unsendable_answer(problem: str) -> HttpResponse:
    """The answer when the scenario scripted one that HTTP/1.1 cannot carry: a JSON 500."""
    message = f"The scenario scripted an answer that cannot be sent: {problem}; fix the scenario."
    return error_response(500, "unsendable_answer", message)


def internal_error() -> HttpResponse:
    """The answer when the fake itself failed: 500 ``internal_error`` (the same in every
    dialect, since the dialect may be what failed)."""
    return error_response(500, "internal_error", INTERNAL_ERROR_MESSAGE)


#: The answer to a reply whose connection is reset: nothing is ever sent.
NOTHING_SENT = HttpResponse(0, b"", None)
#: The statuses ``FakeProvider.receive`` looks at whatever the headers: 405 (``Allow``) and
#: those without a body.
CHECKED_STATUSES = NO_BODY | {405}


@functools.lru_cache(maxsize=64)
def _http_date(second: int) -> str:
    # answers sent within one second share their Date: formatted once, not per answer
    return format_http_date(second)


def _with_error(reply: Reply, code: str) -> Reply:
    """``reply`` answered with a 500 ``code`` instead: what the journal records."""
    message = INTERNAL_ERROR_MESSAGE if code == "internal_error" else "unsendable answer"
    return dataclasses.replace(reply, status_code=500, error=ApiError(code, message))


def _job_ids(dialect: Dialect) -> Callable[[int, int], str]:
    """What makes the job ids of ``dialect``: ``default_job_id`` itself when the dialect has
    not its own (the generic one), not the method that calls it (a call less per submit)."""
    made = dialect.new_job_id
    if getattr(made, "__func__", None) is Dialect.new_job_id:
        return default_job_id
    return made


def scenario_digest(scenario: Scenario) -> str:
    """``sha256:`` and 16 hex digits of the scenario's canonical JSON: the same scenario (as
    loaded, before ``--time-scale`` and ``--seed``) gives the same digest."""
    text = json.dumps(scenario.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class FakeProvider:
    """Plays one scenario at a time; ``reset()`` starts it over with an empty journal.

    ``settings`` holds what its parts share (the clock's epoch, ``time_scale``, ``seed`` and
    ``dialect``): made at construction, replaced only by ``load(..., settings=...)``; the dialect
    and engine of every run are made with it. ``journal_listener`` is called with every journal
    entry as it is written, the first run's header included (``serve --log-requests``).
    """

    def __init__(
        self,
        scenario: Scenario | str,
        *,
        clock: Clock | None = None,
        dialect: str | None = None,
        seed: int | None = None,
        time_scale: float = 1.0,
        journal_sink: IO[str] | JournalSink | None = None,
        journal_memory: int | None = None,
        journal_listener: Callable[[Entry], None] | None = None,
        allow_webhook_hosts: Iterable[str] = (),
    ) -> None:
        self.clock: Clock = clock if clock is not None else RealClock()
        self.journal = Journal(sink=journal_sink, memory=journal_memory, listener=journal_listener)
        self.log_once = LogOnce()
        self._lock = threading.RLock()
        self.settings = RunSettings(
            epoch=self.clock.epoch, time_scale=time_scale, seed=seed, dialect=dialect
        )
        #: Every observer, in the order they came, and whether it only wants the changes of runs
        #: whose scenario has webhooks; ``_called``: those the current run calls.
        self._observers: tuple[tuple[Callable[[StateChange], None], bool], ...] = ()
        self._called: tuple[Callable[[StateChange], None], ...] = ()
        #: Whether someone reads the state changes through ``advance`` (a webhook dispatcher).
        self._followed = False
        #: Hosts besides loopback addresses and ``localhost`` that webhooks may be sent to.
        self.allow_webhook_hosts = frozenset(allow_webhook_hosts)
        #: The fake's own address as its clients use it (the last request's), for the links
        #: a dialect puts in webhook bodies (Replicate ``urls``, Luma ``assets.video``...).
        self.base_url = "http://127.0.0.1"
        self._started = False
        self._digest = ""
        #: The second of the last ``Date`` given (``date_header``) and that ``Date``: one tuple,
        #: replaced whole, so a thread never sees one second's number with another's text.
        self._last_date: tuple[int, str] = (0, "")
        #: What stopped working in the background, by part (``"webhooks"``: the dispatcher's
        #: thread ended on an error), said as a sentence: ``/__admin/health`` reports it.
        self.failures: dict[str, str] = {}
        self.load(scenario)

    def load(
        self,
        scenario: Scenario | str,
        *,
        header: bool = True,
        settings: RunSettings | None = None,
    ) -> None:
        """Play ``scenario`` (a Scenario, bundled name, path or YAML) from now on, from scratch.

        ``header=False``: write no run header to the journal (the caller journals an entry
        carrying ``run_header()`` instead, as the admin API does). ``settings``: play this run
        and the later ones with these (``dataclasses.replace(provider.settings, time_scale=...)``;
        the epoch stays the clock's) instead of the current ``settings``.
        """
        settings = self.settings if settings is None else settings
        if settings.epoch != self.clock.epoch:
            raise ValueError(
                f"The settings' epoch={settings.epoch!r} is not the clock's ({self.clock.epoch!r});"
                " make them with dataclasses.replace(provider.settings, ...)."
            )
        loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario
        digest = scenario_digest(loaded)
        loaded = settings.play(loaded)
        dialect = get_dialect(loaded.dialect, settings)
        with self._lock:
            self.settings = settings
            self._digest = digest
            self.scenario = loaded
            self.dialect: Dialect = dialect
            self.reset(header=header)

    def reset(self, *, header: bool = True) -> None:
        """Forget every job and journal entry; the scenario starts again at the current time.

        Writes a run header to the journal's sink first (numbered 0 the first time, so that
        runs appended to one file by several processes stay apart), unless ``header=False``.
        """
        with self._lock:
            self.journal.clear()
            self.engine = Engine(
                self.scenario,
                start=self.clock.now(),
                epoch=self.settings.epoch,
                journal=self.journal,
                new_id=_job_ids(self.dialect),
                poll_hints=self.dialect.poll_hints,
                inline_result=self.dialect.inline_result,
                queue_at_capacity=self.dialect.queues_at_capacity,
                on_change=self._listener(),
                # a reader of ``advance`` (the webhook dispatcher, which reads while the
                # scenario has webhooks) gets every change of this run, however many come
                # before it reads; without one, only the latest are kept
                follow_changes=self._followed and self.scenario.webhooks is not None,
            )
            if header:
                first = not self._started
                seq = 0 if first else self.journal.next_seq()
                start = self.engine.start
                self.journal.start_run(
                    Entry(
                        seq=seq,
                        kind="admin",
                        job_id=None,
                        method="RUN",
                        path="/__admin/start" if first else "/__admin/reset",
                        client="fakeprovider",
                        received_at=start,
                        response_started_at=start,
                        completed_at=start,
                        run=self.run_header(),
                    )
                )
            self._started = True

    def run_header(self) -> dict[str, Any]:
        """What the current run plays and how, for the journal's run header: scenario name and
        digest, dialect, time scale, seed, version, start time (UTC) and the ``expect:`` limits
        at this time scale (what ``check`` judges the run by unless told otherwise)."""
        from ._version import __version__
        from .invariants import Limits

        start = self.engine.start
        started = datetime.datetime.fromtimestamp(self.settings.epoch + start, datetime.UTC)
        limits = Limits.from_expect(self.scenario.expect, time_scale=self.settings.time_scale)
        return {
            "scenario": self.scenario.name,
            "digest": self._digest,
            "dialect": self.dialect.name,
            "time_scale": self.settings.time_scale,
            "seed": self.scenario.seed,
            "version": __version__,
            "started": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "clock": start,
            "limits": limits.to_dict(),
        }

    def observe(
        self, observer: Callable[[StateChange], None], *, webhooks_only: bool = False
    ) -> Callable[[], None]:
        """Call ``observer`` with every state change of every run from now on (from the thread
        that caused it, holding the provider's lock: keep it short). Returns a function that
        stops the calls. ``webhooks_only``: only in runs whose scenario has webhooks (the
        webhook dispatcher, which has nothing to do in the others)."""
        with self._lock:
            self._observers = (*self._observers, (observer, webhooks_only))
            self.engine.on_change = self._listener()

        def forget() -> None:
            with self._lock:
                self._observers = tuple(o for o in self._observers if o[0] is not observer)
                self.engine.on_change = self._listener()

        return forget

    def _listener(self) -> Callable[[StateChange], None] | None:
        """What the current run's engine calls with each state change: nothing when no
        observer listens, the observer itself when one does (a submit makes a change: one
        call, not two), else ``_changed``. Called holding the lock."""
        webhooks = self.scenario.webhooks is not None
        self._called = tuple(
            o for o, webhooks_only in self._observers if webhooks or not webhooks_only
        )
        if not self._called:
            return None
        if len(self._called) == 1:
            return self._called[0]
        return self._changed

    def _changed(self, change: StateChange) -> None:
        for observer in self._called:
            observer(change)

    def receive(self, http: HttpRequest) -> tuple[Reply, HttpResponse]:
        """Decide the answer to ``http`` at the clock's current reading.

        Never raises for a request, and every answer it returns is journaled: when the fake
        fails (a bug in a dialect or the engine) the failure is logged once per cause with its
        traceback and the answer is a 500 ``internal_error``; when the scenario scripted an
        answer HTTP/1.1 cannot carry, it is a 500 ``unsendable_answer`` saying why. ``sent``
        then journals the status the client got.
        """
        try:
            request: Request = self.dialect.parse(http)
        except Exception as exc:
            request = self.unparsed(http, exc)
        return self.respond(http, request)

    def unparsed(self, http: HttpRequest, exc: Exception) -> Request:
        """The request ``receive`` hands the engine when the dialect failed to parse ``http``
        (raising ``exc``, a bug): logged once per cause, and answered 500 ``internal_error``."""
        self.log_once.exception(
            "parse", exc, "fakeprovider failed to parse %s %s", http.method, http.path
        )
        self.failed(f"{http.method} {http.path}", exc)
        return Request(
            kind="unknown",
            method=http.method,
            path=http.path,
            client=http.client,
            problem=INTERNAL_ERROR_MESSAGE,
            problem_status=500,
            problem_code="internal_error",
        )

    def respond(self, http: HttpRequest, request: Request) -> tuple[Reply, HttpResponse]:
        """``receive``'s answer to ``http``, which this provider's dialect parsed as ``request``
        (or ``unparsed`` made of it): what an adapter that keeps the requests it parsed calls."""
        self.base_url = http.base_url
        with self._lock:
            now = self.clock.now()
            try:
                reply = self.engine.handle(request, now)
            except Exception as exc:
                return self.unhandled(http, request, now, exc), internal_error()
        if reply.action == "reset":
            return reply, NOTHING_SENT
        try:
            response = self.dialect.render(reply, http)
        except Exception as exc:
            return self.unrendered(http, reply, exc)
        status = response.status
        if not response.headers and 200 <= status <= 599 and status not in CHECKED_STATUSES:
            # no header to check or make safe, a body this status may carry, a final status:
            # every check in ``checked`` would pass it as it is
            return reply, response
        return self.checked(http, request, reply, response)

    def unhandled(self, http: HttpRequest, request: Request, now: float, exc: Exception) -> Reply:
        """The engine failed on ``request`` (raising ``exc``, a bug) at ``now``: logged once per
        cause and journaled; the reply the journal holds (its answer is ``internal_error()``).
        Called holding the provider's lock, as the engine is."""
        self.log_once.exception(
            "handle", exc, "fakeprovider failed to handle %s %s", http.method, http.path
        )
        self.failed(f"{http.method} {http.path}", exc)
        return self._failed(request, now)

    def unrendered(
        self, http: HttpRequest, reply: Reply, exc: Exception
    ) -> tuple[Reply, HttpResponse]:
        """The dialect failed to render ``reply`` (raising ``exc``, a bug): logged once per cause;
        the reply as the journal will record it, and the 500 ``internal_error`` sent instead."""
        self.log_once.exception(
            "render", exc, "fakeprovider failed to answer %s %s", http.method, http.path
        )
        self.failed(f"{http.method} {http.path}", exc)
        return _with_error(reply, "internal_error"), internal_error()

    def checked(
        self, http: HttpRequest, request: Request, reply: Reply, response: HttpResponse
    ) -> tuple[Reply, HttpResponse]:
        """``response``, rendered for ``reply``, as it goes on the wire: a 405's ``Allow``,
        header values made safe, no body on a 204 or 304; a 500 ``unsendable_answer`` (and the
        reply journaled with it) when HTTP/1.1 cannot carry it."""
        if response.status == 405 and request.problem_code == "method_not_allowed":
            allowed = ", ".join(self.dialect.allowed_methods(http.path))
            response = dataclasses.replace(
                response, headers=(*response.headers, ("allow", allowed))
            )
        if response.headers and not all_safe_header_values(response.headers):
            headers = tuple((name, safe_header_value(v)) for name, v in response.headers)
            response = dataclasses.replace(response, headers=headers)
        if response.status in NO_BODY and response.body:
            # a 204 or 304 has no body on the wire: a scripted one is not sent
            response = dataclasses.replace(response, body=b"", media_type=None)
        problem = wire_problem(response)
        if problem is not None:
            if self.log_once.first("wire", problem):
                logger.error(
                    "fakeprovider cannot send the answer the scenario scripted for %s %s: %s;"
                    " answering 500 unsendable_answer instead (logged once)",
                    http.method,
                    http.path,
                    problem,
                )
            return _with_error(reply, "unsendable_answer"), unsendable_answer(problem)
        return reply, response

    def failed(self, what: str, exc: BaseException) -> None:
        """Called when the fake itself failed on ``what`` (already logged and answered 500).

        Does nothing; the pytest plugin overrides it to raise the error in the test.
        """

    def _failed(self, request: Request, now: float) -> Reply:
        """Journal a request the engine failed on (a bug): its answer is a 500."""
        reply = Reply(
            seq=self.journal.next_seq(),
            request=request,
            status_code=500,
            respond_at=now,
            error=ApiError("internal_error", INTERNAL_ERROR_MESSAGE),
        )
        entry = Entry(
            seq=reply.seq,
            kind=request.kind,
            job_id=request.job_id,
            method=request.method,
            path=request.path,
            client=request.client,
            received_at=now,
            status_code=500,
            error_code="internal_error",
            credential=credential_fingerprint(request.credential),
            idempotency_key=request.idempotency_key,
        )
        if request.kind == "submit":
            # a body the engine could not even digest stays without one
            with contextlib.suppress(Exception):
                entry = dataclasses.replace(entry, request_digest=request_digest(request.body))
        self.journal.append(entry)
        return reply

    def follow_changes(self) -> None:
        """Keep every state change of this run not let go yet, and of every later run from its
        start, until ``advance`` has returned it, while the scenario has webhooks: a webhook
        dispatcher calls this before it starts reading, however late its first read comes."""
        with self._lock:
            self._followed = True
            if self.scenario.webhooks is not None:
                self.engine.follow()

    def advance(
        self, since: int = 0, engine: Engine | None = None, *, sendable_only: bool = False
    ) -> tuple[Engine, list[StateChange | None], float | None]:
        """Bring every job up to the clock's reading, so state changes happen on time.

        Returns the engine, its state changes from the ``since``-th on
        (``Engine.changes_since``), and the clock reading at which the next timed step is due
        (None when none is). ``engine``: the engine ``since`` counts the changes of; when a
        reset or scenario load has replaced it, the current engine is returned with no changes
        and nothing done to it (``since`` means nothing there: the caller starts again).
        ``sendable_only``: only the jobs a webhook may be sent for, and their next timed step
        (``Engine.advance_all``): the webhook dispatcher's.
        """
        with self._lock:
            self._followed = True
            current = self.engine
            if engine is not None and current is not engine:
                return current, [], None
            current.advance_all(self.clock.now(), sendable_only=sendable_only)
            return (
                current,
                current.changes_since(since),
                current.next_due(sendable_only=sendable_only),
            )

    def date_header(self, reply: Reply) -> str:
        """The ``Date`` of the answer to ``reply``: its ``respond_at`` as an HTTP-date."""
        unix = self.settings.epoch + reply.respond_at
        second, date = self._last_date
        if second <= unix < second + 1 and date:  # the second of the last answer
            return date
        second = math.floor(unix)
        date = _http_date(second)
        self._last_date = (second, date)
        return date

    def sent(
        self,
        reply: Reply,
        *,
        started: float,
        completed: float,
        status_code: int | None,
        dropped: str | None = None,
    ) -> Entry | None:
        """Record that the answer to ``reply`` went out between ``started`` and ``completed``
        (``status_code`` None: the connection was closed instead, ``dropped`` says why).

        The entry is completed even when a reset or scenario load came in between: it
        belongs to the run it started in.
        """
        if reply.error is None and status_code is not None and reply.action == "respond":
            # an answer that went out whole: nothing else to record
            return self.journal.complete(
                reply.seq,
                response_started_at=started,
                completed_at=completed,
                status_code=status_code,
            )
        changes: dict[str, object] = {}
        if reply.action != "respond":
            status_code = None
        elif status_code is None:
            changes["dropped"] = dropped or "error"
        if reply.error is not None:
            changes["error_code"] = reply.error.code
        return self.journal.complete(
            reply.seq,
            response_started_at=started,
            completed_at=completed,
            status_code=status_code,
            **changes,
        )

    @property
    def entries(self) -> list[Entry]:
        return self.journal.snapshot()

    def __repr__(self) -> str:
        return f"<FakeProvider {self.scenario.name!r} dialect={self.dialect.name!r} {len(self.journal)} entries>"
