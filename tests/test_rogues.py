"""The rogues' gallery on bundled scenarios, judged by the invariant checker.

Every buggy client is caught by exactly its invariant, with the exact message (rebuilt here
from the journal entries it names, found independently); the correct client is clean on a
dozen scenarios. The runs are in process, in virtual time (``fakeprovider.inprocess``): the
clients' sleeps move the fake's clock, so a run is deterministic and takes milliseconds
whatever the machine's load. A few runs (``sockets=True``) go through the real server instead,
at once, each on its own server: the threaded timer poller, whose overlapping reads need a real
transport, and the correct client where the fake drops connections. Last, the rules' corners
that only a careful client reaches (a second key, a read already in flight, a budget met
exactly), each with a client that keeps the rule and one that breaks it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from fakeprovider.inprocess import virtual_provider
from fakeprovider.invariants import Limits, Report, check, expected_outcome
from fakeprovider.journal import Entry
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import load_scenario, parse_scenario
from fakeprovider.server import ServerThread

from . import rogues

TOKEN = "sk-test-fakeprovider"


def t(x: float) -> str:
    return f"{x:.3f} s"


@dataclass(frozen=True)
class Case:
    client: Callable[..., str]
    scenario: str
    scale: float
    deadline: float | None = None  # the client's deadline; default: the scenario's, scaled
    limits: dict[str, Any] = field(default_factory=dict)
    token: str | None = None
    sockets: bool = False  # through the real server in real (scaled) time, not in process


@dataclass(frozen=True)
class Run:
    case: Case
    outcome: str
    entries: list[Entry]
    report: Report


CORRECT = {
    f"correct-{name}": Case(
        rogues.correct, name, scale, token=TOKEN if name == "auth-revoked" else None
    )
    for name, scale in [
        ("slow-success", 0.02),
        ("terminal-failure", 0.05),
        ("transient-5xx", 0.05),
        ("rate-limited", 0.05),
        ("retry-after-seconds", 0.05),
        ("deadline-expiry", 0.02),
        ("slow-status", 0.05),
        ("ambiguous-submit", 0.05),
        ("auth-revoked", 0.02),
        ("cancelled", 0.05),
        ("completed-with-errors", 0.05),
        ("quick-preview", 0.1),
        ("long-render", 0.005),
    ]
}
RATE = {"status_rate": 12.0, "status_rate_window": 0.5}
ROGUES = {
    # it never downloads what it saw succeed: slow-status's `retrievals: 1` is not its bug
    "no_overlap": Case(rogues.async_timer_poller, "slow-status", 0.1, limits={"retrievals": None}),
    "single_retrieval": Case(rogues.double_downloader, "quick-preview", 0.05),
    "no_premature_retrieval": Case(rogues.eager_downloader, "quick-preview", 0.05),
    "bounded_retries": Case(
        rogues.unbounded_retrier, "transient-5xx", 0.05, limits={"max_retries": 1}
    ),
    "honours_retry_after": Case(rogues.int_retry_after, "rate-limited", 0.2, deadline=3.5),
    "honours_poll_after": Case(rogues.impatient, "quick-preview", 0.05),
    "stops_at_terminal": Case(rogues.keeps_polling, "quick-preview", 0.05),
    "no_resubmission": Case(rogues.resubmitter, "transient-5xx", 0.05),
    "no_retry_on_auth_error": Case(rogues.auth_retrier, "auth-revoked", 0.02, token=TOKEN),
    "deadline": Case(rogues.no_deadline, "deadline-expiry", 0.02),
    "status_rate": Case(rogues.fleet, "quick-preview", 0.05, limits=RATE),
}
# The correct client within the budget the fleet breaks.
CORRECT["correct-status-rate"] = Case(rogues.correct, "quick-preview", 0.05, limits=RATE)
# A client that watches its job through the list (reconciliation): what the list showed it
# counts as seen, so its download is not premature (long-render never sends the webhook).
CORRECT["reconciler-long-render"] = Case(rogues.reconciler, "long-render", 0.005)
CORRECT["reconciler-transient-5xx"] = Case(rogues.reconciler, "transient-5xx", 0.05)
# Over real sockets: resets and lost responses are real dropped connections there.
CORRECT["correct-transient-5xx-sockets"] = Case(rogues.correct, "transient-5xx", 0.05, sockets=True)
CORRECT["correct-ambiguous-submit-sockets"] = Case(
    rogues.correct, "ambiguous-submit", 0.05, sockets=True
)
# More rogues for an invariant that already has one: name -> (invariant, case).
MORE_ROGUES = {
    # a thread per read: the reads overlap on the wire, which in-process calls cannot show
    "timer-poller-sockets": (
        "no_overlap",
        Case(rogues.timer_poller, "slow-status", 0.1, sockets=True),
    ),
    "retries-rejected": (
        "bounded_retries",
        Case(rogues.retries_rejected, "quick-preview", 0.05),
    ),
}


# Rogues that no invariant can judge but the report warns about: name -> case.
WARNED = {"quitter": Case(rogues.quitter, "transient-5xx", 0.05)}


def _play(case: Case) -> Run:
    scenario = load_scenario(case.scenario, time_scale=case.scale)
    deadline = case.deadline if case.deadline is not None else scenario.expect.deadline
    assert deadline is not None
    if case.sockets:
        with ServerThread(FakeProvider(scenario)) as server:
            outcome = case.client(server.url, deadline=deadline, token=case.token)
            entries = server.provider.entries
    else:
        with virtual_provider(scenario) as fp:
            outcome = case.client(fp.url, deadline=deadline, token=case.token)
            entries = list(fp.journal)
    limits = Limits.from_expect(
        scenario.expect, time_scale=case.scale, deadline=deadline, **case.limits
    )
    return Run(case, outcome, entries, check(entries, limits))


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    cases = {
        **CORRECT,
        **ROGUES,
        **{name: case for name, (_, case) in MORE_ROGUES.items()},
        **WARNED,
    }
    on_sockets = {name: case for name, case in cases.items() if case.sockets}
    with ThreadPoolExecutor(max_workers=len(on_sockets)) as pool:
        futures = {name: pool.submit(_play, case) for name, case in on_sockets.items()}
        done = {name: future.result(timeout=60) for name, future in futures.items()}
    # in process, one at a time: virtual time is entered by one thread at once
    done.update({name: _play(case) for name, case in cases.items() if not case.sockets})
    return done


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_the_correct_client_is_clean(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    assert run.report.violations == (), run.report.render()
    scenario = load_scenario(run.case.scenario, time_scale=run.case.scale)
    expected = "auth_error" if run.case.scenario == "auth-revoked" else expected_outcome(scenario)
    assert run.outcome == expected


def _of(entries: list[Entry], kind: str) -> list[Entry]:
    return [e for e in entries if e.kind == kind]


def _overlap(entries: list[Entry]) -> list[str]:
    reads = _of(entries, "status")
    return [
        f"status read #{b.seq} for job {b.job_id} arrived at {t(b.received_at)} while read #{a.seq}"
        f" (received {t(a.received_at)}) had not started its response"
        for a, b in itertools.pairwise(reads)
    ]


def _double(entries: list[Entry]) -> list[str]:
    first, second = _of(entries, "content")
    return [
        f"content fetch #{second.seq} for job {second.job_id} at {t(second.received_at)} downloaded"
        f" the result again; #{first.seq} had already retrieved it at {t(first.received_at)} and it"
        " may be fetched once"
    ]


def _eager(entries: list[Entry]) -> list[str]:
    submit, fetch = entries
    return [
        f"content fetch #{fetch.seq} for job {fetch.job_id} at {t(fetch.received_at)} came before"
        f" the client could have seen the job succeed; the last status it had seen was 'queued'"
        f" (#{submit.seq})"
    ]


def _unbounded(entries: list[Entry]) -> list[str]:
    reads = _of(entries, "status")
    failed = [e for e in reads if e.status_code == 503]
    retry = reads[reads.index(failed[1]) + 1]
    return [
        f"status read #{retry.seq} for job {retry.job_id} at {t(retry.received_at)} was retry 2 after"
        f" 2 consecutive failed attempts (#{failed[0].seq} to #{failed[1].seq}); max_retries is 1"
    ]


def _int_retry_after(entries: list[Entry]) -> list[str]:
    # every 429 with an HTTP-date Retry-After (int() fails on it) is followed by an immediate read
    reads = _of(entries, "status")
    out = []
    for throttled, after in itertools.pairwise(reads):
        record = throttled.retry_after
        if throttled.status_code != 429 or record is None or record.form == "seconds":
            continue
        assert record.not_before is not None
        out.append(
            f"status read #{after.seq} for job {after.job_id} at {t(after.received_at)} came"
            f" {t(record.not_before - after.received_at)} before the Retry-After {record.raw!r} of"
            f" #{throttled.seq} (429, account scope) allowed it at {t(record.not_before)}"
        )
    assert out, "the run never met an HTTP-date Retry-After"
    return out


def _impatient(entries: list[Entry]) -> list[str]:
    chain = [e for e in entries if e.kind in ("submit", "status")]
    out = []
    for a, b in itertools.pairwise(chain):
        assert a.completed_at is not None
        assert a.poll_after is not None
        if a.job_status == "succeeded":
            break
        gap = b.received_at - a.completed_at
        if gap >= 0.09:  # a late wake-up: this one happened to wait long enough
            continue
        out.append(
            f"status read #{b.seq} for job {b.job_id} at {t(b.received_at)} came {t(gap)} after"
            f" #{a.seq} answered, sooner than its poll hint of {t(a.poll_after)} (less 10% tolerance)"
        )
    return out


def _keeps_polling(entries: list[Entry]) -> list[str]:
    reads = _of(entries, "status")
    done = next(e for e in reads if e.job_status == "succeeded")
    extra = reads[reads.index(done) + 1]
    assert done.completed_at is not None
    return [
        f"status read #{extra.seq} for job {extra.job_id} at {t(extra.received_at)} came after"
        f" #{done.seq} had shown the job 'succeeded' at {t(done.completed_at)}"
    ]


def _resubmit(entries: list[Entry]) -> list[str]:
    first, second = _of(entries, "submit")
    failed = next(e for e in _of(entries, "status") if e.status_code == 503)
    return [
        f"submit #{second.seq} at {t(second.received_at)} created job {second.job_id} for the same"
        f" request as job {first.job_id} after status read #{failed.seq} of that job failed (503);"
        " a failed status read does not mean the job failed"
    ]


def _auth(entries: list[Entry]) -> list[str]:
    refused = [e for e in entries if e.status_code == 401]
    first, again = refused[0], refused[1]
    assert first.response_started_at is not None
    return [
        f"status read #{again.seq} for job {again.job_id} at {t(again.received_at)} was sent with"
        f" the same credential {first.credential} after status read #{first.seq} for job"
        f" {first.job_id} was refused with 401 at {t(first.response_started_at)}"
    ]


def _deadline(entries: list[Entry]) -> list[str]:
    submit = entries[0]
    limit = load_scenario("deadline-expiry", time_scale=0.02).expect.deadline
    assert limit is not None
    # later than the deadline + 1 s of slack, beyond float noise (a read may land on the edge)
    late = next(e for e in entries if e.received_at > submit.received_at + limit + 1.0 + 1e-6)
    return [
        f"status read #{late.seq} for job {late.job_id} at {t(late.received_at)} came"
        f" {t(late.received_at - submit.received_at - limit)} after the deadline of {t(limit)} from"
        f" #{submit.seq} at {t(submit.received_at)} (slack 1.000 s)"
    ]


def _rate(entries: list[Entry]) -> list[str]:
    reads = _of(entries, "status")
    for index, read in enumerate(reads):
        inside = [r for r in reads[: index + 1] if r.received_at > read.received_at - 0.5]
        if len(inside) > 6:
            return [
                f"status read #{read.seq} at {t(read.received_at)} was read {len(inside)} within"
                f" 0.500 s (since #{inside[0].seq} at {t(inside[0].received_at)}); the budget of 12"
                " per second allows 6"
            ]
    raise AssertionError("the fleet stayed within the budget")


EXPECTED: dict[str, Callable[[list[Entry]], list[str]]] = {
    "no_overlap": _overlap,
    "single_retrieval": _double,
    "no_premature_retrieval": _eager,
    "bounded_retries": _unbounded,
    "honours_retry_after": _int_retry_after,
    "honours_poll_after": _impatient,
    "stops_at_terminal": _keeps_polling,
    "no_resubmission": _resubmit,
    "no_retry_on_auth_error": _auth,
    "deadline": _deadline,
    "status_rate": _rate,
}


@pytest.mark.parametrize("invariant", sorted(ROGUES))
def test_each_rogue_is_caught_by_its_invariant_alone(runs: dict[str, Run], invariant: str) -> None:
    run = runs[invariant]
    report = run.report
    assert {v.invariant for v in report.violations} == {invariant}, report.render()
    assert [v.message for v in report.violations] == EXPECTED[invariant](run.entries)
    assert {v.client for v in report.violations} == {run.case.client.__kwdefaults__["client_id"]}


def _rejected(entries: list[Entry]) -> list[str]:
    submits = _of(entries, "submit")
    assert {e.status_code for e in submits} == {422}
    retry = submits[6]
    return [
        f"submit #{retry.seq} at {t(retry.received_at)} was retry 6 after 6 consecutive failed"
        f" attempts (#{submits[0].seq} to #{submits[5].seq}); max_retries is 5"
    ]


MORE_EXPECTED: dict[str, Callable[[list[Entry]], list[str]]] = {
    "retries-rejected": _rejected,
    "timer-poller-sockets": _overlap,
}


@pytest.mark.parametrize("name", sorted(MORE_ROGUES))
def test_more_rogues_are_caught_by_their_invariant_alone(runs: dict[str, Run], name: str) -> None:
    invariant, case = MORE_ROGUES[name]
    report = runs[name].report
    assert {v.invariant for v in report.violations} == {invariant}, report.render()
    assert [v.message for v in report.violations] == MORE_EXPECTED[name](runs[name].entries)
    assert {v.client for v in report.violations} == {case.client.__kwdefaults__["client_id"]}


def test_every_invariant_but_webhook_ack_has_a_rogue() -> None:
    from fakeprovider.invariants import INVARIANTS

    assert set(ROGUES) == set(INVARIANTS) - {"webhook_ack"}


def test_a_rogue_and_the_correct_client_share_one_server_and_are_judged_apart() -> None:
    scenario = load_scenario("quick-preview", time_scale=0.05)
    with ServerThread(FakeProvider(scenario)) as server:
        with ThreadPoolExecutor(2) as pool:
            good = pool.submit(rogues.correct, server.url, deadline=3.0)
            bad = pool.submit(rogues.keeps_polling, server.url, deadline=3.0)
            assert (good.result(10), bad.result(10)) == ("succeeded", "succeeded")
        report = check(server.provider.entries, Limits.from_expect(scenario.expect))
    assert [(v.invariant, v.client) for v in report.violations] == [
        ("stops_at_terminal", "keeps-polling")
    ]
    assert sorted(report.metrics["clients"]) == ["correct", "keeps-polling"]


def _gave_up(report: Report) -> list[str]:
    return [w for w in report.warnings if "never asked about job" in w]


def test_a_client_that_takes_a_failed_read_for_a_failed_job_is_warned_about(
    runs: dict[str, Run],
) -> None:
    run = runs["quitter"]
    assert (run.outcome, run.report.violations) == ("failed", ())
    (failed,) = [e for e in run.entries if e.kind == "status" and e.failed]
    assert _gave_up(run.report) == [
        f"the client 'quitter' never asked about job {failed.job_id} again after status read"
        f" #{failed.seq} for job {failed.job_id} got 503 while the job was 'processing': a"
        " failed read is not a failed job; unless the client ran out of retries or time, it"
        " should have retried"
    ]


def test_the_correct_client_that_retries_a_failed_read_gets_no_such_warning(
    runs: dict[str, Run],
) -> None:
    assert _gave_up(runs["correct-transient-5xx"].report) == []


# -- the rules' corners, with real clients in virtual time ------------------------------------

TWO_KEYS = """
name: two-keys
description: Status reads limited per key, one every minute; each of two keys runs a job.
jobs:
  - {poll_after: 5s, timeline: [{status: queued}, {at: 60s, status: succeeded}]}
