"""The journal: list-like, JSONL out and back in."""

from __future__ import annotations

import io
import json
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakeprovider.entries import field_values, jsonl_line
from fakeprovider.journal import (
    _CHUNK,
    ENCODE_LINES,
    BatchedSink,
    Entry,
    Journal,
    JournalStore,
    MemoryStore,
    RetryAfterRecord,
    StreamSink,
    _Packed,
    order_entries,
    read_journal,
)
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import parse_scenario
from fakeprovider.server import ServerThread


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


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"job_id": 'j\u00e9\n"\\', "completed_at": 2.5, "status_code": 200, "poll_after": 15},
        {"received_at": float("nan"), "completed_at": float("inf"), "status_since": -float("inf")},
        {"retry_after": RetryAfterRecord("5", 6.5), "listed": (("job_1", "queued"),)},
        {"run": {"scenario": "x", "seed": [1, 2.5, None]}, "inline_result": False, "attempt": 3},
    ],
)
def test_a_written_line_is_the_entrys_dict_as_compact_json(changes: dict[str, object]) -> None:
    out = io.StringIO()
    journal = Journal(sink=out)
    written = journal.append(entry(journal.next_seq(), **{"completed_at": 1.5, **changes}))
    assert out.getvalue() == json.dumps(written.to_dict(), separators=(",", ":")) + "\n"


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
    journal.append(entry(journal.next_seq(), completed_at=1.0))
    journal.clear()
    assert (len(journal), journal.next_seq()) == (0, 2)


def test_an_entry_in_flight_across_a_clear_is_still_written_but_not_listed() -> None:
    sink = io.StringIO()
    journal = Journal(sink=sink)
    journal.append(entry(journal.next_seq()))
    journal.clear()
    journal.append(entry(journal.next_seq(), completed_at=2.0, status_code=200))
    assert journal.in_flight == 1
    completed = journal.complete(1, completed_at=3.0, status_code=200)
    assert completed is not None
    assert (completed.seq, completed.completed_at, journal.in_flight) == (1, 3.0, 0)
    assert [e.seq for e in journal] == [2]  # the new run's entries only
    assert [e.seq for e in read_journal(io.StringIO(sink.getvalue()))] == [1, 2]


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"completed_at": 2.5},
        {"response_started_at": 2.0, "completed_at": 2.5, "status_code": 200},
        {"status_code": None, "dropped": "reset"},
        {"response_started_at": 2.0, "completed_at": 2.5, "status_code": 500, "error_code": "e"},
    ],
)
def test_completing_fills_in_exactly_the_fields_named(changes: dict[str, object]) -> None:
    journal = Journal()
    started = entry(journal.next_seq(), status_code=202, job_status="queued")
    expected = {**started.to_dict(), **changes}  # before: the entry is completed in place
    journal.append(started)
    completed = journal.complete(1, **changes)
    assert completed is not None
    assert completed.to_dict() == expected
    assert journal[0].to_dict() == expected


def test_completing_an_entry_twice_or_an_unknown_one_returns_none() -> None:
    journal = Journal()
    journal.append(entry(journal.next_seq()))
    assert journal.complete(1, completed_at=1.0) is not None
    assert journal.complete(1, completed_at=2.0) is None
    assert journal.complete(7, completed_at=2.0) is None
    assert journal[0].completed_at == 1.0


def test_a_bounded_journal_keeps_the_last_entries_in_memory_and_writes_every_one() -> None:
    sink = io.StringIO()
    journal = Journal(sink=sink, memory=2)
    for _ in range(5):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert ([e.seq for e in journal], journal.forgotten) == ([4, 5], 3)
    assert [e.seq for e in read_journal(io.StringIO(sink.getvalue()))] == [1, 2, 3, 4, 5]
    journal.clear()
    assert (len(journal), journal.forgotten) == (0, 0)


