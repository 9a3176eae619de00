"""The generic dialect's submit validation, message by message, and its status reads' bodies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.dialects.generic import _PIECES_KEPT, GenericDialect
from fakeprovider.http import HttpRequest, json_response
from fakeprovider.messages import JobView, Reply, Request
from fakeprovider.scenario import JobError, Result
from tests.thorough import thorough

from .helpers import call, virtual


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "veo"}, "'prompt' is required and must be a non-empty string."),
        ({"prompt": "   "}, "'prompt' is required and must be a non-empty string."),
        ({"prompt": "a cat", "model": 5}, "'model' must be a string."),
        ({"prompt": "a cat", "callback_url": 3}, "'callback_url' must be a string."),
    ],
)
def test_submit_fields_of_the_wrong_type_get_422(body: dict[str, Any], message: str) -> None:
    provider, _ = virtual("generic")
    status, _, payload = call(provider, "POST", "/v1/jobs", json_body=body)
    assert (status, payload["error"]) == (422, {"code": "invalid_request", "message": message})
    assert [(e.kind, e.status_code) for e in provider.entries] == [("submit", 422)]


# --- a status read's body from the pieces kept per job, against the dialect's general path ---

_IDS = ["job_a", "job_b", "j\ud800", "\x00elapsed_seconds\x00"]
_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled", "completed_with_errors"]
_PROGRESS: list[Any] = [None, 0, 35, 100, True, 35.0]
_POLLS: list[Any] = [None, 15, 15.0, 2.5, 0.0004, -0.0]
_MESSAGES = [
    "The job is queued.",
    "Ünïcode \u2028 and a lone \udfff",
    "\x00elapsed_seconds\x00",
    'a quote " and \\u0000elapsed_seconds\\u0000',
]
_RESULTS: list[Any] = [None, Result(), Result(url="https://cdn.example/v.mp4", size_bytes=10)]
_ERRORS: list[Any] = [None, JobError(), JobError("boom", "It broke.")]
_SUMMARIES: list[Any] = [None, {"failed": 1, "total": 3}]
_TIMES: list[Any] = [0.0, -0.0, 1.0, 31.2, 1e17, 123.4567, 5, float("inf"), float("nan")]


_POOLS: dict[str, list[Any]] = {
    "id": _IDS,
    "status": _STATUSES,
    "progress": _PROGRESS,
    "created_at": _TIMES,
    "now": _TIMES,
    "poll_after": _POLLS,
    "message": _MESSAGES,
    "result": _RESULTS,
    "error": _ERRORS,
    "summary": _SUMMARIES,
}


@st.composite
def _views(draw: st.DrawFn) -> list[JobView]:
    """A run's status reads: a first view, then each next one the last with a part or two
    drawn again (or none), every part from a fixed pool, so that consecutive views of one job
    share the very objects, as the engine's views of one step do."""
    first = {name: draw(st.sampled_from(pool)) for name, pool in _POOLS.items()}
    views = [first]
    for _ in range(draw(st.integers(0, 11))):
        changed = draw(st.lists(st.sampled_from(list(_POOLS)), max_size=2))
        views.append({**views[-1], **{n: draw(st.sampled_from(_POOLS[n])) for n in changed}})
    return [
        JobView(
            spec_index=0,
            status_since=0.0,
            estimated_duration=None,
            request={},
            callback_url=None,
            **parts,
        )
        for parts in views
    ]


@thorough(300)
@given(views=_views(), headers=st.sampled_from([(), (("X-Extra", "1"),)]))
def test_a_status_read_answers_the_same_bytes_with_the_pieces_kept_as_without(
    views: list[JobView], headers: tuple[tuple[str, str], ...]
) -> None:
    dialect = GenericDialect()  # keeps its pieces across the views: one run's status reads
    http = HttpRequest("GET", "/v1/jobs/x")
    for view in views:
        request = Request(kind="status", method="GET", path="/v1/jobs/x", job_id=view.id)
        reply = Reply(
            seq=1, request=request, status_code=200, respond_at=0.0, job=view, headers=headers
        )
        expected = json_response(200, GenericDialect().job(view), headers)
        assert dialect.render(reply, http) == expected


def test_pieces_are_kept_for_a_bounded_number_of_jobs() -> None:
    dialect = GenericDialect()
    http = HttpRequest("GET", "/v1/jobs/x")
    request = Request(kind="status", method="GET", path="/v1/jobs/x")
    for number in range(_PIECES_KEPT + 5):
        view = JobView(
            f"job_{number}",
            0,
            "queued",
            None,
            0.0,
            0.0,
            1.5,
            15,
            None,
            "Queued.",
            {},
            None,
            None,
            None,
            None,
        )
        reply = Reply(seq=1, request=request, status_code=200, respond_at=0.0, job=view)
        assert dialect.render(reply, http).body == (
            b'{"job_id":"job_%d","status":"queued","done":false,"elapsed_seconds":1.5,'
            b'"poll_after_seconds":15,"message":"Queued."}' % number
        )
    assert 0 < len(dialect._pieces) <= _PIECES_KEPT


