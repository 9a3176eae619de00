"""The SDK matrix (``matrix.py``): every SDK's wait helper against every bundled scenario.

``EXPECTED`` below states, per cell, what the SDK must report and which invariants the checker
must find: written by hand from the SDKs' source and their findings (docs/dialects/README.md),
not by the code under test. A cell's run must give exactly that text. The table in
docs/dialects/README.md is rendered from ``EXPECTED`` (``python -m tests.dialects.matrix
--write``) and checked against it here.

The full matrix (160 cells, several minutes) is ``-m slow -k matrix``; the default run replays
the key cells and checks the table. ``python -m tests.dialects.matrix [SDK...]`` runs cells
and prints those that differ from ``EXPECTED``.
"""

from __future__ import annotations

import importlib.util

import pytest

from fakeprovider.scenario import bundled_scenarios

from .matrix import (
    BEGIN,
    DOC,
    END,
    SCALES,
    SCENARIOS,
    SDKS,
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
    "genai-interactions": "google.genai",
    "lumaai": "lumaai",
    "volcengine-ark": "volcenginesdkarkruntime",
    "dashscope": "dashscope",
    "dashscope-1x": "dashscope",
}

#: Per SDK, per bundled scenario: ``outcome[ ≠]; invariants`` (``≠``: the outcome differs from
#: the scenario's ``expected_outcome``; ``-``: no invariant broken). Every official SDK's helper
#: is clean on ``slow-success``; each broken invariant is a finding of that SDK, explained in
#: docs/dialects/README.md ("Findings"). Cells in ``SCALES`` run slower, where their verdict is
#: certain.
EXPECTED: dict[str, dict[str, str]] = {
    "openai": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; honours_poll_after",  # poll() keeps the first hint (15 s), not 30 s
        "terminal-failure": "failed; -",
        "cancelled": "failed ≠; -",
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "succeeded ≠; deadline, single_retrieval",  # poll() takes no deadline
        "transient-5xx": "succeeded; -",
        "retry-after-seconds": "succeeded; -",
        "rate-limited": "succeeded; -",
        "rate-limit-budget": "succeeded; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "succeeded; no_resubmission",  # lost create retried, no key
        "auth-revoked": "raised AuthenticationError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised InternalServerError 502 ≠; -",
    },
    "runwayml": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "timed_out ≠; stops_at_terminal",  # never stops on CANCELLED
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "timed_out; -",
        "transient-5xx": "succeeded; -",
        "retry-after-seconds": "succeeded; -",
        "rate-limited": "succeeded; -",
        "rate-limit-budget": "succeeded; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "succeeded; no_resubmission",  # lost create retried, no key
        "auth-revoked": "raised AuthenticationError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised InternalServerError 502 ≠; -",
    },
    "replicate": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "cancelled; -",
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "succeeded ≠; deadline, single_retrieval",  # wait() takes no deadline
        "transient-5xx": "succeeded; -",
        "retry-after-seconds": "succeeded; -",
        "rate-limited": "succeeded; honours_retry_after",  # HTTP-dates not understood
        "rate-limit-budget": "1x raised ReplicateError 429 + 3x succeeded ≠; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "raised ReadError ≠; -",
        "auth-revoked": "raised ReplicateError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised ReplicateError 502 ≠; -",
    },
    "fal-client": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "raised FalClientHTTPError 422 ≠; no_premature_retrieval",  # COMPLETED+error
        "cancelled": "raised FalClientHTTPError 400 ≠; no_premature_retrieval",  # COMPLETED+error
        "completed-with-errors": "succeeded ≠; -",
        # after its client_timeout, subscribe cancels, and its worker reads the status once more
        # and fetches the result (the driver waits for that worker: the cell used to judge
        # whichever of the worker and the driver's close() came first)
        "deadline-expiry": "timed_out; no_premature_retrieval, stops_at_terminal",
        "transient-5xx": "raised FalClientHTTPError 503 ≠; -",
        "retry-after-seconds": "raised FalClientHTTPError 503 ≠; -",
        "rate-limited": "succeeded; honours_retry_after",  # Retry-After ignored
        "rate-limit-budget": "succeeded; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "succeeded; no_resubmission",  # retried on any TransportError
        "auth-revoked": "raised FalClientHTTPError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised FalClientHTTPError 502 ≠; -",
    },
    "google-genai": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "cancelled; -",
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "timed_out; -",
        "transient-5xx": "raised ServerError 503 ≠; -",
        "retry-after-seconds": "raised ServerError 503 ≠; -",
        "rate-limited": "raised ClientError 429 ≠; -",
        "rate-limit-budget": "1x raised ClientError 429 + 3x succeeded ≠; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "raised ReadError ≠; -",
        "auth-revoked": "raised ClientError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised ServerError 502 ≠; -",
    },
    "genai-interactions": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "cancelled; -",
        "completed-with-errors": "completed_with_errors; -",
        "deadline-expiry": "timed_out; -",
        "transient-5xx": "succeeded; -",
        "retry-after-seconds": "succeeded; -",
        "rate-limited": "succeeded; -",
        "rate-limit-budget": "succeeded; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "raised APIConnectionError ≠; -",  # connection errors never retried
        "auth-revoked": "raised AuthenticationError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised InternalServerError 502 ≠; -",  # 4 retries per call: within max_retries 5
    },
    "lumaai": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "failed ≠; -",
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "timed_out; -",
        "transient-5xx": "succeeded; -",
        "retry-after-seconds": "succeeded; -",
        "rate-limited": "succeeded; -",
        "rate-limit-budget": "succeeded; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "succeeded; no_resubmission",  # lost create retried, no key
        "auth-revoked": "raised AuthenticationError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised InternalServerError 502 ≠; -",
    },
    "volcengine-ark": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "cancelled; -",
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "timed_out; -",  # the poll loop gives up at the deadline
        # its retries back off 0.75-1.0 s, then 1.5-2.0 s, and never read Retry-After: the retry
        # of a 503 whose Retry-After says 2 s (this cell runs at 0.34, see SCALES) comes sooner
        "transient-5xx": "succeeded; honours_retry_after",
        "retry-after-seconds": "succeeded; honours_retry_after",
        # the HTTP-dates here (0.12-0.2 s scaled, 1 s resolution, 1 s of slack) are shorter
        # than its backoff: clean, whatever it reads (the 5xx cells show the finding)
        "rate-limited": "succeeded; -",
        # the concurrency 429 on a create is retried after 0.5 s, before its Retry-After: 1
        # the sample loop's 0.1 s is twice a second at this cell's scale (SCALES); the create
        # retries twice, 0.75-2 s apart, before any slot frees
        "rate-limit-budget": "1x raised ArkRateLimitError 429 + 3x succeeded ≠; honours_retry_after, status_rate",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "succeeded; no_resubmission",  # any exception is retried, no key
        "auth-revoked": "raised ArkAuthenticationError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised ArkInternalServerError 502 ≠; -",
    },
    "dashscope": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",  # jobs.wait raises on FAILED; the driver reads it
        "cancelled": "cancelled; -",  # and on CANCELED
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "timed_out; -",  # jobs.wait(timeout=deadline) raises
        "transient-5xx": "succeeded; -",  # the v2 transport waits Retry-After (capped at 8 s)
        "retry-after-seconds": "succeeded; -",
        "rate-limited": "succeeded; -",
        "rate-limit-budget": "succeeded; -",
        "slow-status": "succeeded; -",
        "ambiguous-submit": "succeeded; no_resubmission",  # every method retried, no key
        "auth-revoked": "raised AuthenticationError 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised APIStatusError 502 ≠; -",
    },
    # the 1.x calls return an HTTP error as the answer: the driver shows it as ErrorResponse
    "dashscope-1x": {
        "slow-success": "succeeded; -",
        "quick-preview": "succeeded; -",
        "long-render": "succeeded; -",
        "terminal-failure": "failed; -",
        "cancelled": "cancelled; -",
        "completed-with-errors": "succeeded ≠; -",
        "deadline-expiry": "timed_out; -",  # wait(wait_timeout=deadline)
        # wait retries a 503 after its own interval, Retry-After unread, and returns the 502
        "transient-5xx": "raised ErrorResponse 502 ≠; honours_retry_after",
        "retry-after-seconds": "succeeded; honours_retry_after",
        "rate-limited": "raised ErrorResponse 429 ≠; -",  # any error but 503/504 ends the wait
        "rate-limit-budget": "1x raised ErrorResponse 429 + 3x succeeded ≠; status_rate",  # no create retry; wait polls every 1 s
        "slow-status": "succeeded; -",
        # a dropped connection is retried once (_send_with_retry), the create included
        "ambiguous-submit": "succeeded; no_resubmission",
        "auth-revoked": "raised ErrorResponse 401 ≠; -",
        "duplicate-webhook": "succeeded; -",
        "forged-webhook": "succeeded; -",
        "outage": "raised ErrorResponse 502 ≠; -",
    },
}


