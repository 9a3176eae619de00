"""In-process mode's interceptions: httpx's transports (beside a test's own respx mocks), httpx2
(sync and async) and requests clients, and the error for others."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakeprovider.dialects import DIALECTS
from fakeprovider.errors import NotInterceptedError
from fakeprovider.inprocess import DEFAULT_BASE_URL, virtual_provider
from fakeprovider.invariants import assert_invariants

TOKEN = {"Authorization": "Bearer sk-test-fakeprovider"}
REAL_GETADDRINFO = socket.getaddrinfo

NOT_INTERCEPTED = (
    "A request for the in-process fake at 'fakeprovider.invalid' came from an HTTP client that"
    " in-process mode does not intercept (it serves httpx, httpx2, requests and urllib3); test"
    " this client against a real server instead: the fakeprovider fixture, or fakeprovider serve."
)

DROPS = """
name: drops
jobs:
  - timeline: [{status: queued}, {at: 5s, status: succeeded}]
faults:
  - {name: reset-first, route: submit, nth: 1, action: reset}
  - {name: lose-second, route: submit, nth: 2, action: lose_response, delay: 2s}
"""

#: One request: (method, path, json body) -> (status, headers, parsed JSON or raw bytes).
Send = Callable[[str, str, Any], tuple[int, dict[str, str], Any]]


def careful(send: Send, deadline: float = 900) -> str:
    """A polite poller: honours poll hints and delay-seconds or HTTP-date Retry-After."""
    started = time.monotonic()

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        for _ in range(5):
            status, headers, payload = send(method, path, body)
            if status not in (429, 503):
                return status, payload
            raw = {k.lower(): v for k, v in headers.items()}.get("retry-after", "2")
            if raw.isdigit():
                time.sleep(float(raw))
            else:
                from email.utils import parsedate_to_datetime

                time.sleep(max(0.0, parsedate_to_datetime(raw).timestamp() - time.time()) + 1)
        raise AssertionError("still throttled after 5 attempts")

    _, job = call("POST", "/v1/jobs", {"prompt": "a lighthouse"})
    while not job["done"]:
        if time.monotonic() - started > deadline:
            return "timed_out"
        time.sleep(float(job.get("poll_after_seconds") or 5))
        _, job = call("GET", f"/v1/jobs/{job['job_id']}")
    if job["status"] == "succeeded":
        status, _ = call("GET", f"/v1/jobs/{job['job_id']}/content")
        assert status == 200
    return str(job["status"])


def _decoded(content: bytes, content_type: str) -> Any:
    import json

    return json.loads(content) if "json" in content_type else content


# -- httpx -------------------------------------------------------------------------------------

VIDEO = "https://storage.test/video.mp4"


def test_httpx_requests_for_other_hosts_pass_through_and_the_patch_is_undone() -> None:

    real = (httpx.HTTPTransport.handle_request, httpx.AsyncHTTPTransport.handle_async_request)
    with virtual_provider("slow-success"):
        assert httpx.HTTPTransport.handle_request is not real[0]
        assert httpx.AsyncHTTPTransport.handle_async_request is not real[1]
        with pytest.raises(httpx.ConnectError):
            httpx.get("http://127.0.0.1:9/", timeout=1)
    assert (
        httpx.HTTPTransport.handle_request,
        httpx.AsyncHTTPTransport.handle_async_request,
    ) == real


def test_a_request_in_the_httpx_patch_when_the_last_fake_leaves_still_passes_through() -> None:
    """Another thread's request that entered the patch just before the last fake left (a
    webhook sender's, say) goes on to httpx's own method, not to an error."""
    with virtual_provider("slow-success"):
        patched = httpx.HTTPTransport.handle_request  # as a thread already inside it holds it
    with httpx.HTTPTransport() as transport, pytest.raises(httpx.ConnectError):
        patched(transport, httpx.Request("GET", "http://127.0.0.1:9/"))


@pytest.mark.parametrize("respx_first", [True, False], ids=["respx-first", "fake-first"])
def test_a_tests_own_respx_mocks_answer_other_hosts_beside_the_fake(respx_first: bool) -> None:
    """respx (its default ``assert_all_mocked``) mocks the storage host; the fake's requests
    never reach respx's router, whichever was entered first."""
    import respx

    fake = virtual_provider("slow-success")
    mock = respx.mock()
    first, second = (mock, fake) if respx_first else (fake, mock)
    with first, second:
        stored = mock.get(VIDEO).respond(200, content=b"video")
        with httpx.Client(base_url=fake.url) as client:
            submitted = client.post("/v1/jobs", json={"prompt": "a"})
            downloaded = client.get(VIDEO)
        assert (submitted.status_code, submitted.json()["status"]) == (202, "queued")
        assert (downloaded.status_code, downloaded.content) == (200, b"video")
        assert stored.call_count == 1
        assert [e.kind for e in fake.journal] == ["submit"]


