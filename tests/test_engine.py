"""The pure engine: timelines, faults, limits, auth, idempotency, determinism."""

from __future__ import annotations

import dataclasses
import email.utils
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.clock import DEFAULT_EPOCH
from fakeprovider.engine import Engine, _Ordered
from fakeprovider.jobstore import MemoryJobStore
from fakeprovider.journal import Entry
from fakeprovider.messages import ApiError, Request
from fakeprovider.scenario import load_scenario, parse_scenario
from tests.thorough import thorough


def engine_for(text: str) -> Engine:
    return Engine(parse_scenario(text), epoch=DEFAULT_EPOCH)


def submit(engine: Engine, now: float, **kwargs: object) -> str:
    reply = engine.handle(
        Request("submit", "POST", "/v1/jobs", body={"prompt": "a cat"}, **kwargs), now
    )  # type: ignore[arg-type]
    assert reply.job is not None
    return reply.job.id


def status(engine: Engine, job_id: str, now: float, **kwargs: object):  # type: ignore[no-untyped-def]
    return engine.handle(
        Request("status", "GET", f"/v1/jobs/{job_id}", job_id=job_id, **kwargs), now
    )  # type: ignore[arg-type]


TIMED = """
jobs:
  - poll_after: 5s
    timeline:
      - status: queued
      - {at: 4s, status: processing, progress: 5}
      - {at: 30s, progress: 35}
      - {at: 93s, status: succeeded}
"""


def test_timeline_by_time_shows_each_status_from_its_instant() -> None:
    engine = engine_for(TIMED)
    job = submit(engine, 10.0)
    shown = [
        (status(engine, job, t).job.status, status(engine, job, t).job.progress)
        for t in (13.9, 14.0, 40.0, 102.9, 103.0)
    ]  # type: ignore[union-attr]
    assert shown == [
        ("queued", None),
        ("processing", 5),
        ("processing", 35),
        ("processing", 35),
        ("succeeded", 100),
    ]


def test_terminal_view_has_no_poll_hint_and_a_result() -> None:
    engine = engine_for(TIMED)
    job = submit(engine, 0.0)
    view = status(engine, job, 100.0).job
    assert (view.done, view.poll_after, view.completed_at, view.result.size_bytes) == (
        True,
        None,
        93.0,
        262144,
    )


def test_timeline_by_poll_count_changes_after_the_nth_read() -> None:
    engine = engine_for(
        "jobs:\n  - timeline:\n      - status: queued\n      - {after_polls: 2, status: processing}\n"
        "      - {after_polls: 3, status: succeeded}\n"
    )
    job = submit(engine, 0.0)
    assert [status(engine, job, float(t)).job.status for t in range(1, 6)] == [  # type: ignore[union-attr]
        "queued",
        "queued",
        "processing",
        "succeeded",
        "succeeded",
    ]


def test_faulted_status_reads_do_not_count_as_polls() -> None:
    engine = engine_for(
        "jobs:\n  - timeline:\n      - status: queued\n      - {after_polls: 1, status: succeeded}\n"
        "faults:\n  - {name: down, route: status, nth: 1, status: 503}\n"
    )
    job = submit(engine, 0.0)
    codes = [
        (r.status_code, r.job.status if r.job else None)
        for r in (status(engine, job, t) for t in (1.0, 2.0, 3.0))
    ]
    assert codes == [(503, None), (200, "queued"), (200, "succeeded")]


def test_jobs_are_matched_by_body_then_by_order_and_the_last_repeats() -> None:
    engine = engine_for(
        "jobs:\n  - {name: a, timeline: [{status: queued}]}\n  - {name: b, timeline: [{status: failed}]}\n"
        "  - {name: preview, match: {prompt: 'preview*'}, timeline: [{status: succeeded}]}\n"
    )
    specs = []
    for prompt in ("x", "preview: a cat", "y", "z"):
        reply = engine.handle(Request("submit", "POST", "/v1/jobs", body={"prompt": prompt}), 0.0)
        specs.append(reply.job.spec_index)  # type: ignore[union-attr]
    assert specs == [0, 2, 1, 1]


@pytest.mark.parametrize(
    ("when", "fired_on"),
    [
        ("nth: 3", [3]),
        ("nth: [2, 4]", [2, 4]),
        ("every: 3", [3, 6]),
        ("every: 2, times: 2", [2, 4]),
        ("start: 3s, end: 5s", [3, 4]),
    ],
)
def test_fault_selection(when: str, fired_on: list[int]) -> None:
    engine = engine_for(
        f"jobs: [{{timeline: [{{status: queued}}]}}]\nfaults:\n  - {{name: f, route: status, status: 502, {when}}}\n"
    )
    job = submit(engine, 0.0)
    codes = [status(engine, job, float(n)).status_code for n in range(1, 8)]
    assert [n for n, code in zip(range(1, 8), codes, strict=True) if code == 502] == fired_on


