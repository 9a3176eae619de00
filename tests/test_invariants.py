"""The invariant checker on hand-built journals: every rule, its edge cases, exact messages."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider import _rules
from fakeprovider.clock import VirtualClock
from fakeprovider.engine import Engine
from fakeprovider.errors import InvariantViolation
from fakeprovider.invariants import (
    INVARIANTS,
    Limits,
    assert_invariants,
    check,
    expected_outcome,
    split_runs,
)
from fakeprovider.journal import Entry, RetryAfterRecord
from fakeprovider.messages import Request
from fakeprovider.scenario import TERMINAL_STATUSES, load_scenario, parse_scenario
from tests.thorough import thorough

PATHS = {
    "submit": "/v1/jobs",
    "status": "/v1/jobs/j_1",
    "content": "/v1/jobs/j_1/content",
    "cancel": "/v1/jobs/j_1/cancel",
}


def e(seq, kind, at, *, took=0.01, code=200, status=None, job="j_1", client="c", **extra) -> Entry:
    """An entry received at ``at`` whose answer starts and ends ``took`` later."""
    done = None if took is None else at + took
    method = "POST" if kind in ("submit", "cancel") else "GET"
    return Entry(
        seq=seq,
        kind=kind,
        job_id=job,
        method=method,
        path=PATHS.get(kind, "/").replace("j_1", job or "j_1"),
        client=client,
        received_at=at,
        response_started_at=done,
        completed_at=done,
        status_code=code,
        job_status=status,
        **extra,
    )


def messages(entries, **limits) -> list[tuple[str, str]]:
    return [(v.invariant, v.message) for v in check(entries, **limits).violations]


def test_the_invariant_names_are_those_of_the_design() -> None:
    assert INVARIANTS == (
        "no_overlap",
        "single_retrieval",
        "no_premature_retrieval",
        "bounded_retries",
        "honours_retry_after",
        "honours_poll_after",
        "stops_at_terminal",
        "no_resubmission",
        "no_retry_on_auth_error",
        "deadline",
        "status_rate",
        "webhook_ack",
    )


def test_an_empty_journal_is_clean_but_warns_that_nothing_was_checked() -> None:
    report = check([])
    assert report.ok
    assert report.warnings == ("the journal holds no requests, so nothing was checked",)
    assert report.metrics["requests"] == 0
    assert report.metrics["polls_per_completion"] is None


# -- no_overlap ---------------------------------------------------------------------------------


def test_a_read_received_before_the_previous_started_its_response_overlaps() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued", poll_after=1.0),
        e(2, "status", 11.9, took=2.0, status="processing"),
        e(3, "status", 12.4, status="processing"),
    ]
    assert messages(entries) == [
        (
            "no_overlap",
            "status read #3 for job j_1 arrived at 12.400 s while read #2 (received 11.900 s)"
            " had not started its response",
        )
    ]


def test_reads_in_the_ambiguous_window_and_clock_ties_are_not_overlaps() -> None:
    slow_body = e(2, "status", 2.0, status="processing")
    slow_body = Entry(**{**slow_body.to_dict(), "response_started_at": 3.0, "completed_at": 5.0})
    entries = [
        e(1, "submit", 0.0, status="queued"),
        slow_body,
        e(3, "status", 4.0, status="processing"),  # between start (3.0) and completion (5.0)
        e(4, "status", 4.01, status="processing"),  # exactly when #3 started its response
    ]
    assert messages(entries) == []


def test_interleaved_jobs_and_clients_are_judged_apart() -> None:
    entries = [
        e(1, "status", 1.0, took=5.0, job="j_1", status="processing"),
        e(2, "status", 2.0, job="j_2", status="processing"),  # another job
        e(3, "status", 2.5, job="j_1", client="other", status="processing"),  # another client
    ]
    assert messages(entries) == []


# -- single_retrieval and no_premature_retrieval ---------------------------------------------------


def test_a_second_download_is_caught_and_a_missing_one_too_when_expected() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued"),
        e(2, "status", 5.0, status="succeeded"),
        e(3, "content", 6.0),
        e(4, "content", 7.0),
    ]
    assert messages(entries) == [
        (
            "single_retrieval",
            "content fetch #4 for job j_1 at 7.000 s downloaded the result again; #3 had already"
            " retrieved it at 6.000 s and it may be fetched once",
        )
    ]
    assert messages(entries[:2], retrievals=1) == [
        (
            "single_retrieval",
            "job j_1 was shown 'succeeded' by #2 at 5.010 s but its content was retrieved 0"
            " time(s); expected 1",
        )
    ]
    assert messages([*entries[:3], e(4, "content", 7.0, code=503)], retrievals=1) == []


def test_a_download_before_success_was_seen_is_premature() -> None:
    entries = [e(1, "submit", 0.0, status="queued"), e(2, "content", 0.5, code=409)]
    assert messages(entries) == [
        (
            "no_premature_retrieval",
            "content fetch #2 for job j_1 at 0.500 s came before the client could have seen the"
            " job succeed; the last status it had seen was 'queued' (#1)",
        )
    ]
    webhook = Entry(
        seq=2, kind="webhook", job_id="j_1", method="POST", path="/hook", client="receiver",
        received_at=0.4, response_started_at=0.41, completed_at=0.41, status_code=204,
        event="job.succeeded", attempt=1,
    )  # fmt: skip
    assert messages([entries[0], webhook, e(3, "content", 0.5)]) == []
    # a forged or stale send, a missing event and a refused host told the client nothing
    for fake in [
        dataclasses.replace(webhook, delivery="forged"),
        dataclasses.replace(webhook, delivery="stale", status_code=401),
        dataclasses.replace(
            webhook, delivery="missing", attempt=0, status_code=None, response_started_at=None
        ),
        dataclasses.replace(webhook, status_code=None, error_code="host_not_allowed"),
        dataclasses.replace(webhook, status_code=None, error_code="connection_error"),
    ]:
        report = check([entries[0], fake, e(3, "content", 0.5)])
        assert len(report.by_invariant("no_premature_retrieval")) == 1, fake


# -- bounded_retries ------------------------------------------------------------------------------


def test_retries_beyond_max_retries_after_consecutive_failures() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued"),
        e(2, "status", 1.0, code=503),
        e(3, "status", 2.0, code=None, took=0.0, dropped="reset"),
        e(4, "status", 3.0, code=429),
        e(5, "status", 4.0, status="processing"),
    ]
    assert messages(entries, max_retries=2) == [
        (
            "bounded_retries",
            "status read #5 for job j_1 at 4.000 s was retry 3 after 3 consecutive failed"
            " attempts (#2 to #4); max_retries is 2",
        )
    ]
    assert messages(entries, max_retries=3) == []


def test_a_request_rejected_with_a_4xx_other_than_401_403_counts_as_a_failed_attempt() -> None:
    # a typo in the request (422) sent again and again gets the same answer every time
    rejected = [
        e(n, "submit", n * 1.0, code=422, job=None, request_digest="d") for n in range(1, 5)
    ]
    assert messages(rejected, max_retries=2) == [
        (
            "bounded_retries",
            "submit #4 at 4.000 s was retry 3 after 3 consecutive failed attempts (#1 to #3);"
            " max_retries is 2",
        )
    ]
    assert messages(rejected, max_retries=3) == []


# -- honours_retry_after --------------------------------------------------------------------------


def ra(raw: str, not_before: float, form: str = "seconds") -> RetryAfterRecord:
    return RetryAfterRecord(raw=raw, not_before=not_before, form=form)


def test_delay_seconds_get_no_slack_and_429_binds_the_whole_account() -> None:
    entries = [
        e(1, "status", 1.0, code=429, retry_after=ra("5", 6.0), job="j_1"),
        e(2, "status", 5.9, job="j_2", status="processing"),
    ]
    assert messages(entries) == [
        (
            "honours_retry_after",
            "status read #2 for job j_2 at 5.900 s came 0.100 s before the Retry-After '5' of #1"
            " (429, account scope) allowed it at 6.000 s",
        )
    ]
    assert messages([entries[0], e(2, "status", 6.0, job="j_2")]) == []


def test_a_429_for_too_many_active_jobs_binds_new_submits_only() -> None:
    refused = e(
        3,
        "submit",
        1.0,
        code=429,
        job=None,
        retry_after=ra("15", 16.0),
        error_code="too_many_active_jobs",
    )
    polling = [refused, e(4, "status", 5.0, job="j_1", status="processing")]
    assert messages(polling) == []  # watching the running jobs is how to learn one ended
    resubmitting = [*polling, e(5, "submit", 10.0, job="j_4", code=202, status="queued")]
    assert messages(resubmitting) == [
        (
            "honours_retry_after",
            "submit #5 at 10.000 s came 6.000 s before the Retry-After '15' of #3"
            " (429, submits scope) allowed it at 16.000 s",
        )
    ]


def test_503_binds_only_its_job_unless_configured() -> None:
    entries = [
        e(1, "status", 1.0, code=503, retry_after=ra("5", 6.0)),
        e(2, "status", 2.0, job="j_2", status="processing"),
    ]
    assert messages(entries) == []
    assert [v for v, _ in messages(entries, retry_after_scope="account")] == ["honours_retry_after"]


def test_http_dates_get_one_second_of_slack() -> None:
    source = e(
        1, "status", 1.0, code=429, retry_after=ra("Thu, 01 Jan 2026 00:00:10 GMT", 10.0, "imf")
    )
    assert messages([source, e(2, "status", 9.0)]) == []
    assert messages([source, e(2, "status", 8.99)]) == [
        (
            "honours_retry_after",
            "status read #2 for job j_1 at 8.990 s came 1.010 s before the Retry-After"
            " 'Thu, 01 Jan 2026 00:00:10 GMT' of #1 (429, account scope) allowed it at 10.000 s",
        )
    ]


def test_a_429_binds_requests_with_its_own_credential_only() -> None:
    # one client holding two API keys: the 429 for cred_1 says nothing of cred_2's budget
    throttled = e(1, "status", 1.0, code=429, retry_after=ra("5", 6.0), credential="cred_1")
    other_key = e(2, "status", 2.0, job="j_2", status="processing", credential="cred_2")
    assert messages([throttled, other_key]) == []
    same_key = e(3, "status", 3.0, job="j_2", status="processing", credential="cred_1")
    assert messages([throttled, other_key, same_key]) == [
        (
            "honours_retry_after",
            "status read #3 for job j_2 at 3.000 s came 3.000 s before the Retry-After '5' of #1"
            " (429, account scope) allowed it at 6.000 s",
        )
    ]


def test_a_retry_after_in_the_past_is_satisfied_and_concurrent_requests_are_not_bound() -> None:
    past = e(
        1, "status", 5.0, code=503, retry_after=ra("Thu, 01 Jan 2026 00:00:01 GMT", 1.0, "imf")
    )
    assert messages([past, e(2, "status", 5.02)]) == []
    slow = e(1, "status", 1.0, took=2.0, code=429, retry_after=ra("5", 8.0))
    # received before the 429's headers went out: the client could not know
    assert messages([slow, e(2, "status", 2.0, job="j_2")]) == []


# -- honours_poll_after ---------------------------------------------------------------------------


def test_an_ordinary_poll_sooner_than_the_hint_less_tolerance() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued", poll_after=5.0),
        e(2, "status", 4.51, status="processing", poll_after=5.0),  # 4.5 s after: allowed
        e(3, "status", 8.0, status="processing", poll_after=5.0),
    ]
    assert messages(entries) == [
        (
            "honours_poll_after",
            "status read #3 for job j_1 at 8.000 s came 3.480 s after #2 answered, sooner than"
            " its poll hint of 5.000 s (less 10% tolerance)",
        )
    ]


def test_a_retry_after_a_failed_read_is_not_an_ordinary_poll() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued", poll_after=5.0),
        e(2, "status", 5.0, code=502),
        e(3, "status", 5.5, status="processing", poll_after=5.0),
    ]
    assert messages(entries) == []


def test_a_read_prompted_by_a_genuine_webhook_is_not_an_ordinary_poll() -> None:
    # the webhook (sent at 1.0) told the client something changed: reading the job at once
    # to confirm it is not polling sooner than the hint; a forged send prompts nothing
    webhook = hook(10, 204, 0.01, event="job.processing")
    confirm = [
        e(1, "submit", 0.0, status="queued", poll_after=5.0),
        e(2, "status", 1.05, status="processing", poll_after=5.0),
    ]
    assert messages([*confirm, webhook]) == []
    forged = dataclasses.replace(webhook, delivery="forged", status_code=401)
    assert messages([*confirm, forged]) == [
        (
            "honours_poll_after",
            "status read #2 for job j_1 at 1.050 s came 1.040 s after #1 answered, sooner than"
            " its poll hint of 5.000 s (less 10% tolerance)",
        )
    ]
    # one webhook excuses one read, not the next one
    again = e(3, "status", 1.5, status="processing", poll_after=5.0)
    assert [name for name, _ in messages([*confirm, again, webhook])] == ["honours_poll_after"]


# -- stops_at_terminal ----------------------------------------------------------------------------


def test_no_read_after_a_terminal_answer_except_in_the_ambiguous_window() -> None:
    done = e(2, "status", 10.0, took=1.0, status="failed")
    done = Entry(**{**done.to_dict(), "response_started_at": 10.2})  # the body ends at 11.0
    assert messages([e(1, "submit", 0.0, status="queued"), done, e(3, "status", 10.5)]) == []
    assert messages([e(1, "submit", 0.0, status="queued"), done, e(3, "status", 11.0)]) == [
        (
            "stops_at_terminal",
            "status read #3 for job j_1 at 11.000 s came after #2 had shown the job 'failed' at"
            " 11.000 s",
        )
    ]


# -- no_resubmission ------------------------------------------------------------------------------


def test_a_new_submit_after_a_failed_status_read() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued", request_digest="d1"),
        e(2, "status", 5.0, code=503),
        e(3, "submit", 5.5, job="j_2", status="queued", request_digest="d1"),
    ]
    assert messages(entries) == [
        (
            "no_resubmission",
            "submit #3 at 5.500 s created job j_2 for the same request as job j_1 after status"
            " read #2 of that job failed (503); a failed status read does not mean the job failed",
        )
    ]


def test_a_lost_submit_response_must_be_retried_with_its_idempotency_key() -> None:
    lost = e(1, "submit", 0.0, code=None, took=0.0, dropped="lose_response", request_digest="d1",
             idempotency_key="k1")  # fmt: skip
    same_key = e(2, "submit", 1.0, status="queued", request_digest="d1", idempotency_key="k1")
    assert messages([lost, same_key]) == []
    new_key = e(
        2, "submit", 1.0, job="j_2", status="queued", request_digest="d1", idempotency_key="k2"
    )
    assert messages([lost, new_key]) == [
        (
            "no_resubmission",
            "submit #2 at 1.000 s retried failed submit #1 (a lost response) without its"
            " Idempotency-Key 'k1'",
        )
    ]
    keyless = [Entry(**{**lost.to_dict(), "idempotency_key": None}), new_key]
    assert messages(keyless) == [
        (
            "no_resubmission",
            "submit #2 at 1.000 s created job j_2 for the same request as job j_1 (submit #1),"
            " which the client had not seen end",
        )
    ]


def test_each_blind_resubmit_is_held_to_the_first_job_it_repeats_while_every_job_stays_open() -> (
    None
):
    # a POST loop: one request over and over, no job ever read, so every job stays open and
    # each submit is judged against all the jobs before it (``benchmarks/bench_check_scaling.py
    # --shape blind-resubmitter`` measures that this stays linear)
    entries = [
        e(k, "submit", k * 0.01, job=f"j_{k}", code=202, status="queued", request_digest="d1")
        for k in range(1, 2001)
    ]
    found = check(entries).violations
    assert [(v.invariant, v.job_id, v.seqs) for v in found] == [
        ("no_resubmission", "j_1", (1, k)) for k in range(2, 2001)
    ]
    assert found[-1].message == (
        "submit #2000 at 20.000 s created job j_2000 for the same request as job j_1"
        " (submit #1), which the client had not seen end"
    )
    alone = list(_rules.no_resubmission(entries, Limits()))
    assert alone == list(found)


def test_resubmitting_after_the_job_was_seen_to_fail_is_a_new_request() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued", request_digest="d1"),
        e(2, "status", 5.0, status="failed"),
        e(3, "submit", 6.0, job="j_2", status="queued", request_digest="d1"),
    ]
    assert messages(entries) == []


# -- no_retry_on_auth_error, deadline, status_rate ------------------------------------------------


def test_no_retry_with_the_same_credential_after_401() -> None:
    entries = [
        e(1, "status", 1.0, code=401, credential="cred_1"),
        e(2, "status", 2.0, code=401, credential="cred_1"),
        e(3, "status", 3.0, code=401, credential="cred_1"),
        e(4, "status", 4.0, credential="cred_2", status="processing"),
    ]
    assert messages(entries) == [
        (
            "no_retry_on_auth_error",
            "status read #2 for job j_1 at 2.000 s was sent with the same credential cred_1"
            " after status read #1 for job j_1 was refused with 401 at 1.010 s",
        )
    ]


def test_a_request_in_flight_when_the_401_arrived_or_with_new_credentials_is_not_a_retry() -> None:
    # #2 was sent before #1's 401 reached the client (at 1.500 s); #3 was sent after it
    refused = e(1, "status", 1.0, took=0.5, code=401, credential="cred_1")
    in_flight = e(2, "status", 1.2, job="j_2", code=401, credential="cred_1")
    assert messages([refused, in_flight]) == []
    new_key = e(3, "status", 2.0, status="processing", credential="cred_2")
    assert messages([refused, in_flight, new_key]) == []  # new credentials: not a retry
    retry = e(3, "status", 2.0, code=401, credential="cred_1")
    assert messages([refused, in_flight, retry]) == [
        (
            "no_retry_on_auth_error",
            "status read #3 for job j_1 at 2.000 s was sent with the same credential cred_1"
            " after status read #1 for job j_1 was refused with 401 at 1.500 s",
        )
    ]


def test_deadline_counts_from_the_submit_with_slack() -> None:
    entries = [e(1, "submit", 2.0, status="queued"), e(2, "status", 63.0), e(3, "status", 63.5)]
    assert messages(entries, deadline=60.0) == [
        (
            "deadline",
            "status read #3 for job j_1 at 63.500 s came 1.500 s after the deadline of 60.000 s"
            " from #1 at 2.000 s (slack 1.000 s)",
        )
    ]
    assert messages(entries) == []  # no deadline set: not checked


def test_status_rate_is_opt_in_and_counts_all_jobs_in_a_sliding_window() -> None:
    entries = [e(n, "status", n * 0.5, job=f"j_{n % 3}", status="processing") for n in range(1, 6)]
    assert messages(entries) == []
    assert messages(entries, status_rate=0.2, status_rate_window=10.0) == [
        (
            "status_rate",
            "status read #3 at 1.500 s was read 3 within 10.000 s (since #1 at 0.500 s); the budget"
            " of 0.2 per second allows 2",
        )
    ]


def test_the_status_rate_window_excludes_a_read_exactly_one_window_earlier() -> None:
    # 0.2 reads per second over 10 s allows 2 per window; (0 s, 10 s] holds #2 and #3 only
    reads = [e(n, "status", at, status="processing") for n, at in [(1, 0.0), (2, 5.0), (3, 10.0)]]
    assert messages(reads, status_rate=0.2) == []
    crowded = [*reads[:2], e(3, "status", 9.875, status="processing")]
    assert messages(crowded, status_rate=0.2) == [
        (
            "status_rate",
            "status read #3 at 9.875 s was read 3 within 10.000 s (since #1 at 0.000 s); the budget"
            " of 0.2 per second allows 2",
        )
    ]


# -- webhook_ack ----------------------------------------------------------------------------------

HOOKS = "http://127.0.0.1:5555/hooks"


def hook(
    seq: int,
    code: int | None,
    latency: float | None,
    delivery: str | None = None,
    *,
    attempt: int = 1,
    error: str | None = None,
    event: str = "job.succeeded",
) -> Entry:
    """A webhook attempt as the dispatcher journals it: sent at 1.0 to 127.0.0.1:5555/hooks."""
    done = None if latency is None else 1.0 + latency
    return Entry(
        seq=seq, kind="webhook", job_id="j_1", method="POST", path="/hooks",
        client="127.0.0.1:5555", received_at=1.0,
        response_started_at=done if code is not None else None, completed_at=done,
        status_code=code, error_code=error, job_status=event.removeprefix("job."), event=event,
        webhook_id="msg_1", attempt=attempt, delivery=delivery,
    )  # fmt: skip


def test_webhook_deliveries_are_acknowledged_in_time_and_forgeries_rejected() -> None:
    assert (
        messages([hook(1, 204, 0.2), hook(2, 401, 0.1, "forged"), hook(3, 400, 0.1, "stale")]) == []
    )
    assert messages([hook(1, 200, 6.0), hook(2, 500, 0.1), hook(3, 200, 0.1, "forged")]) == [
        (
            "webhook_ack",
            f"webhook #1 (job.succeeded) to {HOOKS} was answered 200 after 6.000 s; a valid"
            " delivery must be acknowledged with a 2xx within 5.000 s",
        ),
        (
            "webhook_ack",
            f"webhook #2 (job.succeeded) to {HOOKS} was answered 500; a valid delivery must be"
            " acknowledged with a 2xx within 5.000 s",
        ),
        (
            "webhook_ack",
            f"webhook #3 (job.succeeded, forged) to {HOOKS} was answered 200; a forged delivery"
            " must be rejected with a 4xx",
        ),
    ]


def test_duplicates_and_reordered_sends_are_valid_deliveries_and_every_attempt_counts() -> None:
    entries = [
        hook(1, 204, 0.1),
        hook(2, 204, 0.1, "duplicate"),
        hook(3, 204, 0.1, "reordered", event="job.processing"),
        hook(4, 409, 0.1, "duplicate"),
        hook(5, 503, 0.1, "reordered", event="job.processing"),
        hook(6, 204, 0.1, "reordered", attempt=2, event="job.processing"),
    ]
    assert messages(entries) == [
        (
            "webhook_ack",
            f"webhook #4 (job.succeeded, duplicate) to {HOOKS} was answered 409; a valid delivery"
            " must be acknowledged with a 2xx within 5.000 s",
        ),
        (
            "webhook_ack",
            f"webhook #5 (job.processing, reordered) to {HOOKS} was answered 503; a valid"
            " delivery must be acknowledged with a 2xx within 5.000 s",
        ),
    ]


def test_a_timeout_is_a_slow_ack_and_a_connection_error_no_ack() -> None:
    entries = [
        hook(1, None, 10.0, error="timeout"),
        hook(2, None, 0.01, "duplicate", attempt=3, error="connection_error"),
        hook(3, None, 10.0, "stale", error="timeout"),
        hook(4, 200, 0.1, "stale"),
    ]
    assert messages(entries, ack_limit=2.0) == [
        (
            "webhook_ack",
            f"webhook #1 (job.succeeded) to {HOOKS} timed out after 10.000 s without an answer;"
            " a valid delivery must be acknowledged with a 2xx within 2.000 s",
        ),
        (
            "webhook_ack",
            f"webhook #2 (job.succeeded, duplicate, attempt 3) to {HOOKS} got no answer"
            " (connection error); a valid delivery must be acknowledged with a 2xx within 2.000 s",
        ),
        (
            "webhook_ack",
            f"webhook #3 (job.succeeded, stale) to {HOOKS} timed out after 10.000 s without an"
            " answer; a stale delivery must be rejected with a 4xx",
        ),
        (
            "webhook_ack",
            f"webhook #4 (job.succeeded, stale) to {HOOKS} was answered 200; a stale delivery"
            " must be rejected with a 4xx",
        ),
    ]


def test_missing_events_refused_hosts_and_sends_in_flight_are_not_judged() -> None:
    missing = Entry(
        seq=1, kind="webhook", job_id="j_1", method="POST", path="/hooks",
        client="127.0.0.1:5555", received_at=1.0, completed_at=1.0, event="job.processing",
        webhook_id="msg_2", attempt=0, delivery="missing",
    )  # fmt: skip
    refused = dataclasses.replace(
        hook(2, None, 0.0), client="receiver.example", error_code="host_not_allowed"
    )
    in_flight = hook(3, None, None)
    assert messages([missing, refused, in_flight]) == []


def test_the_ack_limit_comes_from_expect() -> None:
    limits = Limits.from_expect(load_scenario("forged-webhook").expect)
    assert limits.ack_limit == 2.0
    assert [v.message for v in check([hook(1, 200, 2.5)], limits).violations] == [
        f"webhook #1 (job.succeeded) to {HOOKS} was answered 200 after 2.500 s; a valid delivery"
        " must be acknowledged with a 2xx within 2.000 s"
    ]


# -- runs, limits, report ---------------------------------------------------------------------------


def admin(seq: int, at: float) -> Entry:
    return Entry(seq=seq, kind="admin", job_id=None, method="POST", path="/__admin/reset",
                 client="t", received_at=at, completed_at=at, status_code=200)  # fmt: skip


def test_runs_split_at_resets_and_are_judged_apart() -> None:
    entries = [
        e(1, "status", 1.0, took=5.0, status="processing"),
        admin(2, 2.0),
        e(3, "status", 2.5, status="processing"),  # same job id, new run: no overlap with #1
    ]
    assert [[x.seq for x in run] for run in split_runs(entries)] == [[1], [3]]
    assert messages(entries) == []
    double = [
        e(1, "status", 0.5, status="succeeded"),
        e(2, "content", 1.0),
        admin(3, 2.0),
        e(4, "status", 2.5, status="succeeded"),
        e(5, "content", 3.0),
        e(6, "content", 4.0),
    ]
    assert [(v.invariant, v.run, v.seqs) for v in check(double).violations] == [
        ("single_retrieval", 1, (5, 6))
    ]


def test_limits_come_from_expect_and_text() -> None:
    scenario = load_scenario("rate-limit-budget")
    limits = Limits.from_expect(scenario.expect, time_scale=0.5, max_retries=2)
    assert (limits.deadline, limits.max_retries, limits.status_rate, limits.status_rate_window) == (
        300.0,
        2,
        1.0,
        5.0,
    )
    parsed = Limits.from_strings({"deadline": "2m", "max_retries": "3", "status_rate": "off"})
    assert (parsed.deadline, parsed.max_retries, parsed.status_rate) == (120.0, 3, None)
    with pytest.raises(
        ValueError, match=r"^limit deadline must be a duration like '90s', got 'soon'$"
    ):
        Limits.from_strings({"deadline": "soon"})
    with pytest.raises(ValueError, match=r"^unknown limit 'speed'; known: max_retries, "):
        Limits.from_strings({"speed": "1"})
    known = ", ".join(f.name for f in dataclasses.fields(Limits))
    misspelt = f"unknown limit 'max_retry' (did you mean 'max_retries'?); known: {known}"
    with pytest.raises(ValueError, match=f"^{re.escape(misspelt)}$"):
        Limits.from_strings({"max_retry": "1"})
    with pytest.raises(ValueError, match=r"^limit max_retries must not be negative, got -1$"):
        Limits(max_retries=-1)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_retries": -1}, "limit max_retries must not be negative, got -1"),
        ({"deadline_slack": -0.5}, "limit deadline_slack must not be negative, got -0.5"),
        ({"poll_tolerance": -0.1}, "limit poll_tolerance must not be negative, got -0.1"),
        ({"ack_limit": -2.0}, "limit ack_limit must not be negative, got -2.0"),
        ({"date_slack": -1}, "limit date_slack must not be negative, got -1"),
        ({"deadline": 0.0}, "limit deadline must be positive, got 0.0"),
        ({"deadline": -60}, "limit deadline must be positive, got -60"),
        ({"retrievals": -1}, "limit retrievals must not be negative, got -1"),
        ({"status_rate": 0}, "limit status_rate must be positive, got 0"),
        ({"status_rate_window": 0.0}, "limit status_rate_window must be positive, got 0.0"),
        ({"poll_tolerance": 1.5}, "limit poll_tolerance must be between 0 and 1, got 1.5"),
        (
            {"retry_after_scope": "global"},
            "limit retry_after_scope must be 'auto', 'account' or 'job', got 'global'",
        ),
    ],
)
def test_every_limit_is_validated_with_a_message_naming_it(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Limits(**values)  # type: ignore[arg-type]


def test_the_edges_of_the_limits_are_allowed() -> None:
    edges = Limits(
        max_retries=0,
        deadline_slack=0.0,
        retrievals=0,
        poll_tolerance=1.0,
        ack_limit=0.0,
        date_slack=0.0,
        retry_after_scope="job",
    )
    assert (edges.max_retries, edges.poll_tolerance, edges.retrievals) == (0, 1.0, 0)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("max_retries", "three", "limit max_retries must be a whole number, got 'three'"),
        ("retrievals", "1.5", "limit retrievals must be a whole number, got '1.5'"),
        ("poll_tolerance", "lots", "limit poll_tolerance must be a number, got 'lots'"),
        ("status_rate", "fast", "limit status_rate must be a number, got 'fast'"),
        ("ack_limit", "5 parsecs", "limit ack_limit must be a duration like '90s', got '5 parsecs'"),
        ("max_retries", "-2", "limit max_retries must not be negative, got -2"),
        ("max_retries", "none", "limit max_retries must be a whole number, got 'none'"),
        ("retry_after_scope", "world", "limit retry_after_scope must be 'auto', 'account' or"
         " 'job', got 'world'"),
    ],
)  # fmt: skip
def test_limits_from_text_name_the_bad_value(name: str, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Limits.from_strings({name: text})


def test_limits_from_text_read_durations_seconds_and_off() -> None:
    base = Limits(deadline=60.0, retrievals=1, status_rate=2.0)
    parsed = Limits.from_strings(
        {
            "deadline": " none ",
            "retrievals": "OFF",
            "status_rate": "",
            "ack_limit": "250ms",
            "date_slack": "2",
            "status_rate_window": "1m",
            "retry_after_scope": " job ",
            "poll_tolerance": "0.25",
        },
        base,
    )
    assert (parsed.deadline, parsed.retrievals, parsed.status_rate) == (None, None, None)
    assert (parsed.ack_limit, parsed.date_slack, parsed.status_rate_window) == (0.25, 2.0, 60.0)
    assert (parsed.retry_after_scope, parsed.poll_tolerance) == ("job", 0.25)
    assert Limits.from_strings({}, base) == base


def test_the_rendered_report_shows_the_timeline_around_the_violation() -> None:
    entries = [
        e(
            1,
            "submit",
            0.0,
            status="queued",
            poll_after=5.0,
            true_status="queued",
            status_since=0.0,
        ),
        e(2, "status", 5.0, status="processing", true_status="processing", status_since=3.0),
        e(3, "status", 6.0, code=429, retry_after=ra("4", 10.01)),
        e(4, "status", 7.0, status="processing"),
    ]
    with pytest.raises(InvariantViolation) as caught:
        assert_invariants(entries)
    assert str(caught.value).splitlines()[:10] == [
        "1 invariant violation(s) in 4 request(s) from 1 client(s):",
        "  by rule: honours_retry_after 1",
        "",
        "  honours_retry_after: status read #4 for job j_1 at 7.000 s came 3.010 s before the"
        " Retry-After '4' of #3 (429, account scope) allowed it at 10.010 s",
        "    timeline of job j_1 for client 'c':",
        "       #1        0.000 s  POST /v1/jobs -> 200 'queued' (answered 0.010 s) hint 5 s",
        "       ~        3.000 s  the job became 'processing'",
        "       #2        5.000 s  GET /v1/jobs/j_1 -> 200 'processing' (answered 5.010 s)",
        "    >> #3        6.000 s  GET /v1/jobs/j_1 -> 429 (answered 6.010 s) retry-after '4'"
        " until 10.010 s",
        "    >> #4        7.000 s  GET /v1/jobs/j_1 -> 200 'processing' (answered 7.010 s)",
    ]
    assert json.loads(json.dumps(check(entries).to_dict()))["violations"][0]["seqs"] == [3, 4]


def test_metrics_and_coverage() -> None:
    entries = [
        e(1, "submit", 0.0, status="queued", true_status="queued", status_since=0.0),
        e(2, "status", 5.0, code=503, fault="busy", retry_after=ra("1", 6.01)),
        e(3, "status", 7.0, status="processing", true_status="processing", status_since=3.0),
        e(4, "status", 12.0, status="succeeded", true_status="succeeded", status_since=10.0),
        e(5, "content", 13.0),
    ]
    report = check(entries)
    m = report.metrics
    assert (m["polls_per_completion"], m["retries"], m["rate_limit_hits"]) == (3.0, 1, 0)
    assert m["detection_delay"]["by_client_and_job"] == {"c j_1": 2.01}
    assert m["time_in_status"] == {"j_1": {"queued": 3.0, "processing": 7.0}}
    assert report.coverage["faults_served"] == {"busy": 1}
    assert report.warnings == (
        "no 429 was served, so rate-limit handling was not exercised",
        "deadline was not checked: no deadline was set",
        "status_rate was not checked: opt-in: no status_rate budget was set",
        "webhook_ack was not checked: no webhook was delivered",
    )
    unseen = e(2, "status", 5.0, status="queued", true_status="processing", status_since=4.0)
    quiet = check([entries[0], unseen])
    assert "the client 'c' never observed 'processing'" in quiet.warnings


def test_expected_outcome() -> None:
    assert expected_outcome(load_scenario("slow-success")) == "succeeded"
    assert expected_outcome(load_scenario("deadline-expiry")) == "timed_out"
    assert expected_outcome(load_scenario("slow-success"), "60s") == "timed_out"
    assert expected_outcome(load_scenario("cancelled")) == "cancelled"
    assert expected_outcome(load_scenario("completed-with-errors")) == "completed_with_errors"
    assert expected_outcome(load_scenario("terminal-failure"), 30.0) == "timed_out"


# -- property: a well-behaved simulated client never breaks an invariant ---------------------------

SIMULATED = """
name: simulated
jobs:
  - poll_after: {hint}s
    timeline:
      - status: queued
      - {{at: {p}s, status: processing}}
      - {{at: {end}s, status: {final}}}
    summary: {{clips: 1}}
