"""The streaming judges find exactly what the rule functions find, in the same order.

``fakeprovider._judges`` restates each per-client rule of ``_rules`` as a judge fed one entry at
a time that keeps what the rule still needs, not the client's entries; ``check`` judges with
them. Here each judge is held to its rule function (the reference) on generated journals full
of ties, clock readings out of seq order, repeated seqs, list answers naming jobs the client
only asks about later, idempotent retries, inline results and webhooks listed after the
requests; and whole runs of several clients are held to the pre-judge ``check``
(``tests/checker_reference.judge_run``). No timing here.
"""

from __future__ import annotations

import dataclasses
import functools
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tests.checker_reference as reference
from fakeprovider import _judges, _rules
from fakeprovider.invariants import _judge
from fakeprovider.journal import Entry, RetryAfterRecord
from fakeprovider.limits import Limits
from tests.test_checker_linear import entries, webhooks
from tests.thorough import thorough


@st.composite
def client_entries(draw: st.DrawFn) -> list[Entry]:
    """One client's entries in seq order (some seqs repeated), with the fields the generator
    of ``test_checker_linear`` leaves out drawn too."""
    drawn = draw(st.lists(entries(), max_size=40))
    repeat = draw(st.booleans())
    seqs = sorted(
        draw(st.integers(1, max(1, len(drawn) // 2))) if repeat else n
        for n in range(1, len(drawn) + 1)
    )
    out = []
    for e, seq in zip(drawn, seqs, strict=True):
        out.append(
            dataclasses.replace(
                e,
                seq=seq,
                idempotency_key=draw(st.sampled_from((None, "i1", "i2"))),
                inline_result=draw(st.sampled_from((None, None, True))),
                dropped=draw(st.sampled_from((None, None, None, "reset"))),
                job_id=e.job_id if e.kind != "list" else draw(st.sampled_from((None, "j_1"))),
            )
        )
    return out


LIMITS = st.builds(
    Limits,
    max_retries=st.integers(0, 3),
    deadline=st.sampled_from((None, 1.0, 4.0)),
    deadline_slack=st.sampled_from((0.0, 1.0)),
    retrievals=st.sampled_from((None, 0, 1, 2)),
    poll_tolerance=st.sampled_from((0.0, 0.1)),
    retry_after_scope=st.sampled_from(("auto", "account", "job")),
    status_rate=st.sampled_from((None, 0.5, 1.0)),
    status_rate_window=st.sampled_from((1.0, 2.5)),
    date_slack=st.sampled_from((0.0, 1.0)),
)


def _hooks_of(hooks: list[Entry]) -> dict[str, list[tuple[float, str | None]]]:
    out: dict[str, list[tuple[float, str | None]]] = {}
    for w in hooks:
        if w.job_id is not None and _rules.told(w):
            out.setdefault(w.job_id, []).append((w.received_at, w.event))
    return out


@thorough(300, deadline=None)
@given(client_entries(), st.lists(webhooks(), max_size=6), LIMITS)
def test_each_judge_finds_what_its_rule_finds_in_the_same_order(
    mine: list[Entry], hooks: list[Entry], limits: Limits
) -> None:
    hooks = [dataclasses.replace(w, seq=1000 + n) for n, w in enumerate(hooks)]
    rules = dict(_rules.CLIENT_RULES)
    for name, make in _judges.JUDGES:
        rule = rules[name]
        if name in ("no_premature_retrieval", "honours_poll_after"):
            rule = functools.partial(rule, webhooks=hooks)
        judge = make(limits)
        for e in mine:
            judge.add(e)
        assert judge.close(_hooks_of(hooks)) == list(rule(_rules.ClientEntries(mine), limits)), name


@st.composite
def runs(draw: st.DrawFn) -> list[Entry]:
    """A run of up to three clients interleaved by seq, and webhooks among them."""
    clients = draw(st.lists(client_entries(), min_size=1, max_size=3))
    merged = sorted(
        (
            (e.seq, draw(st.integers(0, 2)), dataclasses.replace(e, client=f"c{n}"))
            for n, mine in enumerate(clients)
            for e in mine
        ),
        key=lambda item: (item[0], item[1]),
    )
    run = [e for _, _, e in merged]
    for w in draw(st.lists(webhooks(), max_size=6)):
        run.insert(
            draw(st.integers(0, len(run))), dataclasses.replace(w, seq=draw(st.integers(1, 45)))
        )
    return run


@thorough(200, deadline=None)
@given(runs(), LIMITS, st.integers(0, 2))
def test_a_run_judged_entry_by_entry_gets_the_verdict_of_the_whole_lists(
    run: list[Entry], limits: Limits, number: int
) -> None:
    assert _judge(run, limits, number) == reference.judge_run(run, limits, number)


def test_a_job_read_a_million_times_keeps_one_read_in_each_judge() -> None:
    """A concrete case of the bound: 5,000 in-order reads of one job after its submit leave
    each judge's per-job state as small as after two."""
    limits = Limits(deadline=10_000.0)
    judge = _judges.ClientJudge(limits)

    def read(seq: int) -> Entry:
        at = seq * 2.0
        return Entry(
            seq=seq,
            kind="status" if seq > 1 else "submit",
            job_id="j_1",
            method="GET",
            path="/v1/jobs/j_1",
            client="c",
            received_at=at,
            response_started_at=at + 0.5,
            completed_at=at + 0.5,
            status_code=200,
            job_status="processing",
            poll_after=1.0,
        )

    for seq in range(1, 5001):
        judge.add(read(seq))
    job = judge.jobs["j_1"]
    assert (job.ov_negated, job.ov_reads, job.ov_found) == (
        -10_000.5 + 1e-6,
        (5000, 10_000.0),
        None,
    )
    assert (job.sr_fetched, job.pr_candidates, job.pa_found, job.dl_maxima) == (None,) * 4
    assert (job.pa_seq, job.st_seq, job.dl_seq, job.rs_read) == (5000, None, 1, None)
    assert list(judge.jobs) == ["j_1"]
    assert judge.close({}) == []


def _status_read(seq: int, at: float, took: float | None = None, **fields: Any) -> Entry:
    """Client c's status read of job j_1 received at ``at``, answered ``took`` later (if
    given), with ``fields``."""
    done = None if took is None else at + took
    return Entry(
        seq=seq,
        kind="status",
        job_id="j_1",
        method="GET",
        path="/v1/jobs/j_1",
        client="c",
        received_at=at,
        response_started_at=done,
        completed_at=done,
        **fields,
    )


def test_a_job_read_once_keeps_its_read_as_itself_and_lists_from_the_second() -> None:
    """``no_overlap``'s state of a job read once is that read (its negated start, and its seq
    and time as a pair), not two lists; the second read makes the lists of the first."""
    judge = _judges.ClientJudge(Limits())
    read = functools.partial(_status_read, status_code=200, job_status="processing")

    judge.add(read(1, 1.0, 5.0))
    job = judge.jobs["j_1"]
    assert (job.ov_negated, job.ov_reads, job.ov_found) == (-(6.0 - 1e-6), (1, 1.0), None)
    judge.add(read(2, 2.0, 0.5))  # sent before #1 answered: an overlap
    assert (job.ov_negated, job.ov_reads) == ([-(6.0 - 1e-6), -(2.5 - 1e-6)], [1, 1.0, 2, 2.0])
    assert job.ov_found == [2, 1, 2.0, 1.0]
    assert [v.seqs for v in judge.close({})] == [(1, 2)]


def test_a_job_read_in_order_keeps_one_read_as_itself_until_a_read_keeps_two() -> None:
    """Each read of a job answered before the next began lets the one before it go, and is
    kept as itself (no lists); the first read sent before the one before it was answered
    keeps both, in the lists, and is an overlap."""
    judge = _judges.ClientJudge(Limits())
    read = functools.partial(_status_read, status_code=200, job_status="processing")

    judge.add(read(1, 1.0, 1.0))
    judge.add(read(2, 3.0, 1.0))  # after #1 answered: #1 let go
    job = judge.jobs["j_1"]
    assert (job.ov_negated, job.ov_reads, job.ov_found) == (-(4.0 - 1e-6), (2, 3.0), None)
    judge.add(read(3, 5.0, 1.0))
    assert (job.ov_negated, job.ov_reads, job.ov_found) == (-(6.0 - 1e-6), (3, 5.0), None)
    judge.add(read(4, 5.5, 0.2))  # sent before #3 answered: an overlap, #3 kept
    assert (job.ov_negated, job.ov_reads) == ([-(6.0 - 1e-6), -(5.7 - 1e-6)], [3, 5.0, 4, 5.5])
    assert job.ov_found == [4, 3, 5.5, 5.0]
    assert [v.seqs for v in judge.close({})] == [(3, 4)]


def test_a_scope_with_one_retry_after_waiting_keeps_it_as_itself_and_a_heap_from_two() -> None:
    """``honours_retry_after`` keeps a scope's one answer still waiting as itself (no list);
    a second makes the heap; each later request is judged against them as before."""
    judge = _judges.ClientJudge(Limits())

    def refused(seq: int, at: float) -> Entry:
        return _status_read(
            seq,
            at,
            0.1,
            status_code=503,
            retry_after=RetryAfterRecord(raw="10", not_before=at + 10.1),
        )

    judge.add(refused(1, 1.0))
    assert list(judge.ra_pending.values()) == [(1.1, 0, 11.1 - 1e-6, judge.jobs["j_1"].last)]
    judge.add(refused(2, 1.05))  # sent before #1's headers arrived: not held to it
    [heap] = judge.ra_pending.values()
    assert type(heap) is list
    assert [item[1] for item in heap] == [0, 1]
    judge.add(_status_read(3, 5.0, 0.1, status_code=200, job_status="processing"))
    assert judge.ra_pending == {}
    assert [v.seqs for v in judge.close({}) if v.invariant == "honours_retry_after"] == [
        (1, 3),
        (2, 3),
    ]


def test_a_client_of_one_job_makes_no_job_list_until_its_second_job() -> None:
    """The four job lists (``entry_jobs``, ``shown_jobs``, ``status_jobs``, ``seen_jobs``)
    are made at a judge's second job, each holding the first where its flag says it was met
    so; before that each is read from the one job (most clients of a run of many have one)."""
    judge = _judges.ClientJudge(Limits())

    def entry(seq: int, kind: str, job_id: str | None, **fields: object) -> Entry:
        return Entry(
            seq=seq,
            kind=kind,
            job_id=job_id,
            method="GET",
            path="/v1/jobs",
            client="c",
            received_at=float(seq),
            response_started_at=seq + 0.1,
            completed_at=seq + 0.1,
            status_code=200,
            **fields,  # type: ignore[arg-type]
        )

    judge.add(entry(1, "submit", "j_1", job_status="queued"))
    judge.add(entry(2, "status", "j_1", job_status="succeeded"))
    lists = (judge.entry_list, judge.shown_list, judge.status_list, judge.seen_list)
    assert lists == (None,) * 4
    (first,) = judge.jobs.values()
    assert judge.entry_jobs == judge.shown_jobs == judge.status_jobs == judge.seen_jobs == [first]
    assert judge.seen_count == 1
    judge.add(entry(3, "list", None, listed=(("j_2", "queued"),)))
    second = judge.jobs["j_2"]
    assert judge.entry_jobs == judge.status_jobs == judge.seen_jobs == [first]
    assert judge.shown_jobs == [first, second]
    assert judge.entry_list is judge.entry_jobs  # made
    judge.add(entry(4, "status", "j_2", job_status="failed"))
    assert judge.entry_jobs == judge.status_jobs == judge.seen_jobs == [first, second]
    assert judge.seen_count == 2
    assert list(judge.close({})) == []


@st.composite
def jittered_reads(draw: st.DrawFn) -> list[Entry]:
    """Up to 400 status reads of a busy client, received mostly in order, some a little back
    in time (as concurrent requests are), some far back."""
    out = []
    at = 0.0
    for seq in range(1, draw(st.integers(0, 400)) + 1):
        at += draw(st.sampled_from((0.0, 0.01, 0.05, 0.2)))
        back = draw(st.sampled_from((0.0,) * 20 + (0.03, 0.5, 30.0)))
        out.append(_status_read(seq, max(0.0, at - back)))
    return out


@thorough(200, deadline=None)
@given(
    jittered_reads(),
    st.builds(
        Limits,
        status_rate=st.sampled_from((5.0, 20.0, 60.0)),
        status_rate_window=st.sampled_from((0.5, 1.0, 2.0)),
    ),
    st.sampled_from((None, 64, 200)),
)
def test_the_bounded_status_rate_finds_what_the_rule_finds_or_says_it_cannot(
    reads: list[Entry], limits: Limits, keep_gone: int | None
) -> None:
    """Reads far back in time are judged against the reads let go (kept as numbers); only
    past ``KEEP_GONE`` of those (made small here) may a read reach back too far to judge."""
    judge = _judges.BoundedStatusRate(limits, keep_gone=keep_gone or _judges.KEEP_GONE)
    try:
        for e in reads:
            judge.add(e)
    except _judges.Unjudgeable:
        assert keep_gone is not None
        return
    assert judge.close({}) == list(_rules.status_rate(reads, limits))
    kept, gone = _kept(judge), _gone(judge)
    assert len(kept) <= 2 * (2 * judge.allowed + 64) + 1
    assert len(gone[0]) == len(gone[1]) == len(gone[2])


def _kept(judge: _judges.BoundedStatusRate) -> list[tuple[float, int, int]]:
    """The reads a ``BoundedStatusRate`` keeps (not let go) as the general path keeps them."""
    if not judge.ordered:
        assert len(judge.at) == len(judge.times)
        return judge.times
    assert len(judge.at) == len(judge.seqs)
    base = judge.base
    return list(zip(judge.at, range(base, base + len(judge.at)), judge.seqs, strict=True))


def _gone(judge: _judges.BoundedStatusRate) -> tuple[list[float], list[int], list[int]]:
    """The reads it let go (and has not forgotten), as the general path keeps them (the lane
    for reads in order keeps no arrivals: they are the ones just before ``base``)."""
    if not judge.ordered:
        return (list(judge.gone_at), list(judge.gone_index), list(judge.gone_seq))
    assert len(judge.gone_index) == 0
    base = judge.base
    index = list(range(base - len(judge.gone_at), base))
    return (list(judge.gone_at), index, list(judge.gone_seq))


@st.composite
def ordered_reads(draw: st.DrawFn) -> list[Entry]:
    """Up to 600 status reads received in order (ties too), then perhaps one far back."""
    reads = draw(jittered_reads())
    out = sorted(reads, key=lambda e: e.received_at)
    out = [dataclasses.replace(e, seq=seq) for seq, e in enumerate(out, 1)]
    out += draw(jittered_reads())[:3]
    return out


@thorough(200, deadline=None)
@given(
    st.one_of(jittered_reads(), ordered_reads()),
    st.builds(
        Limits,
        status_rate=st.sampled_from((5.0, 20.0, 60.0)),
        status_rate_window=st.sampled_from((0.5, 1.0, 2.0)),
    ),
    st.sampled_from((None, 64, 200)),
)
def test_the_bounded_status_rate_judges_reads_in_order_as_its_general_path_does(
    reads: list[Entry], limits: Limits, keep_gone: int | None
) -> None:
    """The lane for reads received in order keeps what the general path keeps (the same
    reads, let go and forgotten at the same reads), so it finds the same violation and
    gives up on the same read."""
    lane = _judges.BoundedStatusRate(limits, keep_gone=keep_gone or _judges.KEEP_GONE)
    general = _judges.BoundedStatusRate(limits, keep_gone=keep_gone or _judges.KEEP_GONE)
    general._unorder()  # (no reads yet: the general path from the first)

    def state(judge: _judges.BoundedStatusRate) -> tuple[object, ...]:
        kept = _kept(judge)
        at = [received for received, _, _ in kept]
        return (at, kept, _gone(judge), judge.dropped, judge.forgotten, judge.done, judge.count)

    for e in reads:
        outcomes = []
        for judge in (lane, general):
            try:
                judge.add(e)
                outcomes.append("judged")
            except _judges.Unjudgeable as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1]
        assert state(lane) == state(general)
        if outcomes[0] != "judged":
            return
    assert lane.close({}) == general.close({}) == list(_rules.status_rate(reads, limits))


def test_a_read_far_back_in_time_is_judged_against_the_reads_let_go() -> None:
    """1,000 reads 0.1 s apart, then one whose clock reads 5 s: its window reaches back past
    the reads kept, so the reads let go are counted and named too."""
    limits = Limits(status_rate=20.0, status_rate_window=1.0)
    reads = [_status_read(seq, seq / 10 if seq <= 1000 else 5.0) for seq in range(1, 1002)]
    judge = _judges.BoundedStatusRate(limits)
    for e in reads[:1000]:
        judge.add(e)
    assert len(_gone(judge)[0]) > 900
    judge.add(reads[1000])
    found = judge.close({})
    assert found == list(_rules.status_rate(reads, limits))
    assert found[0].seqs == (*range(41, 1001), 1001)


def test_a_long_poller_reading_in_order_keeps_the_reads_let_go_in_arrays() -> None:
    """100,000 reads 10 ms apart (a budget of 1,000 per second): all but the last few
    hundred are let go into two arrays (8 bytes each; the arrivals are implied while reads
    come in order), not kept as list items (a float and an int object each, about 74
    bytes); a read out of order then makes the arrivals' array, the reads' first ones."""
    limits = Limits(status_rate=1000.0, status_rate_window=1.0)
    judge = _judges.BoundedStatusRate(limits)
    n = 100_000
    tracemalloc.start()
    try:
        for seq in range(1, n + 1):
            judge.add(_status_read(seq, seq / 100))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert judge.ordered
    assert len(judge.at) <= 2 * (2 * judge.allowed + 64) + 1
    assert len(judge.gone_at) == len(judge.gone_seq) == n - len(judge.at)
    assert (judge.gone_at.itemsize, judge.gone_seq.itemsize, len(judge.gone_index)) == (8, 8, 0)
    assert held < 20 * n
    judge.add(_status_read(n + 1, (n - 0.5) / 100))  # out of order
    assert not judge.ordered
    assert list(judge.gone_index[:3]) == [0, 1, 2]
    assert len(judge.gone_index) == n + 1 - len(judge.times) == len(judge.gone_at)
    assert judge.close({}) == []


def test_a_failed_read_kept_for_a_submit_of_the_same_seq_outlives_another_jobs_at_that_seq() -> (
    None
):
    """A judge holds one job's read before the latest seq that told (``rs_old_read``) and
    lets it go when another job keeps one at a later seq; at the same seq (seqs repeat) both
    are kept: the submit of seq 3 below is held to job j_a's failed read #2."""

    def entry(seq: int, kind: str, job_id: str, code: int, status: str | None) -> Entry:
        return Entry(
            seq=seq,
            kind=kind,
            job_id=job_id,
            method="POST" if kind == "submit" else "GET",
            path="/v1/jobs" if kind == "submit" else f"/v1/jobs/{job_id}",
            client="c",
            received_at=float(seq),
            response_started_at=seq + 0.1,
            completed_at=seq + 0.1,
            status_code=code,
            job_status=status,
            request_digest="d" if kind == "submit" else None,
        )

    journal = [
        entry(1, "submit", "j_a", 202, "queued"),
        entry(2, "status", "j_a", 503, None),
        entry(2, "status", "j_b", 503, None),
        entry(3, "status", "j_a", 200, "processing"),
        entry(3, "status", "j_b", 200, "processing"),
        entry(3, "submit", "j_c", 202, "queued"),
    ]
    judge = _judges.ClientJudge(Limits())
    judge.extend(journal)
    found = [v for v in judge.close({}) if v.invariant == "no_resubmission"]
    assert found == list(_rules.no_resubmission(journal, Limits()))
    assert [(v.seqs, v.message) for v in found] == [
        (
            (1, 2, 3),
            "submit #3 at 3.000 s created job j_c for the same request as job j_a after"
            " status read #2 of that job failed (503); a failed status read does not mean"
            " the job failed",
        )
    ]
    assert judge.jobs["j_a"].rs_old_read == (2, "status", "j_a", 503, None, None, None, None, None)
    judge.add(entry(4, "status", "j_c", 503, None))
    judge.add(entry(5, "status", "j_c", 200, "processing"))
    assert judge.jobs["j_b"].rs_old_read is None  # j_c keeps one at a later seq
    assert judge.jobs["j_c"].rs_old_read is not None


def test_a_judge_keeps_of_a_failed_read_and_a_retry_after_source_what_messages_name_not_the_entry() -> (
    None
):
    """A 503 with a Retry-After that no later read of its job followed is kept for the gave-up
    warning, ``no_resubmission`` and ``honours_retry_after`` as a ``Held`` (seq, kind, job,
    code, drop, true status, the Retry-After's raw and not_before, error code): one small tuple,
    shared by the three, with the judge's job id, not the entry and every field it holds."""
    judge = _judges.ClientJudge(Limits())
    read = Entry(
        seq=7,
        kind="status",
        job_id="".join(["j_", "1"]),  # (a string of its own, as each decoded line has)
        method="GET",
        path="/v1/jobs/j_1",
        client="c",
        received_at=1.0,
        response_started_at=1.5,
        completed_at=1.5,
        status_code=503,
        true_status="processing",
        retry_after=RetryAfterRecord(raw="30", not_before=31.5),
        error_code="unavailable",
    )
    submit = Entry(
        seq=6,
        kind="submit",
        job_id="j_1",
        method="POST",
        path="/v1/jobs",
        client="c",
        received_at=0.0,
        response_started_at=0.1,
        completed_at=0.1,
        status_code=202,
    )
    judge.add(submit)
    judge.add(read)
    job = judge.jobs["j_1"]
    held = (7, "status", "j_1", 503, None, "processing", "30", 31.5, "unavailable")
    assert job.last == held
    assert job.last is job.rs_read
    [(_, _, _, source)] = judge.ra_pending.values()  # (one source: as itself)
    assert source is job.last
    assert job.last[2] is job.job_id is submit.job_id
    assert read.job_id is not submit.job_id


def test_a_client_that_only_submits_and_reads_makes_no_container_of_the_rules_it_never_needs() -> (
    None
):
    """Containers per client are made on first use (a run of many clients makes as many
    judges): a submit and a successful read leave the Retry-After, auth, resubmission,
    failure and status_rate parts at their shared empty values, and a 401 makes its own."""
    judge = _judges.ClientJudge(Limits(), bounded=True)
    submit = Entry(
        seq=1,
        kind="submit",
        job_id="j_1",
        method="POST",
        path="/v1/jobs",
        client="c",
        received_at=0.0,
        response_started_at=0.1,
        completed_at=0.1,
        status_code=202,
        job_status="queued",
    )
    judge.add(submit)

    def read(seq: int, code: int) -> Entry:
        at = float(seq)
        return dataclasses.replace(
            submit,
            seq=seq,
            kind="status",
            method="GET",
            path="/v1/jobs/j_1",
            status_code=code,
            received_at=at,
            response_started_at=at + 0.1,
            completed_at=at + 0.1,
        )

    judge.add(read(2, 200))
    empty = (judge.ra_pending, judge.au_pending, judge.au_retried, judge.rs_last)
    assert all(part is _judges._NO_DICT for part in empty)
    assert (judge.failed_last, judge.forms, judge.faults) == ({}, {}, {})
    lists = (judge.br_found, judge.ra_kinds, judge.ra_found, judge.rs_found)
    assert all(part is _judges._NO_LIST for part in lists)
    assert judge.rates is None  # no status_rate budget
    judge.add(read(3, 401))
    assert judge.au_pending == {None: (3.1, 2, 3, "status", "j_1", 401)}
    assert judge.au_pending is not _judges._NO_DICT
    assert judge.close({}) == []
    with pytest.raises(TypeError):
        _judges._NO_DICT["x"] = 1  # shared: never written


def test_a_request_bodys_one_job_is_kept_as_a_pair_and_two_as_a_dict_with_the_rules_verdict() -> (
    None
):
    """``rs_open`` keeps a request body's one open job as (its id, its submits) or, made by one
    submit, as (its id, that submit's seq, key and credential), two or more
    as a dict, none as nothing, and one request body with jobs open as (it, its jobs), two as a
    dict; through each change no_resubmission finds what its rule finds."""
    submit = Entry(
        seq=1,
        kind="submit",
        job_id="j_1",
        method="POST",
        path="/v1/jobs",
        client="c",
        received_at=1.0,
        response_started_at=1.1,
        completed_at=1.1,
        status_code=202,
        job_status="queued",
        request_digest="d",
    )

    def again(seq: int, job_id: str | None, at: float, **extra: object) -> Entry:
        return dataclasses.replace(
            submit,
            seq=seq,
            job_id=job_id,
            received_at=at,
            response_started_at=at + 0.1,
            completed_at=at + 0.1,
            **extra,  # type: ignore[arg-type]
        )

    ended = {
        "kind": "status",
        "method": "GET",
        "status_code": 200,
        "job_status": "succeeded",
        "request_digest": None,
    }
    journal = [
        submit,
        again(2, "j_2", 2.0),  # j_1 not seen to end: a resubmission; two jobs open
        again(3, "j_1", 3.0, **ended, path="/v1/jobs/j_1"),
        again(4, "j_2", 4.0, **ended, path="/v1/jobs/j_2"),
        again(5, "j_3", 5.0),  # both seen to end: one job open again
        again(6, None, 6.0, request_digest="e", status_code=503),  # no job: nothing kept
        again(7, "j_4", 7.0, request_digest="e"),  # a second request body with a job open
        again(8, None, 8.0, request_digest="e", status_code=503),  # j_4 not seen to end
        again(9, "j_3", 9.0, **ended, path="/v1/jobs/j_3"),
        again(10, "j_5", 10.0),  # j_3 seen to end: let go at once, j_5 in its place
        again(11, None, 11.0, idempotency_key="k1", status_code=503),  # j_5 not seen to end
        again(12, "j_6", 12.0, idempotency_key="k2"),  # retried without k1: held to #11
    ]
    judge = _judges.ClientJudge(Limits())
    held = []
    for e in journal:
        judge.add(e)
        rs_open = judge.rs_open
        pairs = [rs_open] if type(rs_open) is tuple else list(rs_open.items())
        held.append({k: v if type(v) is tuple else dict(v) for k, v in pairs})
        assert type(rs_open) is (tuple if len(pairs) == 1 else dict)
    one = ((1, None, None),)
    assert held[0] == {"d": ("j_1", 1, None, None)}  # (one submit: as itself)
    assert held[1] == {"d": {"j_1": one, "j_2": ((2, None, None),)}}
    assert held[4] == held[5] == {"d": ("j_3", 5, None, None)}
    assert held[6] == held[7] == {"d": ("j_3", 5, None, None), "e": ("j_4", 7, None, None)}
    rules = dict(_rules.CLIENT_RULES)
    expected = list(rules["no_resubmission"](_rules.ClientEntries(journal), Limits()))
    assert held[9] == {"d": ("j_5", 10, None, None), "e": ("j_4", 7, None, None)}
    assert [v.seqs for v in expected] == [(1, 2), (7, 8), (10, 11), (11, 12)]
    assert [v for v in judge.close({}) if v.invariant == "no_resubmission"] == expected


def test_a_resubmission_is_kept_unwritten_until_its_violation_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A load generator's POST loop makes a no_resubmission violation with each submit: the
    judge keeps each as its numbers (``Found``) and writes no message, nor makes a
    ``Violation``, until the violation is asked for (a text report shows the first 20 of a
    million); those it then makes are the rule's, word for word."""
    journal = [
        Entry(
            seq=k,
            kind="submit",
            job_id=f"j_{k}",
            method="POST",
            path="/v1/jobs",
            client="c",
            received_at=k * 0.01,
            response_started_at=k * 0.01 + 0.005,
            completed_at=k * 0.01 + 0.005,
            status_code=202 if k != 3 else 503,
            job_status="queued" if k != 3 else None,
            request_digest="same",
            idempotency_key=None if k < 3 else f"k{k}",
        )
        for k in range(1, 201)
    ]
    made: list[str] = []

    class Counted(_judges.Violation):
        def __init__(self, *args: Any) -> None:
            made.append(args[3])
            super().__init__(*args)

    monkeypatch.setattr(_judges, "Violation", Counted)
    judge = _judges.ClientJudge(Limits())
    judge.extend(journal)
    assert len(judge.rs_found) == 199
    assert made == []
    found = list(judge.iter_found({}))
    assert made == []
    assert [f[0] for f in found] == list(range(2, 201))
    rules = dict(_rules.CLIENT_RULES)
    expected = list(rules["no_resubmission"](_rules.ClientEntries(journal), Limits()))
    as_made = [dataclasses.astuple(_judges.violation(f)) for f in found]
    assert as_made == [dataclasses.astuple(v) for v in expected]
    assert len(made) == 199
    assert expected[2].message == (
        "submit #4 at 0.040 s retried failed submit #3 (503) without its Idempotency-Key 'k3'"
    )
    assert expected[-1].message == (
        "submit #200 at 2.000 s created job j_200 for the same request as job j_1 (submit #1),"
        " which the client had not seen end"
    )


def test_judges_given_one_dict_of_codes_count_every_clients_codes_in_it() -> None:
    """``_stream`` hands every client's judge its one dict of status codes: each judge adds
    its entries' codes there, as it would in its own."""
    codes: dict[int, int] = {}
    first = _judges.ClientJudge(Limits(), codes=codes)
    second = _judges.ClientJudge(Limits(), codes=codes)
    alone = _judges.ClientJudge(Limits())
    for judge, code in ((first, 200), (second, 503), (first, 503), (alone, 404)):
        judge.add(_status_read(1, 0.0, status_code=code))
    assert codes == {200: 1, 503: 2}
    assert first.codes is second.codes is codes
    assert alone.codes == {404: 1}


def test_a_bounded_judge_makes_its_status_rate_judge_at_the_second_read_with_the_first_in_it() -> (
    None
):
    """A client's first status read is kept as its time and seq, not in a judge of its own
    (one read never breaks a budget); the second makes the judge, the first read added first,
    so that a breach names it as the rule does."""
    limits = Limits(status_rate=1.0, status_rate_window=2.0)  # two reads in 2 s allowed

    reads = [
        _status_read(seq, at, status_code=200)
        for seq, at in ((1, 0.0), (2, 0.5), (3, 1.0), (4, 9.0))
    ]
    judge = _judges.ClientJudge(limits, bounded=True)
    judge.add(reads[0])
    assert (judge.rates, judge.rates_first, judge.rates_seq) == (None, 0.0, 1)
    judge.add(reads[1])
    assert judge.rates_first is None
    assert isinstance(judge.rates, _judges.BoundedStatusRate)
    assert (judge.rates.at, judge.rates.seqs) == ([0.0, 0.5], [1, 2])
    for e in reads[2:]:
        judge.add(e)
    expected = list(dict(_rules.CLIENT_RULES)["status_rate"](reads, limits))
    assert [v.seqs for v in expected] == [(1, 2, 3)]
    assert [v for v in judge.close({}) if v.invariant == "status_rate"] == expected
    alone = _judges.ClientJudge(limits, bounded=True)
    alone.add(reads[0])
    assert alone.close({}) == []
