"""The dialect base: ``BadRequest`` refusals become one problem request, built by ``parse``."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fakeprovider.dialects import DIALECTS, get_dialect
from fakeprovider.dialects.base import (
    _KEPT_BODY,
    _KEPT_JOBS,
    _MATCHES_KEPT,
    _PATH_KEPT,
    MAX_JSON_DEPTH,
    BadRequest,
    Dialect,
    Route,
    RouteTable,
    check_body,
    new_request,
    read_json_object,
    route_request,
    scan_routes,
    walk_body,
)
from fakeprovider.http import HttpRequest, json_response
from fakeprovider.messages import JobView, Reply, Request
from fakeprovider.scenario import JobError, Result
from tests.thorough import thorough


class _Refusing(Dialect):
    """Refuses every request with the ``BadRequest`` its test hands it."""

    routes = (Route("POST", "/jobs", "submit"), Route("GET", "/jobs/{job_id}", "status"))

    def __init__(self, refusal: BadRequest | None = None) -> None:
        super().__init__()
        self.refusal = refusal

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if self.refusal is not None:
            raise self.refusal
        return Request(kind=route.kind, job_id=params.get("job_id"), **common)


def _json(body: bytes, ctype: str = "application/json") -> HttpRequest:
    return HttpRequest("POST", "/jobs", headers={"content-type": ctype}, body=body)


@pytest.mark.parametrize(
    ("body", "ctype", "status", "code", "message"),
    [
        (b"{}", "text/plain", 415, "unsupported_media_type", "(got text/plain)."),
        (b"{}", "", 415, "unsupported_media_type", "(got none)."),
        (b"{", "application/json", 400, "invalid_json", "The body is not valid JSON: "),
        (b"[1]", "application/json", 400, "invalid_json", "The body must be a JSON object."),
        (b"", "application/json", 400, "invalid_json", "The body must be a JSON object."),
    ],
)
def test_read_json_object_refuses(
    body: bytes, ctype: str, status: int, code: str, message: str
) -> None:
    with pytest.raises(BadRequest) as refused:
        read_json_object(_json(body, ctype))
    assert (refused.value.status, refused.value.code) == (status, code)
    assert message in refused.value.message
    assert refused.value.body is None


def test_read_json_object_accepts_json_suffixes() -> None:
    assert read_json_object(_json(b'{"a": 1}', "application/merge-patch+json")) == {"a": 1}


def test_refusal_takes_the_routes_kind_and_job_id() -> None:
    dialect = _Refusing(BadRequest(409, "nope", "No.", body={"x": 1}))
    request = dialect.parse(HttpRequest("GET", "/jobs/j1"))
    assert (request.kind, request.job_id, request.body) == ("status", "j1", {"x": 1})
    assert (request.problem_status, request.problem_code, request.problem) == (409, "nope", "No.")


def test_refusal_can_override_kind_and_job_id() -> None:
    dialect = _Refusing(BadRequest(400, "bad", "Bad.", kind="cancel", job_id="j2"))
    request = dialect.parse(HttpRequest("GET", "/jobs/j1"))
    assert (request.kind, request.job_id, request.body) == ("cancel", "j2", None)


def test_too_large_and_wrong_method_are_refusals_too() -> None:
    dialect = _Refusing()
    large = dialect.parse(HttpRequest("POST", "/jobs", too_large=10))
    assert (large.kind, large.problem_status, large.problem_code) == (
        "submit",
        413,
        "payload_too_large",
    )
    assert large.problem == "Request bodies are limited to 10 bytes."
    wrong = dialect.parse(HttpRequest("DELETE", "/jobs"))
    assert (wrong.kind, wrong.problem_status, wrong.problem) == (
        "unknown",
        405,
        "DELETE is not allowed here; use POST.",
    )
    assert dialect.parse(HttpRequest("GET", "/elsewhere")).problem is None


@pytest.mark.parametrize("dialect", ["generic", "runway", "google-veo"])
def test_providers_without_webhooks_send_the_generic_signed_shape(dialect: str) -> None:
    from fakeprovider.webhooks import verify

    from .helpers import SECRET, body_of, hook_scenario, planned_messages, virtual

    provider, clock = virtual(dialect, hook_scenario("http://127.0.0.1:9/h", ""))
    provider.engine.handle(Request("submit", "POST", "/", body={"prompt": "a cat"}), 0.0)
    ((delivery, message),) = planned_messages(provider, clock, 1.0)
    payload = body_of(message)
    assert (payload["type"], payload["timestamp"]) == ("job.succeeded", "2026-01-01T00:00:00.300Z")
    assert (payload["data"]["job_id"], payload["data"]["status"]) == (delivery.job_id, "succeeded")
    assert verify(
        SECRET, message.headers, message.body, now=int(message.headers["webhook-timestamp"])
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"prompt": "\\ud800"}',
            "The body holds a lone surrogate (U+D800); send valid Unicode text.",
        ),
        (b'{"\\udfff": 1}', "The body holds a lone surrogate (U+DFFF); send valid Unicode text."),
        (
            b'{"a": [{"b": "ok \\udc80"}]}',
            "The body holds a lone surrogate (U+DC80); send valid Unicode text.",
        ),
        (
            b'{"p": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "The body nests deeper than 64 levels.",
        ),
        (b'{"p": ' + b"[" * 64 + b"]" * 64 + b"}", "The body nests deeper than 64 levels."),
    ],
)
def test_read_json_object_refuses_surrogates_and_deep_nesting(body: bytes, message: str) -> None:
    with pytest.raises(BadRequest) as refused:
        read_json_object(_json(body))
    assert (refused.value.status, refused.value.code, refused.value.message) == (
        400,
        "invalid_json",
        message,
    )


def test_read_json_object_accepts_paired_surrogates_and_63_levels() -> None:
    nested = b'{"p": ' + b"[" * 63 + b"]" * 63 + b', "e": "\\ud83c\\udfac"}'
    assert read_json_object(_json(nested))["e"] == "\U0001f3ac"


def test_json_response_escapes_a_lone_surrogate_instead_of_failing() -> None:
    response = json_response(200, {"prompt": "a\ud800b", "ok": "é"})
    assert response.body == b'{"prompt":"a\\ud800b","ok":"\xc3\xa9"}'


def test_serve_help_lists_every_dialect_and_marks_the_sunset_api(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from fakeprovider.cli import main
    from fakeprovider.dialects import DIALECTS, describe_dialects

    described = describe_dialects()
    assert described.startswith(
        "generic, openai-videos (sunset API: OpenAI shut it down on 2026-09-24), runway,"
    )
    assert [part.split(" (")[0] for part in described.split(", ")] == list(DIALECTS)
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"wire dialect, one of: {described} (default: the scenario's, else generic)" in help_text


# --- the route table ------------------------------------------------------------------------

_ALL_ROUTES = sorted(
    {(name, route) for name in DIALECTS for route in get_dialect(name).routes},
    key=lambda pair: (pair[0], pair[1].method, pair[1].template),
)
_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]


@st.composite
def _paths(draw: st.DrawFn, templates: list[str]) -> str:
    """A path near one of ``templates``: its parameters filled with anything, pieces cut or
    added, a newline at the end (``$`` matches before one)."""
    template = draw(st.sampled_from(templates))
    filler = st.text(st.sampled_from("ab/.:-_%\n{}"), min_size=0, max_size=6)
    parts = template.replace("{", "\0{").replace("}", "}\0").split("\0")
    path = "".join(draw(filler) if part.startswith("{") else part for part in parts)
    cut = draw(st.integers(0, len(path)))
    return draw(st.sampled_from([path, path + "\n", path[:cut], path + draw(filler)]))


def _dialect_case(name: str) -> tuple[RouteTable, list[Route], list[str]]:
    routes = list(get_dialect(name).routes)
    return RouteTable(routes), routes, [route.template for route in routes]


@pytest.mark.parametrize("name", list(DIALECTS))
@given(data=st.data())
def test_the_route_table_finds_the_first_route_trying_each_in_order(
    name: str, data: st.DataObject
) -> None:
    table, routes, templates = _dialect_case(name)
    method = data.draw(st.sampled_from(_METHODS))
    path = data.draw(_paths(templates))
    assert table.match(method, path) == scan_routes(routes, method, path)
    # again: now from the paths it keeps
    assert table.match(method, path) == scan_routes(routes, method, path)


@pytest.mark.parametrize("name", list(DIALECTS))
def test_the_route_table_keeps_finding_what_scanning_finds_as_its_kept_paths_fill_and_clear(
    name: str,
) -> None:
    table, routes, templates = _dialect_case(name)
    # more distinct paths than it keeps, each asked for twice, some longer than it keeps
    for number in range(_MATCHES_KEPT * 2 + 7):
        for template in templates:
            filled = template.replace("{", "").replace("}", f"-{number}")
            path = filled if number % 50 else filled + "x" * (_PATH_KEPT + 1)
            for method in _METHODS[:2]:
                expected = scan_routes(routes, method, path)
                assert table.match(method, path) == expected
                assert table.match(method, path) == expected
    assert len(table._matched) <= _MATCHES_KEPT


def test_a_kept_match_gives_each_caller_its_own_parameters() -> None:
    table = RouteTable([Route("GET", "/v1/jobs/{job_id}", "status")])
    first = table.match("GET", "/v1/jobs/j1")
    assert first is not None
    first[1]["job_id"] = "changed"
    assert table.match("GET", "/v1/jobs/j1") == (first[0], {"job_id": "j1"})


def test_the_route_table_keeps_the_order_when_a_parameter_route_comes_first() -> None:
    routes = [
        Route("GET", "/v1/{name}", "status"),
        Route("GET", "/v1/list", "list"),
        Route("GET", "/v1/list/{job_id}", "content"),
    ]
    table = RouteTable(routes)
    assert table.match("GET", "/v1/list") == (routes[0], {"name": "list"})
    assert table.match("GET", "/v1/list\n") == (routes[0], {"name": "list\n"})
    assert table.match("GET", "/v1/list/x") == (routes[2], {"job_id": "x"})
    assert table.match("POST", "/v1/list") is None


def test_the_route_table_gives_each_caller_its_own_parameters() -> None:
    table = RouteTable([Route("GET", "/v1/jobs", "list")])
    found = table.match("GET", "/v1/jobs")
    assert found is not None
    found[1]["job_id"] = "x"
    assert table.match("GET", "/v1/jobs") == (found[0], {})


def test_a_route_is_static_only_without_parameters() -> None:
    assert Route("GET", "/v1/jobs", "list").static
    assert Route("GET", "/v1/a.b+c", "list").static
    assert not Route("GET", "/v1/jobs/{job_id}", "status").static


@given(
    kind=st.sampled_from(["submit", "status", "content", "cancel", "list", "unknown"]),
    job_id=st.none() | st.text(max_size=5),
    credential=st.none() | st.text(max_size=5),
    hold=st.floats(0, 10),
    problem=st.none() | st.text(max_size=5),
)
def test_new_request_makes_what_request_makes(
    kind: Any, job_id: str | None, credential: str | None, hold: float, problem: str | None
) -> None:
    fields = {"job_id": job_id, "credential": credential, "hold": hold, "problem": problem}
    made = new_request(kind=kind, method="GET", path="/p", **fields)
    expected = Request(kind=kind, method="GET", path="/p", **fields)
    assert type(made) is Request
    assert made == expected
    assert list(vars(made).items()) == list(vars(expected).items())
    assert hash(made) == hash(expected)


@given(
    kind=st.sampled_from(["submit", "status", "content", "cancel", "list", "unknown"]),
    job_id=st.none() | st.text(max_size=5),
    credential=st.none() | st.text(max_size=5),
    client=st.text(max_size=5),
    key=st.none() | st.text(max_size=5),
)
def test_route_request_makes_what_new_request_makes_from_what_parse_gathers(
    kind: Any, job_id: str | None, credential: str | None, client: str, key: str | None
) -> None:
    common = {
        "method": "GET",
        "path": "/p",
        "credential": credential,
        "client": client,
        "idempotency_key": key,
    }
    made = route_request(kind, job_id, dict(common))
    expected = Request(kind=kind, job_id=job_id, **common)
    assert type(made) is Request
    assert made == expected
    assert list(vars(made).items()) == list(vars(expected).items())
    assert hash(made) == hash(expected)


@pytest.mark.parametrize(
    ("common", "message"),
    [
        ({"method": "GET", "path": "/p", "colour": "red"}, "unexpected keyword argument 'colour'"),
        ({"method": "GET"}, "missing 1 required keyword-only argument: 'path'"),
        ({"path": "/p"}, "missing 1 required keyword-only argument: 'method'"),
        ({"method": "GET", "path": "/p", "kind": "list"}, "multiple values for keyword argument"),
        ({"method": "GET", "path": "/p", "job_id": "j"}, "multiple values for keyword argument"),
    ],
)
def test_route_request_refuses_what_request_refuses(common: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        route_request("status", "j1", common)


# --- status answers kept per job (keeps_status_answers), against answers made afresh ---

_KEEPING = [name for name in DIALECTS if get_dialect(name).keeps_status_answers]
_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled", "completed_with_errors"]
#: Every input of a status answer, each from a fixed pool: consecutive reads of one job share
#: the very objects, as the engine's views of one job at one step do.
_PARTS: dict[str, list[Any]] = {
    "id": ["job_a", "job_b", "j\ud800"],
    "spec_index": [0, 1],
    "status": _STATUSES,
    "progress": [None, 0, 35, 100, True, 35.0],
    "created_at": [0.0, 1.5, 31.2, 1e9],
    "status_since": [0.0, 2.0, 40.25],
    "now": [0.0, 3.0, 99.999, 1e9 + 5],
    "poll_after": [None, 15, 2.5],
    "estimated_duration": [None, 30.0],
    "message": ["Queued.", "Ünïcode \u2028 \udfff"],
    "request": [
        {},
        {"model": "m-1", "duration": 10, "seed": 7, "input": {"prompt": "a cat"}},
        {"parameters": {"storageUri": "gs://b/x"}, "webhook_config": {"uris": ["u"]}},
        {"response_format": {"video": {"delivery": "uri"}}, "seconds": "8", "prompt": "p"},
    ],
    "result": [None, Result(size_bytes=48), Result(url="https://cdn.example/v.mp4")],
    "error": [None, JobError(), JobError("expired", "It expired.")],
    "summary": [None, {"failed": 1, "total": 3}],
    "callback_url": [None, "http://127.0.0.1:9/hook"],
    "throttled": [False, True],
    # not the view's
    "headers": [(), (("X-Extra", "1"),)],
    "status_code": [200, 203],
    "base_url": ["http://127.0.0.1:8000", "http://localhost:1"],
    "seq": [1, 2],
    "query": [{}, {"logs": "1", "limit": "2"}, {"logs": "TRUE"}, {"logs": "no"}],
}
_VIEW_PARTS = [f.name for f in dataclasses.fields(JobView)]


@st.composite
def _status_reads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A run's status reads: the first drawn whole, each next one the last with a part or two
    drawn again (or none)."""
    reads = [{name: draw(st.sampled_from(pool)) for name, pool in _PARTS.items()}]
    for _ in range(draw(st.integers(0, 11))):
        changed = draw(st.lists(st.sampled_from(list(_PARTS)), max_size=2))
        reads.append({**reads[-1], **{n: draw(st.sampled_from(_PARTS[n])) for n in changed}})
    return reads


