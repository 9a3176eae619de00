"""The dashscope dialect: exact wire shapes, and the real ``dashscope`` SDK (its 1.x
``VideoSynthesis`` calls and its v2 ``Client().videos.jobs``) against the fake."""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .helpers import (
    CLIENT_HEADERS,
    SCALE,
    call,
    download,
    last_status,
    serve_inprocess,
    settled,
    unusual,
    violated,
    violations,
    virtual,
)
from .sdk import needs, optional

SUBMIT = "/api/v1/services/aigc/video-generation/video-synthesis"
ASYNC = {"X-DashScope-Async": "enable"}
MODEL = "wan2.2-t2v-plus"
CREATE = {"model": MODEL, "input": {"prompt": "a cat"}, "parameters": {"size": "832*480"}}


def request_ids(provider: Any) -> list[str]:
    from fakeprovider.dialects import _common

    return [_common.uuid_id(0, e.seq, "dashscope-request") for e in provider.entries]


def test_submit_and_task_through_every_status() -> None:
    provider, clock = virtual("dashscope")
    status, _, created = call(provider, "POST", SUBMIT, json_body=CREATE, headers=ASYNC)
    job_id = created["output"]["task_id"]
    assert (status, created) == (
        200,
        {
            "request_id": request_ids(provider)[0],
            "output": {"task_id": job_id, "task_status": "PENDING"},
        },
    )
    shown = call(provider, "GET", f"/api/v1/tasks/{job_id}")[2]
    assert shown == {
        "request_id": request_ids(provider)[1],
        "output": {
            "task_id": job_id,
            "task_status": "PENDING",
            "submit_time": "2026-01-01 00:00:00.000",
        },
    }
    clock.advance(31)
    shown = call(provider, "GET", f"/api/v1/tasks/{job_id}")[2]
    assert shown["output"] == {
        "task_id": job_id,
        "task_status": "RUNNING",
        "submit_time": "2026-01-01 00:00:00.000",
        "scheduled_time": "2026-01-01 00:00:04.000",
    }
    clock.advance(70)
    _, headers, shown = call(provider, "GET", f"/api/v1/tasks/{job_id}")
    assert shown == {
        "request_id": request_ids(provider)[3],
        "output": {
            "task_id": job_id,
            "task_status": "SUCCEEDED",
            "submit_time": "2026-01-01 00:00:00.000",
            "end_time": "2026-01-01 00:01:33.000",
            "orig_prompt": "a cat",
            "video_url": f"http://fake.test/files/{job_id}.mp4",
        },
        "usage": {"video_duration": 5, "video_ratio": "832*480", "video_count": 1},
    }
    assert "retry-after" not in headers  # DashScope sends no poll hint
    assert call(provider, "GET", f"/files/{job_id}.mp4")[0] == 200
    assert [(e.kind, e.status_code, e.job_status, e.poll_after) for e in provider.entries] == [
        ("submit", 200, "queued", None),
        ("status", 200, "queued", None),
        ("status", 200, "processing", None),
        ("status", 200, "succeeded", None),
        ("content", 200, "succeeded", None),
    ]


def test_failed_task_carries_code_and_message() -> None:
    provider, clock = virtual("dashscope", "terminal-failure")
    job_id = call(provider, "POST", SUBMIT, json_body=CREATE, headers=ASYNC)[2]["output"]["task_id"]
    clock.advance(45)
    output = call(provider, "GET", f"/api/v1/tasks/{job_id}")[2]["output"]
    assert (output["task_status"], output["code"], output["message"]) == (
        "FAILED",
        "content_policy_violation",
        "The prompt was rejected by the safety system after generation started.",
    )