# --- a submit's answer from the pieces kept per step, against the answer written out ---------

_SUBMIT_POOLS: dict[str, list[Any]] = {
    "id": [
        "job_a",
        "job_b",
        'q"uote',
        "back\\slash",
        "j\ud800",
        "caf\u00e9 \u2028",
        "\x00job_id\x00",
    ],
    "status": _STATUSES,
    "poll_after": _POLLS,
    "estimated_duration": [None, 60, 60.0, 0.25, 1e17],
    "message": [*_MESSAGES, "\x00job_id\x00", "\\u0000job_id\\u0000"],
    "spec_index": [0, 1, 2],
}


def _submit_answer(view: JobView, status: int, headers: tuple[tuple[str, str], ...]) -> Any:
    """The generic answer to a submit, written out as the dialect always wrote it."""

    def seconds(value: Any) -> Any:
        if value is None:
            return None
        return int(value) if float(value).is_integer() else -(-value * 1000 // 1) / 1000

    poll_after = seconds(view.poll_after)
    payload = {
        "job_id": view.id,
        "status": view.status,
        "done": view.done,
        "message": (
            "The job has STARTED and is NOT complete. Do not report success. Check "
            f"status_url after at least {poll_after or 0} seconds."
            if not view.done
            else view.message
        ),
        "poll_after_seconds": poll_after,
        "estimated_duration_seconds": seconds(view.estimated_duration),
        "status_url": f"/v1/jobs/{view.id}",
    }
    return json_response(status, payload, (*headers, ("Location", f"/v1/jobs/{view.id}")))


@st.composite
def _submitted_views(draw: st.DrawFn) -> list[JobView]:
    """Submits' views: each the last with a part or two drawn again, from fixed pools, so
    that the views of jobs created at one step share the very objects, as the engine's do."""
    first = {name: draw(st.sampled_from(pool)) for name, pool in _SUBMIT_POOLS.items()}
    views = [first]
    for _ in range(draw(st.integers(0, 11))):
        changed = draw(st.lists(st.sampled_from(list(_SUBMIT_POOLS)), max_size=2))
        parts = {n: draw(st.sampled_from(_SUBMIT_POOLS[n])) for n in changed}
        views.append({**views[-1], **parts})
    return [
        JobView(
            progress=0,
            created_at=1.0,
            status_since=1.0,
            now=1.0,
            request={},
            result=None,
            error=None,
            summary=None,
            callback_url=None,
            **parts,
        )
        for parts in views
    ]


@thorough(200)
@given(
    views=_submitted_views(),
    status=st.sampled_from([202, 200]),
    headers=st.sampled_from([(), (("Retry-After", "2"),)]),
)
def test_a_submit_answers_the_same_bytes_with_the_pieces_kept_as_written_out(
    views: list[JobView], status: int, headers: tuple[tuple[str, str], ...]
) -> None:
    dialect = GenericDialect()  # keeps its pieces across the submits of one run
    submit = dialect.renderer("submit")
    http = HttpRequest("POST", "/v1/jobs")
    request = Request(kind="submit", method="POST", path="/v1/jobs")
    for view in views:
        reply = Reply(
            seq=1, request=request, status_code=status, respond_at=0.0, job=view, headers=headers
        )
        expected = _submit_answer(view, status, headers)
        assert submit(reply, http) == expected
        assert dialect.render(reply, http) == expected


def test_submit_pieces_are_kept_for_a_bounded_number_of_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fakeprovider.dialects import generic

    monkeypatch.setattr(generic, "_PIECES_KEPT", 3)
    dialect = GenericDialect()
    submit = dialect.renderer("submit")
    request = Request(kind="submit", method="POST", path="/v1/jobs")
    sizes = []
    for number in range(5):
        view = JobView(
            f"job_{number}",
            number,
            "queued",
            0,
            0.0,
            0.0,
            0.0,
            float(number),
            None,
            "Q.",
            {},
            None,
            None,
            None,
            None,
        )
        reply = Reply(seq=1, request=request, status_code=202, respond_at=0.0, job=view)
        assert submit(reply, HttpRequest("POST", "/v1/jobs")) == _submit_answer(view, 202, ())
        assert submit(reply, HttpRequest("POST", "/v1/jobs")) == _submit_answer(view, 202, ())
        sizes.append(len(dialect._submit_pieces))
    assert sizes == [1, 2, 3, 1, 2]
