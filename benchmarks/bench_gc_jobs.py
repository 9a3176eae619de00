"""What the jobs a server keeps cost the garbage collector, and the memory each submit keeps.

Submits ``--submits`` jobs of ``long-render`` (generic dialect, BatchedSink journal to a temporary
file) through the ASGI app in-process, after 2,000 to warm up, and prints: bytes retained per
submit (tracemalloc, after a full collection), then, with the collector frozen and off for a
second batch of as many submits, how many objects generation 1 holds per submit after a
``gc.collect(0)`` and how long ``gc.collect(1)`` takes (wall time: the pause a server's
middle-generation collection makes, which every tracked job record lengthens).

With ``--baseline DIR`` (a checkout to compare against) both run in child processes, alternated
``--rounds`` times, one line each.

    python benchmarks/bench_gc_jobs.py [--submits 30000] [--rounds 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
BODY = b'{"prompt":"a cat riding a bicycle"}'
SCOPE = {
    "type": "http",
    "method": "POST",
    "path": "/v1/jobs",
    "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
    "query_string": b"",
    "client": ("127.0.0.1", 5000),
    "scheme": "http",
}


def measure(submits: int) -> dict[str, float]:
    """The numbers for this process's ``fakeprovider`` (see the module's docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _asgi import call

    from fakeprovider.app import create_app
    from fakeprovider.journal import BatchedSink
    from fakeprovider.provider import FakeProvider

    with tempfile.TemporaryDirectory() as directory, open(Path(directory) / "j.jsonl", "w") as out:
        sink = BatchedSink(out)
        app = create_app(FakeProvider("long-render", journal_sink=sink))
        loop = asyncio.new_event_loop()

        async def many(count: int) -> None:
            for _ in range(count):
                await call(app, SCOPE, BODY)

        loop.run_until_complete(many(2000))
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        loop.run_until_complete(many(submits))
        gc.collect()
        retained = (tracemalloc.get_traced_memory()[0] - before) / submits
        tracemalloc.stop()
        gc.collect()
        gc.freeze()
        gc.disable()
        try:
            loop.run_until_complete(many(submits))
            gc.collect(0)
            middle = len(gc.get_objects(1))
            start = time.perf_counter()
            gc.collect(1)
            pause = time.perf_counter() - start
        finally:
            gc.enable()
            gc.unfreeze()
        loop.close()
        sink.close()
    return {
        "retained_bytes": retained,
        "gen1_objects_per_submit": middle / submits,
        "collect1_ms": pause * 1000,
    }


def _line(label: str, found: dict[str, Any]) -> str:
    return (
        f"{label:<10} retained {found['retained_bytes']:6.0f} B/submit  generation 1"
        f" {found['gen1_objects_per_submit']:5.2f} objects/submit  gc.collect(1)"
        f" {found['collect1_ms']:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--submits", type=int, default=30_000, choices=range(1, 200_001), metavar="N"
    )
    parser.add_argument("--rounds", type=int, default=2, choices=range(1, 11), metavar="R")
    parser.add_argument("--baseline", type=Path, help="a checkout to compare against")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # (children)
    args = parser.parse_args()
    if args.baseline is None:
        found = measure(args.submits)
        print(json.dumps(found) if args.json else _line("this tree", found))
        return
    for _ in range(args.rounds):
        for label, tree in (("baseline", args.baseline.resolve()), ("this tree", HERE)):
            env = dict(os.environ, PYTHONPATH=str(tree))
            command = [sys.executable, __file__, "--submits", str(args.submits), "--json"]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            print(_line(label, json.loads(done.stdout)), flush=True)


if __name__ == "__main__":
    main()
