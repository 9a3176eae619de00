"""The handle a test gets: where the fake is, what it recorded, and the invariant checks.

Only the standard library is imported here at module level; ``fakeprovider`` is imported when a
method runs, so that loading the plugin stays cheap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakeprovider.clock import Clock
    from fakeprovider.invariants import Limits, Report
    from fakeprovider.journal import Journal
    from fakeprovider.provider import FakeProvider
    from fakeprovider.scenario import Scenario

__all__ = [
    "PLAY_OPTIONS",
    "ProviderHandle",
    "SearchDirs",
    "load_planned",
    "locate_scenario",
    "plan_scenario",
    "prepare_scenario",
]

#: Where a scenario path is looked for, in order: (folder, how the error names it).
SearchDirs = Sequence[tuple[Path, str]]


def locate_scenario(source: str | Path, search_dirs: SearchDirs) -> str | Path:
    """``source`` as ``load_scenario`` takes it: a file found in ``search_dirs`` (in order; an
    absolute path as it is), else a bundled name, else YAML text unchanged.

    Raises ``ScenarioError`` listing every place looked in when there is no such scenario.
    """
    from fakeprovider.errors import Problem, ScenarioError
    from fakeprovider.scenario import bundled_scenarios

    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source
    relative = Path(source)
    if relative.is_absolute():
        places = [f"{relative}"]
        if relative.is_file():
            return relative
    else:
        places = []
        seen: set[Path] = set()
        for folder, label in search_dirs:
            candidate = folder / relative
            if candidate in seen:
                continue
            seen.add(candidate)
            if candidate.is_file():
                return candidate
            places.append(f"{candidate} ({label})")
    bundled = bundled_scenarios()
    if isinstance(source, str) and source in bundled:
        return source
    from fakeprovider._suggest import did_you_mean

    names = ", ".join(bundled)
    hint = did_you_mean(str(source), bundled)
    message = (
        f"no such scenario file or bundled scenario; looked for {', '.join(places)}"
        f" and a bundled scenario named {str(source)!r}{hint} (bundled: {names})"
    )
    raise ScenarioError([Problem(str(source), 0, 0, "", message)])


#: Marker and ``load`` keywords that change how the scenario is played (the rest set ``expect:``).
PLAY_OPTIONS = ("time_scale", "seed", "dialect")
_DURATION_EXPECTS = frozenset({"deadline", "ack_limit"})


def plan_scenario(
    source: Scenario | str | Path,
    *,
    time_scale: float = 1.0,
    seed: int | None = None,
    dialect: str | None = None,
    search_dirs: SearchDirs | None = None,
    **expect: Any,
) -> tuple[Scenario, dict[str, Any]]:
    """``source`` loaded with its ``expect:`` overrides, and how to play it: the checked
    ``time_scale``, ``seed`` and ``dialect`` (``RunSettings`` fields, applied by the provider).

    Overrides are in scenario time (``deadline="2m"`` or seconds) and are scaled with the rest.
    With ``search_dirs`` (the plugin passes the test file's folder, then the rootdir), a path is
    looked for there, then among the bundled names (``locate_scenario``); without, as
    ``load_scenario`` does (the working directory).
    """
    from fakeprovider._suggest import did_you_mean
    from fakeprovider.durations import parse_duration
    from fakeprovider.scenario import Expect, Scenario, check_time_scale, load_scenario

    if isinstance(source, Scenario):
        scenario = source
    elif search_dirs is not None:
        scenario = load_scenario(locate_scenario(source, search_dirs))
    else:
        scenario = load_scenario(source)
    if expect:
        known = [f.name for f in dataclasses.fields(Expect)]
        for name in expect:
            if name not in known:
                hint = did_you_mean(name, [*PLAY_OPTIONS, *known])
                raise TypeError(
                    f"Unknown fakeprovider option {name!r}{hint}; use time_scale, seed, dialect or an"
                    f" expect: key ({', '.join(known)})."
                )
        values: dict[str, Any] = {
            name: parse_duration(value)
            if name in _DURATION_EXPECTS and isinstance(value, str)
            else value
            for name, value in expect.items()
        }
        scenario = dataclasses.replace(
            scenario, expect=dataclasses.replace(scenario.expect, **values)
        )
    check_time_scale(time_scale)
    if dialect is not None:
        from fakeprovider.dialects import dialect_name

        dialect_name(dialect)
    return scenario, {"time_scale": time_scale, "seed": seed, "dialect": dialect}


def prepare_scenario(
    source: Scenario | str | Path,
    *,
    time_scale: float = 1.0,
    seed: int | None = None,
    dialect: str | None = None,
    search_dirs: SearchDirs | None = None,
    **expect: Any,
) -> Scenario:
    """``source`` loaded, with ``expect:`` overrides, scaled by ``time_scale``, seed and dialect
    set: the scenario as a provider plays it (``plan_scenario`` says how)."""
    from fakeprovider.settings import RunSettings

    scenario, play = plan_scenario(
        source,
        time_scale=time_scale,
        seed=seed,
        dialect=dialect,
        search_dirs=search_dirs,
        **expect,
    )
    return RunSettings(**play).play(scenario)


def load_planned(provider: FakeProvider, scenario: Scenario, play: dict[str, Any]) -> None:
    """Play ``scenario`` on ``provider`` from scratch, as ``play`` says (``plan_scenario``)."""
    provider.load(scenario, settings=dataclasses.replace(provider.settings, **play))


class ProviderHandle:
    """A fake provider for one test (or one Hypothesis example): ``url``, ``journal``, checks.

    The same API whether the fake is a real server (``fakeprovider``) or in-process
    (``fakeprovider_inprocess``).
    """

    def __init__(
        self,
        provider: FakeProvider,
        url: str,
        *,
        mode: str,
        search_dirs: SearchDirs | None = None,
    ) -> None:
        self.provider = provider
        self.url = url
        #: ``"server"`` or ``"inprocess"``.
        self.mode = mode
        #: Where ``load()`` looks for a scenario path (the test's folder, then the rootdir).
        self.search_dirs = search_dirs
        self._start = provider.engine.start

    # -- what is playing -----------------------------------------------------------------

    @property
    def journal(self) -> Journal:
        """Every request of this test so far (list-like; ``.last``, ``.filter(kind=...)``)."""
        return self.provider.journal

    @property
    def scenario(self) -> Scenario:
        return self.provider.scenario

    @property
    def clock(self) -> Clock:
        return self.provider.clock

    @property
    def time_scale(self) -> float:
        """The time scale the scenario plays at: ``limits()`` divides the ``expect.status_rate``
        budget by it (durations in ``expect`` are already scaled)."""
        return self.provider.settings.time_scale

    def load(self, scenario: Scenario | str | Path, **overrides: Any) -> None:
        """Play ``scenario`` from now on, from scratch (journal emptied); keywords as the marker.

        A path is looked for next to the test file, then in the rootdir, then among the bundled
        names, as the marker's is."""
        load_planned(
            self.provider, *plan_scenario(scenario, search_dirs=self.search_dirs, **overrides)
        )
        self._start = self.provider.engine.start

    # -- checks --------------------------------------------------------------------------

    def limits(self, **limits: Any) -> Limits:
        """The scenario's ``expect:`` limits with ``limits`` on top (durations as '2m' or seconds)."""
        from fakeprovider.limits import limits_for

        return limits_for(self.scenario.expect, time_scale=self.time_scale, overrides=limits)

    def check(self, **limits: Any) -> Report:
        """The invariant report for this test's journal (``report.ok``, ``.render()``)."""
        from fakeprovider.invariants import check

        return check(self.journal, self.limits(**limits))

    def assert_invariants(self, **limits: Any) -> Report:
        """Raise ``InvariantViolation`` (an AssertionError) with each violation and its timeline."""
        from fakeprovider.invariants import assert_invariants

        return assert_invariants(self.journal, self.limits(**limits))

    def expected_outcome(self, deadline: float | str | None = None) -> str:
        """What a correct client reports for the first job, given its ``deadline`` from submit."""
        from fakeprovider.invariants import expected_outcome

        return expected_outcome(self.scenario, deadline)

    # -- display -------------------------------------------------------------------------

    def write_report(self, path: str | Path, *, title: str = "fakeprovider report") -> Path:
        """Write the HTML timeline report of this journal (judged as ``check()``) to ``path``."""
        from fakeprovider.htmlreport import write_html_report
        from fakeprovider.invariants import check

        header = self.journal.header
        entries = [*([header] if header is not None else []), *self.journal.snapshot()]
        return write_html_report(check(entries, self.limits()), path, title=title)

    def timeline(self) -> str:
        """Every journal entry on one line: seq, time since the scenario started, request, answer."""
        from fakeprovider._table import entry_line

        entries = self.journal.snapshot()
        if not entries:
            return "(no requests)"
        return "\n".join(entry_line(e, self._start) for e in entries)

    def __repr__(self) -> str:
        return f"<fakeprovider {self.mode} {self.scenario.name!r} at {self.url}: {len(self.journal)} entries>"
