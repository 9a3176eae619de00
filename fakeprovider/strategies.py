"""Hypothesis strategies that generate hostile providers, and helpers to keep what they find.

``scenarios()`` draws whole ``Scenario`` objects: job timelines (by time or by poll count),
faults on any route (5xx, 429, slow answers, connection resets, lost submit responses),
``Retry-After`` in every form, token-bucket rate limits and, when asked, webhook plans. The
building blocks ``timelines()``, ``fault_plans()``, ``retry_after_values()`` and
``webhook_plans()`` draw the parts.

Every strategy draws plain YAML-shaped data and converts it with the same converter that
loads scenario files, so each generated value is valid and ``scenario.to_yaml()`` loads back
to an equal scenario. Choices are ordered simplest first, so a failure shrinks toward one job
that succeeds at once, no faults, no rate limit, and plain ``Retry-After: N`` headers.

Arguments follow Hypothesis's API style: keyword-only with defaults, checked when the strategy
is first drawn from (``hypothesis.errors.InvalidArgument``), and the repr shows the call::

    >>> scenarios(max_faults=1)
    scenarios(max_faults=1)

``note_scenario(scenario)`` adds the scenario's YAML to the report of a falsifying example
(and can save it to a file), so a failure becomes a regression scenario with one copy-paste.
This module imports Hypothesis; ``import fakeprovider`` does not import this module.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ._extras import missing_extra

try:
    import hypothesis
    from hypothesis import strategies as st
    from hypothesis.control import current_build_context
    from hypothesis.errors import InvalidArgument
except ModuleNotFoundError as _missing:
    raise missing_extra("fakeprovider.strategies", _missing) from None

from ._declarative import INVALID, Duration, convert, format_path
from ._suggest import did_you_mean
from .durations import format_duration, parse_duration
from .http import RETRY_AFTER_FORMS
from .scenario import Fault, JobSpec, RetryAfter, Scenario, Step, Webhooks

__all__ = [
    "FAULT_KINDS",
    "OUTCOMES",
    "RETRY_AFTER_FORMS",
    "TIMELINE_KINDS",
    "WEBHOOK_EVENTS",
    "fault_plans",
    "note_scenario",
    "retry_after_values",
    "save_scenario",
    "scenario_yaml",
    "scenarios",
    "timelines",
    "webhook_plans",
]

#: Fault kinds, simplest first: a 5xx answer, a 429, a slow answer, a connection reset, a
#: request that is handled but whose response is lost (on a submit: the job exists anyway), and
#: a 401/403 (the credentials stopped working: retrying them cannot help).
FAULT_KINDS: Final = (
    "server_error",
    "rate_limited",
    "slow",
    "reset",
    "lose_response",
    "auth_error",
)
#: How a timeline moves on: by time since the submit (``at: 93s``) or by status reads
#: (``after_polls: 3``).
TIMELINE_KINDS: Final = ("time", "polls")
#: How a job ends, simplest first; ``None`` is a job that never finishes.
OUTCOMES: Final = ("succeeded", "failed", "cancelled", "completed_with_errors", None)
#: Webhook events, the terminal ones first.
WEBHOOK_EVENTS: Final = (
    "job.succeeded",
    "job.failed",
    "job.cancelled",
    "job.completed_with_errors",
    "job.queued",
    "job.processing",
)

_SERVER_ERRORS = (503, 500, 502, 504)
_AUTH_ERRORS = (401, 403)
_FAULT_ROUTES = ("status", "submit", "content", "any")
_RATE_LIMIT_ROUTES: tuple[tuple[str, ...], ...] = (("any",), ("status",), ("submit",))
_ABSENT: Final = object()  # a key left out of the generated document

# -- argument checks (Hypothesis style: InvalidArgument naming the value) ----------------------


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name}={value!r} must be an integer.")
    if value < minimum:
        raise InvalidArgument(f"{name}={value!r} must be at least {minimum}.")
    return value


def _check_order(low_name: str, low: float, high_name: str, high: float) -> None:
    if high < low:
        raise InvalidArgument(f"Cannot have {high_name}={high!r} < {low_name}={low!r}.")


def _check_seconds(name: str, value: object, *, positive: bool) -> float:
    """A number of seconds or a duration string such as '10m'."""
    seconds: float | None = None
    if isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError:
            seconds = None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) if math.isfinite(value) else None
    if seconds is None or seconds < 0:
        raise InvalidArgument(
            f"{name}={value!r} must be a non-negative number of seconds or a duration such as '10m'."
        )
    if positive and seconds == 0:
        raise InvalidArgument(f"{name}={value!r} must be longer than zero.")
    return seconds


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} must be True or False.")
    return value


def _check_choices(name: str, value: object, known: Sequence[object]) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, frozenset, set)):
        raise InvalidArgument(f"{name}={value!r} must be a list or tuple of choices.")
    choices = tuple(value)
    for choice in choices:
        if choice not in known:
            expected = ", ".join(repr(k) for k in known)
            hint = did_you_mean(choice, known)
            raise InvalidArgument(
                f"{name} contains the unknown choice {choice!r}{hint}; choose from {expected}."
            )
    if not choices:
        raise InvalidArgument(f"{name}={value!r} must name at least one choice.")
    # keep the library's simplest-first order, whatever order the caller wrote
    return tuple(k for k in known if k in choices)


def _check_url(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise InvalidArgument(f"{name}={value!r} must be None or an http:// or https:// URL.")
    return value


# -- from plain data to model objects -----------------------------------------------------------


def _validated(tp: Any, plain: Any, what: str) -> Any:
    """``plain`` converted to ``tp`` exactly as a scenario file is; a problem is a bug here."""
    issues: list[tuple[tuple[str | int, ...], str]] = []
    value = convert(tp, plain, (), issues)
    if value is INVALID or issues:  # pragma: no cover - would be a bug in this module
        found = "; ".join(f"{format_path(path) or '<top>'}: {message}" for path, message in issues)
        raise AssertionError(f"fakeprovider.strategies generated an invalid {what}: {found}")
    return value


def _seconds(value: float) -> str:
    return format_duration(value)


def _drop_absent(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v is not _ABSENT}


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Left out (simplest) or a value from ``strategy``."""
    return st.one_of(st.just(_ABSENT), strategy)