def test_seeded_probability_is_reproducible_and_seed_dependent() -> None:
    def fired(seed: int) -> list[int]:
        engine = engine_for(
            f"seed: {seed}\njobs: [{{timeline: [{{status: queued}}]}}]\n"
            "faults:\n  - {name: f, route: status, status: 503, probability: 0.3}\n"
        )
        job = submit(engine, 0.0)
        return [n for n in range(1, 200) if status(engine, job, float(n)).status_code == 503]

    first = fired(1)
    assert fired(1) == first
    assert fired(2) != first
    assert 30 < len(first) < 90


def test_fault_delay_moves_the_response_instant() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: slow, route: status, delay: 3s}\n"
    )
    job = submit(engine, 0.0)
    reply = status(engine, job, 10.0)
    assert (reply.status_code, reply.delay, reply.respond_at, reply.job.status) == (
        200,
        3.0,
        13.0,
        "queued",
    )  # type: ignore[union-attr]


@pytest.mark.parametrize("form", ["imf", "rfc850", "asctime"])
def test_retry_after_http_date_parses_back_to_the_scripted_instant(form: str) -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n"
        f"  - {{name: busy, route: status, status: 503, delay: 1500ms, retry_after: {{delay: 30s, form: {form}}}}}\n"
    )
    job = submit(engine, 0.0)
    reply = status(engine, job, 100.25)
    ((name, value),) = reply.headers
    parsed = email.utils.parsedate_to_datetime(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=__import__("datetime").timezone.utc)
    # Date is written for the response instant (100.25 + 1.5 s); Retry-After is 30 s later,
    # rounded up to the next whole second so that a client waiting until it waits long enough.
    assert name == "Retry-After"
    assert parsed.timestamp() == DEFAULT_EPOCH + 132.0
    record = engine.journal.last.retry_after
    assert (record.form, record.not_before) == (form, 132.0)  # type: ignore[union-attr]


def test_retry_after_seconds_and_ms_forms() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n"
        "  - {name: a, route: status, nth: 1, status: 503, retry_after: 2500ms}\n"
        "  - {name: b, route: status, nth: 2, status: 429, retry_after: {delay: 1500ms, form: ms}}\n"
        "  - {name: c, route: status, nth: 3, status: 503, retry_after: {delay: 1s, raw: soon}}\n"
    )
    job = submit(engine, 0.0)
    headers = [status(engine, job, 1.0).headers for _ in range(3)]
    assert headers == [
        (("Retry-After", "3"),),
        (("retry-after-ms", "1500"),),
        (("Retry-After", "soon"),),
    ]
    records = [
        (e.retry_after.header, e.retry_after.not_before)
        for e in engine.journal.filter(kind="status")
    ]  # type: ignore[union-attr]
    assert records == [("retry-after", 4.0), ("retry-after-ms", 2.5), ("retry-after", None)]


def test_token_bucket_answers_429_with_the_computed_wait() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\n"
        "rate_limit: {capacity: 2, refill_every: 10s, routes: [status]}\n"
    )
    job = submit(engine, 0.0)
    replies = [status(engine, job, t) for t in (0.0, 1.0, 2.0, 10.0, 11.0)]
    assert [(r.status_code, r.headers) for r in replies] == [
        (200, ()),
        (200, ()),
        (429, (("Retry-After", "8"),)),
        (200, ()),
        (429, (("Retry-After", "9"),)),
    ]
    assert engine.journal.last.error_code == "rate_limited"


def test_a_token_refilled_in_float_steps_is_there_when_the_429_said() -> None:
    # ten refills of a tenth add up to 0.9999999999999999: without slack the 11th read got a
    # 429 with 'Retry-After: 0', and every read after it at the same moment the same answer
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\n"
        "rate_limit: {capacity: 1, refill_every: 10s, routes: [status]}\n"
    )
    job = submit(engine, 0.0)
    replies = [status(engine, job, float(t)) for t in range(11)]
    assert [r.status_code for r in replies] == [200, *[429] * 9, 200]


def test_rate_limit_buckets_are_per_key() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nrate_limit: {capacity: 1, refill_every: 1m}\n"
    )
    job = submit(engine, 0.0, client="a")
    assert [status(engine, job, 1.0, client=c).status_code for c in ("a", "b", "b")] == [
        429,
        200,
        429,
    ]


def test_concurrency_limit_rejects_submits_until_a_job_ends() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}, {at: 10s, status: succeeded}]}]\n"
        "concurrency: {max_active_jobs: 1, retry_after: 5s}\n"
    )
    codes = []
    for t in (0.0, 5.0, 10.0):
        reply = engine.handle(Request("submit", "POST", "/v1/jobs", body={"prompt": "x"}), t)
        codes.append((reply.status_code, reply.headers))
    assert codes == [(202, ()), (429, (("Retry-After", "5"),)), (202, ())]