rate_limit: {capacity: 1, refill_every: 60s, routes: [status], retry_after_form: seconds}
"""


def _two_tenants(url: str, *, patient: bool) -> list[int]:
    """One client serving two tenants, each with its own key and job. Key A is throttled on its
    second read; the client reads B's job at once (B's budget is B's own), then A's again: after
    the Retry-After (patient) or a second later."""

    def http(key: str) -> httpx.Client:
        return httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}", "X-Client-Id": "tenants"}
        )

    with http("key-a") as a, http("key-b") as b:
        job_a = a.post("/v1/jobs", json={"prompt": "a"}).json()["job_id"]
        job_b = b.post("/v1/jobs", json={"prompt": "b"}).json()["job_id"]
        time.sleep(5)
        codes = [a.get(f"/v1/jobs/{job_a}").status_code]
        time.sleep(5)
        throttled = a.get(f"/v1/jobs/{job_a}")
        codes += [throttled.status_code, b.get(f"/v1/jobs/{job_b}").status_code]
        time.sleep(float(throttled.headers["retry-after"]) if patient else 1.0)
        codes.append(a.get(f"/v1/jobs/{job_a}").status_code)
    return codes


def test_a_429_for_one_key_does_not_bind_the_other_key_of_the_same_client() -> None:
    with virtual_provider(parse_scenario(TWO_KEYS)) as fp:
        assert _two_tenants(fp.url, patient=True) == [200, 429, 200, 200]
        assert check(fp.journal).violations == ()
    with virtual_provider(parse_scenario(TWO_KEYS)) as fp:
        assert _two_tenants(fp.url, patient=False) == [200, 429, 200, 429]
        entries = list(fp.journal)
        report = check(entries)
    throttled, retry = (e for e in entries if e.status_code == 429)
    assert throttled.retry_after is not None
    assert throttled.retry_after.not_before is not None
    assert throttled.credential != entries[1].credential  # the other tenant's read was key B's
    assert [(v.invariant, v.message) for v in report.violations] == [
        (
            "honours_retry_after",
            f"status read #{retry.seq} for job {retry.job_id} at {t(retry.received_at)} came"
            f" {t(throttled.retry_after.not_before - retry.received_at)} before the Retry-After"
            f" {throttled.retry_after.raw!r} of #{throttled.seq} (429, account scope) allowed it"
            f" at {t(throttled.retry_after.not_before)}",
        )
    ]


REVOKED_WHILE_READING = """
name: revoked-while-reading
description: Two submits, then the token is revoked; status answers take 2 s.
auth: {tokens: [sk-a], revoke_after: 2}
jobs:
  - {poll_after: 5s, timeline: [{status: queued}, {at: 60s, status: succeeded}]}
