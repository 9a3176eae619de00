"""The client invariants (docs/invariants.md), one pure function each.

Every rule takes the entries of one run of one client (sorted by ``seq``, admin and webhook
entries removed) and the limits, and yields ``Violation`` objects. ``webhook_ack`` takes the
webhook deliveries of a run instead. The definitions are written out in ``docs/invariants.md``;
each function's docstring is the short form.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .entries import EntryLike
from .http import DATE_FORMS
from .journal import Entry, RetryAfterRecord
from .scenario import TERMINAL_STATUSES

if TYPE_CHECKING:
    from .limits import Limits

__all__ = [
    "CLIENT_RULES",
    "EPSILON",
    "SUCCESS_STATUSES",
    "ClientEntries",
    "Violation",
    "describe",
    "fmt_time",
    "told",
    "was_sent",
    "webhook_ack",
    "webhook_url",
]

#: Float noise we forgive when comparing instants (clock readings are floats).
EPSILON = 1e-6
SUCCESS_STATUSES = frozenset({"succeeded", "completed_with_errors"})
_DATE_FORMS = frozenset(DATE_FORMS)
_NAMES = {
    "submit": "submit",
    "status": "status read",
    "content": "content fetch",
    "cancel": "cancel",
    "list": "list",
    "webhook": "webhook delivery",
}


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: which, for which job (None when it spans jobs), by which entries."""

    invariant: str
    job_id: str | None
    seqs: tuple[int, ...]
    message: str
    client: str
    #: Which run of the journal (0-based; a reset or scenario load starts a new run).
    run: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "invariant": self.invariant,
            "job_id": self.job_id,
            "seqs": list(self.seqs),
            "message": self.message,
            "client": self.client,
            "run": self.run,
        }


def fmt_time(seconds: float) -> str:
    return f"{seconds:.3f} s"


def describe(entry: EntryLike) -> str:
    """``status read #14 for job j_7``: what an entry was, for messages."""
    name = _NAMES.get(entry.kind, "request")
    if entry.kind in ("submit", "list") or entry.job_id is None:
        return f"{name} #{entry.seq}"
    return f"{name} #{entry.seq} for job {entry.job_id}"


def _answer(entry: EntryLike) -> str:
    return _answer_of(entry.status_code, entry.dropped)


def _answer_of(status_code: int | None, dropped: str | None) -> str:
    """``_answer`` of an entry with that status code and ``dropped``."""
    if status_code is None:
        return "a dropped connection" if dropped != "lose_response" else "a lost response"
    return str(status_code)


def _seen_at(entry: Entry) -> float:
    """When the client had the whole answer (the body), or never."""
    if entry.completed_at is not None:
        return entry.completed_at
    return math.inf


def _headers_at(entry: EntryLike) -> float:
    """When the client could first read the answer's headers, or never."""
    if entry.response_started_at is not None:
        return entry.response_started_at
    return math.inf


def _ok(entry: EntryLike) -> bool:
    return (
        entry.status_code is not None and 200 <= entry.status_code < 300 and entry.dropped is None
    )


def _by_job(
    entries: Sequence[Entry], kind: str | None = None, *, listed: bool = False
) -> dict[str, list[Entry]]:
    """Entries per job id, in order; with ``listed``, a list answer also counts as an entry
    of every job it showed (as that job, with the status it showed). Worked out once per
    ``ClientEntries`` (the caller must not change what it gets)."""
    if isinstance(entries, ClientEntries):
        return entries.by_job(kind, listed=listed)
    return _group_by_job(_with_listed(entries) if listed else entries, kind)


def _group_by_job(entries: Sequence[Entry], kind: str | None) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for e in entries:
        job_id = e.job_id
        if job_id is not None and (kind is None or e.kind == kind):
            group = out.get(job_id)
            if group is None:
                out[job_id] = [e]
            else:
                group.append(e)
    return out


def _with_listed(entries: Sequence[Entry]) -> Sequence[Entry]:
    """``entries`` with each list answer expanded into one entry per job it showed that the
    client otherwise knows (submitted or asked about): what the client saw of that job, since
    a reconciling client learns a job's status from the list. ``entries`` itself when no list
    answer showed a job (the caller must not change what it gets)."""
    if isinstance(entries, ClientEntries):
        return entries.with_listed()
    return _expand_listed(entries)