def _installed(sdk: str) -> bool:
    try:
        return importlib.util.find_spec(_MODULES[sdk]) is not None
    except ModuleNotFoundError:
        return False


def _check(sdk: str, name: str) -> None:
    if not _installed(sdk):
        pytest.skip(f"{sdk} is not installed")
    cell = run_cell(sdk, name)
    assert cell.text == EXPECTED[sdk][name], (
        f"{sdk} x {name}: expected {EXPECTED[sdk][name]!r}, the run gave {cell.text!r}"
    )


#: The cells the default run replays (about 20 s): each verdict fix and each kind of finding.
KEY_CELLS = [
    ("openai", "slow-success"),  # the hint is on status reads only: the helper is clean
    ("google-genai", "quick-preview"),  # the inline video is the one retrieval
    ("runwayml", "rate-limit-budget"),  # the 4th create THROTTLED; status_rate judged scaled
    ("lumaai", "ambiguous-submit"),  # a lost create retried without Idempotency-Key
    ("replicate", "ambiguous-submit"),  # a lost create not retried: ReadError
    ("fal-client", "retry-after-seconds"),  # an app 503 is not retried
    ("openai", "auth-revoked"),  # 401 raised, not retried
    ("lumaai", "deadline-expiry"),  # the poll loop gives up at the deadline
    # retries that never read Retry-After (transient-5xx shows the same at scale 0.34: 21 s)
    ("volcengine-ark", "retry-after-seconds"),
    ("dashscope", "ambiguous-submit"),  # the v2 transport retries a lost create, no key
]


