"""The ASGI app: a ``FakeProvider`` on real sockets, plus the admin API.

API requests take a lean path: ``FakeProviderApp`` builds a neutral ``HttpRequest`` straight from
the ASGI scope, asks the provider, waits any scripted delay, sends the answer with a ``Date``
header from the scenario clock, and records when the response started and completed (or drops
the connection when the scenario scripts a reset). The admin API under the reserved prefix
``/__admin/`` is a Starlette app.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import itertools
import json
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request as StarletteRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._rules import Violation
from ._suggest import did_you_mean
from .dialects import Dialect
from .errors import ScenarioError
from .http import (
    NO_BODY,
    HttpRequest,
    HttpResponse,
    _name_problem,
    client_of,
    fast_constructor,
    format_http_date,
)
from .invariants import Report
from .journal import Entry, Journal, RunFile
from .messages import ApiError, Reply, Request
from .provider import (
    CHECKED_STATUSES as _CHECKED,
)
from .provider import (
    INTERNAL_ERROR_MESSAGE,
    NOTHING_SENT,
    FakeProvider,
    internal_error,
)
from .scenario import bundled_scenarios, load_scenario, parse_scenario

__all__ = ["FakeProviderApp", "admin_refusal", "create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
ADMIN_PREFIX = "/__admin/"


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def _abort(receive: Receive) -> None:
    """Drop the connection under ``receive`` at once (RST), as a crashed upstream would."""
    cycle = getattr(receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:  # pragma: no cover - not running under uvicorn
        raise ConnectionAbortedError("scripted connection reset")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):  # a platform without SO_LINGER just closes
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
    if cycle is not None and hasattr(cycle, "disconnected"):
        cycle.disconnected = True  # so uvicorn neither logs nor answers 500


def _client(request: StarletteRequest) -> str:
    """Who sent an admin request, as the journal names clients on every route (``client_of``)."""
    client = request.scope.get("client")
    peer = f"{client[0]}:{client[1]}" if client else "unknown"
    return client_of(request.headers.get("x-client-id"), peer)


class FakeProviderApp:
    """The ASGI application serving ``provider`` (``create_app(provider)`` builds one).

    ``begin_shutdown()`` (the server calls it when asked to stop) cuts scripted delays short:
    the requests in flight are answered at once, so they are journaled before the server
    exits rather than cancelled mid-answer.
    """

    def __init__(self, provider: FakeProvider, *, admin_token: str | None = None) -> None:
        self.provider = provider
        self.admin = _admin_app(provider)
        self.admin_token = admin_token
        self._stopping: asyncio.Event | None = None
        self.stopping = False
        #: What ``_request`` made of the last scopes, by their parts.
        self._requests: dict[tuple[Any, ...], HttpRequest] = {}
        #: The lanes of the last scopes without a body (``_lane``), by their parts.
        self._lanes_kept: dict[tuple[Any, ...], _Lane] = {}
        #: The body lanes of the last scopes with a body (``_body_lane``), by their parts.
        self._body_lanes: dict[tuple[Any, ...], _BodyLane] = {}
        #: For a dialect that reads only some headers (``_wanted``): the lanes of
        #: ``_lanes_kept`` found again, by every part of their scopes (``_scope_key``): a
        #: request whose every header repeats an earlier one's finds its lane without picking
        #: the headers read. Looked in while found at least once for every ``_HIT_SHARE``
        #: looks (looked at every ``_LANE_WINDOW`` looks), else by one request in ``_PROBE``;
        #: the requests seen, the looks and the lanes found since.
        self._whole_lanes: dict[tuple[Any, ...], _Lane] = {}
        self._whole_seen = 0
        self._whole_looks = 0
        self._whole_found = 0
        self._whole_on = True
        #: Lanes found and lanes made since ``_keep`` last looked, and whether the lanes made
        #: (and their ``HttpRequest``s) are kept.
        self._hits = 0
        self._made = 0
        self._keeping = True
        #: The dialect ``_wanted`` is for, and which header names (as sent, any case) that
        #: dialect reads (``Dialect.headers_read``): what lanes are kept by and made of. None:
        #: every header (a dialect class that declares none, or a provider without lanes).
        self._wanted_by: Dialect | None = None
        self._wanted: _Wanted | None = None
        #: Whether requests without a body take their lane (``_lane``, the journal completed
        #: in place): not for a provider whose class answers or journals
        #: otherwise (the pytest plugin's records what fails in ``receive`` and ``sent``).
        self._lanes = type(provider).receive is FakeProvider.receive and (
            type(provider).sent is FakeProvider.sent
            and type(provider).respond is FakeProvider.respond
        )

    def begin_shutdown(self) -> None:
        """Answer every request waiting out a scripted delay now (call on the server's loop)."""
        self.stopping = True
        if self._stopping is not None:
            self._stopping.set()

    async def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``, or less when the server stops; True when cut short. At least
        ``seconds``: uvloop's timers count from the loop's cached time, in whole milliseconds,
        and may fire a millisecond early, so whatever is left is waited out."""
        if self._stopping is None:
            self._stopping = asyncio.Event()
            if self.stopping:
                self._stopping.set()
        if self._stopping.is_set():
            return True
        deadline = time.monotonic() + seconds
        left = seconds
        while left > 0:  # ends at the deadline: each pass waits out what is left
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=left)
                return True
            left = deadline - time.monotonic()
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(ADMIN_PREFIX):
            await self._other(scope, receive, send)
            return
        # The API's lean path, in this one coroutine: what ``_Exchange`` tracks for a failure
        # (the reply still to journal, whether the status line went out) is kept in locals,
        # and an ``_Exchange`` is made of them only when something fails.
        provider = self.provider
        reply: Reply | None = None
        started = False
        #: The raw header fields of an answer whose headers passed every check (``_sendable``).
        fields: list[tuple[bytes, bytes]] | None = None
        try:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body: bytes | bytearray = message.get("body", b"")
            if (
                not self._lanes
                or message.get("more_body", False)
                or (body and len(body) > provider.scenario.max_body_bytes)
            ):
                received = await self._received(scope, receive, message)
                if received is None:
                    return  # the client went away while sending the body
                reply, response = received
            else:
                # The request's lane, kept by the scope's parts while its dialect plays: the
                # request parsed of the same scope before (no body: a status read, a download,
                # a list..., ``_lane``) or the body alone parsed by the route's parser (a
                # submit, ``_body_lane``), straight to the engine, and a reply that neither a
                # fault nor a refusal touches straight to the dialect's renderer for its kind.
                # Everything else is answered by the provider's own steps, as
                # ``provider.respond`` takes them (tests/test_app_lanes.py).
                http: HttpRequest
                request: Request | None
                wanted = (
                    self._wanted
                    if self._wanted_by is provider.dialect
                    else self._wanting(provider.dialect)
                )
                if body:
                    length = b"%d" % len(body)
                    try:
                        key = _body_key(scope, length) if wanted is None else _key(scope, wanted)
                        body_lane = self._body_lanes.get(key)
                    except TypeError:  # a part that cannot be a key (a header as a list)
                        key, body_lane = None, None
                    if body_lane is None or body_lane[1] is not provider.dialect:
                        body_lane = self._body_lane(scope, provider, key)
                    else:
                        self._hits += 1
                    bare, dialect, parse, renderers, said = body_lane
                    # ``bare`` with the body (and this body's length where the lane's said
                    # another): the same fields, in the same order
                    http = _new(HttpRequest)
                    if said is None or said == length:
                        http.__dict__.update(bare.__dict__, body=bytes(body))
                    else:
                        headers = {**bare.headers, "content-length": length.decode()}
                        http.__dict__.update(bare.__dict__, headers=headers, body=bytes(body))
                    if parse is None:
                        request = None
                    else:
                        try:
                            request = parse(http)
                        except Exception as exc:
                            request = provider.unparsed(http, exc)
                        kept = renderers.get(request.kind)
                        if kept is None:
                            kept = renderers[request.kind] = dialect.renderer(request.kind)
                        render = kept
                else:
                    found: _Lane | None = None
                    whole: tuple[Any, ...] | None = None
                    if wanted is not None:
                        # first by every part of the scope (``_whole_lanes``): the same scope
                        # as a lane's found again, whose headers need no picking
                        seen = self._whole_seen = self._whole_seen + 1
                        if self._whole_on or seen % _PROBE == 0:
                            try:
                                whole = (
                                    scope["method"],
                                    scope["path"],
                                    scope.get("query_string", b""),
                                    scope.get("client"),
                                    scope.get("scheme", "http"),
                                    *scope["headers"],
                                )
                                found = self._whole_lanes.get(whole)
                            except TypeError:  # a part that cannot be a key
                                whole = None
                            else:
                                looks = self._whole_looks = self._whole_looks + 1
                                if found is not None and found[1] is provider.dialect:
                                    self._whole_found += 1
                                if looks >= _LANE_WINDOW:
                                    self._whole_on = self._whole_found * _HIT_SHARE >= looks
                                    self._whole_found = self._whole_looks = 0
                    if found is not None and found[1] is provider.dialect:
                        lane = found
                        self._hits += 1
                    else:
                        try:
                            key = _scope_key(scope) if wanted is None else _key(scope, wanted)
                            found = self._lanes_kept.get(key)
                        except TypeError:  # a part that cannot be a key (a header as a list)
                            key, found = None, None
                        if found is None or found[1] is not provider.dialect:
                            lane = self._lane(scope, provider, key)
                        else:
                            lane = found
                            self._hits += 1
                            if whole is not None:  # found again: kept by every part too
                                wholes = self._whole_lanes
                                if len(wholes) >= _REQUESTS_KEPT:
                                    wholes.clear()
                                wholes[whole] = lane
                    http, dialect, request, render = lane
                if request is None:  # the dialect parses each request whole
                    reply, response = provider.receive(http)
                else:
                    provider.base_url = http.base_url
                    with provider._lock:
                        now = provider.clock.now()
                        try:
                            reply = provider.engine.handle(request, now)
                            failed = False
                        except Exception as exc:
                            reply, failed = provider.unhandled(http, request, now, exc), True
                    if failed:  # the engine failed (a bug): its 500 is answered
                        response = internal_error()
                    elif reply.action == "reset":
                        response = NOTHING_SENT
                    else:
                        try:
                            if reply.fault is None and reply.error is None:
                                response = render(reply, http)
                            else:
                                response = dialect.render(reply, http)
                        except Exception as exc:
                            reply, response = provider.unrendered(http, reply, exc)
                        else:
                            status = response.status
                            if response.headers or not 200 <= status <= 599 or status in _CHECKED:
                                # headers that every check would pass as they are, on a final
                                # status that carries a body, are encoded at once
                                # (``_sendable``); the others are checked
                                if 200 <= status <= 599 and status not in _CHECKED:
                                    fields = _sendable(response.headers)
                                if fields is None:
                                    reply, response = provider.checked(
                                        http, request, reply, response
                                    )
            cut_short = reply.delay > 0 and await self._pause(reply.delay)
            clock = provider.clock
            if reply.action != "respond":
                now = clock.now()
                dropped, reply = reply, None
                provider.sent(dropped, started=now, completed=now, status_code=None)
                _abort(receive)
                return
            # Stopping: the answer goes out now, dated now rather than at the scripted time.
            date = (_date(provider) if cut_short else provider.date_header(reply)).encode("latin-1")
            status = response.status
            answer = response.body
            if response.headers or response.media_type != "application/json" or status in NO_BODY:
                if fields is not None and response.media_type == "application/json":
                    # what _raw_headers makes of it (a final status that carries a body)
                    raw = [
                        (b"content-length", b"%d" % len(answer)),
                        _JSON_TYPE,
                        *fields,
                        (b"date", date),
                    ]
                else:
                    raw = _raw_headers(response, date)
            else:  # what _raw_headers makes of a JSON answer with no headers of its own
                raw = [(b"content-length", b"%d" % len(answer)), _JSON_TYPE, (b"date", date)]
            # One clock reading for both ends of the answer: the entry is journaled before the
            # body goes out (below), so a second reading would only say when the status line had
            # been handed to the server, microseconds later; started == completed keeps
            # received <= started <= completed.
            now = clock.now()
            started = True
            await send({"type": "http.response.start", "status": status, "headers": raw})
            # Journal before the body goes out (asyncio buffers the write at once anyway), so that
            # a client that has read the whole response always finds its entry complete.
            answered, reply = reply, None
            if answered.error is None and self._lanes:
                # what ``provider.sent`` does with an answer that went out whole
                provider.journal.finish(answered.seq, now, now, status)
            else:
                provider.sent(answered, started=now, completed=now, status_code=status)
            await send({"type": "http.response.body", "body": answer})
        except asyncio.CancelledError:
            # uvicorn gave up waiting (graceful shutdown timed out): the connection is closed
            _Exchange(provider, send, reply, started).abandon("shutdown")
            raise
        except Exception as exc:  # never a traceback to the client; the server keeps going
            self._failed(scope, exc)
            await _Exchange(provider, send, reply, started).fail(receive)

    async def _received(
        self, scope: Scope, receive: Receive, message: Message
    ) -> tuple[Reply, HttpResponse] | None:
        """The general path: the body read whole (or as much of it as shows it too large),
        the ``HttpRequest`` made of the scope and body, and ``provider.receive``'s answer;
        None when the client went away first."""
        provider = self.provider
        limit = provider.scenario.max_body_bytes
        body: bytes | bytearray = message.get("body", b"")
        too_large = len(body) > limit
        if message.get("more_body", False):
            body = bytearray(body)
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                if not too_large:
                    body += message.get("body", b"")
                    too_large = len(body) > limit
                more = message.get("more_body", False)
        if not (body or too_large) or not self._lanes:
            http = self._request(scope)
            if body or too_large:
                http = _http_request(
                    http.method,
                    http.path,
                    http.query,
                    http.headers,
                    b"" if too_large else bytes(body),
                    http.peer,
                    http.base_url,
                    limit if too_large else None,
                )
            return provider.receive(http)
        # A body's lane: what the dialect parses of everything but the body, kept per scope
        # (``_body_lane``), and the body parsed alone (tests/test_app_lanes.py). A body too
        # large is dropped: its lane is kept by every header, its declared length too.
        length = b"%d" % len(body)
        wanted = self._wanting(provider.dialect)
        try:
            if wanted is not None:
                key = _key(scope, wanted)
            else:
                key = _scope_key(scope) if too_large else _body_key(scope, length)
            lane = self._body_lanes.get(key)
        except TypeError:  # a part that cannot be a key (a header as a list)
            key, lane = None, None
        if lane is None or lane[1] is not provider.dialect:
            lane = self._body_lane(scope, provider, key)
        else:
            self._hits += 1
        bare, _, parse, _, said = lane
        headers = bare.headers
        if said is not None and said != length:
            headers = {**headers, "content-length": length.decode()}
        http = _http_request(
            bare.method,
            bare.path,
            bare.query,
            headers,
            b"" if too_large else bytes(body),
            bare.peer,
            bare.base_url,
            limit if too_large else None,
        )
        if parse is None:
            return provider.receive(http)
        try:
            request = parse(http)
        except Exception as exc:
            request = provider.unparsed(http, exc)
        return provider.respond(http, request)

    def _body_lane(
        self, scope: Scope, provider: FakeProvider, key: tuple[Any, ...] | None
    ) -> _BodyLane:
        """The ``HttpRequest`` for ``scope`` without a body (``_request``'s), the provider's
        dialect, and that dialect's ``body_parser`` for it (None: ``provider.receive`` parses
        each request whole), the dialect's renderers by the kind of request parsed (made
        when first wanted), and the ``Content-Length`` the request's headers take from the
        field ``key`` leaves out (``_body_key``; None when they take none from it), kept by
        ``key`` (None: not kept) while that dialect plays. Not kept when the dialect failed
        to make the parser (``provider.receive`` then fails as before, every time)."""
        http = self._request(scope)
        dialect = provider.dialect
        said = None
        if key is not None and len(key) > 5 and key[5].__class__ is int:  # a field left out
            fields = scope["headers"]
            at = key[5]
            # the headers' value is the last field's of that name, in any case
            if not any(
                name.decode("latin-1").lower() == "content-length" for name, _ in fields[at + 1 :]
            ):
                said = fields[at][1]
        lane: _BodyLane
        try:
            lane = (http, dialect, dialect.body_parser(http), {}, said)
        except Exception:
            return (http, dialect, None, {}, None)
        if key is not None and self._keep():
            lanes = self._body_lanes
            if len(lanes) >= _REQUESTS_KEPT:
                lanes.clear()
            lanes[key] = lane
        return lane

    def _lane(self, scope: Scope, provider: FakeProvider, key: tuple[Any, ...] | None) -> _Lane:
        """The lane of the request ``scope`` stands for, without a body: the ``HttpRequest``
        (``_request``'s), the provider's dialect, the request that dialect parses it as, and
        the dialect's renderer for that request's kind. Kept by the scope's parts (as
        ``_request`` keeps the ``HttpRequest``: ``key``, None for parts that cannot be a key)
        while that dialect plays (a scenario load brings another), as ``Dialect.parse`` keeps
        what it parsed: not a request the dialect failed to parse, or one that carries a body
        (parsed again every time, as ``provider.receive`` does)."""
        http = self._request(scope)
        dialect = provider.dialect
        try:
            request: Request = dialect.parse(http)
        except Exception as exc:
            request = provider.unparsed(http, exc)
            return (http, dialect, request, dialect.renderer(request.kind))
        lane = (http, dialect, request, dialect.renderer(request.kind))
        if key is not None and request.body is None and self._keep():
            lanes = self._lanes_kept
            if len(lanes) >= _REQUESTS_KEPT:
                lanes.clear()
            lanes[key] = lane
        return lane

    def _wanting(self, dialect: Dialect) -> _Wanted | None:
        """``_wanted`` for ``dialect`` (made anew when another dialect plays): None when the
        app has no lanes or the dialect's class declares no ``headers_read`` of its own (a
        subclass inherits its base's reads, not its declaration)."""
        if self._wanted_by is not dialect:
            declared = vars(type(dialect)).get("headers_read") if self._lanes else None
            self._wanted = (
                None if declared is None else _Wanted(name.encode("latin-1") for name in declared)
            )
            self._wanted_by = dialect
        return self._wanted

    def _keep(self) -> bool:
        """Whether to keep the lane just made (and counted): while lanes are found at least
        once for every ``_HIT_SHARE`` made (looked at every ``_LANE_WINDOW`` made), and one in
        every ``_PROBE`` besides, so that traffic that starts repeating itself shows it. A
        client that sends a header of its own with every request (a request id, a trace, an
        idempotency key) never finds its lanes again: keeping them, and the ``HttpRequest``s
        made for them, and forgetting them when full, would only cost it."""
        made = self._made = self._made + 1
        if made >= _LANE_WINDOW:
            self._keeping = self._hits * _HIT_SHARE >= made
            self._hits = self._made = 0
        return self._keeping or made % _PROBE == 0

    def _request(self, scope: Scope) -> HttpRequest:
        """The ``HttpRequest`` for ``scope`` without a body: the very object made for the same
        scope before (method, path, query, peer, scheme and the header fields the dialect
        reads, in order: ``_key``), while it is kept, so that the dialect finds the request it
        parsed of it (``Dialect.parse``). Its headers are those fields' (every field's for a
        dialect that declares none, or a provider without lanes, whose class may read any).
        The last ``_REQUESTS_KEPT`` scopes' are kept (a client polls one path again and again
        on one connection), forgotten all at once when full."""
        client = scope.get("client")
        scheme = scope.get("scheme", "http")
        raw_query = scope.get("query_string", b"")
        known = self._requests
        wanted = self._wanting(self.provider.dialect) if self._lanes else None
        fields = scope["headers"] if wanted is None else _fields(scope["headers"], wanted)
        key = (scope["method"], scope["path"], raw_query, client, scheme, *fields)
        try:
            made = known.get(key)
        except TypeError:  # a part that cannot be a key (a header as a list): made afresh
            made, keep = None, False
        else:
            if made is not None:
                return made
            keep = self._keeping
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in fields}
        made = _http_request(
            scope["method"],
            scope["path"],
            dict(parse_qsl(raw_query.decode("latin-1"))) if raw_query else {},
            headers,
            b"",
            f"{client[0]}:{client[1]}" if client else "unknown",
            f"{scheme}://{headers.get('host', '127.0.0.1')}",
            None,
        )
        if keep:
            if len(known) >= _REQUESTS_KEPT:
                known.clear()
            known[key] = made
        return made

    async def _other(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Everything but an API request: the admin API (and what Starlette refuses)."""
        if scope["type"] != "http":
            await self.admin(scope, receive, send)  # lifespan is off; Starlette refuses the rest
            return
        state = _Exchange(self.provider, send)
        try:
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            refusal = admin_refusal(
                scope["method"],
                scope["path"],
                headers,
                scope.get("scheme", "http"),
                self.admin_token,
            )
            if refusal is not None:
                await refusal(scope, receive, state.send_dated)
                return
            await self.admin(scope, receive, state.send_dated)
        except asyncio.CancelledError:
            state.abandon("shutdown")
            raise
        except Exception as exc:
            self._failed(scope, exc)
            await state.fail(receive)

    def _failed(self, scope: Scope, exc: Exception) -> None:
        self.provider.log_once.exception(
            "app", exc, "fakeprovider failed answering %s %s", scope["method"], scope["path"]
        )
        self.provider.failed(f"{scope['method']} {scope['path']}", exc)


def _scope_key(scope: Scope) -> tuple[Any, ...]:
    """What a lane is kept under: every part of ``scope`` the request is made of (a header as
    a list, which cannot be a key, makes the lookup raise TypeError: no lane is kept then)."""
    return (
        scope["method"],
        scope["path"],
        scope.get("query_string", b""),
        scope.get("client"),
        scope.get("scheme", "http"),
        *scope["headers"],
    )


class _Wanted(dict[tuple[Any, ...], Callable[[Any], tuple[Any, ...]] | None]):
    """Which of a scope's header fields a dialect reads (``headers_read``), by the names of
    its fields in order (a client sends the same names in the same order on every request):
    what picks those fields out of the headers (None: none of them), learnt as layouts come
    (``_fields``), at most ``_LAYOUTS_KNOWN`` of them."""

    __slots__ = ("declared",)

    def __init__(self, declared: Iterable[bytes]) -> None:
        super().__init__()
        #: The names the dialect reads, in lower case.
        self.declared = frozenset(declared)

    def learn(self, names: tuple[Any, ...]) -> Callable[[Any], tuple[Any, ...]] | None:
        """What picks the fields of a scope whose fields are named ``names`` (kept while
        there is room)."""
        declared = self.declared
        # a name lowered as ``_request`` lowers the decoded name: no Latin-1 letter but
        # ASCII's lowers to ASCII, and every declared name is ASCII
        at = [
            i
            for i, name in enumerate(names)
            if isinstance(name, bytes) and name.lower() in declared
        ]
        # one field is picked twice (a tuple of it, as for more): the same headers
        pick = None if not at else itemgetter(*at) if len(at) > 1 else itemgetter(at[0], at[0])
        if len(self) < _LAYOUTS_KNOWN:
            self[names] = pick
        return pick


def _fields(headers: Any, wanted: _Wanted) -> tuple[Any, ...]:
    """The fields of ``headers`` whose name (in any case) ``wanted`` declares, in order (one
    of them twice when it is the only one): all the ``HttpRequest``'s headers are made of for
    a dialect that reads no other (the last field of a name wins, as in the dict made of
    every field)."""
    names = tuple(map(_first, headers))
    try:
        pick = wanted.get(names, _UNSEEN)
        if pick is _UNSEEN:
            pick = wanted.learn(names)
        return () if pick is None else pick(headers)
    except TypeError:
        # a name that cannot be a key (a bytearray), or headers that are no sequence (an
        # iterable of fields, which ASGI allows): what ``learn``'s pick would give, field by
        # field (uvicorn sends a list of bytes)
        declared = wanted.declared
        return tuple(
            field
            for field in headers
            if isinstance(field[0], bytes | bytearray) and bytes(field[0]).lower() in declared
        )


def _key(scope: Scope, wanted: _Wanted) -> tuple[Any, ...]:
    """What a lane is kept under for a dialect that reads only ``wanted``'s headers:
    ``_scope_key``'s parts, but of the header fields only those (``_fields``, as one part).
    Requests that differ in no other part share it: a request id of their own does not part
    them."""
    headers = scope["headers"]
    names = tuple(map(_first, headers))  # ``_fields``, written out (a call less a request)
    pick = wanted.get(names, _UNSEEN)
    if pick is _UNSEEN:
        pick = wanted.learn(names)
    return (
        scope["method"],
        scope["path"],
        scope.get("query_string", b""),
        scope.get("client"),
        scope.get("scheme", "http"),
        () if pick is None else pick(headers),
    )


def _body_key(scope: Scope, length: bytes) -> tuple[Any, ...]:
    """What a body lane is kept under: ``_scope_key``'s parts, but for the first field
    ``content-length: <length>`` (as uvicorn gives it: the name in lower case), which leaves
    the key, its place taking it in: one lane for bodies of every length. A scope without such
    a field (another server's case, a value spelt otherwise) is kept by every part."""
    headers = scope["headers"]
    field = (b"content-length", length)
    if field not in headers:  # (a scan: cheaper than the ValueError of ``index`` without it)
        return _scope_key(scope)
    at = headers.index(field)
    return (
        scope["method"],
        scope["path"],
        scope.get("query_string", b""),
        scope.get("client"),
        scope.get("scheme", "http"),
        at,  # an int: never a header field, so never a key of ``_scope_key``'s
        *headers[:at],
        *headers[at + 1 :],
    )


def _date(provider: FakeProvider) -> str:
    return format_http_date(provider.clock.epoch + provider.clock.now())


class _Exchange:
    """One request's answer in progress: whether it started, and the reply still to journal.

    When the fake fails (a bug) ``fail()`` answers the JSON 500 ``internal_error`` with a
    ``Date``, unless a response had already started, and journals what the client got: the
    500, or a dropped connection.
    """

    __slots__ = ("_send", "provider", "reply", "started")

    def __init__(
        self, provider: FakeProvider, send: Send, reply: Reply | None = None, started: bool = False
    ) -> None:
        self.provider = provider
        self._send = send
        self.started = started
        #: The engine's reply while its journal entry waits for the answer to go out.
        self.reply = reply

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def send_dated(self, message: Message) -> None:
        """``send``, adding a ``Date`` from the scenario clock to a response without one."""
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            if not any(name.lower() == b"date" for name, _ in headers):
                headers.append((b"date", _date(self.provider).encode("latin-1")))
            message = {**message, "headers": headers}
        await self.send(message)

    def abandon(self, why: str) -> None:
        """Journal the reply still waiting as a closed connection (``why``)."""
        reply, self.reply = self.reply, None
        if reply is not None:
            now = self.provider.clock.now()
            self.provider.sent(reply, started=now, completed=now, status_code=None, dropped=why)

    async def fail(self, receive: Receive) -> None:
        if self.started:
            # the status line is out (or failed to go out): all that is left is to end the
            # connection, and to journal that the client got no whole answer
            self.abandon("error")
            with contextlib.suppress(Exception):
                _abort(receive)
            return
        response = internal_error()
        raw = _raw_headers(response, _date(self.provider).encode("latin-1"))
        now = self.provider.clock.now()
        try:
            await self.send({"type": "http.response.start", "status": 500, "headers": raw})
        except Exception:
            self.abandon("error")
            with contextlib.suppress(Exception):
                _abort(receive)
            return
        if self.reply is not None:
            reply, self.reply = _failed_reply(self.reply), None
            self.provider.sent(
                reply, started=now, completed=self.provider.clock.now(), status_code=500
            )
        with contextlib.suppress(Exception):
            await self.send({"type": "http.response.body", "body": response.body})


def _failed_reply(reply: Reply) -> Reply:
    return dataclasses.replace(
        reply, status_code=500, error=ApiError("internal_error", INTERNAL_ERROR_MESSAGE)
    )


def _sendable(headers: tuple[tuple[str, str], ...]) -> list[tuple[bytes, bytes]] | None:
    """``headers`` as ``_raw_headers`` sends them, when ``provider.checked`` would pass them as
    they are (every name an HTTP token the server does not write itself, every value safe as
    it is: ``wire_problem``, ``all_safe_header_values``); None when it might not."""
    fields = []
    for name, value in headers:
        raw_name = _SENDABLE.get(name)
        if raw_name is None:
            if _name_problem(name) is not None:
                return None
            raw_name = name.lower().encode("latin-1")
            if len(_SENDABLE) < _FIELDS_CACHED:
                _SENDABLE[name] = raw_name
        if not (value.isascii() and value.isprintable() and value.strip(" ") == value):
            return None
        fields.append((raw_name, value.encode("latin-1")))
    return fields


def _raw_headers(response: HttpResponse, date: bytes) -> list[tuple[bytes, bytes]]:
    raw = [] if response.status in (204, 304) else [(b"content-length", b"%d" % len(response.body))]
    media_type = response.media_type
    if media_type is not None:
        field = _CONTENT_TYPES.get(media_type)
        if field is None:
            field = (b"content-type", media_type.encode("latin-1"))
            if len(_CONTENT_TYPES) < _FIELDS_CACHED:
                _CONTENT_TYPES[media_type] = field
        raw.append(field)
    for name, value in response.headers:
        raw_name = _NAMES.get(name)
        if raw_name is None:
            raw_name = name.lower().encode("latin-1")
            if len(_NAMES) < _FIELDS_CACHED:
                _NAMES[name] = raw_name
        raw.append((raw_name, value.encode("latin-1")))
    raw.append((b"date", date))
    return raw


if TYPE_CHECKING:
    _http_request = HttpRequest
else:
    #: An ``HttpRequest`` from the scope's parts (positional, in field order): the same request,
    #: made without a frozen dataclass's per-field ``__init__``.
    _http_request = fast_constructor(HttpRequest, keyword_only=False)
#: Each media type's ``Content-Type`` field as sent (a handful: the dialects' and the
#: scenario's); at most ``_FIELDS_CACHED`` kept, the others encoded per answer.
_CONTENT_TYPES: dict[str, tuple[bytes, bytes]] = {}
#: The ``Content-Type`` field of a JSON answer, as sent.
_JSON_TYPE = (b"content-type", b"application/json")
_FIELDS_CACHED = 64
#: Each header name as sent (lower case, encoded), at most ``_FIELDS_CACHED`` of them.
_NAMES: dict[str, bytes] = {}
#: The same, for names ``wire_problem`` finds nothing wrong with (``_sendable``).
_SENDABLE: dict[str, bytes] = {}
#: A request without a body as the app keeps it (``FakeProviderApp._lane``): the
#: ``HttpRequest``, the dialect, the request it parsed and its renderer for the request's kind.
_Lane = tuple[HttpRequest, Dialect, Request, Callable[[Reply, HttpRequest], HttpResponse]]
#: A request with a body as the app keeps it (``FakeProviderApp._body_lane``): the
#: ``HttpRequest`` without the body, the dialect, its parser of such requests' bodies, the
#: dialect's renderers by the kind of request parsed (``Dialect.renderer``), made when first
#: wanted, and the ``Content-Length`` (as sent) the ``HttpRequest``'s headers hold from the
#: field the lane's key leaves out (None: they hold none from it), which each request gets
#: its own of.
_BodyLane = tuple[
    HttpRequest,
    Dialect,
    Callable[[HttpRequest], Request] | None,
    dict[str, Callable[[Reply, HttpRequest], HttpResponse]],
    bytes | None,
]
#: Layouts of header names ``_Wanted`` learns at most per dialect (others are looked at
#: every time).
_LAYOUTS_KNOWN = 256
_first = itemgetter(0)
#: Stands for a layout ``_Wanted`` has not learnt.
_UNSEEN: Any = object()
#: Scopes whose ``HttpRequest`` the app keeps at most (``FakeProviderApp._request``).
_REQUESTS_KEPT = 512
#: Lanes made between looks at how often lanes are found (``FakeProviderApp._keep``); lanes
#: are kept while at least one is found for every ``_HIT_SHARE`` made, and else one in
#: ``_PROBE``.
_LANE_WINDOW = 256
_HIT_SHARE = 4
_PROBE = 16
_new = object.__new__


async def _read_capped(request: StarletteRequest, limit: int) -> bytes | None:
    """The request's body, or None as soon as it is known to exceed ``limit`` bytes: from its
    ``Content-Length`` before reading anything, else while reading (the rest is never read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _problems(provider: FakeProvider) -> list[str]:
    """What has stopped working while the server goes on answering: a journal file no longer
    written (the entries are kept in memory only) and the parts ``provider.failures`` names."""
    problems = list(provider.failures.values())
    error = provider.journal.sink_error
    if error is not None:
        sink = provider.journal.sink
        name = getattr(sink, "name", None) or "the journal"
        problems.append(
            f"the journal is no longer written to {name}: {error.strerror or error};"
            " entries are kept in memory only"
        )
    return problems


def _admin_app(provider: FakeProvider) -> Starlette:
    async def health(request: StarletteRequest) -> Response:
        problems = _problems(provider)
        return JSONResponse(
            {
                "status": "degraded" if problems else "ok",
                "scenario": provider.scenario.name,
                "dialect": provider.dialect.name,
                "jobs": provider.engine.job_count,
                "journal_entries": len(provider.journal),
                "clock": provider.clock.now(),
                "problems": problems,
            },
            status_code=503 if problems else 200,
        )

    async def journal(request: StarletteRequest) -> Response:
        # Read (perhaps from the file) and serialised off the event loop, in chunks, so a big
        # journal neither blocks other requests nor needs all of its JSON in memory at once.
        # Under --journal-memory the run is sent as it is read back from the file, once a
        # first reading found it in seq order (else, or from memory, read whole as before).
        from ._stream import in_run_order

        run = await run_in_threadpool(_streamable, provider.journal)
        entries: Iterable[Entry] = (
            in_run_order(run)
            if run is not None
            else await run_in_threadpool(provider.journal.run_entries)
        )
        return StreamingResponse(_json_array(entries), media_type="application/json")

    async def report(request: StarletteRequest) -> Response:
        from ._stream import check_run
        from .limits import limits_for

        try:
            limits = limits_for(
                provider.scenario.expect,
                time_scale=provider.settings.time_scale,
                overrides=dict(request.query_params),
            )
        except ValueError as exc:
            return _error(400, "invalid_limits", f"{exc}.")

        # The checker runs in a worker thread: health and the API are answered meanwhile.
        report = await run_in_threadpool(check_run, provider.journal, limits)
        return StreamingResponse(_report_json(report), media_type="application/json")

    def _admin_entry(
        request: StarletteRequest,
        status: int,
        at: float | None = None,
        run: dict[str, Any] | None = None,
    ) -> None:
        now = provider.clock.now() if at is None else at
        provider.journal.append(
            Entry(
                seq=provider.journal.next_seq(),
                kind="admin",
                job_id=None,
                method=request.method,
                path=request.url.path,
                client=_client(request),
                received_at=now,
                response_started_at=now,
                completed_at=now,
                status_code=status,
                run=run,
            )
        )

    async def reset(request: StarletteRequest) -> Response:
        provider.reset(header=False)
        # Stamped at the run's start (the engine's fault windows count from this reading), and
        # the new run's header.
        _admin_entry(request, 200, at=provider.engine.start, run=provider.run_header())
        return JSONResponse({"status": "reset", "scenario": provider.scenario.name})

    async def scenario(request: StarletteRequest) -> Response:
        limit = provider.scenario.max_body_bytes
        raw = await _read_capped(request, limit)
        if raw is None:
            return _error(
                413, "payload_too_large", f"The scenario is too large; send at most {limit} bytes."
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _error(400, "invalid_scenario", "The scenario must be UTF-8 YAML or JSON.")
        name = text.strip()
        try:
            if name in bundled_scenarios():
                loaded = load_scenario(name)
            else:
                # Parsing and validating can take a while (a big file): off the event loop, so
                # other requests are answered meanwhile.
                loaded = await run_in_threadpool(parse_scenario, text, filename="<request>")
            provider.load(loaded, header=False)
            started = provider.engine.start
            header = provider.run_header()
        except ScenarioError as exc:
            problems = [str(p) for p in exc.problems]
            message = "The scenario is not valid."
            if name and not any(c.isspace() or c == ":" for c in name):
                bundled = ", ".join(bundled_scenarios())
                hint = did_you_mean(name, bundled_scenarios())
                message = (
                    f"The scenario is not valid: send YAML or JSON, or the name of a bundled "
                    f"scenario ({bundled}); got {name!r}{hint}."
                )
            return _error(400, "invalid_scenario", message, problems=problems)
        except ValueError as exc:
            return _error(400, "invalid_scenario", str(exc))
        _admin_entry(request, 200, at=started, run=header)
        return JSONResponse({"status": "loaded", "scenario": provider.scenario.name})

    admin_routes = [
        Route("/__admin/health", health, methods=["GET"]),
        Route("/__admin/journal", journal, methods=["GET"]),
        Route("/__admin/report", report, methods=["GET"]),
        Route("/__admin/reset", reset, methods=["POST"]),
        Route("/__admin/scenario", scenario, methods=["PUT"]),
    ]
    # Starlette adds HEAD to every GET route.
    allowed = {route.path: sorted(route.methods or ()) for route in admin_routes}

    async def unknown(request: StarletteRequest) -> Response:
        path = request.url.path
        if path in allowed:
            methods = allowed[path]
            response = _error(
                405,
                "method_not_allowed",
                f"{request.method} is not allowed here; use {', '.join(methods)}.",
            )
            response.headers["allow"] = ", ".join(methods)
            return response
        return _error(404, "route_not_found", f"No admin route {request.method} {path}.")

    async def on_error(request: StarletteRequest, exc: Exception) -> Response:
        # Starlette re-raises after answering: FakeProviderApp logs the traceback.
        return _error(500, "internal_error", INTERNAL_ERROR_MESSAGE)

    routes = [*admin_routes, Route("/{rest:path}", unknown, methods=_METHODS)]
    app = Starlette(routes=routes, exception_handlers={Exception: on_error})
    app.state.provider = provider
    return app


#: Journal entries serialised per worker-thread call when streaming ``/__admin/journal``.
_CHUNK = 2000


async def _json_array(entries: Iterable[Entry]) -> AsyncIterator[bytes]:
    """``entries`` as one JSON array, taken and encoded ``_CHUNK`` at a time in a worker
    thread (so entries read from a file are read as they are sent)."""
    remaining = iter(entries)

    def encode(first: bool) -> bytes | None:
        part = list(itertools.islice(remaining, _CHUNK))
        if not part:
            return None
        text = ",".join(json.dumps(e.to_dict(), separators=(",", ":")) for e in part)
        return (("[" if first else ",") + text).encode()

    first = True
    while (piece := await run_in_threadpool(encode, first)) is not None:
        yield piece
        first = False
    yield b"[]" if first else b"]"


def _streamable(journal: Journal) -> RunFile | None:
    """The run ``/__admin/journal`` can send as it reads it from the file
    (``Journal.run_batches``): None when there is none, or when it is too far out of seq order
    to be put in order as it streams (found by reading it through once first)."""
    from ._stream import Unordered, in_run_order

    run = journal.run_batches()
    if run is None:
        return None
    try:
        for _ in in_run_order(run):
            pass
    except Unordered:
        return None
    return run


async def _report_json(report: Report) -> AsyncIterator[bytes]:
    """``json.dumps(report.to_dict(), ensure_ascii=False, separators=(",", ":"))``, encoded,
    the same bytes, made ``_CHUNK`` violations at a time in a worker thread: never the whole
    text, nor a dict for every violation, at once (a soak's report may list millions)."""

    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def encode(part: Sequence[Violation], first: bool) -> bytes:
        text = ",".join(dumps(v.to_dict()) for v in part)
        return (text if first else "," + text).encode()

    violations = report.violations
    yield f'{{"ok":{dumps(report.ok)},"violations":['.encode()
    for start in range(0, len(violations), _CHUNK):
        yield await run_in_threadpool(encode, violations[start : start + _CHUNK], start == 0)
    tail: dict[str, Any] = {"metrics": report.metrics, "coverage": report.coverage}
    tail |= {"warnings": list(report.warnings), "limits": report.limits.to_dict()}
    yield ("]," + dumps(tail)[1:]).encode()


def create_app(provider: FakeProvider, *, admin_token: str | None = None) -> FakeProviderApp:
    """The ASGI app serving ``provider``: the API, and the admin API under ``/__admin/``
    (which then wants ``Authorization: Bearer <admin_token>``, health checks excepted)."""
    return FakeProviderApp(provider, admin_token=admin_token)


#: Content types a browser may send cross-origin without asking first (a "simple request"): a
#: web page could post them to the admin API with a form or ``fetch``, so mutations refuse them.
SIMPLE_CONTENT_TYPES = frozenset(
    {"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}
)
_MUTATIONS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def admin_refusal(
    method: str, path: str, headers: dict[str, str], scheme: str, token: str | None
) -> JSONResponse | None:
    """Why an admin request is refused (a JSON 4xx), or None to serve it.

    Browsers mark what a web page sends: ``Sec-Fetch-Site`` (anything but ``same-origin`` or
    ``none`` is another site's page) and ``Origin`` (must be the fake's own). Mutations must
    not come as a type a page can send without a CORS preflight. With a token, every route but
    the health check wants ``Authorization: Bearer <token>``.
    """
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return _error(
            403,
            "cross_origin",
            f"The admin API refuses requests from web pages of other sites (Sec-Fetch-Site:"
            f" {site}).",
        )
    origin = headers.get("origin")
    own = f"{scheme}://{headers.get('host', '')}"
    if origin is not None and origin != own:
        return _error(
            403,
            "cross_origin",
            f"The admin API refuses requests from other origins (Origin: {origin}; this is {own}).",
        )
    if method in _MUTATIONS:
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype in SIMPLE_CONTENT_TYPES:
            return _error(
                415,
                "unsupported_media_type",
                f"The admin API does not take {ctype} (a type any web page can send); send"
                " application/yaml or application/json, or no Content-Type.",
            )
    if token is not None and path != "/__admin/health":
        scheme_, _, given = headers.get("authorization", "").partition(" ")
        if scheme_.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            response = _error(
                401,
                "admin_token_required",
                "The admin API wants 'Authorization: Bearer <token>' with the token the server"
                " printed at start (or was given with --admin-token).",
            )
            response.headers["www-authenticate"] = 'Bearer realm="fakeprovider admin"'
            return response
    return None
