"""The runway dialect: exact wire shapes, and the real ``runwayml`` SDK against the fake."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import (
    CLIENT_HEADERS,
    SCALE,
    call,
    download,
    last_status,
    retried_through_transient_5xx,
    serve_inprocess,
    settled,
    unusual,
    violated,
    virtual,
)
from .sdk import needs, optional

V = {"X-Runway-Version": "2024-11-06"}
CREATE = {"model": "gen4.5", "promptText": "a cat", "ratio": "1280:720", "duration": 5}


def test_create_and_task_shapes_through_every_status() -> None:
    provider, clock = virtual("runway")
    status, _, payload = call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)
    job_id = payload["id"]
    assert (status, payload) == (200, {"id": job_id, "estimatedCost": {"credits": 50}})
    created = "2026-01-01T00:00:00.000Z"
    _, _, task = call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)
    assert task == {
        "id": job_id,
        "createdAt": created,
        "status": "PENDING",
        "estimatedCost": {"credits": 50},
    }
    clock.advance(31)
    _, _, task = call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)
    assert task == {
        "id": job_id,
        "createdAt": created,
        "status": "RUNNING",
        "estimatedCost": {"credits": 50},
        "progress": 0.35,
    }
    clock.advance(70)
    _, _, task = call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)
    assert task == {
        "id": job_id,
        "createdAt": created,
        "status": "SUCCEEDED",
        "cost": {"credits": 50},
        "output": [f"http://fake.test/files/{job_id}.mp4"],
    }
    status, _, content = call(provider, "GET", f"/files/{job_id}.mp4")
    assert (status, len(content)) == (200, 1048576)
    assert [(e.kind, e.status_code, e.job_status) for e in provider.entries] == [
        ("submit", 200, "queued"),
        ("status", 200, "queued"),
        ("status", 200, "processing"),
        ("status", 200, "succeeded"),
        ("content", 200, "succeeded"),
    ]


def test_failed_task_and_delete() -> None:
    provider, clock = virtual("runway", "terminal-failure")
    _, _, payload = call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)
    job_id = payload["id"]
    clock.advance(45)
    _, _, task = call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)
    assert task == {
        "id": job_id,
        "createdAt": "2026-01-01T00:00:00.000Z",
        "status": "FAILED",
        "cost": {"credits": 50},
        "failure": "The prompt was rejected by the safety system after generation started.",
        "failureCode": "content_policy_violation",
    }
    status, _, body = call(provider, "DELETE", f"/v1/tasks/{job_id}", headers=V)
    assert (status, body) == (204, b"")


@pytest.mark.parametrize(
    ("headers", "body", "status", "error"),
    [
        (
            {},
            CREATE,
            400,
            "Missing the X-Runway-Version header; send X-Runway-Version: 2024-11-06.",
        ),
        (
            {"X-Runway-Version": "2023-01-01"},
            CREATE,
            400,
            "Unsupported X-Runway-Version '2023-01-01'; this API speaks 2024-11-06.",
        ),
        (
            V,
            {"model": "gen4.5"},
            400,
            "Validation of body failed: 'promptText' must be a non-empty string.",
        ),
        (
            V,
            {**CREATE, "duration": "5"},
            400,
            "Validation of body failed: 'duration' must be an integer number of seconds.",
        ),
    ],
)
def test_bad_creates(
    headers: dict[str, str], body: dict[str, Any], status: int, error: str
) -> None:
    provider, _ = virtual("runway")
    got_status, _, payload = call(
        provider, "POST", "/v1/text_to_video", json_body=body, headers=headers
    )
    assert (got_status, payload["error"]) == (status, error)
    assert [(e.kind, e.status_code) for e in provider.entries] == [("submit", status)]


def test_delete_cancels_a_running_task() -> None:
    provider, clock = virtual("runway")
    _, _, payload = call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)
    clock.advance(10)
    status, _, _ = call(provider, "DELETE", f"/v1/tasks/{payload['id']}", headers=V)
    _, _, task = call(provider, "GET", f"/v1/tasks/{payload['id']}", headers=V)
    assert (status, task["status"], task["cost"]) == (204, "CANCELLED", {"credits": 50})


THROTTLING = """
jobs:
  - timeline: [{status: queued}, {at: 1s, status: processing}, {at: 10s, status: succeeded}]
  - timeline: [{status: queued}, {at: 2s, status: processing}, {at: 5s, status: succeeded}]
