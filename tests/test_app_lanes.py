"""The app's fast lanes against its general path: every answer's bytes and every journal line.

The ASGI app keeps the ``HttpRequest`` it made of a scope and hands the very object again for
the same scope; the dialect keeps the request it parsed of such an object. These tests run
the same requests through an app with both and an app that keeps nothing (so every request is
made and parsed afresh, the general path), in-process, on virtual clocks that move alike.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakeprovider import app as app_module
from fakeprovider.app import FakeProviderApp, create_app
from fakeprovider.clock import VirtualClock
from fakeprovider.dialects import DIALECTS
from fakeprovider.http import HttpRequest
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import bundled_scenarios
from tests.thorough import thorough

from .test_app import _SUBMITS

#: A create that each dialect accepts: path and JSON body (test_app's robustness tests use them).
SUBMITS = _SUBMITS
HEADERS = [
    (b"authorization", b"Bearer sk-test"),
    (b"Authorization", b"Key sk-fal"),
    (b"x-goog-api-key", b"g-key"),
    (b"x-client-id", b"c1"),
    (b"X-Client-Id", b"c2"),
    (b"idempotency-key", b"k1"),
    (b"content-type", b"application/json"),
    (b"content-type", b"text/plain"),
    (b"x-runway-version", b"2024-11-06"),
    (b"x-dashscope-async", b"enable"),
    (b"prefer", b"wait=1"),
    (b"x-odd", b"\xff\xfe caf\xe9"),
    (b"host", b"fake.test:81"),
]
QUERIES = [
    b"",
    b"logs=1",
    b"stream=true",
    b"page_size=1&page_num=2",
    b"page_no=2&page_size=1",
    b"limit=1&offset=1",
    b"order=asc&limit=1",
    b"variant=thumbnail",
    b"a=%ff&a=2",
]
CLIENTS = [("127.0.0.1", 5000), ("127.0.0.1", 5001), ("10.0.0.2", 5000), None]
BODIES = [
    b"",
    b"{bad",
    b'{"prompt": "\\ud800"}',
    b"[]",
    b'{"prompt": ""}',
    '{"prompt": "caf\u00e9 \u2028", "model": "m"}'.encode(),
    b'{"prompt": "x", "n": [[[1]]], "e": "\\u0041"}',
]
JOB_IDS = ["nope", "\x00", "caf\u00e9", "a b"]
#: Names of headers a request may carry of its own (``_requests``' extras): ones no dialect
#: reads, in any case, and some a dialect does read, in another case (repeated fields).
OWN_NAMES = [
    b"x-request-id",
    b"X-Request-Id",
    b"traceparent",
    b"TraceParent",
    b"x-stainless-retry-count",
    b"x-amzn-trace-id",
    b"content-length",
    b"X-Client-ID",
    b"IDEMPOTENCY-KEY",
    b"AUTHORIZATION",
    b"Host",
    b"x-\xc9",
]


class _Forgetful(dict[Any, Any]):
    """A cache that never keeps anything: every request made and parsed afresh."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def get_extra_info(self, name: str) -> None:
        return None

    def abort(self) -> None:
        self.aborted = True


