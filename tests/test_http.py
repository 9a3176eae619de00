"""The neutral HTTP layer: HTTP-dates, Retry-After, safe headers, JSON answers."""

from __future__ import annotations

import dataclasses
import email.utils
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.http import (
    DATE_FORMS,
    RETRY_AFTER_FORMS,
    HttpRequest,
    HttpResponse,
    RetryAfterForm,
    RetryAfterValue,
    all_safe_header_values,
    client_of,
    error_code,
    error_response,
    fast_constructor,
    format_http_date,
    is_safe_header_value,
    json_response,
    json_text,
    parse_http_date,
    parse_retry_after,
    read_retry_after,
    retry_after_header,
    safe_header_value,
    wire_problem,
)

RFC_EXAMPLE = 784111777  # Sun, 06 Nov 1994 08:49:37 GMT, the RFC's own example


@pytest.mark.parametrize(
    ("form", "text"),
    [
        ("imf", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ("rfc850", "Sunday, 06-Nov-94 08:49:37 GMT"),
        ("asctime", "Sun Nov  6 08:49:37 1994"),
    ],
)
def test_each_form_matches_the_rfc_example(form: str, text: str) -> None:
    assert format_http_date(RFC_EXAMPLE, form) == text  # type: ignore[arg-type]
    assert parse_http_date(text) == RFC_EXAMPLE


@given(
    unix=st.integers(min_value=1_700_000_000, max_value=2_000_000_000),
    form=st.sampled_from(["imf", "rfc850", "asctime"]),
)
def test_every_form_parses_back_with_email_utils(unix: int, form: str) -> None:
    text = format_http_date(unix, form)  # type: ignore[arg-type]
    parsed = email.utils.parsedate_to_datetime(text)
    naive_is_utc = parsed.tzinfo is None
    assert (parsed.replace(tzinfo=None) if naive_is_utc else parsed).timetuple()[:6] == __import__(
        "time"
    ).gmtime(unix)[:6]
    assert parse_http_date(text) == unix


def test_fractions_are_rounded_down() -> None:
    assert format_http_date(RFC_EXAMPLE + 0.999) == "Sun, 06 Nov 1994 08:49:37 GMT"


def test_unknown_form_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match=r"^unknown HTTP-date form 'rfc1123'; expected 'imf', 'rfc850' or 'asctime'$",
    ):
        format_http_date(0, "rfc1123")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 1120.0),
        (" 7 ", 1007.0),
        ("Thu, 01 Jan 1970 00:20:00 GMT", 1200.0),
        ("soon", None),
        ("-3", None),
        ("1.5", None),
    ],
)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    assert parse_retry_after(value, sent_at=1000.0).not_before == expected


@pytest.mark.parametrize("form", RETRY_AFTER_FORMS)
def test_what_the_writer_writes_the_reader_names_in_the_same_form(form: RetryAfterForm) -> None:
    # an answer dated clock reading 100.25 on a clock whose reading 0 is RFC_EXAMPLE
    header = retry_after_header(30, form, sent_at=RFC_EXAMPLE + 100.25)
    found = read_retry_after([("X-Other", "1"), header], sent_at=100.25, epoch=RFC_EXAMPLE)
    assert found is not None
    assert (found.header, found.form) == (header[0].lower(), form)
    # delays count from the answer; an HTTP-date names the second after the wait
    assert found.not_before == (131.0 if form in DATE_FORMS else 130.25)


def test_retry_after_values_the_reader_cannot_use_are_invalid() -> None:
    headers = [("Retry-After-Ms", "soon")]
    assert read_retry_after(headers, sent_at=5.0) == RetryAfterValue(
        "soon", None, "retry-after-ms", "invalid"
    )
    assert read_retry_after([("Retry-After", "later")], sent_at=5.0) == RetryAfterValue(
        "later", None, "retry-after", "invalid"
    )
    assert read_retry_after([("Date", "x")], sent_at=5.0) is None


