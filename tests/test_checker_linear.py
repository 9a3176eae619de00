"""The indexed (linear) rules find exactly what the straightforward scans found.

The rules that compare requests with each other (``no_overlap``, ``honours_retry_after``,
``no_retry_on_auth_error``, ``status_rate``, ``no_premature_retrieval``,
``honours_poll_after``) and the report's timeline window were rewritten to stay linear in the
journal (issue 14; ``benchmarks/bench_check_scaling.py`` measures it). Here they are checked
against the old scans (``tests/checker_reference.py``) on generated journals full of ties,
concurrent requests, clock readings out of seq order and repeated seqs. No timing here.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

import tests.checker_reference as reference
from fakeprovider import _rules
from fakeprovider._report import _RunIndex
from fakeprovider._rules import Violation
from fakeprovider.invariants import Limits, check
from fakeprovider.journal import Entry, RetryAfterRecord
from tests.thorough import thorough

JOBS = ("j_1", "j_2", "j_3")
STATUSES = (None, "queued", "processing", "succeeded", "failed", "completed_with_errors")


@st.composite
def entries(draw: st.DrawFn, *, kinds: tuple[str, ...] | None = None) -> Entry:
    kind = draw(st.sampled_from(kinds or ("submit", "status", "status", "content", "list")))
    at = draw(st.integers(0, 40)) / 4  # a coarse grid: many ties
    took = draw(st.one_of(st.none(), st.integers(0, 12).map(lambda n: n / 4)))
    started = None if took is None else at + took
    code = draw(st.sampled_from((200, 200, 202, 401, 403, 404, 429, 500, 503, None)))
    retry_after = draw(
        st.one_of(
            st.none(),
            st.builds(
                RetryAfterRecord,
                raw=st.just("2"),
                not_before=st.one_of(st.none(), st.integers(0, 60).map(lambda n: n / 4)),
                form=st.sampled_from(("seconds", "imf", "ms")),
            ),
        )
    )
    listed = None
    if kind == "list":
        listed = tuple(
            draw(st.dictionaries(st.sampled_from(JOBS), st.sampled_from(STATUSES[1:]))).items()
        )
    return Entry(
        seq=0,
        kind=kind,
        job_id=None if kind == "list" else draw(st.sampled_from((*JOBS, None))),
        method="GET",
        path="/v1/jobs",
        client="c",
        received_at=at,
        response_started_at=started,
        completed_at=None if started is None else started + draw(st.sampled_from((0, 0.25))),
        status_code=code,
        job_status=draw(st.sampled_from(STATUSES)),
        retry_after=retry_after,
        poll_after=draw(st.sampled_from((None, 0.5, 2.0))),
        credential=draw(st.sampled_from((None, "k1", "k2"))),
        request_digest=draw(st.sampled_from((None, "d1", "d2"))),
        error_code=draw(st.sampled_from((None, "too_many_active_jobs"))),
        listed=listed,
    )


@st.composite
def webhooks(draw: st.DrawFn) -> Entry:
    return Entry(
        seq=0,
        kind="webhook",
        job_id=draw(st.sampled_from(JOBS)),
        method="POST",
        path="/hook",
        client="127.0.0.1:9",
        received_at=draw(st.integers(0, 40)) / 4,
        status_code=200,
        event=draw(st.sampled_from(("job.succeeded", "job.processing", "job.failed"))),
        attempt=1,
        delivery=draw(st.sampled_from((None, "forged"))),
    )


@st.composite
def journals(draw: st.DrawFn) -> tuple[list[Entry], list[Entry]]:
    """One client's entries (seq order; some seqs repeated) and the run's webhooks."""
    mine = draw(st.lists(entries(), max_size=30))
    repeat = draw(st.booleans())
    seqs = sorted(
        draw(st.integers(1, max(1, len(mine) // 2))) if repeat else n
        for n in range(1, len(mine) + 1)
    )
    mine = [dataclasses.replace(e, seq=s) for e, s in zip(mine, seqs, strict=True)]
    hooks = draw(st.lists(webhooks(), max_size=6))
    hooks = [dataclasses.replace(w, seq=1000 + n) for n, w in enumerate(hooks)]
    return mine, hooks


LIMITS = st.builds(
    Limits,
    retry_after_scope=st.sampled_from(("auto", "account", "job")),
    status_rate=st.sampled_from((0.2, 0.5, 1.0)),
    status_rate_window=st.sampled_from((1.0, 2.5, 10.0)),
    date_slack=st.sampled_from((0.0, 1.0)),
)


@thorough(150, deadline=None)
@given(journals(), LIMITS)
def test_the_indexed_rules_find_what_the_scans_found(
    journal: tuple[list[Entry], list[Entry]], limits: Limits
) -> None:
    mine, hooks = journal
    pairs = [
        (_rules.no_overlap(mine, limits), reference.no_overlap(mine, limits)),
        (_rules.honours_retry_after(mine, limits), reference.honours_retry_after(mine, limits)),
        (
            _rules.no_retry_on_auth_error(mine, limits),
            reference.no_retry_on_auth_error(mine, limits),
        ),
        (_rules.status_rate(mine, limits), reference.status_rate(mine, limits)),
        (
            _rules.no_premature_retrieval(mine, limits, hooks),
            reference.no_premature_retrieval(mine, limits, hooks),
        ),
        (
            _rules.honours_poll_after(mine, limits, hooks),
            reference.honours_poll_after(mine, limits, hooks),
        ),
    ]
    for new, old in pairs:
        assert list(new) == list(old)


@thorough(100, deadline=None)
@given(
    journals(),
    st.lists(st.integers(0, 35), min_size=1, max_size=20),
    st.sampled_from((*JOBS, None)),
)
def test_the_timeline_window_shows_what_sorting_every_related_entry_showed(
    journal: tuple[list[Entry], list[Entry]], seqs: list[int], job: str | None
) -> None:
    mine, hooks = journal
    index = _RunIndex([*mine, *hooks])
    violation = Violation("no_overlap", job, tuple(seqs), "m", "c")
    assert index.window(violation) == reference.timeline_window(index, violation)
    for found in check([*mine, *hooks], Limits(status_rate=0.5)).violations:
        assert index.window(found) == reference.timeline_window(index, found)


def test_a_tight_poller_of_one_job_is_judged_like_before() -> None:
    """A concrete case: 2,000 reads of one job, every other one overlapping the one before."""
    reads = []
    at = 0.0
    for seq in range(1, 2001):
        at += 0.001 if seq % 2 else 0.05
        reads.append(
            Entry(
                seq=seq,
                kind="status",
                job_id="j_1",
                method="GET",
                path="/v1/jobs/j_1",
                client="c",
                received_at=at,
                response_started_at=at + 0.02,
                completed_at=at + 0.02,
                status_code=200,
                job_status="processing",
                poll_after=1.0,
            )
        )
    limits = Limits()
    found = list(_rules.no_overlap(reads, limits))
    assert found == list(reference.no_overlap(reads, limits))
    assert len(found) == 999  # every odd read but the first
    assert found[0].message == (
        "status read #3 for job j_1 arrived at 0.052 s while read #2 (received 0.051 s) had"
        " not started its response"
    )
    index = _RunIndex(reads)
    assert all(index.window(v) == reference.timeline_window(index, v) for v in found)