class _Connection:
    """What uvicorn hands an app: ``receive`` bound to a cycle with a transport."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.transport = _Transport()
        self.disconnected = False
        self._chunks = chunks

    async def receive(self) -> dict[str, Any]:
        body = self._chunks.pop(0) if self._chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(self._chunks)}


class _Side:
    """One app and what it sent and journaled."""

    def __init__(self, dialect: str, scenario: str, lanes: bool) -> None:
        self.sink = io.StringIO()
        self.clock = VirtualClock()
        self.provider = FakeProvider(
            scenario, dialect=dialect, clock=self.clock, journal_sink=self.sink
        )
        self.app = create_app(self.provider)

        async def no_wait(seconds: float) -> bool:
            return False  # a scripted delay passes at once (both sides alike)

        self.app._pause = no_wait  # type: ignore[method-assign]
        if not lanes:
            self.app._lanes = False  # every request through provider.receive
            self.app._requests = _Forgetful()
            self.app._lanes_kept = _Forgetful()
            self.app._body_lanes = _Forgetful()
            self.app._whole_lanes = _Forgetful()
            self.provider.dialect._parsed = _Forgetful()

    def call(self, scope: dict[str, Any], chunks: list[bytes]) -> list[Any]:
        connection = _Connection(list(chunks))
        sent: list[Any] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        asyncio.run(self.app(dict(scope), connection.receive, send))
        return [*sent, connection.transport.aborted]


def _fill(template: str, job_id: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: job_id if m.group(1) == "job_id" else "m", template)


@st.composite
def _requests(draw: st.DrawFn, dialect: str) -> list[tuple[Any, ...]]:
    """Requests as (advance, method, path or template, job id pick, query, headers, client,
    body, split, admin request first or None, headers of its own): templates are filled with
    a job id when sent (the sides' ids are alike). Each request after the first is the one
    before with one or two parts changed, so that kept requests are hit, and missed by a
    change in any one part; and each has headers of its own (a request id, a trace...)
    before or after the others, mostly of names the dialect does not read."""
    submit_path, submit_body = SUBMITS[dialect]
    templates = [r.template for r in DIALECTS[dialect].routes]
    parts = (
        st.sampled_from([0.0, 0.0, 0.5, 5.0]),
        st.sampled_from(["GET", "GET", "POST", "HEAD", "DELETE"]),
        st.sampled_from([submit_path, *templates, "/nope", templates[-1] + "\n"]),
        st.integers(0, 6),
        st.sampled_from(QUERIES),
        st.lists(st.sampled_from(HEADERS), max_size=5),
        st.sampled_from(CLIENTS),
        st.sampled_from([*BODIES, json.dumps(submit_body).encode()]),
        st.booleans(),
        st.sampled_from([*[None] * 12, *ADMIN]),
    )
    own = st.tuples(
        st.booleans(),
        st.lists(st.tuples(st.sampled_from(OWN_NAMES), st.binary(max_size=6)), max_size=3),
    )
    request = draw(st.tuples(*parts))
    made = [(*request, draw(own))]
    for _ in range(draw(st.integers(0, 14))):
        changed = list(request)
        for index in draw(st.lists(st.integers(0, len(parts) - 1), max_size=2)):
            changed[index] = draw(parts[index])
        request = tuple(changed)
        made.append((*request, draw(own)))
    return made


def _scope(method: str, path: str, query: bytes, headers: list[Any], client: Any) -> Any:
    # fresh bytes objects each time, as a server makes them
    fresh = [(bytes(name), bytes(value)) for name, value in headers]
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": bytes(query),
        "headers": fresh,
        "scheme": "http",
        "http_version": "1.1",
    }
    if client is not None:
        scope["client"] = client
    return scope


def _play(dialect: str, scenario: str, requests: list[tuple[Any, ...]]) -> None:
    fast, general = _Side(dialect, scenario, True), _Side(dialect, scenario, False)
    submit_path, submit_body = SUBMITS[dialect]
    create = json.dumps(submit_body).encode()
    for side in (fast, general):  # jobs to poll and list, on both
        for _ in range(3):
            scope = _scope("POST", submit_path, b"", _SUBMIT_HEADERS, CLIENTS[0])
            side.call(scope, [create])
    for (
        advance,
        method,
        template,
        pick,
        query,
        fields,
        client,
        body,
        split,
        admin,
        *own,
    ) in requests:
        first, extra = own[0] if own else (False, [])
        headers = [*extra, *fields] if first else [*fields, *extra]
        if admin is not None:  # a reset or a scenario load mid-run, on both sides
            admin_method, admin_path, admin_body = admin
            admin_scope = _scope(admin_method, admin_path, b"", [], CLIENTS[0])
            assert fast.call(admin_scope, [admin_body]) == general.call(admin_scope, [admin_body])
        ids = [job.id for job in fast.provider.engine.jobs]
        assert ids == [job.id for job in general.provider.engine.jobs]
        job_id = (ids + JOB_IDS)[pick % (len(ids) + len(JOB_IDS))]
        path = _fill(template, job_id)
        chunks = [body[:3], body[3:]] if split and len(body) > 3 else [body]
        answers = []
        for side in (fast, general):
            side.clock.advance(advance)
            answers.append(side.call(_scope(method, path, query, headers, client), chunks))
        assert answers[0] == answers[1], (method, path, query, headers, client, body)
    assert fast.sink.getvalue() == general.sink.getvalue()
    assert fast.sink.getvalue().count("\n") >= len(requests) + 4


_SUBMIT_HEADERS = [HEADERS[0], HEADERS[6], HEADERS[8], HEADERS[9]]
#: Admin requests made mid-run: a reset, and loads of other scenarios (a new dialect each).
ADMIN = [
    ("POST", "/__admin/reset", b""),
    ("PUT", "/__admin/scenario", b"long-render"),
    ("PUT", "/__admin/scenario", b"outage"),
    ("PUT", "/__admin/scenario", b"quick-preview"),
]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_kept_requests_answer_and_journal_as_requests_made_afresh(
    dialect: str, data: st.DataObject
) -> None:
    scenario = data.draw(st.sampled_from(sorted(bundled_scenarios())), label="scenario")
    _play(dialect, scenario, data.draw(_requests(dialect), label="requests"))


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_change_in_any_one_part_is_answered_as_made_afresh(dialect: str) -> None:
    """A status read, then each part changed alone to each of its values, the read again
    between: whatever part a kept request were wrongly kept across shows."""
    template = next(r.template for r in DIALECTS[dialect].routes if r.kind == "status")
    base = (0.0, "GET", template, 0, b"", [HEADERS[0], HEADERS[8]], CLIENTS[0], b"", False, None)
    values: list[list[Any]] = [
        [0.5],
        ["POST", "HEAD", "DELETE"],
        [r.template for r in DIALECTS[dialect].routes],
        [1, 2, 3, 4],
        QUERIES,
        [[h] for h in HEADERS] + [[*HEADERS[:1], h] for h in HEADERS],
        CLIENTS,
        [*BODIES, json.dumps(SUBMITS[dialect][1]).encode()],
        [True],
        ADMIN,
    ]
    requests = [base]
    for index, alternatives in enumerate(values):
        for value in alternatives:
            changed = list(base)
            changed[index] = value
            requests += [tuple(changed), base]
    _play(dialect, "long-render", requests)


def test_the_same_scope_gives_the_same_request_object_and_the_same_parse() -> None:
    provider = FakeProvider("long-render", clock=VirtualClock())
    app = create_app(provider)
    scope = _scope("GET", "/v1/jobs/j1", b"", HEADERS[:2], CLIENTS[0])
    first = app._request(scope)
    again = app._request(_scope("GET", "/v1/jobs/j1", b"", HEADERS[:2], CLIENTS[0]))
    assert again is first
    assert first == HttpRequest(
        "GET",
        "/v1/jobs/j1",
        {},
        {"authorization": "Key sk-fal"},
        b"",
        "127.0.0.1:5000",
        "http://127.0.0.1",
    )
    assert provider.dialect.parse(first) is provider.dialect.parse(again)
    assert provider.dialect.parse(first) == provider.dialect._parse(first)
    other_port = app._request(_scope("GET", "/v1/jobs/j1", b"", HEADERS[:2], CLIENTS[1]))
    assert other_port is not first
    assert other_port.peer == "127.0.0.1:5001"


def test_a_request_with_a_body_is_parsed_every_time() -> None:
    provider = FakeProvider("long-render", clock=VirtualClock())
    http = HttpRequest(
        "POST", "/v1/jobs", headers={"content-type": "application/json"}, body=b'{"prompt":"a"}'
    )
    first, second = provider.dialect.parse(http), provider.dialect.parse(http)
    assert first == second
    assert first.body is not second.body
    assert provider.dialect._parsed == {}


def test_a_scope_whose_parts_cannot_be_a_key_is_made_afresh_every_time() -> None:
    app = create_app(FakeProvider("long-render", clock=VirtualClock()))
    scope = _scope("GET", "/v1/jobs/j1", b"", [], CLIENTS[0])
    scope["headers"] = [[b"x-client-id", b"c1"]]  # lists, as some servers send
    first, second = app._request(scope), app._request(scope)
    assert first == second
    assert first is not second
    assert first.headers == {"x-client-id": "c1"}
    assert app._requests == {}


def test_a_header_name_that_cannot_be_a_key_is_read_as_made_afresh() -> None:
    """A bytearray name (ASGI says bytes; some hand-built scopes say otherwise) was answered
    500 "this is a bug" once lanes were kept by the headers the dialect reads (review R20-2)."""
    scope = _scope("GET", "/v1/jobs/nope", b"", [], CLIENTS[0])
    scope["headers"] = [
        (bytearray(b"Authorization"), b"Bearer sk-1"),
        (bytearray(b"x-request-id"), b"r1"),
        (b"x-client-id", b"c1"),
    ]
    fast, general = _Side("generic", "long-render", True), _Side("generic", "long-render", False)
    answers = [side.call(scope, [b""]) for side in (fast, general)]
    assert answers[0] == answers[1]
    start, body, aborted = answers[0]
    assert (start["status"], b'"job_not_found"' in body["body"], aborted) == (404, True, False)
    assert fast.sink.getvalue() == general.sink.getvalue()
    made = fast.app._request(scope)
    assert made.headers == {"authorization": "Bearer sk-1", "x-client-id": "c1"}


class _Name(bytes):
    """A header name of a class of its own (bytes all the same)."""


@pytest.mark.parametrize("form", ["items of a dict", "a tuple", "names of a bytes subclass"])
def test_headers_in_any_iterable_form_asgi_allows_are_read_as_made_afresh(form: str) -> None:
    """ASGI's headers are any iterable of name and value: a dict's items were answered 500,
    and a name of a bytes subclass dropped (its credential with it), once lanes were kept by
    the layout of the header names (review R20-3)."""
    fields = [(b"authorization", b"Bearer sk-1"), (b"content-type", b"application/json")]
    headers: Any = {
        "items of a dict": lambda: dict(fields).items(),
        "a tuple": lambda: tuple(fields),
        "names of a bytes subclass": lambda: [(_Name(name), value) for name, value in fields],
    }[form]()
    scope = _scope("POST", "/v1/jobs", b"", [], CLIENTS[0])
    scope["headers"] = headers
    fast, general = _Side("generic", "long-render", True), _Side("generic", "long-render", False)
    answers = [side.call(scope, [b'{"prompt": "a cat"}']) for side in (fast, general)]
    assert answers[0] == answers[1]
    assert answers[0][0]["status"] == 202
    assert fast.sink.getvalue() == general.sink.getvalue()
    assert '"credential":"cred_' in fast.sink.getvalue().splitlines()[-1]


def test_kept_requests_and_parses_are_bounded_and_forgotten_all_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fakeprovider.dialects import base

    monkeypatch.setattr(app_module, "_REQUESTS_KEPT", 3)
    monkeypatch.setattr(base, "_PARSED_KEPT", 3)
    provider = FakeProvider("long-render", clock=VirtualClock())
    app: FakeProviderApp = create_app(provider)
    sizes = []
    for n in range(5):
        http = app._request(_scope("GET", f"/v1/jobs/j{n}", b"", [], CLIENTS[0]))
        provider.dialect.parse(http)
        sizes.append((len(app._requests), len(provider.dialect._parsed)))
    assert sizes == [(1, 1), (2, 2), (3, 3), (1, 1), (2, 2)]


def _lane(app: FakeProviderApp, scope: dict[str, Any]) -> Any:
    """The lane ``app`` finds or makes for ``scope`` without a body, as its ``__call__`` does."""
    wanted = app._wanting(app.provider.dialect)
    assert wanted is not None
    key = app_module._key(scope, wanted)
    kept = app._lanes_kept.get(key)
    if kept is not None and kept[1] is app.provider.dialect:
        return kept
    return app._lane(scope, app.provider, key)


def test_a_kept_parse_is_not_used_by_the_dialect_of_a_scenario_loaded_since() -> None:
    provider = FakeProvider("long-render", clock=VirtualClock())
    app = create_app(provider)
    scope = _scope("GET", "/v1/jobs/j1", b"", HEADERS[:1], CLIENTS[0])
    http, _, first, _ = _lane(app, scope)
    assert app._lanes_kept[next(iter(app._lanes_kept))][2] is first
    assert _lane(app, scope)[2] is first
    provider.load("quick-preview")
    again_http, dialect, again, _ = _lane(app, scope)
    assert again_http is http
    assert dialect is provider.dialect
    assert again is not first
    assert again == provider.dialect._parse(http)


def test_a_request_the_dialect_failed_to_parse_is_parsed_again_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = FakeProvider("long-render", clock=VirtualClock())
    app = create_app(provider)
    calls: list[str] = []

    def broken(http: HttpRequest) -> None:
        calls.append(http.path)
        raise RuntimeError("parse broke")

    monkeypatch.setattr(provider.dialect, "_parse", broken)
    scope = _scope("GET", "/v1/jobs/j1", b"", [], CLIENTS[0])
    for _ in range(2):
        _, _, request, _ = _lane(app, scope)
        assert (request.kind, request.problem_code) == ("unknown", "internal_error")
    assert calls == ["/v1/jobs/j1", "/v1/jobs/j1"]
    assert app._lanes_kept == {}


def test_a_provider_class_that_answers_or_journals_otherwise_takes_no_lane() -> None:
    class Recording(FakeProvider):
        def sent(self, *args: Any, **kwargs: Any) -> Any:
            return super().sent(*args, **kwargs)

    assert create_app(FakeProvider("long-render", clock=VirtualClock()))._lanes
    assert not create_app(Recording("long-render", clock=VirtualClock()))._lanes


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("broken", ["handle", "renderer", "render"])
def test_a_failure_in_the_lane_is_answered_and_journaled_as_on_the_general_path(
    dialect: str, broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The engine or the dialect failing (a bug) on a lane's request: the same 500 and the
    same journal lines as ``provider.receive`` gives, whatever part failed."""
    template = next(r.template for r in DIALECTS[dialect].routes if r.kind == "status")
    base = (0.0, "GET", template, 0, b"", [HEADERS[0]], CLIENTS[0], b"", False, None)
    sides = [_Side(dialect, "transient-5xx", lanes) for lanes in (True, False)]
    for side in sides:
        target: Any = side.provider.engine if broken == "handle" else side.provider.dialect
        name = "render" if broken == "renderer" else broken
        original = getattr(target, name)
        calls = [0]

        def fails_every_other(*args: Any, _original: Any = original, _calls: Any = calls) -> Any:
            # the engine on every other request; the dialect on every other reply (by its
            # seq), ``render`` on those a fault or a refusal touched (the lane's renderer
            # takes the others: "renderer")
            _calls[0] += 1
            if broken == "handle":
                fails = _calls[0] % 2 == 0
            else:
                reply = args[0]
                touched = reply.fault is not None or reply.error is not None
                fails = reply.seq % 2 == 0 and (touched or broken == "renderer")
            if fails:
                raise RuntimeError(f"{broken} broke")
            return _original(*args)

        if broken == "renderer":
            # the lane's renderer for status reads fails; the general path's render too
            kind_renderer = side.provider.dialect.renderer

            def renderer(kind: Any, _make: Any = kind_renderer, _f: Any = fails_every_other) -> Any:
                made = _make(kind)
                return lambda reply, http: (_f(reply, http), made(reply, http))[1]

            side.provider.dialect.renderer = renderer  # type: ignore[method-assign]
        setattr(target, name, fails_every_other)
    requests = [base, (0.5, *base[1:]), base, (5.0, *base[1:]), base, base, base]
    fast, general = sides
    _play_on(fast, general, dialect, requests)
    assert '"error_code":"internal_error"' in fast.sink.getvalue()


def _play_on(fast: _Side, general: _Side, dialect: str, requests: list[Any]) -> None:
    submit_path, submit_body = SUBMITS[dialect]
    create = json.dumps(submit_body).encode()
    for side in (fast, general):
        side.call(_scope("POST", submit_path, b"", _SUBMIT_HEADERS, CLIENTS[0]), [create])
    for advance, method, template, pick, query, headers, client, body, _split, _admin in requests:
        ids = [job.id for job in fast.provider.engine.jobs]
        job_id = (ids + JOB_IDS)[pick % (len(ids) + len(JOB_IDS))]
        path = _fill(template, job_id)
        answers = []
        for side in (fast, general):
            side.clock.advance(advance)
            answers.append(side.call(_scope(method, path, query, headers, client), [body]))
        assert answers[0] == answers[1], (method, path)
    assert fast.sink.getvalue() == general.sink.getvalue()


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_body_parser_parses_each_body_as_parse_parses_the_whole_request(
    dialect: str, data: st.DataObject
) -> None:
    from fakeprovider.dialects import get_dialect

    made = get_dialect(dialect)
    submit_path, submit_body = SUBMITS[dialect]
    templates = [r.template for r in made.routes]
    method = data.draw(st.sampled_from(["POST", "GET", "DELETE"]))
    path = _fill(data.draw(st.sampled_from([submit_path, *templates, "/nope"])), "j1")
    drawn = data.draw(st.lists(st.sampled_from(HEADERS), max_size=5))
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in drawn}
    query = data.draw(st.sampled_from([{}, {"fal_webhook": "http://127.0.0.1/h"}]))
    bare = HttpRequest(method, path, query, headers, b"", "127.0.0.1:5000", "http://x")
    parse = made.body_parser(bare)
    body = data.draw(st.sampled_from([*BODIES, json.dumps(submit_body).encode()]))
    too_large = data.draw(st.sampled_from([None, None, 10]))
    whole = dataclasses.replace(bare, body=b"" if too_large else body, too_large=too_large)
    if parse is None:
        assert made.match(method, path) is None
    else:
        lane, general = parse(whole), made.parse(whole)
        assert lane == general
        assert list(vars(lane).items()) == list(vars(general).items())  # order, select too


