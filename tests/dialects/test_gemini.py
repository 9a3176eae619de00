"""The gemini dialect (Gemini API Interactions video): exact wire shapes, and the real
``google-genai`` SDK's ``client.interactions`` against the fake."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

from fakeprovider.messages import video_bytes

from .helpers import (
    CLIENT_HEADERS,
    SECRET,
    body_of,
    call,
    download,
    hook_receiver,
    hook_rows,
    hook_scenario,
    last_status,
    planned_messages,
    sent_hooks,
    serve_hooks,
    serve_inprocess,
    settled,
    standard_webhooks_judge,
    unusual,
    violated,
    violations,
    virtual,
)
from .sdk import needs, optional

MODEL = "veo-3.1-generate-preview"
CREATE = {"model": MODEL, "input": "a cat", "background": True}
CREATED = "2026-01-01T00:00:00.000Z"


def interaction(job_id: str, **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": job_id,
        "status": "queued",
        "model": MODEL,
        "created": CREATED,
        "updated": CREATED,
    }
    out.update(changes)
    return out


def test_an_interaction_through_its_states_carries_the_video_inline() -> None:
    provider, clock = virtual("gemini")
    status, headers, created = call(provider, "POST", "/v1beta/interactions", json_body=CREATE)
    job_id = created["id"]
    assert job_id.startswith("v1_")
    assert (status, created) == (200, interaction(job_id))
    clock.advance(10)
    status, headers, running = call(provider, "GET", f"/v1beta/interactions/{job_id}")
    assert (status, running) == (
        200,
        interaction(job_id, status="in_progress", updated="2026-01-01T00:00:04.000Z"),
    )
    assert not any("poll" in name for name in headers)  # the API sends no poll hint
    clock.advance(90)
    status, _, done = call(provider, "GET", f"/v1/interactions/{job_id}", query={"stream": "false"})
    video = base64.b64encode(video_bytes(job_id, 1048576)).decode()
    assert (status, done) == (
        200,
        interaction(
            job_id,
            status="completed",
            updated="2026-01-01T00:01:33.000Z",
            steps=[
                {
                    "type": "model_output",
                    "content": [{"type": "video", "data": video, "mime_type": "video/mp4"}],
                }
            ],
        ),
    )
    assert [(e.kind, e.job_status, e.poll_after, e.inline_result) for e in provider.entries] == [
        ("submit", "queued", None, None),
        ("status", "processing", None, None),
        ("status", "succeeded", None, True),
    ]


def test_delivery_by_uri_is_downloaded_from_the_fake_and_that_is_the_retrieval() -> None:
    provider, clock = virtual("gemini")
    create = {**CREATE, "response_format": {"type": "video", "delivery": "uri"}}
    _, _, created = call(provider, "POST", "/v1beta/interactions", json_body=create)
    job_id = created["id"]
    clock.advance(100)
    done = call(provider, "GET", f"/v1beta/interactions/{job_id}")[2]
    assert done["steps"][0]["content"] == [
        {"type": "video", "uri": f"http://fake.test/files/{job_id}.mp4", "mime_type": "video/mp4"}
    ]
    assert call(provider, "GET", f"/files/{job_id}.mp4")[2] == video_bytes(job_id, 1048576)
    assert [(e.kind, e.inline_result) for e in provider.entries] == [
        ("submit", None),
        ("status", None),
        ("content", None),
    ]


def test_failed_cancelled_and_incomplete_interactions() -> None:
    provider, clock = virtual("gemini", "terminal-failure")
    _, _, created = call(provider, "POST", "/v1beta/interactions", json_body=CREATE)
    clock.advance(100)
    failed = call(provider, "GET", f"/v1beta/interactions/{created['id']}")[2]
    assert (failed["status"], failed["errors"], "steps" in failed) == (
        "failed",
        [
            {
                "code": "content_policy_violation",
                "message": "The prompt was rejected by the safety system after generation started.",
            }
        ],
        False,
    )
    provider, clock = virtual("gemini", "cancelled")
    _, _, created = call(provider, "POST", "/v1beta/interactions", json_body=CREATE)
    clock.advance(40)
    assert (
        call(provider, "GET", f"/v1beta/interactions/{created['id']}")[2]["status"] == "cancelled"
    )
    provider, clock = virtual("gemini", "completed-with-errors")
    _, _, created = call(provider, "POST", "/v1beta/interactions", json_body=CREATE)
    clock.advance(600)
    partial = call(provider, "GET", f"/v1beta/interactions/{created['id']}")[2]
    assert (partial["status"], partial["errors"][0]["code"], len(partial["steps"])) == (
        "incomplete",
        "incomplete",
        1,
    )


def test_cancel_and_delete() -> None:
    provider, _ = virtual("gemini")
    _, _, first = call(provider, "POST", "/v1beta/interactions", json_body=CREATE)
    status, _, cancelled = call(provider, "POST", f"/v1beta/interactions/{first['id']}/cancel")
    assert (status, cancelled["status"]) == (200, "cancelled")
    # cancelling an ended interaction is refused (400, as Google answers FAILED_PRECONDITION:
    # the SDK would retry a 409); deleting it is not
    status, _, refused = call(provider, "POST", f"/v1beta/interactions/{first['id']}/cancel")
    assert (status, refused["error"]["code"]) == (400, "FAILED_PRECONDITION")
    assert provider.entries[-1].status_code == 400
    assert call(provider, "DELETE", f"/v1beta/interactions/{first['id']}")[:3:2] == (200, {})
    _, _, second = call(provider, "POST", "/v1beta/interactions", json_body=CREATE)
    assert call(provider, "DELETE", f"/v1beta/interactions/{second['id']}")[:3:2] == (200, {})
    assert provider.engine.jobs[1].status == "cancelled"
    assert [e.kind for e in provider.entries] == [
        "submit",
        "cancel",
        "cancel",
        "cancel",
        "submit",
        "cancel",
    ]


@pytest.mark.parametrize(
    ("body", "query", "message"),
    [
        (
            {"model": MODEL, "input": "a cat"},
            {},
            "Video generation runs in the background: send background: true and poll the"
            " interaction.",
        ),
        (
            {**CREATE, "stream": True},
            {},
            "fakeprovider does not stream interactions: send stream: false.",
        ),
        (
            {"input": "a cat", "background": True},
            {},
            "'model' is required (for example 'veo-3.1-generate-preview').",
        ),
        (
            {"agent": "deep-research", "input": "a cat", "background": True},
            {},
            "fakeprovider serves model interactions, not agents.",
        ),
        (
            {"model": MODEL, "input": "  ", "background": True},
            {},
            "'input' is required: a prompt string or content with text.",
        ),
        (
            {**CREATE, "response_format": [{"type": "video", "delivery": "email"}]},
            {},
            "Invalid response_format delivery 'email'; expected one of inline, uri.",
        ),
    ],
)
def test_bad_creates_are_400_invalid_argument(
    body: dict[str, Any], query: dict[str, str], message: str
) -> None:
    provider, _ = virtual("gemini")
    status, _, payload = call(provider, "POST", "/v1beta/interactions", json_body=body)
    assert (status, payload) == (400, {"error": {"code": "INVALID_ARGUMENT", "message": message}})
    assert provider.entries[0].kind == "submit"


def test_content_input_and_streamed_reads() -> None:
    provider, _ = virtual("gemini")
    content = [{"type": "text", "text": "a cat"}, {"type": "text", "text": "on a boat"}]
    _, _, created = call(
        provider, "POST", "/v1beta/interactions", json_body={**CREATE, "input": content}
    )
    assert provider.engine.jobs[0].request["prompt"] == "a cat on a boat"
    status, _, refused = call(
        provider, "GET", f"/v1beta/interactions/{created['id']}", query={"stream": "true"}
    )
    assert (status, refused["error"]["message"]) == (
        400,
        "fakeprovider does not stream interactions: read with stream=false.",
    )
    status, _, missing = call(provider, "GET", "/v1beta/interactions/v1_nope")
    assert (status, missing["error"]["code"]) == (404, "NOT_FOUND")


# -- webhooks (virtual time) -------------------------------------------------------------------


def test_webhooks_are_interaction_events_signed_per_standard_webhooks() -> None:
    every = "  events: [job.queued, job.processing, job.succeeded, job.failed, job.cancelled]\n"
    provider, clock = virtual("gemini", hook_scenario(None, every))  # type: ignore[arg-type]
    hooks = {"uris": ["http://127.0.0.1:9/hooks"], "user_metadata": {"order": 7}}
    for _ in range(3):
        call(
            provider, "POST", "/v1beta/interactions", json_body={**CREATE, "webhook_config": hooks}
        )
    sent = planned_messages(provider, clock, 20.0)
    events = [(body_of(m)["type"], body_of(m)["data"]["status"]) for _, m in sent]
    assert events == [
        ("interaction.completed", "completed"),
        ("interaction.failed", "failed"),
        ("interaction.completed", "completed"),
    ]
    delivery, message = sent[0]
    assert delivery.url == "http://127.0.0.1:9/hooks"
    assert body_of(message) == {
        "type": "interaction.completed",
        "timestamp": "2026-01-01T00:00:00.300Z",
        "data": {"id": delivery.job_id, "status": "completed", "user_metadata": {"order": 7}},
    }
    judge = standard_webhooks_judge(SECRET, tolerance=10**10)
    assert judge(message.body, {k.lower(): v for k, v in message.headers.items()}) is None


# -- the real SDK ------------------------------------------------------------------------------

genai = optional("google.genai")
needs_genai = needs("google.genai")
errors = optional("google.genai._interactions")  # the interactions' error classes
types = optional("google.genai.types")


def client_for(url: str, **options: Any) -> Any:
    return genai.Client(
        api_key="sk-test-fakeprovider",
        http_options=types.HttpOptions(base_url=f"{url}/", headers=CLIENT_HEADERS, **options),
    )


def run_sdk(url: str, *, reread: bool = False, **create: Any) -> Any:
    """``client.interactions`` has no waiter: poll ``interactions.get`` every 0.1 s until the
    status is no longer queued or in_progress (the loop the Gemini docs show).

    ``reread``: a buggy client that reads the finished interaction once more, which downloads
    the inline video a second time."""
    client = client_for(url)
    try:
        made = client.interactions.create(model=MODEL, input="a cat", background=True, **create)
        while made.status in ("queued", "in_progress"):
            time.sleep(0.1)
            made = client.interactions.get(made.id)
        if reread:
            made = client.interactions.get(made.id)
        return made
    finally:
        client.close()


@needs_genai
def test_sdk_slow_success_reads_the_video_inline_once() -> None:
    with serve_inprocess("gemini", "slow-success") as (provider, url):
        done = run_sdk(url)
        assert (done.status, done.output_video.mime_type) == ("completed", "video/mp4")
        assert base64.b64decode(done.output_video.data) == video_bytes(done.id, 1048576)
        entries = settled(provider)
        assert unusual(entries) == [("submit", 200, None)]
        # the status read that shows it completed is the retrieval: retrievals: 1 holds
        assert [e.seq for e in entries if e.inline_result] == [entries[-1].seq]
        assert violated(provider) == set()


@needs_genai
def test_sdk_uri_delivery_downloads_once() -> None:
    with serve_inprocess("gemini", "quick-preview") as (provider, url):
        done = run_sdk(url, response_format={"type": "video", "delivery": "uri"})
        assert len(download(done.output_video.uri)) == 131072
        assert unusual(settled(provider)) == [("submit", 200, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_genai
def test_a_client_that_rereads_the_finished_interaction_retrieves_the_video_twice() -> None:
    with serve_inprocess("gemini", "quick-preview") as (provider, url):
        run_sdk(url, reread=True)
        entries = settled(provider)
        first, second = (e for e in entries if e.inline_result)
        assert violated(provider) == {"single_retrieval", "stops_at_terminal"}
        [twice] = [v for v in violations(provider) if v.invariant == "single_retrieval"]
        assert twice.message == (
            f"status read #{second.seq} for job {second.job_id} at"
            f" {second.received_at:.3f} s received the result inline again; #{first.seq} had"
            f" already retrieved it at {first.received_at:.3f} s and it may be fetched once"
        )


@needs_genai
def test_sdk_terminal_failure_and_cancelled() -> None:
    with serve_inprocess("gemini", "terminal-failure") as (provider, url):
        done = run_sdk(url)
        assert (done.status, done.errors[0].code, done.output_video) == (
            "failed",
            "content_policy_violation",
            None,
        )
        assert violated(provider) == set()
    with serve_inprocess("gemini", "cancelled") as (provider, url):
        assert run_sdk(url).status == "cancelled"
        assert last_status(settled(provider)) == "cancelled"
        assert violated(provider) == set()


@needs_genai
def test_sdk_retries_5xx_after_their_retry_after() -> None:
    """The transport retries 408/409/429/5xx (4 retries by default) and waits Retry-After."""
    with serve_inprocess("gemini", "transient-5xx") as (provider, url):
        assert run_sdk(url).status == "completed"
        entries = settled(provider)
        assert unusual(entries) == [
            ("submit", 200, None),
            ("status", 503, "upstream-503"),
            ("status", 503, "upstream-503"),
        ]
        assert violated(provider) == set()


@needs_genai
def test_sdk_honours_retry_after_ms() -> None:
    scenario = """