def _answer(dialect: Dialect, read: dict[str, Any]) -> Any:
    """The dialect's answer to ``read``, or the type of what it raised."""
    view = JobView(**{name: read[name] for name in _VIEW_PARTS})
    request = Request(kind="status", method="GET", path=f"/x/{view.id}", job_id=view.id)
    reply = Reply(
        seq=read["seq"],
        request=request,
        status_code=read["status_code"],
        respond_at=view.now,
        job=view,
        headers=read["headers"],
    )
    http = HttpRequest("GET", request.path, query=read["query"], base_url=read["base_url"])
    try:
        return dialect.render(reply, http)
    except Exception as exc:
        return type(exc)


@pytest.mark.parametrize("name", _KEEPING)
@thorough(150, deadline=None)
@given(reads=_status_reads())
def test_a_kept_status_answer_is_the_answer_made_afresh(
    name: str, reads: list[dict[str, Any]]
) -> None:
    dialect = get_dialect(name)  # keeps its answers across the reads: one run's status reads
    for read in reads:
        assert _answer(dialect, read) == _answer(get_dialect(name), read)


def test_the_dialects_keeping_status_answers_are_those_whose_answers_show_no_passing_time() -> None:
    assert sorted(_KEEPING) == [
        "ark",
        "fal",
        "gemini",
        "google-veo",
        "luma",
        "openai-videos",
        "replicate",
        "runway",
    ]


