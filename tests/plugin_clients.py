"""Polling clients for the plugin tests: a careful one (sync and async) and a careless one.

Child test runs import this file as ``clients`` (pytester copies it), so it depends only on
httpx and the standard library. ``run`` returns the outcome the client reports.
"""

from __future__ import annotations

import asyncio
import email.utils
import time

import httpx

TOKEN = "sk-test-fakeprovider"
RETRYABLE = frozenset({429, 500, 502, 503, 504})


def _wait_from(response: httpx.Response, default: float) -> float:
    """Seconds to wait before the next request, from Retry-After (seconds or HTTP-date)."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return default
    try:
        return max(0.0, float(raw))
    except ValueError:
        moment = email.utils.parsedate_to_datetime(raw).timestamp()
        return max(0.0, moment - time.time()) + 1.0


class Careful:
    """Honours poll hints and Retry-After, retries transient failures, stops at terminal."""

    def __init__(self, max_retries: int = 3) -> None:
        self.max_retries = max_retries

    def _send(
        self, client: httpx.Client, method: str, url: str, **kwargs: object
    ) -> httpx.Response | None:
        failures = 0
        while True:
            try:
                response = client.request(method, url, **kwargs)  # type: ignore[arg-type]
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code not in RETRYABLE:
                return response
            failures += 1
            if failures > self.max_retries:
                return None
            time.sleep(
                _wait_from(response, 2.0 * failures) if response is not None else 2.0 * failures
            )

    def run(self, base_url: str, deadline: float) -> str:
        started = time.monotonic()
        headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "careful-1"}
        with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
            submitted = self._send(
                client, "POST", "/v1/jobs", json={"prompt": "a lighthouse at dusk"}
            )
            if submitted is None or submitted.status_code != 202:
                return "failed"
            job = submitted.json()
            wait = float(job.get("poll_after_seconds") or 5)
            while True:
                if time.monotonic() - started + wait > deadline:
                    return "timed_out"
                time.sleep(wait)
                answer = self._send(client, "GET", f"/v1/jobs/{job['job_id']}")
                if answer is None:
                    return "timed_out"  # out of retries: it does not know how the job ended
                if answer.status_code != 200:
                    return "failed"
                job = answer.json()
                if job["done"]:
                    break
                wait = float(job.get("poll_after_seconds") or 5)
            if job["status"] in ("succeeded", "completed_with_errors"):
                video = self._send(client, "GET", f"/v1/jobs/{job['job_id']}/content")
                if video is None or video.status_code != 200:
                    return "failed"
            return str(job["status"])


class CarefulAsync:
    """``Careful`` on an ``httpx.AsyncClient`` and ``asyncio.sleep``."""

    async def run(self, base_url: str, deadline: float) -> str:
        loop = asyncio.get_running_loop()
        started = loop.time()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
            response = await client.post("/v1/jobs", json={"prompt": "a lighthouse at dusk"})
            job = response.json()
            wait = float(job.get("poll_after_seconds") or 5)
            while True:
                if loop.time() - started + wait > deadline:
                    return "timed_out"
                await asyncio.sleep(wait)
                response = await client.get(f"/v1/jobs/{job['job_id']}")
                if response.status_code in RETRYABLE:
                    wait = _wait_from(response, 2.0)
                    continue
                job = response.json()
                if job["done"]:
                    break
                wait = float(job.get("poll_after_seconds") or 5)
            if job["status"] in ("succeeded", "completed_with_errors"):
                await client.get(f"/v1/jobs/{job['job_id']}/content")
            return str(job["status"])


class Hasty:
    """Polls every `interval` seconds whatever the hints say, and downloads twice."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval

    def run(self, base_url: str, deadline: float) -> str:
        with httpx.Client(base_url=base_url, timeout=30) as client:
            job = client.post("/v1/jobs", json={"prompt": "a lighthouse at dusk"}).json()
            while not job["done"]:
                time.sleep(self.interval)
                job = client.get(f"/v1/jobs/{job['job_id']}").json()
            if job["status"] == "succeeded":
                client.get(f"/v1/jobs/{job['job_id']}/content")
                client.get(f"/v1/jobs/{job['job_id']}/content")
            return str(job["status"])
