"""A journal judged as it streams by gets the verdict and output of one judged in memory.

``fakeprovider._stream`` judges a journal one entry at a time, keeping per-run, per-client and
per-job state (``fakeprovider check FILE`` judges that way); ``invariants.check`` judges the
whole list. Here they are held equal on generated journals of several runs (run headers with
limits, resets), clients, webhooks and entries out of seq order: the report's fields, and
``check``'s output in every format with its exit code and stderr, against the in-memory path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import heapq
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from fakeprovider import _check_cli, _judges, _report, _rules, _stream
from fakeprovider._formats import FORMATS
from fakeprovider._report import summary_of
from fakeprovider._stream import (
    Unordered,
    check_stream,
    in_seq_order,
    in_seq_order_batches,
    render_streamed,
)
from fakeprovider.cli import main
from fakeprovider.entries import jsonl_line
from fakeprovider.invariants import Report, check
from fakeprovider.journal import Entry, order_entries
from fakeprovider.limits import Limits
from tests.bench_scripts import load_script
from tests.test_judges import LIMITS, runs
from tests.thorough import thorough

STATUSES = (None, "queued", "processing", "succeeded", "failed")


def _admin(seq: int, path: str, run: dict[str, object] | None) -> Entry:
    return Entry(
        seq=seq,
        kind="admin",
        job_id=None,
        method="RUN" if run is not None else "POST",
        path=path,
        client="fakeprovider",
        received_at=0.0,
        response_started_at=0.0,
        completed_at=0.0,
        status_code=None if run is not None else 200,
        run=run,
    )


@st.composite
def journals(draw: st.DrawFn) -> list[Entry]:
    """One to three runs (each after a run header, a reset or nothing), in seq order, with
    job facts, faults and unknown entries drawn in."""
    out: list[Entry] = []
    seq = 0
    for number in range(draw(st.integers(1, 3))):
        start = draw(st.sampled_from(("header", "reset", "none") if number else ("header", "none")))
        if start == "header":
            limits = draw(LIMITS).to_dict()
            header = {"scenario": draw(st.sampled_from(("a", "b"))), "limits": limits}
            out.append(_admin(seq, "/__admin/start" if not out else "/__admin/reset", header))
        elif start == "reset":
            out.append(_admin(seq, "/__admin/reset", None))
        for e in draw(runs()):
            seq += 1
            if e.kind == "webhook":
                e = draw(delivered(e))
            out.append(
                dataclasses.replace(
                    e,
                    seq=seq,
                    kind=draw(st.sampled_from((e.kind,) * 9 + ("unknown",))),
                    true_status=draw(st.sampled_from(STATUSES)),
                    status_since=draw(st.sampled_from((None, 0.0, 1.5, 3.0))),
                    fault=draw(st.sampled_from((None, None, "slow"))),
                )
            )
        seq += 1
    return out


@st.composite
def delivered(draw: st.DrawFn, hook: Entry) -> Entry:
    """``hook`` as any delivery may end: answered 2xx, 3xx, 4xx, 5xx or not, in time or late
    (the limits' ``ack_limit`` is 5 s or drawn), genuine, forged, stale, missing or a
    duplicate, refused or lost, a first attempt, a later one or none."""
    took = draw(st.sampled_from((None, 0.0, 0.5, 5.0, 5.0000005, 5.1, 30.0, 400.0)))
    return dataclasses.replace(
        hook,
        status_code=draw(st.sampled_from((200, 200, 204, 299, 300, 399, 400, 404, 499, 500, None))),
        completed_at=None if took is None else hook.received_at + took,
        delivery=draw(st.sampled_from((None, None, "forged", "stale", "missing", "duplicate"))),
        attempt=draw(st.sampled_from((1, 1, 2, 0, None))),
        error_code=draw(
            st.sampled_from((None, None, None, "connection_error", "host_not_allowed", "timeout"))
        ),
        job_status=draw(st.sampled_from(STATUSES)),
    )


def _limits_of(header: dict[str, object] | None) -> Limits:
    if header is None:
        return Limits()
    return Limits(**header["limits"])  # type: ignore[arg-type]


@thorough(150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(journals())
def test_a_journal_judged_as_it_streams_by_gets_the_in_memory_report(
    entries: list[Entry],
) -> None:
    ordered = order_entries(entries)
    headers = [e.run for e in ordered if e.run is not None]
    found = check_stream(in_seq_order(ordered), _limits_of)
    runs = check(ordered, Limits(), run_limits=[_limits_of(h) for h in found.headers])
    first = _limits_of(found.headers[0]) if found.headers else Limits()
    expected = check(ordered, first, run_limits=[_limits_of(h) for h in found.headers])
    assert found.violations == expected.violations == runs.violations
    assert found.metrics == expected.metrics
    assert list(found.metrics) == list(expected.metrics)
    assert found.coverage == expected.coverage
    assert found.warnings == expected.warnings
    assert found.limits == expected.limits
    assert all(h in headers for h in found.headers if h is not None)
    counts = tuple(Counter(v.invariant for v in expected.violations).most_common())
    assert (found.total, found.counts) == (len(expected.violations), counts)
    for shown, hold in ((1, False), (2, True), (5, False), (None, True)):
        first = check_stream(in_seq_order(ordered), _limits_of, shown=shown, hold=hold)
        assert first.violations == expected.violations[slice(shown)]
        assert (first.total, first.counts) == (found.total, found.counts)
        assert (first.metrics, first.warnings) == (found.metrics, found.warnings)
    # the text report: its summary of the metrics, and the timelines from a second pass
    assert found.summary == summary_of(expected.metrics)
    for shown in (0, 1, 3):
        text = render_streamed(found, lambda: in_seq_order(ordered), shown)
        assert text == expected.render(shown)


def _judged_one_after_another(
    entries: list[Entry], then: list[Entry]
) -> tuple[list[Entry], _stream.StreamReport, Report]:
    """``entries`` and after them ``then`` (its seqs moved past theirs), in order; judged as
    they stream by (noting what timelines need) and in memory."""
    after = max((e.seq for e in entries), default=0) + 1
    ordered = order_entries([*entries, *(dataclasses.replace(e, seq=e.seq + after) for e in then)])
    found = check_stream(in_seq_order(ordered), _limits_of, timelines=True)
    expected = check(
        ordered,
        _limits_of(found.headers[0]) if found.headers else Limits(),
        run_limits=[_limits_of(h) for h in found.headers],
    )
    return ordered, found, expected


@thorough(60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    journals(),
    st.sampled_from((2, 3, 6)),
    st.integers(0, 30),
    st.sampled_from((0.5, 1.0, 2.0)),
)
def test_timelines_cut_short_and_windows_looked_at_by_range_print_as_in_memory(
    entries: list[Entry], most: int, reads: int, budget: float
) -> None:
    """With timelines of at most ``most`` lines (past them, the first and last ``most // 2``
    of the violation's own entries), and every window fed by its range of seqs rather than by
    each seq (``_WIDE`` 0), the text of a streamed report is still the in-memory one; a run
    of ``reads`` status reads in a burst last (``_rate_burst``) names many."""
    burst = _rate_burst(reads, budget) if reads else []
    ordered, found, expected = _judged_one_after_another(entries, burst)
    with contextlib.ExitStack() as patched:
        for module in (_report, _stream):
            patched.enter_context(mock.patch.object(module, "_MAX_LINES", most))
            patched.enter_context(mock.patch.object(module, "_HALF", most // 2))
        patched.enter_context(mock.patch.object(_stream, "_WIDE", 0))
        for shown in (0, 3):
            assert render_streamed(found, lambda: in_seq_order(ordered), shown) == (
                expected.render(shown)
            )


def _cut(entries: list[Entry], sizes: list[int]) -> Iterator[list[Entry]]:
    """``entries`` in lists of ``sizes`` (the last one holding the rest)."""
    start = 0
    for size in sizes:
        yield entries[start : start + size]
        start += size
    yield entries[start:]


@thorough(80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    journals(),
    st.sampled_from((2, 3, 6)),
    st.sampled_from((0, 12, 25, 40)),
    st.sampled_from((0.5, 1.0, 2.0)),
    st.lists(st.integers(0, 9), min_size=1, max_size=5),
    st.sampled_from((0, 1, 4)),
    st.booleans(),
)
def test_lists_taken_whole_by_the_timelines_pass_print_as_entry_by_entry(
    entries: list[Entry],
    most: int,
    reads: int,
    budget: float,
    sizes: list[int],
    waiting: int,
    burst_first: bool,
) -> None:
    """The timelines pass given the entries in lists (``batches``), any list offered whole
    (``_BULK`` 1; lists of ``sizes`` over and over) and at most ``waiting`` groups waiting
    for one, with timelines of at most
    ``most`` lines and a run with a burst of ``reads`` status reads named by violations
    before or after the drawn journal: the text is the in-memory one."""
    burst = _rate_burst(reads, budget) if reads else []
    if burst_first:
        entries, burst = burst, entries
    ordered, found, expected = _judged_one_after_another(entries, burst)
    offered: list[bool] = []
    bulk = _stream._Windows.bulk

    def noted(self: _stream._Windows, batch: list[Any]) -> bool:
        offered.append(bulk(self, batch))
        return offered[-1]

    with contextlib.ExitStack() as patched:
        for module in (_report, _stream):
            patched.enter_context(mock.patch.object(module, "_MAX_LINES", most))
            patched.enter_context(mock.patch.object(module, "_HALF", most // 2))
        patched.enter_context(mock.patch.object(_stream, "_BULK", 1))
        patched.enter_context(mock.patch.object(_stream, "_WAITING", waiting))
        patched.enter_context(mock.patch.object(_stream._Windows, "bulk", noted))
        for shown in (0, 3):
            text = render_streamed(
                found,
                lambda: in_seq_order(ordered),
                shown,
                batches=lambda: in_seq_order_batches(_cut(ordered, sizes * len(ordered))),
            )
            assert text == expected.render(shown)


def _drawn_in_lists(
    found: _stream.StreamReport, journal: list[Entry], size: int
) -> tuple[str, list[tuple[int, bool]]]:
    """The text report of ``found`` drawn from ``journal`` in lists of ``size``, and each list
    offered whole: its first seq and whether it was taken."""
    offered: list[tuple[int, bool]] = []
    bulk = _stream._Windows.bulk

    def noted(self: _stream._Windows, batch: list[Any]) -> bool:
        offered.append((batch[0].seq, bulk(self, batch)))
        return offered[-1][1]

    with mock.patch.object(_stream._Windows, "bulk", noted):
        text = render_streamed(
            found,
            lambda: in_seq_order(journal),
            batches=lambda: in_seq_order_batches(_cut(journal, [size] * len(journal))),
        )
    return text, offered


def test_a_burst_of_reads_past_a_timelines_first_lines_is_taken_a_list_at_a_time() -> None:
    """A violation naming 201 status reads: once its timeline has more than its first 14,
    each list of 20 entries after that is taken whole, up to the one past its last seq (202):
    its last seven shown come out of the last list taken whole."""
    journal = _rate_burst(230, 20.0)
    found = check_stream(in_seq_order(journal), _limits_of, timelines=True)
    (v,) = found.violations
    assert (min(v.seqs), max(v.seqs), len(v.seqs)) == (2, 202, 201)
    text, offered = _drawn_in_lists(found, journal, 20)
    assert text == render_streamed(found, lambda: in_seq_order(journal))
    assert _timeline_lines(text)[8:10] == [
        "      ... 187 more this violation names ...",
        "    >> #196      2.940 s  GET /v1/jobs/job_1 -> 200 'processing' (answered 2.945 s)",
    ]
    # the first list (seqs 0-19) is fed entry by entry; the one holding seq 202 is refused,
    # and the window is complete before the next
    assert offered == [(first, first + 19 < 202) for first in range(20, 201, 20)]


def test_lists_before_a_timeline_begins_are_taken_whole_and_leave_it_its_context() -> None:
    """Forty slow status reads (one each 2 s), then a burst of 11 that breaks the budget: the
    lists of slow reads are taken whole while the violation's window waits (its group keeps
    their last three and their count), and the timeline still opens with those three."""
    limits = Limits(status_rate=1.0).to_dict()
    slow = [_read(2 + k, 1.0 + 2 * k, 1.5 + 2 * k) for k in range(40)]
    burst = [_read(42 + k, 100.0 + 0.05 * k, 100.02 + 0.05 * k) for k in range(11)]
    journal = [
        _admin(0, "/__admin/start", {"scenario": "a", "limits": limits}),
        OVERLAPPING[1],
        *slow,
        *burst,
    ]
    found = check_stream(in_seq_order(journal), _limits_of, timelines=True)
    (v,) = found.violations
    assert min(v.seqs) == 42
    with mock.patch.object(_stream, "_BULK", 5):
        text, offered = _drawn_in_lists(found, journal, 5)
    assert text == render_streamed(found, lambda: in_seq_order(journal))
    assert _timeline_lines(text)[1:5] == [
        "      ...",
        "       #39      75.000 s  GET /v1/jobs/job_1 -> 200 'processing' (answered 75.500 s)",
        "       #40      77.000 s  GET /v1/jobs/job_1 -> 200 'processing' (answered 77.500 s)",
        "       #41      79.000 s  GET /v1/jobs/job_1 -> 200 'processing' (answered 79.500 s)",
    ]
    # every list of slow reads after the first is taken whole; the one holding seq 42 is not
    assert offered[:8] == [(first, first + 4 < 42) for first in range(5, 41, 5)]


@st.composite
def numbered(draw: st.DrawFn) -> list[Entry]:
    """Entries as ordering reads them, by their seqs and run headers alone (cheaper to draw
    than judged journals): one to three parts, each from a run header numbered 0 (the first
    part's may have none), seqs following on with a gap here and there."""
    out: list[Entry] = []
    for part in range(draw(st.integers(1, 3))):
        if part or draw(st.booleans()):
            out.append(_admin(0, "/__admin/start", {"scenario": "a", "limits": {}}))
        seq = 0
        for _ in range(draw(st.integers(0, 12))):
            seq += draw(st.sampled_from((1, 1, 1, 2)))
            out.append(_read(seq, float(seq), float(seq)))
    return out


@thorough(150, deadline=None)
@given(numbered(), st.randoms(use_true_random=False), st.integers(1, 8))
def test_entries_put_back_in_seq_order_are_order_entries_or_refused(
    entries: list[Entry], random: object, window: int
) -> None:
    shuffled = list(entries)
    # nudge a few entries out of place, as concurrent answers complete out of seq order
    for _ in range(len(shuffled) // 4):
        i = random.randrange(len(shuffled))
        j = min(len(shuffled) - 1, i + random.randrange(4))
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    try:
        got = list(in_seq_order(shuffled, window))
    except Unordered:
        return
    assert got == order_entries(shuffled)


@thorough(150, deadline=None)
@given(numbered(), st.randoms(use_true_random=False), st.integers(1, 8), st.data())
def test_entries_put_in_order_a_list_at_a_time_are_those_put_in_order_one_by_one(
    entries: list[Entry], random: Any, window: int, data: st.DataObject
) -> None:
    """``in_seq_order_batches`` over the entries cut into lists at random (empty ones too)
    gives what ``in_seq_order`` gives, the same entries before the same ``Unordered``; a list
    in seq order following on from the last is given as it is."""
    shuffled = list(entries)
    for _ in range(data.draw(st.sampled_from((0, len(shuffled) // 4, len(shuffled))))):
        i = random.randrange(len(shuffled))
        j = min(len(shuffled) - 1, i + random.randrange(window + 2))
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    if shuffled and data.draw(st.booleans()):  # a gap, a repeated seq, a second part's header
        i = random.randrange(len(shuffled))
        shuffled[i] = dataclasses.replace(shuffled[i], seq=data.draw(st.sampled_from((0, 2))))
    cuts = sorted(random.choices(range(len(shuffled) + 1), k=random.randrange(8)))
    batches = [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]
    expected: list[object] = []
    try:
        expected.extend(in_seq_order(shuffled, window))
    except Unordered as exc:
        expected.append(str(exc))
    got: list[object] = []
    given: list[list[Entry]] = []
    try:
        for batch in in_seq_order_batches(batches, window):
            given.append(batch)
            got.extend(batch)
    except Unordered as exc:
        got.append(str(exc))
    assert got == expected
    assert all(given)  # no empty list given
    if entries and not any(e.seq == 0 for e in shuffled[1:]) and shuffled == entries:
        # in seq order already: every list but the first (and those of repeated seqs) as given
        as_is = {id(batch) for batch in batches}
        ordered = [e.seq for e in entries]
        if ordered == list(range(ordered[0], ordered[0] + len(ordered))):
            assert all(id(batch) in as_is for batch in given[1:])


def test_a_list_in_seq_order_is_given_as_it_is_and_a_list_out_of_order_is_put_in_order() -> None:
    header = _admin(0, "/__admin/start", {"scenario": "a", "limits": Limits().to_dict()})
    reads = [_read(seq, float(seq), float(seq)) for seq in range(1, 9)]
    first, second, third = [header, *reads[:3]], reads[3:6], [reads[7], reads[6]]
    given = list(in_seq_order_batches([first, second, [], third]))
    assert given[1] is second
    assert [[e.seq for e in batch] for batch in given] == [[0, 1, 2, 3], [4, 5, 6], [7, 8]]
    with pytest.raises(Unordered, match=r"^seq 3 after seq 6$"):
        list(in_seq_order_batches([first, second, [reads[2]]]))


def test_a_missing_seq_that_turns_up_past_the_window_is_refused() -> None:
    entries = [_admin(n, "/__admin/x", None) for n in (1, 3, 4, 5, 2)]
    assert [e.seq for e in in_seq_order(entries, window=8)] == [1, 2, 3, 4, 5]
    with pytest.raises(Unordered, match=r"^seq 2 after seq 5$"):
        list(in_seq_order(entries, window=2))


@thorough(300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=40),
    st.integers(-1, 12),
)
def test_the_first_violations_found_are_those_nsmallest_picks_and_every_rule_is_counted(
    keys: list[tuple[int, int]], wanted: int
) -> None:
    found = [(seq, rule, _judges.violation, (n,)) for n, (seq, rule) in enumerate(keys)]
    tally, low = [0] * 4, [0] * 4
    chosen = _stream._first(iter(found), wanted, tally, low)
    assert chosen == (heapq.nsmallest(wanted, found, key=lambda f: f[:2]) if wanted > 0 else [])
    assert tally == [sum(1 for _, rule in keys if rule == r) for r in range(4)]
    assert low == [min((seq for seq, rule in keys if rule == r), default=0) for r in range(4)]


@thorough(200, deadline=None)
@given(runs(), LIMITS)
def test_a_judge_quiet_by_its_state_finds_nothing(run: list[Entry], limits: Limits) -> None:
    judges: dict[str, _judges.ClientJudge] = {}
    hooks: dict[str, list[tuple[float, str | None]]] = {}
    for e in run:
        if e.kind == "webhook":
            if e.job_id is not None and _rules.told(e):
                hooks.setdefault(e.job_id, []).append((e.received_at, e.event))
            continue
        judges.setdefault(e.client, _judges.ClientJudge(limits, bounded=True)).add(e)
    for judge in judges.values():
        if _stream._quiet(judge):
            assert list(judge.iter_found(hooks)) == []


def _run_check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@thorough(
    60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    entries=journals(),
    fmt=st.sampled_from(FORMATS),
    options=st.sampled_from(
        (
            [],
            ["--deadline", "2"],
            ["--max-violations", "0"],
            ["--max-violations", "1"],
            ["--max-violations", "3"],
            ["--scenario", "x"],
        )
    ),
)
def test_check_prints_what_it_printed_when_it_held_the_whole_journal(
    entries: list[Entry],
    fmt: str,
    options: list[str],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = Path(tmp_path_factory.mktemp("journal")) / "run.jsonl"
    path.write_text("".join(jsonl_line(e) + "\n" for e in entries))
    argv = ["check", str(path), "--format", fmt, *options]
    streamed = _run_check(argv, capsys)
    with monkeypatch.context() as patched:
        patched.setattr(_check_cli, "judge_streamed", lambda journal, args, shown: None)
        in_memory = _run_check(argv, capsys)
    assert streamed == in_memory


# -- the file read twice: pipes, and a journal that changes under the check ----------------------


def _read(seq: int, received: float, completed: float) -> Entry:
    return Entry(
        seq=seq,
        kind="status",
        job_id="job_1",
        method="GET",
        path="/v1/jobs/job_1",
        client="c",
        received_at=received,
        response_started_at=completed,
        completed_at=completed,
        status_code=200,
        job_status="processing",
    )


#: A run whose two status reads overlap: one violation, shown with its job's timeline.
OVERLAPPING = [
    _admin(0, "/__admin/start", {"scenario": "a", "limits": Limits().to_dict()}),
    Entry(
        seq=1,
        kind="submit",
        job_id="job_1",
        method="POST",
        path="/v1/jobs",
        client="c",
        received_at=0.0,
        response_started_at=0.01,
        completed_at=0.01,
        status_code=202,
        job_status="queued",
    ),
    _read(2, 1.0, 2.0),
    _read(3, 1.5, 2.5),
]


def test_the_timelines_pass_stops_reading_once_every_window_shown_is_complete() -> None:
    later = [_read(seq, seq * 10.0, seq * 10.0 + 1) for seq in range(4, 104)]
    journal = [*OVERLAPPING, *later]
    report = check_stream(in_seq_order(journal), _limits_of)
    read: list[int] = []

    def entries() -> Iterator[Entry]:
        for e in in_seq_order(journal):
            read.append(e.seq)
            yield e

    text = render_streamed(report, entries)
    assert text == check(journal, run_limits=[_limits_of(h) for h in report.headers]).render()
    assert "timeline of job job_1" in text
    # the violation names #2 and #3; #4 to #6 fill its window, #7 shows there was more (known
    # once #8 closes the group of seq 7): the remaining 95 reads are never read
    assert read == [0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_the_timelines_pass_stops_past_the_last_request_about_the_jobs_shown() -> None:
    """The job shown is not asked about again: the first pass noted its last request, so the
    second stops at the first entry past it instead of reading the rest of the file for three
    more about it."""
    others = [
        dataclasses.replace(_read(seq, seq * 10.0, seq * 10.0 + 1), job_id="job_2")
        for seq in range(4, 104)
    ]
    journal = [*OVERLAPPING, *others]
    report = check_stream(in_seq_order(journal), _limits_of)
    read: list[int] = []

    def entries() -> Iterator[Entry]:
        for e in in_seq_order(journal):
            read.append(e.seq)
            yield e

    text = render_streamed(report, entries, 1)
    expected = check(journal, run_limits=[_limits_of(h) for h in report.headers])
    assert text == expected.render(1)
    assert "timeline of job job_1" in text
    assert read == [0, 1, 2, 3, 4]
    # not noted (a report for another format): the same text, from the whole file
    unnoted = check_stream(in_seq_order(journal), _limits_of, timelines=False)
    assert (unnoted.violations, unnoted.ends) == (report.violations, ())
    read.clear()
    assert render_streamed(unnoted, entries, 1) == text
    assert read == [e.seq for e in journal]


def _overlapping_reads(count: int) -> list[Entry]:
    """A job read by a client that asks again before each answer: every other read overlaps
    the one before it (a violation each), on one job, so all the windows share one group."""
    reads = []
    for n in range(count):
        at = n * 10.0 + (n % 2) * -9.5
        reads.append(_read(n + 2, at, at + 1.0))
    return [*OVERLAPPING[:2], *reads]


def test_the_timelines_pass_feeds_each_entry_to_the_windows_open_at_it_not_to_every_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Shown all (``--max-violations 0``), the violations of one job each get their window,
    and an entry is fed only to those open at its seq: the feeds grow with the entries, not
    with entries times violations."""
    journal = _overlapping_reads(400)
    report = check_stream(in_seq_order(journal), _limits_of)
    assert report.total >= 150
    fed = 0
    add = _stream._Window.add

    def counted(window: Any, e: Entry, in_group: bool) -> None:
        nonlocal fed
        fed += 1
        add(window, e, in_group)

    monkeypatch.setattr(_stream._Window, "add", counted)
    text = render_streamed(report, lambda: in_seq_order(journal), 0)
    expected = check(journal, run_limits=[_limits_of(h) for h in report.headers])
    assert text == expected.render(0)
    assert fed <= 8 * len(journal)


def _rate_burst(reads: int, budget: float = 2.0) -> list[Entry]:
    """A run allowing ``budget`` status reads a second and a client reading ``reads`` times,
    ``1 / budget / 5`` s apart (within 10 s): its read 10 x ``budget`` + 1 breaks the budget,
    a status_rate violation naming every read so far."""
    limits = Limits(status_rate=budget).to_dict()
    gap = 0.2 / budget
    burst = [_read(2 + k, 1.0 + k * gap, 1.0 + k * gap + gap / 2) for k in range(reads)]
    return [
        _admin(0, "/__admin/start", {"scenario": "a", "limits": limits}),
        OVERLAPPING[1],
        *burst,
    ]


def _timeline_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if "timeline of" in line)
    return lines[start : lines.index("", start)]


def test_a_violation_naming_many_reads_shows_its_first_and_last_seven_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = _rate_burst(30)
    path = tmp_path / "run.jsonl"
    path.write_bytes(_journal(journal))
    code, out, _ = _run_check(["check", str(path)], capsys)
    assert code == 1
    read = "GET /v1/jobs/job_1 -> 200 'processing'"
    assert _timeline_lines(out) == [
        "    timeline of status reads for client 'c':",
        *(
            f"    >> #{seq:<4} {1.0 + (seq - 2) * 0.1:>9.3f} s  {read}"
            f" (answered {1.05 + (seq - 2) * 0.1:.3f} s)"
            for seq in range(2, 9)
        ),
        "      ... 7 more this violation names ...",
        *(
            f"    >> #{seq:<4} {1.0 + (seq - 2) * 0.1:>9.3f} s  {read}"
            f" (answered {1.05 + (seq - 2) * 0.1:.3f} s)"
            for seq in range(16, 23)
        ),
        "      ...",
    ]
    # the report held in memory prints the same
    limits = Limits(status_rate=2.0)
    assert out == check(journal, limits, run_limits=[limits]).render() + "\n"


def test_the_timelines_pass_keeps_what_a_timeline_prints_not_every_entry_it_names() -> None:
    reads = 20_001
    journal = _rate_burst(reads, budget=(reads - 1) / 10)
    found = check_stream(in_seq_order(journal), _limits_of, shown=1, timelines=True)
    assert [len(v.seqs) for v in found.violations] == [reads]
    tracemalloc.start()
    try:
        text = render_streamed(found, lambda: in_seq_order(journal), 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(_timeline_lines(text)) == 1 + 7 + 1 + 7
    assert f"      ... {reads - 14:,} more this violation names ..." in text
    # 2.6 MB at 20,000 reads as at 50,000 (11.6 MB and 23 MB when every one named was kept)
    assert peak < 5_000_000


def _journal(entries: list[Entry]) -> bytes:
    return "".join(jsonl_line(e) + "\n" for e in entries).encode()


def _check_piped(content: bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as pipe:
            pipe.write(content)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        found = _run_check(["check", f"/dev/fd/{read}"], capsys)
    finally:
        feeder.join()
        os.close(read)
    return found[0], found[1], found[2].replace(f"/dev/fd/{read}", "run.jsonl")


def _check_file(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    path = tmp_path / "run.jsonl"
    path.write_bytes(content)
    code, out, err = _run_check(["check", str(path)], capsys)
    return code, out, err.replace(str(path), "run.jsonl")


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd")
@pytest.mark.parametrize(
    "entries",
    [OVERLAPPING, [OVERLAPPING[1], OVERLAPPING[0], *OVERLAPPING[2:]]],
    ids=["in-order", "header-after-an-entry"],
)
def test_a_journal_piped_in_gets_the_report_of_the_same_file(
    entries: list[Entry], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from_file = _check_file(tmp_path, _journal(entries), capsys)
    assert from_file[0] == 1
    assert "timeline of job job_1" in from_file[1]
    assert _check_piped(_journal(entries), capsys) == from_file


def _on_stdin(monkeypatch: pytest.MonkeyPatch, content: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(content)))


@pytest.fixture
def copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the temporary files go to (``TMPDIR``), empty."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _not_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_check_cli, "judge", lambda *args, **kwargs: pytest.fail("read whole"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_journal_on_standard_input_is_copied_and_judged_as_it_streams_not_read_whole(
    fmt: str,
    tmp_path: Path,
    copies: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(_journal(OVERLAPPING))
    from_file = _run_check(["check", str(path), "--format", fmt], capsys)
    _on_stdin(monkeypatch, _journal(OVERLAPPING))
    _not_read_whole(monkeypatch)
    assert _run_check(["check", "-", "--format", fmt], capsys) == from_file
    assert from_file[0] == 1
    assert list(copies.iterdir()) == []  # the copy is gone


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd")
def test_a_journal_piped_in_by_path_is_copied_and_judged_as_it_streams(
    tmp_path: Path,
    copies: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from_file = _check_file(tmp_path, _journal(OVERLAPPING), capsys)
    _not_read_whole(monkeypatch)
    assert _check_piped(_journal(OVERLAPPING), capsys) == from_file
    assert list(copies.iterdir()) == []


def test_a_journal_on_standard_input_too_far_out_of_order_is_read_whole_from_its_copy(
    tmp_path: Path,
    copies: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(_journal(OVERLAPPING))
    monkeypatch.setattr(_check_cli, "judge_streamed", lambda journal, args, shown: None)
    from_file = _run_check(["check", str(path)], capsys)
    _on_stdin(monkeypatch, _journal(OVERLAPPING))
    assert _run_check(["check", "-"], capsys) == from_file
    assert list(copies.iterdir()) == []


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "read-whole"])
def test_a_bad_line_on_standard_input_is_named_as_standard_inputs(
    streamed: bool,
    copies: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not streamed:
        monkeypatch.setattr(_check_cli, "judge_streamed", lambda journal, args, shown: None)
    _on_stdin(monkeypatch, _journal(OVERLAPPING[:2]) + b'{"seq": 2, "kind": "status"}\n')
    assert _run_check(["check", "-"], capsys) == (
        2,
        "",
        "fakeprovider check: <stdin>:5: method: missing; every entry has seq, kind, method,"
        " path, client and received_at\n",
    )
    assert list(copies.iterdir()) == []


def test_standard_input_that_cannot_be_copied_is_refused_with_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    _on_stdin(monkeypatch, _journal(OVERLAPPING))
    assert _run_check(["check", "-"], capsys) == (
        2,
        "",
        "fakeprovider check: cannot copy standard input to a temporary file, to judge it in"
        " bounded memory: No such file or directory; set TMPDIR to a folder with room, or give"
        " a regular file's path\n",
    )


def test_standard_input_that_cannot_be_read_is_refused_as_before(
    copies: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(Failing())))
    assert _run_check(["check", "-"], capsys) == (
        2,
        "",
        "fakeprovider check: cannot read -: Input/output error\n",
    )
    assert list(copies.iterdir()) == []


class _Chunks(io.RawIOBase):
    """A stream that hands over ``chunks`` one read at a time, then fails the next read."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.reads += 1
        if not self.chunks:
            raise AssertionError("read past the end")
        chunk = self.chunks.pop(0)
        buffer[: len(chunk)] = chunk
        return len(chunk)


def test_a_bad_first_line_on_standard_input_is_told_before_the_rest_is_read(
    copies: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``yes | fakeprovider check -`` ends at once, as when standard input was read whole."""
    stream = _Chunks([b"y\ny\ny\n"])  # and nothing after: a read past it fails the test
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(stream)))
    assert _run_check(["check", "-"], capsys) == (
        2,
        "",
        "fakeprovider check: <stdin>:1: not JSON (Expecting value at column 1); each line must"
        " be one journal entry\n",
    )
    assert stream.reads == 1
    assert list(copies.iterdir()) == []


def test_a_copy_that_cannot_be_written_is_refused_with_what_to_do() -> None:
    class Full(io.BytesIO):
        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    tee = _check_cli._Tee(io.BytesIO(b"{}\n"), Full(), "standard input", "prog")
    with pytest.raises(_check_cli.BadInput) as refused:
        tee.read(10)
    assert str(refused.value) == (
        "prog: cannot copy standard input to a temporary file, to judge it in bounded memory:"
        " No space left on device; set TMPDIR to a folder with room, or give a regular file's"
        " path"
    )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_standard_input_that_is_a_file_unread_yet_is_streamed_from_it_without_a_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(_journal(OVERLAPPING))
    from_file = _run_check(["check", str(path)], capsys)
    _not_read_whole(monkeypatch)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", lambda **kwargs: pytest.fail("copied"))
    with path.open("rb") as given:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(given))
        assert _run_check(["check", "-"], capsys) == from_file


@pytest.mark.parametrize("command", [["check", "-"], ["report", "-", "-o", "r.html"]])
def test_a_closed_standard_input_is_refused_in_one_line(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert _run_check(command, capsys) == (
        2,
        "",
        f"fakeprovider {command[0]}: cannot read -: standard input is closed\n",
    )


def test_sigterm_while_standard_input_is_copied_removes_the_copy(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "fakeprovider", "check", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(folder)},
    )
    assert child.stdin is not None
    assert child.stderr is not None
    try:
        child.stdin.write(_journal(OVERLAPPING))  # and more to come: the copy waits for it
        child.stdin.flush()
        deadline = time.monotonic() + 60
        while not list(folder.glob("*/journal.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(folder.glob("*/journal.jsonl")), "no copy was made"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 128 + signal.SIGTERM
        assert child.stderr.read() == b""
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stderr.close()
    assert list(folder.iterdir()) == []


def test_check_run_as_the_program_removes_its_copy_of_standard_input_before_it_ends(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    child = subprocess.run(
        [sys.executable, "-m", "fakeprovider", "check", "-"],
        input=_journal(OVERLAPPING),
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "TMPDIR": str(folder)},
    )
    assert (child.returncode, child.stderr) == (1, b"")
    assert b"timeline of job job_1" in child.stdout
    assert list(folder.iterdir()) == []


def test_lines_appended_while_the_check_runs_are_neither_judged_nor_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _check_file(tmp_path / "..", _journal(OVERLAPPING), capsys)
    path = tmp_path / "live.jsonl"
    path.write_bytes(_journal(OVERLAPPING))
    judge = _check_cli.judge_streamed

    def judge_then_append(journal: Any, args: Any, shown: int | None) -> Any:
        found = judge(journal, args, shown)
        with path.open("ab") as server:  # a server goes on writing: a later read, half a line
            server.write(_journal([_read(4, 3.0, 3.5)]) + b'{"seq":5,"kind":"sta')
        return found

    monkeypatch.setattr(_check_cli, "judge_streamed", judge_then_append)
    code, out, err = _run_check(["check", str(path)], capsys)
    assert (code, out, err) == expected
    assert "#4" not in out


def test_a_journal_replaced_while_the_check_runs_is_refused_not_misreported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(_journal(OVERLAPPING))
    judge = _check_cli.judge_streamed

    def judge_then_replace(journal: Any, args: Any, shown: int | None) -> Any:
        found = judge(journal, args, shown)
        fresh = tmp_path / "fresh.jsonl"
        fresh.write_bytes(_journal(OVERLAPPING[:2]))
        os.replace(fresh, path)  # log rotation, say
        return found

    monkeypatch.setattr(_check_cli, "judge_streamed", judge_then_replace)
    code, out, err = _run_check(["check", str(path)], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"fakeprovider check: {path} changed while it was being checked (replaced, truncated"
        " or rewritten); check a copy of it\n"
    )


def test_a_read_far_back_past_the_reads_kept_is_judged_again_keeping_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = Limits(status_rate=20.0, status_rate_window=1.0)
    journal = [
        _admin(0, "/__admin/start", {"scenario": "a", "limits": limits.to_dict()}),
        *(_read(seq, seq / 10, seq / 10 + 0.01) for seq in range(1, 1001)),
        _read(1001, 5.0, 5.01),  # its window reaches back past the reads let go
    ]
    monkeypatch.setattr(_judges, "KEEP_GONE", 8)
    passes: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        passes.append(kwargs.get("keep_gone", 0))
        return check_stream(*args, **kwargs)

    monkeypatch.setattr(_stream, "check_stream", counted)
    streamed = _check_file(tmp_path, _journal(journal), capsys)
    assert passes == [0, sys.maxsize]
    with monkeypatch.context() as patched:
        patched.setattr(_check_cli, "judge_streamed", lambda journal, args, shown: None)
        in_memory = _check_file(tmp_path, _journal(journal), capsys)
    assert streamed == in_memory
    assert streamed[0] == 1
    assert "status_rate 1" in streamed[1]


def test_a_check_that_holds_its_judges_finds_the_same_and_lets_none_go() -> None:
    """``hold`` (what ``fakeprovider check`` run as the program asks for, to leave freeing to
    the process's end) keeps the last run's judges in the report and changes nothing else."""
    others = [
        dataclasses.replace(_read(seq, seq * 10.0, seq * 10.0 + 1), client=f"c{seq % 3}")
        for seq in range(4, 40)
    ]
    second = _admin(0, "/__admin/start", {"scenario": "b", "limits": Limits().to_dict()})
    journal = [*OVERLAPPING, *others, second, *OVERLAPPING[1:]]
    freed = check_stream(in_seq_order(journal), _limits_of)
    held = check_stream(in_seq_order(journal), _limits_of, hold=True)
    assert held == freed
    assert (held.ends, held.metrics, held.coverage, held.warnings, held.summary) == (
        freed.ends,
        freed.metrics,
        freed.coverage,
        freed.warnings,
        freed.summary,
    )
    assert render_streamed(held, lambda: in_seq_order(journal)) == render_streamed(
        freed, lambda: in_seq_order(journal)
    )
    assert freed.held == ()
    assert [list(run.clients) for run in held.held] == [["c"]]  # the last run's, not the first's
    assert all(
        type(judge) is _judges.ClientJudge for run in held.held for judge in run.clients.values()
    )
    assert [[list(jobs) for jobs in run.job_maps] for run in held.held] == [[["job_1"]]]
    # let go before a large report is made (``_check_cli._let_go``): the report is unchanged
    text = render_streamed(held, lambda: in_seq_order(journal))
    _check_cli._let_go(held)
    assert [(run.clients, run.job_maps) for run in held.held] == [({}, [])]
    assert render_streamed(held, lambda: in_seq_order(journal)) == text
    assert held.metrics == freed.metrics


def test_a_check_that_holds_its_judges_holds_no_more_at_once_for_many_runs() -> None:
    """Only the last run is held: a run's state is let go as the next run begins, so the
    memory a journal of many runs takes at its peak is that of one run, as without ``hold``."""

    def runs(count: int) -> list[Entry]:
        out: list[Entry] = []
        for _ in range(count):
            out.append(_admin(0, "/__admin/start", {"scenario": "a", "limits": {}}))
            out.extend(
                dataclasses.replace(_read(seq, seq * 1.0, seq * 1.0 + 0.5), client=f"c{seq}")
                for seq in range(1, 301)
            )
        return out

    def peak(journal: list[Entry], hold: bool) -> int:
        tracemalloc.start()
        try:
            report = check_stream(in_seq_order(journal), _limits_of, hold=hold)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            del report

    one, many = runs(1), runs(8)
    assert peak(many, hold=True) < 1.5 * peak(one, hold=True)
    assert peak(many, hold=True) < 1.5 * peak(many, hold=False)


# -- what check printed before: the benchmark's shapes, by the digests of 672e8aa's output ---------

#: The options ``bench_check_scaling.py`` checks its shapes with (its ``CHECK_OPTIONS``).
BENCHMARK_OPTIONS = ("--deadline", "1h", "--status-rate", "1000")

#: ``fakeprovider check``'s exit code, standard output and error (sha256, first 16 hex digits)
#: on ``benchmarks/bench_check_scaling.py``'s shapes at N entries (the first ``cut`` of them
#: when set: jobs left after a failed read, sources of a Retry-After still pending), as the
#: check printed them at 672e8aa, before its judges kept a failed read or a Retry-After source
#: as a ``_judges.Held`` instead of the entry and one string per job status.
PRINTED_BEFORE = [
    ("tight-poller", 2400, None, BENCHMARK_OPTIONS, "c7d56fc44bb53880"),
    ("tight-poller", 2400, None, (*BENCHMARK_OPTIONS, "--json"), "21e240b52b1800da"),
    ("resubmitter", 2400, None, BENCHMARK_OPTIONS, "57118e2b74ed173b"),
    ("resubmitter", 2400, None, (*BENCHMARK_OPTIONS, "--json"), "3258ddb3e4145fe9"),
    ("many-jobs", 2400, None, BENCHMARK_OPTIONS, "7debecc872376e52"),
    ("many-jobs", 2400, None, (*BENCHMARK_OPTIONS, "--json"), "a326e966da205eae"),
    ("many-clients", 2400, None, BENCHMARK_OPTIONS, "5c4a3434fb52f0d1"),
    ("many-clients", 2400, None, (*BENCHMARK_OPTIONS, "--json"), "24e41540e5102217"),
    ("retry-storm", 2400, None, BENCHMARK_OPTIONS, "218085d2a5ff37f1"),
    ("retry-storm", 2400, None, (*BENCHMARK_OPTIONS, "--json"), "051a4f7a4bc47e3c"),
    ("auth-churn", 2400, None, BENCHMARK_OPTIONS, "f41db2d25294a804"),
    ("auth-churn", 2400, None, (*BENCHMARK_OPTIONS, "--json"), "a40cb0d8547e947d"),
    ("many-jobs", 2400, 1000, (), "7e12d68db5279cef"),
    (
        "many-jobs",
        2400,
        1000,
        ("--retry-after-scope", "account", "--max-violations", "5"),
        "43d1e7de687fb039",
    ),
    (
        "many-jobs",
        2400,
        1000,
        ("--retry-after-scope", "account", "--format", "junit"),
        "57ed8f30046a610f",
    ),
    (
        "retry-storm",
        600,
        None,
        ("--retry-after-scope", "account", "--date-slack", "0", "--format", "github"),
        "0cc3f7104fda49f6",
    ),
    ("resubmitter", 600, None, ("--max-violations", "0"), "028c3880e5a98e5f"),
    (
        "many-clients",
        600,
        450,
        ("--deadline", "5", "--format", "github", "--max-violations", "0"),
        "666f0ad23cf5499b",
    ),
]


@pytest.mark.parametrize(("shape", "n", "cut", "options", "printed"), PRINTED_BEFORE)
def test_check_prints_on_each_benchmark_shape_what_it_printed_before(
    shape: str, n: int, cut: int | None, options: tuple[str, ...], printed: str, tmp_path: Path
) -> None:
    bench = load_script("bench_check_scaling")
    path = tmp_path / f"{shape}.jsonl"
    bench.write_journal(path, bench.SHAPES[shape](n)[:cut])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", str(path), *options])
    made = f"{code}\n{out.getvalue()}\0{err.getvalue()}".encode()
    assert hashlib.sha256(made).hexdigest()[:16] == printed