def test_a_computed_wait_is_rounded_up_to_the_unit_but_not_for_float_noise() -> None:
    assert retry_after_header(0.1 * 3 * 10, "seconds", sent_at=0) == ("Retry-After", "3")
    assert retry_after_header(2.0001, "seconds", sent_at=0) == ("Retry-After", "3")
    assert retry_after_header(1.5, "ms", sent_at=0) == ("retry-after-ms", "1500")
    assert retry_after_header(-1, "seconds", sent_at=0) == ("Retry-After", "0")


def test_header_values_are_made_safe_by_percent_encoding() -> None:
    assert safe_header_value(" job_1 ") == "job_1"
    assert safe_header_value("job\x00é") == "job%00%C3%A9"


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        (HttpResponse(200, headers=(("x-ok", "1"),)), None),
        (
            HttpResponse(103),
            "status 103 cannot be a final answer (HTTP/1.1 final statuses are 200 to 599)",
        ),
        (
            HttpResponse(200, headers=(("bad name", "1"),)),
            "header name 'bad name' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)",
        ),
        (
            HttpResponse(200, headers=(("Content-Length", "1"),)),
            "header 'Content-Length' is written by the server from the body and cannot be scripted",
        ),
    ],
)
def test_wire_problem_names_what_http_1_1_cannot_carry(
    response: HttpResponse, problem: str | None
) -> None:
    assert wire_problem(response) == problem


def test_error_answers_are_compact_json() -> None:
    response = error_response(429, "rate_limited", "Slow down.", [("Retry-After", "3")])
    assert response == HttpResponse(
        429,
        b'{"error":{"code":"rate_limited","message":"Slow down."}}',
        "application/json",
        (("Retry-After", "3"),),
    )
    assert json_response(200, {"id": "\ud800"}).body == b'{"id":"\\ud800"}'


def test_statuses_have_error_codes() -> None:
    assert [error_code(s) for s in (404, 429, 418)] == ["not_found", "rate_limited", "http_418"]


@pytest.mark.parametrize(
    ("client_id", "peer", "expected"),
    [
        ("ci-worker-3", "127.0.0.1:50123", "ci-worker-3"),
        (None, "127.0.0.1:50123", "127.0.0.1"),
        ("", "127.0.0.1:50123", "127.0.0.1"),
        (None, "::1:50123", "::1"),
        (None, "unknown", "unknown"),
        (None, "testclient", "testclient"),
    ],
)
def test_the_client_is_its_client_id_else_the_peers_host_without_the_port(
    client_id: str | None, peer: str, expected: str
) -> None:
    assert client_of(client_id, peer) == expected
    headers = {"x-client-id": client_id} if client_id is not None else {}
    assert HttpRequest("GET", "/v1/jobs", headers=headers, peer=peer).client == expected


# --- fast_constructor ----------------------------------------------------------------------

_texts = st.text(max_size=12)
_http_fields = st.fixed_dictionaries(
    {},
    optional={
        "query": st.dictionaries(_texts, _texts, max_size=3),
        "headers": st.dictionaries(_texts, _texts, max_size=3),
        "body": st.binary(max_size=8),
        "peer": _texts,
        "base_url": _texts,
        "too_large": st.none() | st.integers(0, 10**9),
    },
)


@given(method=_texts, path=_texts, rest=_http_fields)
def test_fast_constructor_makes_what_the_class_makes(
    method: str, path: str, rest: dict[str, Any]
) -> None:
    made = fast_constructor(HttpRequest)(method=method, path=path, **rest)
    expected = HttpRequest(method=method, path=path, **rest)
    assert type(made) is HttpRequest
    assert made == expected
    assert list(vars(made).items()) == list(vars(expected).items())