#: A scenario that refuses bodies over 64 bytes, and scripts answers with odd headers on
#: submits: unsafe values, a name that is no token, a framing header (answered 500), 204s.
_SMALL_BODIES = """
name: small-bodies
max_body_bytes: 64
jobs: [{timeline: [{status: queued}, {at: 1s, status: succeeded}]}]
faults:
  - {name: padded, route: submit, every: 4, status: 202, headers: {X-Pad: ' v ', X-Ok: 'fine'}}
  - {name: nonascii, route: submit, every: 5, status: 429, headers: {Retry-After: 'caf\u00e9'}}
  - {name: framing, route: submit, every: 6, status: 503, headers: {Content-Length: '3'}}
  - {name: empty, route: submit, every: 7, status: 204, headers: {X-Empty: ''}}
"""


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_bodies_at_around_and_over_the_limit_are_answered_as_made_afresh(dialect: str) -> None:
    """A body of the limit's size goes down the body lane, one byte more takes the general
    path (413), whole or split; scripted answers whose headers every check passes, or not."""
    submit_path, submit_body = SUBMITS[dialect]
    create = json.dumps(submit_body).encode()
    bodies = [create, create.ljust(64), create.ljust(65), b"{" + b" " * 200 + b"}", b"x" * 5000]
    fast, general = (_Side(dialect, _SMALL_BODIES, lanes) for lanes in (True, False))
    for round_ in range(3):
        for body in bodies:
            for split in (False, True):
                chunks = [body[:3], body[3:]] if split else [body]
                scope = _scope("POST", submit_path, b"", _SUBMIT_HEADERS, CLIENTS[round_ % 2])
                assert fast.call(scope, chunks) == general.call(scope, chunks), (body, split)
    journal = fast.sink.getvalue()
    assert journal == general.sink.getvalue()
    assert '"status_code":413' in journal
    assert '"error_code":"unsendable_answer"' in journal


