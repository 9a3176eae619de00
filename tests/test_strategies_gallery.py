"""The rogues' gallery against generated providers, in virtual time.

Each buggy client of ``tests/rogues.py`` is caught by ``@given(scenarios())`` within
Hypothesis's default budget of 100 examples, and the scenario it shrinks to is minimal (one job,
and only the faults or limits the bug needs: without any one of them the bug no longer shows);
the correct client survives 500 examples (``-m slow``; 25 in the default run). The five rogues
whose search takes longest run with ``-m slow`` (CI runs both). Every example
runs in process, through the plugin's per-example context manager
(``fakeprovider_session.example(..., inprocess=True)``), so the clients' ``time.sleep`` moves
a virtual clock: minutes of polling take milliseconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.control import current_build_context

from fakeprovider.scenario import Scenario, parse_scenario
from fakeprovider.strategies import note_scenario, scenarios

from . import rogues

DEADLINE = 900.0  # the clients' deadline, in (virtual) seconds; timelines end by 600 s
GALLERY = settings(
    database=None,
    derandomize=True,  # the same examples on every run: no flaky "not found this time"
    # no Phase.explain: it traces every line of httpx under sys.settrace, minutes per failure
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    deadline=None,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# rogue client -> the invariant its bug breaks (tests/rogues.py documents each bug)
ROGUES: dict[str, Callable[..., str]] = {
    "single_retrieval": rogues.double_downloader,
    "no_premature_retrieval": rogues.eager_downloader,
    "bounded_retries": rogues.unbounded_retrier,
    "honours_retry_after": rogues.int_retry_after,
    "honours_poll_after": rogues.impatient,
    "stops_at_terminal": rogues.keeps_polling,
    "no_resubmission": rogues.resubmitter,
    "no_retry_on_auth_error": rogues.auth_retrier,
    "deadline": rogues.no_deadline,
    "no_overlap": rogues.async_timer_poller,
    "status_rate": rogues.fleet,
}


DEADLINES = {
    # the impatient rogue polls every 10 ms: a job that never ends would cost 90,000 requests
    "honours_poll_after": 20.0,
    # the no-deadline rogue overruns by at most 2 s (a safety cap in rogues.py), past the 1 s
    # of slack only when a poll lands in that second: 898.5 s puts the default 5 s hint there
    "deadline": 898.5,
}
STRATEGIES = {
    # a 401/403 is one kind among six and must hit a status read the client makes: rare in
    # 100 examples of the default mix, so this rogue gets a mix with more of them
    "no_retry_on_auth_error": scenarios(fault_kinds=["server_error", "auth_error"]),
    # reads overlap only when an answer takes longer than the timer's interval (the hint):
    # slow answers are one kind among six, so this rogue gets them alone
    "no_overlap": scenarios(fault_kinds=["slow"]),
}


def one_read_per_hint(scenario: Scenario) -> dict[str, float]:
    """The status-rate budget of an example: two reads per window of the scenario's shortest
    poll hint (one job polled at its hint needs one), so a fleet that reads all of its jobs at
    once is over it."""
    hint = min(job.poll_after or rogues.DEFAULT_WAIT for job in scenario.jobs)
    return {"status_rate": 2 / hint, "status_rate_window": hint}


# invariant -> the limits of each example, from its scenario (opt-in invariants need them)
LIMITS: dict[str, Callable[[Scenario], dict[str, float]]] = {
    "status_rate": one_read_per_hint,
}


def play(
    session: Any,
    client: Callable[..., str],
    scenario: Scenario,
    deadline: float = DEADLINE,
    limits: dict[str, float] | None = None,
) -> set[str]:
    """Run ``client`` against ``scenario`` in virtual time; the invariants it broke."""
    with session.example(scenario, inprocess=True) as fake:
        # a crash is not what this test is about: the journal still counts
        with contextlib.suppress(Exception):
            client(fake.url, deadline=deadline)
        report = fake.check(deadline=deadline, **(limits or {}))
    return {violation.invariant for violation in report.violations}


ONE_JOB_DONE_AFTER_A_SECOND = (
    "jobs:\n- timeline:\n  - status: queued\n  - status: succeeded\n    at: 1s\nname: generated\n"
)
#: What each rogue's failure shrinks to: one job, and only the faults (or the rate limit) its bug
#: needs to show. A job that succeeds after a second rather than at once: a job the 202 already
#: shows done is never polled, and the gallery's shared code handles it once, so most bugs need
#: one poll to show.
SHRUNK = {
    "single_retrieval": ONE_JOB_DONE_AFTER_A_SECOND,
    "stops_at_terminal": ONE_JOB_DONE_AFTER_A_SECOND,
    "honours_poll_after": ONE_JOB_DONE_AFTER_A_SECOND,
    # the fleet reads its four jobs at once at the first hint: over any budget of two a hint
    "status_rate": ONE_JOB_DONE_AFTER_A_SECOND,
    # takes the 202 for done and downloads at once: a job that fails at once is enough
    "no_premature_retrieval": "jobs:\n- timeline:\n  - status: failed\nname: generated\n",
    # a job that never ends outlives any deadline
    "deadline": "jobs:\n- timeline:\n  - status: processing\nname: generated\n",
    # the first read answers after 6 s, one second past the timer's 5 s (the default hint):
    # the timer's second read arrives while the first has not started its response
    "no_overlap": ONE_JOB_DONE_AFTER_A_SECOND
    + "faults:\n- name: slow-1\n  route: status\n  nth: 1\n  delay: 6s\n",
    "no_retry_on_auth_error": ONE_JOB_DONE_AFTER_A_SECOND
    + "faults:\n- name: auth-error-1\n  route: status\n  nth: 1\n  status: 401\n",
    # an HTTP-date Retry-After on the submit's 503: int() raises, and the rogue retries at once
    "honours_retry_after": "jobs:\n- timeline:\n  - status: succeeded\nname: generated\n"
    "faults:\n- name: server-error-1\n  route: submit\n  nth: 1\n  status: 503\n"
    "  retry_after:\n    delay: 2s\n    form: imf\n",
    # one failed status read, and the rogue submits the job again
    "no_resubmission": ONE_JOB_DONE_AFTER_A_SECOND
    + "faults:\n- name: server-error-1\n  route: status\n  nth: 1\n  status: 503\n",
    # every status read fails, and the rogue never stops retrying
    "bounded_retries": ONE_JOB_DONE_AFTER_A_SECOND
    + "faults:\n- name: server-error-1\n  route: status\n  every: 1\n  status: 503\n",
}


def without_one_part(scenario: Scenario) -> dict[str, Scenario]:
    """Every scenario one job, one fault, the rate limit or the webhooks smaller."""
    smaller: dict[str, Scenario] = {}
    if len(scenario.jobs) > 1:
        for index in range(len(scenario.jobs)):
            jobs = scenario.jobs[:index] + scenario.jobs[index + 1 :]
            smaller[f"jobs[{index}]"] = dataclasses.replace(scenario, jobs=jobs, faults=())
    for fault in scenario.faults:
        faults = tuple(f for f in scenario.faults if f is not fault)
        smaller[f"fault {fault.name}"] = dataclasses.replace(scenario, faults=faults)
    if scenario.rate_limit is not None:
        smaller["rate_limit"] = dataclasses.replace(scenario, rate_limit=None)
    if scenario.webhooks is not None:
        smaller["webhooks"] = dataclasses.replace(scenario, webhooks=None)
    return smaller


#: The rogues whose search and shrink take longest (5-10 s each): CI runs them in its slow step
#: (``-m slow``), the default run keeps the rest, so that it stays within five minutes.
LONG_SEARCHES = frozenset(
    {
        "bounded_retries",
        "no_overlap",
        "no_resubmission",
        "no_retry_on_auth_error",
        "honours_retry_after",
    }
)


@pytest.mark.parametrize(
    "invariant",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in LONG_SEARCHES else name
        for name in sorted(ROGUES)
    ],
)
def test_each_rogue_is_caught_and_shrinks_to_a_minimal_scenario(
    invariant: str, fakeprovider_session: Any
) -> None:
    client = ROGUES[invariant]
    minimal: list[Scenario] = []
    tried = 0

    def broken_by(scenario: Scenario) -> set[str]:
        limits = LIMITS[invariant](scenario) if invariant in LIMITS else None
        deadline = DEADLINES.get(invariant, DEADLINE)
        return play(fakeprovider_session, client, scenario, deadline, limits)

    @GALLERY  # the default budget: 100 examples
    @given(STRATEGIES.get(invariant, scenarios()))
    def client_keeps_the_invariant(scenario: Scenario) -> None:
        nonlocal tried
        tried += 1
        note_scenario(scenario)
        broken = broken_by(scenario)
        if invariant in broken and current_build_context().is_final:
            minimal.append(scenario)
        assert invariant not in broken

    with pytest.raises(AssertionError):
        client_keeps_the_invariant()
    [found] = minimal
    assert tried <= 100 + 500  # found within the 100 examples, then at most 500 to shrink
    assert found.to_yaml() == SHRUNK[invariant]
    # minimal: without any one of its jobs, faults or limits, the bug no longer shows
    for part, smaller in without_one_part(found).items():
        assert invariant not in broken_by(smaller), f"{part} is not needed"


def test_a_scenario_with_a_part_the_bug_does_not_need_is_not_minimal(
    fakeprovider_session: Any,
) -> None:
    # the check above can fail: a scenario with a fault the double downloader does not need
    padded = parse_scenario(
        ONE_JOB_DONE_AFTER_A_SECOND + "faults:\n- {name: slow-1, route: list, nth: 1, delay: 1s}\n"
    )
    [(part, smaller)] = without_one_part(padded).items()
    assert part == "fault slow-1"
    assert "single_retrieval" in play(fakeprovider_session, rogues.double_downloader, smaller)


def _correct_client_survives(session: Any, examples: int) -> dict[str, int]:
    """Run the correct client on ``examples`` generated scenarios; its outcomes, counted."""
    outcomes: dict[str, int] = {}

    @settings(GALLERY, max_examples=examples)
    @given(scenarios())
    def correct_client_keeps_every_invariant(scenario: Scenario) -> None:
        note_scenario(scenario)
        with session.example(scenario, inprocess=True) as fake:
            outcome = rogues.correct(fake.url, deadline=DEADLINE)
            report = fake.check(deadline=DEADLINE)
        assert report.violations == (), report.render()
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    correct_client_keeps_every_invariant()
    return outcomes


def test_the_correct_client_survives_generated_scenarios(fakeprovider_session: Any) -> None:
    """The short version for the default run (a few seconds); -m slow runs 500 examples."""
    assert sum(_correct_client_survives(fakeprovider_session, 25).values()) >= 25


@pytest.mark.slow  # about 30 s
def test_the_correct_client_survives_500_examples(fakeprovider_session: Any) -> None:
    outcomes = _correct_client_survives(fakeprovider_session, 500)
    assert sum(outcomes.values()) >= 500
    assert {"succeeded", "failed", "timed_out", "error"} <= set(outcomes)


@pytest.mark.slow  # about 12 s (run with -m slow -s to see the wall time)
def test_200_examples_simulate_hours_of_provider_time(fakeprovider_session: Any) -> None:
    simulated = 0.0

    @settings(GALLERY, max_examples=200)
    @given(scenarios())
    def polite(scenario: Scenario) -> None:
        nonlocal simulated
        with fakeprovider_session.example(scenario, inprocess=True) as fake:
            rogues.correct(fake.url, deadline=DEADLINE)
            simulated += fake.clock.now() - fake.provider.engine.start

    started = time.perf_counter()
    polite()
    wall = time.perf_counter() - started
    print(f"\n200 examples: {wall:.2f} s of wall time for {simulated / 3600:.1f} h of virtual time")
    assert simulated > 200 * 60  # on average more than a minute of provider time per example
