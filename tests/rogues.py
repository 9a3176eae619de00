"""The rogues' gallery: small httpx clients of the generic wire API, one correct, the others
each with one classic bug (see docs/invariants.md).

Every client is ``run(base_url, *, deadline, client_id, token=None, ...) -> outcome``: it
submits one job (``fleet``: several), watches it and returns what it would report
(``succeeded``, ``failed``, ``cancelled``, ``completed_with_errors``, ``timed_out``,
``auth_error``, ``error``, or ``unknown`` for a client that never learns the outcome). Each
sends ``X-Client-Id`` so that several can share one server. All waits are real seconds, so run
them against time-scaled scenarios (or in process, in virtual time). ``async_timer_poller``
is an ``httpx.AsyncClient`` run by ``asyncio.run`` inside its synchronous entry point.
"""

from __future__ import annotations

import asyncio
import calendar
import email.utils
import functools
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

TERMINAL = frozenset({"succeeded", "failed", "cancelled", "completed_with_errors"})
SUCCESS = frozenset({"succeeded", "completed_with_errors"})
PROMPT = "A lighthouse in a storm, 8 seconds, slow dolly-in"
DEFAULT_WAIT = 1.0  # seconds between polls when the provider gives no hint


@dataclass(frozen=True)
class Bugs:
    """Which mistakes ``observe`` makes (all False: the correct client)."""

    int_retry_after: bool = False  # int(Retry-After); on ValueError retry at once
    ignore_retry_after: bool = False
    resubmit_on_failure: bool = False  # a failed status read -> submit again
    keep_polling: int = 0  # extra status reads after a terminal answer
    downloads: int = 1  # content fetches after success
    eager_download: bool = False  # takes the 202 for done and downloads at once
    no_deadline: bool = False
    retry_auth: int = 0  # retries with the same credentials after 401/403
    poll_interval: float | None = None  # a fixed interval instead of the poll hint
    unbounded_retries: bool = False
    fail_on_read_error: bool = False  # a failed status read -> reports the job failed


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client (httpx builds one per client otherwise, loading the CA
    bundle each time: most of a client's start-up cost, though the fake is plain HTTP)."""
    return ssl.create_default_context()


def _http(base_url: str, client_id: str, token: str | None) -> httpx.Client:
    headers = {"X-Client-Id": client_id}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=base_url, headers=headers, timeout=10.0, verify=_tls())


def _send(fn: Callable[..., httpx.Response], *args: Any, **kwargs: Any) -> httpx.Response | None:
    try:
        return fn(*args, **kwargs)
    except httpx.TransportError:
        return None


def _failed(response: httpx.Response | None) -> bool:
    return response is None or response.status_code == 429 or response.status_code >= 500


def retry_after(response: httpx.Response | None, *, int_only: bool = False) -> float | None:
    """Seconds to wait from now: retry-after-ms, delay-seconds or an HTTP-date (against the
    response's own Date header, so the two clocks never mix)."""
    if response is None:
        return None
    headers = response.headers
    if not int_only and "retry-after-ms" in headers:
        return float(headers["retry-after-ms"]) / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    if int_only:
        return float(int(value))  # the bug: raises ValueError on an HTTP-date
    if value.strip().isdigit():
        return float(value)
    when = email.utils.parsedate(value)
    sent = email.utils.parsedate(headers["date"])
    assert when is not None, value
    assert sent is not None, headers["date"]
    return max(0.0, float(calendar.timegm(when) - calendar.timegm(sent)))


