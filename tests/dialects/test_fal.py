"""The fal dialect: exact wire shapes, and the real ``fal-client`` SDK against the fake."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.clock import DEFAULT_EPOCH as EPOCH
from fakeprovider.dialects import get_dialect
from fakeprovider.http import HttpRequest
from fakeprovider.messages import JobView, Reply, Request
from fakeprovider.scenario import parse_scenario

from .helpers import (
    CLIENT_HEADERS,
    body_of,
    call,
    fal_judge,
    hook_receiver,
    hook_rows,
    hook_scenario,
    planned_messages,
    sent_hooks,
    serve_hooks,
    serve_inprocess,
    settled,
    unusual,
    violated,
    virtual,
)
from .sdk import needs, optional


def test_submit_status_result_and_file() -> None:
    provider, clock = virtual("fal")
    status, headers, payload = call(
        provider,
        "POST",
        "/fal-ai/veo3/text-to-video",
        json_body={"prompt": "a cat"},
        headers={"Authorization": "Key a:b"},
    )
    job_id = payload["request_id"]
    base = f"http://fake.test/fal-ai/veo3/requests/{job_id}"
    assert (status, payload) == (
        200,
        {
            "request_id": job_id,
            "response_url": base,
            "status_url": f"{base}/status",
            "cancel_url": f"{base}/cancel",
            "queue_position": 0,
        },
    )
    assert headers["x-fal-request-id"] == job_id
    urls = {k: v for k, v in payload.items() if k.endswith("_url")}
    path = f"/fal-ai/veo3/requests/{job_id}"
    assert call(provider, "GET", f"{path}/status", query={"logs": "false"})[2] == {
        "request_id": job_id,
        **urls,
        "status": "IN_QUEUE",
        "queue_position": 0,
    }
    clock.advance(10)
    assert call(provider, "GET", f"{path}/status", query={"logs": "false"})[2] == {
        "request_id": job_id,
        **urls,
        "status": "IN_PROGRESS",
        "logs": None,
    }
    status, _, early = call(provider, "GET", path)
    assert (status, early) == (400, {"detail": "Request is still in progress"})
    clock.advance(90)
    status, _, done = call(provider, "GET", f"{path}/status", query={"logs": "true"})
    assert (status, done["status"], done["metrics"]) == (200, "COMPLETED", {"inference_time": 93.0})
    assert (
        done["logs"][0]["message"]
        == "The job succeeded. Download the result once from the content URL."
    )
    status, _, result = call(provider, "GET", path)
    assert (status, result) == (
        200,
        {
            "video": {
                "url": f"http://fake.test/files/{job_id}.mp4",
                "content_type": "video/mp4",
                "file_name": f"{job_id}.mp4",
                "file_size": 1048576,
            }
        },
    )
    assert provider.engine.jobs[0].request == {
        "prompt": "a cat",
        "model": "fal-ai/veo3/text-to-video",
    }
    assert [(e.kind, e.status_code, e.job_status) for e in provider.entries] == [
        ("submit", 200, "queued"),
        ("status", 202, "queued"),
        ("status", 202, "processing"),
        ("content", 400, "processing"),
        ("status", 200, "succeeded"),
        ("content", 200, "succeeded"),
    ]


def test_failed_result_cancel_and_unknown() -> None:
    provider, clock = virtual("fal", "terminal-failure")
    _, _, payload = call(provider, "POST", "/fal-ai/veo3", json_body={"prompt": "a cat"})
    path = f"/fal-ai/veo3/requests/{payload['request_id']}"
    clock.advance(45)
    status, headers, body = call(provider, "GET", path)
    assert (status, body) == (
        422,
        {
            "detail": "The prompt was rejected by the safety system after generation started.",
            "error_type": "content_policy_violation",
        },
    )
    assert headers["x-fal-error-type"] == "content_policy_violation"
    assert call(provider, "PUT", f"{path}/cancel")[:3:2] == (400, {"status": "ALREADY_COMPLETED"})
    assert call(provider, "GET", "/fal-ai/veo3/requests/nope/status")[0] == 404
    assert call(provider, "DELETE", f"{path}/cancel")[0] == 405
    assert (
        call(
            provider,
            "POST",
            "/fal-ai/veo3",
            body=b"{",
            headers={"content-type": "application/json"},
        )[0]
        == 400
    )


# -- the real SDK ----------------------------------------------------------------------------

# -- webhooks --------------------------------------------------------------------------------

EVERY_EVENT = "  events: [job.queued, job.processing, job.succeeded, job.failed, job.cancelled]\n"
#: Every misbehaviour: duplicates, a forged copy and a stale replay of each end.
MISBEHAVING = EVERY_EVENT + (
    "  duplicates: 1\n  duplicate_gap: 50ms\n"
    "  forged: [job.succeeded, job.failed]\n  stale: [job.succeeded, job.failed]\n"
)


def test_webhooks_announce_the_end_only_in_fals_shape_signed_the_fal_way() -> None:
    provider, clock = virtual("fal", hook_scenario(None, MISBEHAVING))
    query = {"fal_webhook": "http://127.0.0.1:9/h"}
    done, failed, cancelled = (
        call(provider, "POST", "/fal-ai/veo3", json_body={"prompt": "a cat"}, query=query)[2][
            "request_id"
        ]
        for _ in range(3)
    )
    assert call(provider, "PUT", f"/fal-ai/veo3/requests/{cancelled}/cancel")[0] == 202
    sends = planned_messages(provider, clock, 1.0)

    assert [(d.event, d.job_id, d.variant) for d, _ in sends] == [
        ("job.cancelled", cancelled, None),
        ("job.cancelled", cancelled, "duplicate"),
        ("job.succeeded", done, None),
        ("job.failed", failed, None),
        ("job.succeeded", done, "duplicate"),
        ("job.failed", failed, "duplicate"),
        ("job.succeeded", done, "forged"),
        ("job.failed", failed, "forged"),
        ("job.succeeded", done, "stale"),
        ("job.failed", failed, "stale"),
    ]
    # the fal headers on every send; the body is what the signature covers
    for delivery, message in sends:
        headers = dict(message.headers)
        signature = headers.pop("x-fal-webhook-signature")
        assert len(bytes.fromhex(signature)) == 64
        sent = int(headers["x-fal-webhook-timestamp"])
        assert headers == {
            "x-fal-webhook-request-id": delivery.job_id,
            "x-fal-webhook-user-id": "fakeprovider",
            "x-fal-webhook-timestamp": str(sent),
            "content-type": "application/json",
        }
        stale = delivery.variant == "stale"
        assert sent == math.floor(EPOCH + delivery.at) - (600 if stale else 0)
    assert body_of(sends[2][1]) == {
        "request_id": done,
        "gateway_request_id": done,
        "status": "OK",
        "payload": {
            "video": {
                "url": f"http://fake.test/files/{done}.mp4",
                "content_type": "video/mp4",
                "file_name": f"{done}.mp4",
                "file_size": 262144,
            }
        },
        "error": None,
    }
    assert body_of(sends[3][1]) == {
        "request_id": failed,
        "gateway_request_id": failed,
        "status": "ERROR",
        "payload": {"detail": "The prompt was refused.", "error_type": "content_policy"},
        "error": "The prompt was refused.",
    }
    assert body_of(sends[0][1]) == {
        "request_id": cancelled,
        "gateway_request_id": cancelled,
        "status": "ERROR",
        "payload": {"detail": "Request was cancelled.", "error_type": "request_cancelled"},
        "error": "Request was cancelled.",
    }


def test_the_fake_serves_its_jwks_and_only_genuine_fresh_sends_verify() -> None:
    pytest.importorskip("cryptography")
    provider, clock = virtual("fal", hook_scenario(None, MISBEHAVING))
    query = {"fal_webhook": "http://127.0.0.1:9/h"}
    for _ in range(2):
        call(provider, "POST", "/fal-ai/veo3", json_body={"prompt": "a cat"}, query=query)
    status, _, keys = call(provider, "GET", "/.well-known/jwks.json")
    assert status == 200
    assert keys == {
        "keys": [
            {
                "kty": "OKP",
                "crv": "Ed25519",
                "x": keys["keys"][0]["x"],
                "kid": "fakeprovider-fal-1",
                "alg": "EdDSA",
                "use": "sig",
            }
        ]
    }
    entry = provider.entries[-1]
    assert (entry.kind, entry.status_code, entry.error_code) == ("unknown", 200, "public_keys")
    sends = planned_messages(provider, clock, 1.0)
    judge = fal_judge(keys, now=lambda: clock.epoch + clock.now())
    verdicts = [(d.variant, judge(m.body, dict(m.headers))) for d, m in sends]
    assert verdicts == [
        (None, None),
        (None, None),
        ("duplicate", None),
        ("duplicate", None),
        ("forged", "no key of the JWKS verifies the signature"),
        ("forged", "no key of the JWKS verifies the signature"),
        ("stale", f"timestamp {math.floor(EPOCH + sends[-2][0].at) - 600} is not within 300 s"),
        ("stale", f"timestamp {math.floor(EPOCH + sends[-1][0].at) - 600} is not within 300 s"),
    ]
    # a body changed in transit no longer verifies
    _, genuine = sends[0]
    assert judge(genuine.body.replace(b"OK", b"ER"), dict(genuine.headers)) == (
        "no key of the JWKS verifies the signature"
    )
    # the JWKS answers GET only
    assert call(provider, "POST", "/.well-known/jwks.json")[0] == 405


def test_a_receiver_that_verifies_accepts_the_genuine_sends_and_rejects_the_rest() -> None:
    pytest.importorskip("cryptography")
    import httpx

    with serve_hooks("fal", hook_scenario(None, MISBEHAVING)) as (provider, server):
        keys = httpx.get(f"{server.url}/.well-known/jwks.json").json()
        with hook_receiver(fal_judge(keys)) as receiver:
            query = {"fal_webhook": receiver.url}
            httpx.post(f"{server.url}/fal-ai/veo3", json={"prompt": "a cat"}, params=query)
            entries = sent_hooks(server)
    assert hook_rows(entries) == [
        ("job.succeeded", "succeeded", None, 1, 204),
        ("job.succeeded", "succeeded", "duplicate", 1, 204),
        ("job.succeeded", "succeeded", "forged", 1, 400),
        ("job.succeeded", "succeeded", "stale", 1, 400),
    ]
    # sends close together can arrive in either order on a loaded machine: the rows above hold
    # the order they were sent in, the receiver's verdicts are compared as a set
    stale = next(h for h in receiver.hooks if (h.verdict or "").startswith("timestamp"))
    assert sorted(h.verdict or "" for h in receiver.hooks) == [
        "",
        "",
        "no key of the JWKS verifies the signature",
        f"timestamp {stale.headers['x-fal-webhook-timestamp']} is not within 300 s",
    ]
    assert violated(provider) == set()


fal_client = optional("fal_client")
fal_module = optional("fal_client.client")
needs_fal_client = needs("fal_client")


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    made = fal_client.SyncClient(key="fal-key-id:fal-key-secret")
    made._client.headers.update(CLIENT_HEADERS)  # SyncClient takes no extra headers
    yield made
    made._client.close()


def subscribe(client: Any, url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    # fal-client has no base-URL option: the queue host is this module constant.
    monkeypatch.setattr(fal_module, "QUEUE_URL_FORMAT", f"{url}/")
    return client.subscribe(
        "fal-ai/veo3", arguments={"prompt": "a cat"}, with_logs=True, interval=0.1
    )


@needs_fal_client
def test_sdk_slow_success(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_inprocess("fal", "slow-success") as (provider, url):
        result = subscribe(client, url, monkeypatch)
        assert result["video"]["file_size"] == 1048576
        assert unusual(settled(provider)) == [("submit", 200, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_fal_client
def test_finding_sdk_fetches_the_result_of_a_failed_request(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fal-client ignores ``error`` in COMPLETED and fetches response_url, where the failure surfaces."""
    with serve_inprocess("fal", "terminal-failure") as (provider, url):
        with pytest.raises(fal_client.FalClientHTTPError) as caught:
            subscribe(client, url, monkeypatch)
        assert (caught.value.status_code, str(caught.value)) == (
            422,
            "The prompt was rejected by the safety system after generation started.",
        )
        assert unusual(settled(provider))[-1] == ("content", 422, None)
        assert violated(provider) == {"no_premature_retrieval"}


