"""``ClientJudge.add``'s lanes do exactly what its general path (``_add``) does.

``add`` judges the usual kinds of entries (a status read of a job, a submit, a content fetch)
by lanes of their own, each the general path's parts for that kind with the helpers' work made
in place. Here a judge fed through ``add`` and one fed every entry through ``_add`` are held to
the same verdicts, rule by rule, and to the same counts and per-job facts ``_stream`` reads off
a judge, on generated journals (the same generator as ``test_judges``: ties, Retry-After
answers in every scope and form, 401/403 answers, repeated seqs, idempotent retries, list
answers, inline results). No timing here.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from fakeprovider import _judges
from fakeprovider.journal import Entry
from fakeprovider.limits import Limits
from tests.test_checker_linear import webhooks
from tests.test_judges import LIMITS, _hooks_of, client_entries
from tests.thorough import thorough


class _General(_judges.ClientJudge):
    """A ``ClientJudge`` that takes every entry by the general path."""

    __slots__ = ()

    def add(self, e: Entry) -> None:  # type: ignore[override]
        self._add(e)


def _state(judge: _judges.ClientJudge) -> tuple[object, ...]:
    """What ``_stream`` reads off a judge before its verdicts (counts, per-job facts; the
    entry a job's ``last`` is, by identity)."""

    def facts(job: _judges._Job) -> tuple[object, ...]:
        last = job.last
        return (job.job_id, job.own, job.ended, last, job.last_rank, job.seen_at)

    return (
        judge.client,
        judge.count,
        judge.status_reads,
        judge.retries,
        judge.rate_limit_hits,
        judge.dropped,
        dict(judge.codes),
        dict(judge.forms),
        dict(judge.faults),
        set(judge.observed),
        [facts(job) for job in judge.jobs.values()],
        [job.job_id for job in judge.entry_jobs],
        [job.job_id for job in judge.seen_jobs],
    )


def _fed(
    judge: _judges.ClientJudge, entries: list[Entry]
) -> tuple[list[tuple[object, ...]], str | None]:
    """The judge's state after each entry, and why it gave up (None: it did not)."""
    states = []
    for e in entries:
        try:
            judge.add(e)
        except _judges.Unjudgeable as error:
            return states, str(error)
        states.append(_state(judge))
    return states, None


@thorough(150, deadline=None)
@given(
    client_entries(),
    st.lists(webhooks(), max_size=6),
    LIMITS,
    st.sampled_from((None, 1, 4)),
)
def test_the_lanes_judge_every_entry_as_the_general_path_does(
    mine: list[Entry], hooks: list[Entry], limits: Limits, keep_gone: int | None
) -> None:
    """The same state after every entry, the same verdicts rule by rule, and ``iter_found``
    in the same order (bounded or not: the bounded ``status_rate`` gives up on the same read)."""
    hooks = [dataclasses.replace(w, seq=1000 + n) for n, w in enumerate(hooks)]
    told = _hooks_of(hooks)
    bounded = keep_gone is not None
    lane = _judges.ClientJudge(limits, bounded=bounded, keep_gone=keep_gone or 0)
    general = _General(limits, bounded=bounded, keep_gone=keep_gone or 0)
    fed = _fed(lane, mine)
    assert fed == _fed(general, mine)
    if fed[1] is not None:
        return
    assert [list(map(_judges.violation, rule)) for rule in lane.close_rules(told)] == [
        list(map(_judges.violation, rule)) for rule in general.close_rules(told)
    ]
    assert list(lane.iter_found(told)) == list(general.iter_found(told))