_NAMES = [
    "Location",
    "location",
    "X-Ok",
    "Retry-After",
    "content-length",
    "Transfer-Encoding",
    "bad name",
    "x:y",
    "",
    "caf\u00e9",
    "X-\u00e9",
]
_VALUES = ["/v1/jobs/j1", "fine", " lead", "trail ", "", "a\x00b", "caf\u00e9", "\u202e", "a\tb"]


@thorough(150, deadline=None)
@given(
    headers=st.lists(st.tuples(st.sampled_from(_NAMES), st.sampled_from(_VALUES)), max_size=4),
    status=st.sampled_from([200, 201, 202, 204, 304, 405, 429, 599, 600, 199]),
    media_type=st.sampled_from(["application/json", "video/mp4", None]),
)
def test_headers_sent_at_once_are_those_every_check_passes_as_they_are(
    headers: list[tuple[str, str]], status: int, media_type: str | None
) -> None:
    """``_sendable``: the fields ``_raw_headers`` sends, when ``provider.checked`` passes the
    answer as it is (the app then skips it); None whenever it might not."""
    from fakeprovider.http import HttpResponse
    from fakeprovider.messages import Reply, Request

    provider = FakeProvider("long-render", clock=VirtualClock())
    http = HttpRequest("POST", "/v1/jobs")
    request = Request(kind="submit", method="POST", path="/v1/jobs")
    reply = Reply(seq=1, request=request, status_code=status, respond_at=0.0)
    response = HttpResponse(status, b"{}", media_type, tuple(headers))
    fields = app_module._sendable(response.headers)
    checked_reply, checked = provider.checked(http, request, reply, response)
    if not 200 <= status <= 599 or status in app_module._CHECKED:
        return  # the app checks every such answer
    if fields is not None:
        assert checked is response
        assert checked_reply is reply
        date = b"Wed, 02 Dec 2026 07:00:00 GMT"
        raw = app_module._raw_headers(response, date)
        assert raw[-1] == (b"date", date)
        assert raw[-1 - len(fields) : -1] == fields
    else:
        assert checked is not response or checked_reply is not reply