@pytest.mark.parametrize(("sdk", "name"), KEY_CELLS, ids=[f"{s}-{n}" for s, n in KEY_CELLS])
def test_matrix_key_cell(sdk: str, name: str) -> None:
    _check(sdk, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("sdk", list(SDKS))
def test_matrix_cell(sdk: str, name: str) -> None:
    _check(sdk, name)


def test_expected_covers_every_sdk_and_bundled_scenario() -> None:
    assert sorted(SCENARIOS) == sorted(bundled_scenarios())
    assert list(EXPECTED) == list(SDKS) == list(_MODULES)
    for sdk, cells in EXPECTED.items():
        assert list(cells) == list(SCENARIOS), sdk
    assert set(SCALES) <= {(sdk, name) for sdk in SDKS for name in SCENARIOS}


def test_every_official_helper_is_clean_on_slow_success() -> None:
    assert {sdk: cells["slow-success"] for sdk, cells in EXPECTED.items()} == dict.fromkeys(
        SDKS, "succeeded; -"
    )


def test_the_table_in_the_docs_is_the_expected_one() -> None:
    text = DOC.read_text()
    assert text.index(BEGIN) < text.index(END)
    documented = parse_table(text)
    stated = {(sdk, name): cell for sdk, cells in EXPECTED.items() for name, cell in cells.items()}
    assert documented == stated, "rewrite the table with: python -m tests.dialects.matrix --write"
    assert render_table(EXPECTED) in text


def test_matrix_table_renders_and_parses_back() -> None:
    cells = {
        sdk: dict.fromkeys(SCENARIOS, "failed ≠; -" if sdk == "openai" else "succeeded; -")
        for sdk in SDKS
    }
    table = render_table(cells)
    assert table.splitlines()[0] == "| scenario | " + " | ".join(SDKS) + " |"
    assert table.splitlines()[2].startswith("| `slow-success` (succeeded) | failed ≠; - |")
    back = parse_table(f"{BEGIN}\n{table}\n{END}")
    assert back[("openai", "slow-success")] == "failed ≠; -"
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
