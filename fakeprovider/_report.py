"""Metrics, coverage, warnings and the text rendering of an invariant report (pure)."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ._rules import Violation, _answer, _with_listed, describe, fmt_time, told, was_sent
from ._runs import split_runs
from .entries import EntryLike
from .journal import Entry
from .scenario import TERMINAL_STATUSES

if TYPE_CHECKING:
    from .limits import Limits

__all__ = ["coverage", "job_key", "metrics", "render", "summarise_metrics"]

#: How many violations the text report details unless told otherwise (the count per rule at
#: its top covers every one).
MAX_VIOLATIONS = 20
_CONTEXT = 3  # entries shown before and after the offending ones
_MAX_LINES = 14
# a timeline of more of the violation's own entries than ``_MAX_LINES`` shows the first and
# the last this many of them, and how many are left out between
_HALF = _MAX_LINES // 2


def job_key(job_id: str, run: int, runs: int) -> str:
    return job_id if runs == 1 else f"run {run}: {job_id}"


def _clients(run: Sequence[Entry]) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for e in run:
        if e.kind != "webhook" and e.kind != "unknown":
            mine = out.get(e.client)
            if mine is None:
                out[e.client] = [e]
            else:
                mine.append(e)
    return out


def _retries(entries: Sequence[Entry]) -> int:
    last_failed: dict[tuple[str, str | None], bool] = {}
    count = 0
    for e in entries:
        key = (e.kind, e.request_digest if e.kind == "submit" else e.job_id)
        if last_failed.get(key, False):
            count += 1
        last_failed[key] = e.failed
    return count


def _terminal_at(run: Sequence[Entry]) -> dict[str, float]:
    """When each job entered its terminal status, as far as the journal tells."""
    out: dict[str, float] = {}
    for e in run:
        if e.job_id and e.true_status in TERMINAL_STATUSES and e.status_since is not None:
            out.setdefault(e.job_id, e.status_since)
    return out


def _time_in_status(run: Sequence[Entry]) -> dict[str, dict[str, float]]:
    changes: dict[str, dict[float, str]] = {}
    last_seen: dict[str, float] = {}
    for e in run:
        if e.job_id is None or e.true_status is None or e.status_since is None:
            continue
        changes.setdefault(e.job_id, {})[e.status_since] = e.true_status
        last_seen[e.job_id] = max(last_seen.get(e.job_id, 0.0), e.received_at)
    out: dict[str, dict[str, float]] = {}
    for job_id, points in changes.items():
        ordered = sorted(points.items())
        spent: dict[str, float] = {}
        for index, (since, status) in enumerate(ordered):
            if status in TERMINAL_STATUSES:
                break
            until = ordered[index + 1][0] if index + 1 < len(ordered) else last_seen[job_id]
            spent[status] = round(spent.get(status, 0.0) + max(0.0, until - since), 6)
        out[job_id] = spent
    return out


def metrics(runs: Sequence[Sequence[Entry]]) -> dict[str, Any]:
    """Polls per completion, detection delay, retries, rate-limit hits, time in each status and
    webhook coverage, per client and in total."""
    per_client: dict[str, dict[str, Any]] = {}
    delays: dict[str, float] = {}
    time_in_status: dict[str, dict[str, float]] = {}
    deliveries: list[Entry] = []
    terminal_jobs: set[str] = set()
    notified: set[str] = set()
    for number, run in enumerate(runs):
        terminal_at = _terminal_at(run)
        terminal_jobs.update(job_key(j, number, len(runs)) for j in terminal_at)
        for job_id, spent in _time_in_status(run).items():
            time_in_status[job_key(job_id, number, len(runs))] = spent
        hooks = [e for e in run if e.kind == "webhook" and was_sent(e)]
        deliveries.extend(hooks)
        notified.update(
            job_key(h.job_id, number, len(runs))
            for h in hooks
            if h.job_id and told(h) and (h.event or "").removeprefix("job.") in TERMINAL_STATUSES
        )
        for client, entries in _clients(run).items():
            m = per_client.setdefault(
                client,
                {
                    "requests": 0,
                    "status_reads": 0,
                    "completions": 0,
                    "retries": 0,
                    "rate_limit_hits": 0,
                },
            )
            m["requests"] += len(entries)
            m["status_reads"] += sum(e.kind == "status" for e in entries)
            m["retries"] += _retries(entries)
            m["rate_limit_hits"] += sum(e.status_code == 429 for e in entries)
            seen: dict[str, float] = {}
            for e in entries:
                if e.job_id and e.job_status in TERMINAL_STATUSES and e.completed_at is not None:
                    seen.setdefault(e.job_id, e.completed_at)
            m["completions"] += len(seen)
            for job_id, at in seen.items():
                if job_id in terminal_at:
                    key = f"{client} {job_key(job_id, number, len(runs))}"
                    delays[key] = round(max(0.0, at - terminal_at[job_id]), 6)
    acked = [d for d in deliveries if d.status_code is not None and 200 <= d.status_code < 300]
    webhooks = {
        "deliveries": len(deliveries),
        "acknowledged": len(acked),
        "by_event": dict(Counter(d.event or "unknown" for d in deliveries)),
        "terminal_jobs": len(terminal_jobs),
        "terminal_jobs_notified": len(notified & terminal_jobs),
    }
    return summarise_metrics(len(runs), per_client, delays, time_in_status, webhooks)


def summarise_metrics(
    runs: int,
    per_client: dict[str, dict[str, Any]],
    delays: dict[str, float],
    time_in_status: dict[str, Any],
    webhooks: dict[str, Any],
) -> dict[str, Any]:
    """The report's metrics from each client's counts (given their ``polls_per_completion``
    here), the detection delays by client and job, and the webhook counts: one shape for the
    checker that holds the journal (``metrics``) and the one that streams it (``_stream``)."""
    for m in per_client.values():
        m["polls_per_completion"] = (
            round(m["status_reads"] / m["completions"], 3) if m["completions"] else None
        )
    reads = sum(m["status_reads"] for m in per_client.values())
    completions = sum(m["completions"] for m in per_client.values())
    return {
        "runs": runs,
        "requests": sum(m["requests"] for m in per_client.values()),
        "status_reads": reads,
        "completions": completions,
        "polls_per_completion": round(reads / completions, 3) if completions else None,
        "detection_delay": {
            "mean": round(sum(delays.values()) / len(delays), 6) if delays else None,
            "max": max(delays.values()) if delays else None,
            "by_client_and_job": delays,
        },
        "retries": sum(m["retries"] for m in per_client.values()),
        "rate_limit_hits": sum(m["rate_limit_hits"] for m in per_client.values()),
        "time_in_status": time_in_status,
        "webhooks": webhooks,
        "clients": per_client,
    }


def coverage(runs: Sequence[Sequence[Entry]], limits: Limits) -> tuple[dict[str, Any], list[str]]:
    """What the runs exercised, and warnings for what they did not."""
    entries = [e for run in runs for e in run]
    requests = [e for e in entries if e.kind not in ("webhook", "unknown")]
    observed: dict[str, set[str]] = {}
    reached: dict[str, set[str]] = {}
    for run in runs:
        true_by_job: dict[str, set[str]] = {}
        for e in run:
            if e.job_id and e.true_status:
                true_by_job.setdefault(e.job_id, set()).add(e.true_status)
        for client, mine in _clients(run).items():
            seen = observed.setdefault(client, set())
            seen.update(e.job_status for e in mine if e.job_status)
            watched = reached.setdefault(client, set())
            for job_id in {e.job_id for e in mine if e.job_id}:
                watched.update(true_by_job.get(job_id, set()))
    codes = Counter(e.status_code for e in requests if e.status_code is not None)
    return summarise_coverage(
        limits,
        requests=len(requests),
        observed=observed,
        reached=reached,
        codes=codes,
        forms=Counter(e.retry_after.form for e in requests if e.retry_after is not None),
        faults=Counter(e.fault for e in requests if e.fault),
        dropped=sum(e.dropped is not None or e.status_code is None for e in requests),
        webhook_sent=any(e.kind == "webhook" and was_sent(e) for e in entries),
        gave_up=(warning for run in runs for warning in _gave_up(run)),
    )


def summarise_coverage(
    limits: Limits,
    *,
    requests: int,
    observed: Mapping[str, AbstractSet[str]],
    reached: Mapping[str, AbstractSet[str]],
    codes: Mapping[int, int],
    forms: Mapping[str, int],
    faults: Mapping[str, int],
    dropped: int,
    webhook_sent: bool,
    gave_up: Iterable[str],
) -> tuple[dict[str, Any], list[str]]:
    """The coverage section and its warnings from what a journal's requests were answered
    with (``requests`` of them), what each client saw (``observed``) and what the jobs it read
    went through (``reached``): the in-memory and the streamed check both build it here.
    ``gave_up`` is read only when there were requests."""
    found = coverage_section(
        limits,
        observed=observed,
        codes=codes,
        forms=forms,
        faults=faults,
        dropped=dropped,
        webhook_sent=webhook_sent,
    )
    warnings = coverage_warnings(
        limits,
        requests=requests,
        observed=observed,
        reached=reached,
        codes=codes,
        forms=forms,
        dropped=dropped,
        webhook_sent=webhook_sent,
        gave_up=gave_up,
    )
    return found, warnings


def _not_checked(limits: Limits, webhook_sent: bool) -> dict[str, str]:
    not_checked: dict[str, str] = {}
    if limits.deadline is None:
        not_checked["deadline"] = "no deadline was set"
    if limits.status_rate is None:
        not_checked["status_rate"] = "opt-in: no status_rate budget was set"
    if not webhook_sent:
        not_checked["webhook_ack"] = "no webhook was delivered"
    return not_checked


def coverage_section(
    limits: Limits,
    *,
    observed: Mapping[str, AbstractSet[str]],
    codes: Mapping[int, int],
    forms: Mapping[str, int],
    faults: Mapping[str, int],
    dropped: int,
    webhook_sent: bool,
) -> dict[str, Any]:
    """``summarise_coverage``'s coverage section alone."""
    return {
        "statuses_observed": {c: sorted(observed[c]) for c in sorted(observed)},
        "status_codes": {str(code): n for code, n in sorted(codes.items())},
        "faults_served": dict(sorted(faults.items())),
        "retry_after_forms": dict(sorted(forms.items())),
        "dropped_connections": dropped,
        "not_checked": _not_checked(limits, webhook_sent),
    }