def test_auth_missing_invalid_and_revoked_tokens() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nauth: {tokens: [good], revoke_after: 2}\n"
    )
    results = []
    for credential in (None, "bad", "good", "good", "good"):
        reply = engine.handle(Request("list", "GET", "/v1/jobs", credential=credential), 0.0)
        results.append((reply.status_code, reply.error.code if reply.error else None))
    assert results == [
        (401, "missing_credentials"),
        (401, "invalid_token"),
        (200, None),
        (200, None),
        (401, "token_revoked"),
    ]


def test_idempotency_key_replays_the_job_or_rejects_a_different_body() -> None:
    engine = engine_for("jobs: [{timeline: [{status: queued}]}]\n")
    first = engine.handle(
        Request("submit", "POST", "/", body={"prompt": "a"}, idempotency_key="k1"), 0.0
    )
    again = engine.handle(
        Request("submit", "POST", "/", body={"prompt": "a"}, idempotency_key="k1"), 1.0
    )
    other = engine.handle(
        Request("submit", "POST", "/", body={"prompt": "b"}, idempotency_key="k1"), 2.0
    )
    assert (again.job.id, again.created) == (first.job.id, False)  # type: ignore[union-attr]
    assert (other.status_code, other.error.code) == (422, "idempotency_key_reused")  # type: ignore[union-attr]
    assert len(engine.jobs) == 1


def test_lost_submit_response_still_creates_the_job() -> None:
    engine = Engine(load_scenario("ambiguous-submit"))
    reply = engine.handle(
        Request("submit", "POST", "/v1/jobs", body={"prompt": "x"}, idempotency_key="k"), 0.0
    )
    assert (reply.action, len(engine.jobs)) == ("lose_response", 1)
    entry = engine.journal.last
    assert (entry.status_code, entry.dropped, entry.fault, entry.job_id) == (
        None,
        "lose_response",
        "lost-submit-response",
        reply.job.id,
    )  # type: ignore[union-attr]


def test_reset_fault_handles_nothing() -> None:
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: rst, route: submit, nth: 1, action: reset}\n"
    )
    reply = engine.handle(Request("submit", "POST", "/v1/jobs", body={"prompt": "x"}), 0.0)
    assert (reply.action, reply.job, engine.jobs) == ("reset", None, [])


def test_content_before_success_is_409_and_after_is_deterministic_bytes() -> None:
    engine = engine_for(TIMED)
    job = submit(engine, 0.0)
    early = engine.handle(Request("content", "GET", "/c", job_id=job), 50.0)
    late = engine.handle(Request("content", "GET", "/c", job_id=job), 93.0)
    assert (early.status_code, early.error.code) == (409, "job_not_ready")  # type: ignore[union-attr]
    assert late.content is not None
    assert (len(late.content), late.content[4:8]) == (262144, b"ftyp")


def test_cancel_ends_a_running_job_and_refuses_an_ended_one() -> None:
    engine = engine_for(TIMED)
    job = submit(engine, 0.0)
    cancel = engine.handle(Request("cancel", "POST", "/x", job_id=job), 20.0)
    again = engine.handle(Request("cancel", "POST", "/x", job_id=job), 21.0)
    assert (cancel.status_code, cancel.job.status) == (200, "cancelled")  # type: ignore[union-attr]
    assert (again.status_code, again.error.code) == (409, "job_already_terminal")  # type: ignore[union-attr]
    assert status(engine, job, 200.0).job.status == "cancelled"  # type: ignore[union-attr]


def test_unknown_job_is_404_job_not_found() -> None:
    engine = engine_for(TIMED)
    reply = status(engine, "job_nope", 0.0)
    assert (reply.status_code, reply.error.code, engine.journal.last.kind) == (
        404,
        "job_not_found",
        "status",
    )  # type: ignore[union-attr]


def test_journal_records_true_status_and_when_it_began() -> None:
    engine = engine_for(TIMED)
    job = submit(engine, 0.0)
    status(engine, job, 95.0)
    entry = engine.journal.last
    assert (entry.job_status, entry.true_status, entry.status_since, entry.poll_after) == (
        "succeeded",
        "succeeded",
        93.0,
        None,
    )


# -- determinism ---------------------------------------------------------------------------

requests_strategy = st.lists(
    st.tuples(
        st.sampled_from(["submit", "status", "content", "cancel", "list"]),
        st.integers(0, 3),
        st.floats(0, 30, allow_nan=False),
    ),
    max_size=40,
)