@pytest.mark.parametrize("respx_first", [True, False], ids=["respx-first", "fake-first"])
def test_a_respx_router_that_mocks_everything_leaves_the_fakes_requests_to_the_fake(
    respx_first: bool,
) -> None:
    """``assert_all_mocked=False`` answers every unrouted request with an empty 200: not the
    fake's (through respx, the fake's requests got that 200 and never reached the fake)."""
    import respx

    fake = virtual_provider("slow-success")
    mock = respx.mock(assert_all_mocked=False)
    first, second = (mock, fake) if respx_first else (fake, mock)
    with first, second:
        submitted = httpx.post(f"{fake.url}/v1/jobs", json={"prompt": "a"})
        elsewhere = httpx.get(VIDEO)
    assert (submitted.status_code, submitted.json()["status"]) == (202, "queued")
    assert (elsewhere.status_code, elsewhere.content) == (200, b"")
    assert [e.kind for e in fake.journal] == ["submit"]


def test_an_async_clients_respx_mocks_answer_other_hosts_beside_the_fake() -> None:
    import respx

    async def main(url: str) -> tuple[int, bytes]:
        async with httpx.AsyncClient(base_url=url) as client:
            submitted = await client.post("/v1/jobs", json={"prompt": "a"})
            downloaded = await client.get(VIDEO)
        return submitted.status_code, downloaded.content

    with virtual_provider("slow-success") as fp, respx.mock() as mock:
        mock.get(VIDEO).respond(200, content=b"video")
        assert asyncio.run(main(fp.url)) == (202, b"video")
        assert [e.kind for e in fp.journal] == ["submit"]


