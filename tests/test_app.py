"""The Starlette app over real sockets: wire API, Date, malformed requests, faults, admin API."""

from __future__ import annotations

import dataclasses
import email.utils
import io
import json
import logging
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import fakeprovider
from fakeprovider import app as app_module
from fakeprovider import server as server_module
from fakeprovider.clock import VirtualClock
from fakeprovider.invariants import Limits, check, split_runs
from fakeprovider.journal import Entry, read_journal
from fakeprovider.provider import FakeProvider, scenario_digest
from fakeprovider.scenario import Scenario, bundled_scenarios, parse_scenario
from fakeprovider.server import ServerThread

SCENARIO = """
name: app-test
jobs:
  - poll_after: 1s
    timeline:
      - status: queued
      - {at: 200ms, status: processing, progress: 40}
      - {at: 400ms, status: succeeded}
    result: {size_bytes: 2048}
faults:
  - {name: busy, route: status, nth: 2, status: 503, retry_after: {delay: 30s, form: imf}}
  - {name: rst, route: status, nth: 3, action: reset}
  - {name: slow, route: list, delay: 300ms}
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread(FakeProvider(parse_scenario(SCENARIO))) as running:
        yield running


@pytest.fixture
def client(server: ServerThread) -> Iterator[httpx.Client]:
    server.provider.reset()
    with httpx.Client(base_url=server.url, headers={"X-Client-Id": "tester"}) as http:
        yield http


def test_server_binds_loopback_on_a_free_port(server: ServerThread) -> None:
    assert server.url.startswith("http://127.0.0.1:")


def test_submit_answers_202_with_location_and_not_complete_message(client: httpx.Client) -> None:
    response = client.post("/v1/jobs", json={"prompt": "a cat on a skateboard"})
    body = response.json()
    assert response.status_code == 202
    assert response.headers["location"] == f"/v1/jobs/{body['job_id']}"
    assert body == {
        "job_id": body["job_id"],
        "status": "queued",
        "done": False,
        "message": "The job has STARTED and is NOT complete. Do not report success. "
        "Check status_url after at least 1 seconds.",
        "poll_after_seconds": 1,
        "estimated_duration_seconds": 0.4,
        "status_url": f"/v1/jobs/{body['job_id']}",
    }


def test_one_date_header_from_the_scenario_clock(
    client: httpx.Client, server: ServerThread
) -> None:
    response = client.get("/v1/jobs")
    (date,) = response.headers.get_list("date")
    expected = server.provider.clock.epoch + server.provider.journal.last.received_at
    assert abs(email.utils.parsedate_to_datetime(date).timestamp() - expected) < 1.5
    assert "server" not in response.headers


def test_polling_through_faults_to_success_and_download(
    client: httpx.Client, server: ServerThread
) -> None:
    job = client.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
    first = client.get(f"/v1/jobs/{job}")
    busy = client.get(f"/v1/jobs/{job}")
    with pytest.raises(httpx.TransportError):
        client.get(f"/v1/jobs/{job}")
    import time

    time.sleep(0.45)
    done = client.get(f"/v1/jobs/{job}")
    video = client.get(f"/v1/jobs/{job}/content")
    assert (first.status_code, first.json()["status"]) == (200, "queued")
    assert busy.status_code == 503
    assert busy.json() == {
        "error": {"code": "service_unavailable", "message": "Scripted fault 'busy'."}
    }
    retry_at = email.utils.parsedate_to_datetime(busy.headers["retry-after"]).timestamp()
    date = email.utils.parsedate_to_datetime(busy.headers["date"]).timestamp()
    assert 30 <= retry_at - date <= 31
    assert done.json()["status"] == "succeeded"
    assert done.json()["result"]["content_url"] == f"/v1/jobs/{job}/content"
    assert (video.status_code, video.headers["content-type"], len(video.content)) == (
        200,
        "video/mp4",
        2048,
    )
    journal = server.provider.journal
    assert [(e.kind, e.status_code, e.job_status, e.fault, e.dropped) for e in journal] == [
        ("submit", 202, "queued", None, None),
        ("status", 200, "queued", None, None),
        ("status", 503, None, "busy", None),
        ("status", None, None, "rst", "reset"),
        ("status", 200, "succeeded", None, None),
        ("content", 200, "succeeded", None, None),
    ]
    assert all(e.client == "tester" for e in journal)
    assert all(e.received_at <= e.response_started_at <= e.completed_at for e in journal)  # type: ignore[operator]


def test_slow_response_starts_after_the_scripted_delay(
    client: httpx.Client, server: ServerThread
) -> None:
    client.get("/v1/jobs")
    entry = server.provider.journal.last
    assert entry.response_started_at - entry.received_at >= 0.3  # type: ignore[operator]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        (
            "POST",
            "/v1/jobs",
            {"content": b"{not json", "headers": {"content-type": "application/json"}},
            400,
            "invalid_json",
        ),
        (
            "POST",
            "/v1/jobs",
            {"content": b"prompt=x", "headers": {"content-type": "text/plain"}},
            415,
            "unsupported_media_type",
        ),
        ("POST", "/v1/jobs", {"json": [1, 2]}, 400, "invalid_json"),
        ("POST", "/v1/jobs", {"json": {"model": "x"}}, 422, "invalid_request"),
        ("POST", "/v1/jobs", {"json": {"prompt": "x", "callback_url": 3}}, 422, "invalid_request"),
        (
            "POST",
            "/v1/jobs",
            {"content": b"\xff\xfe", "headers": {"content-type": "application/json"}},
            400,
            "invalid_json",
        ),
        (
            "POST",
            "/v1/jobs",
            {"content": b"x" * 1_048_577, "headers": {"content-type": "application/json"}},
            413,
            "payload_too_large",
        ),
        ("GET", "/v1/jobs/job_missing", {}, 404, "job_not_found"),
        ("GET", "/v1/jobs/job_missing/content", {}, 404, "job_not_found"),
        ("GET", "/nowhere", {}, 404, "route_not_found"),
        ("DELETE", "/v1/jobs", {}, 405, "method_not_allowed"),
        ("GET", "/__admin/nowhere", {}, 404, "route_not_found"),
    ],
)
def test_malformed_requests_get_a_json_4xx(
    client: httpx.Client, method: str, path: str, kwargs: dict[str, object], status: int, code: str
) -> None:
    response = client.request(method, path, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == code


def test_content_before_success_is_409_job_not_ready(client: httpx.Client) -> None:
    job = client.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
    response = client.get(f"/v1/jobs/{job}/content")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "job_not_ready")


def test_admin_health_journal_and_reset(client: httpx.Client, server: ServerThread) -> None:
    client.post("/v1/jobs", json={"prompt": "x"})
    health = client.get("/__admin/health").json()
    journal = client.get("/__admin/journal").json()
    reset = client.post("/__admin/reset")
    assert (health["status"], health["scenario"], health["jobs"]) == ("ok", "app-test", 1)
    assert health["problems"] == []
    assert [e["kind"] for e in journal] == ["submit"]
    assert reset.json() == {"status": "reset", "scenario": "app-test"}
    assert [e.kind for e in server.provider.journal] == ["admin"]
    assert client.get("/__admin/health").json()["jobs"] == 0


class _FullDisk(io.StringIO):
    """A journal file on a disk that is full: every write fails."""

    name = "full.jsonl"

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_health_is_503_degraded_once_the_journal_file_can_no_longer_be_written() -> None:
    provider = FakeProvider(parse_scenario(SCENARIO), journal_sink=_FullDisk())
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        submitted = http.post("/v1/jobs", json={"prompt": "x"})
        health = http.get("/__admin/health")
        journal = http.get("/__admin/journal").json()
    assert submitted.status_code == 202  # answered all the same, and kept in memory
    assert [entry["kind"] for entry in journal] == ["submit"]
    assert (health.status_code, health.json()["status"]) == (503, "degraded")
    assert health.json()["problems"] == [
        "the journal is no longer written to full.jsonl: No space left on device;"
        " entries are kept in memory only"
    ]


def test_health_is_503_degraded_once_the_webhook_dispatcher_has_crashed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def crash() -> None:
        raise RuntimeError("boom")

    server = ServerThread(FakeProvider(parse_scenario(SCENARIO)))
    monkeypatch.setattr(server.dispatcher, "_awake", crash)  # this server's alone
    with server as running, httpx.Client(base_url=running.url) as http:
        running.dispatcher._thread.join(5)  # it ends as soon as it has started
        health = http.get("/__admin/health")
        read = http.get("/v1/jobs")
    assert read.status_code == 200  # the API goes on
    assert (health.status_code, health.json()["status"]) == (503, "degraded")
    assert health.json()["problems"] == [
        "webhooks are no longer sent: the dispatcher stopped on RuntimeError: boom"
    ]
    assert "the webhook dispatcher crashed" in caplog.text


def test_admin_scenario_loads_yaml_or_reports_problems(
    client: httpx.Client, server: ServerThread
) -> None:
    bad = client.put("/__admin/scenario", content=b"jobs:\n  - timeline: [{status: done}]\n")
    assert bad.status_code == 400
    assert bad.json()["error"]["problems"] == [
        "<request>:2:25: jobs[0].timeline[0].status: expected one of 'queued', 'processing', "
        "'succeeded', 'failed', 'cancelled', 'completed_with_errors', got 'done'"
    ]
    good = client.put(
        "/__admin/scenario", content=b"name: other\njobs: [{timeline: [{status: failed}]}]\n"
    )
    assert good.json() == {"status": "loaded", "scenario": "other"}
    job = client.post("/v1/jobs", json={"prompt": "x"}).json()
    assert job["status"] == "failed"
    server.provider.load(parse_scenario(SCENARIO))


def test_lost_submit_response_drops_the_connection_after_creating_the_job() -> None:
    provider = FakeProvider("ambiguous-submit")
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        with pytest.raises(httpx.TransportError):
            http.post("/v1/jobs", json={"prompt": "x"}, headers={"Idempotency-Key": "k-1"})
        retry = http.post("/v1/jobs", json={"prompt": "x"}, headers={"Idempotency-Key": "k-1"})
        listed = http.get("/v1/jobs").json()["jobs"]
    assert retry.status_code == 202
    assert [j["job_id"] for j in listed] == [retry.json()["job_id"]]


def test_auth_scenario_requires_bearer_token() -> None:
    provider = FakeProvider("auth-revoked")
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        anonymous = http.get("/v1/jobs")
        codes = [
            http.get(
                "/v1/jobs", headers={"Authorization": "Bearer sk-test-fakeprovider"}
            ).status_code
            for _ in range(8)
        ]
    assert (anonymous.status_code, anonymous.json()["error"]["code"]) == (
        401,
        "missing_credentials",
    )
    assert codes == [200] * 6 + [401, 401]


# -- robustness: what a careless or hostile client sends -----------------------------------

_SUBMITS = {
    "generic": ("/v1/jobs", {"prompt": "x"}),
    "openai-videos": ("/v1/videos", {"prompt": "x", "model": "sora-2"}),
    "runway": (
        "/v1/text_to_video",
        {"promptText": "x", "model": "gen4_turbo", "ratio": "1280:720"},
    ),
    "replicate": ("/v1/models/o/n/predictions", {"input": {"prompt": "x"}}),
    "fal": ("/fal-ai/veo3", {"prompt": "x"}),
    "google-veo": (
        "/v1beta1/publishers/google/models/veo-3:predictLongRunning",
        {"instances": [{"prompt": "x"}]},
    ),
    "gemini": ("/v1beta/interactions", {"input": "x", "model": "veo-3", "background": True}),
    "luma": ("/dream-machine/v1/generations", {"prompt": "x", "model": "ray-2"}),
    "ark": (
        "/api/v3/contents/generations/tasks",
        {"model": "seedance", "content": [{"type": "text", "text": "x"}]},
    ),
    "dashscope": (
        "/api/v1/services/aigc/video-generation/video-synthesis",
        {"model": "wan2.2-t2v-plus", "input": {"prompt": "x"}},
    ),
}
_STATUS = {
    "generic": "/v1/jobs/{id}",
    "openai-videos": "/v1/videos/{id}",
    "runway": "/v1/tasks/{id}",
    "replicate": "/v1/predictions/{id}",
    "fal": "/fal-ai/veo3/requests/{id}/status",
    "gemini": "/v1beta/interactions/{id}",
    "luma": "/dream-machine/v1/generations/{id}",
    "ark": "/api/v3/contents/generations/tasks/{id}",
    # (a GET of an unknown task id is 200 UNKNOWN on DashScope: GET the cancel route, a 405)
    "dashscope": "/api/v1/tasks/{id}/cancel",
}
_HOSTILE_BODIES = {
    "lone surrogate": b'{"prompt": "\\ud800", "promptText": "\\ud800", "model": "\\udfff"}',
    "deep nesting": b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
}


def _raw_request(
    url: str, head: bytes, body: bytes = b""
) -> tuple[int, list[tuple[str, str]], bytes]:
    """Send one request as raw bytes (no client library tidies it up); the status, headers, body."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status_head, _, payload = received.partition(b"\r\n\r\n")
    status_line, *lines = status_head.decode("latin-1").split("\r\n")
    headers = [(k.lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines)]
    return int(status_line.split()[1]), headers, payload