def coverage_warnings(
    limits: Limits,
    *,
    requests: int,
    observed: Mapping[str, AbstractSet[str]],
    reached: Mapping[str, AbstractSet[str]],
    codes: Mapping[int, int],
    forms: Mapping[str, int],
    dropped: int,
    webhook_sent: bool,
    gave_up: Iterable[str],
) -> list[str]:
    """``summarise_coverage``'s warnings alone (what a text report prints of the coverage)."""
    not_checked = _not_checked(limits, webhook_sent)
    warnings: list[str] = []
    if not requests:
        warnings.append("the journal holds no requests, so nothing was checked")
        return warnings
    if not codes.get(429):
        warnings.append("no 429 was served, so rate-limit handling was not exercised")
    if not dropped and not any(code >= 500 for code in codes):
        warnings.append(
            "no 5xx or dropped connection was served, so retry handling was not exercised"
        )
    if not forms:
        warnings.append("no Retry-After was served, so honours_retry_after was not exercised")
    if not any(s & TERMINAL_STATUSES for s in observed.values()):
        warnings.append("no client saw a job end, so stops_at_terminal was not exercised")
    # the clients (in name order) whose jobs went through a status they never saw: only those
    # with such a status are sorted (a run of many clients has few or none)
    unseen = [
        client
        for client, went in reached.items()
        if went and client in observed and not went <= observed[client]
    ]
    for client in sorted(unseen):
        for status in sorted(reached[client] - observed[client]):
            warnings.append(f"the client {client!r} never observed {status!r}")
    warnings.extend(gave_up)
    warnings.extend(f"{name} was not checked: {why}" for name, why in not_checked.items())
    return warnings