faults:
  - {{name: busy, route: status, every: {every}, status: 503, retry_after: {retry}s}}
  - {{name: reset, route: content, nth: 1, action: reset}}
"""


@thorough(60, deadline=None)
@given(
    hint=st.integers(1, 10),
    processing=st.integers(1, 20),
    length=st.integers(1, 120),
    final=st.sampled_from(sorted(TERMINAL_STATUSES)),
    every=st.integers(2, 6),
    retry=st.integers(0, 30),
    latency=st.floats(0.0, 3.0),
)
def test_a_well_behaved_simulated_client_never_breaks_an_invariant(
    hint, processing, length, final, every, retry, latency
) -> None:
    text = SIMULATED.format(hint=hint, p=processing, end=processing + length, final=final,
                            every=every, retry=retry)  # fmt: skip
    engine = Engine(parse_scenario(text))
    clock = VirtualClock(start=0.0)

    def send(kind: str, job_id: str | None = None) -> tuple[int | None, dict[str, str]]:
        reply = engine.handle(Request(kind=kind, method="GET", path="/", job_id=job_id, client="sim",
                                      body={"prompt": "x"}), clock.now())  # fmt: skip
        clock.advance(reply.delay + latency)
        engine.complete(
            reply, started=clock.now(), completed=clock.now(), status_code=reply.status_code
        )
        entry = engine.journal[-1]
        wait = hint
        if entry.retry_after is not None and entry.retry_after.not_before is not None:
            wait = max(0.0, entry.retry_after.not_before - clock.now())
        return entry.status_code, {"wait": str(wait), "status": entry.job_status or ""}

    _, answer = send("submit")
    job_id = engine.journal[-1].job_id
    failures = 0
    while True:
        clock.advance(float(answer["wait"]) if failures else hint)
        code, answer = send("status", job_id)
        if code is None or code >= 500:
            failures += 1
            assert failures <= 5
            continue
        failures = 0
        if answer["status"] in TERMINAL_STATUSES:
            break
    if answer["status"] in ("succeeded", "completed_with_errors"):
        code, answer = send("content", job_id)
        while code is None:  # the reset: retry at once (no Retry-After was given)
            code, answer = send("content", job_id)
    report = check(engine.journal, max_retries=5, retrievals=1)
    assert report.violations == (), report.render()


def test_missing_events_and_refused_hosts_are_not_counted_as_deliveries() -> None:
    missing = Entry(
        seq=2, kind="webhook", job_id="j_1", method="POST", path="/hooks",
        client="127.0.0.1:5555", received_at=1.0, completed_at=1.0, event="job.succeeded",
        webhook_id="msg_1", attempt=0, delivery="missing",
    )  # fmt: skip
    refused = dataclasses.replace(
        missing, seq=3, attempt=1, delivery=None, error_code="host_not_allowed"
    )
    report = check([e(1, "submit", 0.0, status="queued"), missing, refused])
    assert report.metrics["webhooks"]["deliveries"] == 0
    assert report.coverage["not_checked"]["webhook_ack"] == "no webhook was delivered"
    sent = dataclasses.replace(missing, seq=4, attempt=1, delivery=None, status_code=204)
    report = check([e(1, "submit", 0.0, status="queued"), missing, sent])
    assert report.metrics["webhooks"]["deliveries"] == 1
    assert "webhook_ack" not in report.coverage["not_checked"]


# -- found by the Hypothesis strategies ----------------------------------------------------


def test_retrying_a_lost_submit_under_the_same_key_is_not_a_resubmission() -> None:
    # the first submit created j_1 but its answer was lost; the retry under the same key met a
    # scripted 503; the third attempt got j_1 back (the key deduplicates, no second job)
    entries = [
        e(
            1,
            "submit",
            0.0,
            code=None,
            dropped="lose_response",
            idempotency_key="k",
            request_digest="d",
        ),
        e(2, "submit", 1.0, code=503, job=None, idempotency_key="k", request_digest="d"),
        e(3, "submit", 2.0, code=202, status="queued", idempotency_key="k", request_digest="d"),
    ]
    assert [v for v in messages(entries) if v[0] == "no_resubmission"] == []


def test_a_new_key_for_the_same_request_while_its_job_runs_is_still_a_resubmission() -> None:
    entries = [
        e(1, "submit", 0.0, code=202, status="queued", idempotency_key="k1", request_digest="d"),
        e(
            2,
            "submit",
            1.0,
            code=202,
            status="queued",
            job="j_2",
            idempotency_key="k2",
            request_digest="d",
        ),
    ]
    assert [v for v in messages(entries) if v[0] == "no_resubmission"] == [
        (
            "no_resubmission",
            "submit #2 at 1.000 s created job j_2 for the same request as job j_1 (submit #1),"
            " which the client had not seen end",
        )
    ]


def test_the_engine_journals_no_retry_after_for_an_answer_the_client_never_got() -> None:
    engine = Engine(
        parse_scenario(
            "jobs: [{timeline: [{status: queued}]}]\nfaults:\n"
            "  - {name: lost, route: list, action: lose_response, retry_after: 30s}\n"
        )
    )
    engine.handle(Request("list", "GET", "/v1/jobs"), 0.0)
    assert (engine.journal.last.dropped, engine.journal.last.retry_after) == ("lose_response", None)


def test_check_takes_keyword_limits_as_limits_for_does() -> None:
    assert check([], Limits(max_retries=1), deadline="2m").limits == Limits(
        max_retries=1, deadline=120.0
    )
    with pytest.raises(
        ValueError, match=r"^unknown limit 'max_retry' \(did you mean 'max_retries'\?\); known: "
    ):
        check([], max_retry=3)
