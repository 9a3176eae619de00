"""Cost per request and memory per job as active jobs grow from 10 to 100,000.

Fills one fake with N active jobs (``long-render``: every job stays unfinished for minutes), then
times requests against it at each N: a status read of a random job, a submit, a list page (Ark's
``page_size=10``, newest first, and the same page filtered by a status every job is in and by
one no job is in), and ``/__admin/health``.
In process the requests go through ``FakeProvider.receive`` and ``sent`` (what every adapter
calls), on a virtual clock; over a socket they go through the real server (uvicorn) with one
keep-alive httpx client. RSS is read from ``/proc/self/statm`` after each fill (the journal keeps
only its last 1,000 entries in memory, so the number is the jobs' own cost).

Flat means the time per request at 100k jobs over the time at 10 jobs stays near 1.0, and RSS per
job stays constant.

    python benchmarks/bench_jobs_scaling.py [--jobs 10,1000,10000,100000] [--requests 300]
        [--max-seconds 300] [--no-socket]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from fakeprovider.clock import VirtualClock
from fakeprovider.dialects import HttpRequest
from fakeprovider.provider import FakeProvider

SUBMIT_BODY = json.dumps(
    {"model": "doubao-seedance-1-0-pro", "content": [{"type": "text", "text": "a cat"}]}
).encode()
PREFIX = "/api/v3/contents/generations/tasks"
HEADERS = {"authorization": "Bearer bench", "content-type": "application/json", "host": "127.0.0.1"}


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _http(
    method: str, path: str, body: bytes = b"", query: dict[str, str] | None = None
) -> HttpRequest:
    return HttpRequest(
        method=method, path=path, query=query or {}, headers=HEADERS, body=body, peer="127.0.0.1:1"
    )


def _call(provider: FakeProvider, http: HttpRequest) -> bytes:
    reply, response = provider.receive(http)
    now = provider.clock.now()
    provider.sent(reply, started=now, completed=now, status_code=response.status)
    if not 200 <= response.status < 300:
        raise RuntimeError(
            f"{http.method} {http.path} answered {response.status}: {response.body[:200]!r}"
        )
    return response.body


def _per_request(call: Callable[[], object], count: int, budget: float) -> float:
    """Median microseconds per call over five batches of ``count // 5``."""
    batches = []
    deadline = time.perf_counter() + budget
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(max(1, count // 5)):
            call()
        batches.append((time.perf_counter() - start) / max(1, count // 5))
        if time.perf_counter() > deadline:
            raise RuntimeError("a measurement exceeded its time budget")
    return statistics.median(batches) * 1e6


def _fill(provider: FakeProvider, target: int, ids: list[str], budget: float) -> None:
    submit = _http("POST", PREFIX, SUBMIT_BODY)
    deadline = time.perf_counter() + budget
    while len(ids) < target:
        ids.append(json.loads(_call(provider, submit))["id"])
        if len(ids) % 1000 == 0 and time.perf_counter() > deadline:
            raise RuntimeError(f"filling to {target} jobs exceeded its time budget")


def _inprocess_row(
    provider: FakeProvider, ids: list[str], rng: random.Random, requests: int, budget: float
) -> dict[str, Any]:
    page = {"page_num": "1", "page_size": "10"}
    filtered = {**page, "filter.status": "queued"}
    # a status no job is in (every job is queued): a filter that scans finds nothing to stop at
    filtered_none = {**page, "filter.status": "running"}

    def status() -> None:
        _call(provider, _http("GET", f"{PREFIX}/{rng.choice(ids)}"))

    def list_page() -> None:
        _call(provider, _http("GET", PREFIX, query=page))

    def list_filtered() -> None:
        _call(provider, _http("GET", PREFIX, query=filtered))

    def list_filtered_none() -> None:
        _call(provider, _http("GET", PREFIX, query=filtered_none))

    def submit() -> None:
        _call(provider, _http("POST", PREFIX, SUBMIT_BODY))

    return {
        "status_us": round(_per_request(status, requests, budget), 1),
        "list_page_us": round(_per_request(list_page, requests, budget), 1),
        "list_filtered_us": round(_per_request(list_filtered, max(5, requests // 50), budget), 1),
        "list_filtered_none_us": round(
            _per_request(list_filtered_none, max(5, requests // 50), budget), 1
        ),
        # last: submits add jobs (a few hundred on top of the row's count)
        "submit_us": round(_per_request(submit, requests, budget), 1),
    }


def _inprocess(sizes: list[int], requests: int, budget: float) -> list[dict[str, Any]]:
    clock = VirtualClock()
    provider = FakeProvider("long-render", dialect="ark", clock=clock, journal_memory=1000)
    rng = random.Random(15)
    ids: list[str] = []
    rows = []
    base = _rss()
    for size in sizes:
        _fill(provider, size, ids, budget)
        clock.advance(0.001)
        rss = _rss()
        row: dict[str, Any] = {"jobs": size}
        row.update(_inprocess_row(provider, ids, rng, requests, budget))
        row["rss_mb"] = round(rss / 1e6, 1)
        row["rss_per_job_b"] = round((rss - base) / size) if size >= 1000 else None
        rows.append(row)
    return rows


def _socket(sizes: list[int], requests: int, budget: float) -> list[dict[str, Any]]:
    import httpx

    from fakeprovider.server import ServerThread

    provider = FakeProvider("long-render", dialect="ark", journal_memory=1000)
    rng = random.Random(15)
    ids: list[str] = []
    rows = []
    with (
        ServerThread(provider) as server,
        httpx.Client(base_url=server.url, headers=HEADERS) as client,
    ):

        def status() -> None:
            client.get(f"{PREFIX}/{rng.choice(ids)}").raise_for_status()

        def list_page() -> None:
            client.get(PREFIX, params={"page_num": "1", "page_size": "10"}).raise_for_status()

        def health() -> None:
            client.get("/__admin/health").raise_for_status()

        for size in sizes:
            _fill(provider, size, ids, budget)
            rows.append(
                {
                    "jobs": size,
                    "status_us": round(_per_request(status, requests, budget), 1),
                    "list_page_us": round(_per_request(list_page, requests, budget), 1),
                    "health_us": round(_per_request(health, max(5, requests // 10), budget), 1),
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", default="10,1000,10000,100000")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--max-seconds", type=float, default=300.0, help="per fill or measurement")
    parser.add_argument("--no-socket", action="store_true")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.jobs.split(","))
    result: dict[str, Any] = {"in_process": _inprocess(sizes, args.requests, args.max_seconds)}
    if not args.no_socket:
        result["socket"] = _socket(sizes, args.requests, args.max_seconds)
    for mode, rows in list(result.items()):
        first, last = rows[0], rows[-1]
        result[f"{mode}_ratio_last_over_first"] = {
            key: round(last[key] / first[key], 2)
            for key in first
            if key.endswith("_us") and first[key]
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
