"""The ark dialect: exact wire shapes, and the real Volcengine Ark SDK against the fake."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    violations,
    virtual,
)
from .sdk import needs, optional

P = "/api/v3/contents/generations/tasks"
MODEL = "doubao-seedance-1-0-pro-250528"
CREATE = {"model": MODEL, "content": [{"type": "text", "text": "a cat"}]}
#: 2026-01-01T00:00:00Z, the virtual clock's epoch.
T0 = 1767225600


def task(job_id: str, status: str, **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": job_id, "model": MODEL, "status": status}
    out.update(changes)
    return out


def details(**changes: Any) -> dict[str, Any]:
    """The fields after ``content``/``error``/``usage``, Seedance's defaults unless changed."""
    out: dict[str, Any] = {
        "created_at": T0,
        "updated_at": T0,
        "resolution": "720p",
        "ratio": "16:9",
        "duration": 5,
        "framespersecond": 24,
        "service_tier": "default",
        "execution_expires_after": 172800,
    }
    out.update(changes)
    return out


def test_create_and_task_through_every_status() -> None:
    provider, clock = virtual("ark")
    status, _, created = call(provider, "POST", P, json_body=CREATE)
    job_id = created["id"]
    assert (status, created) == (200, {"id": job_id})
    assert job_id.startswith("cgt-")
    _, _, shown = call(provider, "GET", f"{P}/{job_id}")
    seed = shown.pop("seed")
    assert isinstance(seed, int)
    assert shown == task(job_id, "queued", **details())
    clock.advance(31)
    _, _, shown = call(provider, "GET", f"{P}/{job_id}")
    assert shown == task(job_id, "running", seed=seed, **details(updated_at=T0 + 4))
    clock.advance(70)
    _, headers, shown = call(provider, "GET", f"{P}/{job_id}")
    assert shown == task(
        job_id,
        "succeeded",
        content={"video_url": f"http://fake.test/files/{job_id}.mp4"},
        usage={"completion_tokens": 108900, "total_tokens": 108900},
        seed=seed,
        **details(updated_at=T0 + 93),
    )
    assert "retry-after" not in headers  # Ark sends no poll hint
    status, _, content = call(provider, "GET", f"/files/{job_id}.mp4")
    assert (status, len(content)) == (200, 1048576)
    assert [(e.kind, e.status_code, e.job_status, e.poll_after) for e in provider.entries] == [
        ("submit", 200, "queued", None),
        ("status", 200, "queued", None),
        ("status", 200, "processing", None),
        ("status", 200, "succeeded", None),
        ("content", 200, "succeeded", None),
    ]


def test_the_create_parameters_show_in_the_task() -> None:
    provider, _ = virtual("ark")
    body = {**CREATE, "ratio": "9:16", "duration": 10, "resolution": "1080p", "seed": 7}
    job_id = call(provider, "POST", P, json_body=body)[2]["id"]
    shown = call(provider, "GET", f"{P}/{job_id}")[2]
    assert shown == task(
        job_id, "queued", seed=7, **details(ratio="9:16", duration=10, resolution="1080p")
    )


def test_failed_and_expired_tasks_carry_their_error() -> None:
    provider, clock = virtual("ark", "terminal-failure")
    job_id = call(provider, "POST", P, json_body=CREATE)[2]["id"]
    clock.advance(45)
    shown = call(provider, "GET", f"{P}/{job_id}")[2]
    assert (shown["status"], shown["error"]) == (
        "failed",
        {
            "code": "content_policy_violation",
            "message": "The prompt was rejected by the safety system after generation started.",
        },
    )
    expired = """
jobs:
  - timeline:
      - status: queued
      - {at: 10s, status: failed}
    error: {code: expired, message: The task was not run within its execution window.}
"""
    provider, clock = virtual("ark", expired)
    job_id = call(provider, "POST", P, json_body=CREATE)[2]["id"]
    clock.advance(11)
    shown = call(provider, "GET", f"{P}/{job_id}")[2]
    assert (shown["status"], shown["error"]["code"]) == ("expired", "expired")
    assert provider.entries[-1].job_status == "failed"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"content": CREATE["content"]},
            "The parameter `model` specified in the request is not valid: it is required.",
        ),
        (
            {"model": MODEL, "content": []},
            "The parameter `content` specified in the request is not valid:"
            " it must be a non-empty list.",
        ),
        (
            {"model": MODEL, "content": [{"type": "picture"}]},
            "The parameter `content[0].type` specified in the request is not valid:"
            " use one of text, image_url, video_url, audio_url, draft_task.",
        ),
        (
            {"model": MODEL, "content": [{"type": "text", "text": " "}]},
            "The parameter `content[0].text` specified in the request is not valid:"
            " it must be a non-empty string.",
        ),
        (
            {**CREATE, "callback_url": "ftp://x"},
            "The parameter `callback_url` specified in the request is not valid:"
            " it must be an http(s) URL.",
        ),
        (
            {**CREATE, "duration": "5"},
            "The parameter `duration` specified in the request is not valid:"
            " it must be an integer.",
        ),
        (
            {**CREATE, "ratio": 16},
            "The parameter `ratio` specified in the request is not valid: it must be a string.",
        ),
    ],
)
def test_bad_creates_answer_invalid_parameter(body: dict[str, Any], message: str) -> None:
    provider, _ = virtual("ark")
    status, _, payload = call(provider, "POST", P, json_body=body)
    assert (status, payload) == (
        400,
        {
            "error": {
                "code": "InvalidParameter",
                "message": message,
                "param": "",
                "type": "BadRequest",
            }
        },
    )
    assert [(e.kind, e.status_code) for e in provider.entries] == [("submit", 400)]