def _gave_up(run: Sequence[Entry]) -> list[str]:
    """Jobs a client stopped asking about right after a failed status read or download,
    before it knew the job had ended (by an answer, the list, or a genuine webhook): the
    signature of a client that takes a failed read for a failed job. A warning, not a
    violation: a client out of retries or out of time stops the same way."""
    notified = {
        e.job_id
        for e in run
        if e.kind == "webhook" and told(e) and e.job_status in TERMINAL_STATUSES
    }
    out: list[str] = []
    for client, mine in _clients(run).items():
        last: dict[str, Entry] = {}
        ended: set[str] = set()
        for e in _with_listed(mine):
            if e.job_id is None:
                continue
            last[e.job_id] = e
            if e.job_status in TERMINAL_STATUSES:
                ended.add(e.job_id)
        for job_id, e in last.items():
            if job_id in ended or job_id in notified or e.kind not in ("status", "content"):
                continue
            if not e.failed:
                continue
            status = f" while the job was {e.true_status!r}" if e.true_status else ""
            out.append(
                f"the client {client!r} never asked about job {job_id} again after"
                f" {describe(e)} got {_answer(e)}{status}: a failed read is not a failed job;"
                " unless the client ran out of retries or time, it should have retried"
            )
    return out


# -- rendering --------------------------------------------------------------------------------