@thorough(60, deadline=None)
@given(
    requests=requests_strategy,
    scenario=st.sampled_from(["transient-5xx", "rate-limited", "rate-limit-budget"]),
)
def test_same_requests_and_clock_readings_give_the_same_journal(
    requests: list[tuple[str, int, float]], scenario: str
) -> None:
    def play() -> list[dict[str, object]]:
        engine = Engine(load_scenario(scenario), epoch=DEFAULT_EPOCH)
        now = 0.0
        for kind, index, gap in requests:
            now += gap
            ids = [j.id for j in engine.jobs]
            job_id = ids[index % len(ids)] if ids else "job_missing"
            if kind == "submit":
                request = Request("submit", "POST", "/v1/jobs", body={"prompt": f"p{index}"})
            elif kind == "list":
                request = Request("list", "GET", "/v1/jobs")
            else:
                request = Request(kind, "GET", f"/v1/jobs/{job_id}", job_id=job_id)  # type: ignore[arg-type]
            reply = engine.handle(request, now)
            engine.complete(
                reply,
                started=reply.respond_at,
                completed=reply.respond_at,
                status_code=reply.status_code,
            )
        return [e.to_dict() for e in engine.journal]

    assert play() == play()


def test_computed_retry_after_is_not_rounded_up_for_float_noise() -> None:
    from fakeprovider.http import _ceil

    assert 0.1 * 3 * 10 == 3.0000000000000004  # the noise a scaled scenario produces
    assert (_ceil(0.1 * 3 * 10), _ceil(3.0), _ceil(3.001)) == (3, 3, 4)
    engine = engine_for(
        "jobs: [{timeline: [{status: queued}]}]\nrate_limit: {capacity: 1, refill_every: 3s, routes: [status]}\n"
    ).scenario.scaled(0.1)
    scaled = Engine(engine, epoch=DEFAULT_EPOCH)
    job = submit(scaled, 0.0)
    status(scaled, job, 0.0)
    assert status(scaled, job, 0.0).headers == (("Retry-After", "1"),)


def held_submit(engine: Engine, now: float, hold: float):  # type: ignore[no-untyped-def]
    return engine.handle(
        Request("submit", "POST", "/v1/jobs", body={"prompt": "a cat"}, hold=hold), now
    )


def test_held_submit_answers_when_the_job_ends_inside_the_hold() -> None:
    reply = held_submit(engine_for(TIMED), 10.0, hold=120.0)
    assert (reply.delay, reply.respond_at, reply.job.status, reply.job.now) == (
        93.0,
        103.0,
        "succeeded",
        103.0,
    )


def test_held_submit_answers_the_state_at_the_end_of_a_shorter_hold() -> None:
    engine = engine_for(TIMED)
    reply = held_submit(engine, 10.0, hold=60.0)
    assert (reply.delay, reply.job.status, reply.job.progress) == (60.0, "processing", 35)
    assert status(engine, reply.job.id, 103.0).job.status == "succeeded"


def test_held_submit_waits_the_whole_hold_when_only_polls_move_the_job() -> None:
    engine = engine_for(
        "jobs:\n- timeline:\n  - status: queued\n  - {after_polls: 2, status: succeeded}\n"
    )
    reply = held_submit(engine, 0.0, hold=5.0)
    assert (reply.delay, reply.job.status) == (5.0, "queued")


def test_held_submit_adds_a_scripted_delay_to_the_hold() -> None:
    engine = engine_for(TIMED + "faults:\n  - {name: slow, route: submit, delay: 2s}\n")
    reply = held_submit(engine, 0.0, hold=10.0)
    assert (reply.delay, reply.respond_at, reply.job.status) == (12.0, 12.0, "processing")


def test_a_list_shows_the_filtered_page_and_counts_every_match() -> None:
    engine = engine_for(
        "jobs:\n  - match: {prompt: slow}\n    timeline: [{status: queued}]\n"
        "  - timeline: [{status: queued}, {at: 1s, status: succeeded}]\n"
    )
    ids = [
        engine.handle(Request("submit", "POST", "/", body={"prompt": p}), 0.0).job.id  # type: ignore[union-attr]
        for p in ("fast", "slow", "fast", "fast")
    ]

    def listed(**options: object) -> tuple[int, list[str]]:
        reply = engine.handle(Request("list", "GET", "/", **options), 2.0)  # type: ignore[arg-type]
        return reply.total, [job.id for job in reply.jobs]

    def done(job: object) -> bool:
        return getattr(job, "status", None) == "succeeded"

    assert listed() == (4, ids)
    assert listed(select=done) == (3, [ids[0], ids[2], ids[3]])
    assert listed(select=done, page=(1, 1)) == (3, [ids[2]])
    assert listed(select=done, page=(0, 2), newest_first=True) == (3, [ids[3], ids[2]])
    assert engine.journal.snapshot()[-1].listed == ((ids[3], "succeeded"), (ids[2], "succeeded"))


