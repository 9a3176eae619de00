"""Bytes the fake keeps in memory per request it answered (the journal, mostly), by tracemalloc.

Drives ``FakeProvider``'s ASGI app in one event loop (no sockets), each request built afresh as a
server would (new path, header and client strings), with an ``Authorization`` header so the
credential fingerprint is journaled too. After a warm-up, it counts what is still allocated after
N status reads of one job, and after N requests of a mix (one submit per ten status reads, and a
list now and then), and divides by N. ``--journal-memory M`` bounds the in-memory journal as
``serve --journal-memory`` does (then the retained bytes per request should fall towards 0).
Then the CPU time per entry of the journal alone (append, complete, keep, write), to a stream
flushed per entry and through a ``BatchedSink``.

    python benchmarks/bench_journal_memory.py [--requests 10000] [--journal-memory M]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from _asgi import call

from fakeprovider.app import create_app
from fakeprovider.provider import FakeProvider


def _scope(method: str, path: str, n: int, body: bool = False) -> dict[str, Any]:
    # every string and bytes object new, as uvicorn makes them for each request
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"authorization", b"Bearer sk-" + b"bench-key"),
        (b"x-client-id", ("bench-" + "client").encode()),
    ]
    if body:
        headers.append((b"content-type", b"application/json"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "".join(method),
        "scheme": "http",
        "path": "".join(path),
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000 + n % 20000),
        "server": ("127.0.0.1", 8000),
    }


async def _submit(app: Any, n: int) -> str:
    body = json.dumps({"prompt": f"bench {n}"}).encode()
    answer = await call(app, _scope("POST", "/v1/jobs", n, body=True), body)
    return str(json.loads(answer)["job_id"])


async def _reads(app: Any, job: str, count: int) -> None:
    for n in range(count):
        await call(app, _scope("GET", f"/v1/jobs/{job}", n))


async def _mix(app: Any, count: int) -> None:
    job = await _submit(app, 0)
    for n in range(1, count):
        if n % 11 == 0:
            job = await _submit(app, n)
        elif n % 101 == 0:
            await call(app, _scope("GET", "/v1/jobs", n))
        else:
            await call(app, _scope("GET", f"/v1/jobs/{job}", n))


def _retained(run: Any, requests: int) -> float:
    """Bytes still allocated after ``run`` (``requests`` requests), per request."""
    gc.collect()
    before = tracemalloc.take_snapshot()
    asyncio.run(run)
    gc.collect()
    after = tracemalloc.take_snapshot()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / requests


def _write_cost(count: int, folder: Path) -> dict[str, float]:
    """CPU microseconds per entry to append, complete, keep and write ``count`` entries: to a
    stream flushed entry by entry, and through a ``BatchedSink`` (its thread's time included)."""
    from fakeprovider.journal import BatchedSink, Entry, Journal

    def entries() -> list[Entry]:
        return [
            Entry(
                seq=seq,
                kind="status",
                job_id="job_0123456789",
                method="GET",
                path="/v1/jobs/job_0123456789",
                client="bench",
                received_at=seq * 0.001,
                job_status="processing",
                true_status="processing",
                status_since=0.5,
                poll_after=5.0,
                credential="fp:0123abcd",
            )
            for seq in range(1, count + 1)
        ]

    out: dict[str, float] = {}
    for name in ("stream", "batched"):
        made = entries()
        with (folder / f"{name}.jsonl").open("a", encoding="utf-8") as stream:
            journal = Journal(sink=stream if name == "stream" else BatchedSink(stream))
            start = time.process_time()
            for entry in made:
                journal.append(entry)
                journal.complete(entry.seq, completed_at=entry.received_at, status_code=200)
            journal.close()
            out[f"{name}_cpu_us_per_entry"] = round((time.process_time() - start) / count * 1e6, 2)
    return out


def measure(requests: int, memory: int | None, scenario: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, (Path(tmp) / "j.jsonl").open("a") as sink:
        provider = FakeProvider(scenario, journal_sink=sink, journal_memory=memory)
        app = create_app(provider)
        job = asyncio.run(_submit(app, -1))
        asyncio.run(_reads(app, job, 2000))  # warm-up: caches, interned strings, code paths
        asyncio.run(_mix(app, 2000))
        tracemalloc.start()
        try:
            reads = _retained(_reads(app, job, requests), requests)
            mix = _retained(_mix(app, requests), requests)
        finally:
            tracemalloc.stop()
        entries = len(provider.journal)
        cost = _write_cost(requests, Path(tmp))
    return {
        "scenario": scenario,
        "requests": requests,
        "journal_memory": memory,
        "status_read_bytes_per_request": round(reads),
        "mixed_bytes_per_request": round(mix),
        "entries_in_memory": entries,
        **cost,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--journal-memory", type=int, default=None)
    parser.add_argument("--scenario", default="long-render")
    args = parser.parse_args()
    if not 100 <= args.requests <= 1_000_000:
        parser.error("--requests: expected 100 to 1000000")
    print(json.dumps(measure(args.requests, args.journal_memory, args.scenario), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
