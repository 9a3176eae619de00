"""The replicate dialect: exact wire shapes, and the real ``replicate`` SDK against the fake."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fakeprovider.scenario import parse_scenario
from tests.thorough import thorough

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
    replicate_judge,
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

PATH = "/v1/models/google/veo-3/predictions"


def prediction(job_id: str, **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": job_id,
        "model": "google/veo-3",
        "version": "hidden",
        "input": {"prompt": "a cat"},
        "logs": "",
        "output": None,
        "data_removed": False,
        "error": None,
        "status": "starting",
        "created_at": "2026-01-01T00:00:00.000Z",
        "started_at": None,
        "completed_at": None,
        "urls": {
            "get": f"http://fake.test/v1/predictions/{job_id}",
            "cancel": f"http://fake.test/v1/predictions/{job_id}/cancel",
        },
    }
    out.update(changes)
    return out


def test_create_with_prefer_wait_answers_starting_when_the_wait_runs_out() -> None:
    provider, clock = virtual("replicate")
    status, _, payload = call(
        provider,
        "POST",
        PATH,
        json_body={"input": {"prompt": "a cat"}},
        headers={"Prefer": "wait=5"},
    )
    job_id = payload["id"]
    # held 5 s: the job is processing by then, and a wait that runs out says 'starting'
    assert (status, payload) == (
        201,
        prediction(
            job_id,
            logs="The job is processing and NOT complete. Do not report success. "
            "Check status_url again after at least 5 seconds.",
            started_at="2026-01-01T00:00:00.000Z",
        ),
    )
    assert len(job_id) == 26
    assert clock.now() == 5.0
    clock.advance(100)
    _, _, payload = call(provider, "GET", f"/v1/predictions/{job_id}")
    assert payload == prediction(
        job_id,
        status="succeeded",
        logs="The job succeeded. Download the result once from the content URL.",
        output=f"http://fake.test/files/{job_id}.mp4",
        started_at="2026-01-01T00:00:00.000Z",
        completed_at="2026-01-01T00:01:33.000Z",
        metrics={"predict_time": 93.0},
    )
    # A cancel after the end answers the prediction as it is.
    status, _, payload = call(provider, "POST", f"/v1/predictions/{job_id}/cancel")
    assert (status, payload["status"]) == (200, "succeeded")
    assert [(e.kind, e.status_code, e.job_status) for e in provider.entries] == [
        ("submit", 201, "processing"),
        ("status", 200, "succeeded"),
        ("cancel", 200, "succeeded"),
    ]
    assert provider.engine.jobs[0].request["model"] == "google/veo-3"


def test_create_with_prefer_wait_holds_until_the_job_ends() -> None:
    provider, clock = virtual("replicate", "quick-preview")
    status, _, payload = call(
        provider, "POST", PATH, json_body={"input": {"prompt": "a cat"}}, headers={"Prefer": "wait"}
    )
    job_id = payload["id"]
    assert (status, payload["status"], payload["completed_at"], payload["output"]) == (
        201,
        "succeeded",
        "2026-01-01T00:00:12.000Z",
        f"http://fake.test/files/{job_id}.mp4",
    )
    entry = provider.entries[0]
    # answered when the job ended at 12 s, well inside the 60 s a bare 'wait' allows
    assert (entry.received_at, entry.response_started_at, entry.job_status) == (
        0.0,
        12.0,
        "succeeded",
    )
    assert clock.now() == 12.0


def test_create_without_prefer_answers_at_once() -> None:
    provider, clock = virtual("replicate")
    status, _, payload = call(provider, "POST", PATH, json_body={"input": {"prompt": "a cat"}})
    assert (status, payload["status"], payload["started_at"], clock.now()) == (
        201,
        "starting",
        None,
        0.0,
    )


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "detail"),
    [
        (PATH, {"input": "a cat"}, {}, 422, "input: 'input' is required and must be an object."),
        (
            "/v1/predictions",
            {"input": {}},
            {},
            422,
            "version: 'version' is required and must be a string.",
        ),
        (
            PATH,
            {"input": {}, "webhook_events_filter": ["done"]},
            {},
            422,
            "webhook_events_filter: each event must be one of start, output, logs, completed.",
        ),
        (
            PATH,
            {"input": {}},
            {"Prefer": "wait=90"},
            400,
            "Invalid Prefer header 'wait=90'; send 'wait' or 'wait=N' with N from 1 to 60.",
        ),
    ],
)
def test_validated_fields(
    path: str, body: Any, headers: dict[str, str], status: int, detail: str
) -> None:
    provider, _ = virtual("replicate")
    got, _, payload = call(provider, "POST", path, json_body=body, headers=headers)
    title = "Unprocessable Entity" if status == 422 else "Bad Request"
    assert (got, payload) == (status, {"title": title, "detail": detail, "status": status})
    assert [(e.kind, e.status_code) for e in provider.entries] == [("submit", status)]


def test_cancel_running_then_canceled() -> None:
    provider, clock = virtual("replicate")
    _, _, payload = call(provider, "POST", PATH, json_body={"input": {"prompt": "a cat"}})
    clock.advance(10)
    status, _, payload = call(provider, "POST", f"/v1/predictions/{payload['id']}/cancel")
    assert (status, payload["status"]) == (200, "canceled")


# -- webhooks --------------------------------------------------------------------------------

EVERY_EVENT = "  events: [job.queued, job.processing, job.succeeded, job.failed, job.cancelled]\n"


def create_with_webhook(provider: Any, events: list[str] | None) -> str:
    body: dict[str, Any] = {"input": {"prompt": "a cat"}, "webhook": "http://127.0.0.1:9/h"}
    if events is not None:
        body["webhook_events_filter"] = events
    status, _, payload = call(provider, "POST", PATH, json_body=body)
    assert status == 201
    return str(payload["id"])


@pytest.mark.parametrize(
    ("events", "sent"),
    [
        (None, [("job.succeeded", "succeeded")]),
        (
            ["start", "logs", "completed"],
            [
                ("job.queued", "starting"),
                ("job.processing", "processing"),
                ("job.succeeded", "succeeded"),
            ],
        ),
        (["start", "completed"], [("job.queued", "starting"), ("job.succeeded", "succeeded")]),
        (["output"], [("job.succeeded", "succeeded")]),
        (["logs"], [("job.processing", "processing")]),
    ],
)
def test_webhooks_honour_the_webhook_events_filter(
    events: list[str] | None, sent: list[tuple[str, str]]
) -> None:
    provider, clock = virtual("replicate", hook_scenario(None, EVERY_EVENT))
    create_with_webhook(provider, events)
    sends = planned_messages(provider, clock, 1.0)
    assert [(d.event, body_of(m)["status"]) for d, m in sends] == sent


def test_a_failure_is_not_an_output() -> None:
    provider, clock = virtual("replicate", hook_scenario(None, EVERY_EVENT))
    create_with_webhook(provider, ["start"])
    failed = create_with_webhook(provider, ["output"])
    sends = planned_messages(provider, clock, 1.0)
    assert [(d.event, d.job_id) for d, _ in sends if d.job_id == failed] == []


def test_the_webhook_body_is_the_prediction_as_get_shows_it() -> None:
    provider, clock = virtual("replicate", hook_scenario(None, EVERY_EVENT))
    job_id = create_with_webhook(provider, ["completed"])
    ((delivery, message),) = planned_messages(provider, clock, 1.0)
    _, _, shown = call(provider, "GET", f"/v1/predictions/{job_id}")
    assert body_of(message) == shown
    assert shown["output"] == f"http://fake.test/files/{job_id}.mp4"
    assert sorted(message.headers) == [
        "content-type",
        "webhook-id",
        "webhook-signature",
        "webhook-timestamp",
    ]
    assert message.headers["webhook-id"] == delivery.webhook_id


# -- the real SDK ----------------------------------------------------------------------------

replicate = optional("replicate")
needs_replicate = needs("replicate")


@contextmanager
def client_for(url: str) -> Iterator[Any]:
    client = replicate.Client(api_token="r8_test", base_url=url, headers=dict(CLIENT_HEADERS))
    client.poll_interval = 0.1  # REPLICATE_POLL_INTERVAL, read once in __init__
    try:
        yield client
    finally:
        client._client.close()  # replicate.Client has no close() of its own


def run_sdk(url: str) -> Any:
    with client_for(url) as client:
        return _create_and_wait(client)


def _create_and_wait(client: Any) -> Any:
    # no 'wait': a held create (see the run() tests) would answer short jobs before any poll
    prediction_obj = client.models.predictions.create(
        model="google/veo-3", input={"prompt": "a cat"}
    )
    prediction_obj.wait()
    if prediction_obj.status == "succeeded":
        download(prediction_obj.output)
    return prediction_obj


@needs_replicate
def test_sdk_slow_success() -> None:
    with serve_inprocess("replicate", "slow-success") as (provider, url):
        done = run_sdk(url)
        assert (done.status, done.output.endswith(f"/files/{done.id}.mp4")) == ("succeeded", True)
        assert unusual(settled(provider)) == [("submit", 201, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_replicate
def test_sdk_run_is_answered_by_its_held_create() -> None:
    # run() sends 'Prefer: wait': 60 s, 1.2 s at this time scale; the preview takes 0.24 s
    with serve_inprocess("replicate", "quick-preview") as (provider, url):
        with client_for(url) as client:
            output = client.run("google/veo-3", input={"prompt": "a cat"})
        assert isinstance(output, str)  # run() wraps only https:/data: URLs in FileOutput
        download(output)
        entries = settled(provider)
        assert [(e.kind, e.status_code, e.job_status) for e in entries] == [
            ("submit", 201, "succeeded"),
            ("content", 200, "succeeded"),
        ]
        # held until the job ended (0.24 s): the answer shows it succeeded, not the wait's end
        held = entries[0].response_started_at - entries[0].received_at  # type: ignore[operator]
        assert held >= 0.2
        assert violated(provider) == set()


@needs_replicate
def test_sdk_run_polls_when_its_wait_runs_out() -> None:
    # the 60 s wait is 1.2 s at this time scale; slow-success takes 1.86 s
    with serve_inprocess("replicate", "slow-success") as (provider, url):
        with client_for(url) as client:
            output = client.run("google/veo-3", input={"prompt": "a cat"})
        assert isinstance(output, str)
        download(output)
        entries = settled(provider)
        held = entries[0].response_started_at - entries[0].received_at  # type: ignore[operator]
        # held for the whole wait (1.2 s), answered before the job ended: still processing
        assert (entries[0].kind, entries[0].job_status) == ("submit", "processing")
        assert held >= 1.2
        assert last_status(entries) == "succeeded"
        assert violated(provider) == set()


@needs_replicate
def test_sdk_terminal_failure() -> None:
    with serve_inprocess("replicate", "terminal-failure") as (provider, url):
        done = run_sdk(url)
        assert (done.status, done.error) == (
            "failed",
            "The prompt was rejected by the safety system after generation started.",
        )
        assert violated(provider) == set()


@needs_replicate
def test_sdk_transient_5xx_retries_gets() -> None:
    with serve_inprocess("replicate", "transient-5xx") as (provider, url):
        assert run_sdk(url).status == "succeeded"
        assert unusual(settled(provider)) == retried_through_transient_5xx(201)
        assert violated(provider) == set()


@needs_replicate
def test_sdk_cancelled() -> None:
    with serve_inprocess("replicate", "cancelled") as (provider, url):
        assert run_sdk(url).status == "canceled"
        assert last_status(settled(provider)) == "cancelled"
        assert violated(provider) == set()


@needs_replicate
def test_sdk_rate_limited_succeeds() -> None:
    with serve_inprocess("replicate", "rate-limited") as (provider, url):
        assert run_sdk(url).status == "succeeded"
        faults = [e.fault for e in settled(provider) if e.status_code == 429]
        assert faults[:2] == ["throttled-rfc850", "throttled-asctime"]


RETRY_AFTER = """
name: retry-after-forms
description: The first status read is throttled for 2 s, in the form under test.
jobs:
  - timeline:
      - status: queued
      - {at: 300ms, status: succeeded}
