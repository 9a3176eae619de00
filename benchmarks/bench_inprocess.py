"""In-process mode: wall time of a 10-minute render per client library, and SDKs in-process vs
over sockets.

Part 1 plays a 10-minute job (poll hint 5 s: 1 submit, 120 status reads, 1 download) in virtual
time through httpx, httpx2 and requests (each client built fresh, its library already imported)
and prints the median wall time per library over ``--rounds`` (the target is < 50 ms).

Part 2 drives each installed SDK (openai and google-genai on httpx2; runwayml, replicate and
fal-client on httpx) through ``slow-success`` (a 93 s job) twice: in-process at full length in
virtual time, and over a real socket at time scale ``--scale`` (0.02: 1.9 s, as the SDK matrix
plays it) with the SDK's poll interval scaled alike. Each SDK's import is paid once, before
timing. Loopback only; every loop is bounded by the scenario.

    python benchmarks/bench_inprocess.py [--rounds 5] [--scale 0.02] [--skip-sdks]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from fakeprovider.inprocess import virtual_provider
from fakeprovider.provider import FakeProvider
from fakeprovider.server import ServerThread

TEN_MINUTES = """
name: ten-minute-render
jobs:
  - poll_after: 5s
    timeline:
      - status: queued
      - {at: 5s, status: processing, progress: 1}
      - {at: 10m, status: succeeded}
