"""docs/pytest.md, fixture reference: one runnable example per fixture, marker and helper."""

from __future__ import annotations

import asyncio
import time

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


def _render_and_store(base_url: str, storage: str) -> str:
    """The docs' client, then an upload of the video to the team's storage."""
    with httpx.Client(base_url=base_url) as client:
        job = client.post("/v1/jobs", json={"prompt": "x"}).json()
        while not job["done"]:
            time.sleep(job["poll_after_seconds"])  # virtual
            job = client.get(f"/v1/jobs/{job['job_id']}").json()
        video = client.get(f"/v1/jobs/{job['job_id']}/content").content
        return "stored" if client.put(storage, content=video).status_code == 201 else "lost"


def test_download_lands_in_storage(fakeprovider_inprocess, respx_mock):
    stored = respx_mock.put("https://storage.test/videos/out.mp4").respond(201)
    url = fakeprovider_inprocess.url
    assert _render_and_store(url, "https://storage.test/videos/out.mp4") == "stored"
    assert stored.call_count == 1
    assert [e.kind for e in fakeprovider_inprocess.journal][-1] == "content"


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
