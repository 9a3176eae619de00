"""The in-process adapter: a ``FakeProvider`` for httpx, httpx2 and requests, in virtual time.

``virtual_provider(scenario)`` serves a scenario without sockets, for tests with or without
pytest::

    with virtual_provider("long-render") as fp:
        outcome = my_client.run(fp.url)      # any httpx, httpx2 or requests client, built anywhere
        assert fp.journal.last.status_code == 200

While the block runs, every request for ``fp.url`` is answered by the fake (other hosts pass
through): httpx clients (sync and async) through a patch of httpx's transports, httpx2 clients
(sync and async, what ``openai`` 3.x and ``google-genai`` 3.x use) through a patch of httpcore2,
requests through a patch of urllib3 (see ``fakeprovider._intercept``); httpx2 and requests are
served when they are installed and not needed otherwise. Any other client fails with
``NotInterceptedError`` when it looks up the fake's host. ``VirtualTime`` makes the calling thread's ``time``, ``datetime`` and
asyncio follow the fake's ``VirtualClock`` (see ``fakeprovider.virtualtime``).

A scripted delay advances the clock; scripted connection drops become the errors a real socket
gives (``httpx.ReadError`` for ``reset``, ``httpx.RemoteProtocolError`` for ``lose_response``,
and the same in httpx2; ``requests.ConnectionError`` wrapping ``ConnectionResetError`` or
``RemoteDisconnected``). This module needs httpx, which fakeprovider depends on;
``import fakeprovider`` does not import it.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import httpx

from . import _intercept, _via_httpx
from ._exchange import Exchange, Origin
from .clock import DEFAULT_EPOCH, VirtualClock
from .errors import NotInterceptedError
from .journal import Journal
from .provider import FakeProvider
from .scenario import Scenario
from .virtualtime import VirtualTime

__all__ = [
    "DEFAULT_BASE_URL",
    "InProcessTransport",
    "NotInterceptedError",
    "VirtualProvider",
    "VirtualTime",
    "virtual_provider",
]

#: Where in-process fakes answer (``.invalid`` never resolves, so a leak fails fast).
DEFAULT_BASE_URL = "http://fakeprovider.invalid"


class InProcessTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport answering from ``provider`` without sockets.

    A scripted delay advances a ``VirtualClock`` (in async code under ``VirtualTime``, it is an
    ``asyncio.sleep`` on the virtual loop, so concurrent requests overlap); on a real clock it
    sleeps for real. ``httpx.Client(transport=InProcessTransport(provider))`` works without
    entering a fake or virtual time.
    """

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider
        #: The library-neutral half (every interception serves through it).
        self.exchange = Exchange(provider)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self.exchange
        reply, rendered = _via_httpx.receive(exchange, request, request.read())
        exchange.wait(reply)
        return _via_httpx.response(request, exchange.answer(reply, rendered))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self.exchange
        reply, rendered = _via_httpx.receive(exchange, request, await request.aread())
        await exchange.wait_async(reply)
        return _via_httpx.response(request, exchange.answer(reply, rendered))


class VirtualProvider:
    """A ``FakeProvider`` on a ``VirtualClock``, reachable at ``url`` while entered by httpx,
    httpx2 and requests clients."""

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
        self._entered = False

    @property
    def journal(self) -> Journal:
        return self.provider.journal

    @property
    def scenario(self) -> Scenario:
        return self.provider.scenario

    def load(self, scenario: Scenario | str | Path) -> None:
        """Play ``scenario`` from now on, from scratch (same clock)."""
        self.provider.load(str(scenario) if isinstance(scenario, Path) else scenario)

    def __enter__(self) -> VirtualProvider:
        if self._entered:
            raise RuntimeError("This VirtualProvider is already active; enter it once at a time.")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"base_url={self.url!r} is not an http:// or https:// URL with a host."
            )
        if self.patch_time:
            self._time = VirtualTime(self.clock)
            self._time.__enter__()
        try:
            _intercept.enter(
                Origin.of(parts.scheme, parts.hostname, parts.port), self.transport.exchange
            )
        except BaseException:
            if self._time is not None:
                self._time.__exit__(None, None, None)
                self._time = None
            raise
        self._entered = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entered, self._entered = self._entered, False
        try:
            if entered:
                _intercept.leave(self.transport.exchange)
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
    """A context manager: ``scenario`` served in-process at ``.url`` to httpx, httpx2 and
    requests clients, in virtual time.

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
