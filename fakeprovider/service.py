"""A fake provider, independent of transport: scenario + clock + dialect + engine + journal.

The Starlette app and the in-process httpx transport both drive a ``FakeProvider``: they turn
what they received into an ``HttpRequest``, call ``receive``, wait ``reply.delay``, send the
``HttpResponse`` (plus a ``Date`` header from ``reply.respond_at``) and call ``sent``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterable
from typing import IO
from urllib.parse import quote

from .clock import Clock, RealClock
from .dialects import Dialect, HttpRequest, HttpResponse, get_dialect
from .dialects.base import json_response
from .engine import Engine, Reply, Request, StateChange
from .httpdate import format_http_date
from .journal import Entry, Journal
from .scenario import Scenario, load_scenario

__all__ = ["FakeProvider"]

#: Where a failure of the fake itself is logged, with its traceback (stderr unless configured).
logger = logging.getLogger("fakeprovider.server")

INTERNAL_ERROR_MESSAGE = "fakeprovider failed; this is a bug, please report it."


def internal_error() -> HttpResponse:
    """The answer when the fake itself failed: 500 ``internal_error`` (the same in every
    dialect, since the dialect may be what failed)."""
    return json_response(
        500, {"error": {"code": "internal_error", "message": INTERNAL_ERROR_MESSAGE}}
    )


def safe_header_value(value: str) -> str:
    """``value`` with every character but visible ASCII and space percent-encoded (as UTF-8).

    Header values a dialect echoes from the request (a job id from the path, say) may hold
    anything the percent-decoded path held: a NUL, U+FFFD, a bidi override. Sent as they
    are, they would make the answer fail after the request was journaled.
    """
    if value.isascii() and value.isprintable():
        return value
    return "".join(
        c if c.isascii() and c.isprintable() else quote(c.encode("utf-8", "surrogatepass"))
        for c in value
    )


class FakeProvider:
    """Plays one scenario at a time; ``reset()`` starts it over with an empty journal."""

    def __init__(
        self,
        scenario: Scenario | str,
        *,
        clock: Clock | None = None,
        dialect: str | None = None,
        seed: int | None = None,
        time_scale: float = 1.0,
        journal_sink: IO[str] | None = None,
        allow_webhook_hosts: Iterable[str] = (),
    ) -> None:
        self.clock: Clock = clock if clock is not None else RealClock()
        self.journal = Journal(sink=journal_sink)
        self._lock = threading.RLock()
        self._dialect_override = dialect
        self._seed_override = seed
        self._time_scale = time_scale
        #: Hosts besides loopback addresses and ``localhost`` that webhooks may be sent to.
        self.allow_webhook_hosts = frozenset(allow_webhook_hosts)
        #: The fake's own address as its clients use it (the last request's), for the links
        #: a dialect puts in webhook bodies (Replicate ``urls``, Luma ``assets.video``...).
        self.base_url = "http://127.0.0.1"
        self.load(scenario)

    def load(self, scenario: Scenario | str) -> None:
        """Play ``scenario`` (a Scenario, bundled name, path or YAML) from now on, from scratch."""
        loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario
        if self._time_scale != 1.0:
            loaded = loaded.scaled(self._time_scale)
        if self._seed_override is not None:
            loaded = dataclasses.replace(loaded, seed=self._seed_override)
        dialect = get_dialect(self._dialect_override or loaded.dialect)
        dialect.epoch = self.clock.epoch
        dialect.time_scale = self._time_scale
        with self._lock:
            self.scenario = loaded
            self.dialect: Dialect = dialect
            self.reset()

    def reset(self) -> None:
        """Forget every job and journal entry; the scenario starts again at the current time."""
        with self._lock:
            self.journal.clear()
            self.engine = Engine(
                self.scenario,
                start=self.clock.now(),
                epoch=self.clock.epoch,
                journal=self.journal,
                new_id=self.dialect.new_job_id,
                poll_hints=self.dialect.poll_hints,
                inline_result=self.dialect.inline_result,
            )

    def receive(self, http: HttpRequest) -> tuple[Reply, HttpResponse]:
        """Decide the answer to ``http`` at the clock's current reading.

        Never raises for a request: when the dialect fails to parse or render it (a bug), the
        failure is logged with its traceback and the answer is a 500 ``internal_error``, which
        ``sent`` then journals as the status the client got.
        """
        self.base_url = http.base_url
        try:
            request: Request = self.dialect.parse(http)
        except Exception:
            logger.exception("fakeprovider failed to parse %s %s", http.method, http.path)
            request = Request(
                kind="unknown",
                method=http.method,
                path=http.path,
                client=http.client,
                problem=INTERNAL_ERROR_MESSAGE,
                problem_status=500,
                problem_code="internal_error",
            )
        with self._lock:
            reply = self.engine.handle(request, self.clock.now())
        if reply.action == "reset":
            return reply, HttpResponse(0, b"", None)  # nothing is ever sent
        try:
            response = self.dialect.render(reply, http)
        except Exception:
            logger.exception("fakeprovider failed to answer %s %s", http.method, http.path)
            return reply, internal_error()
        if response.status == 405 and request.problem_code == "method_not_allowed":
            allowed = ", ".join(self.dialect.allowed_methods(http.path))
            response = dataclasses.replace(
                response, headers=(*response.headers, ("allow", allowed))
            )
        if not all(safe_header_value(v) == v for _, v in response.headers):
            headers = tuple((name, safe_header_value(v)) for name, v in response.headers)
            response = dataclasses.replace(response, headers=headers)
        return reply, response

    def advance(self, since: int = 0) -> tuple[Engine, list[StateChange], float | None]:
        """Bring every job up to the clock's reading, so state changes happen on time.

        Returns the engine, its state changes from index ``since`` on, and the clock reading
        at which the next timed step is due (None when none is).
        """
        with self._lock:
            engine = self.engine
            engine.advance_all(self.clock.now())
            return engine, engine.changes[since:], engine.next_due()

    def date_header(self, reply: Reply) -> str:
        return format_http_date(self.clock.epoch + reply.respond_at)

    def sent(
        self, reply: Reply, *, started: float, completed: float, status_code: int | None
    ) -> Entry | None:
        """Record that the answer to ``reply`` went out between ``started`` and ``completed``."""
        with self._lock:
            return self.engine.complete(
                reply, started=started, completed=completed, status_code=status_code
            )

    @property
    def entries(self) -> list[Entry]:
        return self.journal.snapshot()

    def __repr__(self) -> str:
        return f"<FakeProvider {self.scenario.name!r} dialect={self.dialect.name!r} {len(self.journal)} entries>"
