"""httpx clients (sync and async) reach in-process fakes through a patch of httpx's transports.

``httpx.HTTPTransport.handle_request`` and ``httpx.AsyncHTTPTransport.handle_async_request`` are
replaced while a fake is entered: a request for a fake's origin is answered from its ``Exchange``
(the scripted drops raised as ``httpx.ReadError``/``RemoteProtocolError``, as the transport maps a
reset or a closed connection), every other request goes to the method that was there before. What
a client stacks above its transport (its own ``BaseTransport`` wrapping an ``HTTPTransport``,
``mounts``, hooks, redirects, auth, cookies) still runs; so does a subclass of ``HTTPTransport``
that calls ``super().handle_request``.

Answering at the transport, not at httpcore's connection pool as respx mocks, keeps the fake's
requests away from a respx router the test started (its default ``assert_all_mocked`` would refuse
them, or answer them with its empty 200), whichever was entered first, and lets respx mock the
other hosts as usual; and a request costs about a third less than one routed through respx.

``InProcessTransport`` answers with the same two functions (``receive``, ``response``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import httpx

from ._exchange import Answer, Dropped, Exchange, Routes
from .http import HttpResponse
from .messages import Reply

__all__ = ["LIBRARY", "install", "receive", "response", "uninstall"]

#: The httpx module this interception patches (``_intercept`` reloads this module when
#: ``sys.modules`` holds another).
LIBRARY = httpx

_SyncHandler = Callable[[httpx.HTTPTransport, httpx.Request], httpx.Response]
_AsyncHandler = Callable[
    [httpx.AsyncHTTPTransport, httpx.Request], Coroutine[Any, Any, httpx.Response]
]

_routes: Routes | None = None
#: The methods ``install`` replaces (httpx's own, or a test's patch of them): every request for
#: another host goes to them, and ``uninstall`` puts them back. Never cleared, so that a request
#: another thread sent into the patch just before ``uninstall`` still reaches them.
_previous: tuple[_SyncHandler, _AsyncHandler] = (
    httpx.HTTPTransport.handle_request,
    httpx.AsyncHTTPTransport.handle_async_request,
)


def receive(exchange: Exchange, request: httpx.Request, body: bytes) -> tuple[Reply, HttpResponse]:
    """Hand ``request`` (its ``body`` read) to the fake behind ``exchange``."""
    url = request.url
    return exchange.receive(
        method=request.method,
        scheme=url.scheme,
        host=url.host,
        port=url.port,
        path=url.path,
        query=dict(url.params),
        headers=dict(request.headers.items()),
        body=body,
    )


def response(request: httpx.Request, answer: Answer | Dropped) -> httpx.Response:
    """The fake's answer as the transport gives it (its body not read yet), or the drop's error."""
    if isinstance(answer, Dropped):
        if answer.action == "reset":
            raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        )
    headers = list(answer.headers)
    if not any(name.lower() == "content-length" for name, _ in headers):
        headers.append(("content-length", str(len(answer.body))))
    # a stream, as the transport gives a body: read when the client reads it (``iter_raw`` too)
    return httpx.Response(
        answer.status, headers=headers, stream=httpx.ByteStream(answer.body), request=request
    )


def _find(request: httpx.Request) -> Exchange | None:
    routes = _routes
    if routes is None:
        return None
    url = request.url
    return routes.find(url.scheme, url.host, url.port)


def _handle_request(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
    exchange = _find(request)
    if exchange is None:
        return _previous[0](self, request)
    reply, rendered = receive(exchange, request, request.read())
    exchange.wait(reply)
    return response(request, exchange.answer(reply, rendered))


async def _handle_async_request(
    self: httpx.AsyncHTTPTransport, request: httpx.Request
) -> httpx.Response:
    exchange = _find(request)
    if exchange is None:
        return await _previous[1](self, request)
    reply, rendered = receive(exchange, request, await request.aread())
    await exchange.wait_async(reply)
    return response(request, exchange.answer(reply, rendered))


def install(routes: Routes) -> None:
    global _routes, _previous
    _routes = routes
    current = (httpx.HTTPTransport.handle_request, httpx.AsyncHTTPTransport.handle_async_request)
    if current[0] is not _handle_request:  # (never this module's own as what to pass on to)
        _previous = current
    httpx.HTTPTransport.handle_request = _handle_request  # type: ignore[method-assign]
    httpx.AsyncHTTPTransport.handle_async_request = _handle_async_request  # type: ignore[method-assign]


def uninstall() -> None:
    global _routes
    sync, async_ = _previous
    httpx.HTTPTransport.handle_request = sync  # type: ignore[method-assign,assignment]
    httpx.AsyncHTTPTransport.handle_async_request = async_  # type: ignore[method-assign,assignment]
    _routes = None
