""" "Did you mean ...?": the one helper every "unknown ..." and "expected one of ..." message uses.

``did_you_mean('procesing', STATUSES)`` is ``" (did you mean 'processing'?)"``, or ``""`` when
no allowed value is close enough (``difflib``'s ratio of at least 0.6, as the standard library's
own ``get_close_matches``; a value that differs only in case always counts as close). Messages put
it right after the value they quote::

    unknown key 'every_nth' (did you mean 'every'?); expected one of: name, route, ...
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]

#: How alike a value and a suggestion must be (``difflib.SequenceMatcher.ratio``).
CUTOFF = 0.6


def closest(value: object, allowed: Iterable[object]) -> str | None:
    """The allowed value closest to ``value``, if one is close enough; None otherwise.

    Only strings are compared (a number or a list is never "almost" a status), and ``value``
    itself is never suggested.
    """
    if not isinstance(value, str) or not value:
        return None
    candidates = [a for a in dict.fromkeys(allowed) if isinstance(a, str) and a != value]
    for candidate in candidates:
        if candidate.casefold() == value.casefold():
            return candidate
    found = difflib.get_close_matches(value, candidates, n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(value: object, allowed: Iterable[object]) -> str:
    """``" (did you mean 'x'?)"`` for the allowed value closest to ``value``, or ``""``."""
    match = closest(value, allowed)
    return "" if match is None else f" (did you mean {match!r}?)"