# -- Retry-After --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _plain_retry_after(
    forms: tuple[str, ...], min_delay: float, max_delay: float
) -> st.SearchStrategy[Any]:
    branches: list[st.SearchStrategy[Any]] = []
    whole = st.integers(math.ceil(min_delay), math.floor(max_delay))
    for form in forms:
        if form == "ms":
            millis = st.integers(math.ceil(min_delay * 1000), math.floor(max_delay * 1000))
            branches.append(millis.map(lambda ms: {"delay": _seconds(ms / 1000), "form": "ms"}))
        elif form == "seconds":
            branches.append(whole.map(_seconds))  # the shorthand 'retry_after: 7s'
        else:
            branches.append(whole.map(_http_date(form)))
    return st.one_of(branches)


def _http_date(form: str) -> Any:
    def document(seconds: int) -> dict[str, Any]:
        return {"delay": _seconds(seconds), "form": form}

    return document


def _retry_after_args(forms: object, min_delay: object, max_delay: object) -> tuple[Any, ...]:
    checked_forms = _check_choices("forms", forms, RETRY_AFTER_FORMS)
    low = _check_seconds("min_delay", min_delay, positive=False)
    high = _check_seconds("max_delay", max_delay, positive=False)
    if high < low:
        raise InvalidArgument(f"Cannot have max_delay={max_delay!r} < min_delay={min_delay!r}.")
    if checked_forms != ("ms",) and math.ceil(low) > math.floor(high):
        raise InvalidArgument(
            f"There is no whole second between min_delay={min_delay!r} and"
            f" max_delay={max_delay!r}; widen the range or use forms=('ms',)."
        )
    return checked_forms, low, high


