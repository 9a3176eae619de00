"""The luma dialect: exact wire shapes, and the real ``lumaai`` SDK against the fake."""

from __future__ import annotations

import time
from typing import Any

from .helpers import (
    CLIENT_HEADERS,
    body_of,
    call,
    download,
    hook_receiver,
    hook_rows,
    hook_scenario,
    last_status,
    planned_messages,
    retried_through_transient_5xx,
    sent_hooks,
    serve_hooks,
    serve_inprocess,
    settled,
    unusual,
    violated,
    virtual,
)
from .sdk import needs, optional

P = "/dream-machine/v1"
CREATE = {"model": "ray-2", "prompt": "a cat", "aspect_ratio": "16:9", "duration": "5s"}


def generation(job_id: str, **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": job_id,
        "generation_type": "video",
        "state": "queued",
        "failure_reason": None,
        "created_at": "2026-01-01T00:00:00.000Z",
        "assets": None,
        "model": "ray-2",
        "request": CREATE,
    }
    out.update(changes)
    return out


def test_generation_through_its_states() -> None:
    provider, clock = virtual("luma")
    status, _, payload = call(provider, "POST", f"{P}/generations/video", json_body=CREATE)
    job_id = payload["id"]
    assert (status, payload) == (201, generation(job_id))
    clock.advance(10)
    assert call(provider, "GET", f"{P}/generations/{job_id}")[2] == generation(
        job_id, state="dreaming"
    )
    clock.advance(90)
    assert call(provider, "GET", f"{P}/generations/{job_id}")[2] == generation(
        job_id, state="completed", assets={"video": f"http://fake.test/files/{job_id}.mp4"}
    )
    listed = call(provider, "GET", f"{P}/generations", query={"limit": "10"})[2]
    assert (listed["count"], listed["has_more"], listed["generations"][0]["id"]) == (
        1,
        False,
        job_id,
    )
    assert call(provider, "DELETE", f"{P}/generations/{job_id}")[:2] == (204, {})


def test_bad_create_and_cancelled_state() -> None:
    provider, clock = virtual("luma", "cancelled")
    assert call(provider, "POST", f"{P}/generations", json_body={"prompt": "a cat"})[:3:2] == (
        400,
        {"detail": "'model' is required (for example 'ray-2')."},
    )
    _, _, payload = call(provider, "POST", f"{P}/generations", json_body=CREATE)
    clock.advance(40)
    got = call(provider, "GET", f"{P}/generations/{payload['id']}")[2]
    assert (got["state"], got["failure_reason"]) == (
        "failed",
        "cancelled: The job was cancelled by the provider (quota exhausted).",
    )


# -- the real SDK ----------------------------------------------------------------------------

# -- callbacks -------------------------------------------------------------------------------

EVERY_EVENT = "  events: [job.queued, job.processing, job.succeeded, job.failed, job.cancelled]\n"
#: Every misbehaviour: unsigned providers get duplicates but no forged or stale sends.
MISBEHAVING = EVERY_EVENT + (
    "  duplicates: 1\n  duplicate_gap: 50ms\n"
    "  forged: [job.succeeded, job.failed]\n  stale: [job.succeeded, job.failed]\n"
)


def test_callbacks_post_the_generation_for_every_change_unsigned() -> None:
    provider, clock = virtual("luma", hook_scenario(None, MISBEHAVING))
    body = {**CREATE, "callback_url": "http://127.0.0.1:9/h"}
    job_id = call(provider, "POST", f"{P}/generations/video", json_body=body)[2]["id"]
    sends = planned_messages(provider, clock, 1.0)

    assert [(d.event, d.variant, body_of(m)["state"]) for d, m in sends] == [
        ("job.queued", None, "queued"),
        ("job.queued", "duplicate", "queued"),
        ("job.processing", None, "dreaming"),
        ("job.processing", "duplicate", "dreaming"),
        ("job.succeeded", None, "completed"),
        ("job.succeeded", "duplicate", "completed"),
    ]
    assert [dict(m.headers) for _, m in sends] == [{"content-type": "application/json"}] * 6
    _, _, shown = call(provider, "GET", f"{P}/generations/{job_id}")
    assert (
        body_of(sends[-1][1])
        == shown
        == generation(
            job_id,
            state="completed",
            assets={"video": f"http://fake.test/files/{job_id}.mp4"},
            request=body,
        )
    )