def _line(e: EntryLike, mark: str) -> str:
    if e.response_started_at is None:
        timing = "no answer"
    elif e.completed_at is not None and e.completed_at - e.response_started_at > 0.0005:
        timing = f"{fmt_time(e.response_started_at)} to {fmt_time(e.completed_at)}"
    else:
        timing = fmt_time(e.response_started_at)
    answer = str(e.status_code) if e.status_code is not None else (e.dropped or "dropped")
    parts = [
        f"{mark} #{e.seq:<4} {fmt_time(e.received_at):>11}  {e.method} {e.path}",
        f"-> {answer}",
    ]
    if e.job_status:
        parts.append(repr(e.job_status))
    parts.append(f"(answered {timing})")
    if e.poll_after is not None:
        parts.append(f"hint {e.poll_after:g} s")
    if e.retry_after is not None:
        until = (
            ""
            if e.retry_after.not_before is None
            else f" until {fmt_time(e.retry_after.not_before)}"
        )
        parts.append(f"{e.retry_after.header} {e.retry_after.raw!r}{until}")
    if e.fault:
        parts.append(f"fault {e.fault}")
    return " ".join(parts)


class _RunIndex:
    """A run's entries by (client, job) (job None: the client's status reads) and by seq, so
    that each violation's timeline costs what it shows, not the whole run."""

    def __init__(self, run: Iterable[Entry], shown: Sequence[Violation] | None = None) -> None:
        """Index ``run``; with ``shown``, only what the timelines of those violations read
        (their clients' jobs and their seqs), so rendering a few violations of a large
        journal does not index all of it."""
        self.groups: dict[tuple[str, str | None], list[Entry]] = {}
        self.by_seq: dict[int, Entry] = {}
        keys = None if shown is None else {(v.client, v.job_id) for v in shown}
        seqs = None if shown is None else {s for v in shown for s in v.seqs}
        for e in run:
            if seqs is None or e.seq in seqs:
                self.by_seq.setdefault(e.seq, e)
            if e.kind in ("webhook", "unknown"):
                continue
            if e.job_id is not None and (keys is None or (e.client, e.job_id) in keys):
                self.groups.setdefault((e.client, e.job_id), []).append(e)
            if e.kind == "status" and (keys is None or (e.client, None) in keys):
                self.groups.setdefault((e.client, None), []).append(e)
        self.seqs = {key: [e.seq for e in group] for key, group in self.groups.items()}

    def window(self, v: Violation) -> tuple[list[Entry], bool, bool]:
        """What the timeline of ``v`` shows, and whether entries are left out before and after.

        The related entries are the client's entries about the job and the violation's own, in
        seq order; shown are those within ``_CONTEXT`` of the violation's own, or only its own
        when that makes more than ``_MAX_LINES``. Worked out from positions (bisection), so a
        violation in a job of thousands of entries costs what it shows, not the job.
        """
        group = self.groups.get((v.client, v.job_id), [])
        seqs = self.seqs.get((v.client, v.job_id), [])
        present = sorted({s for s in v.seqs if s in self.by_seq})
        if not present:
            return [], False, False
        named = [self.by_seq[s] for s in present]
        extras = [e for e in named if not _holds(group, seqs, e)]  # not in the group
        extra_seqs = [e.seq for e in extras]
        total = len(group) + len(extras)
        # related = group and extras merged by seq, a group entry first on a tie
        first = bisect.bisect_left(seqs, present[0]) + bisect.bisect_left(extra_seqs, present[0])
        last = bisect.bisect_right(seqs, present[-1]) + bisect.bisect_right(extra_seqs, present[-1])
        low = max(0, first - _CONTEXT)
        high = min(total, last + _CONTEXT)
        if high - low > _MAX_LINES:
            mine: list[Entry] = []
            for s in present:
                at = bisect.bisect_left(seqs, s)
                while at < len(seqs) and seqs[at] == s:
                    mine.append(group[at])
                    at += 1
                mine.extend(e for e in extras if e.seq == s)
            return mine, low > 0, high < total
        # related[low:high]: each entry's index in related is its index in its own list plus
        # the entries of the other list before it (a group entry first on a tie)
        chosen: list[tuple[int, Entry]] = []
        for g in range(max(0, low - len(extras)), min(high, len(group))):
            at = g + bisect.bisect_left(extra_seqs, group[g].seq)
            if low <= at < high:
                chosen.append((at, group[g]))
        for j, e in enumerate(extras):
            at = j + bisect.bisect_right(seqs, e.seq)
            if low <= at < high:
                chosen.append((at, e))
        chosen.sort(key=lambda item: item[0])
        return [e for _, e in chosen], low > 0, high < total

    def timeline(self, v: Violation) -> tuple[Sequence[EntryLike], bool, bool, int]:
        """``window`` as the timeline of ``v`` prints it (``elided``)."""
        return elided(*self.window(v))