"""


def _poll(send: Callable[[str, str], Any]) -> int:
    """Submit, poll at the hint until done, download once; the number of requests sent."""
    job = send("POST", "/v1/jobs")
    sent = 1
    while not job["done"]:
        time.sleep(float(job.get("poll_after_seconds") or 5))
        job = send("GET", f"/v1/jobs/{job['job_id']}")
        sent += 1
    send("GET", f"/v1/jobs/{job['job_id']}/content")
    return sent + 1


Send = Callable[[str, str], Any]


def _reader(request: Callable[..., Any]) -> Send:
    def send(method: str, path: str) -> Any:
        answer = request(method, path, json={"prompt": "x"} if method == "POST" else None)
        return answer.json() if not path.endswith("/content") else answer.content

    return send


def _httpx(url: str) -> tuple[Callable[[], int], Callable[[], None]]:
    import httpx

    client = httpx.Client(base_url=url)
    return lambda: _poll(_reader(client.request)), client.close


def _httpx2(url: str) -> tuple[Callable[[], int], Callable[[], None]]:
    import httpx2

    client = httpx2.Client(base_url=url)
    return lambda: _poll(_reader(client.request)), client.close


def _requests(url: str) -> tuple[Callable[[], int], Callable[[], None]]:
    import requests

    session = requests.Session()
    return lambda: _poll(
        _reader(lambda m, p, **kw: session.request(m, url + p, **kw))
    ), session.close


def _httpx_async(url: str) -> tuple[Callable[[], int], Callable[[], None]]:
    import httpx

    client = httpx.AsyncClient(base_url=url)

    async def main() -> int:
        job = (await client.post("/v1/jobs", json={"prompt": "x"})).json()
        sent = 1
        while not job["done"]:
            await asyncio.sleep(float(job.get("poll_after_seconds") or 5))
            job = (await client.get(f"/v1/jobs/{job['job_id']}")).json()
            sent += 1
        await client.get(f"/v1/jobs/{job['job_id']}/content")
        await client.aclose()
        return sent + 1

    return lambda: asyncio.run(main()), lambda: None


#: label -> (module to import first, make(url) -> (render, close)); the client is built before
#: the timed render (building one costs 40-70 ms for its TLS context, sockets or not).
LIBRARIES: dict[str, tuple[str, Callable[[str], tuple[Callable[[], int], Callable[[], None]]]]] = {
    "httpx": ("httpx", _httpx),
    "httpx (async)": ("httpx", _httpx_async),
    "httpx2": ("httpx2", _httpx2),
    "requests": ("requests", _requests),
}


def ten_minute_renders(rounds: int) -> None:
    print("10-minute render in-process (1 submit, 120 status reads, 1 download), median:")
    for label, (module, make) in LIBRARIES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            print(f"  {label:<14} not installed")
            continue
        walls, cpus = [], []
        for _ in range(rounds):
            with virtual_provider(TEN_MINUTES) as fp:
                render, close = make(fp.url)
                wall, cpu = time.perf_counter(), time.process_time()
                sent = render()
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                close()
                assert fp.clock.now() >= 600.0, fp.clock.now()
        print(
            f"  {label:<14} {statistics.median(walls) * 1000:6.1f} ms wall"
            f" ({statistics.median(cpus) * 1000:6.1f} ms CPU) for {sent} requests"
        )


# -- SDKs: (module, dialect, run(url, interval)) ----------------------------------------------


def _openai(url: str, interval: float) -> None:
    import openai

    client = openai.OpenAI(api_key="sk-test", base_url=f"{url}/v1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        video = client.videos.create_and_poll(prompt="a cat", model="sora-2", seconds="4")
        client.videos.download_content(video.id).read()
    client.close()


def _genai(url: str, interval: float) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(
        vertexai=True, api_key="k", http_options=types.HttpOptions(base_url=f"{url}/")
    )
    operation = client.models.generate_videos(
        model="veo-3.0-generate-001", source=types.GenerateVideosSource(prompt="a cat")
    )
    while not operation.done:
        time.sleep(interval)
        operation = client.operations.get(operation)
    client.close()


def _runway(url: str, interval: float) -> None:
    import runwayml
    import runwayml.lib.polling as polling

    saved = (polling.POLL_TIME, polling.POLL_JITTER)
    polling.POLL_TIME, polling.POLL_JITTER = interval, 0
    try:
        client = runwayml.RunwayML(api_key="key_test", base_url=url)
        task = client.text_to_video.create(
            model="gen4.5", prompt_text="a cat", ratio="1280:720", duration=5
        )
        task.wait_for_task_output(timeout=600)
        client.close()
    finally:
        polling.POLL_TIME, polling.POLL_JITTER = saved


def _replicate(url: str, interval: float) -> None:
    import replicate

    client = replicate.Client(api_token="r8_test", base_url=url)
    client.poll_interval = interval
    prediction = client.models.predictions.create(model="google/veo-3", input={"prompt": "a cat"})
    prediction.wait()
    client._client.close()


def _fal(url: str, interval: float) -> None:
    import fal_client
    import fal_client.client as fal_module

    saved = fal_module.QUEUE_URL_FORMAT
    fal_module.QUEUE_URL_FORMAT = f"{url}/"
    try:
        client = fal_client.SyncClient(key="fal-key-id:fal-key-secret")
        client.subscribe("fal-ai/veo3", arguments={"prompt": "a cat"}, interval=interval)
        client._client.close()
    finally:
        fal_module.QUEUE_URL_FORMAT = saved


SDKS: dict[str, tuple[str, str, Callable[[str, float], None]]] = {
    "openai (httpx2)": ("openai", "openai-videos", _openai),
    "google-genai (httpx2)": ("google.genai", "google-veo", _genai),
    "runwayml (httpx)": ("runwayml", "runway", _runway),
    "replicate (httpx)": ("replicate", "replicate", _replicate),
    "fal-client (httpx)": ("fal_client", "fal", _fal),
}


def sdk_cells(rounds: int, scale: float) -> None:
    print(f"SDK cells, slow-success: in-process (virtual time) vs socket (time scale {scale}):")
    for label, (module, dialect, run) in SDKS.items():
        try:
            importlib.import_module(module)
        except ImportError:
            print(f"  {label:<22} not installed")
            continue
        inprocess, socket = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            with virtual_provider("slow-success", dialect=dialect) as fp:
                run(fp.url, 5.0)
                requests = len(fp.journal)
            inprocess.append(time.perf_counter() - started)
            started = time.perf_counter()
            provider = FakeProvider("slow-success", dialect=dialect, time_scale=scale)
            with ServerThread(provider) as server:
                run(server.url, 5.0 * scale)
            socket.append(time.perf_counter() - started)
        print(
            f"  {label:<22} in-process {statistics.median(inprocess) * 1000:7.1f} ms"
            f" ({requests} requests)   socket {statistics.median(socket) * 1000:7.1f} ms"
            f"   ratio {statistics.median(socket) / statistics.median(inprocess):5.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scale", type=float, default=0.02)
    parser.add_argument("--skip-sdks", action="store_true")
    options = parser.parse_args()
    ten_minute_renders(options.rounds)
    if not options.skip_sdks:
        sdk_cells(max(1, min(options.rounds, 3)), options.scale)


if __name__ == "__main__":
    main()