@st.composite
def retry_after_values(
    draw: st.DrawFn,
    *,
    forms: Sequence[str] = RETRY_AFTER_FORMS,
    min_delay: float | str = 1,
    max_delay: float | str = 120,
) -> float | RetryAfter:
    """``Retry-After`` values for a fault: a delay in seconds, or a ``RetryAfter`` in a form.

    ``forms`` chooses among 'seconds' (drawn as a plain duration, the scenario shorthand),
    'imf', 'rfc850', 'asctime' (HTTP-dates, whole seconds) and 'ms' (``retry-after-ms``,
    whole milliseconds). Delays lie between ``min_delay`` and ``max_delay`` seconds and shrink
    toward ``min_delay`` in the 'seconds' form.
    """
    plain = draw(_plain_retry_after(*_retry_after_args(forms, min_delay, max_delay)))
    value: float | RetryAfter = _validated(Duration | RetryAfter, plain, "Retry-After")
    return value


# -- timelines ----------------------------------------------------------------------------------


def _timeline_args(
    max_steps: object, max_duration: object, max_polls: object, kinds: object, outcomes: object
) -> tuple[Any, ...]:
    return (
        _check_int("max_steps", max_steps, 1),
        _check_seconds("max_duration", max_duration, positive=False),
        _check_int("max_polls", max_polls, 0),
        _check_choices("kinds", kinds, TIMELINE_KINDS),
        _check_choices("outcomes", outcomes, OUTCOMES),
    )


@functools.lru_cache(maxsize=64)
def _plain_timeline(
    max_steps: int,
    max_duration: float,
    max_polls: int,
    kinds: tuple[str, ...],
    outcomes: tuple[str | None, ...],
) -> st.SearchStrategy[list[dict[str, Any]]]:
    seconds = math.floor(max_duration)

    @st.composite
    def plain(draw: st.DrawFn) -> list[dict[str, Any]]:
        final = draw(st.sampled_from(outcomes))
        later = draw(st.integers(0, max_steps - 1))  # steps after the first
        if later == 0:
            return [{"status": final or "processing"}]
        kind = draw(st.sampled_from(kinds))
        top = seconds if kind == "time" else max_polls
        marks = sorted(draw(st.lists(st.integers(0, top), min_size=later, max_size=later)))
        progress: list[int] = []
        if draw(st.booleans()):
            progress = sorted(
                draw(st.lists(st.integers(0, 99), min_size=later - 1, max_size=later - 1))
            )
        steps: list[dict[str, Any]] = [{"status": "queued"}]
        for index, mark in enumerate(marks):
            step: dict[str, Any] = (
                {"at": _seconds(mark)} if kind == "time" else {"after_polls": mark}
            )
            if index < later - 1:
                step["status"] = "processing"
                if progress:
                    step["progress"] = progress[index]
            else:
                step["status"] = final or "processing"
            steps.append(step)
        return steps

    return plain()


def _job_document(timeline: list[dict[str, Any]]) -> dict[str, Any]:
    job: dict[str, Any] = {"timeline": timeline}
    if timeline[-1].get("status") == "completed_with_errors":
        job["summary"] = {"succeeded": 3, "failed": 1}
    return job


@st.composite
def timelines(
    draw: st.DrawFn,
    *,
    max_steps: int = 4,
    max_duration: float | str = 600,
    max_polls: int = 20,
    kinds: Sequence[str] = TIMELINE_KINDS,
    outcomes: Sequence[str | None] = OUTCOMES,
) -> tuple[Step, ...]:
    """A job's timeline: 'queued', then 'processing' steps, then how it ends.

    Steps move on by time (``at``, whole seconds up to ``max_duration``) or by status reads
    (``after_polls``, up to ``max_polls``), as ``kinds`` allows; ``outcomes`` lists the final
    statuses to choose from (``None``: the job never finishes). At most ``max_steps`` steps;
    the simplest timeline is a single 'succeeded' step (done at once).
    """
    args = _timeline_args(max_steps, max_duration, max_polls, kinds, outcomes)
    plain = draw(_plain_timeline(*args))
    spec: JobSpec = _validated(JobSpec, _job_document(plain), "timeline")
    return spec.timeline


