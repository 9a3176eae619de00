"""docs/pytest.md, "Test your client in 5 minutes": every step, runnable."""

from __future__ import annotations

import pytest
from fakeprovider_pytest import contract_suite

from tests.examples.video_client import render


# Step 1: a real server (any client, any language); time_scale compresses the scenario.
@pytest.mark.fakeprovider("slow-success", time_scale=0.01)
def test_render_against_a_real_server(fakeprovider):
    assert render(fakeprovider.url, "a lighthouse", deadline=3) == "succeeded"
    fakeprovider.assert_invariants()


# Step 2: in-process and in virtual time (httpx clients): an 8-minute render in milliseconds.
@pytest.mark.fakeprovider("long-render")
def test_long_render_in_virtual_time(fakeprovider_inprocess):
    fp = fakeprovider_inprocess
    assert render(fp.url, "a lighthouse") == fp.expected_outcome()
    fp.assert_invariants()
    assert [e.kind for e in fp.journal][-1] == "content"


# Step 3: overrides, and the deadline path.
@pytest.mark.fakeprovider("deadline-expiry", deadline="2m")
def test_gives_up_at_the_deadline(fakeprovider_inprocess):
    assert render(fakeprovider_inprocess.url, "x", deadline=120) == "timed_out"
    fakeprovider_inprocess.assert_invariants()


# Step 4: one adapter, one test per scenario (select with -k, e.g. -k "rate-limited").
def adapter(base_url: str, deadline: float) -> str:
    return render(base_url, "a lighthouse", deadline=deadline)


test_contract = contract_suite(
    adapter,
    scenarios=["slow-success", "long-render", "rate-limited", "terminal-failure"],
    inprocess=True,
)