#: How a submit's ``Content-Length`` field comes: not at all, as uvicorn gives it (first,
#: between the others or last), twice, once in lower case and once not, in another case
#: only, saying another length, or another length's field before or after the true one.
LENGTH_FORMS = [
    "none",
    "first",
    "middle",
    "last",
    "twice",
    "twice apart",
    "lower then capitals",
    "capitals",
    "other",
    "other then true",
    "true then other",
]
#: Headers that change from one submit to the next on a connection.
PER_REQUEST = [
    [],
    [],
    [(b"idempotency-key", b"k1")],
    [(b"idempotency-key", b"k2")],
    [(b"x-client-id", b"c3")],
    [(b"x-request-id", b"r1"), (b"x-stainless-retry-count", b"0")],
]


def _with_length(headers: list[tuple[bytes, bytes]], body: bytes, form: str) -> list[Any]:
    true = (b"content-length", b"%d" % len(body))
    other = (b"content-length", b"7")
    fields = {
        "none": headers,
        "first": [true, *headers],
        "middle": [*headers[:1], true, *headers[1:]],
        "last": [*headers, true],
        "twice": [*headers, true, true],
        "twice apart": [true, *headers, true],
        "lower then capitals": [true, *headers, (b"Content-Length", true[1])],
        "capitals": [*headers, (b"Content-Length", true[1])],
        "other": [*headers, other],
        "other then true": [other, *headers, true],
        "true then other": [true, *headers, other],
    }
    return fields[form]


