"""Server-side cost per status read: fakeprovider's ASGI app vs a bare Starlette app, no sockets.

Calls each ASGI app directly in one event loop (no network, no client library), so the number
is the cost of the app itself: routing, engine, rendering and journal (to a JSONL file).

    python benchmarks/bench_asgi_overhead.py [--requests 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from fakeprovider.app import create_app
from fakeprovider.provider import FakeProvider


async def _status(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "job_id": request.path_params["job_id"],
            "status": "processing",
            "done": False,
            "progress_percent": 35,
            "elapsed_seconds": 31.2,
            "poll_after_seconds": 5,
            "message": "The job is processing and NOT complete.",
        }
    )


BARE = Starlette(routes=[Route("/v1/jobs/{job_id}", _status)])


def _scope(method: str, path: str, body: bool = False) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"x-client-id", b"bench")]
    if body:
        headers.append((b"content-type", b"application/json"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def _call(app: Any, scope: dict[str, Any], body: bytes = b"") -> bytes:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(dict(scope), receive, send)
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


async def _rate(app: Any, path: str, count: int) -> float:
    scope = _scope("GET", path)
    start = time.perf_counter()
    for _ in range(count):
        await _call(app, scope)
    return count / (time.perf_counter() - start)


async def _main(requests: int, rounds: int, journal: Path) -> dict[str, Any]:
    with journal.open("a", encoding="utf-8") as sink:
        provider = FakeProvider("long-render", journal_sink=sink)
        fake = create_app(provider)
        job = json.loads(
            await _call(fake, _scope("POST", "/v1/jobs", body=True), b'{"prompt": "bench"}')
        )["job_id"]
        await _rate(BARE, "/v1/jobs/warm", 500)
        await _rate(fake, f"/v1/jobs/{job}", 500)
        bare, ours = [], []
        for _ in range(rounds):
            bare.append(await _rate(BARE, "/v1/jobs/x", requests))
            ours.append(await _rate(fake, f"/v1/jobs/{job}", requests))
    b, o = statistics.median(bare), statistics.median(ours)
    return {
        "bare_starlette_per_s": round(b),
        "fakeprovider_per_s": round(o),
        "ratio": round(o / b, 3),
        "journal_lines": sum(1 for _ in journal.open()),
        "requests_per_round": requests,
        "rounds": rounds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(_main(args.requests, args.rounds, Path(tmp) / "journal.jsonl"))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
