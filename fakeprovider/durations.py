"""Durations as scenario authors write them: ``250ms``, ``7s``, ``2m``, ``1h``, ``1m30s``."""

from __future__ import annotations

import math
import re

__all__ = [
    "DURATION_PATTERN",
    "MAX_DURATION",
    "MAX_DURATION_TEXT",
    "format_duration",
    "parse_duration",
]

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$")
_SECONDS = re.compile(r"^\d+(?:\.\d+)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

#: The longest duration a scenario may write (before ``--time-scale``): 7 days.
MAX_DURATION = 7 * 24 * 3600.0
MAX_DURATION_TEXT = "7 days (168h, 604800s)"

#: What a duration string may look like (JSON Schema): ``1m30s``, ``250ms``, or bare seconds.
DURATION_PATTERN = r"^(?:\d+(?:\.\d+)?|(?:\d+(?:\.\d+)?(?:ms|s|m|h))+)$"


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (``'7s'``, ``'1m30s'``, or bare seconds such as ``'10'``).

    Raise ``ValueError`` when it is not a duration.
    """
    compact = text.replace(" ", "")
    if _SECONDS.match(compact):
        return float(compact)
    if not _WHOLE.match(compact):
        raise ValueError(text)
    return sum(float(n) * _UNIT[u] for n, u in _PART.findall(compact))


def format_duration(seconds: float) -> str:
    """The shortest readable spelling of ``seconds`` that parses back to the same value."""
    if seconds == 0:
        return "0s"
    millis = round(seconds * 1000)
    if math.isclose(millis, seconds * 1000, abs_tol=1e-6) and millis % 1000:
        return f"{millis}ms"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"