def test_a_bounded_journal_still_completes_an_entry_it_no_longer_lists() -> None:
    sink = io.StringIO()
    journal = Journal(sink=sink, memory=1)
    journal.append(entry(journal.next_seq()))
    journal.append(entry(journal.next_seq(), completed_at=2.0))
    assert journal.complete(1, completed_at=3.0) is not None
    assert [e.seq for e in read_journal(io.StringIO(sink.getvalue()))] == [1, 2]


def _varied(seq: int) -> Entry:
    """Entries of every shape: plain reads, submits, lists, errors, webhooks, headers."""
    shape = seq % 6
    if shape == 0:
        return entry(seq, completed_at=seq + 0.5, status_code=200, job_status="processing")
    if shape == 1:
        return entry(
            seq,
            kind="submit",
            response_started_at=seq + 0.25,
            completed_at=seq + 0.5,
            status_code=202,
            idempotency_key=f"key-{seq}",
            request_digest="sha256:0123",
            credential="fp:1",
        )
    if shape == 2:
        return entry(seq, completed_at=seq + 0.5, status_code=200, listed=(("job_1", "queued"),))
    if shape == 3:
        return entry(
            seq,
            completed_at=-0.0,
            status_code=429,
            error_code="rate_limited",
            retry_after=RetryAfterRecord("3", seq + 3.0),
        )
    if shape == 4:
        return entry(
            seq, completed_at=float("inf"), kind="webhook", event="job.succeeded", attempt=2
        )
    return entry(seq, completed_at=seq + 1.0, run={"scenario": "s", "seed": 0})


def test_a_journal_gives_back_every_entry_exactly_as_it_was_written() -> None:
    sink = io.StringIO()
    journal = Journal(sink=sink)
    written = [journal.append(_varied(journal.next_seq())) for _ in range(3 * _CHUNK + 7)]
    assert journal.snapshot() == written
    assert journal.to_jsonl() == sink.getvalue()


def test_entries_the_columns_cannot_hold_exactly_are_kept_whole() -> None:
    # an int time would come back a float, a NaN time as None: such chunks stay as they are
    odd = [entry(seq, completed_at=seq) for seq in range(1, _CHUNK + 1)]
    odd[7] = entry(8, completed_at=float("nan"))
    store = MemoryStore()
    for e in [*odd, *(entry(seq, completed_at=0.5) for seq in range(_CHUNK + 1, 2 * _CHUNK + 2))]:
        store.add(e)
    back = list(store.entries())
    assert [type(e.completed_at) for e in back[:3]] == [int, int, int]
    assert back[7].completed_at != back[7].completed_at  # still NaN
    assert back[_CHUNK:] == [
        entry(seq, completed_at=0.5) for seq in range(_CHUNK + 1, 2 * _CHUNK + 2)
    ]


@pytest.mark.parametrize(
    "times",
    [
        [0.5, 1e308, 1e308],  # finite, but their sum overflows
        [0.5, math.inf, -math.inf],
        [0.5, None, 2.5],
        [0.5, math.nan, 2.5],
        [0.5, 1, 2.5],
    ],
)
def test_a_packed_chunk_gives_back_every_time_exactly(times: list[float | None]) -> None:
    store = MemoryStore()
    added = [entry(seq, completed_at=times[seq % 3]) for seq in range(1, _CHUNK + 1)]
    # the chunk after it fills the first one: by then that one is packed (a part an add)
    added += [entry(seq, completed_at=0.5) for seq in range(_CHUNK + 1, 2 * _CHUNK + 1)]
    for e in added:
        store.add(e)
    back = list(store.entries())
    assert [jsonl_line(e) for e in back] == [jsonl_line(e) for e in added]
    assert [type(e.completed_at) for e in back] == [type(e.completed_at) for e in added]