def test_fast_constructor_gives_each_instance_its_own_default_factory_value() -> None:
    make = fast_constructor(HttpRequest)
    first, second = make(method="GET", path="/"), make(method="GET", path="/")
    assert first.headers == {}
    assert first.headers is not second.headers


def test_fast_constructor_instances_stay_frozen() -> None:
    made = fast_constructor(HttpRequest)(method="GET", path="/")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.path = "/other"  # type: ignore[misc]


def test_fast_constructor_refuses_unknown_and_missing_arguments() -> None:
    make = fast_constructor(HttpRequest)
    with pytest.raises(TypeError) as unknown:
        make(method="GET", path="/", colour="red")
    assert str(unknown.value) == "HttpRequest() got an unexpected keyword argument 'colour'"
    with pytest.raises(TypeError) as missing:
        make(method="GET")
    assert str(missing.value) == "HttpRequest() missing 1 required keyword-only argument: 'path'"
    with pytest.raises(TypeError) as positional:
        make("GET", "/")
    assert str(positional.value) == "HttpRequest() takes 0 positional arguments but 2 were given"


@dataclasses.dataclass(frozen=True)
class _Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class _Slotted:
    value: int


@dataclasses.dataclass(frozen=True)
class _Derived:
    value: int
    double: int = dataclasses.field(init=False)


@dataclasses.dataclass(frozen=True)
class _Shadowing:
    state: int
    default_state: int = 0


def test_fast_constructor_leaves_classes_it_cannot_build_exactly_to_themselves() -> None:
    assert fast_constructor(_Checked) is _Checked
    assert fast_constructor(_Slotted) is _Slotted
    assert fast_constructor(_Shadowing) is _Shadowing
    assert fast_constructor(_Derived) is _Derived
    assert fast_constructor(int) is int


# --- json_text -------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(st.integers() | st.booleans() | st.none(), inner, max_size=2)
    ),
    max_leaves=12,
)


@given(_json_values)
def test_json_text_is_json_dumps_compact_and_unescaped(payload: Any) -> None:
    assert json_text(payload) == json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


@given(st.dictionaries(st.text(max_size=4), _json_values, max_size=4) | _json_values)
def test_a_json_answer_is_its_payloads_json_text(payload: Any) -> None:
    answer = json_response(201, payload, [("x", "1")])
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    assert answer == HttpResponse(
        201, text.encode("utf-8", "backslashreplace"), "application/json", (("x", "1"),)
    )


def test_a_json_answer_refuses_what_json_dumps_refuses_with_its_words() -> None:
    cycle: dict[str, Any] = {}
    cycle["a"] = cycle
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        json_response(200, cycle)
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        json_response(200, {"a": b"x"})
    assert json_response(200, {"a": math.nan}).body == b'{"a":NaN}'


def test_json_text_refuses_what_json_dumps_refuses_with_its_words() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        json_text(cycle)
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        json_text({"a": b"x"})
    assert json_text(math.inf) == "Infinity"


@given(st.text() | st.sampled_from([" a", "a ", " ", "", "a b", "\x00", "caf\u00e9", "\ud800"]))
def test_is_safe_header_value_says_whether_the_value_is_sent_as_it_is(value: str) -> None:
    assert is_safe_header_value(value) == (safe_header_value(value) == value)


def test_wire_problem_answers_the_same_for_a_name_seen_before() -> None:
    bad = HttpResponse(200, b"", None, (("x-ok", "1"), ("Content-Length", "3")))
    for _ in range(2):
        assert wire_problem(bad) == (
            "header 'Content-Length' is written by the server from the body and cannot be scripted"
        )
        assert wire_problem(HttpResponse(200, b"", None, (("x-ok", "1"),))) is None


@given(st.lists(st.tuples(st.just("x"), st.text(max_size=6)), max_size=4))
def test_all_safe_header_values_is_every_value_safe(headers: list[tuple[str, str]]) -> None:
    assert all_safe_header_values(headers) == all(is_safe_header_value(v) for _, v in headers)
