"""The engine against its reference: the same request sequences, the same replies and journal.

``tests/engine_reference.py`` is the engine as it was before its hot path was reworked (tables
worked out per spec, faults pre-sorted by route, views and replies built without the frozen
dataclass ``__init__``, a submit's creation view reused). Every shortcut must give exactly the
general path's result: the tests play seeded random request sequences (submits with matching
and unmatched bodies, idempotency keys, credentials and holds; status reads, downloads, cancels
and lists of known and unknown jobs; malformed and unrouted requests) through both engines on
every bundled scenario and a few written to reach the rest (body matching, poll-counted steps,
one-step timelines, steps taken at a submit, queueing at capacity, per-job and probabilistic
faults), with every dialect's engine settings, and compare each reply, each state change and
every journal line byte for byte.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from fakeprovider.clock import DEFAULT_EPOCH
from fakeprovider.dialects import DIALECTS, get_dialect
from fakeprovider.engine import Engine
from fakeprovider.entries import jsonl_line
from fakeprovider.messages import (
    JobView,
    Reply,
    Request,
    StateChange,
    fast_change,
    fast_reply,
    fast_view,
)
from fakeprovider.scenario import Scenario, bundled_scenarios, load_scenario, parse_scenario
from tests.engine_reference import ReferenceEngine

WRITTEN = {
    "matched": """
jobs:
  - match: {prompt: "fail*"}
    timeline:
      - status: queued
      - {at: 1s, status: failed}
    error: {code: boom, message: it broke}
  - poll_after: 2s
    timeline:
      - status: queued
      - {after_polls: 2, status: processing, progress: 10}
      - {after_polls: 4, status: succeeded}
  - timeline:
      - status: processing
      - {at: 5s, status: completed_with_errors}
    summary: {missing: 1}
""",
    "capacity": """
concurrency: {max_active_jobs: 2, retry_after: 3s}
jobs:
  - timeline:
      - status: queued
      - {at: 2s, status: processing}
      - {at: 10s, status: succeeded}
""",
    "faulted": """
seed: 7
jobs:
  - timeline:
      - status: queued
      - {at: 0s, status: processing}
      - {at: 20s, status: succeeded}
  - match: {prompt: "slow*"}
    timeline:
      - status: queued
      - {at: 60s, status: succeeded}
faults:
  - {name: maybe, route: status, probability: 0.3, status: 503, retry_after: 2s}
  - {name: second-job, route: any, job: 1, every: 2, delay: 0.5s, headers: {X-Fault: "1"}}
  - {name: window, route: list, start: 10s, end: 40s, status: 500}
  - {name: lost, route: submit, nth: [3], action: lose_response}
  - {name: reset, route: content, times: 1, action: reset}
""",
    "instant": """
jobs:
  - match: {prompt: "fail*"}
    timeline:
      - status: failed
    error: {code: boom, message: it broke}
  - match: {prompt: "slow*"}
    timeline:
      - status: queued
      - {after_polls: 0, status: processing}
      - {at: 30s, status: succeeded}
  - match: {seed: 1}
    poll_after: 1s
    timeline:
      - {status: queued, progress: 0}
      - {at: 0s, progress: 5}
      - {at: 2s, status: succeeded}
  - timeline:
      - status: succeeded
""",
}

BODIES: tuple[dict[str, Any], ...] = (
    {"prompt": "a cat"},
    {"prompt": "fail please"},
    {"prompt": "slow dog", "model": "m"},
    {"prompt": "a cat", "seed": 1},
)


def _scenarios() -> dict[str, Scenario]:
    found = {name: load_scenario(path) for name, path in sorted(bundled_scenarios().items())}
    found.update({name: parse_scenario(text) for name, text in WRITTEN.items()})
    return found


SCENARIOS = _scenarios()


STATUSES = (
    None,
    None,
    frozenset({"queued"}),
    frozenset({"processing", "succeeded", "completed_with_errors"}),
    frozenset({"failed", "cancelled"}),
    frozenset(),
)


def _queued(view: JobView) -> bool:
    return view.status == "queued"


def _done(view: JobView) -> bool:
    return view.done


class _Within:
    """A list's ``statuses`` and ``select`` as one ``select``."""

    def __init__(self, request: Request) -> None:
        self.statuses = request.statuses or frozenset()
        self.select = request.select

    def __call__(self, view: JobView) -> bool:
        return view.status in self.statuses and (self.select is None or self.select(view))


