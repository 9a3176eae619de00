"""The in-process adapter: a ``FakeProvider`` behind httpx, through respx, in virtual time.

``InProcessTransport`` is an httpx transport (sync and async) that hands each request to a
``FakeProvider``: it builds the neutral ``HttpRequest``, waits the scripted ``delay`` on the
provider's clock, answers with the dialect's response plus a ``Date`` header, and turns scripted
connection drops into the errors a real socket gives (``httpx.ReadError`` for ``reset``,
``httpx.RemoteProtocolError`` for ``lose_response``).

``virtual_provider(scenario)`` puts it all together for tests, with or without pytest::

    with virtual_provider("long-render") as fp:
        outcome = my_client.run(fp.url)      # any httpx.Client/AsyncClient, built anywhere
        assert fp.journal.last.status_code == 200

While the block runs, respx routes every httpx request for ``fp.url`` to the fake (other hosts
pass through), and ``VirtualTime`` makes the calling thread's ``time``, ``datetime`` and asyncio
follow the fake's ``VirtualClock`` (see ``fakeprovider._virtualtime`` for exactly what is patched).
httpx and respx are imported by this module only; ``import fakeprovider`` does not need them.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import httpx
import respx

from ._virtualtime import VirtualTime, _current
from .clock import DEFAULT_EPOCH, VirtualClock
from .dialects import HttpRequest, HttpResponse
from .engine import Reply
from .journal import Journal
from .scenario import Scenario
from .service import FakeProvider

__all__ = [
    "DEFAULT_BASE_URL",
    "InProcessTransport",
    "VirtualProvider",
    "VirtualTime",
    "virtual_provider",
]

#: Where in-process fakes answer (``.invalid`` never resolves, so a leak fails fast).
DEFAULT_BASE_URL = "http://fakeprovider.invalid"

_PEER = "in-process"


class InProcessTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport answering from ``provider`` without sockets.

    A scripted delay advances a ``VirtualClock`` (in async code under ``VirtualTime``, it is an
    ``asyncio.sleep`` on the virtual loop, so concurrent requests overlap); on a real clock it
    sleeps for real.
    """

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider

    # -- httpx -> neutral -> httpx -------------------------------------------------------

    def _neutral(self, request: httpx.Request, body: bytes) -> HttpRequest:
        url = request.url
        port = f":{url.port}" if url.port is not None else ""
        return HttpRequest(
            method=request.method,
            path=url.path,
            query=dict(url.params),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            peer=_PEER,
            base_url=f"{url.scheme}://{url.host}{port}",
        )

    def _finish(
        self, request: httpx.Request, reply: Reply, response: HttpResponse
    ) -> httpx.Response:
        clock = self.provider.clock
        if reply.action != "respond":
            now = clock.now()
            self.provider.sent(reply, started=now, completed=now, status_code=None)
            if reply.action == "reset":
                raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        headers: list[tuple[str, str]] = []
        if response.media_type is not None:
            headers.append(("content-type", response.media_type))
        headers.extend(response.headers)
        headers.append(("date", self.provider.date_header(reply)))
        started = clock.now()
        out = httpx.Response(
            response.status, headers=headers, content=response.body, request=request
        )
        self.provider.sent(
            reply, started=started, completed=clock.now(), status_code=response.status
        )
        return out

    # -- sync ----------------------------------------------------------------------------

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        reply, response = self.provider.receive(self._neutral(request, request.read()))
        if reply.delay > 0:
            clock = self.provider.clock
            if isinstance(clock, VirtualClock):
                clock.advance(reply.delay)
            else:
                time.sleep(reply.delay)
        return self._finish(request, reply, response)

    # -- async ---------------------------------------------------------------------------

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        reply, response = self.provider.receive(self._neutral(request, await request.aread()))
        if reply.delay > 0:
            clock = self.provider.clock
            if isinstance(clock, VirtualClock) and _current() is None:
                clock.advance(reply.delay)  # no virtual loop on this thread: jump at once
            else:
                await asyncio.sleep(reply.delay)
        return self._finish(request, reply, response)