faults:
  - {name: slow-read, route: status, delay: 2s}
"""


async def _two_reads(url: str, *, retry: bool) -> list[int]:
    """Two jobs, read concurrently (the second read sent while the first waits for its answer);
    both are refused 401. The buggy client (``retry``) reads the first job again after that."""
    headers = {"Authorization": "Bearer sk-a", "X-Client-Id": "reader"}
    async with httpx.AsyncClient(base_url=url, headers=headers) as http:
        jobs = [(await http.post("/v1/jobs", json={"prompt": p})).json()["job_id"] for p in "ab"]

        async def read(job_id: str, after: float) -> int:
            await asyncio.sleep(after)
            return (await http.get(f"/v1/jobs/{job_id}")).status_code

        codes = list(await asyncio.gather(read(jobs[0], 5.0), read(jobs[1], 6.0)))
        if retry:
            codes.append(await read(jobs[0], 1.0))
    return codes


def test_a_read_already_in_flight_when_the_401_arrived_is_not_a_retry() -> None:
    scenario = parse_scenario(REVOKED_WHILE_READING)
    with virtual_provider(scenario) as fp:
        assert asyncio.run(_two_reads(fp.url, retry=False)) == [401, 401]
        entries = list(fp.journal)
        assert check(entries).violations == ()
    first, in_flight = (e for e in entries if e.status_code == 401)
    assert first.response_started_at is not None
    assert in_flight.received_at < first.response_started_at  # sent before the 401 arrived
    with virtual_provider(scenario) as fp:
        assert asyncio.run(_two_reads(fp.url, retry=True)) == [401, 401, 401]
        entries = list(fp.journal)
        report = check(entries)
    first, _, again = (e for e in entries if e.status_code == 401)
    assert first.response_started_at is not None
    assert [(v.invariant, v.message) for v in report.violations] == [
        (
            "no_retry_on_auth_error",
            f"status read #{again.seq} for job {again.job_id} at {t(again.received_at)} was sent"
            f" with the same credential {first.credential} after status read #{first.seq} for"
            f" job {first.job_id} was refused with 401 at {t(first.response_started_at)}",
        )
    ]


AT_BUDGET = """
name: at-budget
description: A 30 s job polled every 5 s, with a budget of one status read per 5 s.
jobs:
  - {poll_after: 5s, timeline: [{status: queued}, {at: 30s, status: succeeded}]}