@pytest.mark.parametrize("limit", [None, 3, _CHUNK + 5])
def test_a_chunk_is_packed_a_part_an_add_and_reads_the_same_meanwhile(limit: int | None) -> None:
    """Packing 512 entries at once held the event loop for most of a millisecond: a full chunk
    is packed over the next adds instead, and every entry reads back the same at every add."""
    store = MemoryStore(limit)
    added: list[Entry] = []
    packing_adds = 0
    for seq in range(1, 2 * _CHUNK + 40):
        e = _varied(seq) if seq % 7 else entry(seq, completed_at=seq + 0.5)
        added.append(e)
        store.add(e)
        packing_adds += store._packing is not None
        if _CHUNK - 2 <= seq <= _CHUNK + 20 or seq > 2 * _CHUNK:
            kept = added if limit is None else added[-limit:]
            assert list(store.entries()) == kept
            assert (len(store), store.forgotten) == (len(kept), len(added) - len(kept))
    # two chunks packed, each over 15 adds (none when fewer entries than a chunk are kept)
    chunks = 0 if limit is not None and limit < _CHUNK else 2
    assert packing_adds == chunks * 15  # the flat list, then 2 of the 28 columns an add
    if limit is None:
        assert [type(chunk) for chunk in store._chunks] == [_Packed, _Packed]


def test_a_bounded_journal_forgets_the_oldest_across_chunks() -> None:
    journal = Journal(memory=_CHUNK + 100)
    for _ in range(3 * _CHUNK):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert [e.seq for e in journal] == list(range(2 * _CHUNK - 99, 3 * _CHUNK + 1))
    assert (len(journal), journal.forgotten) == (_CHUNK + 100, 2 * _CHUNK - 100)


def test_a_journal_memory_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^memory must be at least 1 entry, got 0$"):
        Journal(memory=0)


class _FullSink(io.StringIO):
    name = "/dev/full"

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_sink_that_cannot_be_written_is_reported_once_and_entries_stay_in_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    journal = Journal(sink=_FullSink())
    with caplog.at_level("ERROR", logger="fakeprovider.server"):
        for _ in range(3):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert [r.getMessage() for r in caplog.records] == [
        "cannot write the journal to /dev/full: No space left on device; entries are kept in"
        " memory only from now on"
    ]
    assert isinstance(journal.sink_error, OSError)
    assert [e.seq for e in journal] == [1, 2, 3]


def test_bad_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(
        '{"seq": 1, "kind": "status", "method": "GET", "path": "/", "client": "c", "received_at": 0}\n[1]\n'
    )
    with pytest.raises(
        ValueError, match=r"j.jsonl:2: expected a JSON object \(a journal entry\), got an array$"
    ):
        read_journal(path)


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^<journal>:1: colour: not a journal field$"):
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


def test_a_batched_sink_writes_in_the_background_in_order() -> None:
    stream = io.StringIO()
    journal = Journal(sink=BatchedSink(stream, interval=0.01))
    for _ in range(50):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    deadline = time.monotonic() + 10  # a bound on waiting, not on how fast it is
    while stream.getvalue().count("\n") < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.getvalue() == journal.to_jsonl()
    journal.close()


def test_a_batched_sink_writes_nothing_before_its_interval_unless_flushed() -> None:
    stream = io.StringIO()
    journal = Journal(sink=BatchedSink(stream, interval=60))
    journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert stream.getvalue() == ""
    journal.flush()
    assert stream.getvalue() == journal.to_jsonl()
    journal.close()
    journal.append(entry(journal.next_seq(), completed_at=2.0))  # after close: straight through
    assert stream.getvalue() == journal.to_jsonl()


def test_a_batched_sink_that_cannot_be_written_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    journal = Journal(sink=BatchedSink(_FullSink(), interval=60))
    with caplog.at_level("ERROR", logger="fakeprovider.server"):
        for _ in range(3):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
            journal.flush()
        journal.close()
    assert [r.getMessage() for r in caplog.records] == [
        "cannot write the journal to /dev/full: No space left on device; entries are kept in"
        " memory only from now on"
    ]
    assert isinstance(journal.sink_error, OSError)
    assert [e.seq for e in journal] == [1, 2, 3]


