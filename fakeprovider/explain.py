"""``fakeprovider explain``: a scenario's timeline in words.

Every time is written one way, in seconds (``at 0.4s``, ``at 93s``, ``at 600s``), so that times
compare at a glance, and every header as it is sent at the scenario's time scale: a delay-seconds
``Retry-After`` of 0.3 s goes out as ``Retry-After: 1``, and that is what is shown.
"""

from __future__ import annotations

import math

from .scenario import Fault, RetryAfter, Scenario, Webhooks

__all__ = ["explain"]


def explain(scenario: Scenario) -> str:
    """A plain-English account of what ``scenario`` will do."""
    lines = [f"{scenario.name}: {scenario.description or '(no description)'}"]
    lines.append(f"dialect {scenario.dialect}, seed {scenario.seed}")
    for index in range(len(scenario.jobs)):
        lines.append("")
        lines.extend(_job(index, scenario))
    if scenario.faults:
        lines.append("")
        lines.append("Faults:")
        lines.extend(f"  - {_fault(f)}" for f in scenario.faults)
    if scenario.rate_limit is not None:
        r = scenario.rate_limit
        routes = ", ".join(r.routes)
        per = "per API key" if r.scope == "key" else "for everyone"
        lines.append("")
        lines.append(
            f"Rate limit: {r.capacity} requests at once on {routes} {per}, one more every "
            f"{d(r.refill_every)}; over it: 429 with {_computed(r.retry_after_form, r.refill_every)}."
        )
    if scenario.concurrency is not None:
        c = scenario.concurrency
        retry = (
            c.retry_after
            if isinstance(c.retry_after, RetryAfter)
            else RetryAfter(delay=c.retry_after)
        )
        lines.append(
            f"Concurrency: at most {c.max_active_jobs} active jobs; another submit gets 429 with"
            f" {_retry(retry)}."
        )
    if scenario.auth is not None:
        a = scenario.auth
        revoke = f", revoked after {a.revoke_after} requests each" if a.revoke_after else ""
        lines.append(f"Auth: Bearer tokens {', '.join(a.tokens)}{revoke}.")
    if scenario.webhooks is not None:
        lines.append("")
        lines.extend(_webhooks(scenario.webhooks))
    e = scenario.expect
    expects = []
    if e.outcome:
        expects.append(f"outcome {e.outcome}")
    if e.deadline is not None:
        expects.append(f"deadline {d(e.deadline)}")
    expects.append(f"at most {e.max_retries} retries in a row")
    if e.retrievals is not None:
        expects.append(f"{e.retrievals} download(s) per job")
    if scenario.webhooks is not None:
        expects.append(f"webhooks acknowledged within {d(e.ack_limit)}")
    lines.append("")
    lines.append("Expect: " + ", ".join(expects) + ".")
    return "\n".join(lines) + "\n"


def _job(index: int, scenario: Scenario) -> list[str]:
    job = scenario.jobs[index]
    label = f"Job {index}" + (f" ({job.name})" if job.name else "")
    # as the engine picks: a submit takes the first job whose match it fits, else the next
    # job without a match (the last of those repeats; with none, the last job serves)
    unmatched = [i for i, spec in enumerate(scenario.jobs) if spec.match is None]
    some_match = len(unmatched) < len(scenario.jobs)
    if job.match:
        label += f", for submits matching {job.match}"
        if not unmatched and index == len(scenario.jobs) - 1:
            label += " and every submit that matches no job"
    elif len(scenario.jobs) > 1:
        number = _ordinal(unmatched.index(index) + 1)
        which = " that matches no job's match" if some_match else ""
        label += f", for the {number} submit{which}"
        if index == unmatched[-1]:
            label += " and every later one"
    lines = [label + ":"]
    for step in job.timeline:
        if step.after_polls is not None:
            when = f"after {step.after_polls} status reads"
        else:
            when = f"at {d(step.at or 0.0)}"
        parts: list[str] = []
        if step.status:
            parts.append(step.status)
        if step.progress is not None:
            parts.append(f"progress {step.progress}%")
        hint = step.poll_after if step.poll_after is not None else None
        if hint is not None:
            parts.append(f"poll hint {d(hint)}")
        lines.append(f"  {when:>22}: {', '.join(parts) or step.message}")
    if job.poll_after is not None:
        lines.append(f"  poll hint while running: {d(job.poll_after)}")
    final = job.final_status
    if final == "failed":
        lines.append(f"  fails with {job.error.code}: {job.error.message}")
    elif final in ("succeeded", "completed_with_errors"):
        lines.append(f"  produces a {job.result.size_bytes}-byte video")
    return lines