def _prompted(dialect: str, words: int) -> bytes:
    """The dialect's submit body with a prompt of ``words`` words (the body's length varies)."""
    text = " ".join(["neon", "rain", "at", "dusk", "caf\u00e9"][i % 5] for i in range(words))
    return json.dumps(SUBMITS[dialect][1], ensure_ascii=False).replace('"x"', json.dumps(text))


def _seen_by_the_dialect(side: _Side) -> list[Any]:
    """Every ``HttpRequest`` with a body that ``side``'s dialect parses, field by field and
    the headers it reads (``headers_read``; every header for a dialect class that declares
    none) in order, whichever way it is handed over (whole, or to a body parser). Headers
    the app hands a dialect beyond those it reads are recorded as ``("beyond", names)``."""
    seen: list[Any] = []
    dialect = side.provider.dialect
    read = vars(type(dialect)).get("headers_read")

    def record(http: HttpRequest) -> None:
        if http.body or http.too_large is not None:
            fields = [(name, value) for name, value in vars(http).items() if name != "headers"]
            headers = [(k, v) for k, v in http.headers.items() if read is None or k in read]
            seen.append((fields, headers))
            beyond = sorted(set(http.headers) - set(read or http.headers))
            if beyond and side.app._lanes:
                seen.append(("beyond", beyond))

    whole, body_parser = dialect.parse, dialect.body_parser

    def parse(http: HttpRequest) -> Any:
        record(http)
        return whole(http)

    def recording_body_parser(bare: HttpRequest) -> Any:
        made = body_parser(bare)
        if made is None:
            return None

        def parse_body(http: HttpRequest) -> Any:
            record(http)
            return made(http)

        return parse_body

    dialect.parse = parse  # type: ignore[method-assign]
    dialect.body_parser = recording_body_parser  # type: ignore[method-assign]
    return seen


def _undeclared(side: _Side) -> None:
    """``side``'s dialect as an instance of a subclass that declares no ``headers_read`` of
    its own: the app hands it every header, and keeps its lanes by every header."""
    dialect = side.provider.dialect
    dialect.__class__ = type("Undeclared", (type(dialect),), {})


def _play_lengths(
    dialect: str, scenario: str, submits: list[tuple[Any, ...]], *, declared: bool = True
) -> list[Any]:
    """``submits`` (prompt words, per-request headers pick, length form, split, client) on
    both sides: the same answers, journal lines and ``HttpRequest``s (the headers the dialect
    reads, ``_seen_by_the_dialect``); what the dialect saw. ``declared=False``: a dialect
    class that declares no ``headers_read`` (``_undeclared``)."""
    fast, general = _Side(dialect, scenario, True), _Side(dialect, scenario, False)
    if not declared:
        _undeclared(fast)
        _undeclared(general)
    seen = [_seen_by_the_dialect(side) for side in (fast, general)]
    path = SUBMITS[dialect][0]
    for words, pick, form, split, client in submits:
        body = _prompted(dialect, words).encode() if words >= 0 else BODIES[-words]
        headers = _with_length([*_SUBMIT_HEADERS, *PER_REQUEST[pick]], body, form)
        chunks = [body[:3], body[3:]] if split and len(body) > 3 else [body]
        answers = [
            side.call(_scope("POST", path, b"", headers, client), chunks)
            for side in (fast, general)
        ]
        assert answers[0] == answers[1], (words, pick, form, split)
    assert fast.sink.getvalue() == general.sink.getvalue()
    assert seen[0] == seen[1]
    assert len(seen[0]) == len(submits)
    return seen[0]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_submits_of_every_length_on_one_connection_are_answered_as_made_afresh(
    dialect: str, data: st.DataObject
) -> None:
    """The body lane is kept without the ``Content-Length`` field (no dialect reads it; one
    that declares nothing it reads: each request's ``HttpRequest`` gets its own): bodies of
    many lengths (and some bad ones), the field in every place and form, per-request
    headers, split bodies, one client or two."""
    scenario = data.draw(st.sampled_from(["long-render", "transient-5xx", "quick-preview"]))
    declared = data.draw(st.booleans(), label="declared")
    submit = st.tuples(
        st.one_of(st.integers(0, 600), st.integers(-len(BODIES) + 1, -1)),
        st.integers(0, len(PER_REQUEST) - 1),
        st.sampled_from(LENGTH_FORMS),
        st.booleans(),
        st.sampled_from(CLIENTS[:2]),
    )
    submits = data.draw(st.lists(submit, min_size=1, max_size=20))
    _play_lengths(dialect, scenario, submits, declared=declared)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_each_submit_gets_its_own_content_length_in_every_form(dialect: str) -> None:
    """Every form of the field, each for bodies of three lengths in turn and a length again,
    whole and split, for a dialect class that declares no ``headers_read`` (so that it is
    handed every header): the headers each request is made with are the general path's."""
    submits = [
        (words, 0, form, split, CLIENTS[0])
        for form in LENGTH_FORMS
        for split in (False, True)
        for words in (3, 40, 400, 3)
    ]
    seen = _play_lengths(dialect, "long-render", submits, declared=False)
    lengths = [dict(headers).get("content-length") for _, headers in seen]
    assert lengths[:8] == [None] * 8  # "none"
    assert lengths[8:12] == [str(len(_prompted(dialect, w).encode())) for w in (3, 40, 400, 3)]
    assert lengths[-4:] == ["7", "7", "7", "7"]  # "true then other": the last field's


