"""One request straight into an ASGI app, no server: what the ASGI-level benchmarks share."""

from __future__ import annotations

from typing import Any


async def answer(app: Any, scope: dict[str, Any], body: bytes = b"") -> tuple[int, bytes]:
    """The status code and body ``app`` answers one request with (``scope`` is copied: callers
    reuse it)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(dict(scope), receive, send)
    status = next((m["status"] for m in sent if m["type"] == "http.response.start"), 0)
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


async def call(app: Any, scope: dict[str, Any], body: bytes = b"") -> bytes:
    """The response body ``app`` sends for one request."""
    return (await answer(app, scope, body))[1]
