"""One request/answer with an in-process fake, whatever HTTP library carried it.

Each interception (``_via_httpx`` for httpx, ``_via_httpcore2`` for httpx2, ``_via_urllib3`` for
requests) turns its library's request into an ``HttpRequest``, hands it to
an ``Exchange``, waits the scripted delay with ``wait``/``wait_async`` and turns the ``Answer``
(or the ``Dropped`` connection) back into its library's response or error. ``Routes`` holds the
fakes entered in this process, by origin, so the interceptions can tell a fake's request from
one they must pass through.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, unquote

from .clock import VirtualClock
from .http import HttpRequest, HttpResponse
from .messages import Reply
from .provider import FakeProvider
from .virtualtime import _current

__all__ = ["PEER", "Answer", "Dropped", "Exchange", "Origin", "Routes", "split_target"]

#: The journal's ``client`` for in-process requests without an ``X-Client-Id`` header.
PEER = "in-process"

_DEFAULT_PORTS: Mapping[str, int] = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """Where a fake answers: scheme, host and port (``None``: any port)."""

    scheme: str
    host: str
    port: int | None

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        if scheme.lower() != self.scheme or host.lower().rstrip(".") != self.host:
            return False
        if self.port is None:
            return True
        return (port or _DEFAULT_PORTS.get(scheme.lower())) == self.port

    @classmethod
    def of(cls, scheme: str, host: str, port: int | None) -> Origin:
        scheme = scheme.lower()
        if port is not None and port == _DEFAULT_PORTS.get(scheme):
            port = None
        return cls(scheme, host.lower().rstrip("."), port)


@dataclass(frozen=True)
class Answer:
    """What the client receives: status, headers (``Date`` and content type included), body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True)
class Dropped:
    """The scripted connection drop the client sees instead of an answer."""

    action: Literal["reset", "lose_response"]


def split_target(target: str) -> tuple[str, dict[str, str]]:
    """A request target (``/v1/jobs/j1?wait=1``) as its decoded path and query (first value wins,
    as ``httpx.URL.params`` reads it)."""
    raw_path, _, raw_query = target.partition("?")
    query: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query.setdefault(name, value)
    return unquote(raw_path) or "/", query


class Exchange:
    """Serves requests from ``provider`` without sockets, on its clock."""

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider

    def receive(
        self,
        *,
        method: str,
        scheme: str,
        host: str,
        port: int | None,
        path: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes,
    ) -> tuple[Reply, HttpResponse]:
        """Hand the request to the fake: how long to wait (``reply.delay``) and what to answer."""
        shown_port = f":{port}" if port is not None and port != _DEFAULT_PORTS.get(scheme) else ""
        http = HttpRequest(
            method=method,
            path=path,
            query=dict(query),
            headers={k.lower(): v for k, v in headers.items()},
            body=body,
            peer=PEER,
            base_url=f"{scheme}://{host}{shown_port}",
        )
        return self.provider.receive(http)

    def wait(self, reply: Reply) -> None:
        """Let the scripted delay pass, blocking: the virtual clock jumps, a real one sleeps."""
        if reply.delay <= 0:
            return
        clock = self.provider.clock
        if isinstance(clock, VirtualClock):
            clock.advance(reply.delay)
        else:
            time.sleep(reply.delay)

    async def wait_async(self, reply: Reply) -> None:
        """Let the scripted delay pass on the event loop, so that other tasks run meanwhile."""
        if reply.delay <= 0:
            return
        clock = self.provider.clock
        if isinstance(clock, VirtualClock) and _current() is None:
            clock.advance(reply.delay)  # no virtual loop on this thread: jump at once
        else:
            await asyncio.sleep(reply.delay)

    def answer(self, reply: Reply, response: HttpResponse) -> Answer | Dropped:
        """The answer to ``reply`` (journaled as sent now), or the scripted drop."""
        clock = self.provider.clock
        now = clock.now()
        if reply.action != "respond":
            self.provider.sent(reply, started=now, completed=now, status_code=None)
            return Dropped("reset" if reply.action == "reset" else "lose_response")
        headers: list[tuple[str, str]] = []
        if response.media_type is not None:
            headers.append(("content-type", response.media_type))
        headers.extend(response.headers)
        headers.append(("date", self.provider.date_header(reply)))
        self.provider.sent(reply, started=now, completed=clock.now(), status_code=response.status)
        return Answer(response.status, tuple(headers), response.body)


class Routes:
    """The exchanges entered in this process, by origin; an interception is installed while
    at least one is (``install``/``uninstall`` are called under the lock)."""

    def __init__(self, install: Callable[[], None], uninstall: Callable[[], None]) -> None:
        self._install = install
        self._uninstall = uninstall
        self._lock = threading.Lock()
        self._routes: list[tuple[Origin, Exchange]] = []

    def add(self, origin: Origin, exchange: Exchange) -> None:
        with self._lock:
            if not self._routes:
                self._install()
            self._routes.append((origin, exchange))

    def remove(self, exchange: Exchange) -> None:
        with self._lock:
            self._routes = [(o, e) for o, e in self._routes if e is not exchange]
            if not self._routes:
                self._uninstall()

    def serves_host(self, host: str, port: int | None) -> bool:
        """True when a fake answers for ``host`` on ``port`` (any scheme; ``None``: any port)."""
        wanted = host.lower().rstrip(".")
        return any(
            origin.host == wanted and (origin.port is None or port is None or origin.port == port)
            for origin, _ in self._routes
        )

    def find(self, scheme: str, host: str, port: int | None) -> Exchange | None:
        for origin, exchange in self._routes:
            if origin.matches(scheme, host, port):
                return exchange
        return None