def test_attaching_a_sink_that_cannot_take_the_run_header_is_refused() -> None:
    journal = Journal()
    journal.start_run(entry(0, completed_at=0.0, kind="admin", run={"scenario": "s"}))
    with pytest.raises(OSError, match="No space left on device"):
        journal.attach(BatchedSink(_FullSink()))
    assert journal.sink is None


def test_a_batched_sink_leaves_out_an_entry_with_no_line_and_says_why_once() -> None:
    stream = io.StringIO()
    sink = BatchedSink(stream, interval=60)
    written = [entry(1, completed_at=1.0), entry(3, completed_at=1.0)]
    sink.write_entry(written[0])
    sink.write_entry(entry(2, client=b"bytes", completed_at=1.0))  # type: ignore[arg-type]
    sink.write_entry(written[1])
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        sink.flush()
    assert stream.getvalue() == "".join(map(jsonl_line, written))
    sink.flush()  # said once
    written.append(entry(4, completed_at=1.0))
    sink.write_entry(written[-1])
    sink.close()
    assert stream.getvalue() == "".join(map(jsonl_line, written))


def test_a_batched_sink_encodes_every_so_many_entries_and_refuses_one_with_no_line_then() -> None:
    stream = io.StringIO()
    sink = BatchedSink(stream, interval=60)
    written = [entry(n, completed_at=1.0) for n in range(1, ENCODE_LINES)]
    sink.write_entry(entry(0, client=b"bytes", completed_at=1.0))  # type: ignore[arg-type]
    for taken in written[:-1]:
        sink.write_entry(taken)  # taken, not encoded yet
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        sink.write_entry(written[-1])  # the ENCODE_LINES-th: all of them encoded now
    assert stream.getvalue() == ""  # nothing written before the interval
    sink.close()
    assert stream.getvalue() == "".join(map(jsonl_line, written))


def test_a_batched_writer_goes_on_after_an_entry_with_no_line() -> None:
    stream = io.StringIO()
    sink = BatchedSink(stream, interval=0.01)
    sink.write_entry(entry(1, completed_at=1.0))
    sink.write_entry(entry(2, client=b"bytes", completed_at=1.0))  # type: ignore[arg-type]
    deadline = time.monotonic() + 10  # a bound on waiting, not on how fast it is
    while sink._steady and time.monotonic() < deadline:  # until it records why it left 2 out
        time.sleep(0.01)
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        sink.write_entry(entry(3, completed_at=1.0))  # taken all the same
    sink.write_entry(entry(4, completed_at=1.0))
    while stream.getvalue().count("\n") < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.getvalue() == "".join(jsonl_line(entry(n, completed_at=1.0)) for n in (1, 3, 4))
    sink.close()


def test_a_batched_sink_interval_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^interval must be between 0 and 60 seconds, got 0$"):
        BatchedSink(io.StringIO(), interval=0)


def test_a_batched_sink_refuses_a_bound_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"^max_lines must be at least 1, got 0$"):
        BatchedSink(io.StringIO(), max_lines=0)
    with pytest.raises(ValueError, match=r"^full_wait must be between 0 and 60 seconds, got -1$"):
        BatchedSink(io.StringIO(), full_wait=-1)


class _StalledStream(io.StringIO):
    """A disk that stalls: each write waits until ``moving`` is set (30 s at most)."""

    def __init__(self) -> None:
        super().__init__()
        self.moving = threading.Event()
        self.writing = threading.Event()

    def write(self, text: str) -> int:
        self.writing.set()
        self.moving.wait(30)
        return super().write(text)


def _stalled_journal(full_wait: float) -> tuple[Journal, _StalledStream]:
    """A journal whose writer holds 3 lines (its bound) in a write that does not return."""
    stream = _StalledStream()
    journal = Journal(sink=BatchedSink(stream, interval=0.01, max_lines=3, full_wait=full_wait))
    for _ in range(3):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert stream.writing.wait(30)
    return journal, stream


