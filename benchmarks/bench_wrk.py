"""The server under load from ``wrk``: fakeprovider against bare Starlette, side by side.

Four servers, each a process of its own on 127.0.0.1, started afresh in every round:

- bare Starlette + uvicorn on httptools + uvloop (the baseline every ratio is against),
- bare Starlette + uvicorn on h11 + asyncio,
- ``fakeprovider serve long-render --journal FILE --http h11 --loop asyncio``,
- ``fakeprovider serve long-render --journal FILE --http httptools --loop uvloop``.

The bare apps answer, with fixed bytes, exactly the body the fake answered to a status read and
to a submit (same size, same status code). For each server: the startup time (spawn to the first
200), a warm-up of GET status reads, then GET status reads of one job and POST submits for a
fixed time each. ``wrk -t1 -c16`` is the load generator; with two or more cores the server is
pinned to one and ``wrk`` to another (``os.sched_setaffinity``), so the client never competes
with the server for a core. Retained bytes per request: the server's RSS growth over the
measured GET reads divided by their count (after the warm-up, so start-up allocations and
caches are not counted). CPU per request: the server's CPU time over each run (every thread,
user + system, from ``/proc``) divided by the requests answered; its ratio (the baseline's CPU
per request over the server's) is what throughput's would be on an idle machine, and other work
on the machine hardly moves it, where it moves throughput by a third. The table shows medians
over the rounds; each ratio is the median of per-round ratios against the baseline of the same
round.

A round's runs are taken in slices of a second (``--slice``), the servers' interleaved (A B,
B A, A B...; each server idles while another takes its slice), so that a machine whose speed
swings, as a shared one's does by 2x within minutes, weighs on every server alike; a run's
numbers are its slices' together (p50 and p99: the median of its slices'). ``--slice 0`` takes
each server's runs whole, one server after the other (the order reversed every other round).

Install wrk first (Debian/Ubuntu: ``apt-get install wrk``; macOS: ``brew install wrk``). Without
it a bounded Python client (asyncio, raw HTTP/1.1 keep-alive) stands in and the script says so:
it saturates long before the fast servers do, so its numbers measure the client, not the server.

    python benchmarks/bench_wrk.py                      # 3 rounds, 3 s warm-up, 8 s per run
    python benchmarks/bench_wrk.py --rounds 1 --warmup 1 --duration 2   # a quick look
    python benchmarks/bench_wrk.py --servers fake-fast,bare-fast --json  # a subset, as JSON

Loopback only; every run is bounded by its duration (wrk's ``-d``, the fallback's own clock)
plus a timeout, and the whole benchmark by ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
SCENARIO = "long-render"

#: The bare app: answers a status read and a submit with the bytes given in a JSON file.
BARE = """
import json, sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

answers = json.load(open(sys.argv[2]))
status_body = answers["status_body"].encode()
submit_body = answers["submit_body"].encode()
submit_code = answers["submit_code"]

async def status(request):
    return Response(status_body, media_type="application/json")

async def submit(request):
    await request.body()
    return Response(submit_body, status_code=submit_code, media_type="application/json")