name: throttled-ms
description: The first status read is throttled with retry-after-ms 600.
jobs:
  - timeline:
      - status: queued
      - {at: 300ms, status: succeeded}
faults:
  - {name: throttled, route: status, nth: 1, status: 429, retry_after: {delay: 600ms, form: ms}}
expect: {outcome: succeeded, retrievals: 1}
"""
    from fakeprovider.scenario import parse_scenario

    with serve_inprocess("gemini", parse_scenario(scenario), time_scale=1.0) as (provider, url):
        assert run_sdk(url).status == "completed"
        entries = settled(provider)
        throttled, retry = entries[1], entries[2]
        assert (throttled.status_code, throttled.retry_after.header) == (429, "retry-after-ms")  # type: ignore[union-attr]
        assert retry.received_at - throttled.completed_at >= 0.6  # type: ignore[operator]
        assert violated(provider) == set()


@needs_genai
def test_finding_a_lost_create_is_not_retried_although_connection_retries_are_on() -> None:
    """The retry loop retries transport errors (``retry_connection_errors=True``), but the
    SDK's ``CompatErrorHook`` has already wrapped the ``httpx`` error into
    ``APIConnectionError``, which the loop does not recognise: the create raises. Safe (no
    second job), and the same for every method: a dropped status read is not retried either."""
    with serve_inprocess("gemini", "ambiguous-submit") as (provider, url):
        with pytest.raises(errors.APIConnectionError):
            run_sdk(url)
        entries = settled(provider)
        assert [(e.kind, e.dropped) for e in entries] == [("submit", "lose_response")]
        assert violated(provider) == set()


@needs_genai
def test_sdk_refuses_a_revoked_key_without_retrying() -> None:
    with serve_inprocess("gemini", "auth-revoked") as (provider, url):
        with pytest.raises(errors.APIError) as caught:
            run_sdk(url)
        assert caught.value.status_code == 401
        assert violated(provider) == set()


@needs_genai
def test_sdk_receiver_verifies_every_genuine_webhook_and_refuses_forged_and_stale_ones() -> None:
    block = (
        "  events: [job.succeeded, job.failed]\n"
        "  forged: [job.succeeded]\n  stale: [job.succeeded]\n  duplicate_gap: 100ms\n"
    )
    with (
        hook_receiver(standard_webhooks_judge(SECRET)) as receiver,
        serve_hooks("gemini", hook_scenario(None, block)) as (provider, server),
    ):
        client = client_for(server.url)
        made = [
            client.interactions.create(
                model=MODEL,
                input=prompt,
                background=True,
                webhook_config={"uris": [receiver.url], "user_metadata": {"n": n}},
            )
            for n, prompt in enumerate(("a cat", "a dog"))
        ]
        client.close()
        entries = sent_hooks(server)
    accepted = sorted((h.json["data"]["id"], h.json["type"]) for h in receiver.accepted())
    assert accepted == sorted(
        [(made[0].id, "interaction.completed"), (made[1].id, "interaction.failed")]
    )
    assert sorted(hook_rows(entries), key=str) == sorted(
        [
            ("job.succeeded", "succeeded", None, 1, 204),
            ("job.succeeded", "succeeded", "forged", 1, 400),
            ("job.succeeded", "succeeded", "stale", 1, 400),
            ("job.failed", "failed", None, 1, 204),
        ],
        key=str,
    )
    assert [v for v in violations(provider) if v.invariant == "webhook_ack"] == []
