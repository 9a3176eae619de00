"""requests (and any urllib3 2 client) reach in-process fakes through a patch of urllib3.

``HTTPConnectionPool._make_request`` sends one attempt on a connection; ``urlopen`` around it
does the retries (a ``Retry`` mounted with ``HTTPAdapter(max_retries=...)``, ``Retry-After``
included) and requests around that does redirects and cookies. Replacing that one method keeps
all of it: a request for a fake's origin is answered from its ``Exchange`` with a
``urllib3.HTTPResponse`` over the body, and a scripted drop raises what a socket raises there
(``ConnectionResetError``, ``http.client.RemoteDisconnected``), which urllib3 and requests then
wrap as they always do. No connection is opened and no name is resolved. Other origins go to
the real method.

Imported only when urllib3 2.x is installed.
"""

from __future__ import annotations

import errno
import io
from collections.abc import Iterable
from http import HTTPStatus
from http.client import RemoteDisconnected
from typing import Any

import urllib3
from urllib3 import HTTPHeaderDict
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.response import BaseHTTPResponse, HTTPResponse

from ._exchange import Dropped, Exchange, Routes, split_target

__all__ = ["LIBRARY", "install", "uninstall"]

#: The urllib3 module this interception patches (``_intercept`` reloads this module when
#: ``sys.modules`` holds another).
LIBRARY = urllib3

_REAL = HTTPConnectionPool._make_request

_routes: Routes | None = None


def _body_bytes(body: object) -> bytes:
    """The whole request body, however urllib3 was given it."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    read = getattr(body, "read", None)
    if callable(read):
        data = read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    if isinstance(body, Iterable):
        return b"".join(
            part.encode("utf-8") if isinstance(part, str) else bytes(part) for part in body
        )
    raise TypeError(f"cannot send a request body of type {type(body).__name__}")


def _make_request(
    pool: HTTPConnectionPool,
    conn: Any,
    method: str,
    url: str,
    body: Any = None,
    headers: Any = None,
    retries: Any = None,
    *args: Any,
    **kwargs: Any,
) -> BaseHTTPResponse:
    routes = _routes
    host = pool.host.strip("[]")
    exchange: Exchange | None = None
    if routes is not None and url.startswith("/"):
        exchange = routes.find(pool.scheme, host, pool.port)
    if exchange is None:
        return _REAL(pool, conn, method, url, body, headers, retries, *args, **kwargs)
    pool.num_requests += 1
    path, query = split_target(url)
    reply, rendered = exchange.receive(
        method=method,
        scheme=pool.scheme,
        host=host,
        port=pool.port,
        path=path,
        query=query,
        headers={str(k): str(v) for k, v in dict(headers or {}).items()},
        body=_body_bytes(body),
    )
    exchange.wait(reply)
    answer = exchange.answer(reply, rendered)
    if isinstance(answer, Dropped):
        if answer.action == "reset":
            raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        raise RemoteDisconnected("Remote end closed connection without response")
    out_headers = [*answer.headers]
    if not any(k.lower() == "content-length" for k, _ in out_headers):
        out_headers.append(("content-length", str(len(answer.body))))
    header_dict = HTTPHeaderDict()
    for name, value in out_headers:
        header_dict.add(name, value)
    try:
        reason = HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    response = HTTPResponse(
        body=io.BytesIO(answer.body),
        headers=header_dict,
        status=answer.status,
        version=11,
        version_string="HTTP/1.1",
        reason=reason,
        preload_content=kwargs.get("preload_content", True),
        decode_content=kwargs.get("decode_content", True),
        enforce_content_length=kwargs.get("enforce_content_length", True),
        request_method=method,
        request_url=url,
        retries=retries,
    )
    response._connection = kwargs.get("response_conn")
    response._pool = pool
    return response


def install(routes: Routes) -> None:
    global _routes
    _routes = routes
    HTTPConnectionPool._make_request = _make_request  # type: ignore[method-assign,assignment]


def uninstall() -> None:
    global _routes
    HTTPConnectionPool._make_request = _REAL  # type: ignore[method-assign]
    _routes = None