def test_an_httpx_clients_own_transport_runs_around_the_fake() -> None:
    """A transport the client wraps around ``HTTPTransport`` (retries, logging) sees every
    request and answer; the fake answers inside it."""

    seen: list[tuple[str, int]] = []

    class Logging(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = self.inner.handle_request(request)
            seen.append((request.url.path, response.status_code))
            return response

    with (
        virtual_provider("slow-success") as fp,
        httpx.Client(base_url=fp.url, transport=Logging()) as client,
    ):
        client.post("/v1/jobs", json={"prompt": "a"})
    assert seen == [("/v1/jobs", 202)]


def test_an_httpx_stream_reads_the_fakes_body_as_it_comes() -> None:
    """The body is a stream, as a socket gives it: ``iter_raw`` reads it in a ``stream`` block."""

    with virtual_provider("slow-success") as fp, httpx.Client(base_url=fp.url) as client:
        job = client.post("/v1/jobs", json={"prompt": "a"}).json()
        fp.clock.advance(600)
        assert client.get(f"/v1/jobs/{job['job_id']}").json()["status"] == "succeeded"
        with client.stream("GET", f"/v1/jobs/{job['job_id']}/content") as response:
            assert not response.is_stream_consumed
            body = b"".join(response.iter_raw())
        assert body
        assert len(body) == int(response.headers["content-length"])
        assert response.http_version == "HTTP/1.1"


# -- httpx2 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["long-render", "rate-limited"])
def test_an_httpx2_client_runs_in_virtual_time(scenario: str) -> None:
    httpx2 = pytest.importorskip("httpx2")
    with virtual_provider(scenario) as fp, httpx2.Client(base_url=fp.url, headers=TOKEN) as client:

        def send(method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
            answer = client.request(method, path, json=body)
            return (
                answer.status_code,
                dict(answer.headers),
                _decoded(answer.content, answer.headers.get("content-type", "")),
            )

        assert careful(send) == "succeeded"
        assert_invariants(fp.journal)
        assert (fp.journal.last.kind, fp.journal.last.status_code) == ("content", 200)
        if scenario == "long-render":
            assert fp.clock.now() == 480.0
        else:
            faults = [e.fault for e in fp.journal if e.status_code == 429]
            assert faults[:2] == ["throttled-rfc850", "throttled-asctime"]


def test_an_httpx2_async_client_runs_in_virtual_time_with_overlapping_requests() -> None:
    httpx2 = pytest.importorskip("httpx2")
    scenario = """
name: slow-read
jobs:
  - timeline: [{status: queued}, {at: 1s, status: succeeded}]
faults:
  - {name: slow-first-read, route: status, nth: 1, delay: 6s}
"""

    async def main(url: str) -> list[tuple[float, int]]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with httpx2.AsyncClient(base_url=url) as client:
            job = (await client.post("/v1/jobs", json={"prompt": "x"})).json()["job_id"]

            async def read_after(wait: float) -> tuple[float, int]:
                await asyncio.sleep(wait)
                answer = await client.get(f"/v1/jobs/{job}")
                return loop.time() - start, answer.status_code

            return list(await asyncio.gather(read_after(5), read_after(10)))

    with virtual_provider(scenario) as fp:
        assert asyncio.run(main(fp.url)) == [(11.0, 200), (10.0, 200)]
        assert [(e.kind, e.received_at, e.completed_at) for e in fp.journal] == [
            ("submit", 0.0, 0.0),
            ("status", 5.0, 11.0),
            ("status", 10.0, 10.0),
        ]


def test_scripted_drops_are_httpx2_transport_errors() -> None:
    httpx2 = pytest.importorskip("httpx2")
    with virtual_provider(DROPS) as fp, httpx2.Client(base_url=fp.url) as client:
        with pytest.raises(httpx2.ReadError, match=r"^\[Errno 104\] Connection reset by peer$"):
            client.post("/v1/jobs", json={"prompt": "x"})
        with pytest.raises(
            httpx2.RemoteProtocolError, match=r"^Server disconnected without sending a response\.$"
        ):
            client.post("/v1/jobs", json={"prompt": "x"})
        answer = client.post("/v1/jobs", json={"prompt": "x"})
        assert (answer.status_code, answer.headers["content-length"]) == (
            202,
            str(len(answer.content)),
        )
        assert [(e.kind, e.dropped, e.status_code) for e in fp.journal] == [
            ("submit", "reset", None),
            ("submit", "lose_response", None),
            ("submit", None, 202),
        ]
        assert fp.clock.now() == 2.0


def test_httpx2_requests_for_other_hosts_pass_through_and_the_patch_is_undone() -> None:
    httpx2 = pytest.importorskip("httpx2")
    import httpcore2

    real = httpcore2.ConnectionPool.handle_request
    with virtual_provider("slow-success"):
        assert httpcore2.ConnectionPool.handle_request is not real
        with pytest.raises(httpx2.ConnectError):
            httpx2.get("http://127.0.0.1:9/", timeout=1)
    assert httpcore2.ConnectionPool.handle_request is real


# -- requests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["long-render", "rate-limited"])
def test_a_requests_client_runs_in_virtual_time(scenario: str) -> None:
    requests = pytest.importorskip("requests")
    with virtual_provider(scenario) as fp, requests.Session() as session:
        session.headers.update(TOKEN)

        def send(method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
            answer = session.request(method, fp.url + path, json=body, timeout=30)
            return (
                answer.status_code,
                dict(answer.headers),
                _decoded(answer.content, answer.headers.get("content-type", "")),
            )

        assert careful(send) == "succeeded"
        assert_invariants(fp.journal)
        if scenario == "long-render":
            assert fp.clock.now() == 480.0


def test_a_mounted_urllib3_retry_honours_retry_after_in_virtual_time() -> None:
    """requests' own retries (``HTTPAdapter(max_retries=Retry(...))``) still run: only the
    connection is replaced, so a 429 is retried after its ``Retry-After`` on the virtual clock."""
    requests = pytest.importorskip("requests")
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    scenario = """
name: throttled-twice
jobs:
  - timeline: [{status: queued}, {at: 1s, status: succeeded}]
faults:
  - {name: throttle, route: status, nth: [1, 2], status: 429, retry_after: 7s}
expect: {max_retries: 3}
"""
    retry = Retry(total=3, status_forcelist=[429], backoff_factor=0)
    with virtual_provider(scenario) as fp, requests.Session() as session:
        session.mount("http://", HTTPAdapter(max_retries=retry))
        job = session.post(f"{fp.url}/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        answer = session.get(f"{fp.url}/v1/jobs/{job}")
        assert (answer.status_code, answer.json()["status"]) == (200, "succeeded")
        assert [(e.kind, e.status_code, e.received_at) for e in fp.journal] == [
            ("submit", 202, 0.0),
            ("status", 429, 0.0),
            ("status", 429, 7.0),
            ("status", 200, 14.0),
        ]


def test_scripted_drops_are_the_connection_errors_requests_raises() -> None:
    requests = pytest.importorskip("requests")
    with virtual_provider(DROPS) as fp, requests.Session() as session:
        with pytest.raises(requests.ConnectionError) as reset:
            session.post(f"{fp.url}/v1/jobs", json={"prompt": "x"})
        assert str(reset.value) == (
            "('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))"
        )
        with pytest.raises(requests.ConnectionError) as lost:
            session.post(f"{fp.url}/v1/jobs", json={"prompt": "x"})
        assert str(lost.value) == (
            "('Connection aborted.', RemoteDisconnected('Remote end closed connection without"
            " response'))"
        )
        answer = session.post(f"{fp.url}/v1/jobs", json={"prompt": "x"}, stream=True)
        assert (answer.status_code, answer.reason) == (202, "Accepted")
        assert answer.json()["status"] == "queued"
        assert [(e.kind, e.dropped, e.status_code) for e in fp.journal] == [
            ("submit", "reset", None),
            ("submit", "lose_response", None),
            ("submit", None, 202),
        ]


def test_requests_for_other_hosts_pass_through_and_the_patch_is_undone() -> None:
    requests = pytest.importorskip("requests")
    from urllib3.connectionpool import HTTPConnectionPool

    real = HTTPConnectionPool._make_request
    with virtual_provider("slow-success"):
        assert HTTPConnectionPool._make_request is not real
        with pytest.raises(requests.ConnectionError, match="Connection refused"):
            requests.get("http://127.0.0.1:9/", timeout=1)
    assert HTTPConnectionPool._make_request is real


# -- several fakes, and clients that are not intercepted ----------------------------------------


def test_two_fakes_at_different_origins_each_serve_their_own_requests() -> None:
    httpx2 = pytest.importorskip("httpx2")
    requests = pytest.importorskip("requests")
    first = virtual_provider("slow-success", patch_time=False, base_url="http://one.test:8080")
    second = virtual_provider("cancelled", patch_time=False, base_url="https://two.test")
    with first, second:
        assert httpx2.post(f"{first.url}/v1/jobs", json={"prompt": "a"}).status_code == 202
        assert requests.post(f"{second.url}/v1/jobs", json={"prompt": "b"}).status_code == 202
        assert requests.get(f"{first.url}/v1/jobs").status_code == 200
    assert [e.kind for e in first.journal] == ["submit", "list"]
    assert [e.kind for e in second.journal] == ["submit"]


def test_urllib_gets_an_error_naming_the_supported_clients() -> None:
    with virtual_provider("slow-success") as fp:
        with pytest.raises(NotInterceptedError) as caught:
            urllib.request.urlopen(f"{fp.url}/v1/jobs", timeout=5)
        assert str(caught.value) == NOT_INTERCEPTED
        assert fp.journal.snapshot() == []
    assert socket.getaddrinfo is REAL_GETADDRINFO


def test_aiohttp_gets_an_error_naming_the_supported_clients() -> None:
    aiohttp = pytest.importorskip("aiohttp")

    async def main(url: str) -> None:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/v1/jobs"):
            pass  # pragma: no cover - the request never leaves

    with virtual_provider("slow-success") as fp:
        with pytest.raises(NotInterceptedError) as caught:
            asyncio.run(main(fp.url))
        assert str(caught.value) == NOT_INTERCEPTED


def test_an_httpx_client_reaches_a_fake_whose_base_url_has_a_port() -> None:

    with virtual_provider("slow-success", base_url="http://fake.test:8080") as fp:
        answer = httpx.post(f"{fp.url}/v1/jobs", json={"prompt": "x"})
        assert (answer.status_code, answer.json()["status"]) == (202, "queued")
        assert [e.kind for e in fp.journal] == ["submit"]


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"^base_url='ftp://x' is not an http:// or https:// URL with a host\.$"
    ):
        virtual_provider("slow-success", base_url="ftp://x").__enter__()


def test_the_name_lookup_guard_minds_the_fakes_port() -> None:
    """A fake on 127.0.0.1:8080 does not stop other clients reaching 127.0.0.1 on other ports."""
    with virtual_provider("slow-success", patch_time=False, base_url="http://127.0.0.1:8080"):
        assert socket.getaddrinfo("127.0.0.1", 9)
        with pytest.raises(
            NotInterceptedError, match=r"^A request for the in-process fake at '127\.0\.0\.1'"
        ):
            urllib.request.urlopen("http://127.0.0.1:8080/v1/jobs", timeout=5)


# -- hostile requests through httpx in-process --------------------------------------------------

#: Each dialect's routes (submit, status, content), a prefix of which the drawn paths start with.
_FUZZ_PATHS = {
    "generic": ["/v1/jobs", "/v1/jobs/j_1", "/v1/jobs/j_1/content"],
    "openai-videos": ["/v1/videos", "/v1/videos/v_1/content"],
    "runway": ["/v1/text_to_video", "/v1/tasks/t_1"],
    "replicate": ["/v1/models/o/n/predictions", "/v1/predictions/p_1"],
    "fal": ["/fal-ai/veo3", "/fal-ai/veo3/requests/r_1/status"],
    "google-veo": ["/v1beta1/publishers/google/models/veo-3:predictLongRunning"],
    "gemini": ["/v1beta/interactions", "/v1beta/interactions/i_1"],
    "luma": ["/dream-machine/v1/generations", "/dream-machine/v1/generations/g_1"],
    "ark": ["/api/v3/contents/generations/tasks", "/api/v3/contents/generations/tasks/t_1"],
    "dashscope": ["/api/v1/services/aigc/video-generation/video-synthesis", "/api/v1/tasks/t_1"],
}
_SEGMENT = st.text(max_size=12).map(lambda s: urllib.parse.quote(s, safe=""))
_HEADER_NAMES = st.sampled_from(
    [
        "x-client-id",
        "idempotency-key",
        "authorization",
        "content-type",
        "x-runway-version",
        "x-dashscope-async",
        "x-request-id",
        "prefer",
        "x-anything",
    ]
)
#: Any byte a header value may hold on the wire (httpx takes bytes as they are; a str only ASCII).
_HEADER_VALUES = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=24
).map(lambda value: value.strip().encode("latin-1"))
_BODIES = st.one_of(
    st.binary(max_size=64),
    st.dictionaries(
        st.sampled_from(["prompt", "promptText", "model", "input", "instances", "callback_url"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=6,
        ),
        max_size=4,
    ).map(lambda d: json.dumps(d).encode()),
)


@st.composite
def _requests(
    draw: st.DrawFn, prefixes: list[str]
) -> tuple[str, str, dict[str, str], dict[str, bytes], bytes]:
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]))
    prefix = draw(st.sampled_from([*prefixes, ""]))
    path = prefix + "".join(f"/{s}" for s in draw(st.lists(_SEGMENT, max_size=3)))
    query = draw(st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2))
    headers = draw(st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, max_size=3))
    return method, path or "/", query, headers, draw(_BODIES)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_hostile_httpx_requests_in_process_get_a_journaled_answer_never_a_crash(
    dialect: str,
) -> None:
    """Any method, percent-encoded path, query, header and body, sent by httpx to an in-process
    fake of each dialect: an answer under 500 with one ``Date`` (JSON when refused), journaled
    with the status sent; nothing raised."""
    routes = _FUZZ_PATHS[dialect]
    prefixes = sorted({*routes, *(route.rsplit("/", 1)[0] for route in routes), "/v1/jobs"})

    @settings(max_examples=30, deadline=None, database=None)
    @given(st.lists(_requests(prefixes), min_size=1, max_size=6))
    def run(requests: list[tuple[str, str, dict[str, str], dict[str, bytes], bytes]]) -> None:
        with virtual_provider("quick-preview", dialect=dialect, patch_time=False) as fp:
            for method, path, query, headers, body in requests:
                answer = client.request(method, path, params=query, headers=headers, content=body)
                assert answer.status_code < 500, (method, path, answer.status_code, answer.text)
                assert len(answer.headers.get_list("date")) == 1
                if answer.status_code >= 400 and method != "HEAD":
                    assert json.loads(answer.content) is not None
                assert fp.journal.last.status_code == answer.status_code

    # one client for every example (each fake answers at the same URL): building one loads
    # the system's certificates, a third of the test's time when each example built its own
    with httpx.Client(base_url=DEFAULT_BASE_URL) as client:
        run()