expect: {status_rate: 0.2}
"""


def test_a_client_polling_exactly_at_the_status_rate_budget_stays_within_it() -> None:
    # 0.2 reads per second over the 10 s window: two reads per window; reads 5 s apart put
    # the read of one window's start exactly on the previous window's edge
    scenario = parse_scenario(AT_BUDGET)
    limits = Limits.from_expect(scenario.expect)
    with virtual_provider(scenario) as fp:
        assert rogues.observe(fp.url, deadline=60.0, client_id="at-budget") == "succeeded"
        entries = list(fp.journal)
    assert [e.received_at for e in entries if e.kind == "status"] == [
        5.0,
        10.0,
        15.0,
        20.0,
        25.0,
        30.0,
    ]
    assert check(entries, limits).violations == ()
    with virtual_provider(scenario) as fp:
        fast = rogues.Bugs(poll_interval=4.9)  # within the poll hint's 10% tolerance
        assert rogues.observe(fp.url, deadline=60.0, client_id="fast", bugs=fast) == "succeeded"
        entries = list(fp.journal)
    reads = [e for e in entries if e.kind == "status"]
    assert [(v.invariant, v.message) for v in check(entries, limits).violations] == [
        (
            "status_rate",
            f"status read #{reads[2].seq} at {t(reads[2].received_at)} was read 3 within"
            f" 10.000 s (since #{reads[0].seq} at {t(reads[0].received_at)}); the budget of 0.2"
            " per second allows 2",
        )
    ]
