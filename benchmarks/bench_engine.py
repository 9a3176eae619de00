"""The engine's own cost per request: ``Engine.handle`` for a status read and a submit, per dialect.

Each dialect configures the engine its own way (poll hints, inline results, job ids, queueing at
capacity), so every dialect is timed. The requests are built as a dialect's parse leaves them
(no HTTP parsing, no rendering), on ``long-render`` (no fault) and on ``transient-5xx`` (faults
on other routes or windows), with a virtual clock that moves 1 ms per request. Time is CPU time
(``time.process_time_ns``) over batches of ``--requests`` calls; each entry is completed after
its batch, outside the timing, as an adapter would complete it. The median batch is reported.

With ``--baseline DIR`` (a checkout of the code to compare against), the measurement runs in
child processes, alternating ``DIR`` and this tree ``--rounds`` times, and prints the medians
side by side with their ratio: both sides in the same run, on the same machine load.

    python benchmarks/bench_engine.py [--requests 4000] [--rounds 3] [--baseline DIR]
        [--only long-render/generic,long-render/ark]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
SCENARIOS = ("long-render", "transient-5xx")


def _batch(engine: Any, clock: Any, request: Any, count: int) -> float:
    """CPU microseconds per ``engine.handle(request, ...)`` over ``count`` calls."""
    replies = []
    start = time.process_time_ns()
    for _ in range(count):
        clock.advance(0.001)
        replies.append(engine.handle(request, clock.now()))
    spent = time.process_time_ns() - start
    for reply in replies:
        engine.complete(reply, started=1.0, completed=1.0, status_code=200)
    return spent / count / 1000


def _measure(requests: int, batches: int, only: str) -> dict[str, dict[str, float]]:
    from fakeprovider.clock import VirtualClock
    from fakeprovider.dialects import DIALECTS
    from fakeprovider.messages import Request
    from fakeprovider.provider import FakeProvider

    out: dict[str, dict[str, float]] = {}
    for scenario in SCENARIOS:
        for name in DIALECTS:
            if only and f"{scenario}/{name}" not in only.split(","):
                continue
            clock = VirtualClock()
            provider = FakeProvider(scenario, dialect=name, clock=clock, journal_memory=1000)
            engine = provider.engine
            submit = Request(
                kind="submit",
                method="POST",
                path="/v1/jobs",
                body={"model": "m", "prompt": "a cat"},
                credential="bench-token",
                client="127.0.0.1",
            )
            first = engine.handle(submit, clock.now())
            engine.complete(first, started=1.0, completed=1.0, status_code=200)
            assert first.job is not None, (scenario, name, first)
            job_id = first.job.id
            status = Request(
                kind="status",
                method="GET",
                path=f"/v1/jobs/{job_id}",
                job_id=job_id,
                credential="bench-token",
                client="127.0.0.1",
            )
            # one request object per kind, where a dialect parses a new one each time: making
            # it is the dialect's cost, not the engine's
            reads = [_batch(engine, clock, status, requests) for _ in range(batches)]
            creates = [_batch(engine, clock, submit, requests) for _ in range(batches)]
            out[f"{scenario}/{name}"] = {
                "status_us": round(statistics.median(reads), 2),
                "submit_us": round(statistics.median(creates), 2),
            }
    return out


def _child(tree: Path, requests: int, only: str) -> dict[str, dict[str, float]]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--requests", str(requests), "--only", only],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=tree,
    )
    result: dict[str, dict[str, float]] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument(
        "--only", default="", help="scenario/dialect pairs, comma-separated (default: all)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker or args.baseline is None:
        print(json.dumps(_measure(args.requests, 5, args.only), indent=1))
        return 0
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        runs["before"].append(_child(args.baseline, args.requests, args.only))
        runs["after"].append(_child(HERE, args.requests, args.only))
    print(
        f"{'scenario/dialect':34s} {'status before':>13s} {'after':>7s} {'ratio':>6s}"
        f" {'submit before':>14s} {'after':>7s} {'ratio':>6s}"
    )
    for key in runs["after"][0]:
        row = [key.ljust(34)]
        for what in ("status_us", "submit_us"):
            before = statistics.median(run[key][what] for run in runs["before"])
            after = statistics.median(run[key][what] for run in runs["after"])
            row.append(f"{before:13.2f} {after:7.2f} {after / before:6.2f}")
        print(" ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
