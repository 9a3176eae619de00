"""The bundled ``outage`` scenario: 10 minutes of 5xx while the job runs.

A correct client retries a few times, waiting as told, then gives up without knowing the
outcome (``expect.outcome: timed_out``); a client that retries 5xx for ever is caught by
``bounded_retries``, however politely it waits. In process, in virtual time.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fakeprovider.inprocess import virtual_provider
from fakeprovider.invariants import Limits, Report, check, expected_outcome
from fakeprovider.journal import Entry
from fakeprovider.scenario import load_scenario

from . import rogues

SCENARIO = load_scenario("outage")


def play(client: Callable[..., str]) -> tuple[str, list[Entry], Report]:
    deadline = SCENARIO.expect.deadline
    assert deadline is not None
    with virtual_provider(SCENARIO) as fp:
        outcome = client(fp.url, deadline=deadline)
        entries = list(fp.journal)
    return outcome, entries, check(entries, Limits.from_expect(SCENARIO.expect))


def test_the_outage_outlasts_the_deadline_and_a_correct_client_reports_timed_out() -> None:
    assert SCENARIO.expect.outcome == expected_outcome(SCENARIO) == "timed_out"
    assert (SCENARIO.expect.deadline, SCENARIO.expect.max_retries) == (300.0, 5)
    assert [(f.name, f.status, f.end) for f in SCENARIO.faults] == [
        ("outage-503", 503, 600.0),
        ("outage-502", 502, 600.0),
    ]


def test_a_correct_client_gives_up_after_its_retries_and_breaks_nothing() -> None:
    outcome, entries, report = play(rogues.correct)
    assert outcome == "error"  # what the gallery's client says when it gives up: not 'failed'
    assert report.violations == (), report.render()
    reads = [e for e in entries if e.kind == "status"]
    # 502 without a Retry-After and 503 with one, in turn; four failures, then it stops
    assert [(e.status_code, e.retry_after is not None) for e in reads] == [
        (502, False),
        (503, True),
        (502, False),
        (503, True),
    ]
    after_503 = reads[2].received_at - reads[1].received_at
    assert after_503 == pytest.approx(30.0, abs=0.1)  # it waited as told


def test_a_client_that_retries_5xx_for_ever_is_caught_by_bounded_retries() -> None:
    outcome, entries, report = play(rogues.unbounded_retrier)
    assert outcome == "timed_out"  # it kept its deadline, but spent it retrying
    reads = [e for e in entries if e.kind == "status"]
    failed, retry = reads[:6], reads[6]
    assert all(e.status_code in (502, 503) for e in reads)
    assert [(v.invariant, v.message) for v in report.violations] == [
        (
            "bounded_retries",
            f"status read #{retry.seq} for job {retry.job_id} at {retry.received_at:.3f} s was"
            f" retry 6 after 6 consecutive failed attempts (#{failed[0].seq} to"
            f" #{failed[-1].seq}); max_retries is 5",
        )
    ]
