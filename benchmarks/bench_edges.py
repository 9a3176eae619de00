"""The edge cost of a request, per dialect: everything around the engine and the journal.

For each dialect, a status read (and a submit) of ``long-render`` goes straight into the ASGI app
(no sockets) in one event loop. The edge is the ASGI call with the engine answering the same
reply at once (``engine.handle`` stubbed) and no journal (``provider.sent`` stubbed), less the
harness (a bare ASGI app answering the same bytes through the same calls, standing in for
uvicorn's part): the scope read into an ``HttpRequest``, parsing, rendering, the provider's
checks, the ``Date``, the raw header list and the app's own awaits. ``dialect.parse``,
``dialect.render`` and ``engine.handle`` are also timed alone, and whole status reads and
submits as they are. Each figure is the least of several timings (CPU time of the process).

Run against two trees in turn (``--baseline DIR`` is a checkout of the code before a change;
each round runs a child process per tree, alternating), it prints medians of CPU microseconds
per request and the ratio to the baseline of the same run:

    git worktree add /tmp/edges-base <commit>
    python benchmarks/bench_edges.py --baseline /tmp/edges-base [--requests 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: Per dialect: the submit (method, path, headers, JSON body) and the status read made from the
#: submit's answer (method, path, headers, body).
_Status = Callable[[dict[str, Any]], tuple[str, str, dict[str, str], bytes]]
JSON = {"content-type": "application/json"}
AUTH = {"authorization": "Bearer sk-test"}


def _get(
    path: str, headers: dict[str, str] | None = None
) -> tuple[str, str, dict[str, str], bytes]:
    return "GET", path, {**AUTH, **(headers or {})}, b""


VEO = "publishers/google/models/veo-3.0-generate-001"
CASES: dict[str, tuple[str, str, dict[str, str], dict[str, Any], _Status]] = {
    "generic": (
        "POST",
        "/v1/jobs",
        {},
        {"prompt": "a cat"},
        lambda r: _get(f"/v1/jobs/{r['job_id']}"),
    ),
    "runway": (
        "POST",
        "/v1/text_to_video",
        {"x-runway-version": "2024-11-06"},
        {"model": "gen4.5", "promptText": "a cat", "ratio": "1280:720", "duration": 5},
        lambda r: _get(f"/v1/tasks/{r['id']}", {"x-runway-version": "2024-11-06"}),
    ),
    "replicate": (
        "POST",
        "/v1/models/google/veo-3/predictions",
        {},
        {"input": {"prompt": "a cat"}},
        lambda r: _get(f"/v1/predictions/{r['id']}"),
    ),
    "fal": (
        "POST",
        "/fal-ai/veo3",
        {"authorization": "Key a:b"},
        {"prompt": "a cat"},
        lambda r: ("GET", f"/fal-ai/veo3/requests/{r['request_id']}/status", {}, b""),
    ),
    "ark": (
        "POST",
        "/api/v3/contents/generations/tasks",
        {},
        {"model": "doubao-seedance-1-0-pro-250528", "content": [{"type": "text", "text": "a"}]},
        lambda r: _get(f"/api/v3/contents/generations/tasks/{r['id']}"),
    ),
    "dashscope": (
        "POST",
        "/api/v1/services/aigc/video-generation/video-synthesis",
        {"x-dashscope-async": "enable"},
        {"model": "wan2.2-t2v-plus", "input": {"prompt": "a cat"}},
        lambda r: _get(f"/api/v1/tasks/{r['output']['task_id']}"),
    ),
    "luma": (
        "POST",
        "/dream-machine/v1/generations/video",
        {},
        {"model": "ray-2", "prompt": "a cat", "aspect_ratio": "16:9", "duration": "5s"},
        lambda r: _get(f"/dream-machine/v1/generations/{r['id']}"),
    ),
    "gemini": (
        "POST",
        "/v1beta/interactions",
        {"x-goog-api-key": "k"},
        {"model": "veo-3.1-generate-preview", "input": "a cat", "background": True},
        lambda r: ("GET", f"/v1beta/interactions/{r['id']}", {"x-goog-api-key": "k"}, b""),
    ),
    "google-veo": (
        "POST",
        f"/v1beta1/{VEO}:predictLongRunning",
        {},
        {"instances": [{"prompt": "a cat"}], "parameters": {"sampleCount": 1}},
        lambda r: (
            "POST",
            f"/v1beta1/{VEO}:fetchPredictOperation",
            {**AUTH, **JSON},
            json.dumps({"operationName": r["name"]}).encode(),
        ),
    ),
}


def _scope(method: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    sent = {"host": "127.0.0.1:8000", "user-agent": "bench", "accept": "*/*", **headers}
    return {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.encode(), v.encode()) for k, v in sent.items()],
        "query_string": b"",
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
    }


def _cpu_us(fn: Callable[[], Any], n: int, repeats: int = 5) -> float:
    """CPU microseconds per call of ``fn``: the least of ``repeats`` timings of ``n`` calls
    (what other processes add to one timing is never taken off, only avoided)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time_ns() - start) / n / 1000)
    return best


