"""Shared helpers for the dialect tests: serve a scenario, read the journal, ask the checker."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from fakeprovider.clock import VirtualClock
from fakeprovider.dialects import HttpRequest
from fakeprovider.invariants import Limits, Violation, check
from fakeprovider.journal import Entry
from fakeprovider.scenario import Scenario
from fakeprovider.server import ServerThread
from fakeprovider.service import FakeProvider

#: Bundled scenarios run 50 times faster: slow-success takes about 2 s.
SCALE = 0.02


@contextmanager
def serve(
    dialect: str, scenario: Scenario | str, *, time_scale: float = SCALE
) -> Iterator[tuple[FakeProvider, str]]:
    """A real server playing ``scenario`` in ``dialect``; yields the provider and base URL."""
    provider = FakeProvider(scenario, dialect=dialect, time_scale=time_scale)
    with ServerThread(provider) as server:
        yield provider, server.url


def settled(provider: FakeProvider, timeout: float = 5.0) -> list[Entry]:
    """The journal once every answer has been recorded as sent (the SDK may return first)."""
    deadline = time.monotonic() + timeout
    while True:
        entries = provider.entries
        if all(e.completed_at is not None or e.dropped for e in entries):
            return entries
        if time.monotonic() > deadline:
            raise AssertionError(f"unfinished journal entries: {entries!r}")
        time.sleep(0.01)


def unusual(entries: list[Entry]) -> list[tuple[str, int | None, str | None]]:
    """Every entry but the plain successful status reads: (kind, status code, fault)."""
    return [
        (e.kind, e.status_code, e.fault)
        for e in entries
        if e.kind != "status" or (e.status_code or 0) >= 300 or e.fault
    ]


def last_status(entries: list[Entry]) -> str | None:
    shown = [e.job_status for e in entries if e.kind == "status" and e.job_status]
    return shown[-1] if shown else None


def violations(provider: FakeProvider, **overrides: Any) -> list[Violation]:
    """What the checker finds in the journal, under the scenario's expect: limits."""
    limits = Limits.from_expect(provider.scenario.expect, **overrides)
    return list(check(settled(provider), limits).violations)


def violated(provider: FakeProvider, **overrides: Any) -> set[str]:
    """The names of the invariants the journal breaks, under the scenario's expect: limits."""
    return {v.invariant for v in violations(provider, **overrides)}


def virtual(dialect: str, scenario: str = "slow-success") -> tuple[FakeProvider, VirtualClock]:
    clock = VirtualClock()
    return FakeProvider(scenario, clock=clock, dialect=dialect), clock


def call(
    provider: FakeProvider,
    method: str,
    path: str,
    *,
    json_body: Any = None,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One request through the provider (no sockets): status, headers, JSON body (or bytes)."""
    sent = {k.lower(): v for k, v in (headers or {}).items()}
    if json_body is not None:
        body = json.dumps(json_body).encode()
        sent.setdefault("content-type", "application/json")
    http = HttpRequest(
        method=method,
        path=path,
        query=dict(query or {}),
        headers=sent,
        body=body,
        peer="127.0.0.1:1",
        base_url="http://fake.test",
    )
    reply, response = provider.receive(http)
    if reply.delay > 0 and isinstance(provider.clock, VirtualClock):
        provider.clock.advance(reply.delay)  # what the server does: answer after the delay
    now = provider.clock.now()
    provider.sent(reply, started=now, completed=now, status_code=response.status)
    out_headers = {k.lower(): v for k, v in response.headers}
    if response.media_type and "json" in response.media_type:
        return response.status, out_headers, json.loads(response.body)
    return response.status, out_headers, response.body


#: Sent by every SDK under test and by ``download``: the journal keys clients by
#: ``X-Client-Id`` (else by peer address and port, which changes when an SDK reconnects).
CLIENT_ID = "sdk-under-test"
CLIENT_HEADERS = {"X-Client-Id": CLIENT_ID}


def download(url: str, attempts: int = 3) -> bytes:
    """Fetch a result URL once, as a careful user would: retry 5xx after its Retry-After."""
    import httpx

    with httpx.Client(headers=CLIENT_HEADERS) as client:
        for _ in range(attempts - 1):
            response = client.get(url)
            if response.status_code < 500:
                break
            time.sleep(float(response.headers.get("retry-after", "1")))
        else:
            response = client.get(url)
        response.raise_for_status()
        return response.content


def retried_through_transient_5xx(submit_code: int) -> list[tuple[str, int | None, str | None]]:
    """``unusual(...)`` of an SDK that retries every fault of ``transient-5xx`` and succeeds.

    (It sees the two 503s of status reads 2 and 3; reads 6 and 9 come after success.)
    """
    return [
        ("submit", submit_code, None),
        ("status", 503, "upstream-503"),
        ("status", 503, "upstream-503"),
        ("content", 503, "download-503"),
        ("content", 200, None),
    ]
