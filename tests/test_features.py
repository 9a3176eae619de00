"""Every scenario feature played both ways: through the pure engine and through the real server.

Each case is a small scenario and a sequence of requests; the answers (status code, the job status
shown, the interesting headers) must be the same from ``Engine.handle`` on a virtual clock and from
uvicorn on a real socket. Cases avoid depending on elapsed time (counts, not clocks), except where
the time involved is far longer than a test takes.
"""

from __future__ import annotations

import email.utils
import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from fakeprovider.clock import VirtualClock
from fakeprovider.http import HttpRequest
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import parse_scenario
from fakeprovider.server import ServerThread

Step = tuple[str, str, dict[str, object]]  # method, path ("{job}" is the first job), options
Seen = tuple[int | None, str | None, str | None]  # status code, job status, a header


@dataclass(frozen=True)
class Case:
    scenario: str
    steps: list[Step]
    expected: list[Seen]
    header: str = "retry-after"


SUBMIT: Step = ("POST", "/v1/jobs", {"json": {"prompt": "a cat"}})
STATUS: Step = ("GET", "/v1/jobs/{job}", {})

CASES = {
    "timeline by poll count": Case(
        "jobs:\n  - timeline:\n      - status: queued\n      - {after_polls: 1, status: processing}\n"
        "      - {after_polls: 2, status: succeeded}\n",
        [SUBMIT, STATUS, STATUS, STATUS, ("GET", "/v1/jobs/{job}/content", {})],
        [
            (202, "queued", None),
            (200, "queued", None),
            (200, "processing", None),
            (200, "succeeded", None),
            (200, None, None),
        ],
    ),
    "fault every k-th request": Case(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: f, route: status, every: 2, status: 502}\n",
        [SUBMIT, STATUS, STATUS, STATUS, STATUS],
        [
            (202, "queued", None),
            (200, "queued", None),
            (502, None, None),
            (200, "queued", None),
            (502, None, None),
        ],
    ),
    "fault with times cap and seeded probability": Case(
        "seed: 3\njobs: [{timeline: [{status: queued}]}]\n"
        "faults:\n  - {name: f, route: status, probability: 1.0, times: 2, status: 500}\n",
        [SUBMIT, STATUS, STATUS, STATUS],
        [(202, "queued", None), (500, None, None), (500, None, None), (200, "queued", None)],
    ),
    "fault in a time window that has not opened": Case(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: f, start: 1h, status: 503}\n",
        [SUBMIT, STATUS],
        [(202, "queued", None), (200, "queued", None)],
    ),
    "fault on one job spec only": Case(
        "jobs:\n  - {timeline: [{status: queued}]}\n  - {timeline: [{status: processing}]}\n"
        "faults:\n  - {name: f, route: submit, job: 1, status: 503}\n",
        [SUBMIT, SUBMIT],
        [(202, "queued", None), (503, None, None)],
    ),
    "scripted body, headers and retry-after-ms": Case(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n"
        "  - name: f\n    route: status\n    status: 429\n    headers: {X-Quota: exhausted}\n"
        "    body: {detail: slow down}\n    retry_after: {delay: 1500ms, form: ms}\n",
        [SUBMIT, STATUS],
        [(202, "queued", None), (429, None, "1500")],
        header="retry-after-ms",
    ),
    "raw retry-after value": Case(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n"
        "  - {name: f, route: status, status: 503, retry_after: {delay: 1s, raw: 'in a while'}}\n",
        [SUBMIT, STATUS],
        [(202, "queued", None), (503, None, "in a while")],
    ),
    "token bucket per key": Case(
        "jobs: [{timeline: [{status: queued}]}]\nrate_limit: {capacity: 2, refill_every: 1h, routes: [status]}\n",
        [SUBMIT, STATUS, STATUS, STATUS],
        [(202, "queued", None), (200, "queued", None), (200, "queued", None), (429, None, "3600")],
    ),
    "concurrency cap": Case(
        "jobs: [{timeline: [{status: queued}, {at: 1h, status: succeeded}]}]\n"
        "concurrency: {max_active_jobs: 1, retry_after: 20s}\n",
        [SUBMIT, SUBMIT],
        [(202, "queued", None), (429, None, "20")],
    ),
    "idempotency key replay and mismatch": Case(
        "jobs: [{timeline: [{status: queued}]}]\n",
        [
            ("POST", "/v1/jobs", {"json": {"prompt": "a"}, "headers": {"Idempotency-Key": "k"}}),
            ("POST", "/v1/jobs", {"json": {"prompt": "a"}, "headers": {"Idempotency-Key": "k"}}),
            ("POST", "/v1/jobs", {"json": {"prompt": "b"}, "headers": {"Idempotency-Key": "k"}}),
            ("GET", "/v1/jobs", {}),
        ],
        [(202, "queued", None), (202, "queued", None), (422, None, None), (200, None, None)],
    ),
    "auth and revocation": Case(
        "jobs: [{timeline: [{status: queued}]}]\nauth: {tokens: [t1], revoke_after: 2}\n",
        [
            ("GET", "/v1/jobs", {}),
            ("GET", "/v1/jobs", {"headers": {"Authorization": "Bearer nope"}}),
            (
                "POST",
                "/v1/jobs",
                {"json": {"prompt": "x"}, "headers": {"Authorization": "Bearer t1"}},
            ),
            ("GET", "/v1/jobs/{job}", {"headers": {"Authorization": "Bearer t1"}}),
            ("GET", "/v1/jobs/{job}", {"headers": {"Authorization": "Bearer t1"}}),
        ],
        [
            (401, None, None),
            (401, None, None),
            (202, "queued", None),
            (200, "queued", None),
            (401, None, None),
        ],
    ),
    "cancel then content": Case(
        "jobs: [{timeline: [{status: queued}, {at: 1h, status: succeeded}]}]\n",
        [
            SUBMIT,
            ("POST", "/v1/jobs/{job}/cancel", {}),
            ("POST", "/v1/jobs/{job}/cancel", {}),
            ("GET", "/v1/jobs/{job}/content", {}),
        ],
        [(202, "queued", None), (200, "cancelled", None), (409, None, None), (409, None, None)],
    ),
    "job matched by body": Case(
        "jobs:\n  - {timeline: [{status: queued}]}\n  - {match: {model: 'fast-*'}, timeline: [{status: succeeded}]}\n",
        [("POST", "/v1/jobs", {"json": {"prompt": "x", "model": "fast-1"}}), SUBMIT],
        [(202, "succeeded", None), (202, "queued", None)],
    ),
    "reset before handling": Case(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: f, route: submit, nth: 1, action: reset}\n",
        [SUBMIT, ("GET", "/v1/jobs", {})],
        [(None, None, None), (200, None, None)],
    ),
    "lost response after handling": Case(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: f, route: submit, nth: 1, action: lose_response}\n",
        [SUBMIT, ("GET", "/v1/jobs", {})],
        [(None, None, None), (200, None, None)],
    ),
}


