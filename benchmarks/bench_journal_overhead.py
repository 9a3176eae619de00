"""Throughput of fakeprovider's status route against a bare Starlette app, in the same run.

Both servers run as separate processes on 127.0.0.1 (uvicorn, one worker); one keep-alive httpx
client sends status reads to each in alternating rounds. fakeprovider journals every request to
a JSONL file (flushed per entry). The ratio fakeprovider / bare is the number that matters.

    python benchmarks/bench_journal_overhead.py [--requests 2000] [--rounds 3] [--max-seconds 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

BARE = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def status(request):
    return JSONResponse({"job_id": request.path_params["job_id"], "status": "processing", "done": False,
                         "progress_percent": 35, "elapsed_seconds": 31.2, "poll_after_seconds": 5,
                         "message": "The job is processing and NOT complete."})

app = Starlette(routes=[Route("/v1/jobs/{job_id}", status)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"server at {url} did not start")


def _round(client: httpx.Client, path: str, count: int, budget: float) -> float:
    start = time.perf_counter()
    for _ in range(count):
        if time.perf_counter() - start > budget:
            raise RuntimeError("round exceeded its time budget")
        client.get(path).raise_for_status()
    return count / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        journal = Path(tmp) / "journal.jsonl"
        bare_port, fake_port = _free_port(), _free_port()
        procs = [
            subprocess.Popen([sys.executable, "-c", BARE, str(bare_port)]),
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "fakeprovider",
                    "serve",
                    "long-render",
                    "--port",
                    str(fake_port),
                    "--journal",
                    str(journal),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
        ]
        try:
            bare_url, fake_url = f"http://127.0.0.1:{bare_port}", f"http://127.0.0.1:{fake_port}"
            _wait(f"{bare_url}/v1/jobs/x")
            _wait(f"{fake_url}/__admin/health")
            budget = args.max_seconds / (2 * args.rounds)
            with httpx.Client(base_url=bare_url) as bare, httpx.Client(base_url=fake_url) as fake:
                job = fake.post("/v1/jobs", json={"prompt": "bench"}).json()["job_id"]
                _round(bare, "/v1/jobs/warm", 200, budget)
                _round(fake, f"/v1/jobs/{job}", 200, budget)
                bare_rates, fake_rates = [], []
                for _ in range(args.rounds):
                    bare_rates.append(_round(bare, "/v1/jobs/x", args.requests, budget))
                    fake_rates.append(_round(fake, f"/v1/jobs/{job}", args.requests, budget))
            lines = sum(1 for _ in journal.open())
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=10)
    bare_rate, fake_rate = statistics.median(bare_rates), statistics.median(fake_rates)
    result = {
        "bare_starlette_rps": round(bare_rate),
        "fakeprovider_rps": round(fake_rate),
        "ratio": round(fake_rate / bare_rate, 3),
        "journal_lines": lines,
        "requests_per_round": args.requests,
        "rounds": args.rounds,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
