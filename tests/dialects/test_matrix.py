"""The SDK matrix (``matrix.py``): every SDK's wait helper against every bundled scenario.

The table in ``docs/dialects/README.md`` is the record. The full matrix (96 cells, a few
minutes) is ``-m slow -k matrix``; the default run replays the cells that matter most and checks
that the table covers every cell. Rewrite the table with ``python -m tests.dialects.matrix --write``.
"""

from __future__ import annotations

import importlib.util

import pytest

from fakeprovider.scenario import bundled_scenarios

from .matrix import (
    BEGIN,
    DOC,
    END,
    SCENARIOS,
    SDKS,
    Cell,
    parse_table,
    render_table,
    run_cell,
)

_MODULES = {
    "openai": "openai",
    "runwayml": "runwayml",
    "replicate": "replicate",
    "fal-client": "fal_client",
    "google-genai": "google.genai",
    "lumaai": "lumaai",
}


def _installed(sdk: str) -> bool:
    try:
        return importlib.util.find_spec(_MODULES[sdk]) is not None
    except ModuleNotFoundError:
        return False


def _check(sdk: str, name: str) -> None:
    if not _installed(sdk):
        pytest.skip(f"{sdk} is not installed")
    documented = parse_table(DOC.read_text())[(sdk, name)]
    cell = run_cell(sdk, name)
    assert cell.text == documented, (
        f"{sdk} x {name}: the matrix table says {documented!r}, the run gave {cell.text!r}"
        " (rewrite the table with: python -m tests.dialects.matrix --write)"
    )


#: The cells the default run replays (about 15 s): each fix and each kind of finding.
KEY_CELLS = [
    ("runwayml", "rate-limit-budget"),  # concurrency 429 retried; status_rate judged scaled
    ("lumaai", "ambiguous-submit"),  # a lost create retried without Idempotency-Key
    ("replicate", "ambiguous-submit"),  # a lost create not retried: ReadError
    ("fal-client", "retry-after-seconds"),  # an app 503 is not retried
    ("google-genai", "completed-with-errors"),  # partial success reads as success
    ("openai", "auth-revoked"),  # 401 raised, not retried
    ("replicate", "cancelled"),
    ("runwayml", "slow-status"),
    ("lumaai", "deadline-expiry"),  # the poll loop gives up at the deadline
]


@pytest.mark.parametrize(("sdk", "name"), KEY_CELLS, ids=[f"{s}-{n}" for s, n in KEY_CELLS])
def test_matrix_key_cell(sdk: str, name: str) -> None:
    _check(sdk, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("sdk", list(SDKS))
def test_matrix_cell(sdk: str, name: str) -> None:
    _check(sdk, name)


def test_matrix_table_covers_every_sdk_and_bundled_scenario() -> None:
    assert sorted(SCENARIOS) == sorted(bundled_scenarios())
    cells = parse_table(DOC.read_text())
    assert set(cells) == {(sdk, name) for sdk in SDKS for name in SCENARIOS}
    text = DOC.read_text()
    assert text.index(BEGIN) < text.index(END)


def test_matrix_table_renders_and_parses_back() -> None:
    cells = {
        (sdk, name): Cell(sdk, name, "succeeded", "failed" if sdk == "openai" else "succeeded", ())
        for sdk in SDKS
        for name in SCENARIOS
    }
    table = render_table(cells)
    back = parse_table(f"{BEGIN}\n{table}\n{END}")
    assert back[("openai", "slow-success")] == "succeeded ≠; -"
    assert back[("lumaai", "cancelled")] == "succeeded; -"
    assert len(back) == len(SDKS) * len(SCENARIOS)


NEVER_ENDS = """
name: never-ends
description: A job that never ends, for an SDK whose wait takes no deadline.
jobs:
  - timeline:
      - status: queued
      - {at: 100ms, status: processing}
"""


def test_a_wait_with_no_deadline_is_cut_off_by_the_watchdog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """replicate's ``Prediction.wait()`` would poll forever: the cell's server stops at WAIT_CAP."""
    if not _installed("replicate"):
        pytest.skip("replicate is not installed")
    from fakeprovider.scenario import parse_scenario

    from . import matrix

    monkeypatch.setattr(matrix, "WAIT_CAP", 1.0)
    monkeypatch.setattr(matrix, "load_scenario", lambda name: parse_scenario(NEVER_ENDS))
    cell = matrix.run_cell("replicate", "never-ends")
    # the poll after the stop fails to connect (or, when cut mid-answer, to read)
    assert cell.outcome in ("raised ConnectError", "raised ReadError", "raised RemoteProtocolError")
    assert cell.expected == "timed_out"