def _expand_listed(entries: Sequence[Entry]) -> Sequence[Entry]:
    if not any(e.listed and e.kind == "list" for e in entries):
        return entries
    known = {e.job_id for e in entries if e.job_id is not None}
    out: list[Entry] = []
    for e in entries:
        if e.kind == "list" and e.listed:
            out.extend(
                dataclasses.replace(e, job_id=job_id, job_status=status, listed=None)
                for job_id, status in e.listed
                if job_id in known
            )
        else:
            out.append(e)
    return out


class ClientEntries(list[Entry]):
    """The entries of one client in one run, with the groupings several rules share (per
    job, per job with list answers expanded, status reads per job), each worked out on first
    use and kept: the rules read them and never change them, nor the list itself."""

    __slots__ = ("_groups", "_listed")

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        super().__init__(entries)
        self._groups: dict[tuple[str | None, bool], dict[str, list[Entry]]] = {}
        self._listed: Sequence[Entry] | None = None

    def with_listed(self) -> Sequence[Entry]:
        if self._listed is None:
            self._listed = _expand_listed(self)
        return self._listed

    def by_job(self, kind: str | None = None, *, listed: bool = False) -> dict[str, list[Entry]]:
        key = (kind, listed)
        found = self._groups.get(key)
        if found is None:
            if listed and self.with_listed() is self:
                found = self.by_job(kind)  # no list answer to expand: the same grouping
            else:
                found = _group_by_job(self.with_listed() if listed else self, kind)
            self._groups[key] = found
        return found


#: A webhook send that is not a genuine message: a receiver must reject it with a 4xx.
_REJECT = frozenset({"forged", "stale"})


def webhook_url(entry: EntryLike) -> str:
    """The receiver URL a webhook entry went to, from its ``client`` (host:port) and ``path``.

    The journal does not keep the scheme; loopback receivers are plain HTTP, so it says http.
    """
    return f"http://{entry.client}{entry.path}"


def was_sent(entry: EntryLike) -> bool:
    """True for a webhook entry that stands for a real send: not a ``missing`` event (attempt
    0, nothing sent) and not a delivery refused because its host is not allowed."""
    return (
        entry.kind == "webhook"
        and entry.delivery != "missing"
        and entry.attempt != 0
        and entry.error_code != "host_not_allowed"
    )


def told(entry: EntryLike) -> bool:
    """True for a webhook entry that reached the receiver with a genuine message: sent, not
    forged or stale, and not lost to a connection error."""
    return (
        was_sent(entry) and entry.delivery not in _REJECT and entry.error_code != "connection_error"
    )


def _no_answer(entry: EntryLike) -> str:
    waited = fmt_time(entry.latency) if entry.latency is not None else "an unknown time"
    if entry.error_code == "timeout":
        return f"timed out after {waited} without an answer"
    return f"got no answer ({(entry.error_code or 'no response').replace('_', ' ')})"


# -- the rules ------------------------------------------------------------------------------


