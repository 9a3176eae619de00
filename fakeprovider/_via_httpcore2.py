"""httpx2 clients (sync and async) reach in-process fakes through a patch of ``httpcore2``.

httpx2 (the fork that ``openai`` 3.x and ``google-genai`` 3.x are built on) sends through its own
``httpcore2``. This module does what respx's ``HTTPCoreMocker`` does for httpcore: it replaces
``ConnectionPool.handle_request`` and ``AsyncConnectionPool.handle_async_request`` (proxies
subclass the pools), answers requests for a fake's origin from its ``Exchange`` and passes every
other request to the real method. Whatever the client stacked above the pool (its own transport,
retry wrappers, ``mounts``) still runs, and httpx2 maps the scripted drops to
``httpx2.ReadError``/``RemoteProtocolError`` itself.

Imported only when httpcore2 is installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from http import HTTPStatus

import httpcore2

from ._exchange import Answer, Dropped, Exchange, Routes, split_target
from .http import HttpResponse
from .messages import Reply

__all__ = ["LIBRARY", "install", "uninstall"]

#: The httpcore2 module this interception patches (``_intercept`` reloads this module when
#: ``sys.modules`` holds another).
LIBRARY = httpcore2

_REAL_SYNC = httpcore2.ConnectionPool.handle_request
_REAL_ASYNC = httpcore2.AsyncConnectionPool.handle_async_request

_routes: Routes | None = None


def _find(request: httpcore2.Request) -> Exchange | None:
    routes = _routes
    if routes is None:
        return None
    url = request.url
    return routes.find(url.scheme.decode("ascii"), url.host.decode("ascii"), url.port)


def _receive(
    exchange: Exchange, request: httpcore2.Request, body: bytes
) -> tuple[Reply, HttpResponse]:
    url = request.url
    path, query = split_target(url.target.decode("ascii"))
    headers: dict[str, str] = {}
    for raw_name, raw_value in request.headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return exchange.receive(
        method=request.method.decode("ascii"),
        scheme=url.scheme.decode("ascii"),
        host=url.host.decode("ascii"),
        port=url.port,
        path=path,
        query=query,
        headers=headers,
        body=body,
    )


def _response(answer: Answer | Dropped) -> httpcore2.Response:
    if isinstance(answer, Dropped):
        if answer.action == "reset":
            raise httpcore2.ReadError("[Errno 104] Connection reset by peer")
        raise httpcore2.RemoteProtocolError("Server disconnected without sending a response.")
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]
    if not any(k.lower() == b"content-length" for k, _ in headers):
        headers.append((b"content-length", str(len(answer.body)).encode("ascii")))
    try:
        phrase = HTTPStatus(answer.status).phrase
    except ValueError:
        phrase = ""
    return httpcore2.Response(
        answer.status,
        headers=headers,
        content=answer.body,
        extensions={"http_version": b"HTTP/1.1", "reason_phrase": phrase.encode("ascii")},
    )


def _handle_request(
    self: httpcore2.ConnectionPool, request: httpcore2.Request
) -> httpcore2.Response:
    exchange = _find(request)
    if exchange is None:
        return _REAL_SYNC(self, request)
    stream = request.stream
    assert isinstance(stream, Iterable)
    reply, rendered = _receive(exchange, request, b"".join(stream))
    exchange.wait(reply)
    return _response(exchange.answer(reply, rendered))


async def _handle_async_request(
    self: httpcore2.AsyncConnectionPool, request: httpcore2.Request
) -> httpcore2.Response:
    exchange = _find(request)
    if exchange is None:
        return await _REAL_ASYNC(self, request)
    stream = request.stream
    assert isinstance(stream, AsyncIterable)
    body = b"".join([part async for part in stream])
    reply, rendered = _receive(exchange, request, body)
    await exchange.wait_async(reply)
    return _response(exchange.answer(reply, rendered))


def install(routes: Routes) -> None:
    global _routes
    _routes = routes
    httpcore2.ConnectionPool.handle_request = _handle_request  # type: ignore[method-assign]
    httpcore2.AsyncConnectionPool.handle_async_request = _handle_async_request  # type: ignore[method-assign]


def uninstall() -> None:
    global _routes
    httpcore2.ConnectionPool.handle_request = _REAL_SYNC  # type: ignore[method-assign]
    httpcore2.AsyncConnectionPool.handle_async_request = _REAL_ASYNC  # type: ignore[method-assign]
    _routes = None