# -- faults -------------------------------------------------------------------------------------


def _fault_args(
    min_faults: object,
    max_faults: object,
    kinds: object,
    retry_after_forms: object,
    jobs: object,
    max_duration: object,
) -> tuple[Any, ...]:
    low = _check_int("min_faults", min_faults, 0)
    high = _check_int("max_faults", max_faults, 0)
    _check_order("min_faults", low, "max_faults", high)
    checked_kinds = _check_choices("kinds", kinds, FAULT_KINDS)
    forms = _check_choices("retry_after_forms", retry_after_forms, RETRY_AFTER_FORMS)
    return (
        low,
        high,
        checked_kinds,
        forms,
        _check_int("jobs", jobs, 1),
        _check_seconds("max_duration", max_duration, positive=True),
    )


def _slow_delays() -> st.SearchStrategy[str]:
    """How long a slow answer takes: 250ms steps below a second, then whole seconds to 30s."""
    return st.one_of(
        st.integers(1, 3).map(lambda quarter: _seconds(quarter / 4)),
        st.integers(1, 30).map(_seconds),
    )


def _trigger(max_duration: float) -> st.SearchStrategy[dict[str, Any]]:
    """Which matching requests a fault fires on, simplest first: the nth, the first n (an
    outage), several listed, every k-th, a time window, a seeded probability."""
    window = max(1, math.floor(max_duration))
    return st.one_of(
        st.integers(1, 5).map(lambda n: {"nth": n}),
        st.integers(1, 10).map(lambda n: {"times": n}),  # an outage: the first n requests
        st.lists(st.integers(1, 8), min_size=2, max_size=3, unique=True).map(
            lambda ns: {"nth": sorted(ns)}
        ),
        st.tuples(st.integers(1, 4), _optional(st.integers(1, 5))).map(
            lambda pair: _drop_absent({"every": pair[0], "times": pair[1]})
        ),
        st.tuples(st.integers(0, window - 1), st.integers(1, window)).map(
            lambda pair: {"start": _seconds(pair[0]), "end": _seconds(pair[0] + pair[1])}
        ),
        st.tuples(st.integers(1, 20), _optional(st.integers(1, 5))).map(
            lambda pair: _drop_absent({"probability": pair[0] / 20, "times": pair[1]})
        ),
    )