faults:
  - {name: throttled, route: status, nth: 1, status: 429, retry_after: {delay: 2s, form: FORM}}
expect: {outcome: succeeded, retrievals: 1}
"""


@needs_replicate
def test_sdk_honours_delay_seconds_retry_after() -> None:
    with serve_inprocess(
        "replicate", parse_scenario(RETRY_AFTER.replace("FORM", "seconds")), time_scale=1.0
    ) as (
        provider,
        url,
    ):
        assert run_sdk(url).status == "succeeded"
        assert violated(provider) == set()


@needs_replicate
def test_finding_sdk_ignores_http_date_retry_after() -> None:
    """replicate 1.0.7 parses Retry-After with datetime.fromisoformat: an HTTP-date falls back to 0.1 s."""
    with serve_inprocess(
        "replicate", parse_scenario(RETRY_AFTER.replace("FORM", "imf")), time_scale=1.0
    ) as (
        provider,
        url,
    ):
        assert run_sdk(url).status == "succeeded"
        entries = settled(provider)
        throttled, retry = entries[1], entries[2]
        assert (throttled.status_code, retry.kind) == (429, "status")
        assert throttled.retry_after is not None
        assert throttled.retry_after.not_before is not None
        # sooner than the date allows, beyond its one second of slack
        assert retry.received_at < throttled.retry_after.not_before - 1.0
        assert violated(provider) == {"honours_retry_after"}


@needs_replicate
def test_sdk_validates_every_genuine_webhook_and_refuses_forged_and_stale_ones() -> None:
    from replicate.prediction import Prediction
    from replicate.webhook import Webhooks, WebhookSigningSecret

    secret = WebhookSigningSecret(key=SECRET)
    judge = replicate_judge(SECRET)
    block = EVERY_EVENT + (
        "  forged: [job.succeeded]\n  stale: [job.succeeded]\n  duplicate_gap: 100ms\n"
    )
    with (
        hook_receiver(judge) as receiver,
        serve_hooks("replicate", hook_scenario(None, block)) as (provider, server),
        client_for(server.url) as client,
    ):
        done, failed = (
            client.models.predictions.create(
                model="google/veo-3",
                input={"prompt": prompt},
                webhook=receiver.url,
                webhook_events_filter=["start", "completed"],
            )
            for prompt in ("a cat", "a dog")
        )
        entries = sent_hooks(server)

    accepted = [Prediction(**h.json) for h in receiver.accepted()]
    assert sorted((p.id, p.status) for p in accepted) == sorted(
        [
            (done.id, "starting"),
            (done.id, "succeeded"),
            (failed.id, "starting"),
            (failed.id, "failed"),
        ]
    )
    finished = next(p for p in accepted if p.status == "succeeded")
    assert finished.output == f"{server.url}/files/{done.id}.mp4"
    rejected = [h for h in receiver.hooks if h.verdict is not None]
    assert [h.verdict for h in rejected] == [
        "Webhook signature is invalid",
        "Webhook timestamp is outside the allowed tolerance of 300 seconds",
    ]
    # Finding: without a tolerance (the default) validate() does not look at the timestamp.
    stale = rejected[1]
    assert Webhooks.validate(headers=stale.headers, body=stale.body.decode(), secret=secret) is None
    assert hook_rows([e for e in entries if e.job_id == done.id]) == [
        ("job.queued", "queued", None, 1, 204),
        ("job.succeeded", "succeeded", None, 1, 204),
        ("job.succeeded", "succeeded", "forged", 1, 400),
        ("job.succeeded", "succeeded", "stale", 1, 400),
    ]
    assert [v for v in violated(provider) if v == "webhook_ack"] == []


@thorough(300)
@given(raw=st.binary(min_size=16, max_size=16) | st.binary(max_size=20))
@example(raw=b"\x00" * 16)
@example(raw=b"\xff" * 16)
def test_a_prediction_id_is_the_base32_text_of_its_digest(raw: bytes) -> None:
    import base64

    from fakeprovider.dialects.replicate import _base32_id

    assert _base32_id(raw) == base64.b32encode(raw).decode().lower().rstrip("=")[:26]


def test_prediction_ids_are_as_b32encode_writes_them() -> None:
    import base64

    from fakeprovider.dialects import _common
    from fakeprovider.dialects.replicate import ReplicateDialect

    dialect = ReplicateDialect()
    for seed, number in [(0, 1), (7, 2), (123456, 99999)]:
        raw = _common.digest(seed, number, "replicate")[:16]
        expected = base64.b32encode(raw).decode().lower().rstrip("=")[:26]
        assert dialect.new_job_id(seed, number) == expected