@pytest.mark.parametrize("declared", [True, False])
def test_one_body_lane_serves_submits_of_every_length(declared: bool) -> None:
    """Kept by the fields the dialect reads (``Content-Length`` is none of them), or for a
    dialect that declares none by every field but the ``Content-Length`` (its place in the
    key) and the length the lane's ``HttpRequest`` was made with."""
    side = _Side("generic", "long-render", True)
    if not declared:
        _undeclared(side)
    for words in range(1, 300):
        body = _prompted("generic", words).encode()
        own = [(b"x-request-id", b"r%d" % words)] if declared else []
        headers = _with_length([*_SUBMIT_HEADERS, *own], body, "middle")
        side.call(_scope("POST", "/v1/jobs", b"", headers, CLIENTS[0]), [body])
    assert len(side.app._body_lanes) == 1
    ((key, lane),) = side.app._body_lanes.items()
    if declared:  # authorization and content-type
        assert key == ("POST", "/v1/jobs", b"", CLIENTS[0], "http", tuple(_SUBMIT_HEADERS[:2]))
        assert lane[0].headers == {
            "authorization": "Bearer sk-test",
            "content-type": "application/json",
        }
        assert lane[4] is None
    else:
        assert key == ("POST", "/v1/jobs", b"", CLIENTS[0], "http", 1, *_SUBMIT_HEADERS)
        assert lane[4] == b"%d" % len(_prompted("generic", 1).encode())


def test_lanes_stop_being_kept_for_requests_that_never_repeat_and_start_again_when_they_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Submits and status reads each with a header of its own that the dialect reads (an
    idempotency key): lanes are made and not found again, so after a window they are no
    longer kept (but for a probe in ``_PROBE``); the same requests again and again, or each
    with a header of its own the dialect does not read (a request id): the probes are found,
    and lanes are kept again. Answered, journaled and handed to the dialect as made afresh
    throughout."""
    monkeypatch.setattr(app_module, "_LANE_WINDOW", 8)
    monkeypatch.setattr(app_module, "_PROBE", 3)
    fast, general = _Side("generic", "long-render", True), _Side("generic", "long-render", False)
    seen = [_seen_by_the_dialect(side) for side in (fast, general)]
    keeping = []

    def both(method: str, path: str, headers: list[Any], body: bytes) -> None:
        scope = _scope(method, path, b"", _with_length(headers, body, "last"), CLIENTS[0])
        answers = [side.call(scope, [body] if body else []) for side in (fast, general)]
        assert answers[0] == answers[1], (method, path, headers)

    made = [0]
    for name in ("_lane", "_body_lane"):
        make = getattr(fast.app, name)

        def counted(*args: Any, _make: Any = make) -> Any:
            made[0] += 1
            return _make(*args)

        setattr(fast.app, name, counted)
    phases = ("own keys", "repeated", "own ids", "own keys")
    for round_, phase in enumerate(phases):
        made[0] = 0
        for n in range(40):
            name = {"own keys": b"idempotency-key", "own ids": b"x-request-id"}.get(phase)
            own = [] if name is None else [(name, b"r%d-%d" % (round_, n))]
            body = _prompted("generic", 1 + n % 7).encode()
            both("POST", "/v1/jobs", [*_SUBMIT_HEADERS, *own], body)
            job = list(fast.provider.engine.jobs)[n % 3].id
            both("GET", f"/v1/jobs/{job}", [HEADERS[0], *own], b"")
        keeping.append((phase, fast.app._keeping, made[0]))
    # 80 requests a phase: a lane made for each when they do not repeat; a few when they do
    # (until a probe is found and lanes are kept again), none when they differ only in a
    # header the dialect does not read
    assert keeping == [
        ("own keys", False, 80),
        ("repeated", True, 9),
        ("own ids", True, 0),
        ("own keys", False, 80),
    ]
    assert fast.sink.getvalue() == general.sink.getvalue()
    assert seen[0] == seen[1]


def _counting_keys(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often the app picks the headers its dialect reads for a lane's key (``_key``)."""
    picked = [0]
    key = app_module._key

    def counted(*args: Any) -> Any:
        picked[0] += 1
        return key(*args)

    monkeypatch.setattr(app_module, "_key", counted)
    return picked


