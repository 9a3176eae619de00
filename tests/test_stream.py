"""``_stream.check_run``: a server's current run judged as it is read back from the journal's
file (``Journal.run_batches``) gets the report ``check(journal.run_entries())`` gives, without
ever holding the run's entries; and ``/__admin/report`` sends that report's JSON a few
violations at a time."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider import _judges, _stream
from fakeprovider._stream import in_run_order
from fakeprovider.app import _report_json, _streamable
from fakeprovider.invariants import Limits, check
from fakeprovider.journal import BatchedSink, Entry, Journal
from fakeprovider.limits import limits_for
from tests.test_checker_linear import entries
from tests.thorough import thorough

LIMITS = Limits(status_rate=2.0, max_retries=2, deadline=30.0)


def _header(seq: int) -> Entry:
    return Entry(
        seq=seq,
        kind="admin",
        job_id=None,
        method="POST",
        path="/__admin/reset",
        client="admin",
        received_at=0.0,
        completed_at=0.0,
        status_code=200,
        run={"scenario": "s", "limits": LIMITS.to_dict()},
    )


def _bounded(stream: IO[str], memory: int) -> Journal:
    """A journal that keeps its last ``memory`` entries and writes every one to ``stream``
    (as ``serve --journal FILE --journal-memory N`` does), its first run begun."""
    journal = Journal(memory=memory)
    journal.start_run(_header(0))
    journal.attach(BatchedSink(stream, interval=60))
    return journal


def _unread(journal: Journal) -> None:
    """Make ``journal.run_entries`` fail: the streamed path must not read the run whole."""

    def refused() -> list[Entry]:
        raise AssertionError("the run was read whole")

    journal.run_entries = refused  # type: ignore[method-assign]


#: What a step of a run does: append an answered entry, append one still in flight, answer
#: the oldest in flight, or start a new run (a reset).
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("done"), entries()),
        st.tuples(st.just("held"), entries()),
        st.tuples(st.just("answer"), st.none()),
        st.tuples(st.just("reset"), st.none()),
    ),
    max_size=60,
)


@thorough(150, deadline=None)
@given(steps=STEPS, memory=st.integers(1, 4))
def test_a_run_judged_as_its_file_is_read_gets_the_report_of_the_run_read_whole(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, Entry | None]], memory: int
) -> None:
    path = tmp_path_factory.mktemp("run") / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = _bounded(stream, memory)
        held: list[int] = []
        for step, drawn in steps:
            if step == "reset":
                journal.clear()
                journal.start_run(_header(journal.next_seq()))
            elif step == "answer":
                if held:
                    journal.complete(held.pop(0), completed_at=99.0, status_code=200)
            else:
                assert drawn is not None
                seq = journal.next_seq()
                if step == "held":
                    journal.append(dataclasses.replace(drawn, seq=seq, completed_at=None))
                    held.append(seq)
                else:
                    journal.append(dataclasses.replace(drawn, seq=seq))
        whole_entries = journal.run_entries()
        whole = check(whole_entries, LIMITS)
        run = journal.run_batches()
        streamed = run is not None
        if streamed:
            _unread(journal)
        got = _stream.check_run(journal, LIMITS)
        journal.close()
    assert got.to_dict() == whole.to_dict()
    assert streamed == (journal.forgotten > 0)
    if streamed:
        assert list(in_run_order(run)) == whole_entries  # the admin journal's order


def test_a_request_in_flight_is_judged_where_its_seq_falls_not_after_the_run(
    tmp_path: Path,
) -> None:
    # a read held while 6,000 others were answered: it comes, as in flight, among the
    # entries around its seq, so the run streams rather than being read whole
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = _bounded(stream, 10)
        submit = Entry(
            seq=journal.next_seq(),
            kind="submit",
            job_id="j_1",
            method="POST",
            path="/v1/jobs",
            client="c",
            received_at=0.0,
            response_started_at=0.01,
            completed_at=0.01,
            status_code=202,
            job_status="queued",
            poll_after=1.0,
        )
        journal.append(submit)
        held = journal.next_seq()
        journal.append(_read(held, 1.0, None))
        for n in range(6000):
            journal.append(_read(journal.next_seq(), 2.0 + n, 2.01 + n))
        whole = check(journal.run_entries(), LIMITS)
        _unread(journal)
        got = _stream.check_run(journal, LIMITS)
        journal.close()
    assert got.to_dict() == whole.to_dict()
    assert [v.invariant for v in got.violations][:1] == ["no_overlap"]


def test_a_request_answered_after_a_reset_is_not_judged_in_the_new_run(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = _bounded(stream, 1)
        across = journal.next_seq()
        journal.append(_read(across, 0.0, None))  # in flight across the reset
        journal.clear()
        journal.start_run(_header(journal.next_seq()))
        journal.complete(across, response_started_at=0.01, completed_at=0.01, status_code=200)
        for n in range(3):  # too soon after each other: honours_poll_after
            journal.append(_read(journal.next_seq(), 0.1 * n, 0.1 * n + 0.01))
        whole = check(journal.run_entries(), LIMITS)
        _unread(journal)
        got = _stream.check_run(journal, LIMITS)
        journal.close()
    assert got.to_dict() == whole.to_dict()
    assert [v.seqs for v in got.violations] == [(3, 4), (4, 5)]


def test_a_file_too_far_out_of_seq_order_to_stream_is_judged_whole(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a read answered after 50 later ones (past a window of 8): its line comes too late
    monkeypatch.setattr(_stream, "WINDOW", 8)
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = _bounded(stream, 5)
        late = journal.next_seq()
        journal.append(_read(late, 0.5, None))
        for n in range(50):
            journal.append(_read(journal.next_seq(), 1.0 + n, 1.01 + n))
        journal.complete(late, completed_at=60.0, status_code=200)
        whole = check(journal.run_entries(), LIMITS)
        read_whole: list[bool] = []
        real = journal.run_entries

        def counted() -> list[Entry]:
            read_whole.append(True)
            return real()

        journal.run_entries = counted  # type: ignore[method-assign]
        got = _stream.check_run(journal, LIMITS)
        sent = _streamable(journal)
        journal.close()
    assert read_whole == [True]
    assert got.to_dict() == whole.to_dict()
    assert sent is None  # /__admin/journal reads it whole too


def test_a_read_far_back_past_the_reads_kept_is_judged_again_streamed_keeping_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = Limits(status_rate=20.0, status_rate_window=1.0)
    monkeypatch.setattr(_judges, "KEEP_GONE", 8)
    passes: list[int] = []
    real = _stream.check_stream

    def counted(*args: Any, **kwargs: Any) -> Any:
        passes.append(kwargs.get("keep_gone", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(_stream, "check_stream", counted)
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = _bounded(stream, 10)
        for n in range(1, 1001):
            journal.append(_read(journal.next_seq(), n / 10, n / 10 + 0.01))
        journal.append(_read(journal.next_seq(), 5.0, 5.01))  # its window reaches far back
        whole = check(journal.run_entries(), limits)
        _unread(journal)
        got = _stream.check_run(journal, limits)
        journal.close()
    assert passes == [0, sys.maxsize]
    assert got.to_dict() == whole.to_dict()
    assert got.rule_counts()["status_rate"] == 1


@pytest.mark.parametrize("violations", [0, 1, 5, 6, 12])
def test_the_reports_json_is_sent_a_few_violations_at_a_time_as_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, violations: int
) -> None:
    import fakeprovider.app as app_module

    monkeypatch.setattr(app_module, "_CHUNK", 5)
    run = [_read(1, 0.0, 0.5, client="clié\u2028nt")]  # not ASCII, a line separator
    run += [_read(n, n * 0.001, 5.0, client="clié\u2028nt") for n in range(2, violations + 2)]
    report = check(run, LIMITS)
    assert len(report.violations) == violations

    async def sent() -> list[bytes]:
        return [part async for part in _report_json(report)]

    parts = asyncio.run(sent())
    whole = json.dumps(report.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()
    assert b"".join(parts) == whole
    assert len(parts) == 2 + -(-violations // 5)


def _read(seq: int, at: float, done: float | None, client: str = "c") -> Entry:
    return Entry(
        seq=seq,
        kind="status",
        job_id="j_1",
        method="GET",
        path="/v1/jobs/j_1",
        client=client,
        received_at=at,
        response_started_at=done,
        completed_at=done,
        status_code=200 if done is not None else None,
        job_status="processing" if done is not None else None,
        poll_after=1.0 if done is not None else None,
    )


def test_the_admin_journal_sends_a_bounded_run_as_it_reads_it_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    import fakeprovider.app as app_module
    from fakeprovider.provider import FakeProvider
    from fakeprovider.scenario import load_scenario
    from fakeprovider.server import ServerThread

    monkeypatch.setattr(app_module, "_CHUNK", 4)
    path = tmp_path / "run.jsonl"
    with path.open("a", encoding="utf-8") as sink:
        provider = FakeProvider(
            load_scenario("slow-success"), journal_sink=BatchedSink(sink), journal_memory=3
        )
        with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            for _ in range(10):
                http.get(f"/v1/jobs/{job}")
            whole = provider.journal.run_entries()
            _unread(provider.journal)
            sent = http.get("/__admin/journal")
            report = http.get("/__admin/report")
    assert sent.status_code == report.status_code == 200
    assert sent.json() == [e.to_dict() for e in whole]
    assert [e["seq"] for e in sent.json()] == list(range(1, 12))
    limits = limits_for(provider.scenario.expect, time_scale=provider.settings.time_scale)
    assert report.json() == check(whole, limits).to_dict()
    assert report.json()["violations"]  # ten reads far sooner than slow-success's hints