def _holds(group: list[Entry], seqs: list[int], e: Entry) -> bool:
    at = bisect.bisect_left(seqs, e.seq)
    while at < len(seqs) and seqs[at] == e.seq:
        if group[at] is e:
            return True
        at += 1
    return False


def elided(
    shown: Sequence[EntryLike], before: bool, after: bool
) -> tuple[Sequence[EntryLike], bool, bool, int]:
    """A window (what a timeline shows, and whether entries are left out before and after)
    as it is printed: past ``_MAX_LINES`` entries (then all the violation's own), the first
    and last ``_HALF`` of them, and how many are left out between (else 0)."""
    if len(shown) <= _MAX_LINES:
        return shown, before, after, 0
    return [*shown[:_HALF], *shown[-_HALF:]], before, after, len(shown) - 2 * _HALF


class _Windowed(Protocol):
    def timeline(self, v: Violation) -> tuple[Sequence[EntryLike], bool, bool, int]: ...


def _timeline(v: Violation, index: _Windowed) -> list[str]:
    shown, before, after, left_out = index.timeline(v)
    if not shown:
        return []
    title = f"job {v.job_id}" if v.job_id is not None else "status reads"
    lines = [f"    timeline of {title} for client {v.client!r}:"]
    if before:
        lines.append("      ...")
    changes_seen: set[tuple[str | None, float]] = set()
    previous: EntryLike | None = None
    # of the seqs shown, those ``v`` names (a status_rate violation can name every read of a
    # window: hundreds of thousands)
    named = {e.seq for e in shown}.intersection(v.seqs)
    for at, e in enumerate(shown):
        if left_out and at == _HALF:
            lines.append(f"      ... {left_out:,} more this violation names ...")
        change = (e.true_status, e.status_since or 0.0)
        if (
            previous is not None
            and e.true_status
            and e.status_since is not None
            and change not in changes_seen
            and e.true_status != previous.true_status
        ):
            lines.append(
                f"       ~{'':4}{fmt_time(e.status_since):>11}  the job became {e.true_status!r}"
            )
        changes_seen.add(change)
        previous = e
        lines.append("    " + _line(e, ">>" if e.seq in named else "  "))
    if after:
        lines.append("      ...")
    return lines