class _ForwardOnlyStore(MemoryJobStore):
    """A job store that iterates only oldest first (``__reversed__`` is optional for a store)."""

    __reversed__ = None  # type: ignore[assignment]


@pytest.mark.parametrize("store", [None, "forward-only"])
def test_an_unfiltered_page_shows_its_jobs_counts_all_and_brings_every_job_up_to_now(
    store: str | None,
) -> None:
    scenario = parse_scenario(
        "jobs: [{timeline: [{status: queued}, {at: 1s, status: succeeded}]}]\n"
    )
    engine = Engine(
        scenario,
        epoch=DEFAULT_EPOCH,
        store=_ForwardOnlyStore() if store else None,  # type: ignore[arg-type]
    )
    ids = [submit(engine, float(t)) for t in range(5)]

    def listed(now: float, **options: object) -> tuple[int, list[tuple[str, str]]]:
        reply = engine.handle(Request("list", "GET", "/", **options), now)  # type: ignore[arg-type]
        return reply.total, [(job.id, job.status) for job in reply.jobs]

    assert listed(4.5, page=(1, 2), newest_first=True) == (
        5,
        [(ids[3], "succeeded"), (ids[2], "succeeded")],
    )
    assert listed(4.5, page=(4, 3), newest_first=True) == (5, [(ids[0], "succeeded")])
    assert listed(4.5, page=(5, 3), newest_first=True) == (5, [])
    assert listed(4.5, page=(3, 5)) == (5, [(ids[3], "succeeded"), (ids[4], "queued")])
    # the jobs the page did not show moved on too: their state changes happened on time
    assert [(c.job_id, c.status, c.at) for c in engine.changes if c.status == "succeeded"] == [
        (job_id, "succeeded", float(t) + 1.0) for t, job_id in enumerate(ids[:4])
    ]
    assert engine.job_count == 5


def test_a_cancel_can_be_limited_to_some_statuses() -> None:
    engine = engine_for("jobs: [{timeline: [{status: queued}, {at: 1s, status: processing}]}]\n")
    job_id = engine.handle(Request("submit", "POST", "/", body={}), 0.0).job.id  # type: ignore[union-attr]
    queued_only = frozenset({"queued"})
    refused = engine.handle(
        Request("cancel", "POST", "/", job_id=job_id, cancel_from=queued_only), 2.0
    )
    assert (refused.status_code, refused.error) == (
        409,
        ApiError(
            "job_not_cancellable",
            f"Job {job_id} is 'processing'; only a job that is 'queued' can be cancelled.",
        ),
    )
    assert refused.job is not None
    assert refused.job.status == "processing"
    second = engine.handle(Request("submit", "POST", "/", body={}), 2.0).job.id  # type: ignore[union-attr]
    accepted = engine.handle(
        Request("cancel", "POST", "/", job_id=second, cancel_from=queued_only), 2.5
    )
    assert (accepted.status_code, accepted.job.status) == (200, "cancelled")  # type: ignore[union-attr]


THROTTLING = """
jobs:
  - timeline: [{status: queued}, {at: 1s, status: processing}, {at: 10s, status: succeeded}]
  - timeline: [{status: queued}, {at: 2s, status: processing}, {at: 5s, status: succeeded}]
concurrency: {max_active_jobs: 1, retry_after: 7s}
"""


def test_over_capacity_a_queueing_provider_holds_the_job_until_a_slot_frees() -> None:
    engine = Engine(parse_scenario(THROTTLING), epoch=DEFAULT_EPOCH, queue_at_capacity=True)
    first = engine.handle(Request("submit", "POST", "/", body={"prompt": "a"}), 0.0)
    second = engine.handle(Request("submit", "POST", "/", body={"prompt": "b"}), 1.0)
    assert (second.status_code, second.job.status, second.job.throttled) == (202, "queued", True)  # type: ignore[union-attr]
    job_id = second.job.id  # type: ignore[union-attr]

    def read(at: float) -> tuple[str, bool]:
        view = engine.handle(Request("status", "GET", "/", job_id=job_id), at).job
        assert view is not None
        return view.status, view.throttled

    # its timeline starts when the first job ends (10 s): processing at 12 s, done at 15 s
    assert [read(t) for t in (5.0, 9.9, 10.0, 11.9, 12.0, 15.0)] == [
        ("queued", True),
        ("queued", True),
        ("queued", False),
        ("queued", False),
        ("processing", False),
        ("succeeded", False),
    ]
    assert first.job is not None
    changes = [(c.job_id, c.status, c.at) for c in engine.changes]
    assert changes == [
        (first.job.id, "queued", 0.0),
        (job_id, "queued", 1.0),
        (first.job.id, "processing", 1.0),
        (first.job.id, "succeeded", 10.0),
        (job_id, "processing", 12.0),
        (job_id, "succeeded", 15.0),
    ]