def test_a_full_batched_sink_makes_a_line_wait_for_room_then_keeps_it() -> None:
    journal, stream = _stalled_journal(full_wait=0.2)
    start = time.monotonic()
    journal.append(entry(journal.next_seq(), completed_at=1.0))  # no room: the disk stalls
    waited = time.monotonic() - start
    stream.moving.set()
    journal.close()
    assert waited >= 0.15
    assert stream.getvalue() == journal.to_jsonl()
    assert stream.getvalue().count("\n") == 4


def test_a_line_waiting_for_room_goes_on_once_the_writer_has_written() -> None:
    journal, stream = _stalled_journal(full_wait=30)
    threading.Timer(0.2, stream.moving.set).start()
    start = time.monotonic()
    journal.append(entry(journal.next_seq(), completed_at=1.0))
    waited = time.monotonic() - start
    journal.close()
    assert 0.1 <= waited < 20  # the disk moved after 0.2 s: far less than full_wait
    assert stream.getvalue() == journal.to_jsonl()


def test_a_batched_sink_with_room_takes_a_line_without_waiting() -> None:
    stream = _StalledStream()
    journal = Journal(sink=BatchedSink(stream, interval=0.01, max_lines=100, full_wait=2))
    journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert stream.writing.wait(30)  # the writer holds a line in a stalled write
    start = time.monotonic()
    for _ in range(50):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    waited = time.monotonic() - start
    stream.moving.set()
    journal.close()
    assert waited < 1.9  # not one line waited
    assert stream.getvalue() == journal.to_jsonl()


def test_a_bounded_journal_reads_the_current_run_back_from_its_batched_file(
    tmp_path: Path,
) -> None:
    with (tmp_path / "journal.jsonl").open("a", encoding="utf-8") as stream:
        journal = Journal(sink=BatchedSink(stream, interval=60), memory=2)
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.clear()  # a new run: the entry before it is not one of its entries
        for _ in range(5):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.append(entry(journal.next_seq()))  # in flight: not in the file yet
        assert [e.seq for e in journal] == [5, 6, 7]
        assert [e.seq for e in journal.run_entries()] == [2, 3, 4, 5, 6, 7]
        journal.close()


class _ListStore:
    """A ``JournalStore`` as small as one can be: what a shared store has to provide."""

    def __init__(self) -> None:
        self.kept: list[Entry] = []
        self.forgotten = 0

    def add(self, entry: Entry) -> None:
        self.kept.append(entry)

    def entries(self) -> Iterator[Entry]:
        return iter(list(self.kept))

    def clear(self) -> None:
        self.kept.clear()

    def __len__(self) -> int:
        return len(self.kept)


def test_a_journal_keeps_its_completed_entries_in_the_store_it_is_given() -> None:
    store = _ListStore()
    assert isinstance(store, JournalStore)
    journal = Journal(store=store)
    for _ in range(2):
        journal.append(entry(journal.next_seq(), completed_at=1.0))
    journal.append(entry(journal.next_seq()))  # in flight: the journal's own until completed
    assert ([e.seq for e in store.kept], [e.seq for e in journal], len(journal)) == (
        [1, 2],
        [1, 2, 3],
        3,
    )
    journal.complete(3, completed_at=2.0)
    journal.clear()
    assert (store.kept, len(journal)) == ([], 0)


# -- a bounded journal reads its run from where the run starts in the file -------------------


def _scanned(path: Path, journal: Journal) -> list[Entry]:
    """What ``run_entries`` read before it could seek: every line of the whole file with a seq
    of the current run, plus the entries in flight (the reference it must still agree with)."""
    found: dict[int, Entry] = {}
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            parsed = read_journal(io.StringIO(line))
        except ValueError:
            continue
        if parsed and parsed[0].seq >= journal._run_start:
            found[parsed[0].seq] = parsed[0]
    for listed in journal.snapshot():
        found.setdefault(listed.seq, listed)
    return sorted(found.values(), key=lambda e: e.seq)


def _header(seq: int) -> Entry:
    return entry(seq, kind="admin", method="RUN", path="/__admin/start", completed_at=0.0)


