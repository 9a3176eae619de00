"""The generated contract suite: one client adapter, one test per scenario."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._session import FakeproviderSession

__all__ = ["DEFAULT_DEADLINE", "Adapter", "contract_suite"]

#: An adapter runs the client against ``base_url`` with a deadline in seconds and returns what
#: the client reported: succeeded, failed, cancelled, timed_out or completed_with_errors.
Adapter = Callable[[str, float], "str | Awaitable[str]"]

#: The deadline (scenario seconds) for scenarios whose ``expect:`` sets none.
DEFAULT_DEADLINE = 900.0


def contract_suite(
    adapter: Adapter,
    *,
    scenarios: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    inprocess: bool = False,
    time_scale: float = 1.0,
    deadline: float | None = None,
) -> Callable[..., None]:
    """A test function parametrized by scenario name; bind it to a ``test_`` name in a module.

    Each test runs ``adapter(base_url, deadline_seconds)`` against a fresh fake playing the
    scenario (the session's real server, or in-process in virtual time with ``inprocess=True``),
    then asserts the invariants with the scenario's ``expect:`` limits and, when the scenario's
    ``expect:`` names an outcome, that the adapter returned it (recomputed with
    ``expected_outcome`` when ``deadline`` is given). ``deadline`` (scenario seconds) overrides every scenario's
    ``expect.deadline``; both are scaled by ``time_scale``. Select scenarios with ``-k``.
    """
    if scenarios is None:
        from fakeprovider.scenario import bundled_scenarios

        names = list(bundled_scenarios())
    else:
        names = list(scenarios)
    skipped = set(exclude)
    names = [name for name in names if name not in skipped]
    if not names:
        raise ValueError(
            "contract_suite() needs at least one scenario; scenarios and exclude left none."
        )

    def test_contract(
        fakeprovider_session: FakeproviderSession, fakeprovider_scenario: str
    ) -> None:
        run_contract(
            fakeprovider_session,
            fakeprovider_scenario,
            adapter,
            inprocess=inprocess,
            time_scale=time_scale,
            deadline=deadline,
        )

    test_contract.__doc__ = f"The client honours the contract of each of {len(names)} scenario(s)."
    parametrize = pytest.mark.parametrize("fakeprovider_scenario", names)
    return parametrize(test_contract)


def run_contract(
    session: FakeproviderSession,
    name: str,
    adapter: Adapter,
    *,
    inprocess: bool,
    time_scale: float,
    deadline: float | None,
) -> None:
    """One contract test: run the adapter, then check the invariants and the outcome."""
    overrides: dict[str, Any] = {"time_scale": time_scale}
    if deadline is not None:
        overrides["deadline"] = deadline
    with session.example(name, inprocess=inprocess, **overrides) as fp:
        limit = fp.scenario.expect.deadline
        if limit is None:
            limit = fp.provider.settings.scale(DEFAULT_DEADLINE)
        result = adapter(fp.url, limit)
        outcome = asyncio.run(_awaited(result)) if inspect.isawaitable(result) else result
        expected: str | None = fp.scenario.expect.outcome
        if expected is not None and deadline is not None:
            expected = fp.expected_outcome(deadline=limit)
        report = fp.check(deadline=limit)
        problems = []
        if expected is not None and outcome != expected:
            problems.append(
                f"The client reported {outcome!r} for scenario {name!r} but a correct client"
                f" reports {expected!r} (deadline {limit:g} s)."
            )
        if not report.ok:
            problems.append(report.render())
        elif problems:
            problems.append("timeline:\n" + fp.timeline())
        if problems:
            from fakeprovider.errors import InvariantViolation

            if report.ok:
                raise AssertionError("\n\n".join(problems))
            error = InvariantViolation("\n\n".join(problems))
            error.report = report
            raise error


async def _awaited(result: Awaitable[str]) -> str:
    return await result