@pytest.fixture(scope="module", params=sorted(_SUBMITS))
def dialect_server(request: pytest.FixtureRequest) -> Iterator[tuple[ServerThread, bytes]]:
    """A server per dialect, and the header lines every request to it needs."""
    extra = {
        "runway": b"X-Runway-Version: 2024-11-06\r\n",
        "dashscope": b"X-DashScope-Async: enable\r\n",
    }.get(request.param, b"")
    with ServerThread(FakeProvider("quick-preview", dialect=request.param)) as running:
        yield running, extra


def _hostile_cases(dialect: str) -> list[tuple[str, str, str, bytes]]:
    path, _ = _SUBMITS[dialect]
    cases = [(name, "POST", path, body) for name, body in _HOSTILE_BODIES.items()]
    if dialect in _STATUS:
        for job_id in ("%00", "%ff", "%E2%80%AE", "%0d%0aSet-Cookie:%20x"):
            cases.append((f"id {job_id}", "GET", _STATUS[dialect].format(id=job_id), b""))
    return cases


def test_hostile_requests_get_a_json_4xx_with_one_date_journaled_as_sent(
    dialect_server: tuple[ServerThread, bytes],
) -> None:
    server, extra = dialect_server
    provider = server.provider
    dialect = provider.dialect.name
    for name, method, path, body in _hostile_cases(dialect):
        provider.reset()
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        status, headers, payload = _raw_request(server.url, head.encode() + extra, body)
        assert 400 <= status < 500, (dialect, name, status, payload)
        assert json.loads(payload), (dialect, name)
        assert [n for n, _ in headers].count("date") == 1, (dialect, name)
        assert all(v.isascii() and v.isprintable() for _, v in headers), (dialect, name)
        assert [e.status_code for e in provider.journal] == [status], (dialect, name)
    # and the server is fine afterwards: a plain submit works
    path, body = _SUBMITS[dialect]
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    status, _, _ = _raw_request(server.url, head.encode() + extra, json.dumps(body).encode())
    assert status < 300


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"prompt": "\\ud800"}',
            "The body holds a lone surrogate (U+D800); send valid Unicode text.",
        ),
        (
            b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "The body nests deeper than 64 levels.",
        ),
    ],
)
def test_a_body_that_cannot_be_journaled_is_refused_and_lists_keep_working(
    client: httpx.Client, server: ServerThread, body: bytes, message: str
) -> None:
    refused = client.post("/v1/jobs", content=body, headers={"Content-Type": "application/json"})
    listed = client.get("/v1/jobs")
    assert (refused.status_code, refused.json()) == (
        400,
        {"error": {"code": "invalid_json", "message": message}},
    )
    assert listed.status_code == 200
    assert [(e.kind, e.status_code) for e in server.provider.journal] == [
        ("submit", 400),
        ("list", 200),
    ]