def test_a_throttled_job_starts_on_time_without_requests_and_can_be_cancelled() -> None:
    engine = Engine(parse_scenario(THROTTLING), epoch=DEFAULT_EPOCH, queue_at_capacity=True)
    engine.handle(Request("submit", "POST", "/", body={"prompt": "a"}), 0.0)
    waiting = engine.handle(Request("submit", "POST", "/", body={"prompt": "b"}), 0.0).job
    cancelled = engine.handle(Request("submit", "POST", "/", body={"prompt": "c"}), 0.0).job
    assert waiting is not None
    assert cancelled is not None
    engine.handle(Request("cancel", "POST", "/", job_id=cancelled.id), 0.5)
    # the dispatcher's advance_all alone moves every job at its scripted time
    changes = engine.advance_all(20.0)
    assert [(c.job_id, c.status, c.at) for c in changes] == [
        (engine.jobs[0].id, "processing", 1.0),
        (engine.jobs[0].id, "succeeded", 10.0),
        (waiting.id, "processing", 12.0),
        (waiting.id, "succeeded", 15.0),
    ]
    assert [view.status for view in engine.jobs] == ["succeeded", "succeeded", "cancelled"]


def test_over_capacity_a_refusing_provider_answers_429() -> None:
    engine = Engine(parse_scenario(THROTTLING), epoch=DEFAULT_EPOCH)
    engine.handle(Request("submit", "POST", "/", body={"prompt": "a"}), 0.0)
    refused = engine.handle(Request("submit", "POST", "/", body={"prompt": "b"}), 1.0)
    assert (refused.status_code, refused.error.code, refused.headers) == (  # type: ignore[union-attr]
        429,
        "too_many_active_jobs",
        (("Retry-After", "7"),),
    )


def test_job_numbers_by_status_stay_sorted_through_adds_and_removes_in_any_order() -> None:
    rng = random.Random(15)
    ordered = _Ordered()
    kept: set[int] = set()
    blocks = 0
    # grow past several blocks (adds outnumber removes), then shrink, then empty it
    for remove_share in (0.25, 0.9):
        for _ in range(6000):
            if kept and rng.random() < remove_share:
                number = rng.choice(tuple(kept))
                ordered.remove(number)
                kept.discard(number)
            else:
                number = rng.randrange(10_000)
                if number not in kept:
                    ordered.add(number)
                    kept.add(number)
            blocks = max(blocks, len(ordered._blocks))
            assert len(ordered) == len(kept)
        assert list(ordered.ascending()) == sorted(kept)
        assert list(ordered.descending()) == sorted(kept, reverse=True)
    for number in rng.sample(sorted(kept), len(kept)):
        ordered.remove(number)
    assert blocks >= 3
    assert len(ordered) == 0
    assert not ordered._blocks


LISTED = """
jobs:
  - match: {prompt: quick}
    timeline:
      - status: queued
      - {at: 1s, status: succeeded}
  - timeline:
      - status: queued
      - {at: 5s, status: processing}
"""


def _page(engine: Engine, now: float, statuses: frozenset[str], page: tuple[int, int]) -> Any:
    request = Request("list", "GET", "/v1/jobs", statuses=statuses, page=page, newest_first=True)
    reply = engine.handle(request, now)
    return reply.total, [(view.id, view.status) for view in reply.jobs]


def test_a_list_filtered_by_status_shows_the_same_page_from_the_index_or_from_every_job() -> None:
    shared = MemoryJobStore()
    other = Engine(parse_scenario(LISTED), store=shared, new_id=lambda seed, n: f"other_{n}")
    other.handle(Request("submit", "POST", "/v1/jobs", body={"prompt": "quick"}), 0.0)
    mine = Engine(parse_scenario(LISTED), store=shared)  # a store with a job it did not make
    alone = Engine(parse_scenario(LISTED))
    for index in range(6):
        body = {"prompt": "quick" if index % 3 == 0 else "slow"}
        for engine in (mine, alone):
            engine.handle(Request("submit", "POST", "/v1/jobs", body=body), float(index))
    queued = frozenset({"queued"})
    either = frozenset({"succeeded", "processing"})
    assert _page(alone, 6.5, queued, (0, 10)) == (
        3,
        [(alone.jobs[i].id, "queued") for i in (5, 4, 2)],
    )
    assert _page(alone, 6.5, either, (1, 2)) == (
        3,
        [(alone.jobs[1].id, "processing"), (alone.jobs[0].id, "succeeded")],
    )
    # the other engine's job is not in this one's index (nor on its schedule: it is still
    # queued here): every job is walked, and it is listed
    assert _page(mine, 6.5, queued, (0, 10)) == (
        4,
        [(mine.jobs[i].id, "queued") for i in (6, 5, 3)] + [("other_1", "queued")],
    )