def _called_from_async_respx() -> bool:
    """True when respx is resolving an async request (its ``aresolve`` is up the stack)."""
    frame = sys._getframe(2)
    for _ in range(10):
        if frame is None:
            return False
        if frame.f_code.co_name == "aresolve" and frame.f_globals.get("__name__") == "respx.router":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class VirtualProvider:
    """A ``FakeProvider`` on a ``VirtualClock``, reachable by httpx at ``url`` while entered."""

    def __init__(
        self,
        scenario: Scenario | str | Path,
        *,
        dialect: str | None = None,
        seed: int | None = None,
        time_scale: float = 1.0,
        epoch: float = DEFAULT_EPOCH,
        base_url: str = DEFAULT_BASE_URL,
        patch_time: bool = True,
    ) -> None:
        self.clock = VirtualClock(epoch=epoch)
        source = str(scenario) if isinstance(scenario, Path) else scenario
        self.provider = FakeProvider(
            source, clock=self.clock, dialect=dialect, seed=seed, time_scale=time_scale
        )
        self.url = base_url.rstrip("/")
        self.transport = InProcessTransport(self.provider)
        self.patch_time = patch_time
        self._time: VirtualTime | None = None
        self._router: respx.MockRouter | None = None

    @property
    def journal(self) -> Journal:
        return self.provider.journal

    @property
    def scenario(self) -> Scenario:
        return self.provider.scenario

    def load(self, scenario: Scenario | str | Path) -> None:
        """Play ``scenario`` from now on, from scratch (same clock)."""
        self.provider.load(str(scenario) if isinstance(scenario, Path) else scenario)

    def _side_effect(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        if _called_from_async_respx():
            return self.transport.handle_async_request(request)
        return self.transport.handle_request(request)

    def __enter__(self) -> VirtualProvider:
        if self._router is not None:
            raise RuntimeError("This VirtualProvider is already active; enter it once at a time.")
        parts = urlsplit(self.url)
        router = respx.mock(assert_all_called=False, assert_all_mocked=False)
        route = router.route(scheme=parts.scheme, host=parts.hostname)
        if parts.port is not None:
            route = router.route(scheme=parts.scheme, host=parts.hostname, port=parts.port)
        route.mock(side_effect=self._side_effect)
        router.route().pass_through()
        if self.patch_time:
            self._time = VirtualTime(self.clock)
            self._time.__enter__()
        try:
            router.start()
        except BaseException:
            if self._time is not None:
                self._time.__exit__(None, None, None)
                self._time = None
            raise
        self._router = router
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        router, self._router = self._router, None
        try:
            if router is not None:
                router.stop(quiet=True)
        finally:
            if self._time is not None:
                self._time.__exit__(exc_type, exc, tb)
                self._time = None

    def __repr__(self) -> str:
        return f"<VirtualProvider {self.scenario.name!r} at {self.url} {self.clock!r}>"


def virtual_provider(
    scenario: Scenario | str | Path,
    *,
    dialect: str | None = None,
    seed: int | None = None,
    time_scale: float = 1.0,
    epoch: float = DEFAULT_EPOCH,
    base_url: str = DEFAULT_BASE_URL,
    patch_time: bool = True,
) -> VirtualProvider:
    """A context manager: ``scenario`` served in-process to httpx at ``.url``, in virtual time.

    ``patch_time=False`` keeps real ``time``/``datetime``/asyncio (the clock then moves only by
    scripted delays or your own ``fp.clock.advance()``).
    """
    return VirtualProvider(
        scenario,
        dialect=dialect,
        seed=seed,
        time_scale=time_scale,
        epoch=epoch,
        base_url=base_url,
        patch_time=patch_time,
    )
