"""In-process mode: httpx clients (sync and async) against the fake in virtual time."""

from __future__ import annotations

import asyncio
import datetime
import time
from email.utils import parsedate_to_datetime
from time import monotonic as captured_monotonic
from time import sleep as captured_sleep

import httpx
import pytest

from fakeprovider.errors import FakeProviderError
from fakeprovider.inprocess import virtual_provider
from fakeprovider.invariants import assert_invariants, check
from tests.plugin_clients import Careful, CarefulAsync


@pytest.mark.parametrize("scenario", ["long-render", "rate-limited"])
def test_sync_client_in_virtual_time(scenario: str) -> None:
    # the wall time it takes is measured by benchmarks/bench_inprocess.py, not bounded here
    with virtual_provider(scenario) as fp:
        assert Careful().run(fp.url, deadline=900) == "succeeded"
        assert_invariants(fp.journal)
        last = fp.journal.last
        assert (last.kind, last.status_code) == ("content", 200)
        if scenario == "long-render":
            assert fp.clock.now() == 480.0


@pytest.mark.parametrize("scenario", ["long-render", "rate-limited"])
def test_async_client_in_virtual_time(scenario: str) -> None:
    with virtual_provider(scenario) as fp:
        assert asyncio.run(CarefulAsync().run(fp.url, 900)) == "succeeded"
        assert_invariants(fp.journal)


def test_http_date_retry_after_and_date_agree_with_the_clients_clock() -> None:
    with virtual_provider("rate-limited") as fp, httpx.Client(base_url=fp.url) as client:
        job = client.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        answers = [client.get(f"/v1/jobs/{job}") for _ in range(2)]
        assert [a.status_code for a in answers] == [200, 429]
        throttled = answers[1]
        sent = parsedate_to_datetime(throttled.headers["date"]).timestamp()
        assert sent == time.time() == fp.clock.epoch
        retry_at = parsedate_to_datetime(throttled.headers["retry-after"]).timestamp()
        assert retry_at - time.time() == 8.0
        time.sleep(8.0)
        assert datetime.datetime.now(datetime.UTC).timestamp() == retry_at
        assert client.get(f"/v1/jobs/{job}").status_code == 200


def test_names_captured_by_module_globals_follow_the_virtual_clock_and_are_restored() -> None:
    real_start = time.time()
    with virtual_provider("slow-success") as fp:
        before = captured_monotonic()
        captured_sleep(3600)
        assert captured_monotonic() - before == pytest.approx(3600)
        assert fp.clock.now() == 3600
        assert isinstance(datetime.datetime.now(), datetime.datetime)
    assert captured_sleep is time.sleep
    assert type(datetime.datetime.now()) is datetime.datetime
    assert abs(time.time() - real_start) < 60
    assert datetime.datetime.now().year >= 2024


def test_concurrent_async_sleepers_overlap_in_virtual_time() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(asyncio.sleep(10), asyncio.sleep(10), asyncio.sleep(4))
        return loop.time() - start

    with virtual_provider("slow-success") as fp:
        assert asyncio.run(main()) == pytest.approx(10.0)
        assert fp.clock.now() == pytest.approx(10.0)


def test_concurrent_async_requests_overlap_during_a_scripted_delay() -> None:
    """A slow answer is awaited on the virtual loop, so other tasks run meanwhile: a read sent
    while the slow one waits for its response start is received then, as over a socket."""
    scenario = """
name: slow-read
jobs:
  - timeline: [{status: queued}, {at: 1s, status: succeeded}]
faults:
  - {name: slow-first-read, route: status, nth: 1, delay: 6s}
"""

    async def main(url: str) -> list[tuple[float, int, str]]:
        loop = asyncio.get_running_loop()
        async with httpx.AsyncClient(base_url=url) as client:
            job = (await client.post("/v1/jobs", json={"prompt": "x"})).json()["job_id"]

            async def read_after(wait: float) -> tuple[float, int, str]:
                await asyncio.sleep(wait)
                answer = await client.get(f"/v1/jobs/{job}")
                return loop.time(), answer.status_code, answer.json()["status"]

            return list(await asyncio.gather(read_after(5), read_after(10)))

    with virtual_provider(scenario) as fp:
        start = time.monotonic()
        answers = asyncio.run(main(fp.url))
        assert [(at - start, code, status) for at, code, status in answers] == [
            (11.0, 200, "succeeded"),
            (10.0, 200, "succeeded"),
        ]
        assert fp.clock.now() == 11.0
        assert [
            (e.seq, e.kind, e.received_at, e.response_started_at, e.completed_at, e.fault)
            for e in fp.journal
        ] == [
            (1, "submit", 0.0, 0.0, 0.0, None),
            (2, "status", 5.0, 11.0, 11.0, "slow-first-read"),
            (3, "status", 10.0, 10.0, 10.0, None),
        ]
        report = check(fp.journal)
    assert [(v.invariant, v.seqs, v.message) for v in report.violations] == [
        (
            "no_overlap",
            (2, 3),
            f"status read #3 for job {fp.journal.last.job_id} arrived at 10.000 s while read #2"
            " (received 5.000 s) had not started its response",
        )
    ]


def test_scripted_reset_and_lost_response_raise_transport_errors() -> None:
    scenario = """
name: drops
jobs:
  - timeline: [{status: queued}, {at: 5s, status: succeeded}]
faults:
  - {name: reset-first, route: submit, nth: 1, action: reset}
  - {name: lose-second, route: submit, nth: 2, action: lose_response, delay: 2s}
"""
    with virtual_provider(scenario) as fp, httpx.Client(base_url=fp.url) as client:
        with pytest.raises(httpx.ReadError, match=r"^\[Errno 104\] Connection reset by peer$"):
            client.post("/v1/jobs", json={"prompt": "x"})
        with pytest.raises(
            httpx.RemoteProtocolError, match=r"^Server disconnected without sending a response\.$"
        ):
            client.post("/v1/jobs", json={"prompt": "x"})
        assert client.post("/v1/jobs", json={"prompt": "x"}).status_code == 202
        assert [(e.kind, e.dropped, e.status_code) for e in fp.journal] == [
            ("submit", "reset", None),
            ("submit", "lose_response", None),
            ("submit", None, 202),
        ]
        assert fp.clock.now() == 2.0


def test_other_hosts_pass_through_and_nesting_is_refused() -> None:
    with virtual_provider("slow-success"):
        with pytest.raises(
            FakeProviderError,
            match=r"^Virtual time is already active in this process; leave the other"
            r" virtual_provider\(\) or VirtualTime block first\.$",
        ):
            virtual_provider("slow-success").__enter__()
        with pytest.raises(httpx.ConnectError):
            httpx.get("http://127.0.0.1:9/", timeout=1)