def measure_dialect(name: str, n: int, journal: Path) -> dict[str, float]:
    """CPU microseconds per request of each part, for ``name``'s status read and submit."""
    from _asgi import call

    from fakeprovider.app import create_app
    from fakeprovider.http import HttpRequest
    from fakeprovider.journal import BatchedSink
    from fakeprovider.provider import FakeProvider

    method, path, headers, body, status_of = CASES[name]
    with journal.open("w") as out:
        sink = BatchedSink(out)
        provider = FakeProvider("long-render", dialect=name, journal_sink=sink)
        app = create_app(provider)
        loop = asyncio.new_event_loop()
        sub_scope = _scope(method, path, {**AUTH, **JSON, **headers})
        sub_body = json.dumps(body).encode()
        created = json.loads(loop.run_until_complete(call(app, sub_scope, sub_body)))
        s_method, s_path, s_headers, s_body = status_of(created)
        scope = _scope(s_method, s_path, s_headers)
        http = HttpRequest(
            method=s_method,
            path=s_path,
            headers={k.decode(): v.decode() for k, v in scope["headers"]},
            body=s_body,
            peer="127.0.0.1:50000",
            base_url="http://127.0.0.1:8000",
        )
        reply, response = provider.receive(http)
        assert 200 <= response.status < 300, (name, response.status, response.body[:200])
        request = provider.dialect.parse(http)

        def asgi(target: Any, one: dict[str, Any], payload: bytes, count: int) -> float:
            async def many() -> None:
                for _ in range(count):
                    await call(target, one, payload)

            return _cpu_us(lambda: loop.run_until_complete(many()), 1) / count

        async def bare(scope: Any, receive: Any, send: Any) -> None:
            await receive()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": response.body})

        got: dict[str, float] = {
            "status_asgi": min(asgi(app, scope, s_body, n) for _ in range(3)),
            "handle": _cpu_us(lambda: provider.engine.handle(request, provider.clock.now()), n),
            "parse": _cpu_us(lambda: provider.dialect.parse(http), n),
            "render": _cpu_us(lambda: provider.dialect.render(reply, http), n),
            # the harness (the call, the receive and send coroutines) stands in for uvicorn
            "harness": min(asgi(bare, scope, s_body, n) for _ in range(3)),
        }
        # The edge alone: the same ASGI call with the engine answering its reply at once and
        # the journal left out (both are measured above, and are not the edge's).
        engine = provider.engine
        engine.handle = lambda request, now: reply  # type: ignore[method-assign]
        provider.sent = lambda *args, **kwargs: None  # type: ignore[method-assign]
        got["receive_stubbed"] = _cpu_us(lambda: provider.receive(http), n)
        got["receive_own"] = got["receive_stubbed"] - got["parse"] - got["render"]
        got["status_edge"] = min(asgi(app, scope, s_body, n) for _ in range(3)) - got["harness"]
        del provider.sent
        engine.handle = type(engine).handle.__get__(engine)  # type: ignore[method-assign]
        # submits: a new job each, so a bounded number
        got["submit_asgi"] = min(asgi(app, sub_scope, sub_body, min(n, 1000)) for _ in range(2))
        loop.close()
        sink.close()
    return got


def child(n: int, names: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            results[name] = measure_dialect(name, n, Path(tmp) / f"{name}.jsonl")
    print(json.dumps(results))


def run_tree(tree: Path, n: int, names: list[str]) -> dict[str, dict[str, float]]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--requests", str(n), "--dialects", ",".join(names)],
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


KEYS = ("status_edge", "parse", "render", "receive_own", "harness", "status_asgi", "submit_asgi")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of the code before the change")
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the code measured")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dialects", default=",".join(CASES), help="comma-separated names")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.dialects.split(",")
    if args.child:
        child(args.requests, names)
        return
    trees = (
        {"now": args.tree} if args.baseline is None else {"before": args.baseline, "now": args.tree}
    )
    runs: dict[str, list[dict[str, dict[str, float]]]] = {label: [] for label in trees}
    for round_ in range(args.rounds):
        order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
        for label, tree in order:
            runs[label].append(run_tree(tree, args.requests, names))
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    print("CPU us per request, median over rounds" + (" (now/before)" if args.baseline else ""))
    print(f"{'dialect':11s} " + " ".join(f"{k:>22s}" for k in KEYS))
    for name in names:
        cells = []
        for key in KEYS:
            now = statistics.median(r[name][key] for r in runs["now"])
            if args.baseline is None:
                cells.append(f"{now:22.2f}")
            else:
                before = statistics.median(r[name][key] for r in runs["before"])
                cells.append(f"{before:7.2f} -> {now:6.2f} {now / before:5.2f}x")
        print(f"{name:11s} " + " ".join(cells))


if __name__ == "__main__":
    main()