def test_unknown_task_is_a_404_resource_not_found() -> None:
    provider, _ = virtual("ark")
    status, _, payload = call(provider, "GET", f"{P}/cgt-nope")
    assert (status, payload) == (
        404,
        {
            "error": {
                "code": "ResourceNotFound.Task",
                "message": "There is no job 'cgt-nope'.",
                "param": "",
                "type": "NotFound",
            }
        },
    )


def test_list_filters_and_pages_and_the_journal_shows_only_the_page() -> None:
    provider, clock = virtual("ark", "quick-preview")
    ids = [call(provider, "POST", P, json_body=CREATE)[2]["id"] for _ in range(3)]
    clock.advance(60)
    _, _, listed = call(provider, "GET", P, query={"page_size": "2"})
    assert listed["total"] == 3
    assert [t["id"] for t in listed["items"]] == [ids[2], ids[1]]  # newest first
    _, _, page2 = call(provider, "GET", P, query={"page_size": "2", "page_num": "2"})
    assert [t["id"] for t in page2["items"]] == [ids[0]]
    _, _, one = call(provider, "GET", P, query={"filter.task_ids": ids[1]})
    assert (one["total"], [t["id"] for t in one["items"]]) == (1, [ids[1]])
    _, _, none = call(provider, "GET", P, query={"filter.status": "running"})
    assert none == {"total": 0, "items": []}
    lists = [e.listed for e in provider.entries if e.kind == "list"]
    assert lists == [
        ((ids[2], "succeeded"), (ids[1], "succeeded")),
        ((ids[0], "succeeded"),),
        ((ids[1], "succeeded"),),
        (),
    ]
    status, _, payload = call(provider, "GET", P, query={"page_size": "0"})
    assert (status, payload["error"]["message"]) == (
        400,
        "The parameters `page_num` (from 1) and `page_size` (1 to 500) must be integers in range.",
    )


def test_delete_cancels_a_queued_task_refuses_a_running_one_and_deletes_a_finished_one() -> None:
    provider, clock = virtual("ark")
    job_id = call(provider, "POST", P, json_body=CREATE)[2]["id"]
    assert call(provider, "DELETE", f"{P}/{job_id}")[:3:2] == (200, {})
    assert call(provider, "GET", f"{P}/{job_id}")[2]["status"] == "cancelled"
    running = call(provider, "POST", P, json_body=CREATE)[2]["id"]
    clock.advance(10)
    status, _, payload = call(provider, "DELETE", f"{P}/{running}")
    assert (status, payload) == (
        400,
        {
            "error": {
                "code": "InvalidParameter",
                "message": f"The task {running} is running; only a queued task can be cancelled.",
                "param": "",
                "type": "BadRequest",
            }
        },
    )
    clock.advance(100)
    assert call(provider, "DELETE", f"{P}/{running}")[:3:2] == (200, {})
    assert [
        (e.kind, e.status_code, e.job_status, e.error_code)
        for e in provider.entries
        if e.kind == "cancel"
    ] == [
        ("cancel", 200, "cancelled", None),
        ("cancel", 400, "processing", "job_not_cancellable"),
        ("cancel", 200, "succeeded", "job_already_terminal"),
    ]


# -- callbacks -------------------------------------------------------------------------------

EVERY_EVENT = "  events: [job.queued, job.processing, job.succeeded, job.failed, job.cancelled]\n"
#: Every misbehaviour: an unsigned provider gets duplicates but no forged or stale sends.
MISBEHAVING = EVERY_EVENT + (
    "  duplicates: 1\n  duplicate_gap: 50ms\n"
    "  forged: [job.succeeded, job.failed]\n  stale: [job.succeeded, job.failed]\n"
)