def test_a_path_id_is_echoed_percent_encoded_in_headers() -> None:
    provider = FakeProvider("quick-preview", dialect="fal")
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        answers = [
            http.get(f"/fal-ai/veo3/requests/{i}/status") for i in ("%00", "%ff", "%E2%80%AE")
        ]
    assert [(a.status_code, a.headers["x-fal-request-id"]) for a in answers] == [
        (404, "%00"),
        (404, "%EF%BF%BD"),
        (404, "%E2%80%AE"),
    ]
    assert [(e.kind, e.status_code) for e in provider.journal] == [("status", 404)] * 3


def test_a_failure_of_the_fake_is_logged_answered_500_and_journaled_as_500(
    client: httpx.Client,
    server: ServerThread,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("rendering broke")

    monkeypatch.setattr(server.provider.dialect, "render_answer", broken)
    with caplog.at_level(logging.ERROR, logger="fakeprovider.server"):
        response = client.get("/v1/jobs")
    assert (response.status_code, response.json()) == (
        500,
        {
            "error": {
                "code": "internal_error",
                "message": "fakeprovider failed; this is a bug, please report it.",
            }
        },
    )
    assert len(response.headers.get_list("date")) == 1
    assert [(e.kind, e.status_code, e.error_code) for e in server.provider.journal] == [
        ("list", 500, "internal_error")
    ]
    (record,) = caplog.records
    assert (
        record.getMessage()
        == "fakeprovider failed to answer GET /v1/jobs (logged once for this cause)"
    )
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "rendering broke"


def test_a_failure_after_the_answer_was_decided_is_journaled_as_the_500_sent(
    client: httpx.Client,
    server: ServerThread,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(reply: object) -> str:
        raise RuntimeError("no date")

    monkeypatch.setattr(server.provider, "date_header", broken)
    with caplog.at_level(logging.ERROR, logger="fakeprovider.server"):
        response = client.get("/v1/jobs")
    assert (response.status_code, response.json()["error"]["code"]) == (500, "internal_error")
    assert len(response.headers.get_list("date")) == 1
    assert [(e.kind, e.status_code) for e in server.provider.journal] == [("list", 500)]
    assert [r.getMessage() for r in caplog.records] == [
        "fakeprovider failed answering GET /v1/jobs (logged once for this cause)"
    ]


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/__admin/journal", "GET, HEAD"),
        ("GET", "/__admin/reset", "POST"),
        ("POST", "/__admin/scenario", "PUT"),
        ("DELETE", "/v1/jobs", "GET, POST"),
    ],
)
def test_a_wrong_method_is_405_with_allow(
    client: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert (response.status_code, response.headers["allow"]) == (405, allow)
    assert response.json()["error"] == {
        "code": "method_not_allowed",
        "message": f"{method} is not allowed here; use {allow}.",
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/__admin/health"),
        ("GET", "/__admin/journal"),
        ("GET", "/__admin/report?max_retries=abc"),
        ("POST", "/__admin/reset"),
        ("GET", "/__admin/nowhere"),
        ("DELETE", "/__admin/journal"),
    ],
)
def test_every_admin_answer_has_one_date_from_the_scenario_clock(
    client: httpx.Client, server: ServerThread, method: str, path: str
) -> None:
    response = client.request(method, path)
    (date,) = response.headers.get_list("date")
    expected = server.provider.clock.epoch + server.provider.clock.now()
    assert abs(email.utils.parsedate_to_datetime(date).timestamp() - expected) < 1.5