def test_a_submit_without_the_async_header_is_refused() -> None:
    provider, _ = virtual("dashscope")
    status, _, payload = call(provider, "POST", SUBMIT, json_body=CREATE)
    assert (status, payload["code"], payload["message"]) == (
        403,
        "AccessDenied",
        "current user api does not support synchronous calls",
    )
    assert [(e.kind, e.status_code, e.error_code) for e in provider.entries] == [
        ("submit", 403, "sync_not_supported")
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input": {"prompt": "a cat"}}, "Model not exist."),
        ({"model": MODEL, "input": "a cat"}, "Input should be a valid dictionary."),
        ({"model": MODEL, "input": {"prompt": 5}}, "Input.prompt should be a valid string."),
        ({"model": MODEL, "input": {}}, "Field required: input.prompt or an input image."),
        (
            {**CREATE, "parameters": {"duration": "5"}},
            "Parameters.duration should be a valid integer.",
        ),
    ],
)
def test_bad_submits_answer_invalid_parameter(body: dict[str, Any], message: str) -> None:
    provider, _ = virtual("dashscope")
    status, _, payload = call(provider, "POST", SUBMIT, json_body=body, headers=ASYNC)
    assert (status, payload["code"], payload["message"]) == (400, "InvalidParameter", message)


def test_an_unknown_task_answers_200_unknown_journaled_as_no_such_job() -> None:
    provider, _ = virtual("dashscope")
    status, _, payload = call(provider, "GET", "/api/v1/tasks/no-such-task")
    assert (status, payload) == (
        200,
        {
            "request_id": request_ids(provider)[0],
            "output": {"task_id": "no-such-task", "task_status": "UNKNOWN"},
        },
    )
    entry = provider.entries[0]
    assert (entry.kind, entry.job_id, entry.status_code, entry.job_status, entry.error_code) == (
        "status",
        "no-such-task",
        200,
        None,
        "job_not_found",
    )


def test_cancel_only_a_pending_task_and_list_filters_and_pages() -> None:
    provider, clock = virtual("dashscope")
    first = call(provider, "POST", SUBMIT, json_body=CREATE, headers=ASYNC)[2]["output"]["task_id"]
    clock.advance(10)
    second = call(provider, "POST", SUBMIT, json_body=CREATE, headers=ASYNC)[2]["output"]["task_id"]
    status, _, payload = call(provider, "POST", f"/api/v1/tasks/{first}/cancel")
    assert (status, payload["code"], payload["message"]) == (
        400,
        "UnsupportedOperation",
        "Failed to cancel the task, please confirm if the task is in PENDING status.",
    )
    status, _, payload = call(provider, "POST", f"/api/v1/tasks/{second}/cancel")
    assert (status, payload) == (200, {"request_id": request_ids(provider)[-1]})
    output = call(provider, "GET", f"/api/v1/tasks/{second}")[2]["output"]
    assert (output["task_status"], output["end_time"]) == ("CANCELED", "2026-01-01 00:00:10.000")
    listed = call(provider, "GET", "/api/v1/tasks", query={"page_size": "1"})[2]
    assert (listed["total"], [t["task_id"] for t in listed["tasks"]]) == (2, [second])
    running = call(provider, "GET", "/api/v1/tasks", query={"status": "RUNNING"})[2]
    assert [t["task_id"] for t in running["tasks"]] == [first]
    bad = call(provider, "GET", "/api/v1/tasks", query={"status": "DONE"})
    assert (bad[0], bad[2]["message"]) == (
        400,
        "status must be one of PENDING, RUNNING, SUCCEEDED, FAILED, CANCELED.",
    )


# -- the real SDK ----------------------------------------------------------------------------

dashscope = optional("dashscope")
base_api = optional("dashscope.client.base_api")
dashscope_v2 = optional("dashscope.v2")
needs_dashscope = needs("dashscope")