def test_job_numbers_added_in_order_fill_and_split_blocks_as_sorted() -> None:
    ordered = _Ordered()
    for number in range(3000):  # jobs created in order: each newer than every one kept
        ordered.add(number)
    ordered.remove(1500)
    ordered.add(1500)  # one out of order, into a full block that splits
    ordered.add(3000)
    assert len(ordered._blocks) >= 3
    assert list(ordered.ascending()) == list(range(3001))
    assert list(ordered.descending()) == list(range(3000, -1, -1))


def _changed(engine_changes: list[Any]) -> list[tuple[str, str, float]]:
    return [(change.job_id, change.status, change.at) for change in engine_changes]


def test_an_engine_keeps_only_its_latest_state_changes() -> None:
    announced: list[Any] = []
    engine = Engine(
        parse_scenario(TIMED), epoch=DEFAULT_EPOCH, keep_changes=10, on_change=announced.append
    )
    for index in range(300):
        submit(engine, float(index))
    engine.advance_all(1000.0)
    kept = engine.changes
    # queued, processing and succeeded per job: every one announced, the latest ones kept
    assert engine.change_count == len(announced) == 900
    assert 10 <= len(kept) < 2 * 10 + 64
    assert _changed(kept) == _changed(announced[-len(kept) :])


def test_a_reader_following_the_changes_misses_none_however_few_are_kept() -> None:
    announced: list[Any] = []
    engine = Engine(
        parse_scenario(TIMED),
        epoch=DEFAULT_EPOCH,
        keep_changes=0,
        follow_changes=True,
        on_change=announced.append,
    )
    read: list[Any] = []
    for index in range(400):
        submit(engine, float(index))
        if index % 150 == 149:  # 150 or more changes between two reads
            read += engine.changes_since(len(read))
    engine.advance_all(1000.0)
    read += engine.changes_since(len(read))
    assert _changed(read) == _changed(announced)
    assert len(read) == 1200
    assert engine.changes_since(len(read)) == []


def test_changes_let_go_cannot_be_read_again() -> None:
    engine = Engine(parse_scenario(TIMED), epoch=DEFAULT_EPOCH, keep_changes=5)
    for index in range(100):
        submit(engine, float(index))
    gone = engine.change_count - len(engine.changes)
    assert gone > 0
    with pytest.raises(ValueError, match="let go") as early:
        engine.changes_since(gone - 1)
    assert str(early.value) == (
        f"changes_since(count={gone - 1}) asks for state changes let go already: only those"
        f" from the {gone}-th on are kept; read them with changes_since from the start, or"
        " keep more than keep_changes=5."
    )
    with pytest.raises(ValueError, match="changes made") as late:
        engine.changes_since(101)
    assert str(late.value) == "count must be between 0 and 100 (the changes made), got 101"


def test_advance_all_returns_every_change_it_made_however_few_are_kept() -> None:
    engine = Engine(parse_scenario(TIMED), epoch=DEFAULT_EPOCH, keep_changes=0)
    ids = [submit(engine, 0.0) for _ in range(200)]
    due = engine.advance_all(100.0)
    assert [(c.job_id, c.status) for c in due] == [
        (job_id, status) for job_id in ids for status in ("processing", "succeeded")
    ]


def test_keep_changes_cannot_be_negative() -> None:
    with pytest.raises(ValueError, match="keep_changes") as raised:
        Engine(parse_scenario(TIMED), keep_changes=-1)
    assert str(raised.value) == "keep_changes must be 0 or more, got -1"


def test_an_engine_told_to_follow_keeps_what_it_still_has_until_read() -> None:
    engine = Engine(parse_scenario(TIMED), epoch=DEFAULT_EPOCH, keep_changes=5)
    for index in range(100):
        submit(engine, float(index))
    gone = engine.change_count - len(engine.changes)
    assert engine.changes_let_go == gone
    engine.follow()
    later = [submit(engine, 200.0) for _ in range(300)]
    read = engine.changes_since(gone)
    assert [c.job_id for c in read][-300:] == later
    assert len(read) == 400 - gone


#: TIMED with webhooks that name no url: only a job with a callback_url can have one sent.
QUIET = TIMED + "webhooks:\n  events: [job.succeeded]\n"
HOOK = "http://127.0.0.1:9/hook"


