"""Verdicts judge a client by what the provider told it: poll hints only where the dialect's
provider sends them, and an answer that carries the result inline counts as the retrieval."""

from __future__ import annotations

import pytest

from fakeprovider.clock import DEFAULT_EPOCH
from fakeprovider.dialects import DIALECTS, get_dialect
from fakeprovider.engine import Engine
from fakeprovider.invariants import check
from fakeprovider.journal import Entry
from fakeprovider.messages import JobView, Request
from fakeprovider.scenario import parse_scenario

SCENARIO = """
jobs:
  - poll_after: 5s
    timeline:
      - status: queued
      - {at: 10s, status: succeeded}
"""


def _engine(**kwargs: object) -> Engine:
    return Engine(parse_scenario(SCENARIO), epoch=DEFAULT_EPOCH, **kwargs)  # type: ignore[arg-type]


def _submit(engine: Engine, now: float) -> str:
    reply = engine.handle(Request("submit", "POST", "/v1/jobs", body={"prompt": "a cat"}), now)
    assert reply.job is not None
    return reply.job.id


def _read(engine: Engine, job_id: str, now: float) -> None:
    engine.handle(Request("status", "GET", f"/v1/jobs/{job_id}", job_id=job_id), now)


def _hints(engine: Engine) -> list[tuple[str, float | None]]:
    return [(e.kind, e.poll_after) for e in engine.journal]


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        (True, [("submit", 5.0), ("status", 5.0)]),
        (False, [("submit", None), ("status", None)]),
        (frozenset({"status"}), [("submit", None), ("status", 5.0)]),
    ],
)
def test_the_journal_records_a_poll_hint_only_on_the_answers_that_show_one(
    shown: bool | frozenset[str], expected: list[tuple[str, float | None]]
) -> None:
    engine = _engine(poll_hints=shown)
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 1.0)
    assert _hints(engine) == expected


def test_only_generic_and_openai_status_reads_show_poll_hints() -> None:
    """No dialect claims a hint its provider does not send (openai: status reads only)."""
    shown = {name: get_dialect(name).poll_hints for name in DIALECTS}
    assert {n: s for n, s in shown.items() if s} == {
        "generic": True,
        "openai-videos": frozenset({"status"}),
    }


def test_a_read_straight_after_an_openai_create_is_not_judged_by_a_hint_it_never_got() -> None:
    engine = _engine(poll_hints=frozenset({"status"}))
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 0.1)  # at once: the create answer showed no hint
    _read(engine, job_id, 0.2)  # 0.1 s after a read that said 5 s: too soon
    report = check(_settled(engine))
    assert [(v.invariant, v.message) for v in report.violations] == [
        (
            "honours_poll_after",
            f"status read #3 for job {job_id} at 0.200 s came 0.100 s after #2 answered,"
            " sooner than its poll hint of 5.000 s (less 10% tolerance)",
        )
    ]


def _settled(engine: Engine) -> list[Entry]:
    for entry in list(engine.journal):
        engine.journal.complete(
            entry.seq,
            response_started_at=entry.received_at,
            completed_at=entry.received_at,
            status_code=entry.status_code,
        )
    return list(engine.journal)


def _inline(request: Request, job: JobView) -> bool:
    return request.kind == "status"


def test_a_status_answer_carrying_the_result_inline_is_marked_as_the_retrieval() -> None:
    engine = _engine(poll_hints=False, inline_result=_inline)
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 5.0)  # queued: nothing to carry
    _read(engine, job_id, 11.0)  # succeeded: the video is in the answer
    assert [(e.job_status, e.inline_result) for e in engine.journal] == [
        ("queued", None),
        ("queued", None),
        ("succeeded", True),
    ]
    assert check(_settled(engine), retrievals=1).ok


def test_rereading_a_finished_job_that_carries_its_result_inline_is_a_second_retrieval() -> None:
    engine = _engine(poll_hints=False, inline_result=_inline)
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 11.0)
    _read(engine, job_id, 12.0)
    report = check(_settled(engine), retrievals=1)
    assert [(v.invariant, v.seqs, v.message) for v in report.violations] == [
        (
            "single_retrieval",
            (2, 3),
            f"status read #3 for job {job_id} at 12.000 s received the result inline again;"
            " #2 had already retrieved it at 11.000 s and it may be fetched once",
        ),
        (
            "stops_at_terminal",
            (2, 3),
            f"status read #3 for job {job_id} at 12.000 s came after #2 had shown the job"
            " 'succeeded' at 11.000 s",
        ),
    ]


def test_an_inline_result_where_no_retrieval_was_expected_is_caught() -> None:
    engine = _engine(poll_hints=False, inline_result=_inline)
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 11.0)
    report = check(_settled(engine), retrievals=0)
    assert [v.message for v in report.by_invariant("single_retrieval")] == [
        f"status read #2 for job {job_id} at 11.000 s received the result inline, but no"
        " retrieval was expected"
    ]


def test_an_inline_result_and_a_download_are_two_retrievals() -> None:
    engine = _engine(poll_hints=False, inline_result=_inline)
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 11.0)
    engine.handle(Request("content", "GET", f"/v1/jobs/{job_id}/content", job_id=job_id), 12.0)
    report = check(_settled(engine))
    assert [v.message for v in report.by_invariant("single_retrieval")] == [
        f"content fetch #3 for job {job_id} at 12.000 s downloaded the result again; #2 had"
        " already retrieved it at 11.000 s and it may be fetched once"
    ]
    assert report.by_invariant("no_premature_retrieval") == []


def test_a_failed_or_scripted_answer_carries_no_result() -> None:
    engine = _engine(poll_hints=False, inline_result=_inline)
    job_id = _submit(engine, 0.0)
    engine.handle(Request("status", "GET", "/v1/jobs/other", job_id="other"), 11.0)
    _read(engine, job_id, 11.0)
    assert [e.inline_result for e in engine.journal] == [None, None, True]


def test_without_an_inline_dialect_a_succeeded_read_is_no_retrieval() -> None:
    engine = _engine()
    job_id = _submit(engine, 0.0)
    _read(engine, job_id, 11.0)
    report = check(_settled(engine), retrievals=1)
    assert [v.message for v in report.by_invariant("single_retrieval")] == [
        f"job {job_id} was shown 'succeeded' by #2 at 11.000 s but its content was retrieved"
        " 0 time(s); expected 1"
    ]


def test_inline_result_round_trips_through_the_journal_line() -> None:
    entry = Entry(
        seq=1, kind="status", job_id="j", method="GET", path="/", client="c",
        received_at=1.0, status_code=200, job_status="succeeded", inline_result=True,
    )  # fmt: skip
    assert Entry.from_dict(entry.to_dict()) == entry
    assert entry.to_dict()["inline_result"] is True