def test_callbacks_post_the_task_for_every_change_unsigned() -> None:
    provider, clock = virtual("ark", hook_scenario(None, MISBEHAVING))
    body = {**CREATE, "callback_url": "http://127.0.0.1:9/h"}
    job_id = call(provider, "POST", P, json_body=body)[2]["id"]
    sends = planned_messages(provider, clock, 1.0)
    assert [(d.event, d.variant, body_of(m)["status"]) for d, m in sends] == [
        ("job.queued", None, "queued"),
        ("job.queued", "duplicate", "queued"),
        ("job.processing", None, "running"),
        ("job.processing", "duplicate", "running"),
        ("job.succeeded", None, "succeeded"),
        ("job.succeeded", "duplicate", "succeeded"),
    ]
    assert [dict(m.headers) for _, m in sends] == [{"content-type": "application/json"}] * 6
    _, _, shown = call(provider, "GET", f"{P}/{job_id}")
    assert body_of(sends[-1][1]) == shown


# -- the real SDK ----------------------------------------------------------------------------

ark = optional("volcenginesdkarkruntime")
needs_ark = needs("volcenginesdkarkruntime")

TERMINAL = ("succeeded", "failed", "cancelled", "expired")


def wait_for_task(client: Any, task_id: str, *, interval: float, timeout: float) -> Any:
    """The SDK has no waiter: read the task every ``interval`` s until it ends (or ``timeout``).

    This is the loop Ark's own samples write: ``tasks.get`` until the status is terminal.
    """
    deadline = time.monotonic() + timeout
    while True:
        got = client.content_generation.tasks.get(task_id=task_id)
        if got.status in TERMINAL:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"task {task_id} still {got.status} after {timeout} s")
        time.sleep(interval)


def run_sdk(url: str, *, interval: float = 0.1, timeout: float = 10) -> Any:
    """Create a task, wait for it, download a finished video once."""
    client = ark.Ark(
        base_url=f"{url}/api/v3",
        api_key="ark-test",
        http_client=httpx.Client(headers=CLIENT_HEADERS),
    )
    created = client.content_generation.tasks.create(model=MODEL, content=CREATE["content"])
    done = wait_for_task(client, created.id, interval=interval, timeout=timeout)
    if done.status == "succeeded":
        download(done.content.video_url)
    client.close()
    return done