def test_a_quiet_jobs_changes_are_not_kept_for_a_reader_past_the_last_keep_changes() -> None:
    engine = Engine(parse_scenario(QUIET), epoch=DEFAULT_EPOCH, keep_changes=3, follow_changes=True)
    hooked = [submit(engine, 0.0, callback_url=HOOK) for _ in range(5)]
    quiet = [submit(engine, 0.0) for _ in range(200)]
    assert engine.sendable_count == 5
    read = engine.changes_since(0)
    assert len(read) == engine.change_count == 205  # counted all the same
    kept = [c.job_id for c in read if c is not None]
    assert kept[:5] == hooked
    assert 3 <= len(kept) - 5 < 3 + 64  # the quiet ones: the latest only
    assert kept[5:] == quiet[-(len(kept) - 5) :]
    assert read[5] is None
    now_kept = [c.job_id for c in engine.changes]  # (the read let more of them go)
    assert now_kept == hooked + quiet[-(len(now_kept) - 5) :]
    assert len(now_kept) >= 3 + 5


def test_in_a_run_whose_webhooks_name_a_url_every_change_is_kept_for_a_reader() -> None:
    text = QUIET.replace("webhooks:\n", "webhooks:\n  url: http://127.0.0.1:9/all\n")
    engine = Engine(parse_scenario(text), epoch=DEFAULT_EPOCH, keep_changes=3, follow_changes=True)
    ids = [submit(engine, 0.0) for _ in range(200)]
    assert engine.sendable_count == engine.change_count == 200
    assert [c.job_id for c in engine.changes_since(0)] == ids  # type: ignore[union-attr]


def test_a_quiet_jobs_timed_steps_are_left_to_whoever_looks_at_it() -> None:
    engine = Engine(parse_scenario(QUIET), epoch=DEFAULT_EPOCH)
    quiet = submit(engine, 0.0)
    hooked = submit(engine, 1.0, callback_url=HOOK)
    assert engine.next_due() == 4.0
    assert engine.next_due(sendable_only=True) == 5.0
    moved = engine.advance_all(10.0, sendable_only=True)
    assert [(c.job_id, c.status) for c in moved] == [(hooked, "processing")]
    assert engine.next_due() == 4.0  # the quiet job's step, for a list or a read
    assert engine.next_due(sendable_only=True) == 31.0
    moved = engine.advance_all(10.0)
    assert [(c.job_id, c.status) for c in moved] == [(quiet, "processing")]
    assert status(engine, quiet, 95.0).job.status == "succeeded"


def test_advance_all_moves_quiet_and_other_jobs_in_the_order_their_steps_come() -> None:
    rng = random.Random(7)
    quiet = parse_scenario(QUIET)
    loud = parse_scenario(QUIET.replace("webhooks:\n", "webhooks:\n  url: http://h:9/\n"))
    seen = []
    for scenario in (quiet, loud):
        rng.seed(7)
        engine = Engine(scenario, epoch=DEFAULT_EPOCH)
        for index in range(60):
            submit(engine, index * 1.5, callback_url=rng.choice([None, HOOK]))
        moved = engine.advance_all(200.0)
        seen.append([(c.job_id, c.status, c.at) for c in moved])
    assert seen[0] == seen[1]
    assert len(seen[0]) == 120


def test_the_fields_the_engine_fills_by_position_are_where_it_puts_them() -> None:
    # Engine._read and Engine._create build their journal entries positionally (cheaper per
    # request than by name): a field moved or added in between would shift the rest
    assert [f.name for f in dataclasses.fields(Entry)][:20] == [
        "seq",
        "kind",
        "job_id",
        "method",
        "path",
        "client",
        "received_at",
        "response_started_at",
        "completed_at",
        "status_code",
        "job_status",
        "retry_after",
        "fault",
        "true_status",
        "status_since",
        "poll_after",
        "error_code",
        "credential",
        "idempotency_key",
        "request_digest",
    ]
    assert [f.name for f in dataclasses.fields(Entry)][27:] == ["inline_result"]


def test_a_journal_of_another_class_is_given_the_engines_entries_as_entries() -> None:
    # the engine hands a ``Journal`` its usual entries as rows (``append_values``); a journal
    # of a class of its own gets each through ``append``, equal to what the rows make
    from fakeprovider.journal import Journal

    class Recording(Journal):
        def __init__(self) -> None:
            super().__init__()
            self.appended: list[Entry] = []

        def append(self, entry: Entry) -> Entry:
            self.appended.append(entry)
            return super().append(entry)

    scenario = load_scenario("long-render")
    plain, recording = Engine(scenario), Engine(scenario, journal=Recording())
    for engine in (plain, recording):
        job_id = submit(engine, 1.0)
        engine.handle(Request("status", "GET", f"/v1/jobs/{job_id}", job_id=job_id), 2.0)
    assert isinstance(recording.journal, Recording)
    assert [type(e) for e in recording.journal.appended] == [Entry, Entry]
    assert recording.journal.snapshot() == plain.journal.snapshot() == recording.journal.appended
    assert [e.kind for e in plain.journal.snapshot()] == ["submit", "status"]
