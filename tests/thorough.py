"""How many examples a long Hypothesis test draws: a third of its count in the default run, all of
it in CI's slow step.

The long Hypothesis tests, most of them differential (a fast path held to the reference it
replaces: a judge to its rule, a streamed report to the in-memory one, a written line to
``json.dumps``), drew most of the default run's examples: twelve of its thirteen slowest tests,
178 of its 660 s of worker time, when it ran in 5:29 on a two-core machine at a slow moment,
over its five-minute budget. Each still runs in full in CI, after the default run.

``@thorough(n, ...)`` stands where ``@settings(max_examples=n, ...)`` stood. It marks the test
``thorough`` and draws ``n // 3`` examples (at least 10), or all ``n`` when the environment has
``FAKEPROVIDER_EXAMPLES=full``. ``ci/test-slow`` runs ``-m "slow or thorough"`` with it set, so
each CI run draws every example the default run leaves out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import settings

F = TypeVar("F", bound=Callable[..., Any])

#: The variable's name and the one value it takes.
VARIABLE = "FAKEPROVIDER_EXAMPLES"
FULL = "full"
#: The default run's share of a test's examples, and its floor.
SHARE = 3
FLOOR = 10


def _full() -> bool:
    value = os.environ.get(VARIABLE, "")
    if value not in ("", FULL):
        raise pytest.UsageError(
            f"{VARIABLE}={value!r}: expected {FULL!r} (every example) or unset (a third of them)"
        )
    return value == FULL


def count(max_examples: int) -> int:
    """The examples a test of ``max_examples`` draws in this run."""
    return max_examples if _full() else min(max_examples, max(FLOOR, max_examples // SHARE))


def thorough(max_examples: int, **kwargs: Any) -> Callable[[F], F]:
    """``settings(max_examples=count(max_examples), **kwargs)``, marked ``thorough``."""
    chosen = settings(max_examples=count(max_examples), **kwargs)

    def decorate(test: F) -> F:
        marked: F = pytest.mark.thorough(chosen(test))
        return marked

    return decorate