def observe(
    base_url: str,
    *,
    deadline: float,
    client_id: str,
    token: str | None = None,
    max_retries: int = 3,
    bugs: Bugs = Bugs(),
    prompt: str = PROMPT,
    callback_url: str | None = None,
) -> str:
    """Submit one job and watch it until it ends, the deadline passes or something breaks."""
    start = time.monotonic()
    hard_stop = start + deadline + 2.0  # a test-safety cap for the no-deadline rogue

    def out_of_time(wait: float) -> bool:
        limit = hard_stop if bugs.no_deadline else start + deadline
        return time.monotonic() + wait > limit

    def wait_after_failure(response: httpx.Response | None, default: float) -> float:
        if bugs.ignore_retry_after:
            return default
        if bugs.int_retry_after:
            try:
                found = retry_after(response, int_only=True)
            except ValueError:
                return 0.01
        else:
            found = retry_after(response)
        return default if found is None else found

    with _http(base_url, client_id, token) as http:
        key = uuid.uuid4().hex
        request: dict[str, str] = {"prompt": prompt}
        if callback_url is not None:
            request["callback_url"] = callback_url

        def submit() -> httpx.Response | str:
            failures = 0
            while True:
                response = _send(
                    http.post, "/v1/jobs", json=request, headers={"Idempotency-Key": key}
                )
                if not _failed(response):
                    assert response is not None
                    if response.status_code in (401, 403):
                        return "auth_error"
                    return response if response.status_code == 202 else "error"
                failures += 1
                wait = wait_after_failure(response, 0.05)
                if failures > max_retries or out_of_time(wait):
                    return "error"
                time.sleep(wait)

        def download(job_id: str) -> bool:
            failures = 0
            while True:
                response = _send(http.get, f"/v1/jobs/{job_id}/content")
                if not _failed(response):
                    assert response is not None
                    return response.status_code == 200
                failures += 1
                wait = wait_after_failure(response, 0.05)
                if failures > max_retries or out_of_time(wait):
                    return False
                time.sleep(wait)

        accepted = submit()
        if isinstance(accepted, str):
            return accepted
        job = accepted.json()
        job_id = job["job_id"]
        if bugs.eager_download:
            download(job_id)
            return "succeeded"
        if job.get("done"):  # the job had ended before the first poll: the 202 says so
            if job["status"] in SUCCESS:
                download(job_id)
            return str(job["status"])
        hint = job.get("poll_after_seconds") or DEFAULT_WAIT
        wait = bugs.poll_interval if bugs.poll_interval is not None else hint
        failures = 0
        auth_retries = 0
        resubmitted = False
        while True:
            if out_of_time(wait):
                return "timed_out"
            time.sleep(wait)
            response = _send(http.get, f"/v1/jobs/{job_id}")
            if _failed(response):
                if bugs.fail_on_read_error:
                    return "failed"
                failures += 1
                if failures > max_retries and not bugs.unbounded_retries:
                    return "error"
                if bugs.resubmit_on_failure and not resubmitted:
                    resubmitted = True
                    key = uuid.uuid4().hex
                    again = submit()
                    if isinstance(again, str):
                        return again
                    job_id = again.json()["job_id"]
                    failures = 0
                wait = wait_after_failure(response, wait)
                continue
            assert response is not None
            if response.status_code in (401, 403):
                if auth_retries < bugs.retry_auth:
                    auth_retries += 1
                    wait = 0.01
                    continue
                return "auth_error"
            if response.status_code != 200:
                return "error"
            failures = 0
            body = response.json()
            status = body["status"]
            if status in TERMINAL:
                for _ in range(bugs.keep_polling):
                    time.sleep(0.01)
                    _send(http.get, f"/v1/jobs/{job_id}")
                if status in SUCCESS:
                    for _ in range(bugs.downloads):
                        download(job_id)
                return str(status)
            hint = body.get("poll_after_seconds") or wait
            wait = bugs.poll_interval if bugs.poll_interval is not None else hint


# -- the gallery ------------------------------------------------------------------------------


def correct(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "correct",
    token: str | None = None,
    callback_url: str | None = None,
) -> str:
    """Waits for each answer and the hint, honours Retry-After in every form, bounded retries
    with the same Idempotency-Key, stops at a terminal status, downloads once, keeps a deadline.
    With ``callback_url`` it asks for webhooks there (and still polls)."""
    return observe(
        base_url, deadline=deadline, client_id=client_id, token=token, callback_url=callback_url
    )


def timer_poller(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "timer-poller",
    token: str | None = None,
    interval: float = 0.1,
    ticks: int = 5,
) -> str:
    """no_overlap: fires a status read on a timer (a thread per tick), never waiting for the
    previous answer."""
    with _http(base_url, client_id, token) as http:
        job = http.post("/v1/jobs", json={"prompt": PROMPT}).json()
    job_id = job["job_id"]
    time.sleep(job["poll_after_seconds"])
    threads = []
    for _ in range(ticks):

        def read() -> None:
            with _http(base_url, client_id, token) as mine:
                _send(mine.get, f"/v1/jobs/{job_id}")

        thread = threading.Thread(target=read)
        thread.start()
        threads.append(thread)
        time.sleep(interval)
    for thread in threads:
        thread.join(10)
    return "unknown"


async def _async_send(
    http: httpx.AsyncClient, method: str, url: str, **kwargs: Any
) -> httpx.Response | None:
    try:
        return await http.request(method, url, **kwargs)
    except httpx.TransportError:
        return None