def test_status_answers_are_kept_for_a_bounded_number_of_jobs_and_sizes() -> None:
    dialect = get_dialect("runway")
    read = {name: pool[0] for name, pool in _PARTS.items()}
    for number in range(_KEPT_JOBS + 5):
        assert _answer(dialect, {**read, "id": f"job_{number}"}) == _answer(
            get_dialect("runway"), {**read, "id": f"job_{number}"}
        )
    assert 0 < len(dialect._kept_answers) <= _KEPT_JOBS
    veo = get_dialect("google-veo")
    inline = {**read, "status": "succeeded", "result": Result(size_bytes=_KEPT_BODY)}
    answer = _answer(veo, inline)
    assert len(answer.body) > _KEPT_BODY
    assert veo._kept_answers == {}


def _read_as_json_loads_reads(body: bytes) -> Any:
    """What ``read_json_object`` answers for ``body``, were its JSON read by ``json.loads`` on
    the bytes (the general path): the object, or the refusal's status, code and message."""
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        return (400, "invalid_json", f"The body is not valid JSON: {exc}.")
    except RecursionError:
        return (400, "invalid_json", f"The body nests deeper than {MAX_JSON_DEPTH} levels.")
    if not isinstance(data, dict):
        return (400, "invalid_json", "The body must be a JSON object.")
    return data