@functools.lru_cache(maxsize=64)
def _plain_fault(
    kinds: tuple[str, ...], forms: tuple[str, ...], jobs: int, max_duration: float
) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """One fault, drawn in one piece (so that shrinking can delete it whole): its kind and
    its document without a name; ``job`` may name any of ``jobs`` job specs."""
    retry_after = _optional(_plain_retry_after(forms, 1, 120))
    trigger = _trigger(max_duration)
    target = st.just(_ABSENT) if jobs == 1 else _optional(st.integers(0, jobs - 1))
    # Every kind draws the same choices, so shrinking moves toward the earlier kinds in
    # FAULT_KINDS (and not toward whichever kind happens to need the fewest draws).
    details = st.tuples(
        st.sampled_from(_SERVER_ERRORS),
        retry_after,
        _slow_delays(),
        st.sampled_from(_AUTH_ERRORS),
    )

    @st.composite
    def plain(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
        kind = draw(st.sampled_from(kinds))
        fault = {
            "route": draw(st.sampled_from(_FAULT_ROUTES)),
            "job": draw(target),
            **draw(trigger),
            **_fault_details(kind, *draw(details)),
        }
        return kind, fault

    return plain()


def _named_faults(drawn: list[tuple[str, dict[str, Any]]], jobs: int) -> list[dict[str, Any]]:
    """The fault documents, named by kind and position; a ``job`` past the last of ``jobs``
    job specs (left by shrinking the jobs away) is dropped: the fault then hits every job."""
    faults = []
    for index, (kind, fault) in enumerate(drawn):
        named = {"name": f"{kind.replace('_', '-')}-{index + 1}", **fault}
        if isinstance(named.get("job"), int) and named["job"] >= jobs:
            named["job"] = _ABSENT
        faults.append(_drop_absent(named))
    return faults


def _some(
    element: st.SearchStrategy[Any], min_size: int, max_size: int
) -> st.SearchStrategy[list[Any]]:
    """A list of ``element``: a count, then the elements, each drawn in one piece.

    Not ``st.lists``: its shrinker deletes trailing elements and short runs of choices, so a
    needed element after an unneeded one (a fault after a fault the failure does not need)
    stays. A count drawn first is the shape Hypothesis's shrinker knows how to undo: when
    lowering the count fails, it lowers it and deletes any one element, the first included.
    """

    @st.composite
    def some(draw: st.DrawFn) -> list[Any]:
        count = draw(st.integers(min_size, max_size))
        return [draw(element) for _ in range(count)]

    return some()


@functools.lru_cache(maxsize=64)
def _plain_faults(
    min_faults: int,
    max_faults: int,
    kinds: tuple[str, ...],
    forms: tuple[str, ...],
    jobs: int,
    max_duration: float,
) -> st.SearchStrategy[list[dict[str, Any]]]:
    one = _plain_fault(kinds, forms, jobs, max_duration)
    return _some(one, min_faults, max_faults).map(lambda drawn: _named_faults(drawn, jobs))


def _fault_details(
    kind: str, status: int, retry_after: Any, delay: str, auth_status: int
) -> dict[str, Any]:
    if kind == "auth_error":
        return {"status": auth_status}
    if kind == "server_error":
        return {"status": status, "retry_after": retry_after}
    if kind == "rate_limited":
        return {"status": 429, "retry_after": retry_after}
    if kind == "slow":
        return {"delay": delay}
    return {"action": kind}  # 'reset' or 'lose_response'


@st.composite
def fault_plans(
    draw: st.DrawFn,
    *,
    min_faults: int = 0,
    max_faults: int = 3,
    kinds: Sequence[str] = FAULT_KINDS,
    retry_after_forms: Sequence[str] = RETRY_AFTER_FORMS,
    jobs: int = 1,
    max_duration: float | str = 600,
) -> tuple[Fault, ...]:
    """A scenario's ``faults:``, between ``min_faults`` and ``max_faults`` of them.

    Each fault is one of ``kinds`` (see ``FAULT_KINDS``) on one route, fired on the nth
    matching request(s), on the first n (an outage), every k-th, inside a time window (within
    ``max_duration``) or with a seeded probability; ``job`` targets one of the first ``jobs`` job specs. 5xx and 429
    faults may carry a ``Retry-After`` in one of ``retry_after_forms``.
    """
    args = _fault_args(min_faults, max_faults, kinds, retry_after_forms, jobs, max_duration)
    plain = draw(_plain_faults(*args))
    faults: tuple[Fault, ...] = _validated(tuple[Fault, ...], plain, "fault plan")
    return faults


# -- webhooks -----------------------------------------------------------------------------------


def _webhook_args(
    events: object, url: object, max_delay: object, max_duplicates: object, misbehave: object
) -> tuple[Any, ...]:
    return (
        _check_choices("events", events, WEBHOOK_EVENTS),
        _check_url("url", url),
        _check_seconds("max_delay", max_delay, positive=False),
        _check_int("max_duplicates", max_duplicates, 0),
        _check_bool("misbehave", misbehave),
    )


@functools.lru_cache(maxsize=64)
def _plain_webhooks(
    events: tuple[str, ...], url: str | None, max_delay: float, max_duplicates: int, misbehave: bool
) -> st.SearchStrategy[dict[str, Any]]:
    def subset(pool: Sequence[str]) -> st.SearchStrategy[list[str]]:
        if not misbehave or not pool:
            return st.just([])
        return st.lists(st.sampled_from(tuple(pool)), unique=True).map(
            lambda chosen: [e for e in pool if e in chosen]
        )

    @st.composite
    def plain(draw: st.DrawFn) -> dict[str, Any]:
        chosen = draw(st.lists(st.sampled_from(events), min_size=1, unique=True))
        sent = [e for e in events if e in chosen]
        forged = draw(subset(sent))
        stale = draw(subset(sent))
        missing = draw(subset([e for e in sent if e not in forged and e not in stale]))
        duplicates = draw(st.integers(0, max_duplicates))
        document: dict[str, Any] = {
            "url": url if url is not None else _ABSENT,
            "events": sent,
            "delay": _seconds(draw(st.integers(0, math.floor(max_delay)))),
            "duplicates": duplicates,
            "duplicate_gap": _seconds(draw(st.integers(1, 5))) if duplicates else _ABSENT,
            "reorder": draw(st.booleans()) if misbehave else False,
            "forged": forged,
            "stale": stale,
            "missing": missing,
        }
        return _drop_absent(document)

    return plain()


@st.composite
def webhook_plans(
    draw: st.DrawFn,
    *,
    events: Sequence[str] = WEBHOOK_EVENTS[:3],
    url: str | None = None,
    max_delay: float | str = 30,
    max_duplicates: int = 2,
    misbehave: bool = True,
) -> Webhooks:
    """A scenario's ``webhooks:``: which ``events`` are sent, after what delay, how often.

    With ``misbehave`` (the default) some events are also sent forged (bad signature) or stale
    (old timestamp), some never sent, and a job's earlier events may come after its terminal
    one. ``url`` is the receiver for jobs whose submit has no ``callback_url``.
    """
    args = _webhook_args(events, url, max_delay, max_duplicates, misbehave)
    plain = draw(_plain_webhooks(*args))
    webhooks: Webhooks = _validated(Webhooks, plain, "webhook plan")
    return webhooks


# -- whole scenarios ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _plain_rate_limit(forms: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "capacity": st.integers(1, 10),
            "refill_every": st.integers(1, 60).map(_seconds),
            "routes": st.sampled_from(_RATE_LIMIT_ROUTES).map(list),
            "scope": st.sampled_from(("key", "global")),
            "retry_after_form": st.sampled_from(forms),
        }
    )