async def _timer_poll(
    base_url: str, *, deadline: float, client_id: str, token: str | None, interval: float | None
) -> str:
    headers = {"X-Client-Id": client_id}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=None, verify=_tls()
    ) as http:
        accepted = await _async_send(http, "POST", "/v1/jobs", json={"prompt": PROMPT})
        if accepted is None or accepted.status_code != 202:
            return "error"
        job = accepted.json()
        if job.get("done"):  # the job had ended before the first poll: the 202 says so
            return str(job["status"])
        job_id = job["job_id"]
        every = interval if interval is not None else job.get("poll_after_seconds") or DEFAULT_WAIT
        seen: list[str] = []

        async def read() -> None:
            response = await _async_send(http, "GET", f"/v1/jobs/{job_id}")
            if response is not None and response.status_code == 200:
                status = response.json()["status"]
                if status in TERMINAL:
                    seen.append(str(status))

        reads: list[asyncio.Task[None]] = []
        while not seen:
            if loop.time() + every > start + deadline:
                break
            await asyncio.sleep(every)
            if not seen:
                reads.append(asyncio.create_task(read()))  # the bug: the last read may be pending
        await asyncio.gather(*reads)
        return seen[0] if seen else "timed_out"


def async_timer_poller(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "async-timer-poller",
    token: str | None = None,
    interval: float | None = None,
) -> str:
    """no_overlap, the asyncio twin of ``timer_poller``: every ``interval`` (default: the poll
    hint of the 202) it starts a status read as a new task, never waiting for the previous
    answer; a slow answer overlaps the next read. It stops at the first terminal answer or the
    deadline."""
    return asyncio.run(
        _timer_poll(
            base_url, deadline=deadline, client_id=client_id, token=token, interval=interval
        )
    )


def double_downloader(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "double-downloader",
    token: str | None = None,
) -> str:
    """single_retrieval: downloads the video twice."""
    return observe(
        base_url, deadline=deadline, client_id=client_id, token=token, bugs=Bugs(downloads=2)
    )


def eager_downloader(
    base_url: str, *, deadline: float, client_id: str = "eager-downloader", token: str | None = None
) -> str:
    """no_premature_retrieval: takes the 202 for done and downloads at once."""
    return observe(
        base_url,
        deadline=deadline,
        client_id=client_id,
        token=token,
        bugs=Bugs(eager_download=True),
    )


def unbounded_retrier(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "unbounded-retrier",
    token: str | None = None,
) -> str:
    """bounded_retries: retries failed reads forever (it honours Retry-After)."""
    return observe(
        base_url,
        deadline=deadline,
        client_id=client_id,
        token=token,
        bugs=Bugs(unbounded_retries=True),
    )


def int_retry_after(
    base_url: str, *, deadline: float, client_id: str = "int-retry-after", token: str | None = None
) -> str:
    """honours_retry_after: parses Retry-After with int(); an HTTP-date makes it retry at once."""
    return observe(
        base_url,
        deadline=deadline,
        client_id=client_id,
        token=token,
        max_retries=10,
        bugs=Bugs(int_retry_after=True),
    )


def impatient(
    base_url: str, *, deadline: float, client_id: str = "impatient", token: str | None = None
) -> str:
    """honours_poll_after: ignores the poll hint and polls every 10 ms."""
    return observe(
        base_url, deadline=deadline, client_id=client_id, token=token, bugs=Bugs(poll_interval=0.01)
    )


def keeps_polling(
    base_url: str, *, deadline: float, client_id: str = "keeps-polling", token: str | None = None
) -> str:
    """stops_at_terminal: reads the status twice more after it ended."""
    return observe(
        base_url, deadline=deadline, client_id=client_id, token=token, bugs=Bugs(keep_polling=2)
    )


def resubmitter(
    base_url: str, *, deadline: float, client_id: str = "resubmitter", token: str | None = None
) -> str:
    """no_resubmission: takes a failed status read for a failed job and submits a new one."""
    return observe(
        base_url,
        deadline=deadline,
        client_id=client_id,
        token=token,
        bugs=Bugs(resubmit_on_failure=True),
    )


def auth_retrier(
    base_url: str, *, deadline: float, client_id: str = "auth-retrier", token: str | None = None
) -> str:
    """no_retry_on_auth_error: retries a 401 twice with the same token."""
    return observe(
        base_url, deadline=deadline, client_id=client_id, token=token, bugs=Bugs(retry_auth=2)
    )


def no_deadline(
    base_url: str, *, deadline: float, client_id: str = "no-deadline", token: str | None = None
) -> str:
    """deadline: ignores its deadline and keeps watching (capped at deadline + 2 s for the test)."""
    return observe(
        base_url, deadline=deadline, client_id=client_id, token=token, bugs=Bugs(no_deadline=True)
    )