_BODY_BYTES = st.sampled_from(
    [
        *(b"{", b"}", b'"', b":", b"1", b"a", b"\x00", b"\xff", b"\xfe", b"\xef\xbb\xbf"),
        *(b"\xc3\xa9", b"\xed\xa0\x80", b"\\ud800", b" ", b"[", b"\n"),
    ]
)


@thorough(500)
@given(
    body=st.one_of(
        st.lists(_BODY_BYTES, max_size=8).map(b"".join),
        st.binary(max_size=12),
        st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=3).map(
            lambda d: json.dumps(d, ensure_ascii=False).encode()
        ),
        st.sampled_from(
            ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-8-sig"]
        ).map(lambda codec: '{"a": "\\u00e9"}'.encode(codec)),
    )
)
@example(b'{"a": 1} ')
@example(b'{"a": 1}x')
@example(b'{"a":1}{"b":2}')
@example(b'{"a": 1')
@example(b"{\xff")
@example(b'{"\xed\xa0\x80": 1}')
@example(b'{"a": "\xc3\xa9"}')
@example(b"{\x00")
@example(b"{")
@example(b"{}")
def test_read_json_object_reads_what_json_loads_reads_from_the_bytes(body: bytes) -> None:
    expected = _read_as_json_loads_reads(body)
    try:
        got: Any = read_json_object(_json(body))
    except BadRequest as refused:
        got = (refused.status, refused.code, refused.message)
    if isinstance(expected, dict):
        try:
            check_body(expected)
        except BadRequest as refused:
            expected = (refused.status, refused.code, refused.message)
    assert got == expected