@functools.lru_cache(maxsize=64)
def _plain_scenario(
    min_jobs: int,
    max_jobs: int,
    max_duration: float,
    max_faults: int,
    fault_kinds: tuple[str, ...],
    forms: tuple[str, ...],
    rate_limits: bool,
    webhooks: bool,
    timeline_kinds: tuple[str, ...],
    outcomes: tuple[str | None, ...],
    missing_poll_hints: bool,
) -> st.SearchStrategy[dict[str, Any]]:
    timeline = _plain_timeline(4, max_duration, 20, timeline_kinds, outcomes)
    hints = [st.just(_ABSENT), st.integers(1, 60).map(_seconds)]
    if missing_poll_hints:
        hints.append(st.just(None))  # 'poll_after: null': answers carry no usable hint
    poll_after = st.one_of(hints)
    rate_limit = _optional(_plain_rate_limit(forms)) if rate_limits else st.just(_ABSENT)
    hooks = (
        _optional(_plain_webhooks(WEBHOOK_EVENTS[:3], None, 30.0, 2, True))
        if webhooks
        else st.just(_ABSENT)
    )

    job = st.tuples(timeline, poll_after).map(
        lambda pair: _drop_absent({**_job_document(pair[0]), "poll_after": pair[1]})
    )
    # Each job and each fault is drawn in one piece, and a fault's draws do not depend on how
    # many jobs there are: shrinking deletes a job or a fault the failure does not need
    # without changing what the others draw.
    some_jobs = _some(job, min_jobs, max_jobs)
    some_faults = _some(_plain_fault(fault_kinds, forms, max_jobs, max_duration), 0, max_faults)

    @st.composite
    def plain(draw: st.DrawFn) -> dict[str, Any]:
        jobs = draw(some_jobs)
        faults = _named_faults(draw(some_faults), len(jobs))
        document = {
            "name": "generated",
            "seed": draw(st.integers(0, 2**16)) if faults else _ABSENT,
            "jobs": jobs,
            "faults": faults or _ABSENT,
            "rate_limit": draw(rate_limit),
            "webhooks": draw(hooks),
        }
        return _drop_absent(document)

    return plain()


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    min_jobs: int = 1,
    max_jobs: int = 2,
    max_duration: float | str = 600,
    max_faults: int = 3,
    fault_kinds: Sequence[str] = FAULT_KINDS,
    retry_after_forms: Sequence[str] = RETRY_AFTER_FORMS,
    rate_limits: bool = True,
    webhooks: bool = False,
    timeline_kinds: Sequence[str] = TIMELINE_KINDS,
    outcomes: Sequence[str | None] = OUTCOMES,
    missing_poll_hints: bool = False,
) -> Scenario:
    """Whole scenarios: a hostile provider to attack a client with.

    ``min_jobs`` to ``max_jobs`` job specs (submits take them in order, the last repeats), each
    with a timeline of up to four steps ending by ``max_duration`` seconds (or a duration such
    as '10m') or after up to 20 status reads, ending in one of ``outcomes``; up to
    ``max_faults`` faults of ``fault_kinds``; ``Retry-After`` in ``retry_after_forms``; a
    token-bucket rate limit when ``rate_limits``; webhook plans when ``webhooks`` (off by
    default: deliveries need a receiver). Poll hints are the default 5s or 1s to 60s; with
    ``missing_poll_hints`` a job may also have none (``poll_after: null``). Shrinks toward one job that succeeds at once, no
    faults, no rate limit, no webhooks.
    """
    low = _check_int("min_jobs", min_jobs, 1)
    high = _check_int("max_jobs", max_jobs, 1)
    _check_order("min_jobs", low, "max_jobs", high)
    args = (
        low,
        high,
        _check_seconds("max_duration", max_duration, positive=True),
        _check_int("max_faults", max_faults, 0),
        _check_choices("fault_kinds", fault_kinds, FAULT_KINDS),
        _check_choices("retry_after_forms", retry_after_forms, RETRY_AFTER_FORMS),
        _check_bool("rate_limits", rate_limits),
        _check_bool("webhooks", webhooks),
        _check_choices("timeline_kinds", timeline_kinds, TIMELINE_KINDS),
        _check_choices("outcomes", outcomes, OUTCOMES),
        _check_bool("missing_poll_hints", missing_poll_hints),
    )
    scenario: Scenario = _validated(Scenario, draw(_plain_scenario(*args)), "scenario")
    return scenario


# -- keeping what a test found ------------------------------------------------------------------

_HEADER = (
    "# A fakeprovider scenario found by Hypothesis. Save it as a .yaml file and replay it with\n"
    "#   fakeprovider serve FILE   or   @pytest.mark.fakeprovider(FILE)   or   @example(...)\n"
)


def scenario_yaml(scenario: Scenario) -> str:
    """``scenario`` as a commented YAML document, ready to save as a regression scenario."""
    return _HEADER + scenario.to_yaml()


def save_scenario(scenario: Scenario, path: str | Path) -> Path:
    """Write ``scenario`` as YAML to ``path`` (parent folders are created); return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(scenario_yaml(scenario), encoding="utf-8")
    return target


def note_scenario(scenario: Scenario, *, save_to: str | Path | None = None) -> None:
    """Report ``scenario`` as YAML with a falsifying example (``hypothesis.note``).

    With ``save_to``, the minimal failing scenario is also written to that file when
    Hypothesis replays it for the report (not for every example it tries).
    Call it inside a Hypothesis test, as ``note`` itself.
    """
    hypothesis.note(scenario_yaml(scenario))
    if save_to is not None and current_build_context().is_final:
        save_scenario(scenario, save_to)
