"""docs/pytest.md, fixture reference: one runnable example per fixture, marker and helper."""

from __future__ import annotations

import asyncio

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from fakeprovider.inprocess import virtual_provider
from tests.examples.video_client import render


def test_fakeprovider_load(fakeprovider):
    fakeprovider.load("terminal-failure", time_scale=0.01)
    assert render(fakeprovider.url, "x", deadline=3) == "failed"
    report = fakeprovider.check()
    assert report.ok, report.render()


def test_async_client_in_process(fakeprovider_inprocess):
    async def main() -> int:
        async with httpx.AsyncClient(base_url=fakeprovider_inprocess.url) as client:
            answer = await client.post("/v1/jobs", json={"prompt": "x"})
            await asyncio.sleep(93)  # virtual: returns at once, the clock moves 93 s
            return (await client.get(f"/v1/jobs/{answer.json()['job_id']}")).json()["status"]

    assert asyncio.run(main()) == "succeeded"


@settings(max_examples=5, deadline=None)
@given(prompt=st.text(min_size=1, max_size=20).filter(str.strip))  # blank: a 422
def test_any_prompt(fakeprovider_session, prompt):
    with fakeprovider_session.example("quick-preview", inprocess=True) as fp:
        assert render(fp.url, prompt) == "succeeded"
        fp.assert_invariants()


def test_without_pytest_fixtures():
    with virtual_provider("long-render") as fp:
        assert render(fp.url, "x") == "succeeded"
        assert fp.clock.now() == 480.0
