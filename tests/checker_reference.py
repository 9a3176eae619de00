"""The checker's rules as they were before they were made linear (quadratic, obviously right).

``tests/test_checker_linear.py`` checks that the indexed rules in ``fakeprovider._rules`` and
the report's timeline window find exactly what these did, on generated journals. Kept verbatim
(the straightforward scans), so a change that breaks the equivalence shows up there.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from fakeprovider._report import _CONTEXT, _MAX_LINES, _RunIndex
from fakeprovider._rules import (
    _DATE_FORMS,
    EPSILON,
    SUCCESS_STATUSES,
    Violation,
    _answer,
    _by_job,
    _headers_at,
    _ok,
    _scope,
    _seen_at,
    describe,
    fmt_time,
    told,
)
from fakeprovider.invariants import Limits
from fakeprovider.journal import Entry
from fakeprovider.scenario import TERMINAL_STATUSES


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


def no_premature_retrieval(
    entries: Sequence[Entry], limits: Limits, webhooks: Sequence[Entry] = ()
) -> Iterator[Violation]:
    """A content fetch of J received before any response (a status read, a list, the submit)
    or webhook had shown J succeeded."""
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


def timeline_window(index: _RunIndex, v: Violation) -> tuple[list[Entry], bool, bool]:
    """What the timeline of ``v`` showed: by sorting every related entry of the job."""
    group = index.groups.get((v.client, v.job_id), [])
    named = [index.by_seq[seq] for seq in v.seqs if seq in index.by_seq]
    chosen = {id(e): e for e in (*group, *named)}
    related = sorted(chosen.values(), key=lambda e: e.seq)
    positions = [i for i, e in enumerate(related) if e.seq in v.seqs]
    if not positions:
        return [], False, False
    low = max(0, positions[0] - _CONTEXT)
    high = min(len(related), positions[-1] + _CONTEXT + 1)
    shown = related[low:high]
    if len(shown) > _MAX_LINES:
        keep = {e.seq for e in shown if e.seq in v.seqs}
        shown = [e for e in shown if e.seq in keep] or shown[:_MAX_LINES]
    return shown, low > 0, high < len(related)


def judge_run(run: list[Entry], limits: Limits, number: int = 0) -> list[Violation]:
    """One run judged as ``invariants._judge`` did before the rules became streaming judges:
    each client's whole list of entries handed to the rule functions of ``_rules``."""
    import dataclasses
    import functools

    from fakeprovider._rules import (
        CLIENT_RULES,
        ClientEntries,
        honours_poll_after,
        no_premature_retrieval,
        webhook_ack,
    )
    from fakeprovider.invariants import INVARIANTS

    found: list[Violation] = []
    webhooks = [e for e in run if e.kind == "webhook"]
    hooks_of: dict[str, list[Entry]] = {}
    for w in webhooks:
        if w.job_id is not None:
            hooks_of.setdefault(w.job_id, []).append(w)
    clients: dict[str, ClientEntries] = {}
    for e in run:
        if e.kind not in ("webhook", "unknown"):
            clients.setdefault(e.client, ClientEntries()).append(e)
    for entries in clients.values():
        jobs = {job for e in entries for job in _jobs_of(e)}
        mine = [w for job in jobs for w in hooks_of.get(job, ())]
        for name, rule in CLIENT_RULES:
            if name == "no_premature_retrieval":
                rule = functools.partial(no_premature_retrieval, webhooks=mine)
            elif name == "honours_poll_after":
                rule = functools.partial(honours_poll_after, webhooks=mine)
            found.extend(rule(entries, limits))
    found.extend(webhook_ack(webhooks, limits))
    order = {name: index for index, name in enumerate(INVARIANTS)}
    found.sort(key=lambda v: (v.seqs[-1], order[v.invariant]))
    return [dataclasses.replace(v, run=number) for v in found] if number else found


def _jobs_of(e: Entry) -> Iterator[str]:
    if e.job_id is not None:
        yield e.job_id
    if e.listed:
        yield from (job for job, _ in e.listed)