def no_overlap(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A status read of J received while an earlier read of J had not started its response.

    A read received between the previous read's response start and its completion is in the
    ambiguous window and not counted; a tie (received exactly at the start) is not an overlap.
    """
    for job_id, reads in _by_job(entries, "status").items():
        # The earlier reads still pending at read r are those whose response started (less
        # float noise) after r arrived; the latest of them is the one named.
        starts = _LatestAbove()
        for read in reads:
            index = starts.latest_above(read.received_at)
            if index is not None:
                prev = reads[index]
                yield Violation(
                    "no_overlap",
                    job_id,
                    (prev.seq, read.seq),
                    f"status read #{read.seq} for job {job_id} arrived at"
                    f" {fmt_time(read.received_at)} while read #{prev.seq} (received"
                    f" {fmt_time(prev.received_at)}) had not started its response",
                    read.client,
                )
            starts.push(_headers_at(read) - EPSILON)


class _LatestAbove:
    """Values pushed in order; ``latest_above(x)``: the index of the last one pushed that is
    greater than ``x``, or None. A stack of suffix maxima (each value hides every earlier one
    not greater than it), searched by bisection: amortised O(log n) per call."""

    def __init__(self) -> None:
        self._indexes: list[int] = []
        self._negated: list[float] = []  # -value, increasing from bottom to top
        self._count = 0

    def push(self, value: float) -> None:
        while self._negated and -self._negated[-1] <= value:
            self._negated.pop()
            self._indexes.pop()
        self._indexes.append(self._count)
        self._negated.append(-value)
        self._count += 1

    def latest_above(self, value: float) -> int | None:
        # values on the stack decrease from bottom to top: those > value are a bottom part
        above = bisect.bisect_left(self._negated, -value)
        return self._indexes[above - 1] if above else None


class _FirstAtLeast:
    """For values ``a[0..n)`` given at once: ``first(i, x)``, the smallest j > i with
    ``a[j] >= x``, or None. Queries must come with ``i`` decreasing (answered from a stack of
    prefix maxima of the suffix, built right to left): O(log n) each, amortised."""

    def __init__(self, values: Sequence[float]) -> None:
        self._values = values
        self._next = len(values) - 1  # the next index to take onto the stack
        self._indexes: list[int] = []
        self._negated: list[float] = []  # -value, increasing from bottom to top

    def first(self, index: int, value: float) -> int | None:
        while self._next > index:
            v = self._values[self._next]
            while self._negated and -self._negated[-1] <= v:
                self._negated.pop()
                self._indexes.pop()
            self._indexes.append(self._next)
            self._negated.append(-v)
            self._next -= 1
        # values on the stack decrease from bottom to top: those >= value are a bottom part
        count = bisect.bisect_right(self._negated, -value)
        return self._indexes[count - 1] if count else None


def _retrieval(entry: Entry) -> bool:
    """A successful answer that handed the client the result: a content download, or an
    answer that carried the result inline (``inline_result``)."""
    return _ok(entry) and (entry.kind == "content" or entry.inline_result is True)


def _got(entry: EntryLike) -> str:
    """How ``entry`` retrieved the result, for messages."""
    return "downloaded the result" if entry.kind == "content" else "received the result inline"


def single_retrieval(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """J's result is retrieved at most ``retrievals`` times (default once), and exactly that
    many times when ``retrievals`` is set and the client saw J succeed. A retrieval is a
    successful content fetch, or an answer that carried the result inline (so re-reading a
    finished job whose video comes inline is a second retrieval)."""
    allowed = 1 if limits.retrievals is None else limits.retrievals
    for job_id, job_entries in _by_job(entries, listed=True).items():
        fetched = [e for e in job_entries if _retrieval(e)]
        if len(fetched) > allowed:
            extra = fetched[allowed]
            head = f"{describe(extra)} at {fmt_time(extra.received_at)} {_got(extra)}"
            if allowed == 0:
                message = f"{head}, but no retrieval was expected"
            else:
                first = fetched[0]
                times = "once" if allowed == 1 else f"{allowed} times"
                message = (
                    f"{head} again; #{first.seq} had already retrieved it"
                    f" at {fmt_time(first.received_at)} and it may be fetched {times}"
                )
            seqs = (*(e.seq for e in fetched[:allowed]), extra.seq)
            yield Violation("single_retrieval", job_id, seqs, message, extra.client)
        elif limits.retrievals is not None and len(fetched) < limits.retrievals:
            shown = [e for e in job_entries if e.job_status in SUCCESS_STATUSES]
            if shown:
                saw = shown[0]
                yield Violation(
                    "single_retrieval",
                    job_id,
                    (saw.seq, *(e.seq for e in fetched)),
                    f"job {job_id} was shown {saw.job_status!r} by #{saw.seq} at"
                    f" {fmt_time(_seen_at(saw))} but its content was retrieved {len(fetched)}"
                    f" time(s); expected {limits.retrievals}",
                    saw.client,
                )


def no_premature_retrieval(
    entries: Sequence[Entry], limits: Limits, webhooks: Sequence[Entry] = ()
) -> Iterator[Violation]:
    """A content fetch of J received before any response (a status read, a list, the submit)
    or webhook had shown J succeeded. An answer that carries the result inline shows J
    succeeded itself, so it is never premature."""
    notified: dict[str, float] = {}  # job -> first genuine success webhook
    for w in webhooks:
        if (
            w.job_id is not None
            and told(w)
            and (w.event or "").removeprefix("job.") in SUCCESS_STATUSES
        ):
            notified[w.job_id] = min(w.received_at, notified.get(w.job_id, math.inf))
    for job_id, job_entries in _by_job(entries, listed=True).items():
        told_at = notified.get(job_id, math.inf)
        # Over the entries before each fetch: the earliest moment one of them showed success,
        # and the last one that showed a status (entries of one seq, a list, come together).
        success_seen = math.inf
        last_shown: Entry | None = None
        pending: list[Entry] = []  # entries of the current seq, not yet "before"
        for e in job_entries:
            if pending and pending[0].seq != e.seq:
                for p in pending:
                    if p.job_status in SUCCESS_STATUSES:
                        success_seen = min(success_seen, _seen_at(p))
                    if p.job_status is not None:
                        last_shown = p
                pending = []
            pending.append(e)
            if e.kind != "content":
                continue
            if success_seen <= e.received_at + EPSILON or told_at <= e.received_at:
                continue
            last = (
                f"the last status it had seen was {last_shown.job_status!r} (#{last_shown.seq})"
                if last_shown is not None
                else "it had seen no status of the job"
            )
            yield Violation(
                "no_premature_retrieval",
                job_id,
                (*((last_shown.seq,) if last_shown is not None else ()), e.seq),
                f"content fetch #{e.seq} for job {job_id} at {fmt_time(e.received_at)}"
                f" came before the client could have seen the job succeed; {last}",
                e.client,
            )
            break


def bounded_retries(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """More than ``max_retries`` retries after consecutive failed attempts (5xx, 429, dropped,
    or refused with a 4xx other than 401/403) on the same job and route; submits are keyed by
    their request body instead of a job."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        key = e.request_digest if e.kind == "submit" else e.job_id
        if key is not None:
            groups.setdefault((e.kind, key), []).append(e)
    for (_kind, key), attempts in groups.items():
        failures: list[Entry] = []
        for attempt in attempts:
            if len(failures) > limits.max_retries:
                job_id = attempt.job_id if attempt.kind != "submit" else None
                yield Violation(
                    "bounded_retries",
                    job_id,
                    (*(f.seq for f in failures), attempt.seq),
                    f"{describe(attempt)} at {fmt_time(attempt.received_at)} was retry"
                    f" {len(failures)} after {len(failures)} consecutive failed attempts"
                    f" (#{failures[0].seq} to #{failures[-1].seq}); max_retries is"
                    f" {limits.max_retries}",
                    attempt.client,
                )
                break
            if _unsuccessful(attempt):
                failures.append(attempt)
            else:
                failures = []
        del key


def _unsuccessful(entry: Entry) -> bool:
    """A failed attempt (5xx, 429, dropped), or a request refused with a 4xx other than
    401/403 (those are ``no_retry_on_auth_error``'s): sending it again gets the same answer."""
    code = entry.status_code
    return entry.failed or (code is not None and 400 <= code < 500 and code not in (401, 403))


#: The engine's error code for a submit refused by the cap on active jobs (``concurrency:``).
_TOO_MANY_JOBS = "too_many_active_jobs"


def _scope(entry: EntryLike, limits: Limits) -> str:
    return _scope_of(entry.status_code, entry.kind, entry.error_code, limits)


def _scope_of(status_code: int | None, kind: str, error_code: str | None, limits: Limits) -> str:
    """``_scope`` of an entry with that status code, kind and error code."""
    if limits.retry_after_scope != "auto":
        return limits.retry_after_scope
    if status_code == 429 and kind == "submit" and error_code == _TOO_MANY_JOBS:
        # "too many jobs running": wait before the next new job, and keep watching the running
        # ones (only that tells the client when one has ended)
        return "submits"
    return "account" if status_code == 429 else "job"


def honours_retry_after(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A request in the scope of a Retry-After, sent after its headers arrived, received before
    its ``not_before`` (minus 1 s of slack for HTTP-dates, float noise for delay-seconds)."""
    # Each Retry-After is judged against the first request in its scope sent after its headers
    # arrived. The entries in one scope form a group; within a group that request is found by
    # ``_FirstAtLeast`` (sources taken last to first), so the rule stays O(n log n).
    sources: list[tuple[int, Entry, RetryAfterRecord, str]] = []
    for index, source in enumerate(entries):
        record = source.retry_after
        if record is not None and record.not_before is not None:
            sources.append((index, source, record, _scope(source, limits)))
    if not sources:
        return
    wanted = {_scope_kind(source, scope) for _, source, _, scope in sources}
    groups: dict[tuple[object, ...], list[int]] = {}
    for index, e in enumerate(entries):
        for kind in wanted:
            key = _scope_key(e, kind)
            if key is not None:
                groups.setdefault(key, []).append(index)
    by_group: dict[tuple[object, ...], list[tuple[int, Entry, RetryAfterRecord, str]]] = {}
    for item in sources:
        _, source, _, scope = item
        key = _scope_key(source, _scope_kind(source, scope))
        assert key is not None  # a source is in its own scope
        by_group.setdefault(key, []).append(item)
    found: list[tuple[int, Violation]] = []
    for key, items in by_group.items():
        members = groups[key]
        position = {index: p for p, index in enumerate(members)}
        finder = _FirstAtLeast([entries[i].received_at for i in members])
        for index, source, record, scope in reversed(items):
            at = finder.first(position[index], _headers_at(source))
            if at is None:
                continue
            later = entries[members[at]]
            slack = limits.date_slack if record.form in _DATE_FORMS else EPSILON
            not_before = record.not_before
            assert not_before is not None  # sources have one
            if later.received_at < not_before - slack:
                early = not_before - later.received_at
                violation = Violation(
                    "honours_retry_after",
                    later.job_id if scope == "job" else source.job_id,
                    (source.seq, later.seq),
                    f"{describe(later)} at {fmt_time(later.received_at)} came {fmt_time(early)}"
                    f" before the Retry-After {record.raw!r} of #{source.seq}"
                    f" ({_answer(source)}, {scope} scope) allowed it at"
                    f" {fmt_time(not_before)}",
                    later.client,
                )
                found.append((index, violation))
    found.sort(key=lambda item: item[0])
    for _, violation in found:
        yield violation


def _scope_kind(source: EntryLike, scope: str) -> str:
    """Which grouping of entries ``_in_scope`` amounts to for ``source`` and ``scope``."""
    if scope in ("account", "submits"):
        return scope
    if source.job_id is not None:
        return "job-submits" if source.kind == "submit" else "job"
    return "request"


def _scope_key(e: EntryLike, kind: str) -> tuple[object, ...] | None:
    """The group of ``e`` in grouping ``kind`` (None: in no group of it): two entries share a
    group exactly when ``_in_scope`` holds between them."""
    if kind == "account":
        return (kind, e.credential)
    if kind == "submits" or kind == "job-submits":
        if e.kind != "submit":
            return None
        return (kind, e.credential) if kind == "submits" else (kind, e.credential, e.job_id)
    if kind == "job":
        return None if e.job_id is None else (kind, e.credential, e.job_id)
    return (kind, e.credential, e.kind, e.request_digest)


def honours_poll_after(
    entries: Sequence[Entry], limits: Limits, webhooks: Sequence[Entry] = ()
) -> Iterator[Violation]:
    """An ordinary poll of J sooner than the hint of the answer before it, less the tolerance.

    Ordinary: the previous submit or status read of J succeeded, showed J not terminal, carried
    a hint, and had completed when the poll was received (overlaps are ``no_overlap``'s), and
    no genuine webhook about J was sent in between (a read to confirm a webhook is prompted).
    """
    hooks_of: dict[str, list[float]] = {}
    for w in webhooks:
        if w.job_id is not None and told(w):
            hooks_of.setdefault(w.job_id, []).append(w.received_at)
    for hooks in hooks_of.values():
        hooks.sort()
    for job_id, job_entries in _by_job(entries).items():
        hooks = hooks_of.get(job_id, [])
        previous: Entry | None = None
        for e in job_entries:
            if e.kind not in ("submit", "status"):
                continue
            if (
                e.kind == "status"
                and previous is not None
                and previous.poll_after is not None
                and _ok(previous)
                and previous.job_status not in TERMINAL_STATUSES
                and e.received_at >= _seen_at(previous)
            ):
                gap = e.received_at - _seen_at(previous)
                needed = previous.poll_after * (1 - limits.poll_tolerance)
                # a genuine webhook sent between the answer and this read prompted it
                after = bisect.bisect_left(hooks, _seen_at(previous))
                prompted = after < len(hooks) and hooks[after] <= e.received_at
                if gap < needed - EPSILON and not prompted:
                    yield Violation(
                        "honours_poll_after",
                        job_id,
                        (previous.seq, e.seq),
                        f"status read #{e.seq} for job {job_id} at {fmt_time(e.received_at)} came"
                        f" {fmt_time(gap)} after #{previous.seq} answered, sooner than its poll"
                        f" hint of {fmt_time(previous.poll_after)} (less"
                        f" {limits.poll_tolerance:.0%} tolerance)",
                        e.client,
                    )
            previous = e


def stops_at_terminal(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A status read of J received after a completed answer had shown J terminal."""
    for job_id, job_entries in _by_job(entries).items():
        first: Entry | None = None  # the first to reach the client of those showing J ended
        first_at = math.inf
        for e in job_entries:
            if e.job_status in TERMINAL_STATUSES and (first is None or _seen_at(e) < first_at):
                first, first_at = e, _seen_at(e)
        if first is None:
            continue
        for e in job_entries:
            if e.kind == "status" and e.seq > first.seq and e.received_at >= _seen_at(first):
                yield Violation(
                    "stops_at_terminal",
                    job_id,
                    (first.seq, e.seq),
                    f"status read #{e.seq} for job {job_id} at {fmt_time(e.received_at)} came after"
                    f" #{first.seq} had shown the job {first.job_status!r} at"
                    f" {fmt_time(_seen_at(first))}",
                    e.client,
                )
                break


def no_resubmission(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A retried submit without the failed one's Idempotency-Key, or a submit of the same
    request while an earlier job for it had not been seen to end (one job per logical request;
    no new submit after a failed status read)."""
    # Per job, in seq order: when each answer showing it ended reached the client (as a running
    # minimum, so "seen to end before submit s" is one bisect), and its status reads.
    ended: dict[str, tuple[list[int], list[float]]] = {}
    reads_of: dict[str, tuple[list[int], list[Entry]]] = {}
    for e in _with_listed(entries):
        if e.job_id is None:
            continue
        if e.job_status in TERMINAL_STATUSES:
            shown = ended.get(e.job_id)
            if shown is None:
                ended[e.job_id] = ([e.seq], [_seen_at(e)])
            else:
                shown[0].append(e.seq)
                shown[1].append(min(_seen_at(e), shown[1][-1]))
        if e.kind == "status":
            read = reads_of.get(e.job_id)
            if read is None:
                reads_of[e.job_id] = ([e.seq], [e])
            else:
                read[0].append(e.seq)
                read[1].append(e)
    # Per request body: its last submit, and the jobs it made that the client has not yet been
    # seen to learn ended (once it has, it has for every later submit too: they are dropped).
    last: dict[str | None, Entry] = {}
    open_jobs: dict[str | None, dict[str, list[Entry]]] = {}
    for s in (e for e in entries if e.kind == "submit"):
        candidates = open_jobs.get(s.request_digest)
        if candidates is None:
            open_jobs[s.request_digest] = candidates = {}
        yield from _resubmitted(s, last.get(s.request_digest), candidates, ended, reads_of)
        last[s.request_digest] = s
        if s.job_id is not None:
            candidates.setdefault(s.job_id, []).append(s)


def _resubmitted(
    s: Entry,
    previous: Entry | None,
    candidates: dict[str, list[Entry]],
    ended: dict[str, tuple[list[int], list[float]]],
    reads_of: dict[str, tuple[list[int], list[Entry]]],
) -> Iterator[Violation]:
    """``no_resubmission`` for submit ``s``: ``previous`` is the last submit of the same request,
    ``candidates`` the jobs earlier submits of it made (each with the submits that made it)."""
    if previous is not None and previous.failed and previous.idempotency_key is not None:
        failed = previous
        if s.idempotency_key != failed.idempotency_key:
            yield Violation(
                "no_resubmission",
                s.job_id,
                (failed.seq, s.seq),
                f"submit #{s.seq} at {fmt_time(s.received_at)} retried failed submit"
                f" #{failed.seq} ({_answer(failed)}) without its Idempotency-Key"
                f" {failed.idempotency_key!r}",
                s.client,
            )
            return
    # the jobs the client had seen end, let go once the loop stops (at the first job ``s``
    # repeats): no copy of the keys for each submit, O(n) for a client that resubmits one
    # request n times and leaves each job open
    seen_end: list[str] = []
    try:
        yield from _repeated(s, candidates, ended, reads_of, seen_end)
    finally:
        for job_id in seen_end:
            del candidates[job_id]


def _repeated(
    s: Entry,
    candidates: dict[str, list[Entry]],
    ended: dict[str, tuple[list[int], list[float]]],
    reads_of: dict[str, tuple[list[int], list[Entry]]],
    seen_end: list[str],
) -> Iterator[Violation]:
    """``_resubmitted``'s look at the jobs earlier submits of the request made: the first
    one ``s`` repeats, and in ``seen_end`` those the client had seen end before it."""
    for job_id in candidates:
        seqs_seen, first = ended.get(job_id, ([], []))
        shown = bisect.bisect_left(seqs_seen, s.seq)  # answers received before s
        if shown and first[shown - 1] <= s.received_at:
            seen_end.append(job_id)  # the client had seen the job end
            continue
        if job_id == s.job_id:
            continue
        # a retry under the same Idempotency-Key cannot make a second job
        origin = next((p for p in candidates[job_id] if not _same_key(p, s)), None)
        if origin is None:
            continue
        read_seqs, reads = reads_of.get(job_id, ([], []))
        before = bisect.bisect_left(read_seqs, s.seq)  # status reads received before s
        made = f"created job {s.job_id}" if s.job_id is not None else "was sent"
        if before and reads[before - 1].failed:
            read = reads[before - 1]
            message = (
                f"submit #{s.seq} at {fmt_time(s.received_at)} {made} for the same request"
                f" as job {job_id} after status read #{read.seq} of that job failed"
                f" ({_answer(read)}); a failed status read does not mean the job failed"
            )
            seqs: tuple[int, ...] = (origin.seq, read.seq, s.seq)
        else:
            message = (
                f"submit #{s.seq} at {fmt_time(s.received_at)} {made} for the same request"
                f" as job {job_id} (submit #{origin.seq}), which the client had not seen end"
            )
            seqs = (origin.seq, s.seq)
        yield Violation("no_resubmission", job_id, seqs, message, s.client)
        break


def _same_key(earlier: Entry, later: Entry) -> bool:
    return (
        later.idempotency_key is not None
        and earlier.idempotency_key == later.idempotency_key
        and earlier.credential == later.credential
    )


def no_retry_on_auth_error(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A request with the same credentials after a 401 or 403 answer had been received."""
    # For each refusal, the first later request with its credential sent after its headers
    # arrived: found per credential by ``_FirstAtLeast``, refusals taken last to first.
    members: dict[str | None, list[int]] = {}
    refusals: dict[str | None, list[int]] = {}
    for index, e in enumerate(entries):
        group = members.setdefault(e.credential, [])
        group.append(index)
        if e.status_code in (401, 403):
            refusals.setdefault(e.credential, []).append(len(group) - 1)
    retried: dict[int, Entry] = {}  # refusal index -> the retry
    for credential, positions in refusals.items():
        group = members[credential]
        finder = _FirstAtLeast([entries[i].received_at for i in group])
        for p in reversed(positions):
            at = finder.first(p, _headers_at(entries[group[p]]))
            if at is not None:
                retried[group[p]] = entries[group[at]]
    reported: set[str | None] = set()
    for index in sorted(retried):
        refused, later = entries[index], retried[index]
        if refused.credential in reported:
            continue
        reported.add(refused.credential)
        cred = (
            f"credential {refused.credential}"
            if refused.credential is not None
            else "no credentials"
        )
        yield Violation(
            "no_retry_on_auth_error",
            later.job_id,
            (refused.seq, later.seq),
            f"{describe(later)} at {fmt_time(later.received_at)} was sent with the same"
            f" {cred} after {describe(refused)} was refused with"
            f" {refused.status_code} at {fmt_time(_headers_at(refused))}",
            later.client,
        )


def deadline(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A request about J received later than J's submit + the deadline + the slack."""
    if limits.deadline is None:
        return
    for job_id, job_entries in _by_job(entries).items():
        submits = [e for e in job_entries if e.kind == "submit"]
        start = submits[0] if submits else job_entries[0]
        limit = start.received_at + limits.deadline + limits.deadline_slack
        for e in job_entries:
            if e.received_at > limit + EPSILON:
                yield Violation(
                    "deadline",
                    job_id,
                    (start.seq, e.seq),
                    f"{describe(e)} at {fmt_time(e.received_at)} came"
                    f" {fmt_time(e.received_at - start.received_at - limits.deadline)} after the"
                    f" deadline of {fmt_time(limits.deadline)} from #{start.seq} at"
                    f" {fmt_time(start.received_at)} (slack {fmt_time(limits.deadline_slack)})",
                    e.client,
                )
                break


def status_rate(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """More status reads (all jobs together) in a sliding window than the budget allows.

    Opt-in (``status_rate`` reads per second); the window is ``status_rate_window`` seconds
    and allows ``max(1, floor(rate * window))`` reads. Reported once, at the first breach.
    """
    if limits.status_rate is None:
        return
    window = limits.status_rate_window
    allowed = max(1, math.floor(limits.status_rate * window + EPSILON))
    reads = [e for e in entries if e.kind == "status"]
    # Reads are taken in order, counting those so far received at or before the window's
    # start: a pointer when times grow with seq (the usual case), else a Fenwick tree over the
    # ranks of the times.
    times = [r.received_at for r in reads]
    ordered = all(a <= b for a, b in itertools.pairwise(times))
    ranks = [] if ordered else sorted(set(times))
    tree = [0] * (len(ranks) + 1)
    older = 0
    for index, read in enumerate(reads):
        start = read.received_at - window
        if ordered:
            while older <= index and times[older] <= start:
                older += 1
        else:
            rank = bisect.bisect_left(ranks, read.received_at) + 1
            while rank <= len(ranks):
                tree[rank] += 1
                rank += rank & -rank
            rank, older = bisect.bisect_right(ranks, start), 0
            while rank > 0:
                older += tree[rank]
                rank -= rank & -rank
        if index + 1 - older > allowed:
            inside = [r for r in reads[: index + 1] if r.received_at > start]
            first = inside[0]
            yield Violation(
                "status_rate",
                None,
                tuple(r.seq for r in inside),
                f"status read #{read.seq} at {fmt_time(read.received_at)} was read {len(inside)}"
                f" within {fmt_time(window)} (since #{first.seq} at"
                f" {fmt_time(first.received_at)}); the budget of {limits.status_rate:g} per"
                f" second allows {allowed}",
                read.client,
            )
            return


def webhook_ack(deliveries: Sequence[EntryLike], limits: Limits) -> Iterator[Violation]:
    """A valid send (the message, a duplicate, a reordered one) not answered 2xx within
    ``ack_limit``, or a forged or stale one not answered 4xx. Every attempt is judged; missing
    events, refused hosts and sends still in flight are not."""
    for d in deliveries:
        if not was_sent(d) or (d.completed_at is None and d.error_code is None):
            continue
        tags = ", ".join(
            [d.event or "unknown event"]
            + ([d.delivery] if d.delivery else [])
            + ([f"attempt {d.attempt}"] if d.attempt is not None and d.attempt > 1 else [])
        )
        head = f"webhook #{d.seq} ({tags}) to {webhook_url(d)}"
        code = d.status_code
        latency = d.latency
        if d.delivery in _REJECT:
            if code is not None and 400 <= code < 500:
                continue
            answer = _no_answer(d) if code is None else f"was answered {code}"
            rule = f"a {d.delivery} delivery must be rejected with a 4xx"
        else:
            slow = latency is not None and latency > limits.ack_limit + EPSILON
            if code is not None and 200 <= code < 300 and not slow:
                continue
            if code is None:
                answer = _no_answer(d)
            elif slow and latency is not None:
                answer = f"was answered {code} after {fmt_time(latency)}"
            else:
                answer = f"was answered {code}"
            rule = (
                "a valid delivery must be acknowledged with a 2xx within"
                f" {fmt_time(limits.ack_limit)}"
            )
        yield Violation("webhook_ack", d.job_id, (d.seq,), f"{head} {answer}; {rule}", d.client)


Rule = Callable[[Sequence[Entry], "Limits"], Iterator[Violation]]

#: The per-client rules, in the order of docs/invariants.md.
CLIENT_RULES: tuple[tuple[str, Rule], ...] = (
    ("no_overlap", no_overlap),
    ("single_retrieval", single_retrieval),
    ("no_premature_retrieval", no_premature_retrieval),
    ("bounded_retries", bounded_retries),
    ("honours_retry_after", honours_retry_after),
    ("honours_poll_after", honours_poll_after),
    ("stops_at_terminal", stops_at_terminal),
    ("no_resubmission", no_resubmission),
    ("no_retry_on_auth_error", no_retry_on_auth_error),
    ("deadline", deadline),
    ("status_rate", status_rate),
)