def render(
    violations: Sequence[Violation],
    entries: Sequence[Entry],
    found_metrics: dict[str, Any],
    warnings: Sequence[str],
    max_violations: int | None = None,
) -> str:
    """The report as text: the count per rule, then each violation with its timeline (the
    first ``max_violations`` of them; None or 0: all), the metrics and the warnings."""
    runs = split_runs(entries)
    shown = violations if not max_violations else violations[:max_violations]
    indexes: dict[int, _RunIndex] = {}

    def index_of(number: int) -> _RunIndex:
        if number not in indexes:
            of_run = [w for w in shown if w.run == number]
            indexes[number] = _RunIndex(runs[number] if number < len(runs) else (), of_run)
        return indexes[number]

    return render_indexed(
        violations, len(runs), index_of, summary_of(found_metrics), warnings, max_violations
    )


class Summary(NamedTuple):
    """What the text report prints of the metrics: its head's counts and its metrics line."""

    requests: int
    clients: int
    line: str


def summary_of(found_metrics: Mapping[str, Any]) -> Summary:
    """The ``Summary`` of a report's metrics."""
    delay = found_metrics["detection_delay"]
    return Summary(
        found_metrics["requests"],
        len(found_metrics["clients"]),
        metrics_line(
            found_metrics["polls_per_completion"],
            delay["mean"],
            delay["max"],
            found_metrics["retries"],
            found_metrics["rate_limit_hits"],
            found_metrics["webhooks"]["deliveries"],
        ),
    )


def metrics_line(
    polls_per_completion: float | None,
    delay_mean: float | None,
    delay_max: float | None,
    retries: int,
    rate_limit_hits: int,
    deliveries: int,
) -> str:
    """The text report's line of metrics."""
    return (
        "metrics: "
        f"polls per completion {_num(polls_per_completion)}, "
        f"detection delay mean {_num(delay_mean, ' s')} max {_num(delay_max, ' s')}, "
        f"retries {retries}, rate-limit hits {rate_limit_hits}, "
        f"webhook deliveries {deliveries}"
    )


def render_indexed(
    violations: Sequence[Violation],
    runs: int,
    index_of: Callable[[int], _Windowed],
    summary: Summary,
    warnings: Sequence[str],
    max_violations: int | None = None,
    *,
    counted: tuple[int, list[tuple[str, int]]] | None = None,
) -> str:
    """``render`` for a journal of ``runs`` runs, the timelines of the violations shown of
    run N drawn from ``index_of(N)`` (a ``_RunIndex`` of at least what they show).
    ``counted``: how many violations there are and how many of each rule (most first), when
    ``violations`` holds only those shown; ``summary``: the metrics it prints."""
    requests, clients = summary.requests, summary.clients
    if counted is None:
        counted = (len(violations), Counter(v.invariant for v in violations).most_common())
    total, counts = counted
    if total:
        head = f"{total} invariant violation(s) in {requests} request(s) from {clients} client(s):"
    else:
        head = f"no invariant violations in {requests} request(s) from {clients} client(s)"
    lines = [head]
    if total:
        lines.append("  by rule: " + ", ".join(f"{name} {n}" for name, n in counts))
    shown = violations if not max_violations else violations[:max_violations]
    for v in shown:
        where = f" (run {v.run})" if runs > 1 else ""
        lines.append("")
        lines.append(f"  {v.invariant}{where}: {v.message}")
        lines.extend(_timeline(v, index_of(v.run)))
    if len(shown) < total:
        lines.append("")
        lines.append(
            f"  ... and {total - len(shown)} more violation(s) not shown"
            f" (the first {len(shown)} are; --max-violations 0 shows all)"
        )
    lines.append("")
    lines.append(summary.line)
    for warning in warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def _num(value: float | None, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:.3f}{unit}" if unit else f"{value:g}"