def _request(rng: random.Random, ids: list[str], tokens: list[str]) -> Request:
    job_id = rng.choice(ids) if ids and rng.random() < 0.9 else "job_missing"
    credential = rng.choice([None, "other", *tokens, *tokens])
    client = rng.choice(["127.0.0.1:1", "127.0.0.1:2"])
    kind = rng.choice(["submit"] * 3 + ["status"] * 6 + ["content", "cancel", "list", "odd"])
    if kind == "submit" or (not ids and kind != "odd"):
        return Request(
            "submit",
            "POST",
            "/v1/jobs",
            body=rng.choice(BODIES),
            credential=credential,
            idempotency_key=rng.choice([None, None, "k1", "k2"]),
            client=client,
            callback_url=rng.choice([None, "http://127.0.0.1:9/hook"]),
            hold=rng.choice([0.0, 0.0, 0.0, 3.0, 120.0]),
        )
    if kind == "list":
        select: Callable[[JobView], bool] | None = rng.choice([None, _queued, _done])
        return Request(
            "list",
            "GET",
            "/v1/jobs",
            credential=credential,
            client=client,
            select=select,
            statuses=rng.choice(STATUSES),
            page=rng.choice([None, (0, 2), (1, 3), (5, 10)]),
            newest_first=rng.random() < 0.5,
        )
    if kind == "odd":
        if rng.random() < 0.5:
            return Request("unknown", "GET", "/nowhere", credential=credential, client=client)
        return Request(
            "submit",
            "POST",
            "/v1/jobs",
            credential=credential,
            client=client,
            problem="The body is not JSON.",
            problem_code="invalid_json",
        )
    return Request(
        kind,  # type: ignore[arg-type]
        "POST" if kind == "cancel" else "GET",
        f"/v1/jobs/{job_id}",
        job_id=job_id,
        credential=credential,
        client=client,
        cancel_from=rng.choice([None, frozenset({"queued"})]) if kind == "cancel" else None,
    )


def _play(make: Callable[..., Any], scenario: Scenario, dialect: str, seed: int) -> list[Any]:
    """Play a seeded random sequence; what was seen: replies, changes, journal lines."""
    settings = get_dialect(dialect)
    changes: list[tuple[StateChange, JobView | None]] = []
    # the engine keeps almost none of its changes: a reader following them gets every one
    keeping = {"keep_changes": 2, "follow_changes": True} if make is Engine else {}
    engine = make(
        scenario,
        start=0.5,
        epoch=DEFAULT_EPOCH,
        new_id=settings.new_job_id,
        poll_hints=settings.poll_hints,
        inline_result=settings.inline_result,
        queue_at_capacity=settings.queues_at_capacity,
        on_change=lambda change: changes.append((change, change.job)),
        **keeping,
    )
    followed: list[StateChange] = []
    rng = random.Random(seed)
    tokens = sorted(scenario.auth.tokens) if scenario.auth is not None else ["tok"]
    now = 0.0
    seen: list[Any] = []
    ids: list[str] = []
    for _ in range(120):
        now += rng.choice([0.0, 0.001, 0.25, 1.0, 3.0, 20.0, 90.0])
        request = _request(rng, ids, tokens)
        if make is ReferenceEngine and request.statuses is not None:
            # the reference knows no ``statuses``: the same filter, as a ``select``
            request = replace(request, statuses=None, select=_Within(request))
        reply = engine.handle(request, now)
        if reply.job is not None and reply.job.id not in ids:
            ids.append(reply.job.id)
        # a download's bytes (megabytes) are compared by digest, the rest field by field in order
        content = reply.content and hashlib.sha256(reply.content).hexdigest()
        fields = [(name, value) for name, value in vars(reply).items() if name != "content"]
        fields[1] = ("request", replace(reply.request, statuses=None, select=None))
        seen.append((content, fields, reply.job, reply.jobs))
        if rng.random() < 0.3:
            seen.append(("due", engine.advance_all(now + rng.choice([1.0, 30.0]))))
        engine.complete(
            reply, started=reply.respond_at, completed=reply.respond_at, status_code=200
        )
        if make is Engine and len(seen) % 5 == 0:  # (not from rng: both play the same draws)
            followed += engine.changes_since(len(followed))
    if make is Engine:
        followed += engine.changes_since(len(followed))
        assert engine.changes == followed[-len(engine.changes) :]
        assert engine.change_count == len(followed)
    else:
        followed = engine.changes
    seen.append(("changes", changes, followed, engine.job_count, engine.jobs))
    seen.append(("journal", [jsonl_line(entry) for entry in engine.journal.snapshot()]))
    return seen