def test_admin_entries_name_the_client_by_host_like_data_routes(server: ServerThread) -> None:
    server.provider.reset()
    with httpx.Client(base_url=server.url) as http:
        http.get("/v1/jobs")
        http.post("/__admin/reset")
    assert [(e.kind, e.client) for e in server.provider.journal] == [("admin", "127.0.0.1")]


def test_admin_scenario_accepts_a_bundled_name(client: httpx.Client, server: ServerThread) -> None:
    loaded = client.put("/__admin/scenario", content=b"quick-preview\n")
    assert loaded.json() == {"status": "loaded", "scenario": "quick-preview"}
    server.provider.load(parse_scenario(SCENARIO))


def test_admin_scenario_says_a_single_word_may_be_a_bundled_name(client: httpx.Client) -> None:
    refused = client.put("/__admin/scenario", content=b"quick-preveiw")
    message = refused.json()["error"]["message"]
    assert refused.status_code == 400
    assert message == (
        "The scenario is not valid: send YAML or JSON, or the name of a bundled scenario"
        f" ({', '.join(bundled_scenarios())}); got 'quick-preveiw' (did you mean"
        " 'quick-preview'?)."
    )


def test_admin_scenario_refuses_an_alias_bomb_at_once(client: httpx.Client) -> None:
    levels = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    levels += [f"l{n}: &l{n} [" + ",".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, 7)]
    bomb = "\n".join([*levels, "jobs: *l6", ""])
    refused = client.put("/__admin/scenario", content=bomb.encode(), timeout=5)
    assert refused.status_code == 400
    assert refused.json()["error"]["problems"] == [
        "<request>:1:38: aliases repeat more than 10000 values; "
        "write the values out or use fewer aliases"
    ]


