"""A fake provider, independent of transport: scenario + clock + dialect + engine + journal.

The Starlette app and the in-process httpx transport both drive a ``FakeProvider``: they turn
what they received into an ``HttpRequest``, call ``receive``, wait ``reply.delay``, send the
``HttpResponse`` (plus a ``Date`` header from ``reply.respond_at``) and call ``sent``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from typing import IO

from .clock import Clock, RealClock
from .dialects import Dialect, HttpRequest, HttpResponse, get_dialect
from .engine import Engine, Reply, Request, StateChange
from .httpdate import format_http_date
from .journal import Entry, Journal
from .scenario import Scenario, load_scenario

__all__ = ["FakeProvider"]


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
            )

    def receive(self, http: HttpRequest) -> tuple[Reply, HttpResponse]:
        """Decide the answer to ``http`` at the clock's current reading."""
        self.base_url = http.base_url
        request: Request = self.dialect.parse(http)
        with self._lock:
            reply = self.engine.handle(request, self.clock.now())
        if reply.action == "reset":
            return reply, HttpResponse(0, b"", None)  # nothing is ever sent
        return reply, self.dialect.render(reply, http)

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