lumaai = optional("lumaai")
needs_lumaai = needs("lumaai")


def run_sdk(url: str) -> Any:
    """lumaai has no waiter: poll generations.get every 0.1 s, then download a completed video."""
    client = lumaai.LumaAI(
        auth_token="luma-test", base_url=f"{url}{P}", default_headers=CLIENT_HEADERS
    )
    made = client.generations.create(
        model="ray-2", prompt="a cat", aspect_ratio="16:9", duration="5s"
    )
    while made.state not in ("completed", "failed"):
        time.sleep(0.1)
        made = client.generations.get(made.id)
    client.close()
    if made.state == "completed":
        download(made.assets.video)
    return made


@needs_lumaai
def test_sdk_slow_success() -> None:
    with serve_inprocess("luma", "slow-success") as (provider, url):
        assert run_sdk(url).state == "completed"
        assert unusual(settled(provider)) == [("submit", 201, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_lumaai
def test_sdk_terminal_failure() -> None:
    with serve_inprocess("luma", "terminal-failure") as (provider, url):
        made = run_sdk(url)
        assert (made.state, made.failure_reason) == (
            "failed",
            "The prompt was rejected by the safety system after generation started.",
        )
        assert violated(provider) == set()


@needs_lumaai
def test_sdk_transient_5xx_retries() -> None:
    with serve_inprocess("luma", "transient-5xx") as (provider, url):
        assert run_sdk(url).state == "completed"
        assert unusual(settled(provider)) == retried_through_transient_5xx(201)
        assert violated(provider) == set()


@needs_lumaai
def test_sdk_rate_limited() -> None:
    with serve_inprocess("luma", "rate-limited") as (provider, url):
        assert run_sdk(url).state == "completed"
        assert violated(provider) == set()


@needs_lumaai
def test_sdk_cancelled_reads_failed() -> None:
    with serve_inprocess("luma", "cancelled") as (provider, url):
        assert run_sdk(url).state == "failed"
        assert last_status(settled(provider)) == "cancelled"
        assert violated(provider) == set()


@needs_lumaai
def test_sdk_callbacks_parse_as_generations() -> None:
    with (
        hook_receiver(lambda body, headers: None) as receiver,
        serve_hooks("luma", hook_scenario(None, MISBEHAVING)) as (_, server),
    ):
        client = lumaai.LumaAI(auth_token="luma-test", base_url=f"{server.url}{P}")
        made = client.generations.create(model="ray-2", prompt="a cat", callback_url=receiver.url)
        entries = sent_hooks(server)
        client.close()

    # sends 50 ms apart can arrive in either order on a loaded machine: the journal's rows below
    # hold the order they were sent in, the receiver's are taken in the state's order
    received = [lumaai.types.Generation(**h.json) for h in receiver.hooks]
    states = sorted(received, key=lambda g: ["queued", "dreaming", "completed"].index(g.state))
    assert [(g.id, g.state) for g in states] == [
        (made.id, "queued"),
        (made.id, "queued"),
        (made.id, "dreaming"),
        (made.id, "dreaming"),
        (made.id, "completed"),
        (made.id, "completed"),
    ]
    assert states[-1].assets is not None
    assert states[-1].assets.video == f"{server.url}/files/{made.id}.mp4"
    assert hook_rows(entries) == [
        ("job.queued", "queued", None, 1, 204),
        ("job.queued", "queued", "duplicate", 1, 204),
        ("job.processing", "processing", None, 1, 204),
        ("job.processing", "processing", "duplicate", 1, 204),
        ("job.succeeded", "succeeded", None, 1, 204),
        ("job.succeeded", "succeeded", "duplicate", 1, 204),
    ]
