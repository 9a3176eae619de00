"""Server-side cost per status read and submit: fakeprovider's ASGI app vs a bare Starlette app.

Calls each ASGI app directly in one event loop (no network, no client library), so the number
is the cost of the app itself: routing, engine, rendering and journal (to a JSONL file, through
the ``BatchedSink`` that ``fakeprovider serve --journal`` writes with). Each submit has a body
of its own and of its own length (``bench_instructions._prompt``: the prompts wrk sends in
``bench_wrk.py``, up to some 3 kB) and the ``Content-Length`` field uvicorn puts in its scope;
the bare app reads the same bodies. Rounds alternate between the apps; each reports wall-clock
rate and CPU microseconds per request (the CPU time of this process, which a busy machine
disturbs less than the wall clock). The collector runs with the interpreter's thresholds for
both (``serve`` raises them: ``bench_instructions.py`` measures the fake that way).

    python benchmarks/bench_asgi_overhead.py [--requests 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _asgi import call
from bench_instructions import BODIES, _prompt, _with_length
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from fakeprovider.app import create_app
from fakeprovider.journal import BatchedSink
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


async def _submit(request: Request) -> JSONResponse:
    body = await request.json()
    return JSONResponse(
        {
            "job_id": "job_0123456789ab",
            "status": "queued",
            "done": False,
            "message": f"The job has STARTED and is NOT complete ({len(body)}).",
            "poll_after_seconds": 15,
            "estimated_duration_seconds": 480,
            "status_url": "/v1/jobs/job_0123456789ab",
        },
        status_code=202,
        headers={"location": "/v1/jobs/job_0123456789ab"},
    )


BARE = Starlette(
    routes=[
        Route("/v1/jobs/{job_id}", _status),
        Route("/v1/jobs", _submit, methods=["POST"]),
    ]
)
SUBMIT = b'{"prompt": "bench"}'


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


Requests = list[tuple[dict[str, Any], bytes]]


async def _rate(app: Any, requests: Requests, count: int) -> tuple[float, float]:
    """Requests per second (wall clock) and CPU microseconds per request: ``count`` of
    ``requests`` (each a scope and a body), in turn."""
    sent = itertools.islice(itertools.cycle(requests), count)
    start, cpu = time.perf_counter(), time.process_time()
    for scope, body in sent:
        await call(app, scope, body)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return count / wall, cpu / count * 1e6


async def _compare(
    fake: Any, fake_requests: Requests, bare_requests: Requests, args: Any
) -> dict[str, Any]:
    await _rate(BARE, bare_requests, 500)
    await _rate(fake, fake_requests, 500)
    bare, ours = [], []
    for _ in range(args.rounds):
        bare.append(await _rate(BARE, bare_requests, args.requests))
        ours.append(await _rate(fake, fake_requests, args.requests))
    b_rate, o_rate = (statistics.median(r for r, _ in runs) for runs in (bare, ours))
    b_cpu, o_cpu = (statistics.median(c for _, c in runs) for runs in (bare, ours))
    return {
        "bare_starlette_per_s": round(b_rate),
        "fakeprovider_per_s": round(o_rate),
        "ratio": round(o_rate / b_rate, 3),
        "bare_starlette_cpu_us": round(b_cpu, 1),
        "fakeprovider_cpu_us": round(o_cpu, 1),
        "cpu_ratio": round(b_cpu / o_cpu, 3),
    }


async def _main(args: Any, journal: Path) -> dict[str, Any]:
    with journal.open("a", encoding="utf-8") as stream, BatchedSink(stream) as sink:
        provider = FakeProvider("long-render", journal_sink=sink)
        fake = create_app(provider)
        submit = _scope("POST", "/v1/jobs", body=True)
        job = json.loads(await call(fake, _with_length(submit, len(SUBMIT)), SUBMIT))["job_id"]
        status = await _compare(
            fake,
            [(_scope("GET", f"/v1/jobs/{job}"), b"")],
            [(_scope("GET", "/v1/jobs/x"), b"")],
            args,
        )
        submits = None
        if args.submit:
            bodies = [_prompt(n) for n in range(BODIES)]
            requests = [(_with_length(submit, len(body)), body) for body in bodies]
            submits = await _compare(fake, requests, requests, args)
    return {
        "status": status,
        "submit": submits,
        "journal_lines": sum(1 for _ in journal.open()),
        "requests_per_round": args.requests,
        "rounds": args.rounds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-submit", dest="submit", action="store_false")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(_main(args, Path(tmp) / "journal.jsonl"))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