def _job_status(body: bytes, content_type: str) -> str | None:
    if not content_type.startswith("application/json"):
        return None
    data = json.loads(body)
    return data.get("status") if isinstance(data, dict) and "job_id" in data else None


def _first_job(provider: FakeProvider) -> str:
    jobs = provider.engine.jobs
    return jobs[0].id if jobs else "job_none"


def play_in_engine(case: Case) -> tuple[list[Seen], list[tuple[str, str | None]]]:
    provider = FakeProvider(parse_scenario(case.scenario), clock=VirtualClock())
    seen: list[Seen] = []
    for method, path, options in case.steps:
        headers = {k.lower(): str(v) for k, v in dict(options.get("headers", {})).items()}  # type: ignore[call-overload]
        body = b""
        if "json" in options:
            headers["content-type"] = "application/json"
            body = json.dumps(options["json"]).encode()
        http = HttpRequest(
            method, path.replace("{job}", _first_job(provider)), headers=headers, body=body
        )
        reply, response = provider.receive(http)
        provider.sent(reply, started=0.0, completed=0.0, status_code=response.status)
        if reply.action != "respond":
            seen.append((None, None, None))
            continue
        wire = {k.lower(): v for k, v in response.headers}
        seen.append(
            (
                response.status,
                _job_status(response.body, response.media_type or ""),
                wire.get(case.header),
            )
        )
    return seen, [(e.kind, e.fault) for e in provider.journal]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread(
        FakeProvider(parse_scenario("jobs: [{timeline: [{status: queued}]}]\n"))
    ) as running:
        yield running


def play_on_server(
    server: ServerThread, case: Case
) -> tuple[list[Seen], list[tuple[str, str | None]]]:
    server.provider.load(parse_scenario(case.scenario))
    seen: list[Seen] = []
    with httpx.Client(base_url=server.url) as http:
        for method, path, options in case.steps:
            url = path.replace("{job}", _first_job(server.provider))
            try:
                response = http.request(method, url, **options)  # type: ignore[arg-type]
            except httpx.TransportError:
                seen.append((None, None, None))
                continue
            seen.append(
                (
                    response.status_code,
                    _job_status(response.content, response.headers.get("content-type", "")),
                    response.headers.get(case.header),
                )
            )
    return seen, [(e.kind, e.fault) for e in server.provider.journal]


@pytest.mark.parametrize("name", list(CASES))
def test_feature_behaves_the_same_in_the_engine_and_over_real_sockets(
    server: ServerThread, name: str
) -> None:
    case = CASES[name]
    in_engine = play_in_engine(case)
    on_server = play_on_server(server, case)
    assert in_engine[0] == case.expected
    assert on_server == in_engine


def test_retry_after_http_date_and_date_come_from_the_same_reading() -> None:
    clock = VirtualClock(start=12.25)
    provider = FakeProvider(
        parse_scenario(
            "jobs: [{timeline: [{status: queued}]}]\nfaults:\n"
            "  - {name: f, route: list, status: 503, delay: 2s, retry_after: {delay: 30s, form: rfc850}}\n"
        ),
        clock=clock,
    )
    reply, response = provider.receive(HttpRequest("GET", "/v1/jobs"))
    date = email.utils.parsedate_to_datetime(provider.date_header(reply)).timestamp()
    retry = email.utils.parsedate_to_datetime(dict(response.headers)["Retry-After"]).timestamp()
    # both written for the response instant 12.25 + 2 s; Date rounds down, Retry-After up
    assert date == clock.epoch + 14
    assert retry == clock.epoch + 45
