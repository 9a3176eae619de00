"""docs/property-testing.md: the worked example fails as shown, and saves its minimal scenario."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fakeprovider.scenario import parse_scenario

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "property-testing.md"
EXAMPLE = ROOT / "docs" / "examples" / "test_my_client.py"


def shown_output() -> list[list[str]]:
    """The doc's output block, as runs of consecutive lines (split where it says [...])."""
    (block,) = re.findall(r"```text\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    return [part.strip("\n").splitlines() for part in block.split("[...]\n")]


def test_the_doc_shows_the_example_test_as_it_is() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = EXAMPLE.read_text(encoding="utf-8").index("@settings(")
    assert EXAMPLE.read_text(encoding="utf-8")[start:].strip() in text


def test_the_worked_example_fails_with_the_output_shown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_my_client=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    # Hypothesis 6.155 and older said "Falsifying example:" where it now says "Failing test case:".
    lines = [
        line.rstrip().replace("Falsifying example:", "Failing test case:")
        for line in result.outlines
    ]
    position = 0
    for run in shown_output():
        run = [line.rstrip() for line in run]
        found = next(
            (i for i in range(position, len(lines)) if lines[i : i + len(run)] == run), None
        )
        assert found is not None, f"not in the output (in order): {run[0]!r}"
        position = found + len(run)
    saved = pytester.path / "regressions" / "found.yaml"
    assert parse_scenario(saved.read_text()) == parse_scenario(
        "jobs:\n- timeline:\n  - status: succeeded\nname: generated\n"
    )
