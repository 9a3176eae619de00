"""HTTP-dates in the three RFC 9110 section 5.6.7 forms, and ``Retry-After`` values."""

from __future__ import annotations

import datetime
import email.utils
import math
import time
from typing import Literal

__all__ = ["DateForm", "format_http_date", "parse_http_date", "parse_retry_after"]

DateForm = Literal["imf", "rfc850", "asctime"]

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_LONG_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_http_date(unix: float, form: DateForm = "imf") -> str:
    """``unix`` (rounded down to the second) as an HTTP-date in ``form``.

    ``imf``: ``Sun, 06 Nov 1994 08:49:37 GMT``; ``rfc850``: ``Sunday, 06-Nov-94 08:49:37 GMT``;
    ``asctime``: ``Sun Nov  6 08:49:37 1994``.
    """
    t = time.gmtime(math.floor(unix))
    clock = f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    if form == "imf":
        return (
            f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} {clock} GMT"
        )
    if form == "rfc850":
        year = t.tm_year % 100
        return f"{_LONG_DAYS[t.tm_wday]}, {t.tm_mday:02d}-{_MONTHS[t.tm_mon - 1]}-{year:02d} {clock} GMT"
    if form == "asctime":
        return f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} {clock} {t.tm_year}"
    raise ValueError(f"unknown HTTP-date form {form!r}; expected 'imf', 'rfc850' or 'asctime'")


def parse_http_date(text: str) -> float | None:
    """Unix time of an HTTP-date in any of the three forms, or None if it is not one."""
    try:
        parsed = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # asctime carries no zone; HTTP-dates are always GMT
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


def parse_retry_after(value: str, *, date_of_response: float) -> float | None:
    """The Unix time before which a client must not retry, or None if ``value`` is unusable.

    delay-seconds count from the response (``date_of_response``, a Unix time); an HTTP-date is
    absolute.
    """
    text = value.strip()
    if text.isdigit():
        return date_of_response + int(text)
    return parse_http_date(text)