def test_a_read_whose_every_part_repeats_finds_its_lane_without_picking_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lane found again by the headers its dialect reads is kept by every part of the scope
    too: a read that repeats every part of it (every header) finds it there, the headers
    unpicked; one that differs in any header, read or not, is looked up by the headers read.
    Answered and journaled as made afresh throughout."""
    picked = _counting_keys(monkeypatch)
    fast, general = _Side("generic", "long-render", True), _Side("generic", "long-render", False)
    for side in (fast, general):
        side.call(_scope("POST", "/v1/jobs", b"", _SUBMIT_HEADERS, CLIENTS[0]), [b'{"prompt":"a"}'])
    job = next(iter(fast.provider.engine.jobs)).id
    traced = [HEADERS[0], (b"x-request-id", b"r1"), HEADERS[8]]
    other_id = [HEADERS[0], (b"x-request-id", b"r2"), HEADERS[8]]
    other_key = [HEADERS[0], (b"x-request-id", b"r1"), (b"authorization", b"Bearer sk-2")]
    picks = []
    for headers in [traced] * 3 + [other_id] * 3 + [other_key] * 2 + [traced]:
        picked[0] = 0
        scope = _scope("GET", f"/v1/jobs/{job}", b"", headers, CLIENTS[0])
        answers = [side.call(scope, []) for side in (fast, general)]
        assert answers[0] == answers[1], headers
        picks.append(picked[0])
    assert picks == [1, 1, 0, 1, 0, 0, 1, 1, 0]
    assert fast.sink.getvalue() == general.sink.getvalue()
    # three scopes kept by every part, sharing the two lanes kept by the headers read
    wholes = fast.app._whole_lanes.values()
    assert len(wholes) == 3
    assert {id(lane) for lane in wholes} == {id(lane) for lane in fast.app._lanes_kept.values()}
    assert len(fast.app._lanes_kept) == 2


def test_reads_with_a_header_of_their_own_stop_being_looked_up_by_every_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reads each with a request id of their own are never found by every part of their
    scope: after a window they are looked up so only by one in ``_PROBE``, and again by each
    once reads repeat (the probes are found). Answered and journaled as made afresh."""
    monkeypatch.setattr(app_module, "_LANE_WINDOW", 8)
    monkeypatch.setattr(app_module, "_PROBE", 3)
    fast, general = _Side("generic", "long-render", True), _Side("generic", "long-render", False)
    for side in (fast, general):
        side.call(_scope("POST", "/v1/jobs", b"", _SUBMIT_HEADERS, CLIENTS[0]), [b'{"prompt":"a"}'])
    job = next(iter(fast.provider.engine.jobs)).id
    looked = []
    for round_, phase in enumerate(("own ids", "repeated", "own ids")):
        for n in range(40):
            own = [(b"x-request-id", b"r%d-%d" % (round_, n))] if phase == "own ids" else []
            scope = _scope("GET", f"/v1/jobs/{job}", b"", [HEADERS[0], *own], CLIENTS[0])
            answers = [side.call(scope, []) for side in (fast, general)]
            assert answers[0] == answers[1]
        looked.append((phase, fast.app._whole_on))
    assert looked == [("own ids", False), ("repeated", True), ("own ids", False)]
    assert fast.sink.getvalue() == general.sink.getvalue()


def test_lanes_are_kept_while_found_at_least_once_for_every_four_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app_module, "_LANE_WINDOW", 8)
    app = create_app(FakeProvider("long-render", clock=VirtualClock()))
    verdicts = []
    for hits in (2, 1, 0, 5):
        app._hits = hits
        kept = [app._keep() for _ in range(8)]
        verdicts.append((app._keeping, kept.count(True)))
    # each window's verdict holds for the next: 2 found for 8 made keeps, 1 does not (and
    # with windows shorter than ``_PROBE`` no probe falls in them); 5 keeps again
    assert verdicts == [(True, 8), (False, 7), (False, 0), (True, 1)]


def test_header_layouts_are_learnt_up_to_a_bound_and_picked_alike_beyond_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Which fields a dialect reads, by the names of a scope's fields in order: learnt for
    ``_LAYOUTS_KNOWN`` layouts, worked out afresh for the others, the same fields either way
    (in any case, repeated, one alone, none)."""
    monkeypatch.setattr(app_module, "_LAYOUTS_KNOWN", 2)
    app = create_app(FakeProvider("long-render", clock=VirtualClock()))
    wanted = app._wanting(app.provider.dialect)
    assert wanted is not None
    layouts = [
        [(b"x-request-id", b"r1"), (b"Authorization", b"Bearer a"), (b"host", b"h")],
        [(b"x-request-id", b"r2")],
        [(b"X-CLIENT-ID", b"c"), (b"x-trace", b"t"), (b"x-client-id", b"d")],
        [(b"content-type", b"text/plain")],
        [(b"x-\xc9", b"e"), (b"Idempotency-Key", b"k")],
    ]
    expected = [
        ((b"Authorization", b"Bearer a"), (b"host", b"h")),
        (),
        ((b"X-CLIENT-ID", b"c"), (b"x-client-id", b"d")),
        ((b"content-type", b"text/plain"), (b"content-type", b"text/plain")),
        ((b"Idempotency-Key", b"k"), (b"Idempotency-Key", b"k")),
    ]
    for _ in range(2):
        assert [app_module._fields(fields, wanted) for fields in layouts] == expected
    assert len(wanted) == 2
