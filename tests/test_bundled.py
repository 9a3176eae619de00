"""Every bundled scenario plays to its end with a simple, polite client (virtual time)."""

from __future__ import annotations

import json

import pytest

from fakeprovider.clock import VirtualClock
from fakeprovider.dialects import HttpRequest
from fakeprovider.scenario import bundled_scenarios, load_scenario
from fakeprovider.service import FakeProvider

TOKEN = "sk-test-fakeprovider"


def call(
    provider: FakeProvider, method: str, path: str, body: object = None
) -> tuple[int, dict[str, str], bytes]:
    headers = {"authorization": f"Bearer {TOKEN}", "x-client-id": "polite"}
    raw = b""
    if body is not None:
        headers["content-type"] = "application/json"
        raw = json.dumps(body).encode()
    reply, response = provider.receive(HttpRequest(method, path, headers=headers, body=raw))
    clock = provider.clock
    assert isinstance(clock, VirtualClock)
    clock.advance(reply.delay)
    provider.sent(reply, started=clock.now(), completed=clock.now(), status_code=response.status)
    return response.status, {k.lower(): v for k, v in response.headers}, response.body


def polite_client(provider: FakeProvider, deadline: float) -> str:
    """Submit once, poll after the hint (or Retry-After), stop at a terminal state, download once."""
    clock = provider.clock
    assert isinstance(clock, VirtualClock)
    job_id = None
    while job_id is None:
        status, headers, body = call(
            provider, "POST", "/v1/jobs", {"prompt": "a lighthouse at dusk"}
        )
        if status in (401, 403):
            return "error"
        if status == 202:
            job_id = json.loads(body)["job_id"]
        else:
            clock.advance(
                float(headers.get("retry-after", "1"))
                if headers.get("retry-after", "").isdigit()
                else 5.0
            )
    started = clock.now()
    wait = 1.0
    while clock.now() - started < deadline:
        clock.advance(wait)
        status, headers, body = call(provider, "GET", f"/v1/jobs/{job_id}")
        if status in (401, 403):
            return "error"
        if status != 200:
            wait = 20.0  # enough for every Retry-After in the bundled scenarios
            continue
        job = json.loads(body)
        if job["done"]:
            if job["status"] in ("succeeded", "completed_with_errors"):
                while call(provider, "GET", f"/v1/jobs/{job_id}/content")[0] != 200:
                    clock.advance(5.0)
            return str(job["status"])
        wait = float(job.get("poll_after_seconds", 5))
    return "timed_out"


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_bundled_scenario_plays_to_its_expected_outcome(name: str) -> None:
    scenario = load_scenario(name)
    provider = FakeProvider(scenario, clock=VirtualClock())
    deadline = scenario.expect.deadline or 600.0
    outcome = polite_client(provider, deadline)
    expected = scenario.expect.outcome or "error"
    assert outcome == expected
    kinds = {e.kind for e in provider.journal}
    assert "submit" in kinds
    assert "status" in kinds
