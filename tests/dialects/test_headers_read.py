"""``Dialect.headers_read``: every dialect reads the request headers it declares, and no other.

The ASGI app keeps a request's lane by those headers alone (and hands the dialect only
those), so a header a dialect read without declaring it would be answered from another
request's lane. Each dialect parses and renders a corpus of requests (every route, status
reads of jobs in every state, submits, downloads, cancels, lists, refusals, malformed and
oversized bodies, faults) with headers that record every name looked up; a look at all of
them (iteration, length, equality) counts as reading every header.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from fakeprovider.clock import VirtualClock
from fakeprovider.dialects import DIALECTS, Dialect
from fakeprovider.http import HttpRequest
from fakeprovider.provider import FakeProvider

from ..test_app import _SUBMITS

#: Stands for a look at every header.
EVERY = "<every header>"


class Recording(Mapping[str, str]):
    """Headers that note each name looked up in ``read`` (``EVERY`` for a look at all)."""

    def __init__(self, headers: dict[str, str], read: set[str]) -> None:
        self._headers = headers
        self.read = read

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self._headers[name]

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return name in self._headers

    def __iter__(self) -> Iterator[str]:
        self.read.add(EVERY)
        return iter(self._headers)

    def __len__(self) -> int:
        self.read.add(EVERY)
        return len(self._headers)


BOUNDARY = "b0undary"
MULTIPART = (
    f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=prompt\r\n\r\na cat\r\n"
    f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=model\r\n\r\nsora-2\r\n"
    f"--{BOUNDARY}--\r\n"
).encode()
#: Header sets every request is sent with in turn: none, the credentials every dialect
#: takes, every header any dialect reads (right and wrong values), and others.
HEADER_SETS: list[dict[str, str]] = [
    {},
    {"authorization": "Bearer sk-test", "content-type": "application/json"},
    {
        "authorization": "Key sk-fal",
        "x-goog-api-key": "g-key",
        "content-type": "application/json; charset=utf-8",
        "x-client-id": "c1",
        "idempotency-key": "k1",
        "x-runway-version": "2024-11-06",
        "x-dashscope-async": "enable",
        "prefer": "wait=1",
        "host": "fake.test:81",
        "x-request-id": "r1",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "content-length": "12",
    },
    {
        "authorization": "Token r8",
        "content-type": f"multipart/form-data; boundary={BOUNDARY}",
        "x-runway-version": "1999-01-01",
        "x-dashscope-async": "disable",
        "prefer": "respond-async",
        "idempotency-key": "k1",
    },
    {"content-type": "text/plain", "x-request-id": "r2", "user-agent": "sdk/1.0"},
]
QUERIES = [{}, {"logs": "1"}, {"limit": "1", "after": "x"}, {"page_size": "1", "page_num": "2"}]
SCENARIOS = ["transient-5xx", "quick-preview"]


def _fill(template: str, job_id: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: job_id if m.group(1) == "job_id" else "m", template)


def _corpus(dialect: str, job_ids: list[str]) -> Iterator[tuple[str, str, bytes]]:
    """(method, path, body) for every route of ``dialect`` with each job id, and some more."""
    submit_path, submit_body = _SUBMITS[dialect]
    bodies = [
        b"",
        json.dumps(submit_body).encode(),
        b"{bad",
        b"[]",
        b'{"prompt": "\\ud800"}',
        MULTIPART,
    ]
    routes = DIALECTS[dialect].routes
    for route in routes:
        for job_id in job_ids:
            path = _fill(route.template, job_id)
            for body in bodies if route.method == "POST" else [b""]:
                yield route.method, path, body
    for method in ("GET", "POST", "DELETE", "PUT"):
        yield method, "/nope", b""
        yield method, submit_path, b"{}"


def _reads(dialect_name: str, scenario: str) -> set[str]:
    """The header names ``dialect_name``'s dialect read over the corpus in ``scenario``."""
    clock = VirtualClock()
    provider = FakeProvider(scenario, dialect=dialect_name, clock=clock)
    dialect = provider.dialect
    read: set[str] = set()
    submit_path, submit_body = _SUBMITS[dialect_name]

    def http(
        method: str, path: str, headers: dict[str, str], query: dict[str, str], body: bytes
    ) -> HttpRequest:
        return HttpRequest(
            method, path, query, Recording(headers, read), body, "127.0.0.1:5000", "http://f"
        )

    create = json.dumps(submit_body).encode()
    for headers in HEADER_SETS[1:3]:  # jobs to read, cancel and fetch
        for _ in range(3):
            provider.receive(http("POST", submit_path, headers, {}, create))
    for step in range(3):
        ids = [*[job.id for job in provider.engine.jobs][-4:], "nope"]
        for method, path, body in _corpus(dialect_name, ids):
            for headers in HEADER_SETS:
                for query in QUERIES if method == "GET" else QUERIES[:1]:
                    provider.receive(http(method, path, headers, query, body))
                    bare = http(method, path, headers, query, b"")
                    parse = dialect.body_parser(bare)
                    if parse is not None and body:
                        for too_large in (None, 8):
                            whole = HttpRequest(
                                method,
                                path,
                                query,
                                bare.headers,
                                body if too_large is None else b"",
                                bare.peer,
                                bare.base_url,
                                too_large,
                            )
                            request = parse(whole)
                            reply = provider.engine.handle(request, clock.now())
                            dialect.render(reply, whole)
        clock.advance((5.0, 60.0, 600.0)[step])
    return read


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_dialect_reads_the_headers_it_declares_and_no_other(dialect: str) -> None:
    declared = vars(DIALECTS[dialect]).get("headers_read")
    assert declared is not None, f"{dialect} declares no headers_read of its own"
    read: set[str] = set()
    for scenario in SCENARIOS:
        read |= _reads(dialect, scenario)
    assert EVERY not in read
    # every name declared is read, but ``host``: the app makes ``base_url`` of it
    assert read == declared - {"host"}


def test_every_dialect_reads_the_common_headers_and_each_only_a_few_of_its_own() -> None:
    common = Dialect.headers_read
    assert common == {"host", "authorization", "x-client-id", "idempotency-key", "content-type"}
    own = {name: sorted(kind.headers_read - common) for name, kind in DIALECTS.items()}
    assert own == {
        "generic": [],
        "openai-videos": [],
        "runway": ["x-runway-version"],
        "replicate": ["prefer"],
        "fal": [],
        "google-veo": ["x-goog-api-key"],
        "gemini": ["x-goog-api-key"],
        "luma": [],
        "ark": [],
        "dashscope": ["x-dashscope-async"],
    }
    assert all(kind.headers_read >= common for kind in DIALECTS.values())


def test_recording_headers_note_every_way_of_reading_them() -> None:
    read: set[str] = set()
    headers = Recording({"a": "1", "b": "2"}, read)
    assert headers.get("a") == "1"
    assert "c" not in headers
    with pytest.raises(KeyError):
        headers["d"]
    assert read == {"a", "c", "d"}
    for look in (list, len, dict, lambda h: h == {"a": "1"}):
        read.clear()
        look(headers)
        assert EVERY in read


def test_a_dialect_reading_a_header_it_does_not_declare_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fakeprovider.dialects.generic import GenericDialect

    original = GenericDialect.credential

    def credential(self: GenericDialect, http: HttpRequest) -> Any:
        http.headers.get("x-request-id")
        return original(self, http)

    monkeypatch.setattr(GenericDialect, "credential", credential)
    assert "x-request-id" in _reads("generic", "long-render")
