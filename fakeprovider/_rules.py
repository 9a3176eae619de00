"""The client invariants (docs/invariants.md), one pure function each.

Every rule takes the entries of one run of one client (sorted by ``seq``, admin and webhook
entries removed) and the limits, and yields ``Violation`` objects. ``webhook_ack`` takes the
webhook deliveries of a run instead. The definitions are written out in ``docs/invariants.md``;
each function's docstring is the short form.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .journal import Entry
from .scenario import TERMINAL_STATUSES

if TYPE_CHECKING:
    from .invariants import Limits

__all__ = [
    "CLIENT_RULES",
    "EPSILON",
    "SUCCESS_STATUSES",
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
_DATE_FORMS = frozenset({"imf", "rfc850", "asctime"})
_NAMES = {
    "submit": "submit",
    "status": "status read",
    "content": "content fetch",
    "cancel": "cancel",
    "list": "list",
    "webhook": "webhook delivery",
}


@dataclass(frozen=True)
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


def describe(entry: Entry) -> str:
    """``status read #14 for job j_7``: what an entry was, for messages."""
    name = _NAMES.get(entry.kind, "request")
    if entry.kind in ("submit", "list") or entry.job_id is None:
        return f"{name} #{entry.seq}"
    return f"{name} #{entry.seq} for job {entry.job_id}"


def _answer(entry: Entry) -> str:
    if entry.status_code is None:
        return "a dropped connection" if entry.dropped != "lose_response" else "a lost response"
    return str(entry.status_code)


def _seen_at(entry: Entry) -> float:
    """When the client had the whole answer (the body), or never."""
    if entry.completed_at is not None:
        return entry.completed_at
    return math.inf


def _headers_at(entry: Entry) -> float:
    """When the client could first read the answer's headers, or never."""
    if entry.response_started_at is not None:
        return entry.response_started_at
    return math.inf


def _ok(entry: Entry) -> bool:
    return (
        entry.status_code is not None and 200 <= entry.status_code < 300 and entry.dropped is None
    )


def _by_job(
    entries: Sequence[Entry], kind: str | None = None, *, listed: bool = False
) -> dict[str, list[Entry]]:
    """Entries per job id, in order; with ``listed``, a list answer also counts as an entry
    of every job it showed (as that job, with the status it showed)."""
    out: dict[str, list[Entry]] = {}
    for e in _with_listed(entries) if listed else entries:
        if e.job_id is not None and (kind is None or e.kind == kind):
            out.setdefault(e.job_id, []).append(e)
    return out