concurrency: {max_active_jobs: 1, retry_after: 7s}
"""


def test_a_task_over_the_concurrency_limit_is_accepted_and_throttled() -> None:
    provider, clock = virtual("runway", THROTTLING)
    call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)
    clock.advance(1)
    status, _, payload = call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)
    assert status == 200  # accepted, not a 429
    job_id = payload["id"]

    def shown() -> str:
        return str(call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)[2]["status"])

    states = [shown()]
    for step in (8.9, 0.1, 2.0, 3.0):  # the first task ends at 10 s: this one starts then
        clock.advance(step)
        states.append(shown())
    assert states == ["THROTTLED", "THROTTLED", "PENDING", "RUNNING", "SUCCEEDED"]
    _, _, task = call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)
    assert task["createdAt"] == "2026-01-01T00:00:01.000Z"
    assert [(e.kind, e.status_code, e.job_status) for e in provider.entries[:3]] == [
        ("submit", 200, "queued"),
        ("submit", 200, "queued"),
        ("status", 200, "queued"),
    ]


def test_a_throttled_task_can_be_cancelled() -> None:
    provider, _ = virtual("runway", THROTTLING)
    call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)
    job_id = call(provider, "POST", "/v1/text_to_video", json_body=CREATE, headers=V)[2]["id"]
    assert call(provider, "DELETE", f"/v1/tasks/{job_id}", headers=V)[0] == 204
    assert call(provider, "GET", f"/v1/tasks/{job_id}", headers=V)[2]["status"] == "CANCELLED"


# -- the real SDK ----------------------------------------------------------------------------

runwayml = optional("runwayml")
runway_polling = optional("runwayml.lib.polling")
needs_runwayml = needs("runwayml")


@pytest.fixture(autouse=True)
def fast_waiter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sync waiter sleeps 6 s +/- 1.5 s before every poll (module constants, read per call)."""
    if runway_polling is None:
        return  # no SDK: nothing to speed up
    monkeypatch.setattr(runway_polling, "POLL_TIME", 0.1)
    monkeypatch.setattr(runway_polling, "POLL_JITTER", 0)


def run_sdk(url: str, timeout: float = 10) -> Any:
    client = runwayml.RunwayML(api_key="key_test", base_url=url, default_headers=CLIENT_HEADERS)
    task = client.text_to_video.create(
        model="gen4.5", prompt_text="a cat", ratio="1280:720", duration=5
    )
    done = task.wait_for_task_output(timeout=timeout)
    download(done.output[0])  # what a user does next: download once
    client.close()
    return done


@needs_runwayml
def test_sdk_slow_success() -> None:
    with serve_inprocess("runway", "slow-success") as (provider, url):
        done = run_sdk(url)
        assert done.status == "SUCCEEDED"
        assert unusual(settled(provider)) == [("submit", 200, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_runwayml
def test_sdk_terminal_failure_raises_task_failed() -> None:
    with serve_inprocess("runway", "terminal-failure") as (provider, url):
        with pytest.raises(runwayml.TaskFailedError) as caught:
            run_sdk(url)
        assert caught.value.task_details.failure == (
            "The prompt was rejected by the safety system after generation started."
        )
        assert last_status(settled(provider)) == "failed"
        assert violated(provider) == set()


@needs_runwayml
def test_sdk_transient_5xx_retries() -> None:
    with serve_inprocess("runway", "transient-5xx") as (provider, url):
        assert run_sdk(url).status == "SUCCEEDED"
        assert unusual(settled(provider)) == retried_through_transient_5xx(200)
        assert violated(provider) == set()


@needs_runwayml
def test_sdk_rate_limited_honours_http_date_retry_after() -> None:
    with serve_inprocess("runway", "rate-limited") as (provider, url):
        assert run_sdk(url).status == "SUCCEEDED"
        faults = [e.fault for e in settled(provider) if e.status_code == 429]
        assert faults[:2] == ["throttled-rfc850", "throttled-asctime"]
        assert violated(provider) == set()


@needs_runwayml
def test_finding_sync_waiter_never_stops_on_cancelled() -> None:
    """runwayml 5.24's sync ``wait_for_task_output`` ignores CANCELLED and polls until its timeout."""
    with serve_inprocess("runway", "cancelled") as (provider, url):
        with pytest.raises(runwayml.TaskTimeoutError):
            run_sdk(url, timeout=1.5)
        entries = settled(provider)
        after = [e for e in entries if e.kind == "status" and e.job_status == "cancelled"]
        assert len(after) > 3
        assert violated(provider) == {"stops_at_terminal"}


@needs_runwayml
def test_sdk_waits_through_throttled() -> None:
    """Two tasks, one slot: the second is THROTTLED until the first ends, and
    ``wait_for_task_output`` keeps polling through it (it stops on SUCCEEDED and FAILED only)."""
    with serve_inprocess("runway", THROTTLING) as (provider, url):
        client = runwayml.RunwayML(api_key="key_test", base_url=url, default_headers=CLIENT_HEADERS)
        made = [
            client.text_to_video.create(
                model="gen4.5", prompt_text=f"a cat {n}", ratio="1280:720", duration=5
            )
            for n in (1, 2)
        ]
        # wait for the throttled one first: its first reads come while the first task runs
        done = [task.wait_for_task_output(timeout=10) for task in reversed(made)]
        client.close()
        for task in done:
            download(task.output[0])
        entries = settled(provider)
        assert [task.status for task in done] == ["SUCCEEDED", "SUCCEEDED"]
        first_ends = entries[0].received_at + 10 * SCALE  # the first task's scripted end
        reads = [e for e in entries if e.job_id == done[0].id and e.kind == "status"]
        assert reads[0].received_at < first_ends  # so it was shown THROTTLED
        assert [e.kind for e in entries if e.status_code != 200] == []
        assert violated(provider) == set()
