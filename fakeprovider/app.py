"""The Starlette app: a ``FakeProvider`` on real sockets, plus the admin API.

Every API request goes through one catch-all endpoint that hands a neutral ``HttpRequest`` to
the provider; a thin ASGI wrapper times the response for the journal and drops connections
when a scenario scripts a reset. Admin routes live under the reserved prefix ``/__admin/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect
from starlette.requests import Request as StarletteRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .dialects import HttpRequest
from .engine import Reply
from .errors import ScenarioError
from .journal import Entry
from .scenario import parse_scenario
from .service import FakeProvider

__all__ = ["create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


class _Recorder:
    """Outermost ASGI layer: times each answer for the journal and performs scripted resets."""

    def __init__(self, app: Starlette, provider: FakeProvider) -> None:
        self.app = app
        self.provider = provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctx: dict[str, Any] = {"receive": receive}
        scope["fakeprovider"] = ctx
        clock = self.provider.clock
        state: dict[str, Any] = {}

        async def timed_send(message: Message) -> None:
            reply: Reply | None = ctx.get("reply")
            if ctx.get("dropped"):
                return
            if message["type"] == "http.response.start":
                state["started"] = clock.now()
                state["status"] = message["status"]
            await send(message)
            if (
                reply is not None
                and message["type"] == "http.response.body"
                and not message.get("more_body", False)
            ):
                self.provider.sent(
                    reply,
                    started=state.get("started", clock.now()),
                    completed=clock.now(),
                    status_code=state.get("status"),
                )

        await self.app(scope, receive, timed_send)


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


def create_app(provider: FakeProvider) -> _Recorder:
    """The ASGI app serving ``provider`` (the Starlette app is at ``.app``)."""

    async def api(request: StarletteRequest) -> Response:
        limit = provider.scenario.max_body_bytes
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    return _error(
                        413, "payload_too_large", f"Request bodies are limited to {limit} bytes."
                    )
        except ClientDisconnect:
            return Response(status_code=499)
        http = HttpRequest(
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=bytes(body),
            peer=f"{request.client.host}:{request.client.port}" if request.client else "unknown",
            base_url=str(request.base_url).rstrip("/"),
        )
        reply, response = provider.receive(http)
        ctx = request.scope["fakeprovider"]
        ctx["reply"] = reply
        if reply.delay > 0:
            await asyncio.sleep(reply.delay)
        if reply.action != "respond":
            now = provider.clock.now()
            provider.sent(reply, started=now, completed=now, status_code=None)
            ctx["dropped"] = True
            _abort(ctx["receive"])
            return Response(status_code=499)
        headers = {"Date": provider.date_header(reply)}
        out = Response(response.body, status_code=response.status, media_type=response.media_type)
        for name, value in (*response.headers, *headers.items()):
            out.headers.append(name, value)
        return out

    async def health(request: StarletteRequest) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "scenario": provider.scenario.name,
                "dialect": provider.dialect.name,
                "jobs": len(provider.engine.jobs),
                "journal_entries": len(provider.journal),
                "clock": provider.clock.now(),
            }
        )

    async def journal(request: StarletteRequest) -> Response:
        return JSONResponse([e.to_dict() for e in provider.journal])

    def _admin_entry(request: StarletteRequest, status: int) -> None:
        now = provider.clock.now()
        provider.journal.append(
            Entry(
                seq=provider.journal.next_seq(),
                kind="admin",
                job_id=None,
                method=request.method,
                path=request.url.path,
                client=request.headers.get("x-client-id")
                or (
                    f"{request.client.host}:{request.client.port}" if request.client else "unknown"
                ),
                received_at=now,
                response_started_at=now,
                completed_at=now,
                status_code=status,
            )
        )

    async def reset(request: StarletteRequest) -> Response:
        provider.reset()
        _admin_entry(request, 200)
        return JSONResponse({"status": "reset", "scenario": provider.scenario.name})

    async def scenario(request: StarletteRequest) -> Response:
        raw = await request.body()
        if len(raw) > provider.scenario.max_body_bytes:
            return _error(413, "payload_too_large", "The scenario is too large.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _error(400, "invalid_scenario", "The scenario must be UTF-8 YAML or JSON.")
        try:
            loaded = parse_scenario(text, filename="<request>")
            provider.load(loaded)
        except ScenarioError as exc:
            problems = [str(p) for p in exc.problems]
            return _error(400, "invalid_scenario", "The scenario is not valid.", problems=problems)
        except ValueError as exc:
            return _error(400, "invalid_scenario", str(exc))
        _admin_entry(request, 200)
        return JSONResponse({"status": "loaded", "scenario": provider.scenario.name})

    async def admin_unknown(request: StarletteRequest) -> Response:
        return _error(
            404, "route_not_found", f"No admin route {request.method} {request.url.path}."
        )

    routes = [
        Route("/__admin/health", health, methods=["GET"]),
        Route("/__admin/journal", journal, methods=["GET"]),
        Route("/__admin/reset", reset, methods=["POST"]),
        Route("/__admin/scenario", scenario, methods=["PUT"]),
        Route("/__admin/{rest:path}", admin_unknown, methods=_METHODS),
        Route("/{path:path}", api, methods=_METHODS),
    ]

    async def on_error(request: StarletteRequest, exc: Exception) -> Response:
        return _error(
            500, "internal_error", "fakeprovider failed; this is a bug, please report it."
        )

    starlette = Starlette(routes=routes, exception_handlers={Exception: on_error})
    starlette.state.provider = provider
    recorder = _Recorder(starlette, provider)
    return recorder
