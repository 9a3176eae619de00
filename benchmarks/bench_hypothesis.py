"""200 Hypothesis examples in-process: how long the property test of docs/property-testing.md takes.

Writes the worked example's test (``@given(scenario=scenarios())``, the plugin's
``fakeprovider_session.example(scenario, inprocess=True)``, ``check()`` of the invariants) with a
client that handles every answer, so that Hypothesis runs every example instead of stopping at the
first failure, and runs it with pytest in a child process. Prints the wall time of the test, and
how it splits: drawing scenarios (Hypothesis), entering and leaving the in-process fake, the
client's requests, and judging the journal (wall clock), and the CPU time of the whole test
(what a busy machine disturbs least). The target: 200 examples in under 10 s.

The client is built once for the whole test (the in-process fake's URL is the same in every
example); ``--client-per-example`` builds one per example as the worked example does. Such a
client loaded its CA certificates anew in every example (50-70 ms on a slow machine) until
in-process fakes gave the clients made while entered one shared default TLS context.

    python benchmarks/bench_hypothesis.py [--examples 200] [--rounds 3] [--max-seconds 120]
        [--client-per-example] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TEST = '''
import json
import time as _time
from pathlib import Path

import httpx
from hypothesis import HealthCheck, Phase, given, seed, settings

from fakeprovider.strategies import scenarios

_wall = _time.perf_counter  # bound before virtual time patches the module
_cpu = _time.process_time
_split = {"examples": 0, "enter": 0.0, "client": 0.0, "check": 0.0, "exit": 0.0, "total": 0.0,
          "requests": 0, "violations": 0}
_started = [0.0, 0.0]
_shared = httpx.Client(base_url="http://fakeprovider.invalid", timeout=30)


def generate_video(client, prompt, deadline=900.0):
    """Submit, poll by the hints, back off on 429/5xx and dropped connections, download once."""
    job = None
    started = _time.monotonic()
    while job is None and _time.monotonic() - started < deadline:
        try:
            response = client.post("/v1/jobs", json={"prompt": prompt})
        except httpx.TransportError:
            _time.sleep(2)
            continue
        _split["requests"] += 1
        if response.status_code in (200, 201, 202):
            job = response.json()
        elif response.status_code in (400, 401, 403, 404, 409, 422):
            return None
        else:
            _time.sleep(float(response.headers.get("retry-after", "2") or 2) if response.headers.get("retry-after", "").isdigit() else 2)
    while job is not None and not job.get("done") and _time.monotonic() - started < deadline:
        _time.sleep(job.get("poll_after_seconds") or 5)
        try:
            response = client.get(f"/v1/jobs/{job['job_id']}")
        except httpx.TransportError:
            continue
        _split["requests"] += 1
        if response.status_code == 200:
            job = response.json()
        elif response.status_code in (401, 403, 404):
            return None
        else:
            wait = response.headers.get("retry-after", "")
            _time.sleep(float(wait) if wait.isdigit() else 2)
    if job is not None and job.get("status") == "succeeded":
        for _ in range(5):
            try:
                response = client.get(f"/v1/jobs/{job['job_id']}/content")
            except httpx.TransportError:
                _time.sleep(2)
                continue
            _split["requests"] += 1
            if response.status_code == 200:
                return response.content
            _time.sleep(2)
    return None


@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(scenario=scenarios())
def test_property(fakeprovider_session, scenario):
    t0 = _wall()
    with fakeprovider_session.example(scenario, inprocess=True) as fake:
        t1 = _wall()
        if PER_EXAMPLE:
            with httpx.Client(base_url=fake.url, timeout=30) as client:
                generate_video(client, "a lighthouse at dusk")
        else:
            assert fake.url == str(_shared.base_url).rstrip("/")
            generate_video(_shared, "a lighthouse at dusk")
        t2 = _wall()
        report = fake.check(deadline=900)
        _split["violations"] += len(report.violations)
        t3 = _wall()
    t4 = _wall()
    _split["examples"] += 1
    _split["enter"] += t1 - t0
    _split["client"] += t2 - t1
    _split["check"] += t3 - t2
    _split["exit"] += t4 - t3


def setup_module(module):
    _started[:] = [_wall(), _cpu()]


def teardown_module(module):
    _split["total"] = _wall() - _started[0]
    _split["cpu"] = _cpu() - _started[1]
    Path(OUT).write_text(json.dumps(_split))
'''


def _round(examples: int, budget: float, tmp: Path, per_example: bool, seed: int) -> dict[str, Any]:
    out = tmp / "split.json"
    test = tmp / "test_property_bench.py"
    source = TEST.replace("EXAMPLES", str(examples)).replace("OUT", repr(str(out)))
    source = source.replace("SEED", str(seed))
    test.write_text(source.replace("PER_EXAMPLE", str(per_example)))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=budget,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the property test failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    split: dict[str, Any] = json.loads(out.read_text())
    split["pytest_process_s"] = wall
    return split


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="per round")
    parser.add_argument("--client-per-example", action="store_true")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="Hypothesis's seed, the same in every round (default: a new one each round, as"
        " a test run draws; the examples, and so the requests, differ from round to round)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rounds = [
            _round(
                args.examples,
                args.max_seconds,
                Path(tmp),
                args.client_per_example,
                random.randrange(1 << 32) if args.seed is None else args.seed,
            )
            for _ in range(args.rounds)
        ]
    keys = ("total", "cpu", "enter", "client", "check", "exit", "pytest_process_s")
    median = {key: round(statistics.median(r[key] for r in rounds), 2) for key in keys}
    median["draw_and_hypothesis"] = round(
        median["total"] - median["enter"] - median["client"] - median["check"] - median["exit"], 2
    )
    result = {
        "examples": rounds[0]["examples"],
        "client": "one per example" if args.client_per_example else "one for the test",
        "seconds_median": median,
        "seconds_per_round": [round(r["total"], 2) for r in rounds],
        "cpu_seconds_per_round": [round(r["cpu"], 2) for r in rounds],
        "requests_per_round": [r["requests"] for r in rounds],
        "violations_per_round": [r["violations"] for r in rounds],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
