"""RunSettings: the values a fake's parts share, frozen, and the one place time scaling is applied."""

from __future__ import annotations

import dataclasses
import re

import pytest

from fakeprovider.scenario import parse_scenario
from fakeprovider.settings import RunSettings

TIMED = """
seed: 1
jobs:
  - poll_after: 5s
    timeline:
      - status: queued
      - {at: 4s, status: processing}
      - {at: 90s, status: succeeded}
"""


def test_settings_cannot_be_changed_once_made() -> None:
    settings = RunSettings(epoch=1_000.0, time_scale=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.time_scale = 1.0  # type: ignore[misc]
    assert settings == RunSettings(epoch=1_000.0, time_scale=0.5)


@pytest.mark.parametrize("factor", [0.0, -1.0, 1000.5])
def test_a_time_scale_outside_0_to_1000_is_refused_with_the_scenarios_message(
    factor: float,
) -> None:
    message = f"time scale must be a number greater than 0 and at most 1000, got {factor!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        RunSettings(time_scale=factor)


def test_scale_multiplies_a_duration_by_the_time_scale() -> None:
    assert RunSettings(time_scale=0.25).scale(60.0) == 15.0
    assert RunSettings().scale(60.0) == 60.0


def test_play_scales_the_scenario_and_sets_its_seed_and_dialect_when_given() -> None:
    scenario = parse_scenario(TIMED)
    played = RunSettings(time_scale=0.1, seed=9, dialect="replicate").play(scenario)
    assert [step.at for step in played.jobs[0].timeline] == [
        None,
        pytest.approx(0.4),
        pytest.approx(9.0),
    ]
    assert played.jobs[0].poll_after == pytest.approx(0.5)
    assert (played.seed, played.dialect) == (9, "replicate")


def test_play_with_the_defaults_returns_the_scenario_as_it_is() -> None:
    scenario = parse_scenario(TIMED)
    assert RunSettings().play(scenario) is scenario
