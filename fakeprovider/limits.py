"""The checker's limits, and the one way they are made from a scenario's ``expect:`` plus
overrides (the admin API's query, the ``check`` options, the plugin's ``limits()``).

A leaf under the checker: ``invariants``, its rules (``_rules``) and report (``_report``), the
admin API, ``fakeprovider check`` and the plugin import it; it imports no part of the checker.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._suggest import did_you_mean
from .durations import parse_duration

if TYPE_CHECKING:
    from .scenario import Expect

__all__ = ["Limits", "RetryAfterScope", "limits_for"]

RetryAfterScope = Literal["auto", "account", "job"]


@dataclass(frozen=True)
class Limits:
    """What the checker allows. Durations are seconds; every field has a documented default."""

    #: Consecutive failed attempts (5xx, 429, dropped) per job and route before giving up.
    max_retries: int = 5
    #: The client's deadline per job, from its submit; None: the deadline is not checked.
    deadline: float | None = None
    #: Grace after the deadline for a request already on its way.
    deadline_slack: float = 1.0
    #: Content fetches allowed (and, when set, required) per job the client saw succeed;
    #: None: at most one, none required.
    retrievals: int | None = None
    #: Fraction of the poll hint an ordinary poll may come early by.
    poll_tolerance: float = 0.1
    #: Status reads per second across all jobs of a client; None: not checked (opt-in).
    status_rate: float | None = None
    #: The sliding window status_rate is counted over.
    status_rate_window: float = 10.0
    #: How fast a webhook receiver must acknowledge a valid delivery.
    ack_limit: float = 5.0
    #: Which later requests a Retry-After binds: 'auto' (the account for 429, the job
    #: otherwise), 'account' (every request with the same credential) or 'job'.
    retry_after_scope: RetryAfterScope = "auto"
    #: Slack for Retry-After written as an HTTP-date (one-second resolution).
    date_slack: float = 1.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "retry_after_scope" or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"limit {f.name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"limit {f.name} must be a finite number, got {value!r}")
        for name in ("max_retries", "deadline_slack", "poll_tolerance", "ack_limit", "date_slack"):
            if getattr(self, name) < 0:
                raise ValueError(f"limit {name} must not be negative, got {getattr(self, name)!r}")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError(f"limit deadline must be positive, got {self.deadline!r}")
        if self.retrievals is not None and self.retrievals < 0:
            raise ValueError(f"limit retrievals must not be negative, got {self.retrievals!r}")
        if self.status_rate is not None and self.status_rate <= 0:
            raise ValueError(f"limit status_rate must be positive, got {self.status_rate!r}")
        if self.status_rate_window <= 0:
            raise ValueError(
                f"limit status_rate_window must be positive, got {self.status_rate_window!r}"
            )
        if not self.poll_tolerance <= 1:
            raise ValueError(
                f"limit poll_tolerance must be between 0 and 1, got {self.poll_tolerance!r}"
            )
        if self.retry_after_scope not in ("auto", "account", "job"):
            raise ValueError(
                "limit retry_after_scope must be 'auto', 'account' or 'job', got"
                f" {self.retry_after_scope!r}"
            )

    @classmethod
    def from_expect(cls, expect: Expect, *, time_scale: float = 1.0, **overrides: Any) -> Limits:
        """The limits a scenario's ``expect:`` sets at ``time_scale``, with ``overrides`` on top
        (``limits_for``)."""
        return limits_for(expect, time_scale=time_scale, overrides=overrides)

    @classmethod
    def from_strings(cls, values: Mapping[str, str], base: Limits | None = None) -> Limits:
        """``base`` (default: the defaults) with limits given as text on top (``limits_for``).

        Raises ``ValueError`` naming the first bad or unknown limit.
        """
        return limits_for(base=base, overrides=values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def limits_for(
    expect: Expect | None = None,
    *,
    time_scale: float = 1.0,
    base: Limits | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Limits:
    """The limits a run is judged by: what ``expect:`` sets (or ``base``, or the defaults), with
    ``overrides`` on top.

    ``time_scale`` is the factor the scenario was scaled by (``--time-scale``): durations in
    ``expect`` are already scaled, and it divides the status-rate budget and multiplies its
    window to match. The slacks are not scaled (they cover networks and HTTP-date seconds).
    An override given as text is parsed as the command line's options are (durations like
    '5m' or seconds; 'none' or 'off' for an optional limit); any other value is taken as it
    is. Raises ``ValueError`` naming the first unknown or bad limit.
    """
    if expect is not None and base is not None:
        raise TypeError("limits_for takes expect or base, not both")
    if expect is not None:
        rate = expect.status_rate
        base = Limits(
            max_retries=expect.max_retries,
            deadline=expect.deadline,
            retrievals=expect.retrievals,
            poll_tolerance=expect.poll_tolerance,
            status_rate=None if rate is None else rate / time_scale,
            status_rate_window=Limits.status_rate_window * time_scale,
            ack_limit=expect.ack_limit,
        )
    elif base is None:
        base = Limits()
    if not overrides:
        return base
    known = tuple(f.name for f in dataclasses.fields(Limits))
    changes: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in known:
            hint = did_you_mean(name, known)
            raise ValueError(f"unknown limit {name!r}{hint}; known: {', '.join(known)}")
        changes[name] = _convert(name, value) if isinstance(value, str) else value
    return dataclasses.replace(base, **changes)


_INTS = frozenset({"max_retries", "retrievals"})
_DURATIONS = frozenset(
    {"deadline", "deadline_slack", "status_rate_window", "ack_limit", "date_slack"}
)


def _convert(name: str, text: str) -> Any:
    value = text.strip()
    if value.lower() in ("none", "off", "") and name in ("deadline", "retrievals", "status_rate"):
        return None
    try:
        if name in _INTS:
            return int(value)
        if name in _DURATIONS:
            return parse_duration(value) if value[-1:].isalpha() else float(value)
        if name == "retry_after_scope":
            return value
        return float(value)
    except ValueError:
        kind = (
            "a whole number"
            if name in _INTS
            else "a duration like '90s'"
            if name in _DURATIONS
            else "a number"
        )
        raise ValueError(f"limit {name} must be {kind}, got {text!r}") from None