@needs_fal_client
def test_finding_sdk_does_not_retry_app_5xx(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """fal-client retries 502-504 only from nginx without x-fal-request-id: an app 503 ends the wait."""
    with serve_inprocess("fal", "transient-5xx") as (provider, url):
        with pytest.raises(fal_client.FalClientHTTPError) as caught:
            subscribe(client, url, monkeypatch)
        assert caught.value.status_code == 503
        assert unusual(settled(provider)) == [
            ("submit", 200, None),
            ("status", 503, "upstream-503"),
        ]
        assert violated(provider) == set()


@needs_fal_client
def test_sdk_cancelled(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_inprocess("fal", "cancelled") as (provider, url):
        with pytest.raises(fal_client.FalClientHTTPError) as caught:
            subscribe(client, url, monkeypatch)
        assert (caught.value.status_code, str(caught.value)) == (400, "Request was cancelled.")
        assert violated(provider) == {"no_premature_retrieval"}


@needs_fal_client
def test_sdk_rate_limited_succeeds(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_inprocess("fal", "rate-limited") as (provider, url):
        assert subscribe(client, url, monkeypatch)["video"]["file_size"] == 262144
        faults = [e.fault for e in settled(provider) if e.status_code == 429]
        assert faults[:2] == ["throttled-rfc850", "throttled-asctime"]


RETRY_AFTER = """
name: throttled-status
description: The first status read is throttled with Retry-After 2 (seconds).
jobs:
  - timeline:
      - status: queued
      - {at: 300ms, status: succeeded}
faults:
  - {name: throttled, route: status, nth: 1, status: 429, retry_after: {delay: 2s, form: seconds}}
expect: {outcome: succeeded, retrievals: 1}
"""


@needs_fal_client
def test_finding_sdk_ignores_retry_after(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """fal-client backs off 0.05-0.15 s after a 429 whatever its Retry-After says."""
    with serve_inprocess("fal", parse_scenario(RETRY_AFTER), time_scale=1.0) as (provider, url):
        assert subscribe(client, url, monkeypatch)["video"]["file_size"] == 262144
        entries = settled(provider)
        throttled = next(e for e in entries if e.status_code == 429)
        retry = entries[entries.index(throttled) + 1]
        assert throttled.retry_after is not None
        assert throttled.retry_after.not_before is not None
        assert retry.received_at < throttled.retry_after.not_before  # sooner than it allowed
        assert violated(provider) == {"honours_retry_after"}


@given(
    job_id=st.text(max_size=8),
    model=st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["fal-ai/veo3", "a/b/c/d"])),
    base_url=st.sampled_from(["http://127.0.0.1:81", "http://x", "https://h\u00e9"]),
    status=st.sampled_from(["queued", "running", "succeeded"]),
    headers=st.sampled_from([(), (("Retry-After", "2"),), (("x-a", "1"), ("x-b", "\u00e9"))]),
)
def test_a_submit_is_rendered_by_its_own_step_as_render_renders_it(
    job_id: str,
    model: str | None,
    base_url: str,
    status: str,
    headers: tuple[tuple[str, str], ...],
) -> None:
    fal = get_dialect("fal")
    submit = fal.renderer("submit")
    assert submit == fal._submit  # type: ignore[attr-defined]
    request = {} if model is None else {"model": model}
    view = JobView(
        job_id, 0, status, 0, 1.0, 1.0, 1.0, 2.0, None, "Q.", request, None, None, None, None
    )
    http = HttpRequest("POST", "/fal-ai/veo3", base_url=base_url)
    submitted = Request(kind="submit", method="POST", path="/fal-ai/veo3")
    reply = Reply(
        seq=1, request=submitted, status_code=200, respond_at=0.0, job=view, headers=headers
    )
    made, rendered = submit(reply, http), fal.render(reply, http)
    assert made == rendered
    assert made.headers[-1] == ("x-fal-request-id", job_id)