@needs_ark
def test_sdk_slow_success() -> None:
    with serve_inprocess("ark", "slow-success") as (provider, url):
        done = run_sdk(url)
        assert done.status == "succeeded"
        assert done.content.video_url == f"{url}/files/{done.id}.mp4"
        assert unusual(settled(provider)) == [("submit", 200, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_ark
def test_sdk_terminal_failure_is_a_failed_task() -> None:
    with serve_inprocess("ark", "terminal-failure") as (provider, url):
        done = run_sdk(url)
        assert (done.status, done.error.code) == ("failed", "content_policy_violation")
        assert last_status(settled(provider)) == "failed"
        assert violated(provider) == set()


@needs_ark
def test_finding_sdk_retries_5xx_before_their_retry_after() -> None:
    """It retries the 503s (0.5 s, then 1 s, jittered) but never reads their ``Retry-After``."""
    with serve_inprocess("ark", "transient-5xx") as (provider, url):
        assert run_sdk(url).status == "succeeded"
        assert unusual(settled(provider)) == retried_through_transient_5xx(200)
        found = violations(provider)
        assert {(v.invariant, v.seqs) for v in found} == {("honours_retry_after", (3, 4))}


@needs_ark
def test_sdk_cancelled() -> None:
    with serve_inprocess("ark", "cancelled") as (provider, url):
        assert run_sdk(url).status == "cancelled"
        assert violated(provider) == set()


@needs_ark
def test_sdk_rate_limited_retries_the_429s() -> None:
    """Its 0.5 s and 1 s backoffs happen to clear these HTTP-date ``Retry-After`` values (1 s
    granularity, scaled): clean here, though it never reads them (see the 5xx finding)."""
    with serve_inprocess("ark", "rate-limited") as (provider, url):
        assert run_sdk(url).status == "succeeded"
        faults = [e.fault for e in settled(provider) if e.status_code == 429]
        assert faults == ["throttled-rfc850", "throttled-asctime"]
        assert violated(provider) == set()


@needs_ark
def test_finding_sdk_retries_a_lost_create_without_a_key() -> None:
    """A create whose answer is lost is retried (any exception is), with no Idempotency-Key."""
    with serve_inprocess("ark", "ambiguous-submit") as (provider, url):
        assert run_sdk(url).status == "succeeded"
        submits = [e for e in settled(provider) if e.kind == "submit"]
        assert [(e.dropped, e.idempotency_key) for e in submits] == [
            ("lose_response", None),
            (None, None),
        ]
        assert violated(provider) == {"no_resubmission"}


@needs_ark
def test_sdk_callbacks_parse_as_tasks() -> None:
    from volcenginesdkarkruntime.types.content_generation.content_generation_task import (
        ContentGenerationTask,
    )

    with (
        hook_receiver(lambda body, headers: None) as receiver,
        serve_hooks("ark", hook_scenario(None, MISBEHAVING)) as (_, server),
    ):
        client = ark.Ark(base_url=f"{server.url}/api/v3", api_key="ark-test")
        made = client.content_generation.tasks.create(
            model=MODEL, content=CREATE["content"], callback_url=receiver.url
        )
        entries = sent_hooks(server)
        client.close()
    # the SDK builds its response models with construct() (no validation): so does a receiver.
    # Sends 50 ms apart can arrive in either order on a loaded machine: the journal's rows
    # below hold the order they were sent in, the receiver's are taken in the status's order
    received = [ContentGenerationTask.construct(**h.json) for h in receiver.hooks]
    tasks = sorted(received, key=lambda t: ["queued", "running", "succeeded"].index(t.status))
    assert [(t.id, t.status) for t in tasks] == [
        (made.id, "queued"),
        (made.id, "queued"),
        (made.id, "running"),
        (made.id, "running"),
        (made.id, "succeeded"),
        (made.id, "succeeded"),
    ]
    assert tasks[-1].content.video_url == f"{server.url}/files/{made.id}.mp4"
    assert hook_rows(entries) == [
        ("job.queued", "queued", None, 1, 204),
        ("job.queued", "queued", "duplicate", 1, 204),
        ("job.processing", "processing", None, 1, 204),
        ("job.processing", "processing", "duplicate", 1, 204),
        ("job.succeeded", "succeeded", None, 1, 204),
        ("job.succeeded", "succeeded", "duplicate", 1, 204),
    ]


#: JSON values of every type, as a decoded body holds them.
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", " ", "x", "http://h", "https://h", "ftp://h", "16:9"]),
    st.lists(st.integers(0, 1), max_size=2),
    st.dictionaries(st.sampled_from(["a", "text"]), st.integers(0, 1), max_size=1),
)


def _ark_invalid_written_out(body: dict[str, Any]) -> str | None:
    """``ArkDialect._invalid`` as it was written before its lane: every check in turn."""
    from fakeprovider.dialects.ark import _CONTENT_TYPES, _bad

    if not isinstance(body.get("model"), str) or not body["model"]:
        return _bad("model", "it is required")
    content = body.get("content")
    if not isinstance(content, list) or not content:
        return _bad("content", "it must be a non-empty list")
    for index, item in enumerate(content):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _CONTENT_TYPES:
            shown = ", ".join(_CONTENT_TYPES)
            return _bad(f"content[{index}].type", f"use one of {shown}")
        if kind == "text" and not (isinstance(item.get("text"), str) and item["text"].strip()):
            return _bad(f"content[{index}].text", "it must be a non-empty string")
    callback = body.get("callback_url")
    if callback is not None and not (
        isinstance(callback, str) and callback.startswith(("http://", "https://"))
    ):
        return _bad("callback_url", "it must be an http(s) URL")
    for key in ("duration", "seed", "frames", "execution_expires_after"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return _bad(key, "it must be an integer")
    for key in ("ratio", "resolution"):
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            return _bad(key, "it must be a string")
    return None


@given(
    body=st.dictionaries(
        st.sampled_from(
            [
                "callback_url",
                "duration",
                "seed",
                "frames",
                "execution_expires_after",
                "ratio",
                "resolution",
                "other",
            ]
        ),
        _VALUES,
        max_size=2,
    ),
    content=st.one_of(
        st.none(),
        st.just([{"type": "text", "text": "a cat"}]),
        st.just([{"type": "image_url"}, {"type": "text", "text": "a cat"}]),
        st.lists(
            st.one_of(
                _VALUES,
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "image_url", "x"]), "text": _VALUES}
                ),
            ),
            max_size=3,
        ),
    ),
    model=st.sampled_from([None, "seedance", "seedance", ""]),
)
def test_a_create_is_refused_for_what_every_check_in_turn_refuses(
    body: dict[str, Any], content: list[Any] | None, model: str | None
) -> None:
    from fakeprovider.dialects.ark import ArkDialect

    if content is not None:
        body["content"] = content
    if model is not None:
        body["model"] = model
    assert ArkDialect._invalid(body) == _ark_invalid_written_out(body)
