"""What every dialect shares: neutral HTTP requests and responses, and path routing.

A dialect turns an ``HttpRequest`` into an engine ``Request`` and an engine ``Reply`` into an
``HttpResponse``. Both adapters (the Starlette app and the in-process transport) speak only
these neutral types, so a dialect works the same over real sockets and in virtual time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engine import ApiError, Reply, Request, RequestKind

__all__ = ["Dialect", "HttpRequest", "HttpResponse", "Route"]


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    #: Header names in lower case.
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    peer: str = "unknown"
    base_url: str = "http://127.0.0.1"
    #: Set by the adapter when the body exceeded this many bytes (and was dropped).
    too_large: int | None = None

    @property
    def client(self) -> str:
        """``X-Client-Id``, else the peer's host: not its port, which changes whenever a client
        opens a new connection (an SDK's reconnect must not look like a second client)."""
        explicit = self.headers.get("x-client-id")
        if explicit:
            return explicit
        host, sep, port = self.peer.rpartition(":")
        return host if sep and port.isdigit() else self.peer

    @property
    def bearer(self) -> str | None:
        return self.token("bearer")

    def token(self, *schemes: str) -> str | None:
        """The ``Authorization`` credential when its scheme is one of ``schemes`` (lower case)."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token.strip() or None if scheme.lower() in schemes else None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = b""
    media_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    kind: RequestKind
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template))
        object.__setattr__(self, "pattern", re.compile(f"^{regex}$"))


def json_response(
    status: int, payload: Any, headers: Sequence[tuple[str, str]] = ()
) -> HttpResponse:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return HttpResponse(status, body, "application/json", tuple(headers))


class Dialect:
    """Base class: routing, common parsing, and the generic error rendering."""

    name = "base"
    routes: Sequence[Route] = ()
    #: Unix time of clock reading 0, set by ``FakeProvider`` so that dialects can show
    #: timestamps (``created_at``...) as providers do. Job times in a ``JobView`` are clock
    #: readings; ``epoch + reading`` is Unix time.
    epoch: float = 0.0
    #: Whether this wire shape tells clients when to poll again (a header or a body field).
    #: When it does not, the journal records no poll hint, so ``honours_poll_after`` only
    #: judges clients that were shown one.
    poll_hints: bool = True

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            found = route.pattern.match(path)
            if found and route.method == method:
                return route, found.groupdict()
        return None

    def allowed_methods(self, path: str) -> list[str]:
        return sorted({r.method for r in self.routes if r.pattern.match(path)})

    def new_job_id(self, seed: int, number: int) -> str:
        from ..engine import default_job_id

        return default_job_id(seed, number)

    def parse(self, http: HttpRequest) -> Request:
        """The engine request for ``http`` (``kind='unknown'`` when no route matches)."""
        found = self.match(http.method, http.path)
        common: dict[str, Any] = {
            "method": http.method,
            "path": http.path,
            "credential": self.credential(http),
            "client": http.client,
            "idempotency_key": http.headers.get("idempotency-key"),
        }
        if found is None:
            allowed = self.allowed_methods(http.path)
            if allowed:
                return Request(
                    kind="unknown",
                    problem=f"{http.method} is not allowed here; use {', '.join(allowed)}.",
                    problem_status=405,
                    problem_code="method_not_allowed",
                    **common,
                )
            return Request(kind="unknown", **common)
        route, params = found
        if http.too_large is not None:
            return Request(
                kind=route.kind,
                job_id=params.get("job_id"),
                problem=f"Request bodies are limited to {http.too_large} bytes.",
                problem_status=413,
                problem_code="payload_too_large",
                **common,
            )
        return self.parse_route(route, params, http, common)

    def credential(self, http: HttpRequest) -> str | None:
        return http.bearer

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        raise NotImplementedError

    def render(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        raise NotImplementedError

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        return json_response(
            status, {"error": {"code": error.code, "message": error.message}}, headers
        )

    def render_scripted(self, reply: Reply) -> HttpResponse:
        """A fault's answer: its body verbatim, else the dialect's error shape."""
        fault = reply.fault
        assert fault is not None
        if fault.body is None:
            error = reply.error or ApiError(f"http_{reply.status_code}", "Scripted fault.")
            if reply.status_code < 400:
                return json_response(reply.status_code, {}, reply.headers)
            return self.render_error(reply.status_code, error, reply.headers)
        if isinstance(fault.body, str):
            return HttpResponse(
                reply.status_code, fault.body.encode(), "text/plain; charset=utf-8", reply.headers
            )
        return json_response(reply.status_code, fault.body, reply.headers)


def read_json_object(
    http: HttpRequest,
) -> tuple[dict[str, Any] | None, tuple[int, str, str] | None]:
    """The body as a JSON object, or (status, code, message) saying why it is not one."""
    ctype = http.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json" and not ctype.endswith("+json"):
        shown = ctype or "none"
        return None, (
            415,
            "unsupported_media_type",
            f"Send the body as application/json (got {shown}).",
        )
    try:
        data = json.loads(http.body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        return None, (400, "invalid_json", f"The body is not valid JSON: {exc}.")
    if not isinstance(data, dict):
        return None, (400, "invalid_json", "The body must be a JSON object.")
    return data, None
