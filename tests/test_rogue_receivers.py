"""The rogues' gallery of webhook receivers against the real server and dispatcher.

The correct polling client submits with ``callback_url`` pointing at a receiver, on the
bundled ``duplicate-webhook`` and ``forged-webhook`` scenarios scaled 1/20 (the ack limit and
the dispatcher's timeout are about the receiver's own speed, so the time scale leaves them
alone). Every buggy receiver is caught by exactly
``webhook_ack`` with the exact messages (rebuilt here from the entries they name, picked by
what the dispatcher sent rather than by what the receiver answered); the correct one is clean
and acts on each event exactly once. All runs share one module fixture and run at once, each
on its own server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pytest

from fakeprovider.invariants import Limits, Report, check
from fakeprovider.journal import Entry
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import load_scenario
from fakeprovider.server import ServerThread

from . import rogue_receivers as rr
from . import rogues

SCALE = 1 / 20


def t(x: float) -> str:
    return f"{x:.3f} s"


@dataclass(frozen=True)
class Case:
    receiver: type[rr.Receiver]
    scenario: str


@dataclass(frozen=True)
class Run:
    case: Case
    receiver: rr.Receiver
    outcome: str
    entries: list[Entry]
    report: Report

    @property
    def hooks(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == "webhook"]

    @property
    def ack_limit(self) -> float:
        return self.report.limits.ack_limit


CASES = {
    "correct-duplicate-webhook": Case(rr.Receiver, "duplicate-webhook"),
    "correct-forged-webhook": Case(rr.Receiver, "forged-webhook"),
    "no-verify": Case(rr.NoVerify, "forged-webhook"),
    "ignores-timestamps": Case(rr.IgnoresTimestamps, "forged-webhook"),
    "dedupes-before-verifying": Case(rr.DedupesBeforeVerifying, "forged-webhook"),
    "slow-worker": Case(rr.SlowWorker, "duplicate-webhook"),
    "errors-on-duplicates": Case(rr.ErrorsOnDuplicates, "duplicate-webhook"),
}


def _play(case: Case) -> Run:
    scenario = load_scenario(case.scenario, time_scale=SCALE)
    assert scenario.expect.deadline is not None
    if scenario.webhooks is not None and (scenario.webhooks.forged or scenario.webhooks.stale):
        # the forged copy and the stale replay are meant to arrive once the genuine delivery
        # was handled: the scenario's 2 s gap is 0.1 s here, which a loaded machine overran
        # (the forged copy reached the receiver before it had seen the genuine webhook-id)
        scenario = replace(scenario, webhooks=replace(scenario.webhooks, duplicate_gap=1.0))
    with case.receiver() as receiver, ServerThread(FakeProvider(scenario)) as server:
        outcome = rogues.correct(
            server.url, deadline=scenario.expect.deadline, callback_url=receiver.url
        )
        time.sleep(0.1)  # the dispatcher plans the last change within a tick
        assert server.dispatcher.wait_idle(10.0)
        entries = server.provider.entries
    limits = Limits.from_expect(scenario.expect, time_scale=SCALE)
    return Run(case, receiver, outcome, entries, check(entries, limits))


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
        futures = {name: pool.submit(_play, case) for name, case in CASES.items()}
        return {name: future.result(timeout=60) for name, future in futures.items()}


def _head(e: Entry, url: str) -> str:
    tags = [e.event or "", *([e.delivery] if e.delivery else [])]
    if e.attempt is not None and e.attempt > 1:
        tags.append(f"attempt {e.attempt}")
    return f"webhook #{e.seq} ({', '.join(tags)}) to {url}"


def _accepted_forgeries(run: Run) -> list[str]:
    """Every forged and stale send answered (200 or 204) rather than rejected."""
    return [
        f"{_head(e, run.receiver.url)} was answered {e.status_code}; a {e.delivery} delivery must"
        " be rejected with a 4xx"
        for e in run.hooks
        if e.delivery in ("forged", "stale")
    ]


def _accepted_stale(run: Run) -> list[str]:
    return [
        f"{_head(e, run.receiver.url)} was answered 204; a stale delivery must be rejected with"
        " a 4xx"
        for e in run.hooks
        if e.delivery == "stale"
    ]


def _slow(run: Run) -> list[str]:
    """The first send of each message (where the work is done); duplicates are answered fast."""
    out = []
    for e in run.hooks:
        if e.delivery in (None, "reordered"):
            assert e.latency is not None
            out.append(
                f"{_head(e, run.receiver.url)} was answered 204 after {t(e.latency)}; a valid"
                f" delivery must be acknowledged with a 2xx within {t(run.ack_limit)}"
            )
    return out


def _duplicates_fail(run: Run) -> list[str]:
    """Every attempt of every duplicate send (each 500 is retried up to max_attempts)."""
    return [
        f"{_head(e, run.receiver.url)} was answered 500; a valid delivery must be acknowledged"
        f" with a 2xx within {t(run.ack_limit)}"
        for e in run.hooks
        if e.delivery == "duplicate"
    ]


EXPECTED: dict[str, Callable[[Run], list[str]]] = {
    "no-verify": _accepted_forgeries,
    "ignores-timestamps": _accepted_stale,
    "dedupes-before-verifying": _accepted_forgeries,
    "slow-worker": _slow,
    "errors-on-duplicates": _duplicates_fail,
}


@pytest.mark.parametrize("name", ["correct-duplicate-webhook", "correct-forged-webhook"])
def test_the_correct_receiver_is_clean_and_acts_on_each_event_once(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    assert run.report.violations == (), run.report.render()
    assert run.outcome == "succeeded"
    (job_id,) = {e.job_id for e in run.entries if e.kind == "submit"}
    receiver = run.receiver
    if run.case.scenario == "duplicate-webhook":
        # three sends of each message, job.processing after job.succeeded
        sends = [None, "duplicate", "duplicate", "reordered", "duplicate", "duplicate"]
        assert [e.delivery for e in run.hooks] == sends
        assert receiver.events == ["job.succeeded", "job.processing"]
        assert {code for _, code in receiver.answers} == {204}
    else:
        assert [e.delivery for e in run.hooks] == [None, "forged", "stale"]
        assert receiver.events == ["job.succeeded"]
        assert [code for _, code in receiver.answers] == [204, 401, 401]
    assert len({msg_id for msg_id, _, _ in receiver.processed}) == len(receiver.processed)
    assert receiver.state == {job_id: "succeeded"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_rogue_receiver_is_caught_by_webhook_ack_alone(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    report = run.report
    assert {v.invariant for v in report.violations} == {"webhook_ack"}, report.render()
    assert [v.message for v in report.violations] == EXPECTED[name](run)
    port = run.receiver.url.split("/")[2]
    assert {v.client for v in report.violations} == {port}
    # the polling client is fine either way
    assert run.outcome == "succeeded"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_business_effect_alone_would_not_catch_them(runs: dict[str, Run], name: str) -> None:
    """Each rogue still acts on each event once and ends with the job succeeded: only the
    answers it gave (what ``webhook_ack`` reads) show the bug."""
    run = runs[name]
    (job_id,) = {e.job_id for e in run.entries if e.kind == "submit"}
    expected = (
        ["job.succeeded", "job.processing"]
        if run.case.scenario == "duplicate-webhook"
        else ["job.succeeded"]
    )
    assert run.receiver.events == expected
    assert run.receiver.state == {job_id: "succeeded"}


def test_every_receiver_bug_has_a_rogue() -> None:
    assert {case.receiver.name for case in CASES.values()} == {
        "correct",
        "no-verify",
        "ignores-timestamps",
        "dedupes-before-verifying",
        "slow-worker",
        "errors-on-duplicates",
    }
