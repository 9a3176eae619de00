"""Official SDKs, unmodified, against their dialects in-process and in virtual time.

openai 3.x and google-genai 3.x send through httpx2, runwayml, replicate and fal-client through
httpx, dashscope through requests. Each scenario plays at full length (slow-success takes 93 s of virtual time) in well
under a second of wall time once the SDK is imported. Each test skips alone when its SDK is
not installed.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any

import pytest

from fakeprovider.errors import NotInterceptedError
from fakeprovider.inprocess import VirtualProvider, virtual_provider
from fakeprovider.invariants import Limits, check

HEADERS = {"X-Client-Id": "sdk-under-test"}


def violated(fp: VirtualProvider, **overrides: Any) -> set[str]:
    limits = Limits.from_expect(fp.scenario.expect, **overrides)
    return {v.invariant for v in check(fp.journal, limits).violations}


def kinds(fp: VirtualProvider) -> list[tuple[str, int | None]]:
    """Every entry but the plain successful status reads: (kind, status code)."""
    return [
        (e.kind, e.status_code)
        for e in fp.journal
        if e.kind != "status" or (e.status_code or 0) >= 300
    ]


def test_openai_waits_for_a_video_over_httpx2() -> None:
    openai = pytest.importorskip("openai")
    with virtual_provider("slow-success", dialect="openai-videos") as fp:
        client = openai.OpenAI(api_key="sk-test", base_url=f"{fp.url}/v1", default_headers=HEADERS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # videos.* is @deprecated
            video = client.videos.create_and_poll(
                prompt="a cat", model="sora-2", seconds="4", size="1280x720"
            )
            content = client.videos.download_content(video.id).read()
        client.close()
        assert (video.status, len(content)) == ("completed", 1048576)
        assert kinds(fp) == [("submit", 200), ("content", 200)]
        assert fp.clock.now() == 95.0  # its 5 s poll hint, after the 93 s render
        assert violated(fp) == set()


def test_openai_honours_http_date_retry_after_in_virtual_time() -> None:
    openai = pytest.importorskip("openai")
    with virtual_provider("rate-limited", dialect="openai-videos") as fp:
        client = openai.OpenAI(api_key="sk-test", base_url=f"{fp.url}/v1", default_headers=HEADERS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            video = client.videos.create_and_poll(
                prompt="a cat", model="sora-2", seconds="4", size="1280x720"
            )
        client.close()
        assert video.status == "completed"
        faults = [e.fault for e in fp.journal if e.status_code == 429]
        assert faults[:2] == ["throttled-rfc850", "throttled-asctime"]
        assert "honours_retry_after" not in violated(fp)


def test_google_genai_polls_an_operation_over_httpx2() -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    with virtual_provider("slow-success", dialect="google-veo") as fp:
        client = genai.Client(
            vertexai=True,
            api_key="test-api-key",
            http_options=types.HttpOptions(base_url=f"{fp.url}/", headers=HEADERS),
        )
        operation = client.models.generate_videos(
            model="veo-3.0-generate-001", source=types.GenerateVideosSource(prompt="a cat")
        )
        while not operation.done:  # no waiter: poll as its docstring shows
            time.sleep(10)
            operation = client.operations.get(operation)
        client.close()
        video = operation.result.generated_videos[0].video
        assert (len(video.video_bytes), video.mime_type) == (1048576, "video/mp4")
        assert kinds(fp) == [("submit", 200)]
        assert fp.clock.now() == 100.0
        assert violated(fp, retrievals=None) == set()


def test_runwayml_waits_for_a_task_over_httpx() -> None:
    runwayml = pytest.importorskip("runwayml")
    with virtual_provider("slow-success", dialect="runway") as fp:
        client = runwayml.RunwayML(api_key="key_test", base_url=fp.url, default_headers=HEADERS)
        task = client.text_to_video.create(
            model="gen4.5", prompt_text="a cat", ratio="1280:720", duration=5
        )
        done = task.wait_for_task_output(timeout=600)  # polls every 6 s +/- 1.5 s
        client.close()
        assert done.status == "SUCCEEDED"
        assert kinds(fp) == [("submit", 200)]
        assert 93.0 <= fp.clock.now() <= 93.0 + 7.5
        assert violated(fp, retrievals=None) == set()


def test_replicate_waits_for_a_prediction_over_httpx() -> None:
    replicate = pytest.importorskip("replicate")
    with virtual_provider("retry-after-seconds", dialect="replicate") as fp:
        client = replicate.Client(api_token="r8_test", base_url=fp.url, headers=dict(HEADERS))
        client.poll_interval = 5.0
        prediction = client.models.predictions.create(
            model="google/veo-3", input={"prompt": "a cat"}
        )
        prediction.wait()
        client._client.close()  # replicate.Client has no close() of its own
        assert prediction.status == "succeeded"
        assert [kind for kind in kinds(fp) if kind[1] == 503] == [("status", 503), ("status", 503)]
        assert fp.clock.now() >= 50.0
        assert violated(fp, retrievals=None) == set()


def test_fal_client_subscribes_over_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    fal_client = pytest.importorskip("fal_client")
    import fal_client.client as fal_module

    with virtual_provider("slow-success", dialect="fal") as fp:
        monkeypatch.setattr(fal_module, "QUEUE_URL_FORMAT", f"{fp.url}/")  # no base-URL option
        client = fal_client.SyncClient(key="fal-key-id:fal-key-secret")
        result = client.subscribe(
            "fal-ai/veo3", arguments={"prompt": "a cat"}, with_logs=True, interval=5.0
        )
        client._client.close()
        assert result["video"]["file_size"] == 1048576
        assert kinds(fp) == [("submit", 200), ("content", 200)]
        assert fp.clock.now() == 95.0
        assert violated(fp) == set()


async def _genai_async_wait(url: str, **options: Any) -> Any:
    from google import genai
    from google.genai import types

    client = genai.Client(
        vertexai=True,
        api_key="test-api-key",
        http_options=types.HttpOptions(base_url=f"{url}/", headers=HEADERS, **options),
    )
    operation = await client.aio.models.generate_videos(
        model="veo-3.0-generate-001", source=types.GenerateVideosSource(prompt="a cat")
    )
    while not operation.done:
        await asyncio.sleep(10)
        operation = await client.aio.operations.get(operation)
    await client.aio.aclose()
    return operation


def test_google_genai_async_runs_in_virtual_time_on_an_httpx2_transport() -> None:
    pytest.importorskip("google.genai")
    httpx2 = pytest.importorskip("httpx2")
    transport = {"async_client_args": {"transport": httpx2.AsyncHTTPTransport()}}
    with virtual_provider("slow-success", dialect="google-veo") as fp:
        operation = asyncio.run(_genai_async_wait(fp.url, **transport))
        assert operation.result.generated_videos[0].video.mime_type == "video/mp4"
        assert fp.clock.now() == pytest.approx(100.0)
        assert violated(fp, retrievals=None) == set()


@pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"  # google-genai's, not ours
)
def test_google_genai_async_on_aiohttp_is_told_to_use_the_real_server() -> None:
    pytest.importorskip("google.genai")
    pytest.importorskip("aiohttp")  # google-genai's async client prefers aiohttp when installed
    with virtual_provider("slow-success", dialect="google-veo") as fp:
        with pytest.raises(
            NotInterceptedError, match=r"the fakeprovider fixture, or fakeprovider serve\.$"
        ):
            asyncio.run(_genai_async_wait(fp.url))
        assert fp.journal.snapshot() == []


def test_dashscope_waits_for_a_task_over_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    dashscope = pytest.importorskip("dashscope")
    with virtual_provider("slow-success", dialect="dashscope") as fp:
        monkeypatch.setattr(dashscope, "base_http_api_url", f"{fp.url}/api/v1")
        created = dashscope.VideoSynthesis.async_call(
            model="wan2.2-t2v-plus", prompt="a cat", api_key="sk-test", headers=HEADERS
        )
        done = dashscope.VideoSynthesis.wait(
            created.output.task_id, api_key="sk-test", headers=HEADERS
        )
        assert (done.status_code, done.output.task_status) == (200, "SUCCEEDED")
        assert kinds(fp) == [("submit", 200)]
        assert fp.clock.now() >= 93.0  # its own 1 s..5 s sleeps, all virtual
        assert violated(fp, retrievals=None) == set()