def d(seconds: float) -> str:
    """A time in explain's one format: seconds, to the millisecond (``0.4s``, ``93s``, ``600s``)."""
    text = f"{round(seconds, 3):.3f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _window(start: float, end: float | None) -> str:
    return f"between {d(start)} and {'the end' if end is None else d(end)}"


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _webhooks(w: Webhooks) -> list[str]:
    target = "each job's callback_url" + (f", else {w.url}" if w.url else "")
    delay = f"{d(w.delay)} after the change" if w.delay else "at the change"
    lines = [
        f"Webhooks: {', '.join(w.events)} to {target}, {delay}, signed (Standard Webhooks).",
    ]
    if w.duplicates:
        lines.append(
            f"  every message is sent {w.duplicates + 1} times, {d(w.duplicate_gap)} apart "
            "(same webhook-id, fresh timestamp and signature)"
        )
    if w.reorder:
        lines.append("  each job's earlier events are held back and sent after its terminal one")
    if w.forged:
        lines.append(f"  also sent once with a bad signature: {', '.join(w.forged)}")
    if w.stale:
        lines.append(f"  also replayed once with a 10-minute-old timestamp: {', '.join(w.stale)}")
    if w.missing:
        lines.append(f"  never sent (poll to notice): {', '.join(w.missing)}")
    waits = ", ".join(d(wait) for wait in w.retry_schedule)
    lines.append(
        f"  a receiver's 429, 5xx or silence past {d(w.timeout)} is retried, up to "
        f"{w.max_attempts} attempts, after {waits} (jittered); 410 stops"
    )
    return lines


def _fault(fault: Fault) -> str:
    if fault.nth is not None:
        which = "requests #" + ", #".join(str(n) for n in sorted(fault.nth_set))
    elif fault.every is not None:
        which = f"every {_ordinal(fault.every)} request"
    else:
        which = "every request"
    where = "" if fault.route == "any" else f" to {fault.route}"
    if fault.job is not None:
        where += f" of jobs[{fault.job}]"
    extra = []
    if fault.start is not None or fault.end is not None:
        extra.append(_window(fault.start or 0.0, fault.end))
    if fault.probability is not None:
        extra.append(f"with probability {fault.probability:g}")
    if fault.times is not None:
        extra.append(f"at most {fault.times} times")
    if fault.action == "reset":
        what = "the connection is reset"
    elif fault.action == "lose_response":
        what = "the request is handled, then the connection drops (the response is lost)"
    elif fault.status is not None:
        what = f"answer {fault.status}"
    else:
        what = "the normal answer"
    if fault.delay:
        what += f" after {d(fault.delay)}"
    retry = fault.retry
    if retry is not None:
        what += f", with {_retry(retry)}"
    scope = f" ({'; '.join(extra)})" if extra else ""
    return f"{fault.name}: {which}{where}{scope}: {what}"


def _retry(retry: RetryAfter) -> str:
    """The header as sent (the engine rounds up the same way)."""
    if retry.raw is not None:
        return f"Retry-After: {retry.raw}"
    if retry.form == "ms":
        return f"retry-after-ms: {_ceil(retry.wait * 1000)}"
    if retry.form == "seconds":
        sent = _ceil(retry.wait)
        rounded = "" if sent == retry.wait else f" ({d(retry.wait)} rounded up to whole seconds)"
        return f"Retry-After: {sent}{rounded}"
    return (
        f"Retry-After: an HTTP-date ({retry.form}) {d(retry.wait)} after the answer, rounded up"
        " to a whole second"
    )


def _computed(form: str, longest: float) -> str:
    """How the token bucket's computed wait (at most ``longest``) is sent."""
    if form == "seconds":
        return (
            f"Retry-After: up to {_ceil(longest)} (the wait for the next token, rounded up to"
            " whole seconds)"
        )
    if form == "ms":
        return f"retry-after-ms: up to {_ceil(longest * 1000)} (the wait for the next token)"
    return (
        f"Retry-After: an HTTP-date ({form}) up to {d(longest)} after the answer (when the next"
        " token comes), rounded up to a whole second"
    )


def _ceil(value: float) -> int:
    """Rounded up, as the engine does (float noise such as 3.0000000000000004 is 3)."""
    return max(0, math.ceil(value - 1e-9))
