"""``benchmarks/bench_wrk.py``'s pure parts: reading wrk's output and building the table.

The benchmark itself (servers under wrk for minutes) is run by hand; these run in
milliseconds, with no server and no wrk, but for the load's per-request ``X-Request-Id``
(``--request-ids``), which wrk (when installed) and the Python fallback send for a second at
most to a recording server on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import pytest

from .bench_scripts import load_script

#: What ``wrk -t1 -c16 -d8s -s get.lua`` prints: its own summary, then the done hook's line.
WRK_OUTPUT = """\
Running 8s test @ http://127.0.0.1:40123/v1/jobs/job_1
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.31ms  412.20us  12.01ms   91.02%
    Req/Sec    12.29k   401.15    12.90k    85.00%
  97858 requests in 8.00s, 40.12MB read
Requests/sec:  12231.61
Transfer/sec:      5.01MB
BENCH {"requests": 97858, "duration_us": 8000412, "p50_us": 1204, "p99_us": 4512, "max_us": 12010, "connect_errors": 0, "read_errors": 1, "write_errors": 0, "status_errors": 2, "timeouts": 0}
"""


def _script() -> ModuleType:
    return load_script("bench_wrk")


def test_wrk_output_is_read_from_the_done_hooks_line() -> None:
    bench = _script()
    result = bench.parse_load_output(WRK_OUTPUT)
    assert result == bench.LoadResult(
        requests=97858, seconds=8.000412, p50_ms=1.204, p99_ms=4.512, max_ms=12.01, errors=3
    )
    assert result.rate == pytest.approx(97858 / 8.000412)


def test_output_without_the_done_hooks_line_is_refused() -> None:
    bench = _script()
    message = "no BENCH line in the load generator's output: 'unable to connect to 127.0.0.1:1'"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        bench.parse_load_output("unable to connect to 127.0.0.1:1")


def _sample(
    bench: ModuleType,
    server: str,
    get_rate: float,
    post_rate: float | None = None,
    cpu: tuple[float | None, float | None] = (None, None),
):
    def load(rate: float) -> object:
        return bench.LoadResult(
            requests=int(rate * 8), seconds=8.0, p50_ms=0.5, p99_ms=1.25, max_ms=3.0, errors=0
        )

    post = None if post_rate is None else load(post_rate)
    retained = 586.0 if "fake" in server else 0.0
    return bench.Sample(server, 0.125, load(get_rate), post, retained, *cpu)


def test_each_ratio_is_the_median_of_ratios_to_the_baseline_of_the_same_round() -> None:
    bench = _script()
    rounds = [
        # the machine slows down in the last round: every server alike, so the ratio holds
        [_sample(bench, "bare-fast", 30000), _sample(bench, "fake-fast", 15000)],  # 0.5
        [_sample(bench, "fake-fast", 24000), _sample(bench, "bare-fast", 32000)],  # 0.75
        [_sample(bench, "bare-fast", 10000), _sample(bench, "fake-fast", 7000)],  # 0.7
    ]
    servers = [s for s in bench.SERVERS if s.name in ("bare-fast", "fake-fast")]
    bare, fake = bench.summarise(rounds, servers)
    assert (bare.get_rate, bare.get_ratio) == (30000, 1.0)
    assert fake.get_rate == 15000
    assert fake.get_ratio == pytest.approx(0.7)  # not 15000 / 30000: rounds are not mixed
    assert fake.get_rates == [15000, 24000, 7000]
    assert (fake.retained_bytes, fake.startup_s, fake.post_rate) == (586.0, 0.125, None)
    assert (fake.get_cpu_us, fake.get_cpu_ratio, fake.post_cpu_ratio) == (None, None, None)


def test_each_cpu_ratio_is_the_median_of_the_baselines_cpu_per_request_over_the_servers() -> None:
    bench = _script()
    rounds = [
        # a busy machine slows throughput but hardly CPU per request: the ratios agree
        [
            _sample(bench, "bare-fast", 30000, 20000, (30e-6, 50e-6)),
            _sample(bench, "fake-fast", 15000, 9000, (40e-6, 100e-6)),  # 0.75, 0.5
        ],
        [
            _sample(bench, "fake-fast", 24000, 9000, (50e-6, 80e-6)),  # 0.64, 0.625
            _sample(bench, "bare-fast", 32000, 20000, (32e-6, 50e-6)),
        ],
        [
            _sample(bench, "bare-fast", 10000, 20000, (31e-6, None)),  # /proc could not tell
            _sample(bench, "fake-fast", 7000, 9000, (40e-6, 90e-6)),  # 0.775, -
        ],
    ]
    servers = [s for s in bench.SERVERS if s.name in ("bare-fast", "fake-fast")]
    bare, fake = bench.summarise(rounds, servers)
    assert (bare.get_cpu_ratio, bare.post_cpu_ratio) == (1.0, 1.0)
    assert bare.get_cpu_us == pytest.approx(31.0)
    assert fake.get_cpu_us == pytest.approx(40.0)
    assert fake.post_cpu_us == pytest.approx(90.0)
    assert fake.get_cpu_ratio == pytest.approx(0.75)
    assert fake.post_cpu_ratio == pytest.approx((0.5 + 0.625) / 2)


def test_interleaved_slices_reverse_the_servers_order_every_other_cycle() -> None:
    bench = _script()
    assert bench.slice_order(["bare-fast", "fake-fast"], 4) == [
        *("bare-fast", "fake-fast", "fake-fast", "bare-fast"),
        *("bare-fast", "fake-fast", "fake-fast", "bare-fast"),
    ]
    assert bench.slice_order(["a", "b", "c"], 1) == ["a", "b", "c"]
    assert bench.slice_order(["a"], 3) == ["a", "a", "a"]


def test_a_runs_slices_combine_into_sums_the_worst_latency_and_median_percentiles() -> None:
    bench = _script()
    slices = [
        bench.LoadResult(requests=20000, seconds=1.0, p50_ms=0.6, p99_ms=2.0, max_ms=9.0, errors=0),
        bench.LoadResult(
            requests=9000, seconds=1.01, p50_ms=1.4, p99_ms=7.5, max_ms=31.0, errors=2
        ),
        bench.LoadResult(
            requests=18000, seconds=0.99, p50_ms=0.7, p99_ms=2.5, max_ms=5.0, errors=1
        ),
    ]
    run = bench.combine(slices)
    assert run == bench.LoadResult(
        requests=47000, seconds=pytest.approx(3.0), p50_ms=0.7, p99_ms=2.5, max_ms=31.0, errors=3
    )
    assert run.rate == pytest.approx(47000 / 3.0)
    with pytest.raises(ValueError, match=r"^no slice to combine$"):
        bench.combine([])


def test_a_process_cpu_time_is_read_from_proc() -> None:
    bench = _script()
    seconds = bench._cpu_seconds(os.getpid())
    if seconds is None:
        pytest.skip("no /proc on this platform")
    assert seconds > 0
    assert bench._cpu_seconds(2**22 + 1) is None  # beyond any pid_max: no such process


def test_the_table_is_the_issues_with_submits_below() -> None:
    bench = _script()
    rounds = [
        [
            _sample(bench, "bare-fast", 32584, 20000, (28e-6, 47e-6)),
            _sample(bench, "fake-h11", 6900, 3000, (140e-6, None)),
        ]
    ]
    servers = [s for s in bench.SERVERS if s.name in ("bare-fast", "fake-h11")]
    assert bench.format_table(bench.summarise(rounds, servers)).splitlines() == [
        "| server | GET status reads/s | x bare httptools+uvloop | p99 | startup"
        " | retained per request | CPU per read | x bare (CPU) |",
        "|---|---|---|---|---|---|---|---|",
        "| bare Starlette + uvicorn, httptools + uvloop | 32,584 | 1.00 | 1.2 ms | 0.12 s | 0 B"
        " | 28 us | 1.00 |",
        "| fakeprovider, h11 + asyncio | 6,900 | 0.21 | 1.2 ms | 0.12 s | 586 B | 140 us | 0.20 |",
        "",
        "| server | POST submits/s | x bare httptools+uvloop | p99 | CPU per submit | x bare (CPU) |",
        "|---|---|---|---|---|---|",
        "| bare Starlette + uvicorn, httptools + uvloop | 20,000 | 1.00 | 1.2 ms | 47 us | 1.00 |",
        "| fakeprovider, h11 + asyncio | 3,000 | 0.15 | 1.2 ms | - | - |",
    ]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 200 and notes each request's method, X-Request-Id and body."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str | None, bytes]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.headers.get("X-Request-Id"), body))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[int, list[tuple[str, str | None, bytes]]]]:
    seen: list[tuple[str, str | None, bytes]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("client", ["wrk", "python"])
def test_request_ids_give_every_request_an_x_request_id_of_its_own(
    recorder: tuple[int, list[tuple[str, str | None, bytes]]],
    tmp_path: Path,
    method: str,
    client: str,
) -> None:
    wrk = shutil.which("wrk")
    if client == "wrk" and wrk is None:
        pytest.skip("wrk is not installed")
    bench = _script()
    port, seen = recorder
    bench.write_scripts(tmp_path, request_ids=True)
    load = bench.Load(wrk if client == "wrk" else None, 2, 1, None, tmp_path, request_ids=True)
    result = load.run(port, method, "/v1/jobs", 0.3)
    assert result.requests > 2
    assert {m for m, _, _ in seen} == {method}
    ids = [i for _, i, _ in seen]
    assert None not in ids
    assert len(set(ids)) == len(ids)
    if method == "POST":  # the prompts stay varied under the tag
        assert len({len(body) for _, _, body in seen}) > 2
