"""limits.limits_for: the one way limits are made from ``expect:``, a base, and overrides."""

from __future__ import annotations

import dataclasses
import re

import pytest

from fakeprovider.limits import Limits, limits_for
from fakeprovider.scenario import Expect

EXPECT = Expect(max_retries=3, deadline=120.0, retrievals=1, status_rate=2.0, ack_limit=4.0)
KNOWN = ", ".join(f.name for f in dataclasses.fields(Limits))


def test_expect_sets_the_limits_and_the_time_scale_scales_the_status_rate_budget() -> None:
    limits = limits_for(EXPECT, time_scale=0.5)
    assert limits == Limits(
        max_retries=3,
        deadline=120.0,
        retrievals=1,
        poll_tolerance=EXPECT.poll_tolerance,
        status_rate=4.0,
        status_rate_window=5.0,
        ack_limit=4.0,
    )


def test_text_overrides_are_parsed_and_other_values_taken_as_they_are() -> None:
    limits = limits_for(
        EXPECT,
        overrides={"deadline": "2m", "status_rate": "off", "max_retries": 7, "ack_limit": 1.5},
    )
    assert (limits.deadline, limits.status_rate, limits.max_retries, limits.ack_limit) == (
        120.0,
        None,
        7,
        1.5,
    )


def test_a_base_takes_the_place_of_expect_and_the_defaults_are_the_last_resort() -> None:
    base = Limits(max_retries=1)
    assert limits_for(base=base, overrides={"deadline": "90s"}) == Limits(
        max_retries=1, deadline=90.0
    )
    assert limits_for() == Limits()
    assert limits_for(overrides={}) == Limits()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"speed": "1"}, f"unknown limit 'speed'; known: {KNOWN}"),
        (
            {"max_retry": 1},
            f"unknown limit 'max_retry' (did you mean 'max_retries'?); known: {KNOWN}",
        ),
        ({"deadline": "soon"}, "limit deadline must be a duration like '90s', got 'soon'"),
        ({"max_retries": -1}, "limit max_retries must not be negative, got -1"),
        ({"status_rate": True}, "limit status_rate must be a number, got True"),
    ],
)
def test_an_unknown_or_bad_override_is_one_value_error_naming_it(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        limits_for(EXPECT, overrides=overrides)


def test_expect_and_a_base_together_are_refused() -> None:
    with pytest.raises(TypeError, match=r"^limits_for takes expect or base, not both$"):
        limits_for(EXPECT, base=Limits())


def test_the_classmethods_are_limits_for() -> None:
    assert Limits.from_expect(EXPECT, time_scale=0.5, deadline="1m") == limits_for(
        EXPECT, time_scale=0.5, overrides={"deadline": "1m"}
    )
    base = Limits(max_retries=2)
    assert Limits.from_strings({"retrievals": "none"}, base) == limits_for(
        base=base, overrides={"retrievals": "none"}
    )