@pytest.fixture
def v1(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the 1.x calls at the fake (``base_http_api_url``) and run ``VideoSynthesis.wait``'s
    1 s..5 s sleeps at the scenarios' time scale (its loop reads ``time`` from its module)."""

    def point(url: str) -> None:
        monkeypatch.setattr(dashscope, "base_http_api_url", f"{url}/api/v1")

    # read at each call: in-process, both are the virtual clock's
    scaled = types.SimpleNamespace(time=lambda: time.time(), sleep=lambda s: time.sleep(s * SCALE))
    monkeypatch.setattr(base_api, "time", scaled)
    return point


def v1_run(task: str | None = None) -> Any:
    """What the 1.x docs do: ``async_call``, then ``wait``; download a finished video once."""
    if task is None:
        created = dashscope.VideoSynthesis.async_call(
            model=MODEL, prompt="a cat", api_key="sk-test", headers=CLIENT_HEADERS
        )
        assert created.status_code == 200
        task = created.output.task_id
    done = dashscope.VideoSynthesis.wait(task, api_key="sk-test", headers=CLIENT_HEADERS)
    if done.status_code == 200 and done.output.task_status == "SUCCEEDED":
        download(done.output.video_url)
    return done


@needs_dashscope
def test_v1_slow_success(v1: Any) -> None:
    with serve_inprocess("dashscope", "slow-success") as (provider, url):
        v1(url)
        done = v1_run()
        assert (done.status_code, done.output.task_status) == (200, "SUCCEEDED")
        assert unusual(settled(provider)) == [("submit", 200, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_dashscope
def test_v1_terminal_failure_is_returned(v1: Any) -> None:
    with serve_inprocess("dashscope", "terminal-failure") as (provider, url):
        v1(url)
        done = v1_run()
        assert (done.status_code, done.output.task_status) == (200, "FAILED")
        assert last_status(settled(provider)) == "failed"
        assert violated(provider) == set()


@needs_dashscope
def test_finding_v1_wait_ignores_retry_after_and_gives_up_on_a_502(v1: Any) -> None:
    """``wait`` retries a 503 or 504 after its own poll interval (never reading ``Retry-After``)
    and hands back any other error as the answer: the 502 of ``transient-5xx`` ends the wait
    while the job is still running."""
    with serve_inprocess("dashscope", "transient-5xx") as (provider, url):
        v1(url)
        done = v1_run()
        assert done.status_code == 502
        entries = settled(provider)
        assert unusual(entries) == [
            ("submit", 200, None),
            ("status", 503, "upstream-503"),
            ("status", 503, "upstream-503"),
            ("status", 502, "gateway-502"),
        ]
        assert last_status(entries) == "processing"
        found = violations(provider)
        assert {(v.invariant, v.seqs) for v in found} == {
            ("honours_retry_after", (3, 4)),
            ("honours_retry_after", (4, 5)),
        }


@needs_dashscope
def test_v1_wait_stops_on_unknown(v1: Any) -> None:
    """An id the gateway does not know is 200 UNKNOWN: ``wait`` returns it at once. It is no
    job state: a client must report "no such task", neither success nor the job's failure."""
    with serve_inprocess("dashscope", "slow-success") as (provider, url):
        v1(url)
        done = v1_run("no-such-task")
        assert (done.status_code, done.output.task_status) == (200, "UNKNOWN")
        entries = settled(provider)
        assert [(e.kind, e.status_code, e.job_status, e.error_code) for e in entries] == [
            ("status", 200, None, "job_not_found")
        ]
        assert violated(provider) == set()


@contextmanager
def v2_client(url: str) -> Iterator[Any]:
    """A v2 ``Client`` on the fake; a caller's ``http_client`` is used as is (it carries the
    base URL too) and is the caller's to close."""
    base = f"{url}/api/v1"
    with httpx.Client(base_url=base, headers=CLIENT_HEADERS) as http:
        yield dashscope_v2.Client(api_key="sk-test", base_url=base, http_client=http)


def v2_run(url: str) -> Any:
    """``videos.jobs.create`` then ``jobs.wait`` (its 1 s..8 s backoff at the time scale)."""
    with v2_client(url) as client:
        job = client.videos.jobs.create(model=MODEL, prompt="a cat")
        done = client.videos.jobs.wait(job, poll_interval=1.0 * SCALE, max_interval=8.0 * SCALE)
    if done.succeeded:
        download(done.video_url)
    return done


@needs_dashscope
def test_v2_slow_success() -> None:
    with serve_inprocess("dashscope", "slow-success") as (provider, url):
        assert v2_run(url).status == "SUCCEEDED"
        assert unusual(settled(provider)) == [("submit", 200, None), ("content", 200, None)]
        assert violated(provider) == set()


@needs_dashscope
def test_v2_terminal_failure_raises() -> None:
    from dashscope.v2.errors import DashScopeError

    with serve_inprocess("dashscope", "terminal-failure") as (provider, url):
        with pytest.raises(DashScopeError) as caught:
            v2_run(url)
        assert "The prompt was rejected by the safety system" in str(caught.value)
        assert violated(provider) == set()


@needs_dashscope
def test_v2_transient_5xx_retries_after_retry_after() -> None:
    with serve_inprocess("dashscope", "transient-5xx") as (provider, url):
        assert v2_run(url).status == "SUCCEEDED"
        assert violated(provider) == set()


@needs_dashscope
def test_v2_wait_returns_unknown() -> None:
    with serve_inprocess("dashscope", "slow-success") as (provider, url):
        with v2_client(url) as client:
            done = client.videos.jobs.wait("no-such-task")
        assert (done.status, done.finished, done.succeeded) == ("UNKNOWN", True, False)
        assert violated(provider) == set()


@needs_dashscope
def test_finding_v2_retries_a_lost_create_without_a_key() -> None:
    """The v2 transport retries every method, POST included, with no idempotency key."""
    with serve_inprocess("dashscope", "ambiguous-submit") as (provider, url):
        assert v2_run(url).status == "SUCCEEDED"
        submits = [e for e in settled(provider) if e.kind == "submit"]
        assert [(e.dropped, e.idempotency_key) for e in submits] == [
            ("lose_response", None),
            (None, None),
        ]
        assert violated(provider) == {"no_resubmission"}


@needs_dashscope
def test_rate_limited_v1_hands_back_the_429_and_v2_retries_it(v1: Any) -> None:
    with serve_inprocess("dashscope", "rate-limited") as (provider, url):
        v1(url)
        assert v1_run().status_code == 429
        assert violations(provider) == []
    with serve_inprocess("dashscope", "rate-limited") as (provider, url):
        assert v2_run(url).status == "SUCCEEDED"
        assert violated(provider) == set()


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


def _dashscope_invalid_written_out(body: dict[str, Any]) -> str | None:
    """``DashScopeDialect._invalid`` as it was written before: the image looked for first."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "Model not exist."
    data = body.get("input")
    if not isinstance(data, dict):
        return "Input should be a valid dictionary."
    prompt = data.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        return "Input.prompt should be a valid string."
    has_image = any(data.get(key) for key in ("img_url", "first_frame_url", "media"))
    if not (isinstance(prompt, str) and prompt.strip()) and not has_image:
        return "Field required: input.prompt or an input image."
    parameters = body.get("parameters", {})
    if not isinstance(parameters, dict):
        return "Parameters should be a valid dictionary."
    duration = parameters.get("duration")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int)):
        return "Parameters.duration should be a valid integer."
    return None


@given(
    body=st.dictionaries(st.sampled_from(["model", "input", "parameters", "other"]), _VALUES),
    data=st.one_of(
        st.none(),
        st.just({"prompt": "a cat"}),
        st.just({"prompt": " "}),
        st.just({"prompt": "", "media": [1]}),
        st.dictionaries(
            st.sampled_from(["prompt", "img_url", "first_frame_url", "media", "other"]), _VALUES
        ),
    ),
    parameters=st.one_of(st.none(), st.dictionaries(st.just("duration"), _VALUES)),
    model=st.sampled_from([None, "wan2.2-t2v-plus", "wan2.2-t2v-plus", ""]),
)
def test_a_submit_is_refused_for_what_every_check_in_turn_refuses(
    body: dict[str, Any],
    data: dict[str, Any] | None,
    parameters: dict[str, Any] | None,
    model: str | None,
) -> None:
    from fakeprovider.dialects.dashscope import DashScopeDialect

    for name, value in (("input", data), ("parameters", parameters), ("model", model)):
        if value is not None:
            body[name] = value
    assert DashScopeDialect._invalid(body) == _dashscope_invalid_written_out(body)
