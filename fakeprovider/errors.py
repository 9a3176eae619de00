"""The exception tree: one base, one error for bad scenarios, one for broken invariants."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "CheckReport",
    "FakeProviderError",
    "InvariantViolation",
    "NotInterceptedError",
    "Problem",
    "ScenarioError",
]


class FakeProviderError(Exception):
    """Base class of every error fakeprovider raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario document, located as precisely as we can."""

    file: str
    line: int  #: 1-based; 0 when the problem is the file itself
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        # line 0: about the file as a whole (it is missing or unreadable), not a place in it
        where = f"{self.file}: " if self.line == 0 else f"{self.file}:{self.line}:{self.column}: "
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"


class ScenarioError(FakeProviderError):
    """A scenario could not be loaded; ``problems`` lists every problem found, in document order."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class CheckReport(Protocol):
    """What ``InvariantViolation.report`` offers: a ``fakeprovider.invariants.Report``, described
    here by its shape so that the exception tree, which every layer uses, imports no checker."""

    @property
    def ok(self) -> bool: ...

    @property
    def violations(self) -> Sequence[Any]: ...

    def render(self, max_violations: int | None = ...) -> str: ...

    def rule_counts(self) -> dict[str, int]: ...

    def summary(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


class InvariantViolation(FakeProviderError, AssertionError):
    """A client broke one or more invariants; the message is the readable report."""

    #: The ``fakeprovider.invariants.Report`` behind the message (None when raised by hand).
    report: CheckReport | None = None


class NotInterceptedError(FakeProviderError):
    """A client that in-process mode does not intercept tried to reach an in-process fake."""
