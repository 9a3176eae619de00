"""How a fake plays its scenarios: the values several parts share, fixed at construction.

``FakeProvider`` builds one ``RunSettings`` from its arguments and its clock and hands it to the
dialect it makes (and the epoch to the engine). Nothing sets these values on a part afterwards:
a part that needs them is given them when it is made. ``scale`` and ``play`` are the one place
time scaling is applied to a run (``Scenario.scaled`` says which scenario fields are durations).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .scenario import Scenario, check_time_scale

__all__ = ["RunSettings"]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What every part of a running fake agrees on.

    ``epoch`` is the Unix time of clock reading 0 (the clock's own), for the timestamps and
    HTTP-dates a fake shows; ``time_scale`` (``--time-scale``) multiplies every duration the
    scenario scripts and every duration a request asks for (Replicate's ``Prefer: wait=N``);
    ``seed`` and ``dialect``, when set, replace the scenario's own.
    """

    epoch: float = 0.0
    time_scale: float = 1.0
    seed: int | None = None
    dialect: str | None = None

    def __post_init__(self) -> None:
        check_time_scale(self.time_scale)

    def scale(self, seconds: float) -> float:
        """``seconds`` of scenario time as played at this time scale."""
        return seconds * self.time_scale

    def play(self, scenario: Scenario) -> Scenario:
        """``scenario`` as this fake plays it: at this time scale, with this seed and in this
        dialect when they are set (the dialect's name is checked when the dialect is made)."""
        if self.time_scale != 1.0:
            scenario = scenario.scaled(self.time_scale)
        if self.seed is not None:
            scenario = dataclasses.replace(scenario, seed=self.seed)
        if self.dialect is not None:
            scenario = dataclasses.replace(scenario, dialect=self.dialect)  # type: ignore[arg-type]
        return scenario