def _with_listed(entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` with each list answer expanded into one entry per job it showed that the
    client otherwise knows (submitted or asked about): what the client saw of that job, since
    a reconciling client learns a job's status from the list."""
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


#: A webhook send that is not a genuine message: a receiver must reject it with a 4xx.
_REJECT = frozenset({"forged", "stale"})


def webhook_url(entry: Entry) -> str:
    """The receiver URL a webhook entry went to, from its ``client`` (host:port) and ``path``.

    The journal does not keep the scheme; loopback receivers are plain HTTP, so it says http.
    """
    return f"http://{entry.client}{entry.path}"


def was_sent(entry: Entry) -> bool:
    """True for a webhook entry that stands for a real send: not a ``missing`` event (attempt
    0, nothing sent) and not a delivery refused because its host is not allowed."""
    return (
        entry.kind == "webhook"
        and entry.delivery != "missing"
        and entry.attempt != 0
        and entry.error_code != "host_not_allowed"
    )


def told(entry: Entry) -> bool:
    """True for a webhook entry that reached the receiver with a genuine message: sent, not
    forged or stale, and not lost to a connection error."""
    return (
        was_sent(entry) and entry.delivery not in _REJECT and entry.error_code != "connection_error"
    )


def _no_answer(entry: Entry) -> str:
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
        for index, read in enumerate(reads):
            pending = [a for a in reads[:index] if read.received_at < _headers_at(a) - EPSILON]
            if pending:
                prev = pending[-1]
                yield Violation(
                    "no_overlap",
                    job_id,
                    (prev.seq, read.seq),
                    f"status read #{read.seq} for job {job_id} arrived at"
                    f" {fmt_time(read.received_at)} while read #{prev.seq} (received"
                    f" {fmt_time(prev.received_at)}) had not started its response",
                    read.client,
                )


def _retrieval(entry: Entry) -> bool:
    """A successful answer that handed the client the result: a content download, or an
    answer that carried the result inline (``inline_result``)."""
    return _ok(entry) and (entry.kind == "content" or entry.inline_result is True)


def _got(entry: Entry) -> str:
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
    for job_id, job_entries in _by_job(entries, listed=True).items():
        notified = [
            w.received_at
            for w in webhooks
            if w.job_id == job_id
            and told(w)
            and (w.event or "").removeprefix("job.") in SUCCESS_STATUSES
        ]
        for fetch in (e for e in job_entries if e.kind == "content"):
            before = [e for e in job_entries if e.seq < fetch.seq]
            if any(
                e.job_status in SUCCESS_STATUSES and _seen_at(e) <= fetch.received_at + EPSILON
                for e in before
            ) or any(t <= fetch.received_at for t in notified):
                continue
            shown = [e for e in before if e.job_status is not None]
            last = (
                f"the last status it had seen was {shown[-1].job_status!r} (#{shown[-1].seq})"
                if shown
                else "it had seen no status of the job"
            )
            yield Violation(
                "no_premature_retrieval",
                job_id,
                (*(e.seq for e in shown[-1:]), fetch.seq),
                f"content fetch #{fetch.seq} for job {job_id} at {fmt_time(fetch.received_at)}"
                f" came before the client could have seen the job succeed; {last}",
                fetch.client,
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
            failures = [*failures, attempt] if _unsuccessful(attempt) else []
        del key


def _unsuccessful(entry: Entry) -> bool:
    """A failed attempt (5xx, 429, dropped), or a request refused with a 4xx other than
    401/403 (those are ``no_retry_on_auth_error``'s): sending it again gets the same answer."""
    code = entry.status_code
    return entry.failed or (code is not None and 400 <= code < 500 and code not in (401, 403))


#: The engine's error code for a submit refused by the cap on active jobs (``concurrency:``).
_TOO_MANY_JOBS = "too_many_active_jobs"


def _scope(entry: Entry, limits: Limits) -> str:
    if limits.retry_after_scope != "auto":
        return limits.retry_after_scope
    if entry.status_code == 429 and entry.kind == "submit" and entry.error_code == _TOO_MANY_JOBS:
        # "too many jobs running": wait before the next new job, and keep watching the running
        # ones (only that tells the client when one has ended)
        return "submits"
    return "account" if entry.status_code == 429 else "job"


def _in_scope(later: Entry, source: Entry, scope: str) -> bool:
    if later.credential != source.credential:
        return False
    if scope == "account":
        return True
    if scope == "submits":
        return later.kind == "submit"
    if source.job_id is not None:
        return later.job_id == source.job_id and (source.kind != "submit" or later.kind == "submit")
    return later.kind == source.kind and later.request_digest == source.request_digest


def honours_retry_after(entries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
    """A request in the scope of a Retry-After, sent after its headers arrived, received before
    its ``not_before`` (minus 1 s of slack for HTTP-dates, float noise for delay-seconds)."""
    for index, source in enumerate(entries):
        record = source.retry_after
        if record is None or record.not_before is None:
            continue
        slack = limits.date_slack if record.form in _DATE_FORMS else EPSILON
        scope = _scope(source, limits)
        shown_at = _headers_at(source)
        for later in entries[index + 1 :]:
            if later.received_at < shown_at or not _in_scope(later, source, scope):
                continue
            if later.received_at < record.not_before - slack:
                early = record.not_before - later.received_at
                yield Violation(
                    "honours_retry_after",
                    later.job_id if scope == "job" else source.job_id,
                    (source.seq, later.seq),
                    f"{describe(later)} at {fmt_time(later.received_at)} came {fmt_time(early)}"
                    f" before the Retry-After {record.raw!r} of #{source.seq}"
                    f" ({_answer(source)}, {scope} scope) allowed it at"
                    f" {fmt_time(record.not_before)}",
                    later.client,
                )
            break


def honours_poll_after(
    entries: Sequence[Entry], limits: Limits, webhooks: Sequence[Entry] = ()
) -> Iterator[Violation]:
    """An ordinary poll of J sooner than the hint of the answer before it, less the tolerance.

    Ordinary: the previous submit or status read of J succeeded, showed J not terminal, carried
    a hint, and had completed when the poll was received (overlaps are ``no_overlap``'s), and
    no genuine webhook about J was sent in between (a read to confirm a webhook is prompted).
    """
    for job_id, job_entries in _by_job(entries).items():
        hooks = [w.received_at for w in webhooks if w.job_id == job_id and told(w)]
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
                prompted = any(_seen_at(previous) <= t <= e.received_at for t in hooks)
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
        terminal = [e for e in job_entries if e.job_status in TERMINAL_STATUSES]
        if not terminal:
            continue
        first = min(terminal, key=_seen_at)
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
            seqs_seen, first = ended.setdefault(e.job_id, ([], []))
            seqs_seen.append(e.seq)
            first.append(min(_seen_at(e), first[-1]) if first else _seen_at(e))
        if e.kind == "status":
            read_seqs, reads = reads_of.setdefault(e.job_id, ([], []))
            read_seqs.append(e.seq)
            reads.append(e)
    # Per request body: its last submit, and the jobs it made that the client has not yet been
    # seen to learn ended (once it has, it has for every later submit too: they are dropped).
    last: dict[str | None, Entry] = {}
    open_jobs: dict[str | None, dict[str, list[Entry]]] = {}
    for s in (e for e in entries if e.kind == "submit"):
        candidates = open_jobs.setdefault(s.request_digest, {})
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
    for job_id in list(candidates):
        seqs_seen, first = ended.get(job_id, ([], []))
        shown = bisect.bisect_left(seqs_seen, s.seq)  # answers received before s
        if shown and first[shown - 1] <= s.received_at:
            del candidates[job_id]  # the client had seen the job end
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
    reported: set[str | None] = set()
    for index, refused in enumerate(entries):
        if refused.status_code not in (401, 403) or refused.credential in reported:
            continue
        for later in entries[index + 1 :]:
            if later.credential == refused.credential and later.received_at >= _headers_at(refused):
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
                break


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
    for index, read in enumerate(reads):
        inside = [r for r in reads[: index + 1] if r.received_at > read.received_at - window]
        if len(inside) > allowed:
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


def webhook_ack(deliveries: Sequence[Entry], limits: Limits) -> Iterator[Violation]:
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
