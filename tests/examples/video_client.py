"""The client under test in the docs' examples: submit, poll politely, download once."""

from __future__ import annotations

import email.utils
import time

import httpx


def render(base_url: str, prompt: str, *, deadline: float = 600.0) -> str:
    """Returns 'succeeded', 'failed', 'cancelled', 'completed_with_errors' or 'timed_out'."""
    started = time.monotonic()
    with httpx.Client(base_url=base_url, timeout=30) as client:
        job = client.post("/v1/jobs", json={"prompt": prompt}).json()
        wait = job["poll_after_seconds"]
        while not job["done"]:
            if time.monotonic() - started + wait > deadline:
                return "timed_out"
            time.sleep(wait)
            answer = client.get(f"/v1/jobs/{job['job_id']}")
            if answer.status_code == 429:
                wait = _retry_after(answer.headers["retry-after"])
                continue
            job = answer.json()
            wait = job.get("poll_after_seconds") or wait
        if job["status"] in ("succeeded", "completed_with_errors"):
            client.get(f"/v1/jobs/{job['job_id']}/content")
        return str(job["status"])


def _retry_after(value: str) -> float:
    if value.isdigit():
        return float(value)
    return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time()) + 1.0