def fleet(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "fleet",
    token: str | None = None,
    jobs: int = 4,
) -> str:
    """status_rate: watches several jobs, each politely, but with no shared budget: every hint
    fires a read of every job at once. A failed read (429, 5xx, a dropped connection) leaves
    that job's timer as it was, and a failed submit leaves the fleet one job short."""
    with _http(base_url, client_id, token) as http:
        open_jobs: dict[str, float] = {}
        results: list[str] = []
        for n in range(jobs):
            response = _send(http.post, "/v1/jobs", json={"prompt": f"{PROMPT} #{n}"})
            if response is None or response.status_code != 202:
                continue
            job = response.json()
            if job.get("done"):  # the job had ended before the first poll: the 202 says so
                results.append(str(job["status"]))
            else:
                open_jobs[job["job_id"]] = job.get("poll_after_seconds") or DEFAULT_WAIT
        start = time.monotonic()
        while open_jobs and time.monotonic() - start < deadline:
            time.sleep(max(open_jobs.values()))
            for job_id in list(open_jobs):
                response = _send(http.get, f"/v1/jobs/{job_id}")
                if response is None or response.status_code != 200:
                    continue  # the bug's timer keeps going, whatever the answer said
                body = response.json()
                if body["status"] in TERMINAL:
                    del open_jobs[job_id]
                    results.append(body["status"])
                    if body["status"] in SUCCESS:
                        _send(http.get, f"/v1/jobs/{job_id}/content")
                else:
                    open_jobs[job_id] = body.get("poll_after_seconds") or DEFAULT_WAIT
        if open_jobs:
            return "timed_out"
        return results[0] if results else "error"


def retries_rejected(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "retries-rejected",
    token: str | None = None,
    attempts: int = 8,
) -> str:
    """bounded_retries: sends a submit the API rejects (422: a typo, ``promt``) and retries the
    same request until it gives up after ``attempts``, as if a 4xx were transient."""
    with _http(base_url, client_id, token) as http:
        for _ in range(attempts):
            response = _send(http.post, "/v1/jobs", json={"promt": PROMPT})
            if response is not None and response.status_code == 202:
                return "unknown"
            time.sleep(0.01)
    return "error"


def reconciler(
    base_url: str,
    *,
    deadline: float,
    client_id: str = "reconciler",
    token: str | None = None,
) -> str:
    """Correct, in another style: after the submit it watches its job through the list
    (``GET /v1/jobs``, reconciliation), one list read at a time after the job's poll hint
    (or a failed read's Retry-After), and downloads once when the list shows it succeeded."""
    with _http(base_url, client_id, token) as http:
        key = uuid.uuid4().hex
        failures = 0
        while True:
            accepted = _send(
                http.post, "/v1/jobs", json={"prompt": PROMPT}, headers={"Idempotency-Key": key}
            )
            if not _failed(accepted):
                break
            failures += 1
            if failures > 3:
                return "error"
            time.sleep(retry_after(accepted) or 0.05)
        assert accepted is not None
        if accepted.status_code in (401, 403):
            return "auth_error"
        if accepted.status_code != 202:
            return "error"
        job: dict[str, Any] = accepted.json()
        job_id = job["job_id"]
        start = time.monotonic()
        wait = job.get("poll_after_seconds") or DEFAULT_WAIT
        failures = 0
        while not job["done"]:
            if time.monotonic() + wait > start + deadline:
                return "timed_out"
            time.sleep(wait)
            listed = _send(http.get, "/v1/jobs")
            if _failed(listed):
                failures += 1
                if failures > 3:
                    return "error"
                wait = retry_after(listed) or wait
                continue
            assert listed is not None
            if listed.status_code in (401, 403):
                return "auth_error"
            failures = 0
            job = next(j for j in listed.json()["jobs"] if j["job_id"] == job_id)
            wait = job.get("poll_after_seconds") or wait
        if job["status"] in SUCCESS:
            for _ in range(4):
                fetched = _send(http.get, f"/v1/jobs/{job_id}/content")
                if not _failed(fetched):
                    break
                time.sleep(retry_after(fetched) or 0.05)
        return str(job["status"])


def quitter(
    base_url: str, *, deadline: float, client_id: str = "quitter", token: str | None = None
) -> str:
    """No invariant, a report warning: takes the first failed status read (a 503) for a failed
    job, reports 'failed' and never asks about the job again."""
    return observe(
        base_url,
        deadline=deadline,
        client_id=client_id,
        token=token,
        bugs=Bugs(fail_on_read_error=True),
    )
