"""The openai-videos dialect: exact wire shapes, and the real ``openai`` SDK against the fake."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from fakeprovider.http import HttpRequest
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import parse_scenario
from fakeprovider.webhooks import verify

from .helpers import (
    CLIENT_HEADERS,
    SECRET,
    body_of,
    call,
    hook_receiver,
    hook_rows,
    hook_scenario,
    last_status,
    openai_judge,
    planned_messages,
    retried_through_transient_5xx,
    sent_hooks,
    serve_hooks,
    serve_inprocess,
    settled,
    unusual,
    violated,
    violations,
    virtual,
)
from .sdk import needs, optional

BOUNDARY = "fakeboundary"


def multipart(**fields: str) -> tuple[bytes, dict[str, str]]:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
        for k, v in fields.items()
    ]
    body = ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()
    return body, {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}


def video(job_id: str, **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": job_id,
        "object": "video",
        "created_at": 1767225600,
        "completed_at": None,
        "error": None,
        "expires_at": None,
        "model": "sora-2",
        "progress": 0,
        "prompt": "a cat",
        "remixed_from_video_id": None,
        "seconds": "4",
        "size": "1280x720",
        "status": "queued",
    }
    out.update(changes)
    return out


def create(provider: FakeProvider) -> str:
    body, headers = multipart(prompt="a cat", model="sora-2", seconds="4", size="1280x720")
    status, _, payload = call(provider, "POST", "/v1/videos", body=body, headers=headers)
    assert status == 200
    return str(payload["id"])


def test_multipart_create_answers_a_video_without_a_poll_hint() -> None:
    """The hint comes on status reads only: the SDK reads it from ``retrieve`` and nothing shows
    OpenAI sending it on create, so the create answer carries none and journals none."""
    provider, _ = virtual("openai-videos")
    body, headers = multipart(prompt="a cat", model="sora-2", seconds="4", size="1280x720")
    status, out_headers, payload = call(provider, "POST", "/v1/videos", body=body, headers=headers)
    assert status == 200
    assert payload == video(payload["id"])
    assert payload["id"].startswith("video_")
    assert "openai-poll-after-ms" not in out_headers
    assert (provider.entries[0].job_status, provider.entries[0].poll_after) == ("queued", None)


def test_status_vocabulary_progress_and_completion() -> None:
    provider, clock = virtual("openai-videos")
    job_id = create(provider)
    clock.advance(50)
    status, headers, payload = call(provider, "GET", f"/v1/videos/{job_id}")
    assert (status, payload) == (200, video(job_id, status="in_progress", progress=35))
    assert headers["openai-poll-after-ms"] == "5000"
    assert provider.entries[-1].poll_after == 5.0
    clock.advance(50)
    status, headers, payload = call(provider, "GET", f"/v1/videos/{job_id}")
    done = video(
        job_id,
        status="completed",
        progress=100,
        completed_at=1767225693,
        expires_at=1767225693 + 86400,
    )
    assert (status, payload) == (200, done)
    assert "openai-poll-after-ms" not in headers
    status, headers, content = call(
        provider, "GET", f"/v1/videos/{job_id}/content", query={"variant": "video"}
    )
    assert status == 200
    assert isinstance(content, bytes)
    assert len(content) == 1048576
    assert [(e.kind, e.status_code, e.job_status) for e in provider.entries] == [
        ("submit", 200, "queued"),
        ("status", 200, "processing"),
        ("status", 200, "succeeded"),
        ("content", 200, "succeeded"),
    ]


def test_delete_cancels_a_running_video_which_then_reads_failed_cancelled() -> None:
    provider, clock = virtual("openai-videos")
    job_id = create(provider)
    clock.advance(10)
    status, _, payload = call(provider, "DELETE", f"/v1/videos/{job_id}")
    assert (status, payload) == (200, {"id": job_id, "object": "video.deleted", "deleted": True})
    status, _, payload = call(provider, "GET", f"/v1/videos/{job_id}")
    assert payload["status"] == "failed"
    assert payload["error"] == {
        "code": "cancelled",
        "message": "The job was cancelled. There is no result.",
    }
    assert [(e.kind, e.job_status) for e in provider.entries] == [
        ("submit", "queued"),
        ("cancel", "cancelled"),
        ("status", "cancelled"),
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "sora-2"}, "'prompt' is required and must be a non-empty string."),
        ({"prompt": "a cat", "seconds": "5"}, "Invalid 'seconds' '5'; expected one of 4, 8, 12."),
    ],
)
def test_malformed_creates_get_openai_errors(fields: dict[str, str], message: str) -> None:
    provider, _ = virtual("openai-videos")
    body, headers = multipart(**fields)
    status, _, payload = call(provider, "POST", "/v1/videos", body=body, headers=headers)
    assert (status, payload) == (
        400,
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_value",
            }
        },
    )
    assert [(e.kind, e.status_code) for e in provider.entries] == [("submit", 400)]


def test_unknown_video_and_not_ready_content() -> None:
    provider, _ = virtual("openai-videos")
    status, _, payload = call(provider, "GET", "/v1/videos/video_nope")
    assert status == 404
    assert payload["error"]["code"] == "job_not_found"
    job_id = create(provider)
    status, _, payload = call(provider, "GET", f"/v1/videos/{job_id}/content")
    assert (status, payload["error"]["code"]) == (409, "job_not_ready")
    status, _, payload = call(
        provider, "GET", f"/v1/videos/{job_id}/content", query={"variant": "gif"}
    )
    assert (status, payload["error"]["code"]) == (400, "invalid_value")


def test_list_is_newest_first() -> None:
    provider, _ = virtual("openai-videos")
    first, second = create(provider), create(provider)
    status, _, payload = call(provider, "GET", "/v1/videos")
    assert status == 200
    assert [v["id"] for v in payload["data"]] == [second, first]
    assert (payload["object"], payload["first_id"], payload["last_id"], payload["has_more"]) == (
        "list",
        second,
        first,
        False,
    )


# -- webhooks --------------------------------------------------------------------------------

EVERY_EVENT = "  events: [job.queued, job.processing, job.succeeded, job.failed, job.cancelled]\n"


def test_webhooks_are_openai_events_for_the_end_of_a_video_only() -> None:
    provider, clock = virtual("openai-videos", hook_scenario("http://127.0.0.1:9/h", EVERY_EVENT))
    done, failed, cancelled = create(provider), create(provider), create(provider)
    assert call(provider, "DELETE", f"/v1/videos/{cancelled}")[0] == 200
    sends = planned_messages(provider, clock, 1.0)

    assert [(d.event, d.job_id, body_of(m)["type"]) for d, m in sends] == [
        ("job.cancelled", cancelled, "video.failed"),
        ("job.succeeded", done, "video.completed"),
        ("job.failed", failed, "video.failed"),
    ]
    delivery, message = sends[1]
    assert body_of(message) == {
        "id": body_of(message)["id"],
        "object": "event",
        "created_at": 1767225600,
        "type": "video.completed",
        "data": {"id": done},
    }
    assert len(body_of(message)["id"]) == len("evt_") + 32
    assert body_of(message)["id"].startswith("evt_")
    assert message.headers["webhook-id"] == delivery.webhook_id
    assert message.headers["content-type"] == "application/json"
    unix = int(message.headers["webhook-timestamp"])
    assert verify(SECRET, message.headers, message.body, now=unix)


def test_webhook_event_ids_are_the_same_on_every_send_of_one_message() -> None:
    block = EVERY_EVENT + "  duplicates: 1\n  forged: [job.succeeded]\n"
    provider, clock = virtual("openai-videos", hook_scenario("http://127.0.0.1:9/h", block))
    create(provider)
    sends = planned_messages(provider, clock, 1.0)
    assert [d.variant for d, _ in sends] == [None, "duplicate", "forged"]
    assert len({m.body for _, m in sends}) == 1
    assert len({m.headers["webhook-signature"] for _, m in sends}) == 3


# -- the real SDK ----------------------------------------------------------------------------

openai = optional("openai")
needs_openai = needs("openai")


def run_sdk(url: str) -> tuple[Any, Any]:
    client = openai.OpenAI(api_key="sk-test", base_url=f"{url}/v1", default_headers=CLIENT_HEADERS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # videos.* is @deprecated in 3.57
        video_obj = client.videos.create_and_poll(
            prompt="a cat", model="sora-2", seconds="4", size="1280x720"
        )
        content = (
            client.videos.download_content(video_obj.id).read()
            if video_obj.status == "completed"
            else None
        )
    return video_obj, content


@needs_openai
def test_sdk_slow_success() -> None:
    with serve_inprocess("openai-videos", "slow-success") as (provider, url):
        video_obj, content = run_sdk(url)
        assert (video_obj.status, video_obj.progress, len(content)) == ("completed", 100, 1048576)
        entries = settled(provider)
        assert unusual(entries) == [("submit", 200, None), ("content", 200, None)]
        # create_and_poll reads the status at once after create: the create answer carries no
        # hint (the provider sends it on status reads only), so that read is not judged; later
        # reads wait the hint the status answers gave.
        assert violated(provider) == set()


@needs_openai
def test_sdk_terminal_failure_returns_failed_with_the_error() -> None:
    with serve_inprocess("openai-videos", "terminal-failure") as (provider, url):
        video_obj, content = run_sdk(url)
        assert (video_obj.status, content) == ("failed", None)
        assert (video_obj.error.code, video_obj.error.message) == (
            "content_policy_violation",
            "The prompt was rejected by the safety system after generation started.",
        )
        assert last_status(settled(provider)) == "failed"
        assert violated(provider) == set()


@needs_openai
def test_sdk_transient_5xx_retries_with_retry_after() -> None:
    with serve_inprocess("openai-videos", "transient-5xx") as (provider, url):
        video_obj, content = run_sdk(url)
        assert (video_obj.status, len(content)) == ("completed", 262144)
        assert unusual(settled(provider)) == retried_through_transient_5xx(200)
        assert violated(provider) == set()


@needs_openai
def test_sdk_rate_limited_honours_http_date_retry_after() -> None:
    with serve_inprocess("openai-videos", "rate-limited") as (provider, url):
        video_obj, content = run_sdk(url)
        assert (video_obj.status, len(content)) == ("completed", 262144)
        faults = [e.fault for e in settled(provider) if e.status_code == 429]
        assert faults[:2] == ["throttled-rfc850", "throttled-asctime"]
        assert violated(provider) == set()


@needs_openai
def test_sdk_cancelled_returns_failed_cancelled() -> None:
    with serve_inprocess("openai-videos", "cancelled") as (provider, url):
        video_obj, content = run_sdk(url)
        assert (video_obj.status, video_obj.error.code, content) == ("failed", "cancelled", None)
        assert last_status(settled(provider)) == "cancelled"
        assert violated(provider) == set()


HINT_CHANGES = """
name: hint-changes
description: The first poll hint is 50 ms; once processing, the hint is 1 s.
jobs:
  - poll_after: 50ms
    timeline:
      - status: queued
      - {at: 100ms, status: processing, poll_after: 1s}
      - {at: 1500ms, status: succeeded}
