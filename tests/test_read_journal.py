"""Reading a journal: ``iter_journal`` streams entries in file order, ``read_journal`` sorts them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from fakeprovider.entries import jsonl_line
from fakeprovider.journal import Entry, iter_journal, read_journal


def entry(seq: int, **kwargs: object) -> Entry:
    fields: dict[str, object] = {
        "kind": "status",
        "job_id": "job_1",
        "method": "GET",
        "path": "/v1/jobs/job_1",
        "client": "c",
        "received_at": float(seq),
        **kwargs,
    }
    return Entry(seq=seq, **fields)  # type: ignore[arg-type]


def jsonl(*entries: Entry) -> str:
    return "".join(map(jsonl_line, entries))


HEADER = entry(
    0, kind="admin", job_id=None, method="POST", path="/__admin/reset", run={"scenario": "x"}
)


def test_iter_journal_yields_entries_in_file_order_headers_included(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(entry(2), HEADER, entry(1)))
    assert [(e.seq, e.is_header) for e in iter_journal(path)] == [
        (2, False),
        (0, True),
        (1, False),
    ]
    assert [e.seq for e in read_journal(path)] == [0, 1, 2]
    assert list(iter_journal(str(path))) == [entry(2), HEADER, entry(1)]


def test_iter_journal_yields_the_entries_before_a_bad_line_then_names_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(entry(1), entry(2)) + "\n[1]\n" + jsonl(entry(3)))
    entries = iter_journal(path)
    assert [next(entries).seq, next(entries).seq] == [1, 2]
    with pytest.raises(
        ValueError, match=r"run.jsonl:4: expected a JSON object \(a journal entry\), got an array$"
    ):
        next(entries)


def test_iter_journal_reads_open_streams_by_their_name() -> None:
    text = io.StringIO(jsonl(entry(1)) + '{"seq": 2}\n')
    with pytest.raises(ValueError, match=r"^<journal>:2: kind: missing; every entry has"):
        list(iter_journal(text))
    binary = io.BufferedReader(io.BytesIO(jsonl(entry(1)).encode()))
    assert list(iter_journal(binary)) == [entry(1)]


def test_iter_journal_opens_a_path_only_when_iterated_and_closes_it_when_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = iter_journal(tmp_path / "missing.jsonl")  # nothing opened yet
    with pytest.raises(FileNotFoundError):
        next(missing)
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(entry(1), entry(2)))
    opened: list[io.BufferedReader] = []
    real_open = open

    def recording_open(*args: Any, **kwargs: Any) -> Any:
        handle = real_open(*args, **kwargs)
        opened.append(handle)
        return handle

    monkeypatch.setattr("builtins.open", recording_open)
    entries = iter_journal(path)
    assert next(entries) == entry(1)
    assert [handle.closed for handle in opened] == [False]
    entries.close()  # type: ignore[attr-defined]
    assert [handle.closed for handle in opened] == [True]
