"""tests/thorough.py: a long Hypothesis test draws a third of its examples by default, every one
with FAKEPROVIDER_EXAMPLES=full, and is marked so that ci/test-slow can select it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.thorough import count

HERE = Path(__file__).resolve().parent

COUNTING = """
from hypothesis import given, strategies as st
from tests.thorough import thorough

drawn = []

@thorough(90)
@given(st.integers())
def test_counted(number):
    drawn.append(number)

def test_how_many():
    print(f"drew {len(drawn)}")

def test_plain():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A suite laid out as ours, with tests/thorough.py and a test that counts its examples."""
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "__init__.py").write_text("")
    shutil.copy(HERE / "thorough.py", pytester.path / "tests" / "thorough.py")
    (pytester.path / "tests" / "test_counting.py").write_text(COUNTING)
    pytester.makeini(
        "[pytest]\nmarkers =\n    thorough: drawn in full with FAKEPROVIDER_EXAMPLES=full\n"
    )
    return pytester


def _drawn(result: pytest.RunResult) -> str:
    found = re.search(r"drew \d+", result.stdout.str())
    assert found is not None, result.stdout.str()
    return found[0]


def test_the_default_run_draws_a_third_of_the_examples(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAKEPROVIDER_EXAMPLES", raising=False)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=3)
    assert _drawn(result) == "drew 30"


def test_full_draws_every_example_and_the_marker_selects_only_the_thorough_test(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKEPROVIDER_EXAMPLES", "full")
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-s", "-m", "thorough")
    result.assert_outcomes(passed=1, deselected=2)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    assert _drawn(result) == "drew 90"


def test_a_misspelt_value_stops_the_run_saying_what_it_takes(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKEPROVIDER_EXAMPLES", "Full")
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret != pytest.ExitCode.OK
    assert (
        "FAKEPROVIDER_EXAMPLES='Full': expected 'full' (every example) or unset (a third of them)"
    ) in result.stdout.str()


@pytest.mark.parametrize(
    ("full", "share"), [(300, 100), (200, 66), (60, 20), (29, 10), (12, 10), (5, 5)]
)
def test_a_share_is_a_third_with_a_floor_of_ten_never_more_than_the_full_count(
    full: int, share: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAKEPROVIDER_EXAMPLES", raising=False)
    assert count(full) == share
    monkeypatch.setenv("FAKEPROVIDER_EXAMPLES", "full")
    assert count(full) == full