def test_a_batched_sink_counts_where_its_next_line_lands_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"not": "ours"}\n')  # the file held something already
    with path.open("a", encoding="utf-8") as stream:
        sink = BatchedSink(stream, interval=60)
        assert sink.position() == 16
        sink.write_entry(entry(1, client="clié\u2603nt", completed_at=1.0))  # not ASCII
        sink.write_entry(entry(2, completed_at=1.0))  # both still waiting
        waiting = jsonl_line(entry(1, client="clié\u2603nt", completed_at=1.0))
        waiting += jsonl_line(entry(2, completed_at=1.0))
        assert sink.position() == 16 + len(waiting.encode())
        sink.flush()
        assert sink.position() == sink.written_end() == path.stat().st_size
        sink.close()
        assert sink.position() == path.stat().st_size


def test_a_sink_tells_no_position_when_its_file_is_not_one_it_can_count() -> None:
    assert BatchedSink(io.StringIO()).position() is None  # no file
    assert BatchedSink(io.StringIO()).written_end() is None


def test_a_sink_says_its_file_is_not_its_own_when_another_writer_appended(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream, BatchedSink(stream) as sink:
        sink.write_entry(entry(1, completed_at=1.0))
        sink.flush()
        assert sink.written_end() == path.stat().st_size
        with path.open("a", encoding="utf-8") as other:
            other.write("{}\n")
        assert sink.written_end() is None


def test_a_bounded_journal_reads_each_run_after_resets_as_a_whole_scan_would(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(memory=1)
        journal.start_run(_header(0))
        journal.attach(BatchedSink(stream, interval=60))
        for run in range(4):
            for n in range(3 + run):
                journal.append(entry(journal.next_seq(), client=f"ré{n}", completed_at=1.0))
            held = journal.next_seq()
            journal.append(entry(held))  # in flight across the reset below
            if run % 2:
                journal.flush()  # some runs start with nothing waiting, some with lines waiting
            assert journal.run_entries() == _scanned(path, journal)
            journal.clear()
            journal.start_run(_header(journal.next_seq()))
            journal.complete(held, completed_at=2.0)  # written in the new run, not one of it
            journal.append(entry(journal.next_seq(), completed_at=1.0))
            journal.append(entry(journal.next_seq(), completed_at=1.0))
            got = journal.run_entries()
            assert got == _scanned(path, journal)
            assert [e.seq for e in got] == [held + 1, held + 2, held + 3]
        journal.close()


def test_a_bounded_journal_reports_only_its_own_run_of_a_file_an_earlier_process_wrote(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:  # the earlier process
        earlier = Journal(sink=stream)
        earlier.start_run(_header(0))
        for _ in range(9):
            earlier.append(entry(earlier.next_seq(), client="earlier", completed_at=1.0))
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(memory=1)
        journal.start_run(_header(0))
        journal.attach(BatchedSink(stream, interval=60))
        for _ in range(3):
            journal.append(entry(journal.next_seq(), client="now", completed_at=1.0))
        got = journal.run_entries()
        journal.close()
    # the whole file's seqs 4..9 are the earlier process's: read from this run's start only
    assert [(e.seq, e.client) for e in got] == [(1, "now"), (2, "now"), (3, "now")]


def test_a_bounded_journal_reads_the_whole_file_when_it_was_truncated(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(sink=BatchedSink(stream, interval=60), memory=1)
        for _ in range(3):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.clear()
        for _ in range(3):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.flush()
        with path.open("r+", encoding="utf-8") as rotated:
            rotated.truncate(0)  # copied away and truncated, as logrotate's copytruncate does
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        got = journal.run_entries()
        journal.close()
    # the run's start lies past the end of the file now: read all of it (7 and 8 are there)
    assert [e.seq for e in got] == [7, 8]


def test_a_bounded_journal_reads_the_whole_file_another_writer_appended_to(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(sink=BatchedSink(stream, interval=60), memory=1)
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.clear()
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.flush()
        with path.open("a", encoding="utf-8") as other:
            other.write(jsonl_line(entry(9, client="other", completed_at=1.0)))
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        got = journal.run_entries()
        journal.close()
    assert got == _scanned(path, journal)
    assert [(e.seq, e.client) for e in got] == [(2, "c"), (3, "c"), (9, "other")]


def test_a_bounded_journal_reads_the_file_now_at_its_name_when_it_was_replaced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(sink=StreamSink(stream), memory=1)
        journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.clear()
        for _ in range(2):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
        path.rename(tmp_path / "journal.jsonl.1")
        path.write_text(jsonl_line(entry(5, client="new file", completed_at=1.0)))
        got = journal.run_entries()
    assert [(e.seq, e.client) for e in got] == [(3, "c"), (5, "new file")]


def test_a_bounded_journal_with_a_plain_stream_sink_seeks_too(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(jsonl_line(entry(9, client="before", completed_at=1.0)))
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(sink=stream, memory=1)
        for _ in range(2):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
        journal.clear()
        for _ in range(5):
            journal.append(entry(journal.next_seq(), client="é", completed_at=1.0))
        assert [e.seq for e in journal.run_entries()] == [3, 4, 5, 6, 7]


def test_a_served_bounded_journal_reports_each_run_after_resets_and_scenario_loads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(jsonl_line(entry(1, client="an earlier process", completed_at=1.0)))
    instant = "name: instant\njobs: [{timeline: [{status: succeeded}], result: {size_bytes: 16}}]\n"
    with path.open("a", encoding="utf-8") as stream:
        provider = FakeProvider(parse_scenario(instant), journal_memory=2)
        provider.journal.attach(BatchedSink(stream))
        with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
            runs = []
            for n, change in enumerate(["reset", "scenario", "reset"]):
                for _ in range(3 + n):
                    http.get("/v1/jobs")
                if change == "reset":
                    http.post("/__admin/reset")
                else:
                    http.put("/__admin/scenario", content=instant.encode())
                http.post("/v1/jobs", json={"prompt": "x"})
                http.get("/v1/jobs")
                dumped = http.get("/__admin/journal").json()
                runs.append([(e["seq"], e["kind"]) for e in dumped])
                assert dumped == [e.to_dict() for e in _scanned(path, provider.journal)]
            provider.journal.close()
    assert runs == [
        [(4, "admin"), (5, "submit"), (6, "list")],
        [(11, "admin"), (12, "submit"), (13, "list")],
        [(19, "admin"), (20, "submit"), (21, "list")],
    ]


def test_sequence_numbers_go_on_in_order_across_a_clear_from_every_thread() -> None:
    journal = Journal()
    assert [journal.next_seq(), Journal.next_seq(journal)] == [1, 2]
    journal.append(entry(journal.next_seq(), completed_at=1.0))
    journal.clear()
    journal.append(entry(journal.next_seq(), completed_at=1.0))  # the run starts at 4
    assert [e.seq for e in journal] == [4]
    taken: list[int] = []
    threads = [
        threading.Thread(target=lambda: taken.extend(journal.next_seq() for _ in range(2000)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(5, 8005))
    journal.clear()
    journal.append(entry(journal.next_seq(), completed_at=1.0))
    assert [e.seq for e in journal] == [8005]


# -- entries given as their values (``append_values``: what the engine journals with) --------


def _in_flight(seq: int) -> Entry:
    """``_varied(seq)`` before its answer went out (the fields ``finish`` fills in unset)."""
    import dataclasses

    return dataclasses.replace(
        _varied(seq), response_started_at=None, completed_at=None, status_code=None
    )


def _answered(seq: int) -> tuple[float, float, int]:
    return (seq + 0.25, seq + 0.5, 200 + seq % 3)


class _Listed:
    def __init__(self) -> None:
        self.heard: list[Entry] = []

    def __call__(self, entry: Entry) -> None:
        self.heard.append(entry)


@pytest.mark.parametrize(
    "kind", ["memory", "bounded", "store", "listener", "stream", "batched", "no sink"]
)
def test_entries_given_as_values_are_kept_and_written_as_the_entries_themselves(
    kind: str,
) -> None:
    # two journals, one given entries and completed by ``complete``, the other given their
    # values and completed by ``finish``: the same entries kept, heard and written
    def made() -> tuple[Journal, io.StringIO, _Listed]:
        text, heard = io.StringIO(), _Listed()
        sink: object = None if kind == "no sink" else text
        if kind == "batched":
            sink = BatchedSink(text, interval=60)
        return (
            Journal(
                sink=sink,  # type: ignore[arg-type]
                memory=_CHUNK + 9 if kind == "bounded" else None,
                store=_ListStore() if kind == "store" else None,
                listener=heard if kind == "listener" else None,
            ),
            text,
            heard,
        )

    (by_entry, text_a, heard_a), (by_values, text_b, heard_b) = made(), made()
    count = 3 * _CHUNK + 7
    for seq in range(1, count + 1):
        assert by_entry.next_seq() == by_values.next_seq() == seq
        by_entry.append(_in_flight(seq))
        if seq % 5:
            by_values.append_values(list(field_values(_in_flight(seq))))
        else:
            by_values.append(_in_flight(seq))  # mixed with entries, as requests are
        if seq > 3:  # three answers in flight at a time, completed in order
            started, completed, code = _answered(seq - 3)
            by_entry.complete(
                seq - 3, response_started_at=started, completed_at=completed, status_code=code
            )
            assert by_values.finish(seq - 3, started, completed, code) is None
    assert by_values.snapshot() == by_entry.snapshot()
    assert [e.completed_at for e in by_values.snapshot()[-3:]] == [None] * 3
    for seq in range(count - 2, count + 1):
        by_entry.complete(seq, **dict(zip(_FILLED, _answered(seq), strict=True)))
        by_values.finish(seq, *_answered(seq))
    by_entry.flush()
    by_values.flush()
    assert by_values.snapshot() == by_entry.snapshot()
    assert len(by_values) == len(by_entry) == (_CHUNK + 9 if kind == "bounded" else count)
    assert text_b.getvalue() == text_a.getvalue()
    assert heard_b.heard == heard_a.heard
    if kind != "no sink":
        assert text_b.getvalue().count("\n") == count


_FILLED = ("response_started_at", "completed_at", "status_code")


class _ListStore:
    """A ``JournalStore`` of its own (not a ``MemoryStore``): it is handed entries."""

    def __init__(self) -> None:
        self.kept: list[Entry] = []

    @property
    def forgotten(self) -> int:
        return 0

    def add(self, entry: Entry) -> None:
        assert type(entry) is Entry
        self.kept.append(entry)

    def entries(self) -> Iterator[Entry]:
        return iter(list(self.kept))

    def clear(self) -> None:
        self.kept.clear()

    def __len__(self) -> int:
        return len(self.kept)


def test_an_entry_given_as_values_is_completed_by_complete_as_an_entry_would_be() -> None:
    journal = Journal()
    values = list(field_values(_in_flight(1)))
    journal.append_values(values)
    assert journal.in_flight == 1
    assert journal.snapshot() == [_in_flight(1)]
    done = journal.complete(1, completed_at=2.0, status_code=503, error_code="busy")
    assert done == Entry(*values[:8], 2.0, 503, *values[10:16], "busy", *values[17:])
    assert journal.snapshot() == [done]
    assert journal.complete(1, completed_at=3.0) is None
    assert journal.finish(1, 1.0, 2.0, 200) is None  # no longer in flight: nothing happens


def test_an_entry_given_as_values_in_flight_across_a_clear_is_written_but_not_listed() -> None:
    sink = io.StringIO()
    journal = Journal(sink=sink)
    journal.append_values(list(field_values(_in_flight(journal.next_seq()))))
    journal.clear()
    assert (len(journal), journal.in_flight) == (0, 1)
    journal.finish(1, *_answered(1))
    assert len(journal) == 0
    assert [e.seq for e in read_journal(io.StringIO(sink.getvalue()))] == [1]