_NUMBER_TEXTS = st.from_regex(
    r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True
)
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from(["\ud800", "\udfff", "\U0001f3ac", "\x00", "\\", '"']),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.sampled_from(["a", "\ud800"]), inner, max_size=3)
    ),
    max_leaves=12,
)


def _typed(value: Any) -> Any:
    """``value`` with every number's type and sign shown (``1 == 1.0 == True``, ``0.0 == -0.0``)."""
    if isinstance(value, dict):
        return [(_typed(k), _typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, repr(value))


@thorough(300)
@given(
    body=st.one_of(
        st.dictionaries(st.text(max_size=3), _JSON_VALUES, max_size=4).flatmap(
            lambda d: st.sampled_from(
                [
                    json.dumps(d).encode(),
                    json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass"),
                    json.dumps(d, indent=1).encode() + b"\n",
                ]
            )
        ),
        st.lists(_NUMBER_TEXTS, min_size=1, max_size=3).map(
            lambda numbers: (
                "{" + ",".join(f'"n{i}":{n}' for i, n in enumerate(numbers)) + "}"
            ).encode()
        ),
    )
)
@example(b'{"a":1e400,"b":-1e400,"c":1e-400}')
@example(b'{"a":1.7976931348623157e309,"b":2.2250738585072011e-308}')
@example(b'{"a":NaN,"b":Infinity}')
@example(b'{"a":123456789012345678901234567890,"b":-0,"c":-0.0}')
@example(b'{"a":1,"a":2,"b":3}')
@example(b'{"a":"\\ud800"}')
@example(b'{"a":"\xed\xa0\x80"}')
@example(b'{"a":1}\x0c')
@example(b'{"a":' * 63 + b"1" + b"}" * 63)
@example(b'{"a":' * 64 + b"1" + b"}" * 64)
@example(b'{"a":' * 65 + b"1" + b"}" * 65)
@example(b'{"a":' + b"[" * 63 + b"]" * 63 + b"}")
@example(b'{"a":' + b"[" * 64 + b"]" * 64 + b"}")
@example(b'{"a":"' + b"[" * 70 + b'"}')
@example(b'{"a":"\\\\u0041"}')
@example(b'{"a":"\\u0041"}')
def test_read_json_object_reads_numbers_text_and_order_as_json_loads_does(body: bytes) -> None:
    """msgspec reads an object's body when it can (``_DECODE``): the same values of the same
    types, in the same order, as json.loads reads, or the same refusal."""
    expected = _read_as_json_loads_reads(body)
    if isinstance(expected, dict):
        try:
            check_body(expected)
        except BadRequest as refused:
            expected = (refused.status, refused.code, refused.message)
    try:
        got: Any = read_json_object(_json(body))
    except BadRequest as refused:
        got = (refused.status, refused.code, refused.message)
    assert _typed(got) == _typed(expected)


_PROMPT_PIECES = st.sampled_from(
    [
        *("a", " ", "{", "[", "}", "]", '\\"', "\\\\", "\\u0041", "\\ud800", "\\ud83c\\udfac"),
        *("\u00e9", "\U0001f3ac", "\\n", "x" * 40),
    ]
)
_FLAT_VALUES = st.sampled_from(["1", "2.5", "null", "true", "[]", "{}", '"\\udc00"', "[[1]]"])


@thorough(400)
@given(
    names=st.lists(st.sampled_from(["prompt", "a", "\u00e9", "\\ud800", "[{"]), max_size=3),
    prompts=st.lists(st.lists(_PROMPT_PIECES, max_size=40).map("".join), max_size=3),
    others=st.lists(_FLAT_VALUES, max_size=2),
    depth=st.integers(min_value=0, max_value=70),
)
@example(names=["prompt"], prompts=["[" * 70], others=[], depth=0)
@example(names=["prompt"], prompts=["{" * 70], others=["1"], depth=0)
@example(names=["prompt"], prompts=["\\ud800"], others=[], depth=0)
@example(names=["a"], prompts=["x"], others=[], depth=63)
@example(names=["a"], prompts=["x"], others=[], depth=64)
def test_read_json_object_refuses_what_json_loads_and_the_walk_refuse_for_long_prompts(
    names: list[str], prompts: list[str], others: list[str], depth: int
) -> None:
    """Submits' bodies: prompts of any length with brackets, escapes, non-ASCII text and lone
    surrogates in them, beside values and nesting: read as json.loads and the walk of every
    value (``walk_body``) read them, or refused alike."""
    values = [f'"{prompt}"' for prompt in prompts] + others
    fields = [
        f'"{name}{i}": {value}' for i, (name, value) in enumerate(zip(names, values, strict=False))
    ]
    text = "{" + ", ".join(fields) + "}"
    for _ in range(depth):
        text = '{"n": ' + text + "}"
    body = text.encode("utf-8")
    expected = _read_as_json_loads_reads(body)
    if isinstance(expected, dict):
        expected = _verdict(walk_body, expected) or expected
    try:
        got: Any = read_json_object(_json(body))
    except BadRequest as refused:
        got = (refused.status, refused.code, refused.message)
    assert _typed(got) == _typed(expected)


@pytest.mark.parametrize(
    "ctype",
    [
        "application/json",
        "application/json; charset=utf-8",
        " APPLICATION/JSON ",
        "a/b+json",
        "text/plain",
        "",
        "application/jsonx",
        "multipart/form-data; boundary=x",
    ],
)
def test_read_json_object_answers_a_content_type_alike_every_time(
    ctype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakeprovider.dialects import base

    def verdict() -> Any:
        try:
            return read_json_object(_json(b'{"a": 1}', ctype))
        except BadRequest as refused:
            return (refused.status, refused.code, refused.message)

    first = verdict()
    assert [verdict(), verdict()] == [first, first]
    monkeypatch.setattr(base, "_JSON_TYPES", set())
    monkeypatch.setattr(base, "_JSON_TYPES_KEPT", 0)  # none kept: read every time
    assert verdict() == first
    assert not base._JSON_TYPES


@thorough(60)
@given(
    common=st.fixed_dictionaries(
        {"method": st.just("POST"), "path": st.sampled_from(["/v1/jobs", "/x"])},
        optional={
            "credential": st.none() | st.just("sk"),
            "client": st.just("c1"),
            "idempotency_key": st.none() | st.just("k"),
            "hold": st.just(2.0),
            "problem": st.just("odd"),
        },
    ),
    body=st.none() | st.just({"prompt": "x"}),
    callback_url=st.none() | st.just("http://127.0.0.1/h"),
    hold=st.sampled_from([0.0, 1.5]),
)
def test_submit_request_is_the_request_made_by_keyword_field_for_field_in_order(
    common: dict[str, Any], body: Any, callback_url: Any, hold: float
) -> None:
    from fakeprovider.dialects.base import _Common, submit_request

    def made(values: dict[str, Any]) -> Any:
        try:
            request = submit_request(values, body, callback_url, hold)
        except TypeError as exc:
            return str(exc)
        return list(vars(request).items())

    try:
        expected: Any = new_request(
            kind="submit", body=body, callback_url=callback_url, hold=hold, **common
        )
    except TypeError as exc:
        expected = str(exc)
    else:
        expected = list(vars(expected).items())
    kept = _Common(common)
    assert dict(kept) == common
    assert (kept.submit is None) == ("hold" in common)
    assert made(kept) == made(common) == expected


def test_fal_answers_afresh_for_a_job_that_ended_at_reading_0_whatever_the_query() -> None:
    # the same reading object both times: only the query (logs) differs between the reads
    first = {name: pool[0] for name, pool in _PARTS.items()}
    first.update(status="succeeded", created_at=0.0, status_since=0.0, now=0.0)
    second = {**first, "query": {"logs": "1"}}
    dialect = get_dialect("fal")
    for read in (first, second, first):
        assert _answer(dialect, read) == _answer(get_dialect("fal"), read)


def _verdict(check: Any, data: Any) -> Any:
    try:
        check(data)
    except BadRequest as refused:
        return (refused.status, refused.code, refused.message)
    return None


_BODY_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.sampled_from(["a", "caf\u00e9", "\ud800", "\udfff x", ""])
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "\ud800", "\u00e9"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@thorough(400)
@given(
    body=st.dictionaries(
        st.sampled_from(["a", "b", "\ud800", "\u00e9", "c"]),
        st.sampled_from(["a", "caf\u00e9", "\ud800", 1, 2.5, None, True, [], {}]) | _BODY_VALUES,
    )
)
@example(body={"a": "x", "b": 1, "c": None})
@example(body={"a": "x", "\ud800": 1})
@example(body={"a": True, "b": "caf\u00e9"})
def test_check_body_refuses_what_walking_every_value_refuses(body: dict[str, Any]) -> None:
    assert _verdict(check_body, body) == _verdict(walk_body, body)


def test_check_body_refuses_a_flat_body_as_the_walk_does() -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = [deep]
    for body in ({"a": "\ud800"}, {"\udc00": 1}, {"a": deep}):
        refused = _verdict(check_body, body)
        assert refused == _verdict(walk_body, body)
        assert refused is not None
    assert _verdict(check_body, {1: "x"}) is None  # a name that is not text is shown as text


@given(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(["Bearer t", "bearer  t ", "BEARER t", "Bearer", "Bearer ", "Key t", " t"]),
    )
)
def test_the_default_credential_is_the_bearer_token(authorization: str) -> None:
    http = HttpRequest("GET", "/", headers={"authorization": authorization})
    assert Dialect().credential(http) == http.bearer
    assert Dialect().credential(HttpRequest("GET", "/")) is None


def test_each_kind_is_rendered_by_the_step_render_comes_to_unless_render_is_overridden() -> None:
    generic, runway, fal = get_dialect("generic"), get_dialect("runway"), get_dialect("fal")
    assert generic.renderer("status") == generic._status  # type: ignore[attr-defined]
    assert generic.renderer("submit") == generic._submit  # type: ignore[attr-defined]
    assert generic.renderer("list") == generic.render_answer
    assert runway.renderer("status") == runway._status_answer
    assert runway.renderer("list") == runway.render_answer
    assert fal.renderer("status") == fal.render  # fal adds its request id in render
    assert fal.renderer("submit") == fal._submit  # type: ignore[attr-defined]
