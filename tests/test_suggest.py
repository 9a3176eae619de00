"""``_suggest``: the one "did you mean" helper behind every "unknown ..." message."""

from __future__ import annotations

import re

import pytest

from fakeprovider._suggest import closest, did_you_mean
from fakeprovider.dialects import DIALECTS, get_dialect
from fakeprovider.scenario import DIALECT_NAMES, bundled_scenarios

STATUSES = ("queued", "processing", "succeeded", "failed", "cancelled", "completed_with_errors")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("procesing", "processing"),
        ("succeded", "succeeded"),
        ("Failed", "failed"),  # case alone always counts as close
        ("canceled", "cancelled"),
        ("completed-with-errors", "completed_with_errors"),
    ],
)
def test_a_misspelt_value_gets_the_allowed_one_it_is_closest_to(typed: str, meant: str) -> None:
    assert closest(typed, STATUSES) == meant
    assert did_you_mean(typed, STATUSES) == f" (did you mean {meant!r}?)"


@pytest.mark.parametrize("typed", ["done", "x", "", "running-forever"])
def test_a_value_like_none_of_the_allowed_ones_gets_no_suggestion(typed: str) -> None:
    assert closest(typed, STATUSES) is None
    assert did_you_mean(typed, STATUSES) == ""


@pytest.mark.parametrize("typed", [3, None, True, ["queued"], {"status": "queued"}])
def test_only_strings_are_compared(typed: object) -> None:
    assert did_you_mean(typed, [*STATUSES, "3", "None", "True"]) == ""


def test_the_value_itself_is_never_suggested() -> None:
    assert closest("queued", ["queued"]) is None


def test_bundled_scenario_names_and_dialects_are_suggested() -> None:
    assert closest("slow-succes", bundled_scenarios()) == "slow-success"
    assert closest("transient_5xx", bundled_scenarios()) == "transient-5xx"
    assert closest("openai", DIALECT_NAMES) == "openai-videos"
    message = (
        "unknown dialect 'replicat' (did you mean 'replicate'?); known dialects:"
        f" {', '.join(sorted(DIALECTS))}"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        get_dialect("replicat")
