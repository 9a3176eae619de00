"""The worked example of docs/property-testing.md: a small client, attacked by generated providers."""

from __future__ import annotations

import time

import httpx
from hypothesis import Phase, given, settings

from fakeprovider.scenario import Scenario
from fakeprovider.strategies import note_scenario, scenarios


def generate_video(base_url: str, prompt: str, *, deadline: float = 900.0) -> bytes | None:
    """Submit, poll politely, download once. Looks fine; it is not."""
    with httpx.Client(base_url=base_url, timeout=30) as http:
        job = http.post("/v1/jobs", json={"prompt": prompt}).raise_for_status().json()
        started = time.monotonic()
        while time.monotonic() - started < deadline:
            time.sleep(job.get("poll_after_seconds") or 5)
            response = http.get(f"/v1/jobs/{job['job_id']}")
            if response.status_code == 429 or response.status_code >= 500:
                time.sleep(float(response.headers.get("retry-after", 1)))
                continue
            job = response.raise_for_status().json()
            if job["done"]:
                if job["status"] == "succeeded":
                    return http.get(f"/v1/jobs/{job['job_id']}/content").content
                return None
    return None


@settings(
    deadline=None,  # virtual time: an example's wall time says nothing about the client
    report_multiple_bugs=False,  # one minimal scenario at a time
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # no slow 'explain'
)
@given(scenario=scenarios())
def test_generate_video_survives_any_provider(fakeprovider_session, scenario: Scenario) -> None:
    note_scenario(scenario, save_to="regressions/found.yaml")
    with fakeprovider_session.example(scenario, inprocess=True) as fake:
        generate_video(fake.url, "a lighthouse at dusk")
        fake.assert_invariants(deadline=900)
