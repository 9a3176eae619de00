"""A soak: ``serve --journal FILE --journal-memory N`` under steady load, its RSS sampled.

Starts ``fakeprovider serve long-render`` as a process of its own on 127.0.0.1 (pinned to one
core, the load generator to another, when there are two), then for ``--duration`` seconds drives
GET status reads of one job with ``wrk -t1 -c16`` in segments of ``--sample`` seconds, submitting
a new job between segments (so the jobs grow by one a segment, not with the requests). After each
segment it prints the server's RSS and the requests answered so far. At the end it asks
``/__admin/report`` (which reads the current run from the file when memory is bounded) and stops
the server with SIGTERM: the server must exit 0 with every answered request in the file.

Without ``wrk`` (``apt-get install wrk``) a bounded Python client (threads, keep-alive) stands in
and the script says so; it drives far fewer requests per second.

    python benchmarks/bench_soak.py --duration 600              # the 10-minute soak
    python benchmarks/bench_soak.py --duration 60 --sample 10   # a quick look
    python benchmarks/bench_soak.py --duration 60 --journal-memory 0   # memory unbounded

Loopback only; bounded by ``--duration`` plus a timeout for each step.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
MIB = 1024 * 1024


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _request(port: int, method: str, path: str, body: str = "", timeout: float = 30) -> Any:
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"content-type": "application/json"} if body else {}
        connection.request(method, path, body=body or None, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


def _cores() -> tuple[set[int] | None, set[int] | None]:
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(available) < 2:
        return None, None
    return {available[0]}, set(available[1:])


def _wrk(wrk: str, port: int, path: str, seconds: float, cores: set[int] | None) -> int:
    command = [wrk, "-t1", "-c16", f"-d{max(1, round(seconds))}s", f"http://{HOST}:{port}{path}"]
    process = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=False,
        preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None,
    )
    found = re.search(r"(\d+) requests in", process.stdout)
    if found is None:
        raise RuntimeError(f"wrk printed no request count: {process.stdout}{process.stderr}")
    return int(found.group(1))


def _python_load(port: int, path: str, seconds: float) -> int:
    """The stand-in for wrk: 8 threads of keep-alive GETs until ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    counts = [0] * 8

    def worker(i: int) -> None:
        connection = http.client.HTTPConnection(HOST, port, timeout=10)
        try:
            while time.monotonic() < deadline:
                connection.request("GET", path)
                connection.getresponse().read()
                counts[i] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    return sum(counts)


def soak(duration: float, sample: float, memory: int | None, folder: Path) -> dict[str, Any]:
    journal = folder / "soak.jsonl"
    command = [sys.executable, "-m", "fakeprovider", "serve", "long-render", "--port", "0"]
    command += ["--journal", str(journal)]
    if memory is not None:
        command += ["--journal-memory", str(memory)]
    server_cores, load_cores = _cores()
    wrk = shutil.which("wrk")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip().rsplit(":", 1)[1])
        if server_cores:
            os.sched_setaffinity(process.pid, server_cores)
        submits = 0

        def submit() -> str:
            nonlocal submits
            _, body = _request(port, "POST", "/v1/jobs", json.dumps({"prompt": "soak"}))
            submits += 1
            return str(body["job_id"])

        job = submit()
        reads = 0
        samples: list[dict[str, float]] = []
        started = time.monotonic()
        while time.monotonic() - started < duration:
            left = duration - (time.monotonic() - started)
            seconds = min(sample, max(1.0, left))
            path = f"/v1/jobs/{job}"
            if wrk is not None:
                reads += _wrk(wrk, port, path, seconds, load_cores)
            else:
                reads += _python_load(port, path, seconds)
            job = submit()
            samples.append(
                {
                    "elapsed_s": round(time.monotonic() - started, 1),
                    "requests": reads + submits,
                    "rss_mib": round(_rss(process.pid) / MIB, 1),
                }
            )
            print(
                f"{samples[-1]['elapsed_s']:8.1f} s {samples[-1]['requests']:>10,} requests"
                f" RSS {samples[-1]['rss_mib']:7.1f} MiB",
                file=sys.stderr,
                flush=True,
            )
        t = time.monotonic()
        status, report = _request(port, "GET", "/__admin/report", timeout=600)
        report_seconds = time.monotonic() - t
        judged = report.get("metrics", {}).get("requests") if status == 200 else None
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    with journal.open("rb") as handle:
        lines = sum(1 for _ in handle)
    first, last = samples[min(1, len(samples) - 1)], samples[-1]
    grown = (last["rss_mib"] - first["rss_mib"]) * MIB
    between = last["requests"] - first["requests"]
    return {
        "load": "wrk -t1 -c16" if wrk else "python threads (wrk not installed)",
        "duration_s": duration,
        "journal_memory": memory,
        "requests_answered": reads + submits,
        "requests_per_s": round((reads + submits) / max(last["elapsed_s"], 1e-9)),
        "rss_mib_first_sample_after_warmup": first["rss_mib"],
        "rss_mib_last": last["rss_mib"],
        "rss_mib_max": max(s["rss_mib"] for s in samples),
        "retained_bytes_per_request_after_warmup": round(grown / between) if between else None,
        "report_status": status,
        "report_seconds": round(report_seconds, 2),
        "report_requests_judged": judged,
        "exit_code": process.returncode,
        "journal_lines": lines,
        "journal_lines_minus_answered": lines - (reads + submits),
        "stderr": err.strip()[-500:],
        "samples": samples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (<= 3600)")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument(
        "--journal-memory", type=int, default=10000, help="entries kept in memory; 0: unbounded"
    )
    args = parser.parse_args()
    if not 1 <= args.duration <= 3600:
        parser.error("--duration: expected 1 to 3600 seconds")
    if not 1 <= args.sample <= args.duration:
        parser.error("--sample: expected 1 second to --duration")
    memory = args.journal_memory or None
    with tempfile.TemporaryDirectory(prefix="fakeprovider-soak-") as folder:
        result = soak(args.duration, args.sample, memory, Path(folder))
    print(json.dumps(result, indent=2))
    return 0 if result["exit_code"] == 0 and result["journal_lines_minus_answered"] >= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