@pytest.mark.parametrize("position", range(len(SCENARIOS)), ids=sorted(SCENARIOS))
def test_every_scenario_replies_and_journals_as_the_reference_engine(position: int) -> None:
    scenario = sorted(SCENARIOS)[position]
    names = list(DIALECTS)
    # four dialects per scenario, in turn: every dialect's settings meet several scenarios
    for k in range(4):
        dialect = names[(4 * position + k) % len(names)]
        seed = 1000 * position + k
        got = _play(Engine, SCENARIOS[scenario], dialect, seed)
        want = _play(ReferenceEngine, SCENARIOS[scenario], dialect, seed)
        assert len(got) == len(want)
        for step, (mine, theirs) in enumerate(zip(got, want, strict=True)):
            assert repr(mine) == repr(theirs), (dialect, step)
            assert mine == theirs, (dialect, step)


def test_a_fast_view_is_the_dataclass_view_field_for_field_in_order() -> None:
    fields: dict[str, Any] = {
        "id": "job_1",
        "spec_index": 0,
        "status": "queued",
        "progress": None,
        "created_at": 1.0,
        "status_since": 1.0,
        "now": 2.5,
        "poll_after": 5.0,
        "estimated_duration": None,
        "message": "m",
        "request": {"prompt": "a"},
        "result": None,
        "error": None,
        "summary": None,
        "callback_url": None,
        "throttled": True,
    }
    fast = fast_view(*fields.values())
    slow = JobView(**fields)
    assert (fast, hash(repr(fast)), vars(fast)) == (slow, hash(repr(slow)), vars(slow))
    assert list(vars(fast)) == list(vars(slow))
    assert sys.getsizeof(vars(fast)) == sys.getsizeof(vars(slow))  # keys shared, as the class's
    with pytest.raises(AttributeError):
        fast.status = "failed"  # type: ignore[misc]


def test_a_fast_change_is_the_dataclass_change_field_for_field_in_order() -> None:
    view = fast_view(
        "job_1", 0, "queued", None, 1.0, 1.0, 1.0, None, None, "m", {}, None, None, None, None
    )
    fast = fast_change("job_1", "queued", 1.0, view)
    slow = StateChange("job_1", "queued", 1.0, view)
    assert (fast, repr(fast), hash(fast)) == (slow, repr(slow), hash(slow))
    assert list(vars(fast).items()) == list(vars(slow).items())
    assert sys.getsizeof(vars(fast)) == sys.getsizeof(vars(slow))  # keys shared, as the class's


def test_a_fast_reply_is_the_dataclass_reply_field_for_field_in_order() -> None:
    request = Request("status", "GET", "/v1/jobs/j", job_id="j")
    fast = fast_reply(3, request, 202, 4.5, job=None, error=None, delay=1.5, created=True)
    slow = Reply(3, request, 202, 4.5, delay=1.5, created=True)
    assert fast == slow
    assert list(vars(fast).items()) == list(vars(slow).items())
    assert hash(fast) == hash(slow)


@pytest.mark.parametrize("now", [0.0, -0.0, 1e-300])
def test_a_submit_at_clock_zero_replies_and_journals_as_the_reference_engine(now: float) -> None:
    # a view at -0.0 is not one at 0.0 (the reply's instant is now + 0.0): no shortcut there
    seen = []
    for make in (Engine, ReferenceEngine):
        engine = make(SCENARIOS["long-render"], epoch=DEFAULT_EPOCH)
        request = Request("submit", "POST", "/v1/jobs", body={"prompt": "a cat"})
        reply = engine.handle(request, now)
        lines = [jsonl_line(entry) for entry in engine.journal.snapshot()]
        changes = [(change, change.job) for change in engine.changes]
        seen.append((repr(reply), repr(reply.job), lines, repr(changes)))
    assert seen[0] == seen[1]
    assert f"now={now!r}, poll_after" in seen[0][3]  # the change's view, at the very instant