app = Starlette(routes=[Route("/v1/jobs/{job_id}", status), Route("/v1/jobs", submit, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), http=sys.argv[3], loop=sys.argv[4],
            log_level="warning", access_log=False, lifespan="off")
"""

#: wrk's ``done`` hook: one machine-readable line after wrk's own summary.
LUA_DONE = """
done = function(summary, latency, requests)
  io.write(string.format(
    "BENCH {\\"requests\\": %d, \\"duration_us\\": %d, \\"p50_us\\": %d, \\"p99_us\\": %d, "
    .. "\\"max_us\\": %d, \\"connect_errors\\": %d, \\"read_errors\\": %d, "
    .. "\\"write_errors\\": %d, \\"status_errors\\": %d, \\"timeouts\\": %d}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.status, summary.errors.timeout))
end
"""
SUBMIT_BODY = '{"prompt": "bench"}'
#: Each submit has a prompt of its own, of its own length, as a real client's have: "bench N"
#: and 1 to 601 words after it (up to some 3 kB: 2,508 lengths in 5,000 submits, more than the 512 header
#: sets the app keeps lanes for), so that nothing the fake keeps by the request's bytes or by its
#: Content-Length (a lane per header set) can flatter its figures, even on one connection.
LUA_POST = """\
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
submits = 0
words = {"a", "cat", "riding", "a", "bicycle", "through", "neon", "rain", "at", "dusk"}
request = function()
  submits = submits + 1
  local said = {}
  for i = 1, 1 + (submits * 7919) % 601 do said[i] = words[(submits + i) % #words + 1] end
  local prompt = "bench " .. submits .. " " .. table.concat(said, " ")
  return wrk.format(nil, nil, nil, '{"prompt": "' .. prompt .. '"}')
end
"""
#: With ``--request-ids``: every request carries an ``X-Request-Id`` of its own, as requests
#: from a traced client or a gateway do, so nothing the fake keeps by a request's headers can
#: flatter it either. Put before the script of either method: it wraps that script's
#: ``request`` (the status reads' script has none: wrk's own request is used).
LUA_REQUEST_IDS = """\
sent = 0
local function tagged(make)
  return function()
    sent = sent + 1
    wrk.headers["X-Request-Id"] = "req-" .. sent
    if make then return make() end
    return wrk.format()
  end
end
"""
#: Put after the script: wraps its ``request`` (or wrk's own) with ``tagged``.
LUA_TAG = "request = tagged(request)\n"


def write_scripts(folder: Path, *, request_ids: bool) -> None:
    """wrk's scripts into ``folder``: ``get.lua`` for status reads, ``post.lua`` for submits,
    each tagging every request with an ``X-Request-Id`` of its own when ``request_ids``."""
    head, tail = (LUA_REQUEST_IDS, LUA_TAG) if request_ids else ("", "")
    (folder / "get.lua").write_text(head + tail + LUA_DONE)
    (folder / "post.lua").write_text(head + LUA_POST + tail + LUA_DONE)


#: The stand-in when wrk is missing: ``python -c FALLBACK url method path body seconds conns``.
FALLBACK = r"""
import asyncio, json, sys, time
from urllib.parse import urlsplit

url, method, path, body, seconds, conns = sys.argv[1:7]
seconds, conns = float(seconds), int(conns)
ids = sys.argv[7:8] == ["ids"]  # an X-Request-Id of its own on every request
parts = urlsplit(url)
sent = 0
WORDS = ["a", "cat", "riding", "a", "bicycle", "through", "neon", "rain", "at", "dusk"]

def request():
    # each submit a prompt of its own and of its own length, as wrk's script makes them
    global sent
    sent += 1
    said = " ".join(WORDS[(sent + i) % len(WORDS)] for i in range(1, 2 + (sent * 7919) % 601))
    payload = body.replace('"bench"', f'"bench {sent} {said}"').encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
    if ids:
        head += f"X-Request-Id: req-{sent}\r\n"
    if payload:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    return head.encode() + b"\r\n" + payload
latencies, errors = [], {"read": 0, "status": 0}
LIMIT = 2_000_000  # latencies kept (bounded memory)

async def one(deadline):
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            writer.write(request())
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            if len(latencies) < LIMIT:
                latencies.append(time.perf_counter() - start)
            if int(status.split()[1]) > 399:
                errors["status"] += 1
    except (OSError, asyncio.IncompleteReadError, IndexError, ValueError):
        errors["read"] += 1
    finally:
        writer.close()

async def main():
    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(one(start + seconds) for _ in range(conns))), seconds + 10)
    elapsed = time.perf_counter() - start
    ordered = sorted(latencies) or [0.0]
    pick = lambda q: int(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6)
    print("BENCH " + json.dumps({
        "requests": len(latencies), "duration_us": int(elapsed * 1e6), "p50_us": pick(0.5),
        "p99_us": pick(0.99), "max_us": int(ordered[-1] * 1e6), "connect_errors": 0,
        "read_errors": errors["read"], "write_errors": 0, "status_errors": errors["status"],
        "timeouts": 0}))

asyncio.run(main())
"""


@dataclass(frozen=True)
class Server:
    """One server of the comparison: ``kind`` bare or fake, on ``http`` + ``loop``."""

    name: str
    label: str
    kind: str
    http: str
    loop: str


SERVERS = (
    Server(
        "bare-fast", "bare Starlette + uvicorn, httptools + uvloop", "bare", "httptools", "uvloop"
    ),
    Server("bare-h11", "bare Starlette + uvicorn, h11 + asyncio", "bare", "h11", "asyncio"),
    Server("fake-h11", "fakeprovider, h11 + asyncio", "fake", "h11", "asyncio"),
    Server(
        "fake-fast", "fakeprovider, httptools + uvloop (default)", "fake", "httptools", "uvloop"
    ),
)
BASELINE = "bare-fast"


@dataclass(frozen=True)
class LoadResult:
    """What one load run measured (wrk's numbers, or the fallback's in the same shape)."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    errors: int

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def parse_load_output(text: str) -> LoadResult:
    """The ``BENCH {...}`` line that the ``done`` hook (or the fallback) prints, as numbers.
    Raises ValueError when there is none (wrk failed before it finished)."""
    for line in text.splitlines():
        if line.startswith("BENCH "):
            data = json.loads(line.removeprefix("BENCH "))
            errors = sum(
                int(data[key])
                for key in (
                    "connect_errors",
                    "read_errors",
                    "write_errors",
                    "status_errors",
                    "timeouts",
                )
            )
            return LoadResult(
                requests=int(data["requests"]),
                seconds=int(data["duration_us"]) / 1e6,
                p50_ms=int(data["p50_us"]) / 1e3,
                p99_ms=int(data["p99_us"]) / 1e3,
                max_ms=int(data["max_us"]) / 1e3,
                errors=errors,
            )
    raise ValueError(f"no BENCH line in the load generator's output: {text[-500:]!r}")


@dataclass
class Sample:
    """One server's numbers in one round."""

    server: str
    startup_s: float
    get: LoadResult
    post: LoadResult | None
    retained_bytes: float | None
    #: The server's CPU time (every thread, user + system) per request of each run, in
    #: seconds; None where /proc cannot tell. Unlike throughput, it hardly moves when other
    #: work shares the machine (as long as the server is the bottleneck of its run).
    get_cpu: float | None = None
    post_cpu: float | None = None


@dataclass
class Row:
    """One line of the table: medians over the rounds."""

    server: Server
    get_rate: float
    get_ratio: float
    get_p99_ms: float
    post_rate: float | None
    post_ratio: float | None
    post_p99_ms: float | None
    startup_s: float
    retained_bytes: float | None
    errors: int
    rounds: int = 0
    get_rates: list[float] = field(default_factory=list)
    get_cpu_us: float | None = None
    get_cpu_ratio: float | None = None
    post_cpu_us: float | None = None
    post_cpu_ratio: float | None = None


def _median_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _cpu_ratio(base: float | None, own: float | None) -> float | None:
    """The baseline's CPU per request over the server's: like a throughput ratio, 0.5 when
    the server spends twice the baseline's CPU on each request."""
    return None if base is None or own is None or own <= 0 else base / own


def summarise(rounds: Sequence[Sequence[Sample]], servers: Sequence[Server]) -> list[Row]:
    """Medians per server over ``rounds`` (each a list of samples taken in the same round);
    each ratio is the median over the rounds of the server's rate over the baseline's in the
    same round (1.0 for the baseline itself; NaN when the baseline was not measured). The CPU
    ratios are alike: the median of the baseline's CPU per request over the server's."""
    rows = []
    for server in servers:
        mine = [s for samples in rounds for s in samples if s.server == server.name]
        if not mine:
            continue
        get_ratios: list[float] = []
        post_ratios: list[float] = []
        get_cpu_ratios: list[float | None] = []
        post_cpu_ratios: list[float | None] = []
        for samples in rounds:
            by_name = {s.server: s for s in samples}
            own, base = by_name.get(server.name), by_name.get(BASELINE)
            if own is None or base is None:
                continue
            if base.get.rate > 0:
                get_ratios.append(own.get.rate / base.get.rate)
            if own.post is not None and base.post is not None and base.post.rate > 0:
                post_ratios.append(own.post.rate / base.post.rate)
            get_cpu_ratios.append(_cpu_ratio(base.get_cpu, own.get_cpu))
            post_cpu_ratios.append(_cpu_ratio(base.post_cpu, own.post_cpu))
        posts = [s.post for s in mine if s.post is not None]
        rows.append(
            Row(
                server=server,
                get_rate=statistics.median(s.get.rate for s in mine),
                get_ratio=statistics.median(get_ratios) if get_ratios else float("nan"),
                get_p99_ms=statistics.median(s.get.p99_ms for s in mine),
                post_rate=statistics.median(p.rate for p in posts) if posts else None,
                post_ratio=statistics.median(post_ratios) if post_ratios else None,
                post_p99_ms=statistics.median(p.p99_ms for p in posts) if posts else None,
                startup_s=statistics.median(s.startup_s for s in mine),
                retained_bytes=_median_or_none([s.retained_bytes for s in mine]),
                errors=sum(s.get.errors + (s.post.errors if s.post else 0) for s in mine),
                rounds=len(mine),
                get_rates=[s.get.rate for s in mine],
                get_cpu_us=_micro(_median_or_none([s.get_cpu for s in mine])),
                get_cpu_ratio=_median_or_none(get_cpu_ratios),
                post_cpu_us=_micro(_median_or_none([s.post_cpu for s in mine])),
                post_cpu_ratio=_median_or_none(post_cpu_ratios),
            )
        )
    return rows


def _micro(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} us"


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} ms" if value >= 1 else f"{value:.2f} ms"


def _ratio(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.2f}"


def _bytes(value: float | None) -> str:
    return "-" if value is None else f"{max(value, 0.0):,.0f} B"


def format_table(rows: Sequence[Row]) -> str:
    """The issue's table (GET status reads), then submits, as Markdown; each with the server's
    CPU per request and its ratio to the baseline's (a measure that a busy machine hardly
    moves, beside throughput, which it does)."""
    lines = [
        "| server | GET status reads/s | x bare httptools+uvloop | p99 | startup"
        " | retained per request | CPU per read | x bare (CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.server.label} | {row.get_rate:,.0f} | {_ratio(row.get_ratio)}"
            f" | {_ms(row.get_p99_ms)} | {row.startup_s:.2f} s | {_bytes(row.retained_bytes)}"
            f" | {_us(row.get_cpu_us)} | {_ratio(row.get_cpu_ratio)} |"
        )
    if any(row.post_rate is not None for row in rows):
        lines += [
            "",
            "| server | POST submits/s | x bare httptools+uvloop | p99 | CPU per submit"
            " | x bare (CPU) |",
            "|---|---|---|---|---|---|",
        ]
        for row in rows:
            rate = "-" if row.post_rate is None else f"{row.post_rate:,.0f}"
            lines.append(
                f"| {row.server.label} | {rate} | {_ratio(row.post_ratio)}"
                f" | {_ms(row.post_p99_ms)} | {_us(row.post_cpu_us)}"
                f" | {_ratio(row.post_cpu_ratio)} |"
            )
    return "\n".join(lines)


# ---- running servers and load (needs a machine; not unit-tested) ----


class Budget:
    """The whole benchmark's time limit."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def check(self, what: str) -> None:
        if time.monotonic() > self.deadline:
            raise SystemExit(f"bench_wrk: over --max-seconds before {what}; nothing more is run")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _cores() -> tuple[set[int] | None, set[int] | None]:
    """(server cores, load cores): one core each when there are two or more, else no pinning."""
    if not hasattr(os, "sched_getaffinity"):
        return None, None
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None, None
    return {cores[0]}, {cores[1]}


def _pin(pid: int, cores: set[int] | None) -> None:
    if cores is not None:
        with contextlib.suppress(OSError):  # the process may already be gone
            os.sched_setaffinity(pid, cores)


def _rss_bytes(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def _cpu_seconds(pid: int) -> float | None:
    """The process's CPU time so far, every thread, user + system (``/proc/PID/stat``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _per_request(before: float | None, after: float | None, load: LoadResult) -> float | None:
    if before is None or after is None or load.requests <= 0:
        return None
    return (after - before) / load.requests


def _request(port: int, method: str, path: str, body: str = "") -> tuple[int, str]:
    connection = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        headers = {"Content-Type": "application/json"} if body else {}
        connection.request(method, path, body=body or None, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


@contextlib.contextmanager
def running(
    server: Server, answers: Path, journal: Path, cores: set[int] | None
) -> Iterator[tuple[subprocess.Popen[bytes], int, float]]:
    """Start ``server``, wait (at most 30 s) for its first 200; yields the process, its port
    and the startup time (spawn to first 200)."""
    port = _free_port()
    if server.kind == "bare":
        command = [sys.executable, "-c", BARE, str(port), str(answers), server.http, server.loop]
        probe = "/v1/jobs/probe"
    else:
        command = [
            *(sys.executable, "-m", "fakeprovider", "serve", SCENARIO, "--port", str(port)),
            *("--journal", str(journal), "--http", server.http, "--loop", server.loop),
        ]
        probe = "/__admin/health"
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pin(process.pid, cores)
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"{server.name} exited with {process.returncode}:"
                    f" {process.stderr.read().decode()[-2000:] if process.stderr else ''}"
                )
            with contextlib.suppress(OSError):
                if _request(port, "GET", probe)[0] == 200:
                    break
            if time.perf_counter() - start > 30:
                raise RuntimeError(f"{server.name} did not answer 200 within 30 s")
            time.sleep(0.005)
        startup = time.perf_counter() - start
        yield process, port, startup
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.stderr is not None:
            process.stderr.close()


@dataclass(frozen=True)
class Load:
    """How to drive load: wrk (``wrk`` the path) or the Python fallback."""

    wrk: str | None
    connections: int
    threads: int
    cores: set[int] | None
    scripts: Path
    #: Whether every request carries an ``X-Request-Id`` of its own (``--request-ids``).
    request_ids: bool = False

    def run(self, port: int, method: str, path: str, seconds: float) -> LoadResult:
        url = f"http://{HOST}:{port}"
        if self.wrk is not None:
            script = self.scripts / ("post.lua" if method == "POST" else "get.lua")
            command = [
                self.wrk,
                *("-t", str(self.threads), "-c", str(self.connections)),
                # wrk takes whole seconds only (it prints its usage for "0.5s")
                *("-d", f"{max(1, math.ceil(seconds))}s", "--timeout", "5s", "-s", str(script)),
                url + path,
            ]
        else:
            body = SUBMIT_BODY if method == "POST" else ""
            command = [sys.executable, "-c", FALLBACK, url, method, path, body]
            command += [f"{seconds:g}", str(self.connections)]
            command += ["ids"] if self.request_ids else []
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        _pin(process.pid, self.cores)
        try:
            out, _ = process.communicate(timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=5)
            raise RuntimeError(f"the load generator ran past {seconds + 30:g} s") from None
        return parse_load_output(out.decode(errors="replace"))


def probe_answers(answers: Path, journal: Path) -> None:
    """Start the fake once and record what it answers to a submit and a status read, for the
    bare apps to answer the same bytes."""
    fake = next(s for s in SERVERS if s.kind == "fake")
    with running(fake, answers, journal, None) as (_, port, _startup):
        submit_code, submit_body = _request(port, "POST", "/v1/jobs", SUBMIT_BODY)
        job = json.loads(submit_body)["job_id"]
        status_code, status_body = _request(port, "GET", f"/v1/jobs/{job}")
    if status_code != 200:
        raise RuntimeError(f"the fake answered a status read with {status_code}")
    answers.write_text(
        json.dumps(
            {"submit_code": submit_code, "submit_body": submit_body, "status_body": status_body}
        )
    )


def _status_path(server: Server, port: int) -> str:
    """The path the status reads ask for: a job the fake has just made, the bare app's any."""
    if server.kind != "fake":
        return "/v1/jobs/job_bench"
    return f"/v1/jobs/{json.loads(_request(port, 'POST', '/v1/jobs', SUBMIT_BODY)[1])['job_id']}"


def _retained(before: int | None, after: int | None, reads: LoadResult) -> float | None:
    """The server's RSS growth over the measured reads, per read."""
    if before is None or after is None or reads.requests <= 0:
        return None
    return (after - before) / reads.requests


def measure(
    server: Server,
    load: Load,
    answers: Path,
    journal: Path,
    cores: set[int] | None,
    *,
    warmup: float,
    duration: float,
    submits: bool,
) -> Sample:
    with running(server, answers, journal, cores) as (process, port, startup):
        path = _status_path(server, port)
        if warmup > 0:
            load.run(port, "GET", path, warmup)
        before, cpu = _rss_bytes(process.pid), _cpu_seconds(process.pid)
        get = load.run(port, "GET", path, duration)
        after, get_cpu = _rss_bytes(process.pid), _cpu_seconds(process.pid)
        retained = _retained(before, after, get)
        post = post_cpu = None
        if submits:
            post = load.run(port, "POST", "/v1/jobs", duration)
            post_cpu = _per_request(get_cpu, _cpu_seconds(process.pid), post)
    return Sample(
        server.name, startup, get, post, retained, _per_request(cpu, get_cpu, get), post_cpu
    )


def slice_order(names: Sequence[str], cycles: int) -> list[str]:
    """Which server takes each slice of an interleaved run (``--slice``): every server once a
    cycle, the order reversed every other cycle (A B, B A, A B...), so that a machine that gets
    faster or slower part-way weighs on every server alike."""
    order: list[str] = []
    for cycle in range(cycles):
        order += names if cycle % 2 == 0 else list(reversed(names))
    return order


def combine(results: Sequence[LoadResult]) -> LoadResult:
    """One server's run from its slices: requests, seconds and errors summed, the worst
    latency, and the median of the slices' p50 and p99 (wrk prints percentiles, not the
    histogram they come from, so the slices' cannot be merged into the run's own)."""
    if not results:
        raise ValueError("no slice to combine")
    return LoadResult(
        requests=sum(r.requests for r in results),
        seconds=sum(r.seconds for r in results),
        p50_ms=statistics.median(r.p50_ms for r in results),
        p99_ms=statistics.median(r.p99_ms for r in results),
        max_ms=max(r.max_ms for r in results),
        errors=sum(r.errors for r in results),
    )


def _sum_or_none(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def measure_interleaved(
    servers: Sequence[Server],
    load: Load,
    answers: Path,
    folder: Path,
    cores: set[int] | None,
    *,
    warmup: float,
    duration: float,
    seconds: int,
    submits: bool,
) -> list[Sample]:
    """``measure`` for every server of a round at once: all started (one after the other, each
    timed alone), each warmed up, then the status reads taken in slices of ``seconds``
    (``slice_order``), then the submits likewise. Each server idles while another takes its
    slice; its numbers are its slices' together (``combine``), its CPU theirs summed."""
    cycles = max(1, round(duration / seconds))
    with contextlib.ExitStack() as stack:
        live: dict[str, tuple[subprocess.Popen[bytes], int, float, str]] = {}
        for server in servers:
            journal = folder / f"{server.name}-interleaved.jsonl"
            process, port, startup = stack.enter_context(running(server, answers, journal, cores))
            live[server.name] = (process, port, startup, _status_path(server, port))
        for _process, port, _startup, path in live.values():
            if warmup > 0:
                load.run(port, "GET", path, warmup)

        def phase(method: str) -> dict[str, tuple[LoadResult, float | None]]:
            slices: dict[str, list[LoadResult]] = {name: [] for name in live}
            cpus: dict[str, list[float | None]] = {name: [] for name in live}
            for name in slice_order(list(live), cycles):
                process, port, _startup, path = live[name]
                before = _cpu_seconds(process.pid)
                result = load.run(port, method, "/v1/jobs" if method == "POST" else path, seconds)
                slices[name].append(result)
                after = _cpu_seconds(process.pid)
                cpus[name].append(None if before is None or after is None else after - before)
            out = {}
            for name in live:
                run = combine(slices[name])
                cpu = _sum_or_none(cpus[name])
                out[name] = (run, _per_request(0.0, cpu, run))
            return out

        before_rss = {name: _rss_bytes(live[name][0].pid) for name in live}
        reads = phase("GET")
        after_rss = {name: _rss_bytes(live[name][0].pid) for name in live}
        posts = phase("POST") if submits else {}
    for server in servers:
        with contextlib.suppress(OSError):
            (folder / f"{server.name}-interleaved.jsonl").unlink()  # hundreds of MB a round
    samples = []
    for server in servers:
        get, get_cpu = reads[server.name]
        retained = _retained(before_rss[server.name], after_rss[server.name], get)
        post, post_cpu = posts.get(server.name, (None, None))
        startup = live[server.name][2]
        samples.append(Sample(server.name, startup, get, post, retained, get_cpu, post_cpu))
    return samples


def _machine() -> dict[str, object]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": sys.version.split()[0],
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _say(number: int, sample: Sample) -> None:
    """A round's numbers for one server, on standard error as they come."""
    print(
        f"round {number + 1}: {sample.server}: {sample.get.rate:,.0f} reads/s"
        f" (p99 {_ms(sample.get.p99_ms)}, {_us(_micro(sample.get_cpu))} CPU), "
        + (
            f"{sample.post.rate:,.0f} submits/s ({_us(_micro(sample.post_cpu))} CPU), "
            if sample.post is not None
            else ""
        )
        + f"startup {sample.startup_s:.2f} s",
        file=sys.stderr,
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of warm-up (default 3)")
    parser.add_argument(
        "--duration", type=float, default=8.0, help="seconds per measured run (default 8)"
    )
    parser.add_argument(
        "--slice",
        type=int,
        default=1,
        help="take each run in slices of this many seconds, the servers' slices interleaved"
        " (A B B A A B...: a machine whose speed swings weighs on all alike); 0: each"
        " server's runs whole, one server after the other (default 1)",
    )
    parser.add_argument("--connections", type=int, default=16, help="wrk -c (default 16)")
    parser.add_argument("--threads", type=int, default=1, help="wrk -t (default 1)")
    parser.add_argument(
        "--servers",
        default=",".join(s.name for s in SERVERS),
        help=f"comma-separated subset of {', '.join(s.name for s in SERVERS)}",
    )
    parser.add_argument("--no-submits", action="store_true", help="GET status reads only")
    parser.add_argument(
        "--request-ids",
        action="store_true",
        help="an X-Request-Id of its own on every request, as a traced client sends",
    )
    parser.add_argument(
        "--python-client", action="store_true", help="use the Python fallback even if wrk exists"
    )
    parser.add_argument("--max-seconds", type=float, default=900.0, help="whole-run limit")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    names = args.servers.split(",")
    unknown = sorted(set(names) - {s.name for s in SERVERS})
    if unknown:
        parser.error(f"unknown server(s): {', '.join(unknown)}")
    if not (1 <= args.rounds <= 20 and 0 < args.duration <= 120 and 0 <= args.warmup <= 60):
        parser.error("expected 1-20 rounds, a duration of at most 120 s, a warm-up of at most 60 s")
    if not 0 <= args.slice <= args.duration:
        parser.error("expected a --slice of 0 (none) up to the --duration, in whole seconds")
    servers = [s for s in SERVERS if s.name in names]
    budget = Budget(args.max_seconds)
    wrk = None if args.python_client else shutil.which("wrk")
    server_cores, load_cores = _cores()
    machine = _machine()
    print(
        f"bench_wrk: {machine['nproc']} x {machine['cpu']}, Python {machine['python']},"
        f" load average {machine['load_average']}; load: "
        + (f"wrk -t{args.threads} -c{args.connections}" if wrk else "the Python fallback (no wrk)")
        + (
            f"; server on core {min(server_cores)}, load on core {min(load_cores)}"
            if server_cores and load_cores
            else "; no pinning (one core)"
        )
        + ("; an X-Request-Id of its own on every request" if args.request_ids else ""),
        file=sys.stderr,
        flush=True,
    )
    rounds: list[list[Sample]] = []
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
        folder = Path(tmp)
        write_scripts(folder, request_ids=args.request_ids)
        answers = folder / "answers.json"
        probe_answers(answers, folder / "probe.jsonl")
        load = Load(wrk, args.connections, args.threads, load_cores, folder, args.request_ids)
        for number in range(args.rounds):
            samples = []
            order = servers if number % 2 == 0 else list(reversed(servers))
            if args.slice:
                budget.check(f"round {number + 1}")
                samples = measure_interleaved(
                    order,
                    load,
                    answers,
                    folder,
                    server_cores,
                    warmup=args.warmup,
                    duration=args.duration,
                    seconds=args.slice,
                    submits=not args.no_submits,
                )
                for sample in samples:
                    _say(number, sample)
                rounds.append(samples)
                continue
            for server in order:
                budget.check(f"{server.name} in round {number + 1}")
                journal = folder / f"{server.name}-{number}.jsonl"
                sample = measure(
                    server,
                    load,
                    answers,
                    journal,
                    server_cores,
                    warmup=args.warmup,
                    duration=args.duration,
                    submits=not args.no_submits,
                )
                with contextlib.suppress(OSError):
                    journal.unlink()  # a fast server writes hundreds of MB per round
                samples.append(sample)
                _say(number, sample)
            rounds.append(samples)
    rows = summarise(rounds, servers)
    machine["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(format_table(rows))
    errors = sum(row.errors for row in rows)
    print(
        f"\n{args.rounds} round(s), {args.warmup:g} s warm-up, {args.duration:g} s per run"
        + (f" in {args.slice} s slices, the servers' interleaved," if args.slice else ",")
        + (
            f" wrk -t{args.threads} -c{args.connections};"
            if wrk
            else " the Python client (no wrk);"
        )
        + f" load average before {machine['load_average']}, after {machine['load_average_after']}"
        + (f"; {errors} errors (wrk's non-2xx/3xx and socket errors)" if errors else "")
    )
    if args.json:
        print(
            json.dumps(
                {
                    "machine": machine,
                    "load_generator": "wrk" if wrk else "python",
                    "rows": [
                        {
                            "server": row.server.name,
                            "get_rps": round(row.get_rate),
                            "get_ratio": round(row.get_ratio, 3),
                            "get_p99_ms": row.get_p99_ms,
                            "post_rps": None if row.post_rate is None else round(row.post_rate),
                            "post_ratio": None
                            if row.post_ratio is None
                            else round(row.post_ratio, 3),
                            "post_p99_ms": row.post_p99_ms,
                            "startup_s": round(row.startup_s, 3),
                            "retained_bytes_per_request": None
                            if row.retained_bytes is None
                            else round(row.retained_bytes),
                            "get_cpu_us": _round(row.get_cpu_us, 1),
                            "get_cpu_ratio": _round(row.get_cpu_ratio, 3),
                            "post_cpu_us": _round(row.post_cpu_us, 1),
                            "post_cpu_ratio": _round(row.post_cpu_ratio, 3),
                            "errors": row.errors,
                        }
                        for row in rows
                    ],
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