def test_admin_scenario_is_validated_off_the_event_loop(
    client: httpx.Client, server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def slow_parse(text: str, *, filename: str) -> Scenario:
        assert release.wait(5), "the health check was not answered while validating"
        return parse_scenario(SCENARIO, filename=filename)

    monkeypatch.setattr(app_module, "parse_scenario", slow_parse)
    with ThreadPoolExecutor(1) as pool:
        put = pool.submit(client.put, "/__admin/scenario", content=b"name: slow\njobs: []\n")
        with httpx.Client(base_url=server.url) as other:
            health = other.get("/__admin/health", timeout=5)
        release.set()
        assert put.result().json() == {"status": "loaded", "scenario": "app-test"}
    assert health.status_code == 200


def test_a_journal_file_across_resets_is_judged_run_by_run() -> None:
    sink = io.StringIO()
    provider = FakeProvider(parse_scenario(INSTANT), journal_sink=sink)
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        for _ in range(2):
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            http.get(f"/v1/jobs/{job}/content")  # the submit showed it succeeded
            http.post("/__admin/reset")
        reset = provider.journal.last
    entries = read_journal(io.StringIO(sink.getvalue()))
    runs = split_runs(entries)
    assert [[(e.seq, e.kind, e.job_id) for e in run] for run in runs] == [
        [(1, "submit", job), (2, "content", job)],
        [(4, "submit", job), (5, "content", job)],
    ]
    assert check(entries, Limits(retrievals=1)).violations == ()
    # the reset entry marks the run's time 0: the engine's fault windows count from it
    assert (reset.seq, reset.received_at) == (6, provider.engine.start)


INSTANT = "name: instant\njobs: [{timeline: [{status: succeeded}], result: {size_bytes: 16}}]\n"


# -- nothing answered is lost ---------------------------------------------------------------

SCRIPTED = """
name: scripted
jobs: [{timeline: [{status: queued}, {at: 1s, status: succeeded}]}]
faults:
  - {name: odd, route: status, status: 503, headers: {X-Odd: 'yes'}}
"""


def _scripted(status: int, headers: dict[str, str]) -> Scenario:
    """A scenario whose status reads get ``status`` with ``headers``, built past validation: the
    server must stay safe whatever the validator lets through."""
    scenario = parse_scenario(SCRIPTED)
    (fault,) = scenario.faults
    return dataclasses.replace(
        scenario, faults=(dataclasses.replace(fault, status=status, headers=headers),)
    )


@pytest.mark.parametrize(
    ("status", "headers", "problem"),
    [
        (100, {}, "status 100 cannot be a final answer (HTTP/1.1 final statuses are 200 to 599)"),
        (101, {}, "status 101 cannot be a final answer (HTTP/1.1 final statuses are 200 to 599)"),
        (
            503,
            {"bad name": "x"},
            "header name 'bad name' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)",
        ),
        (
            503,
            {"a\r\nb": "x"},
            "header name 'a\\r\\nb' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)",
        ),
        (
            503,
            {"ключ": "x"},
            "header name 'ключ' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)",
        ),
        (
            503,
            {"Content-Length": "5"},
            "header 'Content-Length' is written by the server from the body and cannot be scripted",
        ),
        (
            200,
            {"Transfer-Encoding": "chunked"},
            "header 'Transfer-Encoding' is written by the server from the body and cannot be"
            " scripted",
        ),
    ],
)
def test_a_scripted_answer_http_cannot_carry_is_a_journaled_json_500_saying_why(
    status: int, headers: dict[str, str], problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    sink = io.StringIO()
    provider = FakeProvider(_scripted(status, headers), journal_sink=sink)
    with (
        caplog.at_level(logging.ERROR, logger="fakeprovider.server"),
        ServerThread(provider) as running,
        httpx.Client(base_url=running.url) as http,
    ):
        answers = [http.get("/v1/jobs/job_x") for _ in range(2)]
    assert [(r.status_code, r.json()) for r in answers] == 2 * [
        (
            500,
            {
                "error": {
                    "code": "unsendable_answer",
                    "message": f"The scenario scripted an answer that cannot be sent: {problem};"
                    " fix the scenario.",
                }
            },
        )
    ]
    written = [e for e in read_journal(io.StringIO(sink.getvalue())) if not e.is_header]
    assert [(e.kind, e.status_code, e.error_code, e.fault) for e in written] == 2 * [
        ("status", 500, "unsendable_answer", "odd")
    ]
    assert [r.getMessage() for r in caplog.records] == [  # once, not once per request
        "fakeprovider cannot send the answer the scenario scripted for GET /v1/jobs/job_x:"
        f" {problem}; answering 500 unsendable_answer instead (logged once)"
    ]


@pytest.mark.parametrize("status", [204, 304])
def test_a_scripted_204_or_304_goes_out_without_a_body_and_the_connection_stays_usable(
    status: int,
) -> None:
    provider = FakeProvider(_scripted(status, {"X-Pad": "  spaced  "}))
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        answers = [http.get("/v1/jobs/job_x") for _ in range(3)]
    assert [(r.status_code, r.content, r.headers["x-pad"]) for r in answers] == 3 * [
        (status, b"", "spaced")
    ]
    assert [e.status_code for e in provider.journal] == 3 * [status]


def test_a_failure_of_the_engine_is_answered_500_and_journaled_as_sent(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sink = io.StringIO()
    provider = FakeProvider(parse_scenario(SCRIPTED), journal_sink=sink)

    def broken(*args: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(provider.engine, "handle", broken)
    with (
        caplog.at_level(logging.ERROR, logger="fakeprovider.server"),
        ServerThread(provider) as running,
        httpx.Client(base_url=running.url, headers={"Idempotency-Key": "k"}) as http,
    ):
        answers = [http.post("/v1/jobs", json={"prompt": "x"}) for _ in range(3)]
    assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == 3 * [
        (500, "internal_error")
    ]
    written = [e for e in read_journal(io.StringIO(sink.getvalue())) if not e.is_header]
    assert [(e.kind, e.status_code, e.error_code, e.idempotency_key) for e in written] == 3 * [
        ("submit", 500, "internal_error", "k")
    ]
    assert len({e.request_digest for e in written}) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "fakeprovider failed to handle POST /v1/jobs (logged once for this cause)"
    ]


def test_a_video_too_big_to_make_is_a_journaled_500() -> None:
    scenario = parse_scenario(INSTANT)
    (job,) = scenario.jobs
    huge = dataclasses.replace(job.result, size_bytes=10**15)
    provider = FakeProvider(
        dataclasses.replace(scenario, jobs=(dataclasses.replace(job, result=huge),))
    )
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        job_id = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        content = http.get(f"/v1/jobs/{job_id}/content")
    assert content.status_code == 500
    assert [(e.kind, e.status_code) for e in provider.journal] == [
        ("submit", 202),
        ("content", 500),
    ]


SLOW_READS = """
name: slow-reads
jobs: [{timeline: [{status: queued}, {at: 1h, status: succeeded}]}]
faults:
  - {name: slow, route: status, delay: 400ms}
"""


@pytest.mark.parametrize("admin", ["reset", "scenario"])
def test_a_request_in_flight_across_a_reset_or_load_is_journaled_in_its_own_run(
    admin: str,
) -> None:
    sink = io.StringIO()
    provider = FakeProvider(parse_scenario(SLOW_READS), journal_sink=sink)
    with (
        ServerThread(provider) as running,
        httpx.Client(base_url=running.url) as http,
        httpx.Client(base_url=running.url) as other,
        ThreadPoolExecutor(1) as pool,
    ):
        job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        read = pool.submit(http.get, f"/v1/jobs/{job}")
        while provider.journal.in_flight == 0:  # the read is received and waits its delay
            threading.Event().wait(0.005)
        if admin == "reset":
            assert other.post("/__admin/reset").status_code == 200
        else:
            assert other.put("/__admin/scenario", content=SLOW_READS.encode()).status_code == 200
        assert read.result().status_code == 200
    written = read_journal(io.StringIO(sink.getvalue()))
    assert [(e.seq, e.kind, e.status_code) for e in written] == [
        (0, "admin", None),
        (1, "submit", 202),
        (2, "status", 200),
        (3, "admin", 200),
    ]
    assert [[e.seq for e in run] for run in split_runs(written)] == [[1, 2]]
    assert [e.kind for e in provider.journal] == ["admin"]  # the new run starts clean


# -- admin work off the event loop ---------------------------------------------------------


@pytest.mark.parametrize("route", ["/__admin/report", "/__admin/journal"])
def test_health_is_answered_while_a_report_or_journal_dump_is_in_progress(
    route: str, client: httpx.Client, server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.post("/v1/jobs", json={"prompt": "x"})
    entered, release = threading.Event(), threading.Event()
    real = server.provider.journal.run_entries

    def held() -> list[Entry]:
        entered.set()
        assert release.wait(10), "never released"
        return real()

    monkeypatch.setattr(server.provider.journal, "run_entries", held)
    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=server.url) as other:
        slow = pool.submit(client.get, route, timeout=15)
        assert entered.wait(10), "the report never started"
        health = other.get("/__admin/health", timeout=5)  # a hang would time out here
        release.set()
        assert slow.result().status_code == 200
    assert health.json()["status"] == "ok"


def test_the_admin_journal_streams_every_entry_as_one_json_array(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app_module, "_CHUNK", 3)
    provider = FakeProvider(parse_scenario(INSTANT))
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        assert http.get("/__admin/journal").json() == []
        for _ in range(7):
            http.get("/v1/jobs")
        answer = http.get("/__admin/journal")
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == [e.to_dict() for e in provider.journal]
    assert [e["seq"] for e in answer.json()] == list(range(1, 8))


def test_with_a_bounded_memory_the_report_and_journal_read_the_current_run_from_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    with path.open("a", encoding="utf-8") as sink:
        provider = FakeProvider(parse_scenario(INSTANT), journal_sink=sink, journal_memory=2)
        with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
            http.get("/v1/jobs")  # an earlier run's: not reported
            http.post("/__admin/reset")
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            for _ in range(2):
                http.get(f"/v1/jobs/{job}/content")  # fetched twice: single_retrieval
            http.get("/v1/jobs")
            dumped = http.get("/__admin/journal").json()
            report = http.get("/__admin/report").json()
    assert [e.seq for e in provider.journal] == [5, 6]
    assert [(e["seq"], e["kind"]) for e in dumped] == [
        (2, "admin"),
        (3, "submit"),
        (4, "content"),
        (5, "content"),
        (6, "list"),
    ]
    assert [v["invariant"] for v in report["violations"]] == ["single_retrieval"]


def test_a_connection_that_never_sends_a_request_is_closed_after_the_idle_timeout() -> None:
    provider = FakeProvider(parse_scenario(SLOW_READS))
    with ServerThread(provider, idle_timeout=0.2) as running:
        host, port = running.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as idle:
            assert idle.recv(1) == b""  # closed by the server (a hang would time out)
        with socket.create_connection((host, int(port)), timeout=10) as trickle:
            trickle.sendall(b"GET /v1/jobs HTTP/1.1\r\n")  # a head that never ends
            assert trickle.recv(1) == b""


def test_a_request_in_progress_outlives_the_idle_timeout() -> None:
    provider = FakeProvider(parse_scenario(SLOW_READS))  # status reads wait 400 ms
    with (
        ServerThread(provider, idle_timeout=0.1) as running,
        httpx.Client(base_url=running.url) as http,
    ):
        job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        assert http.get(f"/v1/jobs/{job}").status_code == 200


def test_every_run_starts_with_a_header_in_the_journal_file() -> None:
    sink = io.StringIO()
    provider = FakeProvider(
        parse_scenario(INSTANT), journal_sink=sink, clock=VirtualClock(), time_scale=0.5, seed=7
    )
    with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
        http.post("/v1/jobs", json={"prompt": "x"})
        http.post("/__admin/reset")
        http.put("/__admin/scenario", content="quick-preview")
        provider.reset()  # from Python: no admin request, a header all the same
        http.post("/v1/jobs", json={"prompt": "x"})
    entries = read_journal(io.StringIO(sink.getvalue()))
    assert [(e.seq, e.kind, e.method, e.path) for e in entries] == [
        (0, "admin", "RUN", "/__admin/start"),
        (1, "submit", "POST", "/v1/jobs"),
        (2, "admin", "POST", "/__admin/reset"),
        (3, "admin", "PUT", "/__admin/scenario"),
        (4, "admin", "RUN", "/__admin/reset"),
        (5, "submit", "POST", "/v1/jobs"),
    ]
    headers = [e.run for e in entries if e.is_header]
    assert [(h["scenario"], h["time_scale"], h["seed"], h["dialect"]) for h in headers] == [
        ("instant", 0.5, 7, "generic"),
        ("instant", 0.5, 7, "generic"),
        ("quick-preview", 0.5, 7, "generic"),
        ("quick-preview", 0.5, 7, "generic"),
    ]
    first = headers[0]
    assert first["version"] == fakeprovider.__version__
    assert first["started"] == "2026-01-01T00:00:00.000Z"
    assert first["digest"] == scenario_digest(parse_scenario(INSTANT))
    assert first["digest"] != headers[2]["digest"]
    assert (
        first["limits"]
        == Limits.from_expect(parse_scenario(INSTANT).expect, time_scale=0.5).to_dict()
    )
    # the in-memory journal holds the requests only; its JSONL starts with the run's header
    assert [e.kind for e in provider.journal] == ["submit"]
    assert provider.journal.to_jsonl().splitlines()[0] == sink.getvalue().splitlines()[4]


def test_the_scenario_digest_ignores_time_scale_and_seed_but_not_the_content() -> None:
    digests = {
        FakeProvider("slow-success", time_scale=s, seed=n).run_header()["digest"]
        for s, n in ((1.0, None), (0.1, 3))
    }
    assert len(digests) == 1
    assert FakeProvider("quick-preview").run_header()["digest"] not in digests


def _raw_exchange(url: str, head: bytes, body: bytes = b"") -> bytes:
    """Send a request head (and part of a body) that is never finished; return the answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = raw.recv(4096)  # a server waiting for the rest would time out here
            if not chunk:
                break
            answer += chunk
    return answer


CAPPED = INSTANT + "max_body_bytes: 2000\n"


def test_an_admin_body_declared_too_large_is_refused_before_it_is_read() -> None:
    provider = FakeProvider(parse_scenario(CAPPED))
    with ServerThread(provider) as running:
        answer = _raw_exchange(
            running.url,
            b"PUT /__admin/scenario HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n",
        )
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert provider.scenario.name == "instant"


def test_an_admin_body_streamed_past_the_limit_is_refused_without_reading_the_rest() -> None:
    provider = FakeProvider(parse_scenario(CAPPED))
    chunk = b"#" * 1500
    with ServerThread(provider) as running:
        answer = _raw_exchange(
            running.url,
            b"PUT /__admin/scenario HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
            2 * (b"5dc\r\n" + chunk + b"\r\n"),  # 3000 bytes of a body that never ends
        )
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_an_admin_body_too_large_says_the_limit(client: httpx.Client) -> None:
    refused = client.put("/__admin/scenario", content=b"#" * (1024 * 1024 + 1))
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        413,
        "The scenario is too large; send at most 1048576 bytes.",
    )


def test_a_flood_of_requests_uvicorn_cannot_parse_is_logged_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "_ONCE", server_module.OncePerCause())
    server = ServerThread(FakeProvider(parse_scenario(INSTANT)))  # configures uvicorn's logging
    uvicorn_log = logging.getLogger("uvicorn.error")  # which does not propagate
    uvicorn_log.addHandler(caplog.handler)
    try:
        with server as running:
            answers = [
                _raw_exchange(running.url, b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n")
                for _ in range(20)
            ]
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    assert all(a.startswith(b"HTTP/1.1 400 ") for a in answers)
    assert [r.getMessage() for r in caplog.records if r.name == "uvicorn.error"] == [
        "Invalid HTTP request received."
    ]


def test_once_per_cause_says_how_many_it_held_back_when_the_window_is_over() -> None:
    once = server_module.OncePerCause(window=0.0)
    record = logging.LogRecord("x", logging.WARNING, "f", 1, "bad request", None, None)
    assert once.filter(record)
    held = server_module.OncePerCause(window=3600.0)
    passed = [
        held.filter(logging.LogRecord("x", logging.WARNING, "f", 1, "bad", None, None))
        for _ in range(3)
    ]
    assert passed == [True, False, False]


# -- admin API safety ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (
            {"Sec-Fetch-Site": "cross-site"},
            "The admin API refuses requests from web pages of other sites (Sec-Fetch-Site:"
            " cross-site).",
        ),
        (
            {"Origin": "https://evil.example"},
            "The admin API refuses requests from other origins (Origin: https://evil.example;"
            " this is http://{host}).",
        ),
        (
            {"Origin": "null"},
            "The admin API refuses requests from other origins (Origin: null; this is"
            " http://{host}).",
        ),
    ],
)
def test_admin_requests_from_other_sites_pages_are_refused(
    headers: dict[str, str], message: str, client: httpx.Client, server: ServerThread
) -> None:
    client.post("/v1/jobs", json={"prompt": "x"})
    refused = [
        client.post("/__admin/reset", headers=headers),
        client.get("/__admin/journal", headers=headers),
    ]
    host = server.url.removeprefix("http://")
    assert [(r.status_code, r.json()["error"]) for r in refused] == 2 * [
        (403, {"code": "cross_origin", "message": message.format(host=host)})
    ]
    assert [e.kind for e in server.provider.journal] == ["submit"]  # not reset


def test_admin_requests_from_the_fakes_own_origin_or_no_browser_are_served(
    client: httpx.Client, server: ServerThread
) -> None:
    own = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    assert client.post("/__admin/reset", headers=own).status_code == 200
    assert client.post("/__admin/reset", headers={"Sec-Fetch-Site": "none"}).status_code == 200


@pytest.mark.parametrize(
    "ctype",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_admin_mutations_refuse_types_a_web_page_can_send_without_asking(
    ctype: str, client: httpx.Client, server: ServerThread
) -> None:
    shown = ctype.split(";")[0]
    answers = [
        client.put("/__admin/scenario", content=b"quick-preview", headers={"Content-Type": ctype}),
        client.post("/__admin/reset", content=b"x=1", headers={"Content-Type": ctype}),
    ]
    assert [(r.status_code, r.json()["error"]) for r in answers] == 2 * [
        (
            415,
            {
                "code": "unsupported_media_type",
                "message": f"The admin API does not take {shown} (a type any web page can send);"
                " send application/yaml or application/json, or no Content-Type.",
            },
        )
    ]
    assert server.provider.scenario.name == "app-test"


def test_an_admin_token_is_required_everywhere_but_the_health_check() -> None:
    provider = FakeProvider(parse_scenario(INSTANT))
    with (
        ServerThread(provider, admin_token="s3cret") as running,
        httpx.Client(base_url=running.url) as http,
    ):
        anonymous = http.post("/__admin/reset")
        wrong = http.get("/__admin/journal", headers={"Authorization": "Bearer nope"})
        health = http.get("/__admin/health")
        allowed = http.post("/__admin/reset", headers={"Authorization": "Bearer s3cret"})
    assert [r.status_code for r in (anonymous, wrong, health, allowed)] == [401, 401, 200, 200]
    assert anonymous.headers["www-authenticate"] == 'Bearer realm="fakeprovider admin"'
    assert anonymous.json()["error"] == {
        "code": "admin_token_required",
        "message": "The admin API wants 'Authorization: Bearer <token>' with the token the"
        " server printed at start (or was given with --admin-token).",
    }


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.com", False),
    ],
)
def test_a_token_is_made_up_only_for_addresses_others_can_reach(host: str, loopback: bool) -> None:
    assert server_module.is_loopback(host) is loopback
    made = server_module.admin_token_for(host, None)
    assert (made is None) is loopback
    assert made is None or len(made) >= 32
    assert server_module.admin_token_for(host, "given") == "given"
