"""Every bundled scenario, played to its end by the correct client (``tests/rogues.py``) in
process and virtual time, ends in its expected outcome with a clean invariant report."""

from __future__ import annotations

import pytest

from fakeprovider.inprocess import virtual_provider
from fakeprovider.invariants import Limits, check, expected_outcome
from fakeprovider.scenario import bundled_scenarios, load_scenario

from . import rogues

TOKEN = "sk-test-fakeprovider"
#: What the client reports where that is not the job's outcome: auth-revoked revokes the token
#: while the job runs, so a correct client stops with an auth error; in an outage it runs out
#: of retries and stops with its "error" (the expected timed_out: it cannot know the outcome).
REPORTED = {"auth-revoked": "auth_error", "outage": "error"}


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_the_correct_client_plays_each_bundled_scenario_cleanly(name: str) -> None:
    scenario = load_scenario(name)
    deadline = scenario.expect.deadline or 600.0
    with virtual_provider(scenario) as fp:
        outcome = rogues.correct(fp.url, deadline=deadline, token=TOKEN)
        entries = list(fp.journal)
    expected = REPORTED.get(name) or scenario.expect.outcome or expected_outcome(scenario)
    assert outcome == expected
    # a job seen to succeed is downloaded exactly once
    retrievals = 1 if outcome in ("succeeded", "completed_with_errors") else None
    limits = Limits.from_expect(scenario.expect, deadline=deadline, retrievals=retrievals)
    report = check(entries, limits)
    assert report.violations == (), report.render()
    kinds = [e.kind for e in entries]
    assert kinds[0] == "submit"
    assert "status" in kinds
    assert ("content" in kinds) == (retrievals == 1)


def test_the_same_judge_catches_a_client_that_downloads_twice() -> None:
    scenario = load_scenario("slow-success")
    with virtual_provider(scenario) as fp:
        assert rogues.double_downloader(fp.url, deadline=600.0) == "succeeded"
        entries = list(fp.journal)
    first, second = (e for e in entries if e.kind == "content")
    report = check(entries, Limits.from_expect(scenario.expect, deadline=600.0, retrievals=1))
    assert [(v.invariant, v.message) for v in report.violations] == [
        (
            "single_retrieval",
            f"content fetch #{second.seq} for job {first.job_id} at"
            f" {second.received_at:.3f} s downloaded the result again; #{first.seq} had already"
            f" retrieved it at {first.received_at:.3f} s and it may be fetched once",
        )
    ]
