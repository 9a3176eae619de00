"""The journal: list-like, JSONL out and back in."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fakeprovider.journal import Entry, Journal, RetryAfterRecord, order_entries, read_journal


def entry(seq: int, **kwargs: object) -> Entry:
    return Entry(
        seq=seq,
        kind="status",
        job_id="job_1",
        method="GET",
        path="/v1/jobs/job_1",
        client="c",
        received_at=float(seq),
        **kwargs,
    )  # type: ignore[arg-type]


def test_entries_are_written_when_completed_and_read_back(tmp_path: Path) -> None:
    sink = io.StringIO()
    journal = Journal(sink=sink)
    journal.append(entry(journal.next_seq()))
    journal.append(entry(journal.next_seq()))
    assert sink.getvalue() == ""
    journal.complete(
        2,
        response_started_at=2.5,
        completed_at=2.75,
        status_code=503,
        retry_after=RetryAfterRecord("3", 5.5),
    )
    journal.complete(
        1, response_started_at=1.5, completed_at=1.75, status_code=200, job_status="queued"
    )
    path = tmp_path / "journal.jsonl"
    path.write_text(sink.getvalue())
    assert read_journal(path) == journal.snapshot()
    assert [(e.seq, e.status_code) for e in read_journal(path)] == [(1, 200), (2, 503)]


def test_journal_is_list_like() -> None:
    journal = Journal()
    assert (journal.called, journal.call_count) == (False, 0)
    for _ in range(3):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert (
        journal.called,
        journal.call_count,
        journal.last.seq,
        journal[0].seq,
        len(journal[1:]),
    ) == (True, 3, 3, 1, 2)
    assert [e.seq for e in journal.filter(kind="status", job_id="job_1")] == [1, 2, 3]


def test_clear_keeps_sequence_numbers_going() -> None:
    journal = Journal()
    journal.append(entry(journal.next_seq()))
    journal.clear()
    assert (len(journal), journal.next_seq()) == (0, 2)
    assert journal.complete(1, completed_at=1.0) is None


def test_bad_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(
        '{"seq": 1, "kind": "status", "method": "GET", "path": "/", "client": "c", "received_at": 0}\n[1]\n'
    )
    with pytest.raises(
        ValueError, match=r"j.jsonl:2: not a journal entry: expected a JSON object$"
    ):
        read_journal(path)


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(
        ValueError, match=r"^<journal>:1: not a journal entry: unknown journal field\(s\): colour$"
    ):
        read_journal(
            io.StringIO(
                '{"seq": 1, "kind": "status", "method": "GET", "path": "/", "client": "c", "received_at": 0, "colour": 1}\n'
            )
        )


def test_a_list_entry_keeps_the_jobs_it_showed_through_jsonl() -> None:
    entry = Entry(
        seq=3,
        kind="list",
        job_id=None,
        method="GET",
        path="/v1/jobs",
        client="c",
        received_at=1.0,
        completed_at=1.1,
        status_code=200,
        listed=(("job_a", "succeeded"), ("job_b", "processing")),
    )
    assert entry.to_dict()["listed"] == {"job_a": "succeeded", "job_b": "processing"}
    journal = Journal()
    journal.append(entry)
    assert read_journal(io.StringIO(journal.to_jsonl())) == [entry]


def test_order_entries_sorts_by_seq_process_by_process() -> None:
    def entry(seq: int, header: bool = False) -> Entry:
        return Entry(
            seq=seq,
            kind="admin" if header else "status",
            job_id=None,
            method="GET",
            path="/",
            client="c",
            received_at=0.0,
            run={"scenario": "s"} if header else None,
        )

    one = [entry(2), entry(0, header=True), entry(1)]
    assert [e.seq for e in order_entries(one)] == [0, 1, 2]
    two = [entry(0, True), entry(2), entry(1), entry(0, True), entry(1), entry(3), entry(2)]
    assert [e.seq for e in order_entries(two)] == [0, 1, 2, 0, 1, 2, 3]
    assert [e.seq for e in order_entries(order_entries(two))] == [0, 1, 2, 0, 1, 2, 3]