expect: {outcome: succeeded, retrievals: 0}
"""


@needs_openai
def test_finding_sdk_reads_the_poll_hint_only_once() -> None:
    """openai 3.57 ``poll()`` keeps the first openai-poll-after-ms it saw: later hints are ignored."""
    with serve_inprocess("openai-videos", parse_scenario(HINT_CHANGES), time_scale=1.0) as (
        provider,
        url,
    ):
        client = openai.OpenAI(
            api_key="sk-test", base_url=f"{url}/v1", default_headers=CLIENT_HEADERS
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            video_obj = client.videos.create_and_poll(prompt="a cat")
        assert video_obj.status == "completed"
        entries = settled(provider)
        processing = [e for e in entries if e.kind == "status" and e.job_status == "processing"]
        assert len(processing) > 10  # a 1 s hint over 1.4 s would allow two
        assert {e.poll_after for e in processing} == {1.0}
        assert violated(provider) == {"honours_poll_after"}


@needs_openai
def test_sdk_unwraps_every_genuine_webhook_and_refuses_forged_and_stale_ones() -> None:
    hooks = openai.OpenAI(api_key="sk-test", webhook_secret=SECRET).webhooks
    judge = openai_judge(SECRET)
    block = EVERY_EVENT + (
        "  forged: [job.succeeded]\n  stale: [job.succeeded]\n  duplicate_gap: 100ms\n"
    )
    with (
        hook_receiver(judge) as receiver,
        serve_hooks("openai-videos", hook_scenario(receiver.url, block)) as (provider, server),
    ):
        client = openai.OpenAI(api_key="sk-test", base_url=f"{server.url}/v1")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            done = client.videos.create(prompt="a cat", model="sora-2", seconds="4")
            failed = client.videos.create(prompt="a dog", model="sora-2", seconds="4")
        entries = sent_hooks(server)

    events = [hooks.unwrap(h.body, h.headers) for h in receiver.accepted()]
    assert sorted((e.type, e.data.id, e.object) for e in events) == [
        ("video.completed", done.id, "event"),
        ("video.failed", failed.id, "event"),
    ]
    assert [h.verdict for h in receiver.hooks if h.verdict is not None] == [
        "The given webhook signature does not match the expected signature",
        "Webhook timestamp is too old",
    ]
    assert hook_rows([e for e in entries if e.job_id == done.id]) == [
        ("job.succeeded", "succeeded", None, 1, 204),
        ("job.succeeded", "succeeded", "forged", 1, 400),
        ("job.succeeded", "succeeded", "stale", 1, 400),
    ]
    assert hook_rows([e for e in entries if e.job_id == failed.id]) == [
        ("job.failed", "failed", None, 1, 204),
    ]
    assert [v for v in violations(provider) if v.invariant == "webhook_ack"] == []


def test_a_multipart_field_that_decodes_to_a_lone_surrogate_is_refused() -> None:
    provider = FakeProvider("quick-preview", dialect="openai-videos")
    body = (
        b'--b\r\nContent-Disposition: form-data; name="prompt"\r\n'
        b"Content-Type: text/plain; charset=unicode_escape\r\n\r\n\\ud800\r\n"
        b'--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nsora-2\r\n--b--\r\n'
    )
    headers = {"content-type": "multipart/form-data; boundary=b"}
    _, response = provider.receive(HttpRequest("POST", "/v1/videos", headers=headers, body=body))
    assert (response.status, response.body) == (
        400,
        b'{"error":{"message":"The body holds a lone surrogate (U+D800); send valid Unicode '
        b'text.","type":"invalid_request_error","param":null,"code":"invalid_value"}}',
    )
